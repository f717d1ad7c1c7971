"""Sharded extraction: which compute windows the worker ``--shard I/N`` computes and writes.

A suite's blocks are computed in windows of ``window_blocks`` blocks (see
:mod:`emb.extraction.pipeline`).  The shard plan cuts the windows, in suite order, into ``N``
contiguous runs of about equal cost, the cost of a window being the tokens of the contexts first
computed there.  The plan is a pure function of the suite, the tokenizer and the settings (block
size, window size): every worker computes the same plan without talking to the others, a killed
worker's shard is resumed by re-running the same command, and the plan is recorded in the store
(:class:`emb.store.ShardRecord`, through :meth:`emb.store.SuiteWriter.record_shards`) so that
``emb info`` and ``emb validate`` can show each shard's progress.

Shards are numbered from 1: ``--shard 1/4`` … ``--shard 4/4`` (a SLURM array ``--array=0-3``
passes ``--shard $((SLURM_ARRAY_TASK_ID + 1))/$SLURM_ARRAY_TASK_COUNT``).

Copies across shards.  An item whose (context, span) was first computed in an earlier window
copies that row (bitwise what a single process does).  When that window belongs to another shard
that has not written it yet, the block is written with the row left at zero and the marker
``COPIES_PENDING``; whoever finds every window computed fills those rows in (reading the
stored rows: the same bytes a single process copies) and marks the block done.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from emb.errors import EmbError
from emb.extraction._plan import Key, Plan
from emb.store import COPIES_PENDING, DONE, ShardRecord

if TYPE_CHECKING:  # pragma: no cover
    from emb.store import SuiteWriter

__all__ = [
    "Shard",
    "available_rows",
    "check_count",
    "cross_window_rows",
    "parse_shard",
    "partition",
    "settle",
    "shard_record",
    "shard_windows",
    "window_blocks_of",
    "window_costs",
]

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$", re.ASCII)  # ASCII digits: not "１/４"
#: More shards than this is surely a typo (a SLURM array of 10,000 tasks is not).
MAX_SHARDS = 100_000


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def label(self) -> str:
        """The shard in file names: ``shard-2-of-8``."""
        return f"shard-{self.index}-of-{self.count}"


def parse_shard(spec: str | Shard | Sequence[int]) -> Shard:
    """The parser of ``--shard`` (:data:`emb.extraction.options.SHARD`, whose validator gives the
    one message): ``"I/N"`` (1 <= I <= N <= :data:`MAX_SHARDS`, ASCII digits), a ``Shard``, or an
    ``(I, N)`` pair.

    Raises
    ------
    ValueError, TypeError
        Anything else.
    """
    if isinstance(spec, Shard):
        index, count = spec.index, spec.count
    elif isinstance(spec, str):
        match = _SPEC.match(spec)
        if match is None:
            raise ValueError(spec)
        index, count = int(match.group(1)), int(match.group(2))
    else:
        index, count = (int(v) for v in spec)  # TypeError, ValueError: not a pair of integers
    if not 1 <= count <= MAX_SHARDS or not 1 <= index <= count:
        raise ValueError(spec)
    return Shard(index, count)


def check_count(
    shard: Shard, *, name: str, n_items: int, block_size: int, window_blocks: int,
    recorded: int | None = None,
) -> None:
    """Refuse ``shard`` when its N exceeds the suite's compute windows (before anything is
    written; ``recorded``: the N of the suite's shard record, which alone rules once it exists).

    Why this bound: a shard is a run of whole windows, so with N above the number of windows at
    least N - windows shards have nothing to do, their workers load the model for nothing, and
    the record (and ``emb info``) carries them all.  ``--shard 1/100000`` on a one-block suite
    meant 99,999 empty shards.  Parsing bounds N by ``MAX_SHARDS`` already; this bound depends on
    the suite (its items, block size and ``window_blocks``), the same for every worker.

    Raises
    ------
    EmbError
        More shards than windows, naming the most that have work and what to do.
    """
    if recorded is not None:
        return
    n_blocks = -(-max(0, n_items) // max(1, block_size))
    windows = max(1, -(-n_blocks // max(1, window_blocks)))
    if shard.count > windows:
        raise EmbError(
            f"--shard {shard} asks for {shard.count} shards, but suite {name!r} has "
            f"{windows} compute window{'s' if windows != 1 else ''} ({n_items} items in "
            f"{n_blocks} block{'s' if n_blocks != 1 else ''} of {block_size}, {window_blocks} "
            f"blocks a window) and a shard is a run of whole windows, so at most {windows} "
            f"shard{'s' if windows != 1 else ''} can have work; use --shard I/N with N <= "
            f"{windows}, or no --shard (with suites of different sizes, a shard array per suite)"
        )


def window_blocks_of(n_blocks: int, window_blocks: int) -> list[list[int]]:
    """The blocks of each compute window, in order."""
    return [
        list(range(w, min(w + window_blocks, n_blocks))) for w in range(0, n_blocks, window_blocks)
    ]


def window_costs(
    first_item: np.ndarray, n_tokens: Sequence[int], starts: Sequence[int], n_items: int
) -> list[int]:
    """The cost of each window: tokens of the contexts first used there (fed to the model) plus
    one per item (written, or copied from an earlier row).

    ``first_item[k]`` is the first item using key ``k``, ``n_tokens[k]`` its tokens, and
    ``starts`` the first item of each window.
    """
    bounds = np.asarray([*starts, n_items], dtype=np.int64)
    window_of_key = np.searchsorted(bounds, np.asarray(first_item, dtype=np.int64), side="right") - 1
    costs = np.bincount(
        window_of_key, weights=np.asarray(n_tokens, dtype=np.float64), minlength=len(starts)
    )
    items = np.diff(bounds)
    return [int(c) + int(n) for c, n in zip(costs[: len(starts)], items, strict=True)]


def partition(costs: Sequence[int], count: int) -> list[tuple[int, int]]:
    """Cut windows ``0..len(costs)-1`` into ``count`` contiguous runs of about equal cost.

    Run ``i`` (0-based) is ``[cut[i], cut[i+1])`` where ``cut[i]`` is the window boundary whose
    cumulative cost is nearest to ``i/count`` of the total (the lower one on a tie; integer
    arithmetic: every worker cuts the same).  So no run costs more than its share plus one
    window, and two windows of nearly equal cost go to two shards.  Runs are empty only when
    there are fewer windows than shards.
    """
    if count < 1:
        raise EmbError(f"a shard count must be >= 1; got {count}")
    scaled = np.concatenate([[0], np.cumsum(np.asarray(costs, dtype=np.int64))]) * count
    total = int(scaled[-1]) // count
    cuts = [0]
    for i in range(1, count):
        target = total * i  # in units of cost / count
        j = int(np.searchsorted(scaled, target, side="left"))  # first boundary at or past it
        if j > 0 and (j == len(scaled) or target - int(scaled[j - 1]) <= int(scaled[j]) - target):
            j -= 1  # the boundary before it is as near or nearer
        cuts.append(min(max(j, cuts[-1]), len(costs)))
    cuts.append(len(costs))
    return [(cuts[i], cuts[i + 1]) for i in range(count)]


# -- coordination ------------------------------------------------------------------------------------
def shard_record(
    plan: Plan,
    ranges: Sequence[tuple[int, int]],
    windows: Sequence[Sequence[int]],
    count: int,
    window_blocks: int,
    reuse_from: Sequence[str],
) -> ShardRecord:
    """The shard plan of a suite: windows cut by :func:`partition` of :func:`window_costs`."""
    starts = [ranges[blocks[0]][0] for blocks in windows]
    n_tokens = [len(enc.input_ids) for enc in plan.encodings]
    cuts = partition(window_costs(plan.first_item, n_tokens, starts, len(plan.item_key)), count)
    # block boundaries of each run: window a's first block (or the end, past the last window)
    first_block = [blocks[0] for blocks in windows] + [len(ranges)]
    blocks = tuple((first_block[a], first_block[b]) for a, b in cuts)
    return ShardRecord(
        count=count, window_blocks=window_blocks, windows=tuple(cuts), blocks=blocks,
        reuse_from=tuple(reuse_from),
    )


def shard_windows(record: ShardRecord, index: int) -> Sequence[int]:
    """The windows of shard ``index`` (1-based)."""
    first, stop = record.windows[index - 1]
    return range(first, stop)


def available_rows(
    writer: SuiteWriter,
    rows: Sequence[tuple[int, int]],
    *,
    computing: set[int],
    sharded: bool,
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Split (position, earlier row) pairs into those whose row is written (in a block this run
    wrote, or marked written) and those still waiting for another shard."""
    if not sharded:
        return list(rows), []
    size = writer.block_size
    others = sorted({r // size for _, r in rows} - computing)
    written = set(computing)
    if others:
        marks = writer.markers(others)
        written.update(b for b, m in zip(others, marks.tolist(), strict=True) if m in (DONE, COPIES_PENDING))
    ready = [(p, r) for p, r in rows if r // size in written]
    waiting = [(p, r) for p, r in rows if r // size not in written]
    return ready, waiting


def cross_window_rows(
    plan: Plan, reuse: Mapping[Key, Any], block: int, block_size: int, window_blocks: int
) -> list[tuple[int, int]]:
    """(position in block, earlier row) of the items of ``block`` that copy a row of an earlier
    window (the rows a shard may have left pending)."""
    n = len(plan.item_key)
    start, stop = block * block_size, min(n, (block + 1) * block_size)
    window_start = (block // window_blocks) * window_blocks * block_size
    out = []
    for i in range(start, stop):
        k = int(plan.item_key[i])
        first = int(plan.first_item[k])
        if first < window_start and plan.keys[k] not in reuse:
            out.append((i - start, first))
    return out


def settle(writer: SuiteWriter, plan: Plan, reuse: Mapping[Key, Any], window_blocks: int) -> bool:
    """After a shard's own windows: fill in every pending copy whose rows are written (any
    shard's: the result is what a single process copies), and, when every block is done, write
    the manifest and mark the suite complete.  True when the suite is complete.

    Two workers settling at once write the same bytes.  A worker reads the markers after its own
    last write, so the last worker to write sees every block written and finishes the suite.
    """
    size = writer.block_size
    markers = writer.markers()
    wrote = False
    for block in np.flatnonzero(markers == COPIES_PENDING).tolist():
        rows = cross_window_rows(plan, reuse, block, size, window_blocks)
        if any(markers[r // size] == 0 for _, r in rows):
            continue  # its rows are in a window no shard has written yet
        values = writer.read_block(block)
        if rows:
            pos, sources = zip(*rows, strict=True)
            values[list(pos)] = writer.read_rows(sources)
        writer.write_block(block, values, marker=DONE)
        wrote = True
    # read again only after a write of this loop: markers read after this worker's last write
    # are what the rule above needs, and when the loop wrote nothing the first read was that
    if wrote:
        markers = writer.markers()
    if not (markers == DONE).all():
        return False
    writer.finish(markers=markers)
    return True
