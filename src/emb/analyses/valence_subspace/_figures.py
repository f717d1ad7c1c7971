"""The valence-subspace analysis' figure (matplotlib Figure, no pyplot): ValNorm by projection vs
by cosine, by layer (Omrani Sabbaghi et al. 2023, Figure 2).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from emb.analyses import _figure as fg

__all__ = ["valnorm_curves"]


def valnorm_curves(result: xr.Dataset) -> Figure:
    """ValNorm by projection (solid) and by cosine SC-WEAT (dashed) by layer, with Fisher-z 95 %
    bands, and the classifier's cross-validated accuracy (dotted); a panel per pooling (one model)
    or per model at the declared pooling (several), two columns."""
    models = fg.model_list(result)
    # one model: a panel per pooling; several (the paper's Figure 2): a panel per model at the
    # declared pooling (every pooling is in the table), or at its own where it has not that one
    # (a static store beside a contextual one: static)
    if len(models) == 1:
        cells = [(models[0], str(p)) for p in result["pooling"].values]
    else:
        declared = fg.declared_pooling(result)
        cells = [(m, str(fg.own_poolings(result.sel(model=[m]), "svc_accuracy", (declared,))[0]))
                 for m in models]
    layers = np.asarray(result["layer"].values)
    n_cols = min(len(cells), 2)
    n_rows = -(-len(cells) // n_cols)
    fig = Figure(figsize=(3.5 * n_cols, 0.9 + 2.6 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False, sharey=True)
    for ax in axes.flat[len(cells):]:
        ax.set_visible(False)
    has_r = "r_projection" in result
    banded = False
    for ax, (model, pooling) in zip(axes.flat, cells, strict=False):
        undefined = []
        if has_r:
            for kind, style, color in (("projection", "-", fg.COLOUR_A), ("cosine", "--", fg.COLOUR_B)):
                r = np.asarray(fg.at_model(result[f"r_{kind}"], model).sel(pooling=pooling).values, float)
                lo = np.asarray(fg.at_model(result[f"ci_low_{kind}"], model).sel(pooling=pooling).values, float)
                hi = np.asarray(fg.at_model(result[f"ci_high_{kind}"], model).sel(pooling=pooling).values, float)
                ok = np.isfinite(r)
                if not ok.any():  # a constant score at every layer: no line, and the panel says so
                    undefined.append(kind)
                    continue
                ax.plot(layers[ok], r[ok], style, color=color, marker="o", ms=3, lw=1.5,
                        label=f"ValNorm by {kind} (r, 95% CI)")
                band = ok & np.isfinite(lo) & np.isfinite(hi)
                banded |= bool(band.any())
                ax.fill_between(layers[band], lo[band], hi[band], color=color, alpha=0.15, lw=0)
        if undefined:
            ax.text(0.5, 0.3, f"ValNorm r undefined at every layer\n(by {' and by '.join(undefined)}: "
                    "a constant score)", transform=ax.transAxes, ha="center", va="center",
                    fontsize=7, color="0.25")
        acc = np.asarray(fg.at_model(result["svc_accuracy"], model).sel(pooling=pooling).values, float)
        ok = np.isfinite(acc)
        ax.plot(layers[ok], acc[ok], ":", color="0.35", lw=1.4, label="SVC accuracy (cross-validated)")
        ax.axhline(0.5, color="0.35", lw=0.7, ls=(0, (1, 3)), label="chance accuracy (0.5)")
        ax.axhline(0, color="0.6", lw=0.8)
        n = ""
        if has_r:
            counts = np.asarray(fg.at_model(result["n"], model).values)
            n = f", n = {int(np.nanmax(counts))}" if counts.size else ""
        ax.set_title(f"{fg.model_label(model) + ': ' if model is not None else ''}{pooling} pooling{n}", fontsize=9)
        ax.set_xlabel("layer")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(min(-0.2, ax.get_ylim()[0]), 1.02)
        ax.grid(alpha=0.3)
    for row in axes:
        row[0].set_ylabel("Pearson's r / accuracy")
    # every line drawn in some panel, once
    fg.legend(fig, axes.flat[: len(cells)], [(Patch(color="0.7", alpha=0.4), "band: Fisher-z 95% CI")]
              if banded else [], ncols=2, fontsize=7)
    lexicon = result.attrs.get("lexicon", "")
    fig.suptitle(f"Valence subspace by layer (Figure 2){f' — {lexicon}' if lexicon else ''}", fontsize=10)
    return fig
