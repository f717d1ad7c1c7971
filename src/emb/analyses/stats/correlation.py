"""Correlations with the statistics researchers report: Pearson's r (n, two-sided p, Fisher-z 95% CI)
and Spearman's rho, vectorised over batch axes; :func:`correlation` for labelled, lazy data.

Small samples get an exact p: with at most :data:`EXACT_MAX_N` complete pairs the p-value of
either coefficient is its exact permutation p (all n! pairings enumerated), never an asymptotic
approximation far below what n pairs can give (with 3 pairs no p is below 1/3).

References
----------
Toney-Wails, A. & Caliskan, A. (2021). ValNorm quantifies semantics to reveal consistent valence
biases across languages and over centuries. *EMNLP 2021*.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import xarray as xr
from scipy import special

from emb.errors import AnalysisError

__all__ = [
    "EXACT_MAX_N",
    "P_FLOOR",
    "Correlation",
    "CorrelationMethod",
    "correlation",
    "correlation_ci",
    "log10_pvalue",
    "pearson",
    "spearman",
]

CorrelationMethod = Literal["pearson", "spearman"]

#: Two-sided 95 % normal quantile (≈ 1.96) used by the Fisher-z confidence interval.
_Z95 = float(special.ndtri(0.975))
#: The smallest p-value written: the smallest positive normal double (≈ 2.2e-308). A true p below
#: it (a strong correlation over thousands of words) is written as ``P_FLOOR``, never as 0; its
#: exact order of magnitude is :func:`log10_pvalue` (the tables' ``log10_p`` column).
P_FLOOR = float(np.finfo(np.float64).tiny)
#: Below this, a p-value from scipy's incomplete beta is recomputed in log space.
_LOG_SPACE_BELOW = 1e-250
#: Most complete pairs whose p-value is exact: the permutation p over all n! pairings (9! =
#: 362,880, a few milliseconds per correlation). From 10 pairs on, Pearson's p is the exact
#: p under bivariate normality and Spearman's the t approximation (as scipy.stats), which is
#: never taken below 1/n! (no pairing of n ranks is rarer).
EXACT_MAX_N = 9
#: Two pairings whose coefficients differ by less than this are taken as tied (rounding).
_TIE = 1e-12
#: Pairings' coefficients computed at once (columns of one matrix product) per group.
_EXACT_COLUMNS = 16

# --------------------------------------------------------------------------------------------
# correlations
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Correlation:
    """A correlation with its two-sided p-value and Fisher-z 95 % confidence interval.

    Attributes
    ----------
    r : numpy.ndarray
        The coefficient (Pearson's r or Spearman's ρ).
    pvalue : numpy.ndarray
        Two-sided p-value of ``r = 0`` (as :mod:`scipy.stats`).
    n : numpy.ndarray
        Number of complete (finite) pairs used.
    ci_low, ci_high : numpy.ndarray
        95 % CI from Fisher's z: ``tanh(atanh(r) ∓ 1.96 · se)`` with ``se = 1 / sqrt(n − 3)``
        for Pearson and Bonett & Wright's ``se = sqrt((1 + r²/2) / (n − 3))`` for Spearman (NaN
        for n ≤ 3).
    """

    r: np.ndarray
    pvalue: np.ndarray
    n: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python view (lists), for JSON."""
        return {k: np.asarray(v).tolist() for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Correlation:
        """Inverse of :meth:`to_dict`."""
        return cls(
            r=np.asarray(d["r"], dtype=np.float64),
            pvalue=np.asarray(d["pvalue"], dtype=np.float64),
            n=np.asarray(d["n"], dtype=np.int64),
            ci_low=np.asarray(d["ci_low"], dtype=np.float64),
            ci_high=np.asarray(d["ci_high"], dtype=np.float64),
        )


def _paired(x: Any, y: Any, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x, y = np.broadcast_arrays(np.moveaxis(x, axis, -1), np.moveaxis(y, axis, -1))
    mask = np.isfinite(x) & np.isfinite(y)
    return np.where(mask, x, np.nan), np.where(mask, y, np.nan), mask


def _pearson_r(x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = mask.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.where(mask, x, 0.0).sum(axis=-1) / n
        my = np.where(mask, y, 0.0).sum(axis=-1) / n
        dx = np.where(mask, x - mx[..., None], 0.0)
        dy = np.where(mask, y - my[..., None], 0.0)
        # scale to unit norm first: no overflow/underflow for tiny or huge inputs
        nx = np.sqrt(np.einsum("...i,...i->...", dx, dx))
        ny = np.sqrt(np.einsum("...i,...i->...", dy, dy))
        r = np.einsum("...i,...i->...", dx / nx[..., None], dy / ny[..., None])
    r = np.clip(r, -1.0, 1.0)
    # a constant input has no r; tested on the values, not on the deviations from the mean,
    # which the rounding of the mean leaves non-zero (r ~ 1e-16 of identical values otherwise)
    r = np.where((n >= 2) & (nx > 0) & (ny > 0) & ~_constant(x, mask) & ~_constant(y, mask),
                 r, np.nan)
    return r, n


def _constant(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Whether the values of ``x`` under ``mask`` are all equal, along the last axis."""
    return np.where(mask, x, -np.inf).max(axis=-1, initial=-np.inf) == np.where(
        mask, x, np.inf).min(axis=-1, initial=np.inf)


def _floor(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    """p-values that underflowed (below :data:`P_FLOOR`, 0 included) while ``|r| < 1``, raised to
    :data:`P_FLOOR`; a perfect correlation keeps its p of 0."""
    with np.errstate(invalid="ignore"):
        return np.where((p < P_FLOOR) & (np.abs(r) < 1.0), P_FLOOR, p)


@functools.cache
def _pairings(n: int) -> np.ndarray:
    """Every permutation of ``range(n)`` (identity first), shape (n!, n)."""
    return np.array(list(itertools.permutations(range(n))), dtype=np.intp).reshape(-1, n)


def _standardised(v: np.ndarray) -> np.ndarray:
    d = v - v.mean()
    return d / np.sqrt(d @ d)


def _exact_pvalue(x: np.ndarray, y: np.ndarray, mask: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The two-sided permutation p of a correlation where 3 ≤ n ≤ :data:`EXACT_MAX_N` (NaN
    elsewhere): the share of all n! pairings of the complete pairs whose coefficient is at least
    as far from 0 as the observed one (``x``, ``y``: values, or ranks for Spearman).

    Rows with the same ``y`` (the ratings every layer is correlated with) share one table of
    permuted ``y`` values and one matrix product."""
    width = x.shape[-1]
    xs, ys, ms = x.reshape(-1, width), y.reshape(-1, width), mask.reshape(-1, width)
    n = ms.sum(axis=-1)
    out = np.full(n.shape, np.nan)
    rows = np.flatnonzero((n >= 3) & (n <= EXACT_MAX_N) & np.isfinite(r.reshape(-1)))
    groups: dict[bytes, tuple[np.ndarray, list[int], list[np.ndarray]]] = {}
    for row in rows:
        b = _standardised(ys[row][ms[row]])
        key = b.tobytes()
        if key not in groups:
            groups[key] = (b, [], [])
        groups[key][1].append(row)
        groups[key][2].append(_standardised(xs[row][ms[row]]))
    for b, members, columns in groups.values():
        table = b[_pairings(b.size)]  # (n!, n): y in every order; row 0 is the observed one
        for start in range(0, len(members), _EXACT_COLUMNS):
            coef = table @ np.stack(columns[start:start + _EXACT_COLUMNS], axis=-1)  # (n!, m)
            extreme = np.abs(coef) >= np.abs(coef[0]) - _TIE
            out[members[start:start + _EXACT_COLUMNS]] = extreme.mean(axis=0)
    return out.reshape(r.shape)


def _with_exact(p: np.ndarray, x: np.ndarray, y: np.ndarray, mask: np.ndarray, r: np.ndarray,
                n: np.ndarray) -> np.ndarray:
    """``p`` with the exact permutation p where 3 ≤ n ≤ :data:`EXACT_MAX_N`."""
    small = (n >= 3) & (n <= EXACT_MAX_N) & np.isfinite(r)
    if not np.any(small):
        return p
    return np.where(small, _exact_pvalue(x, y, mask, r), p)


def _rarest_pairing(n: np.ndarray) -> np.ndarray:
    """``1/n!``, the smallest share a set of pairings of n ranks can have (0 where it
    underflows, from n = 171 on)."""
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        return np.exp(-special.gammaln(np.asarray(n, dtype=np.float64) + 1.0))


def _finish(
    r: np.ndarray, n: np.ndarray, pvalue: np.ndarray, *, bonett_wright: bool = False
) -> Correlation:
    with np.errstate(invalid="ignore", divide="ignore"):
        if bonett_wright:
            half = _Z95 * np.sqrt((1.0 + r * r / 2.0) / (n - 3.0))
        else:
            half = _Z95 / np.sqrt(n - 3.0)
        z = np.arctanh(r)
        lo = np.where(n > 3, np.tanh(z - half), np.nan)
        hi = np.where(n > 3, np.tanh(z + half), np.nan)
    return Correlation(r=r[()], pvalue=pvalue[()], n=n[()], ci_low=lo[()], ci_high=hi[()])


def pearson(x: Any, y: Any, *, axis: int = -1) -> Correlation:
    """Pearson's r with a two-sided p-value and a Fisher-z 95 % CI, vectorised over batches.

    Parameters
    ----------
    x, y : array_like
        Paired samples along ``axis``; other axes broadcast.  Pairs where either value is NaN
        (or infinite) are left out, and ``n`` counts the pairs used.
    axis : int, default -1

    Returns
    -------
    Correlation
        ``r, pvalue, n, ci_low, ci_high`` of the batch shape.  ``r`` is NaN when a sample is
        constant or fewer than two pairs remain.

    Notes
    -----
    ``r = Σ(x−x̄)(y−ȳ) / sqrt(Σ(x−x̄)² Σ(y−ȳ)²)``.  With 3 to :data:`EXACT_MAX_N` (9) complete
    pairs, p is the exact two-sided permutation p: the share of the n! pairings of the x and y
    values whose |r| is at least the observed one (:func:`scipy.stats.pearsonr` with
    ``method=PermutationMethod()`` doubles the smaller one-sided p instead, which differs where
    the permutation distribution is skewed); it is never below 1/n! (with 3 pairs,
    a perfect linear relation gets 1/3: the observed pairing and its reversal).  From
    10 pairs on, under independence of normal variables ``(r + 1)/2 ~ Beta(n/2 − 1, n/2 − 1)``
    (equivalently a t-test with n − 2 df), so ``p = 2 I_{(1−|r|)/2}(n/2 − 1, n/2 − 1)`` exactly
    as :func:`scipy.stats.pearsonr`'s default (p = 1 for n = 2).  CI: ``tanh(atanh(r) ±
    z₀.₉₇₅ / sqrt(n − 3))``, z₀.₉₇₅ ≈ 1.96, as ``scipy.stats.pearsonr(...).confidence_interval()``.
    A p below the smallest normal double (:data:`P_FLOOR`) is returned as ``P_FLOOR``, never 0
    (see :func:`log10_pvalue`).

    References
    ----------
    Fisher, R. A. (1915). Frequency distribution of the values of the correlation coefficient
    in samples from an indefinitely large population. *Biometrika* 10(4), 507–521.

    Examples
    --------
    >>> c = pearson([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 4.0, 3.0, 5.0])
    >>> round(float(c.r), 3), round(float(c.pvalue), 3), int(c.n)  # exact: 16 of 120 pairings
    (0.8, 0.133, 5)
    """
    x, y, mask = _paired(x, y, axis)
    r, n = _pearson_r(x, y, mask)
    ab = n / 2.0 - 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 2.0 * special.betainc(ab, ab, np.clip(0.5 * (1.0 - np.abs(r)), 0.0, 1.0))
    p = np.where(n == 2, 1.0, p)
    p = np.where(np.isnan(r), np.nan, _floor(np.clip(p, 0.0, 1.0), r))
    return _finish(r, n, _with_exact(p, x, y, mask, r, n))


def average_ranks(a: Any) -> np.ndarray:
    """Average ranks (1-based, ties share their mean rank) along the last axis; NaN stays NaN
    and is left out of the others' ranks: :func:`scipy.stats.rankdata` with
    ``method="average"``, ``nan_policy="omit"`` (checked against it in the tests), without
    importing :mod:`scipy.stats` (half a second of every command's start-up).

    Examples
    --------
    >>> average_ranks([3.0, 1.0, 3.0, np.nan]).tolist()
    [2.5, 1.0, 2.5, nan]
    """
    a = np.asarray(a, dtype=np.float64)
    flat = a.reshape(-1, a.shape[-1]) if a.ndim else a.reshape(1, 1)
    n = flat.shape[-1]
    order = np.argsort(flat, axis=-1, kind="stable")  # NaN sort last: the others' ranks ignore them
    s = np.take_along_axis(flat, order, axis=-1)
    new = np.ones(s.shape, dtype=bool)  # a position that starts a run of equal values
    new[:, 1:] = s[:, 1:] != s[:, :-1]
    last = np.ones(s.shape, dtype=bool)  # a position that ends one
    last[:, :-1] = new[:, 1:]
    position = np.arange(n)
    first = np.maximum.accumulate(np.where(new, position, 0), axis=-1)
    end = np.minimum.accumulate(np.where(last, position, n - 1)[:, ::-1], axis=-1)[:, ::-1]
    ranks = np.empty_like(s)
    np.put_along_axis(ranks, order, (first + end) / 2.0 + 1.0, axis=-1)
    ranks[np.isnan(flat)] = np.nan
    return ranks.reshape(a.shape)


def spearman(x: Any, y: Any, *, axis: int = -1, y_ranks: Any = None) -> Correlation:
    """Spearman's ρ with a two-sided p-value and a Fisher-z 95 % CI, vectorised over batches.

    Parameters
    ----------
    x, y : array_like
        Paired samples along ``axis``; incomplete pairs (NaN) are left out first.
    axis : int, default -1
    y_ranks : array_like, optional
        ``average_ranks(y)`` along ``axis``, computed once for a ``y`` without NaN that many
        calls share (e.g. the ratings of one lexicon against every layer's effect sizes). It
        is used for the batches where no pair is left out; ``y`` is ranked again where one is.

    Returns
    -------
    Correlation

    Notes
    -----
    ρ is Pearson's r of the average ranks (ties share the mean rank).  With 3 to
    :data:`EXACT_MAX_N` (9) complete pairs the p-value is exact: the share of the n! pairings of
    the ranks whose |ρ| is at least the observed one (with ties, of the tied ranks as they
    are), so never below 2/n! without ties (1/3 for n = 3).  From 10 pairs on it is the t approximation
    of :func:`scipy.stats.spearmanr`, ``t = ρ sqrt((n − 2) / (1 − ρ²))`` with n − 2 degrees of
    freedom, but never below 1/n! (the exact p cannot be: the observed pairing is one of n!),
    nor 0, nor below :data:`P_FLOOR`.  NaN for fewer than 3 pairs.  The CI applies the Fisher-z
    formula of :func:`pearson` to ρ (an approximation for ranks).

    References
    ----------
    Spearman, C. (1904). The proof and measurement of association between two things.
    *Am. J. Psychol.* 15(1), 72–101.

    Examples
    --------
    >>> float(spearman([1.0, 2.0, 3.0, 4.0], [1.0, 4.0, 9.0, 16.0]).r)
    1.0
    """
    x, y, mask = _paired(x, y, axis)
    if y_ranks is None:
        ry = average_ranks(y)
    else:
        ry = np.broadcast_to(np.moveaxis(np.asarray(y_ranks, dtype=np.float64), axis, -1), y.shape)
        complete = mask.all(axis=-1, keepdims=True)
        if not complete.all():
            ry = np.where(complete, ry, average_ranks(y))
    rx = average_ranks(x)
    r, n = _pearson_r(rx, ry, mask)
    df = n - 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        t = r * np.sqrt(df / ((1.0 - r) * (1.0 + r)))
        p = 2.0 * special.stdtr(df, -np.abs(t))
    p = np.maximum(np.clip(p, 0.0, 1.0), _rarest_pairing(n))
    p = np.where(p < P_FLOOR, P_FLOOR, p)  # a perfect ρ too: n! pairings, one of them observed
    p = np.where(np.isnan(r) | (n < 3), np.nan, p)
    return _finish(r, n, _with_exact(p, rx, ry, mask, r, n), bonett_wright=True)


def _log_betainc_tail(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``ln I_x(a, b)`` for ``x < (a + 1) / (a + b + 2)`` by the continued fraction (modified
    Lentz), all in log space: exact where scipy's ``betainc`` underflows to 0."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = 1.0 / np.where(np.abs(d) < tiny, tiny, d)
    h = d.copy()
    done = np.zeros(x.shape, dtype=bool)
    for m in range(1, 20_001):
        m2 = 2.0 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / np.where(np.abs(d) < tiny, tiny, d)
            c = 1.0 + aa / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            step = d * c
            h = np.where(done, h, h * step)
        done |= np.abs(step - 1.0) < 1e-15
        if done.all():
            break
    front = a * np.log(x) + b * np.log1p(-x) - special.betaln(a, b) - np.log(a)
    return front + np.log(h)


def correlation_ci(
    r: Any, n: Any, *, method: CorrelationMethod = "pearson", confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence interval of a correlation from Fisher's z (the ones :func:`pearson` and
    :func:`spearman` return, at any ``confidence``).

    Parameters
    ----------
    r, n : array_like
        Coefficients and pairs used (broadcast).
    method : {"pearson", "spearman"}
        ``se = 1/sqrt(n − 3)`` for Pearson; Bonett & Wright's ``sqrt((1 + r²/2)/(n − 3))`` for
        Spearman.
    confidence : float, default 0.95

    Returns
    -------
    (low, high) : numpy.ndarray
        ``tanh(atanh(r) ∓ z · se)``; NaN for n ≤ 3.

    Examples
    --------
    >>> [round(float(v), 4) for v in correlation_ci(0.5, 50, method="spearman")]
    [0.2412, 0.6924]
    """
    if method not in ("pearson", "spearman"):
        raise AnalysisError(f"method must be 'pearson' or 'spearman'; got {method!r}")
    if not 0 < confidence < 1:
        raise AnalysisError(f"confidence must lie strictly between 0 and 1; got {confidence}")
    r = np.asarray(r, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = _Z95 if confidence == 0.95 else float(special.ndtri(0.5 + confidence / 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "spearman":
            half = z * np.sqrt((1.0 + r * r / 2.0) / (n - 3.0))
        else:
            half = z / np.sqrt(n - 3.0)
        center = np.arctanh(r)
        lo = np.where(n > 3, np.tanh(center - half), np.nan)
        hi = np.where(n > 3, np.tanh(center + half), np.nan)
    return lo[()], hi[()]


def log10_pvalue(
    r: Any, n: Any, *, method: CorrelationMethod = "pearson", pvalue: Any = None
) -> np.ndarray:
    """log10 of the two-sided p-value of a correlation, exact far below float range.

    Parameters
    ----------
    r : array_like
        Pearson's r or Spearman's ρ.
    n : array_like
        Pairs used (broadcast with ``r``).
    method : {"pearson", "spearman"}
        Pearson: the exact null distribution of r under normality (as :func:`pearson`);
        Spearman: the t approximation, never below ``log10(1/n!)`` (as :func:`spearman`).
    pvalue : array_like, optional
        The p-values :func:`pearson` / :func:`spearman` returned (broadcast with ``r``): where
        n ≤ :data:`EXACT_MAX_N` their p is the exact permutation p, which depends on the data
        and not on r and n alone, so its log10 is taken from here (NaN there without it). A p
        that small n gives is never below 1/9!, far inside float range.

    Returns
    -------
    numpy.ndarray
        ``log10 p`` (float64): ``-inf`` for Pearson's ``|r| = 1`` (from 10 pairs on), NaN where
        r is NaN or n < 3.

    Notes
    -----
    Both p-values are regularized incomplete beta functions: Pearson's
    ``p = 2 I_x(a, a)`` with ``x = (1 − |r|)/2``, ``a = n/2 − 1``; the t approximation's
    ``p = I_x(a, 1/2)`` with ``x = 1 − ρ²``, ``a = (n − 2)/2``. Where scipy's ``betainc`` gives
    at least 1e-250 its log10 is returned; below, ``ln I_x`` is evaluated in log space from its
    continued fraction (Numerical Recipes §6.4), whose prefactor
    ``x^a (1 − x)^b / (a B(a, b))`` is where the underflow happens.

    References
    ----------
    Press, W. H. et al. (2007). *Numerical Recipes*, 3rd ed., §6.4 (incomplete beta function).

    Examples
    --------
    >>> round(float(log10_pvalue(0.7, 13_915)), 3)  # p ≈ 10^-2036: 0.0 in float64
    -2036.303
    """
    if method not in ("pearson", "spearman"):
        raise AnalysisError(f"method must be 'pearson' or 'spearman'; got {method!r}")
    given = np.nan if pvalue is None else np.asarray(pvalue, dtype=np.float64)
    r, n, given = np.broadcast_arrays(np.asarray(r, dtype=np.float64),
                                      np.asarray(n, dtype=np.float64), given)
    shape = r.shape
    r, n, given = r.ravel(), n.ravel(), given.ravel()
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "pearson":
            a = n / 2.0 - 1.0
            b = a
            x = np.clip(0.5 * (1.0 - np.abs(r)), 0.0, 1.0)
            scale = np.log10(2.0)
        else:
            a = (n - 2.0) / 2.0
            b = np.full_like(a, 0.5)
            x = np.clip(1.0 - r * r, 0.0, 1.0)
            scale = 0.0
        p = special.betainc(a, b, x)
        out = scale + np.log10(np.minimum(p, 1.0))
        deep = np.isfinite(r) & (n >= 3) & (x > 0) & (p < _LOG_SPACE_BELOW)
        deep &= x < (a + 1.0) / (a + b + 2.0)
        if deep.any():
            out[deep] = scale + _log_betainc_tail(a[deep], b[deep], x[deep]) / np.log(10.0)
        out = np.where(x == 0, -np.inf, out)
        if method == "spearman":  # never below one pairing in n!
            out = np.maximum(out, -special.gammaln(n + 1.0) / np.log(10.0))
        out = np.where(n <= EXACT_MAX_N, np.log10(given), out)
        out = np.where(np.isfinite(r) & (n >= 3), out, np.nan)
    return out.reshape(shape)[()]


def _correlation_kernel(x: np.ndarray, y: np.ndarray, method: str) -> tuple[np.ndarray, ...]:
    fn = pearson if method == "pearson" else spearman
    c = fn(x, y, axis=-1)
    return (
        np.asarray(c.r, dtype=np.float64),
        np.asarray(c.pvalue, dtype=np.float64),
        np.asarray(c.n, dtype=np.int64),
        np.asarray(c.ci_low, dtype=np.float64),
        np.asarray(c.ci_high, dtype=np.float64),
    )


def correlation(
    a: xr.DataArray, b: xr.DataArray, *, dim: str, method: CorrelationMethod = "pearson"
) -> xr.Dataset:
    """Correlation along ``dim`` of two labelled arrays, lazily, for every other coordinate.

    Parameters
    ----------
    a, b : xarray.DataArray
        Paired along ``dim`` (aligned by label; other dims broadcast), e.g. SC-WEAT effect
        sizes (item, layer, pooling) and ratings (item,).
    dim : str
        The dimension to correlate over (reduced).
    method : {"pearson", "spearman"}, default "pearson"

    Returns
    -------
    xarray.Dataset
        Variables ``r``, ``p`` (two-sided), ``n`` (complete pairs), ``ci_low``, ``ci_high``
        (Fisher-z 95 %) over the broadcast non-``dim`` dims; dask-backed input stays lazy.

    Raises
    ------
    AnalysisError
        For an unknown method or a ``dim`` missing from an input.

    See Also
    --------
    pearson, spearman : the kernels and their formulas.

    Examples
    --------
    >>> x = xr.DataArray([1.0, 2.0, 3.0, 4.0, 5.0], dims="item")
    >>> y = xr.DataArray([2.0, 1.0, 4.0, 3.0, 5.0], dims="item")
    >>> float(correlation(x, y, dim="item").r)
    0.8
    """
    if method not in ("pearson", "spearman"):
        raise AnalysisError(f"method must be 'pearson' or 'spearman'; got {method!r}")
    for name, arr in (("a", a), ("b", b)):
        if dim not in arr.dims:
            raise AnalysisError(f"{name} has no dimension {dim!r}; its dims are {arr.dims}")
    out = xr.apply_ufunc(
        _correlation_kernel,
        a,
        b,
        input_core_dims=[[dim], [dim]],
        output_core_dims=[[], [], [], [], []],
        kwargs={"method": method},
        dask="parallelized",
        output_dtypes=[np.float64, np.float64, np.int64, np.float64, np.float64],
        dask_gufunc_kwargs={"allow_rechunk": True},
    )
    names = ("r", "p", "n", "ci_low", "ci_high")
    ds = xr.Dataset(dict(zip(names, out, strict=True)))
    ds.attrs["method"] = method
    ds["r"].attrs["long_name"] = "Pearson's r" if method == "pearson" else "Spearman's rho"
    ds["p"].attrs["long_name"] = "two-sided p-value"
    ds["n"].attrs["long_name"] = "number of complete pairs"
    ds["ci_low"].attrs["long_name"] = "Fisher-z 95% CI, lower bound"
    ds["ci_high"].attrs["long_name"] = "Fisher-z 95% CI, upper bound"
    return ds
