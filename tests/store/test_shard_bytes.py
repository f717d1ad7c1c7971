"""The shards assembled in memory (:mod:`emb.store._shard_bytes`) are byte for byte the shards
zarr's own array assignment writes (the path before them, still taken for arrays of other codecs):
float16 and float32 storage, a last block shorter than a shard, a layer subset, ``--shard``, and
object storage on the moto server; the manifest's sizes and CRC-32s are those of the stored bytes.
These run whole extractions; the encoder alone, against zarr's writer over many layouts and the
codecs it refuses, is pinned by ``tests/store/test_zarr_adapter.py``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import emb
from emb.extraction.pipeline import extract
from emb.store import layer_major
from emb.store import suite_writer as store_writer
from emb.store._nodes import digest
from emb.store._shard_bytes import ShardEncoder, all_finite
from tests.fakes import FakeInfo, FakeRunner
from tests.store.test_pipeline import words_suite


class LayersRunner(FakeRunner):
    """The fake runner, answering a layer subset (the pipeline passes ``layers`` then), its
    vectors stored layer by layer as the transformers runner returns them (whole blocks'
    inner chunks are compressed where they lie; the fake runner's C order is copied)."""

    def embed(self, encodings, *, layers=None, **kwargs):
        out = super().embed(encodings, **kwargs)
        out = out if layers is None else out[:, list(layers)]
        major = layer_major(out.shape, out.dtype)
        major[:] = out
        return major


def _zarr_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every block written by zarr's array assignment and read back (the path before)."""
    monkeypatch.setattr(store_writer.ShardEncoder, "of", classmethod(lambda cls, array: None))


def _objects(files: dict[str, bytes]) -> dict[str, bytes]:
    """The objects of a store that do not hold times or random ids: every shard, coordinate
    chunk and marker (the group's ``zarr.json`` holds its creation time and generation id; a
    sharded run's record, random claim tokens)."""
    return {k: v for k, v in files.items()
            if not k.endswith(("zarr.json", "shards.json")) and ".emb-lock" not in k}


def _local(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _manifest(files: dict[str, bytes], name: str = "s") -> dict:
    return json.loads(files[f"{name}/_progress/zarr.json"])["attributes"]["manifest"]


def _check_same(new: dict[str, bytes], old: dict[str, bytes], *, shards: int) -> None:
    a, b = _objects(new), _objects(old)
    embedded = [k for k in a if "/embedding/c/" in k]
    assert len(embedded) == shards
    assert sorted(a) == sorted(b)
    differ = [k for k in a if a[k] != b[k]]
    assert not differ, differ
    assert _manifest(new) == _manifest(old)
    for rel, (size, crc) in _manifest(new)["objects"].items():
        raw = new[f"s/{rel}"]
        assert (len(raw), digest(raw)) == (size, crc), rel


@pytest.mark.parametrize(
    ("storage_dtype", "layers", "n_words"),
    [("float16", None, 21), ("float32", None, 16), ("float16", "0,2", 21)],
)
def test_assembled_shards_equal_zarrs_own(tmp_path, monkeypatch, storage_dtype, layers, n_words):
    # 2 × n_words items in blocks of 8: with 21 words the last block holds 2 of 8 rows (padding)
    runner = LayersRunner(info=FakeInfo(n_layers=3, hidden_size=8))
    kwargs = dict(progress=False, block_size=8, window_blocks=2, storage_dtype=storage_dtype,
                  layers=layers)
    extract(runner, words_suite(n_words), tmp_path / "new.zarr", **kwargs)
    with monkeypatch.context() as patched:
        _zarr_writes(patched)
        extract(runner, words_suite(n_words), tmp_path / "old.zarr", **kwargs)
    _check_same(_local(tmp_path / "new.zarr"), _local(tmp_path / "old.zarr"),
                shards=-(-2 * n_words // 8))
    assert emb.open_store(str(tmp_path / "new.zarr")).validate(deep=True).status == "complete"


def test_shards_written_by_workers_equal_one_zarr_run(tmp_path, monkeypatch):
    from emb.store import manifest

    suite = words_suite(21)
    kwargs = dict(progress=False, block_size=8, window_blocks=1)
    read_back: list[str] = []
    hashed = manifest.digests
    with monkeypatch.context() as patched:  # the finishing worker reads no shard back
        patched.setattr(manifest, "digests", lambda zstore, keys: hashed(zstore, read_back.extend(keys) or keys))
        for i in (1, 2, 3):
            extract(FakeRunner(), suite, tmp_path / "new.zarr", shard=f"{i}/3", **kwargs)
    assert read_back and not [k for k in read_back if "/embedding/c/" in k], read_back
    with monkeypatch.context() as patched:
        _zarr_writes(patched)
        extract(FakeRunner(), suite, tmp_path / "old.zarr", **kwargs)
    _check_same(_local(tmp_path / "new.zarr"), _local(tmp_path / "old.zarr"), shards=6)


def test_assembled_shards_on_s3_equal_zarrs_own_written_locally(s3_bucket, tmp_path, monkeypatch):
    s3fs = pytest.importorskip("s3fs")
    url = f"{s3_bucket}/new.zarr"
    extract(FakeRunner(), words_suite(21), url, progress=False, block_size=8)
    with monkeypatch.context() as patched:
        _zarr_writes(patched)
        extract(FakeRunner(), words_suite(21), tmp_path / "old.zarr", progress=False, block_size=8)
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    root = url.removeprefix("s3://")
    new = {p.removeprefix(root + "/"): fs.cat(p) for p in fs.find(root)}
    _check_same(new, _local(tmp_path / "old.zarr"), shards=6)


def test_the_encoder_finds_a_non_finite_value_in_any_inner_chunk():
    import zarr

    from emb.store._layout import chunk_codecs

    encoder = ShardEncoder.of(zarr.create_array(
        zarr.storage.MemoryStore(), shape=(20, 3, 4, 8), dtype="float16", chunks=(8, 1, 4, 8),
        shards=(8, 3, 4, 8), compressors=chunk_codecs(), fill_value=np.nan,
    ))
    values = np.ones((4, 3, 4, 8), np.float16)  # a short block: its NaN padding is not checked
    assert encoder.encode(values).finite and all_finite(values)
    for layer in range(3):
        for bad in (np.inf, -np.inf, np.nan):
            broken = values.copy()
            broken[3, layer, 2, 7] = bad
            assert not encoder.encode(broken).finite and not all_finite(broken)


def test_parts_are_written_whole_through_a_temporary(tmp_path, monkeypatch):
    from emb.store._shard_bytes import write_parts

    target = tmp_path / "a" / "b" / "0"
    write_parts(target, (b"ab", memoryview(b"cde"), np.arange(3, dtype=np.uint8)))
    assert target.read_bytes() == b"abcde\x00\x01\x02"
    assert [p.name for p in target.parent.iterdir()] == ["0"]

    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.writev", fail)
    with pytest.raises(OSError, match="No space"):
        write_parts(target, (b"xyz",))
    assert target.read_bytes() == b"abcde\x00\x01\x02"  # the old object stays whole
    assert [p.name for p in target.parent.iterdir()] == ["0"]  # no temporary left


def test_a_missing_or_garbled_digest_record_is_read_back_and_the_records_go(tmp_path):
    suite = words_suite(21)
    kwargs = dict(progress=False, block_size=8, window_blocks=1)
    store = tmp_path / "s.zarr"
    for i in (1, 2):
        extract(FakeRunner(), suite, store, shard=f"{i}/3", **kwargs)
    records = sorted((store / "s" / "_progress").glob("digest.*.json"))
    assert 2 <= len(records) < 6  # the blocks shards 1 and 2 wrote
    records[0].unlink()
    records[1].write_text("[1, 2")
    extract(FakeRunner(), suite, store, shard="3/3", **kwargs)
    assert not list((store / "s" / "_progress").glob("digest.*"))
    assert emb.open_store(str(store)).validate(deep=True).status == "complete"


def test_the_write_path_is_timed_on_a_sample_and_leaves_nothing(tmp_path):
    from emb.store import write_seconds

    values = layer_major((40, 3, 4, 8), np.float16)
    values[:] = 1.5
    assert write_seconds(values, tmp_path) > 0
    assert write_seconds(values[:0], tmp_path) == 0.0
    assert not list(tmp_path.iterdir())
