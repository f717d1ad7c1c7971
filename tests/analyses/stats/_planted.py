"""Planted populations for coverage simulations of emb's confidence intervals.

Each function draws many independent samples from a population whose parameter is known, computes
the interval emb reports on every draw at once (the draws are the batch dimension of emb's
vectorised kernels) and returns the share of intervals that cover the population value.
Shared by ``tests/analyses/stats/test_coverage.py`` and ``benchmarks/coverage.py``.

WEAT: word vectors in ``DIM`` dimensions, each set Gaussian around its own mean (unit noise):
A around e₀, B around e₁, X around e₂ + (shift/2)(e₀ − e₁), Y around e₂ − (shift/2)(e₀ − e₁).
The population d is the effect size of the whole populations: with ``w = E[â] − E[b̂]`` (unit
vectors), ``s(t) = t̂ · w`` and ``d = (E_X s − E_Y s) / sd_{X∪Y} s`` (equal mixture), computed on
``POPULATION`` draws of each set (Monte-Carlo error ≈ 0.002, far below an interval's width).

Correlations (ValNorm's Pearson r, similarity's Spearman ρ): bivariate normal pairs with
correlation ρ; Pearson's population r is ρ, Spearman's is ``(6/π) asin(ρ/2)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from emb.analyses import stats

DIM = 4
POPULATION = 1_000_000
#: Shifts between the X and Y means and the population d they plant (computed, not assumed).
SHIFTS = {"none": 0.0, "small": 0.25, "medium": 0.75, "large": 1.25}


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


@dataclass(frozen=True)
class WeatPopulation:
    """Means of X, Y, A, B and the population effect size ``d`` they give."""

    means: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    d: float


def weat_population(shift: float, *, seed: int = 0) -> WeatPopulation:
    """The planted WEAT population for a shift of X and Y along ``e₀ − e₁`` (see module doc)."""
    e = np.eye(DIM)
    mx = e[2] + shift / 2 * (e[0] - e[1])
    my = e[2] - shift / 2 * (e[0] - e[1])
    means = (mx, my, e[0], e[1])
    rng = np.random.default_rng([seed, 1])
    w = (_unit(e[0] + rng.standard_normal((POPULATION, DIM))).mean(axis=0)
         - _unit(e[1] + rng.standard_normal((POPULATION, DIM))).mean(axis=0))
    sx = _unit(mx + rng.standard_normal((POPULATION, DIM))) @ w
    sy = _unit(my + rng.standard_normal((POPULATION, DIM))) @ w
    d = (sx.mean() - sy.mean()) / np.concatenate([sx, sy]).std()
    return WeatPopulation(means=means, d=float(d))


def weat_cosines(pop: WeatPopulation, n: int, n_draws: int, *, seed: int) -> np.ndarray:
    """``(n_draws, 2n, 2n)`` cosines of n drawn targets per set (X then Y) with n drawn
    attributes per set (A then B): ``n_draws`` independent WEATs of n words per set."""
    rng = np.random.default_rng([seed, n, 2])
    mx, my, ma, mb = pop.means
    noise = rng.standard_normal((4, n_draws, n, DIM))
    t = _unit(np.concatenate([mx + noise[0], my + noise[1]], axis=1))
    a = _unit(np.concatenate([ma + noise[2], mb + noise[3]], axis=1))
    return t @ np.swapaxes(a, -1, -2)


def weat_coverage(
    pop: WeatPopulation, n: int, *, method: str = "bca", n_draws: int = 1000,
    n_bootstrap: int = 1000, seed: int = 0,
) -> float:
    """Share of ``n_draws`` WEATs (n words per set) whose 95 % bootstrap CI of d covers ``pop.d``.

    The draws are one batch of :func:`emb.analyses.stats.weat_bootstrap` (one array operation
    per block of replicates, the same resampling counts for every draw, as for every layer of a
    store).
    """
    cos = weat_cosines(pop, n, n_draws, seed=seed)
    low, high = stats.weat_bootstrap(cos, n, n, n_bootstrap=n_bootstrap, seed=seed,
                                     method=method)  # type: ignore[arg-type]
    return float(np.mean((low <= pop.d) & (pop.d <= high)))


def correlation_coverage(rho: float, n: int, *, method: str, n_draws: int = 1000,
                         seed: int = 0) -> float:
    """Share of ``n_draws`` samples of n bivariate-normal pairs (correlation ``rho``) whose
    95 % CI from :func:`emb.analyses.stats.pearson` (Fisher z: ValNorm, VAST, valence
    subspace) or :func:`emb.analyses.stats.spearman` (Fisher z with the Bonett–Wright standard
    error: similarity) covers the population coefficient."""
    rng = np.random.default_rng([seed, n, 3])
    z = rng.standard_normal((2, n_draws, n))
    x = z[0]
    y = rho * z[0] + np.sqrt(1 - rho**2) * z[1]
    if method == "pearson":
        c, target = stats.pearson(x, y), rho
    else:
        c, target = stats.spearman(x, y), 6 / np.pi * np.arcsin(rho / 2)
    return float(np.mean((c.ci_low <= target) & (target <= c.ci_high)))


#: CEAT: a context vector = its stimulus' vector (spread STIMULUS around the set's mean) + the
#: context's own spread (CONTEXT); STIMULUS² + CONTEXT² = 1, so the population of contexts is
#: the WEAT population above and its d is ``weat_population(shift).d``.
STIMULUS, CONTEXT = 0.8, 0.6


def ceat_contexts(pop: WeatPopulation, n: int, n_draws: int, *, n_contexts: int = 20,
                  seed: int) -> np.ndarray:
    """``(n_draws, 4 n n_contexts, DIM)`` context vectors of ``n_draws`` independent CEATs: n
    stimuli per set (X, Y, A, B in that order), ``n_contexts`` contexts per stimulus."""
    rng = np.random.default_rng([seed, n, 4])
    parts = []
    for mean in pop.means:
        stimulus = mean + STIMULUS * rng.standard_normal((n_draws, n, 1, DIM))
        contexts = stimulus + CONTEXT * rng.standard_normal((n_draws, n, n_contexts, DIM))
        parts.append(contexts.reshape(n_draws, n * n_contexts, DIM))
    return np.concatenate(parts, axis=1).astype(np.float32)


def ceat_ces(emb: np.ndarray, n: int, *, n_contexts: int = 20, n_samples: int = 1000,
             seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The CES of every draw of :func:`ceat_contexts` (emb's estimator: ``n_samples`` samples
    of one context per stimulus, drawn with replacement as for fewer contexts than samples,
    each sample's WEAT effect size, combined by DerSimonian–Laird with the Hedges–Olkin V_i),
    and the unweighted mean of the samples' effect sizes beside it."""
    from emb.analyses.ceat._kernels import ceat_kernel

    rng = np.random.default_rng([seed, n, 5])
    idx = np.arange(4 * n) * n_contexts + rng.integers(n_contexts, size=(n_samples, 4 * n))
    es, v, _ = ceat_kernel(emb, idx=idx, n_x=n, n_y=n, n_a=n, ddof=1, variance="cohens-d")
    return stats.dersimonian_laird(es, v).ces, es.mean(axis=-1)


def ceat_replicates(
    emb: np.ndarray, n: int, *, n_contexts: int = 20, n_bootstrap: int = 100,
    bootstrap_samples: int = 100, seed: int = 0,
) -> np.ndarray:
    """emb's bootstrap replicates of the CES on every draw of :func:`ceat_contexts` (stimuli,
    then their contexts, resampled; ``n_bootstrap`` replicates of ``bootstrap_samples``
    samples): ``(n_draws, n_bootstrap)``."""
    from emb.analyses.ceat._kernels import ROLES, _boot_kernel, _bootstrap_indices

    counts = [n_contexts] * (4 * n)
    offsets = np.arange(4 * n) * n_contexts
    idx = _bootstrap_indices(counts, offsets, dict.fromkeys(ROLES, n), n_rep=n_bootstrap,
                             n_samples=bootstrap_samples, seed=seed, test="planted")
    return _boot_kernel(emb, idx=idx, n_rep=n_bootstrap, n_x=n, n_y=n, n_a=n, ddof=1,
                        variance="cohens-d", alternative="two-sided")


def ceat_interval(ces: np.ndarray, replicates: np.ndarray, *,
                  method: str = "normal") -> tuple[np.ndarray, np.ndarray]:
    """emb's 95 % bootstrap CI of the CES (``method="normal"``: ``CES ± 1.96 SD`` of the
    replicates, as :mod:`emb.analyses.ceat` computes it) or the percentile interval it reported
    before (the 2.5 and 97.5 % quantiles of the replicates)."""
    from emb.analyses.ceat._kernels import normal_interval

    if method == "percentile":
        return stats.percentile_interval(replicates)
    return normal_interval(ces, replicates)


@dataclass(frozen=True)
class CeatCoverage:
    """One CEAT coverage simulation: the population d, the mean CES over the draws (what the
    CES estimates at this set size, ``expected_ces``) and the mean unweighted ES; for emb's
    interval (the normal one) the share of intervals that cover d (``covers_d``), that lie
    wholly below it (``below``) and that cover ``expected_ces``; the same for the percentile
    interval of the same replicates (``percentile_*``, what emb reported before)."""

    d: float
    expected_ces: float
    expected_mean_es: float
    covers_d: float
    below: float
    covers_expected: float
    percentile_covers_d: float
    percentile_below: float
    percentile_covers_expected: float


def ceat_coverage(
    pop: WeatPopulation, n: int, *, n_contexts: int = 20, n_draws: int = 1000,
    n_bootstrap: int = 100, bootstrap_samples: int = 100, n_samples: int = 1000, seed: int = 0,
) -> CeatCoverage:
    """``n_draws`` CEATs of n stimuli per set (``n_contexts`` contexts each): how often emb's
    95 % bootstrap CI of the CES (and the percentile interval of the same replicates, see
    :func:`ceat_interval`) covers the population d and the expected CES, the mean over the same
    draws of their CES (``n_samples`` samples each; its Monte-Carlo error is the CES's spread
    over √n_draws, ≈ 0.01 for 1,000 draws of 8 stimuli, a tenth of the interval's half
    width)."""
    emb = ceat_contexts(pop, n, n_draws, n_contexts=n_contexts, seed=seed)
    ces, mean_es = ceat_ces(emb, n, n_contexts=n_contexts, n_samples=n_samples, seed=seed)
    rep = ceat_replicates(emb, n, n_contexts=n_contexts, n_bootstrap=n_bootstrap,
                          bootstrap_samples=bootstrap_samples, seed=seed)
    expected = float(ces.mean())
    out: dict[str, float] = {}
    for method, prefix in (("normal", ""), ("percentile", "percentile_")):
        low, high = ceat_interval(ces, rep, method=method)
        out[f"{prefix}covers_d"] = float(np.mean((low <= pop.d) & (pop.d <= high)))
        out[f"{prefix}below"] = float(np.mean(high < pop.d))
        out[f"{prefix}covers_expected"] = float(np.mean((low <= expected) & (expected <= high)))
    return CeatCoverage(d=pop.d, expected_ces=expected, expected_mean_es=float(mean_es.mean()),
                        **out)


def ceat_shared_indices(n: int, *, n_contexts: int = 20, n_bootstrap: int = 100,
                        bootstrap_samples: int = 100, seed: int = 0) -> np.ndarray:
    """A bootstrap of :func:`ceat_contexts`' stimuli in which a stimulus drawn twice into a
    replicate shares its context draws: each replicate resamples every set's stimuli, each
    stimulus' contexts, and then draws one context per *stimulus* per sample, which every slot
    holding that stimulus uses (a sample of the replicate is then WEAT's word bootstrap of n
    distinct stimuli's contexts). Rows as :func:`emb.analyses.ceat._kernels._bootstrap_indices`."""
    rng = np.random.default_rng([seed, n, 6])
    m = 4 * n
    offsets = np.arange(m) * n_contexts
    out = np.empty((n_bootstrap, bootstrap_samples, m), dtype=np.int64)
    for b in range(n_bootstrap):
        slots = np.concatenate([r * n + rng.choice(n, size=n, replace=True) for r in range(4)])
        pools = rng.integers(n_contexts, size=(m, n_contexts))
        picks = rng.integers(n_contexts, size=(bootstrap_samples, m))
        draws = offsets + np.take_along_axis(pools.T, picks, axis=0)  # (samples, stimuli)
        out[b] = draws[:, slots]
    return out.reshape(n_bootstrap * bootstrap_samples, m)


def _ces(emb: np.ndarray, idx: np.ndarray, n_x: int, n_y: int, n_a: int) -> np.ndarray:
    from emb.analyses.ceat._kernels import ceat_kernel

    es, v, _ = ceat_kernel(emb, idx=idx, n_x=n_x, n_y=n_y, n_a=n_a, ddof=1, variance="cohens-d")
    return stats.dersimonian_laird(es, v).ces


def ceat_jackknife(emb: np.ndarray, idx: np.ndarray, n: int) -> list[np.ndarray]:
    """For each set (X, Y, A, B), the CES of every draw with each of its n stimuli left out in
    turn, on the same samples' contexts (``idx (samples, 4n)``): four ``(n_draws, n)`` arrays."""
    out = []
    for r in range(4):
        vals = []
        for k in range(n):
            keep = np.delete(np.arange(4 * n), r * n + k)
            vals.append(_ces(emb, idx[:, keep], n - (r == 0), n - (r == 1), n - (r == 2)))
        out.append(np.stack(vals, axis=-1))
    return out


#: The CEAT intervals compared by :func:`ceat_method_coverage` (benchmarks/coverage.py).
CEAT_METHODS = {
    "normal": "CES ± z · SD of the replicates (emb's interval)",
    "percentile": "percentile of the replicates (emb's interval before)",
    "bca": "BCa: z0 from the replicates below the CES, a from the stimulus jackknife",
    "shared percentile": "percentile, duplicated stimuli share their context draws",
    "shared bca": "BCa of those replicates",
    "jackknife": "CES ± z · jackknife SE over stimuli",
    "jackknife bias-corrected": "CES − jackknife bias ± z · jackknife SE",
    "percentile at CES − bias": "the replicates' quantiles around their median, moved to CES − jackknife bias",
}


def ceat_method_coverage(
    pop: WeatPopulation, n: int, *, n_contexts: int = 20, n_draws: int = 1000,
    n_bootstrap: int = 100, bootstrap_samples: int = 100, n_samples: int = 1000,
    jackknife_samples: int = 100, seed: int = 0,
) -> dict[str, tuple[float, float, float]]:
    """Every interval of :data:`CEAT_METHODS` on the same ``n_draws`` CEATs of n stimuli per set:
    ``{method: (share covering pop.d, share wholly below it, mean width)}``. The CES is emb's
    (``n_samples`` samples); the jackknife leaves out one stimulus at a time on the first
    ``jackknife_samples`` of those samples (its bias ``Σ_sets (n−1)(mean CES₍ᵢ₎ − CES)``, its SE
    ``√(Σ_sets (n−1)/n Σ_i (CES₍ᵢ₎ − mean)²)``, the CES on the same samples as reference)."""
    from scipy import special

    from emb.analyses.ceat._kernels import _boot_kernel

    emb = ceat_contexts(pop, n, n_draws, n_contexts=n_contexts, seed=seed)
    rng = np.random.default_rng([seed, n, 5])
    idx = np.arange(4 * n) * n_contexts + rng.integers(n_contexts, size=(n_samples, 4 * n))
    ces = _ces(emb, idx, n, n, n)
    sub = idx[:jackknife_samples]
    jack = ceat_jackknife(emb, sub, n)
    ref = _ces(emb, sub, n, n, n)
    bias = sum((n - 1) * (j.mean(axis=-1) - ref) for j in jack)
    se = np.sqrt(sum((n - 1) / n * ((j - j.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
                     for j in jack))
    z = special.ndtri(0.975)
    common = {"n_rep": n_bootstrap, "n_x": n, "n_y": n, "n_a": n, "ddof": 1,
              "variance": "cohens-d", "alternative": "two-sided"}
    slot = ceat_replicates(emb, n, n_contexts=n_contexts, n_bootstrap=n_bootstrap,
                           bootstrap_samples=bootstrap_samples, seed=seed)
    shared = _boot_kernel(emb, idx=ceat_shared_indices(
        n, n_contexts=n_contexts, n_bootstrap=n_bootstrap, bootstrap_samples=bootstrap_samples,
        seed=seed), **common)
    q = np.quantile(slot, [0.025, 0.975], axis=-1) - np.median(slot, axis=-1)
    bounds = {
        "normal": ceat_interval(ces, slot),
        "percentile": ceat_interval(ces, slot, method="percentile"),
        "bca": stats.bca_interval(ces, slot, jack),
        "shared percentile": stats.percentile_interval(shared),
        "shared bca": stats.bca_interval(ces, shared, jack),
        "jackknife": (ces - z * se, ces + z * se),
        "jackknife bias-corrected": (ces - bias - z * se, ces - bias + z * se),
        "percentile at CES − bias": (ces - bias + q[0], ces - bias + q[1]),
    }
    return {m: (float(np.mean((lo <= pop.d) & (pop.d <= hi))), float(np.mean(hi < pop.d)),
                float(np.mean(hi - lo))) for m, (lo, hi) in bounds.items()}
