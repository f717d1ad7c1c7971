"""read_rows reads the rows a run copies (earlier rows of its suite, rows of another suite) shard
by shard: the values of numpy's fancy indexing of the whole array, for any row order."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

from emb.errors import CorruptStoreError
from emb.store._layout import chunk_codecs, read_rows


def test_rows_equal_numpy_indexing_for_any_order(tmp_path):
    shape = (5000, 7, 4, 16)
    array = zarr.create_array(tmp_path / "a", shape=shape, chunks=(128, 1, 4, 16),
                              shards=(128, 7, 4, 16), dtype="float16", compressors=chunk_codecs(),
                              fill_value=np.nan)
    data = np.random.default_rng(0).standard_normal(shape).astype("float16")
    array[:] = data
    rng = np.random.default_rng(1)
    for rows in ([3], [4999, 0, 128, 127], rng.integers(0, 5000, 2000).tolist(),
                 list(range(5000))[::-1], [5, 5, 5], []):
        got = read_rows(array, rows)
        expected = data[np.asarray(rows, dtype=np.int64)]
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert np.array_equal(got.view(np.uint16), expected.view(np.uint16))
    plain = zarr.create_array(tmp_path / "b", shape=(1000, 3), chunks=(100, 3), dtype="int32")
    plain[:] = np.arange(3000).reshape(1000, 3)
    assert read_rows(plain, [999, 5, 100]).tolist() == [[2997, 2998, 2999], [15, 16, 17], [300, 301, 302]]


def test_a_damaged_shard_is_a_clear_error(tmp_path):
    array = zarr.create_array(tmp_path / "a", shape=(256, 2, 1, 8), chunks=(128, 1, 1, 8),
                              shards=(128, 2, 1, 8), dtype="float16", compressors=chunk_codecs(),
                              fill_value=np.nan)
    array[:] = np.ones((256, 2, 1, 8), dtype="float16")
    shard = tmp_path / "a" / "c" / "1" / "0" / "0" / "0"  # rows 128-255
    raw = bytearray(shard.read_bytes())
    raw[20] ^= 0xFF
    shard.write_bytes(bytes(raw))
    assert read_rows(array, [0, 5]).shape == (2, 2, 1, 8)  # rows of the intact shard
    with pytest.raises(CorruptStoreError, match="damaged"):
        read_rows(array, [0, 130])
