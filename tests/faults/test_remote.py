"""Remote stores and schedulers that die, freeze or never answer: every case ends in one line,
within its time, and leaves the store resumable.

Real servers on 127.0.0.1 (``tests/_servers.py``): moto's S3 server and aiohttp's static files,
frozen with SIGSTOP (the kernel still accepts connections, nothing answers), stalled mid-run by a
proxy that stops answering once a request for stored blocks goes through it (deterministic: no
race with the command), killed with SIGKILL (the proxy in front of moto, so that moto's in-memory
bucket survives and a second run can resume it), and a socket that listens and never reads.
Each command runs as a user runs it (``tests/_hostile.py``) with short limits through the
environment (``EMB_CONNECT_TIMEOUT=2``, ``EMB_READ_TIMEOUT=3``, ``EMB_RETRIES=1``); the hang guard
is far below what the same case took before (S3: ~400 s, HTTP: for ever).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import pytest

import emb
from emb.store.validate import validate_store
from tests import models
from tests._hostile import Outcome, assert_refused, run_emb, start_emb
from tests._servers import (
    frozen,
    handler_server,
    http_server,
    kill_server,
    make_bucket,
    moto_server,
    proxy_server,
    s3_env,
    s3_environment,
    silent_server,
)

pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install -e '.[test]')")
pytest.importorskip("s3fs", reason="s3fs is not installed (pip install -e '.[test]')")
pytest.importorskip("aiohttp", reason="aiohttp is not installed (pip install -e '.[test]')")

#: the limits every case runs under: a frozen server costs (1 + 1) × 3 s per request
LIMITS = {"EMB_CONNECT_TIMEOUT": "2", "EMB_READ_TIMEOUT": "3", "EMB_RETRIES": "1"}
#: hang guard of one command (the same cases took ~400 s, or for ever, before)
GUARD = 120.0
#: what a request for a stored block of the embedding looks like on the wire
BLOCKS = r" /[^ ]*/embedding/c/"
NOISE = ("Task exception was never retrieved", "Unclosed client session", "Unclosed connector",
         "Traceback")


@pytest.fixture(autouse=True)
def _no_s3fs_left_behind() -> Iterator[None]:
    """s3fs caches its file systems by their arguments, not by the endpoint in the environment:
    one made here against this module's servers must not serve another test later."""
    yield
    import gc

    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    gc.collect()  # their aiohttp sessions closed now, while the loops they were made on run


# -- servers, stores, models ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    """This module's own S3 server (frozen and stalled here: the session's stays undisturbed),
    living as long as the module may take on a slow machine."""
    with moto_server(timeout=3600) as endpoint:
        yield endpoint


def _bucket(endpoint: str) -> str:
    name = f"faults-{uuid.uuid4().hex[:12]}"
    make_bucket(endpoint, name)
    return name


def _env(endpoint: str, **extra: str) -> dict[str, str]:
    """The S3 server's environment with the short limits (for a server about to fail: a healthy
    one is given the default limits, so that a loaded machine cannot make it time out)."""
    return {**s3_env(endpoint), **LIMITS, **extra}


@pytest.fixture(scope="module")
def toy_s3(moto) -> str:
    """A finished synthetic vast store on the module's S3 server; its URL."""
    from tests.analyses._synthetic import vast_dataset, write_store

    url = f"s3://{_bucket(moto)}/toy.zarr"
    with s3_environment(moto):
        write_store(url, {"vast": vast_dataset(n_words=30, n_layers=2)})
    return url


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A served directory holding ``toy.zarr`` and its zip."""
    from tests.analyses._synthetic import vast_dataset, write_store

    root = tmp_path_factory.mktemp("site")
    store = write_store(root / "toy.zarr", {"vast": vast_dataset(n_words=30, n_layers=2)})
    emb.open_store(str(store)).to_zip(root / "toy.zarr.zip")
    return root


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> Path:
    return models.tiny_bert(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="module")
def extraction(tmp_path_factory, bert) -> dict[str, object]:
    """A tiny model, two suite files (1,100 and 600 items: three blocks, then a second suite to
    compute, so a run seen writing its first block is far from done), and the local store the
    same command writes (the reference a resumed remote store must equal)."""
    root = tmp_path_factory.mktemp("extraction")
    model = bert
    words = ["love", "war", "peace", "joy", "pain", "cat", "dog", "sun", "rain", "tree"]
    suites = []
    for name, n, text in (("big", 1100, "This is {target} number"), ("second", 600, "That was {target} again")):
        items = [{"context": f"{text} {i}.", "word": words[i % len(words)], "setting": "bleached",
                  "stimulus_set": "x"} for i in range(n)]
        path = root / f"{name}.json"
        path.write_text(json.dumps({"name": name, "items": items}))
        suites.append(path)
    args = ["extract", "-m", str(model), "-s", str(suites[0]), "-s", str(suites[1]), "-q"]
    local = root / "local.zarr"
    done = run_emb(*args, "--store", local, timeout=600)
    assert done.code == 0, str(done)
    return {"args": args, "local": local}


def _same_as_local(url: str, local: Path, endpoint: str) -> None:
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()  # listings cached by this process are stale now
    with s3_environment(endpoint):
        remote = emb.open_store(url)
        assert remote.validate(deep=True).status == "complete"
        for name in ("big", "second"):
            np.testing.assert_array_equal(
                remote.dataset(name).embedding.values,
                emb.open_store(str(local)).dataset(name).embedding.values,
            )


def _refused(outcome: Outcome, *, codes: tuple[int, ...], mentions: list[str]) -> str:
    """:func:`assert_refused`, and no asyncio noise; ``emb validate``'s "not validated" (exit 2,
    no ``Error:``) is its one stderr line, checked for ``mentions`` too."""
    line = assert_refused(outcome, codes=codes, mentions=mentions)
    if outcome.code == 2 and not line:
        lines = [text for text in outcome.stderr.splitlines() if text.strip()]
        assert len(lines) == 1 and "not validated" in lines[0], str(outcome)
        line = lines[0]
        for word in mentions:
            assert word.lower() in line.lower(), f"the error does not name {word!r}:\n{outcome}"
    for word in NOISE:
        assert word not in outcome.output, f"{word!r} in the output:\n{outcome}"
    return line


def _finish(proc: subprocess.Popen, args: tuple[str, ...], start: float) -> Outcome:
    """Wait for a command started with start_emb (its hang guard: GUARD s, then its group is
    killed and the case fails)."""
    try:
        out, err = proc.communicate(timeout=GUARD)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    return Outcome(args=args, code=proc.returncode, stdout=out, stderr=err,
                   seconds=time.monotonic() - start, peak_rss_mib=0.0, timed_out=timed_out)


def _stopped_after_first_block(proc: subprocess.Popen, endpoint: str, bucket: str) -> None:
    """Wait until the run has written its first block, then stop it (SIGSTOP, its whole group)
    and check that it is mid-run: the store is not complete yet."""
    import s3fs

    fs = s3fs.S3FileSystem(key="testing", secret="testing", endpoint_url=endpoint,
                           skip_instance_cache=True)
    deadline = time.monotonic() + GUARD
    while not any("/embedding/c/" in key for key in fs.find(bucket)):
        assert proc.poll() is None, f"the run ended before writing a block: {proc.communicate()}"
        assert time.monotonic() < deadline, "no block written"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGSTOP)
    with s3_environment(endpoint):
        report = validate_store(f"s3://{bucket}/x.zarr")
    assert report.status != "complete", "the run finished before it could be interrupted"


# -- S3: extract ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_s3_frozen_during_extract_is_one_line_and_the_store_resumes(moto, extraction):
    bucket = _bucket(moto)
    url = f"s3://{bucket}/x.zarr"
    args = (*extraction["args"], "--store", url)
    start = time.monotonic()
    proc = start_emb(*args, env=_env(moto))
    try:
        _stopped_after_first_block(proc, moto, bucket)
        with frozen(moto):
            os.killpg(proc.pid, signal.SIGCONT)
            outcome = _finish(proc, tuple(map(str, args)), start)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    _refused(outcome, codes=(1,), mentions=[url, "did not answer in time", "EMB_READ_TIMEOUT",
                                                 "run the same command again"])
    again = run_emb(*args, env=s3_env(moto), timeout=600)  # the server is back: the run resumes
    assert again.code == 0, str(again)
    _same_as_local(url, extraction["local"], moto)


@pytest.mark.slow
def test_s3_killed_during_extract_is_one_line_and_the_store_resumes(moto, extraction):
    """The server dies (SIGKILL) mid-run: here a proxy in front of moto, so that the bucket
    outlives it and a second run, once a server answers on the same port again, resumes."""
    bucket = _bucket(moto)
    url = f"s3://{bucket}/x.zarr"
    with proxy_server(moto) as endpoint:
        args = (*extraction["args"], "--store", url)
        start = time.monotonic()
        proc = start_emb(*args, env=_env(endpoint))
        try:
            _stopped_after_first_block(proc, moto, bucket)
            kill_server(endpoint)
            os.killpg(proc.pid, signal.SIGCONT)
            outcome = _finish(proc, tuple(map(str, args)), start)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    _refused(outcome, codes=(1,), mentions=[url, endpoint, "run the same command again"])
    port = int(endpoint.rsplit(":", 1)[1])
    with proxy_server(moto, port=port) as back:
        assert back == endpoint
        again = run_emb(*args, env=s3_env(back), timeout=600)
    assert again.code == 0, str(again)
    _same_as_local(url, extraction["local"], moto)


# -- S3: reading ------------------------------------------------------------------------------------
def _readers(url: str, out: Path) -> list[tuple[tuple[str, ...], tuple[int, ...]]]:
    """The reading commands and the exit codes their refusal has (validate: 2, not validated)."""
    return [
        (("info", url), (1,)),
        (("validate", url), (2,)),
        (("analyze", "vast", "--store", url, "--out", str(out), "--no-plots", "-q"), (1,)),
    ]


@pytest.mark.slow
def test_s3_frozen_before_reading_is_one_line(moto, toy_s3, tmp_path):
    with frozen(moto):
        outcomes = [(run_emb(*args, env=_env(moto), timeout=GUARD), codes)
                    for args, codes in _readers(toy_s3, tmp_path / "out")]
    for outcome, codes in outcomes:
        _refused(outcome, codes=codes, mentions=[toy_s3, "did not answer in time"])
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_s3_stalling_mid_read_is_one_line(moto, toy_s3, tmp_path):
    """The server answers the store's metadata, then stops answering once blocks are asked for
    (the validation behind info sizes them, analyze reads them)."""
    with proxy_server(moto, stall=BLOCKS) as endpoint:
        outcomes = [(run_emb(*args, env=_env(endpoint), timeout=GUARD), codes)
                    for args, codes in _readers(toy_s3, tmp_path / "out")]
    for outcome, codes in outcomes:
        _refused(outcome, codes=codes,
                       mentions=[toy_s3, "/embedding/c/", "did not answer in time"])
    assert not (tmp_path / "out").exists()


# -- HTTP -------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", ["toy.zarr", "toy.zarr.zip"])
def test_http_frozen_is_one_line(site, tmp_path, name):
    with http_server(site, range_capable=True) as base:
        url = f"{base}/{name}"
        with frozen(base):
            outcomes = [(run_emb(*args, env=LIMITS, timeout=GUARD), codes)
                        for args, codes in _readers(url, tmp_path / "out")]
    for outcome, codes in outcomes:
        _refused(outcome, codes=codes, mentions=[url, "did not answer in time"])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "stall"),
    [("toy.zarr", BLOCKS),  # after the probe, the listings and the metadata: at the blocks
     ("toy.zarr", r"GET /toy\.zarr/ "),  # at the root's index page (was "does not list")
     ("toy.zarr.zip", r"Range: bytes=[1-9]")],  # after the probe of byte 0: at the zip's end
    ids=["blocks", "listing", "zip"],
)
def test_http_stalling_mid_read_is_one_line(site, tmp_path, name, stall):
    with http_server(site, range_capable=True) as base, proxy_server(base, stall=stall) as front:
        url = f"{front}/{name}"
        outcomes = [(run_emb(*args, env=LIMITS, timeout=GUARD), codes)
                    for args, codes in _readers(url, tmp_path / "out")]
    for outcome, codes in outcomes:
        _refused(outcome, codes=codes, mentions=[url, "did not answer in time"])


@pytest.mark.slow
def test_http_that_never_answers_is_one_line(tmp_path):
    with silent_server() as base:
        url = f"{base}/toy.zarr"
        outcomes = [(run_emb(*args, env=LIMITS, timeout=GUARD), codes)
                    for args, codes in _readers(url, tmp_path / "out")]
    for outcome, codes in outcomes:
        _refused(outcome, codes=codes, mentions=[url, "did not answer in time"])


# -- a request dropped once is sent again ----------------------------------------------------------
@pytest.mark.parametrize("kind", ["s3", "http"])
def test_a_read_failed_once_is_sent_again(moto, toy_s3, site, kind):
    """The first request for a block's bytes is answered 503 (the server fails once): with
    EMB_RETRIES=1 the read is sent again and the deep validation reads every byte; with
    EMB_RETRIES=0 it is one line naming the object (S3: botocore's retries; HTTP: emb's)."""
    fail = r"GET [^ ]*/embedding/c/"
    outcomes = {}
    with contextlib.ExitStack() as stack:
        origin = moto if kind == "s3" else stack.enter_context(http_server(site, range_capable=True))
        for retries in ("1", "0"):
            with proxy_server(origin, fail_once=fail) as front:
                env = {**(s3_env(front) if kind == "s3" else {}), "EMB_RETRIES": retries}
                url = toy_s3 if kind == "s3" else f"{front}/toy.zarr"
                outcome = run_emb("validate", "--deep", url, env=env, timeout=GUARD)
                outcomes[retries] = (url, outcome)
    url, retried = outcomes["1"]
    assert retried.code == 0 and f"{url}: complete" in retried.stdout, str(retried)
    url, once = outcomes["0"]
    _refused(once, codes=(2,), mentions=[url, "/embedding/c/", "1 try"])


# -- every remote failure mode: emb info exits 1, emb validate 2 (the README's table) -------------
class _Status(BaseHTTPRequestHandler):
    """Answers every request with the server's ``status`` and a short body."""

    status = 403

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = b"<Error>no</Error>"
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET  # noqa: N815

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass


def _status_server(status: int) -> contextlib.AbstractContextManager[str]:
    """A server on 127.0.0.1 (a thread of this process) answering ``status`` to everything."""
    return handler_server(type("Handler", (_Status,), {"status": status}))


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again: nothing listens there


@contextlib.contextmanager
def _failure_mode(mode: str, moto: str, site_url: str) -> Iterator[tuple[str, dict[str, str], list[str]]]:
    """(URL, environment, words the error must say) of one remote failure mode."""
    if mode == "missing bucket":
        yield "s3://no-such-bucket-anywhere/x.zarr", s3_env(moto), ["does not exist"]
    elif mode == "missing key":
        yield f"s3://{_bucket(moto)}/nothing/here.zarr", s3_env(moto), ["no store", "check the URL"]
    elif mode == "no credentials":
        env = {**s3_env(moto), "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
               "AWS_SESSION_TOKEN": "", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
               "AWS_CONFIG_FILE": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true"}
        yield f"s3://{_bucket(moto)}/x.zarr", env, ["NoCredentialsError", "give credentials"]
    elif mode == "unreachable endpoint":
        env = _env(f"http://127.0.0.1:{_dead_port()}")
        yield "s3://bucket/x.zarr", env, ["cannot reach", "EndpointConnectionError"]
    elif mode == "403 over HTTP":
        with _status_server(403) as base:
            yield f"{base}/toy.zarr", {}, ["403"]
    elif mode == "404 over HTTP":
        yield f"{site_url}/missing.zarr", {}, ["404 Not Found"]
    else:
        raise ValueError(mode)


MODES = ["missing bucket", "missing key", "no credentials", "unreachable endpoint",
         "403 over HTTP", "404 over HTTP"]


@pytest.mark.parametrize("mode", MODES)
def test_every_remote_failure_mode_has_the_documented_exit_status(moto, site, mode):
    with http_server(site, range_capable=True) as base, _failure_mode(mode, moto, base) as (
        url, env, words
    ):
        validate = run_emb("validate", url, env=env, timeout=GUARD)
        info = run_emb("info", url, env=env, timeout=GUARD)
    _refused(validate, codes=(2,), mentions=[url, *words])
    _refused(info, codes=(1,), mentions=[url, *words])


def test_a_bad_network_setting_is_one_line(toy_s3, moto):
    outcome = run_emb("info", toy_s3, env={**s3_env(moto), "EMB_READ_TIMEOUT": "soon"},
                      timeout=GUARD)
    _refused(outcome, codes=(1,), mentions=["EMB_READ_TIMEOUT", "'soon'", "seconds"])


# -- the conditional create, sent twice ----------------------------------------------------------
def test_a_conditional_create_that_finds_its_own_object_counts_as_created():
    """A conditional PUT whose answer was lost is sent again (botocore's retries) and finds the
    object it created itself: that is this writer's object (its bytes carry its token), not
    another writer's (whose bytes differ)."""
    from emb.store._location import open_zarr_store
    from emb.store.shards import create_once

    zstore = open_zarr_store(f"memory://faults-{uuid.uuid4().hex}/x.zarr", mode="a")
    mine, theirs = b'{"token": "mine"}', b'{"token": "theirs"}'
    assert create_once(zstore, "s/.claim", mine)
    assert create_once(zstore, "s/.claim", mine)  # the same create, answered twice
    assert not create_once(zstore, "s/.claim", theirs)


# -- --scheduler ------------------------------------------------------------------------------------
@contextlib.contextmanager
def _scheduler(kind: str, site: Path) -> Iterator[str]:
    if kind == "junk":
        yield "no scheduler here"
    elif kind == "nothing listening":
        yield f"tcp://127.0.0.1:{_dead_port()}"
    elif kind == "never answers":
        with silent_server() as base:
            yield base.replace("http://", "tcp://")
    elif kind == "an HTTP server":
        with http_server(site, range_capable=True) as base:
            yield base.replace("http://", "tcp://")
    else:
        raise ValueError(kind)


SCHEDULERS = ["junk", "nothing listening", "never answers", "an HTTP server"]


@pytest.mark.parametrize("kind", SCHEDULERS)
def test_analyze_with_a_scheduler_that_is_not_one_is_one_line(site, tmp_path, kind):
    with _scheduler(kind, site) as address:
        outcome = run_emb("analyze", "vast", "--store", site / "toy.zarr", "--out", tmp_path / "out",
                          "--no-plots", "-q", "--scheduler", address, env=LIMITS, timeout=GUARD)
    _refused(outcome, codes=(1,), mentions=[address, "--scheduler"])
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["nothing listening", "never answers"])
def test_ceat_sampling_with_a_scheduler_that_does_not_answer_is_one_line(bert, site, tmp_path,
                                                                         kind):
    words = ["rose", "lily", "ant", "bee", "love", "peace", "war", "death"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"The {w} was here today.\n" for w in words * 3))
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps({"tests": {"T1": {
        "X_name": "flowers", "Y_name": "insects", "A_name": "pleasant", "B_name": "unpleasant",
        "X": words[:2], "Y": words[2:4], "A": words[4:6], "B": words[6:]}}}))
    with _scheduler(kind, site) as address:
        outcome = run_emb("extract", "-m", bert, "-s", "ceat", "--corpus", corpus, "--test",
                          tests, "--contexts", "2", "--store", tmp_path / "c.zarr", "-q",
                          "--scheduler", address, env=LIMITS, timeout=GUARD)
    _refused(outcome, codes=(1,), mentions=[address, "--scheduler"])
    assert not (tmp_path / "c.zarr").exists()
