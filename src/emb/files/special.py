"""Input files that must be regular files: special files refused up front, with the reason.

A character device (``/dev/zero``, a terminal) may never end, a named pipe (FIFO) with no writer
blocks the reader forever, a pipe (``<(zcat FILE)``) or a socket can be read only once, and a
directory is no file at all. A reader that needs a file (to hash it, to read it twice, to hand it
to worker processes) calls :func:`check_regular_file` before it starts and opens it with
:func:`open_regular_file`, which never blocks on a FIFO swapped in meanwhile.
"""

from __future__ import annotations

import os
import stat
from os import PathLike
from typing import BinaryIO

from emb.errors import EmbError

__all__ = ["READ_TWICE", "check_regular_file", "file_kind", "open_regular_file"]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device (such as /dev/zero or a terminal), which may never end"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(path: str | PathLike[str], mode: int | None = None) -> str | None:
    """What a path is when it is not a regular file, in words; None for a regular file (or a
    symbolic link to one) and for a path that does not exist.

    ``mode``: the ``st_mode`` of the path when already known (of an open descriptor).

    Examples
    --------
    >>> file_kind("/dev/null")
    'a character device (such as /dev/zero or a terminal), which may never end'
    """
    if mode is None:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return _pipe_kind(path)
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "a special file"


def _pipe_kind(path: str | PathLike[str]) -> str:
    text = os.fspath(path)
    anonymous = text.startswith(("/dev/fd/", "/dev/std", "/proc/"))
    for _ in range(8):  # /dev/stdin -> /proc/self/fd/0 -> pipe:[1234]
        try:
            target = os.readlink(text)
        except OSError:  # not a link: a FIFO in the file system
            break
        if target.startswith("pipe:"):
            anonymous = True
            break
        text = os.path.join(os.path.dirname(text), target)
    if anonymous:
        return "a pipe (such as <(zcat FILE)), which can be read only once"
    return "a named pipe (FIFO), which waits for a writer and can be read only once"


#: the end of the message where a reader gives no reason of its own
READ_TWICE = ("emb reads an input file more than once and records its sha256: save the data to a "
              "file and give its path")


def check_regular_file(
    path: str | PathLike[str],
    *,
    what: str,
    error: type[EmbError],
    reason: str = READ_TWICE,
    must_exist: bool = False,
) -> None:
    """Refuse anything but a regular file (or a link to one).

    Parameters
    ----------
    path : path
    what : str
        The kind of input in the message ("corpus file", "vectors file").
    error : type of EmbError
        Raised with ``"{what} {path} is {kind}, not a regular file; {reason}"``.
    reason : str
        Why it must be a file and what to do instead, the end of the message.
    must_exist : bool
        Refuse a path that does not exist (or cannot be examined) too; by default that is left
        to the caller.

    Raises
    ------
    error
        The path is a directory, a device, a pipe, a FIFO or a socket (or, with ``must_exist``,
        missing or unreadable).
    """
    if must_exist:
        try:
            os.stat(path)
        except FileNotFoundError:
            raise error(f"{what} {os.fspath(path)} does not exist; give an existing file") from None
        except (OSError, ValueError) as err:
            why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            raise error(f"cannot read {what} {os.fspath(path)}: {why}") from None
    kind = file_kind(path)
    if kind is not None:
        raise error(f"{what} {os.fspath(path)} is {kind}, not a regular file; {reason}")


def open_regular_file(
    path: str | PathLike[str], *, what: str, reason: str, error: type[EmbError]
) -> BinaryIO:
    """Open a regular file for reading in binary mode, never blocking on a FIFO.

    The file is opened without waiting (``O_NONBLOCK``, so that a FIFO without a writer does not
    block the open), checked to be a regular file on the open descriptor, and handed back in
    blocking mode.

    Raises
    ------
    error
        The file cannot be opened (naming the OS' reason), or it is not a regular file
        (see :func:`check_regular_file`).
    """
    text = os.fspath(path)
    nonblocking = getattr(os, "O_NONBLOCK", 0)
    flags = os.O_RDONLY | nonblocking | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(text, flags)
    except OSError as exc:
        raise error(f"cannot read {what} {text}: {exc.strerror or exc}") from None
    try:
        kind = file_kind(text, os.fstat(fd).st_mode)
        if kind is not None:
            raise error(f"{what} {text} is {kind}, not a regular file; {reason}")
        if nonblocking:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
