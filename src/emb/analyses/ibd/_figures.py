"""Figures of the ``ibd`` analysis: ROC curves with the chosen point (the paper's Figure 2) and
detection accuracy by layer. matplotlib Figures, no pyplot. Groups are shown by their readable
names (``group_name``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from emb.analyses import _figure as fg

__all__ = ["accuracy_by_layer", "roc_curves"]

_METHOD = {"ibd": "IBD", "eibd": "EIBD (emergent)"}
_COLOR = {"ibd": "#1b6ca8", "eibd": "#d1495b"}


def _name(res: xr.Dataset, group: str) -> str:
    """The group's readable name (``group_name``, "African-American females"), else its id."""
    if "group_name" in res.coords:
        return str(res["group_name"].sel(group=group).values)
    return group


def _f(da: xr.DataArray) -> np.ndarray:
    return np.asarray(da.values, dtype=np.float64)


def roc_curves(res: xr.Dataset, *, setting: str, pooling: str, layer: int, model: Any = None) -> Figure:
    """One panel per group × method: the ROC over every candidate threshold (t ≥ 0 solid, t < 0
    faded), the chance diagonal and the chosen operating point with its counts."""
    groups = [str(g) for g in res["group"].values]
    methods = [str(m) for m in res["detector"].values]
    cell = {"setting": setting, "pooling": pooling, "layer": layer}
    fig = Figure(figsize=(7.0, 0.9 + 3.0 * len(groups)), layout="constrained")
    axes = fig.subplots(len(groups), len(methods), squeeze=False)
    for i, group in enumerate(groups):
        for j, method in enumerate(methods):
            ax = axes[i, j]
            sel = {**cell, "group": group, "detector": method}
            t = _f(res["roc_threshold"].sel(sel))
            tpr, fpr = _f(res["roc_tpr"].sel(sel)), _f(res["roc_fpr"].sel(sel))
            ok = np.isfinite(tpr) & np.isfinite(fpr)
            order = np.argsort(t[ok], kind="stable")[::-1]  # from the strictest threshold down
            tt, x, y = t[ok][order], fpr[ok][order], tpr[ok][order]
            color = _COLOR.get(method, "#444444")
            ax.plot([0, 1], [0, 1], ls="--", lw=0.8, color="#999999")
            eligible = tt >= 0
            # IBD's flagged set only grows as t falls: a curve. EIBD's does not (a word leaves
            # when a constituent score passes t): its operating points are drawn unjoined.
            monotone = bool(np.all(np.diff(x) >= 0) and np.all(np.diff(y) >= 0))
            style = "-" if monotone else "none"
            ax.plot(x[~eligible], y[~eligible], marker="o", ls=style, lw=1.0, ms=2.0,
                    color=color, alpha=0.3)
            if monotone and eligible.any() and (~eligible).any():  # join the two parts
                k = int(np.argmax(~eligible))
                ax.plot(x[k - 1 : k + 1], y[k - 1 : k + 1], "-", lw=1.0, color=color, alpha=0.3)
            ax.plot(x[eligible], y[eligible], marker="o", ls=style, lw=1.4, ms=2.5, color=color)
            if eligible.any() and not (np.any(x[eligible] > 0) or np.any(y[eligible] > 0)):
                ax.text(0.5, 0.55, "no eligible threshold (t ≥ 0)\nflags any word", ha="center",
                        va="center", fontsize=8, color="#555555", transform=ax.transAxes)
            p = int(_f(res["n_positive"].sel({"group": group, "detector": method})))
            n = int(_f(res["n_negative"].sel({"group": group, "detector": method})))
            chosen_t = float(_f(res["threshold"].sel(sel)))
            if np.isfinite(chosen_t):
                cx, cy = float(_f(res["fpr"].sel(sel))), float(_f(res["tpr"].sel(sel)))
                tp, fp = int(_f(res["tp"].sel(sel))), int(_f(res["fp"].sel(sel)))
                ax.plot([cx], [cy], "o", ms=8, color="black", zorder=5)
                text = (f"t = {chosen_t:.3f}\nTPR {tp}/{p}, FPR {fp}/{n}\n"
                        f"accuracy {float(_f(res['accuracy'].sel(sel))):.1%}\n"
                        f"(majority {n / (p + n):.1%})\n"
                        f"balanced {float(_f(res['balanced_accuracy'].sel(sel))):.1%}")
                ax.text(0.97, 0.04, text, transform=ax.transAxes, ha="right", va="bottom",
                        fontsize=7.5, bbox={"boxstyle": "round,pad=0.3", "fc": "white",
                                            "ec": "#bbbbbb", "alpha": 0.9})
            ax.set_xlim(-0.02, 1.02)
            ax.set_ylim(-0.02, 1.02)
            ax.set_aspect("equal")
            ax.set_title(f"{_name(res, group)} · {_METHOD.get(method, method)}\n(P = {p}, N = {n} words)",
                         fontsize=9)
            ax.set_xlabel("false positive rate", fontsize=8.5)
            ax.set_ylabel("true positive rate", fontsize=8.5)
            ax.tick_params(labelsize=7.5)
    handles = [
        Line2D([], [], color="#555555", marker="o", ms=3, lw=1.4,
               label="candidate t ≥ 0\n(joined when monotone)"),
        Line2D([], [], color="#555555", marker="o", ms=2, alpha=0.3, lw=1.0,
               label="candidate t < 0 (not eligible)"),
        Line2D([], [], color="black", marker="o", ms=7, lw=0,
               label="chosen t: max TPR − FPR\n(ties: most TP)"
               if res.attrs.get("eibd_threshold") == "own" or "eibd" not in methods
               else "chosen t: IBD's max TPR − FPR\n(ties: most TP); EIBD uses it too"),
        Line2D([], [], color="#999999", ls="--", lw=0.8, label="chance"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=7.5, frameon=False)
    where = f"{model}: " if model is not None else ""
    fig.suptitle(f"{where}IBD / EIBD ROC — setting {setting}, pooling {pooling}, layer {layer}",
                 fontsize=10)
    return fig


def accuracy_by_layer(res: xr.Dataset, *, setting: str, pooling: str, model: Any = None) -> Figure:
    """Per group: accuracy (dashed) and balanced accuracy (solid) of IBD and EIBD by layer, with
    each method's majority baseline (dotted: the accuracy of flagging no word)."""
    groups = [str(g) for g in res["group"].values]
    layers = np.asarray(res["layer"].values)
    fig = Figure(figsize=(7.0, 3.2), layout="constrained")
    axes = fig.subplots(1, len(groups), squeeze=False, sharey=True)[0]
    for ax, group in zip(axes, groups, strict=True):
        for method in [str(m) for m in res["detector"].values]:
            sel = {"setting": setting, "pooling": pooling, "group": group, "detector": method}
            color = _COLOR.get(method, "#444444")
            ax.plot(layers, _f(res["balanced_accuracy"].sel(sel)), "-o", ms=3, color=color,
                    label=f"{_METHOD.get(method, method)}: balanced accuracy")
            ax.plot(layers, _f(res["accuracy"].sel(sel)), "--", color=color,
                    label=f"{_METHOD.get(method, method)}: accuracy")
            base = float(_f(res["majority_baseline"].sel({"group": group, "detector": method})))
            ax.axhline(base, ls=":", color=color, lw=1.0,
                       label=f"{_METHOD.get(method, method)}: majority baseline")
        ax.axhline(0.5, color="#999999", lw=0.6, label="chance balanced accuracy (0.5)")
        ax.set_title(_name(res, group), fontsize=9)
        ax.set_xlabel("layer", fontsize=8.5)
        ax.tick_params(labelsize=7.5)
    axes[0].set_ylabel("detection accuracy", fontsize=8.5)
    fg.legend(fig, axes, ncols=3, fontsize=7)
    where = f"{model}: " if model is not None else ""
    n_words = int(np.asarray(res["n_attributes"].values).reshape(-1)[0])
    fig.suptitle(f"{where}IBD / EIBD accuracy by layer — setting {setting}, pooling {pooling}, "
                 f"{n_words} attribute words", fontsize=10)
    return fig
