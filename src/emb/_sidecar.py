"""The shape of an ``emb analyze`` sidecar, checked before a report reads it: the entries it must
have, the types of those it may have, file names that stay inside its directory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["is_bare_name", "sidecar_problems"]

#: Optional sidecar entries and the type each must have when present.
_SIDECAR_MAPPINGS = ("stores", "provenance", "options", "output", "versions", "tables", "figures",
                     "figure_titles", "summary", "attrs", "exports")


def is_bare_name(name: Any) -> bool:
    """Whether ``name`` is a file name inside its directory (no path, not ``.``/``..``)."""
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name
            and "\\" not in name and "\0" not in name)


def sidecar_problems(meta: Mapping[str, Any], *, version: int) -> list[str]:
    """What makes ``meta`` unusable as a run's sidecar (empty: none)."""
    problems = []
    found = meta.get("emb_results")
    if not isinstance(found, int) or isinstance(found, bool) or found < 1:
        problems.append(f"'emb_results' must be a positive integer, found {found!r}")
    elif found > version:
        problems.append(f"it has version {found}, this emb reads up to {version} (upgrade emb)")
    if not isinstance(meta.get("analysis"), str) or not meta.get("analysis"):
        problems.append(f"'analysis' must be the analysis' name, found {meta.get('analysis')!r}")
    files = meta.get("files")
    if not isinstance(files, dict):
        problems.append(f"'files' must map each file name to its sha256, found {files!r}")
        files = {}
    elif not files:
        problems.append("'files' lists no file (a run writes at least its netCDF)")
    else:
        odd = [n for n, d in files.items() if not is_bare_name(n) or not isinstance(d, str)]
        if odd:
            problems.append(f"'files' lists {odd[:5]}, which are not file names in its directory "
                            "with a sha256")
    for key in _SIDECAR_MAPPINGS:
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            problems.append(f"'{key}' must be a mapping, found {type(meta[key]).__name__}")
    for key in ("command", "analysed_at", "suite"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            problems.append(f"'{key}' must be a string, found {type(meta[key]).__name__}")
    figures = meta.get("figures")
    if isinstance(figures, dict):
        unlisted = [f for v in figures.values() for f in (v if isinstance(v, list) else [v])
                    if f not in files]
        if unlisted:
            problems.append(f"'figures' names files that 'files' does not list: {unlisted[:5]}")
    summary = meta.get("summary")
    if isinstance(summary, dict):
        for key in ("headline", "notes", "table"):
            if summary.get(key) is not None and not isinstance(summary[key], list):
                problems.append(f"'summary.{key}' must be a list, found {type(summary[key]).__name__}")
        if isinstance(summary.get("table"), list) and not all(isinstance(r, dict) for r in summary["table"]):
            problems.append("'summary.table' must be a list of rows (mappings)")
    for key in ("tables", "provenance"):
        value = meta.get(key)
        if isinstance(value, dict) and not all(isinstance(v, dict) for v in value.values()):
            problems.append(f"every entry of '{key}' must be a mapping")
    tables = meta.get("tables")
    if isinstance(tables, dict) and not all(
            isinstance(v.get("columns"), dict | None) for v in tables.values() if isinstance(v, dict)):
        problems.append("every table's 'columns' must be a mapping")
    return problems
