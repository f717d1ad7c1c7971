"""--quantize 8bit|4bit on the CPU, through bitsandbytes' CPU backend (0.46 and later, a test
dependency): the vectors are those of transformers' own quantised model called directly, the
memory plan's weights are the loaded model's footprint, the quantisation is the model's identity
in the store, and the refusals name what is missing."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")
import bitsandbytes  # noqa: E402, F401  (a test dependency: the CPU backend is what is tested)

from emb.backends import _hf_placement, load_model  # noqa: E402
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


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    """A random 3-block Llama whose linear layers outweigh nothing else much (hidden 64)."""
    return models.tiny_family(tmp_path_factory.mktemp("qllama"), "llama", hidden=64, layers=3,
                              intermediate=256)


def _direct(model_dir, quantize, context, word):
    """Mean-pooled hidden states of ``word`` from transformers' own quantised model, one
    context at a time (no emb code)."""
    from transformers import AutoModel, AutoTokenizer, BitsAndBytesConfig

    config = (BitsAndBytesConfig(load_in_8bit=True) if quantize == "8bit" else
              BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                 bnb_4bit_use_double_quant=True,
                                 bnb_4bit_compute_dtype=torch.float32))
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, quantization_config=config, device_map={"": "cpu"})
    start = context.index(word)
    enc = tok(context, return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping")[0].tolist()
    idx = [i for i, (a, b) in enumerate(offsets) if b > a and a < start + len(word) and b > start]
    with torch.inference_mode():
        states = model(input_ids=enc["input_ids"], output_hidden_states=True).hidden_states
    return np.stack([s[0, idx].float().mean(0).numpy() for s in states])  # (layer, feature)


def _encode(runner):
    return runner.encode([c for c, _ in CONTEXTS],
                         [(c.index(w), c.index(w) + len(w)) for c, w in CONTEXTS])


@pytest.mark.parametrize("quantize", ["8bit", "4bit"])
def test_quantised_vectors_are_transformers_own(llama_dir, quantize):
    runner = load_model(llama_dir, device="cpu", quantize=quantize)
    layer = type(runner.model.layers[0].mlp.up_proj).__name__
    assert layer == {"8bit": "Linear8bitLt", "4bit": "Linear4bit"}[quantize]
    got = runner.embed(_encode(runner), poolings=["mean"], batch_size=4)[:, :, 0]
    whole = load_model(llama_dir, device="cpu")
    full = whole.embed(_encode(whole), poolings=["mean"])[:, :, 0]
    for i, (context, word) in enumerate(CONTEXTS):
        want = _direct(llama_dir, quantize, context, word)
        scale = np.abs(want).max()
        np.testing.assert_allclose(got[i], want, rtol=0, atol=1e-4 * scale)
        # … and the quantisation changes them by far more than that
        assert np.abs(full[i, 1:] - want[1:]).max() > 1e-3 * scale


@pytest.mark.parametrize("quantize", ["8bit", "4bit"])
def test_the_memory_plan_is_the_loaded_models_footprint(llama_dir, quantize):
    runner = load_model(llama_dir, device="cpu", quantize=quantize)
    planned = sum(runner.memory_plan.to_dict()["weights"].values())
    assert abs(planned / runner.model.get_memory_footprint() - 1) < 0.02
    full = load_model(llama_dir, device="cpu", device_map="cpu")
    assert planned < sum(full.memory_plan.to_dict()["weights"].values())


def test_the_quantisation_is_the_stores_model_identity(llama_dir, tmp_path):
    suite = make_suite([item(c, w, setting="random") for c, w in CONTEXTS], name="q")
    store = tmp_path / "s.zarr"
    extract(llama_dir, suite, store, device="cpu", quantize="8bit", progress=False)
    model = json.loads((store / "zarr.json").read_text())["attributes"]["model"]
    assert model["quantization"] == "8bit"
    with pytest.raises(StoreMismatchError, match=r"quantization: store has '8bit', this run has None"):
        extract(llama_dir, suite, store, device="cpu", progress=False)
    with pytest.raises(StoreMismatchError, match=r"quantization: store has '8bit', this run has '4bit'"):
        extract(llama_dir, suite, store, device="cpu", quantize="4bit", progress=False)


def test_the_cli_runs_quantised_on_the_cpu_without_library_noise(llama_dir, tmp_path):
    from click.testing import CliRunner

    from emb.cli.main import main

    store = tmp_path / "s.zarr"
    out = CliRunner().invoke(main, ["extract", "--model", str(llama_dir), "--suite", "weat",
                                    "--store", str(store), "--device", "cpu", "--quantize", "8bit"],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    for noise in ("MatMul8bitLt", "kernels-community", "Traceback"):
        assert noise not in out.output


def test_a_bitsandbytes_without_a_cpu_backend_is_refused(llama_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(_hf_placement, "_bitsandbytes_cpu", lambda: "this one is 0.45.5")
    with pytest.raises(ModelError, match=r"needs a bitsandbytes with a CPU backend \(0\.46 or "
                                         r"later; this one is 0\.45\.5: pip install -U bitsandbytes"):
        extract(llama_dir, make_suite([item("I love it", "love")]), tmp_path / "s.zarr",
                device="cpu", quantize="4bit", progress=False)
    assert not (tmp_path / "s.zarr").exists()


def test_a_device_bitsandbytes_does_not_serve_is_refused():
    with pytest.raises(ModelError, match=r"needs a CUDA GPU or the CPU \(this run's device is mps\)"):
        _hf_placement.check_quantization_backend("8bit", torch.device("mps"))


def test_importing_bitsandbytes_for_the_cpu_is_quiet():
    """bitsandbytes' CPU backend logs, on CPUs with AVX-512 BF16, a hint to fetch a kernel from
    the hub (which emb never reads) when it is first imported: a fresh process shows nothing."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = str(Path(__file__).resolve().parents[2] / "src")
    done = subprocess.run(
        [sys.executable, "-c", "from emb.backends._hf_placement import _bitsandbytes_cpu as f; "
                               "print(f() is None)"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])},
    )
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "True", "")


def test_quantised_layers_that_fail_are_named_not_the_model(llama_dir, tmp_path, monkeypatch):
    """bitsandbytes' CPU 4-bit kernels (on CPUs with AVX-512 BF16) pack weights in blocks of 64
    input features and fail on narrower layers (RuntimeError: shape '[32, 0]' is invalid …): the
    error named the model ("did not run on a test input … emb needs a text model") instead of
    the quantisation.  The failure is injected here, as it happens only on such CPUs."""
    from bitsandbytes.nn import Linear4bit

    def fail(self, x):
        raise RuntimeError("shape '[32, 0]' is invalid for input of size 16")

    monkeypatch.setattr(Linear4bit, "forward", fail)
    store = tmp_path / "s.zarr"
    with pytest.raises(ModelError, match=r"with --quantize 4bit, bitsandbytes could not run the "
                                         r"4bit layers of .* on cpu \(its CPU 4-bit kernels pack "
                                         r".*RuntimeError: shape .*drop --quantize or use "
                                         r"--quantize 8bit"):
        extract(llama_dir, make_suite([item("I love it", "love")]), store, device="cpu",
                quantize="4bit", progress=False)
    assert not store.exists()
