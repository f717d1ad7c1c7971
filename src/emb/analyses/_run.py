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
from emb.analyses._select import common_words, item_text, plain_strings, vectors_coverage
from emb.analyses.registry import get_analysis
from emb.errors import AnalysisError, EmbWarning
from emb.options import STANDARDIZE, check_values

__all__ = ["run_analysis"]


def _jsonable_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if isinstance(value, str | int | float | np.integer | np.floating) and not isinstance(value, bool):
            out[key] = value.item() if isinstance(value, np.generic) else value
        else:
            out[key] = json.dumps(value, default=str, sort_keys=True)
    return out


#: Item labels that name one stimulus across stores: a word in a setting (and stimulus set).
_STIMULUS_KEYS = ("setting", "stimulus_set", "word")


def _stimulus_keys(ds: xr.Dataset) -> tuple[np.ndarray, list[str]]:
    """Each item's stimulus (its setting, stimulus set and word: those the suite labels) as a
    code into the distinct keys ``"setting/stimulus set/word"``, in order of first appearance.

    Grouped first, joined after: the key text is made once per distinct stimulus, not once per
    item (a corpus suite holds millions of items and a few hundred stimuli)."""
    cols = [item_text(ds, k) for k in _STIMULUS_KEYS if k in ds.variables]
    codes, uniques = pd.MultiIndex.from_arrays(cols).factorize()
    return np.asarray(codes, dtype=np.int64), ["/".join(key) for key in uniques]


def common_stimuli(datasets: Mapping[str, xr.Dataset]) -> tuple[dict[str, xr.Dataset], str | None]:
    """Each store's Dataset with only the stimuli (word in a setting and stimulus set) that every
    store has: the ``word_set="common"`` rule across the models of one run, so that two models
    are compared on the same words. Returns the Datasets and the summary's note (None when no
    store lacks anything)."""
    if len(datasets) < 2 or any("word" not in ds.variables for ds in datasets.values()):
        return dict(datasets), None
    keys = {str(m): _stimulus_keys(ds) for m, ds in datasets.items()}
    common = common_words({m: distinct for m, (_, distinct) in keys.items()})
    if not common.n_dropped:
        return dict(datasets), None
    shared = set(common.words)
    out = {}
    for model, ds in datasets.items():
        codes, distinct = keys[str(model)]
        mask = np.fromiter((k in shared for k in distinct), bool, len(distinct))[codes]
        out[model] = ds if mask.all() else ds.isel(item=np.flatnonzero(mask))
    note = (common.note("stimuli (setting/stimulus set/word)", "store")
            .replace("absent from", "absent from store"))
    return out, note


def run_analysis(
    analysis: Analysis | str,
    datasets: Mapping[str, xr.Dataset],
    /,
    *,
    per_model: Mapping[str, Mapping[str, Any]] | None = None,
    standardize: str = "none",
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
    standardize : {"none", "center", "zscore"}, default "none"
        Standardise every layer of every suite the analysis reads before any cosine
        (:func:`emb.analyses.stats.anisotropy.standardize`): ``center`` subtracts the layer's
        mean vector over the suite's items, ``zscore`` also scales each dimension to unit
        variance. Recorded in the result's ``standardize`` attribute.

    Notes
    -----
    An analysis that takes ``word_set`` compares the stores on the same words by default
    (``word_set="common"``): each store keeps only the stimuli (a word in a setting and
    stimulus set) that every store has, and the result's ``notes`` say how many were dropped
    and from which store; ``word_set="per-setting"`` keeps each store's own.
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
    store_note = None
    if len(datasets) > 1:  # several stores: compared on the stimuli all of them have
        # (an analysis with ``word_set`` lets "per-setting" keep each store's own; one without
        # it has no such choice: CEAT, IBD, stereotype, intersectional, valence subspace)
        word_set = options.get("word_set", params["word_set"].default) if "word_set" in params \
            else "common"
        if word_set == "common":
            datasets, store_note = common_stimuli(
                {m: plain_strings(ds) for m, ds in datasets.items()})
    check_values((STANDARDIZE,), {"standardize": standardize}, owner=f"analysis {analysis.name!r}")
    results, baselines = [], []
    for model, ds in datasets.items():
        if note := vectors_coverage(ds):  # a static store without some of its suite's words
            warnings.warn(f"{model}: {note}", EmbWarning, stacklevel=2)
        kwargs = {**options, **dict((per_model or {}).get(model, {}))}
        kwargs = {k: _standardized(plain_strings(v), standardize) if isinstance(v, xr.Dataset) else v
                  for k, v in kwargs.items()}
        plain = plain_strings(ds)
        baselines.append(_baselines(plain, standardize))
        results.append(analysis.function(_standardized(plain, standardize), **kwargs))
    index = pd.Index([str(m) for m in datasets], name="model")
    out = _stacked(results, list(datasets), index)
    if len(results) > 1:
        out.attrs["notes"] = json.dumps(_model_notes(results, list(datasets), store_note))
    return _with_baselines(out, baselines, index, standardize)


def _stacked(results: list[xr.Dataset], models: list[Any], index: pd.Index) -> xr.Dataset:
    """The models' results concatenated along ``model`` (outer join), each variable with its
    attributes, and as attributes those every model shares plus ``models``: each one's own."""
    shared = dict(results[0].attrs)
    for res in results[1:]:
        shared = {k: v for k, v in shared.items() if k in res.attrs and res.attrs[k] == v}
    provenance = {
        model: {k: v for k, v in res.attrs.items() if k not in shared}
        for model, res in zip(models, results, strict=True)
    }
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


def _standardized(ds: xr.Dataset, how: str) -> xr.Dataset:
    """``ds`` with its embedding standardised per layer (``none``: ``ds`` itself)."""
    if how == "none" or "embedding" not in ds.variables:
        return ds
    from emb.analyses.stats.anisotropy import standardize

    return ds.assign(embedding=standardize(ds["embedding"], how))  # type: ignore[arg-type]


def _baselines(ds: xr.Dataset, how: str) -> dict[str, xr.DataArray]:
    """The suite's anisotropy (mean cosine of random word pairs per layer and pooling), of the
    stored vectors and, when standardised, of the vectors the analysis reads."""
    if "embedding" not in ds.variables or "word" not in ds.variables:
        return {}
    from emb.analyses.stats.anisotropy import pair_baseline

    words = item_text(ds, "word")
    out = {"anisotropy": pair_baseline(ds["embedding"], words)}
    if how != "none":
        out["anisotropy_standardized"] = pair_baseline(_standardized(ds, how)["embedding"], words)
    return out


def _with_baselines(out: xr.Dataset, baselines: list[dict[str, xr.DataArray]], index: pd.Index,
                    how: str) -> xr.Dataset:
    """``out`` with each model's anisotropy baselines (dims model, layer, pooling), on the layers
    and poolings the result has."""
    if not baselines or not all(baselines):
        return out
    for name in baselines[0]:
        da = xr.concat([b[name] for b in baselines], dim=index, join="outer")
        for dim in ("layer", "pooling"):
            if dim in out.dims and dim in da.dims:
                da = da.reindex({dim: out[dim].values})
            elif dim in da.dims and dim in out.coords and out[dim].ndim == 0:
                da = da.sel({dim: out[dim].values}, drop=True)
        da.attrs = dict(baselines[0][name].attrs)
        if name == "anisotropy_standardized":
            da.attrs["long_name"] += f" after --standardize {how}"
        out[name] = da
    out.attrs["standardize"] = how
    return out


def _model_notes(results: list[xr.Dataset], models: list[str], store_note: str | None) -> list[str]:
    """The notes of the models' results (each once; a model's own prefixed with its name), and
    the note of the stimuli some store lacked."""
    per = [json.loads(r.attrs.get("notes", "[]")) for r in results]
    everywhere = [n for n in per[0] if all(n in p for p in per[1:])]
    notes = list(everywhere)
    for model, own in zip(models, per, strict=True):
        notes += [f"{model}: {n}" for n in own if n not in everywhere]
    if store_note:
        notes.insert(0, store_note)
    return notes
