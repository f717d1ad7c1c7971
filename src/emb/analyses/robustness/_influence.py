"""Seed sensitivity (Antoniak & Mimno 2021): which words drive a WEAT effect, and how far d moves
when the word sets are sampled differently; per test, setting, layer and pooling, lazily."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import (
    Analysis,
    Option,
    Summary,
    front,
    integer_columns,
    tidy_frame,
)
from emb.analyses._decorators import own_descriptions, public_in_package, run_by_record
from emb.analyses.stats import robustness as rb
from emb.analyses.wordsets import (
    ROLES,
    TEST_CHOICE,
    TestSpec,
    cell_summary,
    declared_cell,
    per_test,
    test_attrs,
    test_table,
    top_rows,
    vectors,
)
from emb.options import DDOF

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "seed_sensitivity"]

#: Quantiles of d over the random subsets, as variables.
_QUANTILES = {"subset_low": 0.05, "subset_median": 0.5, "subset_high": 0.95}


def _subset_summary(emb: np.ndarray, **kwargs: Any) -> np.ndarray:
    """The 5 %, 50 % and 95 % quantiles and the SD of d over the random subsets, (..., 4)."""
    d = rb.subset_effect_sizes(emb, **kwargs)
    with np.errstate(invalid="ignore"):
        q = np.nanquantile(d, list(_QUANTILES.values()), axis=-1) if np.isfinite(d).any() else \
            np.full((3,) + d.shape[:-1], np.nan)
        return np.concatenate([np.moveaxis(q, 0, -1), np.nanstd(d, axis=-1, ddof=1)[..., None]], -1)


@public_in_package
@own_descriptions
@run_by_record()
def seed_sensitivity(
    ds: xr.Dataset,
    *,
    tests: Any = None,
    x: Sequence[str] | None = None,
    y: Sequence[str] | None = None,
    a: Sequence[str] | None = None,
    b: Sequence[str] | None = None,
    settings: str | Sequence[str] | None = None,
    include_excluded: bool = False,
    ddof: int = 1,
    fraction: float = 0.8,
    n_subsets: int = 1000,
    seed: int = 0,
    min_words: int = 8,
    word_set: Literal["common", "per-setting"] = "common",
) -> xr.Dataset:
    """How much each WEAT effect size rests on its words (Antoniak & Mimno 2021), lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        A store suite group with WEAT-style tests, or any suite with ``x`` … ``b`` or a test file.
    tests, x, y, a, b, settings, include_excluded
        Which tests, as for :func:`emb.analyses.weat`.
    ddof : int, default 1
        Delta degrees of freedom of d's standard deviation.
    fraction : float, default 0.8
        Share of each word set (X, Y, A, B) kept in a random subset.
    n_subsets : int, default 1000
        Random subsets (the same, seeded, in every cell).
    seed : int, default 0
    min_words : int, default 8
        A test with a set of fewer words is flagged ``small_n``.
    word_set : {"common", "per-setting"}, default "common"
        Across the stores of one run, the words every store has, or each store's own (within a
        store every cell uses the test's words); see ``docs/rules/same-words.md``.

    Returns
    -------
    xarray.Dataset
        Dims ``(test, setting, layer, pooling)``: ``effect_size`` (WEAT's d), ``jackknife_se``
        (the jackknife standard error of d over all its words), ``subset_low``,
        ``subset_median``, ``subset_high`` (5 %, 50 %, 95 % of d over the random subsets) and
        ``subset_sd``; over ``member`` (each test's words, X, Y, A, B in order; coordinates
        ``member_word`` and ``member_role`` per test): ``d_without`` (d with that word left
        out) and ``influence`` (``d − d_without``: how much the word adds to d). Per test
        ``n_x`` … ``n_b`` and ``small_n``.

    Notes
    -----
    A word whose influence is large against the jackknife SE carries the effect on its own: a
    result that rests on one or two words is a finding about those words, not the categories.

    Examples
    --------
    >>> from emb.analyses import ANALYSES
    >>> ds, options = ANALYSES["seed-sensitivity"].example()
    >>> res = seed_sensitivity(ds, **options).compute()
    >>> cell = dict(test="WEAT1", setting="bleached", pooling="last", layer=3)
    >>> bool(res.subset_low.sel(cell) < res.effect_size.sel(cell) < res.subset_high.sel(cell))
    True
    """

    def build(data: xr.Dataset, test: TestSpec, chosen: list[str], n: dict[str, int]) -> xr.Dataset:
        emb = vectors(data, test, chosen)
        sizes = {"n_x": n["X"], "n_y": n["Y"], "n_a": n["A"]}
        d, d_without = xr.apply_ufunc(
            rb.leave_one_out, emb, input_core_dims=[["item", "feature"]],
            output_core_dims=[[], ["member"]], kwargs={**sizes, "ddof": int(ddof)},
            dask="parallelized", output_dtypes=[np.float64, np.float64],
            dask_gufunc_kwargs={"output_sizes": {"member": sum(n.values())}})
        spread = xr.apply_ufunc(
            _subset_summary, emb, input_core_dims=[["item", "feature"]], output_core_dims=[["stat"]],
            kwargs={**sizes, "fraction": float(fraction), "n_subsets": int(n_subsets),
                    "seed": int(seed), "ddof": int(ddof)},
            dask="parallelized", output_dtypes=[np.float64], dask_gufunc_kwargs={"output_sizes": {"stat": 4}})
        out = xr.Dataset({"effect_size": d, "d_without": d_without})
        for k, name in enumerate((*_QUANTILES, "subset_sd")):
            out[name] = spread.isel(stat=k, drop=True)
        words = [w for role in ROLES for w in test.words[role]]
        out["member_word"] = ("member", words)
        out["member_role"] = ("member", [role for role in ROLES for _ in test.words[role]])
        return out.assign_coords(member=np.arange(len(words)))

    res, test_list, dropped = per_test(ds, build, tests=tests, x=x, y=y, a=a, b=b, settings=settings,
                                       include_excluded=include_excluded, min_words=min_words)
    res = res.transpose("test", "setting", "layer", "pooling", ...)
    for name in ("member_word", "member_role"):
        values = np.asarray(res[name].values, dtype=object)
        res[name] = (res[name].dims, np.where([[isinstance(v, str) for v in row] for row in values],
                                              values, "").astype(str))
    res = res.set_coords(["member_word", "member_role"])
    res["influence"] = res["effect_size"] - res["d_without"]
    # fewer than 2 words that can be left out (sets of 2 targets, 1 attribute): no SE, no warning
    n_members = res["d_without"].notnull().sum("member")
    n_members = n_members.where(n_members >= 2)
    deviation = res["d_without"] - res["d_without"].mean("member")
    res["jackknife_se"] = np.sqrt((n_members - 1) / n_members * (deviation**2).sum("member"))
    for name, text in {
        "effect_size": "WEAT effect size d (all words)",
        "jackknife_se": "jackknife standard error of d (each word left out in turn)",
        "subset_low": f"5% quantile of d over {int(n_subsets)} random {fraction:g} subsets of each set",
        "subset_median": "median of d over the random subsets",
        "subset_high": "95% quantile of d over the random subsets",
        "subset_sd": "standard deviation of d over the random subsets",
        "d_without": "d with this word left out",
        "influence": "d minus d without this word (its contribution to d)",
    }.items():
        res[name].attrs["long_name"] = text
    res.attrs = res.attrs | test_attrs("seed-sensitivity", test_list, dropped, ds, ddof=int(ddof),
                           fraction=float(fraction), n_subsets=int(n_subsets), seed=int(seed),
                           include_excluded=bool(include_excluded), word_set=word_set, min_words=int(min_words))
    return res


# -- tables, summary, figures ----------------------------------------------------------------------
def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``seed_sensitivity``: one row per (model, test, setting, pooling, layer) with d, its
    jackknife SE, the subsets' range and the most influential word; ``seed_sensitivity_words``:
    one row per word and cell with its d without it, influence and rank (1 = largest |influence|)."""
    main = tidy_frame(result, ["effect_size", "jackknife_se", *_QUANTILES, "subset_sd"],
                      drop_all_nan=["effect_size"])
    words = result[["d_without", "influence"]].reset_coords(["member_word", "member_role"])
    words = words.to_dataframe().reset_index().rename(columns={"member_word": "word",
                                                               "member_role": "role"})
    words = words[words["word"] != ""].dropna(subset=["influence"])
    keys = [k for k in ("model", "test", "setting", "pooling", "layer") if k in words]
    words["rank"] = words.groupby(keys)["influence"].transform(
        lambda v: v.abs().rank(ascending=False, method="first"))
    top = words[words["rank"] == 1][[*keys, "word", "role", "influence"]].rename(
        columns={"word": "top_word", "role": "top_word_role", "influence": "top_influence"})
    main = main.merge(top, how="left", on=keys)
    main = test_table(main, result, first=("effect_size", "jackknife_se", *_QUANTILES))
    words = integer_columns(words.drop(columns=["member"]), ("layer", "rank"))
    words = front(words.sort_values([*keys, "rank"]), (*keys, "rank", "role", "word", "influence",
                                                       "d_without"))
    return {"seed_sensitivity": main,
            "seed_sensitivity_words": words.reset_index(drop=True)}


def _summary(result: xr.Dataset, tables: Mapping[str, pd.DataFrame]) -> Summary:
    frame = tables["seed_sensitivity"].dropna(subset=["effect_size"])
    if frame.empty:
        return Summary(title="Seed sensitivity: no effect sizes (every cell is NaN)")
    cell, setting, pooling = declared_cell(frame)
    rows = []
    for row, top in top_rows(cell):
        row.update({"layer": int(top["layer"]), "d": round(float(top["effect_size"]), 3),
                    "jackknife SE": round(float(top["jackknife_se"]), 3),
                    "subsets 5-95%": f"[{top['subset_low']:.2f}, {top['subset_high']:.2f}]",
                    "most influential": f"{top['top_word']} ({top['top_word_role']}, "
                                        f"{top['top_influence']:+.2f})" if pd.notna(top["top_influence"])
                    else "none: no word can be left out (X, Y need 3 words, A, B 2)"})
        rows.append(row)
    notes = [
        "Influence: d minus d with the word left out; the jackknife SE is over all words of "
        "the test, each left out in turn.",
        f"Subsets: d over {result.attrs['n_subsets']} random subsets keeping "
        f"{100 * float(result.attrs['fraction']):.3g}% of each of X, Y, A and B (rounded; at least "
        f"2 words of X and of Y and 1 of A and of B; seeded, seed {result.attrs['seed']}); a wide "
        "range means the effect depends on which words stand for each category.",
    ]
    return cell_summary("Seed sensitivity (leave-one-word-out and random subsets of d)", result,
                        setting=setting, pooling=pooling, rows=rows, notes=notes)


def _figures(result: xr.Dataset, *, relative_depth: bool = False) -> dict[str, Figure]:
    from emb.analyses import _figure as fg
    from emb.analyses.robustness._figures import influence_bars, subset_bands

    return fg.per_pooling(result, "effect_size", lambda pooling: {
        "influence": influence_bars(result, pooling=pooling),
        "subsets": subset_bands(result, pooling=pooling, relative_depth=relative_depth)})


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    from emb.analyses._examples import lazy, weat_dataset

    return lazy(weat_dataset()), {"n_subsets": 200}


ANALYSIS = Analysis(
    name="seed-sensitivity",
    function=seed_sensitivity,
    suite="weat",
    description="seed sensitivity of WEAT's d: each word's influence (jackknife) and d over "
                "random subsets of the word sets",
    options=(
        *TEST_CHOICE,
        DDOF,
        Option(name="fraction", type="float", low=0, high=1, low_open=True,
               help="share of each word set kept in a random subset"),
        Option(name="n_subsets", type="int", low=2, high=100_000, help="random subsets of the word sets"),
    ),
    tables=_tables,
    figures=_figures,
    summary=_summary,
    word_tables=("seed_sensitivity_words",),
    outputs={
        **{v: ("test", "setting", "layer", "pooling") for v in (
            "effect_size", "jackknife_se", *_QUANTILES, "subset_sd")},
        **{v: ("test", "setting", "layer", "pooling", "member") for v in ("d_without", "influence")},
        **{v: ("test",) for v in ("n_x", "n_y", "n_a", "n_b", "small_n")},
    },
    example=_example,
)
