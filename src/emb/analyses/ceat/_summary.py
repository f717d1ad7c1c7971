"""The terminal summary of a ``ceat`` result: each model's and test's combined effect size at the
declared cell, and what the suite left out."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import (
    DEFAULT_POOLINGS,
    Summary,
    format_p,
    own_pooling_rows,
    small_n_notes,
)
from emb.analyses._select import suite_parameters
from emb.analyses.ceat._kernels import ROLES
from emb.text import natural_key

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


def _combinations(result: xr.Dataset) -> dict[str, float]:
    """Per test, log10 of the distinct samples its contexts allow: the product over its stimuli
    of their context counts (the smallest over the models of a run)."""
    if "n_contexts" not in result or "stimulus_tests" not in result.coords:
        return {}
    counts = result["n_contexts"]
    other = [d for d in counts.dims if d != "stimulus"]
    lowest = counts.min(other) if other else counts
    logs = np.log10(np.maximum(np.asarray(lowest.values, dtype=float), 1.0))
    member = [str(t).split("|") for t in result["stimulus_tests"].values.tolist()]
    return {str(t): float(sum(lg for lg, m in zip(logs, member, strict=True) if str(t) in m))
            for t in result["test"].values.tolist()}


def _count(log10_n: float) -> str:
    return f"{round(10 ** log10_n):,}" if log10_n < 15 else f"10^{log10_n:.1f}"


def _headline_notes(result: xr.Dataset, frame: pd.DataFrame, *, boot: bool) -> list[str]:
    """The warnings that the random-effects CI and p say little here: N beyond the distinct
    combinations of contexts, and τ² = 0 in every cell."""
    n = int(result.attrs.get("n_samples", 0))
    notes = []
    over = {t: c for t, c in _combinations(result).items() if n > 10 ** c}
    if over:
        notes.append(
            f"Warning: N = {n:,} samples exceed the distinct combinations of contexts (the "
            "product of the stimuli's context counts) of "
            + ", ".join(f"{t}: {_count(c)}" for t, c in over.items())
            + "; samples repeat, and N beyond that "
            "adds no information while it still narrows the random-effects CI and p; lower "
            "--samples or extract more contexts (--contexts).")
    tau = pd.to_numeric(frame["tau2"], errors="coerce").dropna()
    if len(tau) and bool((tau == 0).all()):
        notes.append(
            f"Warning: tau2 = 0 in all {len(tau)} cells: the samples' effect sizes vary less than "
            "each sample's V_i predicts, so the random-effects model is the fixed-effect one and "
            "its CI and p hold no spread between contexts; their width is set by N alone"
            + (" (the bootstrap CI is the uncertainty to report)." if boot else "."))
    return notes


#: What the bootstrap CI is and covers (measured: docs/rules/intervals.md, benchmarks/coverage.py).
_BOOT_TARGET = (
    "boot_ci is the normal bootstrap interval, CES ± 1.96 × the SD of the replicates. On planted "
    "populations (8, 16, 32 stimuli per set, no to large effect, 1,000 draws each) it covers the "
    "population d in 93–97% of draws (d = 1.34 with 16 stimuli per set: 96.7% over 4,000 draws, "
    "a little wider than needed). The replicates' own 2.5/97.5% quantiles sit below the CES, which with few stimuli "
    "and a large effect already lies below d (each sample's WEAT d of a few words is pulled "
    "towards 0): that percentile interval covered d = 1.34 in only 86% with 8 stimuli per set.")


def summary(result: xr.Dataset, tables: dict[str, pd.DataFrame]) -> Summary:
    """Declared cell: each model's top layer and the ``last`` pooling (else the first). The
    table leads with the uncertainty that does not shrink with N (the bootstrap CI over stimuli
    and contexts), then the paper's random-effects CI and p, labelled as such; the largest |CES|
    anywhere is a note labelled exploratory."""
    frame = tables["ceat"].dropna(subset=["ces"])
    if frame.empty:
        return Summary(title="CEAT: no combined effect sizes (every cell is NaN)")
    boot = "boot_ci_low" in frame and bool(frame["boot_ci_low"].notna().any())
    cell, pooling = own_pooling_rows(frame, "ces", DEFAULT_POOLINGS)  # a static store: 'static'
    keys = [k for k in ("model", "test") if k in frame]
    rows = []
    for key, group in cell.groupby(keys, sort=False):
        top = group.loc[group["layer"].idxmax()]
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        if "test_name" in top:
            row["test_name"] = str(top["test_name"])
        row.update({"layer": int(top["layer"]), "ces": float(top["ces"])})
        if boot:
            row["boot_ci"] = (f"[{top['boot_ci_low']:.2f}, {top['boot_ci_high']:.2f}]"
                              if np.isfinite(top["boot_ci_low"]) else "—")
        row.update({
            "re_ci": f"[{top['ci_low']:.2f}, {top['ci_high']:.2f}]",
            "re_p": format_p(float(top["p"]), log10_p=float(top["log10_p"])).removeprefix("p ")
            .removeprefix("= "),
            "tau2": float(top["tau2"]),
        })
        sizes = [str(int(top[c])) for c in ("n_x", "n_y", "n_a", "n_b") if c in top and pd.notna(top[c])]
        if sizes:
            row["n_xyab"] = "/".join(sizes)
        rows.append(row)
    n = int(result.attrs.get("n_samples", 0))
    headline = [f"declared cell: top layer, pooling {pooling}"]
    if boot:
        headline.append(
            f"boot_ci: 95% normal bootstrap CI of the CES, CES ± 1.96 SD of "
            f"{result.attrs.get('n_bootstrap')} replicates resampling the stimuli within each "
            "word set, then each stimulus' contexts "
            f"({result.attrs.get('bootstrap_samples')} samples each): the uncertainty to report; "
            "it does not shrink with N.")
    headline.append(
        f"re_ci, re_p: the paper's random-effects (DerSimonian-Laird) 95% CI and "
        f"{result.attrs.get('alternative')} p over the N = {n:,} samples. N resamples of one "
        "pool are not independent studies: both shrink like 1/sqrt(N) for any N chosen (figure "
        "convergence)" + ("." if boot else ", and no interval independent of N was computed."))
    best = frame.loc[frame["ces"].abs().idxmax()]
    notes = _headline_notes(result, frame, boot=boot)
    notes += [
        "re_p: the published tables are two-sided; a p below the float range (2.2e-308) is "
        "shown by its order (≈ 10^x), left empty in the table file's p and given exactly in "
        "log10_p. n_xyab: the stimuli of X/Y/A/B with contexts.",
        f"V_i: {result.attrs.get('variance')}; sampling: {result.attrs.get('sampling')}.",
        f"Largest |CES| over all {len(frame)} cells (exploratory, not a test): {best['test']} "
        f"CES = {best['ces']:.2f} at layer {best['layer']}, {best['pooling']} pooling"
        + (f", {best['model']}" if "model" in best else "") + ".",
    ]
    if boot:
        notes.append(_BOOT_TARGET)
    notes += _coverage_notes(result, computed=set(frame["test"].astype(str)))
    notes += small_n_notes(result)
    short = tables.get("ceat_contexts")
    if short is not None and "with_replacement" in short:
        k = int(short["with_replacement"].sum())
        if k:
            notes.append(f"{k} of {len(short)} stimuli have fewer than N contexts and were drawn "
                         "with replacement (table ceat_contexts).")
    return Summary(
        title=f"CEAT combined effect sizes (N = {n:,} samples per cell)",
        headline=headline,
        table=pd.DataFrame(rows),
        notes=notes,
    )
