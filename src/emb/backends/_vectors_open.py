"""Opening a static vectors file (torch-free): only a regular file, decompressed as its name says
(``.gz``, ``.bz2``, ``.xz``, or a ``.zip`` holding one file that is neither encrypted nor compressed
with a method zipfile lacks), its raw bytes hashed as they pass; a damaged or truncated file is
one :class:`~emb.errors.ModelError` naming it. :mod:`emb.backends.vectors` parses what this opens.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import io
import lzma
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any

from emb.errors import ModelError
from emb.files.special import check_regular_file

__all__ = [
    "READ_ERRORS",
    "check_file",
    "damaged",
    "open_stream",
    "sha256_file",
    "split_suffixes",
    "zip_member",
]

_COMPRESSED = (".gz", ".bz2", ".xz", ".zip")
_CHUNK = 1 << 18
_HASH_BLOCK = 8 << 20
#: The zip methods Python's zipfile decompresses: stored, deflate, bzip2, lzma (and zstandard
#: where the Python has it).
_ZIP_METHODS = {
    zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
    zipfile.ZIP_LZMA: "lzma",
}
if hasattr(zipfile, "ZIP_ZSTANDARD"):  # Python >= 3.14
    _ZIP_METHODS[zipfile.ZIP_ZSTANDARD] = "zstandard"
#: What a damaged or truncated (compressed) file raises while it is read.
READ_ERRORS = (OSError, EOFError, zipfile.BadZipFile, lzma.LZMAError, zlib.error)
_COMPRESSION_NAMES = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zip": "zip"}


def split_suffixes(path: Path) -> tuple[str, str | None]:
    """(the vectors suffix, the compression suffix or None) of a file name."""
    name = path.name.lower()
    compression = next((c for c in _COMPRESSED if name.endswith(c)), None)
    inner = Path(name[: -len(compression)] if compression else name).suffix
    return inner, compression


def check_file(path: Path) -> None:
    """Refuse, before anything opens it, a path that is not a regular file: a FIFO would block
    (and could be read only once), a device such as ``/dev/zero`` never ends, and the file is read
    more than once (format, hash) and recorded by size and sha256.

    Raises
    ------
    ModelError
        A missing path, an unreadable one, or one that is not a regular file, with the reason.
    """
    check_regular_file(path, what="vectors file", error=ModelError, must_exist=True)


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


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def damaged(path: Path, err: BaseException) -> ModelError:
    """The error of a file that broke while it was read: damaged or truncated (compressed) data."""
    compression = _COMPRESSION_NAMES.get(split_suffixes(path)[1] or "")
    kind = f"{compression} file" if compression else "file"
    return ModelError(
        f"cannot read the vectors {kind} {path}: it is damaged or truncated ({_one_line(err)}); "
        "download or unpack it again"
    )


def _zip_entry(archive: zipfile.ZipFile, path: Path) -> zipfile.ZipInfo:
    """The one file a zipped vectors file holds, checked: not encrypted, a method zipfile reads."""
    members = [i for i in archive.infolist() if not i.is_dir()]
    if len(members) != 1:
        names = [i.filename for i in members]
        raise ModelError(
            f"{path} holds {len(members)} files ({names[:5]}); a zipped vectors file must hold "
            "exactly one: unzip it and give the vectors file itself"
        )
    entry = members[0]
    if entry.flag_bits & 0x41:  # bit 0: encrypted, bit 6: strong encryption
        raise ModelError(
            f"{path}: its file {entry.filename!r} is encrypted (password-protected); unzip it "
            "with its password and give the vectors file itself"
        )
    if entry.compress_type not in _ZIP_METHODS:
        raise ModelError(
            f"{path}: its file {entry.filename!r} is compressed with zip method "
            f"{entry.compress_type}, which Python's zipfile cannot read (it reads "
            f"{', '.join(_ZIP_METHODS.values())}); unzip it with another tool and give the "
            "vectors file itself"
        )
    return entry


def _open_zip(raw: IO[bytes], path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(raw)
    except NotImplementedError as err:  # zipfile's word for a zip feature it lacks
        raise _unsupported_zip(path, err) from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as err:
        raise ModelError(
            f"{path} is not a readable zip file ({_one_line(err)}): it is damaged, truncated or "
            "not a zip at all; download it again, or give the file under its real name"
        ) from None


def _unsupported_zip(path: Path, err: NotImplementedError) -> ModelError:
    return ModelError(
        f"{path} uses a zip feature Python's zipfile cannot read ({_one_line(err)}); unzip it "
        "with another tool and give the vectors file itself"
    )


def open_stream(
    path: Path, digest: Any, stack: contextlib.ExitStack
) -> tuple[IO[bytes], IO[bytes] | None]:
    """A decompressed byte stream of ``path`` and the raw stream under it, whose bytes feed
    ``digest`` (None for a .zip, hashed apart), both closed with ``stack``.

    Raises
    ------
    ModelError
        The file cannot be opened, or a zip that is not one, holds several files, is encrypted or
        uses a method zipfile cannot read.
    """
    try:
        raw = stack.enter_context(open(path, "rb"))
    except OSError as err:
        raise ModelError(f"cannot open the vectors file {path}: {_one_line(err)}") from None
    compression = split_suffixes(path)[1]
    if compression == ".zip":
        archive = stack.enter_context(_open_zip(raw, path))
        entry = _zip_entry(archive, path)
        try:
            return stack.enter_context(archive.open(entry)), None
        except NotImplementedError as err:  # e.g. compressed patched data (flag bit 5)
            raise _unsupported_zip(path, err) from None
        except READ_ERRORS as err:
            raise damaged(path, err) from None
    hashing: IO[bytes] = stack.enter_context(
        io.BufferedReader(_HashingReader(raw, digest), buffer_size=_CHUNK)
    )
    if compression == ".gz":
        return stack.enter_context(gzip.GzipFile(fileobj=hashing, mode="rb")), hashing
    if compression == ".bz2":
        return stack.enter_context(bz2.BZ2File(hashing, mode="rb")), hashing
    if compression == ".xz":
        return stack.enter_context(lzma.LZMAFile(hashing, mode="rb")), hashing
    return hashing, hashing


def zip_member(path: Path) -> str:
    with contextlib.ExitStack() as stack:
        try:
            raw = stack.enter_context(open(path, "rb"))
        except OSError as err:
            raise ModelError(f"cannot open the vectors file {path}: {_one_line(err)}") from None
        return _zip_entry(stack.enter_context(_open_zip(raw, path)), path).filename
