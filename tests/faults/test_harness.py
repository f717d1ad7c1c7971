"""The hostile harness itself (tests/_hostile.py, tests/_forkserver.py): a run forked from the fork
server ends as the same run started anew does (exit status, stdout, stderr, working directory,
stdin, environment), a run the server cannot give is started anew and says why, and a forked run
that hangs is killed with its process group at its timeout."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests._hostile import run_emb
from tests._servers import silent_server
from tests.faults._disk import injected

#: a command of each ending: done (0), an emb error (1), a usage error (2)
COMMANDS = [("suites",), ("info", "no-such.zarr"), ("analyze", "weat", "--no-such-option")]


@pytest.mark.parametrize("args", COMMANDS, ids=["done", "error", "usage"])
def test_a_forked_run_ends_as_a_new_process_does(tmp_path, args):
    forked = run_emb(*args, cwd=tmp_path)
    fresh = run_emb(*args, cwd=tmp_path, fresh=True)
    assert forked.started_anew == "" and fresh.started_anew == "fresh=True"
    assert (forked.code, forked.stdout, forked.stderr) == (fresh.code, fresh.stdout, fresh.stderr)
    assert forked.code == COMMANDS.index(args)


def test_a_forked_run_has_its_own_directory_stdin_and_environment(tmp_path):
    """A relative store path is read from the run's directory, a suite file from its stdin path,
    and a variable emb reads at run time from its environment (a bad one is refused)."""
    (tmp_path / "here.zarr").mkdir()
    outcome = run_emb("info", "here.zarr", cwd=tmp_path)
    assert outcome.started_anew == "" and outcome.code == 1
    assert "here.zarr is an empty directory" in outcome.stderr, outcome  # not "no store at"
    bad = run_emb("info", "s3://bucket/x.zarr", env={"EMB_READ_TIMEOUT": "soon"})
    assert bad.started_anew == "" and bad.code == 1 and "EMB_READ_TIMEOUT='soon'" in bad.stderr
    stdin = tmp_path / "in.txt"
    stdin.write_text("y\n", encoding="utf-8")
    assert run_emb("suites", stdin=str(stdin)).started_anew == ""


def test_what_the_server_cannot_give_is_started_anew(tmp_path):
    locale = run_emb("suites", env={"LC_ALL": "C.UTF-8"})
    assert locale.code == 0 and locale.started_anew == "its environment sets LC_ALL"
    assert locale.peak_rss_mib > 0  # measured: its pages are its own
    piped = run_emb("suites", stdin=subprocess.PIPE)
    assert piped.started_anew == "its stdin is an inherited file descriptor"


def test_a_forked_run_that_hangs_is_killed_at_its_timeout():
    with silent_server() as url:
        start = time.monotonic()
        outcome = run_emb("info", f"{url}/x.zarr", timeout=3,
                          env={"EMB_CONNECT_TIMEOUT": "600", "EMB_READ_TIMEOUT": "600"})
    assert outcome.started_anew == "" and outcome.timed_out and outcome.code == -9
    assert time.monotonic() - start < 30


def test_the_fault_injection_loads_in_a_forked_run_as_at_start_up(tmp_path):
    """tests/faults/_inject's sitecustomize, on a longer PYTHONPATH: killed before the run's first
    change to the file system, forked or new."""
    vectors, suite = tmp_path / "v.txt", tmp_path / "s.yaml"
    vectors.write_text("2 3\nlove 1 0 0\nwar 0 1 0\n", encoding="utf-8")
    suite.write_text("name: s\nitems:\n  - {context: 'This is {target}.', word: love}\n",
                     encoding="utf-8")
    args = ("extract", "--model", vectors, "--suite", suite, "-q")
    for fresh in (False, True):
        store = tmp_path / f"{fresh}.zarr"
        killed = run_emb(*args, "--store", store, env=injected(EMB_FAULT_KILL_AT_OP=1),
                         fresh=fresh)
        assert killed.code == -9 and not store.exists(), killed
        assert killed.started_anew == ("fresh=True" if fresh else "")
    done = run_emb(*args, "--store", tmp_path / "s.zarr", env=injected(EMB_FAULT_KILL_AT_OP=10**6))
    assert done.code == 0 and done.started_anew == "", done
