"""Per-item costs at "Reddit scale": time and peak memory against the number of items and the
length of the longest context, measured side by side in one run.

A natural-corpus suite (CEAT-shaped: 40 stimuli, short contexts ``"… WORD …"``), with or without
one very long context (``--long`` characters), at ``n``, ``2n`` and ``4n`` items. Each stage
runs in its own process (its peak RSS is its own, ``ru_maxrss``):

- ``suite``: ``Suite.from_dict`` of the suite document (validation and materialising), its
  ``content_hash`` and ``columns``, ``Plan.build`` (keys only, nothing tokenised);
- ``open``: ``Store.dataset`` of a store of that suite (tiny shapes: 3 layers, 1 pooling,
  8 features, so that only per-item costs show), written once with emb's own writer;
- ``info``/``validate``: ``Store.info()`` / ``Store.validate()``;
- ``labels``: the per-item label columns the analyses read, as they read them;
- ``ceat``: ``emb.analyze("ceat", …)`` (50 samples, no permutations, no bootstrap);
- ``ceat2``: the same over two stores (two labels of one store: the common-stimuli rule runs);
- ``weat``: ``emb.analyze("weat", …, suite="ceat")`` (WEAT on each stimulus' mean context).

With ``--compare SRC`` every stage also runs with ``PYTHONPATH=SRC`` (another checkout's
``src``, e.g. the commit before a fix), alternating with this one, printed row under row.

Printed per stage: seconds and peak RSS at n, 2n, 4n; the ratio time(4n)/time(n) (linear: 4);
the growth of peak RSS per million items; and the extra memory one long context costs (at 4n).
A ``<U`` column holding a long context costs ``4 × n × longest`` bytes: 4 million items and
one 100,000-character context ask for 1.6 TB, which shows here as a MemoryError or a huge peak.

Measured (2 shared vCPUs, load ~0.3-1; ``--n 250000 --long 100000 --compare`` the commit
before, 4eb9847), at 1,000,000 items, this branch against before:

=========  ====================  ====================
stage      seconds               peak RSS (MB)
=========  ====================  ====================
open       2.86 (2.46)           502 (848)
labels     0.13 (0.65)           507 (996)
ceat       6.92 (7.69)           629 (1,069)
ceat2      11.95 (13.41)         866 (1,868)
weat       5.07 (5.43)           581 (1,059)
suite      2.70 (3.20) at 200k   505 (505)
=========  ====================  ====================

Every stage grows linearly (time(4n)/time(n) 2.7-3.5); one 100,000-character context adds
nothing measurable to any of them, before or after (the suite's columns and the item layout
were fixed in 4eb9847). ``info`` and ``validate`` read metadata only (0.01-0.3 s at any n).

Usage::

    python benchmarks/scale_items.py                  # n = 250,000, long = 100,000 characters
    python benchmarks/scale_items.py --n 1000000      # 1, 2, 4 million items
    python benchmarks/scale_items.py --stages open,labels --n 100000
    python benchmarks/scale_items.py --stages labels,ceat2 --compare /tmp/old/src
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_STIM, N_LAYERS, D = 40, 3, 8
STAGES = ("suite", "open", "info", "validate", "labels", "ceat", "ceat2", "weat")


def _words() -> list[tuple[str, str, str]]:
    """(stimulus, tests, roles) of two CEAT-shaped tests: X/Y/A/B of T1, A/B shared by T2."""
    out = []
    for role, prefix in (("X", "x"), ("Y", "y"), ("A", "good"), ("B", "bad")):
        for i in range(N_STIM // 4):
            out.append((f"{prefix}{i}", "T1|T2", f"{role}|{role}"))
    return out


def suite_columns(n: int, long: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The suite's item columns (object arrays of ``str``), built vectorised: item i holds
    stimulus i % 40 in a short context; with ``long``, item 0's context is ``long`` characters."""
    words = _words()
    stim = np.array([w for w, _, _ in words], dtype=object)
    which = np.arange(n) % len(words)
    rng = np.random.default_rng(seed)
    filler = np.array([f"said {k} things about" for k in range(1000)], dtype=object)
    pre = filler[rng.integers(0, 1000, n)]
    word = stim[which]
    context = pre + " " + word + " today."
    start = np.fromiter((len(p) + 1 for p in pre.tolist()), np.int64, n)
    if long:
        head = ("lorem ipsum " * (long // 12 + 1))[: max(0, long - len(str(word[0])) - 8)]
        context[0] = head + " " + word[0] + " today."
        start[0] = len(head) + 1
    end = start + np.fromiter((len(w) for w in word.tolist()), np.int64, n)
    tests = np.array([t for _, t, _ in words], dtype=object)[which]
    roles = np.array([r for _, _, r in words], dtype=object)[which]
    return {"word": word, "context": context, "char_start": start, "char_end": end,
            "stimulus": word, "tests": tests, "roles": roles,
            "groups": np.char.lower(roles.astype(str)).astype(object)}


def suite_document(n: int, long: int) -> dict:
    c = suite_columns(n, long)
    items = [
        {"context": ctx, "word": w, "span": [s, e], "setting": "sentence", "stimulus_set": g,
         "labels": {"stimulus": w, "tests": t, "roles": r, "groups": g}}
        for ctx, w, s, e, t, r, g in zip(c["context"].tolist(), c["word"].tolist(),
                                         c["char_start"].tolist(), c["char_end"].tolist(),
                                         c["tests"].tolist(), c["roles"].tolist(),
                                         c["groups"].tolist(), strict=True)
    ]
    return {"schema_version": 1, "name": "ceat", "items": items}


def write_store(path: Path, n: int, long: int) -> None:
    """A ``ceat`` store of ``n`` items (random vectors, 3 layers × 1 pooling × 8 features) written
    with emb's writer, the coordinates as ``item_coords`` lays them out."""
    import xarray as xr

    from emb.analyses._examples import store_attrs
    from emb.store import SuiteWriter, open_for_writing

    c = suite_columns(n, long)
    attrs = store_attrs("ceat", n, N_LAYERS, D, ("mean",), ("sentence",))
    tests = {"T1": {}, "T2": {}}
    attrs["suite"]["parameters"] = {"tests": tests}
    coords = xr.Dataset(coords={
        "item": np.arange(n, dtype=np.int64), "layer": np.arange(N_LAYERS),
        "pooling": np.array(["mean"], dtype=object),
        "word": ("item", c["word"]), "context": ("item", c["context"]),
        "setting": ("item", np.full(n, "sentence", dtype=object)),
        "stimulus_set": ("item", c["groups"]),
        "char_start": ("item", c["char_start"].astype(np.int32)),
        "char_end": ("item", c["char_end"].astype(np.int32)),
        "n_subtokens": ("item", np.ones(n, np.int32)),
        "token_start": ("item", np.full(n, 3, np.int32)),
        "token_end": ("item", np.full(n, 4, np.int32)),
        "n_tokens": ("item", np.full(n, 6, np.int32)),
        **{k: ("item", c[k]) for k in ("stimulus", "tests", "roles", "groups")},
    })
    _, root = open_for_writing(str(path), model=attrs["model"])
    writer = SuiteWriter.open(str(path), root, name="ceat", coords=coords,
                              shape=(n, N_LAYERS, 1, D), storage_dtype="float32",
                              suite_attrs=attrs["suite"], extraction_attrs=attrs["extraction"],
                              block_size=8192)
    rng = np.random.default_rng(1)
    sign = np.where(np.isin(c["roles"], ["X|X", "A|A"]), 1.0, -1.0).astype(np.float32)
    for index, (start, stop) in enumerate(writer.block_ranges()):
        block = rng.normal(0, 1, (stop - start, N_LAYERS, 1, D)).astype(np.float32)
        block[..., 1] += sign[start:stop, None, None]
        writer.write_block(index, block)
    writer.finish()


def _stage(stage: str, n: int, long: int, store: str) -> float:
    """Run one stage in this process; returns its seconds."""
    if stage == "suite":
        from emb.extraction._plan import Plan
        from emb.stimuli.suites import Suite
        doc = suite_document(n, long)
        t0 = time.perf_counter()
        suite = Suite.from_dict(doc)
        suite.content_hash()
        suite.columns()
        Plan.build(None, suite, bos=False)  # type: ignore[arg-type]
        return time.perf_counter() - t0
    from emb.store import open_store
    t0 = time.perf_counter()
    if stage == "open":
        open_store(store).dataset("ceat")
    elif stage == "info":
        open_store(store).info()
    elif stage == "validate":
        open_store(store).validate()
    elif stage == "labels":
        from emb.analyses._select import item_values, settings_present
        from emb.analyses.ceat._ceat import _positions, _tests
        ds = open_store(store).dataset("ceat")
        t0 = time.perf_counter()
        for name in ("word", "context", "stimulus", "tests", "roles", "groups", "setting"):
            item_values(ds, name)
        settings_present(ds)
        _tests(ds, None)
        _positions(ds)
    elif stage == "ceat":
        import emb
        emb.analyze("ceat", store, n_samples=50, n_permutations=0, n_bootstrap=0, figures=False)
    elif stage == "ceat2":
        import emb
        emb.analyze("ceat", [f"a={store}", f"b={store}"], n_samples=50, n_permutations=0,
                    n_bootstrap=0, figures=False)
    elif stage == "weat":
        import emb
        emb.analyze("weat", store, suite="ceat", n_permutations=2, figures=False)
    return time.perf_counter() - t0


def _child(stage: str, n: int, long: int, store: str, src: str | None = None) -> dict:
    cmd = [sys.executable, __file__, "--child", stage, "--n", str(n), "--long", str(long),
           "--store", store]
    env = {**os.environ, "PYTHONPATH": src} if src else None
    run = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if run.returncode:
        tail = run.stderr.strip().splitlines()[-1:] or ["?"]
        return {"seconds": float("nan"), "rss_mb": float("nan"), "error": tail[0][:120]}
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=250_000, help="base number of items")
    parser.add_argument("--long", type=int, default=100_000, help="length of the long context")
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--compare", metavar="SRC", help="also run every stage with PYTHONPATH=SRC")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--store", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        seconds = _stage(args.child, args.n, args.long, args.store)
        # VmHWM: this process image's own peak (ru_maxrss keeps the parent's across fork/exec)
        status = Path("/proc/self/status").read_text()
        rss = int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024
        print(json.dumps({"seconds": seconds, "rss_mb": rss}))
        return
    stages = [s for s in args.stages.split(",") if s]
    sizes = [args.n, 2 * args.n, 4 * args.n]
    cases = [(k, 0) for k in sizes] + [(4 * args.n, args.long)]
    with tempfile.TemporaryDirectory(prefix="emb-scale-") as tmp:
        stores = {}
        if set(stages) - {"suite"}:
            for n, long in cases:
                stores[n, long] = str(Path(tmp) / f"ceat-{n}-{long}.zarr")
                t0 = time.perf_counter()
                write_store(Path(stores[n, long]), n, long)
                print(f"wrote {n:,} items (long {long:,}) in {time.perf_counter() - t0:.1f} s",
                      flush=True)
        print(f"\n{'stage':<9} " + " ".join(f"{f'{n:,}' + (' +long' if lg else ''):>20}"
                                           for n, lg in cases)
              + f" {'t(4n)/t(n)':>10} {'MB/M items':>10} {'long +MB':>9}")
        versions = [("this", None)] + ([("compare", args.compare)] if args.compare else [])
        for stage in stages:
            results = {label: [] for label, _ in versions}
            for n, long in cases:  # the versions alternate: load on the machine hits both alike
                for label, src in versions:
                    results[label].append(_child(stage, n, long, stores.get((n, long), ""), src))
            for label, _ in versions:
                rows = results[label]
                cells = " ".join(f"{r['seconds']:>8.2f} s {r['rss_mb']:>7.0f} MB" for r in rows)
                ratio = rows[2]["seconds"] / rows[0]["seconds"]
                per_m = (rows[2]["rss_mb"] - rows[0]["rss_mb"]) / (3 * args.n / 1e6)
                extra = rows[3]["rss_mb"] - rows[2]["rss_mb"]
                name = stage if label == "this" else "  (SRC)"
                print(f"{name:<9} {cells} {ratio:>10.2f} {per_m:>10.0f} {extra:>9.0f}", flush=True)
                for r in rows:
                    if "error" in r:
                        print(f"          error: {r['error']}")

if __name__ == "__main__":
    main()
