"""Stores at URLs: fsspec filesystems, zip files at a URL, and what an HTTP server must offer.

zarr reads a store at a URL through fsspec (``zarr.storage.FsspecStore``).  A ``.zip`` at a URL
is read in place by zarr's ``ZipStore`` over fsspec's file object for the URL: only its central
directory and the byte ranges zarr asks for travel.

Over HTTP emb only reads, and the server must answer ``Range`` requests (``206 Partial
Content``): zarr reads a shard's index from its end and its chunks by byte range, and a zip's
central directory lies at its end.  A server that ignores ``Range`` (Python's ``http.server``)
sends the whole file instead, which zarr would take for the bytes it asked for (``Stored and
computed checksum do not match``); such a server is refused when the store is opened, saying why.
Directory stores also need the server's index pages (``show_index`` / ``autoindex``), which is
how fsspec lists an HTTP "directory": a server without them is refused too, pointing to the zip.
"""

from __future__ import annotations

import threading
import zipfile
from typing import Any

import fsspec
import fsspec.core
import zarr.storage
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from emb.errors import StoreError

__all__ = ["RemoteZipStore", "check_http_source", "is_http", "open_url_store", "protocol"]

_HTTP = ("http", "https")
_EXTRA = {"http": "http", "https": "http", "s3": "s3", "s3a": "s3"}


def protocol(url: str) -> str:
    """The outermost transport of ``url`` (``s3`` for ``s3://b/k``, ``http`` for
    ``zip://::http://h/x.zip``)."""
    last = url.split("::")[-1]
    return last.split("://", 1)[0].lower() if "://" in last else "file"


def is_http(url: str) -> bool:
    return protocol(url) in _HTTP


def open_url_store(
    url: str, *, mode: str, storage_options: dict[str, Any] | None
) -> zarr.storage.FsspecStore | RemoteZipStore:
    """A zarr store for the fsspec URL ``url`` (``mode`` ``"r"`` or ``"a"``); a ``.zip`` URL gives
    a :class:`RemoteZipStore`.

    Raises
    ------
    StoreError
        Writing over HTTP or into a zip; an unknown protocol; a protocol whose package is not
        installed (naming the extra that installs it); over HTTP: the server cannot be reached,
        answers 404 or another error, or ignores ``Range`` requests.
    """
    is_zip = url.rstrip("/").endswith(".zip")
    if mode != "r" and is_http(url):
        raise StoreError(
            f"cannot write to {url}: an HTTP server is read-only for emb; write the store to a "
            "local path or object storage (s3://…) and serve that directory or its 'emb zip' file"
        )
    if mode != "r" and is_zip:
        raise StoreError(
            f"cannot write into the zip file {url}: write a directory store and pack it with "
            "'emb zip'"
        )
    if is_http(url):
        transport = url.split("::")[-1]
        check_http_source(
            transport if is_zip else transport.rstrip("/") + "/zarr.json", storage_options, store=url
        )
    try:
        if is_zip:
            return RemoteZipStore(url.removeprefix("zip::"), storage_options=storage_options)
        zstore = zarr.storage.FsspecStore.from_url(
            url, storage_options=storage_options, read_only=(mode == "r")
        )
    except StoreError:
        raise
    except ImportError as err:
        extra = _EXTRA.get(protocol(url))
        hint = f"pip install 'emb[{extra}]'" if extra else "install the fsspec backend it names"
        raise StoreError(f"cannot open {url}: {err}; {hint}") from err
    except ValueError as err:  # fsspec: "Protocol not known: foo"
        raise StoreError(
            f"cannot open {url}: {err}; give a local path, a .zip, or a URL of a protocol fsspec "
            "knows (s3://, gs://, http(s)://, memory://)"
        ) from err
    except OSError as err:
        raise StoreError(f"cannot open {url}: {type(err).__name__}: {err}") from err
    if not is_http(url):  # HTTP was asked above, with the status in words
        _reach(zstore, url, mode=mode)
    elif not sync(_lists(zstore)):
        raise StoreError(
            f"cannot read {url}: the server does not list its directories (no index page for "
            f"{url.rstrip('/')}/), and emb finds a store's suites and objects by listing them; "
            "turn directory listing on (nginx 'autoindex on', Apache 'Options +Indexes'), or share "
            "the store's zip ('emb zip') instead"
        )
    return zstore


async def _lists(zstore: zarr.storage.FsspecStore) -> bool:
    """Whether listing the store's root finds its ``zarr.json`` (an HTTP server's index page;
    without one a server answers 403 or 404)."""
    import aiohttp

    try:
        return any([name.rstrip("/") == "zarr.json" async for name in zstore.list_dir("")])
    except (aiohttp.ClientError, OSError):
        return False


#: Object stores whose first path element is a bucket (or container) that must exist.
_BUCKETED = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")


def _reach(zstore: zarr.storage.FsspecStore, url: str, *, mode: str) -> None:
    """Read the store's root metadata once (a missing one is fine: a new store): missing
    credentials, an unreachable endpoint or a refused request surface here as one StoreError;
    so does, when writing, a bucket that does not exist."""
    try:
        sync(zstore.get("zarr.json", prototype=default_buffer_prototype()))
        bucket = zstore.path.strip("/").split("/")[0]
        missing = (
            mode != "r" and protocol(url) in _BUCKETED and not sync(zstore.fs._exists(bucket))
        )
    except Exception as err:  # noqa: BLE001 - backends share no base class but Exception
        raise StoreError(
            f"cannot reach {url}: {type(err).__name__}: {err}; check the URL, the credentials "
            "and the endpoint (for s3://: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws, and "
            "AWS_ENDPOINT_URL for a server other than AWS)"
        ) from err
    if missing:
        raise StoreError(
            f"cannot write to {url}: the bucket {bucket!r} does not exist; create it first (e.g. "
            f"'aws s3 mb {protocol(url)}://{bucket}'), or give a bucket that exists"
        )


class RemoteZipStore(zarr.storage.ZipStore):
    """zarr's read-only ``ZipStore`` over a zip file at an fsspec URL, read in place by byte
    ranges (zarr's own ``FsspecStore`` over fsspec's zip filesystem lists no group at the root)."""

    def __init__(self, url: str, *, storage_options: dict[str, Any] | None = None) -> None:
        super().__init__(url, mode="r")
        self.url = url
        self.storage_options = dict(storage_options or {})
        fs, path = fsspec.core.url_to_fs(url, **self.storage_options)  # unknown protocol: now
        if not is_http(url):  # HTTP was asked before, with the status in words
            try:
                found = fs.exists(path)
            except Exception as err:  # noqa: BLE001 - backends share no base class but Exception
                raise StoreError(f"cannot reach {url}: {type(err).__name__}: {err}") from err
            if not found:
                raise StoreError(f"no zip file at {url}: check the URL")

    def _sync_open(self) -> None:
        if self._is_open:
            raise ValueError("store is already open")
        self._lock = threading.RLock()
        self._file = fsspec.open(self.url, mode="rb", **self.storage_options).open()
        try:
            self._zf = zipfile.ZipFile(self._file, mode="r")
        except zipfile.BadZipFile as err:
            self._file.close()
            raise StoreError(
                f"{self.url} is not a zip file ({err}); share a store packed with 'emb zip', or "
                "the store directory"
            ) from err
        self._is_open = True

    def close(self) -> None:
        super().close()
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()

    def __repr__(self) -> str:
        return f"RemoteZipStore({self.url!r})"


def check_http_source(
    file_url: str, storage_options: dict[str, Any] | None, *, store: str
) -> None:
    """Ask the server for the first byte of ``file_url`` (the store's ``zarr.json`` or the zip):
    refuse, with the reason, an unreachable server, a missing file, an error answer, or a server
    that ignores ``Range`` requests."""
    try:
        import aiohttp
    except ImportError as err:
        raise StoreError(
            f"cannot open {store}: reading over HTTP needs aiohttp ({err}); pip install 'emb[http]'"
        ) from err
    options = dict(storage_options or {})
    client_kwargs = dict(options.pop("client_kwargs", {}) or {})
    headers = {**dict(options.pop("headers", {}) or {}), "Range": "bytes=0-0"}

    async def first_byte() -> tuple[int, str, bytes]:
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(timeout=timeout, **client_kwargs) as session:
            async with session.get(file_url, headers=headers, **options) as response:
                return response.status, response.reason or "", await response.content.read(2)

    try:
        status, reason, body = sync(first_byte())
    except (aiohttp.ClientError, OSError, TimeoutError) as err:
        raise StoreError(
            f"cannot reach {store}: {type(err).__name__}: {err}; check the host and port, and "
            "that the server is running"
        ) from err
    if status == 404:
        what = "the zip file" if store.rstrip("/").endswith(".zip") else "the store's root zarr.json"
        raise StoreError(
            f"no store at {store}: the server answered 404 Not Found for {what} ({file_url}); check "
            "the URL (a store's URL names the directory that holds zarr.json, or the .zip file)"
        )
    if status not in (200, 206):
        raise StoreError(f"cannot read {store}: the server answered {status} {reason} for {file_url}")
    if status == 200 and len(body) > 1:
        raise StoreError(
            f"cannot read {store}: the server ignores HTTP Range requests (it answered 200 with the "
            f"whole file to a request for byte 0 of {file_url}), and zarr reads shards and zip files "
            "by byte range; serve it with a server that answers Range requests (nginx, Apache, "
            "object storage), or download it and open the local copy"
        )
