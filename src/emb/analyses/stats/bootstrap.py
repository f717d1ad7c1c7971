"""Bootstrap over stimuli: confidence intervals of effect sizes that resample the words themselves.

The word sets of a WEAT are samples of the concepts they stand for (another list of flowers would
do); a CI over stimuli says how much the effect size depends on which words were listed. The
cosines between every target and every attribute word are computed once; a bootstrap replicate
only re-weights them (multinomial counts per set), so no vector is touched again.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from emb.errors import AnalysisError

__all__ = ["bootstrap_counts", "weat_bootstrap"]

#: Replicates handled per block (bounds memory: batch × targets × block floats).
_BLOCK = 256
#: Mixed into the seed so that the bootstrap stream differs from the permutation stream.
_STREAM = 0xB007


def bootstrap_counts(
    sizes: Sequence[int], n_bootstrap: int, seed: int | None
) -> list[np.ndarray]:
    """Seeded resampling counts: for each set of size ``n``, a ``(n_bootstrap, n)`` integer
    matrix whose rows are multinomial(n, uniform) draws (how often each word is drawn, with
    replacement, in that replicate).

    The same seed gives the same counts whatever the batch (layers, poolings) they are used on.

    Examples
    --------
    >>> [c.shape for c in bootstrap_counts([3, 5], 4, seed=0)]
    [(4, 3), (4, 5)]
    >>> bool((bootstrap_counts([3], 10, seed=0)[0].sum(axis=1) == 3).all())
    True
    """
    rng = np.random.default_rng([_STREAM, 0 if seed is None else int(seed)])
    return [rng.multinomial(n, np.full(n, 1.0 / n), size=int(n_bootstrap)) for n in sizes]


def weat_bootstrap(
    cos: Any,
    n_x: int,
    n_a: int,
    *,
    ddof: int = 1,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap CI of the WEAT effect size over stimuli.

    Parameters
    ----------
    cos : array_like, shape (..., |X|+|Y|, |A|+|B|)
        Cosines of the targets (X first, then Y) with the attributes (A first, then B).
    n_x, n_a : int
        Sizes of X and A (the rest of each axis is Y and B).
    ddof : int, default 1
        Delta degrees of freedom of the effect size's standard deviation.
    n_bootstrap : int, default 1000
        Replicates.
    confidence : float, default 0.95
        Coverage of the interval.
    seed : int, default 0

    Returns
    -------
    (low, high) : numpy.ndarray
        The ``(1 − confidence)/2`` and ``(1 + confidence)/2`` percentiles of the replicates'
        effect sizes (linear interpolation; replicates whose X ∪ Y has no spread are left out),
        of the batch shape.

    Notes
    -----
    A replicate draws ``|X|`` words from X with replacement, and likewise within Y, A and B; with
    counts ``c`` it computes ``s(w) = Σ_a c_a cos(w,a)/|A| − Σ_b c_b cos(w,b)/|B|`` for every
    target and ``d* = (m_X − m_Y) / sd`` where ``m_X = Σ_x c_x s(x)/|X|`` and ``sd`` is the
    count-weighted standard deviation of the drawn X ∪ Y multiset (``ddof`` as the statistic).
    The percentile interval needs no normality of d* and is honest about short word lists
    (8 words per set give wide intervals). It describes the variability over *stimuli*, not over
    contexts or models.

    References
    ----------
    Efron, B. & Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*, ch. 13.
    Caliskan, Bryson & Narayanan (2017), *Science* 356:183–186 (the effect size).
    """
    cos = np.asarray(cos, dtype=np.float64)
    n_t, n_ab = cos.shape[-2], cos.shape[-1]
    n_y, n_b = n_t - n_x, n_ab - n_a
    if min(n_x, n_y, n_a, n_b) < 1:
        raise AnalysisError(f"every word set needs a word; got |X|={n_x}, |Y|={n_y}, |A|={n_a}, |B|={n_b}")
    if int(n_bootstrap) < 1:
        raise AnalysisError(f"n_bootstrap must be at least 1; got {n_bootstrap}")
    if not 0 < confidence < 1:
        raise AnalysisError(f"confidence must lie strictly between 0 and 1; got {confidence}")
    cx, cy, ca, cb = bootstrap_counts([n_x, n_y, n_a, n_b], n_bootstrap, seed)
    batch = cos.shape[:-2]
    flat = cos.reshape(-1, n_t, n_ab)
    d = np.empty((flat.shape[0], int(n_bootstrap)))
    denom = n_x + n_y - ddof
    for lo in range(0, int(n_bootstrap), _BLOCK):
        sl = slice(lo, lo + _BLOCK)
        wa = (ca[sl] / n_a).T  # (|A|, block)
        wb = (cb[sl] / n_b).T
        s = flat[..., :n_a] @ wa - flat[..., n_a:] @ wb  # (batch, n_t, block)
        sx, sy = s[:, :n_x, :], s[:, n_x:, :]
        wx, wy = cx[sl].T, cy[sl].T  # (|X|, block), (|Y|, block)
        mx = np.einsum("kib,ib->kb", sx, wx) / n_x
        my = np.einsum("kib,ib->kb", sy, wy) / n_y
        m = (n_x * mx + n_y * my) / (n_x + n_y)
        ss = np.einsum("kib,ib->kb", (sx - m[:, None, :]) ** 2, wx)
        ss += np.einsum("kib,ib->kb", (sy - m[:, None, :]) ** 2, wy)
        with np.errstate(invalid="ignore", divide="ignore"):
            d[:, sl] = (mx - my) / np.sqrt(ss / denom)
    d[~np.isfinite(d)] = np.nan
    q = 100.0 * np.array([(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    # a batch entry with no valid replicate is NaN, without numpy's 'All-NaN slice' warning
    with np.errstate(invalid="ignore"), warnings.catch_warnings(
        action="ignore", category=RuntimeWarning
    ):
        low, high = np.nanpercentile(d, q, axis=-1)
    return low.reshape(batch)[()], high.reshape(batch)[()]
