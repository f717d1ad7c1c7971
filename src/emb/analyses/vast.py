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
   ("all-but-the-top", :mod:`emb.analyses.nullify`) at chosen layers (Table 1, Figure 3);
4. **word similarity** — Spearman's ρ on WS-353, SimLex-999, MEN and RW per layer, before and after
   nullification (:mod:`emb.analyses.similarity`, Figure 4).

Everything is lazy on a dask-backed store Dataset; nothing is computed until the result is.
Vectors stored as float16 are scored in float32 arithmetic (differences from float64 ~1e-6, far
below the storage precision); float32 stores in float64. The PCA of the nullification is float64.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses import stats
from emb.analyses._select import (
    item_values,
    label_mask,
    parse_subset,
    provenance_attrs,
    settings_present,
)
from emb.analyses.nullify import iter_sweep_cosines, project, top_components
from emb.analyses.similarity import word_similarity
from emb.analyses.valnorm import polar_selection, rated_poles
from emb.errors import AnalysisError, MissingStimuliError

__all__ = ["RATINGS", "SETTINGS", "plain_strings", "vast"]

#: The contextual settings of the paper, in its order.
SETTINGS: tuple[str, ...] = ("bleached", "aligned", "misaligned", "random")
#: Rating dimensions VAST can correlate with (lexicon label columns).
RATINGS: tuple[str, ...] = ("valence", "arousal", "dominance")
POLAR_SETS: tuple[str, str] = ("pleasant", "unpleasant")
#: Statistics the correlation kernels return, in order.
_STATS = ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p")


# -- parsing -------------------------------------------------------------------------------------
def plain_strings(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with numpy ``StringDType`` variables as object arrays (a shallow copy).

    zarr v3 hands variable-length strings back as ``StringDType``, which ``.astype(str)`` cannot
    cast (numpy 2); object arrays of ``str`` work everywhere. Only in-memory (numpy) variables
    are converted; the input is not modified.
    """
    changed = {}
    for name, var in ds.variables.items():
        if isinstance(var.dtype, np.dtypes.StringDType) and not var.chunks:
            changed[name] = var.copy(data=np.asarray(var.values).astype(object))
    if not changed:
        return ds
    coords = {k: v for k, v in changed.items() if k in ds.coords}
    data = {k: v for k, v in changed.items() if k not in ds.coords}
    out = ds.assign_coords(coords) if coords else ds
    return out.assign(data) if data else out


def _as_list(value: str | Sequence[Any] | None) -> list[Any] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str | int | np.integer) else list(value)


def _lexicons_present(ds: xr.Dataset) -> list[str]:
    if "lexicon" not in ds.variables:
        raise AnalysisError(
            "the Dataset has no 'lexicon' label: it is not a 'vast' suite; extract it with "
            "'emb extract --suite vast ...'"
        )
    mask = label_mask(ds, stimulus_set="lexicon")
    if not mask.any():
        raise AnalysisError(
            "the Dataset has no items with stimulus_set 'lexicon': it is not a 'vast' suite"
        )
    names = item_values(ds, "lexicon").astype(str)[mask]
    return [n for n in dict.fromkeys(names) if n]


def _ordered_settings(present: list[str]) -> list[str]:
    known = [s for s in SETTINGS if s in present]
    return known + [s for s in present if s not in known]


# -- item selection --------------------------------------------------------------------------------
def _source(ds: xr.Dataset) -> str:
    return str(ds.encoding.get("source") or "the Dataset")


@dataclass(frozen=True, kw_only=True)
class _Block:
    """The rows of one (lexicon, setting): lexicon items, then pleasant, then unpleasant items.

    ``poles`` holds, per non-valence rating, the rows of its high and low polar words (chosen as
    :func:`emb.analyses.valnorm.valnorm` chooses them), or ``None`` when the lexicon has too few
    rated words.
    """

    rows: np.ndarray  # item positions in ds
    n_lex: int
    n_pleasant: int
    n_unpleasant: int
    words: np.ndarray  # word per row
    ratings: dict[str, np.ndarray]  # rating -> value per row (NaN for polar rows)
    poles: dict[str, tuple[np.ndarray, np.ndarray] | None]
    n_subtokens: np.ndarray | None

    @property
    def lex_rows(self) -> np.ndarray:
        return np.arange(self.n_lex)

    @property
    def pleasant_rows(self) -> np.ndarray:
        return np.arange(self.n_lex, self.n_lex + self.n_pleasant)

    @property
    def unpleasant_rows(self) -> np.ndarray:
        start = self.n_lex + self.n_pleasant
        return np.arange(start, start + self.n_unpleasant)

    def polar_words(self) -> list[str]:
        return [str(w) for w in self.words[self.n_lex :]]


_ROW = "_vast_row"


def _block(ds: xr.Dataset, lexicon: str, setting: str, ratings: Sequence[str]) -> _Block:
    """Select the rows of one (lexicon, setting) as :func:`~emb.analyses.valnorm.valnorm` does."""
    lex_mask = label_mask(ds, setting=setting, stimulus_set="lexicon", lexicon=lexicon)
    lex_pos = np.flatnonzero(lex_mask)
    if lex_pos.size == 0:
        raise MissingStimuliError(
            f"lexicon {lexicon!r} has no items in setting {setting!r} of {_source(ds)}; "
            f"settings present: {settings_present(ds)}"
        )
    polar_setting = setting
    if setting == "misaligned" and not label_mask(
        ds, setting="misaligned", stimulus_set=list(POLAR_SETS)
    ).any():
        polar_setting = "aligned"  # the polar words keep their aligned contexts
    indexed = ds.drop_vars("embedding").assign_coords({_ROW: ("item", np.arange(ds.sizes["item"]))})
    pos_a = np.asarray(polar_selection(indexed, "pleasant", polar_setting, lexicon, True)[_ROW])
    pos_b = np.asarray(polar_selection(indexed, "unpleasant", polar_setting, lexicon, True)[_ROW])
    rows = np.concatenate([lex_pos, pos_a, pos_b])
    words = item_values(ds, "word").astype(str)[rows]
    values: dict[str, np.ndarray] = {}
    poles: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
    for rating in ratings:
        v = np.asarray(item_values(ds, rating), dtype=np.float64)[rows]
        v[lex_pos.size :] = np.nan
        values[rating] = v
        if rating == "valence":
            continue
        try:
            high, low = rated_poles(ds, lex_mask, rating)
        except AnalysisError:
            poles[rating] = None
            continue
        poles[rating] = (
            np.flatnonzero(np.isin(lex_pos, np.flatnonzero(high))),
            np.flatnonzero(np.isin(lex_pos, np.flatnonzero(low))),
        )
    n_sub = (
        np.asarray(item_values(ds, "n_subtokens"))[rows].astype(np.int64)
        if "n_subtokens" in ds.variables
        else None
    )
    return _Block(
        rows=rows,
        n_lex=lex_pos.size,
        n_pleasant=pos_a.size,
        n_unpleasant=pos_b.size,
        words=words,
        ratings=values,
        poles=poles,
        n_subtokens=n_sub,
    )


@dataclass(frozen=True, kw_only=True)
class _Spec:
    """One correlation: targets (rows), polar sets A and B (rows), ratings of the targets."""

    rating: str
    targets: np.ndarray
    a: np.ndarray
    b: np.ndarray
    y: np.ndarray

    @property
    def valid(self) -> bool:
        return self.targets.size >= 3 and self.a.size >= 1 and self.b.size >= 1


def _targets(block: _Block, rating: str, *, keep_polar: bool) -> np.ndarray:
    """Lexicon rows with a finite rating; the valence polar words are removed unless kept."""
    rows = block.lex_rows
    ok = np.isfinite(block.ratings[rating][rows])
    if not keep_polar:
        ok &= ~np.isin(block.words[rows], block.polar_words())
    return rows[ok]


def _specs(block: _Block, ratings: Sequence[str], *, reference: bool) -> list[_Spec]:
    """Valence against the pleasant/unpleasant words; other ratings against the top/bottom
    ``N_POLAR`` lexicon words on that rating, which are removed from the targets."""
    out = []
    for rating in ratings:
        if rating == "valence":
            t = _targets(block, rating, keep_polar=reference)
            out.append(_Spec(rating=rating, targets=t, a=block.pleasant_rows,
                             b=block.unpleasant_rows, y=block.ratings[rating][t]))
            continue
        poles = block.poles.get(rating)
        if poles is None:
            none = np.zeros(0, dtype=np.intp)
            out.append(_Spec(rating=rating, targets=none, a=none, b=none, y=np.zeros(0)))
            continue
        high, low = poles
        t = np.setdiff1d(_targets(block, rating, keep_polar=True), np.concatenate([high, low]))
        out.append(_Spec(rating=rating, targets=t, a=high, b=low, y=block.ratings[rating][t]))
    return out


# -- numpy kernels ---------------------------------------------------------------------------------
def _correlate(es: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(..., n) effect sizes vs (..., n) ratings -> (..., 7) statistics."""
    y = np.broadcast_to(y, es.shape)
    pe = stats.pearson(es, y, axis=-1)
    sp = stats.spearman(es, y, axis=-1)
    parts = [pe.r, pe.pvalue, pe.n, pe.ci_low, pe.ci_high, sp.r, sp.pvalue]
    return np.stack([np.asarray(p, dtype=np.float64) for p in parts], axis=-1)


def _empty_stats(shape: tuple[int, ...]) -> np.ndarray:
    out = np.full((*shape, len(_STATS)), np.nan)
    out[..., _STATS.index("n")] = 0
    return out


def _work_dtype(dtype: np.dtype) -> type[np.floating]:
    """float32 arithmetic for float16-stored vectors (their precision is ~1e-3 anyway, and
    float32 BLAS is twice as fast); float64 otherwise."""
    return np.float32 if np.dtype(dtype).itemsize <= 2 else np.float64


def _norms(x: np.ndarray) -> np.ndarray:
    norm = np.sqrt(np.einsum("ij,ij->i", x, x))
    bad = ~(norm > 0) | ~np.isfinite(norm)
    if bad.any():
        raise AnalysisError(
            f"{int(bad.sum())} embedding vectors have zero or non-finite length; SC-WEAT is "
            "undefined for them: check the store ('emb validate --deep')"
        )
    return norm


@dataclass(frozen=True, kw_only=True)
class _Tokenization:
    """The tokenization experiment of one (lexicon, setting): rows and subset positions."""

    targets: np.ndarray  # rows
    a: np.ndarray  # balanced singly tokenized pleasant rows
    b: np.ndarray
    y: np.ndarray  # valence of the targets
    subsets: np.ndarray  # (2, n_subsets, m) positions into targets

    @property
    def valid(self) -> bool:
        return self.subsets.shape[-1] >= 3 and self.a.size >= 1 and self.b.size >= 1


def _fused_kernel(
    X: np.ndarray, *, n_lex: int, specs: Sequence[_Spec], tok: _Tokenization | None, ddof: int
) -> tuple[np.ndarray, np.ndarray]:
    """One pass over a block of one (lexicon, setting): X (..., rows, d) with the lexicon rows
    first -> curves (..., spec, stat) and tokenization (..., token_set, subset, stat).

    Per (layer, pooling), the cosines of every lexicon row with every polar row any experiment
    needs are one matrix product; each rating and the tokenization sets read their part of it.
    """
    lead = X.shape[:-2]
    flat = X.reshape((-1, *X.shape[-2:]))
    work = _work_dtype(X.dtype)
    polar = np.unique(np.concatenate(
        [np.concatenate([s.a, s.b]) for s in specs if s.valid]
        + ([np.concatenate([tok.a, tok.b])] if tok is not None and tok.valid else [])
        + [np.zeros(0, dtype=np.intp)]
    )).astype(np.intp)
    where = {int(r): i for i, r in enumerate(polar)}

    def cols(rows: np.ndarray) -> np.ndarray:
        return np.array([where[int(r)] for r in rows], dtype=np.intp)

    n_sub = tok.subsets.shape[1] if tok is not None else 0
    curves = np.empty((flat.shape[0], len(specs), len(_STATS)))
    toks = np.empty((flat.shape[0], 2, n_sub, len(_STATS)))
    for j, block in enumerate(flat):
        x = np.asarray(block, dtype=work)
        norm = _norms(x)
        unit_polar = x[polar] / norm[polar][:, None]
        cos = x[:n_lex] @ unit_polar.T
        cos /= norm[:n_lex, None]
        cos = cos.astype(np.float64, copy=False)
        for i, spec in enumerate(specs):
            if not spec.valid:
                curves[j, i] = _empty_stats(())
                continue
            ca = cos[np.ix_(spec.targets, cols(spec.a))]
            cb = cos[np.ix_(spec.targets, cols(spec.b))]
            es = stats.sc_weat_effect_size(ca, cb, ddof=ddof)
            curves[j, i] = _correlate(es, spec.y)
        if tok is not None:
            if not tok.valid:
                toks[j] = _empty_stats((2, n_sub))
                continue
            ca = cos[np.ix_(tok.targets, cols(tok.a))]
            cb = cos[np.ix_(tok.targets, cols(tok.b))]
            es = stats.sc_weat_effect_size(ca, cb, ddof=ddof)
            toks[j] = _correlate(es[tok.subsets], tok.y[tok.subsets])
    return (
        curves.reshape((*lead, len(specs), len(_STATS))),
        toks.reshape((*lead, 2, n_sub, len(_STATS))),
    )


def _nullified_kernel(
    X: np.ndarray, *, specs: Sequence[_Spec], fit: np.ndarray, k_max: int, ddof: int
) -> np.ndarray:
    """X (..., rows, d) -> (..., spec, k, stat): VAST after nullifying k = 0..k_max PCs.

    The mean and components are estimated once per leading index from ``X[fit]`` (float64).
    """
    lead = X.shape[:-2]
    flat = X.reshape((-1, *X.shape[-2:]))
    out = np.empty((flat.shape[0], len(specs), k_max + 1, len(_STATS)))
    for j, x in enumerate(flat):
        x = np.asarray(x, dtype=np.float64)
        comps = top_components(x[fit], k_max)
        C, Z = project(x, comps)
        for i, spec in enumerate(specs):
            if not spec.valid:
                out[j, i] = _empty_stats((k_max + 1,))
                continue
            polar = np.concatenate([spec.a, spec.b])
            es = np.empty((k_max + 1, spec.targets.size))
            sweep = iter_sweep_cosines(C[spec.targets], Z[spec.targets], C[polar], Z[polar])
            for k, cos in enumerate(sweep):  # one (targets × polar) matrix at a time
                es[k] = stats.sc_weat_effect_size(cos[:, : spec.a.size], cos[:, spec.a.size :],
                                                  ddof=ddof)
            out[j, i] = _correlate(es, spec.y)
    return out.reshape((*lead, len(specs), k_max + 1, len(_STATS)))


class _LayerReader:
    """Reads one (layer, pooling) slice of some rows of the embedding *inside* a task.

    Used for the best layer, which is only known once the curves are computed: depending on
    all layers would make dask hold every layer's chunks until then. The reader is invisible to
    dask's graph traversal (a plain object), and reads with a nested synchronous compute of only
    the chunks of that slice.
    """

    __slots__ = ("data",)

    def __init__(self, data: Any) -> None:
        self.data = data  # (rows, layer, pooling, feature): numpy or dask

    def __call__(self, layer: int, pooling: int) -> np.ndarray:
        part = self.data[:, layer, pooling, :]
        if hasattr(part, "compute"):
            part = part.compute(scheduler="sync")
        return np.asarray(part)


def _best_kernel(
    best: np.ndarray, pooling: np.ndarray, *, reader: _LayerReader, layers: np.ndarray,
    specs: Sequence[_Spec], fit: np.ndarray, k_max: int, ddof: int
) -> np.ndarray:
    """best layer values and pooling positions (...) -> (..., spec, k, stat) at those layers."""
    best, pooling = np.broadcast_arrays(np.asarray(best), np.asarray(pooling))
    out = np.empty((best.size, len(specs), k_max + 1, len(_STATS)))
    for i, (layer, p) in enumerate(zip(best.reshape(-1), pooling.reshape(-1), strict=True)):
        position = int(np.flatnonzero(layers == layer)[0])
        out[i] = _nullified_kernel(reader(position, int(p))[None], specs=specs, fit=fit,
                                   k_max=k_max, ddof=ddof)[0]
    return out.reshape((*best.shape, len(specs), k_max + 1, len(_STATS)))


# -- lazy plumbing ---------------------------------------------------------------------------------
def _runs(rows: np.ndarray) -> list[slice] | None:
    """``rows`` as a few contiguous slices (cheap dask slicing), or None when too fragmented."""
    rows = np.asarray(rows, dtype=np.intp)
    if rows.size == 0:
        return None
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    if breaks.size > 8:
        return None
    starts = np.concatenate([[0], breaks])
    stops = np.concatenate([breaks, [rows.size]])
    return [slice(int(rows[a]), int(rows[b - 1]) + 1) for a, b in zip(starts, stops, strict=True)]


def _rows(emb: xr.DataArray, rows: np.ndarray) -> xr.DataArray:
    """The embedding of ``rows`` (item positions), one dask chunk along item and feature.

    Contiguous runs of rows are sliced (a fancy index would make dask shuffle every chunk).
    """
    runs = _runs(rows)
    if runs is None:
        out = emb.isel(item=rows)
    elif len(runs) == 1:
        out = emb.isel(item=runs[0])
    else:
        out = xr.concat([emb.isel(item=r) for r in runs], dim="item")
    out = out.reset_coords(drop=True).drop_vars("item", errors="ignore")
    if out.chunks is not None:
        out = out.chunk({"item": -1, "layer": 1, "feature": -1})
    return out


def _to_dataset(da: xr.DataArray, prefix: str = "") -> xr.Dataset:
    """Split the ``stat`` dim into variables."""
    return xr.Dataset({f"{prefix}{name}": da.isel(stat=i, drop=True) for i, name in enumerate(_STATS)})


def _rng(seed: int, *keys: str) -> np.random.Generator:
    """A generator per (lexicon, setting): results do not depend on which others were chosen."""
    return np.random.default_rng([int(seed), *(zlib.crc32(k.encode("utf-8")) for k in keys)])


def _balanced_polar(
    block: _Block, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Singly tokenized pleasant and unpleasant rows, the larger group cut to the smaller's size
    by seeded random removal (order kept)."""
    assert block.n_subtokens is not None
    a = block.pleasant_rows[block.n_subtokens[block.pleasant_rows] == 1]
    b = block.unpleasant_rows[block.n_subtokens[block.unpleasant_rows] == 1]
    m = min(a.size, b.size)
    if a.size > m:
        a = np.sort(rng.choice(a, m, replace=False))
    if b.size > m:
        b = np.sort(rng.choice(b, m, replace=False))
    return a, b


def _token_subsets(
    single: np.ndarray, multi: np.ndarray, n_subsets: int, rng: np.random.Generator
) -> np.ndarray:
    """(2, n_subsets, m) positions: equal-size random subsets of the two groups (the smaller
    group whole in every draw)."""
    m = min(single.size, multi.size)
    out = np.empty((2, n_subsets, m), dtype=np.intp)
    for s in range(n_subsets):
        for g, group in enumerate((single, multi)):
            out[g, s] = np.sort(rng.choice(group, m, replace=False)) if group.size > m else group
    return out


def _tokenization_plan(
    block: _Block, lexicon: str, setting: str, n_subsets: int, seed: int, reference: bool
) -> _Tokenization:
    rng = _rng(seed, lexicon, setting)
    a, b = _balanced_polar(block, rng)
    targets = _targets(block, "valence", keep_polar=reference)
    n_sub = block.n_subtokens[targets]  # type: ignore[index]
    subsets = _token_subsets(np.flatnonzero(n_sub == 1), np.flatnonzero(n_sub > 1), n_subsets, rng)
    return _Tokenization(targets=targets, a=a, b=b, y=block.ratings["valence"][targets],
                         subsets=subsets)


# -- the experiments -------------------------------------------------------------------------------
def _single_pass(
    emb: xr.DataArray, blocks: dict[tuple[str, str], _Block], ratings: list[str],
    lexicons: list[str], settings: list[str], tokenization: bool, n_subsets: int, seed: int,
    ddof: int, reference: bool,
) -> xr.Dataset:
    """Settings curves (every rating) and the tokenization experiment in one read of the data."""
    curves, toks, sizes, polar_sizes = [], [], [], []
    for lex in lexicons:
        per_set_c, per_set_t, size_row, polar_row = [], [], [], []
        for setting in settings:
            block = blocks[lex, setting]
            specs = _specs(block, ratings, reference=reference)
            tok = (
                _tokenization_plan(block, lex, setting, n_subsets, seed, reference)
                if tokenization else None
            )
            c, t = xr.apply_ufunc(
                _fused_kernel,
                _rows(emb, block.rows),
                input_core_dims=[["item", "feature"]],
                output_core_dims=[["rating", "stat"], ["token_set", "subset", "stat"]],
                dask="parallelized",
                output_dtypes=[np.float64, np.float64],
                dask_gufunc_kwargs={"output_sizes": {
                    "rating": len(specs), "stat": len(_STATS), "token_set": 2,
                    "subset": n_subsets if tok is not None else 0,
                }},
                kwargs={"n_lex": block.n_lex, "specs": specs, "tok": tok, "ddof": ddof},
            )
            per_set_c.append(c)
            per_set_t.append(t)
            size_row.append(tok.subsets.shape[-1] if tok is not None else 0)
            polar_row.append(tok.a.size if tok is not None else 0)
        curves.append(xr.concat(per_set_c, dim=pd.Index(settings, name="setting")))
        toks.append(xr.concat(per_set_t, dim=pd.Index(settings, name="setting")))
        sizes.append(size_row)
        polar_sizes.append(polar_row)
    lex_index = pd.Index(lexicons, name="lexicon")
    c = xr.concat(curves, dim=lex_index).assign_coords(rating=ratings)
    out = _to_dataset(c)
    out["n"] = out["n"].astype(np.int64)
    if tokenization:
        t = xr.concat(toks, dim=lex_index).assign_coords(
            token_set=["single", "multi"], subset=np.arange(n_subsets)
        )
        tok_ds = _to_dataset(t, prefix="tokenization_").drop_vars("tokenization_n")
        tok_ds["tokenization_n"] = (("lexicon", "setting"), np.array(sizes, dtype=np.int64))
        tok_ds["tokenization_n_polar"] = (("lexicon", "setting"), np.array(polar_sizes, dtype=np.int64))
        tok_ds["tokenization_n"].attrs["long_name"] = "words per token set (equal for both sets)"
        tok_ds["tokenization_n_polar"].attrs["long_name"] = (
            "singly tokenized polar words per group after balancing"
        )
        out = out.merge(tok_ds)
    return out


def _fit_rows(block: _Block, reference: bool) -> np.ndarray:
    """Rows the PCA is fitted on: every distinct word of the lexicon and the polar sets; the
    authors' code appended the polar words a second time (``reference``)."""
    polar = np.concatenate([block.pleasant_rows, block.unpleasant_rows])
    lex = block.lex_rows[~np.isin(block.words[block.lex_rows], block.polar_words())]
    rows = np.concatenate([lex, polar])
    return np.concatenate([rows, polar]) if reference else rows


def _nullification(
    emb: xr.DataArray, blocks: dict[tuple[str, str], _Block], ratings: list[str],
    lexicons: list[str], settings: list[str], fixed_layers: list[int], best_layer: xr.DataArray | None,
    k_max: int, ddof: int, reference: bool
) -> xr.Dataset:
    layers = np.asarray(emb["layer"].values)
    per_lex = []
    for lex in lexicons:
        per_set = []
        for setting in settings:
            block = blocks[lex, setting]
            specs = _specs(block, ratings, reference=reference)
            kwargs = {"specs": specs, "fit": _fit_rows(block, reference), "k_max": k_max,
                      "ddof": ddof}
            sizes = {"rating": len(specs), "k": k_max + 1, "stat": len(_STATS)}
            X = _rows(emb, block.rows)
            part = None
            if fixed_layers:
                part = xr.apply_ufunc(
                    _nullified_kernel, X.sel(layer=fixed_layers),
                    input_core_dims=[["item", "feature"]],
                    output_core_dims=[["rating", "k", "stat"]], dask="parallelized",
                    output_dtypes=[np.float64], dask_gufunc_kwargs={"output_sizes": sizes},
                    kwargs=kwargs,
                ).reindex(layer=layers)
            if best_layer is not None:
                runs = _runs(block.rows)
                data = (
                    emb.isel(item=block.rows).data if runs is None
                    else xr.concat([emb.isel(item=r) for r in runs], dim="item").data
                )
                reader = _LayerReader(data)
                best = best_layer.sel(lexicon=lex, drop=True)
                positions = xr.DataArray(np.arange(best.sizes["pooling"]), dims="pooling",
                                         coords={"pooling": best["pooling"]})
                at_best = xr.apply_ufunc(
                    _best_kernel, best, positions, input_core_dims=[[], []],
                    output_core_dims=[["rating", "k", "stat"]], dask="parallelized",
                    output_dtypes=[np.float64], dask_gufunc_kwargs={"output_sizes": sizes},
                    kwargs={**kwargs, "reader": reader, "layers": layers},
                )
                mask = (emb["layer"] == best) & ~emb["layer"].isin(fixed_layers)
                part = xr.where(mask, at_best, np.nan if part is None else part)
            per_set.append(part)
        per_lex.append(xr.concat(per_set, dim=pd.Index(settings, name="setting")))
    out = xr.concat(per_lex, dim=pd.Index(lexicons, name="lexicon"))
    out = out.assign_coords(rating=ratings, k=np.arange(k_max + 1))
    return _to_dataset(out, prefix="nullified_")


def _parse_nullify_layers(
    nullify_layers: Sequence[int | str] | int | str | None, layers: list[int]
) -> tuple[list[int], bool]:
    spec = ["top", "best"] if nullify_layers is None else _as_list(nullify_layers)
    assert spec is not None
    fixed: list[int] = []
    best = False
    for item in spec:
        if item == "top":
            fixed.append(max(layers))
        elif item == "best":
            best = True
        elif isinstance(item, int | np.integer) and int(item) in layers:
            fixed.append(int(item))
        elif isinstance(item, str) and item.lstrip("-").isdigit() and int(item) in layers:
            fixed.append(int(item))
        else:
            raise AnalysisError(
                f"nullify_layers entries must be 'top', 'best' or a layer of the store {layers}; "
                f"got {item!r}"
            )
    return sorted(set(fixed)), best


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
) -> xr.Dataset:
    """The VAST experiments on a store's ``vast`` suite, as one lazy labelled Dataset.

    Parameters
    ----------
    ds : xr.Dataset
        The ``vast`` suite group of a store (``emb.open_store(path).dataset("vast")``):
        ``embedding(item, layer, pooling, feature)`` with item labels ``word``, ``setting``,
        ``stimulus_set`` (``lexicon``/``pleasant``/``unpleasant``), ``lexicon``, ``valence``
        (and ``arousal``, ``dominance``, ``n_subtokens``).
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
        Word pairs for ``similarity`` (see :func:`emb.analyses.similarity.load_pairs`).
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
        family per rating, lexicon, setting and pooling), stored in ``p_adjusted`` beside ``p``.

    Returns
    -------
    xr.Dataset
        Lazy when ``ds`` is. Dims ``rating, lexicon, setting, pooling, layer`` and:

        - ``r, p, n, ci_low, ci_high, spearman_r, spearman_p (rating, lexicon, setting,
          pooling, layer)``: VAST (Pearson's r of SC-WEAT effect sizes vs ratings, two-sided
          p, pairs used, Fisher-z 95 % CI, Spearman's ρ and its p);
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
    >>> ds = emb.open_store("gpt2.zarr").dataset("vast")  # doctest: +SKIP
    >>> res = vast(ds, lexicon="bellezza", tokenization=False).compute()  # doctest: +SKIP
    >>> res.r.sel(rating="valence", setting="bleached", pooling="last")  # doctest: +SKIP
    """
    if method not in ("default", "reference"):
        raise AnalysisError(f"method must be 'default' or 'reference'; got {method!r}")
    if "embedding" not in ds.variables:
        raise AnalysisError("the Dataset has no 'embedding' variable: pass a store suite group")
    for name, value, low in (("k_max", k_max, 0), ("n_subsets", n_subsets, 1),
                             ("ddof", ddof, 0)):
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < low:
            raise AnalysisError(f"{name} must be an integer >= {low}; got {value!r}")
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
    if ratings is None:
        rating_list = ["valence"] + [
            r for r in ("arousal", "dominance")
            if r in ds.variables and np.isfinite(np.asarray(ds[r].values, dtype=np.float64)).any()
        ]
    else:
        rating_list = _as_list(ratings) or []
        unknown = [r for r in rating_list if r not in RATINGS]
        if unknown:
            raise AnalysisError(f"ratings {unknown} are not among {list(RATINGS)}")
        absent = [r for r in rating_list if r not in ds.variables]
        if absent:
            raise AnalysisError(f"the suite has no {absent} label; it cannot correlate with it")
        if "valence" not in rating_list:
            rating_list = ["valence", *rating_list]
    if tokenization and "n_subtokens" not in ds.variables:
        raise AnalysisError(
            "the tokenization experiment needs the 'n_subtokens' coordinate, which this Dataset "
            "lacks; pass tokenization=False"
        )

    if poolings is not None:
        ds = ds.sel(pooling=pooling_list)
    emb = ds["embedding"]
    blocks = {
        (lex, s): _block(ds, lex, s, rating_list) for lex in lexicons for s in settings_list
    }

    result = _single_pass(emb, blocks, rating_list, lexicons, settings_list, tokenization,
                          n_subsets, seed, ddof, reference)
    result = result.transpose("rating", "lexicon", "setting", "pooling", "layer", ...)
    layers = [int(v) for v in ds["layer"].values]
    best_setting = "bleached" if "bleached" in settings_list else settings_list[0]
    if nullification:
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
    if similarity is not None:
        sim = word_similarity(similarity, pairs=pairs, poolings=_as_list(poolings), k_max=k_max,
                              allow_missing=allow_missing)
        sim = sim.rename({name: f"similarity_{name}" for name in sim.data_vars})
        sim = sim.drop_vars([c for c in sim.coords if c not in sim.dims], errors="ignore")
        result = result.merge(sim, join="outer")

    if correction not in ("none", "holm", "bh"):
        raise AnalysisError(f"correction must be 'none', 'holm' or 'bh'; got {correction!r}")
    result["p_adjusted"] = (
        result["p"].copy()
        if correction == "none"
        else stats.adjust(result["p"], method=correction, dims=("layer",))
    )
    result["p_adjusted"].attrs["long_name"] = f"p of r adjusted over layers ({correction})"
    result["r"].attrs["long_name"] = "VAST: Pearson's r of SC-WEAT effect sizes vs ratings"
    result.attrs = {
        "analysis": "vast",
        "method": method,
        "seed": int(seed),
        "ddof": int(ddof),
        "correction": correction,
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
            }
        ),
        **provenance_attrs(ds),
    }
    return result
