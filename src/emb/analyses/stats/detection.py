"""Detection by threshold: ROC over interval rules, the threshold choice, classification metrics.

IBD and EIBD (Guo & Caliskan 2021) flag a word ``w`` at threshold ``t`` when its score interval
``[low(w), high(w))`` holds ``t``: ``low(w) ≤ t < high(w)``. IBD flags ``w`` when its largest
association with another group exceeds ``t`` (``low = −∞``, ``high`` = that largest score); EIBD
also asks that no constituent comparison exceeds ``t`` (``low`` = the largest constituent score; or
the smallest under the authors' ``all`` rule). The operating point changes only where ``t`` crosses
some ``low`` or ``high``, so the ROC over every such value (and −∞ and 0) is exact.

Every kernel works on numpy arrays, vectorised over leading batch dimensions, the words on the last
axis. :func:`classification_metrics` is plain arithmetic and works on xarray objects as well.

References
----------
Guo, W. & Caliskan, A. (2021). Detecting Emergent Intersectional Biases: Contextualized Word
Embeddings Contain a Distribution of Human-like Biases. AIES '21, §4.2–4.3 and §5.1.
Fawcett, T. (2006). An introduction to ROC analysis. Pattern Recognition Letters 27, 861–874.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from emb.errors import AnalysisError

__all__ = [
    "choose_threshold",
    "classification_metrics",
    "interval_candidates",
    "interval_confusion",
    "interval_detect",
]


def interval_detect(low: Any, high: Any, threshold: Any) -> np.ndarray:
    """Which words are flagged at ``threshold``: ``low ≤ t < high``.

    Parameters
    ----------
    low, high : array_like, shape (..., n)
        Each word's interval (``low = −inf`` for a rule without a lower bound).
    threshold : array_like, broadcastable to shape (..., 1) or (..., k, 1)

    Returns
    -------
    numpy.ndarray of bool

    Examples
    --------
    >>> interval_detect([-np.inf, 0.5], [1.0, 0.8], 0.6).tolist()
    [True, True]
    >>> interval_detect([-np.inf, 0.5], [1.0, 0.8], 0.4).tolist()
    [True, False]
    """
    low = np.asarray(low, dtype=np.float64)
    high = np.asarray(high, dtype=np.float64)
    t = np.asarray(threshold, dtype=np.float64)
    return (low <= t) & (t < high)


def interval_candidates(low: Any, high: Any) -> np.ndarray:
    """Every threshold at which the flagged set can change, sorted: −∞, 0 and every ``low`` and
    ``high`` (repeats kept, so the length is fixed: ``2n + 2``).

    Parameters
    ----------
    low, high : array_like, shape (..., n)

    Returns
    -------
    numpy.ndarray, shape (..., 2n + 2)

    Notes
    -----
    For ``t`` in ``[c_k, c_{k+1})`` between consecutive candidates nothing changes, so each
    candidate stands for the interval up to the next one, and 0 starts the eligible range
    ``t ≥ 0``.

    Examples
    --------
    >>> interval_candidates([-np.inf, 0.5], [1.0, 0.8]).tolist()
    [-inf, -inf, 0.0, 0.5, 0.8, 1.0]
    """
    low = np.asarray(low, dtype=np.float64)
    high = np.asarray(high, dtype=np.float64)
    batch = np.broadcast_shapes(low.shape[:-1], high.shape[:-1])
    fixed = np.broadcast_to(np.array([-np.inf, 0.0]), (*batch, 2))
    out = np.concatenate(
        [fixed, np.broadcast_to(low, (*batch, low.shape[-1])),
         np.broadcast_to(high, (*batch, high.shape[-1]))], axis=-1
    )
    return np.sort(out, axis=-1)


def interval_confusion(
    low: Any, high: Any, label: Any, thresholds: Any
) -> tuple[np.ndarray, np.ndarray]:
    """True and false positives at each threshold.

    Parameters
    ----------
    low, high : array_like, shape (..., n)
    label : array_like of bool, shape (..., n)
        The true class of each word.
    thresholds : array_like, shape (..., k)

    Returns
    -------
    (tp, fp) : numpy.ndarray of int64, shape (..., k)
    """
    flagged = interval_detect(
        np.expand_dims(low, -2), np.expand_dims(high, -2), np.expand_dims(thresholds, -1)
    )  # (..., k, n)
    label = np.expand_dims(np.asarray(label, dtype=bool), -2)
    return (flagged & label).sum(-1).astype(np.int64), (flagged & ~label).sum(-1).astype(np.int64)


def choose_threshold(
    thresholds: Any, tp: Any, fp: Any, n_positive: Any, n_negative: Any, *, minimum: float = 0.0
) -> np.ndarray:
    """Index of the threshold with the largest ``TPR − FPR`` among ``t ≥ minimum``.

    Ties go to the most true positives (Guo & Caliskan 2021, §4.2), then to the smallest
    threshold (the same operating point: it flags the same words).

    Parameters
    ----------
    thresholds, tp, fp : array_like, shape (..., k)
    n_positive, n_negative : array_like, shape (...)
    minimum : float, default 0.0
        The smallest eligible threshold (the paper's thresholds are positive effect sizes).

    Returns
    -------
    numpy.ndarray of int64, shape (...)
        −1 where no threshold is eligible, or where there are no positives or no negatives
        (``TPR − FPR`` undefined).

    Examples
    --------
    >>> choose_threshold([0.0, 0.5, 1.0], [3, 2, 1], [3, 1, 0], 3, 4).item()
    1
    """
    t = np.asarray(thresholds, dtype=np.float64)
    tp = np.asarray(tp, dtype=np.float64)
    fp = np.asarray(fp, dtype=np.float64)
    n_pos = np.expand_dims(np.asarray(n_positive, dtype=np.float64), -1)
    n_neg = np.expand_dims(np.asarray(n_negative, dtype=np.float64), -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        youden = tp / n_pos - fp / n_neg
    eligible = (t >= minimum) & np.isfinite(youden)
    # lexicographic: largest J, then largest TP, then smallest t (stable argmax picks the first)
    j = np.where(eligible, youden, -np.inf)
    best_j = j.max(axis=-1, keepdims=True)
    top = eligible & (np.isclose(j, best_j, rtol=0, atol=1e-12))
    tp_top = np.where(top, tp, -1.0)
    top &= tp_top == tp_top.max(axis=-1, keepdims=True)
    t_top = np.where(top, t, np.inf)
    index = np.argmin(t_top, axis=-1)
    return np.where(eligible.any(axis=-1), index, -1).astype(np.int64)


def classification_metrics(tp: Any, fp: Any, tn: Any, fn: Any) -> dict[str, Any]:
    """Rates of a binary detection from its confusion counts.

    Parameters
    ----------
    tp, fp, tn, fn : array_like or xarray.DataArray
        Counts (broadcast together).

    Returns
    -------
    dict
        ``tpr`` (= ``recall``) = TP / P; ``fpr`` = FP / N; ``accuracy`` = (TP + TN) / (P + N);
        ``balanced_accuracy`` = (TPR + TNR) / 2; ``precision`` = TP / (TP + FP) (NaN when
        nothing is flagged); ``f1`` = 2 TP / (2 TP + FP + FN); ``chance_rate`` = P / (P + N),
        the share of positives (what the paper calls "random correct identification rate");
        ``majority_baseline`` = N / (P + N), the accuracy of never flagging a word.

    Raises
    ------
    AnalysisError
        Negative counts (checked for numpy inputs; xarray inputs stay lazy and unchecked).

    Examples
    --------
    The paper's AF IBD operating point, (FPR, TPR) = (9/84, 5/14):

    >>> m = classification_metrics(5, 9, 75, 9)
    >>> round(float(m["accuracy"]), 3), round(float(m["majority_baseline"]), 3)
    (0.816, 0.857)
    """
    counts = [np.asarray(c) if not hasattr(c, "dims") else c for c in (tp, fp, tn, fn)]
    if any(isinstance(c, np.ndarray) and bool((c < 0).any()) for c in counts):
        raise AnalysisError(f"confusion counts must be non-negative; got {tp, fp, tn, fn}")
    tp, fp, tn, fn = (c * 1.0 for c in counts)
    pos, neg = tp + fn, fp + tn
    total = pos + neg
    tpr = _ratio(tp, pos)
    return {
        "tpr": tpr,
        "fpr": _ratio(fp, neg),
        "accuracy": _ratio(tp + tn, total),
        "balanced_accuracy": (tpr + _ratio(tn, neg)) / 2,
        "precision": _ratio(tp, tp + fp),
        "recall": tpr,
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "chance_rate": _ratio(pos, total),
        "majority_baseline": _ratio(neg, total),
    }


def _ratio(a: Any, b: Any) -> Any:
    """``a / b``, NaN where ``b`` is 0, without a warning (also when a lazy xarray computes)."""
    if hasattr(b, "where"):
        return a / b.where(b > 0)
    b = np.asarray(b, dtype=np.float64)
    return np.asarray(a, dtype=np.float64) / np.where(b > 0, b, np.nan)
