"""One writer at a time: advisory lock files (generic; below the store and the outputs).

A store's writer holds the lock files :mod:`emb.store.lock` names (one per suite, one for the
root); every other output claims its target with one beside it (:func:`emb.files.outputs.claim`).  A lock is an exclusive ``flock`` (``msvcrt.locking`` on Windows) on the
file, which names its holder (host, pid, start time, command) for the error a second writer gets.

The operating system releases the lock when its process ends, however it ends (SIGKILL
included): a lock file left by a dead writer is *stale* and the next writer takes it over at
once, never waiting on it.  The file is removed when its writer releases it; taking a lock
checks that the file it locked is still the one at the path, so a writer that opened the file
just before its holder removed it cannot think it holds the lock too.

Object stores (``s3://``, ``gs://`` …) have no such primitive: no lock is taken there (see the
README, "One writer at a time").
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import sys
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from emb.errors import StoreError, StoreLockedError

__all__ = ["GRACE_S", "LockHolder", "WriterLock"]

_POLL_S = 0.02
#: How long a writer waits for a lock by default: long enough for another run's probe
#: (:meth:`WriterLock.check_free`) to let go, far too short to wait on a real writer.
GRACE_S = 1.0
#: How long a refusal waits for a holder to write its name (a writer names itself right after it
#: locks; on an overloaded machine that can take a while): a refusal always names its holder.
NAME_WAIT_S = 15.0
_COMMAND_CHARS = 400


@dataclass(frozen=True, kw_only=True)
class LockHolder:
    """Who holds (or held) a lock, as written in its file."""

    host: str
    pid: int
    started: str
    command: str
    purpose: str

    @classmethod
    def me(cls, purpose: str) -> LockHolder:
        command = " ".join(shlex.quote(arg) for arg in sys.argv) or sys.executable
        if len(command) > _COMMAND_CHARS:
            command = command[: _COMMAND_CHARS - 1] + "…"
        return cls(
            host=socket.gethostname(),
            pid=os.getpid(),
            started=datetime.now(UTC).isoformat(timespec="seconds"),
            command=command,
            purpose=purpose,
        )

    @classmethod
    def parse(cls, text: str) -> LockHolder | None:
        try:
            data = json.loads(text)
            return cls(
                host=str(data["host"]), pid=int(data["pid"]), started=str(data["started"]),
                command=str(data["command"]), purpose=str(data.get("purpose", "")),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def describe(self) -> str:
        return (
            f"pid {self.pid} on host {self.host}, since {self.started}, running "
            f"{self.command!r}"
        )


class WriterLock:
    """A held lock; :meth:`release` (or leaving the ``with`` block) gives it back.

    Attributes
    ----------
    path : Path
        The lock file.
    stale : LockHolder or None
        The holder named in the file when it was taken over: a writer that died holding it.
    """

    def __init__(self, path: Path, fd: int, stale: LockHolder | None) -> None:
        self.path = path
        self._fd: int | None = fd
        self.stale = stale

    def __repr__(self) -> str:
        return f"<WriterLock {self.path} {'held' if self._fd is not None else 'released'}>"

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Remove the lock file and unlock (idempotent)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            self.path.unlink()  # while still locked: nobody can take a file being removed
        os.close(fd)  # unlocks

    def __enter__(self) -> WriterLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:  # a writer dropped without release: let others in
        with contextlib.suppress(Exception):
            self.release()

    @staticmethod
    def check_free(path: Path, *, what: str) -> None:
        """Refuse now if a live process holds the lock at ``path`` (taking nothing).

        Lets a run refuse before it spends minutes loading a model.  The probe holds the lock
        for a moment when it is free, so :meth:`acquire` callers wait :data:`GRACE_S` for it,
        and a probe that meets an unnamed holder (another probe) waits for it the same way.
        """
        start = time.monotonic()
        while True:
            try:
                fd = os.open(path, os.O_RDWR)
            except OSError:
                return  # no lock file: nobody holds it (or nothing we may open: acquire will say)
            try:
                if _try_lock(fd):
                    return  # stale or free; closing the descriptor releases the probe
                holder = _read_holder(fd)
            except OSError:
                return  # no locks on this file system: acquire says so
            finally:
                os.close(fd)
            if _give_up(start, GRACE_S, holder):
                raise StoreLockedError(_busy_message(what, holder, path))
            time.sleep(_POLL_S)

    @classmethod
    def acquire(cls, path: Path, *, what: str, purpose: str, wait_s: float = GRACE_S) -> WriterLock:
        """Take the lock at ``path``, waiting up to ``wait_s`` seconds for its holder.

        Raises
        ------
        StoreLockedError
            A live process holds it (named in the message) after ``wait_s``.
        StoreError
            The lock file cannot be created (read-only store) or the file system has no locks.
        """
        me = LockHolder.me(purpose)
        start = time.monotonic()
        while True:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as err:
                raise StoreError(
                    f"cannot create the writer lock {path}: {err.strerror or err}; the store "
                    "must be on a writable local file system"
                ) from err
            try:
                locked = _try_lock(fd)
            except OSError as err:
                os.close(fd)
                raise StoreError(
                    f"the file system of {path} does not support file locks ({err.strerror or err}); "
                    "write the store on a local disk"
                ) from err
            if not locked:
                holder = _read_holder(fd)
                os.close(fd)
                if not _give_up(start, wait_s, holder):
                    time.sleep(_POLL_S)
                    continue
                raise StoreLockedError(_busy_message(what, holder, path))
            if not _same_file(fd, path):  # its holder removed it after we opened it: retry
                os.close(fd)
                continue
            previous = _read_holder(fd, tries=1)  # a dead writer's name, if any
            try:
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)
                os.write(fd, json.dumps(asdict(me)).encode("utf-8"))
            except OSError as err:  # a full disk: leave no empty lock file behind
                with contextlib.suppress(OSError):
                    path.unlink()  # while still locked, as release() does
                os.close(fd)
                raise StoreError(f"cannot write the writer lock {path}: {err.strerror or err}") from err
            return cls(path, fd, previous)


def _busy_message(what: str, holder: LockHolder | None, path: Path) -> str:
    who = holder.describe() if holder else "a process that has not written its name yet"
    return (
        f"{what} is being written by another emb process: {who}. Two writers would break "
        "it: wait for that run to end, then re-run this command (it resumes or finds the suite "
        "complete). A writer that was killed releases its lock by itself; only if that host is "
        f"gone for good, delete {path}"
    )


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _give_up(start: float, wait_s: float, holder: LockHolder | None) -> bool:
    """Whether to refuse now: after ``wait_s`` when the holder is named; an unnamed one is a
    probe about to let go, or a writer about to write its name: wait up to NAME_WAIT_S."""
    waited = time.monotonic() - start
    return waited >= max(0.0, wait_s) and (holder is not None or waited >= NAME_WAIT_S)


def _read_holder(fd: int, *, tries: int = 10) -> LockHolder | None:
    for attempt in range(tries):  # a holder writes its name right after locking: give it a moment
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            text = os.read(fd, 8192).decode("utf-8", errors="replace")
        except OSError:
            return None
        holder = LockHolder.parse(text)
        if holder is not None:
            return holder
        if attempt + 1 < tries:  # no pause after the last look (tries=1: a lock just taken,
            time.sleep(0.005)  # whose empty file would cost every acquire 5 ms for nothing)
    return None


def _try_lock(fd: int) -> bool:
    """Take an exclusive lock without blocking; False when another open file holds it."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
