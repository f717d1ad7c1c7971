"""Two independent samples: Student's and Welch's t-tests and Cohen's d, vectorised.

Every function reduces along ``axis`` (the observations) and broadcasts over the other axes
(dimensions, layers, poolings …); float64 throughout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import special

from emb.errors import AnalysisError

__all__ = ["TTest", "TTestKind", "cohens_d", "t_test"]

TTestKind = Literal["student", "welch"]


@dataclass(frozen=True)
class TTest:
    """A two-sample t-test: ``statistic`` (t), ``df`` (degrees of freedom), two-sided ``pvalue``."""

    statistic: np.ndarray
    df: np.ndarray
    pvalue: np.ndarray


def _samples(a: Any, b: Any, axis: int) -> tuple[np.ndarray, np.ndarray]:
    a = np.moveaxis(np.asarray(a, dtype=np.float64), axis, -1)
    b = np.moveaxis(np.asarray(b, dtype=np.float64), axis, -1)
    if a.shape[-1] < 2 or b.shape[-1] < 2:
        raise AnalysisError(
            f"a two-sample test needs at least 2 observations per group; got {a.shape[-1]} and "
            f"{b.shape[-1]}"
        )
    return a, b


def t_test(a: Any, b: Any, *, axis: int = -1, kind: TTestKind = "student") -> TTest:
    """Two-sided two-sample t-test of mean(a) = mean(b).

    Parameters
    ----------
    a, b : array_like
        The two samples; observations along ``axis``, other axes broadcast.
    axis : int, default -1
    kind : {"student", "welch"}, default "student"
        ``student`` assumes equal variances (pooled variance, df = n_a + n_b − 2); ``welch``
        does not (Welch–Satterthwaite df).

    Returns
    -------
    TTest

    Notes
    -----
    Student: ``t = (ā − b̄) / (s_p √(1/n_a + 1/n_b))``, ``s_p² = ((n_a−1)s_a² + (n_b−1)s_b²) /
    (n_a+n_b−2)``. Welch: ``t = (ā − b̄) / √(s_a²/n_a + s_b²/n_b)``, ``df = (s_a²/n_a +
    s_b²/n_b)² / ((s_a²/n_a)²/(n_a−1) + (s_b²/n_b)²/(n_b−1))``. ``p = 2 P(T_df > |t|)``.
    Equal to ``scipy.stats.ttest_ind(a, b, equal_var=kind == "student")``.

    References
    ----------
    Welch, B. L. (1947). The generalization of "Student's" problem when several different
    population variances are involved. *Biometrika* 34(1–2), 28–35.

    Examples
    --------
    >>> t_test([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]).statistic.round(4)
    np.float64(-1.5492)
    """
    if kind not in ("student", "welch"):
        raise AnalysisError(f"t-test kind must be 'student' or 'welch'; got {kind!r}")
    a, b = _samples(a, b, axis)
    na, nb = a.shape[-1], b.shape[-1]
    va, vb = a.var(axis=-1, ddof=1), b.var(axis=-1, ddof=1)
    diff = a.mean(axis=-1) - b.mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "student":
            df = np.full(diff.shape, float(na + nb - 2))
            pooled = ((na - 1) * va + (nb - 1) * vb) / (na + nb - 2)
            t = diff / np.sqrt(pooled * (1 / na + 1 / nb))
        else:
            ua, ub = va / na, vb / nb
            t = diff / np.sqrt(ua + ub)
            df = (ua + ub) ** 2 / (ua**2 / (na - 1) + ub**2 / (nb - 1))
        p = 2 * special.stdtr(df, -np.abs(t))  # scipy.stats.t.sf(|t|, df)
    return TTest(statistic=t, df=df, pvalue=p)


def cohens_d(a: Any, b: Any, *, axis: int = -1) -> np.ndarray:
    """Cohen's d: the mean difference over the pooled standard deviation (ddof 1).

    Notes
    -----
    ``d = (ā − b̄) / s_p`` with ``s_p² = ((n_a−1)s_a² + (n_b−1)s_b²) / (n_a+n_b−2)``.

    References
    ----------
    Cohen, J. (1988). *Statistical power analysis for the behavioral sciences* (2nd ed.), §2.2.

    Examples
    --------
    >>> float(cohens_d([1.0, 2.0, 3.0], [2.0, 3.0, 4.0]))
    -1.0
    """
    a, b = _samples(a, b, axis)
    na, nb = a.shape[-1], b.shape[-1]
    pooled = ((na - 1) * a.var(axis=-1, ddof=1) + (nb - 1) * b.var(axis=-1, ddof=1)) / (na + nb - 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (a.mean(axis=-1) - b.mean(axis=-1)) / np.sqrt(pooled)
