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

Every request is bounded in time and retried a bounded number of times (:mod:`emb.files.network`:
``EMB_CONNECT_TIMEOUT``, ``EMB_READ_TIMEOUT``, ``EMB_RETRIES``): for ``s3://`` through botocore's
configuration (``connect_timeout``, ``read_timeout``, ``retries`` in the standard mode, which
retries timeouts, dropped connections, 5xx answers and throttling; s3fs's own retry loop is
turned off so the two do not multiply), over HTTP through aiohttp's socket timeouts and a retry of
reads here.  A failure of the server while emb works (a timeout, a refused or dropped connection,
missing credentials, a refused request) becomes one :class:`~emb.errors.RemoteStoreError` naming
the URL, the object and what to do, raised by the store objects themselves (:class:`RemoteStore`,
:class:`RemoteZipStore`).
"""

from __future__ import annotations

import asyncio
import contextlib
import zipfile
from collections.abc import AsyncIterator, Awaitable, Iterable
from typing import IO, Any, TypeVar

import fsspec
import fsspec.core
import zarr.storage

from emb.errors import RemoteStoreError, StoreError
from emb.files.network import Network, network
from emb.store._requests import Requests, one_line, transient
from emb.store._zarr import Buffer, BufferPrototype, ZipFileStore, prototype, sync

__all__ = [
    "RemoteStore",
    "RemoteZipStore",
    "check_http_source",
    "is_http",
    "open_url_store",
    "protocol",
    "url_options",
]

_HTTP = ("http", "https")
_S3 = ("s3", "s3a")
_EXTRA = {"http": "http", "https": "http", "s3": "s3", "s3a": "s3"}
_T = TypeVar("_T")


def protocol(url: str) -> str:
    """The outermost transport of ``url`` (``s3`` for ``s3://b/k``, ``http`` for
    ``zip://::http://h/x.zip``)."""
    last = url.split("::")[-1]
    return last.split("://", 1)[0].lower() if "://" in last else "file"


def is_http(url: str) -> bool:
    return protocol(url) in _HTTP


# -- timeouts and retries -------------------------------------------------------------------------
def url_options(
    url: str, storage_options: dict[str, Any] | None, settings: Network | None = None
) -> dict[str, Any]:
    """fsspec's options for ``url``: the timeouts and retries of :mod:`emb.files.network` for ``s3://``
    and ``http(s)://``, under the caller's own ``storage_options`` (which win, key by key, also
    inside ``config_kwargs`` and ``client_kwargs``)."""
    settings = settings or network()
    options = dict(storage_options or {})
    kind = protocol(url)
    if kind in _S3:
        config = {
            "connect_timeout": settings.connect_timeout,
            "read_timeout": settings.read_timeout,
            "retries": {"total_max_attempts": settings.tries, "mode": "standard"},
        }
        options["config_kwargs"] = {**config, **dict(options.get("config_kwargs") or {})}
    elif kind in _HTTP:
        client = dict(options.get("client_kwargs") or {})
        with contextlib.suppress(ImportError):  # without aiohttp: refused when opened, naming it
            client.setdefault("timeout", _client_timeout(settings))
        options["client_kwargs"] = client
    return options


def _one_retry_loop(fs: Any) -> Any:
    """s3fs retries some failures itself (``retries``, 5 tries) around botocore's retries: one
    try there, so that a request is sent at most ``1 + EMB_RETRIES`` times, not 5 times that."""
    names = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    if set(names) & set(_S3):
        fs.retries = 1
    return fs


def _client_timeout(settings: Network) -> Any:
    import aiohttp

    return aiohttp.ClientTimeout(
        total=None, sock_connect=settings.connect_timeout, sock_read=settings.read_timeout
    )


# -- stores ---------------------------------------------------------------------------------------
class RemoteStore(zarr.storage.FsspecStore):
    """zarr's ``FsspecStore`` whose every request fails in one :class:`RemoteStoreError` naming
    the store's URL (and, over HTTP, retries a read that failed on the way)."""

    url: str = ""
    settings: Network = Network()

    def _requests(self) -> Requests:
        return Requests(self.url or f"{self.fs.protocol}://{self.path}", self.settings,
                         retry_reads=is_http(self.url), writing=not self.read_only)

    def failures(
        self, verb: str, key: str | None, passing: tuple[type[BaseException], ...] = ()
    ) -> contextlib.AbstractContextManager[None]:
        """A block whose failure of the server (``verb``-ing ``key`` directly through ``fs``)
        is one RemoteStoreError; ``passing``: what the caller handles itself."""
        return self._requests().translated(verb, key, passing)

    def configured(self, url: str, settings: Network) -> RemoteStore:
        self.url = url
        self.settings = settings
        return self

    def __setstate__(self, state: dict[str, Any]) -> None:  # on a dask worker
        self.__dict__.update(state)
        _one_retry_loop(self.fs)  # an attribute of the instance: not in fsspec's pickle

    def with_read_only(self, read_only: bool = False) -> RemoteStore:
        store = super().with_read_only(read_only)
        assert isinstance(store, RemoteStore)
        return store.configured(self.url, self.settings)

    async def get(self, key: str, prototype: BufferPrototype, byte_range: Any = None) -> Buffer | None:
        return await self._requests().read(
            key, lambda: super(RemoteStore, self).get(key, prototype, byte_range),
            self.allowed_exceptions,
        )

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, Any]]
    ) -> list[Buffer | None]:
        key_ranges = list(key_ranges)
        first = key_ranges[0][0] if key_ranges else None
        return await self._requests().read(
            first, lambda: super(RemoteStore, self).get_partial_values(prototype, key_ranges),
            self.allowed_exceptions,
        )

    async def exists(self, key: str) -> bool:
        return await self._requests().read(key, lambda: super(RemoteStore, self).exists(key))

    async def getsize(self, key: str) -> int:
        return await self._requests().read(
            key, lambda: super(RemoteStore, self).getsize(key), self.allowed_exceptions
        )

    async def set(self, key: str, value: Buffer, byte_range: tuple[int, int] | None = None) -> None:
        with self._requests().translated("write", key):
            await self.bounded_write(super().set(key, value, byte_range), len(value))

    async def bounded_write(self, write: Awaitable[_T], nbytes: int) -> _T:
        """``write`` within :meth:`~emb.files.network.Network.write_limit` (aiohttp has no timeout
        on sending: a frozen server with full buffers would hold an upload for ever)."""
        return await asyncio.wait_for(write, self.settings.write_limit(nbytes))

    async def delete(self, key: str) -> None:
        with self._requests().translated("delete", key, self.allowed_exceptions):
            await super().delete(key)

    async def delete_dir(self, prefix: str) -> None:
        with self._requests().translated("delete", prefix, self.allowed_exceptions):
            await super().delete_dir(prefix)

    async def clear(self) -> None:
        with self._requests().translated("delete", None):
            await super().clear()

    async def list(self) -> AsyncIterator[str]:
        with self._requests().translated("list", None, self.allowed_exceptions):
            async for key in super().list():
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        with self._requests().translated("list", prefix or None, self.allowed_exceptions):
            async for key in super().list_dir(prefix):
                yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        with self._requests().translated("list", prefix or None, self.allowed_exceptions):
            async for key in super().list_prefix(prefix):
                yield key


class RemoteZipStore(ZipFileStore):
    """zarr's read-only ``ZipStore`` over a zip file at an fsspec URL, read in place by byte
    ranges (zarr's own ``FsspecStore`` over fsspec's zip filesystem lists no group at the root);
    a failure of the server is one :class:`RemoteStoreError`, as in :class:`RemoteStore`."""

    def __init__(
        self,
        url: str,
        *,
        storage_options: dict[str, Any] | None = None,
        settings: Network | None = None,
    ) -> None:
        super().__init__(url, mode="r")
        self.url = url
        self.settings = settings or network()
        self.storage_options = url_options(url, storage_options, self.settings)
        fs, path = fsspec.core.url_to_fs(url, **self.storage_options)  # unknown protocol: now
        _one_retry_loop(fs)
        if not is_http(url):  # HTTP was asked before, with the status in words
            with self._requests().translated("read", None):
                found = fs.exists(path)
            if not found:
                raise StoreError(f"no zip file at {url}: check the URL")

    def _requests(self) -> Requests:
        return Requests(self.url, self.settings, retry_reads=is_http(self.url))

    def open_zip(self) -> tuple[IO[bytes], zipfile.ZipFile]:
        with self._requests().translated("read", None):
            file = fsspec.open(self.url, mode="rb", **self.storage_options).open()
            size = getattr(file, "size", None)
            if not size:  # fsspec streams a file of unknown size: no seeking to a zip's end
                file.close()
                raise StoreError(
                    f"{self.url} is not a zip file emb can read: the server gives no size for it "
                    "(an empty file, or no Content-Length), and a zip is read from its end; share "
                    "a store packed with 'emb zip' from a server that gives file sizes, or the "
                    "store directory"
                )
            try:
                return file, zipfile.ZipFile(file, mode="r")
            except (zipfile.BadZipFile, ValueError) as err:  # ValueError: fsspec's seek before 0
                file.close()
                cause = err.__context__  # zipfile calls a failing read "not a zip file"
                if cause is not None and transient(cause):
                    raise self._requests().failure(cause, "read", None) from cause
                raise StoreError(
                    f"{self.url} is not a zip file ({size} bytes; {one_line(err)}); share a "
                    "store packed with 'emb zip', or the store directory"
                ) from err

    async def get(self, key: str, prototype: BufferPrototype, byte_range: Any = None) -> Buffer | None:
        async def call() -> Buffer | None:
            return await super(RemoteZipStore, self).get(key, prototype, byte_range)

        return await self._requests().read(key, call)

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, Any]]
    ) -> list[Buffer | None]:
        key_ranges = list(key_ranges)

        async def call() -> list[Buffer | None]:
            return await super(RemoteZipStore, self).get_partial_values(prototype, key_ranges)

        return await self._requests().read(key_ranges[0][0] if key_ranges else None, call)

    def __repr__(self) -> str:
        return f"RemoteZipStore({self.url!r})"


# -- opening --------------------------------------------------------------------------------------
def open_url_store(
    url: str, *, mode: str, storage_options: dict[str, Any] | None
) -> RemoteStore | RemoteZipStore:
    """A zarr store for the fsspec URL ``url`` (``mode`` ``"r"`` or ``"a"``); a ``.zip`` URL gives
    a :class:`RemoteZipStore`.

    Raises
    ------
    StoreError
        Writing over HTTP or into a zip; an unknown protocol; a protocol whose package is not
        installed (naming the extra that installs it); over HTTP: the server cannot be reached,
        answers 404 or another error, or ignores ``Range`` requests; a bucket that does not
        exist; nothing at ``url`` when reading (no store there).
    RemoteStoreError
        The server cannot be reached or does not answer in time, the credentials are missing or
        refused.
    SettingError
        ``EMB_CONNECT_TIMEOUT``, ``EMB_READ_TIMEOUT`` or ``EMB_RETRIES`` is not a usable value.
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
    settings = network()
    if is_http(url):
        transport = url.split("::")[-1]
        check_http_source(
            transport if is_zip else transport.rstrip("/") + "/zarr.json", storage_options,
            store=url, settings=settings,
        )
    try:
        if is_zip:
            return RemoteZipStore(
                url.removeprefix("zip::"), storage_options=storage_options, settings=settings
            )
        zstore = RemoteStore.from_url(
            url, storage_options=url_options(url, storage_options, settings),
            read_only=(mode == "r"),
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
    assert isinstance(zstore, RemoteStore)
    _one_retry_loop(zstore.fs)
    zstore.configured(url, settings)
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


async def _lists(zstore: RemoteStore) -> bool:
    """Whether listing the store's root finds its ``zarr.json`` (an HTTP server's index page;
    without one a server answers 403 or 404).  A server that stops answering is a
    RemoteStoreError, not a missing index page."""
    import aiohttp

    try:
        return any([name.rstrip("/") == "zarr.json" async for name in zstore.list_dir("")])
    except RemoteStoreError as err:
        cause = err.__cause__
        if isinstance(cause, aiohttp.ClientResponseError) and 400 <= cause.status < 500:
            return False  # the server answered: no index page here
        raise


#: Object stores whose first path element is a bucket (or container) that must exist.
_BUCKETED = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")


def _reach(zstore: RemoteStore, url: str, *, mode: str) -> None:
    """Read the store's root metadata once (a missing one is fine for writing: a new store):
    missing credentials, an unreachable endpoint or a refused request surface here as one
    RemoteStoreError; a bucket that does not exist as one StoreError."""
    found = sync(zstore.get("zarr.json", prototype=prototype()))
    if found is not None or protocol(url) not in _BUCKETED:
        return
    bucket = zstore.path.strip("/").split("/")[0]
    with zstore.failures("read", None):
        exists = sync(zstore.fs._exists(bucket))
    if exists:
        return
    if mode != "r":
        raise StoreError(
            f"cannot write to {url}: the bucket {bucket!r} does not exist; create it first (e.g. "
            f"'aws s3 mb {protocol(url)}://{bucket}'), or give a bucket that exists"
        )
    raise StoreError(
        f"no store at {url}: the bucket {bucket!r} does not exist; check the URL (and "
        "AWS_ENDPOINT_URL, for a server other than AWS)"
    )


def check_http_source(
    file_url: str,
    storage_options: dict[str, Any] | None,
    *,
    store: str,
    settings: Network | None = None,
) -> None:
    """Ask the server for the first byte of ``file_url`` (the store's ``zarr.json`` or the zip):
    refuse, with the reason, an unreachable server, a missing file, an error answer, or a server
    that ignores ``Range`` requests.  A request that fails on the way is sent again (up to
    ``EMB_RETRIES`` times), each bounded by the connect and read timeouts."""
    try:
        import aiohttp
    except ImportError as err:
        raise StoreError(
            f"cannot open {store}: reading over HTTP needs aiohttp ({err}); pip install 'emb[http]'"
        ) from err
    settings = settings or network()
    options = url_options(store, storage_options, settings)
    client_kwargs = dict(options.pop("client_kwargs", {}) or {})
    headers = {**dict(options.pop("headers", {}) or {}), "Range": "bytes=0-0"}

    async def first_byte() -> tuple[int, str, bytes]:
        async with aiohttp.ClientSession(**client_kwargs) as session:
            async with session.get(file_url, headers=headers, **options) as response:
                return response.status, response.reason or "", await response.content.read(2)

    requests = Requests(store, settings, retry_reads=True)
    status, reason, body = sync(requests.read(file_url.rsplit("/", 1)[-1], first_byte))
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
