"""Corpus files: found by paths and globs, identified (name, size, digest), their format and
compression detected from their first bytes, and opened as streams of decompressed bytes.

Compression is detected from the magic bytes, not the suffix: gzip (read through ISA-L's inflate
when the ``isal`` package is installed, else :mod:`gzip`), zstandard (the decoder window raised to
2 GiB for Pushshift's ``--long=31`` dumps; a file may open with a skippable frame, as ``pzstd``
writes them), xz and bzip2. Every member, stream or frame is read, and the file must end where one
ends: a file cut short is an error naming it, never a shorter corpus. The format (plain text, JSON
Lines, Parquet) comes from the magic bytes, the suffix before any compression suffix, or the first
line.

A corpus file must be a regular file: it is read twice (its sha256 for provenance, then the scan,
maybe in worker processes) and its name enters the sampling keys, so pipes (``<(zcat FILE)``),
FIFOs, devices (``/dev/zero``), sockets and directories are refused up front, with the reason.
"""

from __future__ import annotations

import bz2
import functools
import glob
import gzip
import hashlib
import lzma
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, BinaryIO, Literal

from emb.errors import CorpusError
from emb.files.special import check_regular_file, open_regular_file

__all__ = [
    "HASH_LIMIT",
    "ZSTD_WINDOW",
    "CorpusFile",
    "Format",
    "compression_of",
    "corpus_files",
    "decompressed",
    "open_stream",
]

#: Files larger than this are identified by size and mtime instead of a sha256 of their bytes.
HASH_LIMIT = 256 * 2**20
#: zstandard window the Pushshift dumps need (``zstd --long=31``).
ZSTD_WINDOW = 2**31

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bz2"),
    (b"PAR1", "parquet"),
)
#: zstandard's skippable frames: magic 0x184D2A50-0x184D2A5F (little-endian)
_ZSTD_SKIPPABLE = b"\x2a\x4d\x18"
#: why a corpus must be a regular file, and what to do (the end of the refusal)
_NOT_A_FILE = (
    "a corpus file is read twice (its sha256 for provenance, then the scan, maybe by worker "
    "processes) and its name enters the sampling keys; give the file itself (gzip, zstd, xz "
    "and bzip2 files are read directly) or save the stream to a file first"
)
_COMPRESSION_SUFFIXES = (".gz", ".zst", ".zstd", ".xz", ".bz2")
_JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")

Format = Literal["auto", "text", "jsonl", "parquet"]


@dataclass(frozen=True, kw_only=True)
class CorpusFile:
    """One corpus file and its identity.

    Attributes
    ----------
    path : str
        The file as found.
    name : str
        Its identity in sampling keys and provenance: the path relative to the common directory of
        all the corpus' files (for one file, its name), so that moving the corpus elsewhere keeps
        the sample.
    size : int
        Bytes on disk.
    digest : str
        ``sha256:<hex>`` of the bytes on disk for files up to :data:`HASH_LIMIT`, else
        ``size+mtime:<size>:<mtime_ns>`` (hashing a 30 GB dump would take minutes).
    compression : {"none", "gzip", "zstd", "xz", "bz2"}
    format : {"text", "jsonl", "parquet"}
    """

    path: str
    name: str
    size: int
    digest: str
    compression: str
    format: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "size": self.size,
            "digest": self.digest,
            "compression": self.compression,
            "format": self.format,
        }


def compression_of(head: bytes) -> str:
    """The compression of a file from its first bytes (at least 8): ``gzip``, ``zstd`` (also a
    file that opens with a skippable frame), ``xz``, ``bz2``, ``parquet`` (no compression, a
    Parquet file) or ``none``."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if len(head) >= 4 and 0x50 <= head[0] <= 0x5F and head[1:4] == _ZSTD_SKIPPABLE:
        return "zstd"
    return "none"


def _sniff(path: Path) -> str:
    with open_regular_file(path, what="corpus file", reason=_NOT_A_FILE, error=CorpusError) as f:
        try:
            head = f.read(8)
        except OSError as exc:
            raise CorpusError(f"cannot read corpus file {path}: {exc.strerror or exc}") from exc
    return compression_of(head)


def _format_of(path: Path, kind: str, wanted: Format) -> str:
    if kind == "parquet":
        if wanted not in ("auto", "parquet"):
            raise CorpusError(f"{path} is a Parquet file, but format={wanted!r} was asked")
        return "parquet"
    if wanted != "auto":
        return wanted
    name = path.name.lower()
    while name.endswith(_COMPRESSION_SUFFIXES):
        name = name[: name.rfind(".")]
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(_JSON_SUFFIXES):
        return "jsonl"
    return "jsonl" if _looks_like_json(path, kind) else "text"


def _looks_like_json(path: Path, kind: str) -> bool:
    """Whether the first record is a JSON object (Pushshift's RC_2014-01.zst has no suffix)."""
    probe = CorpusFile(path=str(path), name=path.name, size=0, digest="", compression=kind,
                       format="text")
    try:
        stream = open_stream(probe, None)
        try:
            head = stream.read(4096)
        finally:
            stream.close()
    except CorpusError:  # undecodable files fail later, when they are read, with the message
        return False
    return head.lstrip()[:1] == b"{"


def _digest(path: Path, size: int) -> str:
    if size > HASH_LIMIT:
        return f"size+mtime:{size}:{path.stat().st_mtime_ns}"
    digest = hashlib.sha256()
    with open_regular_file(path, what="corpus file", reason=_NOT_A_FILE, error=CorpusError) as handle:
        while block := handle.read(8 * 2**20):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def corpus_files(
    specs: Sequence[str | PathLike[str]], *, format: Format = "auto"
) -> tuple[CorpusFile, ...]:
    """The corpus files named by paths and glob patterns, sorted, each once.

    Parameters
    ----------
    specs : sequence of path or glob
        Files, or patterns such as ``dumps/RC_2014-*.zst`` (``**`` recurses).
    format : {"auto", "text", "jsonl", "parquet"}
        ``auto``: Parquet by its magic bytes or suffix, JSON Lines by ``.jsonl``/``.ndjson``/
        ``.json`` (before any compression suffix) or a first line starting with ``{``, else
        plain text.

    Raises
    ------
    CorpusError
        No file given, a path that does not exist, a pattern that matches nothing, a directory,
        anything else that is not a regular file (a pipe such as ``<(zcat FILE)``, a FIFO, a
        device such as ``/dev/zero``, a socket: each is read only once or never ends, and a
        corpus file is read twice).
    """
    if isinstance(specs, (str, PathLike)):
        specs = [specs]
    if not specs:
        raise CorpusError("no corpus given: pass --corpus FILE (or a glob such as 'RC_*.zst')")
    found: dict[str, None] = {}
    for spec in specs:
        text = os.fspath(spec)
        if glob.has_magic(text):
            matches = sorted(glob.glob(text, recursive=True))
            matches = [m for m in matches if Path(m).is_file()]
            if not matches:
                raise CorpusError(f"corpus pattern {text!r} matches no file")
            found.update(dict.fromkeys(matches))
        else:
            path = Path(text)
            if not path.exists():
                raise CorpusError(f"corpus file {text} does not exist")
            if path.is_dir():
                raise CorpusError(
                    f"corpus {text} is a directory; give its files or a glob such as "
                    f"'{text.rstrip('/')}/*.jsonl.zst'"
                )
            check_regular_file(path, what="corpus file", reason=_NOT_A_FILE, error=CorpusError)
            found[text] = None
    paths = sorted(found, key=lambda p: os.path.abspath(p))
    absolute = [os.path.abspath(p) for p in paths]
    root = os.path.dirname(absolute[0]) if len(absolute) == 1 else os.path.commonpath(absolute)
    out = []
    for path, full in zip(paths, absolute, strict=True):
        p = Path(path)
        kind = _sniff(p)
        fmt = _format_of(p, kind, format)
        if fmt == "parquet" and kind not in ("parquet", "none"):
            raise CorpusError(
                f"corpus file {path} is a {kind}-compressed Parquet file; Parquet compresses "
                f"inside the file: decompress it first ({_TESTER[kind].split()[0]} -d) and give "
                "the .parquet file"
            )
        size = p.stat().st_size
        out.append(
            CorpusFile(
                path=path,
                name=os.path.relpath(full, root).replace(os.sep, "/"),
                size=size,
                digest=_digest(p, size),
                compression="none" if kind == "parquet" else kind,
                format=fmt,
            )
        )
    names = [f.name for f in out]
    if len(set(names)) != len(names):  # pragma: no cover - relpaths of distinct files differ
        raise CorpusError(f"corpus files share a name: {names}")
    return tuple(out)

# -- opening ---------------------------------------------------------------------------------------
#: Compressed bytes read from disk at once.
_READ = 2**20
#: Compressed bytes handed to a zstandard decoder at once: zstd's largest ratio (RLE blocks,
#: 32,768:1) makes at most 32 MiB of output of them (its decoder object has no output limit).
_ZSTD_PIECE = 2**10
#: Decompressed bytes asked of a gzip, xz or bzip2 decoder at once.
_OUT = 2**20
_TESTER = {"gzip": "gzip -t", "zstd": "zstd -t", "xz": "xz -t", "bz2": "bzip2 -t"}
_UNIT = {"gzip": "member", "zstd": "frame", "xz": "stream", "bz2": "stream"}


class _Counting:
    """A raw file whose bytes read so far are reported (for progress over compressed bytes)."""

    def __init__(self, handle: BinaryIO, report: Callable[[int], None] | None) -> None:
        self._handle = handle
        self._report = report

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        if self._report is not None and data:
            self._report(len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        n = self._handle.readinto(buffer)
        if self._report is not None and n:
            self._report(n)
        return n

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._handle.close()

    @property
    def closed(self) -> bool:
        return self._handle.closed

    def tell(self) -> int:
        return self._handle.tell()


class _Decompressed:
    """The decompressed bytes of a compressed file, read whole and checked to its end.

    Every member (gzip), stream (xz, bzip2) or frame (zstandard) is read in turn, zstandard's
    skippable frames (``pzstd`` starts its files with one) and xz's stream padding are passed
    over, and the file must end where a member ends: a file cut short (an incomplete download),
    a damaged member, or data after the last member that is not one (a second member whose header
    is damaged) raise :class:`~emb.errors.CorpusError` naming the file and the decompressed bytes
    read before, instead of ending the stream early without a word. Memory stays bounded: a
    decoder is asked for at most about a MiB at a time (32 MiB for zstandard).
    """

    def __init__(self, raw: Any, path: str, compression: str) -> None:
        self._raw = raw
        self._path = path
        self._kind = compression
        self._done = 0  # decompressed bytes so far
        self._pending = b""
        self._pieces = self._decode()

    def read(self, size: int = -1) -> bytes:
        parts = [self._pending] if self._pending else []
        have = len(self._pending)
        while size < 0 or have < size:
            piece = next(self._pieces, None)
            if piece is None:
                break
            parts.append(piece)
            have += len(piece)
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        if 0 <= size < len(data):
            data, self._pending = data[:size], data[size:]
        else:
            self._pending = b""
        return data

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._pieces.close()
        self._raw.close()

    @property
    def closed(self) -> bool:
        return bool(self._raw.closed)

    def __enter__(self) -> _Decompressed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- decoding ----------------------------------------------------------------------------------
    def _decode(self) -> Iterator[bytes]:
        kind = self._kind
        errors = _decoder_errors(kind)
        try:
            members = self._gzip() if kind == "gzip" else self._frames(_decoder(kind, self._path))
            for piece in members:
                self._done += len(piece)
                yield piece
        except CorpusError:
            raise
        except EOFError:  # gzip's readers: a member cut short (ISA-L's: also trailing garbage)
            raise self._cut_short(gzip=True) from None
        except errors as exc:
            raise CorpusError(
                f"cannot decompress {kind} corpus {self._path} after {self._done:,} decompressed "
                f"bytes: {str(exc) or type(exc).__name__}; the file is damaged: download or copy "
                f"it again ('{_TESTER[kind]} FILE' checks it)"
            ) from None

    def _cut_short(self, *, gzip: bool = False) -> CorpusError:
        where = "cut short or damaged" if gzip else "cut short"
        return CorpusError(
            f"{self._kind} corpus {self._path} is {where}: its compressed data ends inside a "
            f"{_UNIT[self._kind]}, after {self._done:,} decompressed bytes (an "
            f"incomplete download or copy?); download or copy it again ('{_TESTER[self._kind]} "
            "FILE' checks it)"
        )

    def _gzip(self) -> Iterator[bytes]:
        try:  # ISA-L's inflate (the corpus extra): about 3x zlib's speed, same bytes
            from isal import igzip
        except ImportError:
            stream: Any = gzip.GzipFile(fileobj=self._raw, mode="rb")
        else:
            stream = igzip.IGzipFile(fileobj=self._raw, mode="rb")
        with stream:  # both read every member and raise EOFError on a cut
            while piece := stream.read1(_OUT):
                yield piece

    def _frames(self, new: Callable[[], Any]) -> Iterator[bytes]:
        """Every frame (stream) of the file, each by a new decoder. The input is kept as the
        last buffer read and a position in it, never copied: a file of many small frames reads
        in linear time."""
        data, pos = b"", 0
        step = self._zstd_frame if self._kind == "zstd" else self._frame
        while True:
            if pos >= len(data):
                data, pos = self._raw.read(_READ), 0
                if not data:
                    return  # the file ends where a frame ends
            if self._kind == "xz" and data[pos] == 0:  # stream padding, between and after
                pos = len(data) - len(data[pos:].lstrip(b"\0"))
                continue
            data, pos = yield from step(new(), data, pos)

    def _zstd_frame(self, decoder: Any, data: bytes, pos: int) -> Iterator[bytes]:
        """One zstandard frame (or skippable frame) from ``data[pos:]`` on; returns the buffer
        and the position where it ends."""
        while True:
            view = memoryview(data)
            for i in range(pos, len(data), _ZSTD_PIECE):
                piece = view[i : i + _ZSTD_PIECE]
                out = decoder.decompress(piece)
                if out:
                    yield out
                if decoder.eof:
                    return data, i + len(piece) - len(decoder.unused_data)
            data, pos = self._raw.read(_READ), 0
            if not data:
                raise self._cut_short()

    def _frame(self, decoder: Any, data: bytes, pos: int) -> Iterator[bytes]:
        """One xz or bzip2 stream from ``data[pos:]`` on; returns the buffer and the position
        where it ends."""
        while True:
            out = decoder.decompress(memoryview(data)[pos:], _OUT)
            while True:
                if out:
                    yield out
                if decoder.eof:
                    return data, len(data) - len(decoder.unused_data)
                if decoder.needs_input:
                    break
                out = decoder.decompress(b"", _OUT)
            data, pos = self._raw.read(_READ), 0
            if not data:
                raise self._cut_short()


def _decoder(kind: str, path: str) -> Callable[[], Any]:
    """A factory of decoders of one zstandard frame, xz stream or bzip2 stream."""
    if kind == "xz":
        return functools.partial(lzma.LZMADecompressor, format=lzma.FORMAT_XZ)
    if kind == "bz2":
        return bz2.BZ2Decompressor
    zstandard = _zstandard(path)
    return zstandard.ZstdDecompressor(max_window_size=ZSTD_WINDOW).decompressobj


def _zstandard(path: str) -> Any:
    try:
        import zstandard
    except ImportError as exc:
        raise CorpusError(
            f"{path} is zstandard-compressed but the 'zstandard' package is not installed; run "
            "pip install 'emb[corpus]'"
        ) from exc
    return zstandard


def _decoder_errors(kind: str) -> tuple[type[BaseException], ...]:
    """What the decoders of ``kind`` raise on damaged data."""
    errors: list[type[BaseException]] = [OSError, ValueError, zlib.error, lzma.LZMAError]
    if kind == "zstd":
        errors.append(_zstandard("").ZstdError)
    if kind == "gzip":
        try:
            from isal import isal_zlib
        except ImportError:
            pass
        else:
            errors.append(isal_zlib.error)
    return tuple(errors)


def decompressed(raw: BinaryIO, *, compression: str, path: str) -> Any:
    """The decompressed bytes of an open file (a binary stream with ``read(size)``).

    Parameters
    ----------
    raw : binary stream
        The file's bytes as stored (closed with the stream returned).
    compression : {"none", "gzip", "zstd", "xz", "bz2"}
        From :func:`compression_of`.
    path : str
        The file, for messages.

    Raises
    ------
    CorpusError
        While reading: a file cut short, damaged data, data after the last member that is not
        one; a zstandard file without the ``zstandard`` package (at once).
    """
    if compression == "none":
        return raw
    if compression == "zstd":
        _zstandard(path)
    return _Decompressed(raw, path, compression)


def open_stream(file: CorpusFile, report: Callable[[int], None] | None) -> Any:
    """The file's decompressed bytes as a binary stream (``report`` gets the bytes read from disk).

    Raises
    ------
    CorpusError
        The file is not a regular file (any more), cannot be opened, or (while reading) is cut
        short or damaged (:func:`decompressed`).
    """
    handle = open_regular_file(file.path, what="corpus file", reason=_NOT_A_FILE, error=CorpusError)
    raw = _Counting(handle, report)
    try:
        return decompressed(raw, compression=file.compression, path=file.path)  # type: ignore[arg-type]
    except BaseException:
        raw.close()
        raise
