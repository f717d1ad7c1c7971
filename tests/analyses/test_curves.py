"""The one drawer of the "metric by layer" figures: panels, curves on the layer or relative-depth
axis, bands, the reference line, the labels, and the three ways of drawing one layer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from matplotlib.collections import PolyCollection

from emb.analyses import _figure as fg
from emb.analyses.curves import Curve, LayerCurves, Panel, draw_layer_curves

NAN = np.nan


def _spec(layers: Any, panels: list[Panel], **kwargs: Any) -> LayerCurves:
    return LayerCurves(layers=np.asarray(layers), panels=panels, ylabel="d", title="d by layer", **kwargs)


def _data_lines(ax: Any) -> list[Any]:
    return [ln for ln in ax.get_lines() if ln.get_transform() is ax.transData]


def test_a_panel_per_panel_a_line_per_curve_the_labels_and_the_legend() -> None:
    y = np.array([0.1, 0.4, 0.2])
    panels = [Panel(title=f"test {i}", curves=[Curve(y=y + i, color="red", label="one"),
                                                Curve(y=-y, color="blue", label="_hidden")])
              for i in range(5)]
    fig = draw_layer_curves(_spec([0, 1, 2], panels, max_cols=3))
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == [f"test {i}" for i in range(5)]
    assert all(len(_data_lines(ax)) == 2 for ax in axes)
    np.testing.assert_array_equal(_data_lines(axes[4])[0].get_ydata(), y + 4)
    assert [ax.get_ylabel() for ax in axes] == ["d", "", "", "d", ""]
    # the x label only on the lowest panel of each column (the third column's is in the first row)
    assert [ax.get_xlabel() for ax in axes] == ["", "", "layer", "layer", "layer"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["one"]
    assert fig._suptitle.get_text() == "d by layer"
    # the reference line at 0, under the curves
    zero = [ln for ln in axes[0].get_lines() if ln not in _data_lines(axes[0])]
    assert len(zero) == 1 and zero[0].get_zorder() == 0 and list(zero[0].get_ydata()) == [0, 0]


def test_relative_depth_puts_each_curve_on_its_own_last_layer() -> None:
    short = np.array([0.1, 0.2, NAN, NAN])
    long = np.array([0.1, 0.2, 0.3, 0.4])
    panel = Panel(title="", curves=[Curve(y=short, color="red"), Curve(y=long, color="blue")])
    fig = draw_layer_curves(_spec([0, 1, 2, 3], [panel], relative_depth=True))
    ax = fig.axes[0]
    first, second = _data_lines(ax)
    np.testing.assert_allclose(first.get_xdata(), [0, 1])  # layer / 1, its last layer with a value
    np.testing.assert_allclose(second.get_xdata(), [0, 1 / 3, 2 / 3, 1])
    assert ax.get_xlabel() == "relative depth (layer / last)"


def test_a_band_in_the_curves_colour_or_its_own_and_a_thinned_long_curve() -> None:
    y = np.linspace(0, 1, 30)
    panel = Panel(title="", curves=[
        Curve(y=y, color="red", band=(y - 0.1, y + 0.1), band_alpha=0.3, thin=True, style={"marker": "o"}),
        Curve(y=-y, color="blue", band=(-y - 0.1, -y + 0.1), band_color="0.5")])
    ax = draw_layer_curves(_spec(np.arange(30), [panel])).axes[0]
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    assert bands[0].get_alpha() == pytest.approx(0.3)
    np.testing.assert_allclose(bands[1].get_facecolor()[0][:3], [0.5, 0.5, 0.5])
    marked = _data_lines(ax)[0].get_markevery()
    assert marked == fg.thinned(30).tolist() and len(marked) < 30


def test_one_layer_as_categories_as_a_tick_or_as_the_figure_draws_it() -> None:
    curves = [Curve(y=np.array([0.5]), color="red", tick="bleached"),
              Curve(y=np.array([0.2]), color="blue", tick="aligned", shift=0.25)]
    ax = draw_layer_curves(_spec([7], [Panel(title="", curves=curves)], one_layer="categories")).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["bleached", "aligned"]
    assert [float(ln.get_xdata()[0]) for ln in _data_lines(ax)] == [0.0, 1.0]
    assert ax.get_xlabel() == ""

    ax = draw_layer_curves(_spec([7], [Panel(title="", curves=curves)], one_layer="tick")).axes[0]
    assert [float(ln.get_xdata()[0]) for ln in _data_lines(ax)] == [7.0, 7.25]
    assert ax.get_xlabel() == ""

    drawn = []
    draw_layer_curves(_spec([7], [Panel(title="", curves=curves)],
                            one_point=lambda ax, x, curve: drawn.append((float(x[0]), curve.tick))))
    assert drawn == [(7.0, "bleached"), (7.25, "aligned")]


def test_the_hooks_see_each_curve_and_each_panel() -> None:
    seen: list[Any] = []
    panels = [Panel(title=str(i), key={"i": i}, curves=[Curve(y=np.array([1.0, 2.0]), color="k", key={"c": i})])
              for i in range(2)]
    draw_layer_curves(_spec([3, 4], panels, ylabels="first", reference=None, ylim=(-1, 5),
                            on_curve=lambda ax, x, c: seen.append(("curve", c.key["c"], x.tolist())),
                            on_panel=lambda ax, x, p: seen.append(("panel", p.key["i"], ax.get_ylim()))))
    assert seen == [("curve", 0, [3.0, 4.0]), ("panel", 0, (-1.0, 5.0)),
                    ("curve", 1, [3.0, 4.0]), ("panel", 1, (-1.0, 5.0))]
