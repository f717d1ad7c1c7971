"""One request to a store at a URL: sent again while it fails on the way (where the transport
does not retry itself), and a failure of the server, the network or the credentials turned into
one :class:`~emb.errors.RemoteStoreError` naming the URL, the object and what to do.

Backends share no exception base: botocore (``ConnectionError``, ``HTTPClientError`` with its
timeouts, missing credentials, ``ClientError``), aiohttp (``ClientError``, its timeouts), and
fsspec's translations of them into ``OSError``.  Some hide a failure: fsspec's HTTP ``_info`` turns
every error into ``FileNotFoundError``, zipfile turns a failing read into ``BadZipFile``; those
are unwrapped here (:func:`hidden_failure`), so a server that stops answering is never read as a
missing object or a damaged zip.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from emb.errors import RemoteStoreError, StoreError
from emb.files.network import Network

__all__ = ["Requests", "hidden_failure", "one_line", "remote_failure", "transient"]

_T = TypeVar("_T")


def _failure_types() -> tuple[type[BaseException], ...]:
    """What a remote backend raises when the server, the network or the credentials fail."""
    types: list[type[BaseException]] = [OSError, TimeoutError]
    with contextlib.suppress(ImportError):
        import botocore.exceptions as boto

        types += [
            boto.ConnectionError, boto.HTTPClientError, boto.NoCredentialsError,
            boto.PartialCredentialsError, boto.CredentialRetrievalError, boto.ClientError,
        ]
    with contextlib.suppress(ImportError):
        import aiohttp

        types.append(aiohttp.ClientError)
    return tuple(types)


def _refused_types() -> tuple[type[BaseException], ...]:
    """What a backend raises, before sending anything, for a request it cannot make: botocore's
    check of the bucket and key names (``s3://?/x``)."""
    try:
        import botocore.exceptions as boto
    except ImportError:
        return ()
    return (boto.ParamValidationError,)


def transient(err: BaseException) -> bool:
    """Whether an HTTP read that failed so may succeed when sent again (a timeout, a dropped
    connection, a cut answer, a 5xx or 429 answer): never a 4xx, never missing credentials."""
    try:
        import aiohttp
    except ImportError:
        return isinstance(err, TimeoutError)
    if isinstance(err, aiohttp.ClientResponseError):
        return err.status >= 500 or err.status == 429
    return isinstance(err, TimeoutError | aiohttp.ClientConnectionError | aiohttp.ClientPayloadError)


def hidden_failure(err: BaseException) -> BaseException | None:
    """The failure of the server behind a "not found": fsspec's HTTP ``_info`` (the size of an
    object) turns every error, a timeout too, into ``FileNotFoundError``; a real 404 (or any
    other answer of the server) is not a failure."""
    cause = err.__cause__
    if isinstance(err, FileNotFoundError) and cause is not None and transient(cause):
        return cause
    return None


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


_DOING = {"read": "reading", "write": "writing", "delete": "deleting", "list": "listing"}


def remote_failure(
    err: BaseException, *, url: str, verb: str, key: str | None, settings: Network,
    writing: bool = False,
) -> RemoteStoreError:
    """The one-line error for a request to the store at ``url`` that failed with ``err``: what
    failed (``verb`` the object ``key``), what the server did, and what to do (``writing``: the
    store was open for writing, so the hint says that the command resumes)."""
    doing = _DOING.get(verb, verb) + (f" {key}" if key else "")
    name = type(err).__name__
    if isinstance(err, PermissionError):
        head = f"cannot {verb} {url} ({doing}): the server refused access ({one_line(err)})"
        advice = "check the credentials and their permissions on this bucket and key"
    elif "Credentials" in name:
        head = f"cannot reach {url} ({doing}): {one_line(err)}"
        advice = ("give credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
                  "or ~/.aws")
    elif isinstance(err, TimeoutError) or "Timeout" in name:
        head = (f"cannot reach {url} ({doing}): the server did not answer in time "
                f"({one_line(err)}; limits: {settings.describe()})")
        advice = ("check that the server is running and reachable; for a slow one raise "
                  "EMB_READ_TIMEOUT or EMB_CONNECT_TIMEOUT (seconds) or EMB_RETRIES")
    else:
        head = f"cannot reach {url} ({doing}): {one_line(err)} (limits: {settings.describe()})"
        advice = ("check the URL, and that the server is running and reachable (the host and "
                  "port; for s3://, AWS_ENDPOINT_URL for a server other than AWS)")
    if writing or verb in ("write", "delete"):
        advice += "; what was written stays: run the same command again to resume"
    return RemoteStoreError(f"{head}; {advice}")


class Requests:
    """Runs one store request: retried while transient where the transport does not retry
    itself (HTTP), and a failure of the server turned into one :class:`RemoteStoreError`."""

    def __init__(
        self, url: str, settings: Network, *, retry_reads: bool, writing: bool = False
    ) -> None:
        self.url = url
        self.settings = settings
        self.read_tries = settings.tries if retry_reads else 1
        self.writing = writing

    def failure(self, err: BaseException, verb: str, key: str | None) -> RemoteStoreError:
        return remote_failure(err, url=self.url, verb=verb, key=key, settings=self.settings,
                              writing=self.writing)

    def refused(self, err: BaseException) -> StoreError:
        return StoreError(
            f"cannot use {self.url}: {one_line(err)}; check the URL (an S3 bucket name has 3 to "
            "63 lower-case letters, digits, '.' and '-')"
        )

    @contextlib.contextmanager
    def translated(
        self, verb: str, key: str | None, passing: tuple[type[BaseException], ...] = ()
    ) -> Iterator[None]:
        """Run a write, delete or listing: a failure of the server is one RemoteStoreError
        (``passing``: what the caller handles itself, e.g. a missing object)."""
        try:
            yield
        except (StoreError, *passing):
            raise
        except _refused_types() as err:
            raise self.refused(err) from err
        except _failure_types() as err:
            raise self.failure(hidden_failure(err) or err, verb, key) from err

    async def read(
        self,
        key: str | None,
        call: Callable[[], Awaitable[_T]],
        passing: tuple[type[BaseException], ...] = (),
    ) -> _T:
        """Run a read, sending it again while it fails on the way (HTTP)."""
        attempt = 0
        while True:
            try:
                try:
                    return await call()
                except passing as err:
                    if (hidden := hidden_failure(err)) is None:
                        raise
                    raise hidden from err
            except (StoreError, *passing):
                raise
            except _refused_types() as err:
                raise self.refused(err) from err
            except _failure_types() as err:
                attempt += 1
                if attempt < self.read_tries and transient(err):
                    await asyncio.sleep(min(0.2 * 2 ** (attempt - 1), 2.0))
                    continue
                raise self.failure(err, "read", key) from err
