"""The ceat suite end to end with a tiny model: sample, extract some layers, export, re-extract
the same items into another store, dry run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from emb.cli.main import main
from emb.store import open_store

TESTS = {"tests": {"T1": {"X_name": "flowers", "Y_name": "insects", "A_name": "pleasant",
                          "B_name": "unpleasant", "X": ["rose", "lily"], "Y": ["ant", "bee"],
                          "A": ["love", "peace"], "B": ["war", "death"]}}}


def _corpus(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    words = ["rose", "lily", "ant", "bee", "love", "peace", "war", "death"]
    lines = [f"The {w} was {rng.choice(['here', 'there', 'near'])} today. A {rng.choice(words)} too."
             for w in words for _ in range(6)]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(lines)))
    return path


def test_ceat_extract_export_and_reuse(tmp_path: Path, tiny_bert_dir: Path) -> None:
    corpus = _corpus(tmp_path)
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps(TESTS))
    runner = CliRunner()
    common = ["--model", str(tiny_bert_dir), "--suite", "ceat", "--corpus", str(corpus),
              "--test", str(tests), "--contexts", "4", "--workers", "1", "-q"]
    dry = runner.invoke(main, ["extract", *common, "--store", str(tmp_path / "dry.zarr"),
                               "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "estimate:" in dry.output and "32 items" in dry.output
    assert not (tmp_path / "dry.zarr").exists()
    out = runner.invoke(main, ["extract", *common, "--store", str(tmp_path / "a.zarr"),
                               "--layers", "0,-1"])
    assert out.exit_code == 0, out.output
    ds = open_store(tmp_path / "a.zarr").dataset("ceat")
    assert list(ds["layer"].values) == [0, 2]
    assert ds.attrs["extraction"]["layers"] == [0, 2]
    assert set(ds["stimulus"].values) == {"rose", "lily", "ant", "bee", "love", "peace", "war", "death"}
    assert ds.sizes["item"] == 32
    params = ds.attrs["suite"]["parameters"]
    assert params["stimuli"]["rose"]["kept"] == 4 and params["corpus"]["files"][0]["digest"].startswith("sha256:")
    exported = tmp_path / "ceat-suite.json"
    res = runner.invoke(main, ["suites", "export", str(tmp_path / "a.zarr"), "--suite", "ceat",
                               str(exported)])
    assert res.exit_code == 0, res.output
    again = runner.invoke(main, ["extract", "--model", str(tiny_bert_dir), "--suite", str(exported),
                                 "--store", str(tmp_path / "b.zarr"), "-q"])
    assert again.exit_code == 0, again.output
    other = open_store(tmp_path / "b.zarr").dataset("ceat")
    assert other.attrs["suite"]["content_hash"] == ds.attrs["suite"]["content_hash"]
    assert list(other["context"].values) == list(ds["context"].values)
    np.testing.assert_array_equal(other["embedding"].sel(layer=[0, 2]).values, ds["embedding"].values)
    listing = runner.invoke(main, ["suites"])
    assert listing.exit_code == 0 and "ceat" in listing.output and "--corpus" in listing.output


def test_missing_stimuli_fail_unless_allowed(tmp_path: Path, tiny_bert_dir: Path) -> None:
    corpus = _corpus(tmp_path)
    doc = json.loads(json.dumps(TESTS))
    doc["tests"]["T1"]["X"].append("zinnia")
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps(doc))
    runner = CliRunner()
    base = ["extract", "--model", str(tiny_bert_dir), "--suite", "ceat", "--corpus", str(corpus),
            "--test", str(tests), "--contexts", "2", "--workers", "1", "-q",
            "--store", str(tmp_path / "m.zarr")]
    failed = runner.invoke(main, base)
    assert failed.exit_code != 0 and "zinnia" in failed.output and "corpus.jsonl" in failed.output
    assert "Traceback" not in failed.output
    ok = runner.invoke(main, [*base, "--allow-missing"])
    assert ok.exit_code == 0, ok.output
    assert "T1: dropped 1 stimuli with no context: ['zinnia']" in ok.output
    params = open_store(tmp_path / "m.zarr").dataset("ceat").attrs["suite"]["parameters"]
    assert params["missing_by_test"] == {"T1": ["zinnia"]}


@pytest.mark.slow
def test_analysis_on_the_extracted_store(tmp_path: Path, tiny_bert_dir: Path) -> None:
    corpus = _corpus(tmp_path)
    tests = tmp_path / "tests.json"
    named = {"tests": {"T1": {"name": "Flowers vs insects × pleasant/unpleasant",
                              **TESTS["tests"]["T1"]}}}
    tests.write_text(json.dumps(named))
    runner = CliRunner()
    out = runner.invoke(main, ["extract", "--model", str(tiny_bert_dir), "--suite", "ceat",
                               "--corpus", str(corpus), "--test", str(tests), "--contexts", "6",
                               "--workers", "1", "-q", "--store", str(tmp_path / "a.zarr")])
    assert out.exit_code == 0, out.output
    res = runner.invoke(main, ["analyze", "ceat", "--store", str(tmp_path / "a.zarr"), "--out",
                               str(tmp_path / "res"), "--n-samples", "200", "--n-bootstrap", "20",
                               "--bootstrap-samples", "20", "-q"])
    assert res.exit_code == 0, res.output
    import pandas as pd

    table = pd.read_csv(tmp_path / "res" / "ceat.csv")
    for col in ("model", "test", "layer", "pooling", "ces", "se", "ci_low", "ci_high", "z", "p",
                "tau2", "q", "i2", "n_samples"):
        assert col in table, col
    assert (tmp_path / "res" / "ceat.nc").exists() and (tmp_path / "res" / "ceat_contexts.csv").exists()
    # the test's readable name travels from the tests file through the store into the table
    assert table["test_name"].unique().tolist() == ["Flowers vs insects × pleasant/unpleasant"]
