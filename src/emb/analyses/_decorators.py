"""The two decorators every family's main function wears: it sees its Datasets without the
store's variable descriptions (:func:`own_descriptions`), and it is named by its family's
package (:func:`public_in_package`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import xarray as xr

__all__ = ["own_descriptions", "public_in_package"]

F = TypeVar("F", bound=Callable[..., Any])


def own_descriptions(func: F) -> F:
    """Hand an analysis function its Dataset arguments without their variables' attributes.

    The store describes its arrays (the embedding's ``long_name``, ``contextual embedding of
    the target``), and xarray keeps a variable's attributes through arithmetic and reductions:
    every count, rate or p-value computed from the embedding would carry that description into
    the result, its netCDF and the columns of its tables. With this, a result variable's
    attributes are exactly those its analysis set, whether it is called directly or through
    :func:`emb.analyses.run_analysis`. The Datasets' own attributes (the store's provenance) stay,
    and the caller's Datasets are not modified (shallow copies, data shared).
    """

    def bare(value: Any) -> Any:
        if not isinstance(value, xr.Dataset):
            return value
        out = value.copy(deep=False)
        for var in out.variables.values():
            var.attrs = {}
        return out

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*(bare(a) for a in args), **{k: bare(v) for k, v in kwargs.items()})

    return wrapper  # type: ignore[return-value]


def public_in_package(func: F) -> F:
    """Name ``func`` by its family's package, where users import it from (``emb.analyses.weat``),
    not by the private module that defines it (``emb.analyses.weat._weat``), as numpy's
    ``set_module`` does: ``emb analyze NAME --help``, :meth:`Analysis.to_dict` and pickles name
    the public path (the function is the package's attribute of that name)."""
    func.__module__ = func.__module__.rpartition(".")[0]
    return func
