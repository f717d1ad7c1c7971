"""The figure of a peer metric (``mac``, ``ect``, ``ripa``, ``rnsb``): its value by layer, one
panel per test (matplotlib, no pyplot state; the house style of :mod:`emb.analyses._figure`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from emb.analyses import _figure as fg

__all__ = ["metric_by_layer"]

#: Metric → (axis label, the reading of its scale, a reference line's value or None).
_AXES = {
    "mac": ("MAC (mean cosine distance)", "0 = every target identical to every attribute", None),
    "ect": ("ECT (Spearman r)", "1 = X and Y relate to the attributes alike", 1.0),
    "ripa": ("RIPA", "> 0: the attributes lie towards X; 0 = none", 0.0),
    "rnsb": ("RNSB (KL divergence)", "0 = every target word equally negative", 0.0),
}


def _title(result: xr.Dataset, test: Any, width: int) -> str:
    groups = [str(result[f"{r}_group"].sel(test=test).values) for r in ("x", "y", "a", "b")
              if f"{r}_group" in result.coords]
    sizes = [fg.fmt_n(fg.values(result[f"n_{r}"].sel(test=test))) if f"n_{r}" in result else "?"
             for r in ("x", "y", "a", "b")]
    text = (f"{test}: {groups[0]} vs {groups[1]} / {groups[2]} vs {groups[3]}" if len(groups) == 4
            else str(test))
    pairs = (f", {fg.fmt_n(fg.values(result['n_pairs'].sel(test=test)))} pairs"
             if "n_pairs" in result else "")
    return fg.wrap(text, width) + f"\n(n = {sizes[0]}+{sizes[1]} | {sizes[2]}+{sizes[3]} words{pairs})"


@fg.styled
def metric_by_layer(result: xr.Dataset, *, pooling: str | None = None, title: str | None = None,
                    relative_depth: bool = False) -> Figure:
    """The metric by layer: one panel per test (titled with its groups and word counts), one line
    per setting (one model) or per model and setting; a single layer (a static store) is drawn as
    points on its own category."""
    metric = str(result.attrs["analysis"])
    fg.require(result, [metric], f"a {metric} figure")
    label, reading, reference = _AXES[metric]
    result, tag = fg.one_model(result)
    pooling = fg.pick(result, "pooling", pooling, ("last", "mean"))
    values = fg.sel(result[metric], pooling=pooling)
    models, tests = fg.labels(result, "model"), fg.labels(result, "test")
    settings = fg.labels(result, "setting")
    multi = models != [None]
    cols = min(len(tests), 3)
    fig, axes, _ = fg.grid(len(tests), max_cols=cols, panel_height=1.95)
    colors = fg.colors_for(models) if multi else fg.colors_for(settings, kind="setting")
    styles = dict(zip(settings, fg.LINESTYLES * 4, strict=False))
    markers = dict(zip(settings, fg.MARKERS * 4, strict=False))
    layers = np.asarray(result["layer"].values)
    one_layer = layers.size == 1
    xlabel = "layer"
    handles: dict[str, Line2D] = {}
    for ax, test in zip(axes, tests, strict=True):
        for i, model in enumerate(models):
            for j, setting in enumerate(settings):
                color = colors[model] if multi else colors[setting]
                y = fg.values(fg.sel(values, model=model, test=test, setting=setting))
                if one_layer:
                    x = np.array([float(i * len(settings) + j)])
                else:
                    x, xlabel = fg.depth_axis(layers, np.isfinite(y), relative_depth)
                name = (f"{model} · {setting}" if len(settings) > 1 else str(model)) if multi else str(setting)
                handles.setdefault(name, Line2D([], [], color=color, ls=styles[setting],
                                                marker=markers[setting], ms=3.4))
                fg.line(ax, x, y, color=color, ls=styles[setting], marker=markers[setting], ms=3.4,
                        label=f"_{name}", zorder=3)
        if reference is not None:
            ax.axhline(reference, color="0.55", lw=0.6, zorder=0)
        ax.set_title(_title(result, test, 34 if cols == 3 else 48), fontsize=6.8)
        if one_layer:
            ax.set_xticks(range(len(models) * len(settings)),
                          [str(s) for _m in models for s in settings], rotation=30, ha="right")
            ax.set_xlim(-0.6, len(models) * len(settings) - 0.4)
            ax.grid(alpha=0.3, axis="y")
        else:
            fg.finish_axes(ax, xlabel=xlabel, integer_x=not relative_depth, zero=False)
    for ax in axes[::cols]:
        ax.set_ylabel(label)
    if not one_layer:
        fg.outer_xlabels(axes)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", frameon=False,
               ncols=min(len(handles), 4), handlelength=2.6, columnspacing=1.2)
    layer_text = f"layer {int(layers[0])}" if one_layer else "by layer"
    fig.suptitle((title or f"{label} {layer_text} — {pooling} pooling\n({reading})") + tag)
    return fig
