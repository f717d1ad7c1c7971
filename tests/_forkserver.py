"""A fork server for the hostile harness (:func:`tests._hostile.run_emb`): ``emb`` run in a real
child process without paying Python's start-up and the imports of torch, transformers and emb
(~3 s of CPU a run; the campaigns make several hundred runs).

One server per test process, started at its first run: a Python process that imports what a run
of ``emb`` imports, then forks one child per run. The child is a process of its own, as the
console script's is: a new session (its process group killed on a timeout), the run's working
directory, environment, stdin, stdout and stderr files and ``sys.argv``; a ``PYTHONPATH`` with
more entries than the server's is put on ``sys.path`` and its ``sitecustomize`` imported, as at
start-up (the fault injection of tests/faults/_inject); it runs the CLI's entry point and ends as
the interpreter ends, as far as a run can tell (its exit status read from ``SystemExit``,
non-daemon threads joined, ``atexit`` functions run, output flushed), with the exit status the
server reports back.

What a fork cannot give is served by a new process instead (:func:`unforkable` says why): an
environment that differs from the server's in a variable that is read at start-up or at import
(``LD_*``, locale, thread counts, ``TMPDIR``, …: only ``EMB_*``, ``AWS_*``, pytest's own
variables, those the server's imports set themselves and a longer ``PYTHONPATH`` may differ), a
stdin that is an inherited descriptor, or a run made while the server is busy with another (runs
started together stay together). A forked child's peak memory counts the server's pages, so
:class:`~tests._hostile.Outcome` reports none for it.

``EMB_HOSTILE_FORK=0`` runs every case in a new process, as before.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping

__all__ = ["ForkServer", "release", "server", "unforkable"]

#: variables a run may set differently from the server's environment: read by emb, botocore and
#: pytest when they are used, never at import
RUN_TIME = ("EMB_", "AWS_", "PYTEST_")

#: what the server imports before it forks: the CLI and what its commands import when they run
#: (the extract stage's model stack, the analyses, the store), never anything that starts a thread
#: or an event loop
PRELOAD = (
    "emb.cli.main", "emb.api", "emb.extraction.pipeline", "emb.extraction.estimate", "emb.backends.hf",
    "emb.backends._hf_runner", "emb.backends._hf_loading", "emb.backends._hf_placement",
    "emb.backends.static", "emb.analyses", "emb.analyses.registry", "emb.store", "emb.results",
    "emb.results.report", "torch", "torch._dynamo", "sympy", "transformers", "accelerate", "safetensors",
    "tokenizers", "huggingface_hub", "transformers.models.auto.modeling_auto",
    "transformers.models.auto.tokenization_auto", "transformers.models.llama.modeling_llama",
    "transformers.models.gpt2.modeling_gpt2", "transformers.models.gpt2.tokenization_gpt2",
    "transformers.models.bert.modeling_bert", "transformers.models.bert.tokenization_bert",
    "scipy.stats", "dask.array", "xarray", "zarr", "jsonschema", "pyarrow", "PIL.Image", "tqdm",
    "matplotlib.figure", "matplotlib.backends.backend_agg", "pandas", "sklearn.linear_model",
)  # not bitsandbytes: its import prints to stderr, which a run that imports it must show

_SERVER = r"""
import atexit, gc, importlib, json, os, signal, sys, threading, traceback

channel = int(sys.argv[1])
for name in json.loads(sys.argv[2]):
    try:
        importlib.import_module(name)
    except Exception:  # a module this install lacks: its run imports it as a new process would
        pass
# PYTHONPATH's entries sit right after the script's directory ('' for -c)
base_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
assert sys.path[1 : 1 + len(base_path)] == base_path, (sys.path, base_path)
gc.collect()
gc.freeze()  # the imported objects stay shared with every child (no copy-on-write by the GC)


def _read():
    data = b""
    while not data.endswith(b"\n"):
        part = os.read(channel, 1 << 16)
        if not part:
            sys.exit(0)  # the test process is gone
        data += part
    return json.loads(data)


def _send(record):
    os.write(channel, (json.dumps(record) + "\n").encode())


def _child(request):
    os.close(channel)
    os.setsid()
    stdin = request["stdin"]
    fds = [os.open(stdin or os.devnull, os.O_RDONLY),
           os.open(request["stdout"], os.O_WRONLY | os.O_TRUNC),
           os.open(request["stderr"], os.O_WRONLY | os.O_TRUNC)]
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["-c", *request["args"]]
    code = 0
    try:
        if request["path"] is not None:  # more on PYTHONPATH: Python's start-up, from there on
            sys.path[1 : 1 + len(base_path)] = request["path"]
            try:
                import sitecustomize  # noqa: F401 - the fault injection of tests/faults/_inject
            except ImportError:
                pass
        exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__"})
    except SystemExit as exit_:  # as the interpreter reads it (Python/pythonrun.c)
        if exit_.code is None or isinstance(exit_.code, int):
            code = exit_.code or 0
        else:
            print(exit_.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    # the interpreter's exit up to what a run can observe: its non-daemon threads joined, its
    # atexit functions run, its output flushed (Py_FinalizeEx's order); the rest of a finalisation
    # (freeing every module's objects, ~1.5 s here) would only copy the server's pages
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120
    os._exit(code)


# the environment as the imports left it (scikit-learn sets KMP_* variables); whether a
# sitecustomize module was imported at start-up (a run's own could then not be imported first)
_send({"env": dict(os.environ), "sitecustomize": "sitecustomize" in sys.modules})
while True:
    request = _read()
    pid = os.fork()
    if pid == 0:
        _child(request)
    _send({"pid": pid})
    _, status, usage = os.wait4(pid, 0)
    _send({"status": status, "maxrss_kib": usage.ru_maxrss})
"""


def unforkable(env: Mapping[str, str], base: Mapping[str, str], imported: Mapping[str, str],
               *, path: bool) -> list[str]:
    """The variables that keep a run with the environment ``env`` from being forked from a server
    started with ``base`` whose imports set ``imported`` (scikit-learn's ``KMP_*``, torch's
    compiler cache): those ``env`` sets otherwise than ``base``, but for the ones read at run time
    (:data:`RUN_TIME`), those the imports set, left unset or set alike (a new process' imports
    set them so too), and, where ``path``, a ``PYTHONPATH`` that adds entries to the server's
    (:func:`extended_path`)."""
    keys = set(env) | set(base)
    return sorted(k for k in keys if env.get(k) != base.get(k) and not k.startswith(RUN_TIME)
                  and not (k in imported and env.get(k) in (None, imported[k]))
                  and not (k == "PYTHONPATH" and path and extended_path(env, base) is not None))


def extended_path(env: Mapping[str, str], base: Mapping[str, str]) -> list[str] | None:
    """``env``'s ``PYTHONPATH`` entries where they hold ``base``'s in the same order and more
    (the fault injection's directory: its ``sitecustomize`` runs at start-up); else None."""
    entries, ours = _entries(env), _entries(base)
    rest = iter(entries)
    in_order = all(entry in rest for entry in ours)  # ours, a subsequence of entries
    return entries if in_order and len(entries) > len(ours) else None


def _entries(env: Mapping[str, str]) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


class ForkServer:
    """One server process (see the module); :meth:`start` runs one ``emb`` in a forked child."""

    def __init__(self, env: Mapping[str, str], code: str) -> None:
        self.code = code
        self.lock = threading.Lock()
        ours, theirs = socket.socketpair()
        self.channel = ours
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(theirs.fileno()), json.dumps(PRELOAD)],
            env=dict(env), pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
        )
        theirs.close()
        self.reader = ours.makefile("rb")
        self.env = dict(env)
        started = self._receive()
        self.imported = {k: v for k, v in started["env"].items() if self.env.get(k) != v}
        self.sitecustomize = started["sitecustomize"]

    def _receive(self) -> dict:
        line = self.reader.readline()
        if not line:
            raise RuntimeError(f"the fork server (pid {self.process.pid}) ended: "
                               f"exit {self.process.poll()}")
        return json.loads(line)

    def start(self, args: list[str], *, cwd: str, env: Mapping[str, str], stdin: str | None,
              stdout: str, stderr: str) -> int:
        """Fork the run; its pid (its process group's id). :meth:`wait` gives how it ended."""
        path = extended_path(env, self.env) if env.get("PYTHONPATH") != self.env.get(
            "PYTHONPATH") else None
        request = {"args": args, "cwd": cwd, "env": dict(env), "stdin": stdin, "stdout": stdout,
                   "stderr": stderr, "code": self.code, "path": path}
        self.channel.sendall((json.dumps(request) + "\n").encode())
        return int(self._receive()["pid"])

    def wait(self) -> tuple[int, int]:
        """The run's wait status and its peak RSS (KiB, the server's pages included)."""
        done = self._receive()
        return int(done["status"]), int(done["maxrss_kib"])

    def close(self) -> None:
        self.channel.close()
        self.reader.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_servers: dict[int, ForkServer] = {}
_starting = threading.Lock()


def server(base: Mapping[str, str], env: Mapping[str, str],
           code: str) -> tuple[ForkServer | None, str]:
    """This process' fork server (started at the first call with the environment ``base``, to run
    ``code``) for a run with the environment ``env``, and ""; or None and why the run must be a
    new process (``EMB_HOSTILE_FORK=0``, an environment the server cannot give, the server busy
    with another run: see the module)."""
    if os.environ.get("EMB_HOSTILE_FORK", "1").strip() == "0" or not hasattr(os, "fork"):
        return None, "EMB_HOSTILE_FORK=0"
    with _starting:
        current = _servers.get(os.getpid())
        if current is None:
            current = ForkServer(base, code)
            _servers[os.getpid()] = current
            atexit.register(current.close)
    differ = unforkable(env, current.env, current.imported, path=not current.sitecustomize)
    if differ:
        return None, f"its environment sets {', '.join(differ)}"
    if not current.lock.acquire(blocking=False):
        return None, "the fork server is running another case"
    return current, ""


def release(current: ForkServer) -> None:
    current.lock.release()

