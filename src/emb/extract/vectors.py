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
Nothing here imports torch; :mod:`emb.extract.static` serves the vectors as a model runner.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import os
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from emb.errors import ModelError

__all__ = [
    "FORMATS",
    "VectorsFormat",
    "VectorsRead",
    "detect_format",
    "is_vectors_file",
    "parse_format",
    "read_vectors",
]

VectorsFormat = Literal["word2vec-binary", "word2vec-text", "glove", "fasttext"]
FORMATS: tuple[str, ...] = ("word2vec-binary", "word2vec-text", "glove", "fasttext")

_COMPRESSED = (".gz", ".bz2", ".xz", ".zip")
_SUFFIXES = {".bin": "word2vec-binary", ".vec": "fasttext", ".txt": None}
_CHUNK = 1 << 18
_HASH_BLOCK = 8 << 20


def _split_suffixes(path: Path) -> tuple[str, str | None]:
    """(the vectors suffix, the compression suffix or None) of a file name."""
    name = path.name.lower()
    compression = next((c for c in _COMPRESSED if name.endswith(c)), None)
    inner = Path(name[: -len(compression)] if compression else name).suffix
    return inner, compression


def is_vectors_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names an existing static vectors file (by its name: ``.bin``, ``.txt``,
    ``.vec``, optionally ``.gz``/``.bz2``/``.xz``/``.zip``)."""
    p = Path(os.fspath(path)).expanduser()
    inner, compression = _split_suffixes(p)
    return p.is_file() and (inner in _SUFFIXES or compression == ".zip")


class _HashingReader(io.RawIOBase):
    """A read-only stream that feeds every byte it passes on into a sha256."""

    def __init__(self, raw: IO[bytes], digest: Any) -> None:
        self._raw = raw
        self._digest = digest
        self.n_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self._digest.update(data)
        self.n_bytes += n
        return n


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _open_stream(path: Path, digest: Any) -> tuple[IO[bytes], list[Any]]:
    """A decompressed byte stream of ``path`` whose raw bytes feed ``digest`` (not for .zip)."""
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller through the returned list
    hashing = io.BufferedReader(_HashingReader(raw, digest), buffer_size=_CHUNK)
    compression = _split_suffixes(path)[1]
    if compression == ".zip":
        archive = zipfile.ZipFile(raw)
        members = [i for i in archive.infolist() if not i.is_dir()]
        if len(members) != 1:
            names = [i.filename for i in members]
            archive.close()
            raw.close()
            raise ModelError(
                f"{path} holds {len(members)} files ({names[:5]}); a zipped vectors file must hold "
                "exactly one: unzip it and give the vectors file itself"
            )
        stream: IO[bytes] = archive.open(members[0])
        return stream, [stream, archive, raw]
    if compression == ".gz":
        stream = gzip.GzipFile(fileobj=hashing, mode="rb")
    elif compression == ".bz2":
        stream = bz2.BZ2File(hashing, mode="rb")
    elif compression == ".xz":
        stream = lzma.LZMAFile(hashing, mode="rb")
    else:
        stream = hashing
    return stream, [stream, hashing, raw]


def detect_format(path: str | os.PathLike[str]) -> VectorsFormat:
    """The format of a vectors file: by suffix; a ``.txt`` by its first line (two integers →
    ``word2vec-text``, else ``glove``).

    Raises
    ------
    ModelError
        An unknown suffix (give ``format``), or an unreadable file.
    """
    p = Path(os.fspath(path)).expanduser()
    inner, _ = _split_suffixes(p)
    if inner not in _SUFFIXES and _split_suffixes(p)[1] == ".zip":
        inner = Path(_zip_member(p)).suffix.lower()
    if inner not in _SUFFIXES:
        raise ModelError(
            f"cannot tell the format of {p.name} from its name; give --format, one of {list(FORMATS)}"
        )
    known = _SUFFIXES[inner]
    if known is not None:
        return known  # type: ignore[return-value]
    stream, handles = _open_stream(p, hashlib.sha256())
    try:
        first = stream.readline(1 << 16)
    except (OSError, EOFError, zipfile.BadZipFile, lzma.LZMAError) as err:
        raise ModelError(f"cannot read {p}: {err}") from None
    finally:
        for h in handles:
            h.close()
    return "word2vec-text" if _header(first) is not None else "glove"


def _zip_member(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            members = [i.filename for i in archive.infolist() if not i.is_dir()]
    except (OSError, zipfile.BadZipFile) as err:
        raise ModelError(f"cannot read the zip file {path}: {err}") from None
    if len(members) != 1:
        raise ModelError(
            f"{path} holds {len(members)} files ({members[:5]}); a zipped vectors file must hold "
            "exactly one: unzip it and give the vectors file itself"
        )
    return members[0]


def _header(line: bytes) -> tuple[int, int] | None:
    """``(n_words, dim)`` of a word2vec header line, None when the line is not one."""
    parts = line.split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    n, dim = int(parts[0]), int(parts[1])
    return (n, dim) if dim > 0 else None


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
        A missing file, an unknown format, a malformed header or record, a truncated file.

    Notes
    -----
    Memory: the wanted vectors plus a read buffer (a few times 256 KiB), whatever the vocabulary
    size.
    """
    p = Path(os.fspath(path)).expanduser()
    if not p.is_file():
        raise ModelError(f"vectors file {str(path)!r} does not exist; give the path of a vectors file")
    fmt = parse_format(format) if format is not None else detect_format(p)
    wanted = {w.encode("utf-8") for w in words}
    digest = hashlib.sha256()
    stream, handles = _open_stream(p, digest)
    try:
        if fmt == "word2vec-binary":
            found, n_read, dim, dups = _read_binary(stream, wanted, p)
        else:
            found, n_read, dim, dups = _read_text(stream, wanted, p, header=fmt != "glove")
        # hash what the decompressor left unread (a gzip trailer) and, for a zip, the whole file
        for h in handles:
            if isinstance(h, io.BufferedReader):
                while h.read(_CHUNK):
                    pass
    except (OSError, EOFError, zipfile.BadZipFile, lzma.LZMAError, UnicodeDecodeError) as err:
        raise ModelError(f"cannot read {fmt} vectors from {p}: {err}") from None
    finally:
        for h in handles:
            h.close()
    sha = _sha256_file(p) if _split_suffixes(p)[1] == ".zip" else digest.hexdigest()
    return VectorsRead(
        vectors={w.decode("utf-8"): v for w, v in found.items()},
        vocab_size=n_read,
        dim=dim,
        sha256=sha,
        size=p.stat().st_size,
        n_duplicates=dups,
    )


def parse_format(format: str) -> VectorsFormat:
    """``format`` checked against :data:`FORMATS` (ModelError listing them otherwise)."""
    if format not in FORMATS:
        raise ModelError(f"unknown vectors format {format!r}; choose one of {list(FORMATS)}")
    return format  # type: ignore[return-value]


def _read_binary(
    stream: IO[bytes], wanted: set[bytes], path: Path
) -> tuple[dict[bytes, tuple[int, np.ndarray]], int, int, int]:
    header = _header(stream.readline(1 << 16))
    if header is None:
        raise ModelError(
            f"{path} does not start with a word2vec header '<n words> <dim>'; is it really "
            "word2vec binary? (give --format)"
        )
    n_words, dim = header
    width = 4 * dim
    found: dict[bytes, tuple[int, np.ndarray]] = {}
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
                found[word] = (row, vector.astype(np.float32))
        pos = space + 1 + width
        row += 1
    rest = buffer[pos:] + stream.read(64)
    if rest.strip(b"\n\r "):
        raise ModelError(
            f"{path} goes on after the {n_words} words its header announces; is the header right?"
        )
    # duplicates in a binary file cannot be counted without keeping every word: 0 is "not counted"
    return found, n_words, dim, 0


def _lines(stream: IO[bytes]) -> Iterator[bytes]:
    yield from stream


def _read_text(
    stream: IO[bytes], wanted: set[bytes], path: Path, *, header: bool
) -> tuple[dict[bytes, tuple[int, np.ndarray]], int, int, int]:
    lines = _lines(stream)
    n_declared: int | None = None
    dim: int | None = None
    if header:
        first = next(lines, b"")
        parsed = _header(first)
        if parsed is None:
            raise ModelError(
                f"{path} does not start with a header line '<n words> <dim>'; a GloVe file has "
                "none: give --format glove"
            )
        n_declared, dim = parsed
    firsts = {w.split(b" ", 1)[0] for w in wanted}
    found: dict[bytes, tuple[int, np.ndarray]] = {}
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
                    "really a text vectors file? (give --format)"
                )
            word = parts[0]
            if word in wanted:
                if word in found:
                    dups += 1
                else:
                    try:
                        values = np.array([np.float32(x) for x in parts[1:]], dtype=np.float32)
                    except ValueError:
                        raise ModelError(
                            f"{path}: line {line_no} (word {word.decode('utf-8', 'replace')!r}) "
                            "holds a value that is not a number"
                        ) from None
                    found[word] = (row, values)
        row += 1
    if dim is None:
        raise ModelError(f"{path} holds no vectors")
    if n_declared is not None and row != n_declared:
        raise ModelError(
            f"{path} holds {row} vectors but its header announces {n_declared}; the file is "
            "truncated or the header is wrong"
        )
    return found, row, dim, dups
