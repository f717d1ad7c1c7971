"""Reading static word vector files in one pass: word2vec (binary, text), GloVe, fastText.

Formats (detected from the file name, or given):

- ``word2vec-binary`` (``.bin``): a header ``"<n words> <dim>\\n"``, then per word its UTF-8 bytes, a
  space and ``dim`` little-endian float32 values (a newline before a word is skipped, as gensim
  does);
- ``word2vec-text`` (``.txt`` with that header) and ``fasttext`` (``.vec``, the same layout): a header
  line, then ``word v1 … v_dim`` per line;
- ``glove`` (``.txt`` without a header): ``word v1 … v_dim`` per line (a word with spaces in it, as a
  few GloVe 840B entries have, is everything before the last ``dim`` fields).

Any of them may be compressed (``.gz``, ``.bz2``, ``.xz``, or a ``.zip`` holding one file). A word
listed twice keeps its first vector (as gensim does). :func:`read_vectors` keeps only the wanted
words, so memory is bounded by them, not by the vocabulary, and hashes the file in the same pass.
Nothing here imports torch; :mod:`emb.backends.static` serves the vectors as a model runner.

What is refused, each as one :class:`~emb.errors.ModelError` naming the file: anything but a
regular file (a FIFO, a device such as ``/dev/zero``, a socket, a directory: the file is read more
than once and hashed), a damaged or truncated compressed file, a zip that is encrypted or uses a
compression method Python cannot read, a malformed header or record, a text line longer than
:data:`MAX_LINE` bytes, and a kept vector holding NaN or an infinite value, or a value float32
cannot hold (beyond ±3.4e38, or so small that the vector changes by over 0.1 % of its length), each with
its word and line (or record, in a binary file). The words the suites do not use are not parsed.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from emb.backends._vectors_open import (
    READ_ERRORS,
    check_file,
    damaged,
    open_stream,
    sha256_file,
    split_suffixes,
    zip_member,
)
from emb.errors import ModelError

__all__ = [
    "FORMATS",
    "LOSS_LIMIT",
    "MAX_LINE",
    "VectorsFormat",
    "VectorsRead",
    "detect_format",
    "is_vectors_file",
    "parse_format",
    "read_vectors",
    "rounding_loss",
]

VectorsFormat = Literal["word2vec-binary", "word2vec-text", "glove", "fasttext"]
FORMATS: tuple[str, ...] = ("word2vec-binary", "word2vec-text", "glove", "fasttext")

_SUFFIXES = {".bin": "word2vec-binary", ".vec": "fasttext", ".txt": None}
_CHUNK = 1 << 18
#: The longest text line read (bytes): a 300-dimensional GloVe line is ~3 KB, a 4,096-dimensional
#: one ~50 KB; a longer "line" (a binary file read as text, an endless stream) is refused, so memory
#: stays bounded.
MAX_LINE = 16 << 20
#: The largest vector dimension accepted from a header: a binary record is read whole, so this
#: bounds the read buffer (4 MiB per record).
_MAX_DIM = 1 << 20
#: A kept vector that a narrower dtype changes by more than this share of its length is refused:
#: twice the most that rounding within float16's normal range can do (2⁻¹¹), so only vectors whose
#: values lie beyond the dtype's range (overflow) or below its normal range (subnormal, zero) are.
LOSS_LIMIT = 0.001
_BOM = b"\xef\xbb\xbf"


def is_vectors_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names an existing static vectors file (by its name: ``.bin``, ``.txt``,
    ``.vec``, optionally ``.gz``/``.bz2``/``.xz``/``.zip``)."""
    p = Path(os.fspath(path)).expanduser()
    inner, compression = split_suffixes(p)
    if not (inner in _SUFFIXES or compression == ".zip"):
        return False
    # a FIFO or device with a vectors name is one too: read_vectors refuses it with the reason
    try:
        return not stat.S_ISDIR(os.stat(p).st_mode)
    except (OSError, ValueError):
        return False


def detect_format(path: str | os.PathLike[str]) -> VectorsFormat:
    """The format of a vectors file: by suffix; a ``.txt`` by its first line (two integers →
    ``word2vec-text``, else ``glove``).

    Raises
    ------
    ModelError
        An unknown suffix (give ``format``), or an unreadable file.
    """
    p = Path(os.fspath(path)).expanduser()
    check_file(p)
    inner, _ = split_suffixes(p)
    if inner not in _SUFFIXES and split_suffixes(p)[1] == ".zip":
        inner = Path(zip_member(p)).suffix.lower()
    if inner not in _SUFFIXES:
        raise ModelError(
            f"cannot tell the format of {p.name} from its name; give --vectors-format, one of {list(FORMATS)}"
        )
    known = _SUFFIXES[inner]
    if known is not None:
        return known  # type: ignore[return-value]
    with contextlib.ExitStack() as stack:
        stream, _ = open_stream(p, hashlib.sha256(), stack)
        try:
            first = stream.readline(1 << 16).removeprefix(_BOM)
        except READ_ERRORS as err:
            raise damaged(p, err) from None
    header = _header(first)
    return "word2vec-text" if header is not None and header[1] > 0 else "glove"


def _header(line: bytes) -> tuple[int, int] | None:
    """``(n_words, dim)`` of a word2vec header line, None when the line is not one (two numbers
    of at most 18 digits)."""
    parts = line.split()
    if len(parts) != 2 or not all(p.isdigit() and len(p) <= 18 for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def _check_dim(dim: int, path: Path) -> int:
    """``dim`` when it lies in 1..``_MAX_DIM`` (a binary record is read whole: this bounds memory)."""
    if not 0 < dim <= _MAX_DIM:
        raise ModelError(
            f"{path}: its header announces vectors of dimension {dim:,}; a dimension must lie in "
            f"1..{_MAX_DIM:,}: is the header right, and is it really a word2vec file? (give --vectors-format)"
        )
    return dim


@dataclass(frozen=True, kw_only=True)
class VectorsRead:
    """What one pass over a vectors file found.

    Attributes
    ----------
    vectors : dict of str to (int, numpy.ndarray)
        Each wanted word found: its row in the file (0-based) and its float32 vector.
    vocab_size : int
        Words in the file (records read; the header's count for word2vec formats, checked).
    dim : int
        Vector dimension.
    sha256 : str
        Of the file's bytes as stored (the compressed bytes of a compressed file).
    size : int
        File size in bytes.
    n_duplicates : int
        Records whose word was already read (their vectors ignored, as gensim does).
    """

    vectors: dict[str, tuple[int, np.ndarray]]
    vocab_size: int
    dim: int
    sha256: str
    size: int
    n_duplicates: int


def read_vectors(
    path: str | os.PathLike[str],
    words: Iterable[str],
    *,
    format: VectorsFormat | None = None,
) -> VectorsRead:
    """Stream a vectors file once, keeping the vectors of ``words`` only.

    Parameters
    ----------
    path : path
        The vectors file (see the module docstring for the formats).
    words : iterable of str
        The words wanted (exact strings).
    format : {"word2vec-binary", "word2vec-text", "glove", "fasttext"}, optional
        Default: :func:`detect_format`.

    Returns
    -------
    VectorsRead

    Raises
    ------
    ModelError
        A missing file or one that is not a regular file, an unknown format, a damaged or
        truncated file, a malformed header or record, a kept vector with NaN or infinite values or
        values float32 cannot hold (each with its word and line or record).

    Notes
    -----
    Memory: the wanted vectors plus a read buffer (a few times 256 KiB, and at most one record or
    :data:`MAX_LINE`), whatever the vocabulary size.
    """
    given = os.fspath(path)
    p = Path(given).expanduser()
    check_file(p)
    fmt = parse_format(format) if format is not None else detect_format(p)
    wanted = {b for w in words if (b := _utf8(w)) is not None}
    digest = hashlib.sha256()
    with contextlib.ExitStack() as stack:
        stream, raw = open_stream(p, digest, stack)
        try:
            if fmt == "word2vec-binary":
                found, n_read, dim, dups = _read_binary(stream, wanted, p)
            else:
                found, n_read, dim, dups = _read_text(stream, wanted, p, header=fmt != "glove")
            # hash what the decompressor left unread (a gzip trailer); a zip is hashed whole below
            while raw is not None and raw.read(_CHUNK):
                pass
        except READ_ERRORS as err:
            raise damaged(p, err) from None
    sha = sha256_file(p) if split_suffixes(p)[1] == ".zip" else digest.hexdigest()
    return VectorsRead(
        vectors={w.decode("utf-8"): v for w, v in found.items()},
        vocab_size=n_read,
        dim=dim,
        sha256=sha,
        size=p.stat().st_size,
        n_duplicates=dups,
    )


def _utf8(word: str) -> bytes | None:
    """The UTF-8 bytes of a wanted word; None for a string UTF-8 cannot encode (a lone
    surrogate): no file holds it, so it is reported as missing."""
    try:
        return word.encode("utf-8")
    except UnicodeEncodeError:
        return None


def parse_format(format: str) -> VectorsFormat:
    """``format`` checked against :data:`FORMATS` (ModelError listing them otherwise)."""
    if format not in FORMATS:
        raise ModelError(f"unknown vectors format {format!r}; choose one of {list(FORMATS)}")
    return format  # type: ignore[return-value]


def rounding_loss(vector: np.ndarray, dtype: Any) -> float:
    """The share of a vector's length that rounding it to ``dtype`` changes.

    ``‖x − round(x)‖ / ‖x‖`` computed in float64 (scaled by ``max |x|`` first, so tiny and huge
    vectors lose no precision here): about 2⁻¹¹ at most for float16 and 2⁻²⁴ for float32 when the
    values lie in the dtype's normal range; more when they fall below it (subnormal or zero); 1
    when the vector becomes all zeros; ``inf`` when a value overflows. 0 for a zero vector.

    Examples
    --------
    >>> rounding_loss(np.array([1e-9, 1e-9]), np.float16)
    1.0
    >>> rounding_loss(np.array([70000.0]), np.float16)
    inf
    """
    x = np.asarray(vector, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        rounded = x.astype(dtype)
    if not np.isfinite(rounded).all():
        return math.inf
    scale = float(np.max(np.abs(x))) if x.size else 0.0
    if scale == 0.0:
        return 0.0
    change = (x - rounded.astype(np.float64)) / scale
    return float(np.linalg.norm(change) / np.linalg.norm(x / scale))


def _value_problem(values: np.ndarray) -> str | None:
    """Why a vector as written in the file cannot be kept (None when it can): NaN, an infinite
    value, or values float32 cannot hold (beyond ±3.4e38, or so small that rounding changes the
    vector by more than :data:`LOSS_LIMIT` of its length)."""
    if np.isnan(values).any():
        return "holds NaN"
    if np.isinf(values).any():
        return "holds an infinite value"
    loss = rounding_loss(values, np.float32)
    if math.isinf(loss):
        return (
            f"holds {float(np.max(np.abs(values))):.3g}, beyond float32's range (±3.4e38), "
            "in which emb reads vectors"
        )
    if loss > LOSS_LIMIT:
        return (
            f"holds values so small that float32 changes the vector by {min(loss, 1.0):.1%} of "
            "its length"
        )
    return None


def _refuse_values(path: Path, problems: list[str], where: str) -> None:
    if problems:
        raise ModelError(
            f"{path}: {len(problems)} of the vectors the suites use cannot be stored: "
            f"{'; '.join(problems[:10])}{' …' if len(problems) > 10 else ''}; correct these "
            f"{where} in the file (emb stores finite float32 values only), or leave these words "
            "out of the suites"
        )


def _show_word(word: bytes) -> str:
    return repr(word.decode("utf-8", "replace"))


def _read_binary(
    stream: IO[bytes], wanted: set[bytes], path: Path
) -> tuple[dict[bytes, tuple[int, np.ndarray]], int, int, int]:
    header = _header(stream.readline(1 << 16))
    if header is None:
        raise ModelError(
            f"{path} does not start with a word2vec header '<n words> <dim>'; is it really "
            "word2vec binary? (give --vectors-format)"
        )
    n_words, dim = header[0], _check_dim(header[1], path)
    width = 4 * dim
    found: dict[bytes, tuple[int, np.ndarray]] = {}
    problems: list[str] = []
    seen_wanted: set[bytes] = set()
    buffer = b""
    pos = 0
    row = 0
    eof = False
    while row < n_words:
        space = buffer.find(b" ", pos)
        if space < 0 or len(buffer) - space - 1 < width:
            if eof:
                raise ModelError(
                    f"{path} ends after {row} of the {n_words} words its header announces; the "
                    "file is truncated"
                )
            if space < 0 and len(buffer) - pos > MAX_LINE:
                raise ModelError(
                    f"{path}: record {row + 1} has no space ending its word within "
                    f"{MAX_LINE >> 20} MiB; is it really word2vec binary? (give --vectors-format)"
                )
            chunk = stream.read(_CHUNK)
            eof = not chunk
            buffer = buffer[pos:] + chunk
            pos = 0
            continue
        word = buffer[pos:space].lstrip(b"\n")
        if word in wanted:
            if word in seen_wanted:
                pass  # a repeated word keeps its first vector
            else:
                seen_wanted.add(word)
                vector = np.frombuffer(buffer, dtype="<f4", count=dim, offset=space + 1)
                problem = _value_problem(vector)
                if problem is not None:
                    problems.append(f"{_show_word(word)} (record {row + 1}) {problem}")
                found[word] = (row, vector.astype(np.float32))
        pos = space + 1 + width
        row += 1
    rest = buffer[pos:] + stream.read(64)
    if rest.strip(b"\n\r "):
        raise ModelError(
            f"{path} goes on after the {n_words} words its header announces; is the header right?"
        )
    _refuse_values(path, problems, "records")
    # duplicates in a binary file cannot be counted without keeping every word: 0 is "not counted"
    return found, n_words, dim, 0


def _lines(stream: IO[bytes], path: Path, first: int) -> Iterator[bytes]:
    """The lines of ``stream``, each at most :data:`MAX_LINE` bytes (a longer one is refused:
    memory stays bounded whatever the file holds), a UTF-8 byte order mark dropped from the
    first; ``first`` is the number of the first line."""
    number = first
    while line := stream.readline(MAX_LINE + 1):
        if len(line) > MAX_LINE:
            raise ModelError(
                f"{path}: line {number} is longer than {MAX_LINE >> 20} MiB; is it really a text "
                "vectors file? (give --vectors-format)"
            )
        yield line.removeprefix(_BOM) if number == first else line
        number += 1


def _read_text(
    stream: IO[bytes], wanted: set[bytes], path: Path, *, header: bool
) -> tuple[dict[bytes, tuple[int, np.ndarray]], int, int, int]:
    lines = _lines(stream, path, 1)
    n_declared: int | None = None
    dim: int | None = None
    if header:
        first = next(lines, b"")
        parsed = _header(first)
        if parsed is None:
            raise ModelError(
                f"{path} does not start with a header line '<n words> <dim>'; a GloVe file has "
                "none: give --vectors-format glove"
            )
        n_declared, dim = parsed[0], _check_dim(parsed[1], path)
    firsts = {w.split(b" ", 1)[0] for w in wanted}
    found: dict[bytes, tuple[int, np.ndarray]] = {}
    problems: list[str] = []
    row = 0
    dups = 0
    line_no = 1 if header else 0
    for line in lines:
        line_no += 1
        line = line.rstrip(b"\r\n")
        if not line.strip():
            continue
        if dim is None:  # GloVe: the first line tells the dimension
            dim = len(line.rstrip().split(b" ")) - 1
            if dim < 1:
                raise ModelError(f"{path}: line {line_no} holds no vector values")
        if line.split(b" ", 1)[0] in firsts:
            parts = line.rstrip().rsplit(b" ", dim)
            if len(parts) != dim + 1:
                raise ModelError(
                    f"{path}: line {line_no} has {len(parts) - 1} values, expected {dim}; is it "
                    "really a text vectors file? (give --vectors-format)"
                )
            word = parts[0]
            if word in wanted:
                if word in found:
                    dups += 1
                else:
                    try:
                        # float64 first (numpy parses float32 text through a double too: the
                        # same bits), so that values float32 cannot hold are seen
                        exact = np.array([float(x) for x in parts[1:]], dtype=np.float64)
                    except ValueError:
                        raise ModelError(
                            f"{path}: line {line_no} (word {_show_word(word)}) holds a value "
                            "that is not a number"
                        ) from None
                    problem = _value_problem(exact)
                    if problem is not None:
                        problems.append(f"{_show_word(word)} (line {line_no}) {problem}")
                    with np.errstate(over="ignore", under="ignore"):
                        found[word] = (row, exact.astype(np.float32))
        row += 1
    if dim is None:
        raise ModelError(f"{path} holds no vectors")
    if n_declared is not None and row != n_declared:
        raise ModelError(
            f"{path} holds {row} vectors but its header announces {n_declared}; the file is "
            "truncated or the header is wrong"
        )
    _refuse_values(path, problems, "lines")
    return found, row, dim, dups
