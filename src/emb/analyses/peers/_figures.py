"""The figure of a peer metric (``mac``, ``ect``, ``ripa``, ``rnsb``): its value by layer, one
panel per test (matplotlib, no pyplot state; the house style of :mod:`emb.analyses._figure`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from emb.analyses import _figure as fg
from emb.analyses import curves

__all__ = ["metric_by_layer"]

#: Metric → (axis label, the reading of its scale, a reference line's value or None).
_AXES = {
    "mac": ("MAC (mean cosine distance)", "0 = every target identical to every attribute", None),
    "ect": ("ECT (Spearman r)", "1 = X and Y relate to the attributes alike", 1.0),
    "ripa": ("RIPA (A − B)", "RIPA over A − over B; > 0: A lies towards X more than B does", 0.0),
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
    colors = fg.colors_for(models) if multi else fg.colors_for(settings, kind="setting")
    styles = dict(zip(settings, fg.LINESTYLES * 4, strict=False))
    markers = dict(zip(settings, fg.MARKERS * 4, strict=False))
    layers = np.asarray(result["layer"].values)
    handles: dict[str, Line2D] = {}

    def curve(model: Any, test: Any, setting: Any) -> curves.Curve:
        color = colors[model] if multi else colors[setting]
        name = (f"{model} · {setting}" if len(settings) > 1 else str(model)) if multi else str(setting)
        handles.setdefault(name, Line2D([], [], color=color, ls=styles[setting], marker=markers[setting],
                                        ms=3.4))
        return curves.Curve(y=fg.values(fg.sel(values, model=model, test=test, setting=setting)),
                            color=color, label=f"_{name}", tick=str(setting),
                            style={"ls": styles[setting], "marker": markers[setting], "ms": 3.4, "zorder": 3})

    def legend(fig: Figure, _axes: list[Any]) -> None:
        fig.legend(list(handles.values()), list(handles), loc="outside lower center", frameon=False,
                   ncols=min(len(handles), 4), handlelength=2.6, columnspacing=1.2)

    panels = [curves.Panel(title=_title(result, test, 34 if cols == 3 else 48),
                           curves=[curve(m, test, s) for m in models for s in settings]) for test in tests]
    layer_text = f"layer {int(layers[0])}" if layers.size == 1 else "by layer"
    return curves.draw_layer_curves(curves.LayerCurves(
        layers=layers, panels=panels, relative_depth=relative_depth, max_cols=cols, panel_height=1.95,
        title_size=6.8, ylabel=label, reference=reference, one_layer="categories", legend=legend,
        title=(title or f"{label} {layer_text} — {pooling} pooling\n({reading})") + tag))
