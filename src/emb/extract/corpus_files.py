"""Corpus files: found by paths and globs, identified (name, size, digest), their format and
compression detected from their first bytes, and opened as streams of decompressed bytes.

Compression is detected from the magic bytes, not the suffix: gzip (read through ISA-L's inflate
when the ``isal`` package is installed, else :mod:`gzip`), zstandard (the decoder window raised to
2 GiB for Pushshift's ``--long=31`` dumps), xz and bzip2. The format (plain text, JSON Lines,
Parquet) comes from the magic bytes, the suffix before any compression suffix, or the first line.
"""

from __future__ import annotations

import bz2
import glob
import gzip
import hashlib
import lzma
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, BinaryIO, Literal

from emb.errors import CorpusError

__all__ = ["HASH_LIMIT", "ZSTD_WINDOW", "CorpusFile", "Format", "corpus_files", "open_stream"]

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


def _sniff(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
    except OSError as exc:
        raise CorpusError(f"cannot read corpus file {path}: {exc.strerror or exc}") from exc
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    return "none"


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
    except Exception:  # noqa: BLE001 - undecodable files fail later, with a clear message
        return False
    return head.lstrip()[:1] == b"{"


def _digest(path: Path, size: int) -> str:
    if size > HASH_LIMIT:
        return f"size+mtime:{size}:{path.stat().st_mtime_ns}"
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
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
        No file given, a path that does not exist, a pattern that matches nothing, a directory.
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
            found[text] = None
    paths = sorted(found, key=lambda p: os.path.abspath(p))
    absolute = [os.path.abspath(p) for p in paths]
    root = os.path.dirname(absolute[0]) if len(absolute) == 1 else os.path.commonpath(absolute)
    out = []
    for path, full in zip(paths, absolute, strict=True):
        p = Path(path)
        kind = _sniff(p)
        fmt = _format_of(p, kind, format)
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


def open_stream(file: CorpusFile, report: Callable[[int], None] | None) -> Any:
    """The file's decompressed bytes as a binary stream (``report`` gets the bytes read from disk)."""
    raw = _Counting(open(file.path, "rb"), report)  # noqa: SIM115 - closed by the caller
    if file.compression == "gzip":
        try:  # ISA-L's inflate (the corpus extra): about 3x zlib's speed, same bytes
            from isal import igzip
        except ImportError:
            return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[arg-type]
        return igzip.IGzipFile(fileobj=raw, mode="rb")  # type: ignore[arg-type]
    if file.compression == "zstd":
        try:
            import zstandard
        except ImportError as exc:
            raw.close()
            raise CorpusError(
                f"{file.path} is zstandard-compressed but the 'zstandard' package is not "
                "installed; run pip install 'emb[corpus]'"
            ) from exc
        return zstandard.ZstdDecompressor(max_window_size=ZSTD_WINDOW).stream_reader(
            raw, read_size=2**20
        )
    if file.compression == "xz":
        return lzma.LZMAFile(raw)  # type: ignore[arg-type]
    if file.compression == "bz2":
        return bz2.BZ2File(raw)  # type: ignore[arg-type]
    return raw
