"""Anisotropy: the cosine any two words have in a layer, and the standardisation that removes it.

Contextual embeddings occupy a narrow cone (Ethayarajh 2019): in many layers two random words have
a mean cosine of 0.5 or more, so a cosine of 0.6 between a word and "pleasant" says little until it
is read against that baseline. :func:`pair_baseline` measures it per layer and pooling (the mean
cosine of random pairs of different words); :func:`standardize` centres each layer (subtracts the
mean vector over the suite's items) and, optionally, scales every dimension to unit variance
(Timkey & van Schijndel 2021: a few rogue dimensions dominate the cosine), before any analysis
computes a cosine. Both are lazy on dask-backed data.

References
----------
Ethayarajh, K. (2019). How contextual are contextualized word representations? EMNLP-IJCNLP,
55–65. Timkey, W. & van Schijndel, M. (2021). All bark and no bite: rogue dimensions in
transformer language models obscure representational quality. EMNLP, 4527–4546.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._select import text_column
from emb.schemas.datamodel import FEATURE, ITEM

__all__ = ["N_PAIRS", "STANDARDIZATIONS", "first_items", "pair_baseline", "random_pairs", "standardize"]

#: Random word pairs behind a layer's baseline (its standard error is about 0.1 / sqrt(N)).
N_PAIRS = 1000
#: The standardisations :func:`standardize` knows.
STANDARDIZATIONS = ("none", "center", "zscore")


def first_items(words: np.ndarray) -> np.ndarray:
    """Each distinct word's first item position, in item order."""
    # words grouped by hashing (one pass), not sorted as fixed-width text (n log n string
    # comparisons over a copy as wide as the longest word)
    codes = pd.factorize(text_column(words), use_na_sentinel=False)[0]
    # codes count up in order of first appearance: a word's first item is where the codes
    # reach a new high
    highest = np.maximum.accumulate(codes) if codes.size else codes
    return np.flatnonzero(np.r_[codes[:1] >= 0, codes[1:] > highest[:-1]])


def random_pairs(words: np.ndarray, n_pairs: int = N_PAIRS, seed: int = 0) -> np.ndarray:
    """``(n, 2)`` item positions of random pairs of *different* words (the first item of each
    word, :func:`first_items`; at most all pairs when there are fewer), seeded."""
    first = first_items(words)
    k = first.size
    if k < 2:
        return np.empty((0, 2), dtype=np.intp)
    total = k * (k - 1) // 2
    rng = np.random.default_rng(seed)
    if total <= n_pairs:
        i, j = np.triu_indices(k, 1)
    else:
        i = rng.integers(0, k, size=4 * n_pairs)
        j = rng.integers(0, k, size=4 * n_pairs)
        keep = i != j
        pairs = np.unique(np.sort(np.stack([i[keep], j[keep]], 1), axis=1), axis=0)
        pairs = pairs[rng.permutation(len(pairs))[:n_pairs]]
        i, j = pairs[:, 0], pairs[:, 1]
    return np.stack([first[i], first[j]], axis=1).astype(np.intp)


def _mean_pair_cosine(x: np.ndarray, *, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``x (..., item, feature)`` → the mean over the pairs of ``cos(x[first], x[second])``, in
    float64, shape (...)."""
    x = np.asarray(x)
    flat = x.reshape((-1,) + x.shape[-2:])
    out = np.full(flat.shape[0], np.nan)
    if not first.size:
        return out.reshape(x.shape[:-2])
    with np.errstate(invalid="ignore", divide="ignore"):
        for i, cell in enumerate(flat):  # one cell at a time: its pairs' vectors stay in cache
            v = cell.astype(np.float64)
            squares = np.einsum("if,if->i", v, v)  # each item's squared norm, once
            dot = np.einsum("pf,pf->p", v[first], v[second])
            out[i] = (dot / np.sqrt(squares[first] * squares[second])).mean()
    return out.reshape(x.shape[:-2])


#: Largest block (bytes, as stored) of the pairs' vectors handed to one kernel call.
_MAX_BLOCK_BYTES = 64 * 2**20


def pair_baseline(embedding: xr.DataArray, words: np.ndarray, *, n_pairs: int = N_PAIRS,
                  seed: int = 0) -> xr.DataArray:
    """The mean cosine of random pairs of different words, per every dim of ``embedding`` but
    ``item`` and ``feature`` (layer, pooling), lazily; attribute ``n_pairs``.

    The items the pairs use are gathered once and the cosines computed by one kernel per block
    of layers and poolings (a few tasks, not a graph per pair side and operation)."""
    pairs = random_pairs(words, n_pairs, seed)
    used, inverse = np.unique(pairs.ravel(), return_inverse=True)
    inverse = inverse.reshape(pairs.shape)
    picked = embedding.isel({ITEM: used})
    picked = picked.drop_vars([c for c in picked.coords if ITEM in picked[c].dims])
    if picked.chunks is not None:
        merged = {ITEM: -1, FEATURE: -1}
        block = picked.dtype.itemsize * picked.sizes[ITEM] * picked.sizes[FEATURE]
        for dim in picked.dims:
            if dim not in merged and block * picked.sizes[dim] <= _MAX_BLOCK_BYTES:
                merged[dim] = -1
                block *= picked.sizes[dim]
        picked = picked.chunk(merged)
    out = xr.apply_ufunc(
        _mean_pair_cosine, picked, input_core_dims=[[ITEM, FEATURE]],
        kwargs={"first": inverse[:, 0], "second": inverse[:, 1]},
        dask="parallelized", output_dtypes=[np.float64])
    out.attrs = {"long_name": "mean cosine of random pairs of different words (anisotropy)",
                 "n_pairs": int(len(pairs))}
    return out


def standardize(embedding: xr.DataArray, how: Literal["none", "center", "zscore"]) -> xr.DataArray:
    """``embedding`` centred per layer and pooling (the mean over items subtracted) and, with
    ``zscore``, every dimension divided by its standard deviation over items (a constant
    dimension is left at 0), in float32 or wider; ``none`` returns it as it is."""
    if how == "none":
        return embedding
    values = embedding.astype(np.promote_types(embedding.dtype, np.float32))
    centred = values - values.mean(ITEM)
    if how == "center":
        return centred
    sd = values.std(ITEM)
    return centred / sd.where(sd > 0, 1.0)
