"""Random-effects meta-analysis (DerSimonian–Laird), as CEAT combines its sampled effect sizes.

All functions work on the last axis and broadcast over leading ones (tests, layers, poolings …).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import special

from emb.analyses.stats.correlation import P_FLOOR
from emb.errors import AnalysisError

__all__ = [
    "MetaResult",
    "cohens_d_variance",
    "dersimonian_laird",
    "meta_log10_pvalue",
    "meta_pvalue",
]

#: Two-sided 95 % normal quantile.
Z95 = float(special.ndtri(0.975))


@dataclass(frozen=True, kw_only=True)
class MetaResult:
    """DerSimonian–Laird random-effects summary; every field has the input's leading shape.

    Attributes
    ----------
    ces : combined effect size ``Σ v*_i ES_i / Σ v*_i`` with ``v*_i = 1/(V_i + τ²)``
    se : ``sqrt(1 / Σ v*_i)``
    ci_low, ci_high : ``ces ∓ 1.96 se``
    z : ``ces / se``
    p : p-value of ``z`` (see :func:`meta_pvalue`; below float range, ``P_FLOOR``, never 0)
    log10_p : log10 of that p-value, exact far below float range (see :func:`meta_log10_pvalue`)
    tau2 : between-sample variance, truncated at 0
    q : Cochran's Q
    i2 : ``max(0, (Q − (N−1)) / Q)`` (a fraction, not a percentage)
    n : number of effect sizes
    fixed : the fixed-effect (inverse-variance) mean, which ``ces`` equals when τ² = 0
    """

    ces: np.ndarray
    se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    z: np.ndarray
    p: np.ndarray
    log10_p: np.ndarray
    tau2: np.ndarray
    q: np.ndarray
    i2: np.ndarray
    n: int
    fixed: np.ndarray


def cohens_d_variance(d: np.ndarray, n1: int, n2: int) -> np.ndarray:
    """Large-sample sampling variance of Cohen's d (Hedges & Olkin 1985, eq. 5.15).

    ``V = (n1 + n2) / (n1 n2) + d² / (2 (n1 + n2))``.
    """
    d = np.asarray(d, dtype=np.float64)
    return (n1 + n2) / (n1 * n2) + d**2 / (2.0 * (n1 + n2))


def _check_alternative(alternative: str) -> None:
    if alternative not in ("two-sided", "greater", "less"):
        raise AnalysisError(
            f"alternative must be 'two-sided', 'greater' or 'less'; got {alternative!r}"
        )


def meta_pvalue(z: np.ndarray, alternative: Literal["two-sided", "greater", "less"]) -> np.ndarray:
    """p of a standard-normal ``z``: ``2(1 − Φ(|z|))``, ``1 − Φ(z)`` or ``Φ(z)`` (via the
    survival function ``Φ(−z)``, accurate far in the tail; :mod:`scipy.special`'s ``ndtr``, which
    ``scipy.stats.norm`` calls, without importing :mod:`scipy.stats`).

    A p below the smallest normal double (``|z|`` above about 37.5: a CEAT over thousands of
    samples gets there easily) is :data:`~emb.analyses.stats.P_FLOOR`, never 0; its exact order
    is :func:`meta_log10_pvalue`. An infinite ``z`` (zero standard error) keeps its p of 0.
    """
    _check_alternative(alternative)
    z = np.asarray(z, dtype=np.float64)
    if alternative == "two-sided":
        p = np.minimum(1.0, 2.0 * special.ndtr(-np.abs(z)))
    else:
        p = special.ndtr(-z if alternative == "greater" else z)
    with np.errstate(invalid="ignore"):
        return np.where((p < P_FLOOR) & np.isfinite(z), P_FLOOR, p)


def meta_log10_pvalue(
    z: np.ndarray, alternative: Literal["two-sided", "greater", "less"]
) -> np.ndarray:
    """log10 of :func:`meta_pvalue`'s p, exact where p is far below float range (from
    ``log Φ``, :func:`scipy.special.log_ndtr`): ``-inf`` for an infinite ``z``, NaN for NaN."""
    _check_alternative(alternative)
    z = np.asarray(z, dtype=np.float64)
    if alternative == "two-sided":
        ln = np.minimum(0.0, np.log(2.0) + special.log_ndtr(-np.abs(z)))
    else:
        ln = special.log_ndtr(-z if alternative == "greater" else z)
    return ln / np.log(10.0)


def dersimonian_laird(
    es: np.ndarray,
    v: np.ndarray,
    *,
    alternative: Literal["two-sided", "greater", "less"] = "two-sided",
) -> MetaResult:
    """DerSimonian–Laird random-effects combination of effect sizes along the last axis.

    Parameters
    ----------
    es, v : numpy.ndarray (..., N)
        Effect sizes and their (within-study) variances, ``v > 0``.
    alternative : {"two-sided", "greater", "less"}

    Returns
    -------
    MetaResult

    Notes
    -----
    ``w_i = 1/V_i``; ``Q = Σ w_i (ES_i − ES_fixed)²`` (= ``Σw ES² − (Σw ES)²/Σw``, computed in
    the centred form to avoid cancellation); ``C = Σw − Σw²/Σw``;
    ``τ² = max(0, (Q − (N − 1)) / C)``. statsmodels' ``combine_effects(method_re="dl")`` keeps a
    negative moment estimate of τ² in its weights; here it is truncated at 0 as DerSimonian & Laird
    define it, so the random-effects mean falls back to the fixed-effect mean.

    References
    ----------
    DerSimonian, R. & Laird, N. (1986). Meta-analysis in clinical trials. *Controlled Clinical
    Trials* 7, 177–188. Hedges, L. V. & Vevea, J. L. (1998). Fixed- and random-effects models in
    meta-analysis. *Psychological Methods* 3, 486–504.

    Examples
    --------
    >>> r = dersimonian_laird(np.array([0.2, 0.5, 0.9]), np.array([0.04, 0.05, 0.04]))
    >>> round(float(r.ces), 4), round(float(r.tau2), 4)
    (0.5341, 0.0896)
    """
    es = np.asarray(es, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if es.shape != v.shape:
        raise AnalysisError(f"es and v differ in shape: {es.shape} vs {v.shape}")
    n = es.shape[-1]
    if n < 2:
        raise AnalysisError(f"a meta-analysis needs at least 2 effect sizes; got {n}")
    if np.any(v <= 0):
        raise AnalysisError("every variance V_i must be positive")
    w = 1.0 / v
    sw = w.sum(axis=-1)
    fixed = (w * es).sum(axis=-1) / sw
    q = (w * (es - fixed[..., None]) ** 2).sum(axis=-1)
    c = sw - (w**2).sum(axis=-1) / sw
    tau2 = np.maximum(0.0, (q - (n - 1)) / c)
    ws = 1.0 / (v + tau2[..., None])
    sws = ws.sum(axis=-1)
    ces = (ws * es).sum(axis=-1) / sws
    se = np.sqrt(1.0 / sws)
    z = ces / se
    with np.errstate(invalid="ignore", divide="ignore"):
        i2 = np.where(q > 0, np.maximum(0.0, (q - (n - 1)) / q), 0.0)
    return MetaResult(
        ces=ces, se=se, ci_low=ces - Z95 * se, ci_high=ces + Z95 * se, z=z,
        p=meta_pvalue(z, alternative), log10_p=meta_log10_pvalue(z, alternative),
        tau2=tau2, q=q, i2=i2, n=n, fixed=fixed,
    )
