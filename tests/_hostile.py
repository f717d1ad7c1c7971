"""The hostile user's harness: run the real ``emb`` command in a child process, bounded in time,
and judge how it ended.

Every case of the reliability campaign (bad files, dying servers, full disks, kills) goes through
:func:`run_emb`, so that each one is run as a user runs it (a new process, real files, real exit
status, real stderr) and ends in one of the outcomes the product promises:

- refused: exit 1 or 2, one ``Error: …`` line on stderr (no traceback, no "internal error");
- accepted: exit 0 with a result the test checks itself.

A case never hangs (``timeout``: the child's process group is killed and the test fails) and its
peak memory is measured (``Outcome.peak_rss_mib``, the child's own ``ru_maxrss`` from ``wait4``).

With ``EMB_HOSTILE_LOG=FILE`` set, every outcome is appended to FILE as one JSON line (test id,
arguments, exit code, seconds, peak memory, timed out): the campaign's tally is read from there.
"""

from __future__ import annotations

import json
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
    peak_rss_mib: float  # the child's own peak resident memory (VmHWM)
    timed_out: bool

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def __str__(self) -> str:  # what a failing assertion shows
        return (
            f"emb {' '.join(self.args)} -> exit {self.code} in {self.seconds:.1f} s"
            f"{' (TIMED OUT)' if self.timed_out else ''}, peak {self.peak_rss_mib:.0f} MiB\n"
            f"--- stdout ---\n{self.stdout[-3000:]}\n--- stderr ---\n{self.stderr[-3000:]}"
        )


def _environment(env: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(os.environ)
    merged.pop("EMB_DEBUG", None)  # the user's view: no traceback unless a test asks for one
    src = str(Path(__file__).resolve().parents[1] / "src")
    merged["PYTHONPATH"] = os.pathsep.join(p for p in (src, merged.get("PYTHONPATH", "")) if p)
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
) -> Outcome:
    """Run ``emb ARGS`` in a child process; kill its whole process group after ``timeout`` s.

    ``stdin`` is a file descriptor (or DEVNULL), or a path opened for reading."""
    argv = [*EMB, *map(str, args)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryDirectory() as scratch:
        peak_file = Path(scratch) / "peak"
        env = {**(env or {}), "EMB_HOSTILE_PEAK": str(peak_file)}
        opened = open(stdin, "rb") if isinstance(stdin, str) else None  # noqa: SIM115
        try:
            start = time.monotonic()
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=_environment(env),
                stdin=opened if opened is not None else stdin,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            killed = threading.Event()

            def kill() -> None:
                killed.set()
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

            timer = threading.Timer(timeout, kill)
            timer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
            proc.returncode = os.waitstatus_to_exitcode(status)
            seconds = time.monotonic() - start
        finally:
            if opened is not None:
                opened.close()
        if not killed.is_set():  # a child it left behind (a server) must not outlive the case
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        out.seek(0)
        err.seek(0)
        outcome = Outcome(
            args=tuple(map(str, args)),
            code=proc.returncode,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
            seconds=seconds,
            peak_rss_mib=_peak_mib(peak_file, usage),
            timed_out=killed.is_set(),
        )
    _log(outcome)
    return outcome


def _peak_mib(peak_file: Path, usage: os.struct_rusage) -> float:
    """The child's own peak memory (VmHWM, written as it exited); where it could not write it
    (killed, or no /proc), ``ru_maxrss``, an upper bound that includes the forked parent's."""
    try:
        return int(peak_file.read_text()) / 1024
    except (OSError, ValueError):
        return usage.ru_maxrss / 1024  # KiB on Linux


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
