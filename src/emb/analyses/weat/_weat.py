"""WEAT: the Word Embedding Association Test, per test, setting, layer and pooling, lazily.

The cosines between every target word (X ∪ Y) and every attribute word (A ∪ B) are computed once
per (layer, pooling); the permutation test then re-splits only the per-word association scores
``s(w, A, B)`` (exactly when the number of splits is small, by seeded Monte Carlo otherwise).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import xarray as xr

from emb.analyses import stats
from emb.analyses._analysis import (
    MAX_BOOTSTRAP,
    MAX_PERMUTATIONS,
    Analysis,
    Option,
    coord_values,
    slug,
    small_n_of,
)
from emb.analyses._decorators import own_descriptions, public_in_package, run_by_record
from emb.analyses.stats.work import plan
from emb.analyses.weat._summary import _CORRECTIONS, _FAMILIES, summary
from emb.analyses.weat._tables import tables
from emb.analyses.wordsets import (
    MIN_TARGET_WORDS,
    ROLES,
    TEST_OPTIONS,
    TestSpec,
    gather_test,
    is_context_suite,
    per_stimulus,
    resolve_tests,
)
from emb.errors import AnalysisError
from emb.options import ALTERNATIVE, CORRECTION, DDOF, MIN_WORDS, N_PERMUTATIONS, WORD_SET

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "MIN_TARGET_WORDS", "weat"]

#: Largest embedding block (bytes, as stored) handed to one kernel call.
_MAX_BLOCK_BYTES = 128 * 2**20


def _weat_kernel(
    emb: np.ndarray,
    *,
    n_x: int,
    n_y: int,
    n_a: int,
    ddof: int,
    alternative: str,
    n_permutations: int,
    exact_limit: int,
    seed: int,
    method: str,
    n_bootstrap: int = 0,
    confidence: float = 0.95,
) -> tuple[np.ndarray, ...]:
    """emb (..., item, feature) with items X, Y, A, B in that order -> (es, S, p, ci_low,
    ci_high) of shape (...); the CI (NaN when ``n_bootstrap`` is 0) resamples the same cosines."""
    with stats.single_threaded_blas():
        cos = stats.target_attribute_cosines(emb, n_x + n_y)  # (..., |X∪Y|, |A∪B|)
        s = stats.association(cos[..., :n_a], cos[..., n_a:])  # (..., n_t): computed once
        es = stats.weat_effect_size(s[..., :n_x], s[..., n_x:], ddof=ddof)
        res = stats.permutation_test(
            s,
            n_x,
            alternative=alternative,  # type: ignore[arg-type]
            n_permutations=n_permutations,
            exact_limit=exact_limit,
            seed=seed,
            method=method,  # type: ignore[arg-type]
        )
        if n_bootstrap > 0:
            low, high = stats.weat_bootstrap(cos, n_x, n_a, ddof=ddof, n_bootstrap=n_bootstrap,
                                             confidence=confidence, seed=seed)
        else:
            low = high = np.full(np.shape(es), np.nan)
    return (
        np.asarray(es, dtype=np.float64),
        np.asarray(res.statistic, dtype=np.float64),
        np.asarray(res.pvalue, dtype=np.float64),
        np.asarray(low, dtype=np.float64),
        np.asarray(high, dtype=np.float64),
    )


def _one_test(
    ds: xr.Dataset,
    test: TestSpec,
    settings: list[str],
    *,
    ddof: int,
    alternative: str,
    n_permutations: int,
    exact_limit: int,
    seed: int,
    perm_method: str,
    n_bootstrap: int,
    confidence: float,
    min_words: int,
) -> xr.Dataset:
    emb = gather_test(ds, test, settings)
    if emb.chunks is not None:
        # one kernel call (one set of random splits) per setting and as many layers/poolings as
        # fit in a block: the store's chunks are often one layer and pooling each
        merged: dict[str, int] = {"item": -1, "feature": -1}
        block = emb.sizes["item"] * emb.sizes["feature"] * emb.dtype.itemsize
        for d in (d for d in emb.dims if d not in ("item", "feature", "setting")):
            if block * emb.sizes[d] <= _MAX_BLOCK_BYTES:
                merged[d] = -1
                block *= emb.sizes[d]
        emb = emb.chunk(merged)
    n = {role: len(test.words[role]) for role in ROLES}
    if n["X"] + n["Y"] - ddof <= 0:
        raise AnalysisError(
            f"test {test.name!r}: {n['X'] + n['Y']} target words cannot give a standard deviation "
            f"with ddof={ddof}"
        )
    es, stat, p, low, high = xr.apply_ufunc(
        _weat_kernel,
        emb,
        input_core_dims=[["item", "feature"]],
        output_core_dims=[[], [], [], [], []],
        kwargs={
            "n_x": n["X"],
            "n_y": n["Y"],
            "n_a": n["A"],
            "ddof": ddof,
            "alternative": alternative,
            "n_permutations": n_permutations,
            "exact_limit": exact_limit,
            "seed": seed,
            "method": perm_method,
            "n_bootstrap": n_bootstrap,
            "confidence": confidence,
        },
        dask="parallelized",
        output_dtypes=[np.float64] * 5,
        dask_gufunc_kwargs={"allow_rechunk": True},
    )
    exact = perm_method != "reference" and math.comb(n["X"] + n["Y"], n["X"]) <= exact_limit
    cells = math.prod(size for d, size in emb.sizes.items() if d not in ("item", "feature"))
    splits = stats.planned_splits(n["X"] + n["Y"], n["X"], n_permutations=n_permutations,
                                  exact_limit=exact_limit, method=perm_method)  # type: ignore[arg-type]
    plan(splits * (n["X"] + n["Y"]) * cells, "WEAT permutation tests")
    out = xr.Dataset({"effect_size": es, "statistic": stat, "p": p})
    if n_bootstrap > 0:
        out["ci_low"], out["ci_high"] = low, high
    out = out.expand_dims(test=[test.name])
    out["n_permutations"] = ("test", [0 if exact else int(n_permutations)])
    for role in ROLES:
        out[f"n_{role.lower()}"] = ("test", [n[role]])
    out["small_n"] = ("test", [small_n_of(n, min_words)])
    return out.assign_coords(
        {f"{role.lower()}_group": ("test", [test.groups[role]]) for role in ROLES}
    )


@public_in_package
@own_descriptions
@run_by_record()
def weat(
    ds: xr.Dataset,
    *,
    tests: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Mapping[str, Any] | None = None,
    x: Sequence[str] | None = None,
    y: Sequence[str] | None = None,
    a: Sequence[str] | None = None,
    b: Sequence[str] | None = None,
    settings: str | Sequence[str] | None = None,
    ddof: int = 1,
    alternative: stats.Alternative = "greater",
    n_permutations: int = 100_000,
    exact_limit: int = 1_000_000,
    seed: int = 0,
    include_excluded: bool = False,
    method: Literal["default", "reference"] = "default",
    correction: stats.CorrectionMethod = "none",
    correction_over: Literal["test", "layer", "test+layer"] = "test",
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    min_words: int = 8,
    word_set: Literal["common", "per-setting"] = "common",
) -> xr.Dataset:
    """Word Embedding Association Test effect sizes and permutation p-values, lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        A store suite group: ``embedding(item, layer, pooling, feature)`` with item labels
        ``word`` and ``setting`` (and, for the built-in ``weat`` suite, ``test``, ``role``
        (X/Y/A/B), ``group`` and ``excluded``).
    tests : str, path, mapping or a sequence of them, optional
        Tests of the suite to run by name (default: every test in it, e.g. WEAT1–WEAT10),
        and/or test-definition files (``.yaml``/``.yml``/``.json``) or mappings that give X, Y,
        A and B by word lists or by labels (layout: :mod:`emb.analyses.wordsets.tests_file`), which work
        on any suite.
    x, y, a, b : sequence of str, optional
        Your own target (X, Y) and attribute (A, B) word lists, instead of ``tests``; the test
        is then called ``"custom"`` and words are looked up by word only.
    settings : str or sequence of str, optional
        Contextual settings (default: every setting present in ``ds``).
    ddof : int, default 1
        Delta degrees of freedom of the effect size's standard deviation (1 in the authors'
        code; WEFE uses 0).
    alternative : {"greater", "less", "two-sided"}, default "greater"
    n_permutations : int, default 100_000
        Random splits for a Monte-Carlo p-value when exact enumeration is too big.
    exact_limit : int, default 1_000_000
        Enumerate all ``C(|X|+|Y|, |X|)`` splits when there are at most this many.
    seed : int, default 0
        Seed of the random splits (recorded in the attributes).
    include_excluded : bool, default False
        Keep the target names Caliskan et al. dropped (label ``excluded``, WEAT3–5).
    method : {"default", "reference"}, default "default"
        ``reference`` computes the p-value as the authors' code does: ``n_permutations`` random
        splits, a normal distribution fitted to them, its upper tail.
    correction : {"none", "holm", "bh"}, default "none"
        Multiple-comparison correction, stored in ``p_adjusted`` beside the raw ``p`` (no
        ``p_adjusted`` without a correction).
    correction_over : {"test", "layer", "test+layer"}, default "test"
        The family: the tests (separately for every setting, layer and pooling), the layers
        (for every test, setting and pooling), or all tests × layers together.
    n_bootstrap : int, default 1000
        Bootstrap replicates of the effect size's CI over stimuli (words resampled with
        replacement within X, Y, A and B; the bias-corrected and accelerated (BCa) interval of
        :func:`emb.analyses.stats.weat_bootstrap`); 0: no CI.
    confidence : float, default 0.95
        Coverage of that interval.
    min_words : int, default 8
        A test with fewer words than this in any of X, Y, A, B is flagged ``small_n`` (and
        named in the summary): Caliskan et al. (2017) used at least 8 words per set. A test of
        the suite with an empty set (every word of it missing from this store, e.g. a word2vec
        vocabulary), or with a single word in X or Y (where d is fixed at ±sqrt(2)), is dropped
        with an :class:`~emb.errors.EmbWarning` and the others go on; only when every test is
        dropped is it an error.
    word_set : {"common", "per-setting"}, default "common"
        The same words in every cell compared side by side. Within a store this holds by
        construction: every setting scores a test's words (a word missing from a setting is an
        error naming it, never a silently smaller set) and layers and poolings share the items.
        Across the stores of one run (:func:`emb.analyses.run_analysis`, ``--store a=…
        --store b=…``) ``common`` keeps the words every store has, so two models' d rest on
        the same X, Y, A, B (``n_x`` … per model say so); ``per-setting`` keeps each store's
        own. See ``docs/rules/same-words.md``.

    Returns
    -------
    xarray.Dataset
        Dims ``(test, setting, layer, pooling)``:

        - ``effect_size``: Caliskan's d; ``ci_low``, ``ci_high``: its bootstrap CI over
          stimuli (when ``n_bootstrap > 0``);
        - ``statistic``: ``S = Σ_X s − Σ_Y s``;
        - ``p``: permutation p-value (one-sided ``greater`` by default); ``p_mc_se``: its
          Monte-Carlo standard error ``sqrt(p (1 − p) / N)`` (NaN where p is exact or the
          reference method's); ``p_adjusted``: only when a ``correction`` is asked;

        and per ``test``: ``n_permutations`` (0 = exact), ``n_x``, ``n_y``, ``n_a``, ``n_b``,
        ``small_n`` (a set below ``min_words``), with coordinates ``x_group`` … ``b_group``.  Attributes: every option, the word lists
        (JSON) and the store provenance.  Lazy when the embedding is dask-backed.

    Raises
    ------
    MissingStimuliError
        If a test's word is not in a setting; the message names the words.
    AnalysisError
        For invalid options.

    Notes
    -----
    ``s(w,A,B) = mean_a cos(w,a) − mean_b cos(w,b)``;
    ``d = (mean_{x∈X} s(x) − mean_{y∈Y} s(y)) / std_{w∈X∪Y} s(w)``;
    p = share of re-splits of ``X ∪ Y`` into sets of the original sizes whose statistic is at
    least the observed one (see :func:`emb.analyses.stats.permutation_test`).

    References
    ----------
    Caliskan, A., Bryson, J. J. & Narayanan, A. (2017). Semantics derived automatically from
    language corpora contain human-like biases. *Science* 356(6334), 183–186.

    Examples
    --------
    On a store, ``ds = emb.open_store("gpt2.zarr").dataset("weat")``; here the record's example
    suite (WEAT1 with an effect growing with the layer, WEAT2 without):

    >>> from emb.analyses import ANALYSES
    >>> ds, _ = ANALYSES["weat"].example()
    >>> res = weat(ds, tests=["WEAT1", "WEAT2"], correction="holm", n_permutations=1_000).compute()
    >>> res.effect_size.sel(setting="bleached", pooling="last").round(2).to_pandas()
    layer     0     1     2     3
    test
    WEAT1  0.69  1.46  1.30  1.74
    WEAT2 -0.20 -0.47  0.12 -0.35
    """
    if "embedding" not in ds.variables:
        raise AnalysisError("the Dataset has no 'embedding' variable: pass a store suite group")
    if is_context_suite(ds):  # a ceat suite: each word's vector is the mean of its contexts
        ds = per_stimulus(ds)

    test_list, dropped, chosen = resolve_tests(
        ds, tests=tests, x=x, y=y, a=a, b=b, settings=settings, include_excluded=include_excluded)

    perm_method = "reference" if method == "reference" else "exact-or-monte-carlo"
    parts = [
        _one_test(
            ds,
            test,
            chosen,
            ddof=int(ddof),
            alternative=alternative,
            n_permutations=int(n_permutations),
            exact_limit=int(exact_limit),
            seed=int(seed),
            perm_method=perm_method,
            n_bootstrap=int(n_bootstrap),
            confidence=float(confidence),
            min_words=int(min_words),
        )
        for test in test_list
    ]
    out = xr.concat(parts, dim="test", data_vars="all", coords="minimal", compat="override", join="exact")
    out = out.transpose("test", "setting", "layer", "pooling", ...)
    n_used = out["n_permutations"]
    with np.errstate(invalid="ignore"):
        mc_se = np.sqrt(out["p"] * (1 - out["p"]) / n_used.where(n_used > 0))
    out["p_mc_se"] = mc_se if method == "default" else mc_se * np.nan
    family = {"test": ("test",), "layer": ("layer",), "test+layer": ("test", "layer")}[correction_over]
    if correction != "none":
        out["p_adjusted"] = stats.adjust(out["p"], method=correction, dims=family)
        out["p_adjusted"].attrs["long_name"] = (
            f"p-value adjusted ({_CORRECTIONS[correction]}) over {_FAMILIES[correction_over]}"
        )
    out["effect_size"].attrs["long_name"] = "WEAT effect size (Cohen's d)"
    if "ci_low" in out:
        level = f"{100 * float(confidence):g}%"
        for bound in ("ci_low", "ci_high"):
            out[bound].attrs["long_name"] = (
                f"{level} BCa bootstrap CI of d, {'lower' if bound == 'ci_low' else 'upper'} "
                f"bound ({int(n_bootstrap)} replicates; words resampled within X, Y, A and B)"
            )
    out["statistic"].attrs["long_name"] = "sum_X s(x,A,B) - sum_Y s(y,A,B)"
    out["p"].attrs["long_name"] = f"permutation p-value ({alternative})"
    out["p_mc_se"].attrs["long_name"] = (
        "Monte-Carlo standard error of p, sqrt(p(1-p)/N) (NaN: exact or reference p)"
    )
    out["n_permutations"].attrs["long_name"] = "random splits used (0 = exact enumeration)"
    out["small_n"].attrs["long_name"] = f"a word set has fewer than {int(min_words)} words"
    out.attrs = {
        "ddof": int(ddof),
        "alternative": alternative,
        "n_permutations": int(n_permutations),
        "exact_limit": int(exact_limit),
        "seed": int(seed),
        "include_excluded": str(bool(include_excluded)).lower(),
        "method": method,
        "correction": correction,
        "correction_over": correction_over,
        "n_bootstrap": int(n_bootstrap),
        "confidence": float(confidence),
        "min_words": int(min_words),
        "word_set": word_set,
        "dropped": json.dumps(dropped, ensure_ascii=False),
        "words": json.dumps({t.name: t.words for t in test_list}, ensure_ascii=False),
        "filters": json.dumps({t.name: t.filters for t in test_list}, ensure_ascii=False),
        **{k: ds.attrs[k] for k in ("contexts",) if k in ds.attrs},
    }
    return out


# -- figures ---------------------------------------------------------------------------------------
def _figures(result: xr.Dataset, *, relative_depth: bool = False) -> dict[str, Figure]:
    from emb.analyses.weat._figures import weat_effect_sizes, weat_heatmap

    figs: dict[str, Figure] = {}
    for pooling in coord_values(result, "pooling"):
        figs[f"effect_sizes_{slug(pooling)}"] = weat_effect_sizes(
            result, pooling=pooling, relative_depth=relative_depth)
        figs[f"heatmap_{slug(pooling)}"] = weat_heatmap(result, pooling=pooling,
                                                      relative_depth=relative_depth)
    return figs


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    """A tiny ``weat`` suite (WEAT1 with a planted effect, WEAT2 without) and options that give
    every output (a correction, an exact and a Monte-Carlo p, the bootstrap CI)."""
    from emb.analyses._examples import lazy, weat_dataset

    return lazy(weat_dataset()), {"correction": "holm", "seed": 3, "exact_limit": 100,
                                  "n_permutations": 200, "n_bootstrap": 100}


ANALYSIS = Analysis(
    name="weat",
    function=weat,
    suite="weat",
    description="WEAT effect sizes and permutation p-values per test, setting, layer, pooling",
    options=(
        *TEST_OPTIONS,
        Option(name="include_excluded", type="bool", help="keep the names Caliskan et al. dropped (WEAT3-5)"),
        DDOF,
        ALTERNATIVE,
        N_PERMUTATIONS,
        Option(name="exact_limit", type="int", high=MAX_PERMUTATIONS,
               help="enumerate every split up to this many"),
        CORRECTION,
        Option(name="correction_over", choices=("test", "layer", "test+layer"), help="the correction's family"),
        Option(name="n_bootstrap", type="int", high=MAX_BOOTSTRAP,
               help="bootstrap replicates of d's CI over stimuli (0: none; their resampling "
                    "counts are held in memory)"),
        Option(name="confidence", type="float", low=0, high=1, low_open=True, high_open=True,
               help="coverage of the bootstrap CI"),
        MIN_WORDS,
        WORD_SET,
    ),
    tables=tables,
    figures=_figures,
    summary=summary,
    outputs={
        **{name: ("test", "setting", "layer", "pooling") for name in (
            "effect_size", "statistic", "p", "p_adjusted", "p_mc_se", "ci_low", "ci_high")},
        **{name: ("test",) for name in ("n_permutations", "n_x", "n_y", "n_a", "n_b", "small_n")},
    },
    example=_example,
)
