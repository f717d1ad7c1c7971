"""Writing an analysis' results: all files or none, never mixed with another run's.

A run writes into a hidden temporary directory beside its output directory's files: the tidy tables
(CSV), the labelled result (netCDF), the figures and, last, a JSON sidecar ``<analysis>.json`` that
lists every file with its sha256, the command line, the analysis time, the package versions, the
options and each store's provenance. Only then are the files moved into place, the sidecar last: a
directory whose sidecar is missing or whose files do not match it holds no complete run. An earlier
run of the same analysis (found through its sidecar) is replaced only when asked
(``overwrite=True``) or when the directory is emb's default one; files emb did not write are never
touched.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import importlib.metadata
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from emb.errors import EmbError

__all__ = ["OutputPlan", "ResultsError", "Written", "prepare_out", "read_run", "write_results"]

SIDECAR_VERSION = 1


class ResultsError(EmbError, OSError):
    """An output directory cannot be used (not a directory, read-only, holds an earlier run)."""


@dataclass(frozen=True, kw_only=True)
class OutputPlan:
    """Where a run will write, checked before anything is computed."""

    directory: Path
    stem: str
    replaced: tuple[Path, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Written:
    """What a run wrote."""

    directory: Path
    files: tuple[Path, ...]
    summary: Any = field(repr=False)


def _earlier_files(sidecar: Path) -> tuple[Path, ...]:
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
        names = list(meta.get("files", {}))
    except (OSError, ValueError, AttributeError):
        names = []
    directory = sidecar.parent
    return tuple(directory / n for n in names if "/" not in n and (directory / n).is_file()) + (sidecar,)


def prepare_out(directory: str | os.PathLike[str], analysis: Any, *, overwrite: bool = False,
                default: bool = False) -> OutputPlan:
    """Check the output directory before computing: creatable, writable, no earlier run in the way.

    Parameters
    ----------
    directory : path
    analysis : Analysis
        The record (its ``stem`` names the files).
    overwrite : bool
        Replace an earlier run of the same analysis found there.
    default : bool
        ``directory`` is emb's default output directory: an earlier run there is replaced (and
        the caller says so).

    Raises
    ------
    ResultsError
        The path is a file or under one, cannot be created or written, or holds an earlier run
        and neither ``overwrite`` nor ``default`` is set.
    """
    directory = Path(directory)
    stem = analysis.stem
    for parent in (directory, *directory.parents):
        if parent.exists() and not parent.is_dir():
            raise ResultsError(
                f"cannot write results to {directory}: {parent} is a file, not a directory; "
                "give another --out"
            )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=directory, prefix=".emb-probe-", delete=True)
        probe.close()
    except OSError as err:
        raise ResultsError(
            f"cannot write results to {directory}: {err.strerror or err}; give a writable --out"
        ) from None
    sidecar = directory / f"{stem}.json"
    replaced: tuple[Path, ...] = ()
    if sidecar.exists():
        if not (overwrite or default):
            raise ResultsError(
                f"{directory} already holds the results of an earlier '{analysis.name}' run "
                f"({sidecar.name}); pass --overwrite to replace them, or give another --out"
            )
        replaced = _earlier_files(sidecar)
    return OutputPlan(directory=directory, stem=stem, replaced=replaced)


@functools.cache
def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for pkg in ("emb", "numpy", "scipy", "pandas", "xarray", "dask", "zarr", "matplotlib"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _plain_attr(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return value
    return json.dumps(value, default=str, sort_keys=True)


def netcdf_ready(result: xr.Dataset) -> xr.Dataset:
    """``result`` with plain unicode strings and netCDF-safe attributes (a copy)."""
    out = result.copy()
    for name, var in list(out.variables.items()):
        if var.dtype.kind in "OTU" or str(var.dtype).startswith("StringDType"):
            values = np.asarray(var.values).astype(object).astype(str)
            if name in out.coords:
                out = out.assign_coords({name: (var.dims, values, var.attrs)})
            else:
                out[name] = (var.dims, values, var.attrs)
        elif var.dtype == bool:
            values = np.asarray(var.values).astype(np.int8)
            if name in out.coords:
                out = out.assign_coords({name: (var.dims, values, var.attrs)})
            else:
                out[name] = (var.dims, values, var.attrs)
    out.attrs = {k: _plain_attr(v) for k, v in out.attrs.items()}
    for name in out.variables:
        out[name].attrs = {k: _plain_attr(v) for k, v in out[name].attrs.items()}
        out[name].encoding = {}
    return out


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value.item() if hasattr(value, "item") else value


def write_results(
    plan: OutputPlan,
    analysis: Any,
    result: xr.Dataset,
    *,
    stores: Mapping[str, str],
    options: Mapping[str, Any],
    suite: str,
    command: Sequence[str] | None = None,
    figures: bool = True,
    dpi: int = 200,
) -> Written:
    """Write a computed result's tables, netCDF, figures and sidecar into ``plan.directory``.

    All files are written into a temporary directory first and moved into place only when every
    one of them was written; on any error nothing of this run is left behind and an earlier
    run's files are untouched.
    """
    stem = plan.stem
    tables = analysis.tables(result)
    summary = analysis.summary(result, tables)
    tmp = Path(tempfile.mkdtemp(dir=plan.directory, prefix=f".{stem}-partial-"))
    try:
        names: list[str] = []
        for name, table in tables.items():
            table.to_csv(tmp / f"{name}.csv", index=False, lineterminator="\n")
            names.append(f"{name}.csv")
        netcdf_ready(result).to_netcdf(tmp / f"{stem}.nc", engine="h5netcdf")
        names.append(f"{stem}.nc")
        if figures:
            for key, fig in analysis.figures(result).items():
                fname = f"{stem}_{key}.png"
                fig.savefig(tmp / fname, dpi=dpi)
                names.append(fname)
        exports = _extra_files(analysis, result, tmp, names)
        meta = {
            "emb_results": SIDECAR_VERSION,
            "analysis": analysis.name,
            "suite": suite,
            "stores": dict(stores),
            "options": {k: v for k, v in options.items()},
            "command": shlex.join(command) if command else "",
            "analysed_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "versions": _versions(),
            "files": {n: _sha256(tmp / n) for n in names},
            **({"exports": {str(p): hashlib.sha256(c).hexdigest() for p, c in exports.items()}}
               if exports else {}),
            "summary": summary.to_dict(),
            "attrs": {k: _maybe_json(v) for k, v in result.attrs.items()},
        }
        (tmp / f"{stem}.json").write_text(
            json.dumps(meta, indent=2, default=str, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        for old in plan.replaced:
            old.unlink(missing_ok=True)
        final = []
        for name in names:
            os.replace(tmp / name, plan.directory / name)
            final.append(plan.directory / name)
        for path, content in exports.items():  # files the user named, each replaced atomically
            _write_atomic(path, content)
            final.append(path)
        os.replace(tmp / f"{stem}.json", plan.directory / f"{stem}.json")  # last: a complete run
        final.append(plan.directory / f"{stem}.json")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Written(directory=plan.directory, files=tuple(final), summary=summary)


def _extra_files(analysis: Any, result: xr.Dataset, tmp: Path, names: list[str]) -> dict[Path, bytes]:
    """Write an analysis' extra files named by a bare name into ``tmp`` (added to ``names``);
    return those named by an absolute path, to be written after the rest."""
    hook = getattr(analysis, "extra_files", None)
    exports: dict[Path, bytes] = {}
    for name, content in (hook(result) if hook is not None else {}).items():
        path = Path(name)
        if path.is_absolute():
            exports[path] = bytes(content)
        elif path.name == name and name not in names:
            (tmp / name).write_bytes(content)
            names.append(name)
        else:
            raise ValueError(f"analysis {analysis.name!r}: extra file {name!r} is neither a bare "
                             "file name nor an absolute path, or clashes with another output")
    return exports


def _write_atomic(path: Path, content: bytes) -> None:
    """``path`` holds ``content`` or its earlier content, never a partial file."""
    partial: str | None = None
    try:
        fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
        os.replace(partial, path)
    except OSError as err:
        if partial is not None and os.path.exists(partial):
            os.unlink(partial)
        raise ResultsError(f"cannot write {path}: {err.strerror or err}; give a writable path") from None


def read_run(sidecar: str | os.PathLike[str]) -> dict[str, Any]:
    """The sidecar of a run, checked: every file it lists is present with its sha256.

    Raises
    ------
    ResultsError
        The sidecar is unreadable, or a listed file is missing or changed.
    """
    sidecar = Path(sidecar)
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ResultsError(f"cannot read the results sidecar {sidecar}: {err}") from None
    if not isinstance(meta, dict) or "emb_results" not in meta:
        raise ResultsError(f"{sidecar} is not an emb results sidecar (no 'emb_results' key)")
    bad = [n for n, digest in meta.get("files", {}).items()
           if not (sidecar.parent / n).is_file() or _sha256(sidecar.parent / n) != digest]
    if bad:
        raise ResultsError(
            f"the run described by {sidecar} is incomplete or was changed: {bad}; re-run it"
        )
    return meta
