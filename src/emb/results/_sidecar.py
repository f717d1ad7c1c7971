"""The shape of an ``emb analyze`` sidecar, checked before a report reads it: the entries it must
have, the types of those it may have, file names that stay inside its directory."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from emb.files.documents import MAX_DEPTH, parse_json, show
from emb.text import cut, names

__all__ = ["MAX_SIDECAR_BYTES", "is_bare_name", "load_sidecar", "sidecar_problems"]

#: Largest sidecar read (bytes): one holds a short summary, the options and the provenance,
#: a few hundred KB at most; a larger .json is not one (and is not read into memory).
MAX_SIDECAR_BYTES = 64 * 2**20

#: Optional sidecar entries and the type each must have when present.
_SIDECAR_MAPPINGS = ("stores", "provenance", "options", "output", "versions", "tables", "figures",
                     "figure_titles", "summary", "attrs", "exports")


def is_bare_name(name: Any) -> bool:
    """Whether ``name`` is a file name inside its directory (no path, not ``.``/``..``)."""
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name
            and "\\" not in name and "\0" not in name)


def load_sidecar(path: Path, *, error: type[Exception]) -> Any:
    """The JSON data of the sidecar at ``path`` (not yet checked: :func:`sidecar_problems`).

    Raises
    ------
    error
        The file cannot be read, is larger than :data:`MAX_SIDECAR_BYTES`, is not UTF-8 JSON, or
        is nested deeper than the JSON parser allows.
    """
    try:
        size = path.stat().st_size
        if size > MAX_SIDECAR_BYTES:
            raise error(
                f"{path} has {size:,} bytes, more than the {MAX_SIDECAR_BYTES:,} of any results "
                "sidecar: it is not one; give the sidecar an 'emb analyze' run wrote"
            )
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise error(f"cannot read the results sidecar {path}: {cut(str(err))}") from None
    meta = parse_json(text, where=f"the results sidecar {path}", error=error)
    if _depth(meta) > MAX_DEPTH:  # a page builder walking it would run out of stack
        raise error(
            f"the results sidecar {path} is nested deeper than {MAX_DEPTH} levels of lists and "
            "objects (an 'emb analyze' sidecar has fewer than 10); give the sidecar a run wrote"
        )
    return meta


def _depth(value: Any) -> int:
    """Levels of lists and objects in ``value`` (iterative: no recursion on deep data)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def sidecar_problems(meta: Mapping[str, Any], *, version: int) -> list[str]:
    """What makes ``meta`` unusable as a run's sidecar (empty: none)."""
    problems = _header_problems(meta, version=version)
    files, found = _files(meta)
    return [*problems, *found, *_type_problems(meta), *_figure_problems(meta, files),
            *_summary_problems(meta), *_nested_problems(meta)]


def _header_problems(meta: Mapping[str, Any], *, version: int) -> list[str]:
    """The sidecar's version (``emb_results``) and its analysis' name."""
    problems = []
    found = meta.get("emb_results")
    if not isinstance(found, int) or isinstance(found, bool) or found < 1:
        problems.append(f"'emb_results' must be a positive integer, found {show(found)}")
    elif found > version:
        problems.append(f"it has version {show(found)}, this emb reads up to {version} (upgrade emb)")
    if not isinstance(meta.get("analysis"), str) or not meta.get("analysis"):
        problems.append(f"'analysis' must be the analysis' name, found {show(meta.get('analysis'))}")
    return problems


def _files(meta: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[str]]:
    """The sidecar's ``files`` (empty when it is no mapping) and what is wrong with them."""
    files = meta.get("files")
    if not isinstance(files, dict):
        return {}, [f"'files' must map each file name to its sha256, found {show(files)}"]
    if not files:
        return files, ["'files' lists no file (a run writes at least its netCDF)"]
    odd = [n for n, d in files.items() if not is_bare_name(n) or not isinstance(d, str)]
    if odd:
        return files, [f"'files' lists {names(odd, limit=5)}, which are not file names in its "
                       "directory with a sha256"]
    return files, []


def _type_problems(meta: Mapping[str, Any]) -> list[str]:
    """The optional entries that are not of their type (a mapping, a string)."""
    problems = []
    for key in _SIDECAR_MAPPINGS:
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            problems.append(f"'{key}' must be a mapping, found {type(meta[key]).__name__}")
    for key in ("command", "analysed_at", "suite"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            problems.append(f"'{key}' must be a string, found {type(meta[key]).__name__}")
    return problems


def _figure_problems(meta: Mapping[str, Any], files: Mapping[str, Any]) -> list[str]:
    """``figures`` that are no lists of file names, or name files that ``files`` does not list."""
    figures = meta.get("figures")
    if not isinstance(figures, dict):
        return []
    if not all(isinstance(v, list) and all(isinstance(f, str) for f in v)
               for v in figures.values()):
        return ["'figures' must map each figure to the list of its file names"]
    unlisted = [f for v in figures.values() for f in v if f not in files]
    if unlisted:
        return [f"'figures' names files that 'files' does not list: {names(unlisted, limit=5)}"]
    return []


def _summary_problems(meta: Mapping[str, Any]) -> list[str]:
    """A ``summary`` whose headline, notes or table are no lists (the table's rows mappings)."""
    summary = meta.get("summary")
    if not isinstance(summary, dict):
        return []
    problems = []
    for key in ("headline", "notes", "table"):
        if summary.get(key) is not None and not isinstance(summary[key], list):
            problems.append(f"'summary.{key}' must be a list, found {type(summary[key]).__name__}")
    if isinstance(summary.get("table"), list) and not all(isinstance(r, dict) for r in summary["table"]):
        problems.append("'summary.table' must be a list of rows (mappings)")
    return problems


def _nested_problems(meta: Mapping[str, Any]) -> list[str]:
    """Entries of ``tables`` and ``provenance`` that are no mappings, and tables whose
    ``columns`` are none."""
    problems = []
    for key in ("tables", "provenance"):
        value = meta.get(key)
        if isinstance(value, dict) and not all(isinstance(v, dict) for v in value.values()):
            problems.append(f"every entry of '{key}' must be a mapping")
    tables = meta.get("tables")
    if isinstance(tables, dict) and not all(
            isinstance(v.get("columns"), dict | None) for v in tables.values() if isinstance(v, dict)):
        problems.append("every table's 'columns' must be a mapping")
    return problems
