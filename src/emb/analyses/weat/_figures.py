"""WEAT figures: effect size by layer per test, and the tests × layers heat map (matplotlib, no
pyplot state; the house style of :mod:`emb.analyses._figure`). Public through
:mod:`emb.analyses.plots`."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from emb.analyses import _figure as fg
from emb.analyses import curves

__all__ = ["weat_effect_sizes", "weat_heatmap"]


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
    Pleasant vs Unpleasant"), one line per setting (one model) or per model and setting. A setting
    has its own line style and marker shape (and, with one model, its own colour; with several,
    colour = model); the band is the bootstrap CI over stimuli, drawn light with its edges in the
    line's colour; filled markers ``p < alpha``, open markers not significant. A curve of more than
    12 layers marks every significant layer but only every few others (the legend says so), so that
    its line style stays visible.

    The p-value is ``p_adjusted`` when the result has one (a correction was asked for), else
    ``p``; the legend says which, and over which family.
    """
    fg.require(result, ["effect_size"], "WEAT effect sizes")
    pooling = fg.pick(result, "pooling", pooling, ("last", "mean"))
    result, tag = fg.one_model(fg.with_data(result, "effect_size", pooling=pooling))
    pvar, plabel = _p_choice(result, pvalue)
    es = fg.sel(result["effect_size"], pooling=pooling)
    ps = fg.sel(result[pvar], pooling=pooling) if pvar else None
    has_band = "ci_low" in result and "ci_high" in result
    models = fg.labels(result, "model")
    tests = fg.labels(result, "test")
    settings = fg.labels(result, "setting")
    multi = models != [None]
    cols = min(len(tests), 3)
    colors = fg.colors_for(models) if multi else fg.colors_for(settings, kind="setting")
    styles = dict(zip(settings, fg.LINESTYLES * 4, strict=False))
    markers = dict(zip(settings, fg.MARKERS * 4, strict=False))
    band_alpha = 0.07 if len(models) * len(settings) <= 2 else 0.05  # light: bands stay apart by their edges
    handles: dict[str, Line2D] = {}
    thinned_any = []

    def curve(model: Any, test: Any, setting: Any) -> curves.Curve:
        at = {"model": model, "test": test, "setting": setting}
        color, ls = colors[model] if multi else colors[setting], styles[setting]
        label = (f"{model} · {setting}" if len(settings) > 1 else str(model)) if multi else str(setting)
        handles.setdefault(label, Line2D([], [], color=color, ls=ls, marker=markers[setting], ms=3.4,
                                         mfc=color, mec=color))
        band = (fg.values(fg.sel(result["ci_low"], pooling=pooling, **at)),
                fg.values(fg.sel(result["ci_high"], pooling=pooling, **at))) if has_band else None
        return curves.Curve(y=fg.values(fg.sel(es, **at)), color=color, label=f"_{label}",
                            style={"ls": ls, "zorder": 3}, band=band, band_alpha=band_alpha,
                            key={**at, "ls": ls, "marker": markers[setting]})

    def edges_and_markers(ax: Any, x: np.ndarray, curve: curves.Curve) -> None:
        """The band's edges in the line's colour; filled markers where p < alpha, open elsewhere
        (every few layers of a long curve)."""
        color, ls, marker = curve.color, curve.key["ls"], curve.key["marker"]
        for edge in curve.band or ():
            fg.line(ax, x, edge, color=color, ls=ls, lw=0.45, alpha=0.55, zorder=2)
        if ps is None:
            return
        y = curve.y
        p = fg.values(fg.sel(ps, **{k: curve.key[k] for k in ("model", "test", "setting")}))
        finite = np.flatnonzero(np.isfinite(y))
        dense = finite.size > fg.DENSE_LAYERS
        thinned_any.append(dense)
        ms = 2.6 if dense else 3.4
        shown = np.zeros(y.shape, bool)
        shown[finite[fg.thinned(finite.size)]] = True
        sig = np.isfinite(y) & (p < alpha)
        ns = shown & np.isfinite(y) & ~(p < alpha)
        ax.plot(x[sig], y[sig], marker, ms=ms, color=color, mew=0.8, ls="", zorder=4)
        ax.plot(x[ns], y[ns], marker, ms=ms, mfc="white", mec=color, mew=0.8, ls="", zorder=4)

    def legend(fig: Figure, _axes: list[Any]) -> None:
        extra: list[tuple[Any, str]] = [(h, lab) for lab, h in handles.items()]
        if ps is not None:
            extra += fg.marker_handles(
                f"filled: {plabel} < {alpha:g}",
                "open: not significant" + (f" (every few layers where > {fg.DENSE_LAYERS})"
                                           if any(thinned_any) else ""))
        if has_band:
            level = f"{100 * float(result.attrs.get('confidence', 0.95)):g}%"
            extra.append(fg.band_handle(f"shaded, thin edges: {level} bootstrap CI over stimuli"))
        fg.fitted_legend(fig, *zip(*extra, strict=True), loc="outside lower center", frameon=False,
                         ncols=2 if len(handles) > 2 else 3, handlelength=2.6, columnspacing=1.2)

    panels = [curves.Panel(title=_test_title(result, test, 34 if cols == 3 else 48),
                           curves=[curve(m, test, s) for m in models for s in settings]) for test in tests]
    return curves.draw_layer_curves(curves.LayerCurves(
        layers=np.asarray(result["layer"].values), panels=panels, relative_depth=relative_depth,
        max_cols=cols, panel_height=1.95, title_size=6.8, ylabel="effect size (d)",
        on_curve=edges_and_markers, legend=legend,
        title=(title or f"WEAT effect size by layer — {pooling} pooling") + tag))


def _test_key(result: xr.Dataset, test: Any, width: int) -> str:
    """A heat map's key entry, wrapped: "WEAT3: X vs Y / A vs B (n = 32+32 | 25+25)" (the word
    counts never split over two lines)."""
    name, sizes = _test_title(result, test, 10_000).split("\n")
    sizes = sizes.replace(" words)", ")").replace(" ", "\u00a0")  # textwrap breaks at ASCII spaces
    return fg.wrap(f"{name} {sizes}", width)


def _cell_edges(x: np.ndarray) -> np.ndarray:
    """Edges of cells centred on ``x`` (sorted): midpoints, and half a step beyond the ends."""
    if x.size == 1:
        return np.array([x[0] - 0.5, x[0] + 0.5])
    mid = (x[1:] + x[:-1]) / 2
    return np.concatenate([[x[0] - (mid[0] - x[0])], mid, [x[-1] + (x[-1] - mid[-1])]])


def _model_layers(da: xr.DataArray, model: Any) -> np.ndarray:
    """The layers where ``model`` has any value (a shorter model's NaN layers left out)."""
    sub = fg.sel(da, model=model)
    other = [d for d in sub.dims if d != "layer"]
    finite = np.isfinite(fg.values(sub.transpose("layer", *other))).reshape(sub.sizes["layer"], -1)
    layers = np.asarray(sub["layer"].values)
    return layers[finite.any(axis=1)] if finite.any() else layers


def _significance_dots(ax: Any, x: np.ndarray, grid: np.ndarray, significant: np.ndarray,
                       vmax: float, dot: float) -> None:
    """A dot on each significant cell: black, white on a dark one."""
    rows, cols_ = np.nonzero(significant)
    dark = np.abs(grid[rows, cols_]) > 0.6 * vmax
    ax.plot(x[cols_[~dark]], rows[~dark], "o", ms=dot, color="black", ls="", mew=0)
    ax.plot(x[cols_[dark]], rows[dark], "o", ms=dot, color="white", ls="", mew=0)


def _heatmap_key(result: xr.Dataset, tests: list[Any], wrap_at: int, pvar: str | None,
                 plabel: str, alpha: float, n_key_cols: int) -> list[tuple[Any, str]]:
    """One legend below: what the dots mean on its first row, then the key of the tests (in two
    columns, filled column by column, under several panels)."""
    blank = Line2D([], [], color="none")
    key = [(blank, _test_key(result, t, wrap_at)) for t in tests]
    key.append((blank, "n = words per group: X+Y | A+B"))
    dots: list[tuple[Any, str]] = []
    if pvar:
        black = Line2D([], [], ls="", marker="o", ms=4, color="black", mew=0)
        white = Line2D([], [], ls="", marker="o", ms=4, color="white", mec="0.3", mew=0.5)
        dots = [(black, f"dot: {plabel} < {alpha:g}"), (white, "white dot: the same, on a dark cell")]
    if n_key_cols != 2:
        return dots + key
    half = (len(key) + 1) // 2
    columns = [dots[:1] + key[:half], dots[1:] + key[half:]]
    while len(columns[1]) != len(columns[0]):
        min(columns, key=len).append((blank, ""))
    return columns[0] + columns[1]


@fg.styled
def weat_heatmap(
    result: xr.Dataset,
    *,
    pooling: str | None = None,
    alpha: float = 0.05,
    pvalue: str | None = None,
    title: str | None = None,
    relative_depth: bool = False,
) -> Figure:
    """WEAT effect sizes as a tests × layers heat map: one panel per setting, one row of panels
    per model, each model on its own layer axis (or relative depth, layer / last layer), diverging
    colours centred on d = 0, a dot on cells with ``p < alpha`` (``p_adjusted`` when a correction
    was asked for; the legend says which). Rows are labelled with the test ids; the key below the
    panels gives each test's groups and word counts."""
    fg.require(result, ["effect_size"], "a WEAT heat map")
    pooling = fg.pick(result, "pooling", pooling, ("last", "mean"))
    result, tag = fg.one_model(fg.with_data(result, "effect_size", pooling=pooling))
    pvar, plabel = _p_choice(result, pvalue)
    es = fg.sel(result["effect_size"], pooling=pooling)
    models = fg.labels(result, "model")
    settings = fg.labels(result, "setting")
    tests = fg.labels(result, "test")
    cells, n_cols = fg.model_rows(models, settings, max_cols=4)
    height = max(1.3, 0.17 * len(tests) + 0.55)
    one_panel = len(cells) == 1
    width = fg.COLUMN_WIDTH if one_panel else fg.PAGE_WIDTH
    wrap_at = 58 if one_panel else 68
    key_lines = sum(_test_key(result, t, wrap_at).count("\n") + 1 for t in tests)
    fig, axes, _ = fg.grid(len(cells), n_cols=n_cols, panel_height=height, sharey=True, width=width,
                           extra_height=0.75 + 0.12 * key_lines / (1 if one_panel else 2))
    finite = fg.values(es)[np.isfinite(fg.values(es))]
    vmax = float(np.ceil(np.abs(finite).max() * 4) / 4) if finite.size else 1.0
    # a dot about half a cell wide: legible on wide cells, still apart on 30 layers
    panel_in = (width - 1.3) / n_cols
    n_max = max(len(_model_layers(es, m)) for m in models) or 1
    dot = float(np.clip(0.45 * 72 * min(panel_in / n_max, height / max(len(tests), 1)), 1.0, 3.0))
    y_edges = np.arange(len(tests) + 1) - 0.5
    image = None
    for ax, cell in zip(axes, cells, strict=True):
        if cell is None:
            ax.set_visible(False)
            continue
        model, setting = cell
        layers = _model_layers(es, model)
        x, xlabel = fg.depth_axis(layers, np.ones(layers.size, bool), relative_depth)
        at = {"model": model, "setting": setting, "layer": layers}
        grid = np.stack([fg.values(fg.sel(es, **at, test=t)).reshape(-1) for t in tests])
        image = ax.pcolormesh(_cell_edges(x), y_edges, grid, cmap="RdBu_r", vmin=-vmax, vmax=vmax,
                              shading="flat", rasterized=True)
        if pvar:
            p = np.stack([fg.values(fg.sel(result[pvar], pooling=pooling, **at, test=t)).reshape(-1)
                          for t in tests])
            _significance_dots(ax, x, grid, p < alpha, vmax, dot)
        edges = _cell_edges(x)
        ax.set_xlim(edges[0], edges[-1])
        ax.set_ylim(y_edges[-1], y_edges[0])  # first test on top
        if relative_depth:
            ax.set_xticks([0, 0.25, 0.5, 0.75, 1], ["0", ".25", ".5", ".75", "1"])
        else:
            ax.xaxis.set_major_locator(MaxNLocator(nbins=6 if n_cols <= 2 else 4, integer=True,
                                                   steps=[1, 2, 5, 10]))
        ax.set_yticks(range(len(tests)), [fg.wrap(str(t), 14) for t in tests], fontsize=6.5)
        ax.set_xlabel(xlabel)
        ax.set_title(fg.wrap(f"{fg.model_prefix(model)}{setting}", 28 if n_cols > 2 else 48))
        ax.tick_params(length=2, pad=1.5)
    fg.outer_xlabels(axes)
    if image is not None:
        fig.colorbar(image, ax=[a for a in axes if a.get_visible()], shrink=0.9, aspect=30,
                     label="effect size (d)")
    n_key_cols = 1 if one_panel else 2
    entries = _heatmap_key(result, tests, wrap_at, pvar, plabel, alpha, n_key_cols)
    fg.fitted_legend(fig, *zip(*entries, strict=True), loc="outside lower center", ncols=n_key_cols,
                     frameon=False, handlelength=1.0, handletextpad=0.4, columnspacing=1.5,
                     fontsize=6.3)
    fig.suptitle((title or f"WEAT effect sizes, tests × layers — {pooling} pooling") + tag)
    return fig
