"""Static word vectors (word2vec, GloVe, fastText) as a "model": one layer, pooling ``static``.

A vectors file is read in one pass that keeps only the words the suites ask for, so memory is
bounded by the suites, not by the vocabulary (GloVe 840B: 2.2 million words, 5.6 GB of text); the
same pass hashes the file. Every item's vector is its word's vector, whatever its context: the
store then has one layer (0) and one pooling, ``static``, and every analysis runs on it as on a
contextual store.

Formats (detected from the file name, or given):

- ``word2vec-binary`` (``.bin``): a header ``"<n words> <dim>\\n"``, then per word its UTF-8 bytes, a
  space and ``dim`` little-endian float32 values (a newline before a word is skipped, as gensim
  does);
- ``word2vec-text`` (``.txt`` with that header) and ``fasttext`` (``.vec``, the same layout): a header
  line, then ``word v1 … v_dim`` per line;
- ``glove`` (``.txt`` without a header): ``word v1 … v_dim`` per line (a word with spaces in it, as a
  few GloVe 840B entries have, is everything before the last ``dim`` fields).

Any of them may be compressed (``.gz``, ``.bz2``, ``.xz``, or a ``.zip`` holding one file). A word
listed twice keeps its first vector (as gensim does); the count of repeats is recorded.

Missing words. :meth:`StaticRunner.cover` resolves every item's word (exactly, else lower-cased with
``lowercase_fallback``; the vocabulary entry used is the item label ``vector_key``). Words without
a vector are an error that lists them, or, with ``allow_missing``, their items are left out of the
suite before anything is written, and the suite's parameters record them (``vectors.missing``):
a store never holds a NaN for a missing word.

Tokenizer fields of a static item: ``n_subtokens`` 1, ``subtoken_ids`` the word's row in the
vectors file, ``token_start`` 0, ``token_end`` 1, ``n_tokens`` 1 (the context is not read).

Nothing here imports torch.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import os
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from emb.errors import ModelError, SuiteError, TargetNotFoundError

__all__ = [
    "FORMATS",
    "STATIC_POOLING",
    "StaticEncoding",
    "StaticInfo",
    "StaticRunner",
    "VectorsFormat",
    "detect_format",
    "is_vectors_file",
    "load_vectors",
    "read_vectors",
]

VectorsFormat = Literal["word2vec-binary", "word2vec-text", "glove", "fasttext"]
FORMATS: tuple[str, ...] = ("word2vec-binary", "word2vec-text", "glove", "fasttext")
#: The one pooling of a static store: the word's vector itself.
STATIC_POOLING = "static"
#: The item label holding the vocabulary entry each item's vector was read from.
KEY_LABEL = "vector_key"

_COMPRESSED = (".gz", ".bz2", ".xz", ".zip")
_SUFFIXES = {".bin": "word2vec-binary", ".vec": "fasttext", ".txt": None}
_CHUNK = 1 << 18
_HASH_BLOCK = 8 << 20


# -- reading -----------------------------------------------------------------------------------------
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
    fmt = _parse_format(format) if format is not None else detect_format(p)
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


def _parse_format(format: str) -> VectorsFormat:
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


# -- the runner --------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class StaticInfo:
    """Provenance of a static vectors file, written to the store's ``model`` attribute.

    The keys the store and the CLI read from any model (``model_id``, ``revision``,
    ``fingerprint``, ``architecture``, ``n_layers``, ``hidden_size``, ``last_layer``, ``causal``,
    ``bos_token_id``, ``device``) are here too.

    Attributes
    ----------
    model_id : str
        The path as given.
    format : str
        ``word2vec-binary``, ``word2vec-text``, ``glove`` or ``fasttext``.
    file_name, file_size, sha256 : str, int, str
        The file as stored (``sha256`` of its bytes, compressed or not; always computed, in the
        same pass that reads the vectors, or in a second pass for a zip).
    fingerprint : str
        ``sha256``.
    vocab_size, hidden_size : int
        Words in the file, vector dimension.
    n_duplicates : int
        Repeated words in a text file (the first vector kept); 0 for binary files (not counted).
    """

    model_id: str
    format: str
    file_name: str
    file_size: int
    sha256: str
    fingerprint: str
    vocab_size: int
    hidden_size: int
    n_duplicates: int = 0
    source: str = "static"
    revision: str | None = None
    architecture: str = "static word vectors"
    model_type: str = "static"
    n_layers: int = 0
    last_layer: str = "the static vectors themselves (layer 0 is the only layer)"
    layer_semantics: str = (
        "static word vectors: one layer (0) and one pooling ('static'); each item's vector is its "
        "word's vector, whatever the context"
    )
    tokenizer: str = "none: whole-word lookup in the vocabulary (subtoken_ids = the word's row)"
    is_encoder_decoder: bool = False
    padding_side: str = ""
    bos_token: str | None = None
    bos_token_id: int | None = None
    adds_bos: bool = False
    causal: bool = False
    dtype: str = "float32"
    device: str = "cpu"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)


@dataclass(frozen=True)
class StaticEncoding:
    """A static item's "encoding": its word's row in the vectors file (what the store records)."""

    input_ids: np.ndarray
    target: np.ndarray

    @property
    def subtoken_ids(self) -> np.ndarray:
        return self.input_ids

    @property
    def n_tokens(self) -> int:
        return 1

    @property
    def n_subtokens(self) -> int:
        return 1

    @property
    def token_start(self) -> int:
        return 0

    @property
    def token_end(self) -> int:
        return 1


def _resolve(word: str, vectors: Mapping[str, Any], lowercase_fallback: bool) -> str | None:
    if word in vectors:
        return word
    if lowercase_fallback and word.lower() in vectors:
        return word.lower()
    return None


class StaticRunner:
    """Static word vectors served like a model runner: built by :func:`load_vectors`.

    Parameters
    ----------
    info : StaticInfo
    vectors : mapping of str to (int, numpy.ndarray)
        The wanted words found in the file: row and float32 vector.
    lowercase_fallback, allow_missing : bool
        See :meth:`cover`.
    """

    #: The store's poolings for static vectors (the pipeline uses these instead of first/last/…).
    poolings: tuple[str, ...] = (STATIC_POOLING,)

    def __init__(
        self,
        info: StaticInfo,
        vectors: Mapping[str, tuple[int, np.ndarray]],
        *,
        lowercase_fallback: bool = False,
        allow_missing: bool = False,
    ) -> None:
        self.info = info
        self.vectors = dict(vectors)
        self.lowercase_fallback = lowercase_fallback
        self.allow_missing = allow_missing
        self._keys: dict[tuple[str, int, int], str] = {}

    def __repr__(self) -> str:
        return (
            f"StaticRunner({self.info.model_id!r}, {self.info.format}, "
            f"{self.info.vocab_size:,} words × {self.info.hidden_size}, {len(self.vectors)} kept)"
        )

    # -- suites ---------------------------------------------------------------------------------
    def cover(self, suites: Sequence[Any]) -> list[Any]:
        """The suites with each item's vocabulary entry as label ``vector_key``; words without a
        vector either raise or (``allow_missing``) have their items left out, recorded.

        Each returned suite's ``parameters["vectors"]`` records the file (name, sha256), the
        options, the number of distinct words, those without a vector (``missing``), the items
        left out and the words found lower-cased. A suite already covered by this file is
        returned as it is.

        Raises
        ------
        ModelError
            Words without a vector (without ``allow_missing``), listing them; a suite none of
            whose words has a vector; two items with the same context span but words that need
            different vectors (possible only for words that differ in case).
        """
        from emb.extract.suites import Item, Suite

        out = []
        conflicts: list[str] = []
        for suite in suites:
            done = suite.parameters.get("vectors")
            if isinstance(done, Mapping) and done.get("sha256") == self.info.sha256:
                covered = suite
            else:
                words = list(dict.fromkeys(item.word for item in suite.items))
                keys = {w: _resolve(w, self.vectors, self.lowercase_fallback) for w in words}
                missing = [w for w in words if keys[w] is None]
                if missing and not self.allow_missing:
                    raise ModelError(
                        f"{len(missing)} of {len(words)} words of suite {suite.name!r} have no "
                        f"vector in {self.info.file_name} ({self.info.format}, "
                        f"{self.info.vocab_size:,} words): {_listing(missing)}; pass "
                        "--allow-missing to leave their items out (recorded in the store)"
                        + ("" if self.lowercase_fallback else
                           ", or --lowercase-fallback to look them up lower-cased")
                    )
                kept = [
                    Item(
                        context=item.context, word=item.word, char_start=item.char_start,
                        char_end=item.char_end, setting=item.setting,
                        stimulus_set=item.stimulus_set,
                        labels={**item.labels, KEY_LABEL: keys[item.word]},
                    )
                    for item in suite.items
                    if keys[item.word] is not None
                ]
                if not kept:
                    raise ModelError(
                        f"none of the {len(words)} words of suite {suite.name!r} has a vector in "
                        f"{self.info.file_name}: {_listing(words)}; is it the right file?"
                    )
                lowered = sorted(w for w in words if keys[w] is not None and keys[w] != w)
                record = {
                    "file": self.info.file_name,
                    "sha256": self.info.sha256,
                    "format": self.info.format,
                    "lowercase_fallback": self.lowercase_fallback,
                    "allow_missing": self.allow_missing,
                    "n_words": len(words),
                    "n_missing": len(missing),
                    "missing": missing,
                    "n_items_left_out": len(suite.items) - len(kept),
                    "lowercased": lowered,
                }
                try:
                    covered = Suite(
                        name=suite.name, items=tuple(kept), generator=suite.generator,
                        parameters={**suite.parameters, "vectors": record},
                        description=suite.description,
                    )
                except SuiteError as err:
                    raise ModelError(f"suite {suite.name!r}: {err}") from None
            for item in covered.items:
                key = (item.context, item.char_start, item.char_end)
                vkey = str(item.labels[KEY_LABEL])
                if self._keys.setdefault(key, vkey) != vkey:
                    conflicts.append(
                        f"{item.target!r} in {item.context!r} (word {item.word!r} → {vkey!r}, "
                        f"another item → {self._keys[key]!r})"
                    )
            out.append(covered)
        if conflicts:
            raise ModelError(
                f"{len(conflicts)} context spans are shared by items whose words need different "
                f"static vectors: {'; '.join(conflicts[:5])}; a store keeps one vector per "
                "context span: write those items into separate stores or suites runs"
            )
        return out

    # -- the Runner interface -------------------------------------------------------------------
    def encode(
        self,
        contexts: Sequence[str],
        spans: Sequence[tuple[int, int]],
        *,
        bos: bool | None = None,
    ) -> list[StaticEncoding]:
        """Each target's vocabulary row (the word covered by :meth:`cover`, else the span's text).

        Raises
        ------
        TargetNotFoundError
            Targets without a vector, listed.
        """
        out: list[StaticEncoding] = []
        failures = []
        for index, (context, (start, end)) in enumerate(zip(contexts, spans, strict=True)):
            key = self._keys.get((context, int(start), int(end)))
            if key is None:
                key = _resolve(context[start:end], self.vectors, self.lowercase_fallback)
            if key is None or key not in self.vectors:
                failures.append(f"item {index}: {context[start:end]!r} in {context!r}")
                continue
            row = np.array([self.vectors[key][0]], dtype=np.int32)
            out.append(StaticEncoding(input_ids=row, target=np.zeros(1, dtype=np.int64)))
        if failures:
            raise TargetNotFoundError(
                f"{len(failures)} of {len(contexts)} targets have no vector in "
                f"{self.info.file_name}: {'; '.join(failures[:10])}; cover the suites first "
                "(StaticRunner.cover) or pass --allow-missing"
            )
        return out

    def embed(
        self,
        encodings: Sequence[StaticEncoding],
        *,
        poolings: Sequence[str] = (STATIC_POOLING,),
        batch_size: int = 64,
        progress: Callable[[int], object] | None = None,
        out_dtype: Literal["float32", "float16"] = "float32",
        truncate: bool | None = None,
    ) -> np.ndarray:
        """The vectors of the encoded words: (item, layer = 1, pooling = 1, feature).

        ``poolings`` must be ``("static",)``; ``batch_size`` and ``truncate`` have no effect.
        """
        if tuple(poolings) != (STATIC_POOLING,):
            raise ModelError(
                f"static vectors have one pooling, {STATIC_POOLING!r}; got {list(poolings)}"
            )
        by_row = {row: vec for row, vec in self.vectors.values()}
        out = np.empty((len(encodings), 1, 1, self.info.hidden_size), dtype=out_dtype)
        for i, enc in enumerate(encodings):
            out[i, 0, 0] = by_row[int(enc.input_ids[0])]
        if progress is not None and len(encodings):
            progress(len(encodings))
        return out


def _listing(words: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(repr(w) for w in words[:limit])
    return f"[{shown}{f', … ({len(words) - limit} more)' if len(words) > limit else ''}]"


def load_vectors(
    path: str | os.PathLike[str],
    words: Iterable[str],
    *,
    format: VectorsFormat | None = None,
    lowercase_fallback: bool = False,
    allow_missing: bool = False,
) -> StaticRunner:
    """Read the vectors of ``words`` from a static vectors file, in one pass.

    Parameters
    ----------
    path : path
        A word2vec (binary or text), GloVe or fastText file, optionally compressed.
    words : iterable of str
        The words the suites need (e.g. every item's word); with ``lowercase_fallback`` their
        lower-cased forms are kept too.
    format : {"word2vec-binary", "word2vec-text", "glove", "fasttext"}, optional
        Default: detected (:func:`detect_format`).
    lowercase_fallback : bool, default False
        Look a word missing in its case up lower-cased (recorded per item, label
        ``vector_key``).
    allow_missing : bool, default False
        Leave out the items of words without a vector (recorded) instead of failing.

    Returns
    -------
    StaticRunner

    Raises
    ------
    ModelError
        See :func:`read_vectors`.

    Examples
    --------
    >>> runner = load_vectors("GoogleNews-vectors-negative300.bin", ["love", "hate"])  # doctest: +SKIP
    >>> suites = runner.cover([suite])                                              # doctest: +SKIP
    """
    wanted = list(dict.fromkeys(str(w) for w in words))
    if lowercase_fallback:
        wanted += [w.lower() for w in wanted if w.lower() != w]
    given = os.fspath(path)
    fmt = _parse_format(format) if format is not None else None
    read = read_vectors(given, wanted, format=fmt)
    info = StaticInfo(
        model_id=given,
        format=fmt or detect_format(given),
        file_name=Path(given).name,
        file_size=read.size,
        sha256=read.sha256,
        fingerprint=read.sha256,
        vocab_size=read.vocab_size,
        hidden_size=read.dim,
        n_duplicates=read.n_duplicates,
    )
    info = replace(info, architecture=f"static word vectors ({info.format})")
    return StaticRunner(
        info, read.vectors, lowercase_fallback=lowercase_fallback, allow_missing=allow_missing
    )
