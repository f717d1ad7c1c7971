"""Sentence corpora for the ``random`` contextual setting (torch-free).

A corpus is a sequence of sentences read from plain text (one sentence per line) or JSON Lines
(one object per line with a text field), optionally gzip-, zstandard-, xz- or bzip2-compressed.
:meth:`Corpus.find` returns the sentences that contain a word as a whole word, ignoring case,
through an inverted index built once; :meth:`Corpus.sample` draws one of them, seeded per word.

Whole-word matching: an occurrence may not touch a letter or digit on either side, and case is
ignored. ``love`` therefore matches *Love, love.*, *"love"*, *love's* and *self-love* but not
*lovely* or *glove* (the rule of Python's ``\\b`` without the underscore; it reproduces the
per-word sentence counts documented with the shared corpus). Words are tokenised with
``TOKEN_PATTERN`` (the corpus' word definition, ``don't``, ``self-love``) and each token is indexed
by its letter/digit runs, so a lookup of a one-part word is exact and a phrase or a hyphenated word
(``action figure``, ``Bobbie-Sue``) is checked with a regex among the sentences holding its rarest
part.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Literal

import numpy as np

from emb.corpus.files import compression_of, decompressed
from emb.errors import CorpusError
from emb.files.special import check_regular_file, open_regular_file

__all__ = ["TOKEN_PATTERN", "Corpus", "load_corpus", "whole_word_pattern"]

#: A word of running text: letters/digits, optionally joined by ' ’ or - (``don't``, ``self-love``).
TOKEN_PATTERN = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_PART = re.compile(r"[^\W_]+")

_JSONL_SUFFIXES = {".jsonl", ".ndjson", ".json"}
#: why a sentence corpus must be a regular file, and what to do (the end of the refusal)
_NOT_A_FILE = (
    "a corpus is read from a file (its sha256 recorded, its format told by its name); give the "
    "file itself (gzip, zstd, xz and bzip2 files are read directly) or save the stream to a "
    "file first"
)


def whole_word_pattern(word: str) -> re.Pattern[str]:
    """Compiled case-insensitive regex matching ``word`` as a whole word.

    A match may not be preceded or followed by a letter or digit (``(?<![^\\W_])`` and
    ``(?![^\\W_])``). Runs of whitespace in ``word`` match any run of whitespace.

    Parameters
    ----------
    word
        A word or multi-word phrase (non-blank).

    Returns
    -------
    re.Pattern
        Flags ``re.IGNORECASE``; ``pattern.finditer(text)`` yields every occurrence.
    """
    parts = word.split()
    if not parts:
        raise CorpusError(f"cannot match an empty word (got {word!r}); give a non-blank word")
    body = r"\s+".join(re.escape(p) for p in parts)
    left = r"(?<![^\W_])"
    right = r"(?![^\W_])"
    return re.compile(left + body + right, re.IGNORECASE)


@dataclass(frozen=True, kw_only=True, eq=False)
class Corpus:
    """Sentences, with a lazily built whole-word index.

    Attributes
    ----------
    sentences
        The sentences, in file order (blank lines skipped).
    source
        The file it was read from.
    sha256
        SHA-256 of the file's bytes as stored (compressed or not).
    line_numbers
        1-based line of each sentence in the (decompressed) file.
    """

    sentences: tuple[str, ...]
    source: str
    sha256: str
    line_numbers: tuple[int, ...] = ()
    _index: dict[str, np.ndarray] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def from_sentences(cls, sentences: Sequence[str], *, source: str = "<memory>") -> Corpus:
        """A corpus of in-memory sentences (sha256 over the sentences joined by newlines)."""
        stripped = tuple(s.strip() for s in sentences)
        if not any(stripped):
            raise CorpusError(f"corpus {source} has no sentences; give at least one sentence")
        kept = [(i, s) for i, s in enumerate(stripped, start=1) if s]
        return cls(
            sentences=tuple(s for _, s in kept),
            source=source,
            sha256=hashlib.sha256("\n".join(stripped).encode("utf-8")).hexdigest(),
            line_numbers=tuple(i for i, _ in kept),
        )

    def __len__(self) -> int:
        return len(self.sentences)

    def _build_index(self) -> dict[str, np.ndarray]:
        if not self._index:
            postings: defaultdict[str, list[int]] = defaultdict(list)
            findall = _PART.findall  # the letter/digit runs of every TOKEN_PATTERN token
            for i, sentence in enumerate(self.sentences):
                for part in set(findall(sentence.lower())):
                    postings[part].append(i)
            self._index.update(
                (token, np.asarray(ids, dtype=np.int64)) for token, ids in postings.items()
            )
        return self._index

    def find(self, word: str) -> np.ndarray:
        """Indices (ascending, int64) of the sentences containing ``word`` as a whole word.

        Matching ignores case and follows :func:`whole_word_pattern`. A word that is one run of
        letters/digits is looked up in the inverted index; for a phrase or a joined word
        (``action figure``, ``Bobbie-Sue``) the sentences holding its rarest part are checked with
        the regex; a word with no letters or digits (``:)``) is searched in every sentence.
        """
        index = self._build_index()
        tokens = _PART.findall(word.lower())
        empty = np.zeros(0, dtype=np.int64)
        if len(tokens) == 1 and tokens[0] == word.strip().lower():
            return index.get(tokens[0], empty)
        pattern = whole_word_pattern(word)
        if tokens:
            candidates = min((index.get(t, empty) for t in tokens), key=len)
        else:
            candidates = np.arange(len(self.sentences), dtype=np.int64)
        hits = [i for i in candidates.tolist() if pattern.search(self.sentences[i])]
        return np.asarray(hits, dtype=np.int64)

    def count(self, word: str) -> int:
        """Number of sentences containing ``word`` (see :meth:`find`)."""
        return int(len(self.find(word)))

    def sample(self, word: str, *, seed: int = 0) -> tuple[str, int, int] | None:
        """One sentence containing ``word``, drawn at random, and the word's span in it.

        The draw uses ``np.random.default_rng([seed, zlib.crc32(word.encode())])``, so it is
        reproducible for a word and independent of which other words are drawn.

        Returns
        -------
        (sentence, char_start, char_end) or None
            ``sentence[char_start:char_end]`` is the first occurrence of ``word`` in the chosen
            sentence, in the sentence's own case; ``None`` when no sentence contains the word.
        """
        hits = self.find(word)
        if len(hits) == 0:
            return None
        rng = np.random.default_rng([int(seed), zlib.crc32(word.encode("utf-8"))])
        sentence = self.sentences[int(hits[rng.integers(len(hits))])]
        match = whole_word_pattern(word).search(sentence)
        if match is None:  # the index and the regex disagree: a bug, not a user error
            raise CorpusError(f"internal error: {word!r} indexed but not found in {sentence!r}")
        return sentence, match.start(), match.end()

    def to_dict(self) -> dict[str, object]:
        """Provenance: source, sha256 and number of sentences (not the text)."""
        return {"source": self.source, "sha256": self.sha256, "n_sentences": len(self.sentences)}


def _decompress(raw: bytes, path: Path) -> bytes:
    """The bytes of a file as stored, decompressed when they are gzip, zstandard, xz or bzip2
    (every member or frame, the end checked: see :func:`emb.corpus.files.decompressed`)."""
    kind = compression_of(raw[:8])
    if kind in ("none", "parquet"):
        return raw
    with decompressed(io.BytesIO(raw), compression=kind, path=str(path)) as stream:
        return stream.read()


def _jsonl_text(line: str, text_field: str, where: str) -> str:
    """The sentence of one JSON Lines line (a JSON object with the sentence under ``text_field``).

    Raises
    ------
    CorpusError
        Invalid JSON (also: nested too deeply for the parser, an integer of over 4,300 digits),
        not an object, no such field, a field that is not a string or not valid Unicode.
    """
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CorpusError(
            f"{where}: invalid JSON ({exc.msg} at column {exc.colno}); each line must be one JSON "
            "object such as {\"text\": \"A sentence.\"}"
        ) from None
    except RecursionError:
        raise CorpusError(
            f"{where}: nested too deeply for the JSON parser; each line must be one flat JSON "
            "object such as {\"text\": \"A sentence.\"}"
        ) from None
    except ValueError:  # an integer beyond Python's 4,300-digit str limit
        raise CorpusError(
            f"{where}: holds an integer of over 4,300 digits, too long to read; remove it"
        ) from None
    if not isinstance(obj, dict) or text_field not in obj:
        found = sorted(obj)[:20] if isinstance(obj, dict) else f"a JSON {type(obj).__name__}"
        raise CorpusError(
            f"{where}: no {text_field!r} field (found {found}); give --text-field KEY "
            "(text_field= in Python), the key that holds the sentence"
        )
    value = obj[text_field]
    if not isinstance(value, str):
        kind = {dict: "an object", list: "a list", bool: "true/false", type(None): "null"}.get(
            type(value), "a number"
        )
        raise CorpusError(
            f"{where}: field {text_field!r} is {kind}, not a string; give --text-field KEY "
            "(text_field= in Python) for the key that holds the sentence"
        )
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CorpusError(
                f"{where}: field {text_field!r} holds an unpaired surrogate "
                f"{value[exc.start]!r}, which is not Unicode text; fix the \\u escape"
            ) from None
    return value


def _format_of(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in (".gz", ".zst", ".zstd", ".xz", ".bz2"):
        suffixes.pop()
    return "jsonl" if suffixes and suffixes[-1] in _JSONL_SUFFIXES else "text"


def load_corpus(
    path: str | PathLike[str],
    *,
    text_field: str = "text",
    format: Literal["auto", "text", "jsonl"] = "auto",
) -> Corpus:
    """Read a sentence corpus.

    Parameters
    ----------
    path
        Plain text (one sentence per line) or JSON Lines (``.jsonl``/``.ndjson``/``.json``, one
        object per line); gzip, zstandard, xz or bzip2 compression is detected from the file's
        first bytes. A regular file: pipes, FIFOs, devices and directories are refused.
    text_field
        Key of the sentence in each JSON object.
    format
        ``"auto"`` (from the suffix, ignoring ``.gz``/``.zst``/``.xz``/``.bz2``), ``"text"`` or
        ``"jsonl"``.

    Returns
    -------
    Corpus
        Sentences stripped of surrounding whitespace; blank lines are skipped.

    Raises
    ------
    CorpusError
        Unreadable or undecodable file (also one cut short), not a regular file, invalid JSON or
        a missing/non-string text field (naming the line), or no sentences at all.

    Examples
    --------
    >>> corpus = load_corpus("sentences.jsonl.gz")          # doctest: +SKIP
    >>> corpus.sample("love", seed=0)                         # doctest: +SKIP
    ('I love you.', 2, 6)
    """
    path = Path(path)
    if format not in ("auto", "text", "jsonl"):
        raise CorpusError(f"format must be 'auto', 'text' or 'jsonl', got {format!r}")
    check_regular_file(path, what="corpus", reason=_NOT_A_FILE, error=CorpusError)
    with open_regular_file(path, what="corpus", reason=_NOT_A_FILE, error=CorpusError) as handle:
        try:
            raw = handle.read()
        except OSError as exc:
            raise CorpusError(f"cannot read corpus {path}: {exc.strerror or exc}") from exc
    sha256 = hashlib.sha256(raw).hexdigest()
    data = _decompress(raw, path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CorpusError(
            f"corpus {path} is not UTF-8 text (line {line}: {exc.reason}); convert it to UTF-8"
        ) from exc
    kind = _format_of(path) if format == "auto" else format
    sentences: list[str] = []
    lines: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if kind == "jsonl":
            line = _jsonl_text(line, text_field, f"{path} line {number}")
        line = line.strip()
        if line:
            sentences.append(line)
            lines.append(number)
    if not sentences:
        raise CorpusError(f"corpus {path} has no sentences; give a non-empty file")
    return Corpus(
        sentences=tuple(sentences), source=str(path), sha256=sha256, line_numbers=tuple(lines)
    )
