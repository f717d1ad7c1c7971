"""ML-EAT: a WEAT's d with what it is made of (levels 1–3 and the nine patterns), per test,
setting, layer and pooling, lazily; statistics in :mod:`emb.analyses.stats.multilevel`."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import (
    MAX_PERMUTATIONS,
    Analysis,
    Option,
    Summary,
    front,
    integer_columns,
    mc_floor,
    tidy_frame,
    with_set_sizes,
)
from emb.analyses._decorators import own_descriptions, public_in_package, run_by_record
from emb.analyses._select import provenance_attrs
from emb.analyses.stats import multilevel as ml
from emb.analyses.wordsets import (
    TEST_OPTIONS,
    TestSpec,
    cell_summary,
    declared_cell,
    p_text,
    per_test,
    top_rows,
    vectors,
)
from emb.options import ALTERNATIVE, DDOF, MIN_WORDS, N_PERMUTATIONS, WORD_SET

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "ml_eat"]


@public_in_package
@own_descriptions
@run_by_record()
def ml_eat(
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
    alternative: Literal["two-sided", "greater", "less"] = "two-sided",
    alpha: float = 0.05,
    n_permutations: int = 10_000,
    exact_limit: int = 1_000_000,
    seed: int = 0,
    min_words: int = 8,
    word_set: Literal["common", "per-setting"] = "common",
) -> xr.Dataset:
    """The multilevel embedding association test (Wolfe, Hiniker & Howe 2024) of each WEAT-style
    test, lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        A store suite group with WEAT-style tests (``weat``, ``ceat`` …), or any suite with
        ``x`` … ``b`` or a test file.
    tests, x, y, a, b, settings, include_excluded
        Which tests, as for :func:`emb.analyses.weat`.
    ddof : int, default 1
        Delta degrees of freedom of the effect sizes' standard deviations (1, as ML-EAT's code).
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        Alternative of every level's permutation test (the patterns need both directions).
    alpha : float, default 0.05
        Significance level of the level-2 outcomes that make the pattern.
    n_permutations, exact_limit, seed
        The permutation tests: exact when ``C(n, k) ≤ exact_limit``, else seeded Monte Carlo.
    min_words : int, default 8
        A test with a set of fewer words is flagged ``small_n``.
    word_set : {"common", "per-setting"}, default "common"
        Across the stores of one run, the words every store has, or each store's own (within a
        store every cell uses the test's words); see ``docs/rules/same-words.md``.

    Returns
    -------
    xarray.Dataset
        Dims ``(test, setting, layer, pooling)`` and:

        - level 1: ``effect_size`` (WEAT's d) and ``p`` (re-splits of X ∪ Y);
        - level 2: ``target_effect_size`` and ``target_p`` over ``target`` (X, Y): each target set's
          single-target EAT, A's words against B's by their mean cosine with the set's words
          (re-splits of A ∪ B);
        - level 3: ``mean_cosine`` and ``std_cosine`` over ``block`` (X-A, X-B, Y-A, Y-B);
        - ``pattern`` (1–9; the ``pattern_name`` attribute of the variable maps codes to names);

        per test ``n_permutations`` (level 1) and ``target_n_permutations`` (level 2; 0 = exact
        enumeration), ``n_x`` … ``n_b``, ``small_n``.

    Notes
    -----
    Read level 1 through level 2: pattern 3 ("X→A, Y→B") is the opposed associations a WEAT is
    usually read as; pattern 1 ("both with A") gives a positive d too, from a difference in degree.

    Examples
    --------
    >>> from emb.analyses import ANALYSES
    >>> ds, options = ANALYSES["ml-eat"].example()
    >>> res = ml_eat(ds, **options).compute()
    >>> res.target_effect_size.sel(test="WEAT1", setting="bleached", pooling="last",
    ...                            layer=3).round(2).values.tolist()
    [1.78, -1.74]
    """

    def build(data: xr.Dataset, test: TestSpec, chosen: list[str], n: dict[str, int]) -> xr.Dataset:
        out = xr.apply_ufunc(
            ml.multilevel, vectors(data, test, chosen), input_core_dims=[["item", "feature"]],
            output_core_dims=[[], [], ["target"], ["target"], ["block"], ["block"], []],
            kwargs={"n_x": n["X"], "n_y": n["Y"], "n_a": n["A"], "ddof": int(ddof),
                    "alternative": alternative, "n_permutations": int(n_permutations),
                    "exact_limit": int(exact_limit), "seed": int(seed), "alpha": float(alpha)},
            dask="parallelized", output_dtypes=[np.float64] * 6 + [np.int64],
            dask_gufunc_kwargs={"output_sizes": {"target": 2, "block": 4}})
        names = ("effect_size", "p", "target_effect_size", "target_p", "mean_cosine",
                 "std_cosine", "pattern")
        part = xr.Dataset(dict(zip(names, out, strict=True)))
        for name, (total, k) in (("n_permutations", (n["X"] + n["Y"], n["X"])),
                                 ("target_n_permutations", (n["A"] + n["B"], n["A"]))):
            part[name] = 0 if math.comb(total, k) <= exact_limit else int(n_permutations)
        return part.assign_coords(target=["X", "Y"], block=list(ml.BLOCKS))

    res, test_list, dropped = per_test(ds, build, tests=tests, x=x, y=y, a=a, b=b, settings=settings,
                                       include_excluded=include_excluded, min_words=min_words)
    res = res.transpose("test", "setting", "layer", "pooling", ...)
    res["effect_size"].attrs["long_name"] = "level 1: WEAT effect size d (X vs Y)"
    res["p"].attrs["long_name"] = f"level 1: permutation p ({alternative}; re-splits of X ∪ Y)"
    res["target_effect_size"].attrs["long_name"] = "level 2: single-target EAT effect size (A vs B)"
    res["target_p"].attrs["long_name"] = f"level 2: permutation p ({alternative}; re-splits of A ∪ B)"
    res["mean_cosine"].attrs["long_name"] = "level 3: mean cosine of the target-attribute block"
    res["std_cosine"].attrs["long_name"] = "level 3: standard deviation of the block's cosines"
    res["pattern"].attrs.update(long_name=f"pattern of the level-2 outcomes at alpha {alpha:g}",
                                pattern_name=json.dumps(ml.PATTERNS, ensure_ascii=False))
    res["n_permutations"].attrs["long_name"] = "level 1: random splits (0 = exact enumeration)"
    res["target_n_permutations"].attrs["long_name"] = "level 2: random splits (0 = exact enumeration)"
    res["small_n"].attrs["long_name"] = f"a word set has fewer than {int(min_words)} words"
    res.attrs = res.attrs | {  # keeps per_test's "contexts"
        "analysis": "ml-eat", "ddof": int(ddof), "alternative": alternative, "alpha": float(alpha),
        "n_permutations": int(n_permutations), "exact_limit": int(exact_limit), "seed": int(seed),
        "include_excluded": str(bool(include_excluded)).lower(), "min_words": int(min_words),
        "word_set": word_set,
        "dropped": json.dumps(dropped, ensure_ascii=False),
        "words": json.dumps({t.name: t.words for t in test_list}, ensure_ascii=False),
        **provenance_attrs(ds),
    }
    return res


# -- tables, summary, figures ----------------------------------------------------------------------
def _groups(result: xr.Dataset) -> pd.DataFrame:
    cols = [c for c in ("x_group", "y_group", "a_group", "b_group") if c in result.coords]
    extra = xr.Dataset({c: (result[c].dims, np.asarray(result[c].values)) for c in cols},
                       coords={d: result[d] for d in result[cols[0]].dims}) if cols else None
    return extra.to_dataframe().reset_index() if extra is not None else pd.DataFrame()


def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``ml_eat``: one row per (model, test, setting, pooling, layer) with the three levels side
    by side (level 2 and 3 as columns per target and block) and the pattern's name."""
    frame = tidy_frame(result, ["effect_size", "p", "pattern"], drop_all_nan=["effect_size"])
    for var, dim, stem in (("target_effect_size", "target", "d"), ("target_p", "target", "p"),
                           ("mean_cosine", "block", "mean_cos"), ("std_cosine", "block", "std_cos")):
        wide = result[var].reset_coords(drop=True).to_dataframe().reset_index()
        wide = wide.pivot_table(index=[d for d in result[var].dims if d != dim], columns=dim,
                                values=var, dropna=False).reset_index()
        wide.columns = [f"{stem}_{c}".replace("-", "_") if c in ("X", "Y", *ml.BLOCKS) else c
                        for c in wide.columns]
        frame = frame.merge(wide, how="left")
    if "x_group" in result.coords:
        frame = frame.merge(_groups(result), how="left")
    counts = result[["n_permutations", "target_n_permutations"]].reset_coords(drop=True)
    frame = frame.merge(counts.to_dataframe().reset_index(), how="left")
    for p_col, n_col in (("p", "n_permutations"), ("p_X", "target_n_permutations"),
                         ("p_Y", "target_n_permutations")):
        frame.insert(int(frame.columns.get_loc(p_col)) + 1, f"{p_col}_at_floor",
                     mc_floor(frame[p_col], frame[n_col].astype(float)))
    frame["pattern_name"] = frame["pattern"].map(lambda c: ml.PATTERNS.get(int(c), "")
                                                 if pd.notna(c) else "")
    frame = integer_columns(frame, ("layer", "pattern", "n_permutations", "target_n_permutations"))
    frame = front(frame, ("model", "test", "x_group", "y_group", "a_group", "b_group", "setting",
                          "pooling", "layer", "effect_size", "p", "p_at_floor", "d_X", "p_X",
                          "p_X_at_floor", "d_Y", "p_Y", "p_Y_at_floor", "pattern", "pattern_name"))
    return {"ml_eat": with_set_sizes(frame, result)}


def _summary(result: xr.Dataset, tables: Mapping[str, pd.DataFrame]) -> Summary:
    frame = tables["ml_eat"].dropna(subset=["effect_size"])
    if frame.empty:
        return Summary(title="ML-EAT: no effect sizes (every cell is NaN)")
    # each model at the declared pooling, or its own without it (a static store: static)
    cell, setting, pooling = declared_cell(frame, "effect_size")
    rows = []
    for row, top in top_rows(cell):
        row.update({"layer": int(top["layer"]), "d": round(float(top["effect_size"]), 3),
                    "p": p_text(top, "p", "n_permutations"),
                    "d_X": round(float(top["d_X"]), 3), "p_X": p_text(top, "p_X", "target_n_permutations"),
                    "d_Y": round(float(top["d_Y"]), 3), "p_Y": p_text(top, "p_Y", "target_n_permutations"),
                    "pattern": top["pattern_name"]})
        rows.append(row)
    counts = cell.groupby("pattern_name").size().sort_values(ascending=False)
    notes = [
        "Level 1: WEAT's d (X vs Y); level 2: each target set's single-target EAT (A vs B); "
        "level 3 (table): the mean and SD of each target-attribute block of cosines.",
        f"Pattern: the level-2 outcomes at alpha {float(result.attrs['alpha']):g} "
        f"({result.attrs['alternative']} permutation p, not corrected; exact where the table's "
        "n_permutations is 0, else seeded Monte Carlo, at its floor shown as p ≤ 1/(N+1)).",
        "Patterns over every layer of this cell: " + "; ".join(
            f"{name} {int(c)}" for name, c in counts.items()) + ".",
    ]
    return cell_summary("ML-EAT (multilevel embedding association test)", result,
                        setting=setting, pooling=pooling, rows=rows, notes=notes)


def _figures(result: xr.Dataset, *, relative_depth: bool = False) -> dict[str, Figure]:
    from emb.analyses import _figure as fg
    from emb.analyses.multilevel._figures import eat_map, levels_by_layer

    return fg.per_pooling(result, "effect_size", lambda pooling: {
        "eat_map": eat_map(result, pooling=pooling),
        "levels": levels_by_layer(result, pooling=pooling, relative_depth=relative_depth)})


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    from emb.analyses._examples import lazy, weat_dataset

    return lazy(weat_dataset()), {"n_permutations": 500, "exact_limit": 1000}


ANALYSIS = Analysis(
    name="ml-eat",
    function=ml_eat,
    suite="weat",
    description="ML-EAT: WEAT's d with each target's single-target EAT, the target-attribute "
                "cosines and the nine patterns",
    options=(
        *TEST_OPTIONS,
        Option(name="include_excluded", type="bool", help="keep the names Caliskan et al. dropped (WEAT3-5)"),
        DDOF,
        ALTERNATIVE.but(help="alternative of every level's permutation test (default two-sided)"),
        Option(name="alpha", type="float", low=0, high=1, low_open=True, high_open=True,
               help="significance level of the level-2 outcomes that make the pattern"),
        N_PERMUTATIONS,
        Option(name="exact_limit", type="int", high=MAX_PERMUTATIONS,
               help="enumerate every split up to this many"),
        MIN_WORDS,
        WORD_SET,
    ),
    tables=_tables,
    figures=_figures,
    summary=_summary,
    outputs={
        "effect_size": ("test", "setting", "layer", "pooling"),
        "p": ("test", "setting", "layer", "pooling"),
        "pattern": ("test", "setting", "layer", "pooling"),
        "target_effect_size": ("test", "setting", "layer", "pooling", "target"),
        "target_p": ("test", "setting", "layer", "pooling", "target"),
        "mean_cosine": ("test", "setting", "layer", "pooling", "block"),
        "std_cosine": ("test", "setting", "layer", "pooling", "block"),
        **{v: ("test",) for v in ("n_x", "n_y", "n_a", "n_b", "small_n", "n_permutations",
                                  "target_n_permutations")},
    },
    example=_example,
)
