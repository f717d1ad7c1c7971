"""Shared fixtures: the test-data directory (../shared/data or $EMB_TEST_DATA)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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
