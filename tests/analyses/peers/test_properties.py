"""The house's property tests for the families of issue 25 (MAC, ECT, RIPA, RNSB, ML-EAT, seed
sensitivity, empirical null, reliability): swapping X and Y flips what is signed and leaves what is
not; positive scaling leaves the cosine metrics unchanged (and scales RIPA, an inner product);
standardisation is recorded, ``none`` gives the raw numbers, and it is reversible to them."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import xarray as xr

from emb.analyses import ANALYSES, run_analysis
from emb.analyses._examples import weat_dataset
from emb.analyses.stats.anisotropy import standardize

CLOSE = {"rtol": 1e-9, "atol": 1e-10}


@pytest.fixture(scope="module")
def ds() -> xr.Dataset:
    return weat_dataset(n_layers=3, seed=3).load()


def _sets(ds: xr.Dataset) -> dict[str, list[str]]:
    words = ds.isel(item=np.flatnonzero(ds["test"].values == "WEAT1"))
    return {r: list(dict.fromkeys(words["word"].values[words["role"].values == r].astype(str)))
            for r in "XYAB"}


def _run(ds: xr.Dataset, name: str, sets: dict[str, list[str]], **options) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ANALYSES[name].function(ds, x=sets["X"], y=sets["Y"], a=sets["A"], b=sets["B"],
                                       **options).compute()


def _swapped(sets: dict[str, list[str]], one: str, two: str) -> dict[str, list[str]]:
    return {**sets, one: sets[two], two: sets[one]}


def test_swapping_x_and_y(ds: xr.Dataset) -> None:
    sets = _sets(ds)
    rev = _swapped(sets, "X", "Y")
    for name, var in (("mac", "mac"), ("ect", "ect"), ("rnsb", "rnsb")):  # unsigned in X vs Y
        np.testing.assert_allclose(_run(ds, name, rev)[var], _run(ds, name, sets)[var], **CLOSE)
    np.testing.assert_allclose(_run(ds, "ripa", rev).ripa, -_run(ds, "ripa", sets).ripa, **CLOSE)
    fwd, back = _run(ds, "ml-eat", sets), _run(ds, "ml-eat", rev)
    np.testing.assert_allclose(back.effect_size, -fwd.effect_size, **CLOSE)
    # level 2 and 3: the targets' own results trade places
    np.testing.assert_allclose(back.target_effect_size.values, fwd.target_effect_size.values[..., ::-1], **CLOSE)
    blocks = [str(b) for b in fwd["block"].values]
    swap = [blocks.index(b.replace("X", "#").replace("Y", "X").replace("#", "Y")) for b in blocks]
    np.testing.assert_allclose(back.mean_cosine.values, fwd.mean_cosine.values[..., swap], **CLOSE)
    fwd, back = _run(ds, "seed-sensitivity", sets), _run(ds, "seed-sensitivity", rev)
    np.testing.assert_allclose(back.effect_size, -fwd.effect_size, **CLOSE)
    np.testing.assert_allclose(back.jackknife_se, fwd.jackknife_se, **CLOSE)
    fwd_words, back_words = (np.asarray(r["member_word"].values).reshape(-1)[-r.sizes["member"]:]
                             for r in (fwd, back))
    influence = {str(w): fwd.influence.isel(member=i).values for i, w in enumerate(fwd_words)}
    assert sorted(influence) == sorted(str(w) for w in back_words)
    for i, w in enumerate(back_words):
        np.testing.assert_allclose(back.influence.isel(member=i).values, -influence[str(w)], **CLOSE)
    fwd, back = _run(ds, "empirical-null", sets), _run(ds, "empirical-null", rev)
    np.testing.assert_allclose(back.effect_size, -fwd.effect_size, **CLOSE)
    np.testing.assert_allclose(back.null_mean, -fwd.null_mean, **CLOSE)  # the same random A, B
    np.testing.assert_allclose(back.null_sd, fwd.null_sd, **CLOSE)
    fwd, back = _run(ds, "reliability", sets), _run(ds, "reliability", rev)
    for var in ("split_half_r", "reliability", "abs_d", "abs_ripa", "ect_bias", "mac"):
        np.testing.assert_allclose(back[var], fwd[var], err_msg=var, **CLOSE)


def test_swapping_a_and_b(ds: xr.Dataset) -> None:
    sets = _sets(ds)
    rev = _swapped(sets, "A", "B")
    for name, var in (("mac", "mac"), ("ect", "ect")):  # A ∪ B as one set
        np.testing.assert_allclose(_run(ds, name, rev)[var], _run(ds, name, sets)[var], **CLOSE)
    # RIPA per attribute set: A's value becomes B's, and the test's contrast flips its sign
    fwd, back = _run(ds, "ripa", sets), _run(ds, "ripa", rev)
    np.testing.assert_allclose(back.ripa_a, fwd.ripa_b, **CLOSE)
    np.testing.assert_allclose(back.ripa_b, fwd.ripa_a, **CLOSE)
    np.testing.assert_allclose(back.ripa, -fwd.ripa, **CLOSE)
    for name in ("ml-eat", "seed-sensitivity", "empirical-null"):
        np.testing.assert_allclose(_run(ds, name, rev).effect_size, -_run(ds, name, sets).effect_size,
                                   err_msg=name, **CLOSE)
    np.testing.assert_allclose(_run(ds, "ml-eat", rev).target_effect_size,
                               -_run(ds, "ml-eat", sets).target_effect_size, **CLOSE)


@pytest.mark.parametrize("seed", [0, 1])
def test_positive_scaling(ds: xr.Dataset, seed: int) -> None:
    """Every vector times its own positive factor: the cosine metrics do not move; one factor
    for every vector: ECT (cosines with the targets' mean vectors) does not move either, and
    RIPA (the raw word's inner product with unit relation vectors) scales with it."""
    sets = _sets(ds)
    rng = np.random.default_rng(seed)
    each = ds.copy()
    each["embedding"] = ds.embedding * rng.uniform(0.1, 10.0, size=(ds.sizes["item"], 1, 1, 1))
    for name, variables in (
        ("mac", ["mac"]),
        ("ml-eat", ["effect_size", "p", "target_effect_size", "mean_cosine", "std_cosine", "pattern"]),
        ("seed-sensitivity", ["effect_size", "influence", "subset_median", "jackknife_se"]),
        ("empirical-null", ["effect_size", "null_mean", "null_sd", "empirical_p"]),
        ("reliability", ["split_half_r", "abs_d", "mac"]),
    ):
        a, b = _run(ds, name, sets), _run(each, name, sets)
        for var in variables:
            np.testing.assert_allclose(b[var], a[var], rtol=1e-6, atol=1e-9, err_msg=f"{name} {var}")
    c = float(rng.uniform(0.1, 10.0))
    common = ds.copy()
    common["embedding"] = ds.embedding * c
    np.testing.assert_allclose(_run(common, "ect", sets).ect, _run(ds, "ect", sets).ect, rtol=1e-6)
    np.testing.assert_allclose(_run(common, "ripa", sets).ripa, c * _run(ds, "ripa", sets).ripa, rtol=1e-6)


@pytest.mark.parametrize("how", ["center", "zscore"])
def test_standardisation_is_recorded_and_reversible(ds: xr.Dataset, how: str) -> None:
    """run_analysis records it; ``none`` gives the family's own raw numbers; the standardised
    vectors map back to the raw ones with the layer's mean (and SD); and the standardised result
    equals the family on vectors standardised by hand (numpy, per layer and pooling)."""
    sets = _sets(ds)
    opts = {"x": sets["X"], "y": sets["Y"], "a": sets["A"], "b": sets["B"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = run_analysis("mac", {"m": ds}, **opts)
        std = run_analysis("mac", {"m": ds}, standardize=how, **opts)
    assert raw.attrs["standardize"] == "none" and std.attrs["standardize"] == how
    np.testing.assert_array_equal(raw.mac.sel(model="m").values, _run(ds, "mac", sets).mac.values)
    values = ds.embedding.values.astype(np.float64)
    mean = values.mean(axis=0)
    sd = values.std(axis=0) if how == "zscore" else np.ones_like(mean)
    back = standardize(ds.embedding.astype(np.float64), how).values * sd + mean
    np.testing.assert_allclose(back, values, rtol=1e-9, atol=1e-9)
    by_hand = ds.copy()
    by_hand["embedding"] = (ds.embedding.dims, (values - mean) / sd)
    np.testing.assert_allclose(std.mac.sel(model="m").values, _run(by_hand, "mac", sets).mac.values,
                               rtol=1e-5, atol=1e-7)
    assert not np.allclose(std.mac.values, raw.mac.values)
    assert json.loads(json.dumps(std.attrs["standardize"])) == how
