"""Settings compared on the same words (issue 24): a setting that lacks some words, which carry a
planted effect, does not change the others' word lists unless ``word_set="per-setting"``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats
import xarray as xr

from emb.analyses import run_analysis
from emb.analyses.valnorm import valnorm
from emb.analyses.vast import ANALYSIS, vast
from tests.analyses._synthetic import PLEASANT, UNPLEASANT, vast_dataset

SETTINGS = ("bleached", "random")
N_WORDS = 80
N_GONE = 10
QUICK = {"tokenization": False, "nullification": False}


def _words(ds: xr.Dataset) -> np.ndarray:
    return np.asarray(ds["word"].values).astype(str)


@pytest.fixture(scope="module")
def planted() -> tuple[xr.Dataset, list[str]]:
    """Two settings; the N_GONE most pleasant lexicon words have no 'random' item, and in
    'bleached' each sits on an unpleasant polar word's vector (SC-WEAT against its rating):
    scored with them, bleached's r drops."""
    ds = vast_dataset(n_words=N_WORDS, settings=SETTINGS, seed=4)
    words, setting = _words(ds), np.asarray(ds["setting"].values).astype(str)
    stim = np.asarray(ds["stimulus_set"].values).astype(str)
    lex = (stim == "lexicon") & (setting == "bleached")
    valence = np.asarray(ds["valence"].values, dtype=float)
    order = np.flatnonzero(lex)[np.argsort(-valence[lex], kind="stable")]
    gone = [str(w) for w in words[order[:N_GONE]]]
    emb = ds["embedding"].values.copy()
    donor = np.flatnonzero((stim == "unpleasant") & (setting == "bleached"))[0]
    for i, pos in enumerate(order[:N_GONE]):
        emb[pos] = emb[donor] * (1.0 + 0.01 * i)
    ds = ds.assign(embedding=(ds["embedding"].dims, emb))
    keep = ~(np.isin(words, gone) & (setting == "random"))
    return ds.isel(item=np.flatnonzero(keep)), gone


def _without(ds: xr.Dataset, gone: list[str]) -> xr.Dataset:
    """The store as if the dropped words had never been extracted in any setting."""
    return ds.isel(item=np.flatnonzero(~np.isin(_words(ds), gone)))


def test_vast_default_compares_the_same_words(planted: tuple[xr.Dataset, list[str]]) -> None:
    ds, gone = planted
    res = vast(ds, **QUICK).compute()
    assert res.attrs["word_set"] == "common"
    # n equal across the settings in every cell, polar sets too (arousal's poles included)
    n = res["n"].transpose("setting", ...).values
    assert (n == n[:1]).all()
    poles = res["n_poles"].transpose("setting", ...).values
    assert (poles == poles[:1]).all()
    assert int(res["n"].sel(rating="valence", lexicon="toy", setting="bleached", pooling="last", layer=0)) == (
        N_WORDS - N_GONE)
    # the planted words are out of every setting: the same numbers as a store without them
    ref = vast(_without(ds, gone), **QUICK, word_set="per-setting").compute()
    for name in ("r", "p", "n", "spearman_r", "n_poles"):
        np.testing.assert_array_equal(res[name].values, ref[name].values)
    # the summary says how many were dropped and why
    notes = json.loads(res.attrs["notes"])
    assert any(f"compared on the {N_WORDS - N_GONE} lexicon words present in every setting "
               f"({N_GONE} dropped: {N_GONE} absent from 'random'" in line for line in notes)
    tables = ANALYSIS.tables(res)
    summary = ANALYSIS.summary(res, tables)
    assert any("absent from 'random'" in line for line in summary.notes)
    settings_rows = tables["vast"][tables["vast"]["experiment"] == "settings"]
    assert settings_rows["n_poles"].notna().all()


def test_vast_per_setting_keeps_each_settings_words(planted: tuple[xr.Dataset, list[str]]) -> None:
    ds, gone = planted
    common = vast(ds, **QUICK).compute()
    per = vast(ds, **QUICK, word_set="per-setting").compute()
    at = {"rating": "valence", "pooling": "last", "lexicon": "toy"}
    n_b = per["n"].sel(**at, setting="bleached").values
    n_r = per["n"].sel(**at, setting="random").values
    assert (n_b == N_WORDS).all() and (n_r == N_WORDS - N_GONE).all()
    assert (f"lexicon 'toy': each setting on its own words (--word-set per-setting), bleached "
            f"{N_WORDS}, random {N_WORDS - N_GONE} lexicon words") in per.attrs["notes"]
    # the planted words pull bleached's r down only when they are scored
    r_per = per["r"].sel(**at, setting="bleached").values
    r_common = common["r"].sel(**at, setting="bleached").values
    assert (r_common - r_per > 0.05).all()
    # per setting = today's numbers: each setting as a run of that setting alone, table byte-equal
    for setting in SETTINGS:
        alone = vast(ds, **QUICK, settings=setting).compute()
        one = per.sel(setting=[setting])
        for name in ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p", "n_poles"):
            np.testing.assert_array_equal(one[name].values, alone[name].values)
        got = ANALYSIS.tables(one)["vast"].to_csv(index=False)
        want = ANALYSIS.tables(alone)["vast"].to_csv(index=False)
        assert got == want


def test_vast_cell_equals_a_hand_computation_on_the_common_words(
    planted: tuple[xr.Dataset, list[str]],
) -> None:
    ds, gone = planted
    res = vast(ds, **QUICK).compute()
    words, setting = _words(ds), np.asarray(ds["setting"].values).astype(str)
    stim = np.asarray(ds["stimulus_set"].values).astype(str)
    pooling = list(np.asarray(ds["pooling"].values).astype(str)).index("mean")
    top = int(ds["layer"].values[-1])
    for name in SETTINGS:
        here = setting == name
        X = ds["embedding"].values[:, top, pooling, :].astype(np.float64)
        unit = X / np.linalg.norm(X, axis=1, keepdims=True)
        a = unit[here & (stim == "pleasant")]
        b = unit[here & (stim == "unpleasant")]
        targets = np.flatnonzero(here & (stim == "lexicon") & ~np.isin(words, gone)
                                 & ~np.isin(words, PLEASANT + UNPLEASANT))
        es = []
        for t in targets:
            ca, cb = a @ unit[t], b @ unit[t]
            es.append((ca.mean() - cb.mean()) / np.concatenate([ca, cb]).std(ddof=1))
        want = scipy.stats.pearsonr(es, np.asarray(ds["valence"].values, dtype=float)[targets])
        got = res.sel(rating="valence", lexicon="toy", setting=name, pooling="mean", layer=top)
        assert int(got["n"]) == targets.size == N_WORDS - N_GONE
        assert float(got["r"]) == pytest.approx(want.statistic, abs=1e-5)


def test_valnorm_default_compares_the_same_words(planted: tuple[xr.Dataset, list[str]]) -> None:
    ds, gone = planted
    res = valnorm(ds, per_word=False).compute()
    n = res["n"].values
    assert (n == N_WORDS - N_GONE).all()
    assert (res["n_poles"].values == len(PLEASANT) + len(UNPLEASANT)).all()
    ref = valnorm(_without(ds, gone), per_word=False, word_set="per-setting").compute()
    np.testing.assert_array_equal(res["r"].values, ref["r"].values)
    per = valnorm(ds, per_word=False, word_set="per-setting").compute()
    assert (per["n"].sel(setting="bleached").values == N_WORDS).all()
    assert (per["r"].sel(setting="bleached").values
            < res["r"].sel(setting="bleached").values - 0.05).all()
    # vast and valnorm agree under either rule
    v = vast(ds, **QUICK).compute()
    np.testing.assert_allclose(
        v["r"].sel(rating="valence").transpose("lexicon", "setting", "layer", "pooling").values,
        res["r"].values, atol=1e-5)
    for frame in (ANALYSIS.tables(v)["vast"],):
        assert "n_poles" in frame
    # arousal's poles are the 25 highest and lowest rated of the common words, the same in each
    aro = valnorm(ds, ratings="arousal", per_word=False).compute()
    assert (aro["n"].values == aro["n"].values.flat[0]).all()


def test_two_stores_compared_on_the_words_both_have(planted: tuple[xr.Dataset, list[str]]) -> None:
    ds, gone = planted
    full = vast_dataset(n_words=N_WORDS, settings=SETTINGS, seed=4)
    res = run_analysis("valnorm", {"a": full, "b": ds}, per_word=False).compute()
    assert (res["n"].values == N_WORDS - N_GONE).all()
    alone = valnorm(_without(full, gone), per_word=False).compute()
    np.testing.assert_array_equal(res["r"].sel(model="a").values, alone["r"].values)
    notes = json.loads(res.attrs["notes"])
    assert notes[0].startswith(f"compared on the {2 * (N_WORDS + 50) - N_GONE} stimuli")
    assert f"({N_GONE} dropped: {N_GONE} absent from store 'b', e.g. random/lexicon/" in notes[0]
    per = run_analysis("valnorm", {"a": full, "b": ds}, per_word=False,
                       word_set="per-setting").compute()
    assert (per["n"].sel(model="a").values == N_WORDS).all()


def test_sc_weat_settings_on_the_same_words(planted: tuple[xr.Dataset, list[str]]) -> None:
    from emb.analyses.sc_weat import ANALYSIS as SC
    from emb.analyses.sc_weat import sc_weat_lexicon

    ds, gone = planted
    res = sc_weat_lexicon(ds).compute()
    assert res.sizes["word"] == N_WORDS - N_GONE and not set(gone) & set(res["word"].values)
    assert np.isfinite(res["effect_size"].values).all()  # every word in every setting
    assert (res["n_words"].values == N_WORDS - N_GONE).all()
    assert (res["n_a"].values == len(PLEASANT)).all() and not res["small_n"].values.any()
    table = SC.tables(res)["sc_weat"]
    assert {"n_words", "n_a", "n_b", "small_n"} <= set(table.columns)
    notes = SC.summary(res, SC.tables(res)).notes
    assert any(f"({N_GONE} dropped: {N_GONE} absent from 'random'" in n for n in notes)
    per = sc_weat_lexicon(ds, word_set="per-setting").compute()
    assert list(per["n_words"].values) == [N_WORDS, N_WORDS - N_GONE]
    kept = list(res["word"].values)
    np.testing.assert_array_equal(per["effect_size"].sel(word=kept).values,
                                  res["effect_size"].values)
    small = sc_weat_lexicon(ds, min_words=30).compute()
    assert small["small_n"].values.all()
    assert any(n.startswith("Warning: small word sets (fewer than 30") and "A 25, B 25" in n
               for n in SC.summary(small, SC.tables(small)).notes)
