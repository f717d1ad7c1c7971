"""How much work the long kernels plan and how much they have done: the CLI's estimate and progress.

An analysis that runs permutation tests declares, while it builds its lazy result, how many
split × word × cell products they will take (:func:`plan`), and :func:`~emb.analyses.stats.
permutation_test` counts those it has done as it goes (:data:`METER`). Both are plain counters,
no output: outside a :func:`planning` block :func:`plan` does nothing, and the meter is a
process-wide, thread-safe tally (dask's threads add to it) that the CLI resets before computing.
The CLI turns them into one line before computing ("~N s") and a progress display while it runs
(:mod:`emb.cli._progress`, with the rate :func:`~emb.analyses.stats.permutation.units_per_second`
measures); a dask cluster's workers count in their own processes (its dashboard shows their
progress).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["METER", "Meter", "Plan", "plan", "planning"]


@dataclass
class Plan:
    """The work an analysis declared: units (split × word × cell products) and what they are."""

    units: float = 0.0
    parts: list[str] = field(default_factory=list)

    def add(self, units: float, what: str) -> None:
        self.units += float(units)
        if what not in self.parts:
            self.parts.append(what)


_PLAN: contextvars.ContextVar[Plan | None] = contextvars.ContextVar("emb_work_plan", default=None)


@contextlib.contextmanager
def planning() -> Iterator[Plan]:
    """Collect what the analyses called inside the block :func:`plan` (the CLI's estimate)."""
    token = _PLAN.set(Plan())
    try:
        yield _PLAN.get()  # type: ignore[misc]
    finally:
        _PLAN.reset(token)


def plan(units: float, what: str) -> None:
    """Declare ``units`` of permutation work (``what``: e.g. "WEAT permutation tests"); nothing
    happens outside a :func:`planning` block."""
    current = _PLAN.get()
    if current is not None and units > 0:
        current.add(units, what)


class Meter:
    """A thread-safe count of the units done."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = 0.0

    def add(self, units: float) -> None:
        with self._lock:
            self._value += units

    @property
    def value(self) -> float:
        with self._lock:
            return self._value

    def reset(self) -> None:
        with self._lock:
            self._value = 0.0


#: The process' count of permutation units done (see the module docstring).
METER = Meter()
