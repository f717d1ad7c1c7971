"""Permutation tests: exact enumeration of the re-splits when few, a seeded Monte-Carlo sample beyond.

The statistic of each word is computed once; a permutation only moves labels (an indicator matrix
times the per-word scores), never recomputes cosines.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from scipy import special

from emb.analyses.stats.work import METER
from emb.errors import AnalysisError

__all__ = ["Alternative", "PermutationMethod", "PermutationResult", "permutation_test",
           "planned_splits", "units_per_second"]

Alternative = Literal["greater", "less", "two-sided"]
PermutationMethod = Literal["exact-or-monte-carlo", "exact", "monte-carlo", "reference"]

_ALTERNATIVES = ("greater", "less", "two-sided")
_METHODS = ("exact-or-monte-carlo", "exact", "monte-carlo", "reference")
#: Relative tolerance under which two permutation statistics count as tied.
_TIE_RTOL = 1e-9
#: Rows of random splits drawn per Monte-Carlo block (fixed: results do not depend on batching).
_MC_BLOCK = 8192
#: Target number of float64 cells of one (batch × splits) block (≈ 32 MiB).
_CELLS = 1 << 22

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


def planned_splits(
    n: int,
    n_x: int,
    *,
    n_permutations: int = 100_000,
    exact_limit: int = 1_000_000,
    method: PermutationMethod = "exact-or-monte-carlo",
) -> int:
    """The splits :func:`permutation_test` evaluates for ``n`` values with ``n_x`` in X (all
    ``C(n, n_x)`` when exact, else ``n_permutations``): its work is that times ``n`` per batch
    row.

    Examples
    --------
    >>> planned_splits(16, 8), planned_splits(50, 25)
    (12870, 100000)
    """
    if not 1 <= int(n_x) <= int(n) - 1:
        return 0
    total = math.comb(int(n), int(n_x))
    exact = method == "exact" or (method == "exact-or-monte-carlo" and total <= exact_limit)
    return total if exact else int(n_permutations)


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
        METER.add(idx.shape[0] * n_rows * n)
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


def units_per_second(seconds: float = 0.1) -> float:
    """Units one thread does per second on this machine: a seeded permutation test of 50 words
    over 8 cells, timed for about ``seconds`` (a calibration for the estimate; the meter is left
    as it was)."""
    from emb.analyses.stats._blas import single_threaded_blas

    values = np.random.default_rng(0).normal(size=(8, 50))
    before = METER.value
    splits, spent = 4096, 0.0
    while True:
        start = time.perf_counter()
        with single_threaded_blas():  # as in a dask task
            permutation_test(values, 25, n_permutations=splits, exact_limit=0, seed=0)
        spent = time.perf_counter() - start
        if spent >= seconds / 4 or splits >= 1 << 20:
            break
        splits *= 4
    METER.add(before - METER.value)  # the calibration is not progress
    return splits * 8 * 50 / max(spent, 1e-6)
