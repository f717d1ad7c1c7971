"""Figures from analysis results (matplotlib, no pyplot state: each function returns a Figure).

Every function takes a computed (or lazy) result Dataset and returns a
:class:`matplotlib.figure.Figure`; saving is the caller's job (``fig.savefig(path, dpi=150)``).
When the result has a ``model`` dimension (several stores, :func:`emb.analyses.run_analysis`), the
models are drawn side by side, one row of panels per model, sharing the y axis.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure  # no pyplot: no global state, no display; PNGs via Agg
from matplotlib.ticker import MaxNLocator

from emb.errors import AnalysisError

__all__ = [
    "layer_curves",
    "nullification_curves",
    "similarity_curves",
    "tokenization_curves",
    "weat_effect_sizes",
]

#: Settings in the paper's order, with fixed colours so that figures compare at a glance.
_SETTING_ORDER = ("bleached", "aligned", "misaligned", "random", "alone")
_PALETTE = ("#1b6ca8", "#2a9d4b", "#d1495b", "#edae49", "#66418a", "#00798c", "#8c564b", "#7f7f7f")
_POOLING_ORDER = ("first", "last", "mean", "max")


def _values(da: xr.DataArray) -> np.ndarray:
    return np.asarray(da.values, dtype=np.float64)


def _labels(result: xr.Dataset, dim: str) -> list[Any]:
    if dim not in result.dims:
        return [None]
    values = list(result[dim].values) if dim in result.coords else list(range(result.sizes[dim]))
    order = {"setting": _SETTING_ORDER, "pooling": _POOLING_ORDER}.get(dim)
    if order:
        values.sort(key=lambda v: (order.index(v) if v in order else len(order), str(v)))
    return values


def _color(i: int) -> str:
    return _PALETTE[i % len(_PALETTE)]


def _setting_colors(settings: Sequence[Any]) -> dict[Any, str]:
    colors = {}
    for i, s in enumerate(settings):
        colors[s] = _PALETTE[_SETTING_ORDER.index(s)] if s in _SETTING_ORDER else _color(i + 5)
    return colors


def _sel(da: xr.DataArray, **indexers: Any) -> xr.DataArray:
    """``da.sel`` for the indexers whose dim exists (a ``None`` value is skipped)."""
    use = {k: v for k, v in indexers.items() if v is not None and k in da.dims}
    return da.sel(use) if use else da


def _grid(
    n_rows: int, n_cols: int, *, width: float = 3.6, height: float = 3.0, sharey: bool = True
) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(0.6 + width * n_cols, 0.9 + height * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False, sharey=sharey, sharex=False)
    return fig, axes


def _model_label(model: Hashable | None) -> str:
    return "" if model is None else f"{model}: "


def _one_model(result: xr.Dataset) -> tuple[xr.Dataset, str]:
    """Drop a length-1 ``model`` dim (its name goes into the figure title instead)."""
    if "model" in result.dims and result.sizes["model"] == 1:
        name = str(result["model"].values[0]) if "model" in result.coords else ""
        return result.isel(model=0, drop=True), (f" [{name}]" if name else "")
    return result, ""


def _require(result: xr.Dataset, names: Sequence[str], what: str) -> None:
    missing = [n for n in names if n not in result]
    if missing:
        raise AnalysisError(
            f"cannot draw {what}: the result lacks {missing}; it has {sorted(map(str, result.data_vars))}"
        )


def _pick(result: xr.Dataset, dim: str, value: Any, default_first: bool = True) -> Any:
    """A value of ``dim`` (the given one, else the preferred/first one); None if no such dim."""
    if dim not in result.dims:
        return None
    present = list(result[dim].values)
    if value is not None:
        if value not in present:
            raise AnalysisError(f"{dim} {value!r} is not in the result; it has {present}")
        return value
    if dim == "pooling" and "last" in present:
        return "last"
    if dim == "rating" and "valence" in present:
        return "valence"
    return present[0] if default_first else None


def _finite_line(ax: Any, x: np.ndarray, y: np.ndarray, **kwargs: Any) -> None:
    ok = np.isfinite(y)
    if ok.any():
        ax.plot(x[ok], y[ok], **kwargs)


def _legend(fig: Figure, axes: np.ndarray) -> None:
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 6), frameon=False)


def layer_curves(
    result: xr.Dataset,
    *,
    variable: str = "r",
    lexicon: str | None = None,
    rating: str | None = None,
    title: str | None = None,
) -> Figure:
    """VAST / ValNorm by layer: one line per setting, one panel per pooling (rows: models).

    Parameters
    ----------
    result : xr.Dataset
        A :func:`~emb.analyses.vast.vast` or :func:`~emb.analyses.valnorm.valnorm` result with
        ``variable(…, setting, pooling, layer)`` (and ``ci_low``/``ci_high`` for the 95 % band).
    variable : str
        The variable drawn (default ``"r"``).
    lexicon, rating : str, optional
        Which lexicon / rating to draw (default: the first lexicon, ``valence``).
    title : str, optional
        Figure title (default: "<variable> by layer — <lexicon>").

    Returns
    -------
    matplotlib.figure.Figure
        Like Figure 1 of Wolfe & Caliskan (2022): x = layer, y = Pearson's r.
    """
    _require(result, [variable], "layer curves")
    result, tag = _one_model(result)
    lexicon = _pick(result, "lexicon", lexicon)
    rating = _pick(result, "rating", rating)
    da = _sel(result[variable], lexicon=lexicon, rating=rating)
    band = None
    if "ci_low" in result and "ci_high" in result and variable == "r":
        band = (
            _sel(result["ci_low"], lexicon=lexicon, rating=rating),
            _sel(result["ci_high"], lexicon=lexicon, rating=rating),
        )
    models = _labels(result, "model")
    poolings = _labels(result, "pooling")
    settings = _labels(result, "setting")
    colors = _setting_colors(settings)
    fig, axes = _grid(len(models), len(poolings))
    layers = np.asarray(result["layer"].values)
    for i, model in enumerate(models):
        for j, pooling in enumerate(poolings):
            ax = axes[i, j]
            for setting in settings:
                line = _values(_sel(da, model=model, pooling=pooling, setting=setting))
                _finite_line(ax, layers, line, marker="o", ms=3.5, lw=1.6, color=colors[setting],
                             label=str(setting) if setting is not None else variable)
                if band is not None:
                    lo = _values(_sel(band[0], model=model, pooling=pooling, setting=setting))
                    hi = _values(_sel(band[1], model=model, pooling=pooling, setting=setting))
                    ok = np.isfinite(lo) & np.isfinite(hi)
                    if ok.any():
                        ax.fill_between(layers[ok], lo[ok], hi[ok], color=colors[setting], alpha=0.12, lw=0)
            ax.axhline(0, color="0.6", lw=0.8)
            ax.set_title(f"{_model_label(model)}{pooling or ''} pooling" if pooling else _model_label(model))
            ax.set_xlabel("layer")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
        axes[i, 0].set_ylabel(_ylabel(variable))
    fig.suptitle((title or f"{_ylabel(variable)} by layer" + (f" — {lexicon}" if lexicon else "")
                  + (f" ({rating})" if rating and rating != "valence" else "")) + tag)
    _legend(fig, axes)
    return fig


def _ylabel(variable: str) -> str:
    return {
        "r": "VAST (Pearson's r)",
        "spearman_r": "Spearman's rho",
        "tokenization_r": "VAST (Pearson's r)",
        "nullified_r": "VAST (Pearson's r)",
        "similarity_rho": "Spearman's rho",
        "effect_size": "effect size (d)",
    }.get(variable, variable)


def tokenization_curves(
    result: xr.Dataset, *, lexicon: str | None = None, title: str | None = None
) -> Figure:
    """Singly vs multiply tokenized words by layer: one panel per setting, colour = pooling.

    Solid lines: singly tokenized words; dashed: multiply tokenized. The line is the mean over
    the random equal-size subsets, the band their range (Figure 2 of Wolfe & Caliskan 2022).
    """
    _require(result, ["tokenization_r"], "tokenization curves")
    result, tag = _one_model(result)
    lexicon = _pick(result, "lexicon", lexicon)
    da = _sel(result["tokenization_r"], lexicon=lexicon)
    models = _labels(result, "model")
    settings = _labels(result, "setting")
    poolings = _labels(result, "pooling")
    layers = np.asarray(result["layer"].values)
    fig, axes = _grid(len(models), len(settings))
    styles = {"single": "-", "multi": "--"}
    for i, model in enumerate(models):
        for j, setting in enumerate(settings):
            ax = axes[i, j]
            for c, pooling in enumerate(poolings):
                for token_set in _labels(result, "token_set"):
                    sub = _sel(da, model=model, setting=setting, pooling=pooling, token_set=token_set)
                    vals = _values(sub.transpose(..., "layer"))
                    vals = vals.reshape(-1, vals.shape[-1])
                    with np.errstate(all="ignore"), _quiet():
                        mean = np.nanmean(vals, axis=0)
                        lo, hi = np.nanmin(vals, axis=0), np.nanmax(vals, axis=0)
                    label = f"{token_set} · {pooling}"
                    _finite_line(ax, layers, mean, marker="o", ms=3, lw=1.5, color=_color(c),
                                 ls=styles.get(str(token_set), ":"), label=label)
                    ok = np.isfinite(lo) & np.isfinite(hi)
                    if vals.shape[0] > 1 and ok.any():
                        ax.fill_between(layers[ok], lo[ok], hi[ok], color=_color(c), alpha=0.12, lw=0)
            ax.axhline(0, color="0.6", lw=0.8)
            ax.set_title(f"{_model_label(model)}{setting}")
            ax.set_xlabel("layer")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
        axes[i, 0].set_ylabel("VAST (Pearson's r)")
    fig.suptitle((title or "Singly (solid) vs multiply (dashed) tokenized words"
                  + (f" — {lexicon}" if lexicon else "")) + tag)
    _legend(fig, axes)
    return fig


class _quiet:
    """Silence numpy's 'mean of empty slice' RuntimeWarnings inside a block."""

    def __enter__(self) -> None:
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(*exc)


def nullification_curves(
    result: xr.Dataset,
    *,
    lexicon: str | None = None,
    rating: str | None = None,
    pooling: str | None = None,
    title: str | None = None,
) -> Figure:
    """VAST vs number of nullified principal components: one panel per nullified layer.

    Lines: settings. Like Figure 3 of Wolfe & Caliskan (2022) (x = PCs nullified, ``k = 0`` is
    the mean-subtracted vectors).
    """
    _require(result, ["nullified_r"], "nullification curves")
    result, tag = _one_model(result)
    lexicon = _pick(result, "lexicon", lexicon)
    rating = _pick(result, "rating", rating)
    pooling = _pick(result, "pooling", pooling)
    da = _sel(result["nullified_r"], lexicon=lexicon, rating=rating, pooling=pooling)
    models = _labels(result, "model")
    settings = _labels(result, "setting")
    colors = _setting_colors(settings)
    ks = np.asarray(result["k"].values)
    # the layers that hold values (NaN elsewhere), per model
    panels: list[list[Any]] = []
    for model in models:
        sub = _sel(da, model=model)
        other = [d for d in sub.dims if d != "layer"]
        has = np.isfinite(_values(sub.transpose("layer", *other))).reshape(sub.sizes["layer"], -1).any(axis=1)
        panels.append([lay for lay, h in zip(result["layer"].values, has, strict=True) if h])
    n_cols = max(1, max(len(p) for p in panels))
    fig, axes = _grid(len(models), n_cols)
    for i, model in enumerate(models):
        for j in range(n_cols):
            ax = axes[i, j]
            if j >= len(panels[i]):
                ax.set_visible(False)
                continue
            layer = panels[i][j]
            for setting in settings:
                line = _values(_sel(da, model=model, layer=layer, setting=setting))
                _finite_line(ax, ks, line, marker="o", ms=3.5, lw=1.6, color=colors[setting],
                             label=str(setting))
            tag = _layer_tag(result, model, lexicon, pooling, layer)
            ax.set_title(f"{_model_label(model)}layer {layer}{tag}")
            ax.set_xlabel("principal components nullified (k)")
            ax.set_xticks(ks)
            ax.axhline(0, color="0.6", lw=0.8)
            ax.grid(alpha=0.3)
        axes[i, 0].set_ylabel("VAST (Pearson's r)")
    fig.suptitle((title or f"VAST after nullifying top PCs — {pooling} pooling"
                  + (f", {lexicon}" if lexicon else "")
                  + (f" ({rating})" if rating and rating != "valence" else "")) + tag)
    _legend(fig, axes)
    return fig


def _layer_tag(result: xr.Dataset, model: Any, lexicon: Any, pooling: Any, layer: Any) -> str:
    tags = []
    if "best_layer" in result:
        best = _values(_sel(result["best_layer"], model=model, lexicon=lexicon, pooling=pooling))
        if best.size == 1 and np.isfinite(best) and int(best) == int(layer):
            tags.append("best")
    if "top_layer" in result:
        top = _values(_sel(result["top_layer"], model=model))
        if top.size == 1 and np.isfinite(top) and int(top) == int(layer):
            tags.append("top")
    return f" ({', '.join(tags)})" if tags else ""


def similarity_curves(
    result: xr.Dataset,
    *,
    pooling: str | None = None,
    ks: Sequence[int] | None = None,
    variable: str | None = None,
    title: str | None = None,
) -> Figure:
    """Word-similarity Spearman's ρ by layer: one panel per benchmark, one line per ``k``.

    Parameters
    ----------
    result : xr.Dataset
        With ``similarity_rho`` (a VAST result) or ``rho`` (a word-similarity result) over
        ``(dataset, pooling, layer, k)``.
    ks : sequence of int, optional
        Which ``k`` to draw (default 0, 1, 2, 4, 8 and the largest, where present).
    """
    variable = variable or ("similarity_rho" if "similarity_rho" in result else "rho")
    _require(result, [variable], "word-similarity curves")
    result, tag = _one_model(result)
    pooling = _pick(result, "pooling", pooling)
    da = _sel(result[variable], pooling=pooling)
    all_k = [int(k) for k in result["k"].values]
    if ks is None:
        ks = [k for k in (0, 1, 2, 4, 8) if k in all_k]
        if all_k and all_k[-1] not in ks:
            ks.append(all_k[-1])
    models = _labels(result, "model")
    datasets = _labels(result, "dataset")
    layers = np.asarray(result["layer"].values)
    fig, axes = _grid(len(models), len(datasets))
    for i, model in enumerate(models):
        for j, dataset in enumerate(datasets):
            ax = axes[i, j]
            for c, k in enumerate(ks):
                line = _values(_sel(da, model=model, dataset=dataset, k=k))
                _finite_line(ax, layers, line, marker="o", ms=3, lw=1.4, color=_color(c),
                             label=f"k = {k}")
            n = ""
            for name in ("similarity_n", "n"):
                if name in result and "dataset" in result[name].dims:
                    val = _values(_sel(result[name], model=model, dataset=dataset))
                    if val.size == 1 and np.isfinite(val):
                        n = f" (n = {int(val)})"
                    break
            ax.set_title(f"{_model_label(model)}{dataset}{n}")
            ax.set_xlabel("layer")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
        axes[i, 0].set_ylabel("Spearman's rho")
    fig.suptitle((title or f"Word similarity by layer and PCs nullified — {pooling} pooling") + tag)
    _legend(fig, axes)
    return fig


def weat_effect_sizes(
    result: xr.Dataset,
    *,
    pooling: str | None = None,
    alpha: float = 0.05,
    pvalue: str | None = None,
    title: str | None = None,
) -> Figure:
    """WEAT effect size by layer, one panel per test, one line per setting (rows: models).

    Filled markers: ``p < alpha``; open markers: not significant. The p-value variable is
    ``p_adjusted`` when the result has one, else ``p``.
    """
    _require(result, ["effect_size"], "WEAT effect sizes")
    result, tag = _one_model(result)
    pvar = pvalue or ("p_adjusted" if "p_adjusted" in result else "p")
    pooling = _pick(result, "pooling", pooling)
    es = _sel(result["effect_size"], pooling=pooling)
    ps = _sel(result[pvar], pooling=pooling) if pvar in result else None
    models = _labels(result, "model")
    tests = _labels(result, "test")
    settings = _labels(result, "setting")
    colors = _setting_colors(settings)
    layers = np.asarray(result["layer"].values)
    n_cols = min(len(tests), 5)
    n_rows_per_model = -(-len(tests) // n_cols)
    fig, axes = _grid(len(models) * n_rows_per_model, n_cols, width=3.0, height=2.6)
    for i, model in enumerate(models):
        for t, test in enumerate(tests):
            ax = axes[i * n_rows_per_model + t // n_cols, t % n_cols]
            for setting in settings:
                y = _values(_sel(es, model=model, test=test, setting=setting))
                color = colors[setting]
                _finite_line(ax, layers, y, lw=1.4, color=color, label=str(setting))
                if ps is not None:
                    p = _values(_sel(ps, model=model, test=test, setting=setting))
                    sig = np.isfinite(y) & (p < alpha)
                    ns = np.isfinite(y) & ~(p < alpha)
                    ax.plot(layers[sig], y[sig], "o", ms=4.5, color=color)
                    ax.plot(layers[ns], y[ns], "o", ms=4.5, mfc="white", mec=color)
            ax.axhline(0, color="0.6", lw=0.8)
            ax.set_title(f"{_model_label(model)}{test}")
            ax.set_xlabel("layer")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
        for r in range(n_rows_per_model):
            axes[i * n_rows_per_model + r, 0].set_ylabel("effect size (d)")
    for extra in range(len(tests), n_rows_per_model * n_cols):
        for i in range(len(models)):
            axes[i * n_rows_per_model + extra // n_cols, extra % n_cols].set_visible(False)
    fig.suptitle((title or f"WEAT effect size by layer — {pooling} pooling; filled: {pvar} < {alpha}")
                 + tag)
    _legend(fig, axes)
    return fig
