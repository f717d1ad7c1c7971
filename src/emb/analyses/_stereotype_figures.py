"""Figures of :mod:`emb.analyses.stereotype` (matplotlib Figures, no pyplot).

- :func:`profile`: the 7D profile, group means of the standardised coordinates with 95 % CIs and
  significant dimensions starred (Schuster et al. 2024, Figures 1 and 5);
- :func:`scatter_2d`: warmth × competence, every word and the group means (Figures 3 and 4);
- :func:`layer_heatmap`: Cohen's d per layer × dimension (Figure 6b as a map).

Several models (a ``model`` dim) are drawn side by side, one panel each.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

__all__ = ["layer_heatmap", "profile", "scatter_2d"]

_COLORS = ("#c0392b", "#1f5fa8")  # group A, group B
_OTHERS = (("#6a3d9a", "^"), ("#2a7a3b", "v"), ("#555555", "s"), ("#b15928", "P"))
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


def profile(result: xr.Dataset, *, comparison: str, pooling: str, layer: Any = "mean") -> Figure:
    """7D stereotype profile: per dimension, each group's mean z with its 95 % CI; ``*`` marks
    dimensions whose difference is significant."""
    dims = [str(d) for d, b in zip(result["dimension"].values, result["basis"].values, strict=True) if b == "7d"]
    models = _models(result)
    a, b = _groups(result, comparison)
    pvar, plabel = _p_name(result)
    members = result["group"].values
    fig = Figure(figsize=(0.4 + 3.4 * len(models), 3.6), layout="constrained")
    axes = fig.subplots(1, len(models), squeeze=False, sharey=True)[0]
    y = np.arange(len(dims))[::-1]
    for ax, model in zip(axes, models, strict=True):
        z = _at(result["z"], model, comparison=comparison, layer=layer, pooling=pooling)
        p = _at(result[pvar], model, comparison=comparison, layer=layer, pooling=pooling)
        for g, (group, color) in enumerate(zip((a, b), _COLORS, strict=True)):
            mask = members == group
            stats = [_ci(np.asarray(z.sel(dimension=d).values)[mask]) for d in dims]
            means = np.array([s[0] for s in stats])
            half = np.array([s[1] for s in stats])
            offset = 0.08 if g == 0 else -0.08
            ax.plot(means, y + offset, color=color, lw=1.2, alpha=0.8)
            ax.errorbar(means, y + offset, xerr=half, fmt="o", ms=4.5, color=color, capsize=2,
                        label=f"{group} (n = {int(mask.sum())})")
        ax.axvline(0, color="0.6", lw=0.8, zorder=0)
        labels = []
        for d in dims:
            star = "*" if float(p.sel(dimension=d)) < ALPHA else ""
            lo, hi = POLES.get(d, ("low", "high"))
            labels.append(f"{d}{star}\n({lo} – {hi})" if d in POLES else f"{d}{star}")
        ax.set_yticks(y, labels, fontsize=8)
        ax.set_xlabel("mean standardised coordinate (z)\n← low pole    high pole →", fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
        ax.set_title(_title(model, f"layer {layer}, {pooling} pooling"), fontsize=9)
        ax.grid(axis="x", color="0.9", lw=0.6)
    handles, labels_ = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels_, loc="outside lower center", ncol=2, fontsize=7.5, frameon=False,
               title=f"mean ± 95% CI;  * {plabel}", title_fontsize=7.5)
    fig.suptitle(f"7D stereotype profile: {a} vs {b}", fontsize=10)
    return fig


def scatter_2d(result: xr.Dataset, *, comparison: str, pooling: str, layer: Any = "mean",
               max_labelled: int = 12) -> Figure:
    """Warmth × competence: every word of both groups (dots), the group means with 95 % CIs
    (crosses), and the words of small other groups (≤ ``max_labelled``), labelled."""
    models = _models(result)
    a, b = _groups(result, comparison)
    pvar, plabel = _p_name(result)
    members = result["group"].values
    words = result["word"].values
    fig = Figure(figsize=(0.4 + 3.5 * len(models), 4.0), layout="constrained")
    axes = fig.subplots(1, len(models), squeeze=False)[0]
    for ax, model in zip(axes, models, strict=True):
        z = _at(result["z"], model, comparison=comparison, layer=layer, pooling=pooling)
        zx = np.asarray(z.sel(dimension="warmth").values)
        zy = np.asarray(z.sel(dimension="competence").values)
        p = _at(result[pvar], model, comparison=comparison, layer=layer, pooling=pooling)
        for group, color in zip((a, b), _COLORS, strict=True):
            mask = members == group
            ax.scatter(zx[mask], zy[mask], s=9, color=color, alpha=0.35, lw=0)
            mx, hx = _ci(zx[mask])
            my, hy = _ci(zy[mask])
            ax.errorbar([mx], [my], xerr=[hx], yerr=[hy], fmt="D", ms=6, color=color, mec="black",
                        mew=0.6, capsize=2.5, label=f"{group} (n = {int(mask.sum())})")
        others = [g for g in dict.fromkeys(members) if g not in (a, b)]
        small = [g for g in others if (members == g).sum() <= max_labelled]
        for i, group in enumerate(small):
            mask = members == group
            color, marker = _OTHERS[i % len(_OTHERS)]
            ax.scatter(zx[mask], zy[mask], s=18, marker=marker, color=color, alpha=0.85,
                       label=f"{group} (words)")
            for xi, yi, w in zip(zx[mask], zy[mask], words[mask], strict=True):
                ax.annotate(str(w), (xi, yi), fontsize=6, xytext=(2, 2), textcoords="offset points",
                            color=color)
        ax.axhline(0, color="0.6", lw=0.8, zorder=0)
        ax.axvline(0, color="0.6", lw=0.8, zorder=0)
        star = {d: "*" if float(p.sel(dimension=d)) < ALPHA else "" for d in ("warmth", "competence")}
        ax.set_xlabel(f"warmth{star['warmth']} (z): low (LW) → high (HW)", fontsize=8)
        ax.set_ylabel(f"competence{star['competence']} (z): low (LC) → high (HC)", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.set_title(_title(model, f"layer {layer}, {pooling} pooling"), fontsize=9)
    handles, labels_ = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels_, loc="outside lower center", ncol=1 if len(handles) > 2 else 2,
               fontsize=7.5, frameon=False,
               title=f"dots: words; diamonds: group mean ± 95% CI\n* {plabel}",
               title_fontsize=7.5)
    fig.suptitle(f"2D stereotype profile: {a} vs {b}", fontsize=10)
    return fig


def layer_heatmap(result: xr.Dataset, *, comparison: str, pooling: str) -> Figure:
    """Cohen's d (A − B) per dimension × layer (``mean`` = the layer average); ``•`` marks
    significant cells."""
    models = _models(result)
    a, b = _groups(result, comparison)
    pvar, plabel = _p_name(result)
    dims = [str(d) for d in result["dimension"].values]
    bases = [str(x) for x in result["basis"].values]
    layers = list(result["layer"].values)
    d_all = np.asarray(result["d"].sel(comparison=comparison, pooling=pooling).values, dtype=float)
    vmax = float(np.nanmax(np.abs(d_all))) if np.isfinite(d_all).any() else 1.0
    fig = Figure(figsize=(0.8 + max(3.0, 0.32 * len(layers) + 1.6) * len(models), 1.2 + 0.3 * len(dims)),
                 layout="constrained")
    axes = fig.subplots(1, len(models), squeeze=False, sharey=True)[0]
    image = None
    for ax, model in zip(axes, models, strict=True):
        d = _at(result["d"], model, comparison=comparison, pooling=pooling).transpose("dimension", "layer")
        p = _at(result[pvar], model, comparison=comparison, pooling=pooling).transpose("dimension", "layer")
        values = np.asarray(d.values, dtype=float)
        image = ax.imshow(values, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto",
                          interpolation="nearest")
        rows, cols = np.nonzero(np.asarray(p.values, dtype=float) < ALPHA)
        ax.scatter(cols, rows, s=6, color="black", marker="o", lw=0)
        ax.set_xticks(range(len(layers)), [str(v) for v in layers], fontsize=7)
        ax.set_yticks(range(len(dims)), dims, fontsize=7.5)
        if "2d" in bases and "7d" in bases:
            ax.axhline(bases.count("2d") - 0.5, color="black", lw=0.8)
        ax.axvline(len(layers) - 1.5, color="black", lw=0.8)
        ax.set_xlabel("layer (mean = all layers averaged)", fontsize=8)
        ax.set_title(_title(model, f"{pooling} pooling"), fontsize=9)
    n_a = int(result["n_a"].sel(comparison=comparison).values.flat[0])
    n_b = int(result["n_b"].sel(comparison=comparison).values.flat[0])
    bar = fig.colorbar(image, ax=list(axes), shrink=0.9)
    bar.set_label(f"Cohen's d ({a} − {b})", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    fig.suptitle(f"Cohen's d by layer: {a} (n = {n_a}) vs {b} (n = {n_b})\n• {plabel}", fontsize=9)
    return fig
