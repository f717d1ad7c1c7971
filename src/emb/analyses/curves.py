"""One drawer for the families' "<metric> by layer" figures (matplotlib, no pyplot state; the house
style of :mod:`emb.analyses._figure`).

A family's figure function picks its cell (one model, one pooling, a lexicon …), says what each
panel draws as a :class:`LayerCurves` (its panels, each a title and its :class:`Curve` s: the
values by layer, colour, line style, an optional band) and calls :func:`draw_layer_curves`, which
lays out the grid, puts each curve on the layer axis (or the relative depth, layer / the model's
last layer, NaN layers of a shorter model left out), draws the reference line, dresses the axes,
labels the first column and the lowest row, and adds the legend and the title. What only one
figure draws (significance markers, a count in a corner) comes through the two hooks,
``on_curve`` and ``on_panel``.

A store of one layer (static vectors) is drawn as the figure declares (``one_layer``): as a curve
of one point (:func:`emb.analyses._figure.fit_to_canvas` then makes the layer one category), as
points on one tick ``layer N`` without an x label, or each curve as a point on a category of its
own, named by the curve's ``tick``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from matplotlib.figure import Figure

from emb.analyses import _figure as fg

__all__ = ["Curve", "LayerCurves", "Panel", "draw_layer_curves"]


@dataclass(frozen=True, kw_only=True)
class Curve:
    """One line of a panel.

    Parameters
    ----------
    y : numpy.ndarray
        The values, one per layer of :attr:`LayerCurves.layers` (NaN: not drawn).
    color : Any
        Its colour (and its band's, unless ``band_color``).
    label : str
        Its legend entry (``"_…"``: none).
    style : mapping
        More of :func:`emb.analyses._figure.line`'s keywords (``marker``, ``ms``, ``ls``, ``zorder`` …).
    band : (numpy.ndarray, numpy.ndarray), optional
        Lower and upper edge of a shaded band drawn with it.
    band_alpha : float
        The band's opacity.
    band_color : Any, optional
        The band's colour, where it is not the line's.
    bars : (numpy.ndarray, numpy.ndarray), optional
        Lower and upper end of a second interval, drawn as a thin vertical bar at each layer
        (under the line).
    shift : float
        How far the curve sits to the right of its layers (curves side by side, bars apart).
    thin : bool
        Mark only every few points of a long curve (:func:`emb.analyses._figure.thinned`).
    finite : numpy.ndarray, optional
        The layers that count for the relative depth (default: where ``y`` is finite).
    tick : str
        Its category's name where the store has one layer and the figure draws each curve on a
        category of its own (``one_layer="categories"``).
    key : mapping
        What the curve shows (its model, setting …), for the figure's hooks.
    """

    y: np.ndarray
    color: Any
    label: str = "_"
    style: Mapping[str, Any] = field(default_factory=dict)
    band: tuple[np.ndarray, np.ndarray] | None = None
    band_alpha: float = 0.18
    band_color: Any = None
    bars: tuple[np.ndarray, np.ndarray] | None = None
    shift: float = 0.0
    thin: bool = False
    finite: np.ndarray | None = None
    tick: str = ""
    key: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Panel:
    """One panel: its title and its curves (``key``: what it shows, for the figure's hooks)."""

    title: str
    curves: Sequence[Curve]
    key: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class LayerCurves:
    """What a "<metric> by layer" figure draws.

    Parameters
    ----------
    layers : numpy.ndarray
        The layer numbers the curves' values are at.
    panels : sequence of Panel
        The panels, row-major.
    ylabel, title : str
        The y label (on the first panel of each row, or of the figure: ``ylabels``) and the
        figure's title.
    relative_depth : bool
        x = layer / the model's last layer instead of the layer number.
    max_cols, panel_height, sharey, width, extra_height
        The grid (:func:`emb.analyses._figure.grid`).
    title_size : float, optional
        The panels' title size (default: the house style's).
    reference : float, optional
        A horizontal reference line's value (default 0; None: no line), drawn under the curves
        (or over them, ``reference_above``).
    ylim : (float, float), optional
        Fixed y limits.
    ylabels : {"column", "first"}
        The y label on the first panel of each row, or on the figure's first panel only.
    one_layer : {"curve", "tick", "categories"}
        A store of one layer: drawn as curves of one point; as points with no x label (the
        figure names its one layer on the tick: ``on_panel``); or each curve on a category of
        its own.
    legend : callable
        ``legend(fig, axes)``: the figure's legend (default: every labelled line once, below).
    one_point : callable, optional
        ``one_point(ax, x, curve)`` draws a curve where the store has one layer (default: as a
        curve of one point; an error bar of its band, say).
    on_curve : callable, optional
        ``on_curve(ax, x, curve)``, after a curve (and its band) is drawn.
    on_panel : callable, optional
        ``on_panel(ax, x, panel)``, after a panel is dressed (``x``: its last curve's).
    """

    layers: np.ndarray
    panels: Sequence[Panel]
    ylabel: str
    title: str
    relative_depth: bool = False
    max_cols: int = 4
    panel_height: float = fg.PANEL_HEIGHT
    sharey: bool = True
    width: float | None = None
    extra_height: float = 0.8
    title_size: float | None = None
    reference: float | None = 0.0
    reference_above: bool = False
    ylim: tuple[float, float] | None = None
    ylabels: Literal["column", "first"] = "column"
    one_layer: Literal["curve", "tick", "categories"] = "curve"
    legend: Callable[[Figure, list[Any]], Any] = fg.legend
    one_point: Callable[[Any, np.ndarray, Curve], Any] | None = None
    on_curve: Callable[[Any, np.ndarray, Curve], Any] | None = None
    on_panel: Callable[[Any, np.ndarray, Panel], Any] | None = None


def _x(spec: LayerCurves, curve: Curve, k: int) -> tuple[np.ndarray, str]:
    """The x positions of curve ``k`` of a panel, and the x label."""
    layers = np.asarray(spec.layers)
    if layers.size == 1 and spec.one_layer == "categories":
        return np.array([float(k)]), ""
    finite = np.isfinite(curve.y) if curve.finite is None else curve.finite
    x, xlabel = fg.depth_axis(layers, finite, spec.relative_depth)
    return (x + curve.shift if curve.shift else x), xlabel


def _draw_curve(ax: Any, x: np.ndarray, curve: Curve) -> None:
    style = dict(curve.style)
    if curve.bars is not None:
        ax.vlines(x, *curve.bars, color=curve.color, lw=0.7, alpha=0.7)
    if curve.thin:
        style["markevery"] = fg.thinned(int((np.isfinite(x) & np.isfinite(curve.y)).sum())).tolist()
    fg.line(ax, x, curve.y, color=curve.color, label=curve.label, **style)
    if curve.band is not None:
        color = curve.color if curve.band_color is None else curve.band_color
        fg.band(ax, x, *curve.band, color, alpha=curve.band_alpha)


def _dress(ax: Any, spec: LayerCurves, panel: Panel, xlabel: str) -> None:
    """The panel's reference line, title, limits and axes."""
    one = np.asarray(spec.layers).size == 1
    if spec.reference is not None:
        ax.axhline(spec.reference, color="0.55", lw=0.6, **({} if spec.reference_above else {"zorder": 0}))
    if spec.ylim:
        ax.set_ylim(*spec.ylim)
    ax.set_title(panel.title, **({} if spec.title_size is None else {"fontsize": spec.title_size}))
    if one and spec.one_layer == "categories":
        ax.set_xticks(range(len(panel.curves)), [c.tick for c in panel.curves], rotation=30, ha="right")
        ax.set_xlim(-0.6, len(panel.curves) - 0.4)
        ax.grid(alpha=0.3, axis="y")
        return
    bare = one and spec.one_layer == "tick"
    fg.finish_axes(ax, xlabel=None if bare else xlabel, integer_x=not spec.relative_depth and not bare,
                   zero=False)


def draw_layer_curves(spec: LayerCurves) -> Figure:
    """Draw ``spec``: one panel per :class:`Panel`, one line per :class:`Curve`; the figure.

    Call it inside a figure function decorated with :func:`emb.analyses._figure.styled` (the
    house style's fonts and sizes)."""
    fig, axes, n_cols = fg.grid(len(spec.panels), max_cols=spec.max_cols,
                                panel_height=spec.panel_height, sharey=spec.sharey,
                                width=spec.width, extra_height=spec.extra_height)
    xlabel = "layer"
    x = np.asarray(spec.layers, dtype=np.float64)
    for ax, panel in zip(axes, spec.panels, strict=True):
        for k, curve in enumerate(panel.curves):
            x, xlabel = _x(spec, curve, k)
            if spec.one_point is not None and np.asarray(spec.layers).size == 1:
                spec.one_point(ax, x, curve)
            else:
                _draw_curve(ax, x, curve)
            if spec.on_curve is not None:
                spec.on_curve(ax, x, curve)
        _dress(ax, spec, panel, xlabel)
        if spec.on_panel is not None:
            spec.on_panel(ax, x, panel)
    for ax in axes[::n_cols] if spec.ylabels == "column" else axes[:1]:
        ax.set_ylabel(spec.ylabel)
    if not (np.asarray(spec.layers).size == 1 and spec.one_layer == "categories"):
        fg.outer_xlabels(axes)
    spec.legend(fig, axes)
    fig.suptitle(spec.title)
    return fig
