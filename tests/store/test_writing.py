"""The store's write handle (:class:`emb.store.StoreWriter`) on its own: the checks read only, a
suite written through it reads back, rows stored by a finished suite are found and read, the
shard record is created once and checked, and every refusal names what to do."""

from __future__ import annotations

import numpy as np
import pytest

from emb.errors import StoreError, StoreLockedError, StoreMismatchError
from emb.store import COPIES_PENDING, DONE, ShardRecord, StoreWriter, open_store
from emb.store.lock import WriterLock
from emb.store.shards import shard_lock_path
from tests.analyses._synthetic import weat_dataset


def _suite(ds):
    return ("weat", ds.attrs["suite"], ds.attrs["extraction"])


def _write(target: StoreWriter, ds, *, name="weat", shard=None, block_size=16):
    """Write ``ds`` as suite ``name`` through the handle; the suite's writer, not finished."""
    writer = target.open_suite(
        name, coords=ds.drop_vars("embedding"), shape=ds["embedding"].shape,
        storage_dtype=str(ds["embedding"].dtype), suite_attrs=ds.attrs["suite"],
        extraction_attrs=ds.attrs["extraction"], block_size=block_size, shard=shard,
    )
    values = ds["embedding"].values
    for index, (start, stop) in enumerate(writer.block_ranges()):
        writer.write_block(index, values[start:stop])
    return writer


def test_the_checks_read_only_and_a_dry_run_leaves_nothing(tmp_path):
    ds = weat_dataset()
    path = tmp_path / "new.zarr"
    target = StoreWriter(path)
    target.check(suites=["weat"])
    target.check(model=ds.attrs["model"])
    target.check_suites([_suite(ds)], overwrite=False)
    assert target.stored_plans(["weat"]) == [(None, None)]
    assert not path.exists()
    with pytest.raises(StoreError, match="not open for writing"):
        target.read_rows("weat", [0])


def test_a_suite_written_through_the_handle_reads_back_and_its_rows_are_found(tmp_path):
    ds = weat_dataset()
    path = tmp_path / "s.zarr"
    target = StoreWriter(path)
    target.open(model=ds.attrs["model"])
    writer = _write(target, ds)
    assert not writer.complete
    writer.finish()
    assert writer.complete
    assert (writer.markers() == DONE).all()
    values = ds["embedding"].values
    np.testing.assert_array_equal(writer.read_block(1), values[16:32])
    stored = open_store(path).dataset("weat")
    np.testing.assert_array_equal(stored["embedding"].values, values)

    # another suite with the same settings copies the stored rows: each key's first row
    sources, used = target.reusable_rows("other", ds.attrs["extraction"])
    assert used == ("weat",)
    contexts = ds["context"].values.tolist()
    first = {c: contexts.index(c) for c in contexts}
    assert sources == {
        (c, int(s), int(e)): ("weat", first[c])
        for c, s, e in zip(contexts, ds["char_start"].values, ds["char_end"].values, strict=True)
    }
    np.testing.assert_array_equal(target.read_rows("weat", [5, 2]), values[[5, 2]])
    # the keys a suite asks for only (a small suite beside a corpus suite of millions of rows
    # holds its own few keys): those of the full answer, a key stored nowhere left out
    keys = list(sources)
    wanted = [keys[3], keys[0], (keys[0][0], 0, 1), ("no such context", 0, 2)]
    few, used_few = target.reusable_rows("other", ds.attrs["extraction"], wanted=wanted)
    assert used_few == ("weat",)
    assert few == {k: sources[k] for k in (keys[0], keys[3])}
    # other settings: no source
    assert target.reusable_rows("other", {**ds.attrs["extraction"], "storage_dtype": "float16"}) == ({}, ())
    # a resumed run reads the settings it was started with
    [(extraction, recorded)] = target.stored_plans(["weat"])
    assert extraction["block_size"] == 16 and recorded is None


def test_a_group_of_another_definition_is_refused_unless_replaced(tmp_path):
    ds = weat_dataset()
    path = tmp_path / "s.zarr"
    target = StoreWriter(path)
    target.open(model=ds.attrs["model"])
    _write(target, ds).finish()
    other = ("weat", {**ds.attrs["suite"], "content_hash": "another"}, ds.attrs["extraction"])
    with pytest.raises(StoreMismatchError, match="--overwrite to replace it"):
        target.check_suites([other], overwrite=False)
    target.check_suites([other], overwrite=True)
    with pytest.raises(StoreMismatchError, match="one store per model"):
        target.check(model={**ds.attrs["model"], "model_id": "another/model", "fingerprint": "beef"})


def test_the_shard_record_is_created_once_and_checked(tmp_path):
    ds = weat_dataset()
    path = tmp_path / "s.zarr"
    target = StoreWriter(path)
    target.open(model=ds.attrs["model"])
    writer = _write(target, ds, shard="shard-1-of-2")
    try:
        assert writer.shard_record() is None
        plan = ShardRecord(count=2, window_blocks=1, windows=((0, 4), (4, 8)),
                           blocks=((0, 4), (4, 8)))
        created = writer.record_shards(plan)
        assert created == plan and created.created_by  # stamped by this worker
        assert writer.shard_record() == plan
        assert writer.record_shards(plan) == plan  # a second worker: the same plan
        with pytest.raises(StoreMismatchError, match="give --shard I/2"):
            writer.record_shards(ShardRecord(count=3, window_blocks=1, windows=(), blocks=()))
        writer.write_block(0, ds["embedding"].values[:16], marker=COPIES_PENDING)
        assert writer.markers([0, 1]).tolist() == [COPIES_PENDING, DONE]
    finally:
        writer.close()
    assert target.stored_plans(["weat"])[0][1] == 2


def test_a_shard_another_worker_writes_is_refused_before_the_model_loads(tmp_path):
    ds = weat_dataset()
    path = tmp_path / "s.zarr"
    target = StoreWriter(path)
    target.open(model=ds.attrs["model"])
    held = WriterLock.acquire(shard_lock_path(str(path), "weat", "shard-2-of-3"), what="t",
                              purpose="test")
    try:
        target.check(suites=["weat"], shard="shard-1-of-3")
        with pytest.raises(StoreLockedError, match="shard-2-of-3 of suite 'weat'"):
            target.check(suites=["weat"], shard="shard-2-of-3")
    finally:
        held.release()
