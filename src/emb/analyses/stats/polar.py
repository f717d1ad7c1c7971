"""Polar (SensePOLAR) projection: bases of pole differences and coordinates by pseudo-inverse.

A basis ``a`` (h × f) stacks ``h`` dimension vectors ``a_k = p_k,high − p_k,low``, each pole the
mean of its sense vectors. A vector ``x`` gets the coordinates ``d = pinv(aᵀ) x``, the
minimum-norm least-squares solution of ``aᵀ d ≈ x`` (Mathew et al. 2020; Engler et al. 2022).
Every kernel broadcasts over leading batch axes (layers, poolings) and works in float64 unless
told otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from emb.errors import AnalysisError

__all__ = ["held_out_coordinates", "pole_basis", "polar_coordinates", "segment_means"]

#: Held-out senses handled per batched pseudo-inverse (bounds memory: chunk × h × f floats).
_CHUNK = 64


def segment_means(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Means of consecutive runs of rows: ``values`` (..., n, f) cut into runs of ``counts``.

    Returns
    -------
    numpy.ndarray
        (..., len(counts), f), float64.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if counts.size == 0:
        return np.zeros((*values.shape[:-2], 0, values.shape[-1]))
    if np.any(counts < 1) or counts.sum() != values.shape[-2]:
        raise AnalysisError(f"segment counts {counts.tolist()[:10]} do not cover {values.shape[-2]} rows")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    sums = np.add.reduceat(np.asarray(values, dtype=np.float64), starts, axis=-2)
    return sums / counts[:, None]


def _weights(mask: np.ndarray) -> np.ndarray:
    mask = np.asarray(mask, dtype=bool)
    n = mask.sum(axis=-1, keepdims=True)
    if np.any(n == 0):
        raise AnalysisError("every pole needs at least one sense; a pole of the basis has none")
    return mask / n


def pole_basis(senses: np.ndarray, high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """Dimension vectors ``a_k = mean(senses[high[k]]) − mean(senses[low[k]])``.

    Parameters
    ----------
    senses : numpy.ndarray
        (..., s, f) sense vectors.
    high, low : numpy.ndarray
        (h, s) boolean membership of each sense in each dimension's high / low pole.

    Returns
    -------
    numpy.ndarray
        (..., h, f) float64.
    """
    senses = np.asarray(senses, dtype=np.float64)
    return (_weights(high) - _weights(low)) @ senses


def polar_coordinates(basis: np.ndarray, x: np.ndarray, *, dtype: Any = np.float64) -> np.ndarray:
    """Coordinates ``d = pinv(aᵀ) x`` of every row of ``x`` in ``basis``.

    Parameters
    ----------
    basis : numpy.ndarray
        (..., h, f) dimension vectors (rows).
    x : numpy.ndarray
        (..., n, f) vectors to project.
    dtype : numpy dtype, default float64
        Precision of the pseudo-inverse and the product (``float32`` reproduces the authors'
        code); the result is float64.

    Returns
    -------
    numpy.ndarray
        (..., n, h): ``x @ pinv(aᵀ)ᵀ``, equal to ``numpy.linalg.lstsq(aᵀ, xᵀ)`` (minimum norm).

    Notes
    -----
    ``numpy.linalg.pinv`` (SVD, singular values below ``1e-15 · σ_max`` dropped).
    """
    a = np.asarray(basis, dtype=dtype)
    inverse = np.linalg.pinv(np.swapaxes(a, -1, -2))  # (..., h, f)
    return np.asarray(np.asarray(x, dtype=dtype) @ np.swapaxes(inverse, -1, -2), dtype=np.float64)


def held_out_coordinates(
    senses: np.ndarray,
    high: np.ndarray,
    low: np.ndarray,
    dimension: np.ndarray,
    sense: np.ndarray,
) -> np.ndarray:
    """Leave-one-sense-out: each held-out sense's coordinate on its own dimension, in the basis
    rebuilt without it.

    Parameters
    ----------
    senses : numpy.ndarray
        (..., s, f) sense vectors.
    high, low : numpy.ndarray
        (h, s) pole membership (as in :func:`pole_basis`).
    dimension, sense : numpy.ndarray
        (q,) integer pairs: hold out sense ``sense[i]`` (a member of a pole of dimension
        ``dimension[i]``) and read its coordinate on that dimension.

    Returns
    -------
    numpy.ndarray
        (..., q) float64; NaN where the held-out sense is its pole's only sense.
    """
    senses = np.asarray(senses, dtype=np.float64)
    high, low = np.asarray(high, dtype=bool), np.asarray(low, dtype=bool)
    dimension, sense = np.asarray(dimension, dtype=np.int64), np.asarray(sense, dtype=np.int64)
    lead = senses.shape[:-2]
    flat = senses.reshape(-1, *senses.shape[-2:])  # (B, s, f)
    basis = pole_basis(flat, high, low)  # (B, h, f)
    p_high = _weights(high) @ flat  # (B, h, f)
    p_low = _weights(low) @ flat
    out = np.full((flat.shape[0], dimension.size), np.nan)
    for start in range(0, dimension.size, _CHUNK):
        ks, js = dimension[start : start + _CHUNK], sense[start : start + _CHUNK]
        modified = np.repeat(basis[:, None], ks.size, axis=1)  # (B, c, h, f)
        usable = np.zeros(ks.size, dtype=bool)
        for i, (k, j) in enumerate(zip(ks, js, strict=True)):
            in_high = bool(high[k, j])
            if not in_high and not low[k, j]:
                raise AnalysisError(f"sense {j} is in neither pole of dimension {k}")
            members = high[k] if in_high else low[k]
            n = int(members.sum())
            if n < 2:
                continue
            usable[i] = True
            pole = p_high[:, k] if in_high else p_low[:, k]
            without = (n * pole - flat[:, j]) / (n - 1)
            modified[:, i, k] = without - p_low[:, k] if in_high else p_high[:, k] - without
        inverse = np.linalg.pinv(np.swapaxes(modified, -1, -2))  # (B, c, h, f)
        coords = np.einsum("bchf,bcf->bch", inverse, flat[:, js])
        picked = np.take_along_axis(coords, ks[None, :, None], axis=-1)[..., 0]
        out[:, start : start + ks.size] = np.where(usable, picked, np.nan)
    return out.reshape(*lead, dimension.size)
