"""Fault injection for the child processes of tests/faults (put on their PYTHONPATH, Python imports
this module at start-up; without the variables below it does nothing).

``EMB_FAULT_KILL_AT_OP=N``: the process SIGKILLs itself just before its N-th change to the file
system (a file created, a rename, a link, a removal, a directory made or removed), so that a test
can kill a writer before each of its steps in turn (N = 1, 2, … until it finishes) without timing
races and without a hook in emb's code.
``EMB_FAULT_KILL_UNDER=DIR``: count only the changes to paths under DIR (a store's own steps,
not those of loading a model or of the estimate's scratch files).

``EMB_FAULT_DISK_FREE=N``: the disk is full after N bytes written with ``os.write`` or
``os.writev`` (emb writes its outputs, shards and small store objects so), and ``os.statvfs``
reports what is left: a full disk for machines where no small file system can be mounted.
``EMB_FAULT_DISK_UNDER=DIR``: only the writes into files under DIR count and fail.
"""

import errno
import os
import signal

_KILL_AT = os.environ.get("EMB_FAULT_KILL_AT_OP", "")
_KILL_UNDER = os.environ.get("EMB_FAULT_KILL_UNDER", "")
_DISK_FREE = os.environ.get("EMB_FAULT_DISK_FREE", "")
_DISK_UNDER = os.environ.get("EMB_FAULT_DISK_UNDER", "")


def _arm_kill(at: int, under: str = "") -> list[int]:
    """Kill this process before its ``at``-th change to the file system (``under``: counting
    only changes to paths under that directory; 0: never); the count so far, as a one-item list."""
    count = [0]
    real_open = os.open
    inside = os.path.realpath(under) + os.sep if under else ""

    def step(path, dir_fd) -> None:
        if inside:
            path = os.fsdecode(path)
            if dir_fd is not None:  # shutil.rmtree's calls: a name relative to an open directory
                path = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
            if not os.path.realpath(path).startswith(inside):
                return
        count[0] += 1
        if count[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)

    def wrap(name: str) -> None:
        real = getattr(os, name)

        def changed(*args, **kwargs):
            step(args[0], kwargs.get("dir_fd", kwargs.get("src_dir_fd")))
            return real(*args, **kwargs)

        setattr(os, name, changed)

    for name in ("rename", "replace", "link", "unlink", "remove", "mkdir", "rmdir"):
        wrap(name)

    def opened(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            step(path, kwargs.get("dir_fd"))
        return real_open(path, flags, *args, **kwargs)

    os.open = opened
    return count


def _arm_disk(free: int, under: str = "") -> list[int]:
    """Fill the disk after ``free`` bytes (``under``: counting and refusing only the writes into
    files under that directory, a store on a disk of its own); the bytes written, as a list."""
    written = [0]
    real_write, real_statvfs = os.write, os.statvfs
    inside = os.path.realpath(under) + os.sep if under else ""

    def counted(fd) -> bool:
        if not inside:
            return True
        try:
            return os.readlink(f"/proc/self/fd/{fd}").startswith(inside)
        except OSError:
            return False

    def write(fd, data):
        if fd > 2 and counted(fd):  # not the standard streams
            left = free - written[0]
            if left <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            data = memoryview(data)[:left]
            n = real_write(fd, data)
            written[0] += n
            return n
        return real_write(fd, data)

    real_writev = os.writev

    def writev(fd, buffers):  # emb's shards and small objects (emb.store._nodes.write_parts)
        if not counted(fd):
            return real_writev(fd, buffers)
        left = free - written[0]
        if left <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        views, room = [], left
        for buffer in buffers:
            view = memoryview(buffer).cast("B")[:room]
            views.append(view)
            room -= len(view)
            if room <= 0:
                break
        n = real_writev(fd, views)
        written[0] += n
        return n

    def statvfs(path):
        real = real_statvfs(path)
        blocks = max(0, free - written[0]) // real.f_frsize
        return os.statvfs_result((real.f_bsize, real.f_frsize, real.f_blocks, blocks, blocks,
                                  real.f_files, real.f_ffree, real.f_favail, real.f_flag,
                                  real.f_namemax))

    os.write, os.writev, os.statvfs = write, writev, statvfs
    return written


if _KILL_AT.isdigit():
    _arm_kill(int(_KILL_AT), _KILL_UNDER)
if _DISK_FREE.isdigit():
    _arm_disk(int(_DISK_FREE), _DISK_UNDER)
