"""Principal-component nullification ("all-but-the-top", Mu & Viswanath 2018).

Post-processing of embeddings: subtract the common mean vector and remove each vector's projection
on the top ``k`` principal components of the set, which in the top layers of causal language models
are dominated by a few high-magnitude neurons that carry little word-level semantics (Wolfe &
Caliskan 2022, VAST).

The functions here are plain NumPy (float64) and work on one matrix at a time; :mod:`emb.analyses.vast`
and :mod:`emb.analyses.similarity` map them lazily over layers, poolings and settings.

For a sweep over ``k = 0..K`` nothing is recomputed per ``k``: with centred vectors ``x̄ = x − μ``
and the orthonormal top components ``u_1..u_K``,

    ⟨x̃_k, ỹ_k⟩ = ⟨x̄, ȳ⟩ − Σ_{j≤k} ⟨x̄, u_j⟩⟨ȳ, u_j⟩,    ‖x̃_k‖² = ‖x̄‖² − Σ_{j≤k} ⟨x̄, u_j⟩²,

so all cosines for every ``k`` follow from one Gram matrix and the projections on the top ``K``
components (:func:`nullified_cosines`, :func:`nullified_pair_cosines`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import scipy.linalg

from emb.errors import AnalysisError

__all__ = [
    "MAX_K",
    "Components",
    "all_but_the_top",
    "iter_sweep_cosines",
    "nullified_cosines",
    "nullified_pair_cosines",
    "project",
    "sweep_cosines",
    "top_components",
]


#: Most principal components a sweep nullifies (``--k-max``): all-but-the-top removes a few
#: (Mu & Viswanath 2018: about d/100; VAST sweeps 0..12); the data bound it further (k is at
#: most the number of vectors and their dimension, checked when the sweep runs).
MAX_K = 1024


class Components(NamedTuple):
    """The mean and the top principal components of a set of row vectors.

    Attributes
    ----------
    mean : ndarray, shape (d,)
        The mean row ``μ`` (zeros when the mean was not subtracted).
    components : ndarray, shape (k, d)
        Orthonormal principal directions ``u_1..u_k``, by decreasing variance.
    variance : ndarray, shape (k,)
        The variance along each direction (sum of squared centred projections / (n − 1)).
    total_variance : float
        The total variance of the centred rows (trace of the covariance).
    """

    mean: np.ndarray
    components: np.ndarray
    variance: np.ndarray
    total_variance: float


def _as_matrix(X: np.ndarray, name: str) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise AnalysisError(f"{name} must be a 2-D matrix (rows = vectors), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise AnalysisError(
            f"{name} holds {int(np.sum(~np.isfinite(X)))} non-finite values; "
            "check the store with 'emb info --deep'"
        )
    return X


def top_components(F: np.ndarray, k: int, *, subtract_mean: bool = True) -> Components:
    """The mean and the top ``k`` principal components of the rows of ``F``.

    Parameters
    ----------
    F : array, shape (n, d)
        The vectors the components are estimated from.
    k : int
        How many components, ``0 ≤ k ≤ min(n, d)``.
    subtract_mean : bool
        Centre the rows first (PCA); ``False`` gives the top right singular vectors of ``F``.

    Returns
    -------
    Components

    Notes
    -----
    Computed in float64 from the eigen-decomposition of ``F̄ᵀF̄`` (``d × d``) when ``n > d``,
    otherwise of ``F̄F̄ᵀ``; the spanned subspace equals that of scikit-learn's ``PCA`` (the signs of
    individual components are arbitrary and irrelevant to nullification).
    """
    F = _as_matrix(F, "F")
    n, d = F.shape
    if not 0 <= k <= min(n, d):
        raise AnalysisError(f"k must lie in 0..{min(n, d)} for {n} vectors of dimension {d}; got {k}")
    mean = F.mean(axis=0) if subtract_mean else np.zeros(d)
    C = F - mean
    total = float(np.einsum("ij,ij->", C, C)) / max(n - 1, 1)
    if k == 0:
        return Components(mean, np.zeros((0, d)), np.zeros(0), total)
    if n > d:
        # CᵀC by a symmetric rank-k update (half the flops of a general product); upper triangle
        gram = scipy.linalg.blas.dsyrk(1.0, np.asfortranarray(C.T), lower=0)
        w, V = scipy.linalg.eigh(gram, lower=False, subset_by_index=(d - k, d - 1))
        order = np.argsort(w)[::-1]
        comps = V[:, order].T
    else:
        w, U = scipy.linalg.eigh(C @ C.T, subset_by_index=(n - k, n - 1))
        order = np.argsort(w)[::-1]
        w, U = w[order], U[:, order]
        comps = (C.T @ U) / np.sqrt(np.maximum(w, np.finfo(float).tiny))
        comps = comps.T
    comps /= np.linalg.norm(comps, axis=1, keepdims=True)
    proj = C @ comps.T
    variance = np.einsum("ij,ij->j", proj, proj) / max(n - 1, 1)
    return Components(mean, comps, variance, total)


def all_but_the_top(
    X: np.ndarray,
    k: int,
    *,
    fit: np.ndarray | None = None,
    subtract_mean: bool = True,
) -> np.ndarray:
    """Remove the common mean and the top ``k`` principal components from every row of ``X``.

    Parameters
    ----------
    X : array, shape (n, d)
        Row vectors to post-process.
    k : int
        Number of top principal components to nullify (``0`` only subtracts the mean).
    fit : array, shape (m, d), optional
        The rows the mean and components are estimated from; default ``X`` itself. The VAST
        authors' code estimated them from the lexicon vectors with the polar words appended a
        second time (``reference`` mode of :func:`emb.analyses.vast.vast`).
    subtract_mean : bool
        Subtract the mean (Mu & Viswanath do; default ``True``).

    Returns
    -------
    ndarray, shape (n, d), float64
        ``x̃ = (x − μ) − Σ_{j=1..k} ⟨x − μ, u_j⟩ u_j`` for each row ``x``; the rows are not
        re-normalised.

    Notes
    -----
    ``μ`` is the mean of the ``fit`` rows and ``u_1..u_k`` their top principal directions
    (eigenvectors of the covariance with the largest eigenvalues). When ``fit`` is ``X``, the
    variance left in the result is exactly the sum of the remaining eigenvalues: the top ``k``
    eigenvalues' worth of variance is removed.

    References
    ----------
    Mu, J. & Viswanath, P. (2018). All-but-the-Top: Simple and Effective Postprocessing for Word
    Representations. ICLR.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 5)) * [10, 3, 1, 1, 1]
    >>> Y = all_but_the_top(X, 1)
    >>> bool(np.allclose(Y.mean(axis=0), 0))
    True
    """
    X = _as_matrix(X, "X")
    F = X if fit is None else _as_matrix(fit, "fit")
    if F.shape[1] != X.shape[1]:
        raise AnalysisError(f"fit has dimension {F.shape[1]} but X has {X.shape[1]}")
    comps = top_components(F, k, subtract_mean=subtract_mean)
    C = X - comps.mean
    U = comps.components
    return C - (C @ U.T) @ U


def _sweep_terms(
    X: np.ndarray, fit: np.ndarray | None, k_max: int, subtract_mean: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Centred rows and their projections on the top ``k_max`` components of ``fit``."""
    F = X if fit is None else _as_matrix(fit, "fit")
    comps = top_components(F, k_max, subtract_mean=subtract_mean)
    C = X - comps.mean
    return C, C @ comps.components.T


def nullified_cosines(
    T: np.ndarray,
    P: np.ndarray,
    k_max: int,
    *,
    fit: np.ndarray | None = None,
    subtract_mean: bool = True,
) -> np.ndarray:
    """Cosines between rows of ``T`` and of ``P`` after nullifying ``k = 0..k_max`` components.

    Parameters
    ----------
    T : array, shape (n, d)
        Target vectors.
    P : array, shape (m, d)
        Attribute (polar) vectors.
    k_max : int
        Largest number of components removed.
    fit : array, optional
        Rows the mean and components are estimated from; default ``vstack([T, P])``.
    subtract_mean : bool
        Subtract the mean first (default ``True``).

    Returns
    -------
    ndarray, shape (k_max + 1, n, m)
        ``cos(x̃_k, ỹ_k)`` with ``x̃_k = all_but_the_top(x, k)``; equal to computing
        :func:`all_but_the_top` for each ``k`` and then the cosines, without re-doing the PCA.
        A vector with no norm left gives NaN.
    """
    T = _as_matrix(T, "T")
    P = _as_matrix(P, "P")
    X = np.vstack([T, P])
    C, A = _sweep_terms(X, X if fit is None else fit, k_max, subtract_mean)
    n = T.shape[0]
    return sweep_cosines(C[:n], A[:n], C[n:], A[n:])


def sweep_cosines(Ct: np.ndarray, At: np.ndarray, Cp: np.ndarray, Ap: np.ndarray) -> np.ndarray:
    """Cosines after nullifying ``k = 0..K`` components, from centred rows and their projections.

    Parameters
    ----------
    Ct : array, shape (n, d)
        Centred target rows ``x − μ``.
    At : array, shape (n, K)
        Their projections on the top ``K`` components, ``(x − μ)·u_j``.
    Cp, Ap : arrays, shapes (m, d) and (m, K)
        The same for the attribute rows.

    Returns
    -------
    ndarray, shape (K + 1, n, m)
        ``⟨x̃_k, ỹ_k⟩ / (‖x̃_k‖ ‖ỹ_k‖)`` with ``⟨x̃_k, ỹ_k⟩ = ⟨x̄, ȳ⟩ − Σ_{j≤k} a_j b_j`` and
        ``‖x̃_k‖² = ‖x̄‖² − Σ_{j≤k} a_j²``; NaN where a vector has no norm left.
    """
    n, m, k_max = Ct.shape[0], Cp.shape[0], At.shape[1]
    out = np.empty((k_max + 1, n, m))
    out[0] = Ct @ Cp.T
    for k in range(1, k_max + 1):  # remove one rank-one term per component
        out[k] = out[k - 1] - np.outer(At[:, k - 1], Ap[:, k - 1])
    nt = np.einsum("ij,ij->i", Ct, Ct)[None, :] - np.vstack(
        [np.zeros((1, n)), np.cumsum(At**2, axis=1).T]
    )
    np_ = np.einsum("ij,ij->i", Cp, Cp)[None, :] - np.vstack(
        [np.zeros((1, m)), np.cumsum(Ap**2, axis=1).T]
    )
    norms = np.sqrt(np.clip(nt, 0, None))[:, :, None] * np.sqrt(np.clip(np_, 0, None))[:, None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = out / norms
    cos[~(norms > 0)] = np.nan
    return cos


def iter_sweep_cosines(
    Ct: np.ndarray, At: np.ndarray, Cp: np.ndarray, Ap: np.ndarray
) -> Iterator[np.ndarray]:
    """:func:`sweep_cosines` one ``k`` at a time (``(n, m)`` arrays for k = 0..K), so that only
    one cosine matrix is held in memory."""
    k_max = At.shape[1]
    dots = Ct @ Cp.T
    nt = np.einsum("ij,ij->i", Ct, Ct)
    np_ = np.einsum("ij,ij->i", Cp, Cp)
    for k in range(k_max + 1):
        if k:
            dots -= np.outer(At[:, k - 1], Ap[:, k - 1])
            nt = nt - At[:, k - 1] ** 2
            np_ = np_ - Ap[:, k - 1] ** 2
        norms = np.sqrt(np.clip(nt, 0, None))[:, None] * np.sqrt(np.clip(np_, 0, None))[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = dots / norms
        cos[~(norms > 0)] = np.nan
        yield cos


def project(X: np.ndarray, comps: Components) -> tuple[np.ndarray, np.ndarray]:
    """Centred rows ``X − μ`` and their projections on ``comps.components`` (for :func:`sweep_cosines`)."""
    C = np.asarray(X, dtype=np.float64) - comps.mean
    return C, C @ comps.components.T


def nullified_pair_cosines(
    X: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    k_max: int,
    *,
    fit: np.ndarray | None = None,
    subtract_mean: bool = True,
) -> np.ndarray:
    """Cosines of row pairs ``(X[left[i]], X[right[i]])`` after nullifying ``k = 0..k_max`` PCs.

    Parameters
    ----------
    X : array, shape (n, d)
        The vectors (one per distinct word).
    left, right : int arrays, shape (p,)
        Row indices of each pair's two words.
    k_max : int
        Largest number of components removed.
    fit : array, optional
        Rows the mean and components are estimated from; default ``X``.
    subtract_mean : bool
        Subtract the mean first (default ``True``).

    Returns
    -------
    ndarray, shape (k_max + 1, p)
        Row ``k`` holds the pair cosines after :func:`all_but_the_top` with ``k`` components.
    """
    X = _as_matrix(X, "X")
    left = np.asarray(left, dtype=np.intp)
    right = np.asarray(right, dtype=np.intp)
    C, A = _sweep_terms(X, fit, k_max, subtract_mean)
    dot0 = np.einsum("ij,ij->i", C[left], C[right])
    n0 = np.einsum("ij,ij->i", C, C)
    contrib = np.concatenate([np.zeros((len(left), 1)), np.cumsum(A[left] * A[right], axis=1)], axis=1)
    norm = np.concatenate([np.zeros((X.shape[0], 1)), np.cumsum(A**2, axis=1)], axis=1)
    dots = dot0[:, None] - contrib  # (p, k+1)
    nk = np.clip(n0[:, None] - norm, 0, None)
    denom = np.sqrt(nk[left] * nk[right])
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(denom > 0, dots / np.where(denom > 0, denom, 1.0), np.nan)
    return cos.T
