"""What verifying every read costs: ``emb analyze vast``'s computation with and without it.

Two copies of one synthetic VAST store (GPT-2-shaped: 13 layers × 4 poolings × 768 features,
float16, written with emb's writer, the same vectors in both):

- *schema 3*: each inner chunk of ``embedding`` ends with its CRC-32C (what this emb writes);
- *schema-2 layout*: no checksum in the chunks (what earlier emb wrote; checked against the
  manifest's CRC-32 of each whole shard when first read).

Measured side by side in one run, alternating, each the median of ``--repeats`` runs on a warm
page cache, in this process (one dask thread per core, as ``emb analyze``):

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
import statistics
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
    from emb.store import _layout, writer

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


def read_path(path: Path, verify: bool) -> float:
    ds = _open(path, verify)
    t0 = time.perf_counter()
    float(ds.embedding.astype("float32").sum().compute())
    return time.perf_counter() - t0


def vast(path: Path, verify: bool) -> float:
    from emb.analyses import run_analysis

    t0 = time.perf_counter()
    ds = _open(path, verify)
    result = run_analysis("vast", {"m": ds}, tokenization=False, nullification=False)
    result.compute()
    return time.perf_counter() - t0


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
        jobs: dict[str, Callable[[Path, bool], float]] = {"read": read_path, "vast": vast}
        times: dict[tuple[str, str], list[float]] = {}
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
              f"median of {args.repeats}\n")
        print(f"{'':52s} {'read (s)':>9s} {'ratio':>7s} {'vast (s)':>9s} {'ratio':>7s}")
        base = {job: statistics.median(times[(job, rows[0][0])]) for job in jobs}
        for label, _, _ in rows:
            cells = []
            for job in jobs:
                t = statistics.median(times[(job, label)])
                cells.append(f"{t:9.2f} {t / base[job]:7.3f}")
            print(f"{label:52s} {' '.join(cells)}")
        t_new = statistics.median(times[("vast", rows[3][0])])
        print(f"\nverification on schema 3 costs {100 * (t_new / base['vast'] - 1):+.1f} % of "
              "'emb analyze vast' (target <= 5 %)")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
