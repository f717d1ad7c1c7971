"""The loopback test servers themselves: they serve what they claim, and stop."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests import _servers
from tests._servers import http_server, moto_server


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not serving: the parent reaped it in _stop, so this only guards races
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _server_pids(port: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            if any(a.endswith(b"_servers.py") for a in args) and str(port).encode() in args:
                pids.append(int(entry))
    return pids


@pytest.mark.parametrize("range_capable", [True, False])
def test_http_server_range(tmp_path, range_capable):
    pytest.importorskip("aiohttp")
    (tmp_path / "f.bin").write_bytes(bytes(range(256)))
    with http_server(tmp_path, range_capable=range_capable) as url:
        assert url.startswith("http://127.0.0.1:")
        port = int(url.rsplit(":", 1)[1])
        pids = _server_pids(port)
        assert len(pids) == 1
        request = urllib.request.Request(url + "/f.bin", headers={"Range": "bytes=-4"})
        with urllib.request.urlopen(request) as response:
            body = response.read()
            status = response.status
    if range_capable:
        assert (status, body) == (206, bytes([252, 253, 254, 255]))
    else:  # http.server ignores Range: the whole file
        assert (status, body) == (200, bytes(range(256)))
    assert not _alive(pids[0])


def test_http_server_stops_by_itself(tmp_path):
    # the child process itself, as _serve starts it, with a 1.5 s life: it must end on its own
    # (waited on with a hang guard only, so a loaded machine that starts it slowly cannot fail it)
    script = Path(_servers.__file__).resolve()
    port = _servers._free_port()
    proc = subprocess.Popen([sys.executable, str(script), "stdlib", str(port), "1.5", str(tmp_path)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        assert proc.wait(timeout=300) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_moto_server_serves_s3(tmp_path):
    pytest.importorskip("moto.server")
    s3fs = pytest.importorskip("s3fs")
    with moto_server() as endpoint:
        pid = _server_pids(int(endpoint.rsplit(":", 1)[1]))[0]
        fs = s3fs.S3FileSystem(key="k", secret="s", endpoint_url=endpoint, skip_instance_cache=True)
        fs.mkdir("test-bucket")
        fs.pipe("test-bucket/a/b.txt", b"hello")
        assert fs.cat("test-bucket/a/b.txt") == b"hello"
        assert fs.du("test-bucket") == 5
    assert not _alive(pid)
