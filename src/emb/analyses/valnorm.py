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

from emb._text import unknown_names
from emb.analyses import stats
from emb.analyses._analysis import (
    DEFAULT_POOLINGS,
    DEFAULT_SETTINGS,
    Analysis,
    Option,
    Summary,
    add_log10_p,
    check_options,
    coord_values,
    default_of,
    format_p,
    format_p_column,
    front,
    integer_columns,
    layer_table,
    own_pooling_rows,
    p_below_range,
    slug,
    tidy_frame,
)
from emb.analyses._select import (
    compared_words,
    item_values,
    label_mask,
    own_descriptions,
    parse_subset,
    provenance_attrs,
    select_words,
    settings_present,
    unique_in_order,
)
from emb.analyses.sc_weat import declared_cell, pooling_words, word_table
from emb.analyses.stats.association import rating_residuals, sc_weat_effect_sizes
from emb.errors import AnalysisError, MissingStimuliError
from emb.options import DDOF, WORD_SET
from emb.schemas.datamodel import ITEM

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "N_POLAR", "polar_selection", "rated_poles", "valnorm"]

#: Polar words per pole for the arousal / dominance variants (the WEAT valence sets have 25).
N_POLAR = 25

# --------------------------------------------------------------------------------------------
# ValNorm / VAST
# --------------------------------------------------------------------------------------------


def _positions(mask: np.ndarray) -> slice | np.ndarray:
    pos = np.flatnonzero(mask)
    if pos.size and pos[-1] - pos[0] + 1 == pos.size:
        return slice(int(pos[0]), int(pos[-1]) + 1)  # contiguous: a plain slice of the chunks
    return pos


def polar_selection(
    ds: xr.Dataset, pole: str, setting: str, lexicon: str, has_lexicon_label: bool,
    words: Sequence[str] | None = None,
) -> xr.Dataset:
    """The ``pole`` (pleasant/unpleasant) items of one setting, per lexicon when labelled so.

    Shared by :func:`valnorm` and :func:`emb.analyses.vast.vast`, so both pick the same polar
    words (raises :class:`~emb.errors.MissingStimuliError` when the suite has none): all the
    suite's ``pole`` words, or ``words`` (those present in every compared setting).
    """
    if words is None:
        words = unique_in_order(
            np.asarray(item_values(ds, "word"))[label_mask(ds, stimulus_set=pole)].astype(str)
        )
    if not words:
        raise MissingStimuliError(
            f"this Dataset has no {pole!r} polar words (stimulus_set={pole!r}); "
            "extract the built-in 'vast' suite, which adds the 25 + 25 WEAT valence words"
        )
    labels: dict[str, Any] = {}
    if has_lexicon_label and label_mask(
        ds, setting=setting, stimulus_set=pole, lexicon=lexicon
    ).any():
        labels["lexicon"] = lexicon
    return select_words(ds, words, setting=setting, stimulus_set=pole, **labels)


def rated_poles(
    ds: xr.Dataset, mask: np.ndarray, ratings: str
) -> tuple[np.ndarray, np.ndarray]:
    """Items (boolean masks within ``mask``) of the high and low poles of a rating: the suite's
    ``polar_<rating>`` labels when present, else the ``N_POLAR`` highest and lowest rated words.
    Shared by :func:`valnorm` and :func:`emb.analyses.vast.vast`."""
    label = f"polar_{ratings}"
    if label in ds.variables:
        pos = np.flatnonzero(mask)  # only the masked items' labels are lower-cased
        values = np.char.lower(np.asarray(item_values(ds, label))[pos].astype(str))
        high, low = np.zeros_like(mask), np.zeros_like(mask)
        high[pos[values == "high"]] = True
        low[pos[values == "low"]] = True
        if high.any() and low.any():
            return high, low
    rating = item_values(ds, ratings).astype(np.float64)
    pos = np.flatnonzero(mask & np.isfinite(rating))
    if pos.size < 2 * N_POLAR + 3:
        raise AnalysisError(
            f"{pos.size} rated lexicon items are too few to take the {N_POLAR} highest and "
            f"{N_POLAR} lowest on {ratings!r} as polar words"
        )
    order = pos[np.argsort(rating[pos], kind="stable")]
    high = np.zeros_like(mask)
    low = np.zeros_like(mask)
    high[order[-N_POLAR:]] = True
    low[order[:N_POLAR]] = True
    return high, low


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


@own_descriptions
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
    check_options(ANALYSIS, ddof=ddof, word_set=word_set)
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
        "analysis": "valnorm",
        "ratings": ratings,
        "ddof": int(ddof),
        "method": method,
        "polar_words_removed": str(method == "default" or ratings != "valence").lower(),
        "polar_words": json.dumps(polar_words, ensure_ascii=False),
        "polar_settings": json.dumps(polar_settings),
        "word_set": word_set,
        "notes": json.dumps(notes),
        **provenance_attrs(ds),
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
#: Statistics of a correlation, in table order.
STAT_NAMES = ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p")


def correlation_table(frame: pd.DataFrame) -> pd.DataFrame:
    """A tidy table of correlations with the exact ``log10_p`` (and ``spearman_log10_p``) beside
    each p, which is floored at the smallest normal double (see
    :data:`emb.analyses.stats.P_FLOOR`). Shared by ``valnorm`` and ``vast``."""
    frame = add_log10_p(frame, r="r", n="n", p="p", method="pearson")
    frame = add_log10_p(frame, r="spearman_r", n="n", p="spearman_p", method="spearman")
    frame = p_below_range(frame)  # a p below float range only as its log10, never 2.2e-308
    return p_below_range(frame, p="spearman_p", log10_p="spearman_log10_p")


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


def correlation_summary(
    frame: pd.DataFrame,
    *,
    title: str,
    keys: Sequence[str] = ("model", "lexicon", "setting", "pooling"),
    correction: str = "none",
    family: str = "",
) -> Summary:
    """Headline: r [95% CI] (n), p at the top layer of the first setting (``bleached`` preferred)
    and the ``last`` pooling (else the first), per model and lexicon; table: every setting ×
    pooling, top-layer r beside the best layer (labelled exploratory). With a ``correction``
    (its ``p_adjusted`` in ``frame``), the adjusted p is shown and named, with its ``family``.
    Shared by ``valnorm`` and ``vast``."""
    frame = frame.dropna(subset=["r"])
    if frame.empty:
        return Summary(title=f"{title}: no correlations (every cell is NaN)")
    adjusted = correction != "none" and "p_adjusted" in frame
    extra = ("ci_low", "ci_high", "n", "p", "log10_p") + (("p_adjusted",) if adjusted else ())
    table = layer_table(frame, "r", keys, extra=extra)
    setting = default_of(frame["setting"].unique(), DEFAULT_SETTINGS) if "setting" in frame else None
    head = table[table["setting"] == setting] if setting is not None else table
    # each model at the declared pooling, or its own without it (a static store: static)
    head, pooling = own_pooling_rows(head, "r", DEFAULT_POOLINGS)
    headline = [f"declared cell: top layer, setting {setting!r}, pooling {pooling}"]
    method = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(correction, correction)
    for _, row in head.iterrows():
        label = " / ".join(str(row[k]) for k in ("model", "lexicon") if k in row)
        p_text = format_p(float(row["p"]), log10_p=row.get("log10_p")) if "p" in row else ""
        if adjusted:
            p_text += f", {method}-adjusted p = {float(row['p_adjusted']):.3g}"
        headline.append(
            f"{label}: r = {row['r']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] "
            f"(n = {int(row['n'])}), {p_text} at layer {row['top_layer']}"
        )
    table = format_p_column(table)  # a p below float range as its order (≈ 10^-680.4)
    notes = ["CI: 95% from Fisher's z. p: two-sided, the exact permutation p over at most 9 "
             "words, else exact for Pearson's r under normality; a p "
             "below the float range (2.2e-308) is shown by its order (≈ 10^x) here and left "
             "empty in the table files' p, its exact order in log10_p.",
             "best layer (exploratory): the layer of the highest r in that row, chosen after "
             "looking; report the declared cell."]
    if adjusted:
        notes.insert(1, f"p_adjusted: {method} correction over {family or 'the layers'}.")
    else:
        notes.insert(1, "No multiple-comparison correction.")
    return Summary(title=title, headline=headline, table=table, notes=notes)


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

