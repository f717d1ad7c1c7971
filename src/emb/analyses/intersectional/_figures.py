"""Figures of the intersectional analysis (matplotlib Figures, no pyplot).

- :func:`heat_table`: Table 2 as a heat table, attribute pairs × models, d at the declared cell.
- :func:`distributions`: Figure 3, the projections of "person" per attribute value, means joined.
- :func:`experiment3_shares`: Figure 4, the experiment-3 shares in the top/bottom sets, overall
  and per position.

(Figure 2, ValNorm by projection vs by cosine, is the valence-subspace analysis' own:
:mod:`emb.analyses.valence_subspace._figures`.) Every figure draws the declared cell: the top layer of each model and the ``last`` pooling (else
the first), said in its title.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import PercentFormatter

from emb.analyses import _figure as fg

__all__ = ["distributions", "experiment3_shares", "heat_table"]

_LINK = "#2a9d4b"
_TOP, _BOTTOM = "#1b6ca8", "#d1495b"


def _top_layer(da: xr.DataArray) -> int | None:
    """The highest layer where ``da`` (…, layer) has a finite value."""
    finite = np.isfinite(np.asarray(da.values, dtype=np.float64))
    other = tuple(i for i, d in enumerate(da.dims) if d != "layer")
    ok = finite.any(axis=other) if other else finite
    layers = np.asarray(da["layer"].values)[ok]
    return int(layers.max()) if layers.size else None


def _half_violin(ax: Any, values: np.ndarray, y: float, sign: float, color: str) -> None:
    """A Gaussian-KDE density of ``values`` drawn above (sign +1) or below (−1) the line ``y``,
    scaled to a height of 0.4 (one half of a horizontal violin)."""
    if values.size < 2 or not np.ptp(values) > 0:
        return
    from scipy.stats import gaussian_kde

    grid = np.linspace(values.min(), values.max(), 200)
    density = gaussian_kde(values)(grid)
    ax.fill_between(grid, y, y + sign * 0.4 * density / density.max(), color=color, alpha=0.3, lw=0)


def heat_table(result: xr.Dataset, *, alpha: float = 0.05) -> Figure:
    """Effect sizes of the 12 pairs (rows) for every model (columns), at the top layer and the
    declared pooling; ``*`` marks p < alpha (``p_adjusted`` when a correction was asked)."""
    pooling = fg.declared_pooling(result)
    pvar = "p_adjusted" if "p_adjusted" in result else "p"
    models = fg.model_list(result)
    pairs = [str(p) for p in result["pair"].values]
    d = np.full((len(pairs), len(models)), np.nan)
    p = np.full_like(d, np.nan)
    layers = []
    for j, model in enumerate(models):
        es = fg.at_model(result["effect_size"], model).sel(pooling=pooling)
        top = _top_layer(es)
        layers.append(top)
        if top is None:
            continue
        d[:, j] = es.sel(layer=top).values
        p[:, j] = fg.at_model(result[pvar], model).sel(pooling=pooling, layer=top).values
    vmax = max(0.5, float(np.nanmax(np.abs(d))) if np.isfinite(d).any() else 0.5)
    fig = Figure(figsize=(min(7.0, max(4.2, 2.6 + 0.9 * len(models))), 4.8), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(d, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
    for i in range(len(pairs)):
        for j in range(len(models)):
            if np.isfinite(d[i, j]):
                mark = "*" if p[i, j] < alpha else ""
                color = "white" if abs(d[i, j]) > 0.6 * vmax else "black"
                ax.text(j, i, f"{d[i, j]:.2f}{mark}", ha="center", va="center", fontsize=8, color=color)
    ax.set_yticks(range(len(pairs)), [q.replace("/", " vs ") for q in pairs], fontsize=8)
    ax.set_xticks(
        range(len(models)),
        [f"{fg.model_label(m) or 'model'}\nlayer {layer}" for m, layer in zip(models, layers, strict=True)],
        fontsize=8,
    )
    ax.tick_params(length=0)
    bar = fig.colorbar(image, ax=ax, shrink=0.8)
    bar.set_label("effect size d (A − B); > 0: A phrases more pleasant")
    n_perm = int(np.max(result["n_permutations"].values))
    fig.suptitle(f"Valence bias of 'person' (Table 2)\n{pooling} pooling, top layer", fontsize=10)
    correction = {"holm": "Holm", "bh": "Benjamini–Hochberg"}.get(
        str(result.attrs.get("correction", "none")), str(result.attrs.get("correction")))
    which = f"p ({correction}-corrected over the pairs)" if pvar == "p_adjusted" else "p (uncorrected)"
    ax.set_xlabel(
        f"* {which} < {alpha} ({result.attrs.get('alternative', '')}, "
        f"{'exact' if n_perm == 0 else f'{n_perm:,} splits'})\nn = "
        f"{int(np.max(result['n_a'].values)):,} A + {int(np.max(result['n_b'].values)):,} B "
        "phrases per pair",
        fontsize=7,
    )
    return fig


def distributions(result: xr.Dataset) -> Figure:
    """Projections of "person" in the experiment-2 phrases, grouped by slot value: per pair the A
    phrases (upper half-violin, circle = mean) and B phrases (lower half, square = mean), means
    joined by a line; one panel per model, top layer, declared pooling."""
    pooling = fg.declared_pooling(result)
    models = fg.model_list(result)
    pairs = list(zip(result["category"].values, result["value_a"].values,
                     result["value_b"].values, strict=True))
    fig = Figure(figsize=(min(7.0, 2.2 + 2.6 * len(models)), 5.2), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(models), sharey=True, squeeze=False)[0])
    is2 = np.asarray(result["experiment"].values) == 2
    for ax, model in zip(axes, models, strict=True):
        proj = fg.at_model(result["projection"], model).sel(pooling=pooling)
        top = _top_layer(proj)
        if top is None:
            continue
        values = np.asarray(proj.sel(layer=top).values, dtype=np.float64)
        for row, (category, a, b) in enumerate(pairs):
            y = len(pairs) - 1 - row
            labels = np.asarray(result[str(category)].values).astype(str)
            groups = [values[is2 & (labels == a)], values[is2 & (labels == b)]]
            means = []
            for g, sign, color in zip(groups, (1.0, -1.0), (fg.COLOUR_A, fg.COLOUR_B), strict=True):
                g = g[np.isfinite(g)]
                means.append(g.mean() if g.size else np.nan)
                _half_violin(ax, g, y, sign, color)
            ax.plot(means, [y, y], color=_LINK, lw=2.2, zorder=3)
            ax.plot(means[0], y, "o", color=fg.COLOUR_A, ms=5, zorder=4)
            ax.plot(means[1], y, "s", color=fg.COLOUR_B, ms=5, zorder=4)
        ax.set_yticks(range(len(pairs)), [f"{a} / {b}" for _, a, b in pairs][::-1], fontsize=8)
        ax.set_xlabel("projection on the valence direction (→ more pleasant)")
        ax.set_title(f"{fg.model_label(model) + ', ' if model is not None else ''}layer {top}", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    n = int(is2.sum())
    handles = [
        Line2D([], [], marker="o", color=fg.COLOUR_A, ls="none", label="A (first value): mean; upper half"),
        Line2D([], [], marker="s", color=fg.COLOUR_B, ls="none", label="B (second value): mean; lower half"),
        Line2D([], [], color=_LINK, lw=2.2, label="difference of the means"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=1 if len(models) == 1 else 3,
               frameon=False, fontsize=7)
    fig.suptitle(f"'person' in {n:,} phrases by attribute\n(Figure 3; {pooling} pooling; "
                 "half-violins: distribution of each group)", fontsize=9)
    return fig


def experiment3_shares(result: xr.Dataset) -> Figure:
    """Experiment 3 at the top layer and declared pooling: per model, the share of the top and
    bottom phrases holding each value (bars), and the share with the value at each position
    (heat maps, one for the top set, one for the bottom set)."""
    pooling = fg.declared_pooling(result)
    models = fg.model_list(result)
    values = [str(v) for v in result["value"].values]
    positions = [int(p) for p in result["position"].values]
    k = int(np.max(result["n_extreme"].values))
    fig = Figure(figsize=(7.0, 0.9 + 3.3 * len(models)), layout="constrained")
    grid = fig.subplots(len(models), 3, squeeze=False, width_ratios=[1.3, 1, 1])
    y = np.arange(len(values))
    drawn = []
    for model in models:
        share = fg.at_model(result["position_share"], model).sel(pooling=pooling)
        top = _top_layer(share)
        if top is not None:
            drawn.append(float(np.nanmax(share.sel(layer=top).values)))
    vmax = max(0.2, np.ceil(max(drawn, default=0.0) * 10) / 10)
    for row, model in zip(grid, models, strict=True):
        share = fg.at_model(result["share"], model).sel(pooling=pooling)
        top = _top_layer(share)
        if top is None:
            continue
        share = share.sel(layer=top)
        at = fg.at_model(result["position_share"], model).sel(pooling=pooling, layer=top)
        ax = row[0]
        for offset, extreme, color in ((-0.2, "top", _TOP), (0.2, "bottom", _BOTTOM)):
            ax.barh(y + offset, share.sel(extreme=extreme).values, height=0.4, color=color,
                    label=f"{extreme} {k:,} phrases")
        ax.axvline(0.5, color="0.5", lw=0.8, ls="--")
        ax.set_yticks(y, values, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlabel("phrases holding the value")
        ax.set_title(f"{fg.model_label(model) + ', ' if model is not None else ''}layer {top}", fontsize=9)
        for ax, extreme in zip(row[1:], ("top", "bottom"), strict=True):
            grid_values = at.sel(extreme=extreme).transpose("value", "position").values
            image = ax.imshow(grid_values, cmap="Greys", vmin=0, vmax=vmax, aspect="auto")
            ax.set_xticks(range(len(positions)), positions, fontsize=8)
            ax.set_yticks(range(len(values)), values if extreme == "top" else [], fontsize=8)
            ax.set_xlabel("position (1 = after 'a')", fontsize=8)
            ax.set_title(f"{extreme} {k:,}: at position", fontsize=8)
        fig.colorbar(image, ax=list(row[1:]), shrink=0.8, format=PercentFormatter(1.0, decimals=0),
                     label="share of the set")
    fg.legend(fig, list(grid[:, 0]), ncols=2, fontsize=8)
    fig.suptitle(
        f"Experiment 3 (Figure 4): most pleasant (top) and unpleasant (bottom) "
        f"{result.attrs.get('extreme_share', 0.1):.0%}, {pooling} pooling", fontsize=10,
    )
    return fig
