"""The kill campaign's runner (tests/faults/test_store_kills.py runs it as a child process):
``python tests/faults/_kill_campaign.py PLAN.json RESULT.json``.

It imports emb, torch and the model's classes once, then forks one child per run of ``emb
extract`` (the CLI's own entry point, in a real process of its own, SIGKILLed by the fault
injection of tests/faults/_inject before its N-th change to a path under the store), so that a
run costs the extraction and not Python's start-up and torch's import (~10 s a process on a
2-core machine).  Nothing here starts zarr's event loop before it forks: every read of a store is
made in a child too.

Blocks of 8 items, one block a compute window (``block_size_for`` and the settings'
``window_blocks`` default patched, as tests/extraction/test_shards_model.py patches the first):
a small suite spans many shards and windows.

PLAN: {"model": DIR, "suite": FILE, "dir": DIR, "disk": DIR, "real_disk": BOOL, "cases": [...]},
each case one of

- {"shards": K or null, "victim": I (the worker killed; null: the one process), "points":
  [N, ...] or {"spread": M, "from_end": [B, ...]} (M kill points spread over the victim's steps
  under the store, the last ones and those B steps before the end included)}: the workers run in turn, the victim killed, then run again;
- {"together": ["1/3", "2/3", None, ...]}: those runs started at once;
- {"damage": {"block": B, "mode": "flip" | "tail" | "empty" | "delete", "shards": K}};
- {"free": [BYTES, ...] or {"writes": M}}: a run with the store's disk full after that many
  bytes (a real small file system at "disk", or the injected full disk), then a run with room.

RESULT: the reference (an uninterrupted one-process run) and one record per run: the exit
codes, each failing run's message, and the store's state (status, hashes, what was left).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import signal
import sys
import time
import traceback
from pathlib import Path

import emb.extraction.settings as settings
import emb.store.suite_writer as writer

settings.ExtractionSettings.__init__.__kwdefaults__["window_blocks"] = 1  # what parse_settings makes
writer.block_size_for = lambda *args: 8

_spec = importlib.util.spec_from_file_location(
    "_emb_fault_inject", Path(__file__).resolve().parent / "_inject" / "sitecustomize.py")
_inject = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_inject)

TIMEOUT_S = 120
#: what `emb extract -m MODEL` (no model option given) asks the transformers backend to load
CLI_LOAD = {"dtype": "float32", "device": "auto", "revision": None, "trust_remote_code": False,
            "device_map": None, "max_memory": None, "offload_dir": None, "quantize": None,
            "layers": None}


def _child(fn, log: Path) -> int | str:
    """Run ``fn`` in a forked child (stdout dropped, stderr to ``log``); its exit code (-9: killed),
    or "timeout"."""
    pid = _start(fn, log)
    start = time.monotonic()
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() - start > TIMEOUT_S:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.01)


def _extract(plan: dict, store: Path, shard: str | None, kill: int = 0, counted: Path | None = None):
    def run() -> None:
        from emb.cli.main import main

        count = _inject._arm_kill(kill, str(store)) if kill or counted else None
        args = ["extract", "-m", plan["model"], "-s", plan["suite"], "--store", str(store), "-q",
                "--storage-dtype", "float32"]
        try:
            main([*args, *(["--shard", shard] if shard else [])], prog_name="emb")
        finally:
            if counted is not None and count is not None:
                counted.write_text(str(count[0]))

    return run


def _state(store: Path, out: Path):
    """What a store holds: its deep validation, each array's bytes (hashed), every object but
    metadata documents and the shard record (hashed), the manifest, and what must not stay
    (temporary files, locks)."""
    def run() -> None:
        import numpy as np
        import zarr

        from emb.schemas import datamodel as dm
        from emb.store._location import open_zarr_store
        from emb.store.validate import validate_store

        report = validate_store(str(store), deep=True)
        state = {"status": report.status, "problems": list(report.problems)[:5]}
        try:
            group = zarr.open_group(open_zarr_store(str(store)), mode="r", use_consolidated=False)["s"]
            arrays = {}
            for key, array in group.arrays():
                values = np.asarray(array[:])
                raw = values.tobytes() if values.dtype != object else json.dumps(
                    [str(v) for v in values.ravel()]).encode()
                arrays[key] = [str(values.dtype), list(values.shape), hashlib.sha256(raw).hexdigest()]
            state["arrays"] = arrays
        except Exception as err:  # noqa: BLE001 - a damaged store: reported, compared as such
            state["arrays"] = f"unreadable: {type(err).__name__}: {err}"
        progress = store / "s" / dm.PROGRESS_GROUP / "zarr.json"
        state["manifest"] = (json.loads(progress.read_text()).get("attributes", {}).get(dm.ATTR_MANIFEST)
                             if progress.exists() else None)
        files, left = {}, []
        for path in sorted(store.rglob("*")):
            rel = path.relative_to(store).as_posix()
            if path.name.endswith(".partial") or path.name.startswith("."):
                left.append(rel)
            elif path.is_file() and path.name != "zarr.json" and rel != "s/_progress/shards.json":
                files[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        state["files"], state["left"] = files, left
        out.write_text(json.dumps(state))

    return run


def _read_state(store: Path, work: Path) -> dict:
    out = work / "state.json"
    out.unlink(missing_ok=True)
    code = _child(_state(store, out), work / "state.log")
    if code != 0:
        return {"status": f"state check failed ({code}): {(work / 'state.log').read_text()[-2000:]}"}
    return json.loads(out.read_text())


def _message(log: Path) -> str:
    text = log.read_text(errors="replace") if log.exists() else ""
    lines = [line for line in text.splitlines() if line.startswith(("Error", "Traceback"))
             or "Error" in line]
    # its start kept: a refusal naming the store's path twice runs past 600 characters under
    # pytest-xdist's longer temporary paths, and cutting its head dropped its "Error: "
    return " | ".join(lines[-3:])[:2000]


def _start(fn, log: Path) -> int:
    """:func:`_child`, not waited for: its pid."""
    pid = os.fork()
    if pid == 0:
        os._exit(_run_here(fn, log))
    return pid


def _run_here(fn, log: Path) -> int:
    code = 0
    try:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 2)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        import torch

        torch.set_num_threads(1)
        fn()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported through the exit code and the log
        traceback.print_exc()
        code = 70
    sys.stderr.flush()
    return code


def _together(plan: dict, work: Path, workers: list[str | None]) -> dict:
    """Every worker of ``workers`` (a shard I/N, or None: the whole suite) started at once, each
    in its own process; then each shard run once more (after a refusal, the suite completes)."""
    store = work / "t.zarr"
    shutil.rmtree(store, ignore_errors=True)
    pids = {_start(_extract(plan, store, shard), work / f"together.{i}.log"): i
            for i, shard in enumerate(workers)}
    codes: dict[int, int | str] = {}
    start = time.monotonic()
    while len(codes) < len(pids):
        for pid in set(pids) - set(codes):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                codes[pid] = os.waitstatus_to_exitcode(status)
            elif time.monotonic() - start > TIMEOUT_S:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                codes[pid] = "timeout"
        time.sleep(0.02)
    together = [codes[pid] for pid in sorted(pids, key=pids.get)]
    messages = [_message(work / f"together.{i}.log") for i, code in enumerate(together) if code != 0]
    again = [_child(_extract(plan, store, shard), work / "again.log")
             for shard in dict.fromkeys(w for w in workers if w)]
    return {"together": workers, "codes": together, "again": again, "messages": messages,
            "state": _read_state(store, work)}


def _damaged(plan: dict, work: Path, *, block: int, mode: str, shards: int) -> dict:
    """Shard 1 of ``shards`` written, then block ``block``'s shard damaged (``mode``: flip a
    byte, cut the tail, empty, delete), then the other workers (which copy rows from it) and
    shard 1 again."""
    store = work / "d.zarr"
    shutil.rmtree(store, ignore_errors=True)
    codes = [_child(_extract(plan, store, f"1/{shards}"), work / "d.log")]
    path = store / "s" / "embedding" / "c" / str(block) / "0" / "0" / "0"
    raw = path.read_bytes()
    if mode == "flip":
        path.write_bytes(raw[: len(raw) // 3] + bytes([raw[len(raw) // 3] ^ 0xFF]) + raw[len(raw) // 3 + 1:])
    elif mode == "tail":
        path.write_bytes(raw[:-4])
    elif mode == "empty":
        path.write_bytes(b"")
    else:
        path.unlink()
    messages = []
    for i in [*range(2, shards + 1), 1]:
        codes.append(_child(_extract(plan, store, f"{i}/{shards}"), work / "d.log"))
        if codes[-1] != 0:
            messages.append(_message(work / "d.log"))
    return {"damage": mode, "block": block, "codes": codes, "messages": messages,
            "state": _read_state(store, work)}


def _full_disk(plan: dict, work: Path, free: int) -> dict:
    """One run with ``free`` bytes left on the store's disk (a real small file system at
    ``plan["disk"]`` when the test could mount one, else the injected full disk), then the run
    again with the space back."""
    disk = Path(plan["disk"])
    store = disk / "f.zarr"
    shutil.rmtree(store, ignore_errors=True)
    filler = disk / "filler"
    filler.unlink(missing_ok=True)
    if plan.get("real_disk"):
        stats = os.statvfs(disk)
        size = max(0, stats.f_bavail * stats.f_frsize - free)
        with filler.open("wb") as fh:
            while size > 0:
                try:
                    size -= fh.write(b"\0" * min(size, 1 << 20))
                except OSError:
                    break

    def full() -> None:
        if not plan.get("real_disk"):
            _inject._arm_disk(free, str(store))
        _extract(plan, store, None)()

    log = work / "full.log"
    codes = [_child(full, log)]
    messages = [_message(log)] if codes[-1] != 0 else []
    seen = sorted(p.relative_to(store).as_posix() for p in store.rglob("*")
                  if p.name.endswith(".partial")) if store.exists() else []
    filler.unlink(missing_ok=True)
    codes.append(_child(_extract(plan, store, None), log))
    if codes[-1] != 0:
        messages.append(_message(log))
    return {"free": free, "codes": codes, "messages": messages, "partial_after_full": seen,
            "state": _read_state(store, work)}


def _points_of_writes(plan: dict, work: Path, m: int) -> list[int]:
    """Bytes written into the store (os.write, os.writev) before each of ``m`` of its writes,
    spread over an uninterrupted run's writes, the last ones included: a disk that is full
    after that many bytes fails that write (a shard, a marker, a lock, ...)."""
    store, out = work / "w.zarr", work / "writes.json"
    shutil.rmtree(store, ignore_errors=True)

    def logged() -> None:
        sizes: list[int] = []
        real_write, real_writev = os.write, os.writev
        inside = os.path.realpath(store) + os.sep

        def under(fd: int) -> bool:
            try:
                return os.readlink(f"/proc/self/fd/{fd}").startswith(inside)
            except OSError:
                return False

        def write(fd, data):
            n = real_write(fd, data)
            if under(fd):
                sizes.append(n)
            return n

        def writev(fd, buffers):
            n = real_writev(fd, buffers)
            if under(fd):
                sizes.append(n)
            return n

        os.write, os.writev = write, writev
        try:
            _extract(plan, store, None)()
        finally:
            out.write_text(json.dumps(sizes))

    _child(logged, work / "writes.log")
    sizes = json.loads(out.read_text())
    before = [sum(sizes[:i]) for i in range(len(sizes))]
    picks = {round((len(before) - 1) * i / max(1, m - 1)) for i in range(m)} | {len(before) - 1}
    return [before[i] for i in sorted(picks) if 0 <= i < len(before)]


def _points(spec, total: int) -> list[int]:
    if isinstance(spec, list):
        return spec
    m = int(spec["spread"])
    picks = {max(1, round(total * i / m)) for i in range(1, m)} | {total, max(1, total - 1)}
    picks |= {total - int(back) for back in spec.get("from_end", ())}
    return sorted(p for p in picks if 1 <= p <= total)


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text())
    work = Path(plan["dir"])
    work.mkdir(parents=True, exist_ok=True)
    # the imports every child would repeat (the model's classes, torch) and the model itself,
    # made once: each child's `emb extract` gets this loaded model (the same object a load of it
    # would give; the child's copy is its own) instead of loading it again (~0.5 s of its ~0.8 s);
    # loading touches nothing under the store, where the kills are counted
    import emb.backends._hf_loading as loading

    real_load = loading.load_model
    loaded = real_load(plan["model"], **CLI_LOAD)

    def load_once(model, **options):
        same = str(model) == str(plan["model"]) and options == CLI_LOAD
        return loaded if same else real_load(model, **options)

    loading.load_model = load_once
    ref_store = work / "reference.zarr"
    shutil.rmtree(ref_store, ignore_errors=True)
    code = _child(_extract(plan, ref_store, None), work / "reference.log")
    reference = _read_state(ref_store, work)
    result = {"reference": reference, "reference_code": code, "runs": []}
    for case in plan["cases"]:
        if "together" in case:
            result["runs"].append(_together(plan, work, case["together"]))
            continue
        if "damage" in case:
            result["runs"].append(_damaged(plan, work, **case["damage"]))
            continue
        if "free" in case:
            frees = case["free"]
            if isinstance(frees, dict):  # the bytes before each of a spread of the store's writes
                frees = _points_of_writes(plan, work, int(frees["writes"]))
            result["runs"] += [_full_disk(plan, work, free) for free in frees]
            continue
        k, victim = case.get("shards"), case.get("victim")
        workers = [f"{i}/{k}" for i in range(1, k + 1)] if k else [None]
        killed = workers[(victim or 1) - 1]
        counted = work / "counted"
        store = work / "count.zarr"
        shutil.rmtree(store, ignore_errors=True)
        for shard in workers:  # an uninterrupted run, counting the victim's steps
            _child(_extract(plan, store, shard, counted=counted if shard == killed else None),
                   work / "count.log")
        total = int(counted.read_text())
        for n in _points(case["points"], total):
            store = work / "k.zarr"
            shutil.rmtree(store, ignore_errors=True)
            codes, messages = [], []
            for shard in workers:  # the victim killed before its n-th step, then run again
                runs = [n, 0] if shard == killed else [0]
                for kill in runs:
                    log = work / "run.log"
                    codes.append(_child(_extract(plan, store, shard, kill=kill), log))
                    if codes[-1] not in (0, -9):
                        messages.append(_message(log))
            result["runs"].append({"shards": k, "victim": victim, "kill": n, "of": total,
                                   "codes": codes, "messages": messages,
                                   "state": _read_state(store, work)})
            print(json.dumps(result["runs"][-1]), flush=True)  # progress, for a long campaign
    Path(sys.argv[2]).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
