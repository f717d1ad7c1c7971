"""DerSimonian-Laird against statsmodels, and where statsmodels does not truncate tau^2."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.meta_analysis import combine_effects

from emb.analyses.stats import cohens_d_variance, dersimonian_laird


def _statsmodels(es: np.ndarray, v: np.ndarray):
    return combine_effects(es, v, method_re="dl", use_t=False)


@pytest.mark.parametrize("seed", range(5))
def test_matches_statsmodels_where_its_tau2_is_not_negative(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 50
    true = rng.normal(0.4, 0.3, n)  # real between-study spread: tau^2 > 0
    v = rng.uniform(0.01, 0.05, n)
    es = true + rng.normal(0, np.sqrt(v))
    ours = dersimonian_laird(es, v)
    ref = _statsmodels(es, v)
    assert ref.tau2 >= 0
    np.testing.assert_allclose(ours.tau2, ref.tau2, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.ces, ref.mean_effect_re, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.se, ref.sd_eff_w_re, rtol=1e-10)
    np.testing.assert_allclose(ours.q, ref.q, rtol=1e-10)
    np.testing.assert_allclose(ours.fixed, ref.mean_effect_fe, rtol=1e-10)
    z = 1.959963984540054
    np.testing.assert_allclose(
        [ours.ci_low, ours.ci_high],
        [ref.mean_effect_re - z * ref.sd_eff_w_re, ref.mean_effect_re + z * ref.sd_eff_w_re],
        rtol=1e-10,
    )


def test_truncated_tau2_gives_the_fixed_effect_mean_where_statsmodels_differs() -> None:
    rng = np.random.default_rng(7)
    n = 40
    v = rng.uniform(0.2, 0.3, n)  # large within-variance, effect sizes barely spread: Q < N-1
    es = 0.5 + rng.normal(0, 0.05, n) + np.linspace(0, 0.3, n)
    ref = _statsmodels(es, v)
    ours = dersimonian_laird(es, v)
    assert ref.q < n - 1 and ref.tau2 < 0  # statsmodels keeps the negative moment estimate
    assert ours.tau2 == 0.0
    w = 1 / v
    np.testing.assert_allclose(ours.ces, (w * es).sum() / w.sum(), rtol=1e-12)  # fixed effect
    np.testing.assert_allclose(ours.ces, ref.mean_effect_fe, rtol=1e-10)
    assert abs(ours.ces - ref.mean_effect_re) > 1e-4  # statsmodels' RE mean is not DL's


def test_hand_computed_case() -> None:
    es, v = np.array([0.2, 0.5, 0.9]), np.array([0.04, 0.05, 0.04])
    w = 1 / v
    fixed = (w * es).sum() / w.sum()
    q = (w * es**2).sum() - (w * es).sum() ** 2 / w.sum()
    c = w.sum() - (w**2).sum() / w.sum()
    tau2 = max(0.0, (q - 2) / c)
    ws = 1 / (v + tau2)
    r = dersimonian_laird(es, v)
    assert np.isclose(r.fixed, fixed) and np.isclose(r.q, q) and np.isclose(r.tau2, tau2)
    assert np.isclose(r.ces, (ws * es).sum() / ws.sum())
    assert np.isclose(r.i2, (q - 2) / q)
    assert np.isclose(r.p, 2 * (1 - __import__("scipy").stats.norm.cdf(abs(r.z))))


def test_cohens_d_variance() -> None:
    assert cohens_d_variance(0.0, 8, 8) == pytest.approx(0.25)
    assert cohens_d_variance(1.0, 25, 25) == pytest.approx(50 / 625 + 1 / 100)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-3, 3), min_size=2, max_size=30),
    st.floats(0.01, 2.0),
    st.sampled_from(["two-sided", "greater", "less"]),
)
def test_properties(values: list[float], scale: float, alternative: str) -> None:
    es = np.asarray(values)
    v = np.full(len(es), scale)
    r = dersimonian_laird(es, v, alternative=alternative)  # type: ignore[arg-type]
    assert es.min() - 1e-9 <= r.ces <= es.max() + 1e-9
    assert 0.0 <= r.p <= 1.0 and r.tau2 >= 0 and 0 <= r.i2 <= 1
    perm = np.random.default_rng(0).permutation(len(es))
    np.testing.assert_allclose(dersimonian_laird(es[perm], v[perm]).ces, r.ces, atol=1e-12)
    flipped = dersimonian_laird(-es, v)
    np.testing.assert_allclose(flipped.ces, -dersimonian_laird(es, v).ces, atol=1e-12)


def test_a_p_below_float_range_is_a_floor_with_its_exact_log10() -> None:
    """CEAT's z over 10,000 samples reaches the hundreds: 2 Φ(−|z|) underflows to 0. The p is
    written as the smallest normal double (never 0) and log10_p holds its exact order, checked
    against mpmath at 50 digits; an infinite z keeps p = 0 and log10_p = −inf."""
    import mpmath

    from emb.analyses.stats import P_FLOOR, meta_log10_pvalue, meta_pvalue

    z = np.array([0.0, 1.96, -3.0, 37.0, 38.5, 40.0, -400.0, 1e4, np.inf, np.nan])
    mpmath.mp.dps = 50
    for alternative in ("two-sided", "greater", "less"):
        p = meta_pvalue(z, alternative)
        logp = meta_log10_pvalue(z, alternative)
        for zi, pi, li in zip(z[:-2], p[:-2], logp[:-2], strict=True):
            tail = mpmath.ncdf(-abs(zi)) * 2 if alternative == "two-sided" else (
                mpmath.ncdf(-zi) if alternative == "greater" else mpmath.ncdf(zi))
            exact = float(mpmath.log10(min(tail, mpmath.mpf(1))))
            assert li == pytest.approx(exact, rel=1e-12, abs=1e-14), (alternative, zi)
            assert pi > 0 and (pi == P_FLOOR or pi == pytest.approx(10**exact, rel=1e-12))
        assert np.isnan(p[-1]) and np.isnan(logp[-1])
    assert meta_pvalue(np.array([np.inf]), "two-sided")[0] == 0.0
    assert meta_log10_pvalue(np.array([np.inf]), "two-sided")[0] == -np.inf
    r = dersimonian_laird(np.full(10_000, 1.5) + np.linspace(-0.01, 0.01, 10_000),
                          np.full(10_000, 0.04))
    assert r.p == P_FLOOR and r.log10_p < -5000
