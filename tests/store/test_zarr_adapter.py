"""The door to zarr's internals (:mod:`emb.store._zarr`), pinned against zarr itself.

zarr is floored, not capped (``zarr>=…`` in pyproject): a zarr release that changes its shard
bytes, its codecs' configuration, its chunk keys, its buffers, its byte requests, its event loop,
its zip store or its wrapper store fails here, loudly, rather than in a store written with other
bytes.  The central pin: a shard framed by emb (:class:`emb.store._shard_bytes.ShardEncoder`,
from what :func:`~emb.store._zarr.shard_chain` reads of the array's codecs) is byte for byte the
shard zarr's own array assignment writes: float16 and float32, one layer and several, blocks of
1 to 16 items, a last block shorter than the shard, a block of one item, vectors in C order and
stored layer by layer.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
import zarr
import zarr.storage

from emb.store import layer_major
from emb.store._layout import chunk_codecs, compressor
from emb.store._nodes import digest
from emb.store._shard_bytes import ShardEncoder
from emb.store._zarr import (
    CODEC_CODE,
    STORAGE_CODE,
    ReadWrapper,
    ZipFileStore,
    arrays_from_metadata,
    as_buffer,
    chunk_key,
    dimension_names,
    io_loop,
    is_open,
    only_bytes_codec,
    opened,
    prototype,
    shard_chain,
    slice_buffer,
    sync,
    zip_member_sizes,
)


def _values(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    """Vectors as a runner returns them: random, the 'last' and 'mean' poolings equal to 'first'
    for every other item (one-subtoken words: what LZ4 finds), and the values a float format
    keeps apart: ±0, ±inf, a subnormal, the largest finite value."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape).astype(dtype)
    if shape[2] >= 3:
        values[::2, :, 1:3] = values[::2, :, :1]
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.finfo(dtype).smallest_subnormal,
                        np.finfo(dtype).max], dtype=dtype)
    flat = values.reshape(-1)
    flat[: min(flat.size, special.size)] = special[: flat.size]
    return values


def _zarr_array(root: Path, shape: tuple[int, ...], dtype: str, block: int) -> zarr.Array:
    """An ``embedding`` array laid out as emb lays it out (shards of whole blocks, an inner
    chunk per layer, :func:`emb.store._layout.chunk_codecs`)."""
    n, n_layers, n_poolings, n_features = shape
    return zarr.create_array(
        zarr.storage.LocalStore(root), shape=shape, dtype=dtype,
        chunks=(block, 1, n_poolings, n_features), shards=(block, n_layers, n_poolings, n_features),
        compressors=chunk_codecs(), fill_value=np.nan, dimension_names=("item", "layer", "pooling", "feature"),
    )


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize(
    ("n_items", "block", "n_layers"),
    [
        (8, 8, 3),    # one full block
        (21, 8, 3),   # the last block holds 5 of 8 rows (padded with the fill value)
        (17, 8, 2),   # the last block holds one item
        (1, 16, 4),   # a suite of one item
        (40, 16, 1),  # one layer: one inner chunk a shard
        (3, 1, 5),    # blocks of one item
        (37, 4, 13),  # a 12-block model's 13 layers, blocks of 4
    ],
)
def test_framed_shards_are_zarrs_own_bytes(tmp_path, dtype, n_items, block, n_layers):
    shape = (n_items, n_layers, 4, 8)
    values = _values(shape, dtype, seed=n_items * 31 + n_layers)
    array = _zarr_array(tmp_path / "zarr", shape, dtype, block)
    array[:] = values  # zarr's own writer
    encoder = ShardEncoder.of(array)
    assert encoder is not None
    major = layer_major(shape, dtype)
    major[:] = values  # each inner chunk of a full block contiguous: compressed where it lies
    n_blocks = -(-n_items // block)
    for b in range(n_blocks):
        start, stop = b * block, min(n_items, (b + 1) * block)
        key = chunk_key(array, (b, 0, 0, 0))
        assert key == f"c/{b}/0/0/0"
        written = (tmp_path / "zarr" / key).read_bytes()
        for source in (values, major):
            shard = encoder.encode(source[start:stop])
            assert shard.data == written, (b, source is major)
            assert shard.size == len(written) and shard.crc32 == digest(written)
            assert shard.finite == bool(np.isfinite(values[start:stop]).all())
    assert len(list((tmp_path / "zarr" / "c").iterdir())) == n_blocks
    np.testing.assert_array_equal(np.asarray(array[:]), values)


def test_framed_shards_read_back_through_zarr(tmp_path):
    """Bytes framed here and written as the store's objects are read by zarr (plain zarr, no
    emb) as the vectors they hold, the last block's padding cut off."""
    shape, block = (21, 3, 4, 8), 8
    values = _values(shape, "float16", seed=1)
    array = _zarr_array(tmp_path / "s", shape, "float16", block)
    encoder = ShardEncoder.of(array)
    for b in range(3):
        data = encoder.encode(values[b * block : (b + 1) * block]).data
        path = tmp_path / "s" / chunk_key(array, (b, 0, 0, 0))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    again = zarr.open_array(zarr.storage.LocalStore(tmp_path / "s", read_only=True), mode="r")
    np.testing.assert_array_equal(np.asarray(again[:]), values)


def test_the_chain_read_from_the_codecs(tmp_path):
    array = _zarr_array(tmp_path / "s", (20, 3, 4, 8), "float32", 8)
    chain = shard_chain(array)
    assert chain is not None
    assert chain.shard_shape == (8, 3, 4, 8) and chain.chunk_shape == (8, 1, 4, 8)
    assert chain.dtype == np.dtype("<f4") and np.isnan(chain.fill_value)
    assert chain.order == ((0, 0, 0, 0), (0, 1, 0, 0), (0, 2, 0, 0))
    config = chain.blosc.get_config()  # numcodecs' Blosc, as zarr configures it
    assert (config["cname"], config["clevel"], config["shuffle"]) == ("lz4", 1, 0)


def _layouts():
    """Arrays of other codecs or chunks, and whether emb frames their shards (else zarr writes
    their blocks); what it frames, it frames as zarr writes it."""
    blosc = zarr.codecs.BloscCodec
    return {
        "emb's": (dict(compressors=chunk_codecs()), True),
        "schema 2's, no CRC-32C": (dict(compressors=(compressor(),)), False),
        "zstd": (dict(compressors=(zarr.codecs.ZstdCodec(), zarr.codecs.Crc32cCodec())), False),
        "Blosc's shuffle and type size chosen by zarr": (  # fixed when the array is made
            dict(compressors=(blosc(cname="lz4", clevel=1), zarr.codecs.Crc32cCodec())), True),
        "big-endian values": (
            dict(compressors=chunk_codecs(), serializer=zarr.codecs.BytesCodec(endian="big")), True),
        "an inner chunk of half a block": (dict(compressors=chunk_codecs(), chunks=(4, 1, 4, 8)), False),
        "no shards": (dict(compressors=chunk_codecs(), shards=None), False),
        "the index first": (dict(compressors=chunk_codecs(), index_location="start"), False),
    }


@pytest.mark.parametrize("layout", list(_layouts()))
def test_the_encoder_frames_only_what_it_frames_as_zarr_does(tmp_path, layout):
    kwargs, framed = _layouts()[layout]
    options = {"chunks": (8, 1, 4, 8), "shards": (8, 3, 4, 8), **kwargs}
    index_location = options.pop("index_location", None)
    if index_location is not None:
        options["shards"] = {"shape": options["shards"], "index_location": index_location}
    array = zarr.create_array(zarr.storage.LocalStore(tmp_path), shape=(20, 3, 4, 8),
                              dtype="float16", fill_value=np.nan, **options)
    values = _values((20, 3, 4, 8), "float16", seed=3)
    array[:] = values
    encoder = ShardEncoder.of(array)
    assert (encoder is not None) == framed
    if encoder is not None:
        for b in range(3):
            written = (tmp_path / chunk_key(array, (b, 0, 0, 0))).read_bytes()
            assert encoder.encode(values[b * 8 : (b + 1) * 8]).data == written, b


def test_the_encoder_refuses_a_block_that_does_not_fit(tmp_path):
    encoder = ShardEncoder.of(_zarr_array(tmp_path, (20, 3, 4, 8), "float16", 8))
    with pytest.raises(ValueError, match="does not fit"):
        encoder.encode(np.zeros((9, 3, 4, 8), np.float16))
    with pytest.raises(ValueError, match="does not fit"):
        encoder.encode(np.zeros((8, 2, 4, 8), np.float16))


def test_chunk_keys_dimension_names_and_plain_byte_arrays(tmp_path):
    root = zarr.storage.LocalStore(tmp_path)
    done = zarr.create_array(root, name="s/_progress/done", shape=(3,), dtype="uint8", chunks=(1,),
                             compressors=None, fill_value=0, dimension_names=("block",))
    done[1] = 1
    assert chunk_key(done, (1,)) == "c/1"
    assert (tmp_path / "s/_progress/done" / chunk_key(done, (1,))).read_bytes() == b"\x01"
    assert dimension_names(done) == ("block",) and only_bytes_codec(done)
    packed = zarr.create_array(root, name="z", shape=(3,), dtype="uint8", chunks=(1,),
                               compressors=zarr.codecs.ZstdCodec(), fill_value=0)
    assert dimension_names(packed) == () and not only_bytes_codec(packed)
    assert not only_bytes_codec(object())


def test_arrays_open_from_their_metadata_as_zarr_opens_them(tmp_path):
    root = zarr.storage.LocalStore(tmp_path)
    made = zarr.create_array(root, name="g/a", shape=(5, 2), dtype="float32", chunks=(2, 2),
                             fill_value=0)
    made[:] = np.arange(10, dtype="float32").reshape(5, 2)
    meta = made.metadata.to_dict()
    found = arrays_from_metadata(root, {"g/a": meta, "g/bad": {**meta, "shape": "x"}})
    assert isinstance(found[0], zarr.Array) and isinstance(found[1], Exception)
    assert found[0].metadata == zarr.open_array(root, path="g/a", mode="r").metadata
    np.testing.assert_array_equal(np.asarray(found[0][:]), np.asarray(made[:]))
    assert arrays_from_metadata(root, {}) == []


def test_buffers_byte_requests_and_the_event_loop(tmp_path):
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

    store = zarr.storage.LocalStore(tmp_path)
    sync(store.set("k", as_buffer(b"0123456789")))
    assert io_loop() is not None and io_loop().is_running()
    whole = sync(store.get("k", prototype()))
    for request in (None, RangeByteRequest(2, 5), RangeByteRequest(8, 20), OffsetByteRequest(7),
                    SuffixByteRequest(3), SuffixByteRequest(30)):
        want = sync(store.get("k", prototype(), request)).to_bytes()  # what the store answers
        assert slice_buffer(whole, request).to_bytes() == want, request
    with pytest.raises(TypeError, match="unknown byte request"):
        slice_buffer(whole, (1, 2))  # type: ignore[arg-type]


def test_zip_stores_open_lazily_and_from_a_file_object(tmp_path):
    group = zarr.open_group(zarr.storage.LocalStore(tmp_path / "d"), mode="w", zarr_format=3)
    group.attrs["x"] = 1
    with zipfile.ZipFile(tmp_path / "s.zip", "w") as zf:
        zf.write(tmp_path / "d" / "zarr.json", "zarr.json")
    plain = zarr.storage.ZipStore(tmp_path / "s.zip", mode="r")
    assert not is_open(plain) and is_open(opened(plain))
    assert zip_member_sizes(plain) == {"zarr.json": (tmp_path / "d" / "zarr.json").stat().st_size}

    files = []

    class FromFile(ZipFileStore):
        def open_zip(self):
            file = (tmp_path / "s.zip").open("rb")
            files.append(file)
            return file, zipfile.ZipFile(file, mode="r")

    store = FromFile("somewhere.zip", mode="r")
    assert zarr.open_group(store, mode="r", zarr_format=3).attrs["x"] == 1
    assert zip_member_sizes(store) == zip_member_sizes(plain)
    store.close()
    assert files and files[0].closed


def test_a_read_wrapper_sees_every_read_and_survives_zarrs_rewrapping(tmp_path):
    made = zarr.create_array(zarr.storage.LocalStore(tmp_path), name="a", shape=(4,), dtype="int8",
                             chunks=(2,), fill_value=0)
    made[:] = [1, 2, 3, 4]
    seen: list[str] = []

    class Seeing(ReadWrapper):
        def rewrapped(self, store):
            return Seeing(store)

        async def get(self, key, prototype, byte_range=None):
            seen.append(key)
            return await self.inner.get(key, prototype, byte_range)

    view = Seeing(zarr.storage.LocalStore(tmp_path, read_only=True))
    assert isinstance(view.with_read_only(True), Seeing)
    np.testing.assert_array_equal(np.asarray(zarr.open_array(view, path="a", mode="r")[:]), [1, 2, 3, 4])
    assert {"a/zarr.json", "a/c/0", "a/c/1"} <= set(seen)
    seen.clear()

    async def many():
        return [(k, b.to_bytes()) async for k, b in view._get_many([("a/c/1", prototype(), None)])]

    assert sync(many()) == [("a/c/1", (tmp_path / "a/c/1").read_bytes())] and seen == ["a/c/1"]


def test_the_code_of_zarrs_codecs_and_stores_is_where_tracebacks_look_for_it():
    codec_file = inspect.getfile(zarr.codecs.Crc32cCodec)
    store_file = inspect.getfile(zarr.storage.LocalStore)
    assert re.search(r"(^|[/\\])" + CODEC_CODE + r"[/\\]", codec_file), codec_file
    assert re.search(r"(^|[/\\])" + STORAGE_CODE + r"[/\\]", store_file), store_file
    assert asyncio.iscoroutinefunction(zarr.storage.LocalStore.get)
