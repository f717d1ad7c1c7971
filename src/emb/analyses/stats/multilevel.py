"""The multilevel embedding association test (ML-EAT; Wolfe, Hiniker & Howe, AIES 2024).

A WEAT's d (level 1) summarises four groups of cosines; ML-EAT reports them at three levels:

- level 1: WEAT's d of X against Y, with its permutation p (re-splits of the target words);
- level 2: one single-target EAT per target set (the SC-EAT generalised to a set): for X, each
  attribute word's mean cosine with the words of X, A's against B's,
  ``d_X = (mean_{a∈A} m_X(a) − mean_{b∈B} m_X(b)) / std_{w∈A∪B} m_X(w)`` with
  ``m_X(w) = mean_{x∈X} cos(x, w)``, and its permutation p (re-splits of the attribute words);
  the same for Y;
- level 3: the mean and standard deviation of each target–attribute block of cosines (X–A, X–B,
  Y–A, Y–B).

The two level-2 outcomes (X with A, with neither, or with B at the significance level; Y alike)
give nine patterns (:data:`PATTERNS`; emb's reading of the paper's nine EAT patterns as the 3 × 3
combinations of the level-2 outcomes) that say what a level-1 d is made of: the same d arises when X is drawn to A and Y
to B, and when both are drawn to A, X more than Y.

References
----------
Wolfe, R., Hiniker, A. & Howe, B. (2024). ML-EAT: A multilevel embedding association test for
interpretable and transparent social science. AAAI/ACM Conference on AI, Ethics, and Society
(AIES 2024); arXiv:2408.01966. The levels follow the authors' code (``mleat.py``); their p-values
fit a normal distribution to random splits, emb's are exact or Monte-Carlo permutation p-values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from emb.analyses.stats.association import (
    association,
    sc_weat_effect_size,
    target_attribute_cosines,
    weat_effect_size,
)
from emb.analyses.stats.permutation import permutation_test

__all__ = ["BLOCKS", "PATTERNS", "multilevel", "pattern_code"]

#: The level-3 blocks, in order.
BLOCKS = ("X-A", "X-B", "Y-A", "Y-B")

#: Pattern code → name: the level-2 outcome of X, then of Y ("A": associated with A at the
#: significance level, "B": with B, "-": with neither). Code = 3 · outcome(X) + outcome(Y) + 1,
#: outcome A = 0, - = 1, B = 2.
PATTERNS = {
    1: "X→A, Y→A (both with A)",
    2: "X→A, Y→none",
    3: "X→A, Y→B (opposed, the WEAT reading)",
    4: "X→none, Y→A",
    5: "X→none, Y→none (neither target associated)",
    6: "X→none, Y→B",
    7: "X→B, Y→A (opposed, reversed)",
    8: "X→B, Y→none",
    9: "X→B, Y→B (both with B)",
}


def _level2(cos_a: np.ndarray, cos_b: np.ndarray, *, ddof: int, **test: Any) -> tuple[np.ndarray, ...]:
    """Single-target EAT of one target set: (d, p) from its cosines with A (..., n_t, n_a) and B:
    SC-WEAT's effect size of the attribute words' mean cosines with the set."""
    m_a, m_b = cos_a.mean(-2), cos_b.mean(-2)  # each attribute word's mean cosine with the set
    d = sc_weat_effect_size(m_a, m_b, ddof=ddof)
    res = permutation_test(np.concatenate([m_a, m_b], axis=-1), m_a.shape[-1], **test)
    return d, np.asarray(res.pvalue, dtype=np.float64)


def pattern_code(d_x: Any, p_x: Any, d_y: Any, p_y: Any, alpha: float) -> np.ndarray:
    """The pattern code (1–9, 0 where a value is NaN) of level-2 outcomes."""
    def outcome(d: Any, p: Any) -> np.ndarray:
        d, p = np.asarray(d, dtype=float), np.asarray(p, dtype=float)
        return np.where(p < alpha, np.where(d > 0, 0, 2), 1)

    ok = np.isfinite(np.asarray(d_x, float) + np.asarray(p_x, float) + np.asarray(d_y, float)
                     + np.asarray(p_y, float))
    return np.where(ok, 3 * outcome(d_x, p_x) + outcome(d_y, p_y) + 1, 0).astype(np.int64)


def multilevel(
    emb: Any,
    n_x: int,
    n_y: int,
    n_a: int,
    *,
    ddof: int = 1,
    alternative: str = "two-sided",
    n_permutations: int = 10_000,
    exact_limit: int = 1_000_000,
    seed: int = 0,
    method: str = "exact-or-monte-carlo",
    alpha: float = 0.05,
) -> tuple[np.ndarray, ...]:
    """ML-EAT of one test, items X, Y, A, B in order on the axis before the features.

    Returns
    -------
    tuple of numpy.ndarray
        ``d1, p1`` of shape (...); ``d2, p2`` of shape (..., 2) (X, Y); ``mean3, std3`` of shape
        (..., 4) (:data:`BLOCKS`); ``pattern`` of shape (...) (:data:`PATTERNS`, 0 = NaN).
    """
    cos = target_attribute_cosines(emb, n_x + n_y)  # (..., n_t, n_a + n_b)
    blocks = [cos[..., :n_x, :n_a], cos[..., :n_x, n_a:], cos[..., n_x:, :n_a], cos[..., n_x:, n_a:]]
    flat = [b.reshape(b.shape[:-2] + (-1,)) for b in blocks]
    mean3 = np.stack([b.mean(-1) for b in flat], axis=-1)
    std3 = np.stack([b.std(-1, ddof=1) if b.shape[-1] > 1 else np.full(b.shape[:-1], np.nan)
                     for b in flat], axis=-1)
    test = {"alternative": alternative, "n_permutations": n_permutations,
            "exact_limit": exact_limit, "seed": seed, "method": method}
    d_x, p_x = _level2(blocks[0], blocks[1], ddof=ddof, **test)
    d_y, p_y = _level2(blocks[2], blocks[3], ddof=ddof, **test)
    s = association(cos[..., :n_a], cos[..., n_a:])  # s(w, A, B) per target word
    d1 = weat_effect_size(s[..., :n_x], s[..., n_x:], ddof=ddof)
    p1 = np.asarray(permutation_test(s, n_x, **test).pvalue, dtype=np.float64)
    return (np.asarray(d1, np.float64), p1, np.stack([d_x, d_y], -1), np.stack([p_x, p_y], -1),
            mean3, std3, pattern_code(d_x, p_x, d_y, p_y, alpha))
