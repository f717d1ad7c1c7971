"""CEAT's numerical kernels on plain arrays: the samples' context indices, each sample's effect
size and variance from gathered vectors, the bootstrap's indices, and the meta-analysis per cell.

:func:`ceat_kernel` computes a sample's ``s(w, A, B)`` from unit vectors and one sparse product
with the mean attribute vectors (``mean_a cos(x, a) = x̂ · mean_a â``), a block of samples at a
time, never in a Python loop over samples. :mod:`emb.analyses.ceat` wraps these in
``xarray.apply_ufunc`` over layers and poolings.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Sequence

import numpy as np

from emb.analyses import stats

__all__ = ["ROLES", "ceat_kernel", "normal_interval", "sample_indices"]

ROLES = ("X", "Y", "A", "B")
_BATCH = 256  # samples per gathered block (≈ 256 × stimuli × features floats)


def sample_indices(
    counts: Sequence[int], n_samples: int, *, rng_seeds: Sequence[Sequence[int]], replace: str
) -> np.ndarray:
    """(n_samples, stimuli) context indices: column j draws from ``range(counts[j])``.

    ``replace="auto"``: without replacement when ``counts[j] >= n_samples`` (a seeded permutation),
    with replacement otherwise (the paper); ``"always"``: with replacement (the authors' code).
    Each column has its own generator, seeded by ``rng_seeds[j]``.
    """
    out = np.empty((n_samples, len(counts)), dtype=np.int64)
    for j, (n, seed) in enumerate(zip(counts, rng_seeds, strict=True)):
        rng = np.random.default_rng(list(seed))
        if replace == "auto" and n >= n_samples:
            out[:, j] = rng.permutation(n)[:n_samples]
        else:
            out[:, j] = rng.integers(n, size=n_samples)
    return out


def _weights(idx: np.ndarray, n_t: int, n_a: int, n_items: int, inv: np.ndarray):
    """Sparse (samples × items) matrix whose product with the vectors gives each sample's
    ``w_i = mean_a â_{a,i} − mean_b b̂_{b,i}`` (unit vectors through ``inv`` = 1/‖row‖)."""
    from scipy import sparse

    a_cols = idx[:, n_t : n_t + n_a]
    b_cols = idx[:, n_t + n_a :]
    n = idx.shape[0]
    cols = np.concatenate([a_cols, b_cols], axis=1)
    vals = np.concatenate(
        [inv[a_cols] / a_cols.shape[1], -inv[b_cols] / b_cols.shape[1]], axis=1
    ).astype(np.float32)
    indptr = np.arange(0, cols.size + 1, cols.shape[1])
    return sparse.csr_matrix((vals.ravel(), cols.ravel(), indptr), shape=(n, n_items))


def _scores(e: np.ndarray, inv: np.ndarray, idx: np.ndarray, n_t: int, n_a: int) -> np.ndarray:
    """``s (samples, n_t)``: each sampled target's unit vector dotted with its sample's w_i."""
    s = np.empty((idx.shape[0], n_t), dtype=np.float64)
    for lo in range(0, idx.shape[0], _BATCH):
        block = idx[lo : lo + _BATCH]
        w = _weights(block, n_t, n_a, e.shape[0], inv) @ e  # (b, d): one pass over gathered rows
        for t in range(n_t):
            rows = block[:, t]
            s[lo : lo + len(block), t] = np.einsum("ij,ij->i", e[rows], w) * inv[rows]
    return s


def ceat_kernel(
    emb: np.ndarray,
    *,
    idx: np.ndarray,
    n_x: int,
    n_y: int,
    n_a: int,
    ddof: int,
    variance: str,
    n_permutations: int = 0,
    alternative: str = "two-sided",
    seed: int = 0,
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``emb (..., item, feature)``, ``idx (N, X+Y+A+B)`` rows into ``item`` → ``es, v, p (..., N)``.

    Per sample i: ``w_i = mean_a â_{a,i} − mean_b b̂_{b,i}`` (one sparse product over the sampled
    rows); ``s_{t,i} = t̂_{t,i} · w_i``; ``ES_i = (mean_X s − mean_Y s) / std_{X∪Y}(s, ddof)``;
    ``V_i`` the sampling variance of d (``variance="cohens-d"``) or ``var_{X∪Y}(s, ddof=1)``
    (``"reference"``); ``p_i`` a Monte-Carlo permutation p of the sample's WEAT
    (``n_permutations`` re-splits of X∪Y, the same for every sample; NaN when 0). Samples are
    split over ``threads`` (default: the cores); the result does not depend on it.
    """
    import concurrent.futures as cf
    import os

    n_t = n_x + n_y
    lead = emb.shape[:-2]
    n = idx.shape[0]
    es = np.empty((*lead, n))
    var = np.empty((*lead, n))
    p = np.full((*lead, n), np.nan)
    threads = max(1, min(threads or os.cpu_count() or 1, n // _BATCH or 1))
    bounds = np.linspace(0, n, threads + 1).astype(int)
    with stats.single_threaded_blas():
        for pos in np.ndindex(*lead):
            e = np.asarray(emb[pos], dtype=np.float32)
            norms = np.sqrt(np.einsum("ij,ij->i", e, e))
            inv = (1.0 / np.where(norms > 0, norms, 1.0)).astype(np.float32)
            if threads == 1:
                s = _scores(e, inv, idx, n_t, n_a)
            else:
                with cf.ThreadPoolExecutor(threads) as pool:
                    parts = pool.map(
                        lambda k, e=e, inv=inv: _scores(e, inv, idx[bounds[k]:bounds[k + 1]], n_t, n_a),
                        range(threads),
                    )
                    s = np.concatenate(list(parts))
            d = stats.weat_effect_size(s[:, :n_x], s[:, n_x:], ddof=ddof)
            es[pos] = d
            var[pos] = (np.var(s, axis=-1, ddof=1) if variance == "reference"
                        else stats.cohens_d_variance(d, n_x, n_y))
            if n_permutations:
                res = stats.permutation_test(
                    s, n_x, alternative=alternative, n_permutations=n_permutations,
                    exact_limit=0, seed=seed, method="monte-carlo",
                )
                p[pos] = res.pvalue
    return es, var, p


def _boot_kernel(
    emb: np.ndarray, *, idx: np.ndarray, n_rep: int, n_x: int, n_y: int, n_a: int, ddof: int,
    variance: str, alternative: str,
) -> np.ndarray:
    """CES of each bootstrap replicate: ``idx`` holds ``n_rep`` blocks of samples."""
    es, v, _ = ceat_kernel(emb, idx=idx, n_x=n_x, n_y=n_y, n_a=n_a, ddof=ddof, variance=variance)
    shape = (*es.shape[:-1], n_rep, es.shape[-1] // n_rep)
    return stats.dersimonian_laird(
        es.reshape(shape), v.reshape(shape), alternative=alternative  # type: ignore[arg-type]
    ).ces


#: z of the two-sided 95 % normal interval, Φ⁻¹(0.975).
Z95 = 1.959963984540054


def normal_interval(ces: np.ndarray, replicates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The normal bootstrap interval ``CES ∓ z · SE`` (95 %), SE the standard deviation
    (ddof 1) of the replicates' CES along the last axis, NaN replicates left out.

    Centred on the CES, not on the replicates: their quantiles (the percentile interval) sit
    below the CES, which with few stimuli already sits below the population effect size
    (docs/rules/intervals.md; ``tests/analyses/stats/test_coverage.py`` checks coverage).

    Examples
    --------
    >>> low, high = normal_interval(np.array(0.5), np.array([0.3, 0.4, 0.5, 0.6, 0.7]))  # SD √0.025
    >>> round(float(low), 4), round(float(high), 4)
    (0.1901, 0.8099)
    """
    rep = np.asarray(replicates, dtype=np.float64)
    with warnings.catch_warnings(action="ignore", category=RuntimeWarning):
        se = np.nanstd(rep, axis=-1, ddof=1)
    ces = np.asarray(ces, dtype=np.float64)
    return ces - Z95 * se, ces + Z95 * se


def _bootstrap_indices(
    counts: list[int], offsets: np.ndarray, sizes: dict[str, int], *, n_rep: int, n_samples: int,
    seed: int, test: str,
) -> np.ndarray:
    """Rows of ``n_rep`` replicates × ``n_samples``: each replicate resamples the stimuli of every
    word set (with replacement), then each drawn stimulus' contexts (with replacement), then draws
    its samples from those resampled pools."""
    rng = np.random.default_rng([seed, zlib.crc32(f"bootstrap/{test}".encode())])
    cols = []
    start = 0
    role_cols = []
    for role in ROLES:
        role_cols.append(np.arange(start, start + sizes[role]))
        start += sizes[role]
    out = np.empty((n_rep, n_samples, start), dtype=np.int64)
    for b in range(n_rep):
        cols = np.concatenate([rng.choice(c, size=len(c), replace=True) for c in role_cols])
        for j, stim in enumerate(cols.tolist()):
            n = counts[stim]
            pool = rng.integers(n, size=n)
            out[b, :, j] = offsets[stim] + pool[rng.integers(n, size=n_samples)]
    return out.reshape(n_rep * n_samples, start)


def _convergence_kernel(es: np.ndarray, v: np.ndarray, *, grid: tuple[int, ...], alternative: str):
    outs = [stats.dersimonian_laird(es[..., :n], v[..., :n], alternative=alternative)  # type: ignore[arg-type]
            for n in grid]
    return (np.stack([o.p for o in outs], axis=-1), np.stack([o.ci_low for o in outs], axis=-1),
            np.stack([o.ci_high for o in outs], axis=-1), np.stack([o.z for o in outs], axis=-1))


def _meta_kernel(es: np.ndarray, v: np.ndarray, *, alternative: str):
    r = stats.dersimonian_laird(es, v, alternative=alternative)  # type: ignore[arg-type]
    return r.ces, r.se, r.ci_low, r.ci_high, r.z, r.p, r.log10_p, r.tau2, r.q, r.i2


_META = ("ces", "se", "ci_low", "ci_high", "z", "p", "log10_p", "tau2", "q", "i2")
