"""Progress of a dask computation: one live bar on a terminal, a few plain lines elsewhere.

Dask's own ``ProgressBar`` redraws with carriage returns, which a log file (CI, ``nohup``, a
notebook's captured output) keeps as hundreds of lines. :class:`Progress` draws a single tqdm bar
when stderr is a terminal and otherwise prints at most five lines (0, 25, 50, 75, 100 %).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import click
from dask.callbacks import Callback

__all__ = ["Progress", "compute"]

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


def compute(result: Any, *, scheduler: str | None = None, quiet: bool = False) -> Any:
    """``result.compute()`` with progress, on the local threads or a distributed scheduler."""
    if scheduler:
        from emb._scheduler import connect_scheduler

        with connect_scheduler(scheduler) as client:
            click.echo(f"computing on {client.dashboard_link or scheduler}", err=True)
            # one BLAS thread on every worker, as locally (Dask's nanny starts workers so; a
            # worker started otherwise, or threads in this process, may have more)
            client.run(_one_blas_thread)
            return result.compute()  # the client is the default scheduler inside this block
    # dask runs one task per core; BLAS threads on top only oversubscribe them, and a product
    # computed with a varying number of BLAS threads varies in its last bits from run to run
    # (tables would not be byte-identical across identical runs): one BLAS thread throughout
    from emb.analyses.stats import single_threaded_blas

    with single_threaded_blas():
        if quiet:
            return result.compute()
        with Progress():
            return result.compute()


def _one_blas_thread() -> None:
    """Set every BLAS library loaded in this process to one thread (run on each worker)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
