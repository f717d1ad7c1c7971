"""Correlations over few pairs (issue 20): the p of Pearson's r and Spearman's rho with at most
``stats.EXACT_MAX_N`` complete pairs is the exact permutation p, checked against a brute-force
enumeration written here (itertools, numpy's corrcoef, scipy's rankdata); from 10 pairs on
Spearman's t approximation is never below 1/n!; the tables' log10_p follows the p they show."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from emb.analyses import ANALYSES, stats
from emb.analyses.valnorm import valnorm
from tests.analyses._synthetic import vast_dataset


def _brute_force_p(x: np.ndarray, y: np.ndarray, *, ranks: bool) -> float:
    """Two-sided permutation p by enumeration: the share of the n! orders of y (complete pairs
    only) whose |r| reaches the observed |r|."""
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if ranks:
        x, y = scipy.stats.rankdata(x), scipy.stats.rankdata(y)
    observed = abs(np.corrcoef(x, y)[0, 1])
    hits = sum(abs(np.corrcoef(x, y[list(order)])[0, 1]) >= observed - 1e-12
               for order in itertools.permutations(range(x.size)))
    return hits / math.factorial(x.size)


def test_three_pairs_give_no_p_below_one_third() -> None:
    """The reported case: a perfect rank correlation of 3 pairs had p = 1.3e-8 (the t
    approximation at rho = 1 - 2e-16); of the 3! orders, 2 reach |rho| = 1."""
    for fn in (stats.spearman, stats.pearson):
        c = fn([0.1, 0.5, 0.9], [1.0, 2.0, 3.0])
        assert float(c.pvalue) == pytest.approx(1 / 3, rel=1e-12)
        c = fn([0.1, 0.5, 0.9], [3.0, 2.0, 1.0])
        assert float(c.pvalue) == pytest.approx(1 / 3, rel=1e-12)


@pytest.mark.parametrize("n", range(3, 8))
def test_small_n_correlations_have_the_exact_permutation_p(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.normal(size=(4, n))
    y = x + rng.normal(size=(4, n))
    y[1] = np.round(y[1])  # ties
    x[2, 0] = np.nan  # an incomplete pair: n - 1 pairs left
    for fn, ranks in ((stats.pearson, False), (stats.spearman, True)):
        got = fn(x, y)
        for row in range(4):
            want = _brute_force_p(x[row], y[row], ranks=ranks)
            if np.sum(np.isfinite(x[row])) < 3:
                want = float(got.pvalue[row])  # 2 pairs: Pearson's p = 1, Spearman's NaN
            assert got.pvalue[row] == pytest.approx(want, rel=1e-12, nan_ok=True), (fn, row)
    # the hand count of test_pearson_hand_computed
    assert _brute_force_p(np.arange(1.0, 6.0), np.array([2.0, 1.0, 4.0, 3.0, 5.0]),
                          ranks=False) == pytest.approx(16 / 120)


def test_nine_pairs_are_exact_and_ten_use_the_approximation() -> None:
    rng = np.random.default_rng(9)
    x = rng.normal(size=9)
    y = x + rng.normal(size=9)
    # 9! = 362,880 orders, enumerated with numpy (the loop above would take minutes)
    orders = np.array(list(itertools.permutations(range(9))))
    rx, ry = scipy.stats.rankdata(x), scipy.stats.rankdata(y)
    for fn, a, b in ((stats.pearson, x, y), (stats.spearman, rx, ry)):
        da, db = a - a.mean(), b - b.mean()
        r = (db[orders] @ da) / np.sqrt((da @ da) * (db @ db))
        want = np.mean(np.abs(r) >= abs(r[0]) - 1e-12)
        assert float(fn(x, y).pvalue) == pytest.approx(want, rel=1e-12)
    x10, y10 = rng.normal(size=10), rng.normal(size=10)
    assert float(stats.spearman(x10, y10).pvalue) == pytest.approx(
        scipy.stats.spearmanr(x10, y10).pvalue, rel=1e-9)
    assert float(stats.pearson(x10, y10).pvalue) == pytest.approx(
        scipy.stats.pearsonr(x10, y10).pvalue, rel=1e-9)


@pytest.mark.parametrize("n", [10, 12, 40, 171, 400])
def test_spearman_from_ten_pairs_is_never_below_one_pairing_in_n_factorial(n: int) -> None:
    x = np.arange(float(n))
    c = stats.spearman(x, x**3)  # rho = 1: the t approximation says 0
    floor = max(math.exp(-math.lgamma(n + 1)), stats.P_FLOOR)
    assert float(c.pvalue) == pytest.approx(floor, rel=1e-9) and float(c.pvalue) > 0
    log10 = float(stats.log10_pvalue(c.r, c.n, method="spearman"))
    assert log10 == pytest.approx(-math.lgamma(n + 1) / math.log(10), rel=1e-9)


def test_log10_p_of_few_pairs_is_the_log_of_the_exact_p() -> None:
    p = stats.spearman([1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]).pvalue
    assert float(stats.log10_pvalue(0.8, 4, method="spearman", pvalue=p)) == pytest.approx(
        math.log10(float(p)))
    assert np.isnan(stats.log10_pvalue(0.8, 4, method="spearman"))  # not from r and n alone


def test_valnorm_over_three_words_reports_the_exact_p() -> None:
    """ValNorm of a 3-word lexicon: both correlations' p are exact permutation p (at least
    1/3), and the table's log10_p columns are their logarithms."""
    ds = vast_dataset(n_words=3, settings=("bleached",), n_layers=2, poolings=("last",))
    res = valnorm(ds).compute()
    assert int(res["n"].max()) == 3
    for var in ("p", "spearman_p"):
        p = res[var].values
        assert np.all(p >= 1 / 3 - 1e-12) and np.all(p <= 1), (var, p)
    table = ANALYSES["valnorm"].tables(res)["valnorm"]
    np.testing.assert_allclose(table["log10_p"], np.log10(table["p"]), rtol=1e-12)
    np.testing.assert_allclose(table["spearman_log10_p"], np.log10(table["spearman_p"]), rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 6), st.integers(0, 2**32 - 1), st.booleans())
def test_small_n_p_equals_brute_force_and_lies_in_its_range(n: int, seed: int, ties: bool) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = rng.normal(size=n)
    if ties:
        x, y = np.round(x), np.round(y)
    for fn, ranks in ((stats.pearson, False), (stats.spearman, True)):
        c = fn(x, y)
        if np.isnan(c.r):  # a constant sample
            assert np.isnan(c.pvalue)
            continue
        want = _brute_force_p(x, y, ranks=ranks)
        assert float(c.pvalue) == pytest.approx(want, rel=1e-12)
        assert 1 / math.factorial(n) - 1e-15 <= float(c.pvalue) <= 1.0
