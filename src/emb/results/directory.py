"""Writing an analysis' results: all files or none, never mixed with another run's.

A run writes into a hidden temporary directory beside its output directory's files: the tidy tables
(CSV, or Parquet for the per-word tables and on request), the labelled result (netCDF), the
figures (PNG, PDF and/or SVG) and, last, a JSON sidecar ``<analysis>.json`` that lists every file
with its sha256, the command line, the analysis time, the package versions, the options, each
table's columns with their descriptions, each figure's title and each store's provenance. The
netCDF attributes and the figures' metadata carry the command, time and versions too. Only then
are the files moved into place, the sidecar last: a directory whose sidecar is missing or whose
files do not match it holds no complete run. An earlier run of the same analysis (found through
its sidecar) is replaced only when asked (``overwrite=True``), wherever the directory is (emb's
default one follows the same rule as a given one), and only the files that run's sidecar lists, unchanged since; files emb did not write
are never touched: a run that would replace one is refused before anything is moved. A run that
fails or is interrupted leaves no empty directory it created behind (:func:`discard_out`).

Output paths follow the rule of :mod:`emb.files.outputs`: never inside a zarr store, never over a file
emb did not write (an export path too: only the earlier run's export, unchanged), one writer per
analysis and directory at a time. Every file is rendered in memory and written by emb itself (a
full disk is one clear error with the space needed; HDF5 never writes to a full disk), and the
files are moved into place by a journalled swap (:mod:`emb.results._swap`): a run killed at any step
leaves the earlier run or the new one whole, and the next run into the directory completes it.

Tables are byte-identical across identical runs (CSV: pandas' shortest round-trip floats, LF line
ends, no timestamps; Parquet: no timestamps). Per-word tables default to Parquet: a Warriner run
has millions of rows, and Parquet keeps types (a word such as ``null`` stays a word), is several
times smaller and is read directly by pandas, R (arrow) and DuckDB. pyarrow is therefore a base
dependency (an environment-dependent fallback would make the same command write different files).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xarray as xr

from emb.errors import EmbError
from emb.files.outputs import (
    claim,
    disk_full_message,
    is_disk_full,
    refuse_inside_store,
    write_file,
)
from emb.options import TABLE_FORMAT
from emb.results import _swap
from emb.results._render import (
    Files,
    figure_bytes,
    figure_metadata,
    figure_title,
    maybe_json,
    netcdf_bytes,
    netcdf_ready,
    package_versions,
    provenance,
    table_bytes,
)
from emb.results._sidecar import is_bare_name, load_sidecar, sidecar_problems
from emb.text import names, plain

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FIGURE_FORMATS",
    "TABLE_FORMATS",
    "OutputPlan",
    "ResultsError",
    "Written",
    "discard_out",
    "find_runs",
    "make_dirs",
    "netcdf_ready",
    "prepare_out",
    "read_run",
    "remove_empty_dirs",
    "write_results",
]

SIDECAR_VERSION = 1
TABLE_FORMATS = TABLE_FORMAT.choices or ("auto", "csv", "latex", "parquet")
FIGURE_FORMATS = ("png", "pdf", "svg")


class ResultsError(EmbError, OSError):
    """An output directory cannot be used (not a directory, read-only, holds an earlier run)."""


@dataclass(frozen=True, kw_only=True)
class OutputPlan:
    """Where a run will write, checked before anything is computed.

    Attributes
    ----------
    directory : Path
    stem : str
        The analysis' file-name stem.
    replaced : tuple of Path
        The earlier run's files (listed, unchanged, by its sidecar) that this run replaces.
    created : tuple of Path
        The directories :func:`prepare_out` created (outermost first): :func:`discard_out`
        removes those still empty when the run fails.
    earlier : str or None
        The sha256 of the earlier run's sidecar (None: no earlier run): :func:`write_results`
        refuses to move anything when the directory changed since.
    notes : tuple of str
        What :func:`prepare_out` finished of an interrupted earlier run (for the user).
    """

    directory: Path
    stem: str
    replaced: tuple[Path, ...] = ()
    created: tuple[Path, ...] = ()
    earlier: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Written:
    """What a run wrote."""

    directory: Path
    files: tuple[Path, ...]
    summary: Any = field(repr=False)


def _earlier_run(sidecar: Path, analysis: Any) -> dict[str, Any]:
    """The sidecar of an earlier run of ``analysis`` at ``sidecar``.

    Raises
    ------
    ResultsError
        The file is not an emb results sidecar of that analysis (a user's file of that name).
    """
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = None
    if (not isinstance(meta, dict) or "emb_results" not in meta
            or meta.get("analysis") != analysis.name or not isinstance(meta.get("files"), dict)):
        raise ResultsError(
            f"{sidecar} exists and is not the sidecar of an earlier 'emb analyze {analysis.name}' "
            f"run, so emb leaves it (and its directory's other files) alone; move it away, or give "
            "another --out"
        )
    return meta


def _earlier_files(sidecar: Path, meta: Mapping[str, Any]) -> tuple[Path, ...]:
    """The files of the earlier run that are still as it wrote them (bare names listed in its
    sidecar, same sha256), and the sidecar: emb's own, which ``--overwrite`` may replace. A
    listed file changed since is no longer emb's: it is left alone (and refused if in the way)."""
    directory = sidecar.parent
    own = []
    for name, digest in meta["files"].items():
        path = directory / str(name)
        if not is_bare_name(name) or path.is_symlink() or not path.is_file():
            continue
        try:
            if _sha256(path) == digest:
                own.append(path)
        except OSError:
            continue
    return (*own, sidecar)


def _in_the_way(plan: OutputPlan, names: Sequence[str]) -> list[str]:
    """Those of ``names`` that exist in the output directory and are not emb's own earlier
    outputs (``plan.replaced``)."""
    own = set(plan.replaced)
    return [n for n in names
            if os.path.lexists(plan.directory / n) and plan.directory / n not in own]


def _refuse_foreign(plan: OutputPlan, names: Sequence[str]) -> None:
    foreign = _in_the_way(plan, names)
    if foreign:
        raise ResultsError(
            f"{plan.directory} already holds {', '.join(foreign)}, which this run would write but "
            "which no earlier emb run there lists as its own (or which were changed since); emb "
            "never replaces such files, --overwrite or not. Move them away, or give another --out "
            "(nothing was written)"
        )


def prepare_out(directory: str | os.PathLike[str], analysis: Any, *, overwrite: bool = False
                ) -> OutputPlan:
    """Check the output directory before computing: outside any zarr store, creatable,
    writable, no earlier run in the way. An interrupted run's swap there is completed (or its
    temporaries removed) first, under the claim of the directory's results (see :mod:`emb.results._swap`).

    Parameters
    ----------
    directory : path
    analysis : Analysis
        The record (its ``stem`` names the files).
    overwrite : bool
        Replace an earlier run of the same analysis found there (the files its sidecar lists,
        unchanged since; nothing else). The same rule holds for emb's default directory and a
        given one: an earlier run is never replaced unasked.

    Returns
    -------
    OutputPlan
        With the directories created (``created``): call :func:`discard_out` if the run fails.

    Raises
    ------
    ResultsError
        The path is or lies inside a zarr store, is a file or under one, cannot be created or
        written, another emb process writes the same analysis there, an interrupted run's files
        cannot be moved into place, holds an earlier run
        and ``overwrite`` is not set, or holds a file of a name the run
        writes that emb did not write (its ``<stem>.json`` or ``<stem>.nc``; the other names
        are checked by :func:`write_results`, before anything is moved into place).
    """
    directory = Path(directory)
    stem = analysis.stem
    refuse_inside_store(directory, what="results", error=ResultsError,
                        fix="give an --out outside the store")
    created = make_dirs(directory, what="results to")
    plan = OutputPlan(directory=directory, stem=stem, created=created)
    try:
        with _claimed(directory, analysis) as held:  # also the check that it is writable
            notes = _recover(held, directory)
        sidecar = directory / f"{stem}.json"
        replaced: tuple[Path, ...] = ()
        earlier = None
        if os.path.lexists(sidecar):
            meta = _earlier_run(sidecar, analysis)
            if not overwrite:
                finished = f" (emb just {notes[0][0].lower()}{notes[0][1:]})" if notes else ""
                raise ResultsError(
                    f"{directory} already holds the results of an earlier '{analysis.name}' run "
                    f"({sidecar.name}){finished}; pass --overwrite to replace them, or give "
                    "another --out"
                )
            replaced = _earlier_files(sidecar, meta)
            earlier = _sha256(sidecar)
        plan = OutputPlan(directory=directory, stem=stem, replaced=replaced, created=created,
                          earlier=earlier, notes=tuple(notes))
        _refuse_foreign(plan, [f"{stem}.nc"])  # the other names are known once the result is
    except BaseException:
        discard_out(plan)
        raise
    return plan


def _claimed(directory: Path, analysis: Any) -> Any:
    """The claim on ``directory``'s results of ``analysis`` (one writer at a time)."""
    return claim(directory / analysis.stem, what="--out", error=ResultsError,
                 shown=f"the '{analysis.name}' results in {directory}")


def _recover(held: Any, directory: Path) -> list[str]:
    """Finish an interrupted run's swap in ``directory`` (see :mod:`emb.results._swap`)."""
    try:
        return _swap.recover(held, directory)
    except _swap.SwapBlocked as blocked:
        raise ResultsError(
            f"an interrupted run's new files in {directory} cannot be moved into place: "
            f"{blocked} there is not a file emb wrote; move it away and run again"
        ) from None
    except OSError as err:
        raise ResultsError(
            f"cannot finish an interrupted run's file swap in {directory}: "
            f"{err.strerror or err}; make the directory writable and run again"
        ) from None


def discard_out(plan: OutputPlan) -> None:
    """Remove the directories :func:`prepare_out` created, innermost first, where still empty
    (a run that failed or was interrupted leaves no empty ``--out`` behind)."""
    remove_empty_dirs(plan.created)


def make_dirs(directory: Path, *, what: str) -> tuple[Path, ...]:
    """Create ``directory`` and its missing parents; those created, outermost first (undo with
    :func:`remove_empty_dirs`). ``what`` completes the messages: ``cannot write {what} DIR``.

    Raises
    ------
    ResultsError
        A file stands where a directory must be, or the directory cannot be created (nothing
        is left created then).
    """
    for parent in (directory, *directory.parents):
        if parent.exists() and not parent.is_dir():
            raise ResultsError(
                f"cannot write {what} {directory}: {parent} is a file, not a directory; "
                "give another --out"
            )
    created = tuple(d for d in (directory, *directory.parents) if not d.exists())[::-1]
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        remove_empty_dirs(created)
        raise ResultsError(
            f"cannot write {what} {directory}: {err.strerror or err}; give a writable --out"
        ) from None
    return created


def remove_empty_dirs(created: Sequence[Path]) -> None:
    """Remove ``created`` (outermost first, as :func:`make_dirs` returns them) innermost first,
    stopping at the first that is not empty (something else was written there) or gone."""
    for directory in reversed(created):
        try:
            directory.rmdir()
        except OSError:
            break


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _descriptions(result: xr.Dataset, table: Any) -> dict[str, str]:
    """Each column's description: the table's own (``table.attrs["descriptions"]``, for a column
    that holds another variable than the one its name says), else the ``long_name`` its analysis
    set on the result variable of that name, else the dimension's; none otherwise (a result
    variable's attributes are only those its analysis set: see :func:`emb.analyses.run_analysis`)."""
    declared = table.attrs.get("descriptions") or {}
    out = {}
    for col in table.columns:
        name = str(col)
        if name in declared:
            out[name] = str(declared[name] or "")
        elif name in result.variables and result[name].attrs.get("long_name"):
            out[name] = str(result[name].attrs["long_name"])
        elif name in result.dims:
            out[name] = f"dimension '{name}'"
        else:
            out[name] = ""
    return out


def table_formats(table_format: str | Sequence[str]) -> tuple[str, ...]:
    """The table formats asked for (a name or several; :data:`emb.options.TABLE_FORMAT`), each
    once, in order.

    Raises
    ------
    ResultsError
        A format that is none of ``auto``, ``csv``, ``latex``, ``parquet``, or none at all.
    """
    formats = TABLE_FORMAT.parse(table_format, owner="the results", error=ResultsError)
    if not formats:
        raise ResultsError(f"no table format given; give one or more of {names(TABLE_FORMATS)}")
    return tuple(dict.fromkeys(formats))


def _table_format(name: str, analysis: Any, table_format: str) -> str:
    if table_format != "auto":
        return table_format
    return "parquet" if name in getattr(analysis, "word_tables", ()) else "csv"


#: File-name extension of each table format.
_EXTENSION = {"csv": "csv", "parquet": "parquet", "latex": "tex"}


def _write_error(directory: Path, err: OSError, needed: int) -> ResultsError:
    """The one-line error of a write that failed (nothing of it left): in the output directory,
    or beside an export (``err.filename`` says where)."""
    where = Path(err.filename).parent if err.filename else directory
    if not where.is_dir():  # the run's temporary directory, removed by now
        where = directory
    if is_disk_full(err):
        return ResultsError(disk_full_message(
            where, needed, what="the results",
            fix="give another --out (nothing was written; an earlier run there is untouched)"))
    return ResultsError(f"cannot write results to {where}: {err.strerror or err}; give a "
                        "writable --out (nothing was written)")


def write_results(
    plan: OutputPlan,
    analysis: Any,
    result: xr.Dataset,
    *,
    stores: Mapping[str, str],
    options: Mapping[str, Any],
    suite: str | Mapping[str, str],
    command: Sequence[str] | None = None,
    figures: bool = True,
    dpi: int = 200,
    table_format: str | Sequence[str] = "auto",
    figure_formats: Sequence[str] = ("png",),
    figure_options: Mapping[str, Any] | None = None,
) -> Written:
    """Write a computed result's tables, netCDF, figures and sidecar into ``plan.directory``.

    Every file is rendered in memory and written by emb into a temporary directory first; only
    when every one of them is there are they moved into place, by a journalled swap that a kill
    at any step leaves recoverable (:mod:`emb.results._swap`; the next run into the directory completes
    it). On any error nothing of this run is left behind and an earlier run's files are
    untouched.

    Parameters
    ----------
    table_format : {"auto", "csv", "latex", "parquet"} or a sequence of them
        Each table in each format: ``auto`` is CSV, and Parquet for the analysis' per-word tables
        (``Analysis.word_tables``); ``latex`` a booktabs ``tabular`` (``<table>.tex``).
    figure_formats : sequence of {"png", "pdf", "svg"}
        Every figure in each format (PDF and SVG are vector; ``dpi`` applies to PNG).
    figure_options : mapping, optional
        Passed to the analysis' figures (e.g. ``relative_depth``), where it takes them.

    Raises
    ------
    ResultsError
        Another process writes the same analysis into the directory, the directory changed since
        :func:`prepare_out` (another run, an edited file), a file of a name the run writes is in
        the way and emb did not write it, an export path is inside a zarr store or holds a file
        that is not the earlier run's export, or the disk is full (with the space needed).
    """
    formats = table_formats(table_format)
    bad = [f for f in figure_formats if f not in FIGURE_FORMATS]
    if bad or not figure_formats:
        raise ResultsError(f"figure formats must be among {names(FIGURE_FORMATS)}; got {names(figure_formats)}")
    stem = plan.stem
    when = _dt.datetime.now(_dt.UTC).replace(microsecond=0)
    versions = package_versions()
    command_text = shlex.join(command) if command else ""
    tables = analysis.report_tables(result)
    from emb.analyses._provenance import summarize

    summary = summarize(analysis, result, tables)
    bare, exports = _extra_files(analysis, result)
    with _claimed(plan.directory, analysis) as held:
        _recover(held, plan.directory)
        earlier = _unchanged_since_prepared(plan)
        partial = held.temporary(directory=True)
        files = Files(partial)
        needed = sum(len(c) for c in exports.values())
        try:
            table_meta = _put_tables(files, analysis, result, tables, formats)
            stamped = result.copy()
            stamped.attrs = {**result.attrs, "emb_command": command_text,
                             "emb_analysed_at": when.isoformat(timespec="seconds"),
                             "emb_versions": json.dumps(versions, sort_keys=True),
                             "emb_options": json.dumps(plain(dict(options)), default=str, sort_keys=True)}
            files.put(f"{stem}.nc", netcdf_bytes(stamped))
            figure_files, figure_titles = _put_figures(
                files, analysis, result, stem=stem, formats=figure_formats, dpi=dpi,
                options=figure_options, stamp=(command_text, when, versions)) if figures else ({}, {})
            for name, content in bare.items():
                if name in files.digests:
                    raise ValueError(f"analysis {analysis.name!r}: extra file {name!r} clashes "
                                     "with another output")
                files.put(name, content)
            names_ = list(files.digests)
            meta = {
                "emb_results": SIDECAR_VERSION,
                "analysis": analysis.name,
                "suite": suite,
                "stores": dict(stores),
                "provenance": provenance(result, stores),
                "options": plain(dict(options)),
                "output": {"table_format": formats[0] if len(formats) == 1 else list(formats),
                           "figure_formats": list(figure_formats),
                           "dpi": int(dpi), "figure_options": plain(dict(figure_options or {}))},
                "command": command_text,
                "analysed_at": when.isoformat(timespec="seconds"),
                "versions": versions,
                "files": dict(files.digests),
                **({"exports": {str(p): hashlib.sha256(c).hexdigest() for p, c in exports.items()}}
                   if exports else {}),
                "tables": table_meta,
                "figures": figure_files,
                "figure_titles": figure_titles,
                "summary": summary.to_dict(),
                "attrs": {k: maybe_json(v) for k, v in result.attrs.items()},
            }
            files.put(f"{stem}.json", (json.dumps(meta, indent=2, default=str, ensure_ascii=False)
                                       + "\n").encode("utf-8"))
            needed += files.size
            if files.full is not None:
                raise files.full
            journal = _staged(plan, earlier, partial, files, exports, [*names_, f"{stem}.json"])
            swap = held.temporary_name("swap")
            _swap.commit(partial, swap)
        except BaseException as err:
            if partial.exists():  # not committed: this run leaves nothing
                _swap.discard(partial)
            if isinstance(err, OSError) and not isinstance(err, EmbError):
                raise _write_error(plan.directory, err, needed) from None
            raise
        try:
            _swap.roll_forward(swap, plan.directory, journal, verify=False)
        except OSError as err:
            raise ResultsError(
                f"cannot move this run's files into {plan.directory}: {err.strerror or err}; "
                f"they are whole in {swap.name} there: make the directory writable and run "
                "'emb analyze' into it again to finish"
            ) from None
    final = [plan.directory / n for n in names_]
    final += list(exports)
    final.append(plan.directory / f"{stem}.json")
    return Written(directory=plan.directory, files=tuple(final), summary=summary)


def _put_tables(files: Files, analysis: Any, result: xr.Dataset,
                tables: Mapping[str, pd.DataFrame], formats: Sequence[str]) -> dict[str, Any]:
    """Each table in each of its formats into ``files``; the sidecar's ``tables`` entry."""
    table_meta: dict[str, Any] = {}
    for name, table in tables.items():
        descriptions = _descriptions(result, table)
        written: dict[str, str] = {}
        for fmt in dict.fromkeys(_table_format(name, analysis, f) for f in formats):
            written[fmt] = f"{name}.{_EXTENSION[fmt]}"
            files.put(written[fmt], table_bytes(table, fmt, descriptions,
                                                {"analysis": analysis.name, "table": name}))
        first = next(iter(written))
        table_meta[name] = {"file": written[first], "format": first,
                            **({"files": written} if len(written) > 1 else {}),
                            "rows": int(len(table)), "columns": descriptions}
    return table_meta


def _put_figures(files: Files, analysis: Any, result: xr.Dataset, *, stem: str,
                 formats: Sequence[str], dpi: int, options: Mapping[str, Any] | None,
                 stamp: tuple[str, _dt.datetime, dict[str, str]],
                 ) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Each figure of the result in each format into ``files`` (``stamp``: the command, time
    and versions in their metadata); the sidecar's ``figures`` and ``figure_titles``."""
    command_text, when, versions = stamp
    figure_files: dict[str, list[str]] = {}
    figure_titles: dict[str, str] = {}
    drawn = (analysis.draw(result, **dict(options or {}))
             if hasattr(analysis, "draw") else analysis.figures(result))
    for key, fig in drawn.items():
        figure_titles[key] = figure_title(fig)
        title = f"emb {analysis.name}: {figure_titles[key] or key}"
        for fmt in dict.fromkeys(formats):
            fname = f"{stem}_{key}.{fmt}"
            meta = figure_metadata(fmt, title, command_text, when, versions)
            files.put(fname, figure_bytes(fig, fmt, dpi, meta))
            figure_files.setdefault(key, []).append(fname)
    return figure_files, figure_titles


def _staged(plan: OutputPlan, earlier: Mapping[str, Any], partial: Path, files: Files,
            exports: Mapping[Path, bytes], outputs: list[str]) -> _swap.Journal:
    """The swap's journal, written into ``partial`` with the exports beside their paths, once
    no file of the run's ``outputs`` nor an export is in the way."""
    _refuse_foreign(plan, outputs)
    _refuse_own_outputs(plan, outputs, exports)
    replaces = _check_exports(plan, earlier, exports)
    temps = {path: Path(path.parent / f".{path.name}.emb-partial-{partial.name[-8:]}")
             for path in exports}
    journal = _swap.Journal(
        stem=plan.stem, files=dict(files.digests), remove=_earlier_digests(plan, earlier),
        exports={str(p): {"temp": str(temps[p]), "sha256": hashlib.sha256(c).hexdigest(),
                          "replaces": replaces[p]} for p, c in exports.items()})
    _swap.write_journal(partial, journal)  # first: it owns the exports' temporaries
    for path, content in exports.items():
        write_file(temps[path], content)
    return journal


def _digest(path: Path) -> str | None:
    """The sha256 of a regular file (not a link); None when there is none to read."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        return _sha256(path)
    except OSError:
        return None


def _unchanged_since_prepared(plan: OutputPlan) -> dict[str, Any]:
    """The earlier run's sidecar, checked to be as :func:`prepare_out` found it, with every file
    it replaces unchanged ({} when there was none).

    Raises
    ------
    ResultsError
        The directory changed meanwhile: another run wrote there, or a file was edited.
    """
    sidecar = plan.directory / f"{plan.stem}.json"
    now = _digest(sidecar) if os.path.lexists(sidecar) else None
    if now != plan.earlier:
        raise ResultsError(
            f"{plan.directory} changed while this run computed ({sidecar.name} was written, "
            "changed or removed by another process); nothing was written: run it again"
        )
    if plan.earlier is None:
        return {}
    meta = json.loads(sidecar.read_text(encoding="utf-8"))
    changed = [p.name for p in plan.replaced if p != sidecar
               and _digest(p) != meta["files"].get(p.name)]
    if changed:
        raise ResultsError(
            f"{', '.join(changed)} in {plan.directory} changed while this run computed; emb "
            "replaces only its own files as it wrote them: move them away, or give another "
            "--out (nothing was written)"
        )
    return meta


def _earlier_digests(plan: OutputPlan, earlier: Mapping[str, Any]) -> dict[str, str]:
    """The earlier run's files this run replaces (its sidecar included) → their sha256."""
    out = {p.name: str(earlier["files"][p.name]) for p in plan.replaced
           if p.name in earlier.get("files", {})}
    if plan.earlier is not None:
        out[f"{plan.stem}.json"] = plan.earlier
    return out


def _extra_files(analysis: Any, result: xr.Dataset) -> tuple[dict[str, bytes], dict[Path, bytes]]:
    """An analysis' extra files: those named by a bare name (written with the rest) and those
    named by an absolute path (exports, moved into place with the rest)."""
    hook = getattr(analysis, "extra_files", None)
    bare: dict[str, bytes] = {}
    exports: dict[Path, bytes] = {}
    for name, content in (hook(result) if hook is not None else {}).items():
        path = Path(name)
        if path.is_absolute():
            exports[path] = bytes(content)
        elif is_bare_name(name):
            bare[name] = bytes(content)
        else:
            raise ValueError(f"analysis {analysis.name!r}: extra file {name!r} is neither a bare "
                             "file name nor an absolute path")
    return bare, exports


def _check_exports(plan: OutputPlan, earlier: Mapping[str, Any],
                   exports: Mapping[Path, bytes]) -> dict[Path, str | None]:
    """Each export path, checked by the rule of every output: not inside a zarr store, and an
    existing file there only the earlier run's export of it (its sidecar lists the path with the
    file's sha256). Returns the sha256 each export replaces (None: nothing there).

    Raises
    ------
    ResultsError
    """
    listed = earlier.get("exports") if isinstance(earlier.get("exports"), dict) else {}
    out: dict[Path, str | None] = {}
    for path in exports:
        refuse_inside_store(path, what="the export", error=ResultsError,
                            fix="give an export path outside the store (nothing was written)")
        if not path.parent.is_dir():
            raise ResultsError(f"cannot export to {path}: its directory {path.parent} does not "
                               "exist; create it first (nothing was written)")
        digest = listed.get(str(path))
        if os.path.lexists(path) and (not isinstance(digest, str) or _digest(path) != digest):
            raise ResultsError(
                f"cannot export to {path}: that file exists and is not the export of the earlier "
                f"run in {plan.directory} (emb replaces only files it wrote, unchanged since); "
                "move it away, or give another export path (nothing was written)"
            )
        out[path] = digest if os.path.lexists(path) else None
    return out


def _refuse_own_outputs(plan: OutputPlan, names: Sequence[str], exports: Mapping[Path, bytes]) -> None:
    """An extra file at a user's path (``--export-tests FILE``) must not be one of the run's own
    outputs: it would replace that file after its checksum was recorded."""
    outputs = {(plan.directory / n).resolve(): n for n in names}
    outputs.update({p.resolve(): p.name for p in plan.replaced})
    clash = [str(path) for path in exports if path.resolve() in outputs]
    if clash:
        raise ResultsError(
            f"cannot export to {', '.join(clash)}: that is a file this run writes in its output "
            f"directory {plan.directory} (or an earlier run's file there); give an export path "
            "outside that directory, or another file name (nothing was written)"
        )


def read_run(sidecar: str | os.PathLike[str]) -> dict[str, Any]:
    """The sidecar of a run, checked: every file it lists is present with its sha256.

    Raises
    ------
    ResultsError
        The sidecar is unreadable or malformed (an entry missing or of the wrong type, a file
        name outside its directory, a newer version), or a listed file is missing or changed.
    """
    sidecar = Path(sidecar)
    meta = load_sidecar(sidecar, error=ResultsError)
    if not isinstance(meta, dict) or "emb_results" not in meta:
        raise ResultsError(f"{sidecar} is not an emb results sidecar (no 'emb_results' key)")
    problems = sidecar_problems(meta, version=SIDECAR_VERSION)
    if problems:
        raise ResultsError(
            f"{sidecar} is not a valid emb results sidecar: {'; '.join(problems)}; give the "
            "sidecar an 'emb analyze' run wrote (re-run the analysis if it was edited)"
        )
    bad = [n for n, digest in meta["files"].items()
           if not (sidecar.parent / n).is_file() or _sha256(sidecar.parent / n) != digest]
    if bad:
        raise ResultsError(
            f"the run described by {sidecar} is incomplete or was changed: {names(bad)}; re-run it"
        )
    return meta


def find_runs(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[Path, dict[str, Any]]]:
    """Every complete run under ``paths`` (results directories, searched recursively, or
    sidecar files), each as (sidecar path, checked sidecar), in a stable order.

    Raises
    ------
    ResultsError
        A path that does not exist, a directory holding no run, or a run whose files were changed.
    """
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_file():
            found.append(path)
            continue
        if not path.is_dir():
            raise ResultsError(f"{path} does not exist; give results directories written by 'emb analyze'")
        here, unreadable = [], []
        for candidate in sorted(path.rglob("*.json")):
            if any(part.startswith(".") for part in candidate.relative_to(path).parts):
                continue
            try:
                head = load_sidecar(candidate, error=ResultsError)
            except ResultsError as err:  # not a sidecar (too big, not JSON): a file of the user's
                unreadable.append(str(err))
                continue
            if isinstance(head, dict) and "emb_results" in head:
                here.append(candidate)
        if not here:
            raise ResultsError(
                f"{path} holds no emb results (no sidecar <analysis>.json); give the --out "
                "directory of an 'emb analyze' run"
                + (f" ({len(unreadable)} .json file(s) there cannot be read: {unreadable[0]})"
                   if unreadable else "")
            )
        found += here
    unique = list(dict.fromkeys(p.resolve() for p in found))
    return [(p, read_run(p)) for p in unique]
