"""A test's vectors gathered by one indexing (gather_test, select_positions) and handed to a
kernel in one block (vectors): the same values as a selection per role and setting, few tasks."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from emb.analyses._examples import lazy, weat_dataset
from emb.analyses._select import select_positions, select_words
from emb.analyses.wordsets.each_test import vectors
from emb.analyses.wordsets.resolve import gather_test, resolve_tests
from emb.analyses.wordsets.tests_file import ROLES
from emb.errors import MissingStimuliError


def _tests(ds: xr.Dataset):
    return resolve_tests(ds, tests=None, x=None, y=None, a=None, b=None, settings=None,
                         include_excluded=False)


def _by_role(ds: xr.Dataset, test, settings: list[str]) -> np.ndarray:
    """The vectors by one select_words per role and setting (the definition), (setting, item, …)."""
    return np.stack([
        np.concatenate([select_words(ds, test.words[role], setting=s, **test.filters.get(role, {}))
                        .embedding.values for role in ROLES])
        for s in settings])


@pytest.mark.parametrize("chunked", [False, True])
def test_gather_equals_a_selection_per_role_and_setting(chunked):
    ds = weat_dataset()
    ds = lazy(ds, item_chunk=7) if chunked else ds
    tests, _, settings = _tests(ds)
    for test in tests:
        got = gather_test(ds, test, settings)
        assert got.dims == ("setting", "item", "layer", "pooling", "feature")
        assert got["setting"].values.tolist() == settings
        np.testing.assert_array_equal(got.values, _by_role(ds, test, settings))
        np.testing.assert_array_equal(vectors(ds, test, settings).values, got.values)


def test_vectors_hand_a_kernel_one_block_per_test():
    ds = lazy(weat_dataset(), item_chunk=7)  # 1 layer, 1 pooling per stored chunk
    tests, _, settings = _tests(ds)
    emb = vectors(ds, tests[0], settings)
    assert emb.data.numblocks == (1, 1, 1, 1, 1)  # items, features, layers, poolings, settings


def test_select_positions_are_select_words_items():
    ds = weat_dataset()
    words = ds["word"].values[ds["role"].values == "A"][:3].tolist()
    test = str(ds["test"].values[ds["role"].values == "A"][0])
    pos = select_positions(ds, words, setting="bleached", test=test, role="A")
    sel = select_words(ds, words, setting="bleached", test=test, role="A")
    assert ds["word"].values[pos].tolist() == words == sel["word"].values.tolist()
    with pytest.raises(MissingStimuliError, match="1 of 2 words are missing"):
        select_positions(ds, [words[0], "nosuchword"], setting="bleached", test=test, role="A")


def test_merged_chunks_stay_under_the_cap():
    """A small model's layers and poolings merge into one chunk per item block; a large one's
    (33 layers × 4 poolings × 4,096 features × 512 items = 528 MiB) stay as stored."""
    import dask.array as da

    from emb.analyses.wordsets.each_test import _MAX_BLOCK_BYTES, _merged_chunks

    def store(shape, chunks):
        emb = da.zeros(shape, dtype="float16", chunks=chunks)
        return xr.Dataset({"embedding": (("item", "layer", "pooling", "feature"), emb)})

    small = _merged_chunks(store((1024, 7, 4, 384), (512, 1, 4, 384)))
    assert small.embedding.data.chunksize == (512, 7, 4, 384)
    large = _merged_chunks(store((1024, 33, 4, 4096), (512, 1, 4, 4096)))
    assert large.embedding.data.chunksize == (512, 1, 4, 4096)
    assert 512 * 4 * 4096 * 2 <= _MAX_BLOCK_BYTES < 512 * 33 * 4 * 4096 * 2
