"""Killed writers on a local store's write paths (done-markers, digest records, kept encodings and
metadata written as files, a ``.partial`` renamed over each; rows copied from earlier shards read
shard by shard): whatever step a writer is killed before, the next run completes the suite, the
store validates, its arrays hold the bytes of an uninterrupted run, and no temporary file stays.

The defects the kill campaign found are pinned here by the state a kill leaves (fast); the
campaign itself (real child processes killed before their N-th change to the file system,
tests/faults/_inject) runs bounded at the end of this file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import emb
from emb.extraction.pipeline import extract
from tests.fakes import FakeRunner
from tests.faults._disk import REPO, small_disk
from tests.store.test_pipeline import _snapshot, item, make_suite, words_suite


def _partials(path: Path) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*.partial"))


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k] for k in a)


# -- a kill before the suite group's metadata was renamed into place --------------------------------
def test_a_group_whose_metadata_write_was_killed_is_written_not_refused(tmp_path):
    """Killed after it made the suite's directory and wrote the group's ``zarr.json`` into its
    ``.partial``, before the rename: the next run said "its metadata (s/zarr.json) is missing
    but data is there" and wanted --overwrite, though the only "data" was the temporary file."""
    suite = words_suite(20)
    whole = tmp_path / "whole.zarr"
    extract(FakeRunner(), suite, str(whole), progress=False)
    path = tmp_path / "s.zarr"
    extract(FakeRunner(), suite, str(path), progress=False)
    meta = (path / "s" / "zarr.json").read_bytes()
    for child in sorted((path / "s").rglob("*"), reverse=True):  # the group as the kill left it
        child.rmdir() if child.is_dir() else child.unlink()
    (path / "s" / "zarr.3f0c2b7d9a8e4e51b6c0d1e2f3a4b5c6.partial").write_bytes(meta)
    extract(FakeRunner(), suite, str(path), progress=False)
    assert emb.open_store(str(path)).validate(deep=True).status == "complete"
    assert _same(_snapshot(str(path)), _snapshot(str(whole)))
    assert _partials(path / "s") == []


# -- the campaign: real processes killed, started together, on a damaged or full disk -------------
def _suite_file(path: Path) -> Path:
    """90 items in 12 blocks of 8 (one block a window, see tests/faults/_kill_campaign.py): short
    contexts repeated further on (23 rows copied, many from another shard's blocks) and long ones
    (cut to GPT-2's 128 positions)."""
    items = []
    for i in range(90):
        w = f"word{i % 31}"
        if i % 11 == 5:
            context = " ".join(["filler"] * 150) + f" {w} " + " ".join(["more"] * 150)
            items.append(item(context, w, occurrence=0, valence=1.0))
        else:
            items.append(item(f"This is {w}." if i % 3 else f"{w} again and {w}", w, valence=1.0))
    path.write_text(json.dumps(make_suite(items, name="s").to_dict()))
    return path


@pytest.fixture(scope="module")
def model_and_suite(tmp_path_factory) -> tuple[Path, Path]:
    pytest.importorskip("torch")
    from tests import models

    base = tmp_path_factory.mktemp("campaign")
    return models.tiny_gpt2(base / "gpt2"), _suite_file(base / "suite.json")


def _campaign(model_and_suite, tmp_path: Path, cases: list[dict], **plan) -> dict:
    """Run tests/faults/_kill_campaign.py on ``cases``; its result."""
    model, suite = model_and_suite
    spec = {"model": str(model), "suite": str(suite), "dir": str(tmp_path / "work"), "cases": cases,
            **plan}
    (tmp_path / "plan.json").write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
           "TQDM_DISABLE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("EMB_DEBUG", None)
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "faults" / "_kill_campaign.py"),
         str(tmp_path / "plan.json"), str(tmp_path / "result.json")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    reference = result["reference"]
    assert result["reference_code"] == 0 and reference["status"] == "complete", reference
    assert reference["left"] == [] and isinstance(reference["arrays"], dict)
    return result


def _left(state: dict) -> list[str]:
    """What a run left that must not stay: temporary files and locks, but for zarr's own
    temporaries of the root's metadata (``zarr.<id>.partial`` beside the root's zarr.json: zarr
    writes it exclusively, by a link, while other suites' writers may be writing theirs, so no
    writer may delete another's; nothing reads them: not zarr, not the manifest, not emb)."""
    return [p for p in state.get("left", []) if not (p.startswith("zarr.") and "/" not in p)]


def _whole(run: dict, reference: dict) -> list[str]:
    """What is wrong with a store after a run: anything but complete and equal to the reference."""
    state = run["state"]
    wrong = []
    if state["status"] != "complete":
        wrong.append(f"status {state['status']}: {state.get('problems')}")
    wrong += [f"{key} differ" for key in ("arrays", "files", "manifest") if state.get(key) != reference[key]]
    if _left(state):
        wrong.append(f"left behind: {_left(state)}")
    return wrong


@pytest.mark.slow
def test_writers_killed_at_any_step_resume_to_the_bytes_of_one_run(model_and_suite, tmp_path):
    """One process killed before each of a spread of its steps under the store, then run again;
    a shard worker (the one that lays the suite out, and the one that finishes it) killed so,
    then run again, the others after it: the store validates (--deep), its arrays, objects and
    manifest are those of an uninterrupted one-process run, and nothing temporary stays.  (The
    whole sweep, every step of each, ran while these paths were changed: see the report of
    branch s32-crash.)"""
    result = _campaign(model_and_suite, tmp_path, [
        {"shards": None, "victim": None, "points": {"spread": 5}},
        # the layout worker also while it renames the kept encodings into place
        {"shards": 3, "victim": 1, "points": {"spread": 2, "from_end": [45, 42]}},
        # the finisher also after its manifest, while it deletes the digest records
        {"shards": 3, "victim": 3, "points": {"spread": 2, "from_end": [12]}},
    ])
    reference = result["reference"]
    runs = result["runs"]
    assert len(runs) >= 13 and {r["victim"] for r in runs} == {None, 1, 3}
    for run in runs:
        codes = list(run["codes"])
        killed = codes.pop((run["victim"] or 1) - 1)  # the victim's first run: killed
        assert killed == -9 or (killed == 0 and run["kill"] >= run["of"] - 1), run
        assert codes == [0] * len(codes), run  # every other run ends well
        assert _whole(run, reference) == [], run


@pytest.mark.slow
def test_workers_started_together_damage_and_a_full_disk(model_and_suite, tmp_path):
    """Three shard workers, a second worker of one shard and a whole-suite run started at the
    same moment, each a process of its own: none hangs, each ends (done or refused with one
    line), and the store is the one-process store.  A copy source's shard damaged (its tail
    cut) before the workers that copy from it: each of them refuses in one line naming the
    damage, no traceback, never a complete suite with other vectors.  A full disk at a spread of
    points (a real small file system where this machine can mount one, else the injected full
    disk, which also fails emb's own writev of shards and small objects): one clear line, no
    temporary file left, and the next run completes the store to the reference's bytes."""
    with small_disk(tmp_path / "disk", size="4m") as disk:
        frees = ([60_000, 240_000, 300_000, 360_000, 420_000, 470_000] if disk.real
                 else {"writes": 8})
        result = _campaign(model_and_suite, tmp_path, [
            {"together": ["1/3", "2/3", "3/3", "2/3", None]},
            {"damage": {"block": 0, "mode": "tail", "shards": 3}},
            {"damage": {"block": 2, "mode": "flip", "shards": 3}},
            {"free": frees},
        ], disk=str(disk.path), real_disk=disk.real)
    reference = result["reference"]
    together, *damaged = [r for r in result["runs"] if "together" in r or "damage" in r]
    assert "timeout" not in together["codes"] and set(together["codes"]) <= {0, 1}, together
    assert all(m.startswith("Error: ") and "\n" not in m for m in together["messages"]), together
    assert together["again"] == [0, 0, 0] and _whole(together, reference) == [], together
    for run in damaged:
        assert set(run["codes"]) <= {0, 1} and 1 in run["codes"], run
        for message in run["messages"]:
            assert message.startswith("Error: CorruptStoreError: ") and "damaged" in message, run
            assert "Traceback" not in message, run
        assert run["state"]["status"] != "complete", run  # never complete with copied damage
    fulls = [r for r in result["runs"] if "free" in r]
    assert len(fulls) >= 6 and any(r["codes"][0] == 1 for r in fulls)
    for run in fulls:
        assert run["codes"][-1] == 0 and _whole(run, reference) == [], run
        if run["codes"][0] != 0:
            assert len(run["messages"]) == 1 and "No space left on device" in run["messages"][0], run
            assert run["messages"][0].startswith("Error: StoreError: "), run  # not "internal error"
            assert "Traceback" not in run["messages"][0], run
        assert run["partial_after_full"] == [], run


# -- a full disk where the estimate measures the write path ------------------------------------------
def test_a_full_temporary_disk_leaves_the_estimate_without_write_time_not_an_internal_error(
        tmp_path, monkeypatch):
    """The estimate times emb's shard writes (write_parts) in the system's temporary directory
    before the run: with that disk full (a small /tmp on a cluster node, the store elsewhere),
    'emb extract' stopped with "internal error: OSError: [Errno 28] No space left on device"
    before it wrote anything.  The probe is advice: its write time is then not counted (as the
    miniature run's is not where it cannot be made), and the extraction goes on."""
    import errno
    import tempfile

    from emb.store import _nodes, _shard_bytes

    store = tmp_path / "s.zarr"
    real = _nodes.write_parts
    scratch = Path(tempfile.gettempdir()).resolve()

    def full_scratch(path, parts, **options):
        if Path(path).resolve().is_relative_to(scratch) and not Path(path).resolve().is_relative_to(store):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, parts, **options)

    monkeypatch.setattr(_shard_bytes, "write_parts", full_scratch)
    estimates = []
    suite = words_suite(20)
    extract(FakeRunner(), suite, str(store), progress=False, on_estimate=estimates.append)
    assert len(estimates) == 1 and estimates[0].seconds >= 0
    assert emb.open_store(str(store)).validate(deep=True).status == "complete"


# -- a finishing worker killed after the manifest, before the digest records were deleted -----------
def test_digest_records_a_killed_finisher_left_are_removed_by_the_next_run(tmp_path):
    """The worker that finishes a sharded suite writes the manifest, marks the suite complete,
    then deletes the shards' digest records (``_progress/digest.<block>.json``); killed between
    the two (the kill campaign: the finisher's 79th of 95 steps), the records stayed for good:
    the next run found the suite complete and removed the kept encodings such a kill leaves, not
    the records."""
    from tests.store.test_shards import BLOCK, WINDOW, BatchRunner, repeat_suite

    path = tmp_path / "s.zarr"
    for index in (1, 2):
        extract(BatchRunner(), repeat_suite(), str(path), progress=False, block_size=BLOCK,
                window_blocks=WINDOW, shard=f"{index}/2")
    progress = path / "s" / "_progress"
    assert not list(progress.glob("digest.*"))
    whole = _snapshot(str(path))
    for block in (3, 7, 12):  # the records as the kill left them
        (progress / f"digest.{block}.json").write_text(
            json.dumps({"key": f"embedding/c/{block}/0/0/0", "size": 10, "crc32": "00000000"}))
    extract(BatchRunner(), repeat_suite(), str(path), progress=False, block_size=BLOCK,
            window_blocks=WINDOW, shard="2/2")
    assert not list(progress.glob("digest.*"))
    assert emb.open_store(str(path)).validate(deep=True).status == "complete"
    assert _same(_snapshot(str(path)), whole)


# -- kept encodings a killed layout worker was renaming into place -----------------------------------
def test_kept_encodings_a_killed_worker_left_half_written_are_removed_once_no_worker_runs(tmp_path):
    """The worker that lays a sharded suite out writes, for each other shard, the encodings of
    its contexts (``_progress/tokens.<shard>.npz``, a ``.partial`` renamed into place) while it
    computes; killed before a rename (the kill campaign: the layout worker's 214th and 217th of
    259 steps), the ``.partial`` (the encodings of a whole shard's contexts) stayed in the
    complete suite for good: the finishing worker keeps such files (their writer may still be
    at work) and a later run that found the suite complete removed only finished ones.  Once no
    other worker of the suite holds its lock, nobody writes them: the finisher and a later run
    remove them."""
    from tests.store.test_shards import BLOCK, WINDOW, BatchRunner, repeat_suite

    def run(path, shard):
        extract(BatchRunner(), repeat_suite(), str(path), progress=False, block_size=BLOCK,
                window_blocks=WINDOW, shard=shard)

    leftover = "tokens.shard-2-of-2.0f1e2d3c4b5a69788796a5b4c3d2e1f0.partial"
    for later in (False, True):
        path = tmp_path / f"s{int(later)}.zarr"
        run(path, "1/2")
        progress = path / "s" / "_progress"
        (progress / leftover).write_bytes(b"PK\x03\x04 half an npz")  # the killed rename's file
        run(path, "2/2")  # finishes the suite
        if later:  # as a finisher that kept it would have left it
            (progress / leftover).write_bytes(b"PK\x03\x04 half an npz")
            run(path, "1/2")  # finds the suite complete
        assert _partials(path) == [], later
        assert emb.open_store(str(path)).validate(deep=True).status == "complete"
