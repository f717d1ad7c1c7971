"""Finding many stimulus words in blocks of text at once, and cutting contexts around them.

One Aho–Corasick pass over a block finds every stimulus at once. The block is first mapped byte
for byte (``bytes.translate``) so that ASCII letters and digits are kept (lower-cased unless the
match is case-sensitive) and every other byte becomes a space; a stimulus ``w`` then occurs as a
whole word exactly where ``b" w "`` occurs, except next to a non-ASCII byte (a letter such as
*é* or punctuation such as *’*), which is settled by decoding the few bytes around it. This is the
rule of :func:`emb.corpus.in_memory.whole_word_pattern` (no letter or digit on either side;
``love`` matches *love's* and *self-love*, not *lovely*) with ASCII case folding. Stimuli that
are not one ASCII word (``action figure``, ``José``) are found by a trigger (their longest ASCII
run) and confirmed with that regex on the decoded record.

Context units (:data:`UNITS`):

- ``sentence``: the sentences (split with ``sentencex``, Wikimedia's rule-based segmenter) that
  contain the stimulus; the target is its first occurrence in the sentence;
- ``document``: the whole record;
- ``reference``: the authors' code (weiguowilliam/CEAT ``generate_txt.py``/``short_sen``): five
  HTML entities and ``string.punctuation`` replaced by spaces, a case-sensitive test
  ``" " + word + " " in text`` (a word first or last in the record is missed, as there), and a
  window of the words around the first occurrence (9 words, 8 when the word is not near an edge).
"""

from __future__ import annotations

import functools
import itertools
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from emb.corpus.in_memory import whole_word_pattern
from emb.errors import CorpusError

__all__ = ["UNITS", "Matcher", "Unit", "reference_text", "reference_window"]

Unit = Literal["sentence", "document", "reference"]
UNITS: tuple[str, ...] = ("sentence", "document", "reference")

_ENTITIES = ("&gt;", "&amp;", "&lt;", "&quot;", "&apos;")
_PUNCTUATION = str.maketrans(string.punctuation, " " * len(string.punctuation))
_ASCII_WORD = re.compile(r"^[A-Za-z0-9]+$")
_ASCII_RUN = re.compile(r"[A-Za-z0-9]+")


def _table(case_sensitive: bool) -> bytes:
    table = bytearray(b" " * 256)
    for b in range(256):
        c = chr(b)
        if b < 128 and c.isalnum():
            table[b] = ord(c if case_sensitive else c.lower())
    return bytes(table)


@functools.cache
def _tables() -> dict[bool, bytes]:
    return {True: _table(True), False: _table(False)}


def reference_text(text: str) -> str:
    """The authors' preprocessing: five HTML entities and ASCII punctuation become spaces."""
    for entity in _ENTITIES:
        text = text.replace(entity, " ")
    return text.translate(_PUNCTUATION)


def reference_window(prepared: str, word: str) -> tuple[str, int, int]:
    """The authors' ``short_sen``: (context, char_start, char_end) of ``word`` in its window.

    ``wds = prepared.split()``; with at least 9 words the window is ``wds[:9]`` when the word is
    among the first 4, ``wds[-9:]`` when fewer than 4 follow it, else ``wds[i-4:i+4]``; shorter
    texts are kept whole (joined by single spaces).
    """
    wds = prepared.split()
    i = wds.index(word)
    if len(wds) >= 9:
        if i < 4:
            lo = 0
            window = wds[:9]
        elif len(wds) - i - 1 < 4:
            lo = len(wds) - 9
            window = wds[-9:]
        else:
            lo = i - 4
            window = wds[i - 4 : i + 4]
    else:
        lo, window = 0, wds
    start = sum(len(w) + 1 for w in window[: i - lo])
    return " ".join(window), start, start + len(word)


@dataclass(frozen=True)
class _Plan:
    patterns: list[bytes]
    pattern_stimuli: list[tuple[int, ...]]
    fast: np.ndarray  # (n_stimuli,) bool: found exactly by the byte pass
    regexes: list[re.Pattern[str] | None]
    stimulus_pattern: list[bytes]  # per stimulus, its byte pattern

    @functools.cached_property
    def owners(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        counts = np.asarray([len(o) for o in self.pattern_stimuli], dtype=np.int64)
        flat = np.concatenate([np.asarray(o, dtype=np.int64) for o in self.pattern_stimuli])
        return counts, flat, np.cumsum(counts) - counts, bool((counts > 1).any())


class Matcher:
    """All stimuli of a sampling run, compiled once (picklable: workers rebuild the automaton).

    Parameters
    ----------
    stimuli : sequence of str
        Distinct stimulus words or phrases.
    case_sensitive : bool
    unit : {"sentence", "document", "reference"}
    """

    def __init__(self, stimuli: Sequence[str], *, case_sensitive: bool, unit: Unit) -> None:
        if unit not in UNITS:
            raise CorpusError(f"context unit must be one of {list(UNITS)}; got {unit!r}")
        self.stimuli = tuple(stimuli)
        self.unit = unit
        # the authors' match is case-sensitive
        self.case_sensitive = bool(case_sensitive) or unit == "reference"
        self._automaton = None
        self._plan = self._make_plan()

    def __getstate__(self) -> dict:
        return {"stimuli": self.stimuli, "unit": self.unit, "case_sensitive": self.case_sensitive}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["stimuli"], case_sensitive=state["case_sensitive"], unit=state["unit"])

    def _make_plan(self) -> _Plan:
        index: dict[bytes, int] = {}
        patterns: list[bytes] = []
        owners: list[list[int]] = []
        fast = np.zeros(len(self.stimuli), dtype=bool)
        regexes: list[re.Pattern[str] | None] = []
        own: list[bytes] = []
        for s, word in enumerate(self.stimuli):
            if not word.strip():
                raise CorpusError(f"stimulus {s} is blank; give non-blank words")
            if _ASCII_WORD.match(word):
                key = word if self.case_sensitive else word.lower()
                pattern = b" " + key.encode("ascii") + b" "
                fast[s] = True
                regexes.append(None)
            else:
                runs = _ASCII_RUN.findall(word)
                if not runs:
                    raise CorpusError(
                        f"stimulus {word!r} has no ASCII letter or digit; such words are not "
                        "supported by the corpus scan yet"
                    )
                run = max(runs, key=len)
                pattern = (run if self.case_sensitive else run.lower()).encode("ascii")
                flags = 0 if self.case_sensitive else re.IGNORECASE
                regexes.append(re.compile(whole_word_pattern(word).pattern, flags))
            own.append(pattern)
            if pattern not in index:
                index[pattern] = len(patterns)
                patterns.append(pattern)
                owners.append([])
            owners[index[pattern]].append(s)
        return _Plan(patterns, [tuple(o) for o in owners], fast, regexes, own)

    @property
    def automaton(self):  # noqa: ANN201 - ahocorasick_rs.BytesAhoCorasick
        if self._automaton is None:
            try:
                import ahocorasick_rs
            except ImportError as exc:  # pragma: no cover - a declared dependency of the extra
                raise CorpusError(
                    "sampling contexts from a corpus needs the 'ahocorasick-rs' package; run "
                    "pip install 'emb[corpus]'"
                ) from exc
            self._automaton = ahocorasick_rs.BytesAhoCorasick(
                self._plan.patterns, implementation=ahocorasick_rs.Implementation.DFA
            )
        return self._automaton

    def is_fast(self, stimulus: int) -> bool:
        """Whether the stimulus is one ASCII word, found exactly by the byte pass."""
        return bool(self._plan.fast[stimulus])

    # -- byte positions ----------------------------------------------------------------------
    def _raw(self, data: bytes) -> np.ndarray:
        """(pattern, start, end) of every pattern occurrence in the translated bytes."""
        translated = data.translate(_tables()[self.case_sensitive])
        found = self.automaton.find_matches_as_indexes(translated, overlapping=True)
        if not found:
            return np.zeros((0, 3), dtype=np.int64)
        # from the flat iterator: twice as fast as np.asarray on the list of tuples
        flat = np.fromiter(itertools.chain.from_iterable(found), dtype=np.int64, count=3 * len(found))
        return flat.reshape(-1, 3)

    def scan(self, chunk: bytes) -> np.ndarray:
        """(pattern, start, end) of every pattern occurrence in a chunk of raw lines: a prefilter
        (:func:`~emb.corpus.stream.iter_blocks`) whose hits in verbatim texts are reused
        by :meth:`occurrences`."""
        return self._raw(chunk)

    def _hits(self, data: bytes, starts: np.ndarray, ends: np.ndarray, known: Any) -> np.ndarray:
        """The block's raw hits: those already known, and a scan of the other records only."""
        if known is None:
            return self._raw(data)
        mask, hits = known
        todo = np.flatnonzero(~mask)
        if not len(todo):
            return hits
        if 2 * len(todo) > len(mask):  # most records unknown: scanning them all is cheaper
            return self._raw(data)
        a, b = starts[todo], ends[todo]
        pieces = list(map(data.__getitem__, map(slice, a.tolist(), b.tolist())))
        lengths = b - a
        first = np.cumsum(lengths + 1) - lengths  # where each piece starts in the joined bytes
        found = self._raw(b"\x00" + b"\x00".join(pieces) + b"\x00")
        if not len(found):
            return hits
        j = np.searchsorted(first, found[:, 1] + 1, side="right") - 1
        shift = a[j] - first[j]
        moved = np.column_stack([found[:, 0], found[:, 1] + shift, found[:, 2] + shift])
        return np.concatenate([hits, moved])

    def prefilter(self, chunk: bytes) -> np.ndarray:
        """Byte positions in raw lines where a stimulus may occur (a superset of the matches)."""
        raw = self._raw(chunk)
        return raw[:, 1] if len(raw) else np.zeros(0, dtype=np.int64)

    def occurrences(
        self, data: bytes, starts: np.ndarray, ends: np.ndarray, known: Any = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every occurrence of every stimulus in a block of records.

        Parameters
        ----------
        data : bytes
            Record texts, each preceded and followed by a non-alphanumeric byte.
        starts, ends : numpy.ndarray of int64
            Record i is ``data[starts[i]:ends[i]]`` (increasing, non-overlapping).
        known : (numpy.ndarray of bool, numpy.ndarray), optional
            Records whose raw hits are known (:attr:`RecordBlock.known`, from :meth:`scan` as the
            prefilter) and those hits: only the other records are scanned.

        Returns
        -------
        record, stimulus, byte_start, byte_end : numpy.ndarray of int64
            Sorted by record, stimulus and position; positions index ``data``.
        """
        raw = self._hits(data, starts, ends, known)
        plan = self._plan
        empty = np.zeros(0, dtype=np.int64)
        if not len(raw) or not len(starts):
            return empty, empty, empty, empty
        pat, s, e = raw[:, 0], raw[:, 1], raw[:, 2]
        # a pattern may serve several stimuli ("Bill" and "bill" without case)
        counts, owners, first, shared = plan.owners
        if shared:
            rep = counts[pat]
            pat_r = np.repeat(pat, rep)
            within = np.arange(len(pat_r)) - np.repeat(np.cumsum(rep) - rep, rep)
            stim = owners[first[pat_r] + within]
            s, e = np.repeat(s, rep), np.repeat(e, rep)
        else:
            stim = owners[pat]
        fast = plan.fast[stim]
        ws = np.where(fast, s + 1, s)
        we = np.where(fast, e - 1, e)
        rec = np.searchsorted(starts, ws, side="right") - 1
        inside = (rec >= 0) & (we <= ends[np.maximum(rec, 0)])
        rec, stim, ws, we, fast = rec[inside], stim[inside], ws[inside], we[inside], fast[inside]
        arr = np.frombuffer(data, dtype=np.uint8)
        check = fast & ((arr[ws - 1] >= 128) | (arr[we] >= 128))
        keep = np.ones(len(rec), dtype=bool)
        for i in np.flatnonzero(check).tolist():
            keep[i] = _boundary_ok(data, int(ws[i]), int(we[i]))
        rec, stim, ws, we = rec[keep], stim[keep], ws[keep], we[keep]
        slow = ~plan.fast[stim]
        if slow.any():
            rec, stim, ws, we = self._confirm_slow(data, starts, ends, rec, stim, ws, we, slow)
        order = np.lexsort((ws, stim, rec))
        return rec[order], stim[order], ws[order], we[order]

    def _confirm_slow(self, data, starts, ends, rec, stim, ws, we, slow):  # noqa: ANN001, ANN202
        """Replace the trigger hits of regex stimuli by their real occurrences."""
        pairs = sorted(set(zip(rec[slow].tolist(), stim[slow].tolist(), strict=True)))
        extra_r, extra_s, extra_a, extra_b = [], [], [], []
        for r, st in pairs:
            base = int(starts[r])
            raw = data[base : int(ends[r])]
            text = raw.decode("utf-8")
            regex = self._plan.regexes[st]
            assert regex is not None
            for m in regex.finditer(text):
                a = base + len(text[: m.start()].encode("utf-8"))
                extra_r.append(r)
                extra_s.append(st)
                extra_a.append(a)
                extra_b.append(a + len(m.group().encode("utf-8")))
        keep = ~slow
        cat = lambda a, b: np.concatenate([a[keep], np.asarray(b, dtype=np.int64)])  # noqa: E731
        return cat(rec, extra_r), cat(stim, extra_s), cat(ws, extra_a), cat(we, extra_b)

    def occurrences_in(self, text: str, stimulus: int) -> list[tuple[int, int]]:
        """Character spans of ``stimulus`` in one text, by the same rule as :meth:`occurrences`."""
        plan = self._plan
        if not plan.fast[stimulus]:
            regex = plan.regexes[stimulus]
            assert regex is not None
            return [(m.start(), m.end()) for m in regex.finditer(text)]
        raw = text.encode("utf-8")
        data = b"\n" + raw + b"\n"
        translated = data.translate(_tables()[self.case_sensitive])
        pattern = plan.stimulus_pattern[stimulus]
        width = len(pattern) - 2
        ascii_only = len(raw) == len(text)
        out = []
        i = translated.find(pattern)
        while i >= 0:
            a, b = i + 1, i + 1 + width
            if (data[a - 1] < 128 and data[b] < 128) or _boundary_ok(data, a, b):
                if ascii_only:
                    out.append((a - 1, b - 1))
                else:
                    ca = len(raw[: a - 1].decode("utf-8"))
                    out.append((ca, ca + width))
            i = translated.find(pattern, i + 1)
        return out


def _boundary_ok(data: bytes, start: int, end: int) -> bool:
    """No letter or digit right before ``start`` or at ``end`` (UTF-8 decoded)."""
    before = data[max(0, start - 4) : start].decode("utf-8", "ignore")[-1:]
    after = data[end : end + 4].decode("utf-8", "ignore")[:1]
    return not (before.isalnum() or after.isalnum())
