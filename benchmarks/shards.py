"""What sharding costs: one ``emb extract`` against the same suite as N shards run in turn.

One process, one loaded model, the same items (default: 20,000 bleached items "This is WORD."
with a tiny random GPT-2: 3 blocks, 32-d, GPT-2's real BPE, so that what a run costs besides
the model shows), alternating ``--repeat`` times so that the machine's drift hits both alike:

    python benchmarks/shards.py                              # tiny GPT-2, 20k items, 4 shards
    python benchmarks/shards.py --model minilm --n 2000 --window-blocks 1   # 4 windows of 512
    python benchmarks/shards.py --profile                    # cProfile of one shard run

Target: the N shards in turn cost <= 1.1 x one run (their sum; a worker per device runs them at
once), the sharded store bitwise the one-run store.  Also printed: the estimate ``emb extract``
prints first (a dry run of the same call) against the time of the run, for one run and for
each shard [target 0.7-1.3].  The times are those of ``extract()`` after the model is loaded
(tokenising, planning, the store's checks and layout, computing, writing, finishing).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from extract import _model, _words  # noqa: E402
from fingerprint import tiny_gpt2  # noqa: E402

from emb.backends import load_model  # noqa: E402
from emb.errors import EmbError  # noqa: E402
from emb.extraction.pipeline import extract  # noqa: E402
from emb.stimuli.suites import Item, Suite  # noqa: E402


def _suite(n: int) -> Suite:
    items = tuple(
        Item(context=f"This is {w}.", word=w, char_start=8, char_end=8 + len(w),
             setting="bleached", stimulus_set="lexicon", labels={})
        for w in _words(n)
    )
    return Suite(name="bench", items=items)


def _timed(call) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="tiny-gpt2", help="tiny-gpt2, minilm, gpt2-random, or a model id/path")
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--window-blocks", type=int, default=None,
                        help="blocks a compute window (default emb's); 1 lets a small suite have N windows")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch's CPU threads (default: torch's own; 1 is steadier on a busy machine)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one shard run and stop")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        path = str(tiny_gpt2(tmp_path / "tiny")) if args.model == "tiny-gpt2" else _model(args.model, tmp_path)
        runner = load_model(path, device=args.device, dtype=args.dtype)
        suite = _suite(args.n)
        info = runner.info
        print(f"model {info.model_id} ({info.n_layers} layers, {info.hidden_size}-d) on {runner.device}, "
              f"{len(suite.items):,} items, batch {args.batch_size}, {args.shards} shards")
        options = {"batch_size": args.batch_size, "progress": False,
                   **({"window_blocks": args.window_blocks} if args.window_blocks else {})}
        # warm-up: the store libraries' lazy imports, the model's first batches, both paths
        extract(runner, Suite(name="warm", items=suite.items[:2048]), str(tmp_path / "warm.zarr"), **options)
        if args.shards:
            try:
                extract(runner, Suite(name="warm", items=suite.items[:8192]),
                        str(tmp_path / "warm-shards.zarr"), shard="1/2", **options)
            except EmbError:  # too few items for two windows: no shard run to warm up
                pass

        if args.profile:
            store = str(tmp_path / "profiled.zarr")
            for index in range(1, args.shards):
                extract(runner, suite, store, shard=f"{index}/{args.shards}", **options)
            profile = cProfile.Profile()
            profile.enable()
            t = _timed(lambda: extract(runner, suite, store, shard=f"{args.shards}/{args.shards}", **options))
            profile.disable()
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(45)
            print(out.getvalue())
            print(f"shard {args.shards}/{args.shards} (the last: it finishes the suite): {t:.2f} s under the profiler")
            return

        def run(store: str, shard: str | None, estimates: dict[str, float] | None) -> tuple[float, float]:
            """(wall, CPU) seconds of one extract() call; with ``estimates``, first the estimate
            it prints (a dry run of the same call on the same store: probes, nothing written)."""
            if estimates is not None:
                got: list = []
                extract(runner, suite, store, dry_run=True, on_estimate=got.append, shard=shard, **options)
                estimates[shard or "one run"] = got[0]
            t0, c0 = time.perf_counter(), time.process_time()
            extract(runner, suite, store, shard=shard, **options)
            return time.perf_counter() - t0, time.process_time() - c0

        estimates: dict[str, object] = {}
        one: list[tuple[float, float]] = []
        sharded: list[list[tuple[float, float]]] = []
        for r in range(args.repeat):  # alternating: the machine's drift hits both alike
            first = estimates if r == 0 else None
            one.append(run(str(tmp_path / f"one{r}.zarr"), None, first))
            sharded.append([run(str(tmp_path / f"sharded{r}.zarr"), f"{i}/{args.shards}", first)
                            for i in range(1, args.shards + 1)])
        import zarr

        a = zarr.open_group(str(tmp_path / "one0.zarr"), mode="r")["bench/embedding"][:]
        same = None
        if args.shards:
            b = zarr.open_group(str(tmp_path / "sharded0.zarr"), mode="r")["bench/embedding"][:]
            same = a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))

    for kind, k in (("wall", 0), ("CPU", 1)) if args.shards else ():
        ones = [t[k] for t in one]
        sums = [sum(s[k] for s in shards) for shards in sharded]
        per_shard = np.median(np.array([[s[k] for s in shards] for shards in sharded]), axis=0)
        t_one, t_sum = float(np.median(ones)), float(np.median(sums))
        print(f"{kind:4s} one run            {t_one:7.2f} s  (median of {args.repeat}: "
              f"{', '.join(f'{t:.2f}' for t in ones)})")
        print(f"{kind:4s} {args.shards} shards in turn   {t_sum:7.2f} s  (median of {args.repeat}: "
              f"{', '.join(f'{t:.2f}' for t in sums)}); per shard {', '.join(f'{t:.2f}' for t in per_shard)} s")
        print(f"{kind:4s} ratio {args.shards} shards in turn / one run = {t_sum / t_one:.3f} (medians), "
              f"{min(sums) / min(ones):.3f} (minima)  [target <= 1.1]"
              + (f"; slowest shard / one run = {max(per_shard) / t_one:.3f} (the wall time on "
                 f"{args.shards} devices)" if k == 0 else ""))
    print(f"sharded store's embedding bitwise equal to one run's: {same}")
    actual = {"one run": one[0][0], **{f"{i}/{args.shards}": sharded[0][i - 1][0]
                                      for i in range(1, args.shards + 1)}}
    for label, est in estimates.items():
        print(f"estimate {label:8s} {est.seconds:6.2f} s ({est.seconds_low:.2f}-{est.seconds_high:.2f}; "
              f"before {getattr(est, 'seconds_before', 0.0):.2f}, fixed {getattr(est, 'seconds_fixed', 0.0):.2f}, writing "
              f"{est.seconds_writing:.2f}) vs {actual[label]:6.2f} s taken (the same run): "
              f"measured / estimate = {actual[label] / est.seconds:.2f}  [target 0.7-1.3]")


if __name__ == "__main__":
    main()
