"""An analysis' outputs as the bytes of their files, rendered in memory: tables (CSV, or Parquet
with column descriptions), the labelled result (netCDF4, through a ``BytesIO``: HDF5 never writes
to the disk itself), figures (PNG, PDF, SVG with their metadata), and the provenance the sidecar
records. :func:`emb.results.write_results` writes the bytes (:class:`Files`)."""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import importlib.metadata
import io
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from emb.files.outputs import is_disk_full, write_file
from emb.text import plain

__all__ = ["Files", "figure_bytes", "figure_metadata", "figure_title", "maybe_json", "netcdf_bytes",
           "latex_bytes", "netcdf_ready", "provenance", "package_versions", "table_bytes"]


@functools.cache
def package_versions() -> dict[str, str]:
    """The versions of Python and the packages that shape an output (recorded in each)."""
    out = {"python": sys.version.split()[0]}
    for pkg in ("emb", "numpy", "scipy", "pandas", "xarray", "dask", "zarr", "matplotlib",
                "pyarrow", "h5netcdf"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _plain_attr(value: Any) -> Any:
    """An attribute netCDF can hold: str/int/float as they are, anything else as JSON (numpy
    scalars and arrays, ``np.str_`` included, become plain Python first)."""
    value = plain(value)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return value
    return json.dumps(value, default=str, sort_keys=True, ensure_ascii=False)


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


def maybe_json(value: Any) -> Any:
    """An attribute as plain data: a JSON string decoded, a numpy scalar as Python's."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value.item() if hasattr(value, "item") else value


def table_bytes(table: Any, fmt: str, descriptions: Mapping[str, str],
                meta: Mapping[str, Any]) -> bytes | memoryview:
    """One table as the bytes of its file: CSV, LaTeX (a booktabs ``tabular`` through pandas'
    ``to_latex``: text escaped, numbers to 4 significant digits, a missing value as ``--``;
    the column descriptions and ``meta`` in a comment above it), or Parquet (with the column
    descriptions)."""
    if fmt == "csv":
        return table.to_csv(index=False, lineterminator="\n").encode("utf-8")
    if fmt == "latex":
        return latex_bytes(table, descriptions, meta)
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pa.Table.from_pandas(table, preserve_index=False)
    fields = [f.with_metadata({"description": descriptions.get(f.name, "")}) if descriptions.get(f.name)
              else f for f in arrow.schema]
    schema = pa.schema(fields, metadata={**(arrow.schema.metadata or {}),
                                         b"emb": json.dumps(meta, sort_keys=True).encode()})
    sink = pa.BufferOutputStream()
    pq.write_table(arrow.cast(schema), sink, compression="zstd")
    return memoryview(sink.getvalue())


def latex_bytes(table: Any, descriptions: Mapping[str, str], meta: Mapping[str, Any]) -> bytes:
    """A table as a booktabs ``tabular`` (needs ``\\usepackage{booktabs}``), through pandas'
    ``DataFrame.to_latex`` (its Styler: jinja2). Floats keep 4 significant digits (``2.2e-308``
    stays), text and column names are escaped, NaN/NA is ``--``; a comment above the table says
    what it is and what each column holds."""
    head = [f"% emb {meta.get('analysis', '')}: table {meta.get('table', '')} "
            f"({len(table):,} rows); needs \\usepackage{{booktabs}}"]
    head += [f"% {col}: {' '.join(str(text).split())}" for col, text in descriptions.items() if text]
    body = table.to_latex(index=False, escape=True, na_rep="--", float_format="{:.4g}".format)
    return ("\n".join(head) + "\n" + body).encode("utf-8")


def netcdf_bytes(result: xr.Dataset) -> memoryview:
    """The netCDF4 file of ``result``, made in memory: HDF5 never writes to the disk itself (on a
    full disk its failed flush crashed the process with SIGSEGV during garbage collection)."""
    buffer = io.BytesIO()
    netcdf_ready(result).to_netcdf(buffer, engine="h5netcdf")
    return buffer.getbuffer()


def figure_bytes(fig: Any, fmt: str, dpi: int, meta: Mapping[str, Any]) -> memoryview:
    """One figure as the bytes of its file in ``fmt`` (``dpi`` for PNG), with ``meta``."""
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=dpi, format=fmt, metadata=meta)
    return buffer.getbuffer()


class Files:
    """A run's files, each rendered in memory and written into the run's temporary directory by
    emb itself, one at a time. A full disk is noted, not raised: the remaining files are still
    rendered and counted, so that the error can say how much space the run needs."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.digests: dict[str, str] = {}
        self.size = 0
        self.full: OSError | None = None

    def put(self, name: str, data: bytes | memoryview) -> None:
        """Record ``name`` (sha256, size) and write it, unless the disk was found full."""
        view = memoryview(data).cast("B")
        self.digests[name] = hashlib.sha256(view).hexdigest()
        self.size += len(view)
        if self.full is None:
            try:
                write_file(self.directory / name, view)
            except OSError as err:
                if not is_disk_full(err):
                    raise
                self.full = err


def figure_metadata(fmt: str, title: str, command: str, when: _dt.datetime,
                    versions: Mapping[str, str]) -> dict[str, Any]:
    """The metadata of a figure file in ``fmt``: title, command, time and versions."""
    software = f"emb {versions.get('emb', '?')}, matplotlib {versions.get('matplotlib', '?')}"
    description = f"{command} (analysed {when.isoformat(timespec='seconds')})"
    if fmt == "png":
        return {"Title": title, "Description": description, "Software": software,
                "Creation Time": when.isoformat(timespec="seconds"),
                "Comment": json.dumps(dict(versions), sort_keys=True)}
    if fmt == "pdf":
        return {"Title": title, "Subject": description, "Creator": software,
                "Keywords": json.dumps(dict(versions), sort_keys=True), "CreationDate": when}
    return {"Title": title, "Description": description, "Creator": software,
            "Date": when.isoformat(timespec="seconds")}


def figure_title(fig: Any) -> str:
    """What a figure shows, as drawn on it: its suptitle, else its first axes' title."""
    title = fig.get_suptitle() if hasattr(fig, "get_suptitle") else ""
    if not title:
        title = next((ax.get_title() for ax in getattr(fig, "axes", ()) if ax.get_title()), "")
    return " ".join(str(title).split())


def provenance(result: xr.Dataset, stores: Mapping[str, str]) -> dict[str, Any]:
    """Per store label: its path and the model, suite and extraction it was made with (and the
    out-of-memory back-offs of the runs that wrote it, where any backed off)."""
    attrs = {k: maybe_json(v) for k, v in result.attrs.items()}
    per_model = attrs.get("models") if isinstance(attrs.get("models"), Mapping) else {}
    out = {}
    for label, path in stores.items():
        own = {k: maybe_json(v) for k, v in dict(per_model.get(label, {})).items()}
        entry: dict[str, Any] = {"store": path}
        if "://" not in path:
            entry["store_path"] = str(Path(path).resolve())
        for key in ("model", "suite", "extraction", "emb_schema_version", "created",
                    "oom_backoffs"):
            value = own.get(key, attrs.get(key))
            if value is not None:
                entry[key] = value
        out[label] = entry
    return out
