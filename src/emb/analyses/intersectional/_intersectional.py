"""Intersectional valence bias: how 12 social attributes move "person" along the valence direction.

Omrani Sabbaghi, Wolfe & Caliskan (2023) project the embedding of "person" at the end of 4,096
phrases ("a young thin tall … male person", every combination of 12 binary attributes in a fixed
slot order) onto the valence direction of the layer (:mod:`emb.analyses.valence_subspace`). For
each attribute pair (young/old …) the phrases with the first value form group A and those with the
second value group B, and

    d = (mean_{A} proj − mean_{B} proj) / std_{A ∪ B} proj        (ddof 1)

with a permutation p-value that re-splits A ∪ B (seeded Monte Carlo; the count is reported, a p at
its floor 1/(N+1) is shown as a floor). Experiment 3 ranks 3,840 phrases that permute five
attributes and reports, for the most pleasant and the most unpleasant 10 %, the share of phrases
with each attribute value, overall and per position.

METHODS.md records what the authors' code did differently; ``method="reference"`` reproduces it:
groups by substring of the phrase (so "male" matches every "female" phrase and "literate" every
"illiterate" one), the first 70 phrases dropped, the training scaling not applied to the projected
vectors, and p from a normal fit to the sampled statistics (the smaller tail, not doubled).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb import data
from emb.analyses import stats
from emb.analyses._analysis import (
    DEFAULT_POOLINGS,
    SEED_32,
    Analysis,
    Option,
    Summary,
    default_of,
    format_adjusted,
    format_p,
    front,
    integer_columns,
    own_pooling_rows,
    tidy_frame,
)
from emb.analyses._decorators import own_descriptions, public_in_package, run_by_record
from emb.analyses._select import item_values, label_mask, text_column
from emb.analyses.stats.subspace import SCALINGS, Scaling
from emb.analyses.stats.work import plan
from emb.analyses.valence_subspace import project, valence_direction
from emb.errors import AnalysisError, MissingStimuliError
from emb.options import ALTERNATIVE, C_SVC, CORRECTION, CV_FOLDS, DDOF, N_PERMUTATIONS
from emb.schemas.datamodel import ITEM

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "REFERENCE_DROPPED", "intersectional"]

PHRASE = "phrase"
#: Phrases the authors' Table 2 code skipped at the start of experiment2.txt.
REFERENCE_DROPPED = 70
_EXPERIMENT3 = ("race", "religion", "gender", "sex", "orientation")
_HINT = "run 'emb extract --model MODEL --suite intersectional --store STORE'"


def _suite_design(ds: xr.Dataset) -> tuple[dict[str, tuple[str, str]], tuple[str, ...]]:
    """(category -> (A, B) in the paper's Table 2 order, experiment-3 categories): from the
    suite's recorded parameters, else the package data the suite generator reads. Table 2 lists
    the pairs in their slot order in the phrases (young/old, thin/fat, … male/female: the
    suite's ``slot_order``), not in the order of the authors' table script's dict."""
    suite = ds.attrs.get("suite")
    if isinstance(suite, str):
        try:
            suite = json.loads(suite)
        except json.JSONDecodeError:
            suite = None
    params = suite.get("parameters", {}) if isinstance(suite, Mapping) else {}
    pairs = params.get("pairs")
    if not pairs:
        pairs = data.read_json("attribute_pairs_and_svc_words.json")["attribute_pairs_table_order"]
    exp3 = params.get("experiment3_categories") or _EXPERIMENT3
    order = [str(c) for c in params.get("slot_order") or _slot_order(pairs) if c in pairs]
    order += [str(c) for c in pairs if c not in order]
    return {c: (str(pairs[c][0]), str(pairs[c][1])) for c in order}, tuple(exp3)


def _slot_order(pairs: Mapping[str, Sequence[str]]) -> list[str]:
    """The categories in the phrases' slot order (the paper's Table 2 order), from the package
    data's ``experiment2_phrase_slot_order`` ("age(young/old)" …), matched by their values."""
    by_values = {tuple(str(x) for x in v): str(c) for c, v in pairs.items()}
    order = []
    for slot in data.read_json("attribute_pairs_and_svc_words.json").get(
            "experiment2_phrase_slot_order", []):
        values = tuple(slot[slot.index("(") + 1: slot.rindex(")")].split("/")) if "(" in slot else ()
        if values in by_values:
            order.append(by_values[values])
    return order


def _phrase_positions(ds: xr.Dataset, stimulus_set: str) -> np.ndarray:
    pos = np.flatnonzero(label_mask(ds, setting="phrase", stimulus_set=stimulus_set))
    if pos.size == 0:
        raise MissingStimuliError(
            f"the suite has no {stimulus_set} phrases (setting='phrase', "
            f"stimulus_set={stimulus_set!r}); {_HINT}"
        )
    return pos


def _groups(
    ds: xr.Dataset, exp2: np.ndarray, pairs: Mapping[str, tuple[str, str]], reference: bool
) -> tuple[list[tuple[np.ndarray, np.ndarray]], int]:
    """Per pair, the indices (into ``exp2``) of groups A and B; and the phrases dropped."""
    dropped = 0
    if reference:
        dropped = min(REFERENCE_DROPPED, exp2.size)
        texts = text_column(item_values(ds, "context")[exp2])
        kept = np.arange(dropped, exp2.size)
    out = []
    for category, (a, b) in pairs.items():
        if reference:
            in_a = np.array([a in texts[i] for i in kept], dtype=bool)
            in_b = np.array([b in texts[i] for i in kept], dtype=bool)
            groups = (kept[in_a], kept[in_b])
        else:
            values = text_column(item_values(ds, category)[exp2])
            groups = (np.flatnonzero(values == a), np.flatnonzero(values == b))
        for value, group in zip((a, b), groups, strict=True):
            if group.size == 0:
                raise MissingStimuliError(
                    f"no experiment-2 phrase has {category} = {value!r}; {_HINT}"
                )
        out.append(groups)
    return out, dropped


def _pair_kernel(
    P: np.ndarray,
    *,
    groups: Sequence[tuple[np.ndarray, np.ndarray]],
    ddof: int,
    alternative: str,
    n_permutations: int,
    seed: int,
    reference: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """P (..., n_phrases) → effect size, p, mean A, mean B, each (..., pair)."""
    P = np.asarray(P, dtype=np.float64)
    sizes = {(a.size, b.size) for a, b in groups}
    method = "reference" if reference else "exact-or-monte-carlo"
    # the authors' smaller tail, min(Φ(-z), 1 - Φ(-z)), is Φ(-|z|): half the two-sided p of the
    # normal fit, computed without the cancellation of 1 - Φ(-z) (0 from |z| ≈ 8.3 on)
    tail = "two-sided" if reference else alternative

    def test(values: np.ndarray, n_a: int) -> np.ndarray:
        with stats.single_threaded_blas():
            res = stats.permutation_test(
                values, n_a, alternative=tail, n_permutations=n_permutations, seed=seed,
                method=method,  # type: ignore[arg-type]
            )
        p = np.asarray(res.pvalue, dtype=np.float64)
        return 0.5 * p if reference else p

    if len(sizes) == 1:  # every pair splits the same number of phrases: one set of splits for all
        values = np.stack([np.concatenate([P[..., a], P[..., b]], axis=-1) for a, b in groups], -2)
        n_a = groups[0][0].size
        p = test(values, n_a)
        a_vals, b_vals = values[..., :n_a], values[..., n_a:]
        d = stats.sc_weat_effect_size(a_vals, b_vals, ddof=ddof)
        return d, p, a_vals.mean(axis=-1), b_vals.mean(axis=-1)
    d, p, mean_a, mean_b = [], [], [], []
    for a, b in groups:
        values = np.concatenate([P[..., a], P[..., b]], axis=-1)
        d.append(stats.sc_weat_effect_size(P[..., a], P[..., b], ddof=ddof))
        p.append(test(values, a.size))
        mean_a.append(P[..., a].mean(axis=-1))
        mean_b.append(P[..., b].mean(axis=-1))
    return tuple(np.stack(x, axis=-1) for x in (d, p, mean_a, mean_b))  # type: ignore[return-value]


def _share_kernel(
    P: np.ndarray, *, has_value: np.ndarray, at_position: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """P (..., n) → share (..., extreme, value) and position share (..., extreme, value, position)
    among the ``k`` highest (extreme 0, "top") and ``k`` lowest (1, "bottom") projections; NaN
    where every phrase has the same projection (static vectors): a tie has no top or bottom, and
    the phrases an argsort happened to put first are no finding."""
    P = np.asarray(P, dtype=np.float64)
    batch = P.shape[:-1]
    flat = P.reshape(-1, P.shape[-1])
    share = np.full((flat.shape[0], 2, has_value.shape[1]), np.nan)
    at = np.full((flat.shape[0], 2, *at_position.shape[1:]), np.nan)
    for i, row in enumerate(flat):
        if not row.size or not np.ptp(row) > 0:
            continue
        order = np.argsort(row, kind="stable")
        for e, chosen in enumerate((order[-k:], order[:k])):
            share[i, e] = has_value[chosen].mean(axis=0)
            at[i, e] = at_position[chosen].mean(axis=0)
    return share.reshape(*batch, *share.shape[1:]), at.reshape(*batch, *at.shape[1:])


def _experiment3(
    ds: xr.Dataset, exp3: np.ndarray, pairs: Mapping[str, tuple[str, str]], categories: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str]], int]:
    """Indicators of experiment-3 phrases: has value (n, value) and value at position (n, value,
    position); the (category, value) list; the number of positions."""
    missing = [c for c in categories if c not in pairs]
    if missing:
        raise AnalysisError(f"experiment-3 categories {missing} are not attribute pairs {list(pairs)}")
    values = [(c, v) for c in categories for v in pairs[c]]
    positions = np.stack(
        [item_values(ds, f"{c}_position").astype(np.float64)[exp3] for c in categories], axis=1
    )
    n_pos = int(np.nanmax(positions)) if np.isfinite(positions).any() else 0
    has = np.zeros((exp3.size, len(values)))
    at = np.zeros((exp3.size, len(values), max(n_pos, 1)))
    for j, (c, v) in enumerate(values):
        col = categories.index(c)
        mask = text_column(item_values(ds, c)[exp3]) == v
        has[:, j] = mask
        for pos in range(1, n_pos + 1):
            at[:, j, pos - 1] = mask & (positions[:, col] == pos)
    return has, at, values, n_pos


def _with_extremes(out: xr.Dataset, p3: xr.DataArray, ds: xr.Dataset, exp3: np.ndarray,
                   pairs: Mapping[str, tuple[str, str]], categories: Sequence[str], *,
                   extreme_share: float) -> tuple[xr.Dataset, int]:
    """``out`` with experiment 3: the share of the extreme phrases (by their projections ``p3``)
    that hold each value (``share``), and hold it at each position (``position_share``); and
    the number of positions."""
    p3 = p3.reset_coords(drop=True).drop_vars(PHRASE)
    has, at, values, n_pos = _experiment3(ds, exp3, pairs, categories)
    k = max(1, int(round(float(extreme_share) * exp3.size)))
    share, position_share = xr.apply_ufunc(
        _share_kernel,
        p3,
        input_core_dims=[[PHRASE]],
        output_core_dims=[["extreme", "value"], ["extreme", "value", "position"]],
        kwargs={"has_value": has, "at_position": at, "k": k},
        dask="parallelized",
        output_dtypes=[np.float64, np.float64],
        dask_gufunc_kwargs={"output_sizes": {"extreme": 2, "value": len(values),
                                             "position": at.shape[-1]}},
    )
    out["share"] = share
    out["position_share"] = position_share
    out = out.assign_coords(
        extreme=["top", "bottom"],
        value=[v for _, v in values],
        value_category=("value", [c for c, _ in values]),
        position=np.arange(1, at.shape[-1] + 1),
    )
    out["n_extreme"] = k
    return out, n_pos


@public_in_package
@own_descriptions
@run_by_record(checked_in_body=("alternative", "correction", "method", "scaling"))
def intersectional(
    ds: xr.Dataset,
    *,
    C: float = 5.0,
    scaling: Scaling = "column-norm",
    cv_folds: int = 5,
    ddof: int = 1,
    alternative: stats.Alternative = "two-sided",
    n_permutations: int = 10_000,
    correction: stats.CorrectionMethod = "none",
    extreme_share: float = 0.1,
    seed: int = 0,
    method: Literal["default", "reference"] = "default",
) -> xr.Dataset:
    """Valence bias of the 12 attribute pairs (experiment 2) and the experiment-3 ranks, lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        An ``intersectional`` suite group: phrases (setting ``phrase``, stimulus sets
        ``experiment2``/``experiment3``, one label per category and ``<category>_position``) and
        the pleasant/unpleasant training words alone.
    C, scaling, cv_folds
        The valence direction (:func:`emb.analyses.valence_subspace.valence_direction`).
    ddof : int, default 1
        Delta degrees of freedom of the pooled standard deviation.
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        Of the permutation test (``greater``: A more pleasant than B).
    n_permutations : int, default 10_000
        Seeded Monte-Carlo re-splits of A ∪ B (the same splits for every pair, layer and pooling).
    correction : {"none", "holm", "bh"}, default "none"
        Across the 12 pairs (per model, layer and pooling); ``p_adjusted`` only when asked.
    extreme_share : float, default 0.1
        Share of experiment-3 phrases in the top and in the bottom set.
    seed : int, default 0
        Seed of the splits, the classifier and the folds (recorded).
    method : {"default", "reference"}
        ``reference``: the authors' code (module docstring).

    Returns
    -------
    xarray.Dataset
        ``effect_size``, ``p``, ``mean_a``, ``mean_b`` (pair, layer, pooling) and, with a
        correction, ``p_adjusted``; ``n_a``, ``n_b`` (pair), coordinates ``category``,
        ``value_a``, ``value_b`` on ``pair`` ("young/old" …); ``n_permutations`` (0 = exact);
        ``projection`` (phrase, layer, pooling), ``phrase`` = the phrase text, with coordinates
        ``experiment`` and each category's value; ``share`` (extreme, value, layer, pooling) and
        ``position_share`` (extreme, value, position, layer, pooling) of experiment 3, with
        ``n_extreme``; ``svc_accuracy`` (layer, pooling). Attributes: options and provenance.

    Raises
    ------
    MissingStimuliError
        The suite lacks the phrases, a category value, or the training words.

    Notes
    -----
    ``proj(v)`` = scalar projection of "person" onto the layer's unit valence direction.
    ``d = (mean_A proj − mean_B proj) / std_{A∪B} proj``; p = share of random re-splits of A ∪ B
    into groups of the same sizes whose ``Σ_A − Σ_B`` is at least as extreme
    ((1 + count) / (1 + N), Phipson & Smyth 2010).

    References
    ----------
    Omrani Sabbaghi, S., Wolfe, R. & Caliskan, A. (2023). Evaluating biased attitude associations
    of language models in an intersectional context. *AIES 2023*, §5.2–5.3, Table 2, Figures 3–4.

    Examples
    --------
    On a store, ``ds = emb.open_store("gpt2.zarr").dataset("intersectional")``; here the
    record's example suite (four attribute pairs, each value shifting "person" along valence):

    >>> from emb.analyses import ANALYSES
    >>> ds, _ = ANALYSES["intersectional"].example()
    >>> res = intersectional(ds, correction="holm", n_permutations=300).compute()
    >>> res.effect_size.sel(pooling="last").isel(layer=-1).round(2).to_pandas()
    pair
    young/old           0.13
    white/black        -0.49
    christian/muslim    1.50
    male/female         0.65
    Name: effect_size, dtype: float64
    """
    for name, value, allowed in (
        ("alternative", alternative, ("two-sided", "greater", "less")),
        ("correction", correction, ("none", "holm", "bh")),
        ("method", method, ("default", "reference")),
        ("scaling", scaling, SCALINGS),
    ):
        if value not in allowed:
            raise AnalysisError(f"{name} must be one of {list(allowed)}; got {value!r}")
    reference = method == "reference"
    pairs, categories = _suite_design(ds)
    for category in pairs:
        item_values(ds, category)  # AnalysisError naming the labels when absent
    direction = valence_direction(ds, C=C, scaling=scaling, cv_folds=cv_folds, seed=seed, method=method)

    exp2 = _phrase_positions(ds, "experiment2")
    exp3 = _phrase_positions(ds, "experiment3")
    groups, dropped = _groups(ds, exp2, pairs, reference)
    both = np.concatenate([exp2, exp3])
    texts = text_column(item_values(ds, "context")[both])
    emb = ds["embedding"].isel({ITEM: both}).reset_coords(drop=True).drop_vars(ITEM, errors="ignore")
    proj = project(emb, direction).rename({ITEM: PHRASE})
    phrase_coords: dict[str, Any] = {
        PHRASE: texts.astype(object),
        "experiment": (PHRASE, np.array([2] * exp2.size + [3] * exp3.size)),
    }
    for category in pairs:
        phrase_coords[category] = (PHRASE, text_column(item_values(ds, category)[both]))
    proj = proj.assign_coords(phrase_coords).transpose(PHRASE, "layer", "pooling")
    whole = {PHRASE: -1, "layer": -1, "pooling": -1}
    if proj.chunks is not None:  # small (phrases × layers × poolings): one chunk, as the tests need
        proj = proj.chunk(whole)

    p2 = proj.isel({PHRASE: slice(0, exp2.size)}).reset_coords(drop=True).drop_vars(PHRASE)
    cells = p2.sizes["layer"] * p2.sizes["pooling"]
    plan(sum(stats.planned_splits(a.size + b.size, a.size, n_permutations=int(n_permutations),
                                  method="reference" if reference else "exact-or-monte-carlo")
             * (a.size + b.size) for a, b in groups) * cells, "intersectional permutation tests")
    d, p, mean_a, mean_b = xr.apply_ufunc(
        _pair_kernel,
        p2,
        input_core_dims=[[PHRASE]],
        output_core_dims=[["pair"]] * 4,
        kwargs={"groups": groups, "ddof": int(ddof), "alternative": alternative,
                "n_permutations": int(n_permutations), "seed": int(seed), "reference": reference},
        dask="parallelized",
        output_dtypes=[np.float64] * 4,
        dask_gufunc_kwargs={"output_sizes": {"pair": len(groups)}},
    )
    names = [f"{a}/{b}" for a, b in pairs.values()]
    n_a = np.array([a.size for a, _ in groups])
    n_b = np.array([b.size for _, b in groups])
    exact = not reference and all(
        math.comb(int(x + y), int(x)) <= 1_000_000 for x, y in zip(n_a, n_b, strict=True)
    )
    out = xr.Dataset({"effect_size": d, "p": p, "mean_a": mean_a, "mean_b": mean_b})
    out = out.assign_coords(
        pair=names,
        category=("pair", list(pairs)),
        value_a=("pair", [a for a, _ in pairs.values()]),
        value_b=("pair", [b for _, b in pairs.values()]),
    )
    out["n_a"] = ("pair", n_a)
    out["n_b"] = ("pair", n_b)
    out["n_permutations"] = 0 if exact else int(n_permutations)
    if correction != "none":
        out["p_adjusted"] = stats.adjust(out["p"], method=correction, dims=("pair",))

    out, n_pos = _with_extremes(out, proj.isel({PHRASE: slice(exp2.size, None)}), ds, exp3, pairs,
                                categories, extreme_share=extreme_share)
    out["projection"] = proj
    out["svc_accuracy"] = direction["svc_accuracy"]
    out["svc_converged"] = direction["svc_converged"]
    out = out.transpose("pair", "extreme", "value", "position", PHRASE, "layer", "pooling", ...)
    out["effect_size"].attrs["long_name"] = "d = (mean A - mean B) / std(A and B), ddof " + str(ddof)
    out["p"].attrs["long_name"] = (
        "normal fit to sampled splits, smaller tail (authors' code)" if reference
        else f"permutation p-value ({alternative})"
    )
    out["projection"].attrs["long_name"] = "scalar projection of 'person' on the valence direction"
    out["share"].attrs["long_name"] = "share of the extreme phrases holding the value"
    out["position_share"].attrs["long_name"] = "share of the extreme phrases with the value at the position"
    out.attrs = {
        **{k_: v for k_, v in direction.attrs.items() if k_ != "method"},
        "ddof": int(ddof),
        "alternative": "smaller tail of a normal fit (reference)" if reference else alternative,
        "n_permutations": int(n_permutations),
        "correction": correction,
        "correction_over": "pair",
        "grouping": "substring of the phrase (reference)" if reference else "slot value",
        "phrases_dropped": int(dropped),
        "extreme_share": float(extreme_share),
        "experiment3_categories": json.dumps(list(categories)),
        "experiment3_positions": int(n_pos),
        "seed": int(seed),
        "method": method,
    }
    return out


# -- tables, figures, summary ----------------------------------------------------------------------
_MAIN = ("model", "pair", "layer", "pooling", "effect_size", "p", "p_adjusted", "n_a", "n_b")


def _at_floor(frame: pd.DataFrame) -> pd.Series:
    n = frame["n_permutations"].astype(float)
    return (n > 0) & ((frame["p"] - 1.0 / (n + 1.0)).abs() < 1e-12)


def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``intersectional`` (one row per model × pair × layer × pooling) and
    ``intersectional_ranks`` (experiment-3 shares, one row per model × layer × pooling × extreme ×
    value × position, position "any" for the share over all positions)."""
    variables = ["effect_size", "p"] + (["p_adjusted"] if "p_adjusted" in result else [])
    frame = tidy_frame(result, variables, drop_all_nan=["effect_size"])
    per_pair = result[["n_a", "n_b"]].reset_coords(drop=True).to_dataframe().reset_index()
    frame = frame.merge(per_pair, on=[c for c in ("model", "pair") if c in per_pair], how="left")
    if "p_adjusted" not in frame:
        frame["p_adjusted"] = np.nan  # no correction asked: empty, never a copy of p
    n_perm = result["n_permutations"]
    frame["n_permutations"] = (
        frame["model"].map(n_perm.to_series()) if "model" in n_perm.dims else int(n_perm)
    )
    frame["p_at_floor"] = _at_floor(frame)
    frame = integer_columns(frame, ("layer", "n_a", "n_b", "n_permutations"))
    main = front(frame, _MAIN)

    share = tidy_frame(result, ["share"]).assign(position="any")
    at = tidy_frame(result, ["position_share"]).rename(columns={"position_share": "share"})
    at["position"] = at["position"].astype(int).astype(str)
    ranks = pd.concat([share, at], ignore_index=True)
    ranks["category"] = ranks["value"].map(
        dict(zip(result["value"].values, result["value_category"].values, strict=True))
    )
    ranks["n_phrases"] = int(np.max(result["n_extreme"].values))
    ranks = integer_columns(ranks, ("layer",))
    ranks = front(ranks, ("model", "layer", "pooling", "extreme", "category", "value", "position",
                          "share", "n_phrases"))
    return {"intersectional": main, "intersectional_ranks": ranks}


def _flat_cells(result: xr.Dataset) -> list[str]:
    """The cells ("layer 0, static pooling[, model]") where every phrase gives "person" the same
    projection: the phrases do not move it (static vectors give a word one vector whatever its
    context), so there is no d (0/0) and no ranking."""
    proj = result["projection"]
    other = [d for d in proj.dims if d != PHRASE]
    values = np.asarray(proj.transpose(PHRASE, *other).values, dtype=np.float64)
    finite = np.isfinite(values).all(axis=0)
    with np.errstate(invalid="ignore"):
        flat = finite & (np.ptp(values, axis=0) == 0) if values.shape[0] else finite
    cells = []
    for index in zip(*np.nonzero(flat), strict=True):
        at = {d: proj[d].values[i] for d, i in zip(other, index, strict=True)}
        cells.append(f"layer {int(at['layer'])}, {at['pooling']} pooling"
                     + (f", {at['model']}" if "model" in at else ""))
    return cells


def _flat_note(result: xr.Dataset, cells: list[str], *, everywhere: bool) -> str:
    from emb.analyses._settings import static_models

    static = static_models(result)
    why = ("the store holds static word vectors: 'person' has one vector whatever phrase it ends"
           if static else "the phrases do not move 'person' along the valence direction")
    where = "every cell" if everywhere else f"{len(cells)} cell(s) ({'; '.join(cells[:6])}" + (
        " …)" if len(cells) > 6 else ")")
    return (f"flat: in {where} every phrase gives 'person' the same projection, as {why}; "
            "so no effect size (d = 0/0, rows left out), no experiment-3 ranking (a tie; shares "
            "NaN)" + (" and no figures" if everywhere else " and no figure panels there")
            + ". This analysis measures how "
            "context moves a word: run it on a contextual model.")


def _figures(result: xr.Dataset) -> dict[str, Figure]:
    """The figures that have something to draw: none of a store where every phrase gives
    'person' the same projection (the summary says why)."""
    from emb.analyses.intersectional import _figures as figs

    def finite(da: xr.DataArray) -> xr.DataArray:
        return np.isfinite(da).any([d for d in da.dims if d != "model"])

    proj = result["projection"]
    moved = (proj.max(PHRASE) > proj.min(PHRASE)).any(["layer", "pooling"])
    drawn = {"heat_table": (finite(result["effect_size"]), figs.heat_table),
             "distributions": (moved, figs.distributions),
             "experiment3_shares": (finite(result["share"]), figs.experiment3_shares)}
    out = {}
    for name, (has, draw) in drawn.items():
        if not bool(has.any()):
            continue
        # a flat model (the summary says why) has no panel beside the others'
        out[name] = draw(result.sel(model=has) if "model" in has.dims and name != "heat_table"
                         else result)
    return out


def _summary(result: xr.Dataset, tables: dict[str, pd.DataFrame]) -> Summary:
    """Declared cell: the top layer of each model, the ``last`` pooling (else the first)."""
    frame = tables["intersectional"].dropna(subset=["effect_size"])
    flat = _flat_cells(result)
    if frame.empty:
        return Summary(title="Intersectional valence bias: no effect sizes (every cell is NaN)",
                       notes=[_flat_note(result, flat, everywhere=True)] if flat else [])
    pooling = default_of(frame["pooling"].unique(), DEFAULT_POOLINGS)
    correction = str(result.attrs.get("correction", "none"))
    rows = []
    # each model at the declared pooling, or its own without it (a static store: static)
    cell, pooling_text = own_pooling_rows(frame, "effect_size", DEFAULT_POOLINGS)
    keys = [k for k in ("model",) if k in cell]
    tops = cell.groupby(keys)["layer"].transform("max") if keys else cell["layer"].max()
    for _, row in cell[cell["layer"] == tops].iterrows():
        out = {k: row[k] for k in keys}
        n_perm = int(row["n_permutations"])
        out.update({
            "pair": row["pair"], "layer": int(row["layer"]), "d": float(row["effect_size"]),
            "p": format_p(float(row["p"]), n_permutations=n_perm,
                          floor=bool(row["p_at_floor"])).removeprefix("p "),
            "n_a": int(row["n_a"]), "n_b": int(row["n_b"]),
        })
        if correction != "none":
            out[f"p_{correction}"] = format_adjusted(float(row["p_adjusted"]),
                                                     from_floor=bool(row["p_at_floor"]))
        rows.append(out)
    n_perm = f"{int(result.attrs.get('n_permutations', 0)):,}"
    notes = [
        f"p: the authors' normal fit to {n_perm} sampled splits, smaller tail, not doubled "
        f"(seed {result.attrs.get('seed')})." if result.attrs.get("method") == "reference" else
        f"p: {result.attrs.get('alternative')} permutation test, {n_perm} seeded Monte-Carlo "
        f"splits (seed {result.attrs.get('seed')}); a p at its floor is shown as p ≤ 1/(N+1).",
        f"p_{correction}: {correction} across the {frame['pair'].nunique()} pairs; computed from a "
        "p at its floor it is an upper bound too, shown as ≤."
        if correction != "none" else "No multiple-comparison correction (ask with --correction holm|bh).",
        f"grouping: {result.attrs.get('grouping')}; phrases dropped: "
        f"{result.attrs.get('phrases_dropped')}.",
    ]
    notes.append("valence direction: cross-validated SVC accuracy at the top layer: "
                 + ", ".join(_accuracy_words(result["svc_accuracy"], pooling)))
    if flat:
        notes.append(_flat_note(result, flat, everywhere=False))
    notes += _experiment3_notes(tables["intersectional_ranks"], cell, keys)
    best = frame.loc[frame["effect_size"].abs().idxmax()]
    notes.append(
        f"largest |d| over all {len(frame)} cells (exploratory, not a test): {best['pair']} "
        f"d = {best['effect_size']:.2f} at layer {int(best['layer'])}, {best['pooling']} pooling"
        + (f", {best['model']}" if "model" in best else "")
    )
    return Summary(
        title="Intersectional valence bias: d of 'person' projections, A vs B phrases (Table 2)",
        headline=[f"declared cell: top layer, pooling {pooling_text}"],
        table=pd.DataFrame(rows),
        notes=notes,
    )


def _accuracy_words(acc: xr.DataArray, pooling: str) -> list[str]:
    """Each model's cross-validated SVC accuracy at its top layer, at the declared pooling or
    the model's own (a static store: static, said so)."""
    models = list(acc["model"].values) if "model" in acc.dims else [None]
    shown = []
    for model in models:
        one = acc.sel(model=model) if model is not None else acc
        has = [str(p) for p in one["pooling"].values
               if np.isfinite(np.asarray(one.sel(pooling=p).values, dtype=float)).any()]
        own = default_of(has, [pooling, *DEFAULT_POOLINGS]) if has else pooling
        one = one.sel(pooling=own).dropna("layer")
        if one.sizes["layer"]:
            shown.append(f"{'' if model is None else f'{model} '}{float(one.isel(layer=-1)):.2f}"
                         + ("" if own == pooling else f" ({own} pooling)"))
    return shown


def _experiment3_notes(ranks: pd.DataFrame, cell: pd.DataFrame, keys: list[str]) -> list[str]:
    """Experiment 3 at each model's top layer and declared pooling: the values most often among
    the top and the bottom phrases."""
    notes = []
    ranks = ranks.dropna(subset=["share"])
    ranks = ranks[ranks["position"] == "any"].merge(
        cell[[*keys, "pooling"]].drop_duplicates(), how="inner")  # each model's declared pooling
    for key, part in ranks.groupby(keys, sort=False) if keys else [((), ranks)]:
        part = part[part["layer"] == part["layer"].max()]
        if part.empty:
            continue
        label = f"{key[0] if isinstance(key, tuple) else key}, " if keys else ""
        for extreme in ("top", "bottom"):
            most = part[part["extreme"] == extreme].sort_values("share", ascending=False).head(3)
            listed = ", ".join(f"{r['value']} {r['share']:.0%}" for _, r in most.iterrows())
            notes.append(
                f"experiment 3 ({label}top layer), {extreme} {int(part['n_phrases'].iloc[0])} "
                f"phrases: most often {listed}"
            )
    return notes


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    """A small ``intersectional`` suite (four attribute pairs) and a corrected permutation test."""
    from emb.analyses._examples import intersectional_example, lazy

    return lazy(intersectional_example(), item_chunk=512), {
        "seed": 3, "n_permutations": 300, "correction": "holm"}


ANALYSIS = Analysis(
    name="intersectional",
    seed=SEED_32,  # LinearSVC and StratifiedKFold take a random_state below 2**32
    function=intersectional,
    suite="intersectional",
    description="valence bias of 12 attribute pairs in 4,096 phrases (d, permutation p) and "
    "experiment-3 ranks",
    options=(
        C_SVC,
        Option(name="scaling", choices=SCALINGS, help="feature scaling fitted on the training words"),
        CV_FOLDS,
        DDOF,
        ALTERNATIVE,
        N_PERMUTATIONS.but(help="Monte-Carlo re-splits of A and B"),
        CORRECTION.but(help="correction across the 12 pairs"),
        Option(name="extreme_share", type="float", low=0, high=0.5, low_open=True,
               help="share of experiment-3 phrases in the top/bottom sets"),
    ),
    tables=_tables,
    figures=_figures,
    summary=_summary,
    outputs={
        **{name: ("pair", "layer", "pooling")
           for name in ("effect_size", "p", "p_adjusted", "mean_a", "mean_b")},
        "n_a": ("pair",),
        "n_b": ("pair",),
        "n_permutations": (),
        "projection": ("phrase", "layer", "pooling"),
        "share": ("extreme", "value", "layer", "pooling"),
        "position_share": ("extreme", "value", "position", "layer", "pooling"),
        "n_extreme": (),
        "svc_accuracy": ("layer", "pooling"),
    },
    example=_example,
)
