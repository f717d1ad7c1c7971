"""A block's shard is on the disk before its done-marker is written: the shard file is fsync'd
before its rename and its directory after, so that a crash of the machine (power loss) cannot
leave a marker that says "done" over a shard the disk never got (a missing shard reads as the
fill value: NaN vectors in a suite that calls itself complete)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

import emb
from emb.extraction.pipeline import extract
from emb.store import suite_writer as store_writer
from emb.store._nodes import write_parts
from tests.store.test_shards import BLOCK, WINDOW, BatchRunner, repeat_suite


def test_every_shard_is_synced_before_its_marker(tmp_path: Path, monkeypatch) -> None:
    events: list[tuple[str, object]] = []
    real_fsync, real_marker = os.fsync, store_writer.write_marker

    def fsync(fd: int) -> None:
        real_fsync(fd)
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))

    def marker(done, index, value=1):
        events.append(("marker", int(index)))
        return real_marker(done, index, value)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(store_writer, "write_marker", marker)
    path = tmp_path / "s.zarr"
    suite = repeat_suite(64, distinct=64)
    (report,) = extract(BatchRunner(), suite, str(path), progress=False, block_size=BLOCK,
                        window_blocks=WINDOW)
    n_blocks = report.blocks_total
    assert n_blocks == 8
    synced = [(i, p) for i, (kind, p) in enumerate(events) if kind == "fsync"]
    for b in range(n_blocks):
        shard_dir = str((path / "s" / "embedding" / "c" / str(b) / "0" / "0").resolve())
        placed = [i for i, p in synced if p == shard_dir]
        data = [i for i, p in synced if str(p).startswith(shard_dir + "/0.")
                and str(p).endswith(".partial")]
        marked = events.index(("marker", b))
        assert data and placed, (b, events)
        assert max(data) < max(placed) < marked  # bytes, then the rename, then the marker
    ds = emb.open_store(str(path)).dataset("s")
    assert np.isfinite(ds.embedding.values).all()


def test_a_durable_write_is_the_same_file(tmp_path: Path) -> None:
    parts = (b"abc", np.arange(5, dtype=np.uint8), memoryview(b"xyz"))
    write_parts(tmp_path / "a" / "plain", parts)
    write_parts(tmp_path / "a" / "durable", parts, durable=True)
    assert (tmp_path / "a" / "durable").read_bytes() == (tmp_path / "a" / "plain").read_bytes()
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["durable", "plain"]
