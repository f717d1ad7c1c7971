"""The machinery of the ``vast`` analysis: item blocks, their plans, lazy plumbing (the numpy
kernels are in :mod:`emb.analyses.vast._kernels`).

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

from emb.analyses._select import (
    ComparedWords,
    item_values,
    label_mask,
    settings_present,
)
from emb.analyses.ratings import polar_selection, rated_poles
from emb.analyses.vast._kernels import (
    _STATS,
    _best_kernel,
    _fused_kernel,
    _LayerReader,
    _nullified_kernel,
    _Spec,
    _Tokenization,
)
from emb.errors import AnalysisError, MissingStimuliError

#: The contextual settings of the paper, in its order.
SETTINGS: tuple[str, ...] = ("bleached", "aligned", "misaligned", "random")
#: Rating dimensions VAST can correlate with (lexicon label columns).
RATINGS: tuple[str, ...] = ("valence", "arousal", "dominance")
POLAR_SETS: tuple[str, str] = ("pleasant", "unpleasant")

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
    names = item_values(ds, "lexicon")[mask].astype(str)
    return [str(n) for n in dict.fromkeys(names) if n]  # plain str: messages quote them


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
#: The item dimension of a block's rows after its lexicon's (polar words) in the kernel's input.
_REST = "_vast_rest"


def _block(
    ds: xr.Dataset, lexicon: str, setting: str, ratings: Sequence[str],
    words: ComparedWords | None = None,
) -> _Block:
    """Select the rows of one (lexicon, setting) as :func:`~emb.analyses.valnorm.valnorm` does:
    all of the setting's words, or only ``words`` (those every compared setting has)."""
    lex_mask = label_mask(ds, setting=setting, stimulus_set="lexicon", lexicon=lexicon)
    if words is not None and words.lexicon is not None:
        lex_mask &= np.isin(item_values(ds, "word").astype(str), list(words.lexicon))
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
    kept = words.poles if words is not None and words.poles is not None else {}
    pos_a = np.asarray(polar_selection(indexed, "pleasant", polar_setting, lexicon, True,
                                       kept.get("pleasant"))[_ROW])
    pos_b = np.asarray(polar_selection(indexed, "unpleasant", polar_setting, lexicon, True,
                                       kept.get("unpleasant"))[_ROW])
    rows = np.concatenate([lex_pos, pos_a, pos_b])
    words = np.asarray(item_values(ds, "word"))[rows].astype(str)
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
    """The embedding of ``rows`` (item positions), one dask chunk per layer.

    Contiguous runs of rows are sliced (a fancy index would make dask shuffle every chunk). A
    task holds the rows of one (lexicon, setting) at one layer, every pooling (the store's
    chunks hold a layer's poolings together: one task per pooling made four times the slicing
    and scheduling for the same bytes): its memory does not grow with the number of layers,
    settings or lexicons in the store.
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
        want = {"item": -1, "layer": 1, "pooling": -1, "feature": -1}
        have = dict(zip(out.dims, out.chunks, strict=True))
        if any(len(have[d]) > 1 for d in ("item", "pooling", "feature")) or max(have["layer"]) > 1:
            out = out.chunk(want)  # (a run read as one chunk, Store.dataset(chunk_by=), is not)
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
                _rows(emb, block.rows[: block.n_lex]),
                _rows(emb, block.rows[block.n_lex :]).rename(item=_REST),
                input_core_dims=[["item", "feature"], [_REST, "feature"]],
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
    if not spec:
        raise AnalysisError("nullify_layers is empty; give at least one or leave it out "
                            "(nullification=False, --no-nullification, skips the sweep)")
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


