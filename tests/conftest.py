"""Shared fixtures: the test-data directory (../shared/data or $EMB_TEST_DATA)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# No test depends on the machine's speed: hypothesis' timing checks (a per-example deadline, the
# "data generation is too slow" health check) are off for every property test, whatever its own
# @settings say about example counts (they inherit these).
settings.register_profile(
    "emb", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("emb")

REPO = Path(__file__).resolve().parents[1]

#: the tiny and small model fixtures, for every test directory; the timeline of a run (EMB_TEST_TIMELINE)
pytest_plugins = ("tests.model_fixtures", "tests._timeline")


def _data_dir() -> Path:
    return Path(os.environ.get("EMB_TEST_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared test data. Fails loudly under CI=true when it is missing; skips elsewhere."""
    path = _data_dir()
    if not (path / "README.md").is_file():
        message = (
            f"test data not found at {path}; set EMB_TEST_DATA to the shared/data directory"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than this machine's cores (at most 4, pyproject's
    ``--maxprocesses``). Some tests wait without computing (a frozen server's time-outs, a pip
    install, a child process), and a core would idle meanwhile: on CI's 2 cores the suite kept
    ~1.75 of them busy with 2 workers."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With CI=true a skipped test fails: CI installs everything the tests need, so a skip means
    a test that did not run (a missing package or data set), and the summary can only read
    "N passed"."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI", "").lower() == "true" and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, which counts as a failure: {reason}"


@pytest.fixture(scope="session")
def moto_endpoint():
    """A real S3-protocol server (moto's server mode) on 127.0.0.1 for the session; its URL.

    Under CI=true a missing ``moto`` fails (the test extra installs it)."""
    pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install -e '.[test]')")
    pytest.importorskip("s3fs", reason="s3fs is not installed (pip install -e '.[test]')")
    from tests._servers import moto_server

    # it lives as long as the session (a whole run takes over 25 min on a loaded 2-core machine;
    # the servers' 15-minute default ended it mid-run), and stops when this process is gone
    with moto_server(timeout=6 * 3600) as url:
        yield url


@pytest.fixture
def s3_bucket(moto_endpoint, monkeypatch, request):
    """A new empty bucket on the session's moto server, with the environment (fake credentials,
    ``AWS_ENDPOINT_URL``) that s3fs and child processes need; returns ``"s3://BUCKET"``."""
    import re
    import uuid

    from tests._servers import make_bucket, s3_env

    for key, value in s3_env(moto_endpoint).items():
        monkeypatch.setenv(key, value)
    stem = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    bucket = f"{stem}-{uuid.uuid4().hex[:8]}"
    make_bucket(moto_endpoint, bucket)
    yield f"s3://{bucket}"
    import gc

    import s3fs  # a test that changed the environment must not leave its s3fs instances behind

    s3fs.S3FileSystem.clear_instance_cache()
    # and their aiohttp sessions are closed now, while the event loops they were made on still
    # run (s3fs closes a session when its file system is collected), not at interpreter exit
    gc.collect()
