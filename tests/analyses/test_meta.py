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
