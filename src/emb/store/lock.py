"""One writer at a time: the lock files at the root of a local store.

A writer holds ``<store>/.emb-lock.<suite>`` for as long as it writes that suite, and
``<store>/.emb-lock`` for the moments it changes the root (creating the store, refreshing the
consolidated metadata).  The lock itself (an exclusive ``flock`` naming its holder, released by
the operating system when its process dies) is :class:`emb.files.lockfile.WriterLock`, which the
outputs' claims use too; this module says where a store's locks lie.

Object stores (``s3://``, ``gs://`` …) have no such primitive: no lock is taken there (see the
README, "One writer at a time").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from emb.files.lockfile import GRACE_S, LockHolder, WriterLock
from emb.schemas import datamodel as dm
from emb.store._location import is_url, local_path

__all__ = ["GRACE_S", "LockHolder", "WriterLock", "lock_path", "locked"]


def lock_path(location: str, name: str | None = None) -> Path | None:
    """The lock file of suite ``name`` (or of the root) of a local store; None for URLs."""
    if is_url(location):
        return None
    base = local_path(location)
    return base / (dm.LOCK_PREFIX if name is None else f"{dm.LOCK_PREFIX}.{name}")


@contextlib.contextmanager
def locked(location: str, name: str | None, *, purpose: str, wait_s: float) -> Iterator[WriterLock | None]:
    """Hold the lock of suite ``name`` (or of the root) of a local store for a ``with`` block."""
    path = lock_path(location, name)
    if path is None:
        yield None
        return
    what = f"store {location}" if name is None else f"suite {name!r} of store {location}"
    lock = WriterLock.acquire(path, what=what, purpose=purpose, wait_s=wait_s)
    try:
        yield lock
    finally:
        lock.release()
