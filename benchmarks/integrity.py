"""What verifying every read costs: ``emb analyze vast``'s computation with and without it.

Two copies of one synthetic VAST store (GPT-2-shaped: 13 layers × 4 poolings × 768 features,
float16, written with emb's writer, the same vectors in both):

- *schema 3*: each inner chunk of ``embedding`` ends with its CRC-32C (what this emb writes);
- *schema-2 layout*: no checksum in the chunks (what earlier emb wrote; checked against the
  manifest's CRC-32 of each whole shard when first read).

Measured side by side in one run, the rows alternating, each the best of ``--repeats`` runs (on a
busy shared machine the least disturbed one) on a warm page cache, in this process, wall and CPU
time (``--cores`` dask threads, as ``emb analyze``):

- ``read``: the analysis' read path alone: every block of the embedding read in the chunks
  ``emb analyze vast`` opens (one layer of a run of items per task) and summed;
- ``vast``: ``run_analysis("vast", …, tokenization=False, nullification=False)`` computed (the
  settings curves: SC-WEAT per word × layer × pooling, correlations), the read path included.

Rows: the schema-2 layout read without any verification (what emb did before: the baseline),
the same store verified against its manifest, the schema-3 store (chunk checksums, always
checked by zarr) with and without the manifest checks of its other objects.  The target: a
schema-3 store's verified ``vast`` within 5 % of the baseline.

Usage::

    python benchmarks/integrity.py              # 4,000 words (~0.9 GB raw per store)
    python benchmarks/integrity.py --words 13915   # the full Warriner size (~4.5 GB per store)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import dask
import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analyze import POOLINGS, _items, write_vast  # noqa: E402


def build(path: Path, *, n_words: int, n_layers: int, d: int, checksums: bool) -> float:
    """Write the store; ``checksums=False`` writes the schema-2 chunk layout (no CRC-32C)."""
    from emb.store import _layout
    from emb.store import suite_writer as writer

    t0 = time.perf_counter()
    items = _items(n_words, 0)
    n = len(items)
    coords = xr.Dataset(coords={
        **{c: ("item", items[c].to_numpy().astype(str).astype(object))
           for c in ("word", "setting", "stimulus_set")},
        "lexicon": ("item", np.full(n, "warriner", dtype=object)),
        **{c: ("item", items[c].to_numpy()) for c in ("valence", "arousal", "dominance")},
        "n_subtokens": ("item", items.n_subtokens.to_numpy().astype(np.int64)),
        "layer": np.arange(n_layers),
        "pooling": np.array(POOLINGS, dtype=object),
    })
    real = writer.chunk_codecs
    if not checksums:
        writer.chunk_codecs = lambda: (_layout.compressor(),)
    try:
        write_vast(path, items, coords, d=d, model_id="synthetic/gpt2-shaped",
                   architecture="GPT2LMHeadModel", tag="integrity")
    finally:
        writer.chunk_codecs = real
    return time.perf_counter() - t0


def _open(path: Path, verify: bool) -> xr.Dataset:
    import emb
    from emb.analyses.vast import ANALYSIS

    return emb.open_store(str(path)).dataset("vast", chunks="layer", chunk_by=ANALYSIS.chunk_by,
                                             verify=verify)


def read_path(path: Path, verify: bool) -> tuple[float, float]:
    """(wall, CPU) seconds of reading every block as the analysis chunks it."""
    ds = _open(path, verify)
    t0, c0 = time.perf_counter(), time.process_time()
    float(ds.embedding.astype("float32").sum().compute())
    return time.perf_counter() - t0, time.process_time() - c0


def raw_pass(path: Path) -> float:
    """CPU seconds of one pass over every inner chunk with zarr alone (one thread, no dask): what
    the chunk checksum adds, apart from the analysis and from other processes' noise."""
    import zarr

    array = zarr.open_array(str(path / "vast" / "embedding"), mode="r")
    c0 = time.process_time()
    for layer in range(array.shape[1]):
        array[:, layer]
    return time.process_time() - c0


def bytes_read(path: Path) -> int:
    """Bytes of embedding chunks one ``vast`` computation reads (counted at zarr's store)."""
    import zarr.storage

    real, total = zarr.storage.LocalStore.get, [0]

    async def counting(self, key, prototype=None, byte_range=None):  # noqa: ANN001, ANN202
        buffer = await real(self, key, prototype, byte_range)
        if buffer is not None and "/embedding/c/" in key:
            total[0] += len(buffer)
        return buffer

    zarr.storage.LocalStore.get = counting
    try:
        vast(path, True)
    finally:
        zarr.storage.LocalStore.get = real
    return total[0]


def vast(path: Path, verify: bool) -> tuple[float, float]:
    """(wall, CPU) seconds of opening the suite and computing the analysis."""
    from emb.analyses import run_analysis

    t0, c0 = time.perf_counter(), time.process_time()
    ds = _open(path, verify)
    result = run_analysis("vast", {"m": ds}, tokenization=False, nullification=False)
    result.compute()
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=4000, help="lexicon words (default 4,000)")
    parser.add_argument("--layers", type=int, default=13)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cores", type=int, default=min(2, os.cpu_count() or 1),
                        help="dask threads (default 2, as the CI machine)")
    parser.add_argument("--dir", default=None, help="where to write the stores (default: a temp dir)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    work = Path(args.dir or tempfile.mkdtemp(prefix="emb-integrity-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        new, old = work / "schema3.zarr", work / "schema2-layout.zarr"
        for path, checksums in ((new, True), (old, False)):
            if not path.exists():
                seconds = build(path, n_words=args.words, n_layers=args.layers, d=args.dim,
                                checksums=checksums)
                print(f"wrote {path.name} in {seconds:.1f} s")
        rows: list[tuple[str, Path, bool]] = [
            ("schema-2 layout, not verified (before: baseline)", old, False),
            ("schema-2 layout, verified against the manifest", old, True),
            ("schema 3, chunk CRC-32C only (verify=False)", new, False),
            ("schema 3, verified (default)", new, True),
        ]
        jobs: dict[str, Callable[[Path, bool], tuple[float, float]]] = {
            "read": read_path, "vast": vast}
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        with dask.config.set(scheduler="threads", num_workers=args.cores):
            for _, path, verify in rows:  # warm the page cache and the imports
                read_path(path, verify)
            for _ in range(args.repeats):
                for job, fn in jobs.items():
                    for label, path, verify in rows:
                        times.setdefault((job, label), []).append(fn(path, verify))
        size = sum(p.stat().st_size for p in new.rglob("*") if p.is_file())
        print(f"\n{args.words} words × 4 settings, {args.layers} layers × 4 poolings × {args.dim}, "
              f"float16: {size / 2**30:.2f} GiB on disk (schema 3); {args.cores} dask threads; "
              f"best of {args.repeats}, the rows alternating\n")
        def best(job: str, label: str, k: int) -> float:  # the least disturbed run
            return min(t[k] for t in times[(job, label)])

        print(f"{'':50s} {'read: wall':>11s} {'CPU':>11s}   {'vast: wall':>11s} {'CPU':>11s}")
        for label, _, _ in rows:
            cells = []
            for job in jobs:
                for k in (0, 1):
                    t, base = best(job, label, k), best(job, rows[0][0], k)
                    cells.append(f"{t:5.2f} {t / base:5.3f}")
            print(f"{label:50s} {cells[0]:>11s} {cells[1]:>11s}   {cells[2]:>11s} {cells[3]:>11s}")
        print("(seconds, then the ratio to the first row; CPU = this process' CPU time, which a "
              "busy shared machine disturbs less than wall time)")
        for k, what in ((0, "wall"), (1, "CPU")):
            cost = best("vast", rows[3][0], k) / best("vast", rows[0][0], k) - 1
            print(f"verification on schema 3: {100 * cost:+.1f} % of 'emb analyze vast' {what} "
                  "time (target <= 5 %)")
        passes: dict[Path, list[float]] = {path: [] for path in (old, new)}
        for _ in range(4 * args.repeats):
            for path in (old, new):
                passes[path].append(raw_pass(path))
        chunk_bytes = sum(p.stat().st_size for p in (new / "vast" / "embedding" / "c").rglob("*")
                          if p.is_file())
        extra = (min(passes[new]) - min(passes[old])) / chunk_bytes  # seconds per byte read
        read = bytes_read(new)
        vast_cpu = best("vast", rows[0][0], 1)
        print(f"\nzarr alone, one pass over every chunk (CPU, best of {4 * args.repeats}): "
              f"{min(passes[old]):.3f} s without, {min(passes[new]):.3f} s with the CRC-32C: "
              f"{extra * 2**30:+.3f} s per GiB read; 'vast' reads {read / 2**30:.2f} GiB of "
              f"chunks, so their checksums cost {extra * read:.3f} s, "
              f"{100 * extra * read / vast_cpu:.1f} % of its CPU time ({vast_cpu:.2f} s)")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
