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
import xarray as xr

from emb.schemas.datamodel import FEATURE, ITEM

__all__ = ["N_PAIRS", "STANDARDIZATIONS", "pair_baseline", "random_pairs", "standardize"]

#: Random word pairs behind a layer's baseline (its standard error is about 0.1 / sqrt(N)).
N_PAIRS = 1000
#: The standardisations :func:`standardize` knows.
STANDARDIZATIONS = ("none", "center", "zscore")


def random_pairs(words: np.ndarray, n_pairs: int = N_PAIRS, seed: int = 0) -> np.ndarray:
    """``(n, 2)`` item positions of random pairs of *different* words (the first item of each
    word; at most all pairs when there are fewer), seeded."""
    words = np.asarray(words).astype(str)
    _, first = np.unique(words, return_index=True)
    first = np.sort(first)
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


def pair_baseline(embedding: xr.DataArray, words: np.ndarray, *, n_pairs: int = N_PAIRS,
                  seed: int = 0) -> xr.DataArray:
    """The mean cosine of random pairs of different words, per every dim of ``embedding`` but
    ``item`` and ``feature`` (layer, pooling), lazily; attribute ``n_pairs``."""
    pairs = random_pairs(words, n_pairs, seed)

    def side(k: int) -> xr.DataArray:  # one end of every pair, labelled only by its pair number
        picked = embedding.isel({ITEM: pairs[:, k]})
        picked = picked.drop_vars([c for c in picked.coords if ITEM in picked[c].dims])
        return picked.rename({ITEM: "pair"}).astype("float64")

    first, second = side(0), side(1)
    dot = (first * second).sum(FEATURE)
    norms = np.sqrt((first**2).sum(FEATURE) * (second**2).sum(FEATURE))
    out = (dot / norms).mean("pair")
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
