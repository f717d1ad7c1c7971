"""Honest statistics (issue 9): p-values below float range, Monte-Carlo floors and their standard
error, the bootstrap CI of WEAT's d over stimuli, CIs of Spearman's rho, per-word residuals — each
checked against something independent (mpmath, a brute-force loop, a simulation, statsmodels)."""

from __future__ import annotations

import mpmath
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st

from emb.analyses import ANALYSES, stats
from emb.analyses._analysis import format_adjusted, format_p, mc_floor
from emb.analyses.sc_weat import sc_weat_lexicon
from emb.analyses.valnorm import valnorm
from emb.analyses.weat import weat
from tests.analyses._synthetic import vast_dataset, weat_dataset


# -- p below float range -----------------------------------------------------------------------------
def _mp_log10_p(r: float, n: int, method: str) -> float:
    """The same tail probability by mpmath at 60 digits: I_x(a, b) = x^a (1-x)^b /(a B(a,b))
    2F1(a+b, 1; a+1; x) (Abramowitz & Stegun 26.5.23)."""
    mpmath.mp.dps = 60
    if method == "pearson":
        a = mpmath.mpf(n) / 2 - 1
        b, x, scale = a, (1 - mpmath.mpf(abs(r))) / 2, 2
    else:
        a = (mpmath.mpf(n) - 2) / 2
        b, x, scale = mpmath.mpf(1) / 2, 1 - mpmath.mpf(r) ** 2, 1
    tail = x**a * (1 - x) ** b / (a * mpmath.beta(a, b)) * mpmath.hyp2f1(a + b, 1, a + 1, x, maxterms=10**7)
    return float(mpmath.log10(scale * tail))


@pytest.mark.parametrize("method", ["pearson", "spearman"])
@pytest.mark.parametrize("r, n", [(0.7, 13_915), (0.95, 3_000), (0.2, 50_000), (0.1, 100_000),
                                  (0.3, 400), (0.99, 50), (0.6, 1_000)])
def test_log10_pvalue_matches_mpmath_far_below_float_range(method: str, r: float, n: int) -> None:
    got = float(stats.log10_pvalue(r, n, method=method))
    assert got == pytest.approx(_mp_log10_p(r, n, method), rel=1e-10)


def test_p_below_float_range_is_floored_never_zero() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=20_000)
    y = x + 0.3 * rng.normal(size=20_000)
    for fn, method in ((stats.pearson, "pearson"), (stats.spearman, "spearman")):
        c = fn(x, y)
        assert float(c.pvalue) == stats.P_FLOOR > 0  # scipy's incomplete beta gives 0.0 here
        assert float(stats.log10_pvalue(c.r, c.n, method=method)) < -3000
    x = np.arange(40.0)
    perfect = stats.pearson(x, 2 * x)
    assert float(perfect.pvalue) == 0.0  # a perfect correlation's p is exactly 0, not floored
    assert stats.log10_pvalue(1.0, 40) == -np.inf
    # ... with few pairs its exact permutation p: 2 of the 4! orders (as is, reversed)
    assert float(stats.pearson(x[:4], 2 * x[:4]).pvalue) == pytest.approx(2 / 24)
    text = format_p(stats.P_FLOOR, log10_p=-3012.34)
    assert text == "p ≈ 10^-3012.3"


def test_tables_carry_log10_p_beside_p() -> None:
    res = valnorm(vast_dataset(n_words=60, settings=("bleached",))).compute()
    table = ANALYSES["valnorm"].tables(res)["valnorm"]
    cols = list(table.columns)
    assert cols[cols.index("p") + 1] == "log10_p"
    assert cols[cols.index("spearman_p") + 1] == "spearman_log10_p"
    np.testing.assert_allclose(table["log10_p"], np.log10(table["p"]), rtol=1e-9)


# -- Monte-Carlo p -----------------------------------------------------------------------------------
def test_monte_carlo_floor_and_standard_error() -> None:
    res = weat(weat_dataset(effect=6.0), exact_limit=10, n_permutations=99, seed=1,
               n_bootstrap=0).compute()
    assert (res.n_permutations == 99).all()
    p = res.p.sel(test="WEAT1", setting="bleached", pooling="last", layer=3)
    assert float(p) == pytest.approx(1 / 100)  # no random split beats the planted effect
    np.testing.assert_allclose(res.p_mc_se, np.sqrt(res.p * (1 - res.p) / 99))
    table = ANALYSES["weat"].tables(res)["weat"]
    row = table[(table.test == "WEAT1") & (table.setting == "bleached") & (table.pooling == "last")
                & (table.layer == 3)].iloc[0]
    assert bool(row.p_at_floor) and row.p_mc_se == pytest.approx(np.sqrt(0.01 * 0.99 / 99))
    lines = "\n".join(ANALYSES["weat"].summary(res, {"weat": table}).lines())
    assert "≤ 1/100 (0.01)" in lines
    exact = weat(weat_dataset(), n_bootstrap=0).compute()
    assert (exact.n_permutations == 0).all() and np.isnan(exact.p_mc_se).all()
    assert mc_floor([0.01, 0.02], [99, 99]).tolist() == [True, False]


def test_a_corrected_p_from_a_floored_p_is_shown_as_a_bound() -> None:
    """Holm grows with every raw p: computed from p ≤ 1/(N+1) it is only an upper bound too."""
    res = weat(weat_dataset(effect=6.0), exact_limit=10, n_permutations=99, seed=1,
               n_bootstrap=0, correction="holm").compute()
    table = ANALYSES["weat"].tables(res)["weat"]
    rows = ANALYSES["weat"].summary(res, {"weat": table}).table
    assert "p (Holm)" in rows.columns
    cell = table[(table.setting == "bleached") & (table.pooling == "last") & (table.layer == 3)]
    floored = cell.set_index("test").p_at_floor
    for _, row in rows.iterrows():
        shown = str(row["p (Holm)"])
        if floored[row["test"]]:
            assert shown.startswith("≤ ") and float(shown[2:]) > 0
        else:
            assert not shown.startswith("≤")
    assert floored.any()
    assert format_adjusted(1.0, from_floor=True) == "1"  # 1 bounds nothing


def test_sc_weat_monte_carlo_standard_error() -> None:
    res = sc_weat_lexicon(vast_dataset(n_words=20, settings=("bleached",)), n_permutations=50,
                          seed=2).compute()
    assert res.attrs["n_permutations_used"] == 50
    np.testing.assert_allclose(res.p_mc_se, np.sqrt(res.p * (1 - res.p) / 50))


# -- bootstrap CI over stimuli -----------------------------------------------------------------------
def _d(cos: np.ndarray, n_x: int, n_a: int, ddof: int) -> float:
    s = cos[:, :n_a].mean(axis=1) - cos[:, n_a:].mean(axis=1)
    return (s[:n_x].mean() - s[n_x:].mean()) / s.std(ddof=ddof)


def test_weat_bootstrap_equals_a_brute_force_loop_over_resampled_words() -> None:
    """The replicates are d on the resampled words themselves (the percentile interval reads
    them directly; the BCa default is checked against scipy in tests/analyses/stats/test_coverage.py)."""
    rng = np.random.default_rng(3)
    n_x, n_y, n_a, n_b, dim = 5, 6, 4, 7, 12
    vectors = rng.normal(size=(n_x + n_y + n_a + n_b, dim))
    vectors[:n_x] += vectors[n_x + n_y : n_x + n_y + n_a].mean(axis=0)  # some association
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cos = unit[: n_x + n_y] @ unit[n_x + n_y :].T
    low, high = stats.weat_bootstrap(cos, n_x, n_a, n_bootstrap=300, seed=7, ddof=1,
                                     method="percentile")
    counts = stats.bootstrap_counts([n_x, n_y, n_a, n_b], 300, seed=7)
    replicates = []
    groups = [np.arange(n_x), n_x + np.arange(n_y), n_x + n_y + np.arange(n_a),
              n_x + n_y + n_a + np.arange(n_b)]
    for b in range(300):
        picks = [np.repeat(g, c[b]) for g, c in zip(groups, counts, strict=True)]
        x, y, a, bb = (vectors[p] for p in picks)
        targets, attributes = np.vstack([x, y]), np.vstack([a, bb])
        tu = targets / np.linalg.norm(targets, axis=1, keepdims=True)
        au = attributes / np.linalg.norm(attributes, axis=1, keepdims=True)
        replicates.append(_d(tu @ au.T, n_x, n_a, 1))
    want = np.percentile(replicates, [2.5, 97.5])
    assert float(low) == pytest.approx(want[0], rel=1e-10)
    assert float(high) == pytest.approx(want[1], rel=1e-10)


def test_weat_bootstrap_in_the_analysis_brackets_a_planted_effect() -> None:
    strong = weat(weat_dataset(effect=4.0), n_bootstrap=500, seed=0).compute()
    cell = strong.sel(test="WEAT1", setting="bleached", pooling="last", layer=3)
    assert float(cell.ci_low) > 0.5 and float(cell.ci_low) <= float(cell.effect_size) <= float(cell.ci_high)
    null = strong.sel(test="WEAT2", setting="bleached", pooling="last")
    assert ((null.ci_low < 0) & (null.ci_high > 0)).mean() >= 0.75  # no planted effect in WEAT2
    again = weat(weat_dataset(effect=4.0), n_bootstrap=500, seed=0).compute()
    np.testing.assert_array_equal(again.ci_low, strong.ci_low)
    other_seed = weat(weat_dataset(effect=4.0), n_bootstrap=500, seed=1).compute()
    assert not np.array_equal(other_seed.ci_low, strong.ci_low)
    np.testing.assert_array_equal(other_seed.effect_size, strong.effect_size)
    assert "ci_low" not in weat(weat_dataset(), n_bootstrap=0).compute()


@settings(max_examples=25, deadline=None)
@given(sizes=st.tuples(*[st.integers(2, 6)] * 4), seed=st.integers(0, 10_000),
       scale=st.floats(0.01, 100.0))
def test_bootstrap_ci_is_ordered_and_scale_free(sizes: tuple[int, ...], seed: int, scale: float) -> None:
    n_x, n_y, n_a, n_b = sizes
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(sum(sizes), 6))

    def cosines(v: np.ndarray) -> np.ndarray:
        u = v / np.linalg.norm(v, axis=1, keepdims=True)
        return u[: n_x + n_y] @ u[n_x + n_y :].T

    low, high = stats.weat_bootstrap(cosines(vectors), n_x, n_a, n_bootstrap=64, seed=seed)
    assert low <= high
    low2, high2 = stats.weat_bootstrap(cosines(vectors * scale), n_x, n_a, n_bootstrap=64, seed=seed)
    assert low2 == pytest.approx(low, rel=1e-9, abs=1e-12)
    assert high2 == pytest.approx(high, rel=1e-9, abs=1e-12)


# -- CIs of Spearman's rho ---------------------------------------------------------------------------
@pytest.mark.parametrize("rho, n", [(0.7, 30), (0.9, 40)])
def test_bonett_wright_interval_covers_at_its_level(rho: float, n: int) -> None:
    """Simulation: bivariate normal with Pearson rho has Spearman rho_s = 6/pi asin(rho/2)."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(4000, n, 2))
    x, y = z[..., 0], rho * z[..., 0] + np.sqrt(1 - rho**2) * z[..., 1]
    true = 6 / np.pi * np.arcsin(rho / 2)
    c = stats.spearman(x, y)
    coverage = ((c.ci_low <= true) & (true <= c.ci_high)).mean()
    assert 0.94 <= coverage <= 0.97
    naive = np.abs(np.arctanh(c.r) - np.arctanh(true)) <= 1.959964 / np.sqrt(n - 3)
    assert naive.mean() < coverage  # Pearson's 1/sqrt(n-3) is too narrow for rank correlations


def test_similarity_rho_has_a_ci() -> None:
    from emb.analyses.similarity import word_similarity
    from tests.analyses._synthetic import similarity_dataset, similarity_pairs

    ds, pairs = similarity_dataset(similarity_pairs(n_words=40, n_pairs=80))
    res = word_similarity(ds, pairs=pairs, k_max=1).compute()
    n = res.n.broadcast_like(res.rho).transpose(*res.rho.dims)
    low, high = stats.correlation_ci(res.rho.values, n.values, method="spearman")
    np.testing.assert_array_equal(res.ci_low.values, low)
    np.testing.assert_array_equal(res.ci_high.values, high)
    assert ((res.ci_low < res.rho) & (res.rho < res.ci_high)).all()
    assert "Bonett-Wright" in res.ci_low.attrs["long_name"]


# -- per-word residuals ------------------------------------------------------------------------------
def test_per_word_residuals_match_statsmodels_ols() -> None:
    res = sc_weat_lexicon(vast_dataset(n_words=60, settings=("bleached", "random"))).compute()
    table = ANALYSES["sc-weat"].tables(res)["sc_weat"]
    cell = table[(table.setting == "random") & (table.pooling == "mean") & (table.layer == 2)]
    fit = sm.OLS(cell["effect_size"].to_numpy(), sm.add_constant(cell["rating"].to_numpy())).fit()
    np.testing.assert_allclose(cell["residual"].to_numpy(), fit.resid, rtol=1e-9, atol=1e-12)
    assert set(cell["n_subtokens"].unique()) <= {1, 2, 3}
    words = ANALYSES["valnorm"].tables(valnorm(vast_dataset(n_words=60)).compute())["valnorm_words"]
    one = words[(words.setting == "aligned") & (words.pooling == "first") & (words.layer == 1)]
    fit = sm.OLS(one["sc_weat"].to_numpy(), sm.add_constant(one["rating"].to_numpy())).fit()
    np.testing.assert_allclose(one["residual"].to_numpy(), fit.resid, rtol=1e-9, atol=1e-12)
    assert isinstance(words, pd.DataFrame) and len(one) == 60


def test_summary_table_shows_a_p_below_float_range_by_its_order() -> None:
    from emb.analyses.ratings import correlation_summary

    frame = pd.DataFrame({
        "model": "m", "lexicon": "lex", "setting": "bleached", "pooling": "last", "layer": [0, 1],
        "r": [0.1, 0.45], "ci_low": [0.0, 0.44], "ci_high": [0.2, 0.46], "n": [100, 13865],
        "p": [0.0321, stats.P_FLOOR], "log10_p": [np.log10(0.0321), -680.4],
    })
    table = correlation_summary(frame, title="t").table
    assert table["p"].tolist() == ["≈ 10^-680.4"]  # the top layer's, not 2.2e-308
