"""Fault injection for the child processes of tests/faults (put on their PYTHONPATH, Python imports
this module at start-up; without the variables below it does nothing).

``EMB_FAULT_KILL_AT_OP=N``: the process SIGKILLs itself just before its N-th change to the file
system (a file created, a rename, a link, a removal, a directory made or removed), so that a test
can kill a writer before each of its steps in turn (N = 1, 2, … until it finishes) without timing
races and without a hook in emb's code.

``EMB_FAULT_DISK_FREE=N``: the disk is full after N bytes written with ``os.write`` (emb writes
its outputs so), and ``os.statvfs`` reports what is left: a full disk for machines where no small
file system can be mounted.
"""

import errno
import os
import signal

_KILL_AT = os.environ.get("EMB_FAULT_KILL_AT_OP", "")
_DISK_FREE = os.environ.get("EMB_FAULT_DISK_FREE", "")


def _arm_kill(at: int) -> None:
    count = [0]
    real_open = os.open

    def step() -> None:
        count[0] += 1
        if count[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)

    def wrap(name: str) -> None:
        real = getattr(os, name)

        def changed(*args, **kwargs):
            step()
            return real(*args, **kwargs)

        setattr(os, name, changed)

    for name in ("rename", "replace", "link", "unlink", "remove", "mkdir", "rmdir"):
        wrap(name)

    def opened(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            step()
        return real_open(path, flags, *args, **kwargs)

    os.open = opened


def _arm_disk(free: int) -> None:
    written = [0]
    real_write, real_statvfs = os.write, os.statvfs

    def write(fd, data):
        if fd > 2:  # not the standard streams
            left = free - written[0]
            if left <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            data = memoryview(data)[:left]
            n = real_write(fd, data)
            written[0] += n
            return n
        return real_write(fd, data)

    def statvfs(path):
        real = real_statvfs(path)
        blocks = max(0, free - written[0]) // real.f_frsize
        return os.statvfs_result((real.f_bsize, real.f_frsize, real.f_blocks, blocks, blocks,
                                  real.f_files, real.f_ffree, real.f_favail, real.f_flag,
                                  real.f_namemax))

    os.write, os.statvfs = write, statvfs


if _KILL_AT.isdigit():
    _arm_kill(int(_KILL_AT))
if _DISK_FREE.isdigit():
    _arm_disk(int(_DISK_FREE))
