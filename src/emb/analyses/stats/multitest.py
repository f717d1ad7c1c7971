"""Multiple testing: Holm and Benjamini–Hochberg adjusted p-values, for arrays and labelled data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import xarray as xr

from emb.errors import AnalysisError

__all__ = ["CorrectionMethod", "adjust", "adjust_pvalues", "benjamini_hochberg", "holm"]

CorrectionMethod = Literal["holm", "bh", "none"]

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


