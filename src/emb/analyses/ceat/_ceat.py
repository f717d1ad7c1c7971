"""CEAT: WEAT effect sizes over sampled natural contexts, combined by a random-effects model.

For every test, layer and pooling: ``N`` samples, each drawing one context of every stimulus; the
sample's WEAT effect size ``ES_i`` and its variance ``V_i``; the DerSimonian–Laird combined
effect size (CES) with SE, 95 % CI, z, p, τ², Q, I² (:mod:`emb.analyses.stats.meta`). Vectorised:
a sample's ``s(w, A, B)`` come from gathered unit vectors and one batched product with the mean
attribute vectors (``mean_a cos(x, a) = x̂ · mean_a â``), never from a Python loop over samples.

Because the N samples are resamples of one finite set of contexts, the meta-analytic SE shrinks
like 1/√N for any N (and p with it); beside it the result has a bootstrap CI of the CES over
stimuli and over each stimulus' contexts, which does not (METHODS.md, "CEAT").
"""

from __future__ import annotations

import json
import math
import os
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb import data
from emb.analyses._analysis import (
    DEFAULT_POOLINGS,
    MAX_BOOTSTRAP,
    Analysis,
    Option,
    coord_values,
    default_of,
    slug,
    small_n_of,
)
from emb.analyses._decorators import own_descriptions, public_in_package, run_by_record
from emb.analyses._select import (
    describe_source,
    item_text,
    item_values,
    refuse_repeats,
    suite_parameters,
    text_column,
)
from emb.analyses.ceat._kernels import (
    _META,
    ROLES,
    _boot_kernel,
    _bootstrap_indices,
    _convergence_kernel,
    _meta_kernel,
    ceat_kernel,
    normal_interval,
    sample_indices,
)
from emb.analyses.ceat._summary import summary
from emb.analyses.ceat._tables import tables
from emb.analyses.stats.work import plan
from emb.errors import AnalysisError, EmbWarning, MissingStimuliError
from emb.options import ALTERNATIVE, DDOF, MIN_WORDS, N_PERMUTATIONS
from emb.text import did_you_mean, natural_key

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "MAX_CEAT_SAMPLES", "MAX_SAMPLE_PERMUTATIONS", "ceat", "ceat_kernel",
           "sample_indices"]

#: Most samples of one context per stimulus (``--n-samples``) and per bootstrap replicate
#: (``--bootstrap-samples``): 100x the 10,000 of Guo & Caliskan (2021), whose combined effect size
#: has settled long before (the convergence figure); memory is checked for the sizes asked.
MAX_CEAT_SAMPLES = 1_000_000
#: Most re-splits behind each sample's own p (``--n-permutations``, only the histogram's
#: colours): done once per sample, so 10^5 x 10,000 samples is already 10^9 splits.
MAX_SAMPLE_PERMUTATIONS = 100_000



@dataclass(frozen=True)
class _Test:
    name: str
    stimuli: dict[str, list[str]]  # role -> stimuli
    groups: dict[str, str]
    title: str = ""  # the readable name ("Flowers vs insects × pleasant/unpleasant")


def readable_name(name: str, definition: dict[str, Any] | None, groups: dict[str, str]) -> str:
    """A test's readable name, from one source: the test definition's ``name`` (package data
    ``ceat_tests.json``, carried into the store's suite parameters); for a store extracted before
    the definitions had names, the built-in test of that id when its word-set names match; else
    the word-set names, "X vs Y × A/B".

    Examples
    --------
    >>> readable_name("T9", None, {"X": "old_names", "Y": "young_names", "A": "good", "B": "bad"})
    'old names vs young names × good/bad'
    """
    if isinstance(definition, dict) and str(definition.get("name") or "").strip():
        return str(definition["name"]).strip()
    builtin = (data.read_json("ceat_tests.json").get("tests") or {}).get(name) or {}
    if builtin.get("name") and all(str(builtin.get(f"{r}_name")) == str(groups.get(r))
                                   for r in ROLES):
        return str(builtin["name"])
    g = {r: str(groups.get(r) or r).replace("_", " ") for r in ROLES}
    return f"{g['X']} vs {g['Y']} × {g['A']}/{g['B']}"


def _memory_limit() -> int:
    """This machine's physical memory in bytes (16 GiB where the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        return 16 * 2**30


def _check_memory(
    ds: xr.Dataset, tests: Sequence[_Test], *, n_samples: int, n_bootstrap: int,
    bootstrap_samples: int, boot_grid: Sequence[int],
) -> None:
    """Refuse sizes whose arrays cannot fit in memory, before any is allocated: per test the
    sampled context indices (samples × stimuli, int64, built at once), the bootstrap's indices
    (replicates × samples per replicate × stimuli) and the per-sample results (es, v, p for every
    layer and pooling), plus one kernel's scores."""
    cells = int(np.prod([n for d, n in ds["embedding"].sizes.items() if d not in ("item", "feature")]))
    total = 0
    for test in tests:
        n_stim = sum(len(v) for v in test.stimuli.values())
        n_t = len(test.stimuli["X"]) + len(test.stimuli["Y"])
        boot_rows = n_bootstrap * (bootstrap_samples + sum(boot_grid)) if n_bootstrap else 0
        total += (n_samples + boot_rows) * n_stim * 8  # indices
        total += cells * n_samples * 20 + cells * n_bootstrap * 8  # es, v (f8), p (f4); replicates
        total += max(n_samples, n_bootstrap * bootstrap_samples) * (n_t * 8 + 24)  # one task
    limit = _memory_limit()
    if total > limit:
        raise AnalysisError(
            f"ceat with n_samples={n_samples:,} (--n-samples), n_bootstrap={n_bootstrap:,} and "
            f"bootstrap_samples={bootstrap_samples:,} over {len(tests)} test(s) and {cells} "
            f"layer x pooling cell(s) would need about {total / 2**30:.1f} GiB of memory (sampled "
            f"context indices, bootstrap indices and per-sample results), more than this machine's "
            f"{limit / 2**30:.1f} GiB; lower --n-samples, or --n-bootstrap x --bootstrap-samples "
            "(--n-bootstrap 0: no bootstrap), or run fewer --test"
        )


def _missing_tests_message(ds: xr.Dataset, unknown: list[str], present: list[str]) -> str:
    """What to do about tests the suite lacks: a built-in test is extracted into a new group (the
    tests are part of a suite's definition, so adding them to this group would be refused); any
    other name needs a test file first."""
    _, store, model = describe_source(ds)
    builtin = list(data.read_json("ceat_tests.json").get("tests") or {})
    known = [t for t in unknown if t in builtin]
    other = [t for t in unknown if t not in builtin]
    text = f"tests {unknown} are not in this ceat suite; it has {present}."
    if len(unknown) == 1:
        text += did_you_mean(unknown[0], present)
    if other:
        text += (f" {', '.join(map(repr, other))} {'is not a built-in CEAT test' if len(other) == 1 else 'are not built-in CEAT tests'} (those are "
                 f"{', '.join(builtin)}): define {'it' if len(other) == 1 else 'them'} in a JSON file in "
                 "the ceat_weat_groups.json layout and extract it as below with --test FILE.")
    tests = "FILE" if other else ",".join(known)
    text += (
        f" Extract {'them' if len(unknown) > 1 else 'it'} into a new group (adding tests to this "
        f"one is refused): 'emb extract --model {model} --suite ceat --corpus CORPUS --test "
        f"{tests} --name ceat_new --store {store}', then 'emb analyze ceat --store {store} "
        "--suite ceat_new'"
    )
    return text


def _tests(ds: xr.Dataset, wanted: str | Sequence[str] | None,
           dropped: dict[str, str] | None = None) -> list[_Test]:
    """The suite's tests (``wanted`` by name, default all); a test with an empty word set is left
    out and its reason put in ``dropped`` (name → reason)."""
    for label in ("stimulus", "tests", "roles"):
        if label not in ds.variables:
            raise AnalysisError(
                f"this Dataset has no {label!r} label: it is not a 'ceat' suite. Extract one with "
                "'emb extract --suite ceat --corpus FILE …'"
            )
    # the labels of each stimulus' first item, read as text there only (not a fixed-width copy
    # of every item's: the width of the longest times millions of contexts)
    codes, first = pd.factorize(item_text(ds, "stimulus"))
    firsts = np.unique(codes, return_index=True)[1]  # first item of each stimulus
    tests_col = text_column(item_values(ds, "tests")[firsts])
    roles_col = text_column(item_values(ds, "roles")[firsts])
    groups_col = (text_column(item_values(ds, "groups")[firsts]) if "groups" in ds.variables
                  else None)
    defs: dict[str, dict[str, list[str]]] = {}
    groups: dict[str, dict[str, str]] = {}
    for i, s in enumerate(first):
        names = groups_col[i].split("|") if groups_col is not None else [""] * 99
        for t, r, g in zip(tests_col[i].split("|"), roles_col[i].split("|"), names, strict=False):
            defs.setdefault(t, {role: [] for role in ROLES})[r].append(str(s))
            groups.setdefault(t, {})[r] = g or r
    definitions = suite_parameters(ds)[None].get("tests") or {}
    order = list(definitions.keys())
    present = sorted(defs, key=lambda t: (order.index(t) if t in order else len(order), natural_key(t)))
    if wanted is None:
        names = present
    else:
        names = [wanted] if isinstance(wanted, str) else [str(t) for t in wanted]
        if not names:
            raise AnalysisError("tests is empty; give at least one or leave it out")
        refuse_repeats("tests", names)
        unknown = [t for t in names if t not in defs]
        if unknown:
            raise MissingStimuliError(_missing_tests_message(ds, unknown, present))
    out = []
    for name in names:
        roles = defs[name]
        empty = [r for r in ROLES if not roles[r]]
        if empty:
            if dropped is None:
                raise MissingStimuliError(
                    f"test {name!r} has no {', '.join(empty)} stimuli in this suite")
            dropped[str(name)] = f"no {', '.join(empty)} stimuli in this suite"
            continue
        named = {r: groups[name].get(r, r) for r in ROLES}
        out.append(_Test(name, roles, named, readable_name(name, definitions.get(name), named)))
    return out


def _normal_interval(ces: xr.DataArray, boot: xr.DataArray) -> tuple[xr.DataArray, xr.DataArray]:
    """:func:`normal_interval` (``CES ∓ 1.96 SD`` of the replicates) on labelled arrays."""
    return xr.apply_ufunc(
        normal_interval, ces, boot, input_core_dims=[[], ["replicate"]], output_core_dims=[[], []],
        dask="parallelized", output_dtypes=[np.float64, np.float64],
    )


def _one_test(
    ds: xr.Dataset, test: _Test, *, n_samples: int, seed: int, ddof: int, variance: str,
    replace: str, alternative: str, n_permutations: int, n_bootstrap: int,
    bootstrap_samples: int, grid: tuple[int, ...], boot_grid: tuple[int, ...],
    layer: int, pooling: str, min_words: int, where_of: dict[str, np.ndarray],
) -> xr.Dataset:
    """One test's result; ``where_of``: the item positions of every stimulus (:func:`_positions`)."""
    order = [s for r in ROLES for s in test.stimuli[r]]
    positions, counts = [], []
    for s in order:
        where = where_of.get(s, np.zeros(0, dtype=np.int64))
        if not len(where):
            raise MissingStimuliError(f"test {test.name!r}: stimulus {s!r} has no context in this store")
        positions.append(where)
        counts.append(len(where))
    offsets = np.cumsum([0, *counts[:-1]])
    seeds = [[seed, zlib.crc32(test.name.encode()), zlib.crc32(s.encode())] for s in order]
    idx = sample_indices(counts, n_samples, rng_seeds=seeds, replace=replace) + offsets
    sizes = {r: len(test.stimuli[r]) for r in ROLES}
    if n_permutations:
        n_t = sizes["X"] + sizes["Y"]
        cells = math.prod(n for d, n in ds["embedding"].sizes.items() if d not in ("item", "feature"))
        plan(n_samples * n_permutations * n_t * cells, "CEAT per-sample permutation tests")
    emb = ds["embedding"].isel(item=np.concatenate(positions)).reset_coords(drop=True)
    emb = emb.drop_vars("item", errors="ignore")
    if emb.chunks is not None:
        emb = emb.chunk({"item": -1, "feature": -1, "pooling": 1, "layer": 1})
    common = {"n_x": sizes["X"], "n_y": sizes["Y"], "n_a": sizes["A"], "ddof": ddof,
              "variance": variance}
    es, v, p_sample = xr.apply_ufunc(
        ceat_kernel, emb, input_core_dims=[["item", "feature"]],
        output_core_dims=[["sample"]] * 3,
        kwargs={**common, "idx": idx, "n_permutations": n_permutations, "alternative": alternative,
                "seed": seed},
        dask="parallelized", output_dtypes=[np.float64] * 3,
        dask_gufunc_kwargs={"output_sizes": {"sample": n_samples}, "allow_rechunk": True},
    )
    out = xr.Dataset({"es": es, "v": v, "p_sample": p_sample.astype(np.float32)})
    meta = xr.apply_ufunc(
        _meta_kernel, es, v, input_core_dims=[["sample"], ["sample"]],
        output_core_dims=[[]] * len(_META), kwargs={"alternative": alternative},
        dask="parallelized", output_dtypes=[np.float64] * len(_META),
    )
    for name, value in zip(_META, meta, strict=True):
        out[name] = value
    conv = xr.apply_ufunc(
        _convergence_kernel, es, v, input_core_dims=[["sample"], ["sample"]],
        output_core_dims=[["n_grid"]] * 4, kwargs={"grid": grid, "alternative": alternative},
        dask="parallelized", output_dtypes=[np.float64] * 4,
        dask_gufunc_kwargs={"output_sizes": {"n_grid": len(grid)}},
    )
    for name, value in zip(("conv_p", "conv_ci_low", "conv_ci_high", "conv_z"), conv, strict=True):
        out[name] = value
    if n_bootstrap:
        bidx = _bootstrap_indices(counts, offsets, sizes, n_rep=n_bootstrap,
                                  n_samples=bootstrap_samples, seed=seed, test=test.name)
        boot = xr.apply_ufunc(
            _boot_kernel, emb, input_core_dims=[["item", "feature"]],
            output_core_dims=[["replicate"]],
            kwargs={**common, "idx": bidx, "n_rep": n_bootstrap, "alternative": alternative},
            dask="parallelized", output_dtypes=[np.float64],
            dask_gufunc_kwargs={"output_sizes": {"replicate": n_bootstrap}, "allow_rechunk": True},
        )
        # the normal bootstrap interval, CES ± z·SE of the replicates: the replicates' quantiles
        # (the percentile interval) sit below the CES, which already sits below the population
        # d with few stimuli; centred on the CES it covers d (docs/rules/intervals.md)
        out["boot_ci_low"], out["boot_ci_high"] = _normal_interval(out["ces"], boot)
        cell = emb.sel(layer=layer, pooling=pooling)
        lows, highs = [], []
        for n in boot_grid:
            gidx = _bootstrap_indices(counts, offsets, sizes, n_rep=n_bootstrap, n_samples=n,
                                      seed=seed + n, test=test.name)
            b = xr.apply_ufunc(
                _boot_kernel, cell, input_core_dims=[["item", "feature"]],
                output_core_dims=[["replicate"]],
                kwargs={**common, "idx": gidx, "n_rep": n_bootstrap, "alternative": alternative},
                dask="parallelized", output_dtypes=[np.float64],
                dask_gufunc_kwargs={"output_sizes": {"replicate": n_bootstrap},
                                    "allow_rechunk": True},
            )
            low, high = _normal_interval(out["ces"].sel(layer=layer, pooling=pooling), b)
            lows.append(low)
            highs.append(high)
        if boot_grid:
            out["conv_boot_ci_low"] = xr.concat(lows, dim="n_boot_grid")
            out["conv_boot_ci_high"] = xr.concat(highs, dim="n_boot_grid")
    out = out.expand_dims(test=[test.name])
    for role in ROLES:
        out[f"n_{role.lower()}"] = ("test", [sizes[role]])
    out["small_n"] = ("test", [small_n_of(sizes, min_words)])
    out = out.assign_coords(test_name=("test", [test.title]))
    return out.assign_coords({f"{r.lower()}_group": ("test", [test.groups[r]]) for r in ROLES})


def _positions(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Item positions of every stimulus (one pass, not one comparison per stimulus)."""
    stim_col = item_text(ds, "stimulus")
    return {str(k): np.asarray(v, dtype=np.int64)
            for k, v in pd.Series(np.arange(len(stim_col))).groupby(stim_col).indices.items()}


def _stimulus_table(ds: xr.Dataset, tests: list[_Test], n_samples: int, replace: str,
                    where_of: dict[str, np.ndarray]) -> xr.Dataset:
    names, counts, member, roles = [], [], [], []
    seen_info = suite_parameters(ds)[None].get("stimuli") or {}
    for test in tests:
        for role in ROLES:
            for s in test.stimuli[role]:
                if s in names:
                    i = names.index(s)
                    member[i] += f"|{test.name}"
                    roles[i] += f"|{role}"
                    continue
                names.append(s)
                counts.append(len(where_of.get(s, ())))
                member.append(test.name)
                roles.append(role)
    seen = [float(seen_info.get(s, {}).get("seen", np.nan)) for s in names]
    counts_a = np.asarray(counts)
    with_repl = counts_a < n_samples if replace == "auto" else np.ones(len(names), dtype=bool)
    return xr.Dataset(
        {"n_contexts": ("stimulus", counts_a), "n_seen": ("stimulus", np.asarray(seen)),
         "with_replacement": ("stimulus", with_repl)},
        coords={"stimulus": names, "stimulus_tests": ("stimulus", member),
                "stimulus_roles": ("stimulus", roles)},
    )


@public_in_package
@own_descriptions
@run_by_record()
def ceat(
    ds: xr.Dataset,
    *,
    tests: str | Sequence[str] | None = None,
    n_samples: int = 10_000,
    seed: int = 0,
    ddof: int = 1,
    alternative: Literal["two-sided", "greater", "less"] = "two-sided",
    n_permutations: int = 200,
    n_bootstrap: int = 100,
    bootstrap_samples: int = 100,
    convergence: Sequence[int] = (100, 300, 1_000, 3_000, 10_000),
    bootstrap_convergence: Sequence[int] = (10, 30, 100, 300),
    method: Literal["default", "reference"] = "default",
    min_words: int = 8,
) -> xr.Dataset:
    """Contextualized Embedding Association Test, per test, layer and pooling, lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        A ``ceat`` suite group: ``embedding(item, layer, pooling, feature)`` with the item labels
        ``stimulus``, ``tests`` and ``roles`` (``emb extract --suite ceat``).
    tests : str or sequence of str, optional
        Tests to run (default: every test of the suite).
    n_samples : int, default 10_000
        N: samples of one context per stimulus (seeded per test and stimulus).
    seed : int, default 0
    ddof : int, default 1
        Of the effect size's standard deviation.
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        Of the combined z (the published tables are two-sided) and of the per-sample p.
    n_permutations : int, default 200
        Random re-splits behind each sample's own WEAT p (``p_sample``: the colours of the ES
        histogram); 0 skips it.
    n_bootstrap, bootstrap_samples : int, default 100, 100
        Bootstrap replicates (stimuli resampled within each word set, then each stimulus'
        contexts) and the samples combined in each; 0 replicates skips the bootstrap, else at
        least 20 (fewer give too rough a standard error). The interval is the normal bootstrap
        interval, ``CES ± 1.96 SE`` with SE the replicates' standard deviation: it covers the
        population effect size (a planted-population simulation: docs/rules/intervals.md), where
        the replicates' quantiles sit below it.
    convergence : sequence of int
        N at which the meta-analysis is recomputed on the first N samples (``conv_*``), to show
        how p and the CI shrink with N.
    bootstrap_convergence : sequence of int
        Samples per replicate at which the bootstrap CI is recomputed, at the top layer and the
        default pooling only (``conv_boot_*``).
    method : {"default", "reference"}
        ``reference``: the authors' code: contexts always drawn with replacement and
        ``V_i = var(s, ddof=1)`` (the supplement's §8.3); default: without replacement where a
        stimulus has at least N contexts, and ``V_i`` the sampling variance of Cohen's d.
    min_words : int, default 8
        A test with fewer stimuli than this in any word set (e.g. names without a context in
        the corpus) is flagged ``small_n`` and named in the summary; a test with an empty set
        is dropped with an :class:`~emb.errors.EmbWarning` (an error only when all are).

    Returns
    -------
    xarray.Dataset
        ``es``, ``v``, ``p_sample`` (test, layer, pooling, sample); ``ces``, ``se``, ``ci_low``,
        ``ci_high``, ``z``, ``p``, ``tau2``, ``q``, ``i2``, ``boot_ci_low``, ``boot_ci_high``
        (test, layer, pooling); ``conv_p``, ``conv_ci_low``, ``conv_ci_high`` (test, layer,
        pooling, n_grid); ``conv_boot_ci_low``/``_high`` (test, n_boot_grid); per test
        ``n_x`` … ``n_b``, ``small_n`` and the group names; per stimulus ``n_contexts``, ``n_seen``,
        ``with_replacement``. Attributes: options, the declared cell, the store's provenance.

    Raises
    ------
    AnalysisError
        Bad options, sizes whose arrays would not fit in this machine's memory, or a Dataset that
        is not a ceat suite.
    MissingStimuliError
        A test asked for that the suite lacks, or every test with an empty word set.

    Notes
    -----
    ``V_i = (n_X + n_Y)/(n_X n_Y) + ES_i² / (2(n_X + n_Y))`` (Hedges & Olkin); DerSimonian–Laird
    τ² truncated at 0; ``CES = Σ ES_i/(V_i+τ²) / Σ 1/(V_i+τ²)``; see
    :func:`emb.analyses.stats.dersimonian_laird`.

    References
    ----------
    Guo, W. & Caliskan, A. (2021). Detecting Emergent Intersectional Biases: Contextualized Word
    Embeddings Contain a Distribution of Human-like Biases. AIES '21, 122–133.

    Examples
    --------
    On a store, ``ds = emb.open_store("gpt2.zarr").dataset("ceat")``; here the record's example
    suite (test T1 with an effect growing with the layer):

    >>> from emb.analyses import ANALYSES
    >>> ds, _ = ANALYSES["ceat"].example()
    >>> res = ceat(ds, tests=["T1"], n_samples=100, n_bootstrap=0).compute()
    >>> res.ces.sel(pooling="last").round(2).to_pandas()
    layer     0     1     2
    test
    T1     0.06  1.42  1.71
    """
    if 0 < n_bootstrap < 20:
        raise AnalysisError(f"n_bootstrap must be 0 (no bootstrap CI) or at least 20 (fewer give too "
                            f"rough a standard error); got {n_bootstrap}")
    if "embedding" not in ds.variables:
        raise AnalysisError("the Dataset has no 'embedding' variable: pass a store suite group")
    grid = tuple(sorted({min(int(n), n_samples) for n in convergence if int(n) >= 2} | {n_samples}))
    boot_grid = tuple(sorted({int(n) for n in bootstrap_convergence if int(n) >= 2}))
    dropped: dict[str, str] = {}
    test_list = _tests(ds, tests, dropped)
    if dropped:
        text = "; ".join(f"{name!r} ({why})" for name, why in dropped.items())
        if not test_list:
            raise MissingStimuliError(
                f"every CEAT test has an empty word set in this suite ({text}); nothing to "
                "compute: extract the suite from a corpus with contexts for these words")
        warnings.warn(f"CEAT tests dropped, the others go on: {text}", EmbWarning, stacklevel=2)
    _check_memory(ds, test_list, n_samples=int(n_samples), n_bootstrap=int(n_bootstrap),
                  bootstrap_samples=int(bootstrap_samples), boot_grid=boot_grid if n_bootstrap else ())
    layer = int(ds["layer"].values.max())
    pooling = default_of(list(ds["pooling"].values), DEFAULT_POOLINGS)
    replace = "always" if method == "reference" else "auto"
    variance = "reference" if method == "reference" else "cohens-d"
    where_of = _positions(ds)  # one pass over the items for every test
    parts = [
        _one_test(ds, t, n_samples=int(n_samples), seed=int(seed), ddof=int(ddof),
                  variance=variance, replace=replace, alternative=alternative,
                  n_permutations=int(n_permutations), n_bootstrap=int(n_bootstrap),
                  bootstrap_samples=int(bootstrap_samples), grid=grid,
                  boot_grid=boot_grid if n_bootstrap else (), layer=layer, pooling=pooling,
                  min_words=int(min_words), where_of=where_of)
        for t in test_list
    ]
    out = xr.concat(parts, dim="test", data_vars="all", coords="minimal", compat="override",
                    join="exact")
    out = out.assign_coords(sample=np.arange(n_samples), n_grid=list(grid))
    if "n_boot_grid" in out.dims:
        out = out.assign_coords(n_boot_grid=list(boot_grid))
    out = out.merge(_stimulus_table(ds, test_list, int(n_samples), replace, where_of))
    out["n_samples"] = ((), int(n_samples))
    long_names = {
        "es": "effect size of each sample (Cohen's d)", "v": "variance V_i of each sample's d",
        "p_sample": f"each sample's permutation p ({alternative}, {n_permutations} re-splits)",
        "ces": "combined effect size (DerSimonian-Laird)", "se": "standard error of the CES",
        "p": f"p of z ({alternative}; below float range written as 2.2e-308)",
        "log10_p": "log10 of p, exact below float range",
        "tau2": "between-sample variance (DL, truncated at 0)",
        "q": "Cochran's Q", "i2": "I^2 (fraction)",
        "boot_ci_low": "low bound of the 95% normal bootstrap CI of the CES, CES - 1.96 SE_boot "
                       "(stimuli and contexts resampled)",
        "boot_ci_high": "high bound of the 95% normal bootstrap CI of the CES, CES + 1.96 SE_boot "
                        "(stimuli and contexts resampled)",
        "small_n": f"a word set has fewer than {int(min_words)} stimuli",
    }
    for name, text in long_names.items():
        if name in out:
            out[name].attrs["long_name"] = text
    out.attrs = {
        "n_samples": int(n_samples), "seed": int(seed), "ddof": int(ddof),
        "alternative": alternative, "method": method, "variance": variance,
        "sampling": "with replacement" if replace == "always"
        else "without replacement where a stimulus has >= N contexts, else with replacement",
        "n_permutations": int(n_permutations), "n_bootstrap": int(n_bootstrap),
        "bootstrap_samples": int(bootstrap_samples), "declared_layer": layer,
        "declared_pooling": str(pooling), "min_words": int(min_words),
        "dropped": json.dumps(dropped, ensure_ascii=False),
        "stimuli": json.dumps({t.name: t.stimuli for t in test_list}, ensure_ascii=False),
    }
    return out


# -- figures ----------------------------------------------------------------------
def _figures(result: xr.Dataset) -> dict[str, Figure]:
    from emb.analyses.ceat import _figures as plots

    figures: dict[str, Figure] = {}
    for model in coord_values(result, "model"):
        tag = f"_{slug(model)}" if model is not None else ""
        if not (result.sel(model=model) if model is not None else result)["ces"].notnull().any():
            continue  # no CES at all (identical vectors: no variance): nothing to draw
        figures[f"es_histograms{tag}"] = plots.es_histograms(result, model=model)
        figures[f"ces_by_layer{tag}"] = plots.ces_by_layer(result, model=model)
        figures[f"convergence{tag}"] = plots.convergence(result, model=model)
    if result["ces"].notnull().any():
        figures["ces_table"] = plots.heat_table(result)
    return figures


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    """A tiny ``ceat`` suite (T1 with a planted effect, T2 without; 30 contexts per stimulus) and
    sample counts small enough for a test, convergence grids included."""
    from emb.analyses._examples import lazy
    from emb.analyses.ceat._example import ceat_dataset

    return lazy(ceat_dataset(), item_chunk=50), {
        "n_samples": 60, "seed": 3, "n_bootstrap": 20, "bootstrap_samples": 10,
        "n_permutations": 20, "convergence": (10, 30), "bootstrap_convergence": (5, 10)}


ANALYSIS = Analysis(
    name="ceat",
    function=ceat,
    suite="ceat",
    description="CEAT: random-effects combined WEAT effect sizes over sampled natural contexts",
    options=(
        Option(name="tests", multiple=True, help="test of the suite, e.g. C1 (default: all)"),
        Option(name="n_samples", type="int", deprecated=("--samples",), low=2, high=MAX_CEAT_SAMPLES,
               help="N: samples of one context per stimulus"),
        ALTERNATIVE.but(help="alternative hypothesis of the combined z"),
        DDOF,
        N_PERMUTATIONS.but(low=0, high=MAX_SAMPLE_PERMUTATIONS,
               help="re-splits behind each sample's own p (histogram colours); 0: none"),
        Option(name="n_bootstrap", type="int", high=MAX_BOOTSTRAP,
               help="bootstrap replicates: 0 (no bootstrap CI) or at least 20"),
        Option(name="bootstrap_samples", type="int", low=2, high=MAX_CEAT_SAMPLES,
               help="samples combined in each replicate"),
        MIN_WORDS,
    ),
    tables=tables,
    figures=_figures,
    summary=summary,
    outputs={
        **{name: ("test", "layer", "pooling", "sample") for name in ("es", "v", "p_sample")},
        **{name: ("test", "layer", "pooling")
           for name in ("ces", "se", "ci_low", "ci_high", "z", "p", "tau2", "q", "i2",
                        "boot_ci_low", "boot_ci_high")},
        **{name: ("test", "layer", "pooling", "n_grid")
           for name in ("conv_p", "conv_ci_low", "conv_ci_high")},
        "conv_boot_ci_low": ("test", "n_boot_grid"),
        "n_contexts": ("stimulus",),
        **{name: ("test",) for name in ("n_x", "n_y", "n_a", "n_b", "small_n")},
    },
    example=_example,
    api_only=("convergence", "bootstrap_convergence"),
)
