"""ML-EAT figures: the EAT map of each test at the declared cell (the level-3 cosines as a 2 × 2
map, the level-2 effects beside its rows, level 1 and the pattern above) and the three levels'
effect sizes by layer (matplotlib, no pyplot state; the house style of
:mod:`emb.analyses._figure`)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from emb.analyses import _figure as fg
from emb.analyses import curves

__all__ = ["eat_map", "levels_by_layer"]


def _p_text(p: float, n_permutations: int = 0) -> str:
    """``p = .031``, ``p < .001``, or at a Monte-Carlo floor ``p ≤ .002`` (no random split reached
    the observed statistic: the true p is at most that)."""
    from emb.analyses._analysis import mc_floor

    if n_permutations and bool(mc_floor(p, n_permutations)):
        return f"p ≤ {p:.3f}".replace("0.", ".")
    return "p < .001" if p < 0.001 else f"p = {p:.3f}".replace("0.", ".")


def _groups(result: xr.Dataset, test: Any) -> list[str]:
    return [str(result[f"{r}_group"].sel(test=test).values) if f"{r}_group" in result.coords
            else r.upper() for r in ("x", "y", "a", "b")]


def _panels(result: xr.Dataset) -> list[tuple[Any, Any]]:
    return [(m, t) for m in fg.labels(result, "model") for t in fg.labels(result, "test")]


@fg.styled
def eat_map(result: xr.Dataset, *, setting: str | None = None, pooling: str | None = None,
            layer: int | None = None) -> Figure:
    """The EAT map: per test (and model), at one cell (default: the top layer, the ``bleached``
    setting, the ``last`` pooling), the mean cosine of each target–attribute block (X–A, X–B,
    Y–A, Y–B; annotated mean ± SD) on a shared diverging scale, each target set's level-2 effect
    size and p at its row's end, and level 1's d, p and the pattern in the panel's title."""
    fg.require(result, ["mean_cosine", "target_effect_size", "effect_size"], "an EAT map")
    setting = fg.pick(result, "setting", setting, fg.SETTING_ORDER)
    pooling = fg.pick(result, "pooling", pooling, ("last", "mean"))
    # the models with this pooling (a static store has only 'static'), its title names one
    result, tag = fg.one_model(fg.with_data(result, "effect_size", setting=setting, pooling=pooling))
    at = {"setting": setting, "pooling": pooling}
    names = {int(k): v for k, v in json.loads(result["pattern"].attrs.get("pattern_name", "{}")).items()}
    panels = _panels(result)
    cols = min(len(panels), 2)
    fig, axes, _ = fg.grid(len(panels), max_cols=cols, panel_height=1.55, sharey=False,
                           extra_height=1.15, width=fg.PAGE_WIDTH)
    means = fg.values(fg.sel(result["mean_cosine"], **at))
    vmax = float(np.nanmax(np.abs(means))) if np.isfinite(means).any() else 1.0
    image = None
    layers_used = set()
    for ax, (model, test) in zip(axes, panels, strict=True):
        cell = {**at, "model": model, "test": test}
        d1 = fg.sel(result["effect_size"], **cell)
        finite = np.flatnonzero(np.isfinite(fg.values(d1)))
        if layer is not None:
            here = layer
        elif finite.size:
            here = int(result["layer"].values[finite[-1]])
        else:
            here = int(result["layer"].values[-1])
        layers_used.add(here)
        cell["layer"] = here
        m = fg.values(fg.sel(result["mean_cosine"], **cell)).reshape(2, 2)
        s = fg.values(fg.sel(result["std_cosine"], **cell)).reshape(2, 2)
        image = ax.imshow(m, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto",
                          extent=(-0.5, 1.5, 1.5, -0.5))
        for i in range(2):
            for j in range(2):
                ax.text(j, i, f"{m[i, j]:.3f} ± {s[i, j]:.3f}", ha="center", va="center", fontsize=6.3,
                        color="white" if abs(m[i, j]) > 0.6 * vmax else "black")
        gx, gy, ga, gb = (fg.wrap(g, 18) for g in _groups(result, test))
        ax.set_xticks([0, 1, 2.1], [f"A: {ga}", f"B: {gb}", "level 2\n(A vs B)"], fontsize=6.3)
        ax.set_yticks([0, 1], [f"X: {gx}", f"Y: {gy}"], fontsize=6.3)
        d2 = fg.values(fg.sel(result["target_effect_size"], **cell))
        p2 = fg.values(fg.sel(result["target_p"], **cell))
        n2 = int(fg.values(fg.sel(result["target_n_permutations"], model=model, test=test)))
        for i in range(2):
            ax.text(2.1, i, f"d = {d2[i]:.2f}\n{_p_text(p2[i], n2)}", ha="center", va="center",
                    fontsize=6.3)
        ax.axvline(1.5, color="0.3", lw=0.6)
        d_1 = float(fg.values(fg.sel(result["effect_size"], **cell)))
        p_1 = float(fg.values(fg.sel(result["p"], **cell)))
        code = int(fg.values(fg.sel(result["pattern"], **cell)))
        n1 = int(fg.values(fg.sel(result["n_permutations"], model=model, test=test)))
        ax.set_title(fg.wrap(f"{fg.model_prefix(model)}{test}: d = {d_1:.2f}, {_p_text(p_1, n1)}", 40)
                     + "\n" + fg.wrap(names.get(code, "?"), 40), fontsize=6.8)
        ax.set_xlim(-0.5, 2.7)
        ax.set_ylim(1.5, -0.5)
        ax.tick_params(length=0)
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.5, aspect=40, label="mean cosine (level 3)",
                     location="bottom")
    where = f"layer {sorted(layers_used)[0]}" if len(layers_used) == 1 else "each test's top layer"
    fig.suptitle(f"EAT map — {where}, setting {setting}, {pooling} pooling{tag}\n"
                 "(cells: level-3 mean cosine ± SD; right: level-2 single-target d, p; "
                 "p ≤: a Monte-Carlo floor)")
    return fig


@fg.styled
def levels_by_layer(result: xr.Dataset, *, setting: str | None = None, pooling: str | None = None,
                    relative_depth: bool = False) -> Figure:
    """Level 1's d and the two level-2 effect sizes by layer, one panel per test (and model):
    where the curves of X and Y part, the WEAT effect is opposed associations; where they run
    together, a difference in degree."""
    fg.require(result, ["effect_size", "target_effect_size"], "ML-EAT levels by layer")
    setting = fg.pick(result, "setting", setting, fg.SETTING_ORDER)
    pooling = fg.pick(result, "pooling", pooling, ("last", "mean"))
    # the models with this pooling (a static store has only 'static'), its title names one
    result, tag = fg.one_model(fg.with_data(result, "effect_size", setting=setting, pooling=pooling))
    layers = np.asarray(result["layer"].values)
    marker = "o" if layers.size <= fg.DENSE_LAYERS or layers.size == 1 else None
    colors = fg.PALETTE

    def panel(model: Any, test: Any) -> curves.Panel:
        cell = {"setting": setting, "pooling": pooling, "model": model, "test": test}
        d1 = fg.values(fg.sel(result["effect_size"], **cell))
        finite = np.isfinite(d1)  # the targets' curves on level 1's depth axis
        lines = [curves.Curve(y=d1, color="0.15", style={"marker": marker, "ms": 3}, label="_l1")]
        lines += [curves.Curve(y=fg.values(fg.sel(result["target_effect_size"], **cell).sel(target=target)),
                               color=colors[k], style={"ls": "--", "marker": marker, "ms": 3},
                               label=f"_{target}", finite=finite)
                  for k, target in enumerate(("X", "Y"))]
        gx, gy, ga, gb = _groups(result, test)
        return curves.Panel(title=fg.wrap(f"{fg.model_prefix(model)}{test}: {gx} vs {gy} / {ga} vs {gb}", 44),
                            curves=lines)

    def layer_tick(ax: Any, x: np.ndarray, _panel: curves.Panel) -> None:
        if layers.size == 1:
            ax.set_xticks(x, [f"layer {int(layers[0])}"])

    def legend(fig: Figure, _axes: list[Any]) -> None:
        handles = [Line2D([], [], color="0.15", marker="o", ms=3), Line2D([], [], color=colors[0], ls="--"),
                   Line2D([], [], color=colors[1], ls="--")]
        fig.legend(handles, ["level 1: d (X vs Y)", "level 2: X's single-target d (A vs B)",
                             "level 2: Y's single-target d (A vs B)"], loc="outside lower center",
                   frameon=False, ncols=3)

    panels = [panel(m, t) for m, t in _panels(result)]
    return curves.draw_layer_curves(curves.LayerCurves(
        layers=layers, panels=panels, relative_depth=relative_depth, max_cols=min(len(panels), 3),
        panel_height=1.95, title_size=6.8, ylabel="effect size", on_panel=layer_tick, legend=legend,
        title=f"ML-EAT effect sizes by layer — setting {setting}, {pooling} pooling{tag}"))
