"""SC-WEAT (single-category WEAT, WEFAT): each word's effect size against two attribute sets, lazily.

The hot path (:func:`sc_weat_effect_sizes`, shared with ``valnorm`` and ``valence-subspace`` in
:mod:`emb.analyses.stats.association`) normalises the attribute vectors once, then streams the
store's item chunks: per chunk and per (layer, pooling) one matrix product of the word vectors with
the attribute unit vectors, reduced at once to one effect size per item. Nothing but the effect
sizes (items × layers × poolings) leaves a chunk. The ``sc-weat`` analysis runs it over a ``vast``
suite's lexicon words against its polar words.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses import stats
from emb.analyses._analysis import (
    DEFAULT_POOLINGS,
    MAX_PERMUTATIONS,
    Analysis,
    Option,
    Summary,
    check_options,
    own_pooling_rows,
    small_n_notes,
    small_n_of,
    with_set_sizes,
)
from emb.analyses._decorators import own_descriptions, run_by_record
from emb.analyses._select import (
    compared_words,
    item_values,
    label_mask,
    parse_subset,
    provenance_attrs,
    refuse_repeats,
    select_words,
    settings_present,
    unique_in_order,
)
from emb.analyses.ratings import declared_cell, pooling_words, word_table
from emb.analyses.stats.association import (
    MIN_ATTRIBUTE_WORDS,
    rating_residuals,
    sc_weat_effect_sizes,
)
from emb.analyses.stats.work import plan
from emb.errors import AnalysisError
from emb.options import ALTERNATIVE, DDOF, MIN_WORDS, N_PERMUTATIONS, WORD_SET
from emb.schemas.datamodel import FEATURE, ITEM
from emb.text import names, unknown_names

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "MIN_ATTRIBUTE_WORDS", "rating_residuals", "sc_weat", "sc_weat_effect_sizes",
           "sc_weat_lexicon"]

_POLAR = "polar"


def _attribute_problems(attribute_a: Sequence[str], attribute_b: Sequence[str]) -> list[str]:
    """A word listed twice in one attribute set, or in both."""
    problems = []
    for role, words in (("A", attribute_a), ("B", attribute_b)):
        twice = [w for w in dict.fromkeys(words) if words.count(w) > 1]
        if twice:
            problems.append(f"{role} lists {names(twice)} twice")
    shared = [w for w in dict.fromkeys(attribute_a) if w in set(attribute_b)]
    if shared:
        problems.append(f"A and B share {names(shared)}")
    return problems


# --------------------------------------------------------------------------------------------
# SC-WEAT
# --------------------------------------------------------------------------------------------


def _sc_weat_p_kernel(
    w: np.ndarray,
    polar: np.ndarray,
    *,
    n_a: int,
    n_permutations: int,
    exact_limit: int,
    seed: int,
    alternative: str,
) -> np.ndarray:
    cos = np.matmul(stats.unit(w)[..., None, :], np.swapaxes(polar, -1, -2))[..., 0, :]
    return np.asarray(
        stats.permutation_test(
            cos,
            n_a,
            alternative=alternative,  # type: ignore[arg-type]
            n_permutations=n_permutations,
            exact_limit=exact_limit,
            seed=seed,
        ).pvalue,
        dtype=np.float64,
    )


def sc_weat(
    ds: xr.Dataset,
    *,
    words: Sequence[str],
    setting: str,
    attribute_a: Sequence[str],
    attribute_b: Sequence[str],
    ddof: int = 1,
    n_permutations: int = 0,
    seed: int = 0,
    alternative: stats.Alternative = "greater",
    exact_limit: int = 1_000_000,
    word_labels: Mapping[str, Any] | None = None,
    attribute_labels: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Single-category WEAT of each word against two attribute word sets, lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        A store suite group (``embedding(item, layer, pooling, feature)``).
    words : sequence of str
        Target words (one item each in ``setting``).
    setting : str
        Contextual setting of the target and attribute items.
    attribute_a, attribute_b : sequence of str
        Attribute words (e.g. the 25 pleasant and 25 unpleasant WEAT words).
    ddof : int, default 1
        Delta degrees of freedom of the standard deviation.
    n_permutations : int, default 0
        0: effect sizes only.  Otherwise also a permutation p-value per word that re-splits
        ``A ∪ B`` (exact when ``C(|A|+|B|, |A|) ≤ exact_limit``, else this many random splits).
    seed : int, default 0
        Seed of the random splits.
    alternative : {"greater", "less", "two-sided"}, default "greater"
    exact_limit : int, default 1_000_000
    word_labels, attribute_labels : mapping, optional
        Extra label filters for :func:`emb.analyses._select.select_words` (e.g.
        ``{"stimulus_set": "lexicon", "lexicon": "bellezza"}``) when a word has several items.

    Returns
    -------
    xarray.Dataset
        Dims ``(word, layer, pooling)``: ``effect_size`` and, when ``n_permutations > 0``,
        ``p``.  Attributes: options and store provenance.

    Raises
    ------
    MissingStimuliError
        If a word is not in the setting.

    Notes
    -----
    ``d(w) = (mean_{a∈A} cos(w,a) − mean_{b∈B} cos(w,b)) / std_{x∈A∪B} cos(w,x)``;
    the permutation statistic is ``Σ_A cos(w,a) − Σ_B cos(w,b)``.

    References
    ----------
    Caliskan, Bryson & Narayanan (2017); Wolfe & Caliskan (2022), VAST, Eq. 1.

    Examples
    --------
    Two words of the ``sc-weat`` record's example suite against four polar words a side:

    >>> from emb.analyses._examples import PLEASANT, UNPLEASANT
    >>> ds, _ = ANALYSIS.example()
    >>> res = sc_weat(ds, words=["toy0000", "toy0001"], setting="bleached",
    ...               attribute_a=PLEASANT[:4], attribute_b=UNPLEASANT[:4])
    >>> res.effect_size.dims
    ('word', 'layer', 'pooling')
    """
    check_options(ANALYSIS, ddof=ddof, n_permutations=n_permutations, seed=seed)
    words = [str(w) for w in words]
    refuse_repeats("words", words)  # a word twice: its rows repeated, counted twice in n_words
    problems = _attribute_problems([str(w) for w in attribute_a], [str(w) for w in attribute_b])
    if problems:
        raise AnalysisError(
            f"SC-WEAT attribute sets: {'; '.join(problems)}. A word in both A and B cancels out "
            "of a word's association (with every word shared, d is 0/0 for every word), a word "
            "listed twice counts twice: list each attribute word once, in one set"
        )
    target = select_words(ds, words, setting=setting, **dict(word_labels or {}))
    a = select_words(ds, attribute_a, setting=setting, **dict(attribute_labels or {}))
    b = select_words(ds, attribute_b, setting=setting, **dict(attribute_labels or {}))
    emb = target.embedding.reset_coords(drop=True).drop_vars(ITEM, errors="ignore")
    es = sc_weat_effect_sizes(emb, a.embedding, b.embedding, ddof=ddof)
    out = xr.Dataset({"effect_size": es})
    exact_p = math.comb(a.sizes[ITEM] + b.sizes[ITEM], a.sizes[ITEM]) <= int(exact_limit)
    if int(n_permutations) > 0:
        polar = xr.concat(
            [a.embedding.reset_coords(drop=True), b.embedding.reset_coords(drop=True)], dim=ITEM
        ).drop_vars(ITEM, errors="ignore")
        polar = stats.normalize(polar.rename({ITEM: _POLAR}))
        n_ab = a.sizes[ITEM] + b.sizes[ITEM]
        cells = math.prod(size for d, size in emb.sizes.items() if d != FEATURE)
        plan(stats.planned_splits(n_ab, a.sizes[ITEM], n_permutations=int(n_permutations),
                                  exact_limit=int(exact_limit)) * n_ab * cells,
             "SC-WEAT permutation tests")
        out["p"] = xr.apply_ufunc(
            _sc_weat_p_kernel,
            emb,
            polar,
            input_core_dims=[[FEATURE], [_POLAR, FEATURE]],
            output_core_dims=[[]],
            kwargs={
                "n_a": a.sizes[ITEM],
                "n_permutations": int(n_permutations),
                "exact_limit": int(exact_limit),
                "seed": int(seed),
                "alternative": alternative,
            },
            dask="parallelized",
            output_dtypes=[np.float64],
            dask_gufunc_kwargs={"allow_rechunk": True},
        )
        out["p"].attrs["long_name"] = f"permutation p-value ({alternative}), A∪B re-split"
        n_ab = a.sizes[ITEM] + b.sizes[ITEM]
        exact = math.comb(n_ab, a.sizes[ITEM]) <= int(exact_limit)
        n_used = 0 if exact else int(n_permutations)
        if n_used:
            out["p_mc_se"] = np.sqrt(out["p"] * (1 - out["p"]) / n_used)
            out["p_mc_se"].attrs["long_name"] = "Monte-Carlo standard error of p, sqrt(p(1-p)/N)"
    out = out.rename({ITEM: "word"}).assign_coords(word=words)
    out = out.transpose("word", ...)
    out.attrs = {
        "analysis": "sc_weat",
        "setting": setting,
        "ddof": int(ddof),
        "n_permutations": int(n_permutations),
        "n_permutations_used": 0 if int(n_permutations) == 0 or exact_p else int(n_permutations),
        "seed": int(seed),
        "alternative": alternative,
        "attribute_a": json.dumps(list(attribute_a), ensure_ascii=False),
        "attribute_b": json.dumps(list(attribute_b), ensure_ascii=False),
        **provenance_attrs(ds),
    }
    return out



# -- the sc-weat analysis -------------------------------------------------------------------------
@own_descriptions
# alternative: left to the permutation test (sc_weat), as before the record checked options:
# unused without permutations (n_permutations=0), where it is not refused
@run_by_record(checked_in_body=("alternative",))
def sc_weat_lexicon(
    ds: xr.Dataset,
    *,
    lexicon: str | None = None,
    settings: str | Sequence[str] | None = None,
    words: Sequence[str] | None = None,
    attribute_a: Sequence[str] | None = None,
    attribute_b: Sequence[str] | None = None,
    ddof: int = 1,
    n_permutations: int = 0,
    seed: int = 0,
    alternative: Literal["greater", "less", "two-sided"] = "greater",
    rating: str = "valence",
    min_words: int = 8,
    word_set: Literal["common", "per-setting"] = "common",
) -> xr.Dataset:
    """SC-WEAT of a lexicon's words (default: all) against its polar words, per setting.

    A thin wrapper around :func:`emb.analyses.valnorm.sc_weat` for a ``vast`` suite: ``words``
    default to the lexicon words of ``lexicon`` (default: the first lexicon), ``attribute_a`` /
    ``attribute_b`` to the suite's pleasant / unpleasant words; one ``sc_weat`` per setting,
    stacked along ``setting``.

    Each word's human ``rating`` (default valence; NaN for words without one) and subtoken count
    come along, with the residual of its SC-WEAT from the least-squares line of SC-WEAT on the
    rating (per setting, layer and pooling): the words the model places furthest from where their
    rating predicts.

    The settings are compared on the same words (``word_set="common"``, the default): without
    ``words`` / ``attribute_a`` / ``attribute_b`` every setting scores the lexicon words and the
    pleasant / unpleasant words present in all chosen settings (the summary notes how many were
    dropped and why); ``word_set="per-setting"`` scores each setting's own. Given words are the
    same in every setting (a missing one is an error). An attribute set with fewer than
    ``min_words`` words flags its setting ``small_n`` (the rule of ``weat``).

    Returns
    -------
    xr.Dataset
        ``effect_size(setting, word, layer, pooling)``, ``residual`` (same dims),
        ``rating(setting, word)``, ``n_subtokens(setting, word)`` (and ``p``, with ``p_mc_se``
        when Monte Carlo, when ``n_permutations > 0``); ``n_words``, ``n_a``, ``n_b``
        (targets and attribute words per setting) and ``small_n (setting)``.
    """
    if "lexicon" not in ds.variables:
        raise AnalysisError("sc-weat reads a 'vast' suite (labels lexicon, stimulus_set)")
    stim = item_values(ds, "stimulus_set").astype(str)
    lex_col = item_values(ds, "lexicon").astype(str)
    lexicons = [str(v) for v in unique_in_order(lex_col[stim == "lexicon"])]
    lex = lexicon or (lexicons[0] if lexicons else None)
    if lex not in lexicons:
        raise AnalysisError(unknown_names("lexicon", [lex], lexicons, "this suite"))
    chosen = parse_subset("settings", settings, settings_present(ds))
    if rating not in ds.variables:
        rated = [str(k) for k, v in ds.variables.items()
                 if v.dims == (ITEM,) and v.dtype.kind == "f" and k not in ("valence_raw",)]
        raise AnalysisError(unknown_names("rating", [rating], rated, "this suite's labels"))
    words_col = item_values(ds, "word").astype(str)
    compared = compared_words(ds, lex, chosen, word_set)
    kept = compared.poles or {}
    parts = []
    for setting in chosen:
        target_words = _lexicon_words(ds, words_col, words, compared.lexicon, lex=lex, setting=setting)
        polar = _polar_words(ds, words_col, {"pleasant": attribute_a, "unpleasant": attribute_b},
                             kept, lex=lex, setting=setting)
        res = sc_weat(
            ds, words=target_words, setting=setting, attribute_a=polar["pleasant"],
            attribute_b=polar["unpleasant"], ddof=ddof, n_permutations=n_permutations, seed=seed,
            alternative=alternative,
            word_labels={"stimulus_set": "lexicon", "lexicon": lex},
            attribute_labels={"stimulus_set": ["pleasant", "unpleasant"], "lexicon": lex},
        )
        items = select_words(ds, target_words, setting=setting, stimulus_set="lexicon", lexicon=lex)
        res["rating"] = ("word", np.asarray(items[rating].values, dtype=np.float64))
        res["n_subtokens"] = ("word", _subtokens(items))
        sizes = {"a": len(polar["pleasant"]), "b": len(polar["unpleasant"])}
        res = res.assign(n_words=len(target_words), n_a=sizes["a"], n_b=sizes["b"],
                         small_n=small_n_of(sizes, min_words))
        parts.append(res.expand_dims(setting=[setting]))
    out = xr.concat(parts, dim="setting", join="outer", combine_attrs="drop_conflicts")
    out["residual"] = rating_residuals(out["effect_size"], out["rating"], dim="word")
    out["rating"].attrs["long_name"] = f"human {rating} rating"
    out["n_subtokens"].attrs["long_name"] = "subtokens of the word in its context"
    out["n_words"].attrs["long_name"] = "target words scored in the setting"
    out["n_a"].attrs["long_name"] = "attribute words of set A (pleasant)"
    out["n_b"].attrs["long_name"] = "attribute words of set B (unpleasant)"
    out["small_n"].attrs["long_name"] = f"an attribute set has fewer than {int(min_words)} words"
    out.attrs.update({"lexicon": lex, "settings": json.dumps(chosen),
                      "rating": rating, "min_words": int(min_words), "word_set": word_set,
                      "notes": json.dumps(list(compared.notes))})
    return out.transpose("setting", "word", ...)


def _lexicon_words(ds: xr.Dataset, words_col: np.ndarray, words: Sequence[str] | None,
                   compared: Any, *, lex: str, setting: str) -> list[str]:
    """The target words of one setting: those given, else the lexicon's (those compared across
    the stores); refused where the setting has none."""
    target_words = list(words) if words is not None else [
        w for w in unique_in_order(
            words_col[label_mask(ds, setting=setting, stimulus_set="lexicon", lexicon=lex)])
        if compared is None or w in compared
    ]
    if not target_words:  # e.g. another family's suite: its lexicon words in other settings
        having = [s for s in settings_present(ds)
                  if label_mask(ds, setting=s, stimulus_set="lexicon", lexicon=lex).any()]
        raise AnalysisError(
            f"lexicon {lex!r} has no words in setting {setting!r} of this suite; the settings "
            f"with its words are {having}: choose among them with --setting (settings= in "
            "Python)")
    return target_words


def _polar_words(ds: xr.Dataset, words_col: np.ndarray, given: Mapping[str, Sequence[str] | None],
                 kept: Mapping[str, Any], *, lex: str, setting: str) -> dict[str, list[str]]:
    """The pleasant and unpleasant attribute words of one setting: those given, else those kept
    across the stores, else the suite's; refused where a pole has none."""
    polar = {}
    for pole, words in given.items():
        polar[pole] = list(words) if words is not None else kept.get(pole) or unique_in_order(
            words_col[label_mask(ds, setting=setting, stimulus_set=pole, lexicon=lex)]
        )
        if not polar[pole]:
            raise AnalysisError(
                f"this suite has no {pole} polar words of lexicon {lex!r} in setting "
                f"{setting!r}; give them with {'--a' if pole == 'pleasant' else '--b'} "
                f"({'attribute_a' if pole == 'pleasant' else 'attribute_b'}= in Python), or "
                "analyse a 'vast' suite")
    return polar


def _subtokens(items: xr.Dataset) -> np.ndarray:
    if "n_subtokens" not in items.variables:
        return np.full(items.sizes[ITEM], np.nan)
    return np.asarray(items["n_subtokens"].values, dtype=np.float64)


# -- tables, figures, summary ----------------------------------------------------------------------
def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``sc_weat``: one row per (model, setting, word, pooling, layer) with the word's rating,
    subtoken count and residual from the least-squares line of SC-WEAT on the rating."""
    return {"sc_weat": with_set_sizes(word_table(result), result, unit="setting",
                                      variables=("n_words", "n_a", "n_b", "small_n"))}


def _figures(result: xr.Dataset, *, relative_depth: bool = False) -> dict[str, Figure]:
    from emb.analyses import plots

    if "setting" not in result.dims or "word" not in result.dims:
        return {}
    curve = result["effect_size"].mean("word", skipna=True)
    summary = xr.Dataset({"mean_effect_size": curve})
    if "n_subtokens" in result or "rating" in result:
        summary["n"] = result["effect_size"].notnull().any(["layer", "pooling"]).sum("word")
    figs = {"mean_effect_size": plots.layer_curves(
        summary, variable="mean_effect_size", relative_depth=relative_depth,
        title="Mean SC-WEAT effect size of the words by layer")}
    frame = declared_cell(word_table(result))
    if "rating" in frame and frame["rating"].notna().any():
        layer = ", ".join(str(v) for v in frame["layer"].unique())
        figs["scatter"] = plots.word_scatter(
            frame, y="effect_size", xlabel=f"human {result.attrs.get('rating', 'valence')} rating",
            title=f"SC-WEAT vs rating — top layer ({layer}), {pooling_words(frame)} pooling")
    return figs
def _summary(result: xr.Dataset, tables: dict[str, pd.DataFrame]) -> Summary:
    """Declared cell: the top layer and the ``last`` pooling (else the first), per setting: the
    mean effect size and the five most and least pleasant words."""
    frame = tables["sc_weat"].dropna(subset=["effect_size"])
    if frame.empty:
        return Summary(title="SC-WEAT: no effect sizes (every cell is NaN)")
    # each model at the declared pooling, or its own without it (a static store: static)
    cell, pooling = own_pooling_rows(frame, "effect_size", DEFAULT_POOLINGS)
    rows = []
    keys = [k for k in ("model", "setting") if k in frame]
    poles = {str(w) for key in ("attribute_a", "attribute_b")
             for w in json.loads(str(result.attrs.get(key, "[]")) or "[]")}
    polar_in = set()
    for key, group in cell.groupby(keys, sort=False):
        top = group[group["layer"] == group["layer"].max()].sort_values("effect_size")
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        polar_in |= set(top["word"].astype(str)) & poles
        row.update({
            "layer": int(top["layer"].iloc[0]),
            "n_words": len(top),
            "n_polar": len(set(top["word"].astype(str)) & poles),
            "mean_d": float(top["effect_size"].mean()),
            "most_pleasant": ", ".join(top["word"].iloc[::-1].head(5).astype(str)),
            "most_unpleasant": ", ".join(top["word"].head(5).astype(str)),
        })
        if "rating" in top and top["rating"].notna().sum() >= 3:
            rated = top.dropna(subset=["rating"])
            row["n_rated"] = len(rated)
            row["r_rating"] = float(np.corrcoef(rated["rating"], rated["effect_size"])[0, 1])
        rows.append(row)
    rating = result.attrs.get("rating", "valence")
    words = (f"Words: every {result.attrs.get('lexicon', '')} lexicon word (n_words), the polar "
             f"(pleasant/unpleasant) words among them kept as targets (n_polar); r_rating: "
             f"Pearson's r of SC-WEAT with the {rating} rating over the n_rated words with one.")
    if polar_in:
        words += (" ValNorm ('emb analyze valnorm') leaves the polar words out of its targets, so "
                  "its n is smaller by n_polar and its r is not the same number as r_rating.")
    return Summary(
        title=f"SC-WEAT effect sizes of the {result.attrs.get('lexicon', '')} words",
        headline=[f"declared cell: top layer, pooling {pooling}"],
        table=pd.DataFrame(rows),
        notes=[words,
               f"Every word's effect size at every layer is in the table file, with its {rating} "
               "rating, subtoken count and residual from the least-squares line of SC-WEAT on the "
               "rating (per setting, layer and pooling).",
               *small_n_notes(result, unit="setting", roles=("a", "b")),
               *json.loads(str(result.attrs.get("notes", "[]")))],
    )


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    """A tiny ``vast`` suite (40 rated words in two settings, the polar words)."""
    from emb.analyses._examples import lazy, vast_dataset

    return lazy(vast_dataset(n_words=40, settings=("bleached", "aligned"))), {"seed": 3}


ANALYSIS = Analysis(
    name="sc-weat",
    function=sc_weat_lexicon,
    suite="vast",
    description="SC-WEAT effect size of each lexicon word against the polar words",
    options=(
        Option(name="lexicon", help="lexicon of the suite (default: the first)"),
        Option(name="settings", multiple=True, help="contextual setting (default: all)"),
        Option(name="words", multiple=True, help="target word (default: the lexicon's words)"),
        Option(name="attribute_a", multiple=True, flag="--a", deprecated=("--attribute-a",), help="attribute word of set A (default: pleasant)"),
        Option(name="attribute_b", multiple=True, flag="--b", deprecated=("--attribute-b",), help="attribute word of set B (default: unpleasant)"),
        DDOF.but(help="delta degrees of freedom of the standard deviation"),
        N_PERMUTATIONS.but(low=0, high=MAX_PERMUTATIONS,
               help="random re-splits of A and B for p (0: no p)"),
        ALTERNATIVE,
        Option(name="rating", help="the rating label each word's SC-WEAT is shown against"),
        MIN_WORDS,
        WORD_SET,
    ),
    tables=_tables,
    figures=_figures,
    summary=_summary,
    word_tables=("sc_weat",),
    outputs={
        "effect_size": ("setting", "word", "layer", "pooling"),
        "residual": ("setting", "word", "layer", "pooling"),
        "rating": ("setting", "word"),
        "n_subtokens": ("setting", "word"),
        **{name: ("setting",) for name in ("n_words", "n_a", "n_b", "small_n")},
    },
    example=_example,
)

