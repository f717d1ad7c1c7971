"""Benchmark ``emb analyze vast`` on a synthetic store shaped like GPT-2 on the Warriner lexicon.

The store has 13,915 lexicon words + 25 + 25 polar words in 4 settings (55,860 items) × 13 layers ×
4 poolings × 768 features, float16, written with emb's own writer (sharded: one shard per block of
512 items, inner chunks of (512 items, 1 layer, 1 pooling, 768 features)), about 4.5 GB raw.

Measured, in one run:

- ``emb analyze vast --no-tokenization --no-nullification`` (the settings curves, all poolings) end
  to end in a subprocess pinned to 2 cores: wall time and peak RSS (sampled every 20 ms over the
  process tree, and the kernel's ru_maxrss); targets ≤ 30 s and ≤ 1.5 GB;
- an eager NumPy implementation of the same numbers on the same store (zarr reads, one
  (layer, pooling) slice at a time), its time, the ratio, and the largest |Δr| between the two;
- the WEAT exact permutation p-value for 8 + 8 target words (12,870 splits): the kernel alone and
  ``weat()`` on a one-layer suite; target ≤ 50 ms.

Usage::

    python benchmarks/analyze.py            # full size (writes ~4 GB to a temporary directory)
    python benchmarks/analyze.py --small    # 1,000 words: a quick check
    python benchmarks/analyze.py --full-vast  # also time the default vast (tokenization, nullification)
    python benchmarks/analyze.py --families   # the issue-25 families on MiniLM weat/vast stores
                                              # against NumPy: benchmarks/families.py (its options
                                              # follow, e.g. --families --weat-store W.zarr)

The families over WEAT-style tests (mac, ect, ripa, rnsb, ml-eat, seed-sensitivity,
empirical-null, reliability) are measured side by side with NumPy by ``benchmarks/families.py``;
its docstring has the measured ratios.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from emb.stimuli.suites.vast import POLAR_PLEASANT, POLAR_UNPLEASANT

PLEASANT = list(POLAR_PLEASANT)  # the 25 + 25 WEAT polar words the vast suite uses
UNPLEASANT = list(POLAR_UNPLEASANT)
SETTINGS = ("bleached", "aligned", "misaligned", "random")
POOLINGS = ("first", "last", "mean", "max")


def _items(n_words: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    valence = rng.uniform(1, 9, n_words).round(2)
    arousal = rng.uniform(1, 9, n_words).round(2)
    dominance = rng.uniform(1, 9, n_words).round(2)
    n_sub = np.where(rng.random(n_words) < 0.6, 1, rng.integers(2, 5, n_words))
    rows = []
    for setting in SETTINGS:
        for i in range(n_words):
            rows.append((f"w{i:05d}", setting, "lexicon", valence[i], arousal[i], dominance[i], n_sub[i]))
        for pole, words in (("pleasant", PLEASANT), ("unpleasant", UNPLEASANT)):
            for w in words:
                rows.append((w, setting, pole, np.nan, np.nan, np.nan, 1))
    return pd.DataFrame(rows, columns=["word", "setting", "stimulus_set", "valence", "arousal",
                                       "dominance", "n_subtokens"])


def build_store(path: Path, *, n_words: int, n_layers: int, d: int, seed: int = 0) -> tuple[Path, float]:
    """Write the synthetic store with emb's writer; return its path and the seconds taken."""
    t0 = time.perf_counter()
    items = _items(n_words, seed)
    n = len(items)
    obj = {c: ("item", items[c].to_numpy().astype(str).astype(object))
           for c in ("word", "setting", "stimulus_set")}
    coords = xr.Dataset(
        coords={
            **obj,
            "lexicon": ("item", np.where(items.stimulus_set == "lexicon", "warriner", "warriner").astype(object)),
            "valence": ("item", items.valence.to_numpy()),
            "arousal": ("item", items.arousal.to_numpy()),
            "dominance": ("item", items.dominance.to_numpy()),
            "n_subtokens": ("item", items.n_subtokens.to_numpy().astype(np.int64)),
            "context": ("item", np.array(["This is " + w for w in items.word], dtype=object)),
            "char_start": ("item", np.full(n, 8)),
            "char_end": ("item", 8 + items.word.str.len().to_numpy()),
            "token_start": ("item", np.full(n, 3)),
            "token_end": ("item", 3 + items.n_subtokens.to_numpy()),
            "n_tokens": ("item", 3 + items.n_subtokens.to_numpy()),
            "layer": np.arange(n_layers),
            "pooling": np.array(POOLINGS, dtype=object),
        }
    )
    write_vast(path, items, coords, d=d, model_id="synthetic/gpt2-shaped",
               architecture="GPT2LMHeadModel", tag="bench", seed=seed, rogue=True)
    return path, time.perf_counter() - t0


def write_vast(path: Path, items: pd.DataFrame, coords: xr.Dataset, *, d: int, model_id: str,
               architecture: str, tag: str, seed: int = 0, rogue: bool = False) -> None:
    """Write a synthetic ``vast`` suite with emb's own writer: ``items`` (word, setting,
    stimulus_set, valence, …), ``coords`` (their labels, ``layer`` and ``pooling``), ``d``
    features of planted geometry: a valence direction whose strength peaks in the middle layers,
    a common offset, and (``rogue``) two high-variance features in the top layer.  Shared by this
    benchmark and ``benchmarks/scale.py``."""
    from emb.store import SuiteWriter, open_for_writing

    n, n_layers = len(items), coords.sizes["layer"]
    model = {"model_id": model_id, "revision": "0", "fingerprint": tag,
             "architecture": architecture, "n_layers": n_layers - 1, "hidden_size": d,
             "last_layer": n_layers - 1}
    _, root = open_for_writing(str(path), model=model)
    writer = SuiteWriter.open(
        str(path), root, name="vast", coords=coords, shape=(n, n_layers, len(POOLINGS), d),
        storage_dtype="float16",
        suite_attrs={"name": "vast", "generator": "vast", "content_hash": f"{tag}-{n}",
                     "n_items": n, "settings": list(SETTINGS)},
        extraction_attrs={"dtype": "float32", "storage_dtype": "float16",
                          "poolings": list(POOLINGS), "bos": False},
    )
    rng = np.random.default_rng(seed + 1)
    val = np.nan_to_num((items.valence.to_numpy() - 5) / 4)
    polar = np.where(items.stimulus_set == "pleasant", 1.0,
                     np.where(items.stimulus_set == "unpleasant", -1.0, 0.0))
    strength = np.sin(np.linspace(0.3, np.pi - 0.3, n_layers))
    for index, (start, stop) in enumerate(writer.block_ranges()):
        block = rng.standard_normal((stop - start, n_layers, len(POOLINGS), d), dtype=np.float32)
        sig = (val[start:stop] + 2 * polar[start:stop])[:, None] * strength[None, :]
        block[:, :, :, 5] += 1.5 * sig[:, :, None]
        block[:, :, :, 7] += 3.0
        if rogue:
            block[:, -1, :, :2] *= 30.0
        writer.write_block(index, block.astype(np.float16))
    writer.finish()


class _PeakRSS:
    """Samples the resident memory of a process tree every ``interval`` seconds."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        import psutil

        self.proc = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                procs = [self.proc, *self.proc.children(recursive=True)]
                total = sum(p.memory_info().rss for p in procs)
                self.peak = max(self.peak, total)
            except psutil.Error:
                pass
            time.sleep(self.interval)

    def __enter__(self) -> _PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_cli(store: Path, out: Path, extra: list[str], cores: int,
            analysis: str = "vast") -> tuple[float, int, int, str]:
    """Run ``emb analyze ANALYSIS`` in a subprocess; return (seconds, sampled peak, ru_maxrss,
    output)."""
    cmd = [sys.executable, "-c", "from emb.cli.main import main; main()", "analyze", analysis, "--store", str(store),
           "--out", str(out), "--quiet", *extra]
    env = dict(os.environ)
    avail = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    preexec = None
    if len(avail) > cores:
        chosen = set(avail[:cores])
        def preexec() -> None:  # noqa: E306 - pin the child to `cores` CPUs
            os.sched_setaffinity(0, chosen)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            preexec_fn=preexec, text=True)
    with _PeakRSS(proc.pid) as sampler:
        output, _ = proc.communicate()
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"emb analyze failed ({proc.returncode}):\n{output}")
    maxrss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return seconds, sampler.peak, maxrss, output


def eager_vast(store: Path) -> tuple[pd.DataFrame, float]:
    """The settings curves with plain NumPy: SC-WEAT per lexicon word, Pearson r per
    (setting, pooling, layer); polar words removed from the targets, ddof = 1."""
    import zarr

    t0 = time.perf_counter()
    group = zarr.open_group(str(store), path="vast", mode="r")
    arr = group["embedding"]
    word = np.asarray(group["word"][:]).astype(object).astype(str)
    setting = np.asarray(group["setting"][:]).astype(object).astype(str)
    stim = np.asarray(group["stimulus_set"][:]).astype(object).astype(str)
    valence = np.asarray(group["valence"][:], dtype=np.float64)
    polar_words = set(word[stim != "lexicon"])
    rows = []
    n_layers, n_pool = arr.shape[1], arr.shape[2]
    for layer in range(n_layers):
        for p in range(n_pool):
            X = np.asarray(arr[:, layer, p, :], dtype=np.float32)
            X /= np.linalg.norm(X, axis=1, keepdims=True)
            for s in SETTINGS:
                here = setting == s
                t = np.flatnonzero(here & (stim == "lexicon") & ~np.isin(word, list(polar_words)))
                a = np.flatnonzero(here & (stim == "pleasant"))
                b = np.flatnonzero(here & (stim == "unpleasant"))
                cos = X[t] @ X[np.concatenate([a, b])].T
                cos = cos.astype(np.float64)
                es = (cos[:, : a.size].mean(1) - cos[:, a.size :].mean(1)) / cos.std(1, ddof=1)
                r = np.corrcoef(es, valence[t])[0, 1]
                rows.append({"setting": s, "pooling": POOLINGS[p], "layer": layer, "r_eager": r})
    return pd.DataFrame(rows), time.perf_counter() - t0


def weat_timing(repeats: int = 7) -> tuple[float, float]:
    """Median seconds of an exact 8+8 WEAT p-value: the kernel alone, and weat() on one layer."""
    from emb.analyses import stats
    from emb.analyses.weat import weat

    rng = np.random.default_rng(0)
    values = rng.normal(size=16)
    kernel = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = stats.permutation_test(values, 8)
        kernel.append(time.perf_counter() - t0)
    assert res.n_permutations == 0  # exact
    words = {"X": [f"x{i}" for i in range(8)], "Y": [f"y{i}" for i in range(8)],
             "A": [f"a{i}" for i in range(8)], "B": [f"b{i}" for i in range(8)]}
    rows = [(w, role) for role, ws in words.items() for w in ws]
    n = len(rows)
    ds = xr.Dataset(
        {"embedding": (("item", "layer", "pooling", "feature"),
                       rng.normal(size=(n, 1, 1, 768)).astype(np.float16))},
        coords={"word": ("item", np.array([r[0] for r in rows], dtype=object)),
                "role": ("item", np.array([r[1] for r in rows], dtype=object)),
                "test": ("item", np.array(["WEAT1"] * n, dtype=object)),
                "group": ("item", np.array([r[1] for r in rows], dtype=object)),
                "setting": ("item", np.array(["bleached"] * n, dtype=object)),
                "stimulus_set": ("item", np.array([r[1] for r in rows], dtype=object)),
                "layer": [12], "pooling": ["last"]},
    )
    full = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = weat(ds).compute()
        full.append(time.perf_counter() - t0)
    assert int(out.n_permutations.values[0]) == 0
    return float(np.median(kernel)), float(np.median(full))


def main() -> None:
    if "--families" in sys.argv[1:]:  # the issue-25 families against NumPy (benchmarks/families.py)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from families import main as families_main

        families_main([a for a in sys.argv[1:] if a != "--families"])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="1,000 words instead of 13,915")
    parser.add_argument("--full-vast", action="store_true",
                        help="also time the default vast (tokenization and nullification)")
    parser.add_argument("--cores", type=int, default=2, help="CPUs the analysis may use (default 2)")
    parser.add_argument("--dir", default=None, help="where to write the store (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the store and outputs")
    args = parser.parse_args()

    n_words = 1_000 if args.small else 13_915
    work = Path(args.dir or tempfile.mkdtemp(prefix="emb-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    store = work / "gpt2-shaped.zarr"
    try:
        if store.exists():
            build_s = 0.0
            print(f"reusing {store}")
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, build_s = build_store(store, n_words=n_words, n_layers=13, d=768)
        n_items = 4 * (n_words + 50)
        raw = n_items * 13 * 4 * 768 * 2
        on_disk = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
        print(f"store: {n_items:,} items x 13 layers x 4 poolings x 768 float16 = {raw / 1e9:.2f} GB raw, "
              f"{on_disk / 1e9:.2f} GB on disk (built in {build_s:.1f} s)")

        out = work / "out"
        seconds, peak, maxrss, output = run_cli(
            store, out, ["--no-tokenization", "--no-nullification"], args.cores
        )
        print(f"emb analyze vast (settings curves, 4 poolings, {args.cores} cores): {seconds:.1f} s, "
              f"peak RSS {peak / 2**30:.2f} GiB sampled ({maxrss / 2**30:.2f} GiB ru_maxrss) "
              f"[targets: <= 30 s, <= 1.5 GB]")
        table = pd.read_csv(out / "vast.csv")
        table = table[(table.experiment == "settings") & (table.rating == "valence")]

        eager, eager_s = eager_vast(store)
        merged = table.merge(eager, on=["setting", "pooling", "layer"])
        assert len(merged) == len(eager) == 4 * 4 * 13, (len(merged), len(eager))
        diff = float(np.max(np.abs(merged.r - merged.r_eager)))
        print(f"eager NumPy, same numbers: {eager_s:.1f} s; emb / eager = {seconds / eager_s:.2f}; "
              f"max |r_emb - r_eager| = {diff:.2e}")

        if args.full_vast:
            seconds2, peak2, _, _ = run_cli(store, work / "out-full", [], args.cores)
            print(f"emb analyze vast (default: + tokenization, nullification at top/best layer): "
                  f"{seconds2:.1f} s, peak RSS {peak2 / 2**30:.2f} GiB")

        kernel_s, weat_s = weat_timing()
        print(f"WEAT exact p-value, 8+8 words (12,870 splits): kernel {kernel_s * 1e3:.1f} ms, "
              f"weat() on one layer {weat_s * 1e3:.1f} ms [target <= 50 ms]")
        del output
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
