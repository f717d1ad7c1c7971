"""The write path against its floor: ``emb extract`` with a runner that costs nothing (it hands
out precomputed float16 blocks) against the floor of the same bytes on the same cores.

    python benchmarks/write.py                    # GPT-2-small and Llama-1B shapes, 5 rounds each
    python benchmarks/write.py --shapes gpt2 --n 2048 --repeat 1 --shards 4

Workloads: GPT-2-small shapes (13 layers × 4 poolings × 768, float16) and Llama-1B shapes (23 ×
4 × 2048); items "This is wordN." (all distinct contexts), random normal vectors (LZ4 finds
nothing to compress: the dearest case).  Each variant runs in a child process of its own, so
that its peak RSS (``ru_maxrss``) is its own: printed whole (the child's libraries and its one
window of precomputed vectors included) and as the growth during the timed run:

- ``floor``: the same blocks (the suite's block size) compressed with numcodecs' Blosc-LZ4 level 1
  and written as one file each, fsync'd, on a thread pool as wide as the cores: what the bytes
  cost at least;
- ``emb``: ``emb extract`` into a new local store (layout, coordinates, shards, markers,
  manifest, consolidated metadata);
- ``emb, new arrays``: the same with a runner that returns each window in a new array, as a
  model's runner does, at the suite's size and twice it (host memory must not grow with the
  suite: it is bounded by the window and the queue of windows);
- ``zarr path``: ``emb extract`` with the path before this one (each block written by zarr's
  array assignment on one writer thread, one window queued, its shard read back for the
  manifest), when asked (``--old``);
- ``shards``: with ``--shards N``, the suite as N shards (``--shard I/N``) run one after another
  into one store, against one run;
- ``emb @SRC``: with ``--compare SRC``, ``emb`` run from another checkout's ``src`` (the commit
  before a change), alternating with this one.

``--shapes tiny`` (8 features, 200,000 items) prints emb's own cost per item, the model and the
bytes taken away: on a GPU it is serial with the forward pass (GPT-2 small runs ~35 us an item
on an H100), so it bounds emb's share of the forward pass's throughput whatever the write path.

Targets: emb >= 0.8 × the floor's items/s; N shards in turn <= 1.1 × one run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: (blocks, hidden): layers 0..L; "tiny" (8 features) writes almost nothing: emb's per-item
#: costs (planning, coordinates, the suite's hash, the windows' bookkeeping, the markers) show
SHAPES = {"gpt2": (12, 768), "llama": (22, 2048), "tiny": (12, 8)}
POOLINGS = ("first", "last", "mean", "max")


@dataclass(frozen=True, kw_only=True)
class _Info:
    model_id: str = "precomputed"
    revision: str | None = "r1"
    fingerprint: str = "precomputed"
    architecture: str = "Precomputed"
    n_layers: int = 12
    hidden_size: int = 768
    last_layer: str = "output of the last block"
    device: str = "cpu"
    causal: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class _Encoding:
    input_ids: np.ndarray
    target: np.ndarray

    @property
    def n_tokens(self) -> int:
        return int(self.input_ids.size)

    @property
    def n_subtokens(self) -> int:
        return int(self.target.size)

    @property
    def token_start(self) -> int:
        return int(self.target[0])

    @property
    def token_end(self) -> int:
        return int(self.target[-1]) + 1

    @property
    def subtoken_ids(self) -> np.ndarray:
        return self.input_ids[self.target]

    window = None


def _runner(n_layers: int, hidden: int, pool: np.ndarray, *, copies: bool = False) -> Any:
    from emb.backends import Runner
    from emb.store import layer_major

    class Precomputed(Runner):
        """Hands out rows of ``pool`` (a window of precomputed float16 vectors, stored layer by
        layer as the transformers runner returns them); ``copies``: in a new array each call,
        as a model's runner does (what the host memory of a run is made of)."""

        info = _Info(n_layers=n_layers, hidden_size=hidden)

        def encode(self, contexts, spans, *, bos=None, bos_token_id=None):
            ids = np.arange(4, dtype=np.int32)
            return [_Encoding(ids, np.array([2], dtype=np.int64)) for _ in contexts]

        def embed(self, encodings, *, poolings=POOLINGS, batch_size=64, progress=None,
                  out_dtype="float32", truncate=None):
            n = len(encodings)
            if n <= len(pool) and pool.dtype == out_dtype and not copies:
                out = pool[:n]  # precomputed: no cost at all
            else:
                out = layer_major((n, *pool.shape[1:]), out_dtype)
                for start in range(0, n, len(pool)):
                    stop = min(n, start + len(pool))
                    out[start:stop] = pool[: stop - start]
            if progress is not None:
                progress(n)
            return out

    return Precomputed()


def _suite(n: int) -> Any:
    from emb.stimuli.suites import Item, Suite

    items = tuple(
        Item(context=f"This is word{i}.", word=f"word{i}", char_start=8,
             char_end=8 + len(f"word{i}"), setting="bleached", stimulus_set="lexicon", labels={})
        for i in range(n)
    )
    return Suite(name="bench", items=items)


def _floor(pool: np.ndarray, n: int, block: int, directory: Path) -> None:
    """Blosc-LZ4 level 1 of each block and one fsync'd write per block, on every core."""
    from numcodecs import Blosc

    codec = Blosc(cname="lz4", clevel=1, shuffle=Blosc.NOSHUFFLE, typesize=pool.dtype.itemsize)
    directory.mkdir()
    starts = range(0, n, block)

    def one(start: int) -> None:
        rows = min(block, n - start)
        at = start % len(pool)
        data = codec.encode(pool[at : at + rows] if at + rows <= len(pool) else pool[:rows])
        fd = os.open(directory / str(start), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool_:
        list(pool_.map(one, starts))


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """One variant, in this (child) process: its seconds and peak RSS above its data."""
    from emb.extraction import pipeline
    from emb.extraction import settings as extraction_settings
    from emb.extraction.options import WINDOW_BLOCKS
    from emb.store import layer_major
    from emb.store import suite_writer as store_writer

    n_blocks, hidden = SHAPES[spec["shape"]]
    storage = np.dtype("float16")
    block = store_writer.block_size_for(n_blocks + 1, len(POOLINGS), hidden, storage.itemsize)
    window = block * WINDOW_BLOCKS.default
    rng = np.random.default_rng(0)
    pool = layer_major((window, n_blocks + 1, len(POOLINGS), hidden), storage)
    for start in range(0, window, 8):  # a few rows at a time: no temporary of the window's size
        pool[start : start + 8] = rng.standard_normal((min(8, window - start), *pool.shape[1:]),
                                                      dtype=np.float32)
    pool.setflags(write=False)
    runner = _runner(n_blocks, hidden, pool, copies=spec.get("copies", False))
    n = spec["n"]
    suite = _suite(n)
    directory = Path(spec["dir"])
    if spec["variant"] == "zarr path":
        store_writer.ShardEncoder.of = classmethod(lambda cls, array: None)  # type: ignore[method-assign]
        extraction_settings.writer_threads = lambda: 1
        pipeline.QUEUE_WINDOWS = 1
    # warm-up: lazy imports, the codecs, the event loop (a small suite, another store)
    pipeline.extract(runner, _suite(2 * block), str(directory / "warm.zarr"), progress=False,
                     storage_dtype="float16", dtype="float16")
    blocks = np.ascontiguousarray(pool) if spec["variant"] == "floor" else None
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    if blocks is not None:
        _floor(blocks, n, block, directory / "floor")
    elif spec["variant"] == "shards":
        for index in range(1, spec["shards"] + 1):
            pipeline.extract(runner, suite, str(directory / "sharded.zarr"), progress=False,
                             storage_dtype="float16", dtype="float16",
                             shard=f"{index}/{spec['shards']}")
    else:
        pipeline.extract(runner, suite, str(directory / "bench.zarr"), progress=False,
                         storage_dtype="float16", dtype="float16")
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": seconds, "rss_mib": (peak - base) / 1024, "peak_mib": peak / 1024,
            "block": block, "bytes": n * pool[0].nbytes}


def _run(spec: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=spec.get("tmp")) as tmp:
        spec = {**spec, "dir": tmp}
        env = None if not spec.get("src") else {**os.environ, "PYTHONPATH": spec["src"]}
        out = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(spec)],
            capture_output=True, text=True, check=False, env=env,
        )
        if out.returncode:
            raise SystemExit(f"{spec['variant']} failed:\n{out.stderr[-3000:]}")
        shutil.rmtree(tmp, ignore_errors=True)
        return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="gpt2,llama", help="gpt2, llama or both (comma-separated)")
    parser.add_argument("--n", type=int, default=0,
                        help="items (default: 8,192 at GPT-2 shapes, 2,048 at Llama's: ~650 MB, ~770 MB)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds: the floor, then emb (and the others), one after the other")
    parser.add_argument("--shards", type=int, default=0, help="also N shards in turn into one store")
    parser.add_argument("--old", action="store_true", help="also the zarr path (before this one)")
    parser.add_argument("--compare", default=None, metavar="SRC",
                        help="also emb from another checkout's src directory, alternating")
    parser.add_argument("--tmp", default=None, help="directory of the stores (default: the system's)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return

    print(f"{len(os.sched_getaffinity(0))} cores; stores under {args.tmp or tempfile.gettempdir()}")
    for shape in args.shapes.split(","):
        n = args.n or {"gpt2": 8192, "llama": 2048, "tiny": 200_000}[shape]
        spec = {"shape": shape, "n": n, "tmp": args.tmp, "shards": args.shards}
        times: dict[str, list[float]] = {}
        rss: dict[str, tuple[float, float]] = {}
        variants = ["floor", "emb"] + (["zarr path"] if args.old else []) + (
            ["shards"] if args.shards else []) + (["emb @SRC"] if args.compare else [])
        for _ in range(args.repeat):
            for variant in variants:
                result = _run({**spec, "variant": "emb", "src": args.compare} if variant == "emb @SRC"
                              else {**spec, "variant": variant})
                times.setdefault(variant, []).append(result["seconds"])
                rss[variant] = max(rss.get(variant, (0.0, 0.0)), (result["peak_mib"], result["rss_mib"]))
        memory = {k: _run({**spec, "variant": "emb", "n": k * n, "copies": True}) for k in (1, 2)}
        layers, hidden = SHAPES[shape][0] + 1, SHAPES[shape][1]
        size = result["bytes"] / 1e9
        print(f"\n{shape} shapes ({layers} × 4 × {hidden} float16), {n:,} items "
              f"({size:.2f} GB raw), shards of {result['block']} items; median of {args.repeat}")
        for variant in variants:
            if variant == "shards":
                continue
            t = float(np.median(times[variant]))
            print(f"  {variant:<10} {t:7.2f} s  {n / t:9,.0f} items/s  {t / n * 1e6:6.1f} us/item  "
                  f"{size / t:6.2f} GB/s  "
                  f"peak RSS {rss[variant][0]:5.0f} MiB (+{rss[variant][1]:.0f} in the run)")
        for k, run in memory.items():
            print(f"  emb, new arrays per window, {k * n:,} items: {run['seconds']:.2f} s, peak RSS "
                  f"{run['peak_mib']:.0f} MiB (+{run['rss_mib']:.0f} in the run)")
        t_floor, t_emb = float(np.median(times["floor"])), float(np.median(times["emb"]))
        paired = sorted(f / e for f, e in zip(times["floor"], times["emb"], strict=True))
        print(f"  ratio emb / floor items/s = {t_floor / t_emb:.2f}  [target >= 0.8]; in each "
              f"round (floor and emb run one after the other): {', '.join(f'{r:.2f}' for r in paired)}")
        if args.old:
            t_old = float(np.median(times["zarr path"]))
            print(f"  ratio zarr path / floor items/s = {t_floor / t_old:.2f}; emb / zarr path = "
                  f"{t_old / t_emb:.2f}")
        if args.compare:
            t_src = float(np.median(times["emb @SRC"]))
            paired = sorted(s / e for s, e in zip(times["emb @SRC"], times["emb"], strict=True))
            print(f"  ratio emb / emb @SRC items/s = {t_src / t_emb:.2f}; in each round: "
                  f"{', '.join(f'{r:.2f}' for r in paired)}")
        if args.shards:
            t_shards = float(np.median(times["shards"]))
            print(f"  {args.shards} shards in turn {t_shards:7.2f} s = {t_shards / t_emb:.2f} × one run "
                  f"(medians)  [target <= 1.1]; peak RSS {rss['shards'][0]:.0f} MiB")

if __name__ == "__main__":
    main()
