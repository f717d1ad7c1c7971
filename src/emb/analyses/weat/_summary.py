"""The terminal summary of a ``weat`` result: each test at the declared cell, the p-values and
their correction, the largest |d| anywhere as an exploratory note."""

from __future__ import annotations

import json

import pandas as pd
import xarray as xr

from emb.analyses._analysis import (
    DEFAULT_POOLINGS,
    DEFAULT_SETTINGS,
    Summary,
    coord_values,
    default_of,
    format_adjusted,
    format_p,
    own_pooling_rows,
    small_n_notes,
)

__all__ = ["summary"]

#: Names of the corrections and families, as tables, summaries and figures say them.
_CORRECTIONS = {"holm": "Holm", "bh": "Benjamini-Hochberg"}
_FAMILIES = {"test": "the tests (per setting, layer and pooling)",
             "layer": "the layers (per test, setting and pooling)",
             "test+layer": "the tests x layers (per setting and pooling)"}


def _group_names(result: xr.Dataset) -> dict[str, str]:
    """Test → "X vs Y / A vs B" from the group names."""
    out = {}
    for test in coord_values(result, "test"):
        groups = [str(result[f"{r}_group"].sel(test=test).values)
                  for r in ("x", "y", "a", "b") if f"{r}_group" in result.coords]
        if len(groups) == 4:
            out[test] = f"{groups[0]} vs {groups[1]} / {groups[2]} vs {groups[3]}"
    return out


def summary(result: xr.Dataset, tables: dict[str, pd.DataFrame]) -> Summary:
    """Declared cell: the top layer, the ``bleached`` setting (else ``alone``, else the first) and
    the ``last`` pooling (else the first); the largest |d| anywhere is a note, labelled as such."""
    frame = tables["weat"].dropna(subset=["effect_size"])
    if frame.empty:
        return Summary(title="WEAT: no effect sizes (every cell is NaN)")
    setting = default_of(frame["setting"].unique(), DEFAULT_SETTINGS)
    correction = str(result.attrs.get("correction", "none"))
    use_adjusted = correction != "none" and "p_adjusted" in frame
    has_ci = "ci_low" in frame and frame["ci_low"].notna().any()
    level = f"{100 * float(result.attrs.get('confidence', 0.95)):g}%"
    # each model at the declared pooling, or its own without it (a static store: static)
    cell, pooling = own_pooling_rows(frame[frame["setting"] == setting], "effect_size",
                                     DEFAULT_POOLINGS)
    rows = []
    keys = [k for k in ("model", "test") if k in cell]
    names_ = _group_names(result)
    for key, group in cell.groupby(keys, sort=False):
        top = group.loc[group["layer"].idxmax()]
        n_perm = int(top.get("n_permutations", 0) or 0)
        p = float(top["p"])
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        if str(row.get("test")) in names_:
            row["groups"] = names_[str(row["test"])]
        row.update({"layer": int(top["layer"]), "d": round(float(top["effect_size"]), 3)})
        if has_ci:
            row[f"{level} CI"] = f"[{float(top['ci_low']):.2f}, {float(top['ci_high']):.2f}]"
        mc_se = float(top["p_mc_se"]) if "p_mc_se" in top and pd.notna(top["p_mc_se"]) else None
        row["p"] = format_p(p, n_permutations=n_perm, floor=bool(top.get("p_at_floor", False)),
                            mc_se=mc_se).removeprefix("p ").removeprefix("= ")
        if use_adjusted:
            row[f"p ({_CORRECTIONS[correction]})"] = format_adjusted(
                float(top["p_adjusted"]), from_floor=bool(top.get("p_at_floor", False)))
        rows.append(row)
    alternative = result.attrs.get("alternative", "greater")
    notes = [
        f"p: permutation test ({alternative}); exact enumeration where n_permutations = 0 in the "
        "table, else seeded Monte Carlo, shown ± its Monte-Carlo standard error (p_mc_se) and, at "
        "its floor, as p ≤ 1/(N+1)."
    ]
    if has_ci:
        notes.append(f"CI: {level} BCa bootstrap over stimuli ({result.attrs.get('n_bootstrap')} "
                     "replicates; words resampled within X, Y, A and B), seeded.")
    if use_adjusted:
        notes.append(f"p ({_CORRECTIONS[correction]}): {_CORRECTIONS[correction]} correction over "
                     f"{_FAMILIES[str(result.attrs.get('correction_over', 'test'))]}; computed from a "
                     "p at its floor it is an upper bound too, shown as ≤.")
    else:
        notes.append("No multiple-comparison correction (ask with --correction holm|bh).")
    best = frame.loc[frame["effect_size"].abs().idxmax()]
    notes.append(
        f"Largest |d| over all {len(frame)} cells (exploratory, not a test): "
        f"{best['test']} d = {best['effect_size']:.2f} at layer {best['layer']}, "
        f"{best['setting']}, {best['pooling']} pooling"
        + (f", {best['model']}" if "model" in best else "") + "."
    )
    notes += small_n_notes(result)
    notes += json.loads(str(result.attrs.get("notes", "[]")))  # the stores' common words
    return Summary(
        title=f"WEAT effect sizes (Cohen's d, ddof {result.attrs.get('ddof', 1)})",
        headline=[f"declared cell: top layer, setting {setting!r}, pooling {pooling}"],
        table=pd.DataFrame(rows),
        notes=notes,
    )
