"""Windows of blocks: one length-sorted pass per window, and a resume that recomputes a window
whole, so that a real model's vectors come out bitwise as in an uninterrupted run."""

from __future__ import annotations

import random
import shutil

import numpy as np
import pytest
import zarr

pytest.importorskip("torch")

# some contexts start with their target: the position-0 warning of causal models is expected
pytestmark = pytest.mark.filterwarnings("ignore:suite 'v'.* position 0 :emb.errors.EmbWarning")

import emb  # noqa: E402
from emb.backends import Runner  # noqa: E402
from emb.extraction.pipeline import extract  # noqa: E402
from emb.stimuli.suites import Item, Suite  # noqa: E402

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


class CallSensitive(Runner):
    """A real runner whose vectors depend on how contexts are grouped into ``embed`` calls, as
    float32 bits do on machines whose BLAS kernels change with the batch's shape: each call's
    vectors are scaled by 1 + n * 2**-20 (n = the call's number of contexts).  On such a runner a
    resume is bitwise identical only if it repeats the uninterrupted run's calls exactly."""

    def __init__(self, runner):
        self.runner = runner
        self.info = runner.info

    def encode(self, *args, **kwargs):
        return self.runner.encode(*args, **kwargs)

    def embed(self, encodings, **kwargs):
        out = self.runner.embed(encodings, **kwargs)
        return out * out.dtype.type(1 + len(encodings) * 2**-20)


def damage(path, blocks, block=8):
    """What a run killed while writing ``blocks`` leaves: garbage there, markers unset."""
    group = zarr.open_group(str(path / "v"), mode="a")
    for b in blocks:
        group["embedding"][b * block : (b + 1) * block] = np.zeros((block, *group["embedding"].shape[1:]))
        group["_progress/done"][b] = 0
    group.attrs["complete"] = False


def test_resumed_window_is_recomputed_whole_and_bitwise_identical(gpt2_runner, tmp_path):
    suite = varied_suite()
    opts = dict(block_size=8, storage_dtype="float32", batch_size=8, progress=False)
    ref = tmp_path / "ref.zarr"
    (r,) = extract(gpt2_runner, suite, str(ref), window_blocks=4, **opts)  # 8 blocks, 2 windows
    assert (r.blocks_total, r.n_computed) == (8, 64)
    stored = emb.open_store(str(ref)).dataset("v").attrs["extraction"]
    assert stored["window_blocks"] == 4 and stored["truncate_after_target"] is True  # GPT-2

    # a run killed while writing the second window: blocks 5 and 7 unwritten (garbage, no marker)
    path = tmp_path / "resumed.zarr"
    shutil.copytree(ref, path)
    damage(path, (5, 7))
    assert emb.open_store(str(path)).validate().status == "incomplete"

    # the resume uses the stored window (4 blocks), whatever this call asks for, and recomputes
    # that window whole: 32 items, of which it writes the 2 unwritten blocks
    (r,) = extract(gpt2_runner, suite, str(path), window_blocks=1, **opts)
    assert (r.blocks_written, r.n_computed) == (2, 32)
    np.testing.assert_array_equal(values(path), values(ref))
    assert emb.open_store(str(path)).validate(deep=True).status == "complete"


def test_bitwise_comparison_sees_a_resume_that_regroups_the_calls(gpt2_runner, tmp_path):
    """The check above can fail on every machine: with vectors that depend on the grouping of
    the embed calls, windows of one block differ in their bits from windows of four, and only a
    resume that recomputes the stored windows whole gives the reference bits back."""
    runner = CallSensitive(gpt2_runner)
    suite = varied_suite()
    opts = dict(block_size=8, storage_dtype="float32", batch_size=8, progress=False)
    ref = tmp_path / "ref.zarr"
    extract(runner, suite, str(ref), window_blocks=4, **opts)
    single = tmp_path / "single.zarr"
    extract(runner, suite, str(single), window_blocks=1, **opts)
    assert not np.array_equal(values(single), values(ref))  # the comparison can fail …
    np.testing.assert_allclose(values(single), values(ref), rtol=1e-4, atol=1e-5)  # … by rounding

    path = tmp_path / "resumed.zarr"
    shutil.copytree(ref, path)
    damage(path, (5, 7))
    (r,) = extract(runner, suite, str(path), window_blocks=1, **opts)
    assert (r.blocks_written, r.n_computed) == (2, 32)
    np.testing.assert_array_equal(values(path), values(ref))  # … and holds for a whole window


def test_window_must_be_a_positive_integer(gpt2_runner, tmp_path):
    with pytest.raises(emb.errors.EmbError, match=r"window_blocks= must be an integer >= 1; got 0"):
        extract(gpt2_runner, varied_suite(4), str(tmp_path / "s.zarr"), window_blocks=0,
                progress=False)
    assert not (tmp_path / "s.zarr").exists()


def test_copies_of_rows_still_being_written_come_from_memory(gpt2_runner, tmp_path, monkeypatch):
    """A copy whose row lies in a window the writer threads still hold is taken from memory (no
    wait for the write, no shard decoded); older rows are read back.  Windows of one block, two
    queued: window w copies from w-1 and w-2 in memory, from w-3 and before from the store."""
    from emb.store import suite_writer as store_writer

    def items(tag: str) -> list[Item]:
        out = []
        for i, word in enumerate(WORDS[:8]):
            context = f"{tag} {i} {word} here"
            start = context.index(word, len(tag) + 2)
            out.append(Item(context=context, word=word, char_start=start, char_end=start + len(word),
                            setting="random", stimulus_set="toy", labels={}))
        return out

    a, b, c = items("alpha"), items("beta"), items("gamma")
    # windows: A, A (from window 0, in memory), B, B (from 2, in memory), C, A (from 0: read back)
    suite = Suite(name="v", items=tuple(a + a + b + b + c + a))
    read = []
    original = store_writer.SuiteWriter.read_rows

    def counted(self, rows):
        read.extend(rows)
        return original(self, rows)

    monkeypatch.setattr(store_writer.SuiteWriter, "read_rows", counted)
    path = tmp_path / "s.zarr"
    (r,) = extract(gpt2_runner, suite, str(path), block_size=8, window_blocks=1, batch_size=8,
                   storage_dtype="float32", progress=False)
    assert (r.n_computed, r.n_copied) == (24, 24)
    assert sorted(read) == list(range(8))  # window 5's copies of window 0, and only those
    got = values(path)
    for copy, source in [(range(8, 16), range(8)), (range(24, 32), range(16, 24)),
                         (range(40, 48), range(8))]:
        np.testing.assert_array_equal(got[list(copy)], got[list(source)])
    distinct = a + b + c
    direct = gpt2_runner.embed(gpt2_runner.encode(
        [it.context for it in distinct], [(it.char_start, it.char_end) for it in distinct]),
        batch_size=8)
    np.testing.assert_allclose(got[list(range(8)) + list(range(16, 24)) + list(range(32, 40))],
                               direct, rtol=1e-4, atol=1e-5)
