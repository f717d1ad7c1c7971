"""Windows of blocks: one length-sorted pass per window, and a resume that recomputes a window
whole, so that a real model's vectors come out bitwise as in an uninterrupted run."""

from __future__ import annotations

import random
import shutil

import numpy as np
import pytest
import zarr

pytest.importorskip("torch")

import emb  # noqa: E402
from emb.extract.pipeline import extract  # noqa: E402
from emb.extract.suites import Item, Suite  # noqa: E402

WORDS = "love war peace happiness unbelievably bridge cat dog catastrophe wonderful terrible".split()


def varied_suite(n: int = 64) -> Suite:
    """Contexts of 2 to ~20 tokens, so batches differ in width with their composition."""
    rng = random.Random(0)
    items = []
    for i in range(n):
        word = rng.choice(WORDS)
        before = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12)))
        start = len(before) + (1 if before else 0)
        context = f"{before} {word} is here{'.' * (i % 4)}".lstrip()
        items.append(Item(context=context, word=word, char_start=start, char_end=start + len(word),
                          setting="random", stimulus_set="toy", labels={}))
    return Suite(name="v", items=tuple(items))


def values(path) -> np.ndarray:
    return emb.open_store(str(path)).dataset("v").embedding.values


def test_resumed_window_is_recomputed_whole_and_bitwise_identical(gpt2_runner, tmp_path):
    suite = varied_suite()
    opts = dict(block_size=8, storage_dtype="float32", batch_size=8, progress=False)
    ref = tmp_path / "ref.zarr"
    (r,) = extract(gpt2_runner, suite, str(ref), window_blocks=4, **opts)  # 8 blocks, 2 windows
    assert (r.blocks_total, r.n_computed) == (8, 64)
    stored = emb.open_store(str(ref)).dataset("v").attrs["extraction"]
    assert stored["window_blocks"] == 4 and stored["truncate_after_target"] is True  # GPT-2

    # batch composition shows in the float32 bits: windows of one block give other vectors
    single = tmp_path / "single.zarr"
    extract(gpt2_runner, suite, str(single), window_blocks=1, **opts)
    assert not np.array_equal(values(single), values(ref))
    np.testing.assert_allclose(values(single), values(ref), rtol=1e-4, atol=1e-5)

    # a run killed while writing the second window: blocks 5 and 7 unwritten (garbage, no marker)
    path = tmp_path / "resumed.zarr"
    shutil.copytree(ref, path)
    group = zarr.open_group(str(path / "v"), mode="a")
    for b in (5, 7):
        group["embedding"][b * 8 : (b + 1) * 8] = np.zeros((8, *group["embedding"].shape[1:]))
        group["_progress/done"][b] = 0
    group.attrs["complete"] = False
    assert emb.open_store(str(path)).validate().status == "incomplete"

    # the resume uses the stored window (4 blocks), whatever this call asks for, and recomputes
    # that window whole: 32 items, of which it writes the 2 unwritten blocks
    (r,) = extract(gpt2_runner, suite, str(path), window_blocks=1, **opts)
    assert (r.blocks_written, r.n_computed) == (2, 32)
    np.testing.assert_array_equal(values(path), values(ref))
    assert emb.open_store(str(path)).validate(deep=True).status == "complete"


def test_window_must_be_a_positive_integer(gpt2_runner, tmp_path):
    with pytest.raises(emb.errors.EmbError, match="window_blocks must be a positive integer"):
        extract(gpt2_runner, varied_suite(4), str(tmp_path / "s.zarr"), window_blocks=0,
                progress=False)
    assert not (tmp_path / "s.zarr").exists()
