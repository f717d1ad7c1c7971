"""The numpy kernels of the ``vast`` analysis: one (lexicon, setting) block in, statistics out.

A kernel gets the vectors of one block (lexicon rows first, then the polar rows) at some layers
and poolings and returns the correlation statistics of every rating (:func:`_fused_kernel`) or
of the nullification sweep (:func:`_nullified_kernel`, :func:`_best_kernel`).
:mod:`emb.analyses._vast_kernels` plans the blocks and wires the kernels into dask; nothing here
is public API.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from emb.analyses import stats
from emb.analyses.nullify import iter_sweep_cosines, project, top_components
from emb.errors import AnalysisError

#: Statistics the correlation kernels return, in order.
_STATS = ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p")

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
    The SC-WEATs are computed for every lexicon row and then the targets taken (row-wise
    reductions over contiguous copies: the same numbers as on the targets alone, without two
    fancy-index copies per polar set). The product's last bits depend on the BLAS thread count:
    the CLI computes with one (:func:`emb.analyses.stats.single_threaded_blas`, and on the
    workers of a ``--scheduler``), as Dask's nanny-started workers do by default.
    """
    return _fused(X, n_lex=n_lex, specs=specs, tok=tok, ddof=ddof)


def _as_slice(cols: list[int]) -> slice | np.ndarray:
    """Column positions as a slice where they are a run (a cheaper copy than a fancy index)."""
    if cols and cols == list(range(cols[0], cols[0] + len(cols))):
        return slice(cols[0], cols[0] + len(cols))
    return np.asarray(cols, dtype=np.intp)


def _effect_sizes(
    cos: np.ndarray, a: slice | np.ndarray, b: slice | np.ndarray, *, ddof: int
) -> np.ndarray:
    """SC-WEAT of every row of ``cos`` against the columns ``a`` and ``b``: the number of
    :func:`emb.analyses.stats.sc_weat_effect_size` (checked against it to 1e-12 in the tests),
    in two passes over the columns without concatenating them: the row sums give both means,
    and the squared deviations from the pooled mean (``einsum``, no squared temporary) the
    standard deviation.
    """
    ca, cb = cos[:, a], cos[:, b]
    na, nb = ca.shape[1], cb.shape[1]
    n = na + nb
    if n - ddof <= 0:
        raise AnalysisError(
            f"a standard deviation with ddof={ddof} needs more than {ddof} values; got {n}: "
            "use more words or a smaller ddof"
        )
    sa, sb = ca.sum(axis=1), cb.sum(axis=1)
    pooled = ((sa + sb) / n)[:, None]
    da, db = ca - pooled, cb - pooled
    ss = np.einsum("ij,ij->i", da, da) + np.einsum("ij,ij->i", db, db)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sa / na - sb / nb) / np.sqrt(ss / (n - ddof))


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
    return _nullified(X, specs=specs, fit=fit, k_max=k_max, ddof=ddof)


def _nullified(
    X: np.ndarray, *, specs: Sequence[_Spec], fit: np.ndarray, k_max: int, ddof: int
) -> np.ndarray:
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
