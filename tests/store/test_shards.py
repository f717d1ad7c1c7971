"""Sharded extraction (``emb extract --shard I/N``): the plan, cooperating workers in any order,
per-shard progress, refusals, a killed shard resumed, and three workers on a real S3-protocol
server (moto's server mode on 127.0.0.1)."""

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
import zarr
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import emb
from emb.cli.main import main
from emb.errors import EmbError, StoreLockedError, StoreMismatchError
from emb.extraction.options import DEVICE, SHARD
from emb.extraction.pipeline import extract
from emb.extraction.shards import Shard, partition
from emb.store._location import open_zarr_store
from emb.store.lock import WriterLock, lock_path
from emb.store.shards import read_record, shard_lock_path
from emb.store.validate import suite_shards
from tests.fakes import FakeRunner
from tests.store.test_pipeline import item, make_suite

REPO = Path(__file__).resolve().parents[2]
BLOCK, WINDOW = 8, 2  # 8 items a block, 2 blocks a window


class BatchRunner(FakeRunner):
    """Vectors that depend on the batch they were computed in (as padded GPU batches can, in
    their last bits): a row computed in another window than a single process computes it in, or
    recomputed instead of copied, differs."""

    def embed(self, encodings, **kw):
        out = super().embed(encodings, **kw)
        return (out.astype(np.float32) + np.float32(0.01 * len(encodings))).astype(out.dtype)


def repeat_suite(n: int = 200, distinct: int = 37, name: str = "s"):
    """Words repeating every ``distinct`` items: most items copy a row of an earlier window."""
    items = []
    for i in range(n):
        w = f"w{i % distinct}"
        setting = "bleached" if i % 3 else "alone"
        ctx = f"This is {w}." if setting == "bleached" else w
        items.append(item(ctx, w, setting=setting, valence=float(i % 9 + 1), lexicon="toy"))
    return make_suite(items, name=name)


def snapshot(location: str, name: str = "s") -> dict[str, tuple[str, tuple, bytes]]:
    """Every array of the suite (embedding and coordinates) as dtype, shape and raw bytes."""
    root = zarr.open_group(open_zarr_store(location), mode="r", use_consolidated=False)
    out = {}
    for key, arr in root[name].arrays():
        values = np.asarray(arr[:])
        raw = values.tobytes() if values.dtype != object else json.dumps(
            [v.decode() if isinstance(v, bytes) else str(v) for v in values.ravel()]).encode()
        out[key] = (str(values.dtype), values.shape, raw)
    return out


def one_process(tmp_path: Path, suite=None) -> dict:
    path = str(tmp_path / "one.zarr")
    extract(BatchRunner(), suite or repeat_suite(), path, progress=False, block_size=BLOCK,
            window_blocks=WINDOW)
    return snapshot(path)


# -- the plan ---------------------------------------------------------------------------------------
def test_shard_spec_is_checked():
    assert SHARD.parse("2/8") == Shard(2, 8) and str(Shard(2, 8)) == "2/8"
    assert SHARD.parse(" 1 / 1 ") == Shard(1, 1) and SHARD.parse(None) is None
    assert SHARD.parse(Shard(2, 3)) == SHARD.parse((2, 3)) == Shard(2, 3)
    assert Shard(3, 4).label == "shard-3-of-4"
    # ASCII digits only: int() would read "１/４" as 1/4 and "٢/٢" as 2/2
    for bad in ("0/3", "4/3", "1/0", "a/b", "3", "1/2/3", "-1/2", "１/４", "٢/٢", "1_0/20",
                (0, 3), (1, 2, 3), 7):
        with pytest.raises(EmbError, match=r"--shard \(shard= in Python\) must be I/N with whole"):
            SHARD.parse(bad)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 1000), max_size=60), st.integers(1, 12))
def test_partition_is_contiguous_complete_and_balanced(costs, count):
    runs = partition(costs, count)
    assert len(runs) == count and runs[0][0] == 0 and runs[-1][1] == len(costs)
    for (a, b), (c, _) in zip(runs, runs[1:], strict=False):
        assert a <= b == c  # contiguous, in order, nothing twice
    total = sum(costs)
    for a, b in runs:  # no run costs more than its share plus one window
        assert sum(costs[a:b]) <= total / count + max(costs, default=0) + 1e-9
    if len(costs) >= count:  # each cut is the boundary nearest its target
        cumulative = np.concatenate([[0], np.cumsum(costs)])
        for i, (a, _) in enumerate(runs[1:], start=1):
            assert abs(cumulative[a] - total * i / count) <= np.abs(cumulative - total * i / count).min() + 1e-9
    assert partition(costs, count) == runs  # a pure function: every worker cuts the same


def test_two_windows_of_nearly_equal_cost_go_to_two_shards():
    assert partition([100, 101], 2) == [(0, 1), (1, 2)]  # found by benchmarks/extract.py --shards 2
    assert partition([101, 100], 2) == [(0, 1), (1, 2)]
    assert partition([1, 1, 1, 1], 4) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert partition([5], 3) == [(0, 0), (0, 1), (1, 1)]  # one window: one shard, two empty


def test_device_spec_is_checked():
    assert DEVICE.parse("CUDA:1") == "cuda:1" and DEVICE.parse("auto") == "auto"
    for bad in ("gpu", "cuda:x", "cuda:-1", "cpu:0", "cuda:1:2", "", "cuda:１"):
        with pytest.raises(EmbError, match=r"--device \(device= in Python\) must be auto, cpu"):
            DEVICE.parse(bad)
    result = CliRunner().invoke(main, ["extract", "--model", "m", "--suite", "weat", "--store",
                                       "x.zarr", "--device", "gpu1"])
    assert result.exit_code == 2 and "must be auto, cpu, mps, cuda" in result.output
    assert "got 'gpu1'" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("count", "order"),
    [(1, [1]), (2, [2, 1]), (3, [3, 1, 2]), (3, [1, 2, 3]), (5, [4, 2, 5, 1, 3]), (13, None)],
)
def test_shards_in_any_order_give_the_single_process_store(tmp_path, count, order):
    want = one_process(tmp_path)
    path = str(tmp_path / "sharded.zarr")
    order = order or list(np.random.default_rng(0).permutation(np.arange(1, count + 1)))
    ran: set[int] = set()
    was_complete = False
    for index in order:
        (report,) = extract(BatchRunner(), repeat_suite(), path, progress=False, block_size=BLOCK,
                            window_blocks=WINDOW, shard=f"{index}/{count}")
        ran.add(int(index))
        # complete exactly when every shard with blocks has run (13 shards: one per window;
        # more are refused, see tests/faults/test_store.py)
        record = read_record(open_zarr_store(path), "s")
        working = {i + 1 for i, (a, b) in enumerate(record.blocks) if b > a}
        want_status = "complete" if working <= ran else "incomplete"
        assert emb.open_store(path).validate().status == want_status
        assert report.already_complete == was_complete  # an empty shard run after the last one
        was_complete = want_status == "complete"
    # cut by cost, 13 shards over 13 windows may leave some without work, never more than 13
    assert len(working) == count if count <= 5 else 0 < len(working) <= 13
    assert snapshot(path) == want
    assert emb.open_store(path).validate(deep=True).status == "complete"
    # a worker re-run on the finished suite finds it complete and changes nothing
    before = {str(p): p.stat().st_mtime_ns for p in Path(path).rglob("*") if p.is_file()}
    (again,) = extract(BatchRunner(), repeat_suite(), path, progress=False, block_size=BLOCK,
                       window_blocks=WINDOW, shard=f"{order[0]}/{count}")
    assert again.already_complete and again.blocks_written == 0
    assert {str(p): p.stat().st_mtime_ns for p in Path(path).rglob("*") if p.is_file()} == before
    record = read_record(open_zarr_store(path), "s")
    assert record.count == count and record.windows[0][0] == 0
    assert record.windows[-1][1] == 13 and record.blocks[-1][1] == 25  # ceil(25 blocks / 2)
    assert not list(Path(path).glob(".emb-lock*"))  # every lock released and removed


def test_a_shard_that_copies_from_another_finished_suite(tmp_path):
    """Rows reused from a finished suite: every shard copies from the suites the record names."""
    other = repeat_suite(60, name="first")
    want_dir = tmp_path / "w"
    want_dir.mkdir()
    want = str(want_dir / "one.zarr")
    extract(BatchRunner(), other, want, progress=False, block_size=BLOCK, window_blocks=WINDOW)
    extract(BatchRunner(), repeat_suite(), want, progress=False, block_size=BLOCK, window_blocks=WINDOW)
    path = str(tmp_path / "sharded.zarr")
    extract(BatchRunner(), other, path, progress=False, block_size=BLOCK, window_blocks=WINDOW)
    for index in (2, 3, 1):
        extract(BatchRunner(), repeat_suite(), path, progress=False, block_size=BLOCK,
                window_blocks=WINDOW, shard=f"{index}/3")
    assert read_record(open_zarr_store(path), "s").reuse_from == ("first",)
    assert snapshot(path) == snapshot(want)


def test_info_and_validate_show_each_shards_progress(tmp_path):
    path = str(tmp_path / "s.zarr")
    extract(BatchRunner(), repeat_suite(), path, progress=False, block_size=BLOCK,
            window_blocks=WINDOW, shard="1/3")
    progress = suite_shards(open_zarr_store(path), "s")
    assert [p.index for p in progress] == [1, 2, 3]
    assert progress[0].complete and progress[1].blocks_done == progress[2].blocks_done == 0
    assert sum(p.blocks_total for p in progress) == 25
    runner = CliRunner()
    info = runner.invoke(main, ["info", path])
    assert info.exit_code == 0, info.output
    assert "shard 1/3: done" in info.output and f"shard 2/3: 0/{progress[1].blocks_total} blocks" in info.output
    as_json = json.loads(runner.invoke(main, ["info", path, "--json"]).output)
    assert as_json["suites"][0]["shards"][0] == {
        "shard": "1/3", "blocks_done": progress[0].blocks_total, "blocks_pending_copies": 0,
        "blocks_total": progress[0].blocks_total,
    }
    checked = runner.invoke(main, ["validate", path])
    assert checked.exit_code == 1
    assert "shard 2/3: 0/" in checked.output and "--shard I/N" in checked.output
    assert "shard 1/3" not in checked.output  # finished shards are not listed as problems
    # shard 3 alone: its blocks copy rows of shard 2's windows, which are not written yet
    extract(BatchRunner(), repeat_suite(), path, progress=False, block_size=BLOCK,
            window_blocks=WINDOW, shard="3/3")
    info = runner.invoke(main, ["info", path]).output
    assert "waiting for rows of other shards" in info and "shard 2/3: 0/" in info
    extract(BatchRunner(), repeat_suite(), path, progress=False, block_size=BLOCK,
            window_blocks=WINDOW, shard="2/3")
    assert runner.invoke(main, ["validate", path, "--deep"]).exit_code == 0
    assert "shard" not in runner.invoke(main, ["info", path]).output


def test_refusals(tmp_path):
    path = str(tmp_path / "s.zarr")
    kw = {"progress": False, "block_size": BLOCK, "window_blocks": WINDOW}
    extract(BatchRunner(), repeat_suite(), path, shard="1/3", **kw)
    with pytest.raises(StoreMismatchError, match=r"in 3 shards, this run asks for 4: give --shard I/3"):
        extract(BatchRunner(), repeat_suite(), path, shard="1/4", **kw)
    with pytest.raises(EmbError, match="--overwrite cannot be combined with --shard"):
        extract(BatchRunner(), repeat_suite(), path, shard="2/3", overwrite=True, **kw)
    # a live worker of shard 2 holds its lock: a second one and a whole-suite writer are refused
    held = WriterLock.acquire(shard_lock_path(path, "s", "shard-2-of-3"), what="t", purpose="test")
    try:
        with pytest.raises(StoreLockedError, match=r"shard-2-of-3.*pid"):
            extract(BatchRunner(), repeat_suite(), path, shard="2/3", **kw)
        with pytest.raises(StoreLockedError, match="shard-2-of-3"):
            extract(BatchRunner(), repeat_suite(), path, **kw)
        # another shard is not held up
        extract(BatchRunner(), repeat_suite(), path, shard="3/3", **kw)
    finally:
        held.release()
    # a whole-suite writer finishes what the shards left (bitwise the same)
    extract(BatchRunner(), repeat_suite(), path, **kw)
    assert snapshot(path) == one_process(tmp_path)
    assert not Path(lock_path(path, "s")).exists()


def test_a_layout_being_written_is_waited_for_not_called_damaged(tmp_path):
    """The check that reads before any lock is taken meets a group whose arrays are there and
    whose zarr.json is not yet: another worker is laying it out under the suite's lock (CI once
    caught a shard worker refusing the store as damaged at that moment).  A shard writer waits
    for that worker's layout and goes on; a whole-suite writer is told who holds the lock; the
    same group with nobody writing it is damaged, for both."""
    import threading

    from emb.errors import CorruptStoreError
    from emb.schemas import datamodel as dm
    from emb.store._write_checks import check_group

    path = str(tmp_path / "one.zarr")
    extract(BatchRunner(), repeat_suite(40), path, progress=False, block_size=BLOCK,
            window_blocks=WINDOW)
    meta_file = Path(path) / "s" / "zarr.json"
    attrs = json.loads(meta_file.read_text())["attributes"]
    zstore = open_zarr_store(path, mode="r")

    def check(shard):
        check_group(path, zstore, name="s", suite_attrs=attrs[dm.ATTR_SUITE],
                    extraction=attrs[dm.ATTR_EXTRACTION], overwrite=False, shard=shard)

    saved = meta_file.read_bytes()
    meta_file.unlink()
    holding = threading.Event()
    written_at: list[float] = []

    def other_worker_lays_out():
        with WriterLock.acquire(lock_path(path, "s"), what="suite", purpose="lay out suite 's'"):
            holding.set()
            time.sleep(1.5)
            written_at.append(time.monotonic())  # before the write: seen only after this
            meta_file.write_bytes(saved)  # its layout is whole, then it lets go

    worker = threading.Thread(target=other_worker_lays_out)
    worker.start()
    holding.wait()
    with pytest.raises(StoreLockedError, match="is being written by another emb process"):
        check(None)
    check("shard-1-of-2")  # waited, then found a whole layout to resume
    returned_at = time.monotonic()
    worker.join()
    # it returned only after the other worker's layout was whole (an order, not a duration: a
    # loaded machine can spend most of the 1.5 s before this check starts)
    assert written_at and returned_at >= written_at[0], (written_at, returned_at)
    check(None)

    meta_file.unlink()  # nobody writing: damaged is damaged
    for shard in (None, "shard-1-of-2"):
        with pytest.raises(CorruptStoreError, match="missing but data is there"):
            check(shard)


@pytest.mark.parametrize("other", ["same model", "bare root", "another model"])
def test_a_root_created_by_another_worker_meanwhile_is_taken(tmp_path, monkeypatch, other):
    """Object storage has no root lock: a worker sees no root, another worker creates it, then
    zarr's create refuses (ContainsGroupError; CI once showed it as a traceback from a shard
    worker on S3).  The root the other worker wrote is taken and checked like any other."""
    from emb.schemas import datamodel as dm
    from emb.store import _write_checks

    path = str(tmp_path / "race.zarr")
    model = FakeRunner().info.to_dict()
    other_model = {**model, "model_id": "someone/else"}
    real_open = zarr.open_group
    calls = []

    def open_group(store, *, mode="a", **kw):
        if mode == "a" and not calls:  # the other worker wins the race between look and create
            calls.append(mode)
            group = real_open(store, mode="w", zarr_format=3, use_consolidated=False)
            if other != "bare root":
                group.update_attributes({
                    dm.ATTR_SCHEMA_VERSION: dm.STORE_SCHEMA_VERSION,
                    dm.ATTR_MODEL: other_model if other == "another model" else model,
                })
            raise zarr.errors.ContainsGroupError("A group exists in store at path ''.")
        return real_open(store, mode=mode, **kw)

    monkeypatch.setattr(_write_checks.zarr, "open_group", open_group)
    if other == "another model":
        with pytest.raises(StoreMismatchError, match="another model"):
            _write_checks.open_for_writing(path, model=model)
        return
    _, root = _write_checks.open_for_writing(path, model=model)
    assert calls and root.attrs[dm.ATTR_MODEL]["model_id"] == model["model_id"]
    assert root.attrs[dm.ATTR_SCHEMA_VERSION] == dm.STORE_SCHEMA_VERSION


def test_a_root_recreated_bare_by_another_worker_gets_its_attributes_back(tmp_path, monkeypatch):
    """Object storage again: a worker that saw no root creates it bare after ours had its
    attributes, and we read the root in between. The root we return (and the store) has the
    model and schema again, not a root a later layout write finds without its model."""
    from emb.schemas import datamodel as dm
    from emb.store import _write_checks

    path = str(tmp_path / "race.zarr")
    model = FakeRunner().info.to_dict()
    real_open = zarr.open_group
    late = []

    def open_group(store, *, mode="a", **kw):
        if mode == "r+" and not late:  # the other worker's create lands just before our read
            late.append(mode)
            real_open(store, mode="w", zarr_format=3, use_consolidated=False)
        return real_open(store, mode=mode, **kw)

    monkeypatch.setattr(_write_checks.zarr, "open_group", open_group)
    _, root = _write_checks.open_for_writing(path, model=model)
    assert late and root.attrs[dm.ATTR_MODEL]["model_id"] == model["model_id"]
    stored = real_open(path, mode="r", zarr_format=3, use_consolidated=False).attrs
    assert stored[dm.ATTR_MODEL] == dict(root.attrs[dm.ATTR_MODEL])
    assert stored[dm.ATTR_SCHEMA_VERSION] == dm.STORE_SCHEMA_VERSION


# -- killed and resumed, locally and on S3 ----------------------------------------------------------
_WORKER = textwrap.dedent(
    """
    import sys, time
    sys.path[:0] = [{src!r}, {repo!r}]
    from emb.extraction.pipeline import extract
    from tests.store.test_shards import BLOCK, WINDOW, BatchRunner, repeat_suite

    class Slow(BatchRunner):
        calls = 0

        def embed(self, encodings, **kw):
            time.sleep({delay})
            Slow.calls += 1
            if {pause!r} and Slow.calls > 1:  # after its first window: held until killed
                deadline = time.monotonic() + 600
                while time.monotonic() < deadline:
                    time.sleep(0.01)
            return super().embed(encodings, **kw)

    (r,) = extract(Slow(), repeat_suite({n}), {store!r}, progress=False, block_size=BLOCK,
                   window_blocks=WINDOW, shard={shard!r})
    print("DONE", r.blocks_written, flush=True)
    """
)


def _worker(store: str, shard: str, *, n: int, delay: float, env: dict | None = None,
            pause: bool = False):
    """A worker process; with ``pause`` it computes its first window, then waits (until killed)
    before its second: a kill lands mid-way whatever the machine's load."""
    script = _WORKER.format(src=str(REPO / "src"), repo=str(REPO), store=store, shard=shard,
                            n=n, delay=delay, pause=pause)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)


def _kill_mid_way_and_resume(store: str, want: dict, *, n: int, env: dict | None = None) -> None:
    """Three workers; shard 2 is SIGKILLed once it has written a block; the others end; the
    suite is incomplete; shard 2 re-run finishes it; bitwise the single-process store."""
    # shard 2 stops after its first window (an order, not a race: the kill lands before its
    # last window however slowly the machine runs)
    workers = {i: _worker(store, f"{i}/3", n=n, delay=0.1, env=env, pause=i == 2)
               for i in (1, 2, 3)}
    deadline = time.monotonic() + 300
    killed = False
    while time.monotonic() < deadline and not killed:
        try:
            progress = suite_shards(open_zarr_store(store), "s")
        except Exception:  # noqa: BLE001 - the store may not exist yet
            progress = ()
        if progress and progress[1].blocks_done + progress[1].blocks_pending_copies >= 1:
            os.kill(workers[2].pid, signal.SIGKILL)
            killed = True
        time.sleep(0.1)
    if not killed:
        for w in workers.values():
            w.kill()
        outputs = {i: w.communicate(timeout=30)[0] for i, w in workers.items()}
        pytest.fail(f"shard 2 never wrote a block; the workers said {outputs}")
    outputs = {i: w.communicate(timeout=300)[0] for i, w in workers.items()}
    assert workers[2].returncode == -signal.SIGKILL
    for i in (1, 3):
        assert workers[i].returncode == 0 and "DONE" in outputs[i], outputs[i]
    interrupted = suite_shards(open_zarr_store(store), "s")
    assert interrupted[0].complete and not interrupted[1].complete
    assert emb.open_store(store).validate().status == "incomplete"
    resumed = _worker(store, "2/3", n=n, delay=0.0, env=env)
    out = resumed.communicate(timeout=300)[0]
    assert resumed.returncode == 0 and "DONE" in out, out
    report = emb.open_store(store).validate(deep=True)
    assert report.status == "complete", report
    assert snapshot(store) == want
    manifest = zarr.open_group(open_zarr_store(store), mode="r", use_consolidated=False)[
        "s/_progress"].attrs["manifest"]
    n_blocks = -(-n // BLOCK)
    assert sum(k.startswith("embedding/c/") for k in manifest["objects"]) == n_blocks


@pytest.mark.slow
def test_killed_shard_resumes_locally(tmp_path):
    n = 160
    want = one_process(tmp_path, repeat_suite(n))
    _kill_mid_way_and_resume(str(tmp_path / "s.zarr"), want, n=n)
    assert not list((tmp_path / "s.zarr").glob(".emb-lock*"))


def test_writes_killed_workers_left_unfinished_are_gone_from_the_complete_suite(tmp_path):
    """A shard worker killed while writing leaves zarr's ``*.partial`` temporary files (a shard, a
    marker, a digest record); another worker resuming beside it must keep them (they may be
    its neighbours' writes in flight), the worker that completes the suite removes them."""
    want = one_process(tmp_path)
    path = tmp_path / "sharded.zarr"
    run = lambda i: extract(BatchRunner(), repeat_suite(), str(path), progress=False,  # noqa: E731
                            block_size=BLOCK, window_blocks=WINDOW, shard=f"{i}/3")
    run(1)
    left = [path / "s" / "embedding" / "c" / "0" / "0" / "0" / "0.5f2a.partial",
            path / "s" / "_progress" / "done" / "c" / "3.77aa.partial",
            path / "s" / "_progress" / "digest.4.json.9e1b.partial"]
    for p in left:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"half a write")
    run(2)
    assert all(p.exists() for p in left)  # the suite is not complete: kept
    run(3)
    assert emb.open_store(str(path)).validate(deep=True).status == "complete"
    assert not [p for p in path.rglob("*") if p.name.endswith(".partial")]
    assert snapshot(str(path)) == want


@pytest.fixture
def s3_env(s3_bucket):
    """The session's moto server (tests/conftest.py): the environment for child processes
    (credentials and endpoint the usual way, AWS_* variables) and a fresh bucket's name."""
    return dict(os.environ), s3_bucket.removeprefix("s3://")


@pytest.mark.slow
def test_three_workers_on_s3_one_killed_and_resumed(tmp_path, s3_env):
    env, bucket = s3_env
    n = 160
    want = one_process(tmp_path, repeat_suite(n))
    store = f"s3://{bucket}/sharded.zarr"
    _kill_mid_way_and_resume(store, want, n=n, env=env)
    # the store names no credentials or endpoint; info and validate work over S3
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    text = b"".join(fs.cat(p) for p in fs.find(f"{bucket}/sharded.zarr") if p.endswith(".json"))
    assert b"testing" not in text and env["AWS_ENDPOINT_URL"].encode() not in text
    runner = CliRunner()
    info = runner.invoke(main, ["info", store])
    assert info.exit_code == 0 and "status    complete" in info.output, info.output
    assert "size      unknown" not in info.output
    assert runner.invoke(main, ["validate", store, "--deep"]).exit_code == 0
    assert not [p for p in fs.find(bucket) if ".emb-lock" in p]  # the layout claim is gone


def test_layout_is_claimed_once_on_s3(s3_env):
    """Conditional writes: of 8 creators of one object, exactly one wins (moto and s3fs honour
    If-None-Match), which is what guards the layout on object storage."""
    from concurrent.futures import ThreadPoolExecutor

    from emb.store.shards import create_once

    _, bucket = s3_env
    zstore = open_zarr_store(f"s3://{bucket}/claims.zarr", mode="a")
    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(lambda i: create_once(zstore, "x/claim", str(i).encode()), range(8)))
    assert sum(won) == 1


def test_pending_blocks_settled_by_another_worker_keep_the_manifest_right(tmp_path, monkeypatch):
    """Worker 3 writes blocks with copies pending (rows of shard 2 not written yet); before its
    settling step, worker 2 runs whole, fills them in and completes the suite; worker 3 then
    finds every block done and writes the manifest again: with the shards' sizes and checksums
    as they are now, not as worker 3 first wrote them (a store 'emb validate' called corrupt)."""
    import emb.extraction.pipeline as pipeline

    want = one_process(tmp_path)
    path = str(tmp_path / "sharded.zarr")

    def run(index):
        return extract(BatchRunner(), repeat_suite(), path, progress=False, block_size=BLOCK,
                       window_blocks=WINDOW, shard=f"{index}/3")

    run(1)
    settle, seen = pipeline.settle, []

    def other_worker_first(writer, *args, **kwargs):
        if not seen:  # worker 3's settling step: worker 2 runs whole meanwhile
            seen.append(int((writer.markers() == 2).sum()))
            (report,) = run(2)
            assert emb.open_store(path).validate().status == "complete"
        return settle(writer, *args, **kwargs)

    monkeypatch.setattr(pipeline, "settle", other_worker_first)
    run(3)
    assert seen[0] > 0  # worker 3 left blocks with copies pending
    assert emb.open_store(path).validate(deep=True).status == "complete"
    assert snapshot(path) == want


def test_a_damaged_shard_read_for_copies_is_a_clear_error(tmp_path):
    """A worker copies rows another worker wrote; where that shard's bytes are damaged (its
    checksum fails), the worker stops with a one-line store error naming what to do, not
    zarr's ValueError from inside its codec."""
    from emb.errors import CorruptStoreError

    path = tmp_path / "sharded.zarr"

    def run(index):
        return extract(BatchRunner(), repeat_suite(), str(path), progress=False, block_size=BLOCK,
                       window_blocks=WINDOW, shard=f"{index}/3")

    run(1)
    shard = path / "s" / "embedding" / "c" / "0" / "0" / "0" / "0"
    raw = bytearray(shard.read_bytes())
    raw[100] ^= 0xFF
    shard.write_bytes(bytes(raw))
    with pytest.raises(CorruptStoreError, match="cannot be read back.*--deep.*--overwrite") as err:
        run(2)
    assert "s/embedding" in str(err.value)
