"""Analyses at scale: ``emb analyze vast`` against the size of the store and against the floor.

Three measurements, printed side by side:

1. **Growth** — synthetic MiniLM-shaped ``vast`` stores (7 layers × 4 poolings × 384, float16,
   written with emb's own writer) of 1×, 2×, 4× and 8× a base size: the base holds one lexicon
   (``--words`` words × 4 settings + 25 + 25 polar words per setting); k× holds k such lexicons.
   Per size: ``emb analyze vast --no-tokenization --no-nullification`` (the settings curves, all
   ratings and poolings) end to end in a subprocess, its wall time, CPU seconds and peak RSS
   (sampled every 20 ms over the process tree), and the floor. Time should grow linearly with
   the store; memory should stay flat (a task holds one layer of one lexicon and setting).
2. **The floor** — reading and decoding the arrays the analysis needs (every item of the suite:
   lexicon and polar words of every setting), one layer at a time, with and without the cast to
   float32 and nothing else (zarr alone, one process, as the issue measured it: each layer cast
   whole); the settings curves as a ratio to it, and to tighter floors (the cast in cache into
   a reused buffer, on one thread and on two). Floor and computation alternate, ``--rounds``
   times; the best of each is compared.
   With ``--store PATH`` also on a real store (the README's MiniLM store), beside a plain eager
   NumPy loop over layers computing the valence curves, and ``emb analyze valnorm``.
3. **Opening** — ``Store.dataset`` on a store of ``--open-items`` items against the way it was
   done before (xarray's lazy UTF-8 decoding of every text coordinate, then the embedding
   chunked as a DataArray, which wrapped and hashed every coordinate too).

Usage::

    python benchmarks/scale.py                       # growth (base 2,000 words) + opening
    python benchmarks/scale.py --store /tmp/minilm.zarr   # + the floor on a real store
    python benchmarks/scale.py --quick               # base 500 words, 100,000 items to open
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analyze import POOLINGS, _items, eager_vast, run_cli, write_vast  # noqa: E402

N_LAYERS, D = 7, 384


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def build_store(path: Path, *, n_lexicons: int, n_words: int, n_layers: int = N_LAYERS,
                d: int = D, seed: int = 0) -> Path:
    """A synthetic ``vast`` store of ``n_lexicons`` lexicons of ``n_words`` words, with a planted
    valence direction (as ``benchmarks/analyze.py``), written with emb's writer."""
    frames = []
    for k in range(n_lexicons):
        items = _items(n_words, seed + k)
        items["lexicon"] = f"lex{k}"
        items["word"] = [w if s != "lexicon" else f"{w}_{k}" for w, s in
                         zip(items.word, items.stimulus_set, strict=True)]
        frames.append(items)
    items = pd.concat(frames, ignore_index=True)
    text = {c: ("item", items[c].to_numpy().astype(str).astype(object))
            for c in ("word", "setting", "stimulus_set", "lexicon")}
    coords = xr.Dataset(coords={
        **text,
        **{c: ("item", items[c].to_numpy()) for c in ("valence", "arousal", "dominance")},
        "n_subtokens": ("item", items.n_subtokens.to_numpy().astype(np.int64)),
        "layer": np.arange(n_layers),
        "pooling": np.array(POOLINGS, dtype=object),
    })
    write_vast(path, items, coords, d=d, model_id="synthetic/minilm-shaped",
               architecture="BertModel", tag="scale", seed=seed)
    return path


def floor(path: Path, suite: str = "vast") -> tuple[float, float, int]:
    """Seconds to read and decode every item's embedding one layer at a time with zarr alone,
    and with the cast to float32 (best of 2 each); and the decompressed bytes."""
    import zarr

    arr = zarr.open_group(str(path), path=suite, mode="r")["embedding"]
    read, cast = [], []
    for _ in range(2):
        t0 = time.perf_counter()
        for layer in range(arr.shape[1]):
            arr[:, layer]
        read.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for layer in range(arr.shape[1]):
            arr[:, layer].astype(np.float32)
        cast.append(time.perf_counter() - t0)
    return min(read), min(cast), int(np.prod(arr.shape)) * arr.dtype.itemsize


def tight_floors(path: Path, suite: str = "vast", rows: int = 2048) -> tuple[float, float]:
    """Seconds (best of 2) of the floor done as tightly as NumPy can: each layer read with zarr
    and cast ``rows`` rows at a time into one reused float32 buffer (no page faults, in
    cache), on one thread and on two threads (alternate layers)."""
    from concurrent.futures import ThreadPoolExecutor

    import zarr

    arr = zarr.open_group(str(path), path=suite, mode="r")["embedding"]

    def layer(index: int) -> None:
        x = arr[:, index]
        buf = np.empty((rows, *x.shape[1:]), dtype=np.float32)
        for start in range(0, x.shape[0], rows):
            part = x[start:start + rows]
            np.copyto(buf[: part.shape[0]], part)

    one, two = [], []
    for _ in range(2):
        t0 = time.perf_counter()
        for index in range(arr.shape[1]):
            layer(index)
        one.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(layer, range(arr.shape[1])))
        two.append(time.perf_counter() - t0)
    return min(one), min(two)


def analyze(path: Path, out: Path, *extra: str, name: str = "vast",
            cores: int = 2) -> tuple[float, float, int]:
    """``emb analyze NAME --quiet --no-plots`` in a subprocess pinned to ``cores`` CPUs:
    (wall seconds, CPU seconds of the process tree, peak RSS bytes)."""
    shutil.rmtree(out, ignore_errors=True)
    before = _cpu_children()
    if name == "vast":
        extra = ("--no-tokenization", "--no-nullification", *extra)
    seconds, peak, _, _ = run_cli(path, out, ["--no-plots", *extra], cores, analysis=name)
    return seconds, _cpu_children() - before, peak


def computation(path: Path, repeats: int = 2, **options: object) -> float:
    """Best of ``repeats`` seconds of the settings curves' computation alone, in this process
    (the suite opened as the CLI opens it, the CLI's threads and one BLAS thread; no start-up,
    no writing); ``options`` go to :func:`emb.analyses.vast.vast` (e.g. ``ratings="valence"``)."""
    import emb
    from emb.analyses import ANALYSES
    from emb.analyses.stats import single_threaded_blas
    from emb.analyses.vast import vast

    ds = emb.open_store(path).dataset("vast", chunk_by=ANALYSES["vast"].chunk_by)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        with single_threaded_blas():
            vast(ds, tokenization=False, nullification=False, **options).compute()
        times.append(time.perf_counter() - t0)
    return min(times)


def open_as_before(path: Path, suite: str = "vast") -> xr.Dataset:
    """``Store.dataset`` as it was: xarray decodes each text coordinate lazily (a Python loop
    over the items), every coordinate goes through xarray's object conversion, and the embedding
    is chunked as a DataArray (which wraps and hashes every coordinate as well)."""
    import emb
    from emb.store.store import _plain

    store = emb.open_store(path)
    ds = xr.open_zarr(store.zstore, group=suite, consolidated=False, zarr_format=3, chunks=None)
    ds = ds.assign_coords({n: _plain(c) for n, c in ds.coords.items() if n not in ds.indexes})
    ds = ds.assign_coords({n: _plain(ds[n]) for n in ds.indexes})
    ds["embedding"] = ds["embedding"].chunk({"item": 1024, "layer": 1, "pooling": -1,
                                             "feature": -1})
    return ds


_OPEN = """
import sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {here!r})
import emb, scale
def now(p):
    return emb.open_store(p).dataset("vast")
def before(p):
    return scale.open_as_before(p)
f = {how}
f({warm!r})  # imports, first-use costs
t0 = time.perf_counter()
ds = f({path!r})
print(time.perf_counter() - t0, ds.sizes["item"])
"""


def opening(path: Path, warm: Path, repeats: int = 3) -> tuple[float, float, int]:
    """Best of ``repeats`` seconds of ``Store.dataset`` and of the way before, each in a fresh
    process (after opening a small store there, so that imports are not counted); the two
    give equal coordinates (checked)."""
    import subprocess

    here = str(Path(__file__).resolve().parent)
    times: dict[str, list[float]] = {"now": [], "before": []}
    n = 0
    for _ in range(repeats):
        for how in times:
            code = _OPEN.format(here=here, how=how, warm=str(warm), path=str(path))
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout.split()
            times[how].append(float(out[0]))
            n = int(out[1])
    import emb

    ds, old = emb.open_store(path).dataset("vast"), open_as_before(path)
    for name in ds.coords:
        np.testing.assert_array_equal(ds[name].values, old[name].values)
    return min(times["now"]), min(times["before"]), n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=2_000, help="words per lexicon of the base")
    parser.add_argument("--factors", default="1,2,4,8", help="store sizes, in base sizes")
    parser.add_argument("--store", default=None, help="a real store with a 'vast' suite")
    parser.add_argument("--open-items", type=int, default=1_000_000,
                        help="items of the store whose opening is timed")
    parser.add_argument("--quick", action="store_true", help="base 500 words, 100,000 items")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds of the floor and the computation, alternating (--store)")
    parser.add_argument("--dir", default=None, help="where to write the stores (default: temp)")
    args = parser.parse_args()
    if args.quick:
        args.words, args.open_items = 500, 100_000
    factors = [int(f) for f in args.factors.split(",")]
    work = Path(args.dir or tempfile.mkdtemp(prefix="emb-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    warnings.simplefilter("ignore")
    try:
        if args.store:
            real = Path(args.store)
            # the floor and the computation alternate, round by round (the machine is noisy)
            rounds = [(floor(real), tight_floors(real), computation(real))
                      for _ in range(args.rounds)]
            read_s, cast_s = min(f[0] for f, _, _ in rounds), min(f[1] for f, _, _ in rounds)
            tight_s, tight2_s = min(t[0] for _, t, _ in rounds), min(t[1] for _, t, _ in rounds)
            raw, compute_s = rounds[0][0][2], min(c for _, _, c in rounds)
            per_round = sorted(c / f[1] for f, _, c in rounds)
            vast_s, vast_cpu, vast_peak = analyze(real, work / "real-vast", cores=args.cores)
            valence_s, _, _ = analyze(real, work / "real-vast-v", "--rating", "valence",
                                      cores=args.cores)
            valnorm_s, _, _ = analyze(real, work / "real-valnorm", name="valnorm")
            eager, eager_s = eager_vast(real)
            valence_compute_s = computation(real, ratings="valence")
            print(f"{real}: {raw / 2**20:.0f} MiB decompressed")
            print(f"  floor (zarr read + decode, one layer at a time): {read_s:.2f} s; "
                  f"with the cast to float32 {cast_s:.2f} s")
            print(f"  emb analyze vast, settings curves (valence, arousal, dominance): "
                  f"{vast_s:.2f} s = {vast_s / cast_s:.2f}x the floor with the cast "
                  f"({vast_cpu:.1f} CPU s, peak RSS {vast_peak / 2**20:.0f} MiB)")
            print(f"  the same computation alone, in process (no start-up, no writing): "
                  f"{compute_s:.2f} s = {compute_s / cast_s:.2f}x the floor (best of "
                  f"{args.rounds} each; per round {per_round[0]:.2f}-{per_round[-1]:.2f}x)")
            print(f"  tighter floors (cast in cache into a reused buffer): one thread "
                  f"{tight_s:.2f} s ({compute_s / tight_s:.2f}x), two threads {tight2_s:.2f} s "
                  f"({compute_s / tight2_s:.2f}x)")
            print(f"  emb analyze vast --rating valence: {valence_s:.2f} s = "
                  f"{valence_s / cast_s:.2f}x the floor; a plain eager NumPy loop over layers "
                  f"(valence, in process) {eager_s:.2f} s; emb analyze valnorm {valnorm_s:.2f} s")
            print(f"  like with like, in process: vast's valence curves {valence_compute_s:.2f} s, "
                  f"the eager loop {eager_s:.2f} s ({eager_s / valence_compute_s:.2f}x)")
            del eager

        rows = []
        for f in factors:
            path = work / f"scale-{f}x.zarr"
            if not path.exists():
                t0 = time.perf_counter()
                build_store(path, n_lexicons=f, n_words=args.words)
                print(f"built {path.name} in {time.perf_counter() - t0:.1f} s", flush=True)
            read_s, cast_s, raw = floor(path)
            seconds, cpu, peak = analyze(path, work / f"out-{f}x", cores=args.cores)
            rows.append({"size": f"{f}x", "items": 4 * f * (args.words + 50),
                         "decompressed MiB": raw / 2**20, "floor read s": read_s,
                         "floor read+cast s": cast_s, "vast s": seconds, "vast CPU s": cpu,
                         "vast / floor": seconds / cast_s, "s per GiB": seconds / (raw / 2**30),
                         "peak RSS MiB": peak / 2**20})
            print(rows[-1], flush=True)
        table = pd.DataFrame(rows).set_index("size")
        with pd.option_context("display.float_format", "{:.2f}".format, "display.width", 160):
            print("\nemb analyze vast (settings curves) by store size:")
            print(table.to_string())

        path = work / "open.zarr"
        if not path.exists():  # many items, tiny vectors: what opening costs is the labels
            build_store(path, n_lexicons=1, n_words=args.open_items // 4 - 50, n_layers=1, d=8)
        now, before, n = opening(path, work / f"scale-{factors[0]}x.zarr")
        print(f"\nopening a suite of {n:,} items: Store.dataset {now:.2f} s "
              f"({now / n * 1e6:.2f} µs per item); as before {before:.2f} s "
              f"({before / n * 1e6:.2f} µs per item): {before / now:.1f}x faster")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
