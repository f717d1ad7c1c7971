"""Association statistics and effect sizes: cosines, s(w, A, B), SC-WEAT and WEAT effect sizes.

:func:`sc_weat_effect_sizes` is SC-WEAT over labelled vectors, lazily (the hot path of the
``sc-weat``, ``valnorm`` and ``valence-subspace`` analyses): it normalises the attribute vectors
once, then streams the store's item chunks: per chunk and per (layer, pooling) one matrix product
of the word vectors with the attribute unit vectors, reduced at once to one effect size per item.
:func:`rating_residuals` fits the least-squares line of such effect sizes on human ratings.

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

from emb.analyses.stats._blas import single_threaded_blas
from emb.errors import AnalysisError
from emb.schemas.datamodel import FEATURE, ITEM

__all__ = [
    "MIN_ATTRIBUTE_WORDS",
    "association",
    "cosine",
    "cosine_matrix",
    "normalize",
    "rating_residuals",
    "sc_weat_effect_size",
    "sc_weat_effect_sizes",
    "target_attribute_cosines",
    "unit",
    "weat_effect_size",
    "weat_statistic",
]

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


def target_attribute_cosines(emb: Any, n_targets: int) -> np.ndarray:
    """The cosines of a test's target vectors with its attribute vectors, in float64.

    Parameters
    ----------
    emb : array_like, shape (..., n, d)
        One test's vectors, the ``n_targets`` target words first (X then Y), then the attribute
        words (A then B); leading axes are a batch (layers, poolings, settings).
    n_targets : int

    Returns
    -------
    numpy.ndarray, shape (..., n_targets, n − n_targets)
        NaN in a row or column of a zero vector (never an error: a kernel's cell).

    Examples
    --------
    >>> target_attribute_cosines([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]], 1).round(4)
    array([[0.7071, 0.    ]])
    """
    u = unit(np.asarray(emb, dtype=np.float64))
    return np.matmul(u[..., :n_targets, :], np.swapaxes(u[..., n_targets:, :], -1, -2))


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


# --------------------------------------------------------------------------------------------
# SC-WEAT of labelled vectors, lazily (the sc-weat, valnorm and valence-subspace analyses)
# --------------------------------------------------------------------------------------------

#: Largest block (bytes, as stored) handed to one kernel call after merging layers/poolings.
_MAX_BLOCK_BYTES = 128 * 2**20
#: The dimension of the attribute vectors (A then B) inside the kernel.
_POLAR = "polar"


def _sc_weat_kernel(w: np.ndarray, polar: np.ndarray, *, n_a: int, ddof: int) -> np.ndarray:
    """w (I, *B, F) raw vectors; polar (*B', K, F) unit vectors, A first -> (I, *B) effect sizes."""
    n_items, batch, n_feat = w.shape[0], w.shape[1:-1], w.shape[-1]
    k = polar.shape[-2]
    polar = np.broadcast_to(polar, (*batch, k, n_feat)).reshape(-1, k, n_feat)
    w3 = w.reshape(n_items, -1, n_feat)
    out = np.empty((n_items, w3.shape[1]), dtype=np.float64)
    with single_threaded_blas():
        _sc_weat_loop(w3, polar, out, n_a=n_a, ddof=ddof)
    return out.reshape(n_items, *batch)


def _sc_weat_loop(
    w3: np.ndarray, polar: np.ndarray, out: np.ndarray, *, n_a: int, ddof: int
) -> None:
    for j in range(w3.shape[1]):  # one (I × F) @ (F × K) product per (layer, pooling)
        x = np.ascontiguousarray(w3[:, j, :], dtype=np.float64)
        norm = np.sqrt(np.einsum("if,if->i", x, x))
        if not np.all(norm > 0) or not np.all(np.isfinite(norm)):
            raise AnalysisError(
                f"{int(np.count_nonzero(~(norm > 0) | ~np.isfinite(norm)))} embedding vectors have "
                "zero or non-finite length; SC-WEAT is undefined for them: check the store "
                "('emb validate --deep')"
            )
        cos = (x @ polar[j].T) / norm[:, None]
        out[:, j] = sc_weat_effect_size(cos[:, :n_a], cos[:, n_a:], ddof=ddof)


#: Fewest words an attribute set (A, B) of an SC-WEAT may have (see :func:`sc_weat_effect_sizes`).
MIN_ATTRIBUTE_WORDS = 2


def sc_weat_effect_sizes(
    target: xr.DataArray,
    attribute_a: xr.DataArray,
    attribute_b: xr.DataArray,
    *,
    ddof: int = 1,
    dim: str = ITEM,
    feature_dim: str = FEATURE,
) -> xr.DataArray:
    """SC-WEAT effect size of every target vector against two attribute sets, lazily.

    Parameters
    ----------
    target : xarray.DataArray
        Target vectors, dims ``(dim, ..., feature_dim)``, e.g. ``(item, layer, pooling,
        feature)``; any float dtype (computed in float64), dask chunks along ``dim`` are kept.
    attribute_a, attribute_b : xarray.DataArray
        Attribute vectors with their own ``dim`` (e.g. the 25 pleasant / unpleasant items); any
        other dims (``layer``, ``pooling``) are matched by name with ``target``'s.
    ddof : int, default 1
        Delta degrees of freedom of the standard deviation.
    dim, feature_dim : str
        The item and feature dimension names.

    Returns
    -------
    xarray.DataArray
        Effect sizes (float64) with ``target``'s dims minus ``feature_dim``; dask-backed when
        ``target`` is.

    Notes
    -----
    ``d(w) = (mean_{a∈A} cos(w,a) − mean_{b∈B} cos(w,b)) / std_{x∈A∪B} cos(w,x)``.
    The attribute vectors are normalised once; per chunk of targets and per (layer, pooling)
    the cosines are one matrix product with the ``|A|+|B|`` unit vectors.

    References
    ----------
    Caliskan, Bryson & Narayanan (2017) (WEFAT); Toney-Wails & Caliskan (2021) (ValNorm);
    Wolfe & Caliskan (2022), VAST, Eq. 1.
    """
    n_a = attribute_a.sizes[dim]
    if min(n_a, attribute_b.sizes[dim]) < MIN_ATTRIBUTE_WORDS:
        raise AnalysisError(
            f"SC-WEAT needs at least {MIN_ATTRIBUTE_WORDS} attribute words in each set A and B; "
            f"got {n_a} and {attribute_b.sizes[dim]}: d divides the difference of a word's mean "
            "cosines with A and B by their standard deviation over A ∪ B, which one word per set "
            "fixes (|d| = sqrt(2) for every word, whatever the vectors). Add attribute words"
        )
    if n_a + attribute_b.sizes[dim] - ddof <= 0:
        raise AnalysisError(
            f"{n_a + attribute_b.sizes[dim]} attribute vectors cannot give a standard deviation "
            f"with ddof={ddof}"
        )
    polar = xr.concat(
        [
            attribute_a.reset_coords(drop=True).drop_vars(dim, errors="ignore"),
            attribute_b.reset_coords(drop=True).drop_vars(dim, errors="ignore"),
        ],
        dim=dim,
    ).rename({dim: _POLAR})
    polar = normalize(polar, dim=feature_dim)
    other = [d for d in target.dims if d not in (dim, feature_dim)]
    target = target.transpose(dim, *other, feature_dim)
    polar = polar.transpose(*[d for d in other if d in polar.dims], ..., _POLAR, feature_dim)
    if polar.chunks is not None:
        polar = polar.chunk({_POLAR: -1, feature_dim: -1})
    if target.chunks is not None:
        # one kernel call per item block covering every layer and pooling (fewer, larger tasks)
        merged = {feature_dim: -1}
        item_chunk = max(target.chunksizes[dim]) if target.sizes[dim] else 1
        block = item_chunk * target.dtype.itemsize * target.sizes[feature_dim]
        for d in other:
            if block * target.sizes[d] <= _MAX_BLOCK_BYTES:
                merged[d] = -1
                block *= target.sizes[d]
        target = target.chunk(merged)
        if polar.chunks is not None:
            polar = polar.chunk({d: -1 for d in merged if d in polar.dims})
    es = xr.apply_ufunc(
        _sc_weat_kernel,
        target,
        polar,
        input_core_dims=[[feature_dim], [_POLAR, feature_dim]],
        output_core_dims=[[]],
        kwargs={"n_a": int(n_a), "ddof": int(ddof)},
        dask="parallelized",
        output_dtypes=[np.float64],
    )
    es.attrs["long_name"] = "SC-WEAT effect size"
    return es


def rating_residuals(effect: xr.DataArray, rating: xr.DataArray, *, dim: str = "word") -> xr.DataArray:
    """Residuals of the least-squares line of ``effect`` on ``rating`` along ``dim``, lazily.

    For every other coordinate (setting, layer, pooling …) the line ``effect ≈ a + b·rating`` is
    fitted over the words where both are finite; the residual is ``effect − a − b·rating`` (NaN
    where either is missing).

    Notes
    -----
    ``b = Σ (x − x̄)(y − ȳ) / Σ (x − x̄)²``, ``a = ȳ − b x̄`` (ordinary least squares).
    """
    ok = effect.notnull() & rating.notnull()
    x = rating.where(ok)
    y = effect.where(ok)
    xm = x.mean(dim)
    ym = y.mean(dim)
    slope = ((x - xm) * (y - ym)).sum(dim) / ((x - xm) ** 2).sum(dim)
    out = y - ym - slope * (x - xm)
    out.attrs["long_name"] = "residual of SC-WEAT from its least-squares line on the rating"
    return out
