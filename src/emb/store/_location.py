"""Turn a path, zip file or fsspec URL into a zarr v3 store object."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import zarr.storage

from emb.errors import StoreError

__all__ = ["is_url", "open_zarr_store", "store_size"]


def is_url(location: str) -> bool:
    return "://" in location and not location.startswith("file://")


def _local_path(location: str | os.PathLike[str]) -> Path:
    text = os.fspath(location)
    if text.startswith("file://"):
        text = text[len("file://") :]
    return Path(text).expanduser()


def open_zarr_store(
    location: str | os.PathLike[str],
    *,
    mode: str = "r",
    storage_options: dict[str, Any] | None = None,
) -> zarr.storage.StoreLike:
    """Open ``location`` as a zarr store.

    ``mode`` is ``"r"`` (read only) or ``"a"`` (read/write, created when missing).  Zip files are
    read only: write a directory store and share it with :meth:`emb.store.Store.to_zip`.
    """
    text = os.fspath(location)
    if is_url(text):
        if text.endswith(".zip"):
            raise StoreError(
                f"cannot open {text!r}: zip files are read from local paths; download it first, "
                "or share a directory/object-store URL instead"
            )
        try:
            return zarr.storage.FsspecStore.from_url(
                text, storage_options=storage_options, read_only=(mode == "r")
            )
        except (ImportError, ValueError, OSError) as err:
            raise StoreError(f"cannot open store URL {text!r}: {err}") from err
    path = _local_path(text)
    if path.suffix == ".zip":
        if mode != "r":
            raise StoreError(
                f"cannot write into zip file {path}: write a directory store (e.g. "
                f"{path.with_suffix('.zarr')}) and pack it with 'emb zip'"
            )
        if not path.is_file():
            raise StoreError(f"no store at {path}: the zip file does not exist")
        return zarr.storage.ZipStore(path, mode="r")
    if mode == "r":
        if not path.exists():
            raise StoreError(
                f"no store at {path}: the path does not exist; write one with 'emb extract ... "
                f"--store {path}'"
            )
        return zarr.storage.LocalStore(path, read_only=True)
    path.mkdir(parents=True, exist_ok=True)
    return zarr.storage.LocalStore(path, read_only=False)


def store_size(location: str | os.PathLike[str], zstore: Any) -> int | None:
    """Bytes on disk (or in the object store); None when the backend cannot tell."""
    text = os.fspath(location)
    if not is_url(text):
        path = _local_path(text)
        if path.is_file():
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    fs = getattr(zstore, "fs", None)
    if fs is None:
        return None
    try:
        return int(fs.du(zstore.path))
    except (OSError, NotImplementedError, AttributeError, TypeError):
        return None
