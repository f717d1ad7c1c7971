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

Run as a script (``python tests/_servers.py KIND PORT TIMEOUT [ROOT LISTING]``) it is the child
process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

__all__ = ["http_server", "make_bucket", "moto_server", "s3_env", "s3_environment"]

HOST = "127.0.0.1"
DEFAULT_TIMEOUT = 900.0  # seconds a server lives at most


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
def _serve(kind: str, *args: str, timeout: float, ready_path: str = "/") -> Iterator[str]:
    last_error: str = ""
    for _attempt in range(3):  # a port taken between _free_port and bind: try another
        port = _free_port()
        cmd = [sys.executable, str(Path(__file__).resolve()), kind, str(port), str(timeout), *args]
        # the server's log goes to a file: a pipe nobody reads fills up and blocks the server
        with tempfile.TemporaryFile() as log:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
            url = f"http://{HOST}:{port}"
            if _wait_until_up(proc, url + ready_path):
                try:
                    yield url
                finally:
                    _stop(proc)
                return
            _stop(proc)
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
def s3_environment(endpoint: str) -> Iterator[dict[str, str]]:
    """:func:`s3_env` set in ``os.environ`` for the block; yields the whole environment (for
    child processes)."""
    env = s3_env(endpoint)
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield dict(os.environ)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


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
    else:
        raise SystemExit(f"unknown server kind {_kind!r}")
