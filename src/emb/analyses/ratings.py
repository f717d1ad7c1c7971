"""What the families that set a model's numbers against human ratings share: ``sc-weat``,
``valnorm`` and ``vast`` (words rated for valence, arousal, dominance …) and the word-similarity
benchmarks (pairs of words rated for similarity): the per-word table and its declared cell, the
correlations' table and summary, and which panels of a benchmark figure have a value. A family
imports this module, never another family's: ``valnorm`` builds on SC-WEAT's effect sizes and
``vast`` on ValNorm's correlations through here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import (
    DEFAULT_POOLINGS,
    DEFAULT_SETTINGS,
    Summary,
    add_log10_p,
    default_of,
    format_p,
    format_p_column,
    front,
    integer_columns,
    layer_table,
    mc_floor,
    own_pooling_rows,
    p_below_range,
    tidy_frame,
)
from emb.analyses._select import item_values, label_mask, select_words, unique_in_order
from emb.errors import AnalysisError, MissingStimuliError

__all__ = [
    "N_POLAR",
    "STAT_NAMES",
    "correlation_summary",
    "correlation_table",
    "declared_cell",
    "figure_panels",
    "panel_notes",
    "polar_selection",
    "pooling_words",
    "rated_poles",
    "word_table",
]


# -- the polar words of a lexicon (valnorm, vast) ---------------------------------------------------
#: Polar words per pole for the arousal / dominance variants (the WEAT valence sets have 25).
N_POLAR = 25


def polar_selection(
    ds: xr.Dataset, pole: str, setting: str, lexicon: str, has_lexicon_label: bool,
    words: Sequence[str] | None = None,
) -> xr.Dataset:
    """The ``pole`` (pleasant/unpleasant) items of one setting, per lexicon when labelled so.

    ``valnorm`` and ``vast`` pick the same polar words so (raises :class:`~emb.errors.MissingStimuliError` when the suite has none): all the
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
    ``polar_<rating>`` labels when present, else the ``N_POLAR`` highest and lowest rated words."""
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


# -- words and their ratings (sc-weat, valnorm) -----------------------------------------------------
def word_table(result: xr.Dataset, *, value: str = "effect_size") -> pd.DataFrame:
    """One row per (model, [lexicon,] setting, word, pooling, layer): the word's SC-WEAT
    (``value``), its residual, p (if any), rating and subtoken count."""
    per_cell = [v for v in (value, "residual", "p", "p_mc_se")
                if v in result and "word" in result[v].dims]
    frame = tidy_frame(result, per_cell, drop_all_nan=[value])
    per_word = [v for v in ("rating", "n_subtokens") if v in result and "word" in result[v].dims]
    if per_word and len(frame):
        words = result[per_word].reset_coords(drop=True).to_dataframe().reset_index()
        frame = frame.merge(words, how="left")
    if "p" in per_cell:
        n_used = int(result.attrs.get("n_permutations_used", 0) or 0)
        frame.insert(int(frame.columns.get_loc("p")) + 1, "p_at_floor",
                     mc_floor(frame["p"], np.full(len(frame), n_used)))
    frame = integer_columns(frame, ("layer", "n_subtokens"))
    return front(frame, ("model", "lexicon", "setting", "word", "pooling", "layer", value,
                         "rating", "n_subtokens", "residual", "p", "p_at_floor", "p_mc_se"))


def pooling_words(cell: pd.DataFrame) -> str:
    """The pooling of a declared cell's rows: ``last``, or each model's (``ctx: last, w2v:
    static``) when a static store sits beside a contextual one."""
    if cell["pooling"].nunique() == 1 or "model" not in cell:
        return str(cell["pooling"].iloc[0])
    own = cell.drop_duplicates("model")
    return ", ".join(f"{m}: {p}" for m, p in zip(own["model"], own["pooling"], strict=True))


def declared_cell(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of a per-word table at the declared cell: each model's top layer and the
    default pooling (``last``, else the first)."""
    if frame.empty:
        return frame
    value = next((c for c in ("effect_size", "sc_weat") if c in frame), None)  # valnorm's: sc_weat
    cell, _ = own_pooling_rows(frame, value, DEFAULT_POOLINGS)  # a static store: static
    keys = [k for k in ("model",) if k in cell]
    top = cell.groupby(keys)["layer"].transform("max") if keys else cell["layer"].max()
    return cell[cell["layer"] == top]



# -- correlations with the ratings (valnorm, vast) ---------------------------------------------------
#: Statistics of a correlation, in table order.
STAT_NAMES = ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p")


def correlation_table(frame: pd.DataFrame) -> pd.DataFrame:
    """A tidy table of correlations with the exact ``log10_p`` (and ``spearman_log10_p``) beside
    each p, which is floored at the smallest normal double (see
    :data:`emb.analyses.stats.P_FLOOR`)."""
    frame = add_log10_p(frame, r="r", n="n", p="p", method="pearson")
    frame = add_log10_p(frame, r="spearman_r", n="n", p="spearman_p", method="spearman")
    frame = p_below_range(frame)  # a p below float range only as its log10, never 2.2e-308
    return p_below_range(frame, p="spearman_p", log10_p="spearman_log10_p")



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
    """
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



# -- the panels of a benchmark figure (word similarity, vast) ------------------------------------------
def figure_panels(result: xr.Dataset, *, variable: str = "rho") -> tuple[list[Any], list[Any], list[str]]:
    """The poolings and benchmarks the word-similarity figure of a one-model ``result`` draws
    (:func:`emb.analyses.plots.similarity_curves`: one panel per pooling and benchmark), and a
    line for each one left out and why: a panel without a single ρ would be an empty axes.

    Examples
    --------
    >>> r = xr.Dataset({"rho": (("dataset", "pooling"), [[0.5, np.nan], [np.nan, np.nan]])},
    ...                coords={"dataset": ["ws353", "rw"], "pooling": ["last", "max"]})
    >>> figure_panels(r)[:2]
    (['last'], ['ws353'])
    """
    from emb.analyses._figure import labels

    da = result[variable]

    def finite(**at: Any) -> bool:
        sub = da.sel({k: v for k, v in at.items() if k in da.dims})
        return bool(np.isfinite(np.asarray(sub.values, dtype=np.float64)).any())

    poolings = labels(result, "pooling")
    datasets = labels(result, "dataset")
    kept_poolings = [p for p in poolings if finite(pooling=p)]
    kept_datasets = [d for d in datasets if finite(dataset=d, pooling=kept_poolings)]
    notes = [f"pooling {p!r}: no panel, no rho at any layer (the similarity suite holds no vectors "
             "of this pooling: it was extracted without it)"
             for p in poolings if p not in kept_poolings and p is not None]
    notes += [f"benchmark {d!r}: no panel, no rho in any cell (its human scores or its pairs' "
              "cosines are constant)" for d in datasets if d not in kept_datasets and d is not None]
    return kept_poolings, kept_datasets, notes


def panel_notes(result: xr.Dataset, *, variable: str = "rho") -> list[str]:
    """:func:`figure_panels`' lines for every model of ``result`` (prefixed by its name when
    there are several)."""
    if "model" not in result.dims:
        return figure_panels(result, variable=variable)[2]
    several = result.sizes["model"] > 1
    return [f"{m}: {n}" if several else n for m in result["model"].values
            for n in figure_panels(result.sel(model=m), variable=variable)[2]]
