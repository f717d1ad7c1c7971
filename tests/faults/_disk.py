"""Full disks and killed writers for the fault tests: a real small tmpfs where this machine allows
mounting one (root), else an injected ENOSPC; a child ``emb`` killed before its N-th change to the
file system. Both through ``tests/faults/_inject/sitecustomize.py`` put on the child's PYTHONPATH.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INJECT = Path(__file__).resolve().parent / "_inject"


def injected(**variables: str | int) -> dict[str, str]:
    """The environment of a child ``emb`` with the fault injection loaded (see _inject)."""
    path = os.pathsep.join([str(REPO / "src"), str(INJECT), os.environ.get("PYTHONPATH", "")])
    return {"PYTHONPATH": path.rstrip(os.pathsep), **{k: str(v) for k, v in variables.items()}}


@dataclass(frozen=True)
class Disk:
    """A directory on a small file system: a real tmpfs (``real``), or an ordinary directory whose
    full disk is injected (``env`` holds what the child needs)."""

    path: Path
    real: bool

    def leave_free(self, free: int) -> Mapping[str, str]:
        """Fill the disk until ``free`` bytes are left; the environment for a child ``emb``."""
        filler = self.path / "filler"
        filler.unlink(missing_ok=True)
        if not self.real:
            return injected(EMB_FAULT_DISK_FREE=free)
        stats = os.statvfs(self.path)
        size = max(0, stats.f_bavail * stats.f_frsize - free)
        with filler.open("wb") as fh:
            block = b"\0" * (1 << 20)
            while size > 0:
                try:
                    size -= fh.write(block[: min(size, len(block))])
                except OSError:
                    break
        return injected()


def _mount(path: Path, size: str) -> bool:
    if os.environ.get("EMB_FAULT_NO_MOUNT"):  # to run the injected full disk on a root machine
        return False
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@contextlib.contextmanager
def small_disk(directory: Path, *, size: str = "20m") -> Iterator[Disk]:
    """A 20 MB tmpfs mounted at ``directory`` (unmounted afterwards), or, where mounting is not
    allowed, ``directory`` itself with an injected full disk."""
    directory.mkdir(parents=True, exist_ok=True)
    real = _mount(directory, size)
    try:
        yield Disk(directory, real)
    finally:
        if real:
            subprocess.run(["umount", "-l", str(directory)], capture_output=True, timeout=60)


def hidden(directory: Path) -> list[str]:
    """The hidden entries of ``directory`` (emb's temporaries and locks that must not stay)."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))
