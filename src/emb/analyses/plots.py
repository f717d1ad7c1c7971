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

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from emb.analyses import _figure as fg
from emb.errors import AnalysisError

__all__ = [
    "layer_curves",
    "nullification_curves",
    "similarity_curves",
    "tokenization_curves",
    "weat_effect_sizes",
    "weat_heatmap",
    "word_scatter",
]

#: Kept for callers of the former private helpers (tests, other families).
_sel = fg.sel
_PALETTE = fg.PALETTE


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
    cells = [(s, p) for s in settings for p in poolings] if multi else [(None, p) for p in poolings]
    fig, axes, n_cols = fg.grid(len(cells), max_cols=len(poolings) if multi else 4)
    colors = fg.colors_for(models) if multi else fg.colors_for(settings, kind="setting")
    layers = np.asarray(result["layer"].values)
    xlabel = "layer"
    for ax, (cell_setting, pooling) in zip(axes, cells, strict=True):
        for hue in (models if multi else settings):
            model, setting = (hue, cell_setting) if multi else (None, hue)
            at = {"model": model, "pooling": pooling, "setting": setting}
            y = fg.values(fg.sel(da, **at))
            x, xlabel = fg.depth_axis(layers, np.isfinite(y), relative_depth)
            n = _n_label(result, "n", **where, model=model, setting=setting)
            label = str(hue) if hue is not None else variable
            if not multi and n:
                label += f" (n = {n})"
            fg.line(ax, x, y, marker="o", color=colors[hue], label=label)
            if has_band:
                lo = fg.values(fg.sel(result["ci_low"], **where, **at))
                hi = fg.values(fg.sel(result["ci_high"], **where, **at))
                fg.band(ax, x, lo, hi, colors[hue])
        head = f"{cell_setting} · " if multi else ""
        ax.set_title(f"{head}{pooling} pooling" if pooling else head.rstrip(" ·"))
        if multi:
            n = _n_label(result, "n", **where, setting=cell_setting)
            if n:
                ax.text(0.98, 0.04, f"n = {n}", transform=ax.transAxes, ha="right", va="bottom",
                        fontsize=6.5, color="0.3")
        fg.finish_axes(ax, xlabel=xlabel, integer_x=not relative_depth)
    for ax in axes[::n_cols]:
        ax.set_ylabel(_ylabel(variable))
    fg.outer_xlabels(axes)
    extra = [fg.band_handle("shaded: 95% CI (Fisher z)")] if has_band else []
    fg.legend(fig, axes, extra, title="model" if multi else None)
    fig.suptitle((title or f"{_ylabel(variable)} by layer" + (f" — {lexicon}" if lexicon else "")
                  + (f" ({rating})" if rating and rating != "valence" else "")) + tag)
    return fig


# -- tokenization ------------------------------------------------------------------------------------
def _all_equal(curves: list[np.ndarray]) -> bool:
    first = curves[0]
    return all(c.shape == first.shape and np.allclose(c, first, rtol=1e-9, atol=1e-12, equal_nan=True)
               for c in curves[1:])


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
    models = fg.labels(result, "model")
    settings = fg.labels(result, "setting")
    poolings = fg.labels(result, "pooling")
    token_sets = fg.labels(result, "token_set")
    layers = np.asarray(result["layer"].values)
    cells = [(m, s) for m in models for s in settings]
    fig, axes, n_cols = fg.grid(len(cells), max_cols=min(len(settings), 4))
    colors = fg.colors_for(poolings)
    styles = {"single": "-", "multi": "--"}
    collapsed = False
    n_subsets = result.sizes.get("subset", 1)
    xlabel = "layer"
    for ax, (model, setting) in zip(axes, cells, strict=True):
        for token_set in token_sets:
            curves, bands = [], []
            for pooling in poolings:
                sub = fg.sel(da, model=model, setting=setting, pooling=pooling, token_set=token_set)
                vals = fg.values(sub.transpose(..., "layer")).reshape(-1, len(layers))
                with np.errstate(all="ignore"), warnings.catch_warnings(
                    action="ignore", category=RuntimeWarning  # 'mean of empty slice'
                ):
                    curves.append(np.nanmean(vals, axis=0))
                    bands.append((np.nanmin(vals, axis=0), np.nanmax(vals, axis=0)))
            x, xlabel = fg.depth_axis(layers, np.isfinite(curves[0]), relative_depth)
            style = styles.get(str(token_set), ":")
            if token_set == "single" and len(poolings) > 1 and _all_equal(curves):
                collapsed = True
                fg.line(ax, x, curves[0], marker="o", ms=2.6, color="black", ls=style,
                        label="single · every pooling (equal)")
                if n_subsets > 1:
                    fg.band(ax, x, *bands[0], "black", alpha=0.12)
                continue
            for pooling, mean, (lo, hi) in zip(poolings, curves, bands, strict=True):
                fg.line(ax, x, mean, marker="o", ms=2.6, color=colors[pooling], ls=style,
                        label=f"{token_set} · {pooling}")
                if n_subsets > 1:
                    fg.band(ax, x, lo, hi, colors[pooling], alpha=0.12)
        n = _n_label(result, "tokenization_n", lexicon=lexicon, model=model, setting=setting)
        ax.set_title(f"{fg.model_prefix(model)}{setting}" + (f" (n = {n} per set)" if n else ""))
        fg.finish_axes(ax, xlabel=xlabel, integer_x=not relative_depth)
    for ax in axes[::n_cols]:
        ax.set_ylabel("VAST (Pearson's r)")
    fg.outer_xlabels(axes)
    extra = []
    if n_subsets > 1:
        extra.append(fg.band_handle(f"shaded: range over {n_subsets} random subsets"))
    note = "single-subtoken words: first = last = mean = max" if collapsed else None
    fg.legend(fig, axes, extra, ncols=3, title=note)
    fig.suptitle((title or "Singly (solid) vs multiply (dashed) tokenized words"
                  + (f" — {lexicon}" if lexicon else "")) + tag)
    return fig


# -- nullification -----------------------------------------------------------------------------------
def _swept_layers(da: xr.DataArray) -> list[Any]:
    other = [d for d in da.dims if d != "layer"]
    has = np.isfinite(fg.values(da.transpose("layer", *other))).reshape(da.sizes["layer"], -1).any(axis=1)
    return [int(lay) for lay, h in zip(da["layer"].values, has, strict=True) if h]


def _layer_tags(result: xr.Dataset, model: Any, lexicon: Any, pooling: Any, layer: int) -> str:
    tags = []
    if "best_layer" in result:
        best = fg.values(fg.sel(result["best_layer"], model=model, lexicon=lexicon, pooling=pooling))
        if best.size == 1 and np.isfinite(best) and int(best) == layer:
            tags.append("best")
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
    (e.g. the top and the best layer), one line per setting; ``k = 0`` is the mean-subtracted
    vectors."""
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
@fg.styled
def similarity_curves(
    result: xr.Dataset,
    *,
    pooling: str | None = None,
    ks: Sequence[int] | None = None,
    variable: str | None = None,
    title: str | None = None,
    relative_depth: bool = False,
) -> Figure:
    """Word-similarity Spearman's ρ by layer (the paper's Figure 4): one panel per benchmark and
    pooling (rows: poolings, and models), one line per number of nullified components ``k`` on an
    ordered colormap; the band is the 95 % CI of ρ at the smallest k drawn.

    Parameters
    ----------
    result : xr.Dataset
        With ``similarity_rho`` (a VAST result) or ``rho`` (a word-similarity result) over
        ``(dataset, pooling, layer, k)`` (and ``…ci_low``/``…ci_high``, ``n``).
    pooling : str, optional
        One pooling only (default: every pooling).
    ks : sequence of int, optional
        Which ``k`` to draw (default 0, 1, 2, 4, 8 and the largest, where present).
    """
    variable = variable or ("similarity_rho" if "similarity_rho" in result else "rho")
    fg.require(result, [variable], "word-similarity curves")
    prefix = "similarity_" if variable.startswith("similarity_") else ""
    result, tag = fg.one_model(result)
    poolings = [fg.pick(result, "pooling", pooling)] if pooling is not None else fg.labels(result, "pooling")
    da = result[variable]
    all_k = [int(k) for k in result["k"].values]
    if ks is None:
        ks = [k for k in (0, 1, 2, 4, 8) if k in all_k]
        if all_k and all_k[-1] not in ks:
            ks.append(all_k[-1])
    absent = [k for k in ks if k not in all_k]
    if absent:
        raise AnalysisError(f"k {absent} not in the result; it has k = {all_k}")
    models = fg.labels(result, "model")
    datasets = fg.labels(result, "dataset")
    layers = np.asarray(result["layer"].values)
    cells = [(m, p, d) for m in models for p in poolings for d in datasets]
    fig, axes, n_cols = fg.grid(len(cells), max_cols=max(1, min(len(datasets), 4)))
    colors = dict(zip(ks, fg.ordered_colors(len(ks)), strict=True))
    low, high = f"{prefix}ci_low", f"{prefix}ci_high"
    has_band = low in result and high in result
    xlabel = "layer"
    for ax, (model, pool, dataset) in zip(axes, cells, strict=True):
        for k in ks:
            y = fg.values(fg.sel(da, model=model, dataset=dataset, k=k, pooling=pool))
            x, xlabel = fg.depth_axis(layers, np.isfinite(y), relative_depth)
            fg.line(ax, x, y, marker="o", ms=2.6, color=colors[k], label=f"k = {k}")
            if has_band and k == ks[0]:
                at = {"model": model, "dataset": dataset, "k": k, "pooling": pool}
                fg.band(ax, x, fg.values(fg.sel(result[low], **at)),
                        fg.values(fg.sel(result[high], **at)), colors[k])
        n = _n_label(result, f"{prefix}n", model=model, dataset=dataset)
        head = f"{fg.model_prefix(model)}{dataset}" + (f" (n = {n})" if n else "")
        ax.set_title(head + (f" · {pool}" if len(poolings) > 1 else ""))
        fg.finish_axes(ax, xlabel=xlabel, integer_x=not relative_depth)
    for ax in axes[::n_cols]:
        ax.set_ylabel("Spearman's rho")
    fg.outer_xlabels(axes)
    extra = [fg.band_handle(f"shaded: 95% CI at k = {ks[0]} (Fisher z, Bonett-Wright SE)",
                            color=colors[ks[0]])] if has_band else []
    fg.legend(fig, axes, extra, ncols=min(len(ks), 6) if not extra else 4,
              title="k = top principal components nullified; n = pairs")
    fig.suptitle((title or "Word similarity by layer"
                  + (f" — {poolings[0]} pooling" if len(poolings) == 1 and poolings[0] else "")) + tag)
    return fig


# -- WEAT --------------------------------------------------------------------------------------------
def _p_choice(result: xr.Dataset, pvalue: str | None) -> tuple[str | None, str]:
    """The p variable to mark significance with, and how to say it."""
    if pvalue is None:
        pvalue = "p_adjusted" if "p_adjusted" in result else "p"
    if pvalue not in result:
        return None, ""
    if pvalue == "p_adjusted":
        method = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(str(result.attrs.get("correction")), "adjusted")
        over = str(result.attrs.get("correction_over", "test")).replace("+", " x ")
        return pvalue, f"{method}-adjusted p (family: {over})"
    return pvalue, "p (not corrected)"


def _test_title(result: xr.Dataset, test: Any, width: int) -> str:
    groups = []
    for role in ("x", "y", "a", "b"):
        name = f"{role}_group"
        if name in result.coords and "test" in result[name].dims:
            groups.append(str(result[name].sel(test=test).values))
    sizes = [fg.fmt_n(fg.values(result[f"n_{r}"].sel(test=test))) if f"n_{r}" in result else "?"
             for r in ("x", "y", "a", "b")]
    text = f"{test}: {groups[0]} vs {groups[1]} / {groups[2]} vs {groups[3]}" if len(groups) == 4 else str(test)
    return fg.wrap(text, width) + f"\n(n = {sizes[0]}+{sizes[1]} | {sizes[2]}+{sizes[3]} words)"


@fg.styled
def weat_effect_sizes(
    result: xr.Dataset,
    *,
    pooling: str | None = None,
    alpha: float = 0.05,
    pvalue: str | None = None,
    title: str | None = None,
    relative_depth: bool = False,
) -> Figure:
    """WEAT effect size by layer: one panel per test, titled with its groups ("Flowers vs Insects /
    Pleasant vs Unpleasant"), one line per setting (one model) or per model (line style =
    setting); the band is the bootstrap CI over stimuli; filled markers ``p < alpha``.

    The p-value is ``p_adjusted`` when the result has one (a correction was asked for), else
    ``p``; the legend says which, and over which family.
    """
    fg.require(result, ["effect_size"], "WEAT effect sizes")
    result, tag = fg.one_model(result)
    pvar, plabel = _p_choice(result, pvalue)
    pooling = fg.pick(result, "pooling", pooling, ("last", "mean"))
    es = fg.sel(result["effect_size"], pooling=pooling)
    ps = fg.sel(result[pvar], pooling=pooling) if pvar else None
    has_band = "ci_low" in result and "ci_high" in result
    models = fg.labels(result, "model")
    tests = fg.labels(result, "test")
    settings = fg.labels(result, "setting")
    multi = models != [None]
    cols = min(len(tests), 3)
    fig, axes, _ = fg.grid(len(tests), max_cols=cols, panel_height=1.95)
    colors = fg.colors_for(models) if multi else fg.colors_for(settings, kind="setting")
    styles = dict(zip(settings, fg.LINESTYLES * 4, strict=False))
    layers = np.asarray(result["layer"].values)
    xlabel = "layer"
    for ax, test in zip(axes, tests, strict=True):
        for model in models:
            for setting in settings:
                at = {"model": model, "test": test, "setting": setting}
                color = colors[model] if multi else colors[setting]
                y = fg.values(fg.sel(es, **at))
                x, xlabel = fg.depth_axis(layers, np.isfinite(y), relative_depth)
                label = (f"{model} · {setting}" if len(settings) > 1 else str(model)) if multi else str(setting)
                fg.line(ax, x, y, color=color, ls=styles[setting] if multi else "-", label=label)
                if has_band:
                    fg.band(ax, x, fg.values(fg.sel(result["ci_low"], pooling=pooling, **at)),
                            fg.values(fg.sel(result["ci_high"], pooling=pooling, **at)), color, alpha=0.14)
                if ps is not None:
                    p = fg.values(fg.sel(ps, **at))
                    sig = np.isfinite(y) & (p < alpha)
                    ns = np.isfinite(y) & ~(p < alpha)
                    ax.plot(x[sig], y[sig], "o", ms=3.4, color=color)
                    ax.plot(x[ns], y[ns], "o", ms=3.4, mfc="white", mec=color)
        ax.set_title(_test_title(result, test, 34 if cols == 3 else 48), fontsize=6.8)
        fg.finish_axes(ax, xlabel=xlabel, integer_x=not relative_depth)
    for ax in axes[::cols]:
        ax.set_ylabel("effect size (d)")
    fg.outer_xlabels(axes)
    extra: list[tuple[Any, str]] = []
    if ps is not None:
        extra += fg.marker_handles(f"filled: {plabel} < {alpha:g}", "open: not significant")
    if has_band:
        level = f"{100 * float(result.attrs.get('confidence', 0.95)):g}%"
        extra.append(fg.band_handle(f"shaded: {level} bootstrap CI over stimuli"))
    fg.legend(fig, axes, extra, ncols=3)
    fig.suptitle((title or f"WEAT effect size by layer — {pooling} pooling") + tag)
    return fig


@fg.styled
def weat_heatmap(
    result: xr.Dataset,
    *,
    pooling: str | None = None,
    alpha: float = 0.05,
    pvalue: str | None = None,
    title: str | None = None,
) -> Figure:
    """WEAT effect sizes as a tests × layers heat map: one panel per setting (rows: models),
    diverging colours centred on d = 0, a dot on cells with ``p < alpha`` (``p_adjusted`` when a
    correction was asked for; the title says which)."""
    fg.require(result, ["effect_size"], "a WEAT heat map")
    result, tag = fg.one_model(result)
    pvar, plabel = _p_choice(result, pvalue)
    pooling = fg.pick(result, "pooling", pooling, ("last", "mean"))
    es = fg.sel(result["effect_size"], pooling=pooling)
    models = fg.labels(result, "model")
    settings = fg.labels(result, "setting")
    tests = fg.labels(result, "test")
    layers = np.asarray(result["layer"].values)
    cells = [(m, s) for m in models for s in settings]
    cols = min(len(settings), 2)
    height = max(1.2, 0.2 * len(tests) + 0.7)
    fig, axes, _ = fg.grid(len(cells), max_cols=cols, panel_height=height, sharey=True,
                           width=fg.PAGE_WIDTH, extra_height=0.7)
    finite = fg.values(es)[np.isfinite(fg.values(es))]
    vmax = float(np.ceil(np.abs(finite).max() * 4) / 4) if finite.size else 1.0
    row_labels = [" ".join(_test_title(result, t, 400).split("\n")).replace(" words)", ")")
                  for t in tests]
    image = None
    for ax, (model, setting) in zip(axes, cells, strict=True):
        grid = np.stack([fg.values(fg.sel(es, model=model, setting=setting, test=t)) for t in tests])
        image = ax.imshow(grid, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto",
                          interpolation="nearest")
        if pvar:
            p = np.stack([fg.values(fg.sel(result[pvar], pooling=pooling, model=model,
                                           setting=setting, test=t)) for t in tests])
            rows, cols_ = np.nonzero(p < alpha)
            dark = np.abs(grid[rows, cols_]) > 0.6 * vmax
            ax.plot(cols_[~dark], rows[~dark], "o", ms=2.2, color="black", ls="")
            ax.plot(cols_[dark], rows[dark], "o", ms=2.2, color="white", ls="")
        ax.set_xticks(range(len(layers)), [str(v) for v in layers])
        ax.set_yticks(range(len(tests)), row_labels, fontsize=6.3)
        ax.set_xlabel("layer")
        ax.set_title(f"{fg.model_prefix(model)}{setting}")
        ax.tick_params(length=0)
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.9, label="effect size (d)")
    note = f"; dot: {plabel} < {alpha:g}" if pvar else ""
    fig.suptitle((title or f"WEAT effect sizes, tests × layers — {pooling} pooling{note}") + tag)
    return fig


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
    """Each word's SC-WEAT against its human rating, one panel per ``panels`` value (rows: models),
    with the least-squares line and Pearson's r (n) in the corner.

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
    fig, axes, cols = fg.grid(len(groups), max_cols=2, panel_height=2.2, sharey=True)
    for ax, (key, group) in zip(axes, groups, strict=True):
        key = key if isinstance(key, tuple) else (key,)
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
    fg.legend(fig, axes, ncols=2, markerscale=1.5)
    fig.suptitle(title)
    return fig
