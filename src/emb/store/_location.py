"""Turn a path, zip file or fsspec URL into a zarr v3 store object."""

from __future__ import annotations

import contextlib
import os
import zipfile
from pathlib import Path
from typing import Any

import zarr.storage

from emb.errors import RemoteStoreError, StoreError
from emb.files.outputs import refuse_inside_store
from emb.store._remote import RemoteStore, is_http, open_url_store
from emb.store._zarr import sync

__all__ = ["check_writable", "is_url", "local_path", "open_zarr_store", "store_size"]


def is_url(location: str) -> bool:
    return "://" in location and not location.startswith("file://")


def local_path(location: str | os.PathLike[str]) -> Path:
    text = os.fspath(location)
    if text.startswith("file://"):
        text = text[len("file://") :]
    return Path(text).expanduser()


def _unchained_zip(text: str) -> str:
    """fsspec's chained zip URL (``zip::URL``, ``zip://::URL``) as the zip's own location: an
    'emb zip' file holds its store at its root, which emb reads from the zip's path or URL."""
    for prefix in ("zip://::", "zip::"):
        if text.startswith(prefix):
            return text[len(prefix):]
    if text.startswith("zip://") and "::" in text:
        raise StoreError(
            f"{text} names a path inside the zip ({text[len('zip://'):].split('::')[0]!r}); emb "
            "reads a zip packed by 'emb zip', whose store is at its root: give zip::URL (or the "
            "zip's own path or URL)")
    return text


def open_zarr_store(
    location: str | os.PathLike[str],
    *,
    mode: str = "r",
    storage_options: dict[str, Any] | None = None,
) -> zarr.storage.StoreLike:
    """Open ``location`` as a zarr store.

    ``mode`` is ``"r"`` (read only) or ``"a"`` (read/write, created when missing).  Zip files are
    read only: write a directory store and share it with :meth:`emb.store.Store.to_zip`.  URLs
    (also of a ``.zip``) go through fsspec: see :mod:`emb.store._remote`.
    """
    text = _unchained_zip(os.fspath(location))
    if is_url(text):
        return open_url_store(text, mode=mode, storage_options=storage_options)
    path = local_path(text)
    if path.suffix == ".zip":
        if mode == "r" and path.is_file():
            try:
                with zipfile.ZipFile(path):  # ZipStore opens lazily: fail here, clearly
                    pass
            except (zipfile.BadZipFile, OSError, ValueError) as err:
                size = path.stat().st_size
                raise StoreError(
                    f"{path} is not a readable zip file ({size} bytes: "
                    f"{'empty' if size == 0 else type(err).__name__ + ': ' + str(err)}); pack a "
                    "store with 'emb zip STORE FILE.zip', or give the store directory"
                ) from err
            return zarr.storage.ZipStore(path, mode="r")
        if mode != "r":
            raise StoreError(
                f"cannot write into zip file {path}: write a directory store (e.g. "
                f"{path.with_suffix('.zarr')}) and pack it with 'emb zip'"
            )
        raise StoreError(f"no store at {path}: the zip file does not exist")
    if mode == "r":
        if not path.exists():
            raise StoreError(
                f"no store at {path}: the path does not exist; write one with 'emb extract ... "
                f"--store {path}'"
            )
        if not path.is_dir():
            raise StoreError(
                f"{path} is a file, not a store: a store is a directory (or a .zip made by 'emb zip')"
            )
        return zarr.storage.LocalStore(path, read_only=True)
    check_writable(text, storage_options=storage_options)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(f"cannot create the store directory {path}: {err.strerror or err}") from err
    return zarr.storage.LocalStore(path, read_only=False)


def check_writable(
    location: str | os.PathLike[str], *, storage_options: dict[str, Any] | None = None
) -> None:
    """Refuse, before anything is written, a local store path emb could not write into.

    A file (or a path under one), a ``.zip`` (read-only: write a directory and pack it with
    ``emb zip``), a path inside another zarr store, or a directory this process may not write
    into (nor, for a new store, its nearest existing parent).  A URL is opened for writing, which writes nothing but refuses
    HTTP, a zip, an unreachable endpoint and a bucket that does not exist.

    Raises
    ------
    StoreError
        Saying what the path is and what to give instead.
    """
    text = os.fspath(location)
    if is_url(text):  # read-only protocols, zips, missing buckets, unreachable endpoints
        open_url_store(text, mode="a", storage_options=storage_options)
        return
    path = local_path(text)
    if path.suffix == ".zip":
        raise StoreError(
            f"cannot write into zip file {path}: write a directory store (e.g. "
            f"{path.with_suffix('.zarr')}) and pack it with 'emb zip'"
        )
    if path.is_file():
        raise StoreError(
            f"--store {path} is a file, not a store: give a new or existing store directory"
        )
    # a store inside another one would be packed with it, deleted by its 'extract --overwrite'
    refuse_inside_store(path, what="a store", error=StoreError, include_self=False,
                        fix="give a --store path outside it")
    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing != path and not existing.is_dir():
        raise StoreError(
            f"--store {path} lies under the file {existing}, so no directory can be made there; "
            "give a path in a directory"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "store directory" if existing == path else f"directory {existing} (where it would be created)"
        raise StoreError(
            f"cannot write to {path}: the {what} is read-only for this user; give a writable "
            "location, or copy the store to one"
        )


def store_size(location: str | os.PathLike[str], zstore: Any) -> int | None:
    """Bytes on disk (or in the object store); None when the backend cannot tell cheaply.

    For fsspec URLs the filesystem is asynchronous (zarr's ``FsspecStore`` makes every
    filesystem so, wrapping a synchronous one), so its sync methods cannot be called from here
    ("Loop is not running"): the coroutine runs on zarr's own event loop.  HTTP has no listing
    to sum over (a server's index pages, one request per directory, for every block): unknown.
    """
    text = os.fspath(location)
    if not is_url(text):
        path = local_path(text)
        if path.is_file():
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    fs = getattr(zstore, "fs", None)
    if fs is None or is_http(text):
        return None
    failures = (zstore.failures("list", None) if isinstance(zstore, RemoteStore)
                else contextlib.nullcontext())
    try:
        with failures:  # a server that stopped answering: one RemoteStoreError
            if getattr(fs, "async_impl", False) and getattr(fs, "asynchronous", False):
                return int(sync(fs._du(zstore.path, total=True)))
            return int(fs.du(zstore.path, total=True))
    except RemoteStoreError:
        raise
    except (OSError, NotImplementedError, AttributeError, TypeError, ValueError):
        return None
