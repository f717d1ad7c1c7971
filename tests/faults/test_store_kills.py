"""Killed writers on a local store's write paths (done-markers, digest records, kept encodings and
metadata written as files, a ``.partial`` renamed over each; rows copied from earlier shards read
shard by shard): whatever step a writer is killed before, the next run completes the suite, the
store validates, its arrays hold the bytes of an uninterrupted run, and no temporary file stays.

The defects the kill campaign found are pinned here by the state a kill leaves (fast); the
campaign itself (real child processes killed before their N-th change to the file system,
tests/faults/_inject) runs bounded at the end of this file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import emb
from emb.extract.pipeline import extract
from tests.fakes import FakeRunner
from tests.store.test_pipeline import _snapshot, words_suite


def _partials(path: Path) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*.partial"))


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k] for k in a)


# -- a kill before the suite group's metadata was renamed into place --------------------------------
def test_a_group_whose_metadata_write_was_killed_is_written_not_refused(tmp_path):
    """Killed after it made the suite's directory and wrote the group's ``zarr.json`` into its
    ``.partial``, before the rename: the next run said "its metadata (s/zarr.json) is missing
    but data is there" and wanted --overwrite, though the only "data" was the temporary file."""
    suite = words_suite(20)
    whole = tmp_path / "whole.zarr"
    extract(FakeRunner(), suite, str(whole), progress=False)
    path = tmp_path / "s.zarr"
    extract(FakeRunner(), suite, str(path), progress=False)
    meta = (path / "s" / "zarr.json").read_bytes()
    for child in sorted((path / "s").rglob("*"), reverse=True):  # the group as the kill left it
        child.rmdir() if child.is_dir() else child.unlink()
    (path / "s" / "zarr.3f0c2b7d9a8e4e51b6c0d1e2f3a4b5c6.partial").write_bytes(meta)
    extract(FakeRunner(), suite, str(path), progress=False)
    assert emb.open_store(str(path)).validate(deep=True).status == "complete"
    assert _same(_snapshot(str(path)), _snapshot(str(whole)))
    assert _partials(path / "s") == []
