"""A suite run's out-of-memory back-offs as the record the store keeps (see
:mod:`emb.store._backoffs`): the halvings of this run, the batch size that ran from each
length on, and the context that ended the run when one ran out of memory alone.

The runner's back-off state (:class:`emb.backends.backoff.BackOff`, ``runner.backoff``) lives
as long as the runner: it accumulates over the suites of one ``extract`` call, and the batch
sizes it learnt on one suite are where the next suite's long batches start.  :class:`Mark`
notes where a suite's run began in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Mark", "run_record"]


def _state(runner: Any) -> Any:
    return getattr(runner, "backoff", None)


@dataclass(frozen=True)
class Mark:
    """Where a suite's run began in the runner's back-off state."""

    events: int = 0
    failures: int = 0
    limits: dict[int, int] = field(default_factory=dict)

    @classmethod
    def of(cls, runner: Any) -> Mark:
        state = _state(runner)
        if state is None:
            return cls()
        return cls(len(state.events), len(getattr(state, "failures", ())), dict(state.limits))


def _ranges(limits: dict[int, int], batch_size: int) -> list[dict[str, Any]]:
    """The batch size that runs from each length on (a limit holds for every longer batch
    too, :meth:`emb.backends.backoff.BackOff.rows_for`), as ranges of lengths."""
    steps: list[tuple[int, int]] = []
    current = batch_size
    for tokens in sorted(limits):
        if limits[tokens] < current:
            current = limits[tokens]
            steps.append((tokens, current))
    return [
        {"tokens_from": tokens, "tokens_to": steps[i + 1][0] - 1 if i + 1 < len(steps) else None,
         "batch": rows}
        for i, (tokens, rows) in enumerate(steps)
    ]


def run_record(
    runner: Any, mark: Mark, *, batch_size: int, device: str, stopped: str | None = None
) -> dict[str, Any] | None:
    """This suite run's back-off record, or None when its batches never backed off (no
    halving, no context failing alone, no batch size learnt earlier in the process).

    ``stopped``: the message of the error that ended the run; recorded only when a context
    ran out of memory alone in it.
    """
    state = _state(runner)
    if state is None:
        return None
    events = [dict(e) for e in state.events[mark.events:]]
    failures = list(getattr(state, "failures", ())[mark.failures:])
    if not events and not failures and not mark.limits:
        return None
    return {
        "batch_size": int(batch_size),
        "device": str(device),
        "halvings": events,
        "batches": _ranges(dict(state.limits), int(batch_size)),
        "stopped": (
            {**failures[-1], "message": (stopped or "")[:1000]} if failures else None
        ),
    }
