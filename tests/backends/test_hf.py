"""The model runner against direct transformers calls, pooled by hand in numpy."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from emb.backends import (  # noqa: E402
    Encoding,
    ModelInfo,
    load_model,  # noqa: E402
)
from emb.backends._hf_runner import HFRunner  # noqa: E402
from emb.errors import ModelError, TargetNotFoundError  # noqa: E402

SENTENCES = [
    ("I love you.", "love"),
    ("Love is all you need", "Love"),
    ("We were unbelievably lucky, and Bobbie-Sue knew it all along", "unbelievably"),
    ("Ask Bobbie-Sue today", "Bobbie-Sue"),
    ("They said (love) twice", "love"),
    ("He is a LOVELY guy", "LOVELY"),
    ("war", "war"),
    ("The committee postponed the decision about the old bridge until spring", "bridge"),
    ("I love love songs", "songs"),
    ("peace and quiet in the evening", "quiet"),
    ("A B C D E F G H I J K L M N O P Q R S T U V W X Y Z", "Q"),
    ("unbelievably", "unbelievably"),
]


def spans():
    return [(c.index(w), c.index(w) + len(w)) for c, w in SENTENCES]


def contexts():
    return [c for c, _ in SENTENCES]


def direct(model_dir, *, encoder_only=False):
    """Per sentence: ids, target indices (from char_to_token) and all hidden states, computed
    without emb: the tokenizer and the model called on one sentence at a time."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    cls = transformers.T5EncoderModel if encoder_only else transformers.AutoModel
    model = cls.from_pretrained(model_dir, dtype=torch.float32).eval()
    results = []
    for (context, _), (start, end) in zip(SENTENCES, spans(), strict=True):
        encoding = tokenizer(context)
        target = sorted(
            {encoding.char_to_token(c) for c in range(start, end) if not context[c].isspace()}
        )
        ids = torch.tensor([encoding["input_ids"]])
        with torch.no_grad():
            hidden = model(ids, output_hidden_states=True).hidden_states
        results.append((encoding["input_ids"], target, np.stack([h[0].numpy() for h in hidden])))
    return results


def pool_by_hand(states: np.ndarray, target: list[int]) -> np.ndarray:
    """(layer, seq, feature) -> (layer, 4, feature): first, last, mean, max over the target."""
    chosen = states[:, target].astype(np.float64)
    return np.stack([chosen[:, 0], chosen[:, -1], chosen.mean(axis=1), chosen.max(axis=1)], axis=1)


@pytest.mark.parametrize(
    "runner_name, dir_name, n_layers, hidden, encoder_only",
    [
        ("gpt2_runner", "tiny_gpt2_dir", 3, 32, False),
        ("bert_runner", "tiny_bert_dir", 2, 32, False),
        ("t5_runner", "tiny_t5_dir", 2, 32, True),
        ("llama_runner", "tiny_llama_dir", 2, 32, False),
        ("minilm_runner", "minilm_path", 6, 384, False),
    ],
)
def test_embed_equals_direct_model_calls(request, runner_name, dir_name, n_layers, hidden, encoder_only):
    runner = request.getfixturevalue(runner_name)
    expected = direct(request.getfixturevalue(dir_name), encoder_only=encoder_only)
    assert (runner.info.n_layers, runner.info.hidden_size) == (n_layers, hidden)
    encodings = runner.encode(contexts(), spans())
    for encoding, (ids, target, _) in zip(encodings, expected, strict=True):
        assert encoding.input_ids.tolist() == ids
        assert encoding.target.tolist() == target
        assert encoding.subtoken_ids.tolist() == [ids[i] for i in target]
        assert encoding.n_subtokens == len(target)
        assert (encoding.token_start, encoding.token_end) == (target[0], target[-1] + 1)
    got = runner.embed(encodings, batch_size=5)  # several batches of mixed lengths
    assert got.dtype == np.float32
    assert got.shape == (len(SENTENCES), n_layers + 1, 4, hidden)
    for item, (_, target, states) in enumerate(expected):
        np.testing.assert_allclose(
            got[item], pool_by_hand(states, target), rtol=1e-5, atol=1e-5, err_msg=f"item {item}"
        )


@pytest.mark.parametrize("runner_name", ["gpt2_runner", "llama_runner", "bert_runner", "t5_runner"])
def test_batched_equals_one_at_a_time(request, runner_name):
    runner = request.getfixturevalue(runner_name)
    encodings = runner.encode(contexts(), spans())
    alone = runner.embed(encodings, batch_size=1)
    together = runner.embed(encodings, batch_size=len(encodings), poolings=("max", "first"))
    np.testing.assert_allclose(together, alone[:, :, [3, 0]], rtol=1e-5, atol=1e-5)
    again = runner.embed(encodings, batch_size=len(encodings), poolings=("max", "first"))
    assert np.array_equal(together, again)  # deterministic for the same input


def test_progress_and_empty_input(gpt2_runner):
    encodings = gpt2_runner.encode(contexts(), spans())
    done = []
    gpt2_runner.embed(encodings, batch_size=5, progress=done.append)
    assert done == [5, 5, 2]
    empty = gpt2_runner.embed([], poolings=("mean",))
    assert empty.shape == (0, 4, 1, 32)
    assert gpt2_runner.encode([], []) == []


def test_bos_policy_changes_what_the_model_sees(gpt2_runner, llama_runner):
    context, span = ["I love you."], [(2, 6)]
    plain = gpt2_runner.encode(context, span)[0]
    with_bos = gpt2_runner.encode(context, span, bos=True)[0]
    assert with_bos.input_ids.tolist() == [50256, *plain.input_ids.tolist()]
    assert with_bos.target.tolist() == [plain.target[0] + 1]
    assert with_bos.subtoken_ids.tolist() == plain.subtoken_ids.tolist()
    first, second = gpt2_runner.embed([plain, with_bos], poolings=("first",))
    assert np.abs(first[1:] - second[1:]).max() > 1e-4  # context changed the upper layers
    llama = llama_runner.encode(context, span, bos=False)[0]
    assert llama.input_ids[0] != 1 and llama.target.tolist() == [1]
    assert llama_runner.info.adds_bos and not gpt2_runner.info.adds_bos
    assert (llama_runner.info.bos_token, gpt2_runner.info.bos_token) == ("<s>", "<|endoftext|>")


def test_targets_not_found_are_all_listed(gpt2_runner):
    with pytest.raises(TargetNotFoundError) as caught:
        gpt2_runner.encode(
            ["I love you.", "fine", "I  am", "ok ok"], [(2, 6), (4, 4), (1, 2), (3, 5)]
        )
    message = str(caught.value)
    assert "2 of 4 targets" in message and "item 1" in message and "item 2" in message
    assert "item 0" not in message and "item 3" not in message
    assert [index for index, _, _ in caught.value.failures] == [1, 2]


def test_too_long_context_is_cut_not_refused(gpt2_runner):
    context = " ".join(["word"] * 200)  # 200 tokens > 128 positions
    (enc,) = gpt2_runner.encode([context], [(0, 4)])
    assert enc.n_tokens <= 128 and enc.window is not None and enc.window[0] == 0
    assert enc.target.tolist() == [0]  # the target kept, at the window's start


def _capture(module):
    seen = []
    handle = module.register_forward_hook(
        lambda _m, _i, output: seen.append(output[0] if isinstance(output, tuple) else output)
    )
    return seen, handle


@pytest.mark.parametrize(
    "runner_name, last_block, final_norm",
    [
        ("gpt2_runner", lambda m: m.h[-1], lambda m: m.ln_f),
        ("llama_runner", lambda m: m.layers[-1], lambda m: m.norm),
        ("t5_runner", lambda m: m.block[-1], lambda m: m.final_layer_norm),
        ("bert_runner", lambda m: m.encoder.layer[-1], None),
    ],
)
def test_last_layer_description_is_true(request, runner_name, last_block, final_norm):
    runner = request.getfixturevalue(runner_name)
    ids = torch.from_numpy(runner.encode(["I love you."], [(2, 6)])[0].input_ids.astype(np.int64))[None]
    seen, handle = _capture(last_block(runner.model))
    try:
        with torch.no_grad():
            hidden = runner.model(input_ids=ids, output_hidden_states=True).hidden_states
    finally:
        handle.remove()
    block_output = seen[0]
    if final_norm is None:
        assert runner.info.last_layer == "output of the last block"
        torch.testing.assert_close(hidden[-1], block_output)
    else:
        norm = final_norm(runner.model)
        name = {"gpt2_runner": "ln_f", "llama_runner": "norm", "t5_runner": "final_layer_norm"}
        assert runner.info.last_layer == f"after the final layer norm ({name[runner_name]})"
        with torch.no_grad():
            torch.testing.assert_close(hidden[-1], norm(block_output))


def test_model_info(gpt2_runner, tiny_gpt2_dir, t5_runner, minilm_runner):
    info = gpt2_runner.info
    assert info.source == "local" and info.revision is None
    assert info.fingerprint == hashlib.sha256(
        (tiny_gpt2_dir / "model.safetensors").read_bytes()
    ).hexdigest()
    assert (info.architecture, info.model_type) == ("GPT2Model", "gpt2")
    assert info.model_id == str(tiny_gpt2_dir)
    assert info.tokenizer.startswith("GPT2Tokenizer (") and str(tiny_gpt2_dir) in info.tokenizer
    assert (info.dtype, info.device, info.is_encoder_decoder) == ("float32", "cpu", False)
    assert info.transformers_version == transformers.__version__
    assert info.torch_version == torch.__version__
    assert ModelInfo.from_dict(json.loads(json.dumps(info.to_dict()))) == info
    assert t5_runner.info.is_encoder_decoder and t5_runner.info.architecture == "T5Model"
    assert type(t5_runner.model).__name__ == "T5Stack"  # the encoder only
    assert minilm_runner.info.bos_token is None and minilm_runner.info.hidden_size == 384
    with pytest.raises(ModelError, match="lacks the keys"):
        ModelInfo.from_dict({"model_id": "x"})
    assert isinstance(gpt2_runner, HFRunner) and "GPT2Model" in repr(gpt2_runner)


def test_encoding_is_read_only(gpt2_runner):
    encoding = gpt2_runner.encode(["I love you."], [(2, 6)])[0]
    assert isinstance(encoding, Encoding) and encoding.input_ids.dtype == np.int32
    with pytest.raises(ValueError):
        encoding.input_ids[0] = 3


def test_bfloat16_is_close_to_float32(tiny_gpt2_dir, gpt2_runner):
    low = load_model(tiny_gpt2_dir, dtype="bfloat16", device="cpu")
    assert low.info.dtype == "bfloat16" and next(low.model.parameters()).dtype == torch.bfloat16
    encodings = gpt2_runner.encode(contexts(), spans())
    got = low.embed(encodings)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, gpt2_runner.embed(encodings), atol=0.1, rtol=0.05)


def test_model_errors(tmp_path, monkeypatch):
    with pytest.raises(ModelError, match="does not exist"):
        load_model(tmp_path / "nope")
    with pytest.raises(ModelError, match="does not exist"):
        load_model(str(tmp_path / "nope.gguf"))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("x")
    for local in (tmp_path / "empty", tmp_path / "m.gguf"):  # one version: no --revision
        with pytest.raises(ModelError, match="names a version of a hub model"):
            load_model(local, revision="main")
    with pytest.raises(ModelError, match="no config.json") as caught:
        load_model(tmp_path / "empty")
    assert "notes.txt" in str(caught.value) and "hub id" in str(caught.value)
    with pytest.raises(ModelError, match="not found in"):
        load_model(tmp_path / "empty", gguf_file="model.gguf")
    with pytest.raises(ModelError, match=r"--dtype \(dtype= in Python\) must be one of float32"):
        load_model(tmp_path, dtype="float8")
    with pytest.raises(ModelError, match=r"--device \(device= in Python\) must be auto, cpu"):
        load_model(tmp_path, device="abacus")


def test_unknown_hub_id_offline(monkeypatch):
    huggingface_hub = pytest.importorskip("huggingface_hub")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelError, match="hub id 'emb-tests/no-such-model'"):
        load_model("emb-tests/no-such-model", device="cpu")


@pytest.mark.slow
def test_smollm2_gguf(smollm2_path):
    runner = load_model(smollm2_path, device="cpu")
    info = runner.info
    assert (info.n_layers, info.hidden_size, info.source) == (30, 576, "gguf")
    assert info.model_type == "llama" and info.last_layer == "after the final layer norm (norm)"
    assert info.fingerprint == hashlib.sha256(smollm2_path.read_bytes()).hexdigest()
    assert info.bos_token == "<|im_start|>" and info.bos_token_id == 1
    assert info.adds_bos is False  # the GGUF tokenizer does not prepend <|im_start|>
    assert info.causal is True  # so "I love you." is fed as "I love": the pooled states below
    # come from the whole sentence, run directly, and still agree
    context, span = ["I love you."], [(2, 6)]
    default, with_bos = runner.encode(context, span)[0], runner.encode(context, span, bos=True)[0]
    assert default.input_ids[0] != 1 and with_bos.input_ids[0] == 1
    got = runner.embed([default, with_bos])
    assert got.shape == (2, 31, 4, 576) and np.isfinite(got).all()
    with torch.no_grad():
        ids = torch.from_numpy(with_bos.input_ids.astype(np.int64))[None]
        states = np.stack([h[0].numpy() for h in runner.model(ids, output_hidden_states=True).hidden_states])
    np.testing.assert_allclose(
        got[1], pool_by_hand(states, with_bos.target.tolist()), rtol=1e-4, atol=1e-4
    )


def test_hub_id_from_the_local_hub_cache(tmp_path, monkeypatch, tiny_gpt2_dir):
    """A hub id resolves through the hub cache (offline here): revision = the snapshot's commit."""
    import shutil

    huggingface_hub = pytest.importorskip("huggingface_hub")
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--emb-tests--tiny-gpt2"
    shutil.copytree(tiny_gpt2_dir, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    runner = load_model("emb-tests/tiny-gpt2", device="cpu")
    info = runner.info
    assert (info.source, info.revision, info.fingerprint) == ("hub", commit, commit)
    assert info.model_id == "emb-tests/tiny-gpt2" and info.n_layers == 3


def test_non_finite_hidden_states_are_refused_and_large_finite_ones_kept(tiny_gpt2_dir):
    runner = load_model(tiny_gpt2_dir, device="cpu")
    encodings = runner.encode(contexts(), spans())
    reference = runner.embed(encodings, batch_size=4)
    weight = runner.model.wte.weight
    saved = weight.detach().clone()
    try:
        # token embeddings x 1e7: layer 0 holds finite values ~1e5, kept as they are; in float16
        # they overflow to inf, which the runner passes on (the pipeline refuses that block,
        # pointing at --storage-dtype float32)
        with torch.no_grad():
            weight.mul_(1e7)
        big = runner.embed(encodings, batch_size=4)
        assert np.isfinite(big).all() and np.abs(big[:, 0]).max() > 1e5
        assert np.isinf(runner.embed(encodings, batch_size=4, out_dtype="float16")[:, 0]).any()
        # a NaN in the embedding matrix: refused, naming the contexts
        with torch.no_grad():
            weight.copy_(saved)
            weight[encodings[3].input_ids[0]] = float("nan")
        with pytest.raises(ModelError, match=r"NaN or infinite hidden states for the contexts \[.*3"):
            runner.embed(encodings, batch_size=4)
    finally:
        with torch.no_grad():
            weight.copy_(saved)
    np.testing.assert_array_equal(runner.embed(encodings, batch_size=4), reference)


@pytest.mark.parametrize(
    "runner_name, causal",
    [("gpt2_runner", True), ("llama_runner", True), ("bert_runner", False),
     ("t5_runner", False), ("minilm_runner", False)],
)
def test_causal_models_are_fed_up_to_the_target_only(request, runner_name, causal):
    runner = request.getfixturevalue(runner_name)
    assert runner.info.causal is causal and runner.info.to_dict()["causal"] is causal
    encodings = runner.encode(contexts(), spans())
    widths = []
    hook = runner.model.register_forward_pre_hook(
        lambda _m, args, kwargs: widths.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    try:
        cut = runner.embed(encodings, batch_size=64, truncate=True)
        cut_widths, widths[:] = list(widths), []
        whole = runner.embed(encodings, batch_size=64, truncate=False)
    finally:
        hook.remove()
    # one batch: as wide as the latest target end when cut, as the longest context when not
    assert cut_widths == [max(e.token_end for e in encodings)]
    assert widths == [max(e.n_tokens for e in encodings)] and cut_widths[0] < widths[0]
    if causal:  # the tokens after the target cannot reach it
        np.testing.assert_allclose(cut, whole, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(runner.embed(encodings, batch_size=64), cut)
    else:  # a bidirectional model sees them: cutting would change the vectors
        assert np.abs(cut - whole).max() > 1e-2
        np.testing.assert_array_equal(runner.embed(encodings, batch_size=64), whole)


def test_a_chosen_bos_token_is_looked_up_in_the_vocabulary(gpt2_runner, llama_runner):
    assert gpt2_runner.token_id("<|endoftext|>") == 50256
    assert llama_runner.token_id("</s>") == 2
    for bad in ("<|im_start|>", "", "love you"):  # not one token of GPT-2's vocabulary
        with pytest.raises(ModelError, match="not one token of the vocabulary .* special tokens"):
            gpt2_runner.token_id(bad)
    context, span = ["I love you."], [(2, 6)]
    plain = gpt2_runner.encode(context, span)[0]
    chosen = gpt2_runner.encode(context, span, bos=True, bos_token_id=198)[0]
    assert chosen.input_ids.tolist() == [198, *plain.input_ids.tolist()]
    assert chosen.target.tolist() == [plain.target[0] + 1]
    default = gpt2_runner.encode(context, span, bos=True)[0]
    first, second = gpt2_runner.embed([default, chosen], poolings=("first",))
    assert np.abs(first[1:] - second[1:]).max() > 1e-4  # another first token, other states
