"""Real servers on the loopback interface for tests: an S3-protocol server and static HTTP servers.

Each server is a child process that binds 127.0.0.1 only, is stopped by its pid when the ``with``
block (or the fixture) ends, and stops by itself after ``timeout`` seconds or as soon as the
process that started it is gone, so a crashed or killed test run never leaves one behind.

- :func:`moto_server` — moto's S3 server mode (``pip install "moto[server]"``); yields the
  endpoint URL and sets nothing globally: pass it to s3fs with :func:`s3_environment`.
- :func:`http_server` — a read-only static file server over ``root``: ``range_capable=True``
  is aiohttp's static file handler (answers ``Range`` requests with 206 Partial Content);
  ``range_capable=False`` is the standard library's ``http.server``, which ignores ``Range`` and
  always sends the whole file.
- :func:`proxy_server` — a TCP proxy to another server's URL that passes bytes through, and
  stops answering for good on a connection whose request matches ``stall`` (a server that stalls
  mid-run, deterministically), or answers the first request matching ``fail_once`` with ``503
  Service Unavailable`` (a server that fails once); killed (:func:`kill_server`) it is a server that
  died, and started again on the same port it is that server back, with its state.
- :func:`silent_server` — a socket that listens and never reads (in this process): connections
  are accepted by the kernel, and no answer ever comes.
- :func:`frozen` — a server stopped with SIGSTOP for the block (SIGCONT after it, always).
- :func:`handler_server` — ``http.server`` with a handler a test writes, in a thread of this
  process (a server answering 403 to everything, a fuzzer's answers).

Run as a script (``python tests/_servers.py KIND PORT TIMEOUT [ROOT LISTING]``) it is the child
process.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

__all__ = [
    "environment",
    "frozen",
    "handler_server",
    "http_server",
    "kill_server",
    "make_bucket",
    "moto_server",
    "proxy_server",
    "s3_env",
    "s3_environment",
    "server_pid",
    "silent_server",
]

HOST = "127.0.0.1"
DEFAULT_TIMEOUT = 900.0  # seconds a server lives at most
_RUNNING: dict[str, subprocess.Popen] = {}  # base URL -> the server's process


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """Stop the child by its pid: SIGTERM, then SIGKILL after 5 s."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


@contextlib.contextmanager
def _serve(
    kind: str, *args: str, timeout: float, ready_path: str = "/", port: int | None = None
) -> Iterator[str]:
    last_error: str = ""
    for _attempt in range(3 if port is None else 1):  # a port taken meanwhile: try another
        port = port or _free_port()
        cmd = [sys.executable, str(Path(__file__).resolve()), kind, str(port), str(timeout), *args]
        # the server's log goes to a file: a pipe nobody reads fills up and blocks the server
        with tempfile.TemporaryFile() as log:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
            url = f"http://{HOST}:{port}"
            if _wait_until_up(proc, url + ready_path):
                _RUNNING[url] = proc
                try:
                    yield url
                finally:
                    _RUNNING.pop(url, None)
                    _stop(proc)
                return
            _stop(proc)
            port = None
            log.seek(0)
            last_error = log.read().decode(errors="replace")[-2000:]
    raise RuntimeError(f"the {kind} server did not start on {HOST}: {last_error}")


def _wait_until_up(proc: subprocess.Popen, url: str, *, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except urllib.error.HTTPError:  # any HTTP answer means it is serving
            return True
        except OSError:
            time.sleep(0.1)
    return False


@contextlib.contextmanager
def moto_server(*, timeout: float = DEFAULT_TIMEOUT) -> Iterator[str]:
    """Run moto's S3 server on 127.0.0.1; yields its endpoint URL (``http://127.0.0.1:PORT``)."""
    with _serve("moto", timeout=timeout, ready_path="/moto-api/") as url:
        yield url


@contextlib.contextmanager
def http_server(
    root: str | os.PathLike[str],
    *,
    range_capable: bool,
    listing: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> Iterator[str]:
    """Serve the directory ``root`` read-only on 127.0.0.1; yields the base URL (no trailing /).

    ``range_capable=True``: aiohttp's static files (Range → 206), with index pages for
    directories unless ``listing=False``; ``False``: ``http.server`` (Range ignored → 200 with the
    whole file; it always lists directories).
    """
    if not range_capable and not listing:
        raise ValueError("http.server always lists directories")
    kind = "aiohttp" if range_capable else "stdlib"
    with _serve(kind, os.fspath(root), "1" if listing else "0", timeout=timeout) as url:
        yield url


@contextlib.contextmanager
def proxy_server(
    target: str, *, stall: str | None = None, fail_once: str | None = None,
    port: int | None = None, timeout: float = DEFAULT_TIMEOUT,
) -> Iterator[str]:
    """A TCP proxy on 127.0.0.1 (``port``, or a free one) to the server at ``target``
    (``http://127.0.0.1:PORT``); yields its URL.

    Bytes pass through unchanged both ways.  ``stall``: a regular expression; a connection whose
    request bytes match it (e.g. a request line for a path under ``/embedding/c/``) is held open
    and never answered, as a server that stops answering mid-run.  ``fail_once``: the first
    request matching it is not passed on but answered ``503 Service Unavailable`` (later ones
    pass), as a server that fails once and recovers.
    """
    with _serve("proxy", target, stall or "", fail_once or "", timeout=timeout, ready_path="/",
                port=port) as url:
        yield url


def server_pid(url: str) -> int:
    """The pid of the server started here that serves ``url`` (its base URL)."""
    return _RUNNING[url].pid


def kill_server(url: str) -> None:
    """Kill the server at ``url`` with SIGKILL, as a crash would, and wait until it is gone (its
    port then refuses connections)."""
    proc = _RUNNING[url]
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


@contextlib.contextmanager
def frozen(url: str) -> Iterator[None]:
    """The server at ``url`` stopped (SIGSTOP) for the block, as a frozen machine: the kernel
    still accepts connections, nothing answers.  It is continued (SIGCONT) after the block,
    whatever happens in it."""
    pid = server_pid(url)
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """A socket on 127.0.0.1 that listens and never reads; yields ``http://127.0.0.1:PORT``.

    The kernel completes each connection (up to the backlog) and takes the request's bytes;
    no answer ever comes, as from a process that hangs."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        sock.listen(64)
        yield f"http://{HOST}:{sock.getsockname()[1]}"


def s3_env(endpoint: str) -> dict[str, str]:
    """The environment variables that point s3fs/botocore at ``endpoint`` (fake credentials)."""
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ENDPOINT_URL_S3": endpoint,
    }


@contextlib.contextmanager
def environment(values: Mapping[str, str | None]) -> Iterator[dict[str, str]]:
    """``values`` set in ``os.environ`` for the block (``None``: unset), then put back as they
    were; yields the whole environment (for child processes)."""
    saved = {key: os.environ.get(key) for key in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield dict(os.environ)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def s3_environment(endpoint: str) -> Iterator[dict[str, str]]:
    """:func:`s3_env` set in ``os.environ`` for the block; yields the whole environment (for
    child processes)."""
    with environment(s3_env(endpoint)) as env:
        yield env


@contextlib.contextmanager
def handler_server(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """``http.server`` with ``handler`` on 127.0.0.1, in a thread of this process (for servers
    a test scripts itself); yields ``http://127.0.0.1:PORT``."""
    with http.server.ThreadingHTTPServer((HOST, 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://{HOST}:{server.server_address[1]}"
        finally:
            server.shutdown()


def make_bucket(endpoint: str, bucket: str) -> None:
    """Create ``bucket`` on the S3 server at ``endpoint`` (through s3fs, with fake credentials)."""
    import s3fs

    fs = s3fs.S3FileSystem(
        key="testing", secret="testing", endpoint_url=endpoint, skip_instance_cache=True
    )
    fs.mkdir(bucket)


# -- the child process --------------------------------------------------------------------------


def _watchdog(timeout: float) -> None:
    """Exit after ``timeout`` s, or once the parent process is gone."""
    import threading

    parent = os.getppid()
    start = time.monotonic()

    def watch() -> None:
        while time.monotonic() - start < timeout and os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def _run_moto(port: int) -> None:
    from moto.server import main

    main(["-H", HOST, "-p", str(port)])


def _run_aiohttp(port: int, root: str, listing: bool) -> None:
    from aiohttp import web

    app = web.Application()
    app.router.add_static("/", root, show_index=listing)
    web.run_app(app, host=HOST, port=port, print=None, handle_signals=True)


def _run_stdlib(port: int, root: str) -> None:
    import functools
    import http.server

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
            pass

    handler = functools.partial(Quiet, directory=root)
    with http.server.ThreadingHTTPServer((HOST, port), handler) as server:
        server.serve_forever()


def _run_proxy(port: int, target: str, stall: str, fail_once: str) -> None:
    import asyncio
    import re
    from urllib.parse import urlsplit

    upstream = urlsplit(target)
    pattern = re.compile(stall.encode()) if stall else None
    fail = [re.compile(fail_once.encode())] if fail_once else []
    unavailable = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                   b"Connection: close\r\n\r\n")

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                   client: asyncio.StreamWriter | None = None) -> None:
        try:
            while data := await reader.read(65536):
                if client is not None and pattern is not None and pattern.search(data):
                    await asyncio.Event().wait()  # hold the connection, never answer
                if client is not None and fail and fail[0].search(data):
                    fail.clear()  # once
                    client.write(unavailable)
                    await client.drain()
                    break  # not passed on; both sides are closed
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(upstream.hostname, upstream.port)
        except OSError:
            client_w.close()
            return
        upward = asyncio.ensure_future(pump(client_r, server_w, client=client_w))
        downward = asyncio.ensure_future(pump(server_r, client_w))
        await upward  # the client is done, or its request was failed: close its connection
        client_w.close()
        await downward

    async def main() -> None:
        server = await asyncio.start_server(handle, HOST, port, reuse_address=True)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


if __name__ == "__main__":
    _kind, _port, _timeout, *_rest = sys.argv[1:]
    _watchdog(float(_timeout))
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if _kind == "moto":
        _run_moto(int(_port))
    elif _kind == "aiohttp":
        _run_aiohttp(int(_port), _rest[0], _rest[1] == "1")
    elif _kind == "stdlib":
        _run_stdlib(int(_port), _rest[0])
    elif _kind == "proxy":
        _run_proxy(int(_port), _rest[0], _rest[1], _rest[2])
    else:
        raise SystemExit(f"unknown server kind {_kind!r}")
