"""Shared statistics: cosines, association scores, effect sizes, permutation tests, correlations.

Every numpy kernel here works on float64 internally and is vectorised over leading batch
dimensions (layers, poolings, words …): the statistic is taken over the last axis (or ``axis``)
and every other axis is carried through.  The xarray wrappers at the end (:func:`normalize`,
:func:`cosine`, :func:`correlation`) call the kernels through :func:`xarray.apply_ufunc` with
``dask="parallelized"``, so they stay lazy on dask-backed data.

Notation follows Caliskan, Bryson & Narayanan (2017): target sets ``X, Y``, attribute sets
``A, B``, ``s(w, A, B) = mean_a cos(w, a) − mean_b cos(w, b)``.

References
----------
Caliskan, A., Bryson, J. J. & Narayanan, A. (2017). Semantics derived automatically from language
corpora contain human-like biases. *Science* 356(6334), 183–186.

Toney-Wails, A. & Caliskan, A. (2021). ValNorm quantifies semantics to reveal consistent valence
biases across languages and over centuries. *EMNLP 2021*.

Wolfe, R. & Caliskan, A. (2022). VAST: The Valence-Assessing Semantics Test for contextualizing
language models. *AAAI 2022*.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import xarray as xr
from scipy import special

from emb.errors import AnalysisError

__all__ = [
    "Alternative",
    "Correlation",
    "CorrelationMethod",
    "CorrectionMethod",
    "PermutationMethod",
    "PermutationResult",
    "adjust",
    "adjust_pvalues",
    "association",
    "benjamini_hochberg",
    "cosine",
    "cosine_matrix",
    "correlation",
    "holm",
    "normalize",
    "pearson",
    "permutation_test",
    "sc_weat_effect_size",
    "single_threaded_blas",
    "spearman",
    "unit",
    "weat_effect_size",
    "weat_statistic",
]

Alternative = Literal["greater", "less", "two-sided"]
PermutationMethod = Literal["exact-or-monte-carlo", "exact", "monte-carlo", "reference"]
CorrelationMethod = Literal["pearson", "spearman"]
CorrectionMethod = Literal["holm", "bh", "none"]

_ALTERNATIVES = ("greater", "less", "two-sided")
_METHODS = ("exact-or-monte-carlo", "exact", "monte-carlo", "reference")
#: Relative tolerance under which two permutation statistics count as tied.
_TIE_RTOL = 1e-9
#: Two-sided 95 % normal quantile (≈ 1.96) used by the Fisher-z confidence interval.
_Z95 = float(special.ndtri(0.975))
#: Rows of random splits drawn per Monte-Carlo block (fixed: results do not depend on batching).
_MC_BLOCK = 8192
#: Target number of float64 cells of one (batch × splits) block (≈ 32 MiB).
_CELLS = 1 << 22


# --------------------------------------------------------------------------------------------
# BLAS threads inside dask
# --------------------------------------------------------------------------------------------

_blas_lock = threading.Lock()
_blas_users = 0
_blas_saved: list[int] = []
_blas_libs: list[Any] | None = None  # threadpoolctl library controllers of the BLAS in use


def _blas_controllers() -> list[Any]:
    global _blas_libs
    if _blas_libs is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            _blas_libs = []
        else:
            _blas_libs = list(ThreadpoolController().select(user_api="blas").lib_controllers)
    return _blas_libs


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Context manager: BLAS runs single-threaded inside (dask already runs one kernel per core).

    Threaded BLAS inside dask's worker threads oversubscribes the cores, and OpenBLAS' spinning
    threads then make the kernels' matrix products several times slower (on 2 cores the ValNorm
    benchmark spent 2.5× the CPU time).  OpenBLAS' thread count is process-wide, so the first
    thread to enter sets it to 1 and the last one to leave restores the saved value (reference
    counted, re-entrant).  Without threadpoolctl it does nothing.

    Examples
    --------
    >>> with single_threaded_blas():
    ...     c = np.ones((2, 3)) @ np.ones((3, 2))
    """
    global _blas_users, _blas_saved
    with _blas_lock:
        libs = _blas_controllers()
        if _blas_users == 0:
            _blas_saved = [lib.get_num_threads() for lib in libs]
            for lib in libs:
                lib.set_num_threads(1)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                for lib, n in zip(libs, _blas_saved, strict=True):
                    if n:
                        lib.set_num_threads(n)


# --------------------------------------------------------------------------------------------
# cosines and association scores
# --------------------------------------------------------------------------------------------


def unit(x: Any, axis: int = -1) -> np.ndarray:
    """L2-normalise vectors along ``axis``.

    Parameters
    ----------
    x : array_like
        Vectors; any dtype (computed in float64).
    axis : int, default -1
        The feature axis.

    Returns
    -------
    numpy.ndarray
        ``x / ||x||₂`` in float64, same shape as ``x``.

    Raises
    ------
    AnalysisError
        If a vector has zero length (or is not finite): its direction, hence every cosine with
        it, is undefined.

    Examples
    --------
    >>> unit([3.0, 4.0])
    array([0.6, 0.8])
    """
    x = np.asarray(x, dtype=np.float64)
    norm = np.sqrt(np.einsum("...i,...i->...", np.moveaxis(x, axis, -1), np.moveaxis(x, axis, -1)))
    bad = ~(norm > 0) | ~np.isfinite(norm)
    if np.any(bad):
        raise AnalysisError(
            f"{int(np.count_nonzero(bad))} of {norm.size} vectors have zero or non-finite length; "
            "cosine similarity is undefined for them: check the embeddings (NaN or all-zero rows)"
        )
    return x / np.expand_dims(norm, axis)


def cosine_matrix(u: Any, v: Any) -> np.ndarray:
    """All cosine similarities between two sets of vectors.

    Parameters
    ----------
    u : array_like, shape (..., n, d)
    v : array_like, shape (..., m, d)
        Leading batch dimensions broadcast.

    Returns
    -------
    numpy.ndarray, shape (..., n, m)
        ``cos(u_i, v_j) = u_i·v_j / (||u_i|| ||v_j||)`` in float64.

    Raises
    ------
    AnalysisError
        If a vector has zero length.

    Examples
    --------
    >>> cosine_matrix([[1.0, 0.0]], [[1.0, 1.0], [0.0, 2.0]]).round(4)
    array([[0.7071, 0.    ]])
    """
    return np.matmul(unit(u), np.swapaxes(unit(v), -1, -2))


def association(cos_a: Any, cos_b: Any) -> np.ndarray:
    """Differential association ``s(w, A, B) = mean_a cos(w, a) − mean_b cos(w, b)``.

    Parameters
    ----------
    cos_a : array_like, shape (..., |A|)
        Cosines of each target with the attribute words A.
    cos_b : array_like, shape (..., |B|)
        Cosines with the attribute words B.

    Returns
    -------
    numpy.ndarray, shape (...)

    References
    ----------
    Caliskan, Bryson & Narayanan (2017), *Science* 356:183–186 (the function s(w, A, B)).

    Examples
    --------
    >>> round(float(association([0.5, 0.7], [0.1, 0.3])), 6)
    0.4
    """
    cos_a = np.asarray(cos_a, dtype=np.float64)
    cos_b = np.asarray(cos_b, dtype=np.float64)
    return cos_a.mean(axis=-1) - cos_b.mean(axis=-1)


def _cohen_d(a: np.ndarray, b: np.ndarray, ddof: int) -> np.ndarray:
    batch = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    a = np.broadcast_to(a, (*batch, a.shape[-1]))
    b = np.broadcast_to(b, (*batch, b.shape[-1]))
    both = np.concatenate([a, b], axis=-1)
    if both.shape[-1] - ddof <= 0:
        raise AnalysisError(
            f"a standard deviation with ddof={ddof} needs more than {ddof} values; "
            f"got {both.shape[-1]}: use more words or a smaller ddof"
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a.mean(axis=-1) - b.mean(axis=-1)) / both.std(axis=-1, ddof=ddof)


def sc_weat_effect_size(cos_a: Any, cos_b: Any, *, ddof: int = 1) -> np.ndarray:
    """Single-category WEAT (SC-WEAT, WEFAT) effect size of one vector.

    Parameters
    ----------
    cos_a : array_like, shape (..., |A|)
        ``cos(w, a)`` for every attribute word a ∈ A.
    cos_b : array_like, shape (..., |B|)
        ``cos(w, b)`` for every b ∈ B.
    ddof : int, default 1
        Delta degrees of freedom of the standard deviation (1 in the authors' code, 0 in WEFE).

    Returns
    -------
    numpy.ndarray, shape (...)
        The effect size; NaN where all cosines are equal (zero spread).

    Notes
    -----
    .. math::

        d(w) = \\frac{\\operatorname{mean}_{a∈A} \\cos(w,a) − \\operatorname{mean}_{b∈B}
        \\cos(w,b)}{\\operatorname{std}_{x∈A∪B} \\cos(w,x)}

    References
    ----------
    Caliskan, Bryson & Narayanan (2017) (WEFAT); Toney-Wails & Caliskan (2021) (ValNorm);
    Wolfe & Caliskan (2022), VAST, Eq. 1.

    Examples
    --------
    >>> round(float(sc_weat_effect_size([0.3, 0.5], [0.1, 0.1])), 4)
    1.5667
    """
    return _cohen_d(
        np.asarray(cos_a, dtype=np.float64), np.asarray(cos_b, dtype=np.float64), ddof
    )


def weat_effect_size(s_x: Any, s_y: Any, *, ddof: int = 1) -> np.ndarray:
    """WEAT effect size from the per-word association scores.

    Parameters
    ----------
    s_x : array_like, shape (..., |X|)
        ``s(x, A, B)`` for every target word x ∈ X (see :func:`association`).
    s_y : array_like, shape (..., |Y|)
        ``s(y, A, B)`` for y ∈ Y.
    ddof : int, default 1
        Delta degrees of freedom of the standard deviation.

    Returns
    -------
    numpy.ndarray, shape (...)

    Notes
    -----
    .. math::

        d = \\frac{\\operatorname{mean}_{x∈X} s(x,A,B) − \\operatorname{mean}_{y∈Y} s(y,A,B)}
        {\\operatorname{std}_{w∈X∪Y} s(w,A,B)}

    References
    ----------
    Caliskan, Bryson & Narayanan (2017), *Science* 356:183–186.

    Examples
    --------
    >>> round(float(weat_effect_size([0.2, 0.4], [0.0, -0.2])), 4)
    1.5492
    """
    return _cohen_d(np.asarray(s_x, dtype=np.float64), np.asarray(s_y, dtype=np.float64), ddof)


def weat_statistic(s_x: Any, s_y: Any) -> np.ndarray:
    """WEAT test statistic ``S(X, Y, A, B) = Σ_{x∈X} s(x,A,B) − Σ_{y∈Y} s(y,A,B)``.

    Parameters
    ----------
    s_x : array_like, shape (..., |X|)
    s_y : array_like, shape (..., |Y|)

    Returns
    -------
    numpy.ndarray, shape (...)

    References
    ----------
    Caliskan, Bryson & Narayanan (2017), *Science* 356:183–186.

    Examples
    --------
    >>> round(float(weat_statistic([0.2, 0.4], [0.0, -0.2])), 4)
    0.8
    """
    s_x = np.asarray(s_x, dtype=np.float64)
    s_y = np.asarray(s_y, dtype=np.float64)
    return s_x.sum(axis=-1) - s_y.sum(axis=-1)


# --------------------------------------------------------------------------------------------
# permutation test
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PermutationResult:
    """Result of :func:`permutation_test`.

    Attributes
    ----------
    statistic : numpy.ndarray
        ``S = Σ_X − Σ_Y`` per batch entry.
    pvalue : numpy.ndarray
        The p-value per batch entry (NaN where the values had NaN).
    n_permutations : int
        Number of random splits used; 0 means exact enumeration of all splits.
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    n_permutations: int

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python view (lists and ints), for JSON."""
        d = asdict(self)
        d["statistic"] = np.asarray(self.statistic).tolist()
        d["pvalue"] = np.asarray(self.pvalue).tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PermutationResult:
        """Inverse of :meth:`to_dict`."""
        return cls(
            statistic=np.asarray(d["statistic"], dtype=np.float64),
            pvalue=np.asarray(d["pvalue"], dtype=np.float64),
            n_permutations=int(d["n_permutations"]),
        )


@lru_cache(maxsize=16)
def _cached_combinations(n: int, k: int) -> np.ndarray:
    return _combinations_array(n, k, 0, math.comb(n, k))


def _combinations_array(n: int, k: int, start: int, stop: int) -> np.ndarray:
    """Index rows ``start:stop`` of ``itertools.combinations(range(n), k)`` as an int array."""
    rows = stop - start
    it = itertools.islice(itertools.combinations(range(n), k), start, stop)
    flat = np.fromiter(itertools.chain.from_iterable(it), dtype=np.intp, count=rows * k)
    return flat.reshape(rows, k)


def _combination_blocks(n: int, k: int, rows: int) -> Iterator[np.ndarray]:
    total = math.comb(n, k)
    if total * k <= 1 << 21:  # ≤ 16 MiB of indices: cache, e.g. every WEAT up to 10+10 words
        cached = _cached_combinations(n, k)
        for start in range(0, total, rows):
            yield cached[start : start + rows]
        return
    it = itertools.combinations(range(n), k)
    while True:
        block = np.fromiter(
            itertools.chain.from_iterable(itertools.islice(it, rows)), dtype=np.intp
        )
        if block.size == 0:
            return
        yield block.reshape(-1, k)


def _random_blocks(n: int, k: int, total: int, seed: int | None) -> Iterator[np.ndarray]:
    """Seeded uniform random k-subsets of range(n), in fixed-size blocks (batch-independent)."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < total:
        rows = min(_MC_BLOCK, total - done)
        keys = rng.random((rows, n))
        yield np.argpartition(keys, k - 1, axis=1)[:, :k]
        done += rows


def _indicator(idx: np.ndarray, n: int) -> np.ndarray:
    ind = np.zeros((idx.shape[0], n), dtype=np.float64)
    np.put_along_axis(ind, idx, 1.0, axis=1)
    return ind


def permutation_test(
    values: Any,
    n_x: int,
    *,
    alternative: Alternative = "greater",
    n_permutations: int = 100_000,
    exact_limit: int = 1_000_000,
    seed: int | None = 0,
    method: PermutationMethod = "exact-or-monte-carlo",
) -> PermutationResult:
    """Permutation test of ``S = Σ_X − Σ_Y`` against re-splits of ``X ∪ Y``.

    Parameters
    ----------
    values : array_like, shape (..., n)
        Per-unit scores, e.g. ``s(w, A, B)`` of the WEAT targets (X first, then Y), or the
        cosines of one word with ``A`` then ``B`` for SC-WEAT.  The first ``n_x`` entries of the
        last axis form group X, the remaining ``n − n_x`` group Y.  Leading axes are a batch.
    n_x : int
        Size of group X, ``1 ≤ n_x ≤ n − 1``.
    alternative : {"greater", "less", "two-sided"}, default "greater"
        ``greater`` (Caliskan et al.) tests whether X is more associated than chance.
    n_permutations : int, default 100_000
        Number of random splits when the test is not exact (and for ``method="reference"``).
    exact_limit : int, default 1_000_000
        Enumerate all ``C(n, n_x)`` splits when their number is at most this.
    seed : int or None, default 0
        Seed of :func:`numpy.random.default_rng` for the random splits.  The same splits are
        used for every batch entry, whatever the batch size.
    method : {"exact-or-monte-carlo", "exact", "monte-carlo", "reference"}
        ``exact-or-monte-carlo`` (default) enumerates when ``C(n, n_x) ≤ exact_limit`` and
        samples otherwise; ``exact`` / ``monte-carlo`` force one of the two; ``reference``
        reproduces the authors' code: it samples ``n_permutations`` splits, fits a normal
        distribution (mean, sample std with ddof = 1) to the sampled statistics and reads the
        tail probability from it.

    Returns
    -------
    PermutationResult
        ``statistic`` and ``pvalue`` of the batch shape (numpy scalars for 1-d input) and
        ``n_permutations`` (0 = exact).

    Raises
    ------
    AnalysisError
        For an invalid ``n_x``, ``alternative``, ``method`` or ``n_permutations``.

    Notes
    -----
    Every split ``i`` is a subset ``X_i`` of size ``n_x``; ``S_i = 2 Σ_{X_i} v − Σ v``, computed
    as an indicator matrix times the values, in blocks so that memory stays bounded.

    - exact: ``p = #{i : S_i ≥ S_obs} / C(n, n_x)`` (the observed split is one of the ``i``);
    - Monte Carlo: ``p = (1 + #{i : S_i ≥ S_obs}) / (1 + N)`` (Phipson & Smyth 2010);
    - ``less`` counts ``S_i ≤ S_obs``; ``two-sided`` counts ``|S_i − E₀| ≥ |S_obs − E₀|`` with
      the null mean ``E₀ = (2 n_x − n) · mean(v)``.

    Ties are counted with a relative tolerance of 1e-9 of ``Σ|v|`` (float sums in a different
    order differ in the last bits).

    References
    ----------
    Caliskan, Bryson & Narayanan (2017), *Science* 356:183–186 (supplement: the permutation
    test).  Phipson, B. & Smyth, G. K. (2010). Permutation p-values should never be zero.
    *Stat. Appl. Genet. Mol. Biol.* 9(1).

    Examples
    --------
    >>> res = permutation_test([3.0, 2.0, 1.0, 0.0], 2)
    >>> float(res.statistic), float(res.pvalue), res.n_permutations
    (4.0, 0.16666666666666666, 0)
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 0:
        raise AnalysisError("values must have at least one axis (the units to permute)")
    n = v.shape[-1]
    n_x = int(n_x)
    if not 1 <= n_x <= n - 1:
        raise AnalysisError(
            f"n_x must be between 1 and n - 1 = {n - 1} (both groups non-empty); got {n_x}"
        )
    if alternative not in _ALTERNATIVES:
        raise AnalysisError(f"alternative must be one of {_ALTERNATIVES}; got {alternative!r}")
    if method not in _METHODS:
        raise AnalysisError(f"method must be one of {_METHODS}; got {method!r}")
    total_splits = math.comb(n, n_x)
    exact = method == "exact" or (method == "exact-or-monte-carlo" and total_splits <= exact_limit)
    if not exact and int(n_permutations) < 2:
        raise AnalysisError(
            f"n_permutations must be at least 2 for a sampled test; got {n_permutations}"
        )

    batch = v.shape[:-1]
    flat = v.reshape(-1, n)
    nan_rows = ~np.all(np.isfinite(flat), axis=-1)
    flat = np.where(nan_rows[:, None], 0.0, flat)
    total = flat.sum(axis=-1)
    observed = flat[:, :n_x].sum(axis=-1) - flat[:, n_x:].sum(axis=-1)
    null_mean = (2 * n_x - n) * total / n
    tol = _TIE_RTOL * np.abs(flat).sum(axis=-1)

    if exact:
        blocks = _combination_blocks(n, n_x, max(1024, _CELLS // max(n, 1)))
        n_used = 0
    else:
        n_used = int(n_permutations)
        blocks = _random_blocks(n, n_x, n_used, seed)

    n_rows = flat.shape[0]
    batch_step = max(1, _CELLS // _MC_BLOCK)
    count = np.zeros(n_rows, dtype=np.int64)
    sum_d = np.zeros(n_rows)
    sum_d2 = np.zeros(n_rows)
    n_seen = 0
    for idx in blocks:
        ind_t = _indicator(idx, n).T  # (n, rows)
        n_seen += idx.shape[0]
        for lo in range(0, n_rows, batch_step):
            sl = slice(lo, lo + batch_step)
            s_i = 2.0 * (flat[sl] @ ind_t) - total[sl, None]  # (batch, rows)
            if method == "reference":
                d = s_i - null_mean[sl, None]
                sum_d[sl] += d.sum(axis=-1)
                sum_d2[sl] += np.einsum("ij,ij->i", d, d)
            elif alternative == "greater":
                count[sl] += np.count_nonzero(s_i >= (observed[sl] - tol[sl])[:, None], axis=-1)
            elif alternative == "less":
                count[sl] += np.count_nonzero(s_i <= (observed[sl] + tol[sl])[:, None], axis=-1)
            else:
                dev_obs = np.abs(observed[sl] - null_mean[sl]) - tol[sl]
                dev = np.abs(s_i - null_mean[sl, None])
                count[sl] += np.count_nonzero(dev >= dev_obs[:, None], axis=-1)

    if method == "reference":
        mean = null_mean + sum_d / n_seen
        var = (sum_d2 - sum_d**2 / n_seen) / (n_seen - 1)
        sd = np.sqrt(np.maximum(var, 0.0))
        with np.errstate(invalid="ignore", divide="ignore"):
            z = (observed - mean) / sd
        if alternative == "greater":
            p = special.ndtr(-z)
        elif alternative == "less":
            p = special.ndtr(z)
        else:
            p = np.minimum(1.0, 2.0 * special.ndtr(-np.abs(z)))
    elif exact:
        p = count / total_splits
    else:
        p = (1.0 + count) / (1.0 + n_used)
    p = np.where(nan_rows, np.nan, np.minimum(p, 1.0))
    observed = np.where(nan_rows, np.nan, observed)
    return PermutationResult(
        statistic=observed.reshape(batch)[()],
        pvalue=p.reshape(batch)[()],
        n_permutations=n_used,
    )


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
        ``tanh(atanh(r) ∓ 1.96 / sqrt(n − 3))`` (NaN for n ≤ 3).
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
    r = np.where((n >= 2) & (nx > 0) & (ny > 0), r, np.nan)
    return r, n


def _finish(r: np.ndarray, n: np.ndarray, pvalue: np.ndarray) -> Correlation:
    with np.errstate(invalid="ignore", divide="ignore"):
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
    ``r = Σ(x−x̄)(y−ȳ) / sqrt(Σ(x−x̄)² Σ(y−ȳ)²)``.  Under independence of normal variables
    ``(r + 1)/2 ~ Beta(n/2 − 1, n/2 − 1)`` (equivalently a t-test with n − 2 df), so
    ``p = 2 I_{(1−|r|)/2}(n/2 − 1, n/2 − 1)`` exactly as :func:`scipy.stats.pearsonr`
    (p = 1 for n = 2).  CI: ``tanh(atanh(r) ± z₀.₉₇₅ / sqrt(n − 3))``, z₀.₉₇₅ ≈ 1.96, as
    ``scipy.stats.pearsonr(...).confidence_interval()``.

    References
    ----------
    Fisher, R. A. (1915). Frequency distribution of the values of the correlation coefficient
    in samples from an indefinitely large population. *Biometrika* 10(4), 507–521.

    Examples
    --------
    >>> c = pearson([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 4.0, 3.0, 5.0])
    >>> round(float(c.r), 3), round(float(c.pvalue), 3), int(c.n)
    (0.8, 0.104, 5)
    """
    x, y, mask = _paired(x, y, axis)
    r, n = _pearson_r(x, y, mask)
    ab = n / 2.0 - 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 2.0 * special.betainc(ab, ab, np.clip(0.5 * (1.0 - np.abs(r)), 0.0, 1.0))
    p = np.where(n == 2, 1.0, p)
    p = np.where(np.isnan(r), np.nan, np.clip(p, 0.0, 1.0))
    return _finish(r, n, p)


def _rank(a: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(a, axis=-1, nan_policy="omit")


def spearman(x: Any, y: Any, *, axis: int = -1) -> Correlation:
    """Spearman's ρ with a two-sided p-value and a Fisher-z 95 % CI, vectorised over batches.

    Parameters
    ----------
    x, y : array_like
        Paired samples along ``axis``; incomplete pairs (NaN) are left out first.
    axis : int, default -1

    Returns
    -------
    Correlation

    Notes
    -----
    ρ is Pearson's r of the average ranks (ties share the mean rank).  The p-value is the
    t approximation of :func:`scipy.stats.spearmanr`,
    ``t = ρ sqrt((n − 2) / (1 − ρ²))`` with n − 2 degrees of freedom.  The CI applies the
    Fisher-z formula of :func:`pearson` to ρ (an approximation for ranks).

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
    r, n = _pearson_r(_rank(x), _rank(y), mask)
    df = n - 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        t = r * np.sqrt(df / ((1.0 - r) * (1.0 + r)))
        p = 2.0 * special.stdtr(df, -np.abs(t))
    p = np.where(np.isnan(r) | (n < 3), np.nan, np.clip(p, 0.0, 1.0))
    return _finish(r, n, p)


# --------------------------------------------------------------------------------------------
# multiple comparisons
# --------------------------------------------------------------------------------------------


def _sorted_valid(p: Any, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    p = np.moveaxis(np.asarray(p, dtype=np.float64), axis, -1)
    if np.any((p < 0) | (p > 1)):
        raise AnalysisError("p-values must lie in [0, 1] (NaN allowed); got values outside")
    order = np.argsort(p, axis=-1, kind="stable")  # NaNs sort last
    ps = np.take_along_axis(p, order, axis=-1)
    m = np.isfinite(p).sum(axis=-1, keepdims=True)
    rank = np.arange(1, p.shape[-1] + 1)
    return ps, order, m, rank


def _unsort(adj: np.ndarray, order: np.ndarray, axis: int) -> np.ndarray:
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return np.moveaxis(out, -1, axis)


def holm(p: Any, *, axis: int = -1) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (family-wise error), NaN-aware.

    Parameters
    ----------
    p : array_like
        p-values; the family runs along ``axis``.  NaNs stay NaN and do not count in m.
    axis : int, default -1

    Returns
    -------
    numpy.ndarray
        Adjusted p-values, same shape.

    Notes
    -----
    With the m valid p-values sorted ascending, ``p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) p_(j))``.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure.
    *Scand. J. Stat.* 6(2), 65–70.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, np.nan])
    array([0.03, 0.06, 0.06,  nan])
    """
    ps, order, m, rank = _sorted_valid(p, axis)
    with np.errstate(invalid="ignore"):
        adj = np.minimum(1.0, (m - rank + 1) * ps)
    adj = np.fmax.accumulate(adj, axis=-1)
    adj = np.where(np.isnan(ps), np.nan, adj)
    return _unsort(adj, order, axis)


def benjamini_hochberg(p: Any, *, axis: int = -1) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (false discovery rate), NaN-aware.

    Parameters
    ----------
    p : array_like
        p-values; the family runs along ``axis``.  NaNs stay NaN and do not count in m.
    axis : int, default -1

    Returns
    -------
    numpy.ndarray
        Adjusted p-values (q-values), same shape.

    Notes
    -----
    With the m valid p-values sorted ascending, ``p̃_(i) = min_{j ≥ i} min(1, m p_(j) / j)``.

    References
    ----------
    Benjamini, Y. & Hochberg, Y. (1995). Controlling the false discovery rate.
    *J. R. Stat. Soc. B* 57(1), 289–300.

    Examples
    --------
    >>> benjamini_hochberg([0.01, 0.04, 0.03])
    array([0.03, 0.04, 0.04])
    """
    ps, order, m, rank = _sorted_valid(p, axis)
    adj = np.minimum(1.0, m * ps / rank)
    # reverse cumulative minimum; np.fmin ignores the trailing NaNs
    adj = np.flip(np.fmin.accumulate(np.flip(adj, axis=-1), axis=-1), axis=-1)
    adj = np.where(np.isnan(ps), np.nan, adj)
    return _unsort(adj, order, axis)


def adjust_pvalues(p: Any, method: CorrectionMethod = "holm", axis: int = -1) -> np.ndarray:
    """Adjust a family of p-values for multiple comparisons.

    Parameters
    ----------
    p : array_like
        p-values; the family runs along ``axis`` (NaN-aware).
    method : {"holm", "bh", "none"}
        Holm (:func:`holm`), Benjamini–Hochberg (:func:`benjamini_hochberg`) or no correction
        (a float64 copy).
    axis : int, default -1

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    AnalysisError
        For an unknown method.

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.02], "none")
    array([0.01, 0.02])
    """
    if method == "holm":
        return holm(p, axis=axis)
    if method == "bh":
        return benjamini_hochberg(p, axis=axis)
    if method == "none":
        return np.array(p, dtype=np.float64)
    raise AnalysisError(f"correction method must be 'holm', 'bh' or 'none'; got {method!r}")


# --------------------------------------------------------------------------------------------
# xarray wrappers (lazy)
# --------------------------------------------------------------------------------------------


def normalize(a: xr.DataArray, *, dim: str = "feature") -> xr.DataArray:
    """Unit-length vectors along ``dim``, lazily (float64).

    Parameters
    ----------
    a : xarray.DataArray
        Vectors along ``dim`` (numpy- or dask-backed).
    dim : str, default "feature"

    Returns
    -------
    xarray.DataArray
        ``a / ||a||`` in float64, same dims; dask-backed input stays lazy.  A zero vector
        raises :class:`~emb.errors.AnalysisError` when the block holding it is computed.

    Examples
    --------
    >>> normalize(xr.DataArray([[3.0, 4.0]], dims=("item", "feature"))).values
    array([[0.6, 0.8]])
    """
    return xr.apply_ufunc(
        unit,
        a,
        input_core_dims=[[dim]],
        output_core_dims=[[dim]],
        dask="parallelized",
        output_dtypes=[np.float64],
        dask_gufunc_kwargs={"allow_rechunk": True},
        keep_attrs=True,
    )


def cosine(a: xr.DataArray, b: xr.DataArray, *, dim: str = "feature") -> xr.DataArray:
    """Cosine similarities of two labelled sets of vectors, lazily.

    Parameters
    ----------
    a, b : xarray.DataArray
        Vectors along ``dim``.  All other dims broadcast by name, as in :func:`xarray.dot`:
        give the two sets *different* names for their item dimension to get all pairs, e.g.
        ``cosine(targets, attributes.rename(item="attribute"))`` → (item, attribute, …).
        A dim shared by both (``layer``, ``pooling``) is matched, not crossed.
    dim : str, default "feature"

    Returns
    -------
    xarray.DataArray
        ``cos(a, b) = â·b̂`` (float64) with the union of the non-``dim`` dims.

    Notes
    -----
    Each input is normalised once (:func:`normalize`) and the cosines are one
    :func:`xarray.dot` contraction over ``dim``: no Python loop over words.

    Examples
    --------
    >>> a = xr.DataArray([[1.0, 0.0], [1.0, 1.0]], dims=("item", "feature"))
    >>> cosine(a, a.rename(item="other")).round(4).values
    array([[1.    , 0.7071],
           [0.7071, 1.    ]])
    """
    return xr.dot(normalize(a, dim=dim), normalize(b, dim=dim), dim=dim)


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


def adjust(p: xr.DataArray, *, method: CorrectionMethod, dims: Sequence[str]) -> xr.DataArray:
    """Adjust labelled p-values for multiple comparisons, the family running over ``dims``.

    Lazy: the family's dims are stacked into one and :func:`adjust_pvalues` runs on it per
    combination of the other dims (``xr.apply_ufunc(..., dask="parallelized")``).

    Parameters
    ----------
    p : xarray.DataArray
        p-values (NaN-aware: NaNs stay NaN and do not count in the family).
    method : {"holm", "bh", "none"}
    dims : sequence of str
        Dims whose cells form one family, e.g. ``("test",)`` or ``("test", "layer")``.

    Returns
    -------
    xarray.DataArray
        Same dims, coordinates and order as ``p``.

    Raises
    ------
    AnalysisError
        An unknown method, or a dim that ``p`` lacks.

    Examples
    --------
    >>> p = xr.DataArray([[0.01, 0.04], [0.03, 0.2]], dims=("test", "layer"))
    >>> adjust(p, method="holm", dims=("test", "layer")).values
    array([[0.04, 0.09],
           [0.09, 0.2 ]])
    """
    family = [str(d) for d in dims]
    missing = [d for d in family if d not in p.dims]
    if missing or not family:
        raise AnalysisError(
            f"correction dims {family} must be dims of the p-values; they have {list(p.dims)}"
        )
    if method not in ("holm", "bh", "none"):
        raise AnalysisError(f"correction method must be 'holm', 'bh' or 'none'; got {method!r}")
    stacked = p.stack(_family=family)
    out = xr.apply_ufunc(
        adjust_pvalues,
        stacked,
        input_core_dims=[["_family"]],
        output_core_dims=[["_family"]],
        kwargs={"method": method, "axis": -1},
        dask="parallelized",
        output_dtypes=[np.float64],
        dask_gufunc_kwargs={"allow_rechunk": True},
    )
    return out.unstack("_family").transpose(*p.dims).assign_coords(p.coords)


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
