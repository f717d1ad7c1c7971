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


def test_chunk_by_makes_chunks_follow_label_runs(tmp_path, monkeypatch):
    """chunk_by: a chunk ends wherever a label changes and holds a whole run up to
    RUN_CHUNK_BYTES (longer runs cut at shard boundaries); the same values; labels the suite
    lacks are ignored; the default stays one shard per chunk; a bad value is a clear error."""
    import itertools

    import pytest

    from emb.errors import StoreError
    from emb.store import store as store_module

    source = vast_dataset(n_words=1200, n_layers=2, d=8)
    path = write_store(tmp_path / "s.zarr", {"vast": source})
    store = emb.open_store(path)
    block = int(store.root["vast"].attrs["extraction"].get("block_size", 1024))
    assert set(store.dataset("vast")["embedding"].chunksizes["item"][:-1]) == {block}
    labels = ("lexicon", "setting", "stimulus_set")
    key = [tuple(str(source[n].values[i]) for n in labels) for i in range(source.sizes["item"])]
    runs = [len(list(group)) for _, group in itertools.groupby(key)]
    assert len(runs) == 12 and max(runs) == 1200  # 4 settings x (lexicon, pleasant, unpleasant)
    assert block < 1200
    ds = store.dataset("vast", chunk_by=[*labels, "absent"])
    assert ds["embedding"].chunksizes["item"] == tuple(runs)
    np.testing.assert_array_equal(ds["embedding"].values, source["embedding"].values)
    # a run longer than the most bytes of a chunk (here: one shard) is cut where shards end
    monkeypatch.setattr(store_module, "RUN_CHUNK_BYTES", 1)
    cut = store.dataset("vast", chunk_by=labels)["embedding"].chunksizes["item"]
    assert sum(cut) == source.sizes["item"] and max(cut) == block and len(cut) > len(runs)
    run_ends = set(np.cumsum(runs).tolist())
    assert run_ends <= set(np.cumsum(cut).tolist())
    assert all(e in run_ends or e % block == 0 for e in np.cumsum(cut).tolist())
    assert store.dataset("vast", chunk_by=["absent"])["embedding"].chunksizes == (
        store.dataset("vast")["embedding"].chunksizes)
    # a label missing (NaN, None) on a run of items is one run, not one per item
    group = xr.Dataset(
        {"embedding": (("item", "layer", "pooling", "feature"), np.zeros((9, 1, 1, 2), "f2"))},
        coords={"group": ("item", np.array([1.0, 1.0, np.nan, np.nan, np.nan, 2.0, 2.0, np.nan,
                                            np.nan])),
                "name": ("item", np.array(["a", "a", None, None, None, "b", "b", None, None],
                                          dtype=object))})
    spec = {"item": -1, "layer": 1, "pooling": -1, "feature": -1}
    for label in ("group", "name"):
        assert store_module._run_chunks(group, [label], spec, block=4) == (2, 3, 2, 2)
    # a label that changes at nearly every item makes no runs: the default chunks stay
    monkeypatch.setattr(store_module, "MAX_ITEM_CHUNKS", 100)
    assert store.dataset("vast", chunk_by=["word"])["embedding"].chunksizes == (
        store.dataset("vast")["embedding"].chunksizes)
    for bad in ("setting", [1, 2], 5):
        with pytest.raises(StoreError, match="chunk_by must be a sequence of label names"):
            store.dataset("vast", chunk_by=bad)


def test_repeated_text_labels_are_held_once(tmp_path):
    """A text label that repeats (a few stimuli over many items) reads as one ``str`` object a
    value, not one a item (8 bytes an item instead of ~60: 1.7 GB of a 4-million-item CEAT
    suite's labels); contexts that differ are read as they are; the values are xarray's."""
    from emb.store.store import TEXT_SAMPLE, _shared_text

    ds = vast_dataset(n_words=30, n_layers=1, d=8, settings=("bleached",))
    n = TEXT_SAMPLE + 904
    rows = np.arange(n) % ds.sizes["item"]
    big = ds.isel(item=rows)
    contexts = np.array([f"item {i}: {w}" for i, w in enumerate(big["word"].values)], dtype=object)
    big = big.assign_coords(context=("item", contexts))
    path = write_store(tmp_path / "big.zarr", {"vast": big})
    opened = emb.open_store(path).dataset("vast")
    plain = xr.open_zarr(path, group="vast", consolidated=False, zarr_format=3)
    for name in ("word", "setting", "stimulus_set", "context"):
        values = opened[name].values
        np.testing.assert_array_equal(values, plain[name].values)
        objects = len({id(v) for v in values})
        distinct = len(set(values.tolist()))
        assert objects == (n if name == "context" else distinct), (name, objects, distinct)
    # a column of distinct values is handed back as it is; a short one too
    distinct_text = np.array([f"c{i}" for i in range(TEXT_SAMPLE + 1)], dtype=object)
    assert _shared_text(distinct_text) is distinct_text
    short = np.array(["a"] * 10, dtype=object)
    assert _shared_text(short) is short
