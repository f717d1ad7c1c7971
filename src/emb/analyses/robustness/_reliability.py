"""Reliability of WEAT-style results: the split-half reliability (Spearman–Brown) of each test's
target-word scores over its attribute words, and how far WEAT's d, RIPA, MAC and ECT agree across
the tests, per setting, layer and pooling, lazily."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import (
    Analysis,
    Option,
    Summary,
    integer_columns,
    tidy_frame,
)
from emb.analyses._decorators import own_descriptions, public_in_package, run_by_record
from emb.analyses.stats import peers as pk
from emb.analyses.stats import robustness as rb
from emb.analyses.wordsets import (
    TEST_CHOICE,
    TestSpec,
    cell_summary,
    declared_cell,
    per_test,
    target_pairs,
    test_attrs,
    test_table,
    top_rows,
    vectors,
)
from emb.options import DDOF

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "reliability"]

#: The metrics compared, each as a bias magnitude (larger: more bias), and how.
METRICS = {"abs_d": "|WEAT d|", "abs_ripa": "|RIPA|", "ect_bias": "1 − ECT", "mac": "MAC"}


def _kernel(emb: np.ndarray, *, n_x: int, n_y: int, n_a: int, pairs: np.ndarray, n_splits: int,
            seed: int, ddof: int) -> np.ndarray:
    """(r_half, Spearman–Brown, |d|, |RIPA|, 1 − ECT, MAC), (..., 6)."""
    r_half, sb = rb.split_half(emb, n_x, n_y, n_a, n_splits=n_splits, seed=seed)
    d, _ = rb.leave_one_out(emb, n_x, n_y, n_a, ddof=ddof)
    ripa = pk.ripa(emb, pairs, n_x, n_y, n_a) if len(pairs) else np.full(d.shape, np.nan)
    return np.stack([r_half, sb, np.abs(d), np.abs(ripa), 1 - pk.ect(emb, n_x, n_y, n_a),
                     pk.mac(emb, n_x, n_y, n_a)], axis=-1)


_VARS = ("split_half_r", "reliability", *METRICS)


def _agreement(values: np.ndarray) -> np.ndarray:
    """Spearman r between every two metrics over the tests: ``values (test, metric)`` →
    (n_pairs,), NaN with fewer than 3 tests having both."""
    from scipy.stats import spearmanr

    out = []
    for i, j in itertools.combinations(range(values.shape[-1]), 2):
        ok = np.isfinite(values[:, i]) & np.isfinite(values[:, j])
        if ok.sum() < 3 or np.ptp(values[ok, i]) == 0 or np.ptp(values[ok, j]) == 0:
            out.append(np.nan)
        else:
            out.append(float(spearmanr(values[ok, i], values[ok, j]).statistic))
    return np.asarray(out)


@public_in_package
@own_descriptions
@run_by_record()
def reliability(
    ds: xr.Dataset,
    *,
    tests: Any = None,
    x: Sequence[str] | None = None,
    y: Sequence[str] | None = None,
    a: Sequence[str] | None = None,
    b: Sequence[str] | None = None,
    settings: str | Sequence[str] | None = None,
    include_excluded: bool = False,
    n_splits: int = 200,
    ddof: int = 1,
    seed: int = 0,
    min_words: int = 8,
    word_set: Literal["common", "per-setting"] = "common",
) -> xr.Dataset:
    """Split-half reliability of each WEAT-style test, and the agreement of WEAT's d, RIPA, MAC
    and ECT across the tests, lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        A store suite group with WEAT-style tests.
    tests, x, y, a, b, settings, include_excluded
        Which tests, as for :func:`emb.analyses.weat`.
    n_splits : int, default 200
        Random halvings of the attribute sets (the same, seeded, in every cell).
    ddof, seed, min_words
        As for :func:`emb.analyses.weat`.
    word_set : {"common", "per-setting"}, default "common"
        Across the stores of one run, the words every store has, or each store's own (within a
        store every cell uses the test's words); see ``docs/rules/same-words.md``.

    Returns
    -------
    xarray.Dataset
        Dims ``(test, setting, layer, pooling)``: ``split_half_r`` (the mean Pearson r, over the
        target words X ∪ Y, of their scores ``s(w, A, B)`` on two random halves of A and of B)
        and ``reliability`` (its Spearman–Brown step-up ``2r / (1 + r)``); the metrics as bias
        magnitudes ``abs_d`` (|WEAT d|), ``abs_ripa``, ``ect_bias`` (1 − ECT) and ``mac``.
        Dims ``(setting, layer, pooling, pair)``: ``agreement``, Spearman's r over the tests
        between two metrics, and ``n_tests``. Per test ``n_x`` … ``n_b``, ``small_n``.

    Notes
    -----
    A reliability near 1 says the target words would be ranked alike by other attribute words of
    the same kind; near 0, the words' scores are noise about the attributes. Agreement needs at
    least 3 tests; MAC measures how close targets are to the attributes overall, not a difference
    between X and Y, and often disagrees with the others by design.

    Examples
    --------
    >>> from emb.analyses import ANALYSES
    >>> ds, options = ANALYSES["reliability"].example()
    >>> res = reliability(ds, **options).compute()
    >>> float(res.reliability.sel(test="WEAT1", setting="bleached", pooling="last", layer=3)) > 0.5
    True
    """

    def build(data: xr.Dataset, test: TestSpec, chosen: list[str], n: dict[str, int]) -> xr.Dataset:
        out = xr.apply_ufunc(
            _kernel, vectors(data, test, chosen), input_core_dims=[["item", "feature"]],
            output_core_dims=[["stat"]],
            kwargs={"n_x": n["X"], "n_y": n["Y"], "n_a": n["A"], "pairs": target_pairs(test, "default"),
                    "n_splits": int(n_splits), "seed": int(seed), "ddof": int(ddof)},
            dask="parallelized", output_dtypes=[np.float64],
            dask_gufunc_kwargs={"output_sizes": {"stat": len(_VARS)}})
        return xr.Dataset({name: out.isel(stat=k, drop=True) for k, name in enumerate(_VARS)})

    res, test_list, dropped = per_test(ds, build, tests=tests, x=x, y=y, a=a, b=b, settings=settings,
                                       include_excluded=include_excluded, min_words=min_words)
    res = res.transpose("test", "setting", "layer", "pooling", ...)
    stacked = xr.concat([res[m] for m in METRICS], dim="metric")
    pairs = [f"{p}~{q}" for p, q in itertools.combinations(METRICS, 2)]
    res["agreement"] = xr.apply_ufunc(
        _agreement, stacked.chunk({"test": -1, "metric": -1}) if stacked.chunks else stacked,
        input_core_dims=[["test", "metric"]], output_core_dims=[["pair"]], vectorize=True,
        dask="parallelized", output_dtypes=[np.float64],
        dask_gufunc_kwargs={"output_sizes": {"pair": len(pairs)}}).assign_coords(pair=pairs)
    res["n_tests"] = res["abs_d"].notnull().sum("test")
    for name, text in {
        "split_half_r": f"mean split-half r of the target words' scores ({int(n_splits)} halvings of A and B)",
        "reliability": "Spearman-Brown split-half reliability, 2r / (1 + r)",
        "abs_d": "|WEAT effect size d|",
        "abs_ripa": "|RIPA_A − RIPA_B| (pairs of the definition)",
        "ect_bias": "1 - ECT (Spearman r of X's and Y's attribute similarities)",
        "mac": "MAC (mean cosine distance of targets to attributes)",
        "agreement": "Spearman r over the tests between two metrics",
        "n_tests": "tests with a value in this cell",
    }.items():
        res[name].attrs["long_name"] = text
    res.attrs = res.attrs | test_attrs("reliability", test_list, dropped, ds, n_splits=int(n_splits),
                           ddof=int(ddof), seed=int(seed), include_excluded=bool(include_excluded), word_set=word_set,
                           min_words=int(min_words))
    return res


# -- tables, summary, figures ----------------------------------------------------------------------
def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``reliability``: one row per (model, test, setting, pooling, layer); ``metric_agreement``:
    one row per (model, setting, pooling, layer, pair of metrics) with the tests behind it."""
    main = tidy_frame(result, list(_VARS), drop_all_nan=["abs_d"])
    main = test_table(main, result, first=_VARS)
    agree = tidy_frame(result, ["agreement"])
    counts = result["n_tests"].reset_coords(drop=True).to_dataframe().reset_index()
    agree = integer_columns(agree.merge(counts, how="left"), ("layer", "n_tests"))
    return {"reliability": main, "metric_agreement": agree}


def _summary(result: xr.Dataset, tables: Mapping[str, pd.DataFrame]) -> Summary:
    frame = tables["reliability"].dropna(subset=["abs_d"])
    if frame.empty:
        return Summary(title="Reliability: no values (every cell is NaN)")
    cell, setting, pooling = declared_cell(frame)
    rows = []
    for row, top in top_rows(cell):
        row.update({"layer": int(top["layer"]), "split-half r": round(float(top["split_half_r"]), 3),
                    "reliability (S-B)": round(float(top["reliability"]), 3),
                    "|d|": round(float(top["abs_d"]), 3)})
        rows.append(row)
    agree = tables["metric_agreement"]
    own = cell[[c for c in ("model", "pooling") if c in cell and c in agree]].drop_duplicates()
    here = agree[agree["setting"] == setting].merge(own, how="inner")  # each model's pooling
    notes = [f"Split-half: A and B halved at random {result.attrs['n_splits']} times (seeded); "
             "each target word scored on both halves; r over X ∪ Y, stepped up by Spearman-Brown."]
    if not here.empty:
        top_layer = here["layer"].max()
        at = here[here["layer"] == top_layer]
        text = "; ".join(f"{p} {r:.2f}" for p, r in zip(at["pair"], at["agreement"], strict=True)
                         if pd.notna(r))
        n = int(at["n_tests"].max()) if at["n_tests"].notna().any() else 0
        notes.append(f"Agreement of the metrics over {n} tests at layer {top_layer} (Spearman r of "
                     f"|d|, |RIPA|, 1 - ECT, MAC): {text or 'needs at least 3 tests'}.")
    return cell_summary("Reliability (split-half, Spearman-Brown) and agreement across metrics",
                        result, setting=setting, pooling=pooling, rows=rows, notes=notes)


def _figures(result: xr.Dataset, *, relative_depth: bool = False) -> dict[str, Figure]:
    from emb.analyses import _figure as fg
    from emb.analyses.robustness._figures import agreement_by_layer, reliability_by_layer

    return fg.per_pooling(result, "reliability", lambda pooling: {
        "split_half": reliability_by_layer(result, pooling=pooling, relative_depth=relative_depth),
        "agreement": agreement_by_layer(result, pooling=pooling, relative_depth=relative_depth)})


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    """The ``weat`` example suite with two more tests made of its sets (agreement needs three)."""
    from emb.analyses._examples import lazy, weat_dataset

    def role(test: str, r: str) -> dict[str, Any]:
        return {"labels": {"test": test, "role": r}}

    mixed = {"tests": {
        "flowers-weapons": {"X": role("WEAT1", "X"), "Y": role("WEAT2", "Y"),
                            "A": role("WEAT1", "A"), "B": role("WEAT1", "B")},
        "instruments-insects": {"X": role("WEAT2", "X"), "Y": role("WEAT1", "Y"),
                                "A": role("WEAT1", "A"), "B": role("WEAT1", "B")},
    }}
    return lazy(weat_dataset()), {"n_splits": 50, "tests": ["WEAT1", "WEAT2", mixed]}


ANALYSIS = Analysis(
    name="reliability",
    function=reliability,
    suite="weat",
    description="split-half reliability (Spearman-Brown) of each test, and the agreement of "
                "WEAT d, RIPA, MAC and ECT across tests, per layer",
    options=(
        *TEST_CHOICE,
        Option(name="n_splits", type="int", low=1, high=100_000, help="random halvings of A and B"),
        DDOF,
    ),
    tables=_tables,
    figures=_figures,
    summary=_summary,
    outputs={
        **{v: ("test", "setting", "layer", "pooling") for v in _VARS},
        "agreement": ("setting", "layer", "pooling", "pair"),
        "n_tests": ("setting", "layer", "pooling"),
        **{v: ("test",) for v in ("n_x", "n_y", "n_a", "n_b", "small_n")},
    },
    example=_example,
)
