"""Store.dataset: the fast coordinate decoding gives what xarray's own decoding gives."""

from __future__ import annotations

import numpy as np
import xarray as xr

import emb
from tests.analyses._synthetic import vast_dataset, write_store

#: text a UTF-8 decoder could get wrong: accents, CJK, emoji, combining marks, empty, spaces
TRICKY = ["café", "naïve", "東京", "👍🏽", "e\u0301", "", " lead", "tab\there", "ß", "Ωmega"]


def _tricky_store(tmp_path):
    ds = vast_dataset(n_words=30, n_layers=2, d=8, settings=("bleached",))
    words = ds["word"].values.copy()
    words[: len(TRICKY)] = TRICKY
    contexts = np.array([f"«{w}» — {i}" for i, w in enumerate(words)], dtype=object)
    ds = ds.assign_coords(word=("item", words), context=("item", contexts))
    return write_store(tmp_path / "s.zarr", {"vast": ds}), ds


def test_text_coordinates_are_xarrays_decoding(tmp_path):
    path, source = _tricky_store(tmp_path)
    ds = emb.open_store(path).dataset("vast")
    plain = xr.open_zarr(path, group="vast", consolidated=False, zarr_format=3).drop_vars("embedding")
    assert set(ds.coords) == set(plain.coords)
    for name in plain.coords:
        ours, theirs = ds[name], plain[name].load()
        assert not hasattr(ours.variable._data, "dask"), name  # in memory, not lazy
        np.testing.assert_array_equal(ours.values, theirs.values)
        assert ours.dims == theirs.dims and ours.attrs == theirs.attrs, name
        if theirs.dtype == object:
            assert ours.dtype == object
            assert {type(v) for v in ours.values.ravel()} == {str}, name
    assert list(ds["word"].values[: len(TRICKY)]) == TRICKY
    np.testing.assert_array_equal(ds["context"].values, source["context"].values)
    assert set(ds.indexes) == {"pooling", "layer"}


def test_embedding_is_lazy_and_its_coordinates_are_not_dask(tmp_path):
    path, source = _tricky_store(tmp_path)
    ds = emb.open_store(path).dataset("vast")
    assert ds["embedding"].chunks is not None
    assert ds["embedding"].chunksizes["layer"] == (1,) * ds.sizes["layer"]
    for name, coord in ds["embedding"].coords.items():
        assert coord.chunks is None, name
    np.testing.assert_array_equal(ds["embedding"].values, source["embedding"].values)


def test_chunk_bytes_makes_larger_chunks_of_whole_shards(tmp_path):
    """chunk_bytes: dask chunks of whole shards of about that many bytes (per layer with
    chunks="layer"), the same values; the default stays one shard per chunk; a bad value is a
    clear error."""
    import pytest

    from emb.errors import StoreError

    source = vast_dataset(n_words=400, n_layers=3, d=8)
    path = write_store(tmp_path / "s.zarr", {"vast": source})
    store = emb.open_store(path)
    block = int(store.root["vast"].attrs["extraction"].get("block_size", 1024))
    default = store.dataset("vast")
    item_bytes = source["embedding"].dtype.itemsize * source.sizes["pooling"] * source.sizes["feature"]
    assert set(default["embedding"].chunksizes["item"][:-1]) == {block}
    for shards in (1, 3):
        ds = store.dataset("vast", chunk_bytes=shards * block * item_bytes + item_bytes)
        assert set(ds["embedding"].chunksizes["item"][:-1]) == {shards * block}
        np.testing.assert_array_equal(ds["embedding"].values, source["embedding"].values)
    whole = store.dataset("vast", chunks="shard", chunk_bytes=10**12)
    assert whole["embedding"].chunksizes["item"] == (source.sizes["item"],)
    for bad in (0, -5, 1.5, True, "64MiB"):
        with pytest.raises(StoreError, match="chunk_bytes must be a positive integer"):
            store.dataset("vast", chunk_bytes=bad)
