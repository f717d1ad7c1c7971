"""Running one analysis over several stores (models), the results stacked along ``model``.

Above the registry (it takes an analysis by name) and below the CLI and the Python API's
:func:`emb.analyses.run_analysis`. Nothing here imports torch.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import Analysis
from emb.analyses._select import plain_strings, vectors_coverage
from emb.analyses.registry import get_analysis
from emb.errors import AnalysisError, EmbWarning

__all__ = ["run_analysis"]


def _jsonable_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if isinstance(value, str | int | float | np.integer | np.floating) and not isinstance(value, bool):
            out[key] = value.item() if isinstance(value, np.generic) else value
        else:
            out[key] = json.dumps(value, default=str, sort_keys=True)
    return out


def run_analysis(
    analysis: Analysis | str,
    datasets: Mapping[str, xr.Dataset],
    /,
    *,
    per_model: Mapping[str, Mapping[str, Any]] | None = None,
    **options: Any,
) -> xr.Dataset:
    """Run an analysis on each store's Dataset and stack the results along ``model``.

    Parameters
    ----------
    analysis : Analysis or str
        The record, or a key of :data:`emb.analyses.ANALYSES`.
    datasets : mapping of str to xr.Dataset
        Model name → that store's suite group (``Analysis.suite``).
    per_model : mapping, optional
        Model name → extra keyword arguments for that model only (e.g. its ``similarity``
        suite for ``vast``).
    **options
        Keyword arguments of the analysis function, the same for every model (``analysis`` and
        ``datasets`` are positional-only, so an option may be called ``datasets``).

    Returns
    -------
    xr.Dataset
        The results concatenated along a new ``model`` dimension (coordinate = the names); other
        dims are outer-joined (a model with fewer layers gets NaN for the others). Attributes:
        those equal for all models, plus ``models`` (JSON: per-model provenance).
        Variables carry only the attributes their analysis set (see
        :func:`emb.analyses._select.own_descriptions`).

    Raises
    ------
    AnalysisError
        Unknown analysis, no datasets, or an option the analysis does not take.
    """
    if isinstance(analysis, str):
        analysis = get_analysis(analysis)
    if not datasets:
        raise AnalysisError("no datasets given: pass at least one store's suite group")
    params = analysis.parameters()
    unknown = [k for k in options if k not in params]
    if unknown:
        raise AnalysisError(
            f"analysis {analysis.name!r} does not take the option(s) {unknown}; "
            f"it takes {sorted(params)}"
        )
    results = []
    for model, ds in datasets.items():
        if note := vectors_coverage(ds):  # a static store without some of its suite's words
            warnings.warn(f"{model}: {note}", EmbWarning, stacklevel=2)
        kwargs = {**options, **dict((per_model or {}).get(model, {}))}
        kwargs = {k: plain_strings(v) if isinstance(v, xr.Dataset) else v
                  for k, v in kwargs.items()}
        results.append(analysis.function(plain_strings(ds), **kwargs))
    shared = dict(results[0].attrs)
    for res in results[1:]:
        shared = {k: v for k, v in shared.items() if k in res.attrs and res.attrs[k] == v}
    provenance = {
        model: {k: v for k, v in res.attrs.items() if k not in shared}
        for model, res in zip(datasets, results, strict=True)
    }
    index = pd.Index([str(m) for m in datasets], name="model")
    out = xr.concat(
        [r.drop_attrs(deep=False) for r in results],
        dim=index,
        join="outer",
        coords="different",
        compat="equals",
        combine_attrs="drop",
    )
    for name in out.variables:  # concat dropped the variables' attributes (long_name …)
        source = next((r[name].attrs for r in results if name in r.variables and r[name].attrs), None)
        if source:
            out[name].attrs = dict(source)
    out.attrs = _jsonable_attrs({**shared, "models": provenance})
    return out
