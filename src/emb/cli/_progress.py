"""Progress of a dask computation: one live bar on a terminal, a few plain lines elsewhere.

Dask's own ``ProgressBar`` redraws with carriage returns, which a log file (CI, ``nohup``, a
notebook's captured output) keeps as hundreds of lines. :class:`Progress` draws a single tqdm bar
when stderr is a terminal and otherwise prints at most five lines (0, 25, 50, 75, 100 %).

Permutation tests are few tasks that may each run for minutes: when the analysis planned their
work (:mod:`emb.analyses.stats.work`), :class:`WorkProgress` shows the share of it done instead,
polled twice a second, with the time left; :func:`estimate` is the one line printed before.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from typing import Any

import click
from dask.callbacks import Callback

__all__ = ["Progress", "WorkProgress", "estimate", "progress_display"]

#: Work below this many units (split x word x cell products) is never estimated: a second even
#: at 10^9 units per second on one thread, far faster than any machine computes them.
_ESTIMATE_FROM = 1e9
#: An estimate is printed from this many seconds on.
_ESTIMATE_SECONDS = 10.0


class Progress(Callback):
    """A dask callback reporting finished tasks (local schedulers)."""

    def __init__(self, *, label: str = "computing", stream: Any = None) -> None:
        super().__init__()
        self._label = label
        self._stream = stream or sys.stderr
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._bar: Any = None
        self._total = 0
        self._done = 0
        self._next_mark = 0
        self._start = 0.0

    def _start_state(self, dsk: Any, state: dict[str, Any]) -> None:
        self._total = sum(len(state[k]) for k in ("ready", "waiting", "running", "finished")
                          if k in state) or 1
        self._done = len(state.get("finished", ()))
        self._start = time.monotonic()
        if self._tty:
            from tqdm import tqdm

            self._bar = tqdm(total=self._total, desc=self._label, unit="task", file=self._stream,
                             leave=False, dynamic_ncols=True)
        else:
            self._mark()

    def _posttask(self, key: Any, result: Any, dsk: Any, state: dict[str, Any], worker_id: Any) -> None:
        self._done += 1
        if self._bar is not None:
            self._bar.update(1)
        else:
            self._mark()

    def _finish(self, dsk: Any, state: dict[str, Any], errored: bool) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif not errored and self._next_mark <= 100:
            self._done = self._total
            self._mark()

    def _mark(self) -> None:
        percent = 100 * self._done // self._total
        if percent >= self._next_mark:
            elapsed = time.monotonic() - self._start
            print(f"{self._label}: {percent:3d}% of {self._total} tasks ({elapsed:.1f} s)",
                  file=self._stream, flush=True)
            self._next_mark = (percent // 25 + 1) * 25


class WorkProgress(Callback):
    """The share of the planned permutation work done (a thread polls the work meter): a tqdm
    bar on a terminal, else lines at 0, 25, 50, 75 and 100 % with the time spent and left."""

    def __init__(self, total: float, *, label: str = "computing", stream: Any = None,
                 interval: float = 0.5) -> None:
        super().__init__()
        self._total = max(float(total), 1.0)
        self._label = label
        self._stream = stream or sys.stderr
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._interval = interval
        self._bar: Any = None
        self._next_mark = 0
        self._start = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _start_state(self, dsk: Any, state: dict[str, Any]) -> None:
        from emb.analyses.stats.work import METER

        METER.reset()
        self._start = time.monotonic()
        if self._tty:
            from tqdm import tqdm

            self._bar = tqdm(total=100, desc=f"{self._label} (permutation tests)", unit="%",
                             file=self._stream, leave=False, dynamic_ncols=True,
                             bar_format="{l_bar}{bar}| {n:.0f}% [{elapsed}<{remaining}]")
        self._show()
        self._thread = threading.Thread(target=self._poll, name="emb-progress", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(self._interval):
            self._show()

    def _done(self) -> float:
        from emb.analyses.stats.work import METER

        return min(1.0, METER.value / self._total)

    def _show(self, final: bool = False) -> None:
        share = 1.0 if final else self._done()
        if self._bar is not None:
            self._bar.update(100 * share - self._bar.n)
            return
        percent = int(100 * share)
        if percent < self._next_mark:
            return
        elapsed = time.monotonic() - self._start
        left = f", ~{_duration(elapsed * (1 - share) / share)} left" if 0 < share < 1 else ""
        print(f"{self._label}: {percent:3d}% of the permutation tests ({elapsed:.1f} s{left})",
              file=self._stream, flush=True)
        self._next_mark = (percent // 25 + 1) * 25

    def _finish(self, dsk: Any, state: dict[str, Any], errored: bool) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif not errored and self._next_mark <= 100:
            self._show(final=True)


def _duration(seconds: float) -> str:
    """``42 s``, ``7 min``, ``3.5 h``."""
    if seconds < 90:
        return f"{max(1, math.ceil(seconds))} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate(units: float, parts: list[str], *, scheduler: str | None = None) -> str | None:
    """One line saying how long the planned permutation work will take on this machine's cores
    (``~N s``), when it is long (10 s or more); None otherwise, or on a cluster (its speed is
    unknown here). The rate is measured on a small test first (0.1 s)."""
    if scheduler or units < _ESTIMATE_FROM:
        return None
    from emb.analyses.stats.permutation import units_per_second

    threads = os.cpu_count() or 1
    seconds = units / (units_per_second() * threads)
    if seconds < _ESTIMATE_SECONDS:
        return None
    return (f"estimate: ~{_duration(seconds)} of computing for the {' and '.join(parts)} "
            f"({units:.2g} split x word x cell products on {threads} threads); fewer "
            "--n-permutations make it shorter")


def progress_display(work: Any, *, quiet: bool = False, scheduler: str | None = None) -> Any:
    """What ``emb analyze`` shows while it computes (:func:`emb.api.analyze`'s ``progress``):
    the estimate line first when the planned ``work`` is long, then the share of that work done
    (or dask's tasks done); nothing when ``quiet`` (or on a cluster: its own dashboard)."""
    if quiet:
        return None
    if line := estimate(work.units, work.parts, scheduler=scheduler):
        click.echo(line, err=True)
    if scheduler:
        return None
    return WorkProgress(work.units) if work.units >= _ESTIMATE_FROM else Progress()
