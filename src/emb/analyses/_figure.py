"""The house style of emb's figures: sizes for a paper's columns, fonts, colours, legends.

Figures are plain matplotlib :class:`~matplotlib.figure.Figure` objects (no pyplot, no global
state): a one-panel figure is one column wide (3.5 in), anything else two columns (7 in), with
7.5 pt text, so that they print at 100 % in a two-column paper. Colours are the Okabe–Ito palette
(distinguishable with the common colour-vision deficiencies); ordered quantities (k components)
use the ordered viridis colormap. Every band and marker style is explained in the legend.
"""

from __future__ import annotations

import functools
import math
import re
import textwrap
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.collections import PolyCollection, QuadMesh
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.offsetbox import DrawingArea
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from emb.errors import AnalysisError
from emb.text import names, unknown_names

__all__ = [
    "COLUMN_WIDTH",
    "PAGE_WIDTH",
    "band_handle",
    "colors_for",
    "fit_to_canvas",
    "fitted_legend",
    "grid",
    "styled",
]

#: One column of a two-column paper, and the full text width (inches).
COLUMN_WIDTH = 3.5
PAGE_WIDTH = 7.0
#: Height of one row of panels (inches).
PANEL_HEIGHT = 1.75
_RC = {
    "font.size": 7.5,
    "axes.titlesize": 7.5,
    "axes.labelsize": 7.5,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
    "figure.titlesize": 8.5,
    "lines.linewidth": 1.2,
    "lines.markersize": 3.2,
    "axes.linewidth": 0.6,
    "grid.linewidth": 0.4,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "pdf.fonttype": 42,  # TrueType in PDFs: text stays text for journals' checks
    "svg.fonttype": "none",
}
#: Okabe & Ito (2008) colour-blind-safe palette (black last).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
#: Settings in the paper's order, each with a fixed colour so that figures compare at a glance.
SETTING_ORDER = ("bleached", "aligned", "misaligned", "random", "alone")
POOLING_ORDER = ("first", "last", "mean", "max")
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)))
#: Marker shapes that go with :data:`LINESTYLES` (a third cue beside colour and line style).
MARKERS = ("o", "s", "^", "D", "v")
#: A curve with more layers than this gets its plain markers thinned (they would hide the line).
DENSE_LAYERS = 12
#: The colours of the two values of an attribute pair (A, B), and of projection and cosine
#: (the valence-subspace and intersectional figures).
COLOUR_A, COLOUR_B = "#1b6ca8", "#d1495b"

F = TypeVar("F", bound=Callable[..., Figure])


def styled(func: F) -> F:
    """Draw ``func``'s figure under the house style (an ``rc_context``: no global change)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        with mpl.rc_context(_RC):
            return fit_to_canvas(func(*args, **kwargs))

    return wrapper  # type: ignore[return-value]


#: Room kept free at each side of the canvas for a title or legend (inches).
_MARGIN = 0.1


def _renderer(fig: Figure) -> Any:
    """A renderer to measure ``fig``'s text with (an Agg canvas is attached when the figure has
    none that renders: a bare :class:`~matplotlib.figure.Figure`)."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def _wrap_to(text: Any, renderer: Any, width: float) -> None:
    """Re-wrap a :class:`~matplotlib.text.Text` at word boundaries until it is at most ``width``
    pixels wide (or cannot be wrapped further)."""
    words = " ".join(text.get_text().split("\n"))
    n_chars = len(words)
    while text.get_window_extent(renderer).width > width and n_chars > 12:
        n_chars = int(n_chars * 0.85)
        text.set_text(wrap(words, n_chars))


def _rgb(color: Any) -> tuple[float, ...]:
    return tuple(round(c, 4) for c in mpl.colors.to_rgba(color)[:3])


def _data_lines(ax: Any) -> list[Any]:
    return [ln for ln in ax.get_lines() if ln.get_transform() is ax.transData]


def _single_x(ax: Any) -> float | None:
    """The one x of everything an axes draws in data coordinates (lines and bands), or None
    when it draws at several x, or draws a map (a heat map's cells are not points)."""
    if ax.images or any(isinstance(c, QuadMesh) for c in ax.collections):
        return None
    xs: set[float] = set()
    for line in _data_lines(ax):
        x = np.asarray(line.get_xdata(), dtype=np.float64)
        xs.update(np.round(x[np.isfinite(x)], 9).tolist())
    for coll in ax.collections:
        if isinstance(coll, PolyCollection):
            for path in coll.get_paths():
                x = path.vertices[:, 0]
                xs.update(np.round(x[np.isfinite(x)], 9).tolist())
    return xs.pop() if len(xs) == 1 else None


def _is_layer_label(label: str) -> bool:
    return "layer" in label or "depth" in label


def _series_offsets(ax: Any, bands: list[Any]) -> tuple[dict[tuple[float, ...], float], float]:
    """Each series' sideways offset at the one layer (a series' colour: its markers' edge, the
    line's by default, then the bands' faces, in the order drawn), and the slots' width."""
    order: list[tuple[float, ...]] = []
    for line in _data_lines(ax):
        if _rgb(line.get_markeredgecolor()) not in order:
            order.append(_rgb(line.get_markeredgecolor()))
    for coll in bands:
        face = coll.get_facecolor()
        if len(face) and _rgb(face[0]) not in order:
            order.append(_rgb(face[0]))
    width = 0.5 if len(order) > 1 else 0.0
    return ({c: (i / (len(order) - 1) - 0.5) * width if len(order) > 1 else 0.0
             for i, c in enumerate(order)}, width)


def _band_as_bar(ax: Any, coll: Any, x0: float, offset: dict[tuple[float, ...], float]) -> None:
    """A band at one x (a zero-width area) drawn again as its series' error bar."""
    face = coll.get_facecolor()
    ys = np.concatenate([p.vertices[:, 1] for p in coll.get_paths()] or [np.array([np.nan])])
    ys = ys[np.isfinite(ys)]
    coll.remove()
    if ys.size and len(face):
        color = _rgb(face[0])
        ax.errorbar([x0 + offset[color]], [(ys.min() + ys.max()) / 2],
                    yerr=[[(ys.max() - ys.min()) / 2], [(ys.max() - ys.min()) / 2]],
                    fmt="none", ecolor=color, elinewidth=1.0, capsize=2.5, zorder=2)


def one_layer_axes(ax: Any, *, layered: bool = False) -> bool:
    """Dress an axes whose x is the layer but that holds one layer (a static store): the layer
    is one category (one tick, no continuous axis from -0.045 to 0.045), the series drawn side by
    side (one slot per colour, in the order drawn), and a band, a zero-width area at one x,
    becomes an error bar of its series. A heat map keeps its one column, with one tick.
    ``layered``: the figure's x is the layer even where a panel's own label was left out (only
    the lowest panel of a column keeps it). Returns whether a band became an error bar (the
    legend's band entries then say so: :func:`bands_as_bars_in_legends`)."""
    label = ax.get_xlabel()
    if not ax.get_visible() or not (_is_layer_label(label) or (layered and not label)):
        return False
    x0 = _single_x(ax)
    lo, hi = sorted(ax.get_xlim())
    if x0 is None:
        ticks = [t for t in range(math.ceil(lo), math.floor(hi) + 1)]
        if 0 < len(ticks) <= 1 and hi - lo <= 1.5:  # one column of a map
            ax.set_xticks(ticks)
        return False
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    offset, width = _series_offsets(ax, bands)
    for line in _data_lines(ax):
        x = np.asarray(line.get_xdata(), dtype=np.float64)
        line.set_xdata(x + offset[_rgb(line.get_markeredgecolor())])
        if line.get_marker() in ("None", "", " ", None) and line.get_linewidth() >= 1.0:
            line.set_marker("o")  # a curve of one point shows only as a marker (thin edges stay)
    for coll in bands:
        _band_as_bar(ax, coll, x0, offset)
    ax.set_xticks([x0], [f"{x0:g}"])
    ax.set_xlim(x0 - 0.5 - width / 2, x0 + 0.5 + width / 2)
    if label and "the store has one" not in label:
        ax.set_xlabel(f"{label} (the store has one)")
    return bool(bands)


#: How a legend entry names a shaded band ("shaded: 95% CI", "shaded, thin edges: …", "band: …").
_BAND_WORDS = re.compile(r"^\s*(?:shaded|band)\b(?:,[^:]*)?:\s*", re.IGNORECASE)


def _is_band_entry(handle: Any, text: str) -> bool:
    """A legend entry that explains a band: its glyph a translucent patch (how
    :func:`band_handle` and the families draw one), or its text naming a shaded band."""
    if _BAND_WORDS.match(text):
        return True
    alpha = handle.get_alpha() if isinstance(handle, Patch) else None
    return isinstance(handle, Patch) and alpha is not None and alpha < 1


def _handle_box(legend: Any, handle: Any) -> Any:
    """The legend's drawing area that holds the glyph ``handle``."""
    stack = list(legend.get_children())
    while stack:
        child = stack.pop()
        if isinstance(child, DrawingArea) and handle in child.get_children():
            return child
        if hasattr(child, "get_children"):
            stack.extend(child.get_children())
    return None


def bands_as_bars_in_legends(fig: Figure) -> None:
    """Make the legends say what a one-layer figure draws once its bands became error bars
    (:func:`one_layer_axes`): each band entry's shaded glyph becomes an error bar of its colour,
    and its text says "bar:" where it said "shaded:" or "band:" (a legend read "shaded: 95% CI"
    under a figure that draws no shading)."""
    for legend in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]:
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=False):
            if handle is None or not _is_band_entry(handle, text.get_text()):
                continue
            text.set_text(_BAND_WORDS.sub("bar: ", text.get_text()))
            box = _handle_box(legend, handle)
            if box is None or not isinstance(handle, Patch):
                continue
            x0, y0 = handle.get_x(), handle.get_y()
            w, h = handle.get_width(), handle.get_height()
            color = _rgb(handle.get_facecolor())
            handle.set_visible(False)
            box.add_artist(Line2D([x0 + w / 2] * 2, [y0 - 0.15 * h, y0 + 1.15 * h], color=color,
                                  lw=1.0, marker="_", markersize=5, markeredgewidth=1.0))


def _fit_axis_labels(fig: Figure) -> None:
    """Wrap an axis label longer than the canvas leaves it (an x label wider than the figure, a
    y label or colour-bar label taller than it, an axes title that reaches past the canvas's
    edge): constrained layout places labels but never shortens them. Measured once the layout
    has run."""
    labels = [(ax.xaxis.label, "x", ax) for ax in fig.axes if ax.get_visible() and ax.get_xlabel()]
    labels += [(ax.yaxis.label, "y", ax) for ax in fig.axes if ax.get_visible() and ax.get_ylabel()]
    # an axes title wider than its panel: centred on it, it can reach past the canvas's edge
    # (a narrow last column; constrained layout of matplotlib < 3.9 leaves it there)
    labels += [(ax.title, "title", ax) for ax in fig.axes if ax.get_visible() and ax.get_title()]
    if not labels:
        return
    renderer = _renderer(fig)
    fig.draw_without_rendering()
    canvas = fig.bbox
    pad = _MARGIN * fig.dpi
    for label, axis, ax in labels:
        box = label.get_window_extent(renderer)
        if axis == "title":
            if box.x0 < canvas.x0 + pad or box.x1 > canvas.x1 - pad:
                _wrap_to(label, renderer, ax.get_window_extent(renderer).width)
        elif axis == "x" and (box.x0 < canvas.x0 + pad or box.x1 > canvas.x1 - pad):
            _wrap_to(label, renderer, min(box.width, canvas.width - 2 * pad) * 0.7)
        elif axis == "y" and (box.y0 < canvas.y0 + pad or box.y1 > canvas.y1 - pad
                              or box.height > 1.25 * ax.get_window_extent(renderer).height):
            room = min(canvas.height - 2 * pad, 1.25 * ax.get_window_extent(renderer).height)
            words = " ".join(label.get_text().split("\n"))
            n_chars = len(words)
            while label.get_window_extent(renderer).height > room * 0.8 and n_chars > 12:
                n_chars = int(n_chars * 0.85)
                label.set_text(wrap(words, n_chars))


def fit_to_canvas(fig: Figure) -> Figure:
    """Fit a figure to its canvas, as the saved file will show it: a long suptitle is wrapped
    (constrained layout makes room for its height, never for its width: a title wider than a
    one-column figure was cut off at both sides; :func:`fitted_legend` does the same for a
    legend), and an axes of one layer is drawn as one category (:func:`one_layer_axes`), its
    bands as error bars, which the legend then shows and names (:func:`bands_as_bars_in_legends`).
    Returns ``fig``."""
    if not isinstance(fig, Figure):
        return fig
    layered = any(_is_layer_label(ax.get_xlabel()) for ax in fig.axes if ax.get_visible())
    converted = [one_layer_axes(ax, layered=layered) for ax in fig.axes]
    shaded_left = any(isinstance(c, PolyCollection) for ax in fig.axes if ax.get_visible()
                      for c in ax.collections)
    if any(converted) and not shaded_left:  # every band is an error bar now: so is the legend's
        bands_as_bars_in_legends(fig)
    _fit_axis_labels(fig)
    renderer = _renderer(fig)
    room = fig.bbox.width - 2 * _MARGIN * fig.dpi
    suptitle = fig._suptitle
    if suptitle is not None and suptitle.get_text():
        _wrap_to(suptitle, renderer, room)
    return fig


def grid(
    n_panels: int,
    *,
    max_cols: int = 4,
    n_cols: int | None = None,
    panel_height: float = PANEL_HEIGHT,
    sharey: bool = True,
    sharex: bool = False,
    width: float | None = None,
    extra_height: float = 0.8,
) -> tuple[Figure, list[Any], int]:
    """A figure of ``n_panels`` axes, row-major, one column wide for a single panel and two
    columns wide otherwise; unused cells are hidden. Returns (figure, axes, n_cols)."""
    n_panels = max(1, n_panels)
    cols = n_cols or min(n_panels, max_cols)
    rows = math.ceil(n_panels / cols)
    fig_width = width or (COLUMN_WIDTH if cols == 1 else PAGE_WIDTH)
    fig = Figure(figsize=(fig_width, rows * panel_height + extra_height), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharey=sharey, sharex=sharex).ravel().tolist()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:n_panels], cols


def finish_axes(ax: Any, *, xlabel: str | None, integer_x: bool = True, zero: bool = True) -> None:
    """Grid, zero line, integer ticks, label: the common dress of a line panel."""
    if zero:
        ax.axhline(0, color="0.55", lw=0.6, zorder=0)
    if xlabel:
        ax.set_xlabel(xlabel)
    if integer_x:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)


def model_rows(
    models: Sequence[Any], per_model: Callable[[Any], Sequence[Any]] | Sequence[Any], *, max_cols: int = 4
) -> tuple[list[tuple[Any, Any] | None], int]:
    """Cells for a grid with one row per model (a model with more than ``max_cols`` panels wraps
    onto rows of its own): ``(model, value)`` row-major, ``None`` where a cell stays empty, and the
    number of columns. ``per_model`` lists the panel values, or gives them for each model."""
    values_of = per_model if callable(per_model) else (lambda _m: per_model)
    rows = {m: list(values_of(m)) for m in models}
    n_cols = max(1, min(max(len(v) for v in rows.values()) if rows else 1, max_cols))
    cells: list[tuple[Any, Any] | None] = []
    for m, vals in rows.items():
        cells += [(m, v) for v in vals]
        cells += [None] * (-len(vals) % n_cols)
    return cells, n_cols


def thinned(n: int, limit: int = DENSE_LAYERS) -> np.ndarray:
    """Indices of ``n`` points to mark: all of them up to ``limit``, else every ``step``-th one
    (``step = ceil(n / 10)``) and the last."""
    if n <= limit:
        return np.arange(n)
    keep = np.arange(0, n, math.ceil(n / 10))
    return np.union1d(keep, [n - 1])


def outer_xlabels(axes: Sequence[Any]) -> None:
    """Keep the x label only on the lowest visible panel of each column (grids of many panels)."""
    lowest: dict[int, Any] = {}
    for ax in axes:
        if not ax.get_visible():
            continue
        spec = ax.get_subplotspec()
        if spec is None:
            continue
        col, row = spec.colspan.start, spec.rowspan.start
        if col not in lowest or row > lowest[col].get_subplotspec().rowspan.start:
            lowest[col] = ax
    keep = {id(a) for a in lowest.values()}
    for ax in axes:
        if ax.get_visible() and id(ax) not in keep:
            ax.set_xlabel("")


def legend(fig: Figure, axes: Sequence[Any], extra: Sequence[tuple[Any, str]] = (),
           *, ncols: int | None = None, title: str | None = None, markerscale: float = 1.0,
           loc: str = "outside lower center", **kwargs: Any) -> None:
    """One legend below the panels (or at ``loc``): every labelled line of every panel once (a
    line drawn only in a later panel too), then the explanations (``kwargs``: more of
    ``fig.legend``'s, as ``fontsize``)."""
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels and not lab.startswith("_"):
                handles.append(h)
                labels.append(lab)
    for h, lab in extra:
        handles.append(h)
        labels.append(lab)
    if handles:
        fitted_legend(fig, handles, labels, loc=loc, frameon=False, title=title,
                      ncols=ncols or min(len(labels), 4), handlelength=2.2, columnspacing=1.2,
                      markerscale=markerscale, **kwargs)


#: A legend entry longer than this (characters) is wrapped before its legend loses a column.
_LONG_ENTRY = 40


def fitted_legend(fig: Figure, handles: Sequence[Any], labels: Sequence[str], *, ncols: int = 1,
                  **kwargs: Any) -> Any:
    """``fig.legend(handles, labels, ncols=ncols, **kwargs)`` that fits the canvas's width (a
    four-column legend under a one-column figure was cut off at both sides): long entries
    (over :data:`_LONG_ENTRY` characters) are wrapped first, keeping the columns (one tall
    column would squeeze the panels); short ones go into fewer columns; at one column the
    entries and the title are wrapped."""
    renderer = _renderer(fig)
    room = fig.bbox.width - 2 * _MARGIN * fig.dpi
    labels = list(labels)
    title = kwargs.pop("title", None)
    ncols = max(1, min(int(ncols), len(labels) or 1))
    for _ in range(len(labels) + 8):
        leg = fig.legend(handles, labels, ncols=ncols, title=title, **kwargs)
        width = leg.get_window_extent(renderer).width
        if width <= room:
            break
        entry = max((len(line) for text in labels for line in text.split("\n")), default=0)
        widest = max(entry, *(len(line) for line in (title or "").split("\n")))
        if ncols > 1 and entry <= _LONG_ENTRY:
            ncols -= 1
        else:  # wrap the longest lines
            limit = max(12, int(widest * room / width * 0.95))
            if limit >= widest:
                break
            labels = [wrap(" ".join(lab.split("\n")), limit) for lab in labels]
            title = wrap(" ".join(title.split("\n")), limit) if title else title
        leg.remove()
    return leg


def band_handle(label: str, color: str = "0.45", alpha: float = 0.25) -> tuple[Any, str]:
    """A legend entry for a shaded band."""
    return Patch(facecolor=color, alpha=alpha, edgecolor="none"), label


def marker_handles(filled_label: str, open_label: str) -> list[tuple[Any, str]]:
    """Legend entries explaining filled and open markers."""
    filled = Line2D([], [], ls="", marker="o", color="0.3", ms=4)
    hollow = Line2D([], [], ls="", marker="o", mfc="white", mec="0.3", ms=4)
    return [(filled, filled_label), (hollow, open_label)]


def colors_for(values: Sequence[Any], *, kind: str = "") -> dict[Any, str]:
    """Fixed colours: settings by their place in :data:`SETTING_ORDER`, others in order."""
    out: dict[Any, str] = {}
    free = [c for i, c in enumerate(PALETTE) if kind != "setting" or i >= len(SETTING_ORDER)]
    j = 0
    for v in values:
        if kind == "setting" and v in SETTING_ORDER:
            out[v] = PALETTE[SETTING_ORDER.index(v)]
        else:
            out[v] = (free or list(PALETTE))[j % len(free or PALETTE)]
            j += 1
    return out


def ordered_colors(n: int, *, start: float = 0.0, stop: float = 0.88) -> list[Any]:
    """``n`` colours of the ordered viridis map (dark = small), for ordered values like k;
    ``start``/``stop`` pick the stretch of the map (its dark end is hard to tell apart on thin
    lines, so a scale after a black reference starts further in)."""
    cmap = mpl.colormaps["viridis"]
    return [cmap(x) for x in np.linspace(start, stop, max(n, 1))]


def values(da: xr.DataArray) -> np.ndarray:
    return np.asarray(da.values, dtype=np.float64)


def labels(result: xr.Dataset, dim: str) -> list[Any]:
    """Plain values of ``dim`` in the house order ([None] when the result lacks the dim)."""
    if dim not in result.dims:
        return [None]
    raw = list(result[dim].values) if dim in result.coords else list(range(result.sizes[dim]))
    vals = [v.item() if hasattr(v, "item") else v for v in raw]
    order = {"setting": SETTING_ORDER, "pooling": POOLING_ORDER}.get(dim)
    if order:
        vals.sort(key=lambda v: (order.index(v) if v in order else len(order), str(v)))
    return vals


def sel(da: xr.DataArray, **indexers: Any) -> xr.DataArray:
    """``da.sel`` for the indexers whose dim exists (a ``None`` value is skipped)."""
    use = {k: v for k, v in indexers.items() if v is not None and k in da.dims}
    return da.sel(use) if use else da


def model_list(result: xr.Dataset) -> list[Any]:
    """The models of a run over several stores, or ``[None]`` for one store (no ``model`` dim)."""
    return list(result["model"].values) if "model" in result.dims else [None]


def at_model(da: xr.DataArray, model: Any) -> xr.DataArray:
    """``da`` at one of :func:`model_list`'s models (``None``: ``da`` as it is)."""
    return da.sel(model=model) if model is not None and "model" in da.dims else da


def model_label(model: Any) -> str:
    """A model of :func:`model_list` as a title's words (``""`` for ``None``)."""
    return "" if model is None else str(model)


def declared_pooling(result: xr.Dataset) -> str:
    """The pooling a one-pooling figure draws: ``last`` where the result has it, else its first."""
    poolings = [str(p) for p in result["pooling"].values]
    return "last" if "last" in poolings else poolings[0]


def one_model(result: xr.Dataset) -> tuple[xr.Dataset, str]:
    """Drop a length-1 ``model`` dim; its name goes into the figure title (`` [name]``)."""
    if "model" in result.dims and result.sizes["model"] == 1:
        name = str(result["model"].values[0]) if "model" in result.coords else ""
        return result.isel(model=0, drop=True), (f" [{name}]" if name else "")
    return result, ""


def require(result: xr.Dataset, variables: Sequence[str], what: str) -> None:
    missing = [n for n in variables if n not in result]
    if missing:
        raise AnalysisError(
            f"cannot draw {what}: the result lacks {names(missing)}; it has "
            f"{names(sorted(map(str, result.data_vars)), limit=40)}"
        )


def pick(result: xr.Dataset, dim: str, value: Any, preferred: Sequence[Any] = ()) -> Any:
    """A value of ``dim``: the given one (checked), else the first preferred present, else the
    first; None when the result has no such dim."""
    if dim not in result.dims:
        return None
    present = labels(result, dim)
    if value is not None:
        if value not in present:
            raise AnalysisError(unknown_names(dim, [value], present, "the result"))
        return value
    for v in preferred:
        if v in present:
            return v
    return present[0]


def line(ax: Any, x: np.ndarray, y: np.ndarray, **kwargs: Any) -> None:
    """Plot the finite points of a curve (NaN layers of a shorter model are left out)."""
    ok = np.isfinite(y) & np.isfinite(x)
    if ok.any():
        ax.plot(x[ok], y[ok], **kwargs)


def band(ax: Any, x: np.ndarray, lo: np.ndarray, hi: np.ndarray, color: Any, alpha: float = 0.18) -> None:
    ok = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(x)
    if ok.any():
        ax.fill_between(x[ok], lo[ok], hi[ok], color=color, alpha=alpha, lw=0)


def depth_axis(layers: np.ndarray, finite: np.ndarray, relative: bool) -> tuple[np.ndarray, str]:
    """x positions of ``layers``: the layer numbers, or the relative depth ``layer / last``
    where ``last`` is the highest layer with a value (a model's own top layer)."""
    layers = np.asarray(layers, dtype=np.float64)
    if not relative:
        return layers, "layer"
    top = layers[finite].max() if finite.any() else np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        return layers / top if top and np.isfinite(top) else layers * np.nan, \
            "relative depth (layer / last)"


def wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width=width, break_long_words=False,
                                   break_on_hyphens=False)) or text


def model_prefix(model: Hashable | None) -> str:
    return "" if model is None else f"{model}: "


def fmt_n(values_: Sequence[Any]) -> str:
    """``n`` values as one label: ``"397"`` or ``"395–399"`` (NaN and 0 left out)."""
    ns = sorted({int(v) for v in np.asarray(values_, dtype=np.float64).ravel() if np.isfinite(v) and v > 0})
    if not ns:
        return "?"
    return f"{ns[0]:,}" if len(ns) == 1 else f"{ns[0]:,}–{ns[-1]:,}"


def _finite_along(da: xr.DataArray, dim: str) -> np.ndarray:
    """Per value of ``dim``: whether ``da`` has any finite value there."""
    other = [d for d in da.dims if d != dim]
    return np.isfinite(values(da.transpose(dim, *other))).reshape(da.sizes[dim], -1).any(axis=1)


def with_data(result: xr.Dataset, variable: str, **where: Any) -> xr.Dataset:
    """``result`` without the models, and then the layers, where ``variable`` has no finite value
    at ``where`` (a figure of the ``last`` pooling in a run of a contextual and a static store:
    the static store has no ``last``, so it is not drawn there, and a one-model figure's title
    names the model it shows). Unchanged when every model has a value, or none has."""
    da = sel(result[variable], **where)
    if "model" in da.dims and result.sizes["model"] > 1:
        keep = _finite_along(da, "model")
        if keep.any() and not keep.all():
            result = result.isel(model=np.flatnonzero(keep))
            da = sel(result[variable], **where)
    if "layer" in da.dims and "model" in result.dims and result.sizes["layer"] > 1:
        keep = _finite_along(da, "layer")
        if keep.any() and not keep.all():
            result = result.isel(layer=np.flatnonzero(keep))
    return result


def own_poolings(result: xr.Dataset, variable: str,
                 preferred: Sequence[Any] = ("last", "mean")) -> list[Any]:
    """The poolings to draw a one-pooling figure at: each model's first of ``preferred`` where
    ``variable`` has a value (else its first pooling with one), each once, in the models'
    order. One pooling for one store; a contextual and a static store in one run give ``last``
    and ``static``. ``[None]`` when the result has no ``pooling`` dim."""
    if "pooling" not in result.dims:
        return [None]
    present = labels(result, "pooling")
    order = [p for p in preferred if p in present] + [p for p in present if p not in preferred]
    out: list[Any] = []
    for model in labels(result, "model"):
        da = sel(result[variable], model=model)
        finite = dict(zip(da["pooling"].values.tolist(), _finite_along(da, "pooling"), strict=True))
        own = next((p for p in order if finite.get(p)), order[0])
        if own not in out:
            out.append(own)
    return out


def per_pooling(result: xr.Dataset, variable: str, draw: Callable[[Any], dict[str, Figure]],
                preferred: Sequence[Any] = ("last", "mean")) -> dict[str, Figure]:
    """The figures ``draw(pooling)`` gives at each of :func:`own_poolings` (one store: its
    declared pooling, keys as ``draw`` names them; a contextual and a static store: each pooling,
    ``_<pooling>`` after every key)."""
    poolings = own_poolings(result, variable, preferred)
    if len(poolings) == 1:
        return draw(poolings[0])
    return {f"{key}_{re.sub(r'[^A-Za-z0-9]+', '-', str(p))}": fig
            for p in poolings for key, fig in draw(p).items()}


def store_groups(result: xr.Dataset, variable: str) -> list[tuple[str, xr.Dataset]]:
    """``[("", result)]``, or, when the models have different poolings (a contextual store's
    last/mean beside a static store's ``static``), one ``(key suffix, part)`` per group of
    models with the same poolings: the part holds those models, their poolings and the layers
    where they have ``variable`` (so a static store's part is drawn as a one-layer store is),
    and the suffix names them (``"_ctx"``, ``"_w2v"``)."""
    da = result[variable]
    if "model" not in da.dims or result.sizes["model"] < 2 or "pooling" not in da.dims:
        return [("", result)]
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i in range(result.sizes["model"]):
        one = da.isel(model=i)
        has = _finite_along(one, "pooling")
        groups.setdefault(tuple(p for p, ok in zip(one["pooling"].values.tolist(), has, strict=True)
                                if ok), []).append(i)
    if len(groups) == 1:
        return [("", result)]
    out = []
    for poolings, index in groups.items():
        part = result.isel(model=index)
        part = part.sel(pooling=list(poolings)) if poolings else part
        if "layer" in part[variable].dims:
            part = part.isel(layer=np.flatnonzero(_finite_along(part[variable], "layer")))
        names = "-".join(re.sub(r"[^A-Za-z0-9]+", "-", str(m)) for m in part["model"].values)
        out.append((f"_{names}", part))
    return out
