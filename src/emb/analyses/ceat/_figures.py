"""CEAT's figures (matplotlib Figure objects, no pyplot).

- :func:`es_histograms`: the distribution of the N sampled effect sizes per test, each bin coloured
  by the mean per-sample p of its samples (the paper's Figure 1);
- :func:`ces_by_layer`: CES with its 95 % CI (and the bootstrap CI) by layer, one panel per test;
- :func:`heat_table`: CES of tests × models at the declared cell (the paper's Table 1);
- :func:`convergence`: how the meta-analytic CI and p shrink with N while the bootstrap CI stays.

Tests are labelled by their readable name (``test_name``, from the test definitions).
"""

from __future__ import annotations

import json
import math
from functools import partial
from typing import Any

import numpy as np
import xarray as xr
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LogNorm, TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from emb.analyses import _figure as fg
from emb.analyses import curves

__all__ = ["ces_by_layer", "convergence", "es_histograms", "heat_table"]


def _pooling(result: xr.Dataset, model: Any = None) -> str:
    """The declared pooling of ``model``: the run's, else that model's own (a contextual and a
    static store in one run each declare theirs: ``last`` and ``static``), else its first
    pooling with a CES."""
    if result.attrs.get("declared_pooling"):
        return str(result.attrs["declared_pooling"])
    own = json.loads(str(result.attrs.get("models", "{}")) or "{}").get(str(model), {})
    if own.get("declared_pooling"):
        return str(own["declared_pooling"])
    sel = result.sel(model=model) if model is not None and "model" in result.dims else result
    return str(fg.own_poolings(sel.expand_dims("model") if "model" not in sel.dims else sel,
                               "ces", fg.POOLING_ORDER)[0])


def _cell(result: xr.Dataset, model: Any = None) -> xr.Dataset:
    sel = result.sel(model=model) if model is not None and "model" in result.dims else result
    layer = int(result.attrs.get("declared_layer", int(sel["layer"].max())))
    pooling = _pooling(result, model)
    if "model" in result.dims:  # each model's own top layer: the last finite one
        finite = sel["ces"].sel(pooling=pooling).notnull().all("test")
        layer = int(sel["layer"].values[np.flatnonzero(finite.values)[-1]])
    return sel.sel(layer=layer, pooling=pooling)


def _title(model: Any, text: str) -> str:
    return f"{model}: {text}" if model is not None else text


def label_of(result: xr.Dataset, test: Any, *, width: int = 24) -> str:
    """``C1: Flowers vs insects × pleasant/unpleasant`` (the test's readable name, ``test_name``;
    else its word sets' names), broken after a slash or a space into lines of about ``width``
    characters."""
    # one name per test; the stores of a run that name a test differently: each name, "; "
    named = [str(v).strip() for v in np.asarray(result["test_name"].sel(test=test).values,
                                                 dtype=object).ravel()] \
        if "test_name" in result.coords else []
    title = "; ".join(dict.fromkeys(v for v in named if v))
    if title:
        pieces = [f"{test}:"] + [w for piece in title.split() for w in _slashed(piece)]
    else:
        names = [str(result[g].sel(test=test).values)
                 for g in ("x_group", "y_group", "a_group", "b_group") if g in result.coords]
        if len(names) != 4:
            return str(test)
        pieces = [f"{test}:", f"{names[0]}/", names[1], "vs", f"{names[2]}/", names[3]]
    lines = [pieces[0]]
    for piece in pieces[1:]:
        glue = "" if lines[-1].endswith("/") else " "
        if len(lines[-1]) + len(glue) + len(piece) <= width:
            lines[-1] += glue + piece
        else:
            lines.append(piece)
    return "\n".join(lines)


def _slashed(word: str) -> list[str]:
    """``pleasant/unpleasant`` → ``["pleasant/", "unpleasant"]``: a line may break after a slash."""
    parts = word.split("/")
    return [f"{p}/" for p in parts[:-1]] + [parts[-1]]


def _test_styles(tests: list[Any]) -> dict[Any, dict[str, Any]]:
    """Colour-blind-safe styles for many tests: the Okabe–Ito colours, then other markers and
    line styles once they run out."""
    n = len(fg.PALETTE)
    return {t: {"color": fg.PALETTE[k % n], "marker": fg.MARKERS[(k // n) % len(fg.MARKERS)],
                "ls": fg.LINESTYLES[(k // n) % len(fg.LINESTYLES)]} for k, t in enumerate(tests)}


@fg.styled
def es_histograms(result: xr.Dataset, *, model: Any = None, bins: int = 30) -> Figure:
    """Histogram of the sampled ES per test at the declared cell, bins coloured by mean p."""
    cell = _cell(result, model)
    tests = list(cell["test"].values)
    fig, axes, cols = fg.grid(len(tests), max_cols=4, sharey=False, panel_height=1.9)
    cmap = colormaps["viridis_r"]
    n_perm = int(result.attrs.get("n_permutations", 0))
    floor = 1.0 / (n_perm + 1) if n_perm else 1e-3
    norm = LogNorm(vmin=floor, vmax=1.0)
    for ax, test in zip(axes, tests, strict=True):
        es = np.asarray(cell["es"].sel(test=test).values, dtype=float)
        p = np.asarray(cell["p_sample"].sel(test=test).values, dtype=float)
        counts, edges = np.histogram(es, bins=bins)
        which = np.clip(np.digitize(es, edges[1:-1]), 0, bins - 1)
        for b in range(bins):
            if counts[b]:
                mean_p = float(np.nanmean(p[which == b])) if n_perm else 0.5
                ax.bar(edges[b], counts[b], width=edges[b + 1] - edges[b], align="edge",
                       color=cmap(norm(max(mean_p, floor))), edgecolor="none")
        ces = float(cell["ces"].sel(test=test))
        ax.axvline(ces, color="black", lw=1)
        ax.axvline(0, color="0.6", lw=0.8, ls=":")
        ax.set_title(f"{label_of(result, test)}\nCES {ces:.2f}", fontsize=6.5)
        ax.set_xlabel("sample effect size d")
    for k, ax in enumerate(axes):
        if k % cols == 0:
            ax.set_ylabel("samples")
    fg.outer_xlabels(axes)
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=axes, shrink=0.6)
    alternative = result.attrs.get("alternative", "two-sided")
    bar.set_label(f"mean per-sample {alternative} p ({n_perm:,} re-splits each)"
                  + (f"\nbottom of the scale: the floor 1/{n_perm + 1:,}" if n_perm else ""))
    fig.suptitle(_title(model, f"Distribution of {cell.sizes['sample']:,} sampled effect sizes "
                               f"(layer {int(cell['layer'])}, {str(cell['pooling'].values)} pooling); "
                               "black line: CES"))
    return fig


@fg.styled
def ces_by_layer(result: xr.Dataset, *, model: Any = None) -> Figure:
    """CES ± 95 % CI by layer, one panel per test, one line per pooling; bootstrap CI as bars."""
    sel = result.sel(model=model) if model is not None and "model" in result.dims else result
    # the poolings and layers this model has (a static store beside a contextual one: static, 0)
    has = sel["ces"].notnull()
    sel = sel.sel(pooling=has.any([d for d in has.dims if d != "pooling"]),
                  layer=has.any([d for d in has.dims if d != "layer"]))
    layers = np.asarray(sel["layer"].values, dtype=float)
    poolings = fg.labels(sel, "pooling")
    colors = fg.colors_for(poolings)
    step = min(0.5, 0.7 / max(len(poolings), 1)) * (np.median(np.diff(layers)) if layers.size > 1 else 1)
    has_boot = "boot_ci_low" in sel

    def curve(test: Any, k: int, pooling: Any) -> curves.Curve:
        cur = sel.sel(test=test, pooling=pooling)
        return curves.Curve(
            y=fg.values(cur["ces"]), color=colors[pooling], label=str(pooling),
            style={"marker": "o", "ms": 2.2, "lw": 1.0}, shift=(k - (len(poolings) - 1) / 2) * step,
            band=(fg.values(cur["ci_low"]), fg.values(cur["ci_high"])), band_alpha=0.35,
            bars=(fg.values(cur["boot_ci_low"]), fg.values(cur["boot_ci_high"])) if has_boot else None)

    n = int(result.attrs.get("n_samples", 0))
    extra = [fg.band_handle(f"random-effects 95% CI over N = {n:,} resamples (shrinks with N; "
                            "often thinner than the line)")]
    if has_boot:
        extra.append((Line2D([], [], color="0.4", lw=0.8), "bootstrap 95% CI (stimuli resampled)"))
    panels = [curves.Panel(title=label_of(result, test), curves=[curve(test, k, p) for k, p in enumerate(poolings)])
              for test in sel["test"].values]
    return curves.draw_layer_curves(curves.LayerCurves(
        layers=layers, panels=panels, max_cols=4, sharey=False, panel_height=1.7, title_size=6.5,
        ylabel="CES (d)", legend=partial(fg.legend, extra=extra, ncols=3, title="pooling"),
        title=_title(model, f"CEAT combined effect size by layer (N = {n:,} samples)")))


@fg.styled
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
            texts[i][j] = f"{d:.2f}"
            if "boot_ci_low" in cell:  # the uncertainty that does not shrink with N first
                lo = float(cell["boot_ci_low"].sel(test=test))
                hi = float(cell["boot_ci_high"].sel(test=test))
                texts[i][j] += f"\nboot [{lo:.2f}, {hi:.2f}]"
            texts[i][j] += f"\nRE {'p<1e-30' if p < 1e-30 else f'p={p:.1e}'}"
    fig = Figure(figsize=(min(fg.PAGE_WIDTH, 3.4 + 1.2 * len(models)), 1.0 + 0.5 * len(tests)),
                 layout="constrained")
    ax = fig.subplots()
    lim = max(0.8, float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 1.0)
    image = ax.imshow(values, cmap="RdBu_r", norm=TwoSlopeNorm(0, -lim, lim), aspect="auto")
    for i in range(len(tests)):
        for j in range(len(models)):
            ax.text(j, i, texts[i][j], ha="center", va="center", fontsize=6,
                    color="white" if abs(values[i, j]) > 0.6 * lim else "black")
    poolings = [_pooling(result, m) for m in models]
    one = len(set(poolings)) == 1  # else each model's own pooling under its name
    ax.set_xticks(range(len(models)), [(str(m) if m is not None else "model")
                                       + ("" if one else f"\n({p} pooling)")
                                       for m, p in zip(models, poolings, strict=True)],
                  rotation=20)
    ax.set_yticks(range(len(tests)), [label_of(result, t, width=40) for t in tests], fontsize=6.5)
    bar = fig.colorbar(image, ax=ax, shrink=0.8)
    bar.set_label("CES (|d| 0.2 small, 0.5 medium, 0.8 large)")
    where = f"{poolings[0]} pooling" if one else "each model's pooling"
    ax.set_title(f"CEAT CES at the top layer, {where}\n"
                 + ("boot: bootstrap 95% CI (stimuli, contexts)\n" if "boot_ci_low" in result
                    else "")
                 + f"RE p: random-effects {result.attrs.get('alternative')} p over\n"
                 f"N = {int(result.attrs.get('n_samples', 0)):,} resamples of one pool of contexts\n"
                 "(not independent studies: shrinks with N)", fontsize=6.5)
    return fig


@fg.styled
def convergence(result: xr.Dataset, *, model: Any = None) -> Figure:
    """Left: half-width of the meta-analytic 95 % CI by N (solid) and of the bootstrap CI by
    samples per replicate (dashed); right: the meta-analytic p by N. Declared cell, all tests."""
    from emb.analyses.stats import meta_log10_pvalue

    cell = _cell(result, model)
    fig = Figure(figsize=(fg.PAGE_WIDTH, 3.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    grid = np.asarray(cell["n_grid"].values, dtype=float)
    tests = list(cell["test"].values)
    styles = _test_styles(tests)
    for test in tests:
        cur = cell.sel(test=test)
        style = styles[test]
        half = (np.asarray(cur["conv_ci_high"].values) - np.asarray(cur["conv_ci_low"].values)) / 2
        left.plot(grid, half, color=style["color"], lw=1.1, marker=style["marker"], ms=2.5,
                  label=label_of(result, test, width=30))
        if "conv_boot_ci_low" in cur:
            bgrid = np.asarray(cell["n_boot_grid"].values, dtype=float)
            bhalf = (np.asarray(cur["conv_boot_ci_high"].values)
                     - np.asarray(cur["conv_boot_ci_low"].values)) / 2
            left.plot(bgrid, bhalf, color=style["color"], lw=0.9, ls="--", marker=style["marker"],
                      ms=2, mfc="white")
        # -log10 p from z without underflow (a p below float range still has a finite height)
        minus_log10_p = -meta_log10_pvalue(np.asarray(cur["conv_z"].values, dtype=float),
                                           str(result.attrs.get("alternative", "two-sided")))
        right.plot(grid, np.maximum(minus_log10_p, 1e-2), color=style["color"], lw=1.1,
                   marker=style["marker"], ms=2.5)
    left.set_xscale("log")
    left.set_yscale("log")
    boot = "conv_boot_ci_low" in cell
    left.set_xlabel("N (samples" + ("; dashed: samples per bootstrap replicate)" if boot else ")"))
    left.set_ylabel("half-width of the 95% CI of the CES")
    left.set_title("meta-analytic CI (solid) shrinks like 1/sqrt(N)"
                   + (";\nbootstrap CI (dashed) does not" if boot else ""))
    right.set_xscale("log")
    right.set_yscale("log")
    right.axhline(-math.log10(0.05), color="0.5", lw=0.8, ls=":")
    right.set_xlabel("N (samples)")
    right.set_ylabel(f"-log10 p, meta-analytic ({result.attrs.get('alternative')})")
    right.set_title("p of the combined z falls with N")
    for ax in (left, right):
        ax.grid(alpha=0.3, which="major")
    fg.legend(fig, [left, right], [(Line2D([], [], color="0.5", lw=0.8, ls=":"), "p = 0.05")],
              loc="outside right center", ncols=1, title="test")
    fig.suptitle(_title(model, f"CEAT at layer {int(cell['layer'])}, "
                               f"{str(cell['pooling'].values)} pooling: uncertainty as N grows"
                               + (f" ({int(result.attrs.get('n_bootstrap', 0))} bootstrap "
                                  "replicates)" if boot else "")))
    return fig
