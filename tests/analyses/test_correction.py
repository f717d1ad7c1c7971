"""Multiple-comparison correction beside the raw p: labelled, lazy, over the chosen family."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from statsmodels.stats.multitest import multipletests

from emb.analyses import stats, vast, weat
from emb.errors import AnalysisError
from tests.analyses._synthetic import vast_dataset, weat_dataset


@pytest.mark.parametrize("method, sm", [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjust_over_two_dims_equals_statsmodels_on_the_flattened_family(method, sm):
    rng = np.random.default_rng(1)
    p = xr.DataArray(rng.uniform(0, 0.2, (3, 4, 2)), dims=("test", "layer", "pooling"),
                     coords={"layer": [0, 1, 2, 3], "pooling": ["first", "mean"]})
    got = stats.adjust(p.chunk({"pooling": 1}), method=method, dims=("test", "layer"))
    assert got.dims == p.dims and list(got.layer.values) == [0, 1, 2, 3]
    for pooling in ("first", "mean"):
        flat = p.sel(pooling=pooling).values.ravel()
        want = multipletests(flat, method=sm)[1].reshape(3, 4)
        np.testing.assert_allclose(got.sel(pooling=pooling).values, want, rtol=1e-12)


def test_adjust_rejects_unknown_dims_and_methods():
    p = xr.DataArray([0.1, 0.2], dims="test")
    with pytest.raises(AnalysisError, match="must be dims"):
        stats.adjust(p, method="holm", dims=("layer",))
    with pytest.raises(AnalysisError, match="holm"):
        stats.adjust(p, method="bonferroni", dims=("test",))  # type: ignore[arg-type]


def test_weat_correction_families():
    ds = weat_dataset()
    res = weat(ds, correction="holm", correction_over="test+layer", n_permutations=500).compute()
    assert res.attrs["correction_over"] == "test+layer"
    for setting in res.setting.values:
        for pooling in res.pooling.values:
            p = res.p.sel(setting=setting, pooling=pooling).transpose("test", "layer")
            want = multipletests(p.values.ravel(), method="holm")[1].reshape(p.shape)
            got = res.p_adjusted.sel(setting=setting, pooling=pooling).transpose("test", "layer")
            np.testing.assert_allclose(got.values, want, rtol=1e-12)
    by_layer = weat(ds, correction="bh", correction_over="layer", n_permutations=500).compute()
    p = by_layer.p.isel(test=0, setting=0, pooling=0)
    np.testing.assert_allclose(by_layer.p_adjusted.isel(test=0, setting=0, pooling=0).values,
                               multipletests(p.values, method="fdr_bh")[1], rtol=1e-12)
    assert (by_layer.p_adjusted >= by_layer.p - 1e-15).all()


def test_vast_corrects_over_layers():
    ds = vast_dataset(n_words=60, n_layers=4)
    res = vast(ds, tokenization=False, nullification=False, correction="holm").compute()
    p = res.p.isel(rating=0, lexicon=0, setting=0, pooling=0)
    np.testing.assert_allclose(res.p_adjusted.isel(rating=0, lexicon=0, setting=0, pooling=0),
                               multipletests(p.values, method="holm")[1], rtol=1e-12)
    assert "Holm" in res.p_adjusted.attrs["long_name"] and "layers" in res.p_adjusted.attrs["long_name"]
    plain = vast(ds, tokenization=False, nullification=False).compute()
    assert "p_adjusted" not in plain  # no correction asked: no copy of p posing as adjusted


def test_weat_has_no_p_adjusted_without_a_correction():
    res = weat(weat_dataset()).compute()
    assert "p_adjusted" not in res and res.attrs["correction"] == "none"
    from emb.analyses.weat import ANALYSIS

    table = ANALYSIS.tables(res)["weat"]
    assert "p_adjusted" not in table
