"""A store nobody can break: group names, foreign data, one writer at a time (locks, stale locks,
racing writers), and every input checked before the store is touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import zarr

import emb
from emb.errors import (
    CorruptStoreError,
    EmbError,
    EmbWarning,
    StoreError,
    StoreLockedError,
    StoreMismatchError,
    SuiteError,
)
from emb.extraction.pipeline import extract
from emb.files import lockfile as lock_module
from emb.stimuli.suites import Suite
from emb.store._write_checks import model_differences
from emb.store.lock import WriterLock, lock_path
from emb.store.names import check_group_name
from tests.fakes import FakeInfo, FakeRunner
from tests.store.test_pipeline import _snapshot, words_suite

REPO = Path(__file__).resolve().parents[2]


def tree(path: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``path`` with its size and mtime: equal trees were not touched."""
    return {
        str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


# -- group names --------------------------------------------------------------------------------------
BAD_NAMES = ["", "/", "a/b", "../x", ".", "..", "x" * 300, "zarr.json", "ZARR.JSON", "_progress",
             ".emb-lock", "a b", "é", "s.partial", "a\n"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_group_name_is_refused_and_nothing_is_deleted(tmp_path, name):
    path = tmp_path / "s.zarr"
    extract(FakeRunner(), [words_suite(5, name="a"), words_suite(6, name="b")], str(path),
            progress=False)
    before = tree(path)
    with pytest.raises(StoreError, match="is not allowed") as err:
        extract(FakeRunner(), words_suite(7, name="c"), str(path), group_names=[name], progress=False,
                overwrite=True)
    assert "--name" in str(err.value) and "np.str_" not in str(err.value)
    assert tree(path) == before
    assert emb.open_store(str(path)).validate().status == "complete"


def test_group_name_rule_is_the_suite_name_rule():
    for good in ("vast", "my-suite.v2", "WEAT_1", "a" * 128):
        assert check_group_name(good) == good
    assert type(check_group_name(np.str_("vast"))) is str
    with pytest.raises(StoreError, match="129 characters, more than 128"):
        check_group_name("a" * 129)
    with pytest.raises(StoreError, match="not a string"):
        check_group_name(3)


# -- what a store path may be ---------------------------------------------------------------------------
def test_foreign_zarr_group_and_foreign_directory_are_refused_untouched(tmp_path):
    foreign = tmp_path / "theirs.zarr"
    group = zarr.open_group(str(foreign), mode="w", zarr_format=3)
    group.attrs["owner"] = "someone else"
    group.create_array("data", shape=(3,), dtype="i4")[:] = [1, 2, 3]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("x")
    v2 = tmp_path / "v2.zarr"
    zarr.open_group(str(v2), mode="w", zarr_format=2).attrs["x"] = 1
    for path, needle in ((foreign, "emb did not write"), (notes, "other files"), (v2, "zarr v2")):
        before = tree(path)
        with pytest.raises(StoreError, match=needle) as err:
            extract(FakeRunner(), words_suite(3), str(path), progress=False)
        assert "someone else's data" in str(err.value)
        assert tree(path) == before


def test_store_path_that_is_a_file_under_a_file_or_a_zip(tmp_path):
    file = tmp_path / "file.txt"
    file.write_text("x")
    for store, needle in ((file, "is a file, not a store"), (file / "s.zarr", "lies under the file"),
                          (tmp_path / "s.zip", "cannot write into zip file")):
        with pytest.raises(StoreError, match=needle):
            extract(FakeRunner(), words_suite(3), str(store), progress=False)
    assert file.read_text() == "x" and not (tmp_path / "s.zip").exists()


_READ_ONLY_CHILD = textwrap.dedent(
    """
    import sys
    sys.path[:0] = [{src!r}, {repo!r}]
    from emb.errors import EmbError
    from emb.extraction.pipeline import extract
    from tests.fakes import FakeRunner
    from tests.store.test_pipeline import words_suite
    try:
        extract(FakeRunner(), words_suite(3), {store!r}, progress=False)
    except EmbError as err:
        print(type(err).__name__, err)
        sys.exit(3)
    """
)


def test_read_only_store_directory_is_refused_before_anything_is_written(tmp_path):
    store = tmp_path / "ro.zarr"
    extract(FakeRunner(), words_suite(2, name="a"), str(store), progress=False)
    before = tree(store)
    script = _READ_ONLY_CHILD.format(src=str(REPO / "src"), repo=str(REPO), store=str(store))
    if os.geteuid() != 0:
        store.chmod(0o555)
        try:
            proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        finally:
            store.chmod(0o755)
    else:  # root writes through permission bits: mount the store read-only in a namespace
        mount = (f"mount --bind {store} {store} && mount -o remount,ro,bind {store} && "
                 f"exec {sys.executable} -c \"$0\"")
        proc = subprocess.run(["unshare", "--mount", "sh", "-c", mount, script],
                              capture_output=True, text=True)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "StoreError" in proc.stdout and "read-only" in proc.stdout
    assert tree(store) == before


# -- identity -----------------------------------------------------------------------------------------
def test_local_models_are_identified_by_fingerprint_hub_models_by_id_and_revision():
    local = {"source": "local", "model_id": "/m/gpt2", "revision": None, "fingerprint": "f1"}
    assert model_differences(local, {**local, "model_id": "/m/gpt2/"}) == []
    assert model_differences(local, {**local, "model_id": "/copy/of/gpt2"}) == []
    assert model_differences(local, {**local, "source": "gguf", "model_id": "x.gguf"}) == []
    assert model_differences(local, {**local, "fingerprint": "f2"}) != []
    hub = {"source": "hub", "model_id": "gpt2", "revision": "abc", "fingerprint": "abc"}
    assert model_differences(hub, dict(hub)) == []
    assert model_differences(hub, {**hub, "revision": "def", "fingerprint": "def"}) != []
    assert model_differences(hub, {**hub, "model_id": "distilgpt2"}) != []
    assert model_differences(local, hub) != []
    message = model_differences({"fingerprint": np.str_("a")}, {"fingerprint": "b"})[0]
    assert "np.str_" not in message


# -- inputs validated before the store is touched ----------------------------------------------------
class _LateFailure(Suite):
    def content_hash(self) -> str:  # what an infinite label found while hashing did
        raise SuiteError("the suite cannot be hashed (planted late failure)")


def test_late_input_failure_leaves_no_store_and_touches_no_existing_one(tmp_path):
    late = _LateFailure(name="late", items=words_suite(3).items)
    new = tmp_path / "new.zarr"
    with pytest.raises(SuiteError, match="planted"):
        extract(FakeRunner(), late, str(new), progress=False)
    assert not new.exists()
    old = tmp_path / "old.zarr"
    extract(FakeRunner(), words_suite(4, name="a"), str(old), progress=False)
    before = tree(old)
    with pytest.raises(SuiteError, match="planted"):  # second suite fails: the first not written
        extract(FakeRunner(), [words_suite(5, name="b"), late], str(old), progress=False)
    assert tree(old) == before


def test_a_conflict_in_a_later_suite_refuses_the_whole_run(tmp_path):
    path = tmp_path / "s.zarr"
    extract(FakeRunner(), words_suite(4, name="b"), str(path), progress=False)
    before = tree(path)
    with pytest.raises(StoreMismatchError, match="another definition"):
        extract(FakeRunner(), [words_suite(3, name="a"), words_suite(5, name="b")], str(path),
                progress=False)
    assert tree(path) == before and emb.open_store(str(path)).suites == ("b",)


def test_store_with_no_suite_is_not_complete(tmp_path):
    bare = tmp_path / "bare.zarr"
    zarr.open_group(str(bare), mode="w", zarr_format=3).update_attributes(
        {"emb_schema_version": 2, "model": FakeInfo().to_dict()}
    )
    info = emb.open_store(str(bare)).info()
    assert not info.complete and info.suites == ()
    assert "no suite written yet" in emb.store.describe(info)
    assert emb.open_store(str(bare)).validate().status == "incomplete"
    (r,) = extract(FakeRunner(), words_suite(3), str(bare), progress=False)  # adopted, finished
    assert r.n_items == 6 and emb.open_store(str(bare)).info().complete


def test_overwrite_replaces_only_its_own_group(tmp_path):
    path = tmp_path / "s.zarr"
    extract(FakeRunner(), [words_suite(5, name="a"), words_suite(6, name="b")], str(path),
            progress=False)
    b_before = tree(path / "b")
    extract(FakeRunner(), words_suite(9, name="a"), str(path), overwrite=True, progress=False)
    assert tree(path / "b") == b_before
    store = emb.open_store(str(path))
    assert store.dataset("a").sizes["item"] == 18 and store.validate(deep=True).status == "complete"


def test_damaged_group_is_refused_unless_overwritten(tmp_path):
    path = tmp_path / "s.zarr"
    extract(FakeRunner(), words_suite(5, name="a"), str(path), progress=False)
    (path / "a" / "zarr.json").write_text("{not json")
    with pytest.raises(CorruptStoreError, match="--overwrite"):
        extract(FakeRunner(), words_suite(5, name="a"), str(path), progress=False)
    extract(FakeRunner(), words_suite(5, name="a"), str(path), overwrite=True, progress=False)
    assert emb.open_store(str(path)).validate(deep=True).status == "complete"


# -- one writer at a time --------------------------------------------------------------------------------
def test_lock_names_its_holder_and_is_released(tmp_path):
    path = tmp_path / ".emb-lock.s"
    lock = WriterLock.acquire(path, what="suite 's'", purpose="test")
    holder = json.loads(path.read_text())
    assert holder["pid"] == os.getpid() and holder["host"] and holder["started"] and holder["command"]
    with pytest.raises(StoreLockedError) as err:
        WriterLock.acquire(path, what="suite 's'", purpose="test")
    message = str(err.value)
    assert f"pid {os.getpid()}" in message and holder["host"] in message and "since" in message
    t0 = time.monotonic()
    with pytest.raises(StoreLockedError):  # waits as long as asked, then refuses
        WriterLock.acquire(path, what="suite 's'", purpose="test", wait_s=0.3)
    assert time.monotonic() - t0 >= 0.3  # a lower bound only: a loaded machine may take longer
    lock.release()
    assert not path.exists()
    WriterLock.acquire(path, what="suite 's'", purpose="test").release()


def test_second_writer_of_a_suite_is_refused_and_the_store_untouched(tmp_path):
    path = tmp_path / "s.zarr"
    extract(FakeRunner(), words_suite(5, name="a"), str(path), progress=False)
    before = tree(path)
    with WriterLock.acquire(lock_path(str(path), "a"), what="suite 'a'", purpose="test"):
        with pytest.raises(StoreLockedError, match=f"pid {os.getpid()}"):
            extract(FakeRunner(), words_suite(5, name="a"), str(path), progress=False)
        # another suite of the same store is not blocked
        extract(FakeRunner(), words_suite(3, name="b"), str(path), progress=False)
    assert {k: v for k, v in tree(path).items() if k.startswith("a/")} == {
        k: v for k, v in before.items() if k.startswith("a/")
    }
    assert emb.open_store(str(path)).validate(deep=True).status == "complete"


_WRITER = textwrap.dedent(
    """
    import sys, time
    sys.path[:0] = [{src!r}, {repo!r}]
    from emb.errors import EmbError
    from emb.extraction.pipeline import extract
    from tests.fakes import FakeRunner
    from tests.store.test_pipeline import words_suite

    class Slow(FakeRunner):
        calls = 0

        def embed(self, encodings, **kw):
            time.sleep({delay})
            Slow.calls += 1
            hold = {hold!r}
            if hold and Slow.calls > 1:  # after its first window: held until told or killed
                while not __import__("os").path.exists(hold):
                    time.sleep(0.005)
            return super().embed(encodings, **kw)

    go = {go!r}
    if go:  # a start line: every writer has imported everything before any starts
        print("READY", flush=True)
        while not __import__("os").path.exists(go):
            time.sleep(0.005)
    time.sleep({start})
    print("START", flush=True)
    try:
        (r,) = extract(Slow(), words_suite({n}, name={name!r}), {path!r}, progress=False,
                       block_size=16, window_blocks=1)
    except EmbError as err:
        print("REFUSED", type(err).__name__, err, flush=True)
        sys.exit(3)
    print("DONE", "complete" if r.already_complete else "written", flush=True)
    """
)


def _writer(path: Path, *, name: str = "s", n: int = 300, start: float = 0.0, delay: float = 0.01,
            go: Path | None = None, hold: Path | None = None):
    """A writer process. ``go``: it waits at a start line for that file; ``hold``: after its first
    window it waits for that file (an order that no machine load can change)."""
    script = _WRITER.format(src=str(REPO / "src"), repo=str(REPO), path=str(path), name=name,
                            n=n, start=start, delay=delay, go=str(go) if go else "",
                            hold=str(hold) if hold else "")
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow
def test_racing_writers_end_complete_and_correct_or_refused(tmp_path):
    """Several processes extract the same suite into the same new store at once (started 0-0.4 s
    apart): each either writes it, finds it complete, or is refused with the holder named; the
    store always ends complete, deep-valid and equal to an undisturbed extraction."""
    ref = tmp_path / "ref.zarr"
    extract(FakeRunner(), words_suite(300), str(ref), progress=False, block_size=16, window_blocks=1)
    want = _snapshot(str(ref))
    rng = np.random.default_rng(7)
    outcomes: dict[str, int] = {}
    for trial in range(3):
        path = tmp_path / f"race{trial}.zarr"
        go = tmp_path / f"go{trial}"
        if trial == 0:  # for certain: one writer holds the suite mid-way while three others try
            hold = tmp_path / "hold"
            first = _writer(path, delay=0.03, hold=hold)
            assert first.stdout.readline().strip() == "START"
            marker = path / "s" / "_progress" / "done" / "c"
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and not list(marker.glob("*")):
                time.sleep(0.01)
            others = [_writer(path, delay=0.03) for _ in range(3)]
            for proc in others:
                out, _ = proc.communicate(timeout=300)
                assert proc.returncode == 3 and "REFUSED StoreLockedError" in out, out
                assert f"pid {first.pid}" in out and "host" in out, out
                outcomes["refused"] = outcomes.get("refused", 0) + 1
            hold.touch()
            procs = [first]
        else:  # at random moments, started 0-0.4 s apart
            procs = [_writer(path, start=float(rng.uniform(0, 0.4)), delay=0.03, go=go)
                     for _ in range(4)]
            for proc in procs:
                assert proc.stdout.readline().strip() == "READY"
            go.touch()
        for proc in procs:
            out, _ = proc.communicate(timeout=300)
            last = out.strip().splitlines()[-1] if out.strip() else ""
            assert "Traceback" not in out, out
            if proc.returncode == 0:
                assert last.startswith("DONE"), out
                outcomes[last] = outcomes.get(last, 0) + 1
            else:
                assert proc.returncode == 3 and "REFUSED StoreLockedError" in last, out
                assert "pid" in last and "host" in last
                outcomes["refused"] = outcomes.get("refused", 0) + 1
        assert emb.open_store(str(path)).validate(deep=True).status == "complete"
        got = _snapshot(str(path))
        for key in want:
            if key == "attrs":
                assert got[key] == want[key]
            else:
                np.testing.assert_array_equal(got[key], want[key], err_msg=key)
        assert not list(path.glob(".emb-lock*"))  # every lock released
    assert outcomes.get("refused", 0) >= 3, outcomes  # the held writer's three rivals at least


@pytest.mark.slow
def test_writers_of_different_suites_share_a_store(tmp_path):
    path = tmp_path / "s.zarr"
    procs = [_writer(path, name=name, n=150) for name in ("a", "b", "c")]
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0 and "DONE written" in out, out
    store = emb.open_store(str(path))
    assert store.suites == ("a", "b", "c") and store.validate(deep=True).status == "complete"
    import xarray as xr  # the consolidated metadata (last writer's) sees every suite complete

    for name in ("a", "b", "c"):
        assert xr.open_zarr(str(path), group=name).attrs["complete"] is True


def test_lock_of_a_killed_writer_is_taken_over_at_once(tmp_path, monkeypatch):
    path = tmp_path / "s.zarr"
    proc = _writer(path, n=600, delay=0.05, hold=tmp_path / "never")  # held after one window
    assert proc.stdout.readline().strip() == "START"
    marker = path / "s" / "_progress" / "done" / "c"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not list(marker.glob("*")):
        time.sleep(0.01)
    lock_file = path / ".emb-lock.s"
    assert json.loads(lock_file.read_text())["pid"] == proc.pid
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert lock_file.exists()  # stale: its holder is dead
    waits: list[float] = []

    class CountingTime:  # the lock module's clock, counting its waits
        def __getattr__(self, name):
            return getattr(time, name)

        def sleep(self, seconds):
            waits.append(seconds)
            time.sleep(seconds)

    monkeypatch.setattr(lock_module, "time", CountingTime())
    with pytest.warns(EmbWarning, match=f"left by pid {proc.pid} on host .* no longer running"):
        (r,) = extract(FakeRunner(), words_suite(600), str(path), progress=False,
                       block_size=16, window_blocks=1)
    assert not r.already_complete and 0 < r.blocks_written < r.blocks_total
    # not waited on: a dead holder's lock is taken without one poll for a live holder (the
    # waits asked of the clock are counted, not timed)
    assert lock_module._POLL_S not in waits, waits
    assert not lock_file.exists()
    assert emb.open_store(str(path)).validate(deep=True).status == "complete"


def test_lock_held_by_a_thread_blocks_a_second_writer_in_the_same_process(tmp_path):
    path = tmp_path / "s.zarr"
    started, release = threading.Event(), threading.Event()

    class Paused(FakeRunner):
        def embed(self, encodings, **kw):
            started.set()
            release.wait(30)
            return super().embed(encodings, **kw)

    errors: list[BaseException] = []

    def first() -> None:
        try:
            extract(Paused(), words_suite(5), str(path), progress=False)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    thread = threading.Thread(target=first)
    thread.start()
    assert started.wait(30)
    try:
        with pytest.raises(StoreLockedError):
            extract(FakeRunner(), words_suite(5), str(path), progress=False)
    finally:
        release.set()
        thread.join(60)
    assert not errors and emb.open_store(str(path)).validate(deep=True).status == "complete"


def test_errors_are_emb_errors(tmp_path):
    """Every refusal above is an EmbError the CLI prints as one line."""
    for cls in (StoreLockedError, CorruptStoreError, StoreMismatchError):
        assert issubclass(cls, EmbError) and issubclass(cls, StoreError)


def test_a_root_write_cut_short_leaves_a_store_to_finish(tmp_path):
    """A kill during the very first write leaves only zarr's temporary file: nothing extracted
    yet (exit 1), and the next run writes the store."""
    path = tmp_path / "s.zarr"
    path.mkdir()
    (path / "zarr.0f3c9d1e2b.partial").write_text('{"zarr_for')
    assert emb.store.validate.validate_store(str(path)).status == "incomplete"
    extract(FakeRunner(), words_suite(3), str(path), progress=False)
    assert emb.open_store(str(path)).validate(deep=True).status == "complete"
