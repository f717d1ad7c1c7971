"""Association statistics and effect sizes: cosines, s(w, A, B), SC-WEAT and WEAT effect sizes.

Every numpy kernel works on float64 internally and is vectorised over leading batch dimensions
(layers, poolings, words …): the statistic is taken over the last axis and every other axis is carried
through. :func:`normalize` and :func:`cosine` wrap the kernels for xarray through
:func:`xarray.apply_ufunc` with ``dask="parallelized"``, so they stay lazy.

Notation follows Caliskan, Bryson & Narayanan (2017): target sets ``X, Y``, attribute sets ``A, B``,
``s(w, A, B) = mean_a cos(w, a) − mean_b cos(w, b)``.

References
----------
Caliskan, A., Bryson, J. J. & Narayanan, A. (2017). Semantics derived automatically from language
corpora contain human-like biases. *Science* 356(6334), 183–186.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from emb.errors import AnalysisError

__all__ = ["association", "cosine", "cosine_matrix", "normalize", "sc_weat_effect_size", "unit", "weat_effect_size", "weat_statistic"]

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


