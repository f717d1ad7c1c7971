"""The decorators every family's main function wears: it sees its Datasets without the
store's variable descriptions (:func:`own_descriptions`), it is named by its family's package
(:func:`public_in_package`), and the record that holds it checks its options and stamps the
common attributes of its result (:func:`run_by_record`)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

import xarray as xr

from emb.analyses._select import provenance_attrs

if TYPE_CHECKING:
    from emb.analyses._analysis import Analysis

__all__ = ["own_descriptions", "public_in_package", "run_by_record"]

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


def run_by_record(*, checked_in_body: Collection[str] = ()) -> Callable[[F], F]:
    """Leave a family's main function its selection and its kernel: the :class:`Analysis`
    record that holds it (bound when the record is made) checks the options and stamps the
    common attributes, whether the function is called directly (``emb.analyses.weat.weat(ds,
    …)``) or through :func:`emb.analyses.run_analysis`.

    Before the call, every keyword the record declares (its ``options``, its ``seed`` and the
    shared ``method``) is checked with :func:`emb.analyses._analysis.check_options`, in the
    order of the signature and with the defaults of those not given: the one message of a
    refused value. ``checked_in_body`` names the declared keywords the function refuses itself
    (with a message of its own, placed where it is today) and that are not checked here.

    After the call, the result's attributes are ``analysis`` (the record's name) first, the
    function's own (its options as it records them, the words it used …), and the store's
    provenance of the Dataset it was given (:func:`emb.analyses._select.provenance_attrs`) last.
    """

    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        first = next(iter(signature.parameters))
        records: list[Analysis] = []

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not records:
                raise TypeError(f"{func.__qualname__}() is held by no Analysis record")
            try:
                call = signature.bind(*args, **kwargs)
            except TypeError:
                return func(*args, **kwargs)  # Python's own message for a call that does not fit
            call.apply_defaults()
            _check_declared(records[0], call.arguments, first=first, skip=checked_in_body)
            result = func(*args, **kwargs)
            attrs = {"analysis": records[0].name, **result.attrs,
                     **provenance_attrs(call.arguments[first])}
            attrs["analysis"] = records[0].name  # the record's, over a helper's it called
            result.attrs = attrs
            return result

        def bind_record(record: Analysis) -> None:
            if not records:  # the family's own record; a copy made later does not rebind it
                records.append(record)

        wrapper.bind_record = bind_record  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def _check_declared(record: Analysis, arguments: dict[str, Any], *, first: str,
                    skip: Collection[str]) -> None:
    """Refuse a value of ``arguments`` (but the Dataset's and ``skip``'s) that its declared
    option does not allow (:func:`emb.analyses._analysis.check_options`)."""
    from emb.analyses._analysis import check_options

    check_options(record, **{k: v for k, v in arguments.items() if k != first and k not in skip})
