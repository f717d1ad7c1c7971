"""CEAT's figures (matplotlib Figure objects, no pyplot).

- :func:`es_histograms`: the distribution of the N sampled effect sizes per test, each bin coloured
  by the mean per-sample p of its samples (the paper's Figure 1);
- :func:`ces_by_layer`: CES with its 95 % CI (and the bootstrap CI) by layer, one panel per test;
- :func:`heat_table`: CES of tests × models at the declared cell (the paper's Table 1);
- :func:`convergence`: how the meta-analytic CI and p shrink with N while the bootstrap CI stays.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LogNorm, TwoSlopeNorm
from matplotlib.figure import Figure

__all__ = ["ces_by_layer", "convergence", "es_histograms", "heat_table"]

_POOLING_COLORS = {"first": "#1b6ca8", "last": "#d1495b", "mean": "#2a9d4b", "max": "#edae49"}


def _grid(n: int, *, cols: int = 4, w: float = 2.6, h: float = 2.2) -> tuple[Figure, np.ndarray]:
    cols = min(cols, n)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(0.8 + w * cols, 1.2 + h * rows), layout="constrained")
    axes = np.atleast_2d(fig.subplots(rows, cols, squeeze=False))
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes


def _cell(result: xr.Dataset, model: Any = None) -> xr.Dataset:
    sel = result.sel(model=model) if model is not None and "model" in result.dims else result
    layer = int(result.attrs.get("declared_layer", int(sel["layer"].max())))
    pooling = result.attrs.get("declared_pooling") or str(sel["pooling"].values[0])
    if "model" in result.dims:  # each model's own top layer: the last finite one
        finite = sel["ces"].sel(pooling=pooling).notnull().all("test")
        layer = int(sel["layer"].values[np.flatnonzero(finite.values)[-1]])
    return sel.sel(layer=layer, pooling=pooling)


def _title(model: Any, text: str) -> str:
    return f"{model}: {text}" if model is not None else text


def es_histograms(result: xr.Dataset, *, model: Any = None, bins: int = 30) -> Figure:
    """Histogram of the sampled ES per test at the declared cell, bins coloured by mean p."""
    cell = _cell(result, model)
    tests = list(cell["test"].values)
    fig, axes = _grid(len(tests))
    cmap = colormaps["viridis_r"]
    norm = LogNorm(vmin=1e-3, vmax=1.0)
    n_perm = int(result.attrs.get("n_permutations", 0))
    for ax, test in zip(axes.flat, tests, strict=False):
        es = np.asarray(cell["es"].sel(test=test).values, dtype=float)
        p = np.asarray(cell["p_sample"].sel(test=test).values, dtype=float)
        counts, edges = np.histogram(es, bins=bins)
        which = np.clip(np.digitize(es, edges[1:-1]), 0, bins - 1)
        for b in range(bins):
            if counts[b]:
                mean_p = float(np.nanmean(p[which == b])) if n_perm else 0.5
                ax.bar(edges[b], counts[b], width=edges[b + 1] - edges[b], align="edge",
                       color=cmap(norm(max(mean_p, 1e-3))), edgecolor="none")
        ces = float(cell["ces"].sel(test=test))
        ax.axvline(ces, color="black", lw=1)
        ax.axvline(0, color="0.6", lw=0.8, ls=":")
        ax.set_title(f"{test}: CES {ces:.2f}", fontsize=9)
        ax.set_xlabel("sample effect size d", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes[:, 0]:
        ax.set_ylabel("samples", fontsize=8)
    mappable = ScalarMappable(norm=norm, cmap=cmap)
    bar = fig.colorbar(mappable, ax=axes, shrink=0.6)
    bar.set_label(f"mean p of the bin's samples ({n_perm} re-splits; floor 1/{n_perm + 1})", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    fig.suptitle(_title(model, f"Distribution of {cell.sizes['sample']:,} sampled effect sizes "
                               f"(layer {int(cell['layer'])}, {str(cell['pooling'].values)} pooling); "
                               "black line: CES"), fontsize=10)
    return fig


def ces_by_layer(result: xr.Dataset, *, model: Any = None) -> Figure:
    """CES ± 95 % CI by layer, one panel per test, one line per pooling; bootstrap CI as bars."""
    sel = result.sel(model=model) if model is not None and "model" in result.dims else result
    tests = list(sel["test"].values)
    fig, axes = _grid(len(tests))
    layers = np.asarray(sel["layer"].values, dtype=float)
    poolings = list(sel["pooling"].values)
    for ax, test in zip(axes.flat, tests, strict=False):
        for k, pooling in enumerate(poolings):
            cur = sel.sel(test=test, pooling=pooling)
            color = _POOLING_COLORS.get(str(pooling), f"C{k}")
            x = layers + (k - (len(poolings) - 1) / 2) * 0.08
            ces = np.asarray(cur["ces"].values, dtype=float)
            ax.plot(x, ces, marker="o", ms=2.5, lw=1, color=color, label=str(pooling))
            ax.fill_between(x, cur["ci_low"].values, cur["ci_high"].values, color=color, alpha=0.25,
                            lw=0)
            if "boot_ci_low" in cur:
                ax.vlines(x, cur["boot_ci_low"].values, cur["boot_ci_high"].values, color=color,
                          lw=0.8, alpha=0.8)
        ax.axhline(0, color="0.5", lw=0.7, ls=":")
        ax.set_title(str(test), fontsize=9)
        ax.set_xlabel("layer", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes[:, 0]:
        ax.set_ylabel("CES (d)", fontsize=8)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), frameon=False,
               fontsize=8, title="pooling (band: meta-analytic 95% CI; bars: bootstrap 95% CI)",
               title_fontsize=8)
    n = int(result.attrs.get("n_samples", 0))
    fig.suptitle(_title(model, f"CEAT combined effect size by layer (N = {n:,} samples)"),
                 fontsize=10)
    return fig


def heat_table(result: xr.Dataset) -> Figure:
    """CES of tests × models at each model's declared cell, annotated with d and p."""
    models = list(result["model"].values) if "model" in result.dims else [None]
    tests = list(result["test"].values)
    values = np.full((len(tests), len(models)), np.nan)
    texts = [["" for _ in models] for _ in tests]
    for j, model in enumerate(models):
        cell = _cell(result, model)
        for i, test in enumerate(tests):
            d = float(cell["ces"].sel(test=test))
            p = float(cell["p"].sel(test=test))
            values[i, j] = d
            texts[i][j] = f"{d:.2f}\n{'p<1e-30' if p < 1e-30 else f'p={p:.1e}'}"
            if "boot_ci_low" in cell:
                lo = float(cell["boot_ci_low"].sel(test=test))
                hi = float(cell["boot_ci_high"].sel(test=test))
                texts[i][j] += f"\nboot [{lo:.2f}, {hi:.2f}]"
    fig = Figure(figsize=(max(4.6, 2.2 + 1.5 * len(models)), 1.0 + 0.55 * len(tests)),
                 layout="constrained")
    ax = fig.subplots()
    lim = max(0.8, float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 1.0)
    image = ax.imshow(values, cmap="RdBu_r", norm=TwoSlopeNorm(0, -lim, lim), aspect="auto")
    for i in range(len(tests)):
        for j in range(len(models)):
            ax.text(j, i, texts[i][j], ha="center", va="center", fontsize=6.5,
                    color="white" if abs(values[i, j]) > 0.6 * lim else "black")
    ax.set_xticks(range(len(models)), [str(m) if m is not None else "model" for m in models],
                  fontsize=8, rotation=20)
    ax.set_yticks(range(len(tests)), tests, fontsize=8)
    bar = fig.colorbar(image, ax=ax, shrink=0.8)
    bar.set_label("CES (|d| 0.2 small, 0.5 medium, 0.8 large)", fontsize=7)
    bar.ax.tick_params(labelsize=7)
    ax.set_title(f"CEAT CES at the top layer, {result.attrs.get('declared_pooling')} pooling\n"
                 f"N = {int(result.attrs.get('n_samples', 0)):,}; p {result.attrs.get('alternative')}; "
                 "boot: bootstrap 95% CI", fontsize=8)
    return fig


def convergence(result: xr.Dataset, *, model: Any = None) -> Figure:
    """Left: half-width of the meta-analytic 95 % CI by N (solid) and of the bootstrap CI by
    samples per replicate (dashed); right: the meta-analytic p by N. Declared cell, all tests."""
    from emb.analyses.stats import meta_log10_pvalue

    cell = _cell(result, model)
    fig = Figure(figsize=(7.0, 3.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    grid = np.asarray(cell["n_grid"].values, dtype=float)
    tests = list(cell["test"].values)
    colors = colormaps["tab20"](np.linspace(0, 1, max(len(tests), 2)))
    for k, test in enumerate(tests):
        cur = cell.sel(test=test)
        half = (np.asarray(cur["conv_ci_high"].values) - np.asarray(cur["conv_ci_low"].values)) / 2
        left.plot(grid, half, color=colors[k], lw=1.2, marker="o", ms=2.5, label=str(test))
        if "conv_boot_ci_low" in cur:
            bgrid = np.asarray(cell["n_boot_grid"].values, dtype=float)
            bhalf = (np.asarray(cur["conv_boot_ci_high"].values)
                     - np.asarray(cur["conv_boot_ci_low"].values)) / 2
            left.plot(bgrid, bhalf, color=colors[k], lw=1.0, ls="--", marker="s", ms=2)
        # -log10 p from z without underflow (a p below float range still has a finite height)
        minus_log10_p = -meta_log10_pvalue(np.asarray(cur["conv_z"].values, dtype=float),
                                           str(result.attrs.get("alternative", "two-sided")))
        right.plot(grid, np.maximum(minus_log10_p, 1e-2), color=colors[k], lw=1.2, marker="o",
                   ms=2.5)
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("N (samples; dashed: samples per bootstrap replicate)", fontsize=8)
    left.set_ylabel("half-width of the 95% CI of the CES", fontsize=8)
    left.set_title("meta-analytic CI (solid) shrinks like 1/sqrt(N);\nbootstrap CI (dashed) does not",
                   fontsize=8)
    right.set_xscale("log")
    right.set_yscale("log")
    right.axhline(-math.log10(0.05), color="0.5", lw=0.8, ls=":", label="p = 0.05")
    right.set_xlabel("N (samples)", fontsize=8)
    right.set_ylabel(f"-log10 p, meta-analytic ({result.attrs.get('alternative')})", fontsize=8)
    right.set_title("p of the combined z falls with N", fontsize=8)
    for ax in (left, right):
        ax.tick_params(labelsize=7)
    fig.legend(*left.get_legend_handles_labels(), loc="outside right center", fontsize=7,
               frameon=False, title="test", title_fontsize=7)
    fig.suptitle(_title(model, f"CEAT at layer {int(cell['layer'])}, "
                               f"{str(cell['pooling'].values)} pooling: uncertainty as N grows "
                               f"({int(result.attrs.get('n_bootstrap', 0))} bootstrap replicates)"),
                 fontsize=9)
    return fig

