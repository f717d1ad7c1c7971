"""Refusing, before anything opens them, paths that are not regular files (torch-free).

A FIFO with no writer blocks its reader forever (and can be read only once), a character device
such as ``/dev/zero`` never ends, a socket cannot be opened at all: emb reads a user's input file
more than once (format detection, the read, the sha256 recorded as provenance), so each reader
checks its path with :func:`check_regular_file` first and names what it found.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from emb.errors import EmbError

__all__ = ["check_regular_file", "file_kind"]


def file_kind(mode: int) -> str:
    """What an ``st_mode`` describes, for a message ("a named pipe (FIFO)", …)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_regular_file(
    path: str | os.PathLike[str], *, what: str, error: type[EmbError]
) -> None:
    """Refuse ``path`` unless it is a regular file (a symbolic link to one is fine).

    Parameters
    ----------
    path : path
        The file a reader is about to open.
    what : str
        How the message names it ("vectors file", "groups file", …).
    error : type of EmbError
        The reader's error class.

    Raises
    ------
    EmbError
        Of class ``error``: the path does not exist, cannot be examined, or is a directory, a
        FIFO, a device or a socket (saying which).
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist; give an existing file") from None
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise error(f"cannot read {what} {path}: {reason}") from None
    if not stat.S_ISREG(mode):
        raise error(
            f"{what} {Path(path)} is {file_kind(mode)}, not a regular file; emb reads an input "
            "file more than once and records its sha256: save the data to a file and give its path"
        )
