"""IBD and EIBD: which attribute words a model ties to an intersectional group, lazily.

For every attribute word ``w`` and pair of name sets ``(G₁, G₂)`` the association score is
``s(w, G₁, G₂) = (mean_{g∈G₁} cos(w,g) − mean_{g∈G₂} cos(w,g)) / std_{x∈G₁∪G₂} cos(w,x)`` (ddof 1,
WEFAT's statistic). For a target group ``C`` (e.g. African-American females):

- IBD flags ``w`` when ``s(w, C, C')`` exceeds ``t`` for some other intersectional group ``C'``;
- EIBD keeps an IBD word only when it is not tied to one of ``C``'s constituent categories: the
  comparisons of its race with every other race and of its gender with every other gender. Rule
  ``any`` (the paper's prose, the default) removes ``w`` when *any* constituent score exceeds ``t``;
  ``all`` (the authors' code) only when *all* of them do.

The threshold ``t`` is chosen on the ROC curve against the validation words (Ghavami & Peplau 2013):
the largest ``TPR − FPR`` over every distinct score with ``t ≥ 0`` (exact; or over a grid), ties to
the most true positives. EIBD reuses the IBD threshold (the paper's definition) unless
``eibd_threshold="own"`` (what the authors' code did). See METHODS.md, "IBD and EIBD".
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses import stats
from emb.analyses._analysis import (
    Analysis,
    Option,
)
from emb.analyses._decorators import own_descriptions, public_in_package, run_by_record
from emb.analyses._select import select_words
from emb.analyses.ibd._design import METHODS, Design, design, readable_names, title_of
from emb.analyses.ibd._export import (
    DETECTOR,
    declared_cell,
    extra_files,
    models,
    one_model,
    top_layer,
)
from emb.analyses.ibd._summary import summary
from emb.analyses.ibd._tables import tables
from emb.analyses.stats import detection
from emb.errors import AnalysisError
from emb.files.documents import show
from emb.files.outputs import refuse_inside_store
from emb.options import MIN_WORDS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "ibd"]

#: The authors' threshold grid: np.arange(-200, 200, 5) / 100.
CODE_GRID = "-2:2:0.05"
#: Most thresholds of a grid (``--thresholds``): the exact ROC tries every distinct score of the
#: few hundred attribute words; a grid 100x finer than the authors' 80 values is 8,000.
MAX_THRESHOLDS = 100_000


# -- options -------------------------------------------------------------------------------------
def _parse_thresholds(value: str | Sequence[float] | None) -> np.ndarray | None:
    """None = the exact ROC; else a sorted grid (from ``START:STOP:STEP`` or a list)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "exact"):
        return None
    too_many = ""
    try:
        if isinstance(value, str) and ":" in value:
            start, stop, step = (float(v) for v in value.split(":"))
            if not step > 0 or not stop > start:
                raise ValueError
            n = (stop - start) / step
            if not n <= MAX_THRESHOLDS:  # inf too
                too_many = f"{n:,.0f}" if math.isfinite(n) else "too many"
                grid = None
            else:
                grid = np.round(start + step * np.arange(math.ceil(n - 1e-9)), 10)
        else:
            parts = value.split(",") if isinstance(value, str) else list(value)
            grid = np.array([float(v) for v in parts], dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise AnalysisError(
            f"thresholds must be 'exact', START:STOP:STEP (e.g. {CODE_GRID}, stop excluded) or "
            f"a comma-separated list of numbers; got {show(value, 80)}"
        ) from None
    if grid is None:
        raise AnalysisError(
            f"the threshold grid {show(value, 80)} has {too_many} values, more than the "
            f"{MAX_THRESHOLDS:,} a grid may have (the exact ROC, the default, already tries every "
            "distinct score): give a larger STEP, or 'exact'"
        )
    grid = np.unique(grid)
    if grid.size == 0 or not np.isfinite(grid).all():
        raise AnalysisError(f"thresholds must be finite numbers; got {show(value, 80)}")
    if grid.size > MAX_THRESHOLDS:
        raise AnalysisError(f"the threshold list has {grid.size:,} values, more than the "
                            f"{MAX_THRESHOLDS:,} a grid may have; give fewer, or 'exact'")
    if not (grid >= 0).any():
        raise AnalysisError(
            f"the threshold grid {show(value, 80)} has no value >= 0; IBD's threshold is a "
            "positive effect size"
        )
    return grid


def _parse_export(path: str | os.PathLike[str] | None) -> str | None:
    if path is None:
        return None
    full = os.path.abspath(os.fspath(path))
    if os.path.isdir(full):
        raise AnalysisError(f"export_tests {os.fspath(path)!r} is a directory; give a file name")
    if not os.path.isdir(os.path.dirname(full)):
        raise AnalysisError(
            f"the directory of export_tests {os.fspath(path)!r} does not exist; create it first "
            "(the CLI also writes the tests as ibd_tests.json in --out)"
        )
    refuse_inside_store(full, what="export_tests", error=AnalysisError,
                        fix="give an export path outside the store")
    return full


# -- kernels ---------------------------------------------------------------------------------------
def _score_kernel(
    attr: np.ndarray, names: np.ndarray, *, first: tuple[np.ndarray, ...], second: tuple[np.ndarray, ...]
) -> np.ndarray:
    """attr (..., A, F), names (..., N, F) -> association scores (..., A, P)."""
    with stats.single_threaded_blas():
        cos = np.matmul(stats.unit(attr), np.swapaxes(stats.unit(names), -1, -2))  # (..., A, N)
        out = np.empty((*cos.shape[:-1], len(first)), dtype=np.float64)
        for p, (a, b) in enumerate(zip(first, second, strict=True)):
            out[..., p] = stats.sc_weat_effect_size(cos[..., a], cos[..., b], ddof=1)
    return out


def _roc_kernel(
    low: np.ndarray, high: np.ndarray, label: np.ndarray, *, grid: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(..., A) intervals and labels -> candidate thresholds, TP, FP (..., K) and the chosen t."""
    label = np.broadcast_to(label, low.shape)
    if grid is None:
        cand = detection.interval_candidates(low, high)
    else:
        cand = np.broadcast_to(grid, (*low.shape[:-1], grid.size))
    tp, fp = detection.interval_confusion(low, high, label, cand)
    n_pos = label.sum(-1)
    n_neg = label.shape[-1] - n_pos
    index = detection.choose_threshold(cand, tp, fp, n_pos, n_neg)
    chosen = np.take_along_axis(cand, np.maximum(index, 0)[..., None], axis=-1)[..., 0]
    chosen = np.where(index >= 0, chosen, np.nan)
    return np.ascontiguousarray(cand, dtype=np.float64), tp, fp, chosen


# -- the analysis ----------------------------------------------------------------------------------
@public_in_package
@own_descriptions
@run_by_record()
def ibd(
    ds: xr.Dataset,
    *,
    groups: str | Sequence[str] | None = None,
    contrast: str | None = "european_male",
    settings: str | Sequence[str] | None = None,
    rule: Literal["any", "all"] | None = None,
    eibd_threshold: Literal["ibd", "own"] | None = None,
    thresholds: str | Sequence[float] | None = None,
    export_tests: str | os.PathLike[str] | None = None,
    method: Literal["default", "reference"] = "default",
    min_words: int = 8,
) -> xr.Dataset:
    """Intersectional (IBD) and emergent intersectional (EIBD) bias detection, lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        An ``ibd`` suite group (``emb extract --suite ibd``) of a static or contextual store.
    groups : str or sequence of str, optional
        Target groups (default: ``african_female`` and ``mexican_female``, the paper's). A group
        with no name in the store is left out with a warning.
    contrast : str or None, default "european_male"
        A group also detected (role ``contrast``), whose words become the B set of the exported
        CEAT tests (the paper's I1–I4 contrast the targets with European-American males).
    settings : str or sequence of str, optional
        Settings (default: ``alone`` and ``bleached``); names and attributes always come from the
        same setting.
    rule : {"any", "all"}, optional
        EIBD: drop an IBD word when any (default) / all (``reference``) constituent scores exceed t.
    eibd_threshold : {"ibd", "own"}, optional
        EIBD's threshold: IBD's (default, the paper's definition) or its own ROC choice
        (``reference``, the authors' code).
    thresholds : str or sequence of float, optional
        ``"exact"`` (default): every distinct score; ``START:STOP:STEP`` (stop excluded; the
        code's grid is ``-2:2:0.05``, the ``reference`` default) or a list. Only ``t ≥ 0`` is
        chosen; the ROC keeps every candidate.
    export_tests : path, optional
        Also write the detected words as CEAT/WEAT tests to this file (the layout of
        ``ceat_weat_groups.json``), beside ``ibd_tests.json`` in the output directory.
    method : {"default", "reference"}
        ``reference`` reproduces the authors' code: rule ``all``, EIBD's own threshold, the
        code's grid, and their Latina IBD comparisons (african_male left out of IBD; their EIBD
        reads all five, attribute ``eibd_comparisons``).
    min_words : int, default 8
        A name set with fewer names with vectors than this is flagged ``small_n``, and so is a
        target group whose scores compare such a set (``small_n_compared``; the table's
        ``small_n``); the summary names them. A group with no name at all is left out with a
        warning.

    Returns
    -------
    xarray.Dataset
        - ``score(setting, attribute, pair, layer, pooling)``: association scores; ``pair`` has
          coordinates ``pair_first``, ``pair_second``, ``pair_kind`` (intersectional | race |
          gender);
        - ``ibd_score``, ``eibd_score``, ``constituent_score`` ``(setting, group, attribute,
          layer, pooling)``: the largest score against another intersectional group (IBD's and
          EIBD's comparisons: the same but for ``reference``'s Latina IBD); the constituent
          scores combined by the rule (max for ``any``, min for ``all``);
        - ``label(group, detector, attribute)``: the validation class (bool);
        - ``threshold, tp, fp, tn, fn, tpr, fpr, accuracy, balanced_accuracy, precision, recall,
          f1 (setting, group, detector, layer, pooling)`` at the chosen threshold;
        - ``chance_rate, majority_baseline, n_positive, n_negative (group, detector)``;
        - ``detected(setting, group, detector, attribute, layer, pooling)`` (bool);
        - ``roc_threshold, roc_tp, roc_fp, roc_tpr, roc_fpr (setting, group, detector, candidate,
          layer, pooling)``;
        - ``n_names, n_names_total (name_set)``: names with vectors / defined per group;
          ``small_n (name_set)``: fewer than ``min_words`` names with vectors;
          ``small_n_compared (group)``: a name set of the group's comparisons is small;
          ``n_attributes``, ``n_attributes_total``.

        ``detector`` is ``ibd`` | ``eibd`` (the tables' column ``method``); ``group`` has the
        coordinates ``group_role`` (target | contrast) and ``group_name`` (the readable name,
        "African-American females", from the groups file's ``_names``). Attributes: options,
        comparisons, coverage (missing names and attributes), store provenance.

    Raises
    ------
    AnalysisError
        Not an ``ibd`` suite, unknown groups or settings, bad options, nothing to compare.

    Notes
    -----
    ``s(w, A, B) = (mean_{a∈A} cos(w,a) − mean_{b∈B} cos(w,b)) / std_{x∈A∪B} cos(w,x)`` (ddof 1).
    IBD flags ``w`` at ``t`` iff ``max_{C'} s(w, C, C') > t``; EIBD iff that holds and the
    constituent scores (race vs each other race, gender vs the other) are ``≤ t`` (``any``) /
    not all ``> t`` (``all``). Accuracy = (TP + TN) / (P + N); the majority baseline N / (P + N)
    is what "no word is biased" scores: the paper's accuracies all lie below it.

    References
    ----------
    Guo, W. & Caliskan, A. (2021). Detecting Emergent Intersectional Biases: Contextualized
    Word Embeddings Contain a Distribution of Human-like Biases. AIES '21, §4.2–4.3, §5.1.

    Examples
    --------
    On a store, ``ds = emb.open_store("glove.zarr").dataset("ibd")``; here the record's example
    suite (six groups of names, attribute words with planted biases):

    >>> from emb.analyses import ANALYSES
    >>> ds, _ = ANALYSES["ibd"].example()
    >>> res = ibd(ds).compute()
    >>> res.accuracy.sel(detector="eibd", setting="bleached", pooling="last").round(2).to_pandas()
    layer              0     1     2
    group
    african_female  0.96  0.92  0.92
    mexican_female  0.96  0.88  1.00
    european_male   0.88  0.83  1.00
    """
    reference = method == "reference"
    rule = rule if rule is not None else ("all" if reference else "any")
    eibd_threshold = eibd_threshold if eibd_threshold is not None else ("own" if reference else "ibd")
    if thresholds is None and reference:
        thresholds = CODE_GRID
    grid = _parse_thresholds(thresholds)
    export = _parse_export(export_tests)
    if contrast is not None:  # a plain str (a numpy one would show as np.str_ in messages)
        contrast = None if str(contrast).lower() == "none" else str(contrast)
    if "embedding" not in ds.variables:
        raise AnalysisError("the Dataset has no 'embedding' variable: pass a store suite group")
    d = design(ds, groups=groups, contrast=contrast, settings=settings, reference=reference)
    out = _detection(_scores(ds, d), d, rule=rule, eibd_threshold=eibd_threshold, grid=grid)
    titles = readable_names(ds)
    out = out.assign_coords(group_role=("group", d.roles), candidate=np.arange(out.sizes["candidate"]),
                            group_name=("group", [title_of(titles, g) for g in d.targets]))
    out = _with_set_sizes(out, d, min_words=int(min_words))
    for var, text in _LONG_NAMES.items():
        out[var].attrs["long_name"] = text
    order = [x for x in ("setting", "group", DETECTOR, "attribute", "pair", "candidate", "layer",
                         "pooling") if x in out.dims]
    out = out.transpose(*order, ...)
    out.attrs = {
        "method": method,
        "rule": rule,
        "eibd_threshold": eibd_threshold,
        "thresholds": "exact" if grid is None else json.dumps(grid.tolist()),
        "contrast": contrast or "",
        **_design_attrs(d, titles),
        "export_tests": export or "",
        "min_words": int(min_words),
        "small_sets": json.dumps({x: len(v) for x, v in d.sets.items() if len(v) < int(min_words)},
                                 ensure_ascii=False),
    }
    return out


def _scores(ds: xr.Dataset, d: Design) -> xr.DataArray:
    """The association score of every attribute word with every pair of name sets compared
    (lazy): ``(setting, layer, pooling, attribute, pair)``, each pair labelled by its sets and kind."""
    # embeddings of the names present and the attribute words, per setting
    all_names = [n for g in d.groups if g in d.sets for n in d.sets[g]]
    index = {n: i for i, n in enumerate(all_names)}
    parts_a, parts_n = [], []
    for setting in d.settings:
        a = select_words(ds, d.attributes, setting=setting, role="attribute")
        n = select_words(ds, all_names, setting=setting, role="name")
        parts_a.append(a.embedding.reset_coords(drop=True).drop_vars("item", errors="ignore"))
        parts_n.append(n.embedding.reset_coords(drop=True).drop_vars("item", errors="ignore"))
    attr = xr.concat(parts_a, dim="setting").rename(item="attribute")
    names = xr.concat(parts_n, dim="setting").rename(item="name")
    attr = attr.assign_coords(setting=d.settings, attribute=d.attributes)
    names = names.assign_coords(setting=d.settings)
    if attr.chunks is not None:
        attr = attr.chunk({"attribute": -1, "feature": -1})
        names = names.chunk({"name": -1, "feature": -1})
    first = tuple(np.array([index[n] for n in d.sets[a]]) for a, _, _ in d.pairs)
    second = tuple(np.array([index[n] for n in d.sets[b]]) for _, b, _ in d.pairs)
    score = xr.apply_ufunc(
        _score_kernel, attr, names,
        input_core_dims=[["attribute", "feature"], ["name", "feature"]],
        output_core_dims=[["attribute", "pair"]],
        kwargs={"first": first, "second": second},
        dask="parallelized", output_dtypes=[np.float64],
        dask_gufunc_kwargs={"output_sizes": {"pair": len(d.pairs)}, "allow_rechunk": True},
    )
    return score.assign_coords(
        pair=[f"{a}|{b}" for a, b, _ in d.pairs],
        pair_first=("pair", [a for a, _, _ in d.pairs]),
        pair_second=("pair", [b for _, b, _ in d.pairs]),
        pair_kind=("pair", [k for _, _, k in d.pairs]),
    )


def _detection(score: xr.DataArray, d: Design, *, rule: str, eibd_threshold: str,
               grid: np.ndarray | None) -> xr.Dataset:
    """Per target group and detector (IBD, EIBD): the scores that bound a detected word, the
    threshold chosen on the ROC against the validation labels, the words detected and the
    classification metrics, and the ROC itself."""
    group_index = pd.Index(d.targets, name="group")
    plain = score.reset_coords(drop=True)
    high, high_eibd = (
        xr.concat([plain.isel(pair=pairs[g]).max("pair") for g in d.targets], dim=group_index)
        for pairs in (d.ibd_pairs, d.eibd_pairs)
    )
    combine = "max" if rule == "any" else "min"
    const = xr.concat([getattr(plain.isel(pair=d.constituent_pairs[g]), combine)("pair")
                       for g in d.targets], dim=group_index)
    method_index = pd.Index(list(METHODS), name=DETECTOR)
    low = xr.concat([xr.full_like(const, -np.inf), const], dim=method_index)
    high_m = xr.concat([high, high_eibd], dim=method_index)
    label = xr.DataArray(d.labels, dims=("group", DETECTOR, "attribute"),
                         coords={"group": d.targets, DETECTOR: list(METHODS),
                                 "attribute": d.attributes})
    n_pos = label.sum("attribute")
    n_neg = label.sizes["attribute"] - n_pos
    roc_t, roc_tp, roc_fp, chosen = xr.apply_ufunc(
        _roc_kernel, low, high_m, label,
        input_core_dims=[["attribute"]] * 3,
        output_core_dims=[["candidate"], ["candidate"], ["candidate"], []],
        kwargs={"grid": grid},
        dask="parallelized", output_dtypes=[np.float64, np.int64, np.int64, np.float64],
        dask_gufunc_kwargs={"output_sizes": {"candidate": (2 * len(d.attributes) + 2
                                                           if grid is None else grid.size)},
                            "allow_rechunk": True},
    )
    if eibd_threshold == "ibd":
        chosen = chosen.sel({DETECTOR: ["ibd", "ibd"]}).assign_coords({DETECTOR: list(METHODS)})
    detected = (low <= chosen) & (chosen < high_m)
    tp = (detected & label).sum("attribute")
    fp = (detected & ~label).sum("attribute")
    fn = n_pos - tp
    tn = n_neg - fp
    valid = chosen.notnull()
    metrics = stats.detection.classification_metrics(tp, fp, tn, fn)
    return xr.Dataset(
        {
            "score": score,
            "ibd_score": high,
            "eibd_score": high_eibd,
            "constituent_score": const,
            "label": label,
            "threshold": chosen,
            "tp": tp.where(valid), "fp": fp.where(valid), "tn": tn.where(valid), "fn": fn.where(valid),
            **{k: v.where(valid) for k, v in metrics.items()
               if k not in ("chance_rate", "majority_baseline")},
            "chance_rate": n_pos / (n_pos + n_neg),
            "majority_baseline": n_neg / (n_pos + n_neg),
            "n_positive": n_pos,
            "n_negative": n_neg,
            "detected": detected,
            "roc_threshold": roc_t,
            "roc_tp": roc_tp,
            "roc_fp": roc_fp,
            "roc_tpr": roc_tp / n_pos.where(n_pos > 0),
            "roc_fpr": roc_fp / n_neg.where(n_neg > 0),
        }
    )


def _with_set_sizes(out: xr.Dataset, d: Design, *, min_words: int) -> xr.Dataset:
    """``out`` with each name set's size (with vectors, and as defined), its small-set flag,
    each group's flag for a small set among its comparisons, and the attribute counts."""
    name_sets = list(d.total)
    out["n_names"] = ("name_set", [len(d.groups[g]) for g in name_sets])
    out["n_names_total"] = ("name_set", [len(d.total[g]) for g in name_sets])
    out["small_n"] = ("name_set", [len(d.groups[g]) < min_words for g in name_sets])
    out = out.assign_coords(name_set=name_sets)
    compared = {g: {g, *(x for i in (*d.ibd_pairs[g], *d.eibd_pairs[g], *d.constituent_pairs[g])
                         for x in d.pairs[i][:2])} for g in d.targets}
    out["small_n_compared"] = ("group", [any(len(d.sets[x]) < min_words for x in compared[g])
                                         for g in d.targets])
    out["n_attributes"] = len(d.attributes)
    out["n_attributes_total"] = len(d.attributes_total)
    return out


def _design_attrs(d: Design, titles: Mapping[str, str]) -> dict[str, str]:
    """The result's attributes that record the design: groups, settings, every comparison, the
    names and titles, what is missing from the store, the design's notes."""
    missing_names = {g: [n for n in d.total[g] if n not in d.groups[g]] for g in d.total}
    return {
        "groups": json.dumps(d.targets),
        "settings": json.dumps(d.settings),
        "ibd_comparisons": json.dumps({g: [d.pairs[i][1] for i in d.ibd_pairs[g]] for g in d.targets}),
        "eibd_comparisons": json.dumps(
            {g: [d.pairs[i][1] for i in d.eibd_pairs[g]] for g in d.targets}),
        "constituent_comparisons": json.dumps(
            {g: [f"{d.pairs[i][0]} vs {d.pairs[i][1]}" for i in d.constituent_pairs[g]]
             for g in d.targets}),
        "names": json.dumps(d.total, ensure_ascii=False),
        "titles": json.dumps({x: title_of(titles, x) for x in [*d.total, *d.sets]},
                             ensure_ascii=False),
        "missing_names": json.dumps({g: v for g, v in missing_names.items() if v}, ensure_ascii=False),
        "missing_attributes": json.dumps([w for w in d.attributes_total if w not in d.attributes],
                                         ensure_ascii=False),
        "notes": json.dumps(d.notes, ensure_ascii=False),
    }


_LONG_NAMES = {
    "small_n": "fewer names with vectors than min_words",
    "small_n_compared": "a name set of this group's comparisons has fewer names than min_words",
    "score": "association score s(w, first, second) (WEFAT effect size, ddof 1)",
    "ibd_score": "largest association score against another intersectional group",
    "constituent_score": "constituent (race, gender) association scores combined by the EIBD rule",
    "label": "validation class (Ghavami & Peplau 2013 lists)",
    "threshold": "chosen threshold t (max TPR - FPR, t >= 0, ties: most TP)",
    "accuracy": "(TP + TN) / (P + N)",
    "balanced_accuracy": "(TPR + TNR) / 2",
    "majority_baseline": "accuracy of flagging no word: N / (P + N)",
    "chance_rate": "share of positives P / (P + N)",
    "detected": "flagged at the chosen threshold",
    "roc_threshold": "candidate threshold (each stands for [t, next candidate))",
    "eibd_score": "largest association score against the EIBD comparisons",
    "tp": "group words (P) flagged at the chosen threshold",
    "fp": "other words (N) flagged at the chosen threshold",
    "tn": "other words (N) not flagged at the chosen threshold",
    "fn": "group words (P) not flagged at the chosen threshold",
    "tpr": "TP / P at the chosen threshold",
    "fpr": "FP / N at the chosen threshold",
    "precision": "TP / (TP + FP) at the chosen threshold",
    "recall": "TP / P at the chosen threshold",
    "f1": "2 TP / (2 TP + FP + FN) at the chosen threshold",
    "roc_tp": "group words (P) flagged at the candidate threshold",
    "roc_fp": "other words (N) flagged at the candidate threshold",
    "roc_tpr": "TP / P at the candidate threshold",
    "roc_fpr": "FP / N at the candidate threshold",
}


# -- figures ---------------------------------------------------------------------------------------
_METHOD_TITLE = {"ibd": "IBD (intersectional)", "eibd": "EIBD (emergent)"}


def _figures(result: xr.Dataset) -> dict[str, Figure]:
    from emb.analyses.ibd._figures import accuracy_by_layer, roc_curves

    figs: dict[str, Figure] = {}
    for model in models(result):
        res = one_model(result, model)
        cell = declared_cell(res)  # this model's own pooling (a static store: static)
        layer = top_layer(res, cell["setting"], cell["pooling"])
        if layer is None:
            continue
        suffix = "" if len(models(result)) == 1 else f"_{_slug(model)}"
        figs[f"roc{suffix}"] = roc_curves(res, setting=cell["setting"], pooling=cell["pooling"],
                                          layer=layer, model=model)
        t = res["threshold"].transpose("layer", ...)  # this model's own layers (static: one)
        if np.isfinite(np.asarray(t.values, dtype=np.float64)).reshape(t.sizes["layer"], -1).any(1).sum() > 1:
            figs[f"accuracy_by_layer{suffix}"] = accuracy_by_layer(
                res, setting=cell["setting"], pooling=cell["pooling"], model=model)
    return figs


def _slug(value: Any) -> str:
    from emb.analyses._analysis import slug

    return slug(value)


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    """A tiny ``ibd`` suite: six groups of names and 24 attribute words with planted biases."""
    from emb.analyses._examples import lazy
    from emb.analyses.ibd._example import ibd_dataset

    return lazy(ibd_dataset()), {}


ANALYSIS = Analysis(
    name="ibd",
    function=ibd,
    suite="ibd",
    description="IBD and EIBD: intersectional and emergent bias words, exact ROC threshold",
    options=(
        Option(name="groups", multiple=True,
               help="target group, e.g. african_female (default: african_female, mexican_female)"),
        Option(name="contrast", help="group whose detected words become the B sets of the "
                                     "exported tests ('none': no contrast)"),
        Option(name="settings", multiple=True, help="setting (default: alone and bleached)"),
        Option(name="rule", choices=("any", "all"),
               help="EIBD drops an IBD word tied to any / all constituent categories "
                    "(default any; all with --reference)"),
        Option(name="eibd_threshold", choices=("ibd", "own"),
               help="EIBD's threshold: IBD's, or its own ROC choice (default ibd; own with "
                    "--reference)"),
        Option(name="thresholds", metavar="exact|START:STOP:STEP|T1,T2,…",
               help="candidate thresholds (default exact; the code's -2:2:0.05 with --reference)"),
        Option(name="export_tests", metavar="FILE",
               help="also write the detected words as CEAT tests (ceat_weat_groups.json layout)"),
        MIN_WORDS.but(help="fewest names per name set before it is flagged small_n (8: the "
                           "smallest sets of Caliskan et al. 2017, WEAT6-10)"),
    ),
    tables=tables,
    figures=_figures,
    summary=summary,
    extra_files=extra_files,
    outputs={
        "score": ("setting", "attribute", "pair", "layer", "pooling"),
        "ibd_score": ("setting", "group", "attribute", "layer", "pooling"),
        "constituent_score": ("setting", "group", "attribute", "layer", "pooling"),
        "label": ("group", "detector", "attribute"),
        **{name: ("setting", "group", "detector", "layer", "pooling")
           for name in ("threshold", "tp", "fp", "tn", "fn", "tpr", "fpr", "accuracy",
                        "balanced_accuracy", "precision", "recall", "f1")},
        **{name: ("group", "detector")
           for name in ("chance_rate", "majority_baseline", "n_positive", "n_negative")},
        "detected": ("setting", "group", "detector", "attribute", "layer", "pooling"),
        **{f"roc_{name}": ("setting", "group", "detector", "candidate", "layer", "pooling")
           for name in ("threshold", "tp", "fp", "tpr", "fpr")},
        "n_names": ("name_set",),
        "n_names_total": ("name_set",),
        "small_n": ("name_set",),
        "small_n_compared": ("group",),
        "n_attributes": (),
    },
    example=_example,
)
