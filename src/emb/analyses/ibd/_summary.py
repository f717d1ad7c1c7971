"""The terminal summary of an ``ibd`` result: every target and contrast group × method at the
declared cell, the threshold rule, the names and attribute words without vectors."""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import Summary
from emb.analyses.ibd._export import ceat_tests, declared_cell, models, one_model, top_layer

__all__ = ["summary"]


def _small_n_notes(result: xr.Dataset) -> list[str]:
    """The warning on name sets below ``min_words`` (empty ones are left out, noted elsewhere)
    and the groups whose scores compare them; plain names and ints."""
    if "small_n" not in result or "small_n_compared" not in result:
        return []
    n = result["n_names"]
    small = (result["small_n"] & (n > 0)).any([d for d in n.dims if d != "name_set"])
    sets = [str(g) for g, f in zip(result["name_set"].values.tolist(),
                                   np.asarray(small.values).tolist(), strict=True) if f]
    if not sets:
        return []
    flag = result["small_n_compared"]
    flag = flag.any([d for d in flag.dims if d != "group"])
    groups = [str(g) for g, f in zip(result["group"].values.tolist(),
                                     np.asarray(flag.values).tolist(), strict=True) if f]
    counts = {g: "/".join(str(int(v)) for v in np.unique(np.asarray(n.sel(name_set=g).values)))
              for g in sets}
    return [f"Warning: small name sets (fewer than {result.attrs.get('min_words')} names with "
            f"vectors): {', '.join(f'{g} {c}' for g, c in counts.items())}; the scores of "
            f"{', '.join(groups) or 'no target group'} compare them (column small_n): read their "
            "detections as indicative only (--min-words sets the threshold)."]


def summary(result: xr.Dataset, tables: Mapping[str, pd.DataFrame]) -> Summary:
    """Declared cell: the top layer, setting ``bleached`` (else ``alone``), the default pooling
    (``static`` for static vectors); every target and contrast group × method."""
    cell = declared_cell(result)
    frame = tables["ibd"]
    rows, best_notes, own = [], [], {}
    for model in models(result):
        res = one_model(result, model)
        cell = declared_cell(res)  # this model's own pooling (a static store: static)
        own[model] = cell["pooling"]
        layer = top_layer(res, cell["setting"], cell["pooling"])
        sub = frame if model is None else frame[frame["model"] == model]
        at = sub[(sub["setting"] == cell["setting"]) & (sub["pooling"] == cell["pooling"])
                 & (sub["layer"] == layer)]
        for r in at.itertuples():
            row = {"model": model} if model is not None else {}
            row.update({
                "group": r.group, **({"group_name": r.group_name} if "group_name" in at else {}),
                "method": r.method, "t": float(r.threshold),
                "TP/P": f"{r.tp}/{r.n_positive}", "FP/N": f"{r.fp}/{r.n_negative}",
                "accuracy": float(r.accuracy), "balanced": float(r.balanced_accuracy),
                "majority": float(r.majority_baseline), "chance": float(r.chance_rate),
                "f1": float(r.f1),
            })
            rows.append(row)
        if sub["layer"].nunique() > 1:
            best = sub.loc[sub["balanced_accuracy"].idxmax()]
            best_notes.append(
                f"{model + ': ' if model else ''}highest balanced accuracy over all "
                f"{len(sub)} cells (exploratory, not the declared cell): {best['group']} "
                f"{best['method']} {best['balanced_accuracy']:.3f} at layer {best['layer']}, "
                f"{best['setting']}, {best['pooling']}")
    table = pd.DataFrame(rows)
    notes = []
    thresholds = result.attrs.get("thresholds", "exact")
    notes.append(
        "threshold: " + ("every distinct score (exact ROC)" if thresholds == "exact" else
                         f"a grid of {len(json.loads(thresholds))} values")
        + ", t >= 0, max TPR - FPR, ties to the most TP; EIBD rule "
        f"{result.attrs.get('rule')!r}, EIBD threshold: "
        + ("IBD's" if result.attrs.get("eibd_threshold") == "ibd" else "its own ROC choice"))
    if len(table):
        below = int((table["accuracy"] <= table["majority"]).sum())
        notes.append(f"accuracy at or below the majority baseline (flag nothing) in {below} of "
                     f"{len(table)} rows: compare balanced accuracy")
    n_names = result["n_names"].values.reshape(-1, result.sizes["name_set"])[0]
    n_total = result["n_names_total"].values.reshape(-1, result.sizes["name_set"])[0]
    notes.append("names with vectors: " + ", ".join(
        f"{g} {int(a)}/{int(b)}" for g, a, b in zip(result["name_set"].values, n_names, n_total,
                                                    strict=True)))
    notes += _small_n_notes(result)
    missing_attrs = json.loads(result.attrs.get("missing_attributes", "[]"))
    if missing_attrs:
        notes.append(f"attribute words without a vector ({len(missing_attrs)}, left out of the "
                     f"validation): {', '.join(missing_attrs[:12])}{' …' if len(missing_attrs) > 12 else ''}")
    notes += json.loads(result.attrs.get("notes", "[]"))
    notes += best_notes
    tests = ceat_tests(result)
    where = result.attrs.get("export_tests") or "ibd_tests.json"
    notes.append(f"{len(tests['tests'])} CEAT tests of the detected words in {where}")
    first = declared_cell(result)["pooling"]
    others = "; ".join(f"{m}: {p!r}, it has no {first!r}" for m, p in own.items() if p != first)
    return Summary(
        title="IBD/EIBD: attribute words detected for intersectional groups",
        headline=[f"declared cell: top layer, setting {cell['setting']!r}, pooling "
                  f"{first!r}" + (f" ({others})" if others else "")],
        table=table,
        notes=notes,
    )
