"""The terminal summary of a ``ceat`` result: each model's and test's combined effect size at the
declared cell, and what the suite left out."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from emb._text import natural_key
from emb.analyses._analysis import DEFAULT_POOLINGS, Summary, default_of, format_p, small_n_notes
from emb.analyses._select import suite_parameters
from emb.analyses.ceat._kernels import ROLES

__all__ = ["summary"]


def _coverage_notes(result: xr.Dataset, *, computed: set[str]) -> list[str]:
    """What the suite left out, per model: tests dropped at extraction (a role without a stimulus
    that had contexts) and, per computed test, stimuli without contexts in the corpus."""
    notes = []
    for model, params in suite_parameters(result).items():
        where = f"{model}: " if model is not None else ""
        dropped = [str(t) for t in params.get("dropped_tests") or []]
        if dropped:
            notes.append(f"{where}tests {', '.join(dropped)} were not extracted: a word set of each "
                         "had no stimulus with a context in the corpus (suite parameter "
                         "dropped_tests).")
        defs = params.get("tests") or {}
        missing = params.get("missing_by_test") or {}
        left = []
        for test in sorted(computed, key=natural_key):
            gone = missing.get(test) or []
            if gone:
                total = sum(len(defs.get(test, {}).get(r) or []) for r in ROLES)
                left.append(f"{test} {len(gone)}" + (f" of {total}" if total else ""))
        if left:
            notes.append(f"{where}stimuli without a context in the corpus, left out of their "
                         f"tests: {', '.join(left)} (suite parameter missing_by_test).")
    return notes


def summary(result: xr.Dataset, tables: dict[str, pd.DataFrame]) -> Summary:
    """Declared cell: each model's top layer and the ``last`` pooling (else the first); the
    largest |CES| anywhere is a note labelled exploratory."""
    frame = tables["ceat"].dropna(subset=["ces"])
    if frame.empty:
        return Summary(title="CEAT: no combined effect sizes (every cell is NaN)")
    pooling = default_of(list(frame["pooling"].unique()), DEFAULT_POOLINGS)
    keys = [k for k in ("model", "test") if k in frame]
    rows = []
    for key, group in frame[frame["pooling"] == pooling].groupby(keys, sort=False):
        top = group.loc[group["layer"].idxmax()]
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        row.update({
            "groups": f"{top.get('x_group')}/{top.get('y_group')} vs "
                      f"{top.get('a_group')}/{top.get('b_group')}",
            "layer": int(top["layer"]), "ces": float(top["ces"]),
            "95% CI": f"[{top['ci_low']:.2f}, {top['ci_high']:.2f}]",
            "p": format_p(float(top["p"]), log10_p=float(top["log10_p"])).removeprefix("p "),
            "bootstrap 95% CI": (f"[{top['boot_ci_low']:.2f}, {top['boot_ci_high']:.2f}]"
                                 if np.isfinite(top.get("boot_ci_low", np.nan)) else "—"),
            "tau2": float(top["tau2"]),
        })
        rows.append(row)
    n = int(result.attrs.get("n_samples", 0))
    best = frame.loc[frame["ces"].abs().idxmax()]
    notes = [
        f"p: {result.attrs.get('alternative')} p of the combined z (the published tables are "
        f"two-sided). The N = {n:,} samples resample one finite set of contexts, so the "
        "meta-analytic SE and CI shrink like 1/sqrt(N) for any N and p with them; the bootstrap "
        f"CI ({result.attrs.get('n_bootstrap')} replicates resampling stimuli and each stimulus' "
        "contexts) does not (figure convergence). A p below 2.2e-308 is written as 2.2e-308 "
        "and its exact order is in log10_p.",
        f"V_i: {result.attrs.get('variance')}; sampling: {result.attrs.get('sampling')}.",
        f"Largest |CES| over all {len(frame)} cells (exploratory, not a test): {best['test']} "
        f"CES = {best['ces']:.2f} at layer {best['layer']}, {best['pooling']} pooling"
        + (f", {best['model']}" if "model" in best else "") + ".",
    ]
    notes += _coverage_notes(result, computed=set(frame["test"].astype(str)))
    notes += small_n_notes(result)
    short = tables.get("ceat_contexts")
    if short is not None and "with_replacement" in short:
        k = int(short["with_replacement"].sum())
        if k:
            notes.append(f"{k} of {len(short)} stimuli have fewer than N contexts and were drawn "
                         "with replacement (table ceat_contexts).")
    return Summary(
        title=f"CEAT combined effect sizes (DerSimonian-Laird over N = {n:,} samples)",
        headline=[f"declared cell: top layer, pooling {pooling!r}"],
        table=pd.DataFrame(rows),
        notes=notes,
    )
