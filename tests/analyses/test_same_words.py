"""Two stores in one run are compared on the words both have (word_set, issue 24): weat and
similarity, where within one store the layers, poolings and settings share their words by
construction."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

from emb.analyses import ANALYSES, run_analysis
from emb.analyses._examples import similarity_dataset, similarity_pairs, weat_dataset
from emb.analyses.similarity import word_similarity
from emb.analyses.weat import weat
from emb.errors import AnalysisError

WEAT = {"tests": ["WEAT1"], "n_permutations": 200, "n_bootstrap": 0}


def _without(ds: xr.Dataset, words: list[str]) -> xr.Dataset:
    return ds.isel(item=np.flatnonzero(~np.isin(np.asarray(ds["word"].values).astype(str), words)))


def test_weat_two_stores_on_the_words_both_have() -> None:
    full = weat_dataset(seed=1)
    lacking = _without(weat_dataset(seed=2), ["flower0", "flower1"])
    res = run_analysis("weat", {"a": full, "b": lacking}, **WEAT).compute()
    assert res["n_x"].sel(test="WEAT1").values.tolist() == [6, 6]
    # model a's numbers: those of store a without the two words, alone
    alone = weat(_without(full, ["flower0", "flower1"]), **WEAT).compute()
    np.testing.assert_allclose(res["effect_size"].sel(model="a").values,
                               alone["effect_size"].values, rtol=1e-12)
    note = json.loads(res.attrs["notes"])[0]
    assert "absent from store 'b'" in note and "flower0" in note
    record = ANALYSES["weat"]
    assert note in record.summary(res, record.tables(res)).notes
    per = run_analysis("weat", {"a": full, "b": lacking}, **WEAT, word_set="per-setting").compute()
    assert per["n_x"].sel(test="WEAT1").values.tolist() == [8, 6]
    assert not np.allclose(per["effect_size"].sel(model="a").values,
                           res["effect_size"].sel(model="a").values)


def test_similarity_two_stores_on_the_same_pairs() -> None:
    pairs = similarity_pairs(n_words=40, n_pairs=80)
    one, scored = similarity_dataset(pairs, seed=1)
    two, _ = similarity_dataset(pairs, seed=2)
    two = _without(two, ["sim000", "sim001"])
    kw = {"pairs": scored, "k_max": 1, "allow_missing": True}
    res = run_analysis("similarity", {"a": one, "b": two}, **kw).compute()
    n = res["n"].transpose("dataset", "model").values
    assert (n[:, 0] == n[:, 1]).all()
    alone = word_similarity(_without(one, ["sim000", "sim001"]), **kw).compute()
    np.testing.assert_allclose(res["rho"].sel(model="a").values, alone["rho"].values, rtol=1e-12)
    record = ANALYSES["similarity"]
    assert any("absent from store 'b', e.g. bleached/" in n
               for n in record.summary(res, record.tables(res)).notes)
    per = run_analysis("similarity", {"a": one, "b": two}, **kw, word_set="per-setting").compute()
    n = per["n"].transpose("dataset", "model").values
    assert (n[:, 0] > n[:, 1]).all()


def test_word_set_is_one_declared_option() -> None:
    with pytest.raises(AnalysisError, match=r"--word-set \(word_set= in Python\) of analysis "
                                            r"'weat' must be one of common, per-setting; got 'same'"):
        weat(weat_dataset(), **WEAT, word_set="same")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["ceat", "ibd", "stereotype", "intersectional", "valence-subspace"])
def test_analyses_without_the_option_compare_stores_on_the_stimuli_both_have(name: str) -> None:
    """Two stores, one without a word: every analysis without ``word_set`` computes each store
    on the stimuli both have (no choice to offer), equal to running it on those alone, and its
    summary names what was dropped (before, each store ran on its own words, unsaid)."""
    import warnings

    from emb.analyses._provenance import summarize

    ds, options = ANALYSES[name].example()
    words = np.unique(ds["word"].values.astype(str))
    drop = str(words[-1])
    fewer = ds.isel(item=np.flatnonzero(ds["word"].values.astype(str) != drop))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both = run_analysis(name, {"a": ds, "b": fewer}, **options).compute()
        alone = run_analysis(name, {"a": fewer}, **options).compute()
    for var, da in alone.data_vars.items():
        if var not in both or not np.issubdtype(da.dtype, np.number):
            continue
        got = both[var].sel(model="a")
        want = da.sel(model="a")
        got, want = xr.align(got, want, join="inner")
        np.testing.assert_allclose(np.asarray(got.values, float), np.asarray(want.values, float),
                                   rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=var)
    analysis = ANALYSES[name]
    notes = summarize(analysis, both, analysis.report_tables(both)).notes
    assert any("absent from store 'b'" in n and drop in n for n in notes), notes
