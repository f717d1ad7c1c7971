"""Settings whose numbers are identical, and why: static vectors give a word one vector whatever
its context, so two settings that keep the same words (``bleached`` and ``alone`` of ``weat``;
``bleached``, ``aligned``, ``misaligned`` of ``vast``) give the same numbers in every cell. A
table, summary or figure that showed them side by side would look like several agreeing results.

The check is on the computed result (cheap: the result is small beside the store) and the
explanation comes from the store's provenance (``model.model_type == "static"``, as the static
backend records it; docs/static-vectors.md). :meth:`Analysis.report_summary` adds
:func:`identical_settings_notes` to every summary, :meth:`Analysis.draw` adds
:func:`caption_identical_settings` to every figure that shows such settings apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from emb.analyses._select import _loaded

if TYPE_CHECKING:  # a summary needs no matplotlib
    from matplotlib.figure import Figure

__all__ = ["caption_identical_settings", "identical_samples_notes", "identical_settings",
           "identical_settings_notes", "static_models"]

#: The model type the static-vectors backend records (emb.backends.static.StaticModelInfo).
STATIC = "static"


def _is_static(model: Any) -> bool:
    model = _loaded(model)
    return isinstance(model, Mapping) and str(model.get("model_type", "")) == STATIC


def static_models(result: xr.Dataset) -> set[str | None]:
    """The models of ``result`` whose store holds static word vectors, by their provenance:
    ``{None}`` for one store's result (or every model's, when they share the record), else the
    model names (:func:`emb.analyses.run_analysis` keeps each store's own record in ``models``).

    Examples
    --------
    >>> static_models(xr.Dataset(attrs={"model": '{"model_type": "static"}'}))
    {None}
    >>> static_models(xr.Dataset(attrs={"model": {"model_type": "gpt2"}}))
    set()
    """
    found: set[str | None] = {None} if _is_static(result.attrs.get("model")) else set()
    models = _loaded(result.attrs.get("models"))
    if isinstance(models, Mapping):
        for name, own in models.items():
            own = _loaded(own)
            if isinstance(own, Mapping) and _is_static(own.get("model")):
                found.add(str(name))
    return found


def _cells(da: xr.DataArray, setting: Any) -> np.ndarray:
    return np.asarray(da.sel(setting=setting).values)


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    try:
        return bool(np.array_equal(a, b, equal_nan=True))
    except TypeError:  # text (a pattern label): NaN-free by construction
        return bool(np.array_equal(a, b))


def _groups(result: xr.Dataset) -> list[list[Any]]:
    """Settings (in the result's order) in groups whose every variable over ``setting`` is
    identical, NaN for NaN; only groups of two or more with a finite number somewhere."""
    names = [v for v in result.data_vars if "setting" in result[v].dims
             and result[v].chunks is None]  # never computes a lazy result
    if not names:
        return []
    settings = [s.item() if hasattr(s, "item") else s for s in result["setting"].values]
    groups: list[list[Any]] = []
    for setting in settings:
        for group in groups:
            if all(_equal(_cells(result[v], setting), _cells(result[v], group[0])) for v in names):
                group.append(setting)
                break
        else:
            groups.append([setting])

    def finite(setting: Any) -> bool:
        for v in names:
            values = _cells(result[v], setting)
            if values.dtype.kind in "fiu" and np.isfinite(values.astype(np.float64)).any():
                return True
        return False

    return [g for g in groups if len(g) > 1 and finite(g[0])]


def identical_settings(result: xr.Dataset) -> dict[str | None, list[list[Any]]]:
    """Per model (``None`` for a result of one model), the groups of two or more settings whose
    numbers are identical in every cell.

    Examples
    --------
    >>> r = xr.Dataset({"d": (("setting", "layer"), [[0.5, 0.7], [0.5, 0.7], [0.1, 0.2]])},
    ...                coords={"setting": ["bleached", "alone", "random"]})
    >>> identical_settings(r)
    {None: [['bleached', 'alone']]}
    """
    if "setting" not in result.dims or result.sizes["setting"] < 2:
        return {}
    if "model" not in result.dims or result.sizes["model"] == 1:
        groups = _groups(result.squeeze("model", drop=True) if "model" in result.dims else result)
        return {None: groups} if groups else {}
    out: dict[str | None, list[list[Any]]] = {}
    for model in result["model"].values:
        groups = _groups(result.sel(model=model))
        if groups:
            out[str(model)] = groups
    return out


def _why(static: bool) -> str:
    if static:
        return ("the store holds static word vectors (one vector per word, whatever its "
                "context), and these settings keep the same words")
    return "the analysed words have the same vectors in these settings"


def identical_settings_notes(result: xr.Dataset) -> list[str]:
    """One summary line per group of settings with identical numbers, saying why (from the
    store's provenance: static vectors) and that they are one result, not several agreeing ones.

    Examples
    --------
    >>> r = xr.Dataset({"d": (("setting",), [0.5, 0.5])}, coords={"setting": ["bleached", "alone"]},
    ...                attrs={"model": '{"model_type": "static"}'})
    >>> identical_settings_notes(r)[0][:60]
    'settings bleached = alone: identical numbers in every cell, '
    """
    groups = identical_settings(result)
    if not groups:
        return []
    static = static_models(result)
    notes = []
    for model, found in groups.items():
        prefix = f"{model}: " if model is not None else ""
        for group in found:
            notes.append(
                f"{prefix}settings {' = '.join(map(str, group))}: identical numbers in every cell, "
                f"as {_why(None in static or model in static)}; they are one result, not "
                f"{len(group)} agreeing ones (the tables keep a row for each setting)."
            )
    return notes


def identical_samples_notes(result: xr.Dataset) -> list[str]:
    """A summary line when every sample of contexts gives the same numbers in every cell (CEAT
    on static vectors: each sample draws other contexts of the same words, which static vectors
    give the same vectors): the samples are copies of one draw, and an interval or p over them
    is no evidence.

    Examples
    --------
    >>> r = xr.Dataset({"es": (("test", "sample"), [[0.9, 0.9, 0.9]])},
    ...                attrs={"model": '{"model_type": "static"}'})
    >>> identical_samples_notes(r)[0][:62]
    'every one of the 3 samples gives the same es in every cell, as'
    """
    if "sample" not in result.dims or result.sizes["sample"] < 2:
        return []
    static = static_models(result)
    if "model" in result.dims and result.sizes["model"] > 1:  # each model apart (one static)
        cells = [(str(m), result.sel(model=m), str(m) in static or None in static)
                 for m in result["model"].values]
    else:
        cells = [(None, result, bool(static))]
    notes = []
    for model, one, is_static in cells:
        name = _same_in_every_sample(one)
        if name is None:
            continue
        why = ("the store holds static word vectors: every context of a word gives it one vector"
               if is_static else "the contexts drawn do not change the words' vectors")
        notes.append(f"{'' if model is None else model + ': '}every one of the "
                     f"{result.sizes['sample']:,} samples gives the same {name} in "
                     f"every cell, as {why}; the samples are copies of one draw, so an interval or p "
                     "over them (the random-effects CI and p) is no evidence: report the bootstrap CI "
                     "over the stimuli.")
    return notes


def _same_in_every_sample(result: xr.Dataset) -> str | None:
    """The first per-sample variable whose samples agree in every finite cell, or None."""
    names = [v for v in result.data_vars if "sample" in result[v].dims and result[v].chunks is None
             and result[v].dtype.kind == "f"]
    for name in names:
        values = np.moveaxis(np.asarray(result[name].values, dtype=np.float64),
                             result[name].dims.index("sample"), -1)
        finite = np.isfinite(values).all(axis=-1)
        if not finite.any():
            continue
        with np.errstate(invalid="ignore"):
            same = np.ptp(values, axis=-1) == 0
        return str(name) if same[finite].all() else None
    return None


def _figure_texts(fig: Figure) -> list[str]:
    """The labels of a figure's series and panels: legend entries, axes titles, tick labels and
    texts (not the suptitle, which names the one setting a figure was drawn for)."""
    texts: list[str] = []
    for legend in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]:
        texts += [t.get_text() for t in legend.get_texts()]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        texts.append(ax.get_title())
        texts += [t.get_text() for t in (*ax.get_xticklabels(), *ax.get_yticklabels(), *ax.texts)]
    return [" ".join(t.split()) for t in texts if t.strip()]


def _shown_apart(texts: Sequence[str], group: Sequence[Any]) -> bool:
    """Whether a figure labels two or more of ``group``'s settings each on its own (a label
    joining them all, "bleached = aligned", already says they are one)."""
    words = [re.compile(rf"(?<![\w-]){re.escape(str(s))}(?![\w-])") for s in group]
    if any(all(w.search(t) for w in words) for t in texts):
        return False
    return sum(any(w.search(t) for t in texts) for w in words) >= 2


def caption_identical_settings(fig: Figure, groups: Mapping[str | None, Sequence[Sequence[Any]]],
                               *, static: set[str | None] | None = None,
                               models: Sequence[str] = ()) -> Figure:
    """Add to ``fig``'s title a line naming each group of identical settings that the figure
    draws apart (a line or panel per setting), and why; returns ``fig``. Of the run's
    ``models``, a figure that names some (a figure of the ``last`` pooling names the contextual
    store, not the static one beside it) is captioned for those only."""
    if not groups or not hasattr(fig, "legends"):
        return fig
    texts = _figure_texts(fig)
    title = fig._suptitle.get_text() if fig._suptitle is not None else ""
    named = [m for m in models if any(re.search(rf"(?<![\w-]){re.escape(str(m))}(?![\w-])", t)
                                      for t in [*texts, title])]
    static = static or set()
    lines: list[str] = []
    whys: list[str] = []
    for model, found in groups.items():
        if model is not None and named and model not in named:
            continue  # this figure does not draw that model
        for group in found:
            if _shown_apart(texts, group):
                whys.append("static vectors: a word has one vector whatever its context"
                            if None in static or model in static else "the words' vectors are the same")
                prefix = f"{model}: " if model is not None else ""
                lines.append(f"{prefix}settings {' = '.join(map(str, group))}: identical numbers")
    if not lines:
        return fig
    caption = f"({'; '.join(dict.fromkeys(lines))}; {'; '.join(dict.fromkeys(whys))})"
    if title:
        fig._suptitle.set_text(f"{title}\n{caption}")
    else:
        fig.suptitle(caption, fontsize=7.5)
    return fig
