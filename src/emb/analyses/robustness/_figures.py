"""Figures of the robustness families: each word's influence on d, d over random subsets by layer,
and d against its empirical null (matplotlib, no pyplot state; the house style of
:mod:`emb.analyses._figure`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from emb.analyses import _figure as fg
from emb.analyses import curves

__all__ = ["agreement_by_layer", "influence_bars", "null_positions", "reliability_by_layer",
           "subset_bands"]

#: Colour of each role's bars.
_ROLE_COLORS = {"X": fg.PALETTE[0], "Y": fg.PALETTE[1], "A": fg.PALETTE[2], "B": fg.PALETTE[3]}


def _title(result: xr.Dataset, model: Any, test: Any, width: int) -> str:
    groups = [str(result[f"{r}_group"].sel(test=test).values) if f"{r}_group" in result.coords
              else r.upper() for r in ("x", "y", "a", "b")]
    return fg.wrap(f"{fg.model_prefix(model)}{test}: {groups[0]} vs {groups[1]} / {groups[2]} vs "
                   f"{groups[3]}", width)


def _top_layer(da: xr.DataArray) -> int:
    """The highest layer with a finite value (a model's own top)."""
    other = [d for d in da.dims if d != "layer"]
    finite = np.isfinite(fg.values(da.transpose("layer", *other))).reshape(da.sizes["layer"], -1).any(1)
    layers = np.asarray(da["layer"].values)
    return int(layers[finite][-1]) if finite.any() else int(layers[-1])


@fg.styled
def influence_bars(result: xr.Dataset, *, setting: str | None = None, pooling: str | None = None,
                   layer: int | None = None, top: int = 12) -> Figure:
    """The ``top`` words of largest |influence| on d per test (and model), at one cell (default:
    the top layer, the ``bleached`` setting, the ``last`` pooling): a bar per word, coloured by
    its set, the jackknife SE of d as a shaded band around 0."""
    fg.require(result, ["influence", "jackknife_se"], "an influence figure")
    setting = fg.pick(result, "setting", setting, fg.SETTING_ORDER)
    pooling = fg.pick(result, "pooling", pooling, ("last", "mean"))
    # the models with this pooling (a static store has only 'static'), its title names one
    result, tag = fg.one_model(fg.with_data(result, "effect_size", setting=setting, pooling=pooling))
    panels = [(m, t) for m in fg.labels(result, "model") for t in fg.labels(result, "test")]
    cols = min(len(panels), 3)
    fig, axes, _ = fg.grid(len(panels), max_cols=cols, panel_height=0.17 * top + 0.9, sharey=False)
    layers_used = set()
    for ax, (model, test) in zip(axes, panels, strict=True):
        at = {"model": model, "test": test, "setting": setting, "pooling": pooling}
        here = layer if layer is not None else _top_layer(fg.sel(result["effect_size"], **at))
        layers_used.add(here)
        infl = fg.sel(result["influence"], **at).sel(layer=here)
        values = fg.values(infl)
        words = np.asarray(fg.sel(result["member_word"], model=model, test=test).values, dtype=str)
        roles = np.asarray(fg.sel(result["member_role"], model=model, test=test).values, dtype=str)
        ok = np.flatnonzero(np.isfinite(values) & (words != ""))
        order = ok[np.argsort(-np.abs(values[ok]), kind="stable")][:top][::-1]
        ax.barh(np.arange(order.size), values[order], color=[_ROLE_COLORS.get(r, "0.5") for r in roles[order]],
                height=0.7)
        ax.set_yticks(np.arange(order.size), [f"{w} ({r})" for w, r in zip(words[order], roles[order], strict=True)],
                      fontsize=6.2)
        se = float(fg.values(fg.sel(result["jackknife_se"], **at).sel(layer=here)))
        ax.axvline(0, color="0.4", lw=0.6)
        d = float(fg.values(fg.sel(result["effect_size"], **at).sel(layer=here)))
        ax.set_title(_title(result, model, test, 34 if cols == 3 else 48)
                     + f"\n(d = {d:.2f}, jackknife SE {se:.2f})", fontsize=6.8)
        ax.set_xlabel("influence on d")
        ax.grid(alpha=0.3, axis="x")
    handles = [Patch(color=c, label=f"{r}") for r, c in _ROLE_COLORS.items()]
    fig.legend(handles=handles, loc="outside lower center", frameon=False, ncols=4,
               title="the word's set; influence = d − d without the word", title_fontsize=6.8)
    where = f"layer {sorted(layers_used)[0]}" if len(layers_used) == 1 else "each test's top layer"
    fig.suptitle(f"Which words drive d — {where}, setting {setting}, {pooling} pooling{tag}")
    return fig


@fg.styled
def subset_bands(result: xr.Dataset, *, setting: str | None = None, pooling: str | None = None,
                 relative_depth: bool = False) -> Figure:
    """d by layer per test (and model) with the 5–95 % range of d over the random subsets of the
    word sets as a band."""
    fg.require(result, ["effect_size", "subset_low", "subset_high"], "a subsets figure")
    setting = fg.pick(result, "setting", setting, fg.SETTING_ORDER)
    pooling = fg.pick(result, "pooling", pooling, ("last", "mean"))
    # the models with this pooling (a static store has only 'static'), its title names one
    result, tag = fg.one_model(fg.with_data(result, "effect_size", setting=setting, pooling=pooling))
    fraction = float(result.attrs.get("fraction", 0.8))

    def curve(at: dict[str, Any]) -> curves.Curve:
        return curves.Curve(y=fg.values(fg.sel(result["effect_size"], **at)), color=fg.PALETTE[0],
                            style={"marker": "o", "ms": 3}, band_alpha=0.2,
                            band=(fg.values(fg.sel(result["subset_low"], **at)),
                                  fg.values(fg.sel(result["subset_high"], **at))))

    def bar(ax: Any, x: np.ndarray, curve: curves.Curve) -> None:
        d, (lo, hi) = curve.y, curve.band
        ax.errorbar(x, d, yerr=[d - lo, hi - d], fmt="o", color=fg.PALETTE[0], ms=4, capsize=3)

    def legend(fig: Figure, _axes: list[Any]) -> None:
        fig.legend(handles=[Patch(color=fg.PALETTE[0], alpha=0.3,
                                  label=f"5–95% of d over random {fraction:.0%} subsets of each word set")],
                   loc="outside lower center", frameon=False)

    return curves.draw_layer_curves(_test_panels(
        result, curve, setting=setting, pooling=pooling, relative_depth=relative_depth, one_point=bar,
        legend=legend, title=f"d and its spread over word subsets — setting {setting}, {pooling} pooling{tag}"))


@fg.styled
def null_positions(result: xr.Dataset, *, setting: str | None = None, pooling: str | None = None,
                   relative_depth: bool = False) -> Figure:
    """d by layer per test (and model) against its empirical null: the 2.5–97.5 % range of d with
    random attribute sets as a grey band, the observed d as a line, filled markers where it lies
    outside (empirical p < 0.05)."""
    fg.require(result, ["effect_size", "null_low", "null_high", "empirical_p"], "an empirical-null figure")
    setting = fg.pick(result, "setting", setting, fg.SETTING_ORDER)
    pooling = fg.pick(result, "pooling", pooling, ("last", "mean"))
    # the models with this pooling (a static store has only 'static'), its title names one
    result, tag = fg.one_model(fg.with_data(result, "effect_size", setting=setting, pooling=pooling))

    def curve(at: dict[str, Any]) -> curves.Curve:
        return curves.Curve(y=fg.values(fg.sel(result["effect_size"], **at)), color=fg.PALETTE[0],
                            band=(fg.values(fg.sel(result["null_low"], **at)),
                                  fg.values(fg.sel(result["null_high"], **at))),
                            band_color="0.5", band_alpha=0.25, key=at)

    def bar(ax: Any, x: np.ndarray, curve: curves.Curve) -> None:
        lo, hi = curve.band
        ax.errorbar(x, (lo + hi) / 2, yerr=(hi - lo) / 2, fmt="none", color="0.55", capsize=4, lw=4, alpha=0.5)

    def markers(ax: Any, x: np.ndarray, curve: curves.Curve) -> None:
        """Filled where d lies outside the null (empirical p < 0.05), open inside."""
        d, p = curve.y, fg.values(fg.sel(result["empirical_p"], **curve.key))
        sig = np.isfinite(d) & (p < 0.05)
        ax.plot(x[sig], d[sig], "o", ms=3.6, color=fg.PALETTE[0])
        ax.plot(x[~sig & np.isfinite(d)], d[~sig & np.isfinite(d)], "o", ms=3.6, mfc="white",
                mec=fg.PALETTE[0])

    def legend(fig: Figure, _axes: list[Any]) -> None:
        handles = [Patch(color="0.5", alpha=0.4, label="2.5–97.5% of d with random attribute sets"),
                   *[h for h, _ in fg.marker_handles("filled: empirical p < 0.05", "open: not")]]
        labels = [handles[0].get_label(), "filled: empirical p < 0.05", "open: inside the null"]
        fig.legend(handles, labels, loc="outside lower center", frameon=False, ncols=3)

    matched = result.attrs.get("match", "length")
    return curves.draw_layer_curves(_test_panels(
        result, curve, setting=setting, pooling=pooling, relative_depth=relative_depth, one_point=bar,
        on_curve=markers, legend=legend,
        title=f"d against random attribute sets ({matched}-matched) — setting {setting}, {pooling} pooling{tag}"))


def _test_panels(result: xr.Dataset, curve: Callable[[dict[str, Any]], curves.Curve], *, setting: Any,
                 pooling: Any, relative_depth: bool, **spec: Any) -> curves.LayerCurves:
    """d by layer, one panel per test (and model), each titled with its groups: ``curve(at)``
    gives a panel's curve at its cell; a store of one layer is drawn on one tick, ``layer N``."""
    layers = np.asarray(result["layer"].values)
    cells = [(m, t) for m in fg.labels(result, "model") for t in fg.labels(result, "test")]
    cols = min(len(cells), 3)
    panels = [curves.Panel(title=_title(result, m, t, 34 if cols == 3 else 48),
                           curves=[curve({"model": m, "test": t, "setting": setting, "pooling": pooling})])
              for m, t in cells]

    def layer_tick(ax: Any, x: np.ndarray, _panel: curves.Panel) -> None:
        if layers.size == 1:
            ax.set_xticks(x, [f"layer {int(layers[0])}"])

    return curves.LayerCurves(layers=layers, panels=panels, relative_depth=relative_depth,
                              max_cols=cols, panel_height=1.8, title_size=6.8,
                              ylabel="effect size (d)", one_layer="tick", on_panel=layer_tick, **spec)


def _layer_panels(result: xr.Dataset, variable: str, ylabel: str, title: str, *,
                  group: str, setting: str | None, pooling: str | None, relative_depth: bool,
                  ylim: tuple[float, float] | None = None) -> Figure:
    """One panel per model, one line per value of ``group`` (tests, or pairs of metrics), a line
    at 0 over them."""
    setting = fg.pick(result, "setting", setting, fg.SETTING_ORDER)
    pooling = fg.pick(result, "pooling", pooling, ("last", "mean"))
    # the models with this pooling (a static store has only 'static'), its title names one
    result, tag = fg.one_model(fg.with_data(result, variable, setting=setting, pooling=pooling))
    layers = np.asarray(result["layer"].values)
    members = fg.labels(result, group)
    colors = dict(zip(members, fg.ordered_colors(len(members)) if len(members) > len(fg.PALETTE)
                      else fg.PALETTE, strict=False))

    def panel(model: Any) -> curves.Panel:
        return curves.Panel(title=str(model) if model is not None else "", curves=[
            curves.Curve(y=fg.values(fg.sel(result[variable], model=model, setting=setting,
                                            pooling=pooling, **{group: member})),
                         color=colors[member], label=str(member),
                         shift=(k - (len(members) - 1) / 2) * 0.04 if layers.size == 1 else 0.0,
                         style={"ls": fg.LINESTYLES[k % len(fg.LINESTYLES)],
                                "marker": fg.MARKERS[k % len(fg.MARKERS)], "ms": 3})
            for k, member in enumerate(members)])

    def layer_tick(ax: Any, _x: np.ndarray, _panel: curves.Panel) -> None:
        if layers.size == 1:
            ax.set_xticks([float(layers[0])], [f"layer {int(layers[0])}"])

    models = fg.labels(result, "model")
    return curves.draw_layer_curves(curves.LayerCurves(
        layers=layers, panels=[panel(m) for m in models], relative_depth=relative_depth,
        max_cols=2, panel_height=2.3, extra_height=1.0,
        width=fg.PAGE_WIDTH if len(models) > 1 else fg.PAGE_WIDTH * 0.7, title_size=6.8,
        ylabel=ylabel, ylabels="first", reference=0.0, reference_above=True, ylim=ylim,
        one_layer="tick", on_panel=layer_tick,
        legend=partial(fg.legend, ncols=min(len(members), 3)),
        title=fg.wrap(f"{title} — setting {setting}, {pooling} pooling{tag}", 60)))


@fg.styled
def reliability_by_layer(result: xr.Dataset, *, setting: str | None = None,
                         pooling: str | None = None, relative_depth: bool = False) -> Figure:
    """Each test's split-half reliability (Spearman–Brown) by layer."""
    fg.require(result, ["reliability"], "a reliability figure")
    return _layer_panels(result, "reliability", "split-half reliability (Spearman-Brown)",
                         "Reliability of the target words' scores over attribute halves",
                         group="test", setting=setting, pooling=pooling,
                         relative_depth=relative_depth, ylim=(-1.05, 1.05))


@fg.styled
def agreement_by_layer(result: xr.Dataset, *, setting: str | None = None,
                       pooling: str | None = None, relative_depth: bool = False) -> Figure:
    """Spearman's r over the tests between every two metrics (|d|, |RIPA|, 1 − ECT, MAC), by layer."""
    fg.require(result, ["agreement"], "an agreement figure")
    n = int(np.nanmax(fg.values(result["n_tests"]))) if "n_tests" in result else 0
    return _layer_panels(result, "agreement", f"Spearman r over {n} tests",
                         "Agreement of the metrics across tests", group="pair", setting=setting,
                         pooling=pooling, relative_depth=relative_depth, ylim=(-1.05, 1.05))
