"""Where the test run's time goes (a plugin of tests/conftest.py, off unless asked for).

``EMB_TEST_TIMELINE=DIR python -m pytest …`` writes one JSON line per test to
``DIR/<worker>.jsonl``: the test, its worker, its start and end (wall clock, setup and teardown
included), and the CPU seconds its process and the child processes it waited for spent meanwhile;
plus one line per worker for its start-up and collection. ``python benchmarks/test_time.py DIR``
reads them: CPU by module, the busiest tests, how busy each worker was, and the idle tail.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest

_DIR = os.environ.get("EMB_TEST_TIMELINE")
_STARTED = time.time()


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def _worker(config: pytest.Config) -> str:
    return getattr(config, "workerinput", {}).get("workerid", "main")


def _write(config: pytest.Config, record: dict) -> None:
    path = Path(_DIR) / f"{_worker(config)}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


if _DIR:

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(session: pytest.Session) -> None:
        own, kids = _cpu()
        _write(session.config, {"collection": True, "worker": _worker(session.config),
                                "start": _STARTED, "end": time.time(), "cpu": own,
                                "children_cpu": kids, "n": len(session.items)})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
        start, (own, kids) = time.time(), _cpu()
        yield
        end, (own_after, kids_after) = time.time(), _cpu()
        _write(item.config, {"test": item.nodeid, "worker": _worker(item.config),
                             "start": start, "end": end, "cpu": own_after - own,
                             "children_cpu": kids_after - kids})
