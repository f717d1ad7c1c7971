"""What a shard worker reads besides its windows: each check once where a second adds nothing
(the damage scan, the markers, a lock's holder), and the same answers as before."""

from __future__ import annotations

import numpy as np
import pytest

from emb.errors import CorruptStoreError
from emb.extraction.pipeline import extract
from emb.files import lockfile as _lockfile
from emb.schemas import datamodel as dm
from emb.store import _write_checks, validate
from emb.store import suite_writer as writer
from emb.store._location import open_zarr_store
from emb.store._nodes import digest, digests, list_prefix, read_bytes, read_json, read_jsons
from emb.store.shards import read_markers
from tests.store.test_shards import BLOCK, WINDOW, BatchRunner, repeat_suite, snapshot


def _run(path: str, shard: str | None = None) -> None:
    extract(BatchRunner(), repeat_suite(), path, progress=False, block_size=BLOCK,
            window_blocks=WINDOW, shard=shard)


def _count(monkeypatch, module, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_resuming_worker_scans_the_group_once_and_reads_its_markers_once_a_step(
    tmp_path, monkeypatch
):
    path = str(tmp_path / "s.zarr")
    _run(path, "1/3")  # lays the suite out
    scans = _count(monkeypatch, _write_checks, "suite_status")
    marker_reads = _count(monkeypatch, writer, "read_markers")
    scan_reads = _count(monkeypatch, validate, "read_markers")
    scan_done_reads = _count(monkeypatch, validate, "read_done")
    _run(path, "2/3")
    # the check before the lock scanned it; under the guard its attributes were unchanged
    assert len(scans) == 1
    # the scan reads the markers once (done and per shard); the worker once before its
    # windows and once in settle (which wrote nothing: 3/3 has not run)
    assert len(scan_reads) == 1 and not scan_done_reads
    # (the writer reads markers only through read_markers: a read by finish() is counted there)
    assert len(marker_reads) == 2
    scans.clear(), marker_reads.clear()
    _run(path, "3/3")  # finishes the suite: finish() takes settle's markers
    assert len(scans) == 1 and len(marker_reads) == 2
    one = str(tmp_path / "one.zarr")
    _run(one)
    assert snapshot(path) == snapshot(one)


def test_the_scan_is_repeated_when_the_group_changed_since_the_check(tmp_path):
    path = str(tmp_path / "s.zarr")
    _run(path, "1/3")
    zstore = open_zarr_store(path, mode="a")
    attrs = read_json(zstore, "s/zarr.json")["attributes"]
    args = dict(name="s", suite_attrs=attrs[dm.ATTR_SUITE],
                extraction=attrs[dm.ATTR_EXTRACTION], overwrite=False)
    # damage: a marked block's shard deleted
    done = np.flatnonzero(read_markers(validate.zarr.open_array(zstore, path="s/_progress/done")))
    shard = [k for k in list_prefix(zstore, "s/embedding/c/") if k.startswith(f"s/embedding/c/{done[0]}/")]
    assert shard
    (tmp_path / "s.zarr" / shard[0]).unlink()
    with pytest.raises(CorruptStoreError, match="missing"):
        _write_checks.plan_group(path, zstore, **args)
    # another layout (a rewrite gives a new generation), or a finish: scanned again, refused
    for changed in ({**attrs, dm.ATTR_GENERATION: "another"}, {**attrs, dm.ATTR_COMPLETE: True}):
        with pytest.raises(CorruptStoreError, match="missing"):
            _write_checks.plan_group(path, zstore, scanned=changed, **args)
    # the attributes this process's check found resumable a moment ago: not scanned again
    assert _write_checks.plan_group(path, zstore, scanned=attrs, **args) == ("resume", attrs)


def test_concurrent_reads_equal_one_at_a_time(tmp_path):
    path = str(tmp_path / "s.zarr")
    _run(path)
    zstore = open_zarr_store(path, mode="r")
    keys = list_prefix(zstore, "s") + ["s/absent", "s/absent/zarr.json"]
    (tmp_path / "s.zarr" / "s" / "word" / "zarr.json").write_bytes(b"[1, 2")  # not JSON
    found = digests(zstore, keys)
    assert list(found) == keys
    for key in keys:
        raw = read_bytes(zstore, key)
        assert found[key] == (None if raw is None else (len(raw), digest(raw)))
    metas = [k for k in keys if k.endswith("zarr.json")]
    for key, doc in zip(metas, read_jsons(zstore, metas), strict=True):
        try:
            expected = read_json(zstore, key)
        except validate.BadMetadata as err:
            assert isinstance(doc, validate.BadMetadata) and str(doc) == str(err)
        else:
            assert doc == expected
    assert digests(zstore, []) == {} and read_jsons(zstore, []) == []


def test_a_free_lock_is_taken_without_a_pause(tmp_path, monkeypatch):
    pauses: list[float] = []
    monkeypatch.setattr(_lockfile.time, "sleep", pauses.append)
    lock = _lockfile.WriterLock.acquire(tmp_path / "lock", what="x", purpose="test")
    try:
        assert lock.stale is None and not pauses
    finally:
        lock.release()


@pytest.mark.parametrize("compressed", [False, True])
def test_markers_read_as_bytes_equal_zarrs_reading(tmp_path, compressed):
    import zarr

    from emb.store import shards

    root = tmp_path / "m.zarr"
    done = zarr.create_array(
        zarr.storage.LocalStore(root), name="s/_progress/done", shape=(9,), dtype="uint8",
        chunks=(1,), compressors=zarr.codecs.ZstdCodec() if compressed else None, fill_value=0,
        dimension_names=("block",),
    )
    done[[0, 2, 3, 5, 8]] = [1, 2, 1, 1, 2]  # 1, 4, 6, 7 never written: the fill value
    (root / "s/_progress/done/c/3").write_bytes(b"")  # torn writes
    (root / "s/_progress/done/c/5").write_bytes(b"\x01\x01")
    reopened = zarr.open_group(zarr.storage.LocalStore(root), path="s", mode="r")["_progress/done"]
    assert shards._plain_bytes(reopened) is not compressed
    fast = read_markers(reopened)
    zarrs = np.zeros(9, dtype=np.uint8)  # one chunk at a time through zarr, as read_markers did
    for i in range(9):
        try:
            zarrs[i] = int(reopened[i])
        except Exception:  # noqa: BLE001 - a torn marker reads as not written
            zarrs[i] = 0
    assert fast.dtype == np.uint8 and fast.tolist() == zarrs.tolist()
    assert fast.tolist() == [1, 0, 2, 0, 0, 0, 0, 0, 2] or compressed


@pytest.mark.parametrize("lost", ["_progress/done", "embedding"])
def test_an_array_lost_between_the_check_and_the_lock_is_a_clear_error(tmp_path, monkeypatch, lost):
    """The scan is skipped under the lock while the group's attributes are unchanged; an array
    lost meanwhile (damage outside emb, here moments after the check: for a run's later suites,
    the whole extraction of the earlier ones) is refused as the scan refuses it, with a message,
    not a KeyError from opening it."""
    import shutil

    from emb.store import store_writer as writing

    path = tmp_path / "s.zarr"
    _run(str(path), "1/3")
    real = writing.StoreWriter.open_suite

    def damaged_first(self, name, **kwargs):
        shutil.rmtree(path / "s" / lost)
        return real(self, name, **kwargs)

    monkeypatch.setattr(writing.StoreWriter, "open_suite", damaged_first)
    with pytest.raises(CorruptStoreError, match="damaged.*--overwrite"):
        _run(str(path), "2/3")


def test_markers_written_as_files_equal_zarrs_writes(tmp_path):
    """write_marker writes a local store's one-byte marker chunk itself: the same object zarr
    writes for ``done[i] = v`` (and 0, the fill value, still deletes the chunk through zarr);
    other stores are written through zarr."""
    import zarr

    from emb.store import shards

    def made(store):
        return zarr.create_array(store, name="s/_progress/done", shape=(6,), dtype="uint8",
                                 chunks=(1,), compressors=None, fill_value=0,
                                 dimension_names=("block",))

    ours, theirs = made(zarr.storage.LocalStore(tmp_path / "a")), made(zarr.storage.LocalStore(tmp_path / "b"))
    memory = made(zarr.storage.MemoryStore())
    for i, v in [(0, 1), (1, 2), (3, 1), (1, 1), (3, 0), (5, 2)]:
        shards.write_marker(ours, i, v)
        shards.write_marker(memory, i, v)
        theirs[i] = v
    files = {p.relative_to(tmp_path / "a").as_posix(): p.read_bytes()
             for p in (tmp_path / "a").rglob("*") if p.is_file()}
    assert files == {p.relative_to(tmp_path / "b").as_posix(): p.read_bytes()
                     for p in (tmp_path / "b").rglob("*") if p.is_file()}
    assert "s/_progress/done/c/3" not in files and files["s/_progress/done/c/1"] == b"\x01"
    assert read_markers(ours).tolist() == read_markers(memory).tolist() == [1, 1, 0, 0, 0, 2]
    assert not list((tmp_path / "a").rglob("*.partial"))


def test_a_local_stores_objects_read_as_zarr_reads_them(tmp_path):
    """read_bytes, read_many and object_sizes read a local store's files themselves: what
    zarr's LocalStore gives for a file, a missing one, a directory, a path under a file."""
    import zarr

    from emb.store import _nodes
    from emb.store._zarr import prototype, sync

    (tmp_path / "g" / "sub").mkdir(parents=True)
    (tmp_path / "g" / "f").write_bytes(b"abc")
    (tmp_path / "g" / "e").write_bytes(b"")
    store = zarr.storage.LocalStore(tmp_path, read_only=True)
    keys = ["g/f", "g/e", "g/missing", "g/sub", "g/f/under", "nowhere/x"]

    def zarrs(key):
        got = sync(store.get(key, prototype=prototype()))
        return None if got is None else got.to_bytes()

    expected = [zarrs(k) for k in keys]
    assert expected == [b"abc", b"", None, None, None, None]
    assert _nodes.read_many(store, keys) == expected
    assert [_nodes.read_bytes(store, k) for k in keys] == expected
    assert _nodes.object_sizes(store, ["g/f", "g/e", "g/missing", "g/f/under"]) == {
        "g/f": 3, "g/e": 0, "g/missing": None, "g/f/under": None}
    writable = zarr.storage.LocalStore(tmp_path / "w")
    _nodes.put_object(writable, "a/b/c.json", b"{}")
    assert (tmp_path / "w" / "a" / "b" / "c.json").read_bytes() == b"{}"
    with pytest.raises(Exception):  # noqa: B017 - a read-only store is written by no one
        _nodes.put_object(store, "g/new", b"x")
    assert not (tmp_path / "g" / "new").exists()
