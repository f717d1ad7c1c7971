"""How much a WEAT effect size rests on its words: leave-one-word-out influence (the jackknife),
d under random subsets of each word set, d under random attribute sets (an empirical null), and the
split-half reliability of the target words' association scores.

Every kernel takes one test's vectors ``emb (..., item, feature)`` with the items X, Y, A, B in that
order (``n_x``, ``n_y``, ``n_a`` of them; B is the rest), works in float64 and is vectorised over
the leading cells (layers, poolings, settings).

References
----------
Antoniak, M. & Mimno, D. (2021). Bad seeds: evaluating lexical methods for bias measurement. ACL
2021. Dobrzeniecka, A. & Urbaniak, R. (2024). A Bayesian approach to uncertainty in word embedding
bias estimation. Computational Linguistics. Efron, B. & Stein, C. (1981).
The jackknife estimate of variance. Annals of Statistics 9(3), 586–596. Spearman, C. (1910);
Brown, W. (1910): the prophecy formula ``2r / (1 + r)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from emb.analyses.stats.association import target_attribute_cosines, unit, weat_effect_size

__all__ = ["leave_one_out", "null_effect_sizes", "split_half", "subset_effect_sizes"]


def _d(s: np.ndarray, n_x: int, ddof: int) -> np.ndarray:
    """WEAT's d from scores ``s (..., n_t)``, X first."""
    return weat_effect_size(s[..., :n_x], s[..., n_x:], ddof=ddof)


def leave_one_out(emb: Any, n_x: int, n_y: int, n_a: int, *, ddof: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """WEAT's d, and d without each word in turn.

    Returns
    -------
    d : numpy.ndarray, shape (...)
    d_without : numpy.ndarray, shape (..., n_x + n_y + n_a + n_b)
        d recomputed with one word left out, in the items' order (X, Y, A, B); NaN where leaving
        the word out leaves a set too small (a target set of one word, an attribute set of none).
    """
    n_t = n_x + n_y
    cos = target_attribute_cosines(emb, n_t)
    n_b = cos.shape[-1] - n_a
    sum_a, sum_b = cos[..., :n_a].sum(-1), cos[..., n_a:].sum(-1)
    s = sum_a / n_a - sum_b / n_b
    d = _d(s, n_x, ddof)
    out = []
    for i in range(n_t):  # a target word out: the other words' scores are unchanged
        in_x = i < n_x
        if (n_x if in_x else n_y) < 3:
            out.append(np.full(d.shape, np.nan))
            continue
        keep = np.delete(s, i, axis=-1)
        out.append(_d(keep, n_x - 1 if in_x else n_x, ddof))
    with np.errstate(invalid="ignore", divide="ignore"):
        # an attribute word out: every target's score without it, (..., n_t, n_attribute)
        s_no_a = (sum_a[..., None] - cos[..., :n_a]) / (n_a - 1) - (sum_b / n_b)[..., None]
        s_no_b = (sum_a / n_a)[..., None] - (sum_b[..., None] - cos[..., n_a:]) / (n_b - 1)
    for part, n_set in ((s_no_a, n_a), (s_no_b, n_b)):
        d_part = _d(np.swapaxes(part, -1, -2), n_x, ddof)  # (..., n_attribute)
        if n_set < 2:
            d_part = np.full(d_part.shape, np.nan)
        out.extend(np.moveaxis(d_part, -1, 0))
    return d, np.stack(out, axis=-1)


def _masks(rng: np.random.Generator, n: int, k: int, r: int) -> np.ndarray:
    """``r`` random subsets of ``k`` of ``n`` items as 0/1 rows (r, n)."""
    order = np.argsort(rng.random((r, n)), axis=1)
    mask = np.zeros((r, n))
    np.put_along_axis(mask, order[:, :k], 1.0, axis=1)
    return mask


def _masked_d(s: np.ndarray, mx: np.ndarray, my: np.ndarray, ddof: int) -> np.ndarray:
    """d of scores ``s (..., r, n_t)`` restricted to the target masks ``mx (r, n_x)``, ``my``."""
    n_x = mx.shape[1]
    sx, sy = s[..., :n_x], s[..., n_x:]
    kx, ky = mx.sum(1), my.sum(1)
    tx, ty = (sx * mx).sum(-1), (sy * my).sum(-1)
    sq = (sx**2 * mx).sum(-1) + (sy**2 * my).sum(-1)
    k = kx + ky
    mean = (tx + ty) / k
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.maximum(sq - k * mean**2, 0.0) / (k - ddof)
        return (tx / kx - ty / ky) / np.sqrt(var)


def subset_effect_sizes(emb: Any, n_x: int, n_y: int, n_a: int, *, fraction: float = 0.8,
                        n_subsets: int = 1000, seed: int = 0, ddof: int = 1) -> np.ndarray:
    """d on ``n_subsets`` random subsets of each word set (``round(fraction · n)`` words of each
    of X, Y, A, B; at least 2 of a target set, 1 of an attribute set), shape (..., n_subsets).
    The same subsets (seeded) in every cell."""
    n_t = n_x + n_y
    cos = target_attribute_cosines(emb, n_t)
    n_b = cos.shape[-1] - n_a
    rng = np.random.default_rng(seed)
    size = {name: max(low, min(n, round(fraction * n))) for name, n, low in
            (("x", n_x, 2), ("y", n_y, 2), ("a", n_a, 1), ("b", n_b, 1))}
    mx = _masks(rng, n_x, size["x"], n_subsets)
    my = _masks(rng, n_y, size["y"], n_subsets)
    ma = _masks(rng, n_a, size["a"], n_subsets) / size["a"]
    mb = _masks(rng, n_b, size["b"], n_subsets) / size["b"]
    s = np.matmul(cos[..., :n_a], ma.T) - np.matmul(cos[..., n_a:], mb.T)  # (..., n_t, r)
    return _masked_d(np.swapaxes(s, -1, -2), mx, my, ddof)


def null_effect_sizes(emb: Any, pool: Any, n_x: int, n_y: int, draws_a: np.ndarray,
                      draws_b: np.ndarray, *, ddof: int = 1) -> np.ndarray:
    """d with the attribute sets replaced by random words of a pool, shape (..., n_draws).

    ``emb (..., n_x + n_y, feature)`` are the target words; ``pool (..., n_pool, feature)`` the
    candidate attribute words; ``draws_a`` and ``draws_b`` (n_draws, n_a) and (n_draws, n_b)
    index the pool (drawn by the caller, e.g. matched on length or frequency band)."""
    n_t = n_x + n_y
    u_t = unit(np.asarray(emb, dtype=np.float64))[..., :n_t, :]
    u_p = unit(np.asarray(pool, dtype=np.float64))
    cos = np.matmul(u_t, np.swapaxes(u_p, -1, -2))  # (..., n_t, n_pool)
    n_pool = cos.shape[-1]
    wa = np.zeros((draws_a.shape[0], n_pool))
    wb = np.zeros((draws_b.shape[0], n_pool))
    np.put_along_axis(wa, draws_a, 1.0 / draws_a.shape[1], axis=1)
    np.put_along_axis(wb, draws_b, 1.0 / draws_b.shape[1], axis=1)
    s = np.matmul(cos, (wa - wb).T)  # (..., n_t, n_draws)
    return _d(np.swapaxes(s, -1, -2), n_x, ddof)


def split_half(emb: Any, n_x: int, n_y: int, n_a: int, *, n_splits: int = 200,
               seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Split-half reliability of the target words' association scores ``s(w, A, B)`` over the
    attribute words: A and B are each split at random into halves, every target word scored on
    each half, the two scores correlated (Pearson) over X ∪ Y, and the mean r over ``n_splits``
    splits stepped up by Spearman–Brown, ``2r / (1 + r)``.

    Returns
    -------
    r_half, reliability : numpy.ndarray, shape (...)
        The mean split-half r and its Spearman–Brown value (NaN with fewer than 2 words in A or
        B, or fewer than 3 target words).
    """
    n_t = n_x + n_y
    cos = target_attribute_cosines(emb, n_t)
    n_b = cos.shape[-1] - n_a
    if n_a < 2 or n_b < 2 or n_t < 3:
        nan = np.full(cos.shape[:-2], np.nan)
        return nan, nan
    rng = np.random.default_rng(seed)
    ha = _masks(rng, n_a, n_a // 2, n_splits)
    hb = _masks(rng, n_b, n_b // 2, n_splits)
    halves = []
    for wa, wb in ((ha, hb), (1 - ha, 1 - hb)):
        wa_, wb_ = wa / wa.sum(1, keepdims=True), wb / wb.sum(1, keepdims=True)
        halves.append(np.matmul(cos[..., :n_a], wa_.T) - np.matmul(cos[..., n_a:], wb_.T))  # (..., n_t, r)
    one, two = (h - h.mean(-2, keepdims=True) for h in halves)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (one * two).sum(-2) / np.sqrt((one**2).sum(-2) * (two**2).sum(-2))  # (..., r)
        r_half = r.mean(-1)
        return r_half, 2 * r_half / (1 + r_half)
