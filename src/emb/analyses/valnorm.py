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
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import xarray as xr

from emb.analyses import stats
from emb.analyses._select import (
    item_values,
    label_mask,
    parse_subset,
    provenance_attrs,
    select_words,
    settings_present,
    unique_in_order,
)
from emb.errors import AnalysisError, MissingStimuliError

__all__ = ["N_POLAR", "polar_selection", "rated_poles", "sc_weat", "sc_weat_effect_sizes", "valnorm"]

ITEM = "item"
FEATURE = "feature"
_POLAR = "polar"
#: Polar words per pole for the arousal / dominance variants (the WEAT valence sets have 25).
N_POLAR = 25


#: Largest block (bytes, as stored) handed to one kernel call after merging layers/poolings.
_MAX_BLOCK_BYTES = 128 * 2**20

# --------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------

def _sc_weat_kernel(w: np.ndarray, polar: np.ndarray, *, n_a: int, ddof: int) -> np.ndarray:
    """w (I, *B, F) raw vectors; polar (*B', K, F) unit vectors, A first -> (I, *B) effect sizes."""
    n_items, batch, n_feat = w.shape[0], w.shape[1:-1], w.shape[-1]
    k = polar.shape[-2]
    polar = np.broadcast_to(polar, (*batch, k, n_feat)).reshape(-1, k, n_feat)
    w3 = w.reshape(n_items, -1, n_feat)
    out = np.empty((n_items, w3.shape[1]), dtype=np.float64)
    with stats.single_threaded_blas():
        _sc_weat_loop(w3, polar, out, n_a=n_a, ddof=ddof)
    return out.reshape(n_items, *batch)


def _sc_weat_loop(
    w3: np.ndarray, polar: np.ndarray, out: np.ndarray, *, n_a: int, ddof: int
) -> None:
    for j in range(w3.shape[1]):  # one (I × F) @ (F × K) product per (layer, pooling)
        x = np.ascontiguousarray(w3[:, j, :], dtype=np.float64)
        norm = np.sqrt(np.einsum("if,if->i", x, x))
        if not np.all(norm > 0) or not np.all(np.isfinite(norm)):
            raise AnalysisError(
                f"{int(np.count_nonzero(~(norm > 0) | ~np.isfinite(norm)))} embedding vectors have "
                "zero or non-finite length; SC-WEAT is undefined for them: check the store "
                "('emb validate --deep')"
            )
        cos = (x @ polar[j].T) / norm[:, None]
        out[:, j] = stats.sc_weat_effect_size(cos[:, :n_a], cos[:, n_a:], ddof=ddof)


def sc_weat_effect_sizes(
    target: xr.DataArray,
    attribute_a: xr.DataArray,
    attribute_b: xr.DataArray,
    *,
    ddof: int = 1,
    dim: str = ITEM,
    feature_dim: str = FEATURE,
) -> xr.DataArray:
    """SC-WEAT effect size of every target vector against two attribute sets, lazily.

    Parameters
    ----------
    target : xarray.DataArray
        Target vectors, dims ``(dim, ..., feature_dim)``, e.g. ``(item, layer, pooling,
        feature)``; any float dtype (computed in float64), dask chunks along ``dim`` are kept.
    attribute_a, attribute_b : xarray.DataArray
        Attribute vectors with their own ``dim`` (e.g. the 25 pleasant / unpleasant items); any
        other dims (``layer``, ``pooling``) are matched by name with ``target``'s.
    ddof : int, default 1
        Delta degrees of freedom of the standard deviation.
    dim, feature_dim : str
        The item and feature dimension names.

    Returns
    -------
    xarray.DataArray
        Effect sizes (float64) with ``target``'s dims minus ``feature_dim``; dask-backed when
        ``target`` is.

    Notes
    -----
    ``d(w) = (mean_{a∈A} cos(w,a) − mean_{b∈B} cos(w,b)) / std_{x∈A∪B} cos(w,x)``.
    The attribute vectors are normalised once; per chunk of targets and per (layer, pooling)
    the cosines are one matrix product with the ``|A|+|B|`` unit vectors.

    References
    ----------
    Caliskan, Bryson & Narayanan (2017) (WEFAT); Toney-Wails & Caliskan (2021) (ValNorm);
    Wolfe & Caliskan (2022), VAST, Eq. 1.
    """
    n_a = attribute_a.sizes[dim]
    if n_a == 0 or attribute_b.sizes[dim] == 0:
        raise AnalysisError("both attribute sets need at least one vector")
    if n_a + attribute_b.sizes[dim] - ddof <= 0:
        raise AnalysisError(
            f"{n_a + attribute_b.sizes[dim]} attribute vectors cannot give a standard deviation "
            f"with ddof={ddof}"
        )
    polar = xr.concat(
        [
            attribute_a.reset_coords(drop=True).drop_vars(dim, errors="ignore"),
            attribute_b.reset_coords(drop=True).drop_vars(dim, errors="ignore"),
        ],
        dim=dim,
    ).rename({dim: _POLAR})
    polar = stats.normalize(polar, dim=feature_dim)
    other = [d for d in target.dims if d not in (dim, feature_dim)]
    target = target.transpose(dim, *other, feature_dim)
    polar = polar.transpose(*[d for d in other if d in polar.dims], ..., _POLAR, feature_dim)
    if polar.chunks is not None:
        polar = polar.chunk({_POLAR: -1, feature_dim: -1})
    if target.chunks is not None:
        # one kernel call per item block covering every layer and pooling (fewer, larger tasks)
        merged = {feature_dim: -1}
        item_chunk = max(target.chunksizes[dim]) if target.sizes[dim] else 1
        block = item_chunk * target.dtype.itemsize * target.sizes[feature_dim]
        for d in other:
            if block * target.sizes[d] <= _MAX_BLOCK_BYTES:
                merged[d] = -1
                block *= target.sizes[d]
        target = target.chunk(merged)
        if polar.chunks is not None:
            polar = polar.chunk({d: -1 for d in merged if d in polar.dims})
    es = xr.apply_ufunc(
        _sc_weat_kernel,
        target,
        polar,
        input_core_dims=[[feature_dim], [_POLAR, feature_dim]],
        output_core_dims=[[]],
        kwargs={"n_a": int(n_a), "ddof": int(ddof)},
        dask="parallelized",
        output_dtypes=[np.float64],
    )
    es.attrs["long_name"] = "SC-WEAT effect size"
    return es


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
    >>> sc_weat(ds, words=["love"], setting="bleached", attribute_a=pleasant,
    ...         attribute_b=unpleasant).effect_size  # doctest: +SKIP
    """
    if int(n_permutations) < 0:
        raise AnalysisError(f"n_permutations must be >= 0; got {n_permutations}")
    words = [str(w) for w in words]
    target = select_words(ds, words, setting=setting, **dict(word_labels or {}))
    a = select_words(ds, attribute_a, setting=setting, **dict(attribute_labels or {}))
    b = select_words(ds, attribute_b, setting=setting, **dict(attribute_labels or {}))
    emb = target.embedding.reset_coords(drop=True).drop_vars(ITEM, errors="ignore")
    es = sc_weat_effect_sizes(emb, a.embedding, b.embedding, ddof=ddof)
    out = xr.Dataset({"effect_size": es})
    if int(n_permutations) > 0:
        polar = xr.concat(
            [a.embedding.reset_coords(drop=True), b.embedding.reset_coords(drop=True)], dim=ITEM
        ).drop_vars(ITEM, errors="ignore")
        polar = stats.normalize(polar.rename({ITEM: _POLAR}))
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
    out = out.rename({ITEM: "word"}).assign_coords(word=words)
    out = out.transpose("word", ...)
    out.attrs = {
        "analysis": "sc_weat",
        "setting": setting,
        "ddof": int(ddof),
        "n_permutations": int(n_permutations),
        "seed": int(seed),
        "alternative": alternative,
        "attribute_a": json.dumps(list(attribute_a), ensure_ascii=False),
        "attribute_b": json.dumps(list(attribute_b), ensure_ascii=False),
        **provenance_attrs(ds),
    }
    return out


# --------------------------------------------------------------------------------------------
# ValNorm / VAST
# --------------------------------------------------------------------------------------------


def _positions(mask: np.ndarray) -> slice | np.ndarray:
    pos = np.flatnonzero(mask)
    if pos.size and pos[-1] - pos[0] + 1 == pos.size:
        return slice(int(pos[0]), int(pos[-1]) + 1)  # contiguous: a plain slice of the chunks
    return pos


def polar_selection(
    ds: xr.Dataset, pole: str, setting: str, lexicon: str, has_lexicon_label: bool
) -> xr.Dataset:
    """The ``pole`` (pleasant/unpleasant) items of one setting, per lexicon when labelled so.

    Shared by :func:`valnorm` and :func:`emb.analyses.vast.vast`, so both pick the same polar
    words (raises :class:`~emb.errors.MissingStimuliError` when the suite has none).
    """
    words = unique_in_order(item_values(ds, "word").astype(str)[label_mask(ds, stimulus_set=pole)])
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
        values = np.char.lower(item_values(ds, label).astype(str))
        high, low = mask & (values == "high"), mask & (values == "low")
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


def valnorm(
    ds: xr.Dataset,
    *,
    lexicon: str | Sequence[str] | None = None,
    settings: str | Sequence[str] | None = None,
    ratings: str = "valence",
    ddof: int = 1,
    method: Literal["default", "reference"] = "default",
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

    Returns
    -------
    xarray.Dataset
        Dims ``(lexicon, setting, layer, pooling)``; variables ``r`` (Pearson), ``p``
        (two-sided), ``n`` (lexicon words correlated), ``ci_low``/``ci_high`` (Fisher-z 95 %),
        ``spearman_r``, ``spearman_p``.  A (lexicon, setting) pair without items has n = 0 and
        NaN statistics.  Attributes: options, polar words, store provenance.

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
    >>> ds = emb.open_store("gpt2.zarr").dataset("vast")  # doctest: +SKIP
    >>> res = valnorm(ds, lexicon="bellezza").compute()  # doctest: +SKIP
    >>> res.r.sel(setting="bleached", pooling="last").to_series()  # doctest: +SKIP
    """
    if method not in ("default", "reference"):
        raise AnalysisError(f"method must be 'default' or 'reference'; got {method!r}")
    if not isinstance(ddof, int | np.integer) or ddof < 0:
        raise AnalysisError(f"ddof must be a non-negative integer; got {ddof!r}")
    for label in ("stimulus_set", "lexicon", ratings):
        if label not in ds.variables:
            raise AnalysisError(
                f"this Dataset has no {label!r} label: valnorm needs a 'vast' suite "
                "(emb extract --suite vast)"
            )
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
    for lex in lexicons:
        per_setting = []
        for setting in chosen:
            mask = is_lexicon & (lex_col == lex) & (setting_col == setting)
            if not mask.any():
                continue
            if ratings == "valence":
                polar_setting = setting
                if setting == "misaligned" and not label_mask(
                    ds, setting="misaligned", stimulus_set=["pleasant", "unpleasant"]
                ).any():
                    polar_setting = "aligned"
                polar_settings[setting] = polar_setting
                a = polar_selection(ds, "pleasant", polar_setting, lex, True)
                b = polar_selection(ds, "unpleasant", polar_setting, lex, True)
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
            target = emb.isel({ITEM: _positions(mask)}).reset_coords(drop=True)
            target = target.drop_vars(ITEM, errors="ignore")
            es = sc_weat_effect_sizes(target, a_emb, b_emb, ddof=ddof)
            rating = xr.DataArray(rating_col[mask].astype(np.float64), dims=ITEM)
            pear = stats.correlation(es, rating, dim=ITEM, method="pearson")
            spear = stats.correlation(es, rating, dim=ITEM, method="spearman")
            part = pear.assign(spearman_r=spear["r"], spearman_p=spear["p"])
            per_setting.append(part.expand_dims(setting=[setting]))
        if per_setting:
            results.append(xr.concat(per_setting, dim="setting").expand_dims(lexicon=[lex]))
    if not results:
        raise MissingStimuliError(
            f"no lexicon items for lexicons {lexicons} in settings {chosen}; "
            "extract the 'vast' suite with these lexicons first"
        )
    out = xr.concat(results, dim="lexicon", join="outer", fill_value=np.nan)
    out = out.reindex(setting=chosen)
    out["n"] = out["n"].fillna(0).astype(np.int64)
    out = out.transpose("lexicon", "setting", "layer", "pooling", ...)
    out["r"].attrs["long_name"] = f"Pearson's r of SC-WEAT effect sizes with {ratings}"
    out["p"].attrs["long_name"] = "two-sided p-value of r"
    out["n"].attrs["long_name"] = "lexicon words correlated"
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
        **provenance_attrs(ds),
    }
    return out
