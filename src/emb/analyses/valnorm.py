"""SC-WEAT and ValNorm (the score VAST reports per layer, setting, pooling and lexicon), lazily.

ValNorm correlates, over the words of a human-rated lexicon, each word's SC-WEAT effect size
against the 25 pleasant and 25 unpleasant WEAT words with the word's mean valence rating.  VAST
computes it for every layer, contextual setting and subword pooling of a language model.

The hot path (:func:`sc_weat_effect_sizes`) normalises the polar vectors once, then streams the
store's item chunks: per chunk and per (layer, pooling) one matrix product of the lexicon vectors
with the 50 polar unit vectors, reduced at once to one effect size per item.  Nothing but the
effect sizes (items × layers × poolings) leaves a chunk.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses import stats
from emb.analyses._analysis import (
    Analysis,
    Option,
    Summary,
    coord_values,
    front,
    integer_columns,
    layer_table,
    slug,
    tidy_frame,
)
from emb.analyses._decorators import own_descriptions, run_by_record
from emb.analyses._select import (
    compared_words,
    item_values,
    label_mask,
    parse_subset,
    settings_present,
    unique_in_order,
)
from emb.analyses.ratings import (
    N_POLAR,
    STAT_NAMES,
    correlation_summary,
    correlation_table,
    declared_cell,
    polar_selection,
    pooling_words,
    rated_poles,
    word_table,
)
from emb.analyses.stats.association import rating_residuals, sc_weat_effect_sizes
from emb.errors import AnalysisError, MissingStimuliError
from emb.options import DDOF, WORD_SET
from emb.schemas.datamodel import ITEM
from emb.text import unknown_names

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "N_POLAR", "polar_selection", "rated_poles", "valnorm"]

# --------------------------------------------------------------------------------------------
# ValNorm / VAST
# --------------------------------------------------------------------------------------------


def _positions(mask: np.ndarray) -> slice | np.ndarray:
    pos = np.flatnonzero(mask)
    if pos.size and pos[-1] - pos[0] + 1 == pos.size:
        return slice(int(pos[0]), int(pos[-1]) + 1)  # contiguous: a plain slice of the chunks
    return pos


#: Fewest rated target words a correlation is computed from (r of 2 points is ±1, p undefined).
MIN_TARGETS = 3


def _check_targets_left(
    ds: xr.Dataset, mask: np.ndarray, rating: np.ndarray, *, lex: str, setting: str, ratings: str,
    n_polar: int,
) -> None:
    """Refuse a lexicon that the polar words leave with too few rated targets to correlate."""
    left = int(np.count_nonzero(mask & np.isfinite(rating.astype(np.float64))))
    if left >= MIN_TARGETS:
        return
    if ratings == "valence":
        poles = "pleasant/unpleasant polar words"
    elif f"polar_{ratings}" in ds.variables:
        poles = f"high/low-rated polar words (the suite's 'polar_{ratings}' labels)"
    else:
        poles = f"{N_POLAR} highest and {N_POLAR} lowest rated words as poles"
    raise AnalysisError(
        f"lexicon {str(lex)!r}, setting {str(setting)!r}: after taking the {n_polar} {poles} only {left} "
        f"word(s) rated on {ratings!r} remain; the correlation needs at least {MIN_TARGETS}. Use a "
        f"lexicon with more {ratings}-rated words than polar ones (emb extract --suite vast with "
        "a larger lexicon), or another --rating"
    )


def _correlated(ds: xr.Dataset, emb: xr.DataArray, mask: np.ndarray, a_emb: xr.DataArray,
                b_emb: xr.DataArray, *, rating_col: np.ndarray, words_col: np.ndarray, ddof: int,
                per_word: bool) -> xr.Dataset:
    """One lexicon in one setting: the SC-WEAT effect sizes of the target words (``mask``)
    against the poles ``a_emb`` and ``b_emb``, correlated with their ratings (Pearson's r and
    Spearman's rho); with ``per_word``, each word's effect size, rating and subtokens too."""
    target = emb.isel({ITEM: _positions(mask)}).reset_coords(drop=True)
    target = target.drop_vars(ITEM, errors="ignore")
    es = sc_weat_effect_sizes(target, a_emb, b_emb, ddof=ddof)
    rating = xr.DataArray(rating_col[mask].astype(np.float64), dims=ITEM)
    pear = stats.correlation(es, rating, dim=ITEM, method="pearson")
    spear = stats.correlation(es, rating, dim=ITEM, method="spearman")
    part = pear.assign(spearman_r=spear["r"], spearman_p=spear["p"],
                       n_poles=len(a_emb[ITEM]) + len(b_emb[ITEM]))
    if per_word:
        targets = _word_labels(words_col[mask])
        part["sc_weat"] = es.rename({ITEM: "word"}).assign_coords(word=targets)
        part["rating"] = ("word", rating.values)
        n_sub = (item_values(ds, "n_subtokens")[mask].astype(np.float64)
                 if "n_subtokens" in ds.variables else np.full(targets.size, np.nan))
        part["n_subtokens"] = ("word", n_sub)
    return part


@own_descriptions
@run_by_record(checked_in_body=("method",))
def valnorm(
    ds: xr.Dataset,
    *,
    lexicon: str | Sequence[str] | None = None,
    settings: str | Sequence[str] | None = None,
    ratings: str = "valence",
    ddof: int = 1,
    method: Literal["default", "reference"] = "default",
    per_word: bool = True,
    word_set: Literal["common", "per-setting"] = "common",
) -> xr.Dataset:
    """ValNorm / VAST: Pearson's r of SC-WEAT effect sizes with human ratings, lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        A ``vast`` suite group: items with ``stimulus_set`` ∈ {``lexicon``, ``pleasant``,
        ``unpleasant``}, labels ``lexicon`` and the ratings (``valence``, ``arousal``,
        ``dominance``), settings such as ``bleached``, ``aligned``, ``misaligned``, ``random``.
    lexicon : str or sequence of str, optional
        Lexicons to score (default: every lexicon in the suite).
    settings : str or sequence of str, optional
        Settings (default: every setting present).
    ratings : str, default "valence"
        The rating label to correlate with.  ``valence`` uses the pleasant/unpleasant WEAT
        words as poles; another rating (``arousal``, ``dominance``) uses the items marked
        ``high``/``low`` in label ``polar_<ratings>`` if present, otherwise the 25 highest and
        25 lowest rated lexicon items of the same setting; those are removed from the targets.
    ddof : int, default 1
        Delta degrees of freedom of the SC-WEAT standard deviation.
    method : {"default", "reference"}, default "default"
        ``default`` removes the polar words from the valence target lexicon; ``reference`` keeps
        them, as the authors' code did.
    per_word : bool, default True
        Also return each word's SC-WEAT, rating, subtoken count and residual (from the
        least-squares line of SC-WEAT on the rating), over a ``word`` dimension.
    word_set : {"common", "per-setting"}, default "common"
        The words the settings are compared on. ``common``: per lexicon, every setting is scored
        on the lexicon words and polar words present in *all* chosen settings (the ``random``
        setting lacks the words without a corpus sentence), so the settings' r differ only by
        their contexts; the summary says how many words were dropped and why. ``per-setting``:
        each setting on all of its own words. See ``docs/rules/same-words.md``.

    Returns
    -------
    xarray.Dataset
        Dims ``(lexicon, setting, layer, pooling)``; variables ``r`` (Pearson), ``p``
        (two-sided), ``n`` (lexicon words correlated), ``ci_low``/``ci_high`` (Fisher-z 95 %),
        ``spearman_r``, ``spearman_p``; ``n_poles`` (lexicon, setting): polar words of both
        poles together.  A (lexicon, setting) pair without items has n = 0 and
        NaN statistics.  With ``per_word``: ``sc_weat`` and ``residual`` (lexicon, setting,
        word, layer, pooling), ``rating`` and ``n_subtokens`` (lexicon, setting, word); NaN where
        a word is not a target of that lexicon and setting.  Attributes: options, polar words,
        store provenance.

    Raises
    ------
    MissingStimuliError
        If a polar word is missing from a setting.
    AnalysisError
        If the Dataset is not a ``vast`` suite, or for invalid options.

    Notes
    -----
    For every lexicon word ``w`` (an item in setting S), ``d(w)`` is its SC-WEAT effect size
    against the pleasant (A) and unpleasant (B) items *of the same setting S* (the misaligned
    setting's polar items carry aligned contexts, as in the paper; when a store holds no polar
    items under ``misaligned``, those of ``aligned`` are used and recorded in the attributes).
    ValNorm = Pearson's r between ``d(w)`` and the ratings over the lexicon words.

    References
    ----------
    Toney-Wails, A. & Caliskan, A. (2021). ValNorm quantifies semantics to reveal consistent
    valence biases across languages and over centuries. *EMNLP 2021*.
    Wolfe, R. & Caliskan, A. (2022). VAST: The Valence-Assessing Semantics Test for
    contextualizing language models. *AAAI 2022*.

    Examples
    --------
    On a store, ``ds = emb.open_store("gpt2.zarr").dataset("vast")``; here the record's example
    suite:

    >>> from emb.analyses import ANALYSES
    >>> ds, _ = ANALYSES["valnorm"].example()
    >>> res = valnorm(ds, lexicon="toy").compute()
    >>> res.r.sel(setting="bleached", pooling="last").round(2).to_pandas()
    layer      0    1     2     3
    lexicon
    toy      0.3  0.5  0.77  0.25
    """
    if method not in ("default", "reference"):
        raise AnalysisError(f"method must be 'default' or 'reference'; got {method!r}")
    for label in ("stimulus_set", "lexicon"):
        if label not in ds.variables:
            raise AnalysisError(
                f"this Dataset has no {label!r} label: valnorm needs a 'vast' suite "
                "(emb extract --suite vast)"
            )
    if ratings not in ds.variables:
        rated = [str(k) for k in ("valence", "arousal", "dominance") if k in ds.variables]
        raise AnalysisError(unknown_names("rating", [ratings], rated, "this suite's labels"))
    stimulus = item_values(ds, "stimulus_set").astype(str)
    is_lexicon = stimulus == "lexicon"
    lex_col = item_values(ds, "lexicon").astype(str)
    lexicons = parse_subset("lexicon", lexicon, unique_in_order(lex_col[is_lexicon]))
    chosen = parse_subset("settings", settings, settings_present(ds))
    words_col = item_values(ds, "word").astype(str)
    setting_col = item_values(ds, "setting").astype(str)
    rating_col = item_values(ds, ratings)
    if rating_col.dtype.kind not in "fiu":
        raise AnalysisError(f"label {ratings!r} is not numeric (dtype {rating_col.dtype})")
    emb = ds["embedding"]

    polar_words: dict[str, list[str]] = {}
    polar_settings: dict[str, str] = {}
    results = []
    notes: list[str] = []
    for lex in lexicons:
        per_setting = []
        compared = compared_words(ds, lex, chosen, word_set)
        notes += compared.notes
        kept = compared.poles or {}
        for setting in chosen:
            mask = is_lexicon & (lex_col == lex) & (setting_col == setting)
            if not mask.any():
                continue
            if compared.lexicon is not None:
                mask &= np.isin(words_col, list(compared.lexicon))
            if ratings == "valence":
                polar_setting = setting
                if setting == "misaligned" and not label_mask(
                    ds, setting="misaligned", stimulus_set=["pleasant", "unpleasant"]
                ).any():
                    polar_setting = "aligned"
                polar_settings[setting] = polar_setting
                a = polar_selection(ds, "pleasant", polar_setting, lex, True, kept.get("pleasant"))
                b = polar_selection(ds, "unpleasant", polar_setting, lex, True,
                                    kept.get("unpleasant"))
                polar_words["pleasant"] = [str(w) for w in a["word"].values]
                polar_words["unpleasant"] = [str(w) for w in b["word"].values]
                if method == "default":
                    mask = mask & ~np.isin(
                        words_col, polar_words["pleasant"] + polar_words["unpleasant"]
                    )
                a_emb, b_emb = a.embedding, b.embedding
            else:
                high, low = rated_poles(ds, mask, ratings)
                a_emb = emb.isel({ITEM: np.flatnonzero(high)})
                b_emb = emb.isel({ITEM: np.flatnonzero(low)})
                polar_words[f"{lex}/{setting}/high"] = list(words_col[high])
                polar_words[f"{lex}/{setting}/low"] = list(words_col[low])
                mask = mask & ~high & ~low
            _check_targets_left(ds, mask, rating_col, lex=lex, setting=setting, ratings=ratings,
                                n_polar=len(a_emb[ITEM]) + len(b_emb[ITEM]))
            part = _correlated(ds, emb, mask, a_emb, b_emb, rating_col=rating_col,
                               words_col=words_col, ddof=ddof, per_word=per_word)
            per_setting.append(part.expand_dims(setting=[setting]))
        if per_setting:
            results.append(xr.concat(per_setting, dim="setting", join="outer").expand_dims(lexicon=[lex]))
    if not results:
        raise MissingStimuliError(
            f"no lexicon items for lexicons {lexicons} in settings {chosen}; "
            "extract the 'vast' suite with these lexicons first"
        )
    out = xr.concat(results, dim="lexicon", join="outer", fill_value=np.nan)
    out = out.reindex(setting=chosen)
    out["n"] = out["n"].fillna(0).astype(np.int64)
    out["n_poles"] = out["n_poles"].fillna(0).astype(np.int64)
    out["n_poles"].attrs["long_name"] = "polar words (both poles together)"
    if per_word:
        out["residual"] = rating_residuals(out["sc_weat"], out["rating"], dim="word")
        out["sc_weat"].attrs["long_name"] = "SC-WEAT effect size of the word"
        out["rating"].attrs["long_name"] = f"human {ratings} rating"
        out["n_subtokens"].attrs["long_name"] = "subtokens of the word in its context"
    out = out.transpose("lexicon", "setting", ..., "layer", "pooling")
    out["r"].attrs["long_name"] = f"Pearson's r of SC-WEAT effect sizes with {ratings}"
    out["p"].attrs["long_name"] = "two-sided p-value of r"
    out["n"].attrs["long_name"] = ("lexicon words correlated (rated, with a vector; the polar "
                                   "words left out unless method='reference')")
    out["spearman_r"].attrs["long_name"] = f"Spearman's rho of SC-WEAT effect sizes with {ratings}"
    out["spearman_p"].attrs["long_name"] = "two-sided p-value of rho"
    out.attrs = {
        "ratings": ratings,
        "ddof": int(ddof),
        "method": method,
        "polar_words_removed": str(method == "default" or ratings != "valence").lower(),
        "polar_words": json.dumps(polar_words, ensure_ascii=False),
        "polar_settings": json.dumps(polar_settings),
        "word_set": word_set,
        "notes": json.dumps(notes),
    }
    return out


def _word_labels(words: np.ndarray) -> np.ndarray:
    """Word labels for the ``word`` dimension: a word listed twice gets ``#2`` (a label must be
    unique there)."""
    out, seen = [], {}
    for w in words.astype(str):
        seen[w] = seen.get(w, 0) + 1
        out.append(w if seen[w] == 1 else f"{w}#{seen[w]}")
    return np.asarray(out, dtype=object)


# -- tables, figures, summary ----------------------------------------------------------------------
def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``valnorm``: one row per (model, lexicon, setting, pooling, layer); ``valnorm_words``: one
    row per word and cell (its SC-WEAT, rating, subtoken count, residual);
    ``valnorm_best_layers``: the top layer's r beside the best layer (exploratory), per model."""
    frame = integer_columns(tidy_frame(result, list(STAT_NAMES)), ("layer", "n"))
    if "n_poles" in result:
        poles = result[["n_poles"]].reset_coords(drop=True).to_dataframe().reset_index()
        frame = integer_columns(frame.merge(poles, how="left"), ("n_poles",))
    frame = correlation_table(front(frame, ("model", "lexicon", "setting", "pooling", "layer", "n",
                                            "n_poles", "r", "p")))
    tables = {"valnorm": frame}
    if "sc_weat" in result:
        tables["valnorm_words"] = word_table(result, value="sc_weat")
    tables["valnorm_best_layers"] = layer_table(
        frame.dropna(subset=["r"]), "r", ("model", "lexicon", "setting", "pooling"),
        extra=("ci_low", "ci_high", "n"))
    return tables


def _figures(result: xr.Dataset, *, relative_depth: bool = False) -> dict[str, Figure]:
    from emb.analyses import _figure as fg
    from emb.analyses import plots

    rating = str(result.attrs.get("ratings", "valence"))
    shown = "" if rating == "valence" else f" ({rating})"
    figs: dict[str, Figure] = {}
    words = word_table(result, value="sc_weat") if "sc_weat" in result else None
    for lex in coord_values(result, "lexicon"):
        for part_key, part in fg.store_groups(result, "r"):  # a static store beside: its own
            figs[f"curves_{slug(lex)}{part_key}"] = plots.layer_curves(
                part, lexicon=lex, relative_depth=relative_depth,
                title=f"ValNorm by layer — {lex}{shown}")
        if words is not None and len(words):
            cell = declared_cell(words[words["lexicon"] == lex] if "lexicon" in words else words)
            if len(cell):
                layers = ", ".join(str(v) for v in cell["layer"].unique())
                figs[f"scatter_{slug(lex)}"] = plots.word_scatter(
                    cell, y="sc_weat", xlabel=f"human {rating} rating",
                    title=f"SC-WEAT vs {rating} — {lex}, top layer ({layers}), "
                          f"{pooling_words(cell)} pooling")
    return figs


def _summary(result: xr.Dataset, tables: dict[str, pd.DataFrame]) -> Summary:
    rating = result.attrs.get("ratings", "valence")
    out = correlation_summary(
        tables["valnorm"], title=f"ValNorm: Pearson's r of SC-WEAT with human {rating} ratings"
    )
    polar = json.loads(str(result.attrs.get("polar_words", "{}")) or "{}")
    k = len({str(w) for ws in polar.values() for w in ws}) if isinstance(polar, dict) else 0
    removed = result.attrs.get("polar_words_removed") == "true"
    words = (f"n: the lexicon words with a {rating} rating and a vector, "
             + (f"the polar (pleasant/unpleasant) words ({k}) left out of the targets where the "
                "lexicon has them" if removed
                else "the polar words kept among the targets (method 'reference')")
             + "; 'emb analyze sc-weat' keeps every lexicon word, the polar ones included, so "
             "its n and r differ" + ("" if removed else " only in the words without a rating") + ".")
    return Summary(title=out.title, headline=out.headline, table=out.table,
                   notes=[*out.notes, words, *json.loads(result.attrs.get("notes", "[]"))])


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    """A tiny ``vast`` suite (60 rated words in four settings, the polar words)."""
    from emb.analyses._examples import lazy, vast_dataset

    return lazy(vast_dataset(n_words=60)), {}


ANALYSIS = Analysis(
    name="valnorm",
    function=valnorm,
    suite="vast",
    description="ValNorm: Pearson's r of SC-WEAT vs human valence per layer/setting/pooling",
    options=(
        Option(name="lexicon", multiple=True, help="lexicon of the suite (default: all)"),
        Option(name="settings", multiple=True, help="contextual setting (default: all)"),
        Option(name="ratings", flag="--rating", help="rating to correlate with: valence, arousal or dominance"),
        DDOF.but(help="delta degrees of freedom of the SC-WEAT standard deviation"),
        Option(name="per_word", type="bool", help="each word's SC-WEAT, rating and residual (table valnorm_words)"),
        WORD_SET,
    ),
    tables=_tables,
    figures=_figures,
    summary=_summary,
    word_tables=("valnorm_words",),
    outputs={
        **{name: ("lexicon", "setting", "layer", "pooling")
           for name in ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p")},
        "n_poles": ("lexicon", "setting"),
        "sc_weat": ("lexicon", "setting", "word", "layer", "pooling"),
        "residual": ("lexicon", "setting", "word", "layer", "pooling"),
        "rating": ("lexicon", "setting", "word"),
        "n_subtokens": ("lexicon", "setting", "word"),
    },
    example=_example,
)

