"""The store written by the extract pipeline: layout, dedup, reuse, refusal, resume after SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

import emb
from emb.errors import IncompleteStoreError, StoreError, StoreMismatchError, TargetNotFoundError
from emb.extraction.pipeline import extract
from emb.stimuli.suites import Item, Suite
from emb.store._shard_bytes import all_finite as _all_finite
from tests.fakes import FakeInfo, FakeRunner, token_vectors

REPO = Path(__file__).resolve().parents[2]


def make_suite(items, name="s"):
    return Suite(name=name, items=tuple(items))


def item(context, word, setting="bleached", stimulus_set="lexicon", occurrence=0, **labels):
    start = -1
    for _ in range(occurrence + 1):
        start = context.index(word, start + 1)
    return Item(context=context, word=word, char_start=start, char_end=start + len(word),
                setting=setting, stimulus_set=stimulus_set, labels=labels)


def words_suite(n, name="s", settings=("bleached", "alone")):
    items = []
    for s in settings:
        for i in range(n):
            w = f"w{i}"
            ctx = f"This is {w}." if s == "bleached" else w
            items.append(item(ctx, w, setting=s, valence=float(i % 9 + 1), lexicon="toy"))
    return make_suite(items, name=name)


def expected(context, start, end, poolings=("first", "last", "mean", "max")):
    import re

    info = FakeInfo()

    toks = list(re.finditer(r"\w+|[^\w\s]", context))
    target = [j for j, m in enumerate(toks) if m.start() < end and m.end() > start]
    vec = token_vectors(context, info.n_layers, info.hidden_size)[target]
    pooled = {"first": vec[0], "last": vec[-1], "mean": vec.mean(0), "max": vec.max(0)}
    return np.stack([pooled[p] for p in poolings], axis=1)  # (layer, pooling, feature)


def test_layout_readable_with_plain_xarray(tmp_path):
    suite = make_suite([
        item("This is love.", "love", valence=8.0, lexicon="toy"),
        item("I love love songs", "love", setting="random", occurrence=1, valence=8.0, lexicon="toy"),
        item("Unbelievably good", "Unbelievably", setting="random", valence=6.0, lexicon="toy"),
    ])
    path = str(tmp_path / "s.zarr")
    extract(FakeRunner(), suite, path, progress=False)
    ds = xr.open_zarr(path, group="s")
    assert ds.embedding.dims == ("item", "layer", "pooling", "feature")
    assert ds.embedding.shape == (3, 4, 4, 8)
    for name in ("word", "context", "setting", "stimulus_set", "n_subtokens", "char_start",
                 "char_end", "valence", "lexicon"):
        assert name in ds.coords, name
    assert list(ds.layer.values) == [0, 1, 2, 3]
    assert list(ds.pooling.values) == ["first", "last", "mean", "max"]
    assert ds.attrs["model"]["model_id"] == "fake-model"
    assert ds.attrs["suite"]["n_items"] == 3
    assert "last block" in ds.attrs["extraction"]["layer_semantics"]
    for i, it in enumerate(suite.items):
        want = expected(it.context, it.char_start, it.char_end)
        got = ds.embedding.isel(item=i).values.astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=2**-10, atol=1e-3)
    # the second "love" differs from the first one in the same sentence
    first = expected("I love love songs", 2, 6)
    assert not np.allclose(first, ds.embedding.isel(item=1).values, atol=1e-2)


def test_open_store_api_and_info(tmp_path):
    path = str(tmp_path / "s.zarr")
    extract(FakeRunner(), words_suite(50), path, progress=False)
    store = emb.open_store(path)
    assert store.suites == ("s",)
    ds = store.dataset("s")
    assert isinstance(ds.embedding.data, __import__("dask").array.Array)
    assert isinstance(ds.word.values, np.ndarray)  # coordinates are in memory
    info = store.info()
    assert info.complete and info.suites[0].n_items == 100 and info.size_bytes > 0
    assert store.validate().status == "complete"
    with pytest.raises(StoreError, match="'nope' is not in store"):
        store.dataset("nope")


def test_same_context_computed_once_within_and_across_suites(tmp_path):
    path = str(tmp_path / "s.zarr")
    runner = FakeRunner()
    a = words_suite(40, name="a")
    dup = make_suite(list(a.items) + list(a.items[:10]), name="a2")  # 10 repeated items
    reports = extract(runner, [a, dup], path, progress=False)
    assert reports[0].n_computed == 80 and reports[0].n_copied == 0
    assert reports[1].n_computed == 0 and reports[1].n_copied == 90
    assert sum(runner.calls) == 80
    store = emb.open_store(path)
    x = store.dataset("a").embedding.values
    y = store.dataset("a2").embedding.values
    np.testing.assert_array_equal(x, y[:80])
    np.testing.assert_array_equal(x[:10], y[80:])


def test_rerun_is_idempotent_and_adding_a_suite_keeps_others(tmp_path):
    path = str(tmp_path / "s.zarr")
    extract(FakeRunner(), words_suite(30, name="a"), path, progress=False)
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "s.zarr" / "a").rglob("*") if p.is_file()}
    runner = FakeRunner()
    (r,) = extract(runner, words_suite(30, name="a"), path, progress=False)
    assert r.already_complete and runner.calls == []
    extract(FakeRunner(), words_suite(5, name="b", settings=("random",)), path, progress=False)
    after = {p: p.stat().st_mtime_ns for p in (tmp_path / "s.zarr" / "a").rglob("*") if p.is_file()}
    assert before == after
    assert emb.open_store(path).suites == ("a", "b")


def test_other_model_and_other_definition_are_refused(tmp_path):
    path = str(tmp_path / "s.zarr")
    extract(FakeRunner(), words_suite(10, name="a"), path, progress=False)
    other = FakeRunner(info=FakeInfo(revision="r2"))
    with pytest.raises(StoreMismatchError, match="another model.*revision"):
        extract(other, words_suite(10, name="b"), path, progress=False)
    assert emb.open_store(path).suites == ("a",)  # nothing written
    with pytest.raises(StoreMismatchError, match="another definition.*--name"):
        extract(FakeRunner(), words_suite(11, name="a"), path, progress=False)
    with pytest.raises(StoreMismatchError, match="other settings.*poolings"):
        extract(FakeRunner(), words_suite(10, name="a"), path, poolings=("mean",), progress=False)
    (r,) = extract(FakeRunner(), words_suite(11, name="a"), path, overwrite=True, progress=False)
    assert r.n_items == 22


def test_target_not_found_writes_nothing(tmp_path):
    class Picky(FakeRunner):
        def encode(self, contexts, spans, *, bos=None, bos_token_id=None):
            bad = [(i, c) for i, c in enumerate(contexts) if "zzz" in c]
            if bad:
                raise TargetNotFoundError(f"targets not found: {bad}")
            return super().encode(contexts, spans, bos=bos)

    suite = make_suite([item("This is love.", "love"), item("This is zzz.", "zzz")])
    path = tmp_path / "s.zarr"
    with pytest.raises(TargetNotFoundError, match="This is zzz"):
        extract(Picky(), suite, str(path), progress=False)
    assert not path.exists()


def test_incomplete_suite_is_reported_and_refused_for_reading(tmp_path):
    path = str(tmp_path / "s.zarr")

    class Boom(FakeRunner):
        def embed(self, encodings, **kw):
            if len(self.calls) == 2:
                raise RuntimeError("boom")
            return super().embed(encodings, **kw)

    with pytest.raises(RuntimeError):
        extract(Boom(), words_suite(100), path, progress=False, block_size=32, window_blocks=1)
    store = emb.open_store(path)
    report = store.validate()
    assert report.status == "incomplete"
    assert "2 of 7 blocks" in " ".join(report.problems)
    with pytest.raises(IncompleteStoreError, match="re-run the same 'emb extract'"):
        store.dataset("s")
    runner = FakeRunner()
    (r,) = extract(runner, words_suite(100), path, progress=False, block_size=32)
    assert r.blocks_written == 5 and sum(runner.calls) == 200 - 64
    assert emb.open_store(path).validate(deep=True).status == "complete"


def test_interrupted_window_resumes_from_its_first_unwritten_block(tmp_path):
    path = str(tmp_path / "s.zarr")

    class Boom(FakeRunner):  # fails computing the second window (blocks 2 and 3)
        def embed(self, encodings, **kw):
            if len(self.calls) == 1:
                raise RuntimeError("boom")
            return super().embed(encodings, **kw)

    runner = Boom()
    with pytest.raises(RuntimeError):
        extract(runner, words_suite(100), path, progress=False, block_size=32, window_blocks=2)
    assert runner.calls == [64]  # one embed call for the two blocks of the first window
    assert "2 of 7 blocks" in " ".join(emb.open_store(path).validate().problems)
    runner = FakeRunner()
    (r,) = extract(runner, words_suite(100), path, progress=False, block_size=32)
    assert r.blocks_written == 5 and runner.calls == [64, 64, 8]  # windows of 2 blocks, as stored
    assert emb.open_store(path).validate(deep=True).status == "complete"


def test_float16_overflow_is_refused(tmp_path):
    class Huge(FakeRunner):  # finite activations of ~1e6, as a real runner would round them
        def embed(self, encodings, *, out_dtype="float32", **kw):
            values = super().embed(encodings, **kw) * 1e6
            with np.errstate(over="ignore"):
                return values.astype(out_dtype)

    with pytest.raises(StoreError, match="float16 range.*--storage-dtype float32"):
        extract(Huge(), words_suite(5), str(tmp_path / "s.zarr"), progress=False)
    (r,) = extract(Huge(), words_suite(5), str(tmp_path / "t.zarr"), progress=False,
                   storage_dtype="float32")
    assert r.n_computed == 10

    class Broken(FakeRunner):
        def embed(self, encodings, **kw):
            out = super().embed(encodings, **kw)
            out[0, 1, 0, 0] = np.nan
            return out

    path = str(tmp_path / "nan.zarr")
    with pytest.raises(StoreError, match="NaN hidden states in block 0"):
        extract(Broken(), words_suite(5), path, progress=False, storage_dtype="float32")
    assert emb.open_store(path).validate().status == "incomplete"  # nothing marked done


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_exponent_bit_finiteness_test_agrees_with_numpy(dtype):
    rng = np.random.default_rng(0)
    info = np.finfo(dtype)
    values = (rng.standard_normal((6, 3, 2, 5)) * 100).astype(dtype)
    values[0, 0, 0, :4] = [info.max, -info.max, info.tiny / 4, -0.0]  # extremes, subnormal, -0
    assert _all_finite(values) and _all_finite(values[:0])
    for bad in (np.nan, -np.nan, np.inf, -np.inf):
        for where in [(0, 0, 0, 0), (5, 2, 1, 4), (3, 1, 0, 2)]:
            broken = values.copy()
            broken[where] = bad
            assert not _all_finite(broken) and not np.isfinite(broken).all()


def test_zip_and_fsspec_url_are_readable(tmp_path):
    path = tmp_path / "s.zarr"
    extract(FakeRunner(), words_suite(20), str(path), progress=False)
    ref = emb.open_store(str(path)).dataset("s").embedding.values
    zipped = emb.open_store(str(path)).to_zip(tmp_path / "s.zip")
    np.testing.assert_array_equal(emb.open_store(str(zipped)).dataset("s").embedding.values, ref)
    url = f"file://{path}"
    np.testing.assert_array_equal(emb.open_store(url).dataset("s").embedding.values, ref)


def test_fsspec_memory_url_can_be_written_and_read():
    pytest.importorskip("fsspec")
    url = "memory://emb-test/s.zarr"
    extract(FakeRunner(), words_suite(10), url, progress=False)
    store = emb.open_store(url)
    assert store.validate().status == "complete"
    assert store.dataset("s").embedding.shape == (20, 4, 4, 8)


def _snapshot(path: str) -> dict:
    root = zarr.open_group(path, mode="r", use_consolidated=False)
    out = {}
    for name, arr in root["s"].arrays():
        out[name] = np.asarray(arr[:])
    attrs = dict(root["s"].attrs)
    attrs.pop("created")
    attrs.pop("generation")  # each layout's own id: two runs' ids differ
    out["attrs"] = json.dumps(attrs, sort_keys=True, default=str)
    return out


_CHILD = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {repo!r})
    from tests.fakes import FakeRunner
    from tests.store.test_pipeline import words_suite
    from emb.extraction.pipeline import extract

    class Slow(FakeRunner):
        calls = 0

        def embed(self, encodings, **kw):
            time.sleep(0.02)
            Slow.calls += 1
            if {pause!r} and Slow.calls > 2:  # held after two windows until killed
                time.sleep(600)
            return super().embed(encodings, **kw)

    print("START", flush=True)
    extract(Slow(), words_suite(600), {path!r}, progress=False, block_size=16)
    print("DONE", flush=True)
    """
)


# the resume takes over the lock a killed writer left, and says so
@pytest.mark.filterwarnings("ignore:suite 's' of .* took over the writer lock:emb.errors.EmbWarning")
def test_sigkill_at_any_moment_resumes_bitwise_identical(tmp_path):
    ref = str(tmp_path / "ref.zarr")
    extract(FakeRunner(), words_suite(600), ref, progress=False, block_size=16)
    want = _snapshot(ref)
    path = str(tmp_path / "killed.zarr")
    rng = np.random.default_rng(0)
    statuses = []
    for attempt in range(6):
        # once, for certain, in the middle of writing blocks: that child holds after two windows
        # (an order, not a race, so a loaded machine cannot let it finish first)
        script = _CHILD.format(repo=str(REPO), path=path, pause=attempt == 1)
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert proc.stdout.readline().strip() == "START"
        if attempt == 1:
            marker = Path(path) / "s" / "_progress" / "done" / "c"
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and len(list(marker.glob("*"))) < 3:
                time.sleep(0.005)
        else:  # elsewhere at random moments, from layout writing to the last blocks
            time.sleep(float(rng.uniform(0.0, 0.6)) if attempt else 0.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if Path(path).exists() and any(Path(path).iterdir()):
            status = emb.open_store(path).validate().status
            assert status in ("incomplete", "complete"), status
            statuses.append(status)
    assert "incomplete" in statuses
    extract(FakeRunner(), words_suite(600), path, progress=False, block_size=16)
    assert emb.open_store(path).validate(deep=True).status == "complete"
    got = _snapshot(path)
    assert got.keys() == want.keys()
    for key in want:
        if key == "attrs":
            assert got[key] == want[key]
        else:
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)


def test_store_killed_before_its_first_suite_is_incomplete(tmp_path):
    bare = tmp_path / "bare.zarr"
    zarr.open_group(str(bare), mode="w", zarr_format=3)  # what a kill right after creation leaves
    report = emb.open_store(str(bare)).validate()
    assert report.status == "incomplete" and "nothing extracted yet" in report.problems[0]
    (tmp_path / "empty.zarr").mkdir()
    with pytest.raises(IncompleteStoreError, match="empty directory"):
        emb.open_store(str(tmp_path / "empty.zarr"))
    foreign = tmp_path / "foreign.zarr"
    zarr.open_group(str(foreign), mode="w", zarr_format=3).attrs["x"] = 1
    with pytest.raises(StoreError, match="not an emb store"):
        emb.open_store(str(foreign))
