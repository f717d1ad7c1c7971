"""emb.analyses.stats against hand calculations, brute force and scipy."""

from __future__ import annotations

import itertools
import math
import threading

import dask.array as da
import numpy as np
import pytest
import scipy.stats
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from emb.analyses import stats
from emb.errors import AnalysisError

# ------------------------------------------------------------------ cosines and effect sizes


def test_unit_and_cosine_matrix_hand_computed():
    np.testing.assert_allclose(stats.unit([3.0, 4.0]), [0.6, 0.8])
    np.testing.assert_allclose(stats.unit([[3.0], [4.0]], axis=0), [[0.6], [0.8]])
    u = np.array([[1.0, 0.0], [0.0, 2.0]])
    v = np.array([[1.0, 1.0], [-3.0, 0.0], [0.0, 5.0]])
    h = math.sqrt(0.5)
    np.testing.assert_allclose(stats.cosine_matrix(u, v), [[h, -1.0, 0.0], [h, 0.0, 1.0]])
    # batch dims broadcast: (2, 2, d) x (3, d)
    batch = np.stack([u, 2 * u])
    assert stats.cosine_matrix(batch, v).shape == (2, 2, 3)
    # float16 input is computed in float64
    assert stats.cosine_matrix(u.astype(np.float16), v).dtype == np.float64


def test_unit_zero_vector_raises_not_nan():
    with pytest.raises(AnalysisError, match="zero or non-finite length"):
        stats.unit([[1.0, 0.0], [0.0, 0.0]])
    with pytest.raises(AnalysisError):
        stats.cosine_matrix([[np.nan, 1.0]], [[1.0, 0.0]])


def test_association_and_effect_sizes_hand_computed():
    # s = mean(0.5, 0.7) - mean(0.1, 0.3) = 0.6 - 0.2
    assert stats.association([0.5, 0.7], [0.1, 0.3]) == pytest.approx(0.4)
    # SC-WEAT: (0.4 - 0.1) / std([0.3, 0.5, 0.1, 0.1], ddof=1)
    # mean 0.25, squared deviations 0.0025 + 0.0625 + 0.0225 + 0.0225 = 0.11, / 3
    assert stats.sc_weat_effect_size([0.3, 0.5], [0.1, 0.1]) == pytest.approx(
        0.3 / math.sqrt(0.11 / 3)
    )
    assert stats.sc_weat_effect_size([0.3, 0.5], [0.1, 0.1], ddof=0) == pytest.approx(
        0.3 / math.sqrt(0.11 / 4)
    )
    # WEAT: (0.3 - (-0.1)) / std([0.2, 0.4, 0, -0.2]) ; mean 0.1, ss = .01+.09+.01+.09 = .2
    assert stats.weat_effect_size([0.2, 0.4], [0.0, -0.2]) == pytest.approx(
        0.4 / math.sqrt(0.2 / 3)
    )
    assert stats.weat_statistic([0.2, 0.4], [0.0, -0.2]) == pytest.approx(0.8)


def test_effect_sizes_vectorised_over_batch():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 4, 6))
    got = stats.sc_weat_effect_size(a, b)
    assert got.shape == (3, 4)
    i, j = 2, 1
    both = np.concatenate([a[i, j], b[i, j]])
    assert got[i, j] == pytest.approx((a[i, j].mean() - b[i, j].mean()) / both.std(ddof=1))


def test_effect_size_constant_gives_nan_and_ddof_too_large_raises():
    assert np.isnan(stats.weat_effect_size([1.0, 1.0], [1.0]))
    with pytest.raises(AnalysisError, match="ddof"):
        stats.weat_effect_size([1.0], [2.0], ddof=2)


# ------------------------------------------------------------------ permutation test


def _brute_force(values, n_x, alternative):
    values = np.asarray(values, dtype=float)
    n = len(values)
    obs = values[:n_x].sum() - values[n_x:].sum()
    null = []
    for comb in itertools.combinations(range(n), n_x):
        mask = np.zeros(n, bool)
        mask[list(comb)] = True
        null.append(values[mask].sum() - values[~mask].sum())
    null = np.array(null)
    eps = 1e-9
    if alternative == "greater":
        return obs, np.mean(null >= obs - eps)
    if alternative == "less":
        return obs, np.mean(null <= obs + eps)
    e0 = null.mean()
    return obs, np.mean(np.abs(null - e0) >= np.abs(obs - e0) - eps)


def test_permutation_hand_computed():
    # values 3,2,1,0; X = {3,2}: S = 4. Splits S: {3,2}:4 {3,1}:2 {3,0}:0 {2,1}:0 {2,0}:-2 {1,0}:-4
    res = stats.permutation_test([3.0, 2.0, 1.0, 0.0], 2)
    assert res.statistic == pytest.approx(4.0)
    assert res.pvalue == pytest.approx(1 / 6)
    assert res.n_permutations == 0
    less = stats.permutation_test([3.0, 2.0, 1.0, 0.0], 2, alternative="less")
    assert less.pvalue == pytest.approx(1.0)
    two = stats.permutation_test([3.0, 2.0, 1.0, 0.0], 2, alternative="two-sided")
    assert two.pvalue == pytest.approx(2 / 6)  # |S| >= 4: {3,2} and {1,0}


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
@pytest.mark.parametrize(("n", "n_x"), [(6, 3), (7, 2), (9, 4), (10, 5)])
def test_exact_pvalue_matches_itertools(alternative, n, n_x):
    rng = np.random.default_rng(n * 10 + n_x)
    values = rng.normal(size=(3, n))
    res = stats.permutation_test(values, n_x, alternative=alternative)
    assert res.n_permutations == 0
    for row in range(3):
        obs, p = _brute_force(values[row], n_x, alternative)
        assert res.statistic[row] == pytest.approx(obs)
        assert res.pvalue[row] == pytest.approx(p, abs=1e-12)


def test_exact_counts_float_ties():
    # all values equal: every split ties with the observed one
    res = stats.permutation_test(np.full(8, 0.1), 4)
    assert res.pvalue == pytest.approx(1.0)
    # values whose subset sums tie only up to rounding
    values = np.array([0.1, 0.2, 0.3, 0.3, 0.2, 0.1])
    res = stats.permutation_test(values, 3, alternative="two-sided")
    obs, p = _brute_force(values, 3, "two-sided")
    assert res.pvalue == pytest.approx(p)


def test_monte_carlo_close_to_exact_and_seeded():
    rng = np.random.default_rng(3)
    values = rng.normal(size=(4, 16)) + np.r_[np.full(8, 0.4), np.zeros(8)]
    exact = stats.permutation_test(values, 8, method="exact")
    mc = stats.permutation_test(values, 8, method="monte-carlo", n_permutations=20_000, seed=1)
    assert mc.n_permutations == 20_000
    # standard error of a proportion with N = 20,000 is at most 0.0036
    np.testing.assert_allclose(mc.pvalue, exact.pvalue, atol=0.015)
    again = stats.permutation_test(values, 8, method="monte-carlo", n_permutations=20_000, seed=1)
    np.testing.assert_array_equal(mc.pvalue, again.pvalue)
    # the same splits are used whatever the batch: row 2 alone gives the same p
    alone = stats.permutation_test(values[2], 8, method="monte-carlo", n_permutations=20_000, seed=1)
    assert alone.pvalue == mc.pvalue[2]
    other = stats.permutation_test(values, 8, method="monte-carlo", n_permutations=20_000, seed=2)
    assert not np.array_equal(other.pvalue, mc.pvalue)


def test_exact_limit_switches_to_monte_carlo():
    values = np.arange(12.0)
    assert stats.permutation_test(values, 6, exact_limit=924).n_permutations == 0
    res = stats.permutation_test(values, 6, exact_limit=923, n_permutations=999)
    assert res.n_permutations == 999
    # X holds the 6 largest values: no random split exceeds it, p = (1 + #ties) / 1000
    res = stats.permutation_test(values[::-1], 6, exact_limit=0, n_permutations=999)
    assert 1 / 1000 <= res.pvalue <= 0.01


def test_reference_method_normal_tail():
    rng = np.random.default_rng(5)
    values = rng.normal(size=20)
    n_x = 10
    res = stats.permutation_test(values, n_x, method="reference", n_permutations=5000, seed=0)
    assert res.n_permutations == 5000
    # the exact null is symmetric about E0 with variance n_x n_y / (n - 1) * 4 * var_pop(values)
    obs = values[:n_x].sum() - values[n_x:].sum()
    sd = 2 * math.sqrt(n_x * n_x / (20 - 1) * values.var())
    e0 = 0.0
    assert res.pvalue == pytest.approx(scipy.stats.norm.sf(obs, e0, sd), abs=0.02)
    two = stats.permutation_test(
        values, n_x, method="reference", n_permutations=5000, seed=0, alternative="two-sided"
    )
    assert two.pvalue == pytest.approx(2 * min(res.pvalue, 1 - res.pvalue), rel=1e-9)


def test_permutation_nan_rows_and_validation():
    values = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, np.nan, 3.0, 4.0]])
    res = stats.permutation_test(values, 2)
    assert np.isfinite(res.pvalue[0]) and np.isnan(res.pvalue[1]) and np.isnan(res.statistic[1])
    with pytest.raises(AnalysisError, match="n_x"):
        stats.permutation_test([1.0, 2.0], 2)
    with pytest.raises(AnalysisError, match="alternative"):
        stats.permutation_test([1.0, 2.0], 1, alternative="bigger")
    with pytest.raises(AnalysisError, match="method"):
        stats.permutation_test([1.0, 2.0], 1, method="magic")


def test_permutation_result_round_trips():
    res = stats.permutation_test(np.arange(6.0).reshape(2, 3), 1)
    again = stats.PermutationResult.from_dict(res.to_dict())
    np.testing.assert_array_equal(again.pvalue, res.pvalue)
    assert again.n_permutations == res.n_permutations


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(np.float64, st.integers(3, 9), elements=st.floats(-1, 1, allow_nan=False)),
    st.sampled_from(["greater", "less", "two-sided"]),
    st.data(),
)
def test_pvalues_in_unit_interval_and_exact(values, alternative, data):
    n_x = data.draw(st.integers(1, len(values) - 1))
    res = stats.permutation_test(values, n_x, alternative=alternative)
    assert 0.0 < res.pvalue <= 1.0
    assert res.pvalue >= 1 / math.comb(len(values), n_x) - 1e-12


# ------------------------------------------------------------------ correlations


@pytest.mark.parametrize("n", [10, 12, 200])  # fewer pairs: the exact p (test_small_n_exact_p)
def test_pearson_matches_scipy(n):
    rng = np.random.default_rng(n)
    x = rng.normal(size=n)
    y = 0.5 * x + rng.normal(size=n)
    got = stats.pearson(x, y)
    ref = scipy.stats.pearsonr(x, y)
    ci = ref.confidence_interval()
    assert got.r == pytest.approx(ref.statistic, rel=1e-12)
    assert got.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
    assert got.n == n
    assert got.ci_low == pytest.approx(ci.low, rel=1e-9)
    assert got.ci_high == pytest.approx(ci.high, rel=1e-9)


def test_pearson_hand_computed():
    c = stats.pearson([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 4.0, 3.0, 5.0])
    # Σdxdy = (-2)(-1)+(-1)(-2)+0+1*0+2*2 = 8; Σdx² = Σdy² = 10
    assert c.r == pytest.approx(0.8)
    half = 1.959963984540054 / math.sqrt(2)
    assert c.ci_low == pytest.approx(math.tanh(math.atanh(0.8) - half))
    # 5 pairs: the exact permutation p. Of the 120 orders of y, 16 give |Σdxdy| >= 8 (the
    # observed order, its mirror images and those equally extreme; counted in
    # test_small_n_correlations_have_the_exact_permutation_p); the t approximation would say 0.104
    assert c.pvalue == pytest.approx(16 / 120, rel=1e-12)


def test_spearman_matches_scipy_with_ties_and_batch():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 6, size=(3, 30)).astype(float)
    y = x + rng.normal(size=(3, 30))
    got = stats.spearman(x, y)
    assert got.r.shape == (3,)
    for i in range(3):
        ref = scipy.stats.spearmanr(x[i], y[i])
        assert got.r[i] == pytest.approx(ref.statistic, rel=1e-12)
        assert got.pvalue[i] == pytest.approx(ref.pvalue, rel=1e-9)
    ranks = stats.spearman(x[0], y[0])
    # Fisher's z with Bonett & Wright's (2000) standard error sqrt((1 + rho^2/2) / (n - 3))
    rho = scipy.stats.spearmanr(x[0], y[0]).statistic
    half = scipy.stats.norm.ppf(0.975) * np.sqrt((1 + rho**2 / 2) / (30 - 3))
    assert ranks.ci_low == pytest.approx(np.tanh(np.arctanh(rho) - half), rel=1e-9)
    assert ranks.ci_high == pytest.approx(np.tanh(np.arctanh(rho) + half), rel=1e-9)


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=7),
                  elements=st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0, np.inf, -np.inf, np.nan])))
def test_average_ranks_equal_scipy_rankdata(a):
    """The ranks behind Spearman's rho are scipy.stats.rankdata's (average ties, NaN omitted):
    ties, signed zeros, infinities, NaN anywhere, batches."""
    want = scipy.stats.rankdata(a, axis=-1, nan_policy="omit")
    np.testing.assert_array_equal(stats.average_ranks(a), want)


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(3, 9)),
                  elements=st.sampled_from([0.0, 1.0, 2.5, -3.0, 7.0, np.inf, np.nan])),
       st.integers(0, 2**32 - 1))
def test_spearman_with_the_ranks_of_y_given_equals_spearman(x, seed):
    """y ranked once and shared by many calls (VAST ranks each lexicon's ratings once) gives
    the same rho and p, bit for bit, also in batches where NaN or inf in x leaves pairs out
    (there y is ranked again without them)."""
    y = np.random.default_rng(seed).choice([1.0, 2.0, 3.5, 4.0, 9.0], size=x.shape[-1])
    given = stats.spearman(x, y, y_ranks=stats.average_ranks(y))
    plain = stats.spearman(x, y)
    for name in ("r", "pvalue", "n", "ci_low", "ci_high"):
        np.testing.assert_array_equal(getattr(given, name), getattr(plain, name))


def test_normal_and_t_tails_equal_scipy_stats():
    """meta_pvalue's normal tails and the t-test's p are scipy.stats' (computed with the
    scipy.special functions scipy.stats calls), bit for bit; where scipy's underflows to 0 for a
    finite z, meta_pvalue gives the floor P_FLOOR (its exact order: test_meta)."""
    z = np.array([-40.0, -8.0, -1.96, -0.1, 0.0, 0.3, 1.96, 9.0, 38.0, np.inf, np.nan])

    def floored(p):
        return np.where((p < stats.P_FLOOR) & np.isfinite(z), stats.P_FLOOR, p)

    np.testing.assert_array_equal(stats.meta_pvalue(z, "greater"), floored(scipy.stats.norm.sf(z)))
    np.testing.assert_array_equal(stats.meta_pvalue(z, "less"), floored(scipy.stats.norm.cdf(z)))
    np.testing.assert_array_equal(stats.meta_pvalue(z, "two-sided"),
                                  floored(np.minimum(1.0, 2 * scipy.stats.norm.sf(np.abs(z)))))
    assert stats.meta_pvalue(z, "greater")[8] == stats.P_FLOOR  # 38 sigma: below float range
    from emb.analyses.stats.meta import Z95

    assert Z95 == scipy.stats.norm.ppf(0.975)
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(4, 9)), rng.normal(0.5, 2.0, size=(4, 13))
    for kind, equal_var in (("student", True), ("welch", False)):
        ref = scipy.stats.ttest_ind(a, b, axis=-1, equal_var=equal_var)
        got = stats.t_test(a, b, kind=kind)
        np.testing.assert_allclose(got.statistic, ref.statistic, rtol=1e-13)
        np.testing.assert_allclose(got.pvalue, ref.pvalue, rtol=1e-12)


def test_correlations_drop_incomplete_pairs_and_use_axis():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(10, 2))
    y = x + rng.normal(size=(10, 2))
    x[3, 0] = np.nan
    y[7, 1] = np.nan
    got = stats.pearson(x, y, axis=0)
    np.testing.assert_array_equal(got.n, [9, 9])
    keep = np.isfinite(x[:, 0]) & np.isfinite(y[:, 0])
    assert got.r[0] == pytest.approx(scipy.stats.pearsonr(x[keep, 0], y[keep, 0]).statistic)
    sp = stats.spearman(x, y, axis=0)
    keep = np.isfinite(x[:, 1]) & np.isfinite(y[:, 1])
    assert sp.r[1] == pytest.approx(scipy.stats.spearmanr(x[keep, 1], y[keep, 1]).statistic)


def test_correlation_degenerate_cases():
    assert np.isnan(stats.pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]).r)
    two = stats.pearson([1.0, 2.0], [3.0, 5.0])
    assert two.r == pytest.approx(1.0) and two.pvalue == 1.0 and np.isnan(two.ci_low)
    perfect = stats.pearson(np.arange(10.0), 2 * np.arange(10.0))
    assert perfect.pvalue == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("value", [-0.4472135954999579, 0.4472135954999579, 0.1])
def test_a_constant_whose_mean_rounds_has_no_correlation(value: float) -> None:
    """40 equal values whose mean is not exactly the value (the sum rounds): the deviations are
    ~1e-17, not 0, and r was their rounding noise (~1e-16: valence-subspace's ValNorm of
    identical vectors) instead of undefined, as scipy's (ConstantInputWarning, NaN)."""
    x = np.full(40, value)
    assert (x.sum() / 40 != value) == (value != 0.1)  # ±1/√5: the mean is off by rounding
    y = np.random.default_rng(0).standard_normal(40)
    with pytest.warns(scipy.stats.ConstantInputWarning):
        assert np.isnan(scipy.stats.pearsonr(x, y).statistic)
    for method in (stats.pearson, stats.spearman):
        got = method(x, y)
        assert np.isnan(got.r) and np.isnan(got.pvalue) and got.n == 40
        assert np.isnan(method(y, x).r)
    # beside a column that varies, in one batch: only the constant one is undefined
    both = stats.pearson(np.stack([x, y + 1]), np.stack([y, y]))
    assert np.isnan(both.r[0]) and both.r[1] == pytest.approx(1.0)


# ------------------------------------------------------------------ multiple comparisons


def test_holm_and_bh_hand_computed():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # sorted 0.005, 0.01, 0.03, 0.04 ; Holm factors 4,3,2,1 -> .02, .03, .06, .04 -> cummax
    np.testing.assert_allclose(stats.holm(p), [0.03, 0.06, 0.06, 0.02])
    # BH: m p / rank -> .02, .02, .04, .04 -> reverse cummin
    np.testing.assert_allclose(stats.benjamini_hochberg(p), [0.02, 0.04, 0.04, 0.02])
    np.testing.assert_allclose(stats.adjust_pvalues(p, "none"), p)
    np.testing.assert_allclose(stats.holm([0.5, 0.9]), [1.0, 1.0])


def test_adjustments_ignore_nan_and_work_along_axis():
    p = np.array([[0.01, np.nan], [0.04, 0.2], [0.03, np.nan]])
    holm = stats.holm(p, axis=0)
    np.testing.assert_allclose(holm[:, 0], stats.holm([0.01, 0.04, 0.03]))
    np.testing.assert_allclose(holm[:, 1], [np.nan, 0.2, np.nan])
    bh = stats.adjust_pvalues(p, "bh", axis=0)
    np.testing.assert_allclose(bh[:, 0], stats.benjamini_hochberg([0.01, 0.04, 0.03]))
    with pytest.raises(AnalysisError, match="correction"):
        stats.adjust_pvalues(p, "bonferroni")
    with pytest.raises(AnalysisError, match="0, 1"):
        stats.holm([1.5])


def test_adjustments_match_statsmodels_if_installed():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.random.default_rng(0).uniform(size=25) ** 2
    np.testing.assert_allclose(stats.holm(p), multitest.multipletests(p, method="holm")[1])
    np.testing.assert_allclose(
        stats.benjamini_hochberg(p), multitest.multipletests(p, method="fdr_bh")[1]
    )


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 12), elements=st.floats(0, 1)))
def test_adjusted_pvalues_bounded_and_monotone(p):
    for adj in (stats.holm(p), stats.benjamini_hochberg(p)):
        assert np.all((adj >= p - 1e-15) & (adj <= 1.0))
        order = np.argsort(p, kind="stable")
        assert np.all(np.diff(adj[order]) >= -1e-15)


# ------------------------------------------------------------------ xarray wrappers


def test_cosine_wrapper_matches_numpy_and_is_lazy():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 3, 4))
    b = rng.normal(size=(2, 3, 4))
    xa = xr.DataArray(da.from_array(a, chunks=(2, 3, 4)), dims=("item", "layer", "feature"))
    xb = xr.DataArray(b, dims=("attribute", "layer", "feature"))
    got = stats.cosine(xa, xb)
    assert isinstance(got.data, da.Array)
    assert set(got.dims) == {"item", "attribute", "layer"}
    want = np.einsum("ilf,alf->ial", stats.unit(a), stats.unit(b))
    np.testing.assert_allclose(got.transpose("item", "attribute", "layer").values, want)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.01, 1000), st.integers(0, 2**16))
def test_cosine_scores_invariant_to_positive_scaling(scale, seed):
    rng = np.random.default_rng(seed)
    w, a, b = rng.normal(size=(3, 6)), rng.normal(size=(4, 6)), rng.normal(size=(5, 6))
    d = stats.sc_weat_effect_size(stats.cosine_matrix(w, a), stats.cosine_matrix(w, b))
    d_scaled = stats.sc_weat_effect_size(
        stats.cosine_matrix(scale * w, a), stats.cosine_matrix(w, scale * b)
    )
    np.testing.assert_allclose(d, d_scaled, rtol=1e-9, atol=1e-12)


def test_correlation_wrapper_matches_kernel_and_is_lazy():
    rng = np.random.default_rng(4)
    es = rng.normal(size=(40, 3, 2))
    ratings = es[:, 1, 0] + rng.normal(size=40)
    xes = xr.DataArray(
        da.from_array(es, chunks=(10, 1, 2)),
        dims=("item", "layer", "pooling"),
        coords={"layer": [0, 1, 2], "pooling": ["first", "mean"]},
    )
    xr_ratings = xr.DataArray(ratings, dims="item")
    for method, fn in (("pearson", scipy.stats.pearsonr), ("spearman", scipy.stats.spearmanr)):
        ds = stats.correlation(xes, xr_ratings, dim="item", method=method)
        assert set(ds.data_vars) == {"r", "p", "n", "ci_low", "ci_high"}
        assert isinstance(ds.r.data, da.Array)
        ds = ds.compute()
        assert ds.r.dims == ("layer", "pooling")
        ref = fn(es[:, 1, 0], ratings)
        assert float(ds.r.sel(layer=1, pooling="first")) == pytest.approx(ref.statistic)
        assert float(ds.p.sel(layer=1, pooling="first")) == pytest.approx(ref.pvalue, rel=1e-8)
        assert int(ds.n.sel(layer=2, pooling="mean")) == 40
    with pytest.raises(AnalysisError, match="method"):
        stats.correlation(xes, xr_ratings, dim="item", method="kendall")
    with pytest.raises(AnalysisError, match="no dimension"):
        stats.correlation(xes, xr_ratings, dim="word")


class _FakeBlas:
    """Stands in for a threadpoolctl library controller (OpenBLAS' own state is global C state)."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.calls: list[int] = []

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.calls.append(n)
        self.threads = n


def test_single_threaded_blas_limits_restores_and_nests(monkeypatch):
    lib = _FakeBlas(4)
    monkeypatch.setattr(stats._blas, "_blas_controllers", lambda: [lib])
    with stats.single_threaded_blas():
        assert lib.threads == 1
        with stats.single_threaded_blas():  # re-entrant
            assert lib.threads == 1
        assert lib.threads == 1 and lib.calls == [1, 1]  # each entry sets it (OpenBLAS may
        # have dropped a count set from another thread meanwhile)
    assert lib.threads == 4 and lib.calls == [1, 1, 4]
    with pytest.raises(RuntimeError), stats.single_threaded_blas():
        raise RuntimeError("boom")
    assert lib.threads == 4 and stats._blas._blas_users == 0
    # another thread entering while one is inside: the limit holds until the last one leaves
    inside, release, seen = threading.Event(), threading.Event(), []

    def worker():
        with stats.single_threaded_blas():
            inside.set()
            release.wait()
            seen.append(lib.threads)

    t = threading.Thread(target=worker)
    t.start()
    inside.wait()
    with stats.single_threaded_blas():
        pass
    assert lib.threads == 1  # the worker is still inside
    release.set()
    t.join()
    assert seen == [1] and lib.threads == 4


def test_single_threaded_blas_real_library_smoke():
    pytest.importorskip("threadpoolctl")
    with stats.single_threaded_blas():
        np.testing.assert_allclose(np.ones((3, 4)) @ np.ones((4, 2)), np.full((3, 2), 4.0))


def test_single_threaded_blas_finds_numpys_blas_and_sets_one_thread():
    """threadpoolctl before 3.5 does not see the OpenBLAS of numpy 2's wheels (scipy-openblas
    symbols), and the limit then silently does nothing: the declared floor must see it."""
    from threadpoolctl import ThreadpoolController

    np.ones((3, 4)) @ np.ones((4, 2))  # numpy's BLAS is loaded
    assert stats._blas._blas_controllers(), "no BLAS library found by threadpoolctl"
    with stats.single_threaded_blas():
        counts = [lib.get_num_threads() for lib in
                  ThreadpoolController().select(user_api="blas").lib_controllers]
        assert counts and all(n == 1 for n in counts)
