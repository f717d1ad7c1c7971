"""Cooperating shard writers of one suite: the shard record, layout guard, progress, locks.

``emb extract --shard I/N`` runs N workers on one suite (see :mod:`emb.extraction.shards` for the
plan).  What they share in the store, and how they stay out of each other's way:

- **The layout** (coordinates, empty ``embedding``, done-markers) is written once, by the first
  worker to get there.  On a local store under the suite's lock (:mod:`emb.store.lock`, held only
  for the layout); on object storage under a *layout claim*, the object
  ``<store>/.emb-lock.<suite>.layout`` created with a conditional write (``If-None-Match: *``,
  which AWS S3, MinIO and moto honour: exactly one creator wins) and deleted once the layout is
  whole.  The others wait for the group's ``skeleton_written`` attribute, then resume it.
- **The shard record** ``<suite>/_progress/shards.json`` (the shard count, each shard's windows
  and blocks, and the finished suites whose rows are reused), created once the same way; a worker
  started with another shard count is refused.
- **Blocks**: each worker writes only the blocks of its own windows (one object per shard of the
  zarr array, then its one-byte marker): no two workers write the same object, except when one
  shard is run twice at once, and then both write the same bytes.
- **Markers**: ``DONE`` (1); ``COPIES_PENDING`` (2): written, but rows copied from another
  shard's window are still zero; 0: not written.  Readers count only ``DONE``.
- **Digests**: after each shard and before its marker, a worker records the shard's size and
  CRC-32 (the manifest's) in ``<suite>/_progress/digest.<block>.json``, so that the worker that
  finishes lists every block in the manifest without reading the others' shards back; the
  records are deleted once the suite is complete (a record that is missing or does not parse:
  that shard is read back and hashed).
- **Encodings**: the worker that lays the suite out tokenises it whole (for the coordinates); it
  keeps the encodings of each other shard's contexts in ``<suite>/_progress/tokens.<label>.npz``
  (:func:`record_tokens`), which that shard's worker reads instead of tokenising again; deleted
  once the suite is complete.  A worker that finds none (it started before they were written)
  or cannot read them tokenises its contexts itself: the same encodings.
- **Finishing**: a worker that finds every block written fills in the pending copies, writes the
  manifest and marks the suite complete.  Every step writes what any other worker would write,
  so two workers finishing at once agree.
- **Locks** (local stores): a shard writer holds ``.emb-lock.<suite>.shard-I-of-N``; a writer of
  the whole suite (no ``--shard``) holds ``.emb-lock.<suite>`` and refuses while a shard lock is
  held.  Object storage has no locks; see the README ("One writer at a time").
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import zarr.storage

from emb.errors import EmbWarning, RemoteStoreError, StoreError, StoreLockedError
from emb.schemas import datamodel as dm
from emb.store._location import is_url, local_path
from emb.store._nodes import (
    BadMetadata,
    local_root,
    named_children,
    put_object,
    read_bytes,
    read_json,
    read_many,
)
from emb.store._remote import RemoteStore
from emb.store._zarr import as_buffer, chunk_key, only_bytes_codec, prototype
from emb.store._zarr import sync as zarr_sync
from emb.store.lock import WriterLock, lock_path, locked

__all__ = [
    "COPIES_PENDING",
    "DONE",
    "LAYOUT_WAIT_S",
    "ShardProgress",
    "ShardRecord",
    "check_no_shard_writers",
    "create_once",
    "describe_shards",
    "drop_tokens",
    "layout_claim",
    "other_shard_count",
    "read_markers",
    "read_record",
    "record_shards",
    "record_tokens",
    "recorded_tokens",
    "shard_lock_path",
    "shard_layout_guard",
    "shard_progress",
    "write_marker",
    "writer_lock",
]

DONE = 1
COPIES_PENDING = 2
RECORD_KEY = f"{dm.PROGRESS_GROUP}/shards.json"
#: How long a worker waits for another worker's layout (a 4-million-item CEAT layout writes its
#: coordinates in about a minute) before it refuses, naming the claim.
LAYOUT_WAIT_S = 900.0
_POLL_S = 0.2


@dataclass(frozen=True, kw_only=True)
class ShardRecord:
    """The plan the shard workers of a suite share (``<suite>/_progress/shards.json``)."""

    count: int
    window_blocks: int
    windows: tuple[tuple[int, int], ...]  # per shard: [first window, stop window)
    blocks: tuple[tuple[int, int], ...]  # per shard: [first block, stop block)
    reuse_from: tuple[str, ...] = ()  # finished suites whose rows are copied
    created_by: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "version": 1,
                "count": self.count,
                "window_blocks": self.window_blocks,
                "windows": [list(w) for w in self.windows],
                "blocks": [list(b) for b in self.blocks],
                "reuse_from": list(self.reuse_from),
                "created_by": self.created_by,
            },
            separators=(",", ":"),
        ).encode("utf-8")

    @classmethod
    def from_json(cls, raw: bytes) -> ShardRecord:
        data = json.loads(raw.decode("utf-8"))
        return cls(
            count=int(data["count"]),
            window_blocks=int(data["window_blocks"]),
            windows=tuple((int(a), int(b)) for a, b in data["windows"]),
            blocks=tuple((int(a), int(b)) for a, b in data["blocks"]),
            reuse_from=tuple(str(n) for n in data.get("reuse_from", ())),
            created_by=dict(data.get("created_by") or {}),
        )


@dataclass(frozen=True, kw_only=True)
class ShardProgress:
    """One shard's blocks: done, written with copies pending, total."""

    index: int
    count: int
    blocks_done: int
    blocks_pending_copies: int
    blocks_total: int

    @property
    def complete(self) -> bool:
        return self.blocks_done == self.blocks_total

    def describe(self) -> str:
        state = "done" if self.complete else f"{self.blocks_done}/{self.blocks_total} blocks"
        if self.blocks_pending_copies:
            state += f" (+{self.blocks_pending_copies} waiting for rows of other shards)"
        return f"shard {self.index}/{self.count}: {state}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "shard": f"{self.index}/{self.count}", "blocks_done": self.blocks_done,
            "blocks_pending_copies": self.blocks_pending_copies, "blocks_total": self.blocks_total,
        }


def _me() -> dict[str, Any]:
    return {
        "host": socket.gethostname(), "pid": os.getpid(),
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "token": uuid.uuid4().hex,  # this claim's own: see create_once
    }


# -- create once ----------------------------------------------------------------------------------
def create_once(zstore: Any, key: str, data: bytes) -> bool:
    """Create object ``key`` holding ``data`` unless it exists; True when this call created it.

    Atomic where the backend allows it: a hard link of a complete temporary file on local disks
    (``link`` fails when the name exists), a conditional PUT (``If-None-Match: *``) through
    fsspec's ``mode="create"`` on S3 (s3fs) and fsspec's memory file system.  On a backend that
    has neither, an existence check then a write (two writers starting in the same instant can
    both "create"; see the README).

    ``data`` must be this caller's own (it carries :func:`_me`'s token): a conditional PUT whose
    answer was lost is sent again (``EMB_RETRIES``) and then finds the object it created itself;
    an object holding exactly ``data`` therefore counts as created by this call.

    Raises
    ------
    RemoteStoreError
        The server of a remote store cannot be reached or does not answer in time.
    """
    if isinstance(zstore, zarr.storage.LocalStore):
        path = Path(zstore.root) / key
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")
        tmp.write_bytes(data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)
        return True
    fs = getattr(zstore, "fs", None)
    if fs is not None:
        path = f"{zstore.path.rstrip('/')}/{key}"
        failures = (zstore.failures("write", key, (FileExistsError, TypeError, NotImplementedError))
                    if isinstance(zstore, RemoteStore) else contextlib.nullcontext())
        try:
            with failures:
                if isinstance(zstore, RemoteStore):
                    zarr_sync(zstore.bounded_write(fs._pipe_file(path, data, mode="create"),
                                                   len(data)))
                elif getattr(fs, "async_impl", False):
                    zarr_sync(fs._pipe_file(path, data, mode="create"))
                else:
                    fs.pipe_file(path, data, mode="create")
        except FileExistsError:
            return read_bytes(zstore, key) == data  # our own create, sent twice
        except (TypeError, NotImplementedError):
            pass  # a backend without mode="create": check, then write
        else:
            return True
    if read_bytes(zstore, key) is not None:
        return False
    zarr_sync(zstore.set(key, as_buffer(data)))
    return True


def _delete(zstore: Any, key: str) -> None:
    with contextlib.suppress(OSError, FileNotFoundError):
        zarr_sync(zstore.delete(key))


# -- the blocks' digests ----------------------------------------------------------------------------
def _digest_key(name: str, block: int) -> str:
    return f"{name}/{dm.PROGRESS_GROUP}/digest.{int(block)}.json"


def record_digest(zstore: Any, name: str, block: int, key: str, size: int, crc32: str) -> None:
    """Record the (size, CRC-32) of block ``block``'s shard, object ``key`` relative to the
    suite (written after the shard, before its marker)."""
    data = json.dumps({"key": key, "size": int(size), "crc32": str(crc32)}).encode()
    put_object(zstore, _digest_key(name, block), data)


def recorded_digests(zstore: Any, name: str, blocks: Sequence[int]) -> dict[str, tuple[int, str]]:
    """The recorded digests of ``blocks`` (relative key -> (size, CRC-32)); a record that is
    missing or does not parse is left out (its shard is then read back)."""
    out: dict[str, tuple[int, str]] = {}
    for raw in read_many(zstore, [_digest_key(name, block) for block in blocks]):
        try:
            doc = json.loads(raw) if isinstance(raw, bytes) else None
            if isinstance(doc, dict):
                out[str(doc["key"])] = (int(doc["size"]), str(doc["crc32"]))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def drop_digests(zstore: Any, name: str, blocks: Sequence[int]) -> None:
    """Delete the digest records of ``blocks`` (once the manifest lists them)."""
    async def every() -> None:
        import asyncio

        gate = asyncio.Semaphore(32)

        async def one(block: int) -> None:
            async with gate:
                with contextlib.suppress(OSError, FileNotFoundError, KeyError):
                    await zstore.delete(_digest_key(name, block))

        await asyncio.gather(*(one(b) for b in blocks))

    zarr_sync(every())


# -- the encodings the first worker made for the others ---------------------------------------------
#: ``<suite>/_progress/tokens.<shard label>.npz``: the encodings of a shard's windows.
TOKENS_PREFIX = "tokens."
TOKENS_SUFFIX = ".npz"


def _tokens_key(name: str, label: str) -> str:
    return f"{name}/{dm.PROGRESS_GROUP}/{TOKENS_PREFIX}{label}{TOKENS_SUFFIX}"


def record_tokens(zstore: Any, name: str, label: str, data: bytes) -> None:
    """Keep the encodings of shard ``label``'s contexts (``data``, made by the worker that laid
    the suite out and tokenised it whole) so that worker does not tokenise them again."""
    put_object(zstore, _tokens_key(name, label), data)


def recorded_tokens(zstore: Any, name: str, label: str) -> bytes | None:
    """The bytes :func:`record_tokens` kept for shard ``label``; None when there are none or
    they cannot be read (the worker then tokenises its contexts itself)."""
    try:
        return read_bytes(zstore, _tokens_key(name, label))
    except (OSError, StoreError, ValueError):
        return None


def drop_tokens(zstore: Any, name: str) -> None:
    """Delete every shard's kept encodings (once the suite is complete)."""
    group = f"{name}/{dm.PROGRESS_GROUP}"
    # a backend that cannot list (HTTP) is never written to
    for entry in named_children(zstore, group, starts=TOKENS_PREFIX, ends=TOKENS_SUFFIX):
        with contextlib.suppress(OSError, FileNotFoundError, KeyError):
            zarr_sync(zstore.delete(f"{group}/{entry}"))


# -- the shard record -------------------------------------------------------------------------------
def read_record(zstore: Any, name: str) -> ShardRecord | None:
    """The suite's shard record, or None (never sharded, or a record that does not parse)."""
    raw = read_bytes(zstore, f"{name}/{RECORD_KEY}")
    if raw is None:
        return None
    try:
        return ShardRecord.from_json(raw)
    except (ValueError, KeyError, TypeError):
        return None


def other_shard_count(name: str, location: str, *, recorded: int, asked: int) -> Exception:
    """The refusal of a worker whose shard count is not the one suite ``name`` is being
    extracted in (raised when it claims its shard, and before, by the dry run's check)."""
    from emb.errors import StoreMismatchError

    return StoreMismatchError(
        f"suite {name!r} in {location} is being extracted in {recorded} shards, this run asks "
        f"for {asked}: give --shard I/{recorded} (or run without --shard to finish every shard "
        "in one process)"
    )


def record_shards(zstore: Any, location: str, name: str, record: ShardRecord) -> ShardRecord:
    """Create the suite's shard record, or check this worker's plan against the one there.

    Raises
    ------
    StoreMismatchError
        The suite is being extracted with another shard count (or, impossibly for the same
        suite and settings, another plan).
    """
    from emb.errors import StoreMismatchError

    stamped = ShardRecord(
        count=record.count, window_blocks=record.window_blocks, windows=record.windows,
        blocks=record.blocks, reuse_from=record.reuse_from, created_by=_me(),
    )
    if create_once(zstore, f"{name}/{RECORD_KEY}", stamped.to_json()):
        return stamped
    found = read_record(zstore, name)
    if found is None:
        raise StoreError(
            f"the shard record of suite {name!r} in {location} ({name}/{RECORD_KEY}) cannot be "
            "read; re-extract the suite with --overwrite (without --shard)"
        )
    if found.count != record.count:
        raise other_shard_count(name, location, recorded=found.count, asked=record.count)
    if found != record:
        raise StoreMismatchError(
            f"suite {name!r} in {location} was planned into other shards (windows "
            f"{list(found.windows)[:4]}…, reusing {list(found.reuse_from)}); this run plans "
            f"{list(record.windows)[:4]}…, reusing {list(record.reuse_from)}: the store changed "
            "under the workers; re-extract the suite with --overwrite"
        )
    return found


def read_markers(done: Any) -> np.ndarray:
    """The raw done-markers (0, ``DONE``, ``COPIES_PENDING``); one that cannot be decoded is 0."""
    if _plain_bytes(done):
        return _read_plain_markers(done)
    try:
        return np.asarray(done[:], dtype=np.uint8)
    except RemoteStoreError:  # the server, not the markers
        raise
    except Exception:  # noqa: BLE001 - a torn marker write: one block at a time
        out = np.zeros(done.shape[0], dtype=np.uint8)
        for i in range(done.shape[0]):
            try:
                out[i] = int(done[i])
            except RemoteStoreError:
                raise
            except Exception:  # noqa: BLE001 - a torn marker reads as not written
                continue
        return out


def _plain_bytes(done: Any) -> bool:
    """Whether ``done`` is laid out as emb lays out the markers: uint8, one value a chunk, no
    codec but the bytes codec (each chunk object is that one byte)."""
    try:
        return (
            only_bytes_codec(done) and done.dtype == np.uint8 and done.ndim == 1
            and tuple(done.chunks) == (1,)
        )
    except (AttributeError, TypeError, ValueError):
        return False


def _read_plain_markers(done: Any) -> np.ndarray:
    """:func:`read_markers` of plain one-byte chunks, read all at once as bytes (what zarr's
    codec pipeline gives for them, without its per-chunk cost: 5-10 ms a read of the 20k suite's
    markers, three reads a shard worker; a local store's files are read here, see
    :func:`~emb.store._nodes.local_root`): a chunk that is missing is the fill value, one that
    is not one byte (a torn write) or cannot be read is 0."""
    zstore, prefix = done.store_path.store, done.store_path.path
    fill = int(done.fill_value)
    keys = [f"{prefix}/{chunk_key(done, (i,))}" for i in range(done.shape[0])]

    def value(raw: bytes | None) -> int:
        if raw is None:
            return fill
        return raw[0] if len(raw) == 1 else 0

    root = local_root(zstore)
    if root is not None:
        def read(key: str) -> int:
            try:
                return value((root / key).read_bytes())
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                return fill
            except OSError:  # a marker that cannot be read reads as not written
                return 0

        return np.array([read(k) for k in keys], dtype=np.uint8)

    async def one(key: str, gate: Any) -> int:
        async with gate:
            try:
                buffer = await zstore.get(key, prototype=prototype())
            except RemoteStoreError:  # the server, not the markers
                raise
            except Exception:  # noqa: BLE001 - a marker that cannot be read reads as not written
                return 0
        return value(None if buffer is None else buffer.to_bytes())

    async def every() -> list[int]:
        import asyncio

        gate = asyncio.Semaphore(64)
        return list(await asyncio.gather(*(one(k, gate) for k in keys)))

    return np.array(zarr_sync(every()) if keys else [], dtype=np.uint8)


def write_marker(done: Any, index: int, marker: int) -> None:
    """Set block ``index``'s done-marker: as zarr writes it (one chunk object); a local store's
    plain one-byte chunk is written here as its ``LocalStore`` writes it (see
    :func:`~emb.store._nodes.local_root`).  A marker equal to the fill value (0: not written)
    goes through zarr, which deletes the chunk rather than write it."""
    zstore = done.store_path.store
    if (
        marker != int(done.fill_value) and 0 <= marker <= 255
        and local_root(zstore) is not None and not zstore.read_only and _plain_bytes(done)
    ):
        key = f"{done.store_path.path}/{chunk_key(done, (int(index),))}"
        put_object(zstore, key, bytes([marker]))
    else:
        done[index] = marker


def shard_progress(record: ShardRecord, markers: np.ndarray) -> list[ShardProgress]:
    """Each shard's progress from the suite's raw done-markers."""
    out = []
    for i, (first, stop) in enumerate(record.blocks):
        part = np.asarray(markers[first:stop])
        out.append(
            ShardProgress(
                index=i + 1, count=record.count, blocks_done=int((part == DONE).sum()),
                blocks_pending_copies=int((part == COPIES_PENDING).sum()),
                blocks_total=int(stop - first),
            )
        )
    return out


#: Most unfinished shards named one by one in ``emb info`` and ``emb validate``.
SHOWN_SHARDS = 8


def describe_shards(
    progress: Sequence[ShardProgress], *, limit: int = SHOWN_SHARDS, done: bool = True
) -> list[str]:
    """The shards in words, one line each (``done``: finished shards too), and past ``limit``
    shards only the first ``limit`` unfinished ones, then one summary line: a suite cut into
    thousands of shards is a few lines, whatever N is."""
    pending = [s for s in progress if not s.complete]
    if len(progress) <= limit:
        return [s.describe() for s in progress if done or not s.complete]
    lines = [s.describe() for s in pending[:limit]]
    if len(pending) > limit:
        empty = sum(1 for s in pending[limit:] if s.blocks_done == 0)
        lines.append(f"… and {len(pending) - limit} more unfinished shards ({empty} of them not "
                     f"started); {len(progress) - len(pending)} of {len(progress)} shards done")
    return lines


# -- locks and the layout guard ------------------------------------------------------------------------
def shard_lock_path(location: str, name: str, label: str) -> Path | None:
    """The lock file of one shard of suite ``name`` (``label`` = ``shard-I-of-N``) of a local store."""
    if is_url(location):
        return None
    return local_path(location) / f"{dm.LOCK_PREFIX}.{name}.{label}"


def check_no_shard_writers(location: str, name: str) -> None:
    """Refuse (a whole-suite writer) while any shard writer of suite ``name`` holds its lock."""
    if is_url(location):
        return
    base = local_path(location)
    for path in sorted(base.glob(f"{dm.LOCK_PREFIX}.{name}.shard-*")):
        WriterLock.check_free(path, what=f"suite {name!r} of store {location} ({path.name})")


@contextlib.contextmanager
def layout_claim(zstore: Any, location: str, name: str, *, is_laid_out: Any) -> Iterator[bool]:
    """Guard the layout of suite ``name`` on object storage: yields True when this worker must
    write it (it holds the claim), False when another worker wrote it meanwhile.

    ``is_laid_out()`` says whether the group's layout is whole.  Waits up to
    :data:`LAYOUT_WAIT_S` for a claim held by another worker.

    Raises
    ------
    StoreLockedError
        The claim is still held after the wait (its worker may have died: the message names the
        claim object to delete).
    """
    key = f"{dm.LOCK_PREFIX}.{name}.layout"
    start = time.monotonic()
    while True:
        if is_laid_out():
            yield False
            return
        if create_once(zstore, key, json.dumps(_me()).encode("utf-8")):
            break
        if time.monotonic() - start > LAYOUT_WAIT_S:
            raw = read_bytes(zstore, key) or b"{}"
            raise StoreLockedError(
                f"the layout of suite {name!r} in {location} was claimed by another worker "
                f"({raw.decode('utf-8', 'replace')[:200]}) and is still not written after "
                f"{LAYOUT_WAIT_S:.0f} s; if that worker is dead, delete {location.rstrip('/')}/"
                f"{key} and re-run"
            )
        time.sleep(_POLL_S)
    try:
        yield not is_laid_out()  # written between our check and our claim: resume it
    finally:
        _delete(zstore, key)


def writer_lock(location: str, name: str, shard: str | None) -> WriterLock | None:
    """The lock a writer of suite ``name`` holds while it writes (None on object storage): the
    suite's lock for a whole-suite writer (refused while shard writers hold theirs), the shard's
    lock (``shard`` = ``shard-I-of-N``) for a shard writer.

    Raises
    ------
    StoreLockedError
        Another live process holds it, or (whole-suite writer) holds a shard lock of the suite.
    """
    what = f"suite {name!r} of store {location}"
    if shard is None:
        path = lock_path(location, name)
        purpose = f"write suite {name!r}"
    else:
        path = shard_lock_path(location, name, shard)
        what += f" ({shard})"
        purpose = f"write {shard} of suite {name!r}"
    if path is None:
        return None
    lock = WriterLock.acquire(path, what=what, purpose=purpose)
    try:
        if shard is None:
            check_no_shard_writers(location, name)
    except BaseException:
        lock.release()
        raise
    if lock.stale is not None:
        warnings.warn(
            f"{what}: took over the writer lock left by {lock.stale.describe()}, which is no "
            "longer running (killed or crashed); resuming what it wrote",
            EmbWarning,
            stacklevel=3,
        )
    return lock


@contextlib.contextmanager
def shard_layout_guard(zstore: Any, location: str, name: str) -> Iterator[bool]:
    """Held by a shard writer while it decides whether to write the suite's layout and writes
    it: the suite's lock on a local store (yields True), the layout claim on object storage
    (yields whether this worker holds it; see :func:`layout_claim`)."""
    if not is_url(location):
        with locked(location, name, purpose=f"lay out suite {name!r}", wait_s=LAYOUT_WAIT_S):
            yield True
        return

    def laid_out() -> bool:
        try:
            meta = read_json(zstore, f"{name}/zarr.json")
        except BadMetadata:
            return False
        return bool(((meta or {}).get("attributes") or {}).get(dm.ATTR_SKELETON))

    with layout_claim(zstore, location, name, is_laid_out=laid_out) as mine:
        yield mine
