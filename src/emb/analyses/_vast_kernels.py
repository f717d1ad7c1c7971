"""The machinery of the ``vast`` analysis: item blocks, fused numpy kernels, lazy plumbing.

:func:`emb.analyses.vast.vast` composes these into one lazy Dataset; nothing here is public API.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses import stats
from emb.analyses._select import (
    item_values,
    label_mask,
    settings_present,
)
from emb.analyses.nullify import iter_sweep_cosines, project, top_components
from emb.analyses.valnorm import polar_selection, rated_poles
from emb.errors import AnalysisError, MissingStimuliError

#: The contextual settings of the paper, in its order.
SETTINGS: tuple[str, ...] = ("bleached", "aligned", "misaligned", "random")
#: Rating dimensions VAST can correlate with (lexicon label columns).
RATINGS: tuple[str, ...] = ("valence", "arousal", "dominance")
POLAR_SETS: tuple[str, str] = ("pleasant", "unpleasant")
#: Statistics the correlation kernels return, in order.
_STATS = ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p")

# -- parsing -------------------------------------------------------------------------------------
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
    The SC-WEATs are computed row by row for every lexicon row and then the targets taken
    (row-wise reductions: the same numbers as on the targets alone, without two fancy-index
    copies per polar set). BLAS runs single-threaded inside (a product's last bits depend on
    the thread count; this holds on a distributed worker too).
    """
    with stats.single_threaded_blas():
        return _fused(X, n_lex=n_lex, specs=specs, tok=tok, ddof=ddof)


def _as_slice(cols: list[int]) -> slice | np.ndarray:
    """Column positions as a slice where they are a run (a cheaper copy than a fancy index)."""
    if cols and cols == list(range(cols[0], cols[0] + len(cols))):
        return slice(cols[0], cols[0] + len(cols))
    return np.asarray(cols, dtype=np.intp)


def _effect_sizes(
    cos: np.ndarray, a: slice | np.ndarray, b: slice | np.ndarray, *, ddof: int
) -> np.ndarray:
    """SC-WEAT of every row of ``cos`` against the columns ``a`` and ``b``.

    The columns are copied C-contiguous first: numpy's row means over a strided view differ in
    their last bits from those over a contiguous copy (which the targets-only selection of the
    first version made), and the results must not change.
    """
    return stats.sc_weat_effect_size(np.ascontiguousarray(cos[:, a]),
                                     np.ascontiguousarray(cos[:, b]), ddof=ddof)


def _fused(
    X: np.ndarray, *, n_lex: int, specs: Sequence[_Spec], tok: _Tokenization | None, ddof: int
) -> tuple[np.ndarray, np.ndarray]:
    lead = X.shape[:-2]
    flat = X.reshape((-1, *X.shape[-2:]))
    work = _work_dtype(X.dtype)
    polar = np.unique(np.concatenate(
        [np.concatenate([s.a, s.b]) for s in specs if s.valid]
        + ([np.concatenate([tok.a, tok.b])] if tok is not None and tok.valid else [])
        + [np.zeros(0, dtype=np.intp)]
    )).astype(np.intp)
    where = {int(r): i for i, r in enumerate(polar)}
    sets = [(s.a, s.b) for s in specs if s.valid]
    if tok is not None and tok.valid:
        sets.append((tok.a, tok.b))
    columns = [(_as_slice([where[int(r)] for r in a]), _as_slice([where[int(r)] for r in b]))
               for a, b in sets]

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
        k = 0
        for i, spec in enumerate(specs):
            if not spec.valid:
                curves[j, i] = _empty_stats(())
                continue
            es = _effect_sizes(cos, *columns[k], ddof=ddof)[spec.targets]
            k += 1
            curves[j, i] = _correlate(es, spec.y)
        if tok is not None:
            if not tok.valid:
                toks[j] = _empty_stats((2, n_sub))
                continue
            es = _effect_sizes(cos, *columns[k], ddof=ddof)[tok.targets]
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
    """The embedding of ``rows`` (item positions), one dask chunk per layer and pooling.

    Contiguous runs of rows are sliced (a fancy index would make dask shuffle every chunk). A
    task holds the rows of one (lexicon, setting) at one layer and pooling: its memory does not
    grow with the number of layers, poolings, settings or lexicons in the store.
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
        out = out.chunk({"item": -1, "layer": 1, "pooling": 1, "feature": -1})
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


