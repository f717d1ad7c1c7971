"""Seeded bottom-n reservoirs: per stimulus, the ``n`` candidates with the smallest 64-bit keys.

Every candidate context unit gets a key, a hash of (seed, stimulus, file name, byte offset of its
record, its ordinal among that record's units holding the stimulus) (:func:`candidate_keys`). A
stimulus keeps the ``n`` candidates with the smallest (key, file, offset, ordinal): a uniform
sample without replacement of its candidates (distinct candidates get independent uniform keys),
and a function of the corpus and the options only. Partial reservoirs of any split of the files
merge exactly (take the ``n`` smallest again), whatever the number of workers.

:class:`Reservoirs` works a block of candidates at a time, in NumPy: the keys of a block are
compared with each stimulus' current ``n``-th smallest key (its threshold) in one vectorised test,
and only the candidates that pass get their payload (the record's text, line, id) built and
buffered. A stimulus' buffer is cut back to its ``n`` smallest (``np.lexsort`` over the key and the
tie-breakers) when it reaches ``2n``, which tightens its threshold; memory stays below ``2n``
candidates per stimulus.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence

import numpy as np

__all__ = ["Reservoirs", "below", "candidate_keys"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MAX = np.iinfo(np.uint64).max


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (a bijection of uint64 with full avalanche)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def _hash64(*parts: object) -> int:
    text = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


@functools.lru_cache(maxsize=8)
def _stimulus_hashes(seed: int, stimuli: tuple[str, ...]) -> np.ndarray:
    return np.asarray([_hash64("emb-ceat", seed, s) for s in stimuli], dtype=np.uint64)


def candidate_keys(
    seed: int, stimuli: Sequence[str], file_name: str, stim: np.ndarray, offsets: np.ndarray,
    ordinals: np.ndarray,
) -> np.ndarray:
    """The 64-bit sampling key of each candidate.

    ``mix(mix(mix(offset ^ h(file)) + (ordinal + 1)·φ) ^ h(seed, stimulus))`` with ``mix``
    splitmix64's finaliser, ``h`` blake2b (8 bytes) and φ the golden-ratio constant.
    """
    base = _stimulus_hashes(int(seed), tuple(stimuli))
    fhash = np.uint64(_hash64("file", file_name))
    with np.errstate(over="ignore"):
        z = _mix(offsets.astype(np.uint64) ^ fhash)
        z = _mix(z + (ordinals.astype(np.uint64) + np.uint64(1)) * _GOLDEN)
        return _mix(z ^ base[stim])


class Reservoirs:
    """Per stimulus, the ``n`` smallest (key, file, offset, ordinal) offered so far.

    Candidates are columns of equal length: ``key`` (uint64), ``file``, ``offset``, ``ordinal``
    (int64) and any payload columns (NumPy arrays, object dtype for texts). :meth:`admit` says
    which candidates of a block can still enter (before their payload is built); :meth:`add`
    buffers them.

    Parameters
    ----------
    n_stimuli : int
    n : int
        Candidates kept per stimulus.
    """

    def __init__(self, n_stimuli: int, n: int) -> None:
        self.n = n
        self.seen = np.zeros(n_stimuli, dtype=np.int64)
        self.threshold = np.full(n_stimuli, _MAX, dtype=np.uint64)
        self._chunks: list[list[tuple[np.ndarray, ...]]] = [[] for _ in range(n_stimuli)]
        self._size = np.zeros(n_stimuli, dtype=np.int64)

    def admit(self, stim: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """Count a block's candidates as seen; True where one may enter its stimulus' reservoir."""
        self.seen += np.bincount(stim, minlength=len(self.seen))
        return keys <= self.threshold[stim]

    def add(self, stim: np.ndarray, columns: Sequence[np.ndarray]) -> None:
        """Buffer admitted candidates; ``columns[:4]`` are key, file, offset, ordinal."""
        if not len(stim):
            return
        order = np.argsort(stim, kind="stable")
        stim = stim[order]
        columns = [c[order] for c in columns]
        cuts = np.flatnonzero(stim[1:] != stim[:-1]) + 1
        bounds = np.concatenate([[0], cuts, [len(stim)]]).tolist()
        limit = 2 * self.n
        for s, a, b in zip(stim[bounds[:-1]].tolist(), bounds[:-1], bounds[1:], strict=True):
            self._chunks[s].append(tuple(c[a:b] for c in columns))
            self._size[s] += b - a
            if self._size[s] >= limit:
                self._cut(s)

    def _cut(self, s: int) -> tuple[np.ndarray, ...]:
        """Keep stimulus ``s``'s ``n`` smallest, sorted; update its threshold."""
        chunks = self._chunks[s]
        if not chunks:
            return ()
        cols = chunks[0] if len(chunks) == 1 else tuple(
            np.concatenate(parts) for parts in zip(*chunks, strict=True)
        )
        key, file, offset, ordinal = cols[:4]
        order = np.lexsort((ordinal, offset, file, key))[: self.n]
        cols = tuple(c[order] for c in cols)
        self._chunks[s] = [cols]
        self._size[s] = len(order)
        if len(order) == self.n:
            self.threshold[s] = cols[0][-1]
        return cols

    def bound(self, limit: np.ndarray) -> None:
        """Lower the thresholds to ``limit`` (per stimulus): the thresholds of other workers'
        reservoirs over other files.  Exact: a candidate whose key is above another reservoir's
        threshold has ``n`` smaller keys there, so it is not among the ``n`` smallest of the
        union and the merge would drop it anyway."""
        np.minimum(self.threshold, limit, out=self.threshold)

    def kept(self) -> list[tuple[np.ndarray, ...]]:
        """Per stimulus, its kept candidates' columns in ascending (key, file, offset, ordinal)."""
        return [self._cut(s) for s in range(len(self._chunks))]


def below(kept: list[tuple[np.ndarray, ...]], limit: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """``kept`` (see :meth:`Reservoirs.kept`) without the candidates whose key is above their
    stimulus' ``limit`` (see :meth:`Reservoirs.bound`)."""
    return [
        tuple(c[: int(np.searchsorted(cols[0], limit[s], side="right"))] for c in cols)
        if len(cols) else cols
        for s, cols in enumerate(kept)
    ]
