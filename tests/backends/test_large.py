"""Large-model loading on the CPU: a device map splitting the blocks over the CPU and disk
offload gives the vectors of the model loaded whole (with --layers too, the blocks after the
highest not loaded); quantisation and the device map are part of the model's identity; refusals
(a plan that does not fit, --quantize without bitsandbytes) come before the store is
touched; --dtype auto; the memory lines of the estimate."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")
pytest.importorskip("transformers")

from emb.backends import load_model  # noqa: E402
from emb.errors import ModelError, StoreMismatchError  # noqa: E402
from emb.extraction import extract  # noqa: E402
from tests import models  # noqa: E402
from tests.store.test_pipeline import item, make_suite  # noqa: E402

CONTEXTS = [
    ("I love you very much.", "love"),
    ("The old bridge over the river was closed for repairs", "bridge"),
    ("So unbelievably, the cat sat.", "unbelievably"),
    ("peace and quiet in the evening", "quiet"),
]
#: cpu=17MiB puts the embedding and blocks 0-1 of big_llama in RAM, blocks 2-3 on disk.
SPLIT = "cpu=17MiB"


@pytest.fixture(scope="module")
def big_llama_dir(tmp_path_factory):
    """A random 4-block Llama whose blocks are big beside its embedding (hidden 64, MLP 2048),
    so that a CPU limit can split them between the CPU and disk."""
    return models.tiny_family(tmp_path_factory.mktemp("big_llama"), "llama", hidden=64,
                              layers=4, intermediate=2048)


def _encode(runner):
    return runner.encode([c for c, _ in CONTEXTS],
                         [(c.index(w), c.index(w) + len(w)) for c, w in CONTEXTS])


def _suite():
    return make_suite([item(c, w, setting="random") for c, w in CONTEXTS], name="large")


def _model_attrs(store):
    return json.loads((store / "zarr.json").read_text())["attributes"]["model"]


def test_blocks_split_over_cpu_and_disk_give_the_whole_models_vectors(big_llama_dir, tmp_path):
    whole = load_model(big_llama_dir, device="cpu")
    split = load_model(big_llama_dir, device="cpu", device_map="sequential", max_memory=SPLIT,
                       offload_dir=tmp_path / "offload")
    placed = split.memory_plan.module_map
    assert placed["layers.0"] == placed["layers.1"] == "cpu"
    assert placed["layers.2"] == placed["layers.3"] == "disk"
    # blocks on disk hold no weights in memory (accelerate reads them from the safetensors
    # file, or the offload folder, at each forward pass)
    assert split.model.layers[0].mlp.up_proj.weight.device.type == "cpu"
    assert split.model.layers[3].mlp.up_proj.weight.device.type == "meta"
    assert split.info.device_map == "sequential" and split.info.memory["weights"]["disk"] > 0
    # the hidden states stay where each block ran (pooled there), not gathered on one device
    assert split.model._hf_hook.io_same_device is False
    encodings = _encode(whole)
    expected = whole.embed(encodings)
    np.testing.assert_allclose(split.embed(_encode(split)), expected, rtol=0, atol=1e-6)
    assert not np.array_equal(expected[:, 1], expected[:, 2])  # the blocks do something


def test_each_devices_layers_are_pooled_there_and_joined_in_order(tiny_llama_dir, monkeypatch):
    """A model split over two GPUs leaves layers 0-1 on one and the rest on the other: each
    device pools its own run of layers and only the pooled windows are joined.  On a CPU the
    devices are told apart by a stand-in for ``tensor.device`` (by layer); the vectors must be
    those of pooling every layer at once, in layer order, for any choice of layers."""
    from emb.backends import _hf_runner

    runner = load_model(tiny_llama_dir, device="cpu")
    encodings = _encode(runner)
    expected = runner.embed(encodings)
    states: list = []
    real_pass, real_pool = runner._pass, _hf_runner.pool

    def recording_pass(ids, mask):
        hidden = real_pass(ids, mask)
        states[:] = [id(h) for h in hidden]
        return hidden

    calls: list[int] = []

    def counting_pool(window, mask, *, poolings):
        calls.append(window.shape[0])
        return real_pool(window, mask, poolings=poolings)

    monkeypatch.setattr(runner, "_pass", recording_pass)
    monkeypatch.setattr(_hf_runner, "pool", counting_pool)
    monkeypatch.setattr(_hf_runner, "_device_of",
                        lambda t: "gpu0" if states.index(id(t)) < 2 else "gpu1")
    np.testing.assert_array_equal(runner.embed(encodings, batch_size=8), expected)
    n = expected.shape[1]
    assert calls == [2, n - 2]  # one pool per device
    calls.clear()
    layers = [0, 2, n - 1]
    np.testing.assert_array_equal(runner.embed(encodings, layers=layers), expected[:, layers])
    assert calls == [1, 2]


@pytest.mark.parametrize("layers", [[0, 2], [1], [0]])
def test_the_layer_cut_loads_only_the_blocks_it_needs(big_llama_dir, tmp_path, layers):
    whole = load_model(big_llama_dir, device="cpu")
    expected = whole.embed(_encode(whole), layers=layers)
    cut = load_model(big_llama_dir, device="cpu", device_map="sequential", max_memory=SPLIT,
                     offload_dir=tmp_path, layers=layers)
    top = max(max(layers), 1)
    assert len(cut.model.layers) == top and cut.info.loaded_blocks == top
    assert cut.info.n_layers == 4  # the model's own layers, as the store records them
    assert f"(blocks 1..{top} of 4)" in cut.memory_plan.lines()[0]
    np.testing.assert_allclose(cut.embed(_encode(cut), layers=layers), expected, rtol=0,
                               atol=1e-6)
    with pytest.raises(ModelError, match=f"only blocks 1..{top} of 4 were loaded"):
        cut.embed(_encode(cut), layers=[0, 4])


def test_a_gpt2_on_a_cpu_map_with_layers(tiny_gpt2_dir):
    whole = load_model(tiny_gpt2_dir, device="cpu")
    mapped = load_model(tiny_gpt2_dir, device="cpu", device_map="cpu", layers="0,-2")
    assert mapped.info.loaded_blocks == 2 and len(mapped.model.h) == 2
    np.testing.assert_allclose(mapped.embed(_encode(mapped), layers=[0, 2]),
                               whole.embed(_encode(whole), layers=[0, 2]), rtol=0, atol=1e-6)


def test_the_device_map_is_the_models_identity(tiny_gpt2_dir, tmp_path):
    store = tmp_path / "s.zarr"
    extract(tiny_gpt2_dir, _suite(), store, device="cpu", progress=False)
    assert not {"device_map", "quantization", "loaded_blocks", "memory"} & set(_model_attrs(store))
    with pytest.raises(StoreMismatchError, match=r"device_map: store has None, this run has 'cpu'"):
        extract(tiny_gpt2_dir, _suite(), store, device="cpu", device_map="cpu", progress=False)

    mapped = tmp_path / "mapped.zarr"
    extract(tiny_gpt2_dir, _suite(), mapped, device="cpu", device_map="cpu", progress=False)
    attrs = _model_attrs(mapped)
    assert attrs["device_map"] == "cpu" and attrs["memory"]["weights"]["cpu"] > 0
    with pytest.raises(StoreMismatchError, match=r"device_map: store has 'cpu', this run has None"):
        extract(tiny_gpt2_dir, _suite(), mapped, device="cpu", progress=False)
    # the same map resumes (here: finds the suite complete)
    (report,) = extract(tiny_gpt2_dir, _suite(), mapped, device="cpu", device_map="cpu",
                        progress=False)
    assert report.already_complete


def test_a_plan_that_does_not_fit_is_refused_before_the_store(tiny_llama_dir, tmp_path):
    store = tmp_path / "s.zarr"
    with pytest.raises(ModelError, match=r"does not fit: .* of weights fit on no device and would "
                                         r"go to disk.*give --offload-dir DIR"):
        extract(tiny_llama_dir, _suite(), store, device="cpu", device_map="auto",
                max_memory="cpu=1MiB", progress=False)
    with pytest.raises(ModelError, match=r"does not fit: cpu needs 6\.\d MiB but has 1\.0 MiB"):
        extract(tiny_llama_dir, _suite(), store, device="cpu", max_memory="cpu=1MiB",
                progress=False)
    assert not store.exists()


def test_quantize_without_bitsandbytes_is_refused(tiny_gpt2_dir, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "bitsandbytes" else real(name, *a))
    store = tmp_path / "s.zarr"
    with pytest.raises(ModelError, match=r"--quantize 4bit loads the weights through "
                                         r"bitsandbytes, which needs the bitsandbytes package "
                                         r"\(pip install 'emb\[quantize\]'\).*drop --quantize"):
        extract(tiny_gpt2_dir, _suite(), store, device="cpu", quantize="4bit", progress=False)
    assert not store.exists()


def test_offload_dir_needs_a_device_map(tiny_gpt2_dir, tmp_path):
    with pytest.raises(ModelError, match="--offload-dir .* needs --device-map"):
        load_model(tiny_gpt2_dir, device="cpu", offload_dir=tmp_path)


def test_dtype_auto_is_float32_on_the_cpu_and_recorded(tiny_gpt2_dir, tmp_path):
    store = tmp_path / "s.zarr"
    extract(tiny_gpt2_dir, _suite(), store, device="cpu", dtype="auto", progress=False)
    group = json.loads((store / "large" / "zarr.json").read_text())["attributes"]
    assert group["extraction"]["dtype"] == "float32"
    assert _model_attrs(store)["dtype"] == "float32"


def test_the_estimate_prints_the_memory_plan(tiny_gpt2_dir, tmp_path):
    estimates = []
    extract(tiny_gpt2_dir, _suite(), tmp_path / "s.zarr", device="cpu", dry_run=True,
            on_estimate=estimates.append, progress=False)
    (estimate,) = estimates
    assert estimate.memory[0].startswith("memory plan: ")
    assert "in float32 = " in estimate.memory[0] and "cpu " in estimate.memory[0]
    assert estimate.memory[1].startswith("memory of one batch: 4 contexts × ")
    assert estimate.line().splitlines()[1:] == list(estimate.memory)
    assert not (tmp_path / "s.zarr").exists()


def _cli(*args, env=None):
    from click.testing import CliRunner

    from emb.cli.main import main

    return CliRunner().invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)


def test_the_cli_flags(tiny_gpt2_dir, tmp_path):
    store = tmp_path / "s.zarr"
    common = ("extract", "--model", tiny_gpt2_dir, "--suite", "weat", "--store", store)
    out = _cli(*common, "--device-map", "cpu", "--layers", "0,1", "--dry-run")
    assert out.exit_code == 0, out.output
    assert "memory plan: " in out.output and "(blocks 1..1 of 3)" in out.output
    assert "memory of one batch: " in out.output and not store.exists()
    bad = _cli(*common, "--device-map", "auto", "--max-memory", "gpu0=1GiB")
    assert bad.exit_code != 0 and "--max-memory part 'gpu0=1GiB' is not DEVICE=AMOUNT" in bad.output
    assert "Traceback" not in bad.output and not store.exists()


def test_the_cli_reports_the_back_offs(tiny_gpt2_dir, tmp_path):
    store = tmp_path / "s.zarr"
    out = _cli("extract", "--model", tiny_gpt2_dir, "--suite", "weat", "--store", store,
               "--device", "cpu", "--batch-size", "8", "-q", env={"EMB_INJECT_OOM": "calls=9"})  # after the estimate's 5
    assert out.exit_code == 0, out.output
    assert "weat: out of memory 1 time(s); batches halved: 8→4 at " in out.output


def test_quantisation_and_device_map_are_model_identity_whatever_the_source():
    from emb.store._write_checks import model_differences

    base = {"model_id": "m", "source": "local", "revision": None, "fingerprint": "abc"}
    assert model_differences(base, dict(base)) == []
    assert model_differences(base, {**base, "quantization": "4bit"}) == [
        "quantization: store has None, this run has '4bit'"]
    hub = {**base, "source": "hub", "revision": "0" * 40}
    assert model_differences({**hub, "quantization": "8bit", "device_map": "auto"},
                             {**hub, "quantization": "4bit", "device_map": "auto"}) == [
        "quantization: store has '8bit', this run has '4bit'"]


def test_a_gguf_file_takes_no_device_map(tmp_path):
    fake = tmp_path / "m.gguf"
    fake.write_bytes(b"GGUF")
    with pytest.raises(ModelError, match="'m.gguf' is a GGUF file, which transformers "
                                         "dequantises whole"):
        load_model(fake, device="cpu", device_map="auto")


def test_each_suite_records_how_its_own_run_placed_the_weights(tiny_gpt2_dir, tmp_path):
    """The blocks loaded and the memory plan are the run's, not the model's: a second suite
    extracted into the store with more --layers records its own (the store's root keeps the
    run that created it), and one run without a layer cut records none."""
    store = tmp_path / "s.zarr"

    def group_model(name):
        return json.loads((store / name / "zarr.json").read_text())["attributes"]["model"]

    extract(tiny_gpt2_dir, _suite(), store, device="cpu", device_map="cpu", layers="0",
            progress=False)
    second = make_suite([item(c, w, setting="random") for c, w in CONTEXTS], name="second")
    extract(tiny_gpt2_dir, second, store, device="cpu", device_map="cpu", layers="0,-2",
            progress=False)
    third = make_suite([item(c, w, setting="random") for c, w in CONTEXTS], name="third")
    extract(tiny_gpt2_dir, third, store, device="cpu", device_map="cpu", progress=False)
    first, two, all_layers = group_model("large"), group_model("second"), group_model("third")
    assert _model_attrs(store)["loaded_blocks"] == first["loaded_blocks"] == 1  # at least one
    assert two["loaded_blocks"] == 2 and "loaded_blocks" not in all_layers
    assert two["memory"]["weights"]["cpu"] > first["memory"]["weights"]["cpu"]
    # everything else is the store's model
    keep = lambda d: {k: v for k, v in d.items() if k not in ("loaded_blocks", "memory")}  # noqa: E731
    assert keep(first) == keep(two) == keep(all_layers) == keep(_model_attrs(store))
