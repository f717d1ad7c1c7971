"""Figures from analysis results (matplotlib, no pyplot state: each function returns a Figure).

Every function takes a computed (or lazy) result Dataset and returns a
:class:`matplotlib.figure.Figure` in the house style of :mod:`emb.analyses._figure` (one column,
3.5 in, for one panel; two columns, 7 in, otherwise; 7.5 pt text; legends that explain every band
and marker; n shown). Saving is the caller's job (``fig.savefig(path)``).

Several stores (a ``model`` dimension, :func:`emb.analyses.run_analysis`) are drawn in the same
panels with one colour per model (``hue = model``); ``relative_depth=True`` puts models with
different numbers of layers on one x axis (layer / last layer).

Plain matplotlib rather than seaborn: the tidy tables would suit seaborn's ``relplot``, but its
bands are its own bootstrap of the plotted rows, not the analytic and stimulus-bootstrap intervals
the analyses compute; it draws through pyplot's global state; and it would be one more base
dependency for a handful of line plots.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from emb.analyses import _figure as fg
from emb.analyses import curves
from emb.analyses.ratings import figure_panels
from emb.errors import AnalysisError

__all__ = [
    "layer_curves",
    "nullification_curves",
    "similarity_curves",
    "tokenization_curves",
    "word_scatter",
]

def _setting_colors(settings: Sequence[Any]) -> dict[Any, str]:
    return fg.colors_for(settings, kind="setting")


def _ylabel(variable: str) -> str:
    return {
        "r": "Pearson's r, SC-WEAT vs rating",
        "spearman_r": "Spearman's rho",
        "tokenization_r": "VAST (Pearson's r)",
        "nullified_r": "VAST (Pearson's r)",
        "similarity_rho": "Spearman's rho",
        "rho": "Spearman's rho",
        "effect_size": "effect size (d)",
        "mean_effect_size": "mean SC-WEAT effect size",
    }.get(variable, variable.replace("_", " "))


def _n_label(result: xr.Dataset, name: str, **where: Any) -> str:
    if name not in result:
        return ""
    return fg.fmt_n(fg.values(fg.sel(result[name], **where)))


# -- layer curves ------------------------------------------------------------------------------------
@fg.styled
def layer_curves(
    result: xr.Dataset,
    *,
    variable: str = "r",
    lexicon: str | None = None,
    rating: str | None = None,
    title: str | None = None,
    relative_depth: bool = False,
) -> Figure:
    """VAST / ValNorm by layer (the paper's Figure 1), with the 95 % CI as a band.

    One model: one panel per pooling, one line per setting. Several models: one panel per
    setting × pooling, one line per model (hue = model).

    Parameters
    ----------
    result : xr.Dataset
        A :func:`~emb.analyses.vast.vast` or :func:`~emb.analyses.valnorm.valnorm` result with
        ``variable(…, setting, pooling, layer)`` (and ``ci_low``/``ci_high``, ``n``).
    variable : str
        The variable drawn (default ``"r"``).
    lexicon, rating : str, optional
        Which lexicon / rating (default: the first lexicon, ``valence``).
    title : str, optional
        Figure title (default: "<variable> by layer — <lexicon>").
    relative_depth : bool
        x = layer / last layer instead of the layer number (compares models of unequal depth).
    """
    fg.require(result, [variable], "layer curves")
    result, tag = fg.one_model(result)
    lexicon = fg.pick(result, "lexicon", lexicon)
    rating = fg.pick(result, "rating", rating, ("valence",))
    where = {"lexicon": lexicon, "rating": rating}
    da = fg.sel(result[variable], **where)
    has_band = variable == "r" and "ci_low" in result and "ci_high" in result
    models = fg.labels(result, "model")
    poolings = fg.labels(result, "pooling")
    settings = fg.labels(result, "setting")
    multi = models != [None]
    if result.sizes.get("layer", 0) == 1:  # static vectors: no depth to draw a curve along
        return _setting_points(result, variable=variable, where=where, models=models,
                               poolings=poolings, settings=settings, has_band=has_band,
                               title=title, tag=tag)
    colors = fg.colors_for(models) if multi else fg.colors_for(settings, kind="setting")
    extra = [fg.band_handle("shaded: 95% CI (Fisher z)")] if has_band else []

    def curve(hue: Any, cell_setting: Any, pooling: Any) -> curves.Curve:
        model, setting = (hue, cell_setting) if multi else (None, hue)
        at = {"model": model, "pooling": pooling, "setting": setting}
        n = _n_label(result, "n", **where, model=model, setting=setting)
        label = str(hue) if hue is not None else variable
        band = (fg.values(fg.sel(result["ci_low"], **where, **at)),
                fg.values(fg.sel(result["ci_high"], **where, **at))) if has_band else None
        return curves.Curve(y=fg.values(fg.sel(da, **at)), color=colors[hue], style={"marker": "o"},
                            label=label + (f" (n = {n})" if not multi and n else ""), band=band)

    def n_in_corner(ax: Any, _x: np.ndarray, panel: curves.Panel) -> None:
        n = _n_label(result, "n", **where, setting=panel.key["setting"])
        if n:
            ax.text(0.98, 0.04, f"n = {n}", transform=ax.transAxes, ha="right", va="bottom",
                    fontsize=6.5, color="0.3")

    cells = [(s, p) for s in settings for p in poolings] if multi else [(None, p) for p in poolings]
    head = {s: f"{s} · " if multi else "" for s, _p in cells}
    panels = [curves.Panel(title=f"{head[s]}{p} pooling" if p else head[s].rstrip(" ·"),
                           key={"setting": s},
                           curves=[curve(hue, s, p) for hue in (models if multi else settings)])
              for s, p in cells]
    return curves.draw_layer_curves(curves.LayerCurves(
        layers=np.asarray(result["layer"].values), panels=panels, ylabel=_ylabel(variable),
        relative_depth=relative_depth, max_cols=len(poolings) if multi else 4,
        on_panel=n_in_corner if multi else None, legend=partial(fg.legend, extra=extra, title="model" if multi else None),
        title=(title or f"{_ylabel(variable)} by layer" + (f" — {lexicon}" if lexicon else "")
               + (f" ({rating})" if rating and rating != "valence" else "")) + tag))


def _same_settings(result: xr.Dataset, variable: str, where: dict[str, Any],
                   settings: Sequence[Any]) -> list[list[Any]]:
    """``settings`` in groups whose ``variable`` (and ``n``) are equal everywhere: on static
    vectors a word has one vector whatever its context, so the settings that keep the same words
    (bleached, aligned, misaligned) give the same numbers."""
    groups: list[list[Any]] = []
    keys: list[tuple[np.ndarray, np.ndarray]] = []
    for setting in settings:
        y = fg.values(fg.sel(result[variable], **where, setting=setting))
        n = fg.values(fg.sel(result["n"], **where, setting=setting)) if "n" in result else y * 0
        for group, (gy, gn) in zip(groups, keys, strict=True):
            if gy.shape == y.shape and np.array_equal(gy, y, equal_nan=True) \
                    and np.array_equal(gn, n, equal_nan=True):
                group.append(setting)
                break
        else:
            groups.append([setting])
            keys.append((y, n))
    return groups


def _point_error(result: xr.Dataset, where: dict[str, Any], at: dict[str, Any],
                 y: np.ndarray) -> np.ndarray | None:
    """A point's 95 % CI as matplotlib's asymmetric error bar, None where it is not finite."""
    lo = fg.values(fg.sel(result["ci_low"], **where, **at)).ravel()
    hi = fg.values(fg.sel(result["ci_high"], **where, **at)).ravel()
    err = np.array([[y[0] - lo[0]], [hi[0] - y[0]]])
    return None if not np.isfinite(err).all() else err


def _group_labels(result: xr.Dataset, where: dict[str, Any], pooling: Any,
                  groups: list[list[Any]]) -> list[str]:
    """The x labels of the setting groups: their names joined by '=', and n."""
    labels = []
    for group in groups:
        n = _n_label(result, "n", **where, pooling=pooling, setting=group[0])
        labels.append(" =\n".join(map(str, group)) + (f"\n(n = {n})" if n else ""))
    return labels


def _setting_points(result: xr.Dataset, *, variable: str, where: dict[str, Any],
                    models: list[Any], poolings: list[Any], settings: list[Any], has_band: bool,
                    title: str | None, tag: str) -> Figure:
    """:func:`layer_curves` of a one-layer (static) store: one point per setting (x: the
    settings, as categories) with its 95 % CI as an error bar, one panel per pooling, one marker
    colour per model. Settings whose numbers are identical (static vectors: a word's vector
    does not depend on its context) are one point, labelled with all their names."""
    multi = models != [None]
    fig, axes, n_cols = fg.grid(len(poolings), max_cols=4)
    colors = fg.colors_for(models) if multi else fg.colors_for(settings, kind="setting")
    groups = _same_settings(result, variable, where, settings) if not multi else [[s] for s in settings]
    width = 0.6
    merged = False
    layer = result["layer"].values[0]
    for ax, pooling in zip(axes, poolings, strict=True):
        for i, group in enumerate(groups):
            setting = group[0]
            merged = merged or len(group) > 1
            for j, model in enumerate(models):
                at = {"model": model, "pooling": pooling, "setting": setting}
                y = fg.values(fg.sel(result[variable], **where, **at)).ravel()
                if not np.isfinite(y).any():
                    continue
                x = i + (j - (len(models) - 1) / 2) * width / max(len(models), 1) if multi else i
                color = colors[model] if multi else colors[setting]
                err = _point_error(result, where, at, y) if has_band else None
                ax.errorbar([x], y[:1], yerr=err, fmt="o", color=color, capsize=2.5, elinewidth=0.9,
                            label=str(model) if multi else "_")
        ax.set_xticks(range(len(groups)), _group_labels(result, where, pooling, groups))
        ax.set_xlim(-0.6, len(groups) - 0.4)
        ax.set_title(f"{pooling} pooling" if pooling else "")
        ax.axhline(0, color="0.55", lw=0.6, zorder=0)
        ax.grid(alpha=0.3, axis="y")
    for ax in axes[::n_cols]:
        ax.set_ylabel(_ylabel(variable))
    extra = [(Line2D([], [], ls="", marker="o", color="0.3"), "bar: 95% CI (Fisher z)")] if has_band else []
    if merged:
        extra.append((Line2D([], [], color="none"),
                      "settings joined by '=' have identical numbers: static vectors give a word "
                      "one vector whatever its context"))
    fg.legend(fig, axes, extra, title="model" if multi else None, ncols=1 if merged else None)
    title = title.replace(" by layer", " by setting") if title else title
    fig.suptitle((title or f"{_ylabel(variable)} by setting" + (f" — {where['lexicon']}" if where.get("lexicon") else "")
                  + (f" ({where['rating']})" if where.get("rating") not in (None, "valence") else "")
                  + f", layer {layer} (the only one)") + tag)
    return fig


# -- tokenization ------------------------------------------------------------------------------------
def _all_equal(means: list[np.ndarray]) -> bool:
    first = means[0]
    return all(c.shape == first.shape and np.allclose(c, first, rtol=1e-9, atol=1e-12, equal_nan=True)
               for c in means[1:])


@fg.styled
def tokenization_curves(
    result: xr.Dataset,
    *,
    lexicon: str | None = None,
    title: str | None = None,
    relative_depth: bool = False,
) -> Figure:
    """Singly vs multiply tokenized words by layer (the paper's Figure 2): one panel per setting
    (rows: models), colour = pooling, solid = singly, dashed = multiply tokenized words.

    The line is the mean over the random equal-size subsets, the band their range. A singly
    tokenized word's four poolings are the same vector (first = last = mean = max), so when their
    curves coincide they are drawn once, in black, and the legend says so.
    """
    fg.require(result, ["tokenization_r"], "tokenization curves")
    result, tag = fg.one_model(result)
    lexicon = fg.pick(result, "lexicon", lexicon)
    da = fg.sel(result["tokenization_r"], lexicon=lexicon)
    settings = fg.labels(result, "setting")
    poolings = fg.labels(result, "pooling")
    layers = np.asarray(result["layer"].values)
    colors = fg.colors_for(poolings)
    styles = {"single": "-", "multi": "--"}
    collapsed = []
    n_subsets = result.sizes.get("subset", 1)

    def token_set_curves(model: Any, setting: Any, token_set: Any) -> list[curves.Curve]:
        """One curve per pooling: the mean over the subsets, their range as the band; a singly
        tokenized word's poolings in one black curve where they coincide."""
        means, bands = [], []
        for pooling in poolings:
            sub = fg.sel(da, model=model, setting=setting, pooling=pooling, token_set=token_set)
            vals = fg.values(sub.transpose(..., "layer")).reshape(-1, len(layers))
            with np.errstate(all="ignore"), warnings.catch_warnings(
                action="ignore", category=RuntimeWarning  # 'mean of empty slice'
            ):
                means.append(np.nanmean(vals, axis=0))
                bands.append((np.nanmin(vals, axis=0), np.nanmax(vals, axis=0)))
        style = {"marker": "o", "ms": 2.6, "ls": styles.get(str(token_set), ":")}
        finite = np.isfinite(means[0])
        if token_set == "single" and len(poolings) > 1 and _all_equal(means):
            collapsed.append(True)
            return [curves.Curve(y=means[0], color="black", style=style, finite=finite,
                                 label="single · every pooling (equal)",
                                 band=bands[0] if n_subsets > 1 else None, band_alpha=0.12)]
        return [curves.Curve(y=mean, color=colors[pooling], style=style, finite=finite,
                             label=f"{token_set} · {pooling}", band=band if n_subsets > 1 else None,
                             band_alpha=0.12)
                for pooling, mean, band in zip(poolings, means, bands, strict=True)]

    def panel(model: Any, setting: Any) -> curves.Panel:
        n = _n_label(result, "tokenization_n", lexicon=lexicon, model=model, setting=setting)
        return curves.Panel(title=f"{fg.model_prefix(model)}{setting}" + (f" (n = {n} per set)" if n else ""),
                            curves=[c for token_set in fg.labels(result, "token_set")
                                    for c in token_set_curves(model, setting, token_set)])

    def legend(fig: Figure, axes: list[Any]) -> None:
        extra = [fg.band_handle(f"shaded: range over {n_subsets} random subsets")] if n_subsets > 1 else []
        note = "single-subtoken words: first = last = mean = max" if collapsed else None
        fg.legend(fig, axes, extra, ncols=3, title=note)

    return curves.draw_layer_curves(curves.LayerCurves(
        layers=layers, panels=[panel(m, s) for m in fg.labels(result, "model") for s in settings],
        relative_depth=relative_depth, max_cols=min(len(settings), 4), ylabel="VAST (Pearson's r)",
        legend=legend, title=(title or "Singly (solid) vs multiply (dashed) tokenized words"
                              + (f" — {lexicon}" if lexicon else "")) + tag))


# -- nullification -----------------------------------------------------------------------------------
def _swept_layers(da: xr.DataArray) -> list[Any]:
    other = [d for d in da.dims if d != "layer"]
    has = np.isfinite(fg.values(da.transpose("layer", *other))).reshape(da.sizes["layer"], -1).any(axis=1)
    return [int(lay) for lay, h in zip(da["layer"].values, has, strict=True) if h]


def _parameters(result: xr.Dataset) -> dict[str, Any]:
    """The analysis' parameters recorded in the result's attributes (``{}`` when absent)."""
    try:
        params = json.loads(str(result.attrs.get("parameters", "{}")))
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _best_setting(result: xr.Dataset) -> Any:
    """The setting whose curve chose ``best_layer``: as recorded, else VAST's rule (``bleached``,
    else the first setting)."""
    recorded = _parameters(result).get("best_layer_setting")
    if recorded is not None:
        return recorded
    settings = fg.labels(result, "setting")
    return "bleached" if "bleached" in settings else settings[0]


def _layer_tags(result: xr.Dataset, model: Any, lexicon: Any, pooling: Any, layer: int) -> str:
    """" (best for bleached, top)": the best layer is chosen on one setting's curve, so the tag
    names that setting (the panel draws every setting)."""
    tags = []
    if "best_layer" in result:
        best = fg.values(fg.sel(result["best_layer"], model=model, lexicon=lexicon, pooling=pooling))
        if best.size == 1 and np.isfinite(best) and int(best) == layer:
            setting = _best_setting(result)
            tags.append("best" if setting is None else f"best for {setting}")
    if "top_layer" in result:
        top = fg.values(fg.sel(result["top_layer"], model=model))
        if top.size == 1 and np.isfinite(top) and int(top) == layer:
            tags.append("top")
    return f" ({', '.join(tags)})" if tags else ""


@fg.styled
def nullification_curves(
    result: xr.Dataset,
    *,
    lexicon: str | None = None,
    rating: str | None = None,
    pooling: str | None = None,
    title: str | None = None,
) -> Figure:
    """VAST vs the number of nullified principal components (the paper's Figure 3): one row per
    pooling (every pooling unless one is given; rows per model too), one panel per swept layer
    (e.g. the top layer, and the best layer, which is the best of one setting's curve: its title
    says "best for bleached"), one line per setting; ``k = 0`` is the mean-subtracted vectors."""
    fg.require(result, ["nullified_r"], "nullification curves")
    result, tag = fg.one_model(result)
    lexicon = fg.pick(result, "lexicon", lexicon)
    rating = fg.pick(result, "rating", rating, ("valence",))
    poolings = [fg.pick(result, "pooling", pooling)] if pooling is not None else fg.labels(result, "pooling")
    da = fg.sel(result["nullified_r"], lexicon=lexicon, rating=rating)
    models = fg.labels(result, "model")
    settings = fg.labels(result, "setting")
    colors = fg.colors_for(settings, kind="setting")
    ks = np.asarray(result["k"].values)
    rows = [(m, p, _swept_layers(fg.sel(da, model=m, pooling=p))) for m in models for p in poolings]
    n_cols = max(1, max(len(r[2]) for r in rows))
    fig, axes, _ = fg.grid(len(rows) * n_cols, n_cols=n_cols, max_cols=n_cols,
                           width=fg.COLUMN_WIDTH if n_cols == 1 and len(rows) == 1 else fg.PAGE_WIDTH)
    for i, (model, pool, swept) in enumerate(rows):
        for j in range(n_cols):
            ax = axes[i * n_cols + j]
            if j >= len(swept):
                ax.set_visible(False)
                continue
            layer = swept[j]
            for setting in settings:
                y = fg.values(fg.sel(da, model=model, layer=layer, setting=setting, pooling=pool))
                fg.line(ax, ks.astype(float), y, marker="o", color=colors[setting], label=str(setting))
            layer_tag = _layer_tags(result, model, lexicon, pool, layer)
            ax.set_title(f"{fg.model_prefix(model)}{pool} · layer {layer}{layer_tag}")
            ax.set_xticks(ks)
            fg.finish_axes(ax, xlabel="principal components nullified (k)")
        axes[i * n_cols].set_ylabel("VAST (Pearson's r)")
    fg.outer_xlabels(axes)
    n = _n_label(result, "nullified_n", lexicon=lexicon, rating=rating)
    fg.legend(fig, axes, [(Line2D([], [], color="none"), f"n = {n} words")] if n else [])
    fig.suptitle((title or "VAST after nullifying the top principal components"
                  + (f" — {lexicon}" if lexicon else "")
                  + (f" ({rating})" if rating and rating != "valence" else "")) + tag)
    return fig


# -- word similarity ---------------------------------------------------------------------------------
def _similarity_cells(result: xr.Dataset, variable: str, pooling: str | None) -> tuple[list[Any], list[Any]]:
    """The poolings and benchmarks with a panel: a pooling the similarity suite was not
    extracted with, a benchmark without a rho, has none (no empty panels; the summary names each
    one left out, and why: figure_panels)."""
    kept_poolings, datasets, _ = figure_panels(result, variable=variable)
    if pooling is not None:
        poolings = [fg.pick(result, "pooling", pooling)]
    else:
        poolings = kept_poolings or fg.labels(result, "pooling")
    return poolings, datasets or fg.labels(result, "dataset")


def _drawn_ks(result: xr.Dataset, ks: Sequence[int] | None) -> list[int]:
    """The k drawn: those asked for (each must be in the result), else 0, 1, 2, 4, 8 and the
    largest, where present."""
    all_k = [int(k) for k in result["k"].values]
    if ks is None:
        ks = [k for k in (0, 1, 2, 4, 8) if k in all_k]
        if all_k and all_k[-1] not in ks:
            ks.append(all_k[-1])
    absent = [k for k in ks if k not in all_k]
    if absent:
        raise AnalysisError(f"k {absent} not in the result; it has k = {all_k}")
    return list(ks)


def _k_colors(ks: Sequence[int]) -> dict[int, Any]:
    """k = 0 black, the others on an ordered colormap that starts at blue."""
    ordered = [k for k in ks if k != 0]
    colors: dict[int, Any] = dict(zip(ordered, fg.ordered_colors(len(ordered), start=0.3, stop=0.9)[:len(ordered)],
                                      strict=True))
    if 0 in ks:
        colors[0] = "black"
    return colors


@fg.styled
def similarity_curves(
    result: xr.Dataset,
    *,
    pooling: str | None = None,
    ks: Sequence[int] | None = None,
    variable: str | None = None,
    setting: str | None = None,
    title: str | None = None,
    relative_depth: bool = False,
) -> Figure:
    """Word-similarity Spearman's ρ by layer (the paper's Figure 4): one panel per benchmark and
    pooling (rows: poolings, and models), one line per number of nullified components ``k``:
    ``k = 0`` (no nullification) in black, the others on an ordered colormap that starts at blue
    (its darkest stretch would pass for black); the band is the 95 % CI of ρ at the smallest k
    drawn. The title names the contextual setting whose vectors were compared.

    Parameters
    ----------
    result : xr.Dataset
        With ``similarity_rho`` (a VAST result) or ``rho`` (a word-similarity result) over
        ``(dataset, pooling, layer, k)`` (and ``…ci_low``/``…ci_high``, ``n``).
    pooling : str, optional
        One pooling only (default: every pooling).
    ks : sequence of int, optional
        Which ``k`` to draw (default 0, 1, 2, 4, 8 and the largest, where present).
    setting : str, optional
        The setting named in the title (default: as recorded in the result, the ``setting``
        attribute of ``variable`` or the analysis' parameters).
    """
    variable = variable or ("similarity_rho" if "similarity_rho" in result else "rho")
    fg.require(result, [variable], "word-similarity curves")
    prefix = "similarity_" if variable.startswith("similarity_") else ""
    result, tag = fg.one_model(result)
    da = result[variable]
    poolings, datasets = _similarity_cells(result, variable, pooling)
    ks = _drawn_ks(result, ks)
    colors = _k_colors(ks)
    setting = setting or result[variable].attrs.get("setting") or _parameters(result).get("setting")
    low, high = f"{prefix}ci_low", f"{prefix}ci_high"
    has_band = low in result and high in result

    def panel(model: Any, pool: Any, dataset: Any) -> curves.Panel:
        lines = []
        for k in ks:
            at = {"model": model, "dataset": dataset, "k": k, "pooling": pool}
            band = (fg.values(fg.sel(result[low], **at)),
                    fg.values(fg.sel(result[high], **at))) if has_band and k == ks[0] else None
            lines.append(curves.Curve(y=fg.values(fg.sel(da, **at)), color=colors[k], label=f"k = {k}",
                                      style={"marker": "o", "ms": 2.6}, thin=True, band=band,
                                      band_alpha=0.12))
        n = _n_label(result, f"{prefix}n", model=model, dataset=dataset)
        head = f"{fg.model_prefix(model)}{dataset}" + (f" (n = {n})" if n else "")
        return curves.Panel(title=head + (f" · {pool}" if len(poolings) > 1 else ""), curves=lines)

    extra = [fg.band_handle(f"shaded: 95% CI at k = {ks[0]} (Fisher z, Bonett-Wright SE)",
                            color=colors[ks[0]], alpha=0.12)] if has_band else []
    where = [f"{setting} setting"] if setting else []
    if len(poolings) == 1 and poolings[0]:
        where.append(f"{poolings[0]} pooling")
    return curves.draw_layer_curves(curves.LayerCurves(
        layers=np.asarray(result["layer"].values), relative_depth=relative_depth,
        panels=[panel(m, p, d) for m in fg.labels(result, "model") for p in poolings for d in datasets],
        max_cols=max(1, min(len(datasets), 4)), ylabel="Spearman's rho",
        legend=partial(fg.legend, extra=extra, ncols=min(len(ks), 6) if not extra else 4,
                       title="k = top principal components nullified; n = pairs"),
        title=(title or "Word similarity by layer" + (f" — {', '.join(where)}" if where else "")) + tag))


# -- per-word scatter --------------------------------------------------------------------------------
@fg.styled
def word_scatter(
    frame: pd.DataFrame,
    *,
    x: str = "rating",
    y: str = "sc_weat",
    panels: str = "setting",
    xlabel: str | None = None,
    ylabel: str = "SC-WEAT effect size",
    title: str = "",
) -> Figure:
    """Each word's SC-WEAT against its human rating, one panel per ``panels`` value and one row of
    panels per model (a model with more than three panels wraps onto rows of its own), with the
    least-squares line and Pearson's r (n) in the corner.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per word at one layer and pooling (the caller picks the declared cell), with
        columns ``x``, ``y``, ``panels`` (and ``model``).
    """
    missing = [c for c in (x, y) if c not in frame]
    if missing:
        raise AnalysisError(f"cannot draw the word scatter: the table lacks {missing}")
    keys = [k for k in ("model", panels) if k in frame]
    groups = list(frame.groupby(keys, sort=False)) if keys else [((), frame)]
    by_model: dict[Any, list[tuple[tuple[Any, ...], pd.DataFrame]]] = {}
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        by_model.setdefault(key[0] if "model" in keys else None, []).append((key, group))
    cells, cols = fg.model_rows(list(by_model), lambda m: by_model[m], max_cols=3)
    fig, axes, _ = fg.grid(len(cells), n_cols=cols, panel_height=2.0 if cols > 2 else 2.2, sharey=True)
    for ax, cell in zip(axes, cells, strict=True):
        if cell is None:
            ax.set_visible(False)
            continue
        key, group = cell[1]
        xs = pd.to_numeric(group[x], errors="coerce").to_numpy(float)
        ys = pd.to_numeric(group[y], errors="coerce").to_numpy(float)
        ok = np.isfinite(xs) & np.isfinite(ys)
        many = ok.sum() > 2000
        ax.scatter(xs[ok], ys[ok], s=3 if many else 7, alpha=0.3 if many else 0.6, color=fg.PALETTE[0],
                   linewidths=0, rasterized=True, label="one word")
        if ok.sum() >= 3 and np.ptp(xs[ok]) > 0:
            slope, intercept = np.polyfit(xs[ok], ys[ok], 1)
            grid_x = np.linspace(xs[ok].min(), xs[ok].max(), 50)
            ax.plot(grid_x, intercept + slope * grid_x, color=fg.PALETTE[1], lw=1.2,
                    label="least-squares line")
            r = np.corrcoef(xs[ok], ys[ok])[0, 1]
            ax.text(0.03, 0.96, f"r = {r:.3f}\nn = {int(ok.sum()):,}", transform=ax.transAxes,
                    va="top", ha="left", fontsize=6.8)
        ax.set_title(" · ".join(str(k) for k in key))
        ax.set_xlabel(xlabel or x)
        ax.grid(alpha=0.3)
        ax.axhline(0, color="0.55", lw=0.6, zorder=0)
    for ax in axes[::cols]:
        ax.set_ylabel(ylabel)
    fg.outer_xlabels(axes)
    fg.legend(fig, axes, ncols=2, markerscale=1.5)
    fig.suptitle(title)
    return fig
