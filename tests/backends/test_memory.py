"""The memory plan (emb.backends._memory) of real LLM configs against their published sizes, the
placement over devices, the refusal of a plan that does not fit, and the option parsers."""

from __future__ import annotations

import copy
import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("accelerate")
transformers = pytest.importorskip("transformers")

from emb.backends._memory import (  # noqa: E402
    activation_bytes,
    batch_lines,
    check_device_map,
    check_quantization,
    parse_max_memory,
    plan_memory,
)
from emb.errors import ModelError, OptionError  # noqa: E402

GIB = 2**30

#: The published configs (config.json on the hub), the keys that set the sizes.
CONFIGS = {
    "Meta-Llama-3-8B": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "bos_token_id": 128000, "eos_token_id": 128001,
    },
    "Meta-Llama-3-70B": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
        "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "bos_token_id": 128000, "eos_token_id": 128001,
    },
    "Qwen2.5-72B": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 8192,
        "intermediate_size": 29568, "num_hidden_layers": 80, "num_attention_heads": 64,
        "num_key_value_heads": 8, "vocab_size": 152064, "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": False,
        "sliding_window": 131072, "use_sliding_window": False, "max_window_layers": 80,
        "torch_dtype": "bfloat16", "bos_token_id": 151643, "eos_token_id": 151643,
    },
}

#: Published parameter counts of the causal-LM checkpoints (Llama 3: the safetensors index's
#: total_size / 2 bytes; Qwen2.5-72B: "72.7B" of its model card), and the output head's
#: vocab × hidden, which the base model emb loads (AutoModel) has not.
PUBLISHED = {
    "Meta-Llama-3-8B": (8_030_261_248, 128256 * 4096),
    "Meta-Llama-3-70B": (70_553_706_496, 128256 * 8192),
    "Qwen2.5-72B": (72.7e9, 152064 * 8192),
}


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    """Each config written as a config.json and read back by transformers, as a model's is."""
    out = {}
    for name, doc in CONFIGS.items():
        directory = tmp_path_factory.mktemp(name)
        (directory / "config.json").write_text(json.dumps(doc))
        out[name] = transformers.AutoConfig.from_pretrained(directory)
    return out


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_weights_of_published_models_within_two_percent(configs, name):
    total, head = PUBLISHED[name]
    known = (total - head) * 2  # bfloat16
    plan = plan_memory(configs[name], model_id=name, dtype="bfloat16", device="cpu")
    assert plan.weights == {"cpu": plan.total}
    assert abs(plan.total - known) / known < 0.02, (plan.total, known)
    assert abs(plan.parameters - (total - head)) / (total - head) < 0.02
    float32 = plan_memory(configs[name], model_id=name, dtype="float32", device="cpu")
    assert float32.total == pytest.approx(2 * plan.total, rel=1e-6)


def test_quantised_weights_are_a_half_and_about_a_quarter(configs):
    config = configs["Meta-Llama-3-70B"]
    bf16 = plan_memory(config, model_id="70b", dtype="bfloat16", device="cpu").total
    int8 = plan_memory(config, model_id="70b", dtype="bfloat16", quantization="8bit",
                       device="cpu").total
    nf4 = plan_memory(config, model_id="70b", dtype="bfloat16", quantization="4bit",
                      device="cpu").total
    # the embedding (1.5 % of the weights) stays in bfloat16; every linear layer is quantised
    embedding = 128256 * 8192 * 2
    assert int8 == pytest.approx((bf16 - embedding) / 2 + embedding, rel=0.01)
    assert nf4 == pytest.approx((bf16 - embedding) / 4 * (1 + 1 / 32) + embedding, rel=0.01)


def test_seventy_b_spread_over_two_gpus_fits_and_one_gpu_does_not(configs):
    config = configs["Meta-Llama-3-70B"]
    two = plan_memory(config, model_id="70b", dtype="bfloat16", device_map="auto",
                      max_memory=parse_max_memory("0=80GiB,1=80GiB,cpu=100GiB"))
    assert set(two.weights) == {"cuda:0", "cuda:1"}
    assert all(n <= 80 * GIB for n in two.weights.values())
    assert abs(two.weights["cuda:0"] - two.weights["cuda:1"]) < 0.15 * two.total  # balanced
    assert two.total == plan_memory(config, model_id="70b", dtype="bfloat16").total
    two.check()
    assert "cuda:0 " in two.lines()[0] and "of 80.0 GiB" in two.lines()[0]
    sequential = plan_memory(config, model_id="70b", dtype="bfloat16", device_map="sequential",
                             max_memory=parse_max_memory("0=80GiB,1=80GiB"))
    assert sequential.weights["cuda:0"] > sequential.weights["cuda:1"]

    whole = plan_memory(config, model_id="70b", dtype="bfloat16", device="cuda:0",
                        max_memory=parse_max_memory("0=80GiB"))
    with pytest.raises(ModelError, match=r"70b does not fit: cuda:0 needs 129\.5 GiB but has "
                                         r"80\.0 GiB.*--device-map auto.*--quantize"):
        whole.check()
    eight = plan_memory(configs["Meta-Llama-3-8B"], model_id="8b", dtype="bfloat16",
                        device="cuda:0", max_memory=parse_max_memory("0=80GiB"))
    eight.check()  # 14 GiB of 80


def test_weights_that_fit_nowhere_need_an_offload_dir(configs):
    config = configs["Meta-Llama-3-70B"]
    plan = plan_memory(config, model_id="70b", dtype="bfloat16", device_map="auto",
                       max_memory=parse_max_memory("0=80GiB,cpu=20GiB"))
    assert set(plan.weights) == {"cuda:0", "cpu", "disk"}
    assert plan.weights["cuda:0"] <= 80 * GIB and plan.weights["cpu"] <= 20 * GIB
    with pytest.raises(ModelError, match=r"GiB of weights fit on no device and would go to disk"
                                         r".*--offload-dir DIR"):
        plan.check()
    plan.check(offload_dir="/somewhere")


def test_fewer_blocks_loaded_are_planned_smaller(configs):
    config = configs["Meta-Llama-3-70B"]
    half = copy.deepcopy(config)
    half.num_hidden_layers = 40
    full = plan_memory(config, model_id="70b", dtype="bfloat16")
    plan = plan_memory(half, model_id="70b", dtype="bfloat16", blocks=40, n_blocks=80)
    embedding = 128256 * 8192 * 2
    assert plan.total - embedding == pytest.approx((full.total - embedding) / 2, rel=1e-3)
    assert "(blocks 1..40 of 80)" in plan.lines()[0]


def test_one_batch_of_activations_and_a_context_that_cannot_fit(configs):
    config = configs["Meta-Llama-3-8B"]
    one = activation_bytes(config, batch=1, length=100, dtype="bfloat16", layers=33)
    # hidden states 33 × 100 × 4096 × 2, scores 32 × 100² × 4, MLP 3 × 100 × 14336 × 2
    assert one == 33 * 100 * 4096 * 2 + 32 * 100 * 100 * 4 + 3 * 100 * 14336 * 2
    assert activation_bytes(config, batch=64, length=100, dtype="bfloat16", layers=33) == 64 * one
    plan = plan_memory(config, model_id="8b", dtype="bfloat16", device="cuda:0",
                       max_memory=parse_max_memory("0=16GiB"))
    lines = batch_lines(plan, config, batch=64, length=40, layers=33, dtype="bfloat16",
                        device="cuda:0")
    assert lines[0] == plan.lines()[0]
    assert lines[1].startswith("memory of one batch: 64 contexts × 40 tokens (the longest) ≈ ")
    with pytest.raises(ModelError, match=r"one context of 100000 tokens needs ≈ .* on cuda:0, "
                                         r"which has .* left after 14\.0 GiB of weights"):
        batch_lines(plan, config, batch=64, length=100_000, layers=33, dtype="bfloat16",
                    device="cuda:0")


def test_parse_max_memory():
    assert parse_max_memory("0=70GiB, 1=70GiB,cpu=200GiB") == {
        0: 70 * GIB, 1: 70 * GIB, "cpu": 200 * GIB}
    assert parse_max_memory("cpu=1.5GB") == {"cpu": 1_500_000_000}
    assert parse_max_memory("mps=1024") == {"mps": 1024}
    assert parse_max_memory(None) is None
    for bad, found in [("0:70GiB", "is not DEVICE=AMOUNT"), ("gpu=1GiB", "is not DEVICE=AMOUNT"),
                       ("0=70 parsecs", "is not DEVICE=AMOUNT"), ("0=1GiB,0=2GiB", "twice"),
                       (",", "is empty")]:
        with pytest.raises(OptionError, match=found):
            parse_max_memory(bad)


def test_option_checks():
    assert check_device_map("Auto") == "auto" and check_device_map(None) is None
    assert check_quantization("4BIT") == "4bit"
    with pytest.raises(OptionError, match="--device-map must be one of auto, balanced"):
        check_device_map("gpu")
    with pytest.raises(OptionError, match="--quantize must be 8bit or 4bit; got '2bit'"):
        check_quantization("2bit")
