"""The numpy kernels of the ``vast`` analysis: one (lexicon, setting) block in, statistics out.

A kernel gets the vectors of one block (lexicon rows first, then the polar rows) at some layers
and poolings and returns the correlation statistics of every rating (:func:`_fused_kernel`) or
of the nullification sweep (:func:`_nullified_kernel`, :func:`_best_kernel`).
:mod:`emb.analyses.vast._blocks` plans the blocks and wires the kernels into dask; nothing here
is public API.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from emb.analyses import stats
from emb.analyses.stats.nullify import iter_sweep_cosines, project, top_components
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

    @cached_property
    def y_ranks(self) -> np.ndarray:
        """The ratings' average ranks, once for every layer and pooling (Spearman's rho)."""
        return stats.average_ranks(self.y)


# -- numpy kernels ---------------------------------------------------------------------------------
def _correlate(es: np.ndarray, y: np.ndarray, y_ranks: np.ndarray | None = None) -> np.ndarray:
    """(..., n) effect sizes vs (..., n) ratings -> (..., 7) statistics; ``y_ranks``: the
    ratings' average ranks, when ranked once for many calls."""
    y = np.broadcast_to(y, es.shape)
    pe = stats.pearson(es, y, axis=-1)
    sp = stats.spearman(es, y, axis=-1, y_ranks=y_ranks)
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


def _row_norms(x: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("ij,ij->i", x, x))


def _bad_norms(norm: np.ndarray) -> int:
    """How many rows have a zero or non-finite length (SC-WEAT is undefined for them)."""
    return int((~(norm > 0) | ~np.isfinite(norm)).sum())


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

    @cached_property
    def y_ranks(self) -> np.ndarray:
        """The ratings' average ranks per subset, once for every layer and pooling."""
        return stats.average_ranks(self.y[self.subsets])


def _fused_kernel(
    X: np.ndarray, P: np.ndarray, *, n_lex: int, specs: Sequence[_Spec],
    tok: _Tokenization | None, ddof: int,
) -> tuple[np.ndarray, np.ndarray]:
    """One pass over a block of one (lexicon, setting): its ``n_lex`` lexicon rows X (...,
    n_lex, d) and its other rows P (..., rows, d), block row ``n_lex + i`` being P's row ``i``
    (two inputs: the lexicon rows, one run of the store, are not copied into one array with
    the polar rows) -> curves (..., spec, stat) and tokenization (..., token_set, subset, stat).

    Per (layer, pooling) and tile of ``_TILE`` lexicon rows, the cosines of every row with
    every polar row any experiment needs are one matrix product (each polar row once), copied
    with every set's A and B columns side by side; each rating and the tokenization
    sets read their slice of it. The SC-WEATs are computed for every lexicon row and then the
    targets taken (row-wise reductions: the same numbers as on the targets alone). A tile keeps
    its cast, cosines and effect sizes in the CPU's cache. The ratings are ranked once per
    spec (:attr:`_Spec.y_ranks`). The product's last bits depend on the BLAS thread count:
    the CLI computes with one (:func:`emb.analyses.stats.single_threaded_blas`, and on the
    workers of a ``--scheduler``), as Dask's nanny-started workers do by default.
    """
    return _fused(X, P, n_lex=n_lex, specs=specs, tok=tok, ddof=ddof)


def _effect_sizes(cos: np.ndarray, n_a: int, *, ddof: int) -> np.ndarray:
    """SC-WEAT of every row of ``cos`` (rows, |A| + |B|), A's columns first: the number of
    :func:`emb.analyses.stats.sc_weat_effect_size` (checked against it to 1e-12 in the tests),
    in two passes: the row sums give both means, and the squared deviations from the pooled
    mean (``einsum``, no squared temporary) the standard deviation. Float32 cosines are summed
    in float64 (no float64 copy of them is made).
    """
    n = cos.shape[1]
    n_b = n - n_a
    if n - ddof <= 0:
        raise AnalysisError(
            f"a standard deviation with ddof={ddof} needs more than {ddof} values; got {n}: "
            "use more words or a smaller ddof"
        )
    sa = cos[:, :n_a].sum(axis=1, dtype=np.float64)
    sb = cos[:, n_a:].sum(axis=1, dtype=np.float64)
    dev = cos - ((sa + sb) / n)[:, None]  # float64
    ss = np.einsum("ij,ij->i", dev, dev)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sa / n_a - sb / n_b) / np.sqrt(ss / (n - ddof))


#: Lexicon rows per tile of the product: a tile's float32 copy and its cosines stay in the CPU's
#: cache between the cast, the product and the effect sizes. On the MiniLM store (blocks of
#: 14,000 rows, 2 threads) 1,024-4,096 rows were 1.1-1.2x faster than whole blocks; fewer
#: tiles also mean fewer numpy calls, each of which holds the GIL a moment.
_TILE = 2048


def _fused(
    X: np.ndarray, P: np.ndarray, *, n_lex: int, specs: Sequence[_Spec],
    tok: _Tokenization | None, ddof: int,
) -> tuple[np.ndarray, np.ndarray]:
    if X.shape[-2] != n_lex:
        raise AnalysisError(f"the kernel got {X.shape[-2]} lexicon rows, expected {n_lex}")
    lead = X.shape[:-2]
    flat = X.reshape((-1, *X.shape[-2:]))
    flat_rest = P.reshape((-1, *P.shape[-2:]))
    work = _work_dtype(X.dtype)
    sets = [(s.a, s.b) for s in specs if s.valid]
    if tok is not None and tok.valid:
        sets.append((tok.a, tok.b))
    # the product's columns: each polar row once; then every set's A and B side by side (a
    # polar row may be in several sets), so that a set's cosines are a slice, not a copy
    order = np.concatenate([np.concatenate([a, b]) for a, b in sets] + [np.zeros(0, np.intp)])
    polar, gather = np.unique(order.astype(np.intp), return_inverse=True)
    offsets = np.cumsum([0] + [a.size + b.size for a, b in sets])
    n_sub = tok.subsets.shape[1] if tok is not None else 0
    curves = np.empty((flat.shape[0], len(specs), len(_STATS)))
    toks = np.empty((flat.shape[0], 2, n_sub, len(_STATS)))
    es = np.empty((len(sets), n_lex))
    in_lex = polar < n_lex  # polar is sorted: the lexicon's rows (other ratings' poles) first
    for j, block in enumerate(flat):
        # every row's length is checked: the rows after the lexicon's here, the lexicon's tile
        # by tile
        rest = np.asarray(flat_rest[j], dtype=work)
        bad = _bad_norms(_row_norms(rest))
        x_polar = np.concatenate([np.asarray(block[polar[in_lex]], dtype=work),
                                  rest[polar[~in_lex] - n_lex]])
        with np.errstate(invalid="ignore", divide="ignore"):
            unit_polar = (x_polar / _row_norms(x_polar)[:, None]).T.copy()
        for start in range(0, n_lex, _TILE):
            stop = min(start + _TILE, n_lex)
            x = np.asarray(block[start:stop], dtype=work)
            norm = _row_norms(x)
            bad += _bad_norms(norm)
            cos = x @ unit_polar
            with np.errstate(invalid="ignore", divide="ignore"):
                cos /= norm[:, None]
            cos = cos[:, gather]
            for k, (a, _) in enumerate(sets):
                es[k, start:stop] = _effect_sizes(cos[:, offsets[k]:offsets[k + 1]], a.size,
                                                  ddof=ddof)
        if bad:
            raise AnalysisError(
                f"{bad} embedding vectors have zero or non-finite length; SC-WEAT is "
                "undefined for them: check the store ('emb validate --deep')"
            )
        k = 0
        for i, spec in enumerate(specs):
            if not spec.valid:
                curves[j, i] = _empty_stats(())
                continue
            curves[j, i] = _correlate(es[k][spec.targets], spec.y, spec.y_ranks)
            k += 1
        if tok is not None:
            if not tok.valid:
                toks[j] = _empty_stats((2, n_sub))
                continue
            targets = es[k][tok.targets]
            toks[j] = _correlate(targets[tok.subsets], tok.y[tok.subsets], tok.y_ranks)
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
