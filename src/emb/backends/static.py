"""Static word vectors (word2vec, GloVe, fastText) as a "model": one layer, pooling ``static``.

The backend :class:`StaticBackend` opens a vectors file (by its name or first line, or any file
with ``format``) and declares the options ``format``, ``lowercase_fallback`` and
``allow_missing``. :func:`load_vectors` reads a vectors file (:mod:`emb.backends.vectors`: every format, optionally
compressed) in one pass that keeps only the words the suites ask for, so memory is bounded by the
suites, not by the vocabulary (GloVe 840B: 2.2 million words, 5.6 GB of text); the same pass
hashes the file. Every item's vector is its word's vector, whatever its context: the store then
has one layer (0) and one pooling, ``static``, and every analysis runs on it as on a contextual
store.

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

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from emb.backends.base import Backend, Runner, words_of
from emb.backends.vectors import (
    FORMATS,
    LOSS_LIMIT,
    VectorsFormat,
    detect_format,
    is_vectors_file,
    parse_format,
    read_vectors,
    rounding_loss,
)
from emb.errors import EmbError, ModelError, OptionError, SuiteError, TargetNotFoundError
from emb.files.documents import show
from emb.options import BATCH_SIZE, Option

__all__ = [
    "FORMATS",
    "STATIC_POOLING",
    "StaticBackend",
    "StaticEncoding",
    "StaticInfo",
    "StaticRunner",
    "VectorsFormat",
    "detect_format",
    "is_vectors_file",
    "load_vectors",
    "read_vectors",
]

#: The one pooling of a static store: the word's vector itself.
STATIC_POOLING = "static"
#: The item label holding the vocabulary entry each item's vector was read from.
KEY_LABEL = "vector_key"


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


class StaticRunner(Runner):
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
        from emb.stimuli.suites import Item, Suite

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

    def check_storage(self, suites: Sequence[Any], storage_dtype: str) -> None:
        """Refuse, before anything is written, vectors the storage dtype cannot hold.

        A vector is refused when rounding it to ``storage_dtype`` changes it by more than
        :data:`~emb.backends.vectors.LOSS_LIMIT` (0.1 %) of its length (:func:`rounding_loss`):
        a value beyond float16's ±65504 (it would be stored as infinity), or values below
        float16's normal range (6.1e-5) that make the vector all zeros or distort it. Rounding
        within the range changes a vector by 2⁻¹¹ (0.05 %) of its length at most, so only vectors
        the dtype cannot represent are refused; float32 storage holds every vector the file gave.

        Parameters
        ----------
        suites : sequence of Suite
            Covered suites (:meth:`cover`): their items' ``vector_key`` labels say which vectors
            are stored.
        storage_dtype : {"float16", "float32"}

        Raises
        ------
        ModelError
            The words whose vectors the dtype cannot hold, each with what happens to it, and
            the fix (``--storage-dtype float32``).
        """
        if np.dtype(storage_dtype) == np.float32:
            return  # the vectors were read as float32 (and checked then)
        keys = dict.fromkeys(
            str(item.labels[KEY_LABEL]) for suite in suites for item in suite.items
            if KEY_LABEL in item.labels
        )
        problems = []
        for key in keys:
            if key not in self.vectors:
                continue
            vector = self.vectors[key][1]
            loss = rounding_loss(vector, storage_dtype)
            if loss <= LOSS_LIMIT:
                continue
            if math.isinf(loss):
                what = (f"holds {float(np.max(np.abs(vector))):.6g}, which overflows to infinity "
                        f"(the largest {storage_dtype} is {float(np.finfo(storage_dtype).max):g})")
            elif loss >= 1.0:
                what = "becomes all zeros (its values lie below the dtype's range)"
            else:
                what = (f"changes by {loss:.1%} of its length (values below the dtype's normal "
                        "range)")
            problems.append(f"{key!r} {what}")
        if problems:
            raise ModelError(
                f"{len(problems)} vector(s) of {self.info.file_name} cannot be stored as "
                f"{storage_dtype}: {'; '.join(problems[:10])}{' …' if len(problems) > 10 else ''}; "
                "give --storage-dtype float32 (storage_dtype='float32' in Python)"
            )

    def prepare(
        self,
        suites: Sequence[Any],
        *,
        poolings: Sequence[str],
        storage_dtype: str,
        bos_token: str | None,
    ) -> tuple[list[Any], tuple[str, ...]]:
        """The suites covered (:meth:`cover`) and checked against the storage dtype
        (:meth:`check_storage`), with the one pooling ``static`` whatever ``poolings`` asks.

        Raises
        ------
        EmbError
            A ``bos_token``: static vectors have no tokens.
        ModelError
            See :meth:`cover` and :meth:`check_storage`.
        """
        if bos_token is not None:
            raise EmbError(
                f"--bos-token {show(bos_token)} was given for static word vectors, which have no "
                "tokens and no context; drop --bos-token"
            )
        covered = self.cover(suites)
        self.check_storage(covered, storage_dtype)  # before the store is touched
        return covered, tuple(self.poolings)

    def notes(self, suites: Sequence[Any]) -> list[str]:
        """One line per covered suite: its words with a vector, those found lower-cased, and
        those without one (their items left out)."""
        lines = []
        for suite in suites:
            rec = suite.parameters.get("vectors", {})
            found = rec.get("n_words", 0) - rec.get("n_missing", 0)
            line = (f"{suite.name}: {found} of {rec.get('n_words')} words have a vector in "
                    f"{rec.get('file')}")
            if rec.get("lowercased"):
                line += f" ({len(rec['lowercased'])} found lower-cased)"
            if rec.get("n_missing"):
                shown = ", ".join(rec["missing"][:15]) + (" …" if rec["n_missing"] > 15 else "")
                line += (f"; {rec['n_missing']} without one, their {rec['n_items_left_out']} "
                         f"items left out: {shown}")
            lines.append(line)
        return lines

    # -- the Runner interface -------------------------------------------------------------------
    def encode(
        self,
        contexts: Sequence[str],
        spans: Sequence[tuple[int, int]],
        *,
        bos: bool | None = None,
        bos_token_id: int | None = None,
    ) -> list[StaticEncoding]:
        """Each target's vocabulary row (the word covered by :meth:`cover`, else the span's text);
        static vectors have no context, so ``bos`` and ``bos_token_id`` change nothing.

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
        batch_size: int = BATCH_SIZE.default,
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
    fmt = parse_format(format) if format is not None else None
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


# -- the backend -------------------------------------------------------------------------------------
class StaticBackend(Backend):
    """Static word vectors files: word2vec (binary or text), GloVe, fastText, optionally
    compressed; opened when the file looks like one (:func:`is_vectors_file`) or ``format`` is
    given."""

    name = "static"
    description = (
        "static word vectors (word2vec .bin/.txt, GloVe .txt, fastText .vec; optionally .gz/.zip)"
    )
    label = "static vectors"
    options = (
        Option(
            name="format", type=str, flag="--vectors-format", deprecated=("--format",),
            help="word2vec-binary, word2vec-text, glove or fasttext (default: from the file name; "
                 "a .txt by its first line).",
        ),
        Option(
            name="lowercase_fallback", type=bool, default=False,
            help="Look a word missing in its case up lower-cased (recorded per item, label "
                 "vector_key).",
        ),
        Option(
            name="allow_missing", type=bool, default=False,
            help="Leave out the items of words without a vector, or CEAT stimuli without a "
                 "context (recorded in the store and reported), instead of failing.",
        ),
    )

    def guess_can_open(self, model: str, **options: Any) -> bool:
        return options.get("format") is not None or is_vectors_file(model)

    def load(
        self,
        model: str,
        *,
        suites: Sequence[Any],
        dtype: str,
        device: str,
        format: VectorsFormat | None = None,
        lowercase_fallback: bool = False,
        allow_missing: bool = False,
    ) -> StaticRunner:
        """The vectors of the suites' words (:func:`load_vectors`); ``dtype`` and ``device``
        change nothing (the vectors are read as float32, on the CPU)."""
        return load_vectors(model, words_of(suites), format=format,
                            lowercase_fallback=lowercase_fallback, allow_missing=allow_missing)

    def refuse_unused(self, options: Mapping[str, Any], suites: Sequence[Any]) -> None:
        """``lowercase_fallback`` and ``allow_missing`` for a model that is no vectors file are
        refused, unless a suite takes ``allow_missing`` (ceat)."""
        lowercase, allow = options.get("lowercase_fallback"), options.get("allow_missing")
        uses_allow = any(s.parameters.get("allow_missing") for s in suites)
        if lowercase or (allow and not uses_allow):
            raise OptionError(
                "--lowercase-fallback and --allow-missing apply to static vectors files only "
                "(.bin, .txt, .vec, optionally .gz/.zip; or give --vectors-format), and --allow-missing "
                "to the ceat suite")
