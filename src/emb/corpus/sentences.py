"""Sentence units: sentencex's spans of a text, and a vectorised test of which records of a block
are one sentence (most corpus lines), so that the splitter runs only where it can split.

A text whose body (the text without its trailing spaces and tabs, then without its final run of
``.!?…``) holds none of ``.!?…。！？\n\r)`` is one sentence; :func:`_sentences` says so without
calling sentencex, and :func:`one_sentence` applies the same rule to the UTF-8 bytes of every
record of a block at once (NumPy), exactly (tested against :func:`_sentences`).
"""

from __future__ import annotations

import re

import numpy as np

from emb.errors import CorpusError

__all__ = ["one_sentence"]

#: Where sentencex may end a sentence: terminal punctuation, line breaks, and list markers such as
#: "(1)" or "b)". A text with none of them before its final run of ``.!?…`` is one sentence
#: (checked against sentencex on all 193,889 lines of the shared corpus; tests/extraction checks 1/7).
_TERMINATORS = re.compile(r"[.!?…。！？\n\r]|\(\s*\w{1,4}\s*\)|\w\)")
_CANDIDATES = re.compile(r"[.!?…。！？\n\r)]")  # one character class: a fast first look


def _sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans (character offsets) covering ``text``, by sentencex's English rules.

    A text without a terminator before its final ``.!?…`` run is one sentence; sentencex is not
    called for it (most corpus lines, and the bulk of the time it would take).
    """
    body = text.rstrip(" \t").rstrip(".!?…")
    if not _CANDIDATES.search(body) or not _TERMINATORS.search(body):
        return [(0, len(text))]
    try:
        import sentencex
    except ImportError as exc:  # pragma: no cover - a declared dependency of the extra
        raise CorpusError(
            "the 'sentence' context unit needs the 'sentencex' package; run "
            "pip install 'emb[corpus]' (or use --unit document)"
        ) from exc
    return [(b["start_index"], b["end_index"]) for b in sentencex.get_sentence_boundaries("en", text)]


def _sentence_of(spans: list[tuple[int, int]], position: int) -> int:
    for i, (a, b) in enumerate(spans):
        if a <= position < b:
            return i
    return len(spans)  # not covered by the splitter: a unit of its own


# UTF-8 of the multi-byte terminators: … 。 ！ ？
_WIDE = (b"\xe2\x80\xa6", b"\xe3\x80\x82", b"\xef\xbc\x81", b"\xef\xbc\x9f")


def _byte_table(values: dict[bytes, int]) -> bytes:
    table = bytearray(256)
    for chars, value in values.items():
        for c in chars:
            table[c] = value
    return bytes(table)


#: bytes.translate tables: terminators (1) and the lead bytes of the wide ones (2)
_MARKS = _byte_table({b".!?\n\r)": 1, bytes({w[0] for w in _WIDE}): 2})
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[32, 9]] = True
_FINAL = np.zeros(256, dtype=bool)
_FINAL[[46, 33, 63]] = True


def one_sentence(data: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which records ``data[starts[i]:ends[i]]`` (UTF-8) :func:`_sentences` keeps whole, without
    calling it: True where the body (``rstrip(" \\t").rstrip(".!?…")``) holds no terminator of
    ``.!?…。！？\\n\\r)``. False means "ask :func:`_sentences`" (it may still find one sentence).

    The bodies' ends are found by stepping back over the trailing bytes of all records at once
    (a few steps: such runs are short); the terminators are counted between by binary search.
    """
    arr = np.frombuffer(data, dtype=np.uint8)
    starts = np.asarray(starts, dtype=np.int64)
    body = np.asarray(ends, dtype=np.int64).copy()
    while True:  # rstrip(" \t")
        step = (body > starts) & _SPACE[arr[np.maximum(body - 1, 0)]]
        if not step.any():
            break
        body -= step
    while True:  # rstrip(".!?…"), "…" being three bytes
        one = (body > starts) & _FINAL[arr[np.maximum(body - 1, 0)]]
        three = body - 3 >= starts
        for k, byte in enumerate(_WIDE[0]):
            three &= arr[np.maximum(body - 3 + k, 0)] == byte
        if not (one.any() or three.any()):
            break
        body -= one + 3 * three
    kind = np.frombuffer(data.translate(_MARKS), dtype=np.uint8)
    marks = np.flatnonzero(kind != 0)  # a bool mask: numpy's fast nonzero
    wide = marks[(kind[marks] == 2) & (marks + 2 < len(arr))]
    real = np.zeros(len(wide), dtype=bool)
    for seq in _WIDE:
        real |= (arr[wide] == seq[0]) & (arr[wide + 1] == seq[1]) & (arr[wide + 2] == seq[2])
    marks = marks[kind[marks] == 1]
    if real.any():  # rare: merge in the wide terminators (both sorted; no sort of the whole)
        marks = np.sort(np.concatenate([marks, wide[real]]))
    count = np.searchsorted(marks, body) - np.searchsorted(marks, starts)
    return count == 0
