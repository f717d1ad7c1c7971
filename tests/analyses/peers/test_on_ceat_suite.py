"""The families over WEAT-style tests (weat, peers, ml-eat, robustness) on a ``ceat`` suite (issue 25):
each word's vector is the mean of its contexts, checked against a loop over the items, and every
family's numbers equal its numbers on a ``weat``-style suite of those means built by hand."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner
from scipy.spatial import distance

import emb
from emb.analyses import ANALYSES
from emb.analyses._examples import suite_dataset
from emb.analyses.wordsets.contexts import per_stimulus
from emb.cli.main import main
from tests.analyses._synthetic import ceat_dataset, write_store

FAMILIES = ("weat", "mac", "ect", "ripa", "rnsb", "ml-eat", "seed-sensitivity", "empirical-null",
            "reliability")


def _loop_means(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Per stimulus, the mean of its items' vectors, by a plain loop over the items (float64)."""
    emb_ = np.asarray(ds["embedding"].values, dtype=np.float64)
    stim = ds["stimulus"].values.astype(str)
    sums: dict[str, np.ndarray] = {}
    counts: dict[str, int] = {}
    for i, s in enumerate(stim):
        sums[s] = sums.get(s, 0.0) + emb_[i]
        counts[s] = counts.get(s, 0) + 1
    return {s: sums[s] / counts[s] for s in sums}


def _weat_suite_of_means(ds: xr.Dataset) -> xr.Dataset:
    """A ``weat``-style suite (one item per word, test and role) of the loop's means: the tests
    read from the ceat suite's labels by a loop of their own."""
    means = _loop_means(ds)
    rows = []
    seen = set()
    for s, tests, roles, groups in zip(*(ds[v].values.astype(str) for v in
                                          ("stimulus", "tests", "roles", "groups")), strict=True):
        for t, r, g in zip(tests.split("|"), roles.split("|"), groups.split("|"), strict=True):
            if (s, t, r) not in seen:
                seen.add((s, t, r))
                rows.append({"word": s, "test": t, "role": r, "group": g})
    items = pd.DataFrame(rows)
    vecs = np.stack([means[w] for w in items["word"]])
    labels = {c: items[c].to_numpy().astype(object) for c in ("test", "role", "group")}
    labels["setting"] = np.full(len(items), "sentence", dtype=object)
    return suite_dataset("weat", items["word"], np.ones(len(items), dtype=int), vecs, labels,
                         poolings=list(ds["pooling"].values), settings=("sentence",),
                         dtype="float64")


@pytest.fixture(scope="module")
def ceat() -> xr.Dataset:
    # unequal numbers of contexts, 3 layers, two tests sharing their attribute stimuli
    counts = [4, 7, 5, 6, 3] + [5] * 5 + [6, 2, 4, 5] + [3, 3, 4, 4]
    return ceat_dataset(n_stim=(5, 5, 4, 4), contexts=counts, n_layers=3)


def test_each_word_is_the_mean_of_its_contexts(ceat: xr.Dataset, tmp_path: Path) -> None:
    loop = _loop_means(ceat)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "c.zarr", {"ceat": ceat})
    lazy = emb.open_store(str(store)).dataset("ceat")
    for source in (ceat, lazy):  # in memory (numpy) and from a store (dask, lazy until computed)
        words = per_stimulus(source)
        if source is lazy:
            assert words["embedding"].chunks is not None
        got = words["embedding"].values
        for i, w in enumerate(words["word"].values.astype(str)):
            np.testing.assert_allclose(got[i], loop[w], rtol=0, atol=1e-6)
        n = dict(zip(words["word"].values.astype(str), words["n_contexts"].values.tolist(), strict=True))
        assert (n["x0"], n["x1"], n["pleasant1"], n["n0"]) == (4, 7, 2, 4)
    # a stimulus of two tests is one item per test, with the same vector and context label
    words = per_stimulus(ceat)
    shared = words.isel(item=np.flatnonzero(words["word"].values == "pleasant0"))
    assert sorted(shared["test"].values.tolist()) == ["T1", "T2"]
    assert len(set(shared["context"].values.tolist())) == 1
    np.testing.assert_array_equal(shared["embedding"].values[0], shared["embedding"].values[1])
    record = json.loads(words.attrs["contexts"])
    assert record["stimuli"] == 28 and record["min"] == 2 and record["max"] == 7


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_equals_itself_on_the_means_built_by_hand(ceat: xr.Dataset, name: str) -> None:
    function = ANALYSES[name].function
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = function(ceat).compute()
        want = function(_weat_suite_of_means(ceat)).compute()
    assert json.loads(got.attrs["contexts"])["stimuli"] == 28 and "contexts" not in want.attrs
    assert json.loads(got.attrs["words"]) == json.loads(want.attrs["words"])
    assert sorted(got["test"].values.tolist()) == ["T1", "T2"]
    for var in want.data_vars:
        a, b = got[var], want[var]
        if np.issubdtype(b.dtype, np.number) and b.dtype != bool:
            np.testing.assert_allclose(a.values, b.values, rtol=1e-9, atol=1e-9, err_msg=var)
        else:
            np.testing.assert_array_equal(a.values, b.values, err_msg=var)


def test_mac_on_a_ceat_suite_equals_a_loop_over_scipy(ceat: xr.Dataset) -> None:
    """MAC of T1 at one cell, from the loop's means and scipy's cosine distance."""
    means = _loop_means(ceat)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ANALYSES["mac"].function(ceat, tests=["T1"]).compute()
    sets = json.loads(res.attrs["words"])["T1"]
    layer, pooling = 2, 1
    vec = {r: [means[w][layer, pooling] for w in sets[r]] for r in "XYAB"}
    expected = np.mean([np.mean([distance.cosine(t, s) for s in vec[S]])
                        for t in [*vec["X"], *vec["Y"]] for S in "AB"])
    got = float(res["mac"].sel(test="T1", layer=layer).isel(pooling=pooling).squeeze())
    assert got == pytest.approx(expected, abs=1e-9)
    assert int(res["n_x"].sel(test="T1")) == 5 and int(res["n_a"].sel(test="T1")) == 4


def test_a_test_file_and_word_lists_apply_to_a_ceat_suite(ceat: xr.Dataset, tmp_path: Path) -> None:
    """A word chosen in two tests counts once; --x … --b and a test file read the same means."""
    spec = tmp_path / "t.json"
    spec.write_text(json.dumps({"tests": {"mine": {"X": ["x0", "x1", "x2"], "Y": ["n0", "n1", "n2"],
                                         "A": ["pleasant0", "pleasant1"],
                                         "B": ["unpleasant0", "unpleasant1"]}}}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_file = ANALYSES["ect"].function(ceat, tests=str(spec)).compute()
        by_words = ANALYSES["ect"].function(
            ceat, x=["x0", "x1", "x2"], y=["n0", "n1", "n2"], a=["pleasant0", "pleasant1"],
            b=["unpleasant0", "unpleasant1"]).compute()
    np.testing.assert_allclose(by_file["ect"].values, by_words["ect"].values, rtol=0, atol=1e-12)
    assert np.isfinite(by_file["ect"].values).all()


def test_the_cli_on_a_ceat_store_says_what_a_words_vector_is(ceat: xr.Dataset, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "c.zarr", {"ceat": ceat})
    for name in ("ripa", "seed-sensitivity"):
        out = tmp_path / name
        result = CliRunner().invoke(main, ["analyze", name, "--store", str(store), "--suite", "ceat",
                                           "--out", str(out), "--no-plots", "--min-words", "3"])
        assert result.exit_code == 0, result.output
        text = " ".join(result.output.split())  # the summary wraps at the terminal's width
        assert "each word's vector is the mean of its contexts" in text, text
        assert "28 stimuli, 2–7 contexts each, median 4)" in text, text
        table = pd.read_csv(out / f"{name.replace('-', '_')}.csv")
        assert {"n_x", "n_y", "n_a", "n_b"} <= set(table.columns)
        assert set(table["test"]) == {"T1", "T2"}
