"""The peer toolkits' metrics over WEAT-style tests: ``mac``, ``ect``, ``ripa`` and ``rnsb``, per
test, setting, layer and pooling, lazily.

Each applies its statistic (:mod:`emb.analyses.stats.peers`) to the (X, Y, A, B) tests a ``weat``
run would use (the suite's own tests, test files, or ``--x/--y/--a/--b``), as WEFE applies its
metric templates to such a query: MAC over targets {X, Y} and attributes {A, B}; ECT with targets X,
Y and one attribute set A ∪ B; RIPA with the relation vectors of the pairs (X[i], Y[i]), over A and
over B (each WEFE's RIPA of a query with that one attribute set) and, as the test's value, their
difference; RNSB with targets X, Y, the classifier trained on A against B (the negative class).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from pathlib import Path
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
    with_set_sizes,
)
from emb.analyses._decorators import own_descriptions, public_in_package, run_by_record
from emb.analyses._select import provenance_attrs
from emb.analyses.stats import peers as kernels
from emb.analyses.wordsets import (
    TEST_OPTIONS,
    TestSpec,
    cell_summary,
    declared_cell,
    given_pairs,
    pair_words,
    per_test,
    target_pairs,
    top_rows,
    vectors,
)
from emb.options import MIN_WORDS, SEED_32, WORD_SET

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ECT", "MAC", "RIPA", "RNSB", "ect", "mac", "ripa", "rnsb"]

#: Metric → (long name, what its value means) as tables, summaries and figures say them.
_NAMES = {
    "mac": ("MAC (mean average cosine distance)",
            "mean over target words and attribute sets of the mean cosine distance; WEFE's MAC"),
    "ect": ("ECT (embedding coherence test)",
            "Spearman r over A ∪ B of the cosines with mean X and mean Y; 1 = no bias"),
    "ripa": ("RIPA (relational inner product association)",
             "RIPA over A minus RIPA over B, each the mean over its words of <w, b> for the unit "
             "relation vectors b of the pairs (X[i], Y[i]); > 0: A lies towards X more than B does"),
    "rnsb": ("RNSB (relative negative sentiment bias)",
             "KL divergence from uniform of the targets' normalised P(B); 0 = no bias"),
}


def _run(
    metric: str,
    ds: xr.Dataset,
    *,
    tests: Any,
    x: Sequence[str] | None,
    y: Sequence[str] | None,
    a: Sequence[str] | None,
    b: Sequence[str] | None,
    settings: str | Sequence[str] | None,
    include_excluded: bool,
    min_words: int,
    method: str = "default",
    seed: int = 0,
    word_set: str = "common",
    pairs: Any = None,
) -> xr.Dataset:
    """One metric over every resolved test: ``metric(test, setting, layer, pooling)`` with the
    per-test set sizes and flags."""
    if "embedding" not in ds.variables:
        from emb.errors import AnalysisError

        raise AnalysisError("the Dataset has no 'embedding' variable: pass a store suite group")

    given = _read_pairs(pairs) if metric == "ripa" and pairs is not None else None
    used: dict[str, list[list[str]]] = {}
    left_out: dict[str, list[str]] = {}

    def build(data: xr.Dataset, test: TestSpec, chosen: list[str], n: dict[str, int]) -> xr.Dataset:
        if metric == "ripa":
            return _ripa_of(vectors(data, test, chosen), test, n, method, given, used, left_out)
        kwargs: dict[str, Any] = {"n_x": n["X"], "n_y": n["Y"]}
        if metric == "rnsb":
            kwargs.update(n_a=n["A"], seed=int(seed), holdout=method == "reference")
            function: Callable[..., np.ndarray] = kernels.rnsb
        else:
            kwargs["n_a"] = n["A"]
            function = kernels.mac if metric == "mac" else kernels.ect
        value = xr.apply_ufunc(function, vectors(data, test, chosen), input_core_dims=[["item", "feature"]],
                               kwargs=kwargs, dask="parallelized", output_dtypes=[np.float64])
        return xr.Dataset({metric: value})

    out, test_list, dropped = per_test(ds, build, tests=tests, x=x, y=y, a=a, b=b, settings=settings,
                                       include_excluded=include_excluded, min_words=min_words)
    if given is not None:
        _check_pair_tests(given, [t.name for t in test_list], pairs)
    if "n_pairs" in out:  # RIPA: too few pairs is a small set too
        out["small_n"] = out["small_n"] | (out["n_pairs"] < min_words)
        out["small_n"].attrs["long_name"] = f"a word set has fewer than {int(min_words)} words"
        for name, long_name in (("ripa_a", "RIPA over A"), ("ripa_b", "RIPA over B")):
            out[name].attrs["long_name"] = long_name
        out["n_pairs"].attrs["long_name"] = "pairs (X[i], Y[i]) of the relation vectors"
    out = out.transpose("test", "setting", "layer", "pooling", ...)
    out[metric].attrs["long_name"] = _NAMES[metric][0]
    out[metric].attrs["description"] = _NAMES[metric][1]
    out.attrs = out.attrs | {  # keeps per_test's "contexts"
        "analysis": metric,
        "method": method,
        "include_excluded": str(bool(include_excluded)).lower(),
        "min_words": int(min_words),
        "word_set": word_set,
        "dropped": json.dumps(dropped, ensure_ascii=False),
        "words": json.dumps({t.name: t.words for t in test_list}, ensure_ascii=False),
        **({"seed": int(seed)} if metric == "rnsb" else {}),
        **(_pairing_attrs(method, pairs, used, left_out) if metric == "ripa" else {}),
        **provenance_attrs(ds),
    }
    return out


def _read_pairs(path: Any) -> list[Any]:
    from emb._pair_files import read_target_pairs
    from emb.errors import AnalysisError

    return read_target_pairs(path, error=AnalysisError, what="--pairs file")


def _check_pair_tests(given: Sequence[Any], names: Sequence[str], path: Any) -> None:
    """A pairs file names only tests of the run, and leaves the test out only for a run of one."""
    from emb.errors import AnalysisError

    unknown = sorted({p.test for p in given if p.test is not None and p.test not in names})
    if unknown:
        raise AnalysisError(f"--pairs file {path} names the test(s) {unknown}, which this run does "
                            f"not have (its tests: {list(names)}); fix the test column")
    if len(names) > 1 and any(p.test is None for p in given):
        raise AnalysisError(f"--pairs file {path} has no test column but the run has "
                            f"{len(names)} tests ({list(names)}); add a column test naming each "
                            "pair's test, or choose one test with --test")


def _ripa_of(v: xr.DataArray, test: TestSpec, n: dict[str, int], method: str, given: Any,
             used: dict[str, list[list[str]]], left_out: dict[str, list[str]]) -> xr.Dataset:
    """RIPA over A, over B and their difference for one test (lazy), with its pairs recorded."""
    if given is not None:
        pairs, left = given_pairs(test, given)
        if left:
            left_out[test.name] = left
    else:
        pairs = target_pairs(test, method)
    used[test.name] = pair_words(test, pairs)
    sets = xr.apply_ufunc(kernels.ripa_sets, v, input_core_dims=[["item", "feature"]],
                          output_core_dims=[["attribute_set"]],
                          kwargs={"pairs": pairs, "n_x": n["X"], "n_y": n["Y"], "n_a": n["A"]},
                          dask="parallelized", output_dtypes=[np.float64],
                          dask_gufunc_kwargs={"output_sizes": {"attribute_set": 2}})
    out = xr.Dataset({"ripa_a": sets.isel(attribute_set=0, drop=True),
                      "ripa_b": sets.isel(attribute_set=1, drop=True)})
    out["ripa"] = out["ripa_a"] - out["ripa_b"]
    out["n_pairs"] = len(pairs)
    return out


def _pairing_attrs(method: str, path: Any, used: Mapping[str, Any],
                   left_out: Mapping[str, Any]) -> dict[str, str]:
    if path is not None:
        pairing = f"the pairs file {Path(path).name}"
    elif method == "reference":
        pairing = "the words found, by position, up to the shorter set (WEFE 1.0.1)"
    else:
        pairing = "position in the test's definition (a pair dropped when a word is missing)"
    return {"pairing": pairing, "pairs": json.dumps(used, ensure_ascii=False),
            "pairs_left_out": json.dumps(left_out, ensure_ascii=False)}


_TESTS_DOC = """    ds : xarray.Dataset
        A store suite group with WEAT-style tests (``weat``, ``ceat`` …), or any suite with ``x``
        … ``b`` or a test file.
    tests : str, path, mapping or a sequence of them, optional
        Tests of the suite by name (default: all) and/or test files, as for :func:`emb.analyses.weat`.
    x, y, a, b : sequence of str, optional
        Your own target (X, Y) and attribute (A, B) words instead of ``tests``.
    settings : str or sequence of str, optional
        Contextual settings (default: every setting present).
    include_excluded : bool, default False
        Keep the target names Caliskan et al. dropped (WEAT3–5).
    min_words : int, default 8
        A test with fewer words than this in a set is flagged ``small_n``.
    word_set : {"common", "per-setting"}, default "common"
        Across the stores of one run, the words every store has, or each store's own (within a
        store every cell uses the test's words); see ``docs/rules/same-words.md``."""


@public_in_package
@own_descriptions
@run_by_record()
def mac(ds: xr.Dataset, *, tests: Any = None, x: Sequence[str] | None = None,
        y: Sequence[str] | None = None, a: Sequence[str] | None = None,
        b: Sequence[str] | None = None, settings: str | Sequence[str] | None = None,
        include_excluded: bool = False, min_words: int = 8,
        word_set: Literal["common", "per-setting"] = "common") -> xr.Dataset:
    """Mean average cosine distance (Manzini et al. 2019) of each WEAT-style test, lazily.

    Parameters
    ----------
    {tests}

    Returns
    -------
    xarray.Dataset
        ``mac(test, setting, layer, pooling)``: the mean over t ∈ X ∪ Y and S ∈ {{A, B}} of
        ``mean_{{s ∈ S}} (1 − cos(t, s))`` (WEFE 1.0.1's ``MAC``; 1 − MAC is the mean cosine);
        per test ``n_x`` … ``n_b`` and ``small_n``.

    Notes
    -----
    MAC is not a bias score by itself: it is the mean distance of every target to every attribute
    set, so read it against the layer's anisotropy baseline, and compare X with Y by WEAT's d.

    Examples
    --------
    >>> from emb.analyses import ANALYSES
    >>> ds, options = ANALYSES["mac"].example()
    >>> float(mac(ds, **options).mac.sel(test="WEAT1", setting="bleached", pooling="last",
    ...                                   layer=0)) > 0
    True
    """
    return _run("mac", ds, tests=tests, x=x, y=y, a=a, b=b, settings=settings,
                include_excluded=include_excluded, min_words=min_words, word_set=word_set)


@public_in_package
@own_descriptions
@run_by_record()
def ect(ds: xr.Dataset, *, tests: Any = None, x: Sequence[str] | None = None,
        y: Sequence[str] | None = None, a: Sequence[str] | None = None,
        b: Sequence[str] | None = None, settings: str | Sequence[str] | None = None,
        include_excluded: bool = False, min_words: int = 8,
        word_set: Literal["common", "per-setting"] = "common") -> xr.Dataset:
    """Embedding coherence test (Dev & Phillips 2019) of each WEAT-style test, lazily.

    Parameters
    ----------
    {tests}

    Returns
    -------
    xarray.Dataset
        ``ect(test, setting, layer, pooling)``: Spearman's r, over the attribute words A ∪ B, of
        their cosines with the mean vector of X and with that of Y (1: X and Y relate to the
        attributes alike, no bias; lower: they differ); per test ``n_x`` … ``n_b``, ``small_n``.

    Examples
    --------
    >>> from emb.analyses import ANALYSES
    >>> ds, options = ANALYSES["ect"].example()
    >>> res = ect(ds, **options).ect.sel(setting="bleached", pooling="last", layer=3)
    >>> bool(res.sel(test="WEAT1") < res.sel(test="WEAT2"))
    True
    """
    return _run("ect", ds, tests=tests, x=x, y=y, a=a, b=b, settings=settings,
                include_excluded=include_excluded, min_words=min_words, word_set=word_set)


@public_in_package
@own_descriptions
@run_by_record()
def ripa(ds: xr.Dataset, *, tests: Any = None, x: Sequence[str] | None = None,
         y: Sequence[str] | None = None, a: Sequence[str] | None = None,
         b: Sequence[str] | None = None, settings: str | Sequence[str] | None = None,
         include_excluded: bool = False, min_words: int = 8,
         word_set: Literal["common", "per-setting"] = "common",
         method: Literal["default", "reference"] = "default",
         pairs: str | PathLike[str] | None = None) -> xr.Dataset:
    """Relational inner product association (Ethayarajh et al. 2019) of each WEAT-style test.

    Parameters
    ----------
    {tests}
    method : {{"default", "reference"}}, default "default"
        How X and Y are paired: by position in the test's definition, a pair dropped when either
        of its words is not in the store; ``reference`` pairs the words *found* by position, up
        to the shorter set, as WEFE 1.0.1 does (a missing word shifts every later pair).
    pairs : path, optional
        The pairs themselves: a CSV with the columns ``x``, ``y`` and, for a run of several
        tests, ``test`` (each word in at most one pair of a test). A pair whose word is not among
        the test's words in the store is left out and listed (``pairs_left_out``).

    Returns
    -------
    xarray.Dataset
        ``ripa_a(test, setting, layer, pooling)``: the mean over w ∈ A of the mean over the pairs
        of ``<w, (x_i − y_i) / ‖x_i − y_i‖>`` (WEFE's RIPA with the pairs and A alone);
        ``ripa_b`` the same over B; ``ripa = ripa_a − ripa_b``, the test's value (positive: A lies
        towards X more than B does); per test ``n_pairs``, ``n_x`` … ``n_b``, ``small_n`` (also
        when fewer than ``min_words`` pairs). The attributes ``pairing`` (how X and Y were
        paired), ``pairs`` (each test's pairs, JSON) and ``pairs_left_out``.

    Notes
    -----
    RIPA relates attribute words to the relation vectors of *pairs*; for sets that are not pairs
    by nature (flowers and insects) the pairing is a choice, and re-pairing changes the value:
    give the pairs a study means with ``pairs``. Averaged over A ∪ B pooled, as a one-attribute-set
    metric would be, the two sets' associations cancel (WEAT1 on MiniLM: +0.23 over pleasant,
    −0.26 over unpleasant, −0.02 pooled); the contrast keeps the direction. RIPA uses the raw word
    vector (not normalised): on a contextual model it scales with the layer's vector norms, so
    compare RIPA across tests of one layer, not across layers.

    Examples
    --------
    >>> from emb.analyses import ANALYSES
    >>> ds, options = ANALYSES["ripa"].example()
    >>> int(ripa(ds, **options).n_pairs.sel(test="WEAT1"))
    8
    """
    return _run("ripa", ds, tests=tests, x=x, y=y, a=a, b=b, settings=settings,
                include_excluded=include_excluded, min_words=min_words, method=method,
                word_set=word_set, pairs=pairs)


@public_in_package
@own_descriptions
@run_by_record()
def rnsb(ds: xr.Dataset, *, tests: Any = None, x: Sequence[str] | None = None,
         y: Sequence[str] | None = None, a: Sequence[str] | None = None,
         b: Sequence[str] | None = None, settings: str | Sequence[str] | None = None,
         include_excluded: bool = False, min_words: int = 8,
         word_set: Literal["common", "per-setting"] = "common",
         method: Literal["default", "reference"] = "default", seed: int = 0) -> xr.Dataset:
    """Relative negative sentiment bias (Sweeney & Najafian 2019) of each WEAT-style test.

    Parameters
    ----------
    {tests}
    method : {{"default", "reference"}}, default "default"
        The classifier (scikit-learn ``LogisticRegression``, liblinear, as WEFE) is trained on
        every attribute word; ``reference`` trains it as WEFE 1.0.1 does by default, on a
        shuffled, stratified 80 % of them (``random_state=seed``), which makes the value depend
        on which fifth was held out for an accuracy nobody reads.
    seed : int, default 0
        The classifier's (and the holdout's) ``random_state``.

    Returns
    -------
    xarray.Dataset
        ``rnsb(test, setting, layer, pooling)``: the Kullback–Leibler divergence of the target
        words' normalised probabilities of the negative class B from the uniform distribution
        (0: every target word equally negative); per test ``n_x`` … ``n_b``, ``small_n``.

    Notes
    -----
    The negative class is B, the test's second attribute set (unpleasant in WEAT1–8): WEFE's code
    labels its second attribute set −1 and reads that class's probability (its docstring says
    the first; the code is what its numbers are).

    Examples
    --------
    >>> from emb.analyses import ANALYSES
    >>> ds, options = ANALYSES["rnsb"].example()
    >>> float(rnsb(ds, **options).rnsb.sel(test="WEAT1", setting="bleached", pooling="last",
    ...                                     layer=0)) >= 0
    True
    """
    return _run("rnsb", ds, tests=tests, x=x, y=y, a=a, b=b, settings=settings,
                include_excluded=include_excluded, min_words=min_words, method=method, seed=seed,
                word_set=word_set)


for _f in (mac, ect, ripa, rnsb):
    _f.__doc__ = (_f.__doc__ or "").replace("{tests}", _TESTS_DOC.strip()).replace(
        "{{", "{").replace("}}", "}")


# -- tables, summary, figures ----------------------------------------------------------------------
def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``<metric>``: one row per (model, test, setting, pooling, layer), the word-set sizes and
    the flag last."""
    metric = str(result.attrs["analysis"])
    values = [metric, "ripa_a", "ripa_b"] if metric == "ripa" else [metric]
    frame = tidy_frame(result, values, drop_all_nan=[metric])
    groups = [c for c in ("x_group", "y_group", "a_group", "b_group") if c in result.coords]
    if groups:
        extra = xr.Dataset({g: (result[g].dims, np.asarray(result[g].values)) for g in groups},
                           coords={d: result[d] for d in result[groups[0]].dims})
        frame = frame.merge(extra.to_dataframe().reset_index(), how="left")
    frame = integer_columns(frame, ("layer",))
    frame = front(frame, ("model", "test", "x_group", "y_group", "a_group", "b_group", "setting",
                          "pooling", "layer", *values))
    sizes = ("n_pairs", "n_x", "n_y", "n_a", "n_b", "small_n")
    return {metric: with_set_sizes(frame, result, variables=sizes)}


def _summary(result: xr.Dataset, tables: Mapping[str, pd.DataFrame]) -> Summary:
    """Declared cell: the top layer, the ``bleached`` setting (else ``alone`` …), the ``last``
    pooling (else the first)."""
    metric = str(result.attrs["analysis"])
    frame = tables[metric].dropna(subset=[metric])
    long_name, meaning = _NAMES[metric]
    if frame.empty:
        return Summary(title=f"{long_name}: no values (every cell is NaN)")
    # each model at the declared pooling, or its own without it (a static store: static)
    cell, setting, pooling = declared_cell(frame, metric)
    rows = []
    for row, top in top_rows(cell):
        if "x_group" in top:
            row["groups"] = f"{top['x_group']} vs {top['y_group']} / {top['a_group']} vs {top['b_group']}"
        row["layer"] = int(top["layer"])
        if metric == "ripa":
            row["ripa_a"], row["ripa_b"] = round(float(top["ripa_a"]), 4), round(float(top["ripa_b"]), 4)
        row[metric] = round(float(top[metric]), 4)
        row["n (X+Y | A+B)"] = f"{top['n_x']}+{top['n_y']} | {top['n_a']}+{top['n_b']}"
        if metric == "ripa":
            row["pairs"] = int(top["n_pairs"])
        rows.append(row)
    notes = [f"{metric}: {meaning}."]
    if metric == "ripa":
        notes += _pairing_notes(result)
    if result.attrs.get("method") == "reference":
        notes.append({"ripa": "Pairs as WEFE 1.0.1 makes them (the found words by position).",
                      "rnsb": "Classifier trained as WEFE 1.0.1's default (80 % holdout).",
                      }.get(metric, "WEFE 1.0.1's computation (the same as the default)."))
    if metric == "rnsb":
        notes.append(f"Seeded (random_state {result.attrs.get('seed')}); B is the negative class.")
    notes.append("No p-value: these metrics have no test of their own; use weat's permutation p.")
    return cell_summary(long_name, result, setting=setting, pooling=pooling, rows=rows, notes=notes)


def _pairing_notes(result: xr.Dataset) -> list[str]:
    """How X and Y were paired, the pairs a file gave that were left out, and the tests without
    a pair (no RIPA: they have no row)."""
    notes = [f"Pairs (X[i], Y[i]) by {result.attrs.get('pairing', 'position')}; for sets that are not "
             "pairs by nature the pairing is a choice that changes the value (--pairs FILE "
             "states it; the pairs used are in the netCDF's attribute 'pairs')."]
    left_out = json.loads(str(result.attrs.get("pairs_left_out", "{}")))
    for test, pairs in left_out.items():
        notes.append(f"{test}: {len(pairs)} pair(s) of the pairs file left out: "
                     + "; ".join(pairs[:5]) + (" …" if len(pairs) > 5 else ""))
    if "n_pairs" in result:
        n_pairs = result["n_pairs"]
        fewest = n_pairs.min([d for d in n_pairs.dims if d != "test"]) if n_pairs.ndim > 1 else n_pairs
        empty = [str(t) for t, k in zip(np.atleast_1d(fewest["test"].values),
                                        np.atleast_1d(fewest.values), strict=True) if int(k) == 0]
        for test in empty:
            notes.append(f"{test}: no RIPA (no row): no pair (X[i], Y[i]) has both words in the "
                         "store" + (" among the pairs file's" if left_out.get(test) else ""))
    return notes


def _figures(result: xr.Dataset, *, relative_depth: bool = False) -> dict[str, Figure]:
    from emb.analyses.peers._figures import metric_by_layer

    return {"by_layer": metric_by_layer(result, relative_depth=relative_depth)}


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    """The ``weat`` example suite (WEAT1 with a planted effect, WEAT2 without)."""
    from emb.analyses._examples import lazy, weat_dataset

    return lazy(weat_dataset()), {}


_COMMON = (
    *TEST_OPTIONS,
    Option(name="include_excluded", type="bool", help="keep the names Caliskan et al. dropped (WEAT3-5)"),
    MIN_WORDS,
    WORD_SET,
)


def _record(function: Callable[..., xr.Dataset], description: str, *options: Option,
            **kwargs: Any) -> Analysis:
    name = function.__name__
    return Analysis(
        name=name, function=function, suite="weat", description=description,
        options=_COMMON + options, tables=_tables, figures=_figures, summary=_summary,
        outputs={name: ("test", "setting", "layer", "pooling"),
                 **{v: ("test",) for v in ("n_x", "n_y", "n_a", "n_b", "small_n")},
                 **({"n_pairs": ("test",), "ripa_a": ("test", "setting", "layer", "pooling"),
                     "ripa_b": ("test", "setting", "layer", "pooling")} if name == "ripa" else {})},
        example=_example, **kwargs)


MAC = _record(mac, "MAC: mean average cosine distance of the targets to the attribute sets (WEFE)")
ECT = _record(ect, "ECT: embedding coherence test, Spearman r of X's and Y's attribute similarities")
RIPA = _record(ripa, "RIPA: relational inner product association over the pairs (X[i], Y[i]), "
               "A against B",
               Option(name="pairs", type="path", metavar="FILE",
                      help="the (X, Y) pairs: a CSV with the columns x, y (and test, for several "
                           "tests); default: by position in each test's definition"))
RNSB = _record(rnsb, "RNSB: KL divergence of a sentiment classifier's negative probabilities",
               seed=SEED_32)
