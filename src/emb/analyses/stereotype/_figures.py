"""Figures of :mod:`emb.analyses.stereotype` (matplotlib Figures, no pyplot), in the house style
of :mod:`emb.analyses._figure`.

- :func:`profile`: the 7D profile, group means of the standardised coordinates with 95 % CIs and
  significant dimensions starred (Schuster et al. 2024, Figures 1 and 5);
- :func:`scatter_2d`: warmth × competence, every word and the group means (Figures 3 and 4);
- :func:`layer_heatmap`: Cohen's d per layer × dimension (Figure 6b as a map).

Several models (a ``model`` dim) get one panel each (side by side for the profile and the scatter,
one row each for the heat map); every panel shows its own model's stars and its own layers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr
from matplotlib import patheffects
from matplotlib.figure import Figure

from emb.analyses import _figure as fg

__all__ = ["layer_heatmap", "profile", "scatter_2d"]

#: Group A, group B (Okabe–Ito vermillion and blue).
_COLORS = (fg.PALETTE[1], fg.PALETTE[0])
#: Small other groups (labelled words): colour and marker.
_OTHERS = ((fg.PALETTE[4], "^"), (fg.PALETTE[2], "v"), (fg.PALETTE[3], "s"), (fg.PALETTE[7], "P"))
#: Labels of the low and high pole of each dimension (Politics: high = traditional).
POLES = {
    "warmth": ("low warmth", "high warmth"),
    "competence": ("low competence", "high competence"),
    "Politics": ("progressive", "traditional"),
    "Religion": ("non-religious", "religious"),
}
ALPHA = 0.05


def _models(result: xr.Dataset) -> list[Any]:
    return list(result["model"].values) if "model" in result.dims else [None]


def _at(da: xr.DataArray, model: Any, **sel: Any) -> xr.DataArray:
    if model is not None:
        da = da.sel(model=model)
    return da.sel(sel)


def _p_name(result: xr.Dataset) -> tuple[str, str]:
    if "p_adjusted" in result:
        return "p_adjusted", f"p < {ALPHA} ({result.attrs.get('test', 'student')} t, {result.attrs.get('correction')}-adjusted)"
    return "p", f"p < {ALPHA} ({result.attrs.get('test', 'student').capitalize()}'s t, uncorrected)"


def _ci(z: np.ndarray) -> tuple[float, float]:
    z = z[np.isfinite(z)]
    if z.size < 2:
        return float(np.mean(z)) if z.size else np.nan, np.nan
    from scipy import special  # the t quantile scipy.stats.t.ppf computes, without scipy.stats

    half = special.stdtrit(z.size - 1, 0.975) * z.std(ddof=1) / np.sqrt(z.size)
    return float(z.mean()), float(half)


def _groups(result: xr.Dataset, comparison: str) -> tuple[str, str]:
    sub = result.sel(comparison=comparison)
    return str(sub["group_a"].values), str(sub["group_b"].values)


def _title(model: Any, text: str) -> str:
    return f"{model}\n{text}" if model is not None else text


def _lines(parts: Sequence[str], width: int) -> str:
    """``parts`` joined by spaces into lines of at most ``width`` characters (a part is never
    broken)."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 1 + len(part) <= width and not part.startswith("•"):
            lines[-1] += " " + part
        else:
            lines.append(part)
    return "\n".join(lines)


def _star(p: xr.DataArray, dimension: str) -> str:
    return "*" if float(p.sel(dimension=dimension)) < ALPHA else ""


@fg.styled
def profile(result: xr.Dataset, *, comparison: str, pooling: str, layer: Any = "mean") -> Figure:
    """7D stereotype profile: per dimension, each group's mean z with its 95 % CI; ``*`` marks
    dimensions whose difference is significant (each panel its own model's p-values)."""
    result = fg.with_data(result, "d", comparison=comparison, pooling=pooling)  # the models that have it
    dims = [str(d) for d, b in zip(result["dimension"].values, result["basis"].values, strict=True) if b == "7d"]
    models = _models(result)
    a, b = _groups(result, comparison)
    pvar, plabel = _p_name(result)
    members = result["group"].values
    # Not sharing y: a shared y axis has one set of tick labels, the last panel's stars for all
    fig, axes, _ = fg.grid(len(models), max_cols=2, sharey=False, panel_height=2.5, extra_height=0.9)
    y = np.arange(len(dims))[::-1]
    for ax, model in zip(axes, models, strict=True):
        z = _at(result["z"], model, comparison=comparison, layer=layer, pooling=pooling)
        p = _at(result[pvar], model, comparison=comparison, layer=layer, pooling=pooling)
        for g, (group, color) in enumerate(zip((a, b), _COLORS, strict=True)):
            mask = members == group
            stats = [_ci(np.asarray(z.sel(dimension=d).values)[mask]) for d in dims]
            means = np.array([s[0] for s in stats])
            half = np.array([s[1] for s in stats])
            offset = 0.1 if g == 0 else -0.1
            ax.plot(means, y + offset, color=color, lw=0.9, alpha=0.7)
            ax.errorbar(means, y + offset, xerr=half, fmt="o", color=color, capsize=1.8, elinewidth=0.9,
                        label=f"{group} (n = {int(mask.sum())})")
        ax.axvline(0, color="0.55", lw=0.6, zorder=0)
        labels = []
        for d in dims:
            lo, hi = POLES.get(d, ("low", "high"))
            labels.append(f"{d}{_star(p, d)}\n({lo} – {hi})" if d in POLES else f"{d}{_star(p, d)}")
        ax.set_yticks(y, labels)
        ax.set_ylim(-0.6, len(dims) - 0.4)
        ax.set_xlabel("mean standardised coordinate (z)\n← low pole    high pole →")
        ax.set_title(_title(model, f"layer {layer}, {pooling} pooling"))
        ax.grid(axis="x", alpha=0.3)
    fg.legend(fig, axes[:1], ncols=2, title=f"mean ± 95% CI;  * {plabel}")
    fig.suptitle(fg.wrap(f"7D stereotype profile: {a} vs {b}", int(fig.get_figwidth() * 14)))
    return fig


# -- label placement ---------------------------------------------------------------------------------
def _overlap(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Overlap areas of ``box`` (x0, y0, x1, y1) with each row of ``boxes``."""
    if boxes.size == 0:
        return np.zeros(0)
    w = np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0])
    h = np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1])
    return np.clip(w, 0, None) * np.clip(h, 0, None)


#: Directions tried around a point, in order of preference (right first, then up-right, …).
_DIRECTIONS = tuple((math.cos(math.radians(a)), math.sin(math.radians(a)))
                    for a in (0, 45, 180, 135, -45, 225, 90, 270, 20, 160, -20, 200, 65, 115, -65, 245))
#: Gaps between a point and its label (points), tried from the nearest.
_GAPS = (1.5, 5, 10, 16, 24, 34, 46, 60, 76)


def _box(centre: np.ndarray, size: tuple[float, float]) -> np.ndarray:
    w, h = size
    return np.array([centre[0] - w / 2, centre[1] - h / 2, centre[0] + w / 2, centre[1] + h / 2])


def _crosses(p1: np.ndarray, q1: np.ndarray, p2: np.ndarray, q2: np.ndarray) -> bool:
    """Whether the segments p1–q1 and p2–q2 cross (proper intersection)."""
    def side(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> float:
        return float((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))

    return (side(p1, q1, p2) * side(p1, q1, q2) < 0) and (side(p2, q2, p1) * side(p2, q2, q1) < 0)


@dataclass
class _Placement:
    """The geometry of one label placement (display coordinates): the points, the axes' frame,
    display pixels per point, each label's box size, the fixed boxes (markers, obstacles) and
    the markers' radius."""

    pts: np.ndarray
    frame: Any
    px: float
    sizes: list[tuple[float, float]]
    fixed: np.ndarray
    r: float

    def inside(self, box: np.ndarray) -> bool:
        f = self.frame
        return bool(box[0] >= f.x0 and box[1] >= f.y0 and box[2] <= f.x1 and box[3] <= f.y1)

    def leader(self, i: int, box: np.ndarray) -> np.ndarray | None:
        """Points along the leader line of label ``i`` at ``box`` (None when it needs none)."""
        pts = self.pts
        c = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
        gap = max(box[0] - pts[i][0], pts[i][0] - box[2], box[1] - pts[i][1], pts[i][1] - box[3])
        return pts[i] + np.linspace(0.1, 0.9, 9)[:, None] * (c - pts[i]) if gap > 8 * self.px else None

    @staticmethod
    def hits(line: np.ndarray | None, box: np.ndarray) -> bool:
        return line is not None and bool(((line[:, 0] > box[0]) & (line[:, 0] < box[2])
                                          & (line[:, 1] > box[1]) & (line[:, 1] < box[3])).any())

    def cost(self, i: int, box: np.ndarray, placed: dict[int, np.ndarray]) -> float:
        """Overlap with markers, obstacles and labels, plus a penalty per leader line through a
        label (this one's through the others, the others' through this one)."""
        others = np.delete(self.fixed, i, axis=0)
        labels = {j: b for j, b in placed.items() if j != i}
        area = _overlap(box, np.array(list(labels.values())).reshape(-1, 4)).sum()
        line = self.leader(i, box)
        crossings = sum(self.hits(line, b) + self.hits(self.leader(j, b), box) for j, b in labels.items())
        return float(_overlap(box, others).sum() + area + crossings * 25 * self.px * self.px)

    def directions(self, i: int, near: np.ndarray) -> list[tuple[float, float]]:
        """The directions tried for label ``i``: away from its crowd first (a stable sort keeps
        ties in order)."""
        away = self.pts[i] - self.pts[near[i]].mean(axis=0)
        directions = list(_DIRECTIONS)
        if np.hypot(*away) > 0.5 * self.px:
            directions.sort(key=lambda d: -round(float(np.dot(d, away / np.hypot(*away))), 1))
        return directions

    def best_box(self, i: int, near: np.ndarray, placed: dict[int, np.ndarray]) -> np.ndarray:
        """The first free position (nearest gap first), else the one of least overlap."""
        size = self.sizes[i]
        best: tuple[float, np.ndarray] | None = None
        for gap in _GAPS:
            g = gap * self.px + self.r
            for cx, cy in self.directions(i, near):
                box = _box(self.pts[i] + (cx * (size[0] / 2 + g), cy * (size[1] / 2 + g)), size)
                if not self.inside(box):
                    continue
                c = self.cost(i, box, placed)
                if best is None or c < best[0]:
                    best = (c, box)
                if c == 0:
                    break
            if best is not None and best[0] == 0:
                break
        return best[1] if best is not None else _box(self.pts[i] + (size[0] / 2 + self.r, 0), size)

    def greedy(self) -> dict[int, np.ndarray]:
        """Every label's box, crowded points first."""
        pts = self.pts
        dist = np.hypot(*(pts[:, None, :] - pts[None, :, :]).transpose(2, 0, 1))
        near = dist < 30 * self.px
        placed: dict[int, np.ndarray] = {}
        for i in sorted(range(len(pts)), key=lambda i: (-int(near[i].sum()), i)):
            placed[i] = self.best_box(i, near, placed)
        return placed

    def untangle(self, placed: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Two labels whose leader lines cross swap places where that adds no overlap (three
        rounds at most)."""
        for _ in range(3):
            swapped = False
            for i in range(len(self.pts)):
                for j in range(i + 1, len(self.pts)):
                    trial = self.swapped(i, j, placed)
                    if trial is not None:
                        placed, swapped = trial, True
            if not swapped:
                break
        return placed

    def swapped(self, i: int, j: int, placed: dict[int, np.ndarray]) -> dict[int, np.ndarray] | None:
        pts, sizes = self.pts, self.sizes
        if not _crosses(pts[i], _centre(placed[i]), pts[j], _centre(placed[j])):
            return None
        bi, bj = _box(_centre(placed[j]), sizes[i]), _box(_centre(placed[i]), sizes[j])
        if not (self.inside(bi) and self.inside(bj)):
            return None
        before = self.cost(i, placed[i], placed) + self.cost(j, placed[j], placed)
        trial = {**placed, i: bi, j: bj}
        return trial if self.cost(i, bi, trial) + self.cost(j, bj, trial) <= before else None


def _centre(box: np.ndarray) -> np.ndarray:
    return np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])


def _place_labels(fig: Figure, ax: Any, xy: np.ndarray, texts: Sequence[str], colors: Sequence[Any],
                  obstacles: Sequence[np.ndarray] = (), marker_pt: float = 3.5) -> list[Any]:
    """Label the points ``xy`` (data coordinates) without overlaps, deterministically.

    Greedy placement in display space, crowded points first: each label takes the first position
    (nearest gap of :data:`_GAPS` first; directions pointing away from the point's crowd of
    neighbours first) whose box lies inside the axes and overlaps no label placed before, no
    labelled marker and no ``obstacles`` (display boxes); where none is free, the one with the least
    overlap. Then two labels whose leader lines cross swap places where that adds no overlap. A
    label set off from its point gets a thin leader line. Call after the figure's layout is fixed
    (``fig.draw_without_rendering()``).
    """
    px = fig.dpi / 72.0  # display pixels per point
    pts = ax.transData.transform(xy)
    probes = [ax.text(0, 0, t, fontsize=6) for t in texts]
    # boxes with a margin of 3.5 points left and right, 1 above and below: neighbours never touch
    sizes = [(pr.get_window_extent().width + 7 * px, pr.get_window_extent().height + 2 * px) for pr in probes]
    for pr in probes:
        pr.remove()
    r = marker_pt * px
    markers = np.column_stack([pts - r, pts + r]) if len(pts) else np.zeros((0, 4))
    fixed = np.vstack([markers, *[np.reshape(o, (-1, 4)) for o in obstacles]])
    place = _Placement(pts=pts, frame=ax.get_window_extent(), px=px, sizes=sizes, fixed=fixed, r=r)
    placed = place.untangle(place.greedy())
    out: list[Any] = []
    for i in range(len(pts)):
        c = _centre(placed[i])
        offset = ((c[0] - pts[i][0]) / px, (c[1] - pts[i][1]) / px)
        box = placed[i]
        gap = max(box[0] - pts[i][0], pts[i][0] - box[2], box[1] - pts[i][1], pts[i][1] - box[3]) / px
        arrow = dict(arrowstyle="-", color=colors[i], lw=0.4, shrinkA=0.5, shrinkB=2.5) if gap > 8 else None
        ann = ax.annotate(texts[i], xy[i], xytext=offset, textcoords="offset points", ha="center",
                          va="center", fontsize=6, color=colors[i], arrowprops=arrow, annotation_clip=False,
                          path_effects=[patheffects.withStroke(linewidth=1.6, foreground="white")])
        ann.set_in_layout(False)
        out.append(ann)
    return out


@fg.styled
def scatter_2d(result: xr.Dataset, *, comparison: str, pooling: str, layer: Any = "mean",
               max_labelled: int = 12) -> Figure:
    """Warmth × competence: every word of both groups (dots), the group means with 95 % CIs
    (diamonds), and the words of small other groups (≤ ``max_labelled`` words), labelled without
    overlaps (see :func:`_place_labels`)."""
    result = fg.with_data(result, "d", comparison=comparison, pooling=pooling)  # the models that have it
    models = _models(result)
    a, b = _groups(result, comparison)
    pvar, plabel = _p_name(result)
    members = result["group"].values
    words = result["word"].values
    others = [g for g in dict.fromkeys(members) if g not in (a, b)]
    small = [g for g in others if (members == g).sum() <= max_labelled]
    fig, axes, _ = fg.grid(len(models), max_cols=2, sharey=False, panel_height=2.9, extra_height=0.9)
    to_label = []
    for ax, model in zip(axes, models, strict=True):
        z = _at(result["z"], model, comparison=comparison, layer=layer, pooling=pooling)
        zx = np.asarray(z.sel(dimension="warmth").values)
        zy = np.asarray(z.sel(dimension="competence").values)
        p = _at(result[pvar], model, comparison=comparison, layer=layer, pooling=pooling)
        means = []
        for group, color in zip((a, b), _COLORS, strict=True):
            mask = members == group
            ax.scatter(zx[mask], zy[mask], s=7, color=color, alpha=0.35, lw=0)
            mx, hx = _ci(zx[mask])
            my, hy = _ci(zy[mask])
            ax.errorbar([mx], [my], xerr=[hx], yerr=[hy], fmt="D", ms=4.5, color=color, mec="black",
                        mew=0.5, capsize=1.8, elinewidth=0.9, label=f"{group} (n = {int(mask.sum())})",
                        zorder=4)
            means.append((mx, my, hx, hy))
        xy, texts, colors = [], [], []
        for i, group in enumerate(small):
            mask = members == group
            color, marker = _OTHERS[i % len(_OTHERS)]
            ax.scatter(zx[mask], zy[mask], s=14, marker=marker, color=color, alpha=0.9, lw=0,
                       label=f"{group} (labelled words)", zorder=3)
            ok = np.isfinite(zx[mask]) & np.isfinite(zy[mask])
            xy += list(zip(zx[mask][ok], zy[mask][ok], strict=True))
            texts += [str(w) for w in words[mask][ok]]
            colors += [color] * int(ok.sum())
        to_label.append((ax, np.array(xy, dtype=float).reshape(-1, 2), texts, colors, means))
        ax.axhline(0, color="0.55", lw=0.6, zorder=0)
        ax.axvline(0, color="0.55", lw=0.6, zorder=0)
        ax.set_xlabel(f"warmth{_star(p, 'warmth')} (z): low → high")
        ax.set_ylabel(f"competence{_star(p, 'competence')} (z): low → high")
        ax.set_title(_title(model, f"layer {layer}, {pooling} pooling"))
        ax.grid(alpha=0.3)
    fg.legend(fig, axes[:1], ncols=2, title=f"dots: words; diamonds: group mean ± 95% CI\n* {plabel}")
    fig.suptitle(fg.wrap(f"2D stereotype profile: {a} vs {b}", int(fig.get_figwidth() * 14)))
    fig.draw_without_rendering()  # fixes the layout (and the limits) before the labels are placed
    for ax, xy, texts, colors, means in to_label:
        ax.set_xlim(ax.get_xlim())
        ax.set_ylim(ax.get_ylim())
        if len(xy):
            obstacles = [_mean_box(ax, *m) for m in means if np.isfinite(m[0]) and np.isfinite(m[1])]
            _place_labels(fig, ax, xy, texts, colors, obstacles)
    return fig


def _mean_box(ax: Any, mx: float, my: float, hx: float, hy: float) -> np.ndarray:
    """Display box of a group mean's diamond and error bars."""
    hx, hy = (0.0 if not np.isfinite(h) else h for h in (hx, hy))
    corners = ax.transData.transform([(mx - hx, my - hy), (mx + hx, my + hy)])
    pad = 4.0 * ax.figure.dpi / 72.0
    return np.array([corners[:, 0].min() - pad, corners[:, 1].min() - pad,
                     corners[:, 0].max() + pad, corners[:, 1].max() + pad])


# -- layer heat map ----------------------------------------------------------------------------------
def _heat_panel(result: xr.Dataset, model: Any, pvar: str, comparison: str,
                pooling: str) -> tuple[Any, np.ndarray, np.ndarray, list[str]]:
    """One model's row of the heat map: d and p (dimension × its own layers) and the layers'
    names; a shorter model keeps its own layers only, one without any d every layer (drawn
    empty)."""
    d = _at(result["d"], model, comparison=comparison, pooling=pooling).transpose("dimension", "layer")
    p = _at(result[pvar], model, comparison=comparison, pooling=pooling).transpose("dimension", "layer")
    values = np.asarray(d.values, dtype=float)
    keep = np.isfinite(values).any(axis=0)
    if not keep.any():
        keep = np.ones_like(keep)
    layers = [str(v) for v, k in zip(d["layer"].values, keep, strict=True) if k]
    return model, values[:, keep], np.asarray(p.values, dtype=float)[:, keep], layers


def _shown_layers(layers: list[str], numeric: list[int]) -> list[int]:
    """The columns with a tick: every step-th layer (at most ~16), the last, and ``mean``."""
    step = max(1, math.ceil(len(numeric) / 16))
    shown = [i for i in numeric if i % step == 0 and (i == numeric[-1] or numeric[-1] - i >= step)]
    shown += [numeric[-1]] if numeric and numeric[-1] not in shown else []
    return shown + [i for i, v in enumerate(layers) if v == "mean"]


@fg.styled
def layer_heatmap(result: xr.Dataset, *, comparison: str, pooling: str) -> Figure:
    """Cohen's d (A − B) per dimension × layer (``mean`` = the layer average); ``•`` marks
    significant cells. One row per model, each on its own layers (0 … its last layer, then
    ``mean``); one colour scale for all."""
    result = fg.with_data(result, "d", comparison=comparison, pooling=pooling)  # the models that have it
    models = _models(result)
    a, b = _groups(result, comparison)
    pvar, plabel = _p_name(result)
    dims = [str(d) for d in result["dimension"].values]
    bases = [str(x) for x in result["basis"].values]
    d_all = np.asarray(result["d"].sel(comparison=comparison, pooling=pooling).values, dtype=float)
    vmax = float(np.nanmax(np.abs(d_all))) if np.isfinite(d_all).any() else 1.0
    panels = [_heat_panel(result, model, pvar, comparison, pooling) for model in models]
    widest = max(len(pl[3]) for pl in panels)
    width = fg.COLUMN_WIDTH if widest <= 10 else fg.PAGE_WIDTH
    row_height = 0.2 * len(dims) + 0.45
    fig = Figure(figsize=(width, row_height * len(models) + 0.75), layout="constrained")
    axes = fig.subplots(len(models), 1, squeeze=False)[:, 0]
    image = None
    for ax, (model, values, p, layers) in zip(axes, panels, strict=True):
        # the layers at 0 … L, the layer average one column further right, after a gap
        numeric = [i for i, v in enumerate(layers) if v != "mean"]
        x = np.array([i if v != "mean" else len(numeric) + 0.4 for i, v in enumerate(layers)], dtype=float)
        for cols in (numeric, [i for i, v in enumerate(layers) if v == "mean"]):
            if cols:
                x0 = x[cols[0]]
                image = ax.imshow(values[:, cols], cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto",
                                  interpolation="nearest",
                                  extent=(x0 - 0.5, x0 + len(cols) - 0.5, len(dims) - 0.5, -0.5))
        rows, cols_ = np.nonzero(p < ALPHA)
        ax.scatter(x[cols_], rows, s=4, color="black", marker="o", lw=0)
        ax.set_xlim(-0.5, x.max() + 0.5)
        ax.set_ylim(len(dims) - 0.5, -0.5)
        shown = _shown_layers(layers, numeric)
        ax.set_xticks(x[shown], [layers[i] for i in shown])
        ax.tick_params(axis="x", length=2, pad=1.5)
        ax.set_yticks(range(len(dims)), dims)
        if "2d" in bases and "7d" in bases:
            ax.axhline(bases.count("2d") - 0.5, color="black", lw=0.6)
        if model is not None:
            ax.set_title(str(model), loc="left", fontweight="bold")
    axes[-1].set_xlabel("layer (mean = all layers averaged)")
    n_a = int(result["n_a"].sel(comparison=comparison).values.flat[0])
    n_b = int(result["n_b"].sel(comparison=comparison).values.flat[0])
    bar = fig.colorbar(image, ax=list(axes), shrink=min(1.0, 0.9 if len(models) == 1 else 0.7), aspect=25)
    bar.set_label(f"Cohen's d ({a} − {b})")
    fig.suptitle(_lines([f"Cohen's d by layer, {pooling} pooling:", f"{a} (n = {n_a}) vs {b} (n = {n_b})",
                         f"• {plabel}"], int(width * 14)))
    return fig
