"""What extraction warned about, said again by every analysis of the vectors (issue 24).

``emb extract`` warns when targets sit at position 0 of a causal model (their hidden states see
nothing but the target token and are degenerate) and records it in the suite's extraction
attributes (``position_0``: the count per setting, the first words, the item ranges and the fix;
stores written before that record keep only the suite's count ``targets_at_position_0``). A
collaborator who analyses the store never saw that warning, so each analysis' summary repeats it,
per model, suite and setting, from the provenance its result carries. A store with neither
record gets no note. The out-of-memory back-offs of the runs that wrote the vectors
(``oom_backoffs``, see :mod:`emb.store._backoffs`) get a note too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from emb.analyses._select import _loaded

__all__ = ["context_notes", "extraction_notes", "summarize"]


def _provenance(result: xr.Dataset) -> dict[str | None, dict[str, Any]]:
    """Per model (None for a result of one store): its ``extraction``, ``suite`` and ``model``
    attributes, parsed."""
    keys = ("extraction", "suite", "model", "oom_backoffs")
    shared = {k: _loaded(result.attrs.get(k)) for k in keys}
    models = _loaded(result.attrs.get("models"))
    if not isinstance(models, Mapping) or not models:
        return {None: shared}
    out: dict[str | None, dict[str, Any]] = {}
    for model, own in models.items():
        own = _loaded(own) if not isinstance(own, Mapping) else own
        own = own if isinstance(own, Mapping) else {}
        out[str(model)] = {k: _loaded(own[k]) if k in own else shared[k] for k in keys}
    return out


def _settings_used(result: xr.Dataset) -> set[str] | None:
    """The settings the result covers (None: not a dimension of it, every setting counts)."""
    if "setting" not in result.coords:
        return None
    return {str(s) for s in np.atleast_1d(result["setting"].values)}


def _backoff_lines(runs: Any, who: str, what: str) -> list[str]:
    """The line on the out-of-memory back-offs of the runs that wrote the vectors (recorded at
    extraction as ``oom_backoffs``, see :mod:`emb.store._backoffs`)."""
    if not isinstance(runs, list):
        return []
    runs = [r for r in runs if isinstance(r, Mapping)]
    halvings = sum(len(r.get("halvings") or []) for r in runs)
    smallest = [int(b["batch"]) for r in runs for b in r.get("batches") or []
                if isinstance(b, Mapping) and isinstance(b.get("batch"), int)]
    if not runs or not (halvings or smallest):
        return []
    asked = sorted({int(r["batch_size"]) for r in runs if isinstance(r.get("batch_size"), int)})
    down = f" (batch {'/'.join(map(str, asked))} down to {min(smallest)})" if smallest else ""
    return [f"note: {who}{len(runs)} run(s) extracting {what} ran out of device memory and "
            f"cut their batches{down}, {halvings} halving(s) in all: those vectors come from "
            "smaller batches than asked (on a CPU bitwise the same; on a GPU they may differ in "
            "the last bits, as kernels depend on the batch's shape); 'emb info' lists the runs"]


def extraction_notes(result: xr.Dataset) -> list[str]:
    """The summary lines that repeat what extraction warned about the vectors behind ``result``:
    targets at position 0 of a causal model, per model, suite and setting, with the counts, the
    first words and what to re-extract with; targets that tokenized to nothing but the unknown
    token. Empty when the stores recorded nothing to warn of (a bidirectional model, a BOS token
    before every item, a vocabulary that covers every word, or a store with no record)."""
    provenance = _provenance(result)
    used = _settings_used(result)
    lines: list[str] = []
    for model, record in provenance.items():
        extraction = record.get("extraction")
        if not isinstance(extraction, Mapping):
            continue
        suite = record.get("suite")
        suite_name = suite.get("name") if isinstance(suite, Mapping) else None
        info = record.get("model")
        model_id = info.get("model_id") if isinstance(info, Mapping) else None
        who = f"{model}: " if model is not None and len(provenance) > 1 else ""
        what = f"suite {suite_name!r}" if suite_name else "the suite"
        of_model = f"causal model {model_id}" if model_id else "a causal model"
        lines += _unknown_lines(extraction, who, what, suite)
        lines += _backoff_lines(record.get("oom_backoffs"), who, what)
        position_0 = extraction.get("position_0")
        if isinstance(position_0, Mapping):
            fix = position_0.get("fix") or "re-extract with --bos or --bos-token TOKEN"
            by_setting = position_0.get("by_setting")
            for setting, counts in (by_setting.items() if isinstance(by_setting, Mapping) else ()):
                n, of = int(counts.get("n", 0)), int(counts.get("of", 0))
                if not n or (used is not None and str(setting) not in used):
                    continue
                words = list(counts.get("words") or [])
                shown = (f" ({', '.join(map(str, words[:8]))}{', …' if n > min(len(words), 8) else ''})"
                         if words else "")
                lines.append(
                    f"warning: {who}{n:,} of {of:,} targets of {what} (setting {setting}) sit at "
                    f"position 0 of {of_model}{shown}: their states see no context and are "
                    f"degenerate, and so are the results of setting {setting}; re-extract: {fix}")
            continue
        n = extraction.get("targets_at_position_0")
        if isinstance(n, int | np.integer) and not isinstance(n, bool) and n > 0:
            total = suite.get("n_items") if isinstance(suite, Mapping) else None
            of = f" of {int(total):,}" if isinstance(total, int | np.integer) else ""
            lines.append(
                f"warning: {who}{int(n):,}{of} targets of {what} sit at position 0 of {of_model}: "
                "their states see no context and are degenerate (the store, written before emb "
                "recorded them per setting, does not say which); re-extract with --bos (or "
                "--bos-token TOKEN) to move them to position 1")
    return lines


def _unknown_lines(extraction: Mapping[str, Any], who: str, what: str, suite: Any) -> list[str]:
    """The line on targets that tokenized to nothing but the unknown token (recorded at
    extraction as ``unknown_targets``: the count of items and up to 50 of the words)."""
    record = extraction.get("unknown_targets")
    if not isinstance(record, Mapping):
        return []
    n = record.get("n_items")
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n <= 0:
        return []
    total = suite.get("n_items") if isinstance(suite, Mapping) else None
    of = f" of {int(total):,}" if isinstance(total, int | np.integer) else ""
    words = [str(w) for w in record.get("words") or []]
    shown = f" ({', '.join(words[:8])}{', …' if len(words) > 8 else ''})" if words else ""
    return [f"warning: {who}{int(n):,}{of} targets of {what} tokenize to nothing but the unknown "
            f"token{shown}: each gets that token's vector in context, not the word's; drop these "
            "words or use a model whose vocabulary covers them"]


def context_notes(result: xr.Dataset) -> list[str]:
    """The summary line of a result computed on a suite of words in many contexts (``ceat``)
    read as one vector per word (its ``contexts`` attribute,
    :func:`emb.analyses.wordsets.contexts.contexts_record`): what each word's vector is and how
    many contexts lie behind it. Empty for any other result."""
    record = _loaded(result.attrs.get("contexts"))
    if not isinstance(record, Mapping):
        return []
    low, high = int(record.get("min", 0)), int(record.get("max", 0))
    spread = (f"{low:,} contexts each" if low == high else
              f"{low:,}–{high:,} contexts each, median {float(record.get('median', 0)):g}")
    return [f"Vectors: each word's vector is the mean of its contexts in the suite "
            f"({int(record.get('stimuli', 0)):,} stimuli, {spread}); CEAT's own test samples one "
            "context per stimulus many times instead ('emb analyze ceat')"]


def _run_notes(result: xr.Dataset) -> list[str]:
    """The run's own notes (``notes``: JSON list), e.g. the stimuli some store of a several-store
    run lacked, for the analyses whose summary does not show them itself."""
    notes = _loaded(result.attrs.get("notes"))
    return [str(n) for n in notes] if isinstance(notes, list) else []


def summarize(analysis: Any, result: xr.Dataset, tables: Mapping[str, Any]) -> Any:
    """``analysis.report_summary(result, tables)`` (its summary and the layers' anisotropy) with
    the run's notes (the stimuli some store lacked), :func:`context_notes` and :func:`extraction_notes` appended to its notes: the summary every front door (the CLI,
    :func:`emb.analyze`, the written results) shows."""
    summary = analysis.report_summary(result, tables)
    notes = [n for n in (*_run_notes(result), *context_notes(result), *extraction_notes(result))
             if n not in summary.notes]
    return dataclasses.replace(summary, notes=[*summary.notes, *notes]) if notes else summary
