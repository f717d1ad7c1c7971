"""Corpus files read as a stream of record blocks, in bounded memory (torch-free).

A corpus is one or more files (:mod:`emb.corpus.files`): plain text (one record per line), JSON
Lines / NDJSON (one object per line; the text in ``text_field``, an id in ``id_field`` when present)
or Parquet (a string column), each optionally compressed with gzip, zstandard, xz or bzip2
(detected from the first bytes, not the suffix). Pushshift's Reddit dumps (NDJSON, zstandard with a
long window) are read as published: the decoder window is raised to 2 GiB, and records whose text
is ``[deleted]`` or ``[removed]`` are skipped (and counted).

Memory is bounded by the block size whatever the input: a record (its line in the decompressed
file; Parquet: its text) longer than :data:`MAX_RECORD_BYTES` is read through without being kept,
skipped and counted (:attr:`RecordBlock.too_long`), and so is a JSON record whose text or id holds
an unpaired surrogate escape such as ``"\\ud800"`` (:attr:`RecordBlock.invalid_unicode`: JSON
allows it, but it is no Unicode text). Nothing else is skipped: a line that is not JSON or not
UTF-8, a damaged or cut-short file, a Parquet file that cannot be read raise
:class:`~emb.errors.CorpusError` naming the file and the line (or row).

:func:`iter_blocks` yields :class:`RecordBlock` objects of a few MB of decompressed text at a time:
the texts of the records concatenated as UTF-8 (each preceded by a newline byte, so that no word
can span two records), their byte ranges, and each record's location in its file (byte offset in
the decompressed stream, 1-based line or row number). JSON is decoded only for the lines that a
caller's byte-level ``prefilter`` keeps (a superset of the records that can match), in bulk.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from emb.corpus.files import CorpusFile, Format, corpus_files, open_stream
from emb.errors import CorpusError
from emb.files.documents import text_is_unicode

__all__ = [  # CorpusFile, Format and corpus_files are handed on from emb.corpus.files
    "MAX_RECORD_BYTES",
    "CorpusFile",
    "Format",
    "RecordBlock",
    "SKIPPED_TEXTS",
    "corpus_files",
    "iter_blocks",
    "record_ids",
]

#: Record texts that are not text: Reddit's placeholders for deleted and removed comments.
SKIPPED_TEXTS = frozenset({"[deleted]", "[removed]"})
#: Decompressed bytes per block.
BLOCK_BYTES = 8 * 2**20
#: Longest record read, in bytes of its line in the decompressed file (Parquet: of its text): a
#: longer one is skipped and counted (:attr:`RecordBlock.too_long`), so that memory stays bounded
#: by the block size (a 200 MB line took 10.9 GB when it was read whole).
MAX_RECORD_BYTES = BLOCK_BYTES
# two-byte JSON escapes that end in a letter: blanked before the byte-level prefilter, so that
# "\nlove" is seen as a word boundary followed by "love" (see RecordBlock)
_LETTER_ESCAPE_BYTES = np.frombuffer(b"ntrbf", dtype=np.uint8)


@dataclass(eq=False)
class RecordBlock:
    """The texts of consecutive records of one file.

    Attributes
    ----------
    data : bytes
        ``SEP + text_0 + SEP + text_1 + … + SEP`` (UTF-8), SEP a newline (text files) or a NUL
        byte (decoded records). A text may itself hold newlines (JSON, Parquet); records are told
        apart by ``starts``, never by separators.
    starts, ends : numpy.ndarray of int64, (n,)
        ``data[starts[i]:ends[i]]`` is record i's text.
    offsets : numpy.ndarray of int64, (n,)
        Byte offset of the record's line in the decompressed file (Parquet: the row index).
    lines : numpy.ndarray of int64, (n,)
        1-based line number (Parquet: row number).
    ids : list of str
        The record's ``id_field`` value ("" when absent).
    skipped : int
        Records dropped as ``[deleted]``/``[removed]`` (or empty) in this block.
    too_long : int
        Records longer than :data:`MAX_RECORD_BYTES` dropped in (or just before) this block.
    invalid_unicode : int
        JSON records dropped because their text or id holds an unpaired surrogate (``\\ud800``).
    source_bytes : int
        Decompressed bytes of the file this block covers (all its lines, kept or not).
    texts : sequence of str, optional
        The records' texts as strings, when they were decoded ones (JSON, Parquet).
    known : (numpy.ndarray of bool, numpy.ndarray of int64), optional
        From a prefilter that returned its matcher's hits: which records' hits are already known
        (their text is verbatim in the line) and those hits (pattern, start, end) in ``data``.
    """

    data: bytes
    starts: np.ndarray
    ends: np.ndarray
    offsets: np.ndarray
    lines: np.ndarray
    ids: list[str] = field(default_factory=list)
    skipped: int = 0
    too_long: int = 0
    invalid_unicode: int = 0
    source_bytes: int = 0
    known: tuple[np.ndarray, np.ndarray] | None = None
    texts: Sequence[str] | None = None

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def text(self, i: int) -> str:
        if self.texts is not None:  # decoded records keep their strings
            return self.texts[i]
        return self.data[int(self.starts[i]) : int(self.ends[i])].decode("utf-8")

    @classmethod
    def from_texts(
        cls,
        texts: Sequence[str],
        offsets: Sequence[int] | np.ndarray,
        lines: Sequence[int] | np.ndarray,
        ids: Sequence[str] | None = None,
        skipped: int = 0,
    ) -> RecordBlock:
        """A block of in-memory texts (used for JSON records and by tests).

        The texts are joined with NUL bytes (newlines when a text holds a NUL) and encoded once;
        the separators' positions give the records' byte ranges.
        """
        n = len(texts)
        joined = "\x00".join(texts)
        if joined.count("\x00") == max(n - 1, 0):  # no text holds a NUL
            data = ("\x00" + joined + "\x00").encode("utf-8")
            seps = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0)
            starts, ends = seps[:-1] + 1, seps[1:]
        else:  # a text holds a NUL: encode one by one
            encoded = [t.encode("utf-8") for t in texts]
            lengths = np.fromiter((len(b) + 1 for b in encoded), dtype=np.int64, count=n)
            starts = np.cumsum(lengths) - lengths + 1
            ends = starts + lengths - 1
            data = b"\n" + b"\n".join(encoded) + b"\n" if encoded else b"\n"
        if n == 0:
            data, starts, ends = b"\n", np.zeros(0, np.int64), np.zeros(0, np.int64)
        return cls(
            data=data,
            starts=starts.astype(np.int64),
            ends=ends.astype(np.int64),
            offsets=np.asarray(offsets, dtype=np.int64),
            lines=np.asarray(lines, dtype=np.int64),
            ids=list(ids) if ids is not None else [""] * n,
            skipped=skipped,
            texts=list(texts),
        )


class _Chunk(NamedTuple):
    """Whole lines of a decompressed file."""

    offset: int  # of the first byte in the decompressed file
    data: bytes
    dropped: int  # lines longer than MAX_RECORD_BYTES just before these (not in data)


def _read_chunks(file: CorpusFile, report: Callable[[int], None] | None) -> Iterator[_Chunk]:
    """Whole lines of the decompressed file, about :data:`BLOCK_BYTES` at a time.

    A line that grows past :data:`MAX_RECORD_BYTES` before its newline is read through without
    being kept and counted in the next chunk's ``dropped`` (a last, empty chunk carries those at
    the end of the file), so a chunk never exceeds ``BLOCK_BYTES + MAX_RECORD_BYTES``. Shorter
    lines may still be longer than the limit: callers drop those themselves.
    """
    stream = open_stream(file, report)
    try:
        offset = 0
        tail = b""
        dropped = 0
        skipping = False  # inside a line too long to keep
        while True:
            data = stream.read(BLOCK_BYTES)
            if not data:
                if tail or dropped:
                    yield _Chunk(offset, tail + b"\n" if tail else b"", dropped)
                return
            if skipping:
                newline = data.find(b"\n")
                offset += len(data) if newline < 0 else newline + 1
                if newline < 0:
                    continue
                skipping = False
                data = data[newline + 1 :]
            data = tail + data if tail else data
            cut = data.rfind(b"\n") + 1
            if cut:
                yield _Chunk(offset, data if cut == len(data) else data[:cut], dropped)
                offset += cut
                dropped = 0
            tail = data[cut:]
            if len(tail) > MAX_RECORD_BYTES:
                skipping = True
                dropped += 1
                offset += len(tail)
                tail = b""
    finally:
        stream.close()


def _line_table(chunk: bytes, newlines: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive, before the newline) of every line of a chunk of whole lines."""
    if newlines is None:
        newlines = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)
    starts = np.empty_like(newlines)
    starts[0:1] = 0
    starts[1:] = newlines[:-1] + 1
    return starts, newlines


def _decode_error(file: CorpusFile, line: int, exc: UnicodeDecodeError) -> CorpusError:
    return CorpusError(
        f"{file.path} line {line} is not UTF-8 ({exc.reason}); convert the file to UTF-8"
    )


def _text_blocks(
    file: CorpusFile,
    report: Callable[[int], None] | None,
) -> Iterator[RecordBlock]:
    first_line = 1
    for offset, chunk, dropped in _read_chunks(file, report):
        first_line += dropped
        starts, ends = _line_table(chunk)
        n_lines = len(starts)
        lines = np.arange(first_line, first_line + n_lines, dtype=np.int64)
        first_line += n_lines
        cr = ends > starts
        cr[cr] = np.frombuffer(chunk, dtype=np.uint8)[ends[cr] - 1] == 13  # CRLF files
        ends = ends - cr
        keep = ends > starts  # blank lines are no records; all others go to the one matching pass
        long = ends - starts > MAX_RECORD_BYTES
        if long.any():
            keep &= ~long
        # the block's data is the chunk itself: every line is preceded by a newline byte
        data = b"\n" + chunk
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _decode_error(file, int(lines[np.searchsorted(starts, exc.start, "right") - 1]), exc) from None
        yield RecordBlock(
            data=data,
            starts=starts[keep] + 1,
            ends=ends[keep] + 1,
            offsets=starts[keep] + offset,
            lines=lines[keep],
            ids=[""] * int(keep.sum()),
            too_long=dropped + int(long.sum()),
            source_bytes=len(chunk),
        )


def _lines_hit(positions: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Which lines (by their start offsets) hold at least one of ``positions``."""
    hit = np.zeros(len(starts), dtype=bool)
    if len(positions):
        hit[np.searchsorted(starts, positions, side="right") - 1] = True
    return hit


def _json_marks(chunk: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions of the newlines, quotes and backslashes of a chunk."""
    arr = np.frombuffer(chunk, dtype=np.uint8)
    # three compares and numpy's fast nonzero of a bool mask: faster than one translate to
    # codes and sorting out the kinds (measured 5.4 against 7-10 ms per 8 MB)
    slashes = np.flatnonzero(arr == 92) if b"\\" in chunk else np.zeros(0, dtype=np.int64)
    return np.flatnonzero(arr == 10), np.flatnonzero(arr == 34), slashes


def _json_prefilter_view(chunk: bytes, slashes: np.ndarray | None = None) -> bytes:
    """The chunk with the letters and digits of JSON escapes blanked (same length).

    ``\\n``, ``\\t``, ``\\r``, ``\\b``, ``\\f`` and ``\\uXXXX`` end in a letter or digit that would
    hide a word boundary (``\\nlove``); blanking them can only add boundaries, so the prefilter
    still finds a superset of the matches.
    """
    arr = np.frombuffer(chunk, dtype=np.uint8)
    slashes = np.flatnonzero(arr[:-1] == 92) if slashes is None else slashes[slashes < len(arr) - 1]
    if not len(slashes):
        return chunk
    out = bytearray(chunk)
    view = np.frombuffer(out, dtype=np.uint8)
    nxt = arr[slashes + 1]
    letters = slashes[np.isin(nxt, _LETTER_ESCAPE_BYTES)] + 1
    view[letters] = 32
    uni = slashes[(nxt == 117) & (slashes + 6 <= len(arr))]
    if len(uni):
        view[(uni[:, None] + np.arange(1, 6)).ravel()] = 32
    del view
    return bytes(out)  # bytes.translate is several times faster than bytearray.translate


def _jsonl_blocks(
    file: CorpusFile,
    text_field: str,
    id_field: str | None,
    prefilter: Callable[[bytes], np.ndarray] | None,
    report: Callable[[int], None] | None,
) -> Iterator[RecordBlock]:
    first_line = 1
    for offset, chunk, dropped in _read_chunks(file, report):
        first_line += dropped
        newlines, quotes, slashes = _json_marks(chunk)
        starts, ends = _line_table(chunk, newlines)
        n_lines = len(starts)
        lines = np.arange(first_line, first_line + n_lines, dtype=np.int64)
        first_line += n_lines
        keep = ends > starts
        long = ends - starts > MAX_RECORD_BYTES
        too_long = dropped + int(long.sum())
        if too_long:
            keep &= ~long
        hits = None
        if prefilter is not None:
            found = prefilter(_json_prefilter_view(chunk, slashes))
            if found.ndim == 2:  # (pattern, start, end): kept for the verbatim texts below
                hits, found = found, found[:, 1]
            keep &= _lines_hit(found, starts)
        chosen = np.flatnonzero(keep)
        raw = list(map(chunk.__getitem__, map(slice, starts[chosen].tolist(), ends[chosen].tolist())))
        values, objects, id_of, invalid = _decode_records(
            file, raw, lines[chosen], text_field, id_field
        )
        if invalid is None and _all_texts(values):  # the common case, checked at C speed
            kept: Sequence[int] = range(len(values))
            texts = values
        else:
            for i, v in enumerate(values):
                if v is not None and type(v) is not str:
                    kind = "int" if isinstance(v, _LongInt) else type(v).__name__
                    raise CorpusError(
                        f"{file.path} line {int(lines[chosen[i]])}: field {text_field!r} is "
                        f"{kind}, not a string; pass --text-field with the key that holds the text"
                    )
            bad = invalid or set()
            kept = [i for i, v in enumerate(values)
                    if v not in SKIPPED_TEXTS and v and not v.isspace() and i not in bad]
            texts = [values[i] for i in kept]
        rows = chosen[np.asarray(kept, dtype=np.int64)]
        n_invalid = len(invalid) if invalid else 0
        block = RecordBlock.from_texts(
            texts, starts[rows] + offset, lines[rows],
            skipped=len(values) - len(kept) - n_invalid,
        )
        block.too_long = too_long
        block.invalid_unicode = n_invalid
        if id_of is not None:  # looked up only for the records a caller asks about
            block.ids = _RecordIds(objects, kept, id_of)
        if hits is not None and len(block):
            block.known = _known_hits(chunk, hits, starts, ends, rows, block, text_field,
                                      quotes, slashes)
        block.source_bytes = len(chunk)
        yield block


def _known_hits(
    chunk: bytes, hits: np.ndarray, line_starts: np.ndarray, line_ends: np.ndarray,
    rows: np.ndarray, block: RecordBlock, text_field: str, quotes: np.ndarray, slashes: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The prefilter's hits inside the records whose text is verbatim in their line, moved to the
    block's coordinates: (known per record, hits (pattern, start, end) of the known records).

    A line's text is verbatim when the line holds no backslash (so the JSON string has no escape
    and its bytes are the text's UTF-8) and exactly one ``"text_field":`` followed by a string;
    the string's length must equal the text's. Each such text is delimited by quotes in the line
    and by separators in the block, both boundaries to the matcher, so the matcher's hits inside
    it are the same in both.
    """
    arr = np.frombuffer(chunk, dtype=np.uint8)
    n = len(block)
    known = np.zeros(n, dtype=bool)
    key = b'"' + text_field.encode("utf-8") + b'"'
    opens = quotes[quotes + len(key) + 2 < len(arr)]
    for k in range(1, len(key)):  # narrowed byte by byte: few quotes open the key
        opens = opens[arr[opens + k] == key[k]]  # the key's opening quote
    close = np.searchsorted(quotes, opens + len(key) - 1)  # index of the key's closing quote
    ok = close + 2 < len(quotes)
    opens, close = opens[ok], close[ok]
    v_open, v_close = quotes[close + 1], quotes[close + 2]
    gap = v_open - (opens + len(key))  # ':' and blanks only
    ok = (gap >= 1) & (gap <= 8)
    colons = np.zeros(len(opens), dtype=np.int64)
    for k in range(8):
        at = np.minimum(opens + len(key) + k, len(arr) - 1)
        inside = k < gap
        byte = arr[at]
        colons += inside & (byte == 58)
        ok &= ~inside | (byte == 58) | (byte == 32) | (byte == 9) | (byte == 13) | (byte == 10)
    ok &= colons == 1
    opens, v_open, v_close, ok = opens[ok], v_open[ok], v_close[ok], ok[ok]
    line = np.searchsorted(line_starts, opens, side="right") - 1
    per_line = np.bincount(line, minlength=len(line_starts))  # '"key": "' per line
    escaped = _lines_hit(slashes, line_starts)
    record_of_line = np.full(len(line_starts), -1, dtype=np.int64)
    record_of_line[rows] = np.arange(n)
    rec = record_of_line[line]
    ok &= (rec >= 0) & (per_line[line] == 1) & ~escaped[line] & (v_close < line_ends[line])
    rec, v_open, v_close = rec[ok], v_open[ok], v_close[ok]
    same = v_close - v_open - 1 == block.ends[rec] - block.starts[rec]
    rec, v_open = rec[same], v_open[same]
    known[rec] = True
    value_start = np.zeros(n, dtype=np.int64)
    value_start[rec] = v_open + 1
    # the prefilter's hits inside a known text (its quotes included), shifted into the block
    h_rec = record_of_line[np.searchsorted(line_starts, hits[:, 1], side="right") - 1]
    inside = h_rec >= 0
    inside[inside] = known[h_rec[inside]]
    h, r = hits[inside], h_rec[inside]
    v0 = value_start[r]
    inside = (h[:, 1] >= v0 - 1) & (h[:, 2] <= v0 + block.ends[r] - block.starts[r] + 1)
    h, r = h[inside], r[inside]
    shift = block.starts[r] - value_start[r]
    return known, np.column_stack([h[:, 0], h[:, 1] + shift, h[:, 2] + shift])


def _all_texts(values: list[Any]) -> bool:
    """Whether every value is a non-blank string other than ``[deleted]``/``[removed]``."""
    return (
        (not values or set(map(type, values)) == {str})
        and SKIPPED_TEXTS.isdisjoint(values)
        and "" not in values
        and not any(map(str.isspace, values))
    )


class _RecordIds(Sequence[str]):
    """The ``id_field`` of a block's records, read from their decoded objects when asked."""

    def __init__(self, objects: list[Any], rows: Sequence[int], id_of: Callable[[Any], Any]) -> None:
        self._objects = objects
        self._rows = rows
        self._id_of = id_of

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        return self.take([i])[0]

    def take(self, records: list[int]) -> list[str]:
        """The ids of several records (positions in the block) at once."""
        objects, rows = self._objects, self._rows
        values = map(self._id_of, [objects[rows[i]] for i in records])
        return ["" if v is None else v if type(v) is str else str(v) for v in values]


def record_ids(block: RecordBlock, records: list[int]) -> list[str]:
    """The record ids of some records of a block ("" where a record has none)."""
    ids = block.ids
    if isinstance(ids, _RecordIds):
        return ids.take(records)
    return [ids[r] for r in records] if len(ids) else [""] * len(records)


@functools.cache
def _record_decoder(text_field: str, id_field: str | None) -> Any:
    """A msgspec decoder of a JSON array of records into objects holding only the two fields
    (``t``, the text, required; ``i``, the id, None when absent), or None without msgspec.
    Every other field is skipped unparsed: three times as fast as :func:`json.loads`."""
    if id_field == text_field:  # one key for both: the stdlib's dictionaries serve
        return None
    try:
        import msgspec
    except ImportError:  # pragma: no cover - a dependency of the corpus extra
        return None
    fields: list[Any] = [("t", Any)]
    rename = {"t": text_field}
    if id_field:
        fields.append(("i", Any, None))
        rename["i"] = id_field
    record = msgspec.defstruct("Record", fields, rename=rename)
    return msgspec.json.Decoder(list[record])


def _decode_records(
    file: CorpusFile, raw: list[bytes], lines: np.ndarray, text_field: str, id_field: str | None
) -> tuple[list[Any], list[Any], Callable[[Any], Any] | None, set[int] | None]:
    """The text field's value of many JSON lines, the decoded records, how to read a record's id
    (None without ``id_field``), and the records whose text or id is not Unicode (None: all are).

    msgspec decodes only the two fields; where it refuses anything (invalid JSON, a line that is
    not an object or lacks the text field, a lone surrogate escape, a number out of range), the
    lines are decoded again by :mod:`json`, which accepts what Python's reader accepts and names
    the bad line; the texts and ids it returns are then checked for unpaired surrogates (msgspec
    refuses those, json accepts them).
    """
    decoder = _record_decoder(text_field, id_field)
    if decoder is not None and raw:
        try:
            records = decoder.decode(b"[" + b",".join(raw) + b"]")
        except Exception:  # noqa: BLE001 - msgspec's errors; the stdlib decodes again and explains
            pass
        else:
            id_of = operator.attrgetter("i") if id_field else None
            return list(map(operator.attrgetter("t"), records)), records, id_of, None
    objects = _decode_json(file, raw, lines)
    try:
        values = list(map(operator.itemgetter(text_field), objects))
    except (KeyError, TypeError, IndexError):
        values = [_checked_text(file, obj, int(line), text_field)
                  for obj, line in zip(objects, lines.tolist(), strict=True)]
    id_of = (lambda obj: obj.get(id_field)) if id_field else None
    invalid = {
        i for i, v in enumerate(values)
        if (type(v) is str and not text_is_unicode(v))
        or (id_of is not None and type(ident := id_of(objects[i])) is str
            and not text_is_unicode(ident))
    }
    return values, objects, id_of, invalid or None


def _checked_text(file: CorpusFile, obj: Any, line: int, text_field: str) -> Any:
    if not isinstance(obj, dict):
        raise CorpusError(
            f"{file.path} line {line}: a {type(obj).__name__}, not a JSON object; each line must "
            "be one object"
        )
    if text_field not in obj:
        raise CorpusError(
            f"{file.path} line {line}: no {text_field!r} field (found {sorted(obj)[:12]}); pass "
            "--text-field with the key that holds the text (Reddit dumps: body)"
        )
    return obj[text_field]


class _LongInt(str):
    """A JSON integer longer than Python converts (4,300 digits), kept as its digits: msgspec
    reads such a line, so the stdlib must too (as an id it is its digits, as a text an error)."""


def _parse_int(digits: str) -> int | str:
    try:
        return int(digits)
    except ValueError:
        return _LongInt(digits)


def _decode_json(file: CorpusFile, raw: list[bytes], lines: np.ndarray) -> list[Any]:
    """Decode many JSON lines in one call (C speed); on failure, find and name the bad line."""
    if not raw:
        return []
    try:
        out = json.loads(b"[" + b",".join(raw) + b"]", parse_int=_parse_int)
        if len(out) == len(raw):
            return out
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError, deep nesting
        pass
    out = []
    for line, text in zip(lines.tolist(), raw, strict=True):
        try:
            out.append(json.loads(text, parse_int=_parse_int))
        except UnicodeDecodeError as exc:
            raise _decode_error(file, line, exc) from None
        except json.JSONDecodeError as exc:
            raise CorpusError(
                f"{file.path} line {line}: invalid JSON ({exc.msg} at column {exc.colno}); each "
                "line must be one JSON object"
            ) from None
        except RecursionError:
            raise CorpusError(
                f"{file.path} line {line}: JSON nested too deeply for Python's parser; each line "
                "must be one JSON object of a few levels"
            ) from None
    return out


def _parquet_blocks(
    file: CorpusFile,
    text_field: str,
    id_field: str | None,
    report: Callable[[int], None] | None,
) -> Iterator[RecordBlock]:
    pa, pc, pq = _pyarrow(file)
    reader, names = _parquet_reader(file, text_field, pa, pq)
    row = 0
    columns = [text_field] + ([id_field] if id_field and id_field in names else [])
    done = 0
    try:
        batch_rows = _parquet_batch_rows(reader, text_field)
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise _damaged(file, row, exc) from None
    batches = reader.iter_batches(batch_size=batch_rows, columns=columns)
    while True:
        try:
            batch = next(batches, None)
            if batch is None:
                break
            texts, ids, too_long = _parquet_texts(batch, len(columns) > 1, pa, pc)
        except (OSError, pa.ArrowException, ValueError) as exc:  # UnicodeDecodeError included
            raise _damaged(file, row, exc) from None
        yield _parquet_block(texts, ids, too_long, row)
        row += len(texts)
        if report is not None:  # Parquet is read by row groups: report the file's share
            now = int(file.size * row / max(reader.metadata.num_rows, 1))
            report(now - done)
            done = now


def _pyarrow(file: CorpusFile) -> tuple[Any, Any, Any]:
    """pyarrow, pyarrow.compute and pyarrow.parquet (refused, naming the file, when missing)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise CorpusError(
            f"{file.path} is a Parquet file but 'pyarrow' (a dependency of emb) is not "
            "installed; run pip install pyarrow"
        ) from exc
    return pa, pc, pq


def _damaged(file: CorpusFile, row: int, exc: BaseException) -> CorpusError:
    """A Parquet file pyarrow cannot read (after ``row`` rows read)."""
    where = f" after row {row:,}" if row else ""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return CorpusError(
        f"cannot read Parquet corpus {file.path}{where}: {detail}; the file is damaged or "
        "not Parquet: write or download it again"
    )


def _parquet_reader(file: CorpusFile, text_field: str, pa: Any, pq: Any) -> tuple[Any, list[str]]:
    """The file's reader and its column names; refused without a text column of strings."""
    try:
        reader = pq.ParquetFile(file.path)
        schema = reader.schema_arrow
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise _damaged(file, 0, exc) from None
    names = schema.names
    if text_field not in names:
        raise CorpusError(
            f"{file.path}: no column {text_field!r} (columns {names}); pass --text-field"
        )
    kind = schema.field(text_field).type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind)
            or str(kind) == "string_view"):
        raise CorpusError(
            f"{file.path}: column {text_field!r} holds {kind}, not strings; pass --text-field "
            "with the column that holds the text"
        )
    return reader, names


def _parquet_texts(
    batch: Any, with_ids: bool, pa: Any, pc: Any,
) -> tuple[list[Any], list[Any], int]:
    """A batch's texts (those over :data:`MAX_RECORD_BYTES` as None), its ids (None without an
    id column), and how many texts were too long."""
    column = batch.column(0)
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    too_long = 0
    if not pa.types.is_null(column.type):
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            column = column.cast(pa.large_string())  # string_view
        long = pc.fill_null(pc.greater(pc.binary_length(column), MAX_RECORD_BYTES), False)
        too_long = pc.sum(long).as_py() or 0
        if too_long:  # dropped before they become Python strings
            column = pc.if_else(long, pa.scalar(None, column.type), column)
    texts = column.to_pylist()
    ids = batch.column(1).to_pylist() if with_ids else [None] * len(texts)
    return texts, ids, too_long


def _parquet_block(texts: list[Any], ids: list[Any], too_long: int, row: int) -> RecordBlock:
    """The block of a batch's non-empty texts (rows numbered from ``row``)."""
    keep = [
        i for i, t in enumerate(texts)
        if isinstance(t, str) and t.strip() and t not in SKIPPED_TEXTS
    ]
    rows = np.asarray(keep, dtype=np.int64) + row
    block = RecordBlock.from_texts(
        [texts[i] for i in keep],
        rows,
        rows + 1,
        ["" if ids[i] is None else str(ids[i]) for i in keep],
        skipped=len(texts) - len(keep) - too_long,
    )
    block.too_long = too_long
    block.source_bytes = sum(len(t.encode("utf-8")) for t in texts if isinstance(t, str))
    return block


def _parquet_batch_rows(reader: Any, column: str) -> int:
    """Rows per batch: about :data:`BLOCK_BYTES` of the text column, between 1 and 65,536.

    The text's size per row is the larger of the row groups' metadata (uncompressed size) and the
    first 1,024 rows read (a dictionary-encoded column of long repeated texts is small in the
    metadata, not in memory).
    """
    meta = reader.metadata
    size = rows = 0
    try:
        index = reader.schema_arrow.names.index(column)
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            rows += group.num_rows
            size += group.column(index).total_uncompressed_size
    except (IndexError, ValueError, OSError):  # a nested schema: the sample alone
        size = rows = 0
    per_row = size / rows if rows else 0.0
    first = next(reader.iter_batches(batch_size=1024, columns=[column]), None)
    if first is not None and first.num_rows:
        sample = first.column(0)
        if hasattr(sample, "dictionary_decode"):
            sample = sample.dictionary_decode()
        per_row = max(per_row, sample.nbytes / first.num_rows)
    if per_row <= 0:
        return 65_536
    return int(min(65_536, max(1, BLOCK_BYTES // per_row)))


def iter_blocks(
    file: CorpusFile,
    *,
    text_field: str = "text",
    id_field: str | None = "id",
    prefilter: Callable[[bytes], np.ndarray] | None = None,
    report: Callable[[int], None] | None = None,
) -> Iterator[RecordBlock]:
    """The records of one corpus file, a block at a time.

    Parameters
    ----------
    file : CorpusFile
    text_field, id_field : str
        JSON keys (Parquet columns) of the text and of the record id (``id_field`` may be absent
        from a record; None: no ids).
    prefilter : callable, optional
        ``prefilter(chunk_bytes) -> positions``: byte positions in a chunk of raw lines where a
        match may start; only lines holding one are decoded and returned. It may instead return
        its matcher's hits ``(pattern, start, end)`` (n, 3): the blocks then carry them for the
        records whose text is verbatim in the line (:attr:`RecordBlock.known`). It must return a superset
        of the real matches (JSON escapes ending in a letter or digit are blanked first, so that
        ``\\nlove`` reads as a boundary before *love*). Ignored for Parquet.
    report : callable, optional
        Called with the number of bytes read from disk (compressed) as they are read.

    Raises
    ------
    CorpusError
        Undecodable compression, text that is not UTF-8, invalid JSON or a missing text field
        (naming the line), a Parquet file without the column.
    """
    if file.format == "parquet":
        yield from _parquet_blocks(file, text_field, id_field, report)
    elif file.format == "jsonl":
        yield from _jsonl_blocks(file, text_field, id_field, prefilter, report)
    else:
        yield from _text_blocks(file, report)
