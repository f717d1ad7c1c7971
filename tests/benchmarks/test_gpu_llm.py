"""benchmarks/gpu_llm.py's CPU dry path (--tiny): the packages a GPU image lacks are made
importable from carried wheels without installing anything, and the 4-bit step runs through
emb's loader (on the CPU with bitsandbytes' CPU backend)."""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("accelerate")
pytest.importorskip("transformers")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_llm.py"


@pytest.fixture
def gpu_llm():
    spec = importlib.util.spec_from_file_location("gpu_llm_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_carried_wheel_is_unpacked_onto_the_path_not_installed(gpu_llm, tmp_path, monkeypatch):
    wheels = tmp_path / ".whl"
    wheels.mkdir()
    for version, value in (("0.1.0", 1), ("0.2.0", 2)):  # the newest by name is used
        with zipfile.ZipFile(wheels / f"emb_carried_pkg-{version}-py3-none-any.whl", "w") as whl:
            whl.writestr("emb_carried_pkg/__init__.py", f"VALUE = {value}\n")
    monkeypatch.setattr(gpu_llm, "WHEELS", {"emb_carried_pkg": "emb_carried_pkg",
                                            "json": "json", "emb_absent_pkg": "emb_absent_pkg"})
    monkeypatch.setattr(sys, "path", list(sys.path))
    used = gpu_llm.use_wheels(wheels, tmp_path / "unpacked")
    # json imports already: left alone; a package with no wheel: nothing to do
    assert used == {"emb_carried_pkg": "emb_carried_pkg-0.2.0-py3-none-any.whl"}
    assert sys.path[0] == str(tmp_path / "unpacked")
    import emb_carried_pkg

    try:
        assert emb_carried_pkg.VALUE == 2
        assert Path(emb_carried_pkg.__file__).is_relative_to(tmp_path / "unpacked")
    finally:
        del sys.modules["emb_carried_pkg"]
    assert gpu_llm.use_wheels(tmp_path / "nowhere", tmp_path / "other") == {}


@pytest.mark.slow  # ~20 s: builds, saves and reloads a tiny Llama
def test_the_tiny_dry_path_of_the_four_bit_step(gpu_llm, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["gpu_llm.py", "--tiny", "--n", "8", "--batch-size", "4",
                                      "--steps", "2,3", "--word-level"])
    monkeypatch.setattr(sys, "path", list(sys.path))
    gpu_llm.main()
    out = capsys.readouterr().out
    assert "== 1." not in out and "== 4. skipped" in out and out.rstrip().endswith("done")
    four_bit = out.split("== 2. 4-bit (bitsandbytes)")[1].split("== 3.")[0]
    if importlib.util.find_spec("bitsandbytes") is None:
        assert "skipped: no bitsandbytes (installed, or a wheel in .whl/)" in four_bit
    else:  # through emb's own loader: bitsandbytes' CPU backend (0.46 and later) runs it
        assert "loaded through emb --quantize 4bit" in four_bit, four_bit
        assert "in 4bit quantised, compute float32" in four_bit and "items/s" in four_bit
    assert "in 4bit quantised, compute bfloat16 = 34.8 GiB of weights" in out
