"""Output paths, swaps, kills and full disks (issue 20): every output of every command follows
one rule (never inside a zarr store, never over a file emb did not write), one writer per target,
a writer killed at any step leaves the earlier output or the new one whole (and the next run
cleans up), and a full disk is one clear error with the earlier output intact.

Kills: the child ``emb`` SIGKILLs itself before its N-th change to the file system, for N = 1,
2, … until it finishes (tests/faults/_inject): every step of every swap, deterministically.
Full disks: a real 20 MB tmpfs where this machine allows mounting one, else an injected ENOSPC.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from emb.cli.main import main
from emb.results.directory import find_runs, read_run
from emb.stimuli.suites import load_suite
from emb.store import open_store
from tests._hostile import Outcome, assert_refused, run_emb
from tests.faults._disk import hidden, injected, small_disk

KIB = 1024


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the ibd and weat suites (``s.zarr``) and a second one (``other.zarr``)."""
    from tests.analyses._synthetic import ibd_dataset, weat_dataset, write_store

    base = tmp_path_factory.mktemp("outputs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_store(base / "s.zarr", {"ibd": ibd_dataset(n_layers=2),
                                      "weat": weat_dataset(n_layers=2)}, model_id="toy")
        write_store(base / "other.zarr", {"weat": weat_dataset(n_layers=2)}, model_id="toy")
    return base


def _tree(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` with its bytes (but a full disk's filler)."""
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and p.name != "filler"}


def _copy_store(root: Path, tmp_path: Path) -> Path:
    store = tmp_path / "s.zarr"
    shutil.copytree(root / "s.zarr", store)
    return store


def _cli(*args: str | os.PathLike[str]) -> str:
    """Run emb in this process (a setup step that must succeed); its output."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the rule: never inside a store, never over a file emb did not write ---------------------------
@pytest.mark.parametrize("target", ["zarr.json", "ibd/zarr.json", "mine.json"])
def test_export_tests_never_replaces_a_store_file_or_a_users_file(root: Path, tmp_path: Path,
                                                                  target: str) -> None:
    """'--export-tests s.zarr/zarr.json' destroyed the store; over a suite's zarr.json the suite
    vanished (and 'emb validate --deep' still said complete); a user's file was replaced."""
    store = _copy_store(root, tmp_path)
    (store / "mine.json").unlink(missing_ok=True)
    mine = tmp_path / "mine.json"
    mine.write_text('{"my": "tests"}')
    path = mine if target == "mine.json" else store / target
    before, own = _tree(store), path.read_bytes()
    out = run_emb("analyze", "ibd", "--store", store, "--out", tmp_path / "res", "--no-plots",
                  "-q", "--export-tests", path)
    assert_refused(out, mentions=[str(path)])
    assert path.read_bytes() == own and _tree(store) == before
    assert not (tmp_path / "res").exists()
    assert open_store(store).validate(deep=True).status == "complete"


@pytest.mark.slow
def test_export_tests_replaces_only_the_earlier_runs_own_export(root: Path, tmp_path: Path) -> None:
    export = tmp_path / "tests.json"
    args = ("analyze", "ibd", "--store", root / "s.zarr", "--no-plots", "-q",
            "--export-tests", export)
    _cli(*args, "--out", tmp_path / "a")
    first = export.read_bytes()
    _cli(*args, "--out", tmp_path / "a", "--overwrite")  # its own export, unchanged: replaced
    assert export.read_bytes() == first
    assert json.loads((tmp_path / "a" / "ibd.json").read_text())["exports"] == {
        str(export): _sha(export)}
    assert_refused(run_emb(*args, "--out", tmp_path / "b"), mentions=[str(export), "not the export"])
    export.write_text("edited\n")
    assert_refused(run_emb(*args, "--out", tmp_path / "a", "--overwrite"), mentions=[str(export)])
    assert export.read_text() == "edited\n"
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("where", ["store", "suite", "new-below", "url", "another-store"])
def test_out_inside_any_store_is_refused(root: Path, tmp_path: Path, where: str) -> None:
    """'--out s.zarr' and '--out s.zarr/weat' were accepted: results inside the store ('emb zip'
    packed them, 'extract --overwrite' deleted them)."""
    store = _copy_store(root, tmp_path)
    other = tmp_path / "other.zarr"
    shutil.copytree(root / "other.zarr", other)
    spec = store.as_uri() if where == "url" else store
    out = {"store": store, "suite": store / "weat", "new-below": store / "res" / "sub",
           "url": store / "res", "another-store": other / "weat"}[where]
    before = _tree(tmp_path)
    outcome = run_emb("analyze", "weat", "--store", spec, "--out", out, "--no-plots", "-q")
    assert_refused(outcome, mentions=["zarr store"])
    assert _tree(tmp_path) == before and not (store / "res").exists()


def test_the_default_out_inside_a_store_is_refused(root: Path, tmp_path: Path) -> None:
    store = _copy_store(root, tmp_path)
    before = _tree(store)
    outcome = run_emb("analyze", "weat", "--store", store, "--no-plots", "-q", cwd=store / "weat")
    assert_refused(outcome, mentions=["emb-results", "inside the zarr store"])
    assert _tree(store) == before


@pytest.mark.parametrize("page", ["r.html", "r.md", "weat/r.html"])
def test_a_report_is_never_written_inside_a_store(root: Path, tmp_path: Path, page: str) -> None:
    _cli("analyze", "weat", "--store", root / "s.zarr", "--out", tmp_path / "res", "-q")
    store = _copy_store(root, tmp_path)
    before = _tree(store)
    assert_refused(run_emb("report", tmp_path / "res", "--out", store / page),
                   mentions=["inside the zarr store"])
    assert _tree(store) == before


def test_a_zip_is_never_written_inside_another_store(root: Path, tmp_path: Path) -> None:
    store = _copy_store(root, tmp_path)
    before = _tree(store)
    assert_refused(run_emb("zip", root / "other.zarr", store / "other.zip"),
                   mentions=["inside the zarr store"])
    assert _tree(store) == before


def test_a_store_is_never_created_inside_another_store(root: Path, tmp_path: Path,
                                                       data_dir: Path) -> None:
    """'emb extract --store s.zarr/inner.zarr' nested a store inside another one."""
    store = _copy_store(root, tmp_path)
    before = _tree(store)
    vectors = data_dir / "static" / "GoogleNews-vectors-negative300-bolukbasi.bin"
    outcome = run_emb("extract", "--model", vectors, "--suite", "weat", "--allow-missing",
                      "--store", store / "inner.zarr", "-q")
    assert_refused(outcome, mentions=["inside the zarr store"])
    assert _tree(store) == before


def test_suites_export_overwrite_never_replaces_a_users_file(root: Path, tmp_path: Path) -> None:
    mine = tmp_path / "notes.json"
    mine.write_text('{"my": "notes"}')
    outcome = run_emb("suites", "export", root / "s.zarr", "--suite", "weat", mine, "--overwrite")
    assert_refused(outcome, mentions=[str(mine), "not a suite file"])
    assert mine.read_text() == '{"my": "notes"}' and hidden(tmp_path) == []


# -- one writer per target ------------------------------------------------------------------------
def test_a_second_zip_to_one_target_is_refused_and_temporaries_are_owned(root: Path,
                                                                         tmp_path: Path) -> None:
    """Two 'emb zip' to one target shared TARGET.partial: a corrupt zip reported as written, one
    silently replacing the other, and a user's file named TARGET.partial destroyed."""
    target = tmp_path / "s.zip"
    users = tmp_path / "s.zip.partial"
    users.write_text("mine")
    leftover = tmp_path / ".s.zip.emb-partial-0badc0de"  # a killed zip's temporary
    leftover.write_bytes(b"PK half")
    assert run_emb("zip", root / "s.zarr", target).code == 0
    assert open_store(target).validate().status == "complete"
    assert users.read_text() == "mine" and hidden(tmp_path) == []
    target.unlink()

    from emb.errors import StoreError
    from emb.files.outputs import claim

    with claim(target, what="TARGET", error=StoreError):  # another emb zip, writing
        outcome = run_emb("zip", root / "s.zarr", target)
    assert_refused(outcome, mentions=[str(target), f"pid {os.getpid()}", "another emb process"])
    assert not target.exists() and hidden(tmp_path) == []


def test_a_second_analyze_into_one_out_is_refused(root: Path, tmp_path: Path) -> None:
    from emb.files.outputs import claim
    from emb.results.directory import ResultsError

    out = tmp_path / "res"
    out.mkdir()
    with claim(out / "weat", what="--out", error=ResultsError):
        outcome = run_emb("analyze", "weat", "--store", root / "s.zarr", "--out", out, "-q",
                          "--no-plots")
    assert_refused(outcome, mentions=["another emb process", str(out)])
    assert list(out.iterdir()) == []


# -- killed writers -------------------------------------------------------------------------------
def _kill_at_every_step(args: tuple, check: Callable[[int, Outcome], None], *,
                        cwd: Path | None = None, most: int = 200) -> int:
    """Run ``emb ARGS`` killed before its 1st, 2nd, … change to the file system until one run
    finishes; ``check(n, outcome)`` after each kill. Returns the number of kills."""
    for n in range(1, most):
        outcome = run_emb(*args, cwd=cwd, env=injected(EMB_FAULT_KILL_AT_OP=n))
        if outcome.code == 0:
            return n - 1
        assert outcome.code == -9, f"step {n}: expected a kill\n{outcome}"
        check(n, outcome)
    raise AssertionError(f"still killed after {most} steps")


def _whole_run(out: Path) -> str:
    """The run in ``out``, checked whole (every file its sidecar lists, nothing else, nothing
    hidden): "old" (Parquet tables) or "new" (CSV tables)."""
    sidecar = out / "weat.json"
    meta = read_run(sidecar)
    visible = {p.name for p in out.iterdir() if not p.name.startswith(".")}
    assert visible == {*meta["files"], sidecar.name}, visible
    assert hidden(out) == []
    return "old" if "weat.parquet" in meta["files"] else "new"


@pytest.mark.slow
def test_a_killed_analyze_leaves_the_earlier_or_the_new_run_whole(root: Path, tmp_path: Path) -> None:
    """SIGKILL during 'emb analyze --overwrite' while it swapped its files deleted the earlier run,
    left the new one partial, a hidden .weat-partial-* directory, and every later run refused."""
    from emb.analyses import ANALYSES
    from emb.results.directory import prepare_out

    out, saved = tmp_path / "res", tmp_path / "earlier"
    base = ("analyze", "weat", "--store", root / "s.zarr", "--out", out, "-q", "--no-plots")
    _cli(*base, "--format", "parquet")  # the earlier run
    shutil.copytree(out, saved)
    earlier = _tree(out)
    seen: list[str] = []

    def check(n: int, outcome: Outcome) -> None:
        # the next run finds the earlier run whole, or completes the new one, and may replace it
        plan = prepare_out(out, ANALYSES["weat"], overwrite=True)
        state = _whole_run(out)
        assert not (seen and seen[-1] == "new" and state == "old"), f"step {n}: went back"
        seen.append(state)
        assert state == "new" or _tree(out) == earlier, f"step {n}: the earlier run changed"
        assert plan.replaced  # found, whole, and replaceable: no later run is refused
        shutil.rmtree(out)
        shutil.copytree(saved, out)  # the earlier run again, for the next kill

    kills = _kill_at_every_step((*base, "--overwrite"), check)
    assert kills >= 10 and "old" in seen and "new" in seen, seen
    assert _whole_run(out) == "new"
    _cli(*base, "--overwrite", "--format", "parquet")  # and a later run replaces it
    assert _whole_run(out) == "old"


@pytest.mark.slow
def test_a_killed_zip_leaves_no_zip_or_a_whole_one(root: Path, tmp_path: Path) -> None:
    from emb.errors import StoreError

    target = tmp_path / "s.zip"

    def check(n: int, outcome: Outcome) -> None:
        if target.exists():  # linked into place only when complete
            assert open_store(target).validate(deep=True).status == "complete", f"step {n}"
            with pytest.raises(StoreError, match="exists"):  # the rerun cleans up, then refuses
                open_store(root / "s.zarr").to_zip(target)
        else:
            open_store(root / "s.zarr").to_zip(target)
        assert hidden(tmp_path) == [], f"step {n}"
        with zipfile.ZipFile(target) as zf:
            assert zf.testzip() is None
        target.unlink()

    assert _kill_at_every_step(("zip", root / "s.zarr", target), check) >= 3
    assert open_store(target).validate().status == "complete" and hidden(tmp_path) == []


@pytest.mark.slow
def test_a_killed_report_leaves_the_earlier_or_the_new_page(root: Path, tmp_path: Path) -> None:
    from emb.results.report import build_report

    results, page = tmp_path / "res", tmp_path / "pages" / "supplement.md"
    _cli("analyze", "ibd", "--store", root / "s.zarr", "--out", results, "-q")  # two figures
    build_report([results], page, title="earlier")
    earlier = page.read_bytes()
    assets = page.parent / "supplement_files"

    def check(n: int, outcome: Outcome) -> None:
        text = page.read_bytes()
        assert text == earlier or text.startswith(b"# later\n"), f"step {n}: a partial page"
        build_report([results], page, title="later")  # the next report cleans up and succeeds
        assert hidden(page.parent) == [], f"step {n}"
        figures = [line for line in page.read_text().splitlines() if line.startswith("![")]
        assert figures and all((assets / f.split("supplement_files/")[1].rstrip(")")).is_file()
                               for f in figures)
        page.write_bytes(earlier)

    kills = _kill_at_every_step(("report", results, "--out", page, "--title", "later"), check)
    assert kills >= 4 and page.read_bytes().startswith(b"# later\n")
    assert hidden(page.parent) == []


@pytest.mark.slow
def test_a_killed_suites_export_leaves_the_earlier_or_the_new_file(root: Path,
                                                                   tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    _cli("suites", "export", root / "s.zarr", "--suite", "weat", path)
    earlier = path.read_bytes()

    def check(n: int, outcome: Outcome) -> None:
        assert path.read_bytes() == earlier or load_suite(path).name == "ibd", f"step {n}"
        _cli("suites", "export", root / "s.zarr", "--suite", "ibd", path, "--overwrite")
        assert load_suite(path).name == "ibd" and hidden(tmp_path) == [], f"step {n}"
        path.write_bytes(earlier)

    kills = _kill_at_every_step(("suites", "export", root / "s.zarr", "--suite", "ibd", path,
                                 "--overwrite"), check)
    assert kills >= 3 and load_suite(path).name == "ibd" and hidden(tmp_path) == []


# -- full disks -----------------------------------------------------------------------------------
def _assert_disk_full(outcome: Outcome, where: Path) -> None:
    """Exit 1, one line naming the directory, the space needed and what is free."""
    message = assert_refused(outcome, codes=(1,), mentions=[str(where), "full"])
    assert "need" in message and "free" in message, message


@pytest.mark.slow
def test_a_full_disk_during_analyze_is_one_clear_error(root: Path, tmp_path: Path) -> None:
    """On a 20 MB tmpfs: exit 3 (internal error), and with <= 40 KB free a SIGSEGV (exit 139):
    HDF5 crashed in garbage collection after its flush to the full disk failed."""
    with small_disk(tmp_path / "disk") as disk:
        out = disk.path / "res"
        base = ("analyze", "weat", "--store", root / "s.zarr", "--out", out, "-q")
        assert run_emb(*base, env=disk.leave_free(2 << 20)).code == 0  # the earlier run
        earlier = _tree(out)
        for free in (0, 16 * KIB, 40 * KIB):
            env = disk.leave_free(free)
            _assert_disk_full(run_emb(*base, "--overwrite", "--figure-format", "pdf", env=env), out)
            assert _tree(out) == earlier and hidden(out) == [], free
        # a new --out: not created, or removed again
        _assert_disk_full(run_emb(*base[:-3], "--out", disk.path / "new" / "res", "-q", env=env),
                          disk.path / "new" / "res")
        assert not (disk.path / "new").exists()
        read_run(out / "weat.json")


@pytest.mark.slow
def test_a_full_disk_during_report_zip_and_export_is_one_clear_error(root: Path,
                                                                     tmp_path: Path) -> None:
    results = tmp_path / "res"
    _cli("analyze", "weat", "--store", root / "s.zarr", "--out", results, "-q")
    with small_disk(tmp_path / "disk") as disk:
        page, suite, target = (disk.path / "r.md", disk.path / "weat.json", disk.path / "s.zip")
        env = disk.leave_free(4 << 20)
        assert run_emb("report", results, "--out", page, env=env).code == 0
        assert run_emb("suites", "export", root / "s.zarr", "--suite", "weat", suite,
                       env=env).code == 0
        earlier = _tree(disk.path)
        for free in (0, 40 * KIB):
            env = disk.leave_free(free)
            _assert_disk_full(run_emb("report", results, "--out", page, "--title", "x", env=env),
                              disk.path)
            _assert_disk_full(run_emb("zip", root / "s.zarr", target, env=env), disk.path)
            _assert_disk_full(run_emb("suites", "export", root / "s.zarr", "--suite", "ibd",
                                      suite, "--overwrite", env=env), disk.path)
            assert _tree(disk.path) == earlier, free
            assert hidden(disk.path) == [] and not target.exists()
        assert find_runs([results])
