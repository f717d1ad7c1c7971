"""The hostile user's harness: run the real ``emb`` command in a child process, bounded in time,
and judge how it ended.

Every case of the reliability campaign (bad files, dying servers, full disks, kills) goes through
:func:`run_emb`, so that each one is run as a user runs it (a new process, real files, real exit
status, real stderr) and ends in one of the outcomes the product promises:

- refused: exit 1 or 2, one ``Error: …`` line on stderr (no traceback, no "internal error");
- accepted: exit 0 with a result the test checks itself.

A case never hangs (``timeout``: the child's process group is killed and the test fails) and its
peak memory is measured (``Outcome.peak_rss_mib``, the child's own ``VmHWM``) where it was started
anew. Most runs are forked from a fork server that has imported emb and torch once
(:mod:`tests._forkserver`): a real process of its own all the same, ~3 s of CPU less a run.

With ``EMB_HOSTILE_LOG=FILE`` set, every outcome is appended to FILE as one JSON line (test id,
arguments, exit code, seconds, peak memory, timed out, why it was started anew rather than forked):
the campaign's tally is read from there.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests import _forkserver

__all__ = ["Outcome", "assert_refused", "run_emb", "start_emb"]

#: the command line of ``emb`` in a child process (the console script's own entry point); the
#: child writes its own peak memory (``VmHWM``: the process after exec, never the forked parent's
#: pages, which ``ru_maxrss`` would count) to the file named by ``EMB_HOSTILE_PEAK`` as it exits
_CHILD = """
import atexit, os

def _peak():
    path = os.environ.get("EMB_HOSTILE_PEAK")
    if path:
        try:
            with open("/proc/self/status") as status:
                kib = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
            with open(path, "w") as out:
                out.write(kib)
        except (OSError, StopIteration):
            pass

atexit.register(_peak)
from emb.cli.main import main
main()
"""
EMB = [sys.executable, "-c", _CHILD]


@dataclass(frozen=True)
class Outcome:
    """How one run of ``emb`` ended."""

    args: tuple[str, ...]
    code: int  # the exit status; -N for a signal N
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mib: float  # the child's own peak resident memory (VmHWM); NaN where it was forked
    timed_out: bool
    started_anew: str = "by start_emb"  # why it was not forked ("": it was)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def __str__(self) -> str:  # what a failing assertion shows
        return (
            f"emb {' '.join(self.args)} -> exit {self.code} in {self.seconds:.1f} s"
            f"{' (TIMED OUT)' if self.timed_out else ''}, peak {self.peak_rss_mib:.0f} MiB, "
            f"{'started anew: ' + self.started_anew if self.started_anew else 'forked'}\n"
            f"--- stdout ---\n{self.stdout[-3000:]}\n--- stderr ---\n{self.stderr[-3000:]}"
        )


#: the environment this process started with: the fork server's (a test's monkeypatched variables
#: are its own runs', not the server's)
_STARTED_WITH = dict(os.environ)


def _environment(env: Mapping[str, str] | None,
                 base: Mapping[str, str] | None = None) -> dict[str, str]:
    merged = dict(os.environ if base is None else base)
    merged.pop("EMB_DEBUG", None)  # the user's view: no traceback unless a test asks for one
    src = str(Path(__file__).resolve().parents[1] / "src")
    rest = [p for p in merged.get("PYTHONPATH", "").split(os.pathsep) if p and p != src]
    merged["PYTHONPATH"] = os.pathsep.join([src, *rest])  # once: Python drops a repeated entry
    if env:
        merged.update(env)
    return merged


def start_emb(
    *args: str | os.PathLike[str],
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int | None = subprocess.DEVNULL,
) -> subprocess.Popen:
    """Start ``emb ARGS`` in a process group of its own (for a test that signals it mid-run);
    its stdout and stderr are pipes."""
    return subprocess.Popen(
        [*EMB, *map(str, args)],
        cwd=cwd,
        env=_environment(env),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        text=True,
    )


def run_emb(
    *args: str | os.PathLike[str],
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int | str | None = subprocess.DEVNULL,
    timeout: float = 120.0,
    fresh: bool = False,
) -> Outcome:
    """Run ``emb ARGS`` in a child process; kill its whole process group after ``timeout`` s.

    ``stdin`` is a file descriptor (or DEVNULL), or a path opened for reading. The child is forked
    from this process' fork server (:mod:`tests._forkserver`: the same process as a new one, less
    Python's start-up and imports) where it can be, else started anew; ``fresh=True`` always
    starts it anew (a test that reads its peak memory: a forked child's counts the server's
    pages)."""
    argv = [*EMB, *map(str, args)]
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        out, err, peak_file = scratch / "stdout", scratch / "stderr", scratch / "peak"
        out.touch()
        err.touch()
        environment = _environment({**(env or {}), "EMB_HOSTILE_PEAK": str(peak_file)})
        forked, why = None, "fresh=True"
        if not fresh and not (stdin in (None, subprocess.DEVNULL) or isinstance(stdin, str)):
            why = "its stdin is an inherited file descriptor"
        elif not fresh:
            forked, why = _forkserver.server(_environment(None, _STARTED_WITH), environment, _CHILD)
        killed = threading.Event()
        start = time.monotonic()
        try:
            if forked is not None:
                pid = forked.start([str(a) for a in args], cwd=str(cwd or os.getcwd()),
                                   env=environment, stdout=str(out), stderr=str(err),
                                   stdin=stdin if isinstance(stdin, str) else None)
                wait = forked.wait
            else:
                proc = _spawn(argv, cwd, environment, stdin, out, err)
                pid = proc.pid

                def wait() -> tuple[int, int]:
                    _, status, usage = os.wait4(proc.pid, 0)
                    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen knows
                    return status, usage.ru_maxrss

            def kill() -> None:
                killed.set()
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

            timer = threading.Timer(timeout, kill)
            timer.start()
            try:
                status, maxrss_kib = wait()
            finally:
                timer.cancel()
        finally:
            if forked is not None:
                _forkserver.release(forked)
        code = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - start
        if not killed.is_set():  # a child it left behind (a server) must not outlive the case
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        outcome = Outcome(
            args=tuple(map(str, args)),
            code=code,
            stdout=out.read_bytes().decode("utf-8", "replace"),
            stderr=err.read_bytes().decode("utf-8", "replace"),
            seconds=seconds,
            peak_rss_mib=math.nan if forked is not None else _peak_mib(peak_file, maxrss_kib),
            timed_out=killed.is_set(),
            started_anew=why,
        )
    _log(outcome)
    return outcome


def _spawn(argv: list[str], cwd: str | os.PathLike[str] | None, env: Mapping[str, str],
           stdin: int | str | None, out: Path, err: Path) -> subprocess.Popen:
    """``argv`` started anew in a session of its own, its output to the files."""
    with open(out, "wb") as stdout, open(err, "wb") as stderr, \
            (open(stdin, "rb") if isinstance(stdin, str) else contextlib.nullcontext(stdin)) as source:  # noqa: SIM115
        return subprocess.Popen(argv, cwd=cwd, env=env, stdin=source, stdout=stdout,
                                stderr=stderr, start_new_session=True)


def _peak_mib(peak_file: Path, maxrss_kib: int) -> float:
    """The child's own peak memory (VmHWM, written as it exited); where it could not write it
    (killed, or no /proc), ``ru_maxrss``, an upper bound that includes the forked parent's."""
    try:
        return int(peak_file.read_text()) / 1024
    except (OSError, ValueError):
        return maxrss_kib / 1024  # KiB on Linux


def _log(outcome: Outcome) -> None:
    path = os.environ.get("EMB_HOSTILE_LOG")
    if not path:
        return
    record = {
        "test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0],
        "args": list(outcome.args),
        "code": outcome.code,
        "seconds": round(outcome.seconds, 3),
        "peak_rss_mib": round(outcome.peak_rss_mib, 1),
        "timed_out": outcome.timed_out,
        "started_anew": outcome.started_anew,
        "traceback": "Traceback (most recent call last)" in outcome.output,
    }
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")


def assert_refused(
    outcome: Outcome,
    *,
    codes: Sequence[int] = (1, 2),
    mentions: Sequence[str] = (),
) -> str:
    """Assert that ``emb`` refused the input the way the product promises, and return the error
    line: an exit status in ``codes``, within its time, no traceback, no "internal error", and one
    ``Error: …`` line on stderr (warnings may come before it) naming each of ``mentions``
    (case-insensitive)."""
    assert not outcome.timed_out, f"hung:\n{outcome}"
    assert outcome.code in codes, f"expected exit {'/'.join(map(str, codes))}:\n{outcome}"
    assert "Traceback (most recent call last)" not in outcome.output, str(outcome)
    assert "internal error" not in outcome.output, str(outcome)
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    errors = [i for i, line in enumerate(lines) if line.startswith("Error:")]
    if outcome.code == 2 and not errors:  # emb validate's own status: its report on stdout
        return outcome.stdout.strip().splitlines()[-1] if outcome.stdout.strip() else ""
    assert errors, f"no 'Error:' line on stderr:\n{outcome}"
    first = errors[0]
    tail = [line for line in lines[first + 1 :] if not line.startswith(("Usage:", "Try '"))]
    assert not tail, f"the error is more than one line:\n{outcome}"
    message = lines[first]
    for word in mentions:
        assert word.lower() in message.lower(), f"the error does not name {word!r}:\n{outcome}"
    return message
