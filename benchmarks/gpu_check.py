"""The GPU check of issue 22, in one run (< 6 minutes on an H100 with 16 cores):

1. the transformers runner's overlapped copies (pinned memory, non-blocking, one sync per call)
   give bitwise the vectors of one synchronous copy per batch (GPT-2-small shapes, float16);
2. ``benchmarks/extract.py`` on GPT-2-small shapes (random weights, GPT-2's BPE), 20,000 bleached
   items, float16, batch 256: forward-only vs ``emb extract`` vs the write floor of the same bytes,
   4 shards in turn, and the estimate against the measured time;
3. the same on Llama shapes (22 layers, 2048-d, TinyLlama-1.1B's), 4,000 items, bfloat16;
4. ``benchmarks/write.py`` (no model: emb's write path against its floor, peak RSS) on this
   machine's cores.

    python benchmarks/gpu_check.py            # on the GPU machine
    python benchmarks/gpu_check.py --tiny     # a trial on CPU: tiny sizes, the same steps

Each step's lines are printed as they come; the ratios to read are marked ``[target ...]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _step(title: str, command: list[str], env: dict[str, str] | None = None, timeout: float = 300) -> None:
    print(f"\n== {title}\n$ {' '.join(command)}", flush=True)
    t0 = time.perf_counter()
    try:
        subprocess.run(command, check=False, timeout=timeout, env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        print(f"(stopped after {timeout:.0f} s)")
    print(f"-- {time.perf_counter() - t0:.0f} s", flush=True)


def overlap_check(device: str, n: int) -> None:
    """The overlapped copies against one synchronous copy per batch: bitwise equal."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    from extract import _model, _words

    from emb.backends import load_model

    with tempfile.TemporaryDirectory() as tmp:
        runner = load_model(_model("gpt2-random", Path(tmp)), device=device, dtype="float16")
        words = _words(n)
        encodings = runner.encode([f"This is {w}." for w in words], [(8, 8 + len(w)) for w in words])
        import emb.backends._hf_runner as hf_runner

        runner.overlap = False
        slow = runner.embed(encodings, batch_size=64, out_dtype="float16")
        default = hf_runner.STAGING_BYTES
        row = int(np.prod(slow.shape[1:])) * 2
        # the default staging buffer, and one emptied every 3 batches (its refilling tested)
        for staging in (default, 3 * 64 * row):
            hf_runner.STAGING_BYTES = staging
            runner._pinned = None
            runner.overlap = True
            fast = runner.embed(encodings, batch_size=64, out_dtype="float16")
            same = np.array_equal(fast.view(np.uint16), slow.view(np.uint16))
            print(f"overlapped copies on {runner.device} (staging {staging / 2**20:.1f} MiB): "
                  f"{fast.shape}, bitwise equal to synchronous copies: {same}  [target True]")
        hf_runner.STAGING_BYTES = default
        # the time of one call over all items, overlapped and not (the pinned buffer kept)
        times = {}
        for overlap in (True, False, True, False):
            runner.overlap = overlap
            t0 = time.perf_counter()
            runner.embed(encodings, batch_size=256, out_dtype="float16")
            times[overlap] = time.perf_counter() - t0  # the embed call ends with a host sync
        print(f"one embed call of {len(encodings):,} items, batch 256: overlapped "
              f"{times[True]:.2f} s, synchronous {times[False]:.2f} s (second of two runs each)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="tiny sizes on CPU (a trial of the script)")
    args = parser.parse_args()
    py = sys.executable
    if args.tiny:  # too few windows for shards
        device, gpt2_n, llama_n, repeat, shards = "cpu", "300", "120", "1", "0"
        write_n, llama_shape = ["--n", "512", "--repeat", "1"], "2x256"
    else:
        device, gpt2_n, llama_n, repeat, shards = "cuda", "20000", "4000", "3", "4"
        write_n, llama_shape = ["--repeat", "1"], "22x2048"
    print(f"GPU check, {len(os.sched_getaffinity(0))} cores, device {device}", flush=True)
    if not args.tiny:
        subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"], check=False)
    t0 = time.perf_counter()
    print("\n== 1. overlapped copies", flush=True)
    overlap_check(device, 300 if args.tiny else 20000)
    _step("2. GPT-2-small shapes, float16, batch 256",
          [py, str(HERE / "extract.py"), "--model", "gpt2-random", "--n", gpt2_n, "--batch-size", "256",
           "--device", device, "--dtype", "float16", "--repeat", repeat, "--loop-n", "100",
           "--shards", shards, "--floor"], timeout=200)
    if not args.tiny:
        _step("2b. what sharding costs: one run vs 4 shards in turn, and each run's estimate",
              [py, str(HERE / "shards.py"), "--model", "gpt2-random", "--n", gpt2_n, "--batch-size", "256",
               "--device", device, "--dtype", "float16", "--repeat", "2"], timeout=200)
    _step("3. Llama shapes, bfloat16, batch 64",
          [py, str(HERE / "extract.py"), "--model", "llama-random", "--n", llama_n, "--batch-size", "64",
           "--device", device, "--dtype", "bfloat16", "--repeat", repeat, "--loop-n", "50", "--floor"],
          env={"EMB_BENCH_LLAMA": llama_shape}, timeout=200)
    _step("4. the write path against its floor (no model)",
          [py, str(HERE / "write.py"), *write_n, "--shards", shards], timeout=150)
    print(f"\nGPU check done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
