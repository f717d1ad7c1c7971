"""Benchmark CEAT: the corpus sampling pass and the analysis, ratios measured side by side in one run.

Corpus pass (``--corpus``): the shared corpus (``sentences.jsonl.gz``, 39.7 MB of JSON Lines)
linked ``--copies`` times (default 26: 1.03 GB of decompressed text) under a temporary directory,
each copy its own file. In one run, alternating:

- a naive pass: ``gzip`` lines → ``json.loads`` → regex tokens → set lookup per line;
- ``sample_contexts`` (all 14 tests' stimuli, ``--contexts`` per stimulus, sentence unit) with 1
  and with 2 worker processes;

reported as MB/s of decompressed text (the pass includes hashing the files, decompression, matching,
the reservoirs, sentence splitting and building the kept contexts), the speed-up 1 → 2 workers,
and the ratio to the naive pass. The machine's load average is printed: other processes on the
cores make both slower.

Analysis (``--analysis``): a C1-shaped test (25 + 25 + 25 + 25 stimuli, 1,000 contexts each,
768-d float16, one layer), N = 10,000 samples: the vectorised kernel (:func:`ceat_kernel`) and
``ceat()`` end to end (one layer, one pooling, no bootstrap, no per-sample p), against a faithful
per-sample loop in the authors' style (dictionaries of vectors, ``scipy.spatial.distance.cosine``
in Python loops) timed on ``--loop-samples`` samples and scaled to N; the ES of those samples
agree to float32 precision.

Usage::

    python benchmarks/ceat.py                    # both
    python benchmarks/ceat.py --corpus --copies 4 --contexts 1000
    python benchmarks/ceat.py --analysis
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

SHARED = Path(os.environ.get("EMB_TEST_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def _load() -> str:
    return os.getloadavg().__repr__()


def _stimuli() -> list[str]:
    from emb.extract.suites.ceat import CEAT_TESTS, ROLES

    return list(dict.fromkeys(w for t in CEAT_TESTS.values() for r in ROLES for w in t.words[r]))


def _naive(files: list[Path], words: list[str]) -> tuple[float, int, int]:
    token = re.compile(r"[^\W_]+")
    wanted = {w.lower() for w in words}
    n_bytes = hits = 0
    t0 = time.perf_counter()
    for path in files:
        with gzip.open(path, "rb") as handle:
            for line in handle:
                n_bytes += len(line)
                text = json.loads(line)["text"]
                hits += len(wanted.intersection(token.findall(text.lower())))
    return time.perf_counter() - t0, n_bytes, hits


def corpus_benchmark(copies: int, contexts: int, rounds: int) -> None:
    from emb.extract.contexts import sample_contexts

    source = SHARED / "corpus" / "sentences.jsonl.gz"
    words = _stimuli()
    with tempfile.TemporaryDirectory(prefix="emb-ceat-bench-") as tmp:
        files = []
        for i in range(copies):
            link = Path(tmp) / f"part-{i:03d}.jsonl.gz"
            os.symlink(source, link)
            files.append(link)
        text_bytes = copies * len(zlib.decompressobj(31).decompress(source.read_bytes()))
        print(f"corpus: {copies} copies of {source.name}: {text_bytes / 1e9:.3f} GB of JSONL text; "
              f"{len(words)} stimuli, {contexts:,} contexts each; load average before {_load()}")
        rows = []
        for r in range(rounds):
            t_naive, n_naive, _ = _naive(files, words)
            rows.append(("naive json.loads + regex + set", t_naive, n_naive))
            for workers in (1, 2):
                t0 = time.perf_counter()
                sample = sample_contexts(files, words, n=contexts, workers=workers)
                rows.append((f"sample_contexts, {workers} worker(s)", time.perf_counter() - t0,
                             sample.bytes_text))
            print(f"  round {r + 1}: load average {_load()}")
        best: dict[str, float] = {}
        for name, seconds, n_bytes in rows:
            rate = n_bytes / 1e6 / seconds
            best[name] = max(best.get(name, 0.0), rate)
            print(f"  {name:<34} {seconds:7.2f} s  {rate:7.1f} MB/s")
        one, two = best["sample_contexts, 1 worker(s)"], best["sample_contexts, 2 worker(s)"]
        naive = best["naive json.loads + regex + set"]
        print(f"best of {rounds}: 1 worker {one:.1f} MB/s per core (target >= 60), 2 workers "
              f"{two:.1f} MB/s: speed-up {two / one:.2f}x (target >= 1.8); naive {naive:.1f} MB/s: "
              f"sampling pass {one / naive:.2f}x the naive pass")


def _authors_loop(vectors: dict[str, np.ndarray], X, Y, A, B) -> float:
    from scipy.spatial import distance

    def associate(w):
        a = sum(1 - distance.cosine(vectors[w], vectors[x]) for x in A) / len(A)
        b = sum(1 - distance.cosine(vectors[w], vectors[x]) for x in B) / len(B)
        return a - b

    sx = [associate(x) for x in X]
    sy = [associate(y) for y in Y]
    return (np.mean(sx) - np.mean(sy)) / np.std(sx + sy, ddof=1)


def analysis_benchmark(n_samples: int, loop_samples: int, rounds: int) -> None:
    import xarray as xr

    from emb.analyses.ceat import ceat, ceat_kernel, sample_indices

    rng = np.random.default_rng(0)
    n_ctx, d = 1000, 768
    names = {r: [f"{r}{i}" for i in range(25)] for r in "XYAB"}
    order = [s for r in "XYAB" for s in names[r]]
    emb = rng.normal(size=(len(order) * n_ctx, d)).astype(np.float16)
    idx = sample_indices([n_ctx] * len(order), n_samples,
                         rng_seeds=[[0, j] for j in range(len(order))], replace="auto")
    idx += np.arange(len(order)) * n_ctx
    stim = np.repeat(np.asarray(order, dtype=object), n_ctx)
    role = np.repeat(np.asarray([s[0] for s in order], dtype=object), n_ctx)
    ds = xr.Dataset(
        {"embedding": (("item", "layer", "pooling", "feature"), emb[:, None, None, :])},
        coords={"layer": [12], "pooling": ["last"], "stimulus": ("item", stim),
                "tests": ("item", np.full(len(stim), "C1", dtype=object)), "roles": ("item", role)},
    )
    ds["embedding"] = ds["embedding"].chunk({"item": 12_800, "layer": 1, "pooling": 1})
    print(f"analysis: 25+25+25+25 stimuli x {n_ctx:,} contexts x {d} float16, N = {n_samples:,}, "
          f"one layer; load average before {_load()}")
    t_kernel, t_full = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        es, _, _ = ceat_kernel(emb[None], idx=idx, n_x=25, n_y=25, n_a=25, ddof=1,
                               variance="cohens-d")
        t_kernel.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ceat(ds, n_samples=n_samples, n_bootstrap=0, n_permutations=0).compute()
        t_full.append(time.perf_counter() - t0)
    e32 = emb.astype(np.float32)
    t0 = time.perf_counter()
    loop = []
    for i in range(loop_samples):
        vectors = {s: e32[idx[i, j]] for j, s in enumerate(order)}
        loop.append(_authors_loop(vectors, names["X"], names["Y"], names["A"], names["B"]))
    t_loop = (time.perf_counter() - t0) / loop_samples * n_samples
    agree = float(np.abs(np.asarray(loop) - es[0, :loop_samples]).max())
    k, f = min(t_kernel), min(t_full)
    print(f"  vectorised kernel          {k:6.2f} s (best of {rounds}; all: "
          f"{', '.join(f'{t:.2f}' for t in t_kernel)})")
    print(f"  ceat() end to end (dask)   {f:6.2f} s (best of {rounds}); target <= 1 s on 2 cores")
    print(f"  authors-style loop         {t_loop:6.1f} s (timed on {loop_samples} samples, scaled "
          f"to N); max |ES difference| {agree:.1e}")
    print(f"  loop / kernel = {t_loop / k:.0f}x, loop / ceat() = {t_loop / f:.0f}x (target >= 30x); "
          f"load average after {_load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="store_true", help="only the corpus pass")
    parser.add_argument("--analysis", action="store_true", help="only the analysis")
    parser.add_argument("--copies", type=int, default=26)
    parser.add_argument("--contexts", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--loop-samples", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    both = not (args.corpus or args.analysis)
    if args.analysis or both:
        analysis_benchmark(args.samples, args.loop_samples, args.rounds)
    if args.corpus or both:
        corpus_benchmark(args.copies, args.contexts, args.rounds)


if __name__ == "__main__":
    main()
