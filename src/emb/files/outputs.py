"""Where emb may write: one rule for every output path, claimed targets, owned temporaries, full disks.

Every path a command writes to (``emb analyze --out`` and its default, ``--export-tests``, ``emb
report --out`` and its ``<page>_files/`` directory, ``emb zip TARGET``, ``emb suites export FILE``,
``emb extract --store``) follows one rule:

- **Never inside a zarr store** (:func:`refuse_inside_store`): a file added to a store is packed by
  ``emb zip``, deleted by ``extract --overwrite``, and over a ``zarr.json`` it destroys the store or
  one of its suites.
- **Never over a file emb did not write.** Each writer knows its own files: a results sidecar lists
  them with their sha256, a report page and its figure directory say they were made by emb, a
  suite file reads as one; anything else in the way is refused, ``--overwrite`` or not.
- **Claimed** (:func:`claim`): one emb process writes a target at a time. The claim is a lock file
  beside the target (``.NAME.emb-lock``, :class:`emb.files.lockfile.WriterLock`: the operating system
  releases it when its process dies, SIGKILL included); a second writer is refused at once with
  the holder's name. A writer's temporaries are named ``.NAME.emb-partial-XXXXXXXX`` beside the
  target (unique, created exclusively, never a user's name): the next process that claims the
  target removes those a killed writer left (:meth:`Claim.remove_leftovers`).
- **A full disk is an ordinary error** (:func:`disk_full_message`) naming the directory, the space
  needed and the space free; a writer renders what it writes itself and writes the bytes through
  :func:`write_file` (no native library ever writes to a full disk: HDF5 crashed on one), and
  nothing half-written stays.

"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "ZARR_MARKERS",
    "Claim",
    "check_space",
    "claim",
    "disk_full_message",
    "free_space",
    "is_disk_full",
    "refuse_inside_store",
    "size_text",
    "write_file",
    "zarr_store_around",
]

#: Files that make a directory a zarr store or node (v3 and v2).
ZARR_MARKERS = ("zarr.json", ".zgroup", ".zarray", ".zattrs")



# -- the rule: never inside a store ------------------------------------------------------------------
def _absolute(path: str | os.PathLike[str]) -> Path:
    given = Path(path).expanduser()
    try:
        return given.resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte: as written
        return Path(os.path.abspath(given))


def zarr_store_around(path: str | os.PathLike[str], *, include_self: bool = True) -> Path | None:
    """The outermost zarr store that ``path`` is (``include_self``) or lies in, if any.

    A directory is a zarr store or node when it holds zarr metadata (:data:`ZARR_MARKERS`).
    """
    resolved = _absolute(path)
    candidates = (resolved, *resolved.parents) if include_self else resolved.parents
    found = None
    for directory in candidates:
        for marker in ZARR_MARKERS:
            with contextlib.suppress(OSError, ValueError):
                if (directory / marker).is_file():
                    found = directory
                    break
    return found


def refuse_inside_store(
    path: str | os.PathLike[str], *, what: str, error: type[Exception], fix: str,
    include_self: bool = True,
) -> None:
    """Refuse ``path`` when it is (``include_self``) or lies inside a zarr store.

    Parameters
    ----------
    what : str
        What would be written, for the message (``"results"``, ``"the report"``).
    error : exception class
        The caller's error (an :class:`~emb.errors.EmbError`).
    fix : str
        What to do instead (``"give an --out outside it"``).

    Raises
    ------
    error
        Naming the path and the store.
    """
    if "\0" in os.fspath(path):
        raise error(f"cannot write {what} to {os.fspath(path)!r}: a path cannot hold a NUL byte; "
                    "give another")
    store = zarr_store_around(path, include_self=include_self)
    if store is None:
        return
    where = "is the zarr store" if store == _absolute(path) else "lies inside the zarr store"
    raise error(
        f"cannot write {what} to {path}: it {where} {store}, and a file emb adds to a store is "
        "packed by 'emb zip', deleted by 'emb extract --overwrite', or (as a zarr.json) destroys "
        f"it; {fix}"
    )


# -- claims and owned temporaries --------------------------------------------------------------------
class Claim:
    """A target held by this process (see :func:`claim`); names its temporaries.

    Attributes
    ----------
    target : Path
    """

    def __init__(self, target: Path, lock: Any) -> None:
        self.target = target
        self._lock = lock

    def _prefix(self, kind: str) -> str:
        return f".{self.target.name}.emb-{kind}-"

    def temporary_name(self, kind: str = "partial") -> Path:
        """A new, unused temporary path beside the target (not created)."""
        while True:
            path = self.target.parent / (self._prefix(kind) + secrets.token_hex(4))
            if not os.path.lexists(path):
                return path

    def temporary(self, kind: str = "partial", *, directory: bool = False) -> Path:
        """Create a new temporary file (empty) or directory beside the target, for its writer
        alone; permissions as any new file of this user's (umask)."""
        while True:
            path = self.temporary_name(kind)
            try:
                if directory:
                    os.mkdir(path, 0o777)
                else:
                    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:
                continue
            return path

    def leftovers(self, kind: str = "partial") -> list[Path]:
        """The temporaries of ``kind`` beside the target: a killed writer's (we hold the claim)."""
        pattern = glob.escape(str(self.target.parent / self._prefix(kind))) + "*"
        return sorted(Path(p) for p in glob.glob(pattern, include_hidden=True))

    def remove_leftovers(self, kind: str = "partial") -> None:
        """Remove the temporaries a killed writer of the target left behind."""
        for path in self.leftovers(kind):
            remove_path(path)

    def release(self) -> None:
        """Give the target back (idempotent)."""
        self._lock.release()


def remove_path(path: Path) -> None:
    """Remove a file or a directory tree (a temporary of emb's own); nothing if it is gone."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.contextmanager
def claim(target: str | os.PathLike[str], *, what: str, error: type[Exception],
          shown: str | None = None) -> Iterator[Claim]:
    """Hold ``target`` for a ``with`` block: no other emb process writes it meanwhile.

    The lock file ``.NAME.emb-lock`` beside the target names its holder; it is removed when the
    block ends, and a killed holder's lock is taken over at once (the operating system released
    it). Nothing is removed on taking a claim: see :meth:`Claim.remove_leftovers`.

    Parameters
    ----------
    what : str
        The argument that named the target, for the messages (``"--out"``, ``"TARGET"``).
    error : exception class
        The caller's error (an :class:`~emb.errors.EmbError`).
    shown : str, optional
        The target as the messages name it (default: its path).

    Raises
    ------
    error
        Another live emb process holds the target (named in the message), or no lock can be
        created beside it (a read-only directory, a file system without locks).
    """
    from emb.errors import StoreError, StoreLockedError
    from emb.files.lockfile import LockHolder, WriterLock

    target = Path(target)
    shown = shown or str(target)
    path = target.parent / f".{target.name}.emb-lock"
    try:
        lock = WriterLock.acquire(path, what=shown, purpose=f"write {target}", wait_s=0.0)
    except StoreLockedError:
        try:
            holder = LockHolder.parse(path.read_text(encoding="utf-8"))
        except OSError:
            holder = None
        who = holder.describe() if holder is not None else "a process that has not named itself yet"
        raise error(
            f"{shown} is being written by another emb process ({who}); two writers would mix "
            f"their files: wait for it to end and run this again, or give another {what}"
        ) from None
    except StoreError as err:
        cause = err.__cause__
        if is_disk_full(cause):  # not even the lock file's one block fits
            try:
                block = os.statvfs(target.parent).f_bsize
            except (OSError, AttributeError):
                block = 4096
            raise error(disk_full_message(target.parent, block, what=shown,
                                          fix=f"give another {what}")) from None
        reason = (cause.strerror or str(cause)) if isinstance(cause, OSError) else str(err)
        raise error(
            f"cannot write {shown}: its lock {path} cannot be taken ({reason}); give a {what} "
            "in a writable directory on a local disk"
        ) from None
    held = Claim(target, lock)
    try:
        yield held
    finally:
        held.release()


# -- full disks ----------------------------------------------------------------------------------
def is_disk_full(err: BaseException) -> bool:
    """Whether ``err`` says the disk (or the user's quota) is full."""
    return isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)


def free_space(directory: str | os.PathLike[str]) -> int | None:
    """Bytes this user may still write in ``directory``'s file system (None: unknown)."""
    try:
        stats = os.statvfs(directory)
        free: int | None = stats.f_bavail * stats.f_frsize
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        free = None
    return free


def size_text(n: int | None) -> str:
    """A byte count for a message: ``40 KiB``, ``1.4 MiB``."""
    if n is None:
        return "an unknown amount"
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} bytes"  # pragma: no cover - the loop always returns


def disk_full_message(directory: str | os.PathLike[str], needed: int, *, what: str,
                      fix: str) -> str:
    """One line: the disk holding ``directory`` has no room for ``needed`` bytes of ``what``."""
    free = free_space(directory)
    return (f"cannot write {what}: the disk holding {directory} is full ({size_text(needed)} "
            f"needed, {size_text(free)} free there); free some space, or {fix}")


def check_space(directory: str | os.PathLike[str], needed: int, *, what: str,
                error: type[Exception], fix: str) -> None:
    """Refuse before writing when ``directory``'s file system has less than ``needed`` bytes
    free (nothing to refuse when the free space is unknown)."""
    free = free_space(directory)
    if free is not None and free < needed:
        raise error(disk_full_message(directory, needed, what=what, fix=fix))


def write_file(path: str | os.PathLike[str], data: bytes | bytearray | memoryview) -> None:
    """Create ``path`` (it must not exist) holding ``data``; a partial file is removed when the
    write fails (a full disk raises the :class:`OSError` with ``ENOSPC``, its ``filename`` the
    path)."""
    view = memoryview(data).cast("B")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        done = 0
        while done < len(view):
            done += os.write(fd, view[done:])
    except BaseException as err:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        if isinstance(err, OSError) and err.filename is None:
            raise OSError(err.errno, err.strerror, os.fspath(path)) from None
        raise
    os.close(fd)
