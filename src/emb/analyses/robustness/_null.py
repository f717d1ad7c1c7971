"""An empirical null for WEAT (Dobrzeniecka & Urbaniak 2024): d when the attribute sets are
replaced by random words of the suite matched on length (or frequency band), against the observed d;
per test, setting, layer and pooling, lazily."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import (
    Analysis,
    Option,
    Summary,
    mc_floor,
    tidy_frame,
)
from emb.analyses._decorators import own_descriptions, public_in_package, run_by_record
from emb.analyses._select import item_values
from emb.analyses.stats import (
    association,
    permutation_test,
    target_attribute_cosines,
    weat_effect_size,
)
from emb.analyses.stats import robustness as rb
from emb.analyses.wordsets import (
    ROLES,
    SET_SIZES,
    TEST_CHOICE,
    TestSpec,
    cell_summary,
    declared_cell,
    p_text,
    per_test,
    test_attrs,
    test_table,
    top_rows,
    vectors,
)
from emb.errors import AnalysisError
from emb.options import DDOF
from emb.text import names

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "empirical_null"]

#: Per-item labels read as a word's corpus frequency (the first present), for ``match="frequency"``.
FREQUENCY_LABELS = ("frequency", "log_frequency", "zipf_frequency", "freq")
#: Frequency bands (quantiles of the pool's frequencies) for ``match="frequency"``.
N_BANDS = 10
#: WEAT's permutation p is exact up to this many splits of the targets (as ``weat``'s default).
EXACT_LIMIT = 1_000_000
#: Fewest candidates a band must offer before it is widened (length ± 1, ± 2 …).
MIN_CANDIDATES = 3


def _pool(ds: xr.Dataset, test: TestSpec, settings: list[str]) -> tuple[list[str], dict[str, np.ndarray]]:
    """The candidate attribute words: every word of the suite present in each setting, except the
    test's own; and, per setting, the position of each one's first item."""
    words = item_values(ds, "word").astype(str)
    setting_of = item_values(ds, "setting").astype(str) if "setting" in ds.variables else None
    own = {w for role in ROLES for w in test.words[role]}
    first: dict[str, dict[str, int]] = {}
    for s in settings:
        idx = np.flatnonzero(setting_of == s) if setting_of is not None else np.arange(words.size)
        seen: dict[str, int] = {}
        for i in idx:
            seen.setdefault(words[i], int(i))
        first[s] = seen
    common = [w for w in first[settings[0]] if w not in own and all(w in first[s] for s in settings)]
    return common, {s: np.array([first[s][w] for w in common], dtype=np.intp) for s in settings}


def _bands(test: TestSpec, pool: list[str], ds: xr.Dataset, match: str) -> tuple[np.ndarray, np.ndarray]:
    """Each attribute word's band value and each pool word's (length, or frequency band)."""
    if match == "length":
        return (np.array([len(w) for role in ("A", "B") for w in test.words[role]]),
                np.array([len(w) for w in pool]))
    label = next((n for n in FREQUENCY_LABELS if n in ds.variables), None)
    if label is None:
        raise AnalysisError(
            "--match frequency needs a per-item frequency label "
            f"({names(list(FREQUENCY_LABELS))}) in this suite, and it has none; use --match length, "
            "or extract a suite whose stimuli carry their frequencies")
    words = item_values(ds, "word").astype(str)
    freq = dict(zip(words.tolist(), np.asarray(item_values(ds, label), dtype=float).tolist(), strict=True))
    pool_f = np.array([freq[w] for w in pool])
    edges = np.nanquantile(pool_f, np.linspace(0, 1, N_BANDS + 1)[1:-1])
    attr_f = np.array([freq.get(w, np.nan) for role in ("A", "B") for w in test.words[role]])
    return np.searchsorted(edges, attr_f), np.searchsorted(edges, pool_f)


def draw_matched(want: np.ndarray, have: np.ndarray, n_draws: int, seed: int) -> np.ndarray:
    """``n_draws`` rows of distinct pool indices, entry j drawn from the pool words whose band
    equals ``want[j]`` (widened by ±1, ±2 … while fewer than :data:`MIN_CANDIDATES` are left)."""
    if have.size < want.size:
        raise AnalysisError(
            f"the suite offers {have.size} candidate words for random attribute sets of "
            f"{want.size} words; extract a larger suite or use a test with fewer attribute words")
    rng = np.random.default_rng(seed)
    out = np.empty((n_draws, want.size), dtype=np.intp)
    for r in range(n_draws):
        used = np.zeros(have.size, dtype=bool)
        for j, band in enumerate(want):
            width = 0
            while True:
                cand = np.flatnonzero((np.abs(have - band) <= width) & ~used)
                if cand.size >= MIN_CANDIDATES or cand.size == (~used).sum():
                    break
                width += 1
            pick = cand[rng.integers(cand.size)]
            used[pick] = True
            out[r, j] = pick
    return out


def _null_kernel(emb: np.ndarray, pool: np.ndarray, *, n_x: int, n_y: int, n_a: int,
                 draws: np.ndarray, ddof: int, alternative: str, n_permutations: int,
                 seed: int) -> np.ndarray:
    """(d, null mean, sd, 2.5 %, 97.5 %, percentile, empirical p, permutation p), (..., 8)."""
    n_t = n_x + n_y
    cos = target_attribute_cosines(emb, n_t)
    s = association(cos[..., :n_a], cos[..., n_a:])
    d = weat_effect_size(s[..., :n_x], s[..., n_x:], ddof=ddof)
    null = rb.null_effect_sizes(emb[..., :n_t, :], pool, n_x, n_y, draws[:, :n_a], draws[:, n_a:],
                                ddof=ddof)
    r = null.shape[-1]
    obs = d[..., None]
    if alternative == "greater":
        hits = (null >= obs - 1e-12).sum(-1)
    elif alternative == "less":
        hits = (null <= obs + 1e-12).sum(-1)
    else:
        hits = (np.abs(null) >= np.abs(obs) - 1e-12).sum(-1)
    perm = permutation_test(s, n_x, alternative=alternative, n_permutations=n_permutations,  # type: ignore[arg-type]
                            exact_limit=EXACT_LIMIT, seed=seed).pvalue
    q = np.quantile(null, [0.025, 0.975], axis=-1)
    return np.stack([d, null.mean(-1), null.std(-1, ddof=1), q[0], q[1], (null < obs).mean(-1),
                     (1 + hits) / (1 + r), np.asarray(perm, dtype=np.float64)], axis=-1)


_STATS = ("effect_size", "null_mean", "null_sd", "null_low", "null_high", "null_percentile",
          "empirical_p", "permutation_p")


@public_in_package
@own_descriptions
@run_by_record()
def empirical_null(
    ds: xr.Dataset,
    *,
    tests: Any = None,
    x: Sequence[str] | None = None,
    y: Sequence[str] | None = None,
    a: Sequence[str] | None = None,
    b: Sequence[str] | None = None,
    settings: str | Sequence[str] | None = None,
    include_excluded: bool = False,
    match: Literal["length", "frequency"] = "length",
    n_null: int = 1000,
    alternative: Literal["greater", "less", "two-sided"] = "greater",
    n_permutations: int = 10_000,
    ddof: int = 1,
    seed: int = 0,
    min_words: int = 8,
    word_set: Literal["common", "per-setting"] = "common",
) -> xr.Dataset:
    """WEAT's d against random attribute sets (Dobrzeniecka & Urbaniak 2024), lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        A store suite group with WEAT-style tests; its other words are the pool random attribute
        sets are drawn from.
    tests, x, y, a, b, settings, include_excluded
        Which tests, as for :func:`emb.analyses.weat`.
    match : {"length", "frequency"}, default "length"
        Each attribute word is replaced by a pool word of the same length in characters (or of
        the same frequency decile, from a per-item ``frequency`` label), the band widened by ±1
        while it offers fewer than 3 words.
    n_null : int, default 1000
        Random attribute-set pairs (the same, seeded, in every cell).
    alternative : {"greater", "less", "two-sided"}, default "greater"
        The empirical p counts null d at least the observed (``two-sided``: |d_null| ≥ |d|),
        ``(1 + hits) / (1 + n_null)``; the permutation p beside it is WEAT's.
    n_permutations : int, default 10_000
        WEAT's permutation test (Monte Carlo, seeded).
    ddof, seed, min_words
        As for :func:`emb.analyses.weat`.
    word_set : {"common", "per-setting"}, default "common"
        Across the stores of one run, the words every store has, or each store's own (within a
        store every cell uses the test's words); see ``docs/rules/same-words.md``.

    Returns
    -------
    xarray.Dataset
        Dims ``(test, setting, layer, pooling)``: ``effect_size`` (the observed d), ``null_mean``,
        ``null_sd``, ``null_low``, ``null_high`` (2.5 % and 97.5 % of the null d),
        ``null_percentile`` (share of null d below the observed), ``empirical_p`` and
        ``permutation_p``; per test ``pool_size`` (candidate words), ``n_permutations`` (of the
        permutation p; 0 = exact), ``n_x`` … ``n_b``,
        ``small_n``.

    Notes
    -----
    The permutation test asks whether X and Y differ in their association with *these* attribute
    sets; the empirical null asks whether these attribute sets separate X and Y more than random
    words of the same kind would. A d inside the null's range is no evidence about A and B.

    Examples
    --------
    >>> from emb.analyses import ANALYSES
    >>> ds, options = ANALYSES["empirical-null"].example()
    >>> res = empirical_null(ds, **options).compute()
    >>> int(res.pool_size.sel(test="WEAT1"))
    16
    """

    def build(data: xr.Dataset, test: TestSpec, chosen: list[str], n: dict[str, int]) -> xr.Dataset:
        pool_words, positions = _pool(data, test, chosen)
        want, have = _bands(test, pool_words, data, match)
        draws = draw_matched(want, have, int(n_null), int(seed))
        pool = xr.concat([data.embedding.isel(item=positions[s]).reset_coords(drop=True)
                          .drop_vars("item", errors="ignore").rename(item="pool") for s in chosen],
                         dim="setting").assign_coords(setting=chosen)
        if pool.chunks is not None:
            pool = pool.chunk({"pool": -1, "feature": -1})
        out = xr.apply_ufunc(
            _null_kernel, vectors(data, test, chosen), pool,
            input_core_dims=[["item", "feature"], ["pool", "feature"]], output_core_dims=[["stat"]],
            kwargs={"n_x": n["X"], "n_y": n["Y"], "n_a": n["A"], "draws": draws, "ddof": int(ddof),
                    "alternative": alternative, "n_permutations": int(n_permutations),
                    "seed": int(seed)},
            dask="parallelized", output_dtypes=[np.float64],
            dask_gufunc_kwargs={"output_sizes": {"stat": len(_STATS)}})
        res = xr.Dataset({name: out.isel(stat=k, drop=True) for k, name in enumerate(_STATS)})
        res["pool_size"] = len(pool_words)
        exact = math.comb(n["X"] + n["Y"], n["X"]) <= EXACT_LIMIT
        res["n_permutations"] = 0 if exact else int(n_permutations)
        return res

    res, test_list, dropped = per_test(ds, build, tests=tests, x=x, y=y, a=a, b=b, settings=settings,
                                       include_excluded=include_excluded, min_words=min_words)
    res = res.transpose("test", "setting", "layer", "pooling", ...)
    for name, text in {
        "effect_size": "observed WEAT effect size d",
        "null_mean": "mean d with random attribute sets",
        "null_sd": "standard deviation of d with random attribute sets",
        "null_low": "2.5% quantile of d with random attribute sets",
        "null_high": "97.5% quantile of d with random attribute sets",
        "null_percentile": "share of the null d below the observed d",
        "empirical_p": f"empirical p ({alternative}): (1 + null d as extreme) / (1 + {int(n_null)})",
        "permutation_p": f"WEAT permutation p ({alternative})",
        "pool_size": "candidate words the random attribute sets were drawn from",
        "n_permutations": "random splits of the permutation p (0 = exact enumeration)",
    }.items():
        res[name].attrs["long_name"] = text
    res.attrs = res.attrs | test_attrs("empirical-null", test_list, dropped, ds, match=match, n_null=int(n_null),
                           alternative=alternative, n_permutations=int(n_permutations),
                           ddof=int(ddof), seed=int(seed), include_excluded=bool(include_excluded), word_set=word_set,
                           min_words=int(min_words))
    return res


# -- tables, summary, figures ----------------------------------------------------------------------
def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``empirical_null``: one row per (model, test, setting, pooling, layer)."""
    frame = tidy_frame(result, list(_STATS), drop_all_nan=["effect_size"])
    frame.insert(int(frame.columns.get_loc("empirical_p")) + 1, "empirical_p_at_floor",
                 mc_floor(frame["empirical_p"], np.full(len(frame), float(result.attrs["n_null"]))))
    counts = result["n_permutations"].reset_coords(drop=True).to_dataframe().reset_index()
    frame = frame.merge(counts, how="left")
    frame.insert(int(frame.columns.get_loc("permutation_p")) + 1, "permutation_p_at_floor",
                 mc_floor(frame["permutation_p"], frame["n_permutations"].astype(float)))
    return {"empirical_null": test_table(frame, result, first=_STATS, integers=("layer", "n_permutations"),
                                         sizes=("pool_size", *SET_SIZES))}


def _summary(result: xr.Dataset, tables: Mapping[str, pd.DataFrame]) -> Summary:
    frame = tables["empirical_null"].dropna(subset=["effect_size"])
    if frame.empty:
        return Summary(title="Empirical null: no effect sizes (every cell is NaN)")
    cell, setting, pooling = declared_cell(frame)
    n_null = int(result.attrs["n_null"])
    rows = []
    for row, top in top_rows(cell):
        row.update({
            "layer": int(top["layer"]), "d": round(float(top["effect_size"]), 3),
            "null 95%": f"[{top['null_low']:.2f}, {top['null_high']:.2f}]",
            "percentile": f"{100 * float(top['null_percentile']):.1f}",
            "empirical p": p_text(top, "empirical_p", n_null),
            "permutation p": p_text(top, "permutation_p", "n_permutations"),
        })
        rows.append(row)
    notes = [
        f"Null: d with {n_null} random attribute-set pairs drawn from the suite's other words, "
        f"each word matched on {result.attrs['match']} (seeded, seed {result.attrs['seed']}); "
        "a d inside the null's 95% range is no evidence about the attribute sets themselves.",
        f"empirical p ({result.attrs['alternative']}): (1 + null d as extreme) / (1 + {n_null}); "
        "permutation p: WEAT's re-splits of the targets, beside it. Neither is corrected.",
    ]
    return cell_summary("Empirical null (WEAT's d against random attribute sets)", result,
                        setting=setting, pooling=pooling, rows=rows, notes=notes)


def _figures(result: xr.Dataset, *, relative_depth: bool = False) -> dict[str, Figure]:
    from emb.analyses import _figure as fg
    from emb.analyses.robustness._figures import null_positions

    return fg.per_pooling(result, "effect_size", lambda pooling: {
        "by_layer": null_positions(result, pooling=pooling, relative_depth=relative_depth)})


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    from emb.analyses._examples import lazy, weat_dataset

    return lazy(weat_dataset()), {"n_null": 200, "n_permutations": 500}


ANALYSIS = Analysis(
    name="empirical-null",
    function=empirical_null,
    suite="weat",
    description="WEAT's d against random attribute sets of the suite's words, matched on length "
                "or frequency (an empirical null)",
    options=(
        *TEST_CHOICE,
        Option(name="match", choices=("length", "frequency"),
               help="what a random attribute word is matched on"),
        Option(name="n_null", type="int", low=10, high=100_000, help="random attribute-set pairs"),
        Option(name="alternative", choices=("greater", "less", "two-sided"),
               help="direction of the empirical and permutation p"),
        Option(name="n_permutations", type="int", low=2, high=10_000_000,
               help="Monte-Carlo splits of WEAT's permutation p"),
        DDOF,
    ),
    tables=_tables,
    figures=_figures,
    summary=_summary,
    outputs={
        **{v: ("test", "setting", "layer", "pooling") for v in _STATS},
        **{v: ("test",) for v in ("pool_size", "n_permutations", "n_x", "n_y", "n_a", "n_b",
                                  "small_n")},
    },
    example=_example,
)
