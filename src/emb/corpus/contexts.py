"""Natural contexts of many stimuli from a large corpus: one streaming pass, seeded reservoirs.

:func:`sample_contexts` reads every corpus file once (bounded memory: a few blocks of text and the
reservoirs), finds all stimuli at once (:mod:`emb.corpus.matching`) and keeps, for each
stimulus, up to ``n`` of the context units (sentences, documents, or the authors' windows) that
contain it.

**The sample depends only on (files, seed, n, options).** Every candidate unit gets a 64-bit key
from a hash of (seed, stimulus, file name, byte offset of its record, its ordinal among the units of
that record holding the stimulus); a stimulus keeps the ``n`` candidates with the smallest keys.
Keys are computed where the candidate is found, so partial reservoirs of any split of the files
merge exactly (take the ``n`` smallest again): the result is the same for 1, 2 or 64 workers, local
processes or a Dask cluster, and it is a uniform sample without replacement of the candidates
(the keys are independent uniform draws for distinct candidates). Ties of keys (probability ~2⁻⁶⁴
per pair) are broken by (file, offset, ordinal).

Records are identified by their byte offset in the decompressed file (Parquet: the row), and by
the 1-based line number, both recorded with every context.
"""

from __future__ import annotations

import concurrent.futures as cf
import heapq
import itertools
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, NamedTuple, overload

import numpy as np

from emb.corpus.matching import Matcher, Unit, reference_text, reference_window
from emb.corpus.reservoir import Reservoirs, below, candidate_keys
from emb.corpus.sentences import _sentence_of, _sentences, one_sentence
from emb.corpus.stream import (
    MAX_RECORD_BYTES,
    CorpusFile,
    Format,
    corpus_files,
    iter_blocks,
    record_ids,
)
from emb.errors import CorpusError

__all__ = ["Context", "ContextSample", "Contexts", "candidate_keys", "sample_contexts"]

class Context(NamedTuple):
    """One sampled context of a stimulus (a named tuple: millions are built at paper scale)."""

    stimulus: str
    text: str
    char_start: int
    char_end: int
    file: str
    line: int
    offset: int
    ordinal: int
    record_id: str
    key: int


class Contexts(Sequence[Context]):
    """One stimulus' kept contexts in key order, held as columns; a :class:`Context` is built
    when one is read.  Building every named tuple in the merge was the sampling pass's largest
    serial cost (2 s for 817,316 contexts, measured), and the columns take a fraction of their
    memory; the suite builder reads each context once anyway.

    Columns: key (uint64), file index, offset, ordinal, text (object), char_start, char_end,
    line, record id (object); ``names``: the file names by file index.
    """

    __slots__ = ("_cols", "_names", "_word")

    def __init__(self, word: str, names: Sequence[str], cols: Sequence[np.ndarray]) -> None:
        self._word = word
        self._names = names
        self._cols = tuple(cols)

    def __len__(self) -> int:
        return len(self._cols[0])

    def __iter__(self) -> Iterator[Context]:
        key, file, offset, ordinal, text, start, end, line, ident = (c.tolist() for c in self._cols)
        return map(Context._make, zip(  # Context._make over zipped columns: 2.5x a comprehension
            itertools.repeat(self._word, len(key)), text, start, end,
            map(self._names.__getitem__, file), line, offset, ordinal, ident, key, strict=True,
        ))

    @overload
    def __getitem__(self, i: int) -> Context: ...
    @overload
    def __getitem__(self, i: slice) -> list[Context]: ...

    def __getitem__(self, i: int | slice) -> Context | list[Context]:
        if isinstance(i, slice):
            return list(Contexts(self._word, self._names, [c[i] for c in self._cols]))
        key, file, offset, ordinal, text, start, end, line, ident = (c[i] for c in self._cols)
        return Context(self._word, text, int(start), int(end), self._names[int(file)], int(line),
                       int(offset), int(ordinal), ident, int(key))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Contexts of {self._word!r}: {len(self)}>"


@dataclass(frozen=True, kw_only=True)
class ContextSample:
    """The result of a sampling pass.

    Attributes
    ----------
    contexts : dict of str to sequence of Context
        Per stimulus, its kept contexts in key order (at most ``n``; :class:`Contexts`, which
        builds each :class:`Context` when it is read).
    seen : dict of str to int
        Candidate units found per stimulus (the reservoir's population).
    files : tuple of CorpusFile
    n, seed, unit, case_sensitive, text_field, id_field
        The options.
    records_skipped : int
        ``[deleted]``/``[removed]``/empty records.
    records_too_long : int
        Records longer than :data:`~emb.corpus.stream.MAX_RECORD_BYTES`, skipped.
    records_invalid_unicode : int
        JSON records holding a stimulus whose text or id has an unpaired surrogate escape
        (``\\ud800``), skipped.
    bytes_read, bytes_text : int
        Bytes read from disk and decompressed bytes scanned.
    seconds : float
    workers : int
    options : dict
        Timings: each worker's CPU and wall seconds (the scan and building its kept contexts)
        and the merge's (choosing the n smallest keys over the workers, in this process).
    """

    contexts: dict[str, Sequence[Context]]
    seen: dict[str, int]
    files: tuple[CorpusFile, ...]
    n: int
    seed: int
    unit: str
    case_sensitive: bool
    text_field: str
    id_field: str | None
    records_skipped: int
    bytes_read: int
    bytes_text: int
    seconds: float
    workers: int = 1
    options: dict[str, Any] = field(default_factory=dict)
    records_too_long: int = 0
    records_invalid_unicode: int = 0

    def kept(self, stimulus: str) -> int:
        return len(self.contexts.get(stimulus, ()))

    def missing(self) -> list[str]:
        """Stimuli with no context at all."""
        return [s for s in self.contexts if not self.contexts[s]]

    def short(self) -> list[str]:
        """Stimuli with fewer than ``n`` contexts (including the missing ones)."""
        return [s for s in self.contexts if len(self.contexts[s]) < self.n]

    def provenance(self) -> dict[str, Any]:
        return {
            "files": [f.to_dict() for f in self.files],
            "file_identity": (
                "digest = sha256 of the bytes on disk, or size+mtime for files over 256 MiB; "
                "name = path relative to the files' common directory (enters the sampling keys)"
            ),
            "n_contexts": self.n,
            "seed": self.seed,
            "unit": self.unit,
            "case_sensitive": self.case_sensitive,
            "text_field": self.text_field,
            "id_field": self.id_field,
            "records_skipped": self.records_skipped,
            "records_too_long": self.records_too_long,
            "max_record_bytes": MAX_RECORD_BYTES,
            "records_invalid_unicode": self.records_invalid_unicode,
            "bytes_read": self.bytes_read,
            "bytes_text": self.bytes_text,
            "seconds": round(self.seconds, 3),
            "workers": self.workers,
            "sampling": (
                "per stimulus, the n candidate units with the smallest 64-bit key "
                "blake2b/splitmix64(seed, stimulus, file name, record byte offset, ordinal): a "
                "uniform sample without replacement, identical for any number of workers"
            ),
        }


# -- one worker ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Job:
    files: tuple[CorpusFile, ...]
    file_index: tuple[int, ...]
    matcher: Matcher
    n: int
    seed: int
    text_field: str
    id_field: str | None


def _units(matcher: Matcher, rec, stim, ws, we, text_of, single=None):  # noqa: ANN001, ANN202
    """Candidate units from the occurrences of a block: (record, stimulus, ordinal, hint).

    A stimulus occurring once in a record makes one candidate whatever the unit; several
    occurrences make one candidate per record (``document``, ``reference``) or one per sentence
    holding it (``sentence``: the record is split only then). ``hint`` is the byte position (in
    the block) of the candidate's target when it is known without splitting, else -1.
    ``single`` (per record of the block, :func:`~emb.corpus.sentences.one_sentence`) marks the
    records known to be one sentence without splitting them.
    """
    e = np.zeros(0, dtype=np.int64)
    if not len(rec):
        return e, e, e, e
    pair = rec * np.int64(len(matcher.stimuli)) + stim
    first = np.ones(len(pair), dtype=bool)
    first[1:] = pair[1:] != pair[:-1]
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, len(pair)))
    urec, ustim, uws = rec[starts], stim[starts], ws[starts]
    if matcher.unit == "reference":
        keep = [
            f" {matcher.stimuli[s]} " in reference_text(text_of(r))
            for r, s in zip(urec.tolist(), ustim.tolist(), strict=True)
        ]
        keep = np.asarray(keep, dtype=bool)
        z = np.zeros(int(keep.sum()), dtype=np.int64)
        return urec[keep], ustim[keep], z, z - 1
    if matcher.unit == "document" or not (counts > 1).any():
        return urec, ustim, np.zeros(len(urec), dtype=np.int64), uws
    # one occurrence, or several in a record known to be one sentence: one unit, its target the
    # first occurrence
    one = (counts == 1) | (single[urec] if single is not None else False)
    rows: list[tuple[int, int, int, int]] = []
    spans_of: dict[int, list[tuple[int, int]]] = {}  # a record split once for all its stimuli
    many = ~one
    for r, s, w in zip(urec[many].tolist(), ustim[many].tolist(), uws[many].tolist(), strict=True):
        spans = spans_of.get(r)
        if spans is None:
            spans = spans_of[r] = _sentences(text_of(r))
        if len(spans) == 1:  # one sentence after all
            rows.append((r, s, 0, w))
            continue
        occ = matcher.occurrences_in(text_of(r), s)
        rows.extend((r, s, k, -1) for k in range(len({_sentence_of(spans, a) for a, _ in occ})))
    multi = np.asarray(rows, dtype=np.int64).reshape(-1, 4)
    return (np.concatenate([urec[one], multi[:, 0]]), np.concatenate([ustim[one], multi[:, 1]]),
            np.concatenate([np.zeros(int(one.sum()), np.int64), multi[:, 2]]),
            np.concatenate([uws[one], multi[:, 3]]))


def _materialize(
    matcher: Matcher, stimulus: int, text: str, ordinal: int, hint: int = -1, single: bool = False
) -> tuple[str, int, int]:
    """(context, char_start, char_end) of a candidate unit.

    ``hint``: the target's byte offset in ``text`` when the scan knew it (the record's only
    occurrence, or the first one for ``document``), which spares finding it again; ``single``:
    the text is known to be one sentence (:func:`~emb.corpus.sentences.one_sentence`).
    """
    word = matcher.stimuli[stimulus]
    if matcher.unit == "reference":
        return reference_window(reference_text(text), word)
    if hint >= 0 and matcher.is_fast(stimulus):
        a = hint if text.isascii() else len(text.encode("utf-8")[:hint].decode("utf-8"))
        occ = [(a, a + len(word))]
    else:
        occ = matcher.occurrences_in(text, stimulus)
    if not occ:  # the scan and this rule disagree: a bug, never the user's input
        raise CorpusError(f"internal error: {word!r} not found again in {text[:200]!r}")
    if matcher.unit == "sentence" and not single:
        spans = _sentences(text)
    else:
        spans = [(0, len(text))]
    if len(spans) == 1:
        a, b = occ[0]
        lead = len(text) - len(text.lstrip())
        return text.strip(), a - lead, b - lead
    units: dict[int, tuple[int, int]] = {}
    for a, b in occ:
        units.setdefault(_sentence_of(spans, a), (a, b))
    keys = sorted(units)
    if ordinal >= len(keys):
        raise CorpusError(f"internal error: unit {ordinal} of {word!r} in {text[:200]!r}")
    which = keys[ordinal]
    a, b = units[which]
    lo, hi = spans[which] if which < len(spans) else (a, b)
    sentence = text[lo:hi]
    lead = len(sentence) - len(sentence.lstrip())
    return sentence.strip(), a - lo - lead, b - lo - lead


_PROGRESS: Any = None  # a worker's shared counters and thresholds, set by _init_worker


def _init_worker(counters: Any, slot_queue: Any, thresholds: Any = None) -> None:
    global _PROGRESS
    _PROGRESS = (counters, slot_queue.get(), thresholds)


def _reporter() -> Callable[[int], None] | None:
    if _PROGRESS is None:
        return None
    counters, slot, _ = _PROGRESS

    def report(n: int) -> None:
        counters[slot] += n

    return report


def _shared_bound(n_stimuli: int) -> Callable[[np.ndarray], np.ndarray] | None:
    """In a local worker process: publish this worker's reservoir thresholds and return the
    smallest of every worker's, per stimulus (see :meth:`Reservoirs.bound`): candidates above
    it are neither buffered nor turned into contexts, which the merge would drop.  The sample
    does not depend on when the others published (a bound only ever leaves out what the merge
    drops); what it saves does: two workers build about the contexts one builds."""
    if _PROGRESS is None or _PROGRESS[2] is None:
        return None
    _, slot, shared = _PROGRESS
    table = np.frombuffer(shared, dtype=np.uint64).reshape(-1, n_stimuli)

    def exchange(own: np.ndarray) -> np.ndarray:
        table[slot] = own
        return table.min(axis=0)

    return exchange


def _scan(job: _Job, report: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Scan some files; return their partial reservoirs (columns, see :func:`_offer`)."""
    report = report or _reporter()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    matcher = job.matcher
    res = Reservoirs(len(matcher.stimuli), job.n)
    exchange = _shared_bound(len(matcher.stimuli))
    skipped = too_long = invalid = 0
    scanned = 0
    for file, findex in zip(job.files, job.file_index, strict=True):
        for block in iter_blocks(
            file, text_field=job.text_field, id_field=job.id_field,
            prefilter=matcher.scan, report=report,
        ):
            skipped += block.skipped
            too_long += block.too_long
            invalid += block.invalid_unicode
            scanned += block.source_bytes
            _offer(res, job, block, file.name, findex)
            if exchange is not None:
                res.bound(exchange(res.threshold))
    candidates = res.kept()
    if exchange is not None:  # the final thresholds, published before the contexts are built
        candidates = below(candidates, exchange(res.threshold))
    kept = [_contexts(matcher, s, cols) for s, cols in enumerate(candidates)]
    return {"kept": kept, "seen": res.seen, "skipped": skipped, "too_long": too_long,
            "invalid_unicode": invalid, "scanned": scanned,
            "read": sum(f.size for f in job.files), "cpu": time.process_time() - cpu0,
            "wall": time.perf_counter() - wall0}


def _contexts_columns_empty() -> tuple[np.ndarray, ...]:
    e = np.zeros(0, dtype=np.int64)
    none = np.empty(0, dtype=object)
    return (e.astype(np.uint64), e, e, e, none, e, e, e, none)


def _contexts(matcher: Matcher, s: int, cols: tuple[np.ndarray, ...]):  # noqa: ANN202
    """A worker's kept candidates of stimulus ``s``, materialized where they were found (in
    parallel over workers): (key, file, offset, ordinal) columns and the context columns (text,
    char_start, char_end, line, record id), in ascending order.  Columns, not
    :class:`Context` objects: they travel back from a worker process several times faster
    (measured: 400,000 named tuples took 1.4 s to pickle and 2.4 s to unpickle), and
    :class:`Contexts` builds each object only when it is read.

    The common case is taken for all such candidates at once: a one-word stimulus whose target
    is known (``at``) in a whole unit (a one-sentence record, or any record as a ``document``)
    that is ASCII without outer whitespace (its context is the record, its offsets ``at``).
    """
    if not len(cols):
        return _contexts_columns_empty()
    word = matcher.stimuli[s]
    width = len(word)
    at, form = cols[7], cols[8]
    if matcher.is_fast(s) and matcher.unit != "reference":
        whole = _SINGLE if matcher.unit == "sentence" else 0
        quick = (at >= 0) & ((form & (_PLAIN | whole)) == (_PLAIN | whole))
    else:
        quick = np.zeros(len(at), dtype=bool)
    texts = cols[4].copy()
    starts = at.copy()
    ends = at + width
    slow = np.flatnonzero(~quick)
    for i, text, ordinal, a, single in zip(
        slow.tolist(), *(c[slow].tolist() for c in (cols[4], cols[3], at, form & _SINGLE)),
        strict=True,
    ):
        texts[i], starts[i], ends[i] = _materialize(matcher, s, text, ordinal, a, bool(single))
    return (*cols[:4], texts, starts, ends, np.asarray(cols[5], dtype=np.int64), cols[6])


#: bits of a candidate's ``form``: its record is one sentence (``sentence`` unit); its record is
#: ASCII without leading or trailing whitespace (character offsets are byte offsets, the record
#: is its own stripped text)
_SINGLE, _PLAIN = 1, 2
#: bytes that str.strip() removes from an ASCII text
_OUTER_SPACE = np.zeros(256, dtype=bool)
_OUTER_SPACE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True


def _offer(res: Reservoirs, job: _Job, block: Any, file_name: str, findex: int) -> None:
    """Offer a block's candidate units to the reservoirs.

    Keys are computed for every candidate at once; the payload columns (record text, line, id,
    the target's byte offset in the text or -1) are built only for the candidates whose key
    passes their stimulus' threshold, each record's text decoded once.
    """
    matcher = job.matcher
    rec, stim, ws, we = matcher.occurrences(block.data, block.starts, block.ends, block.known)
    texts: dict[int, str] = {}

    def decoded(r: int) -> str:
        if r not in texts:
            texts[r] = block.text(r)
        return texts[r]

    # decoded records keep their strings; a text file's are decoded once, when first asked
    text_of = block.texts.__getitem__ if block.texts is not None else decoded

    single = (one_sentence(block.data, block.starts, block.ends) if matcher.unit == "sentence"
              else np.zeros(len(block), dtype=bool))
    urec, ustim, ordinal, hint = _units(matcher, rec, stim, ws, we, text_of, single)
    if not len(urec):
        return
    offsets = block.offsets[urec]
    keys = candidate_keys(job.seed, matcher.stimuli, file_name, ustim, offsets, ordinal)
    chosen = np.flatnonzero(res.admit(ustim, keys))
    if not len(chosen):
        return
    r = urec[chosen]
    records, which = np.unique(r, return_inverse=True)
    record_list = records.tolist()
    text_col = np.empty(len(records), dtype=object)
    text_col[:] = [text_of(x) for x in record_list]
    data = np.frombuffer(block.data, dtype=np.uint8)
    plain = ~(_OUTER_SPACE[data[block.starts[records]]] | _OUTER_SPACE[data[block.ends[records] - 1]])
    plain &= np.fromiter(map(str.isascii, text_col), dtype=bool, count=len(records))  # O(1) each
    form = single[r].astype(np.int8) | np.where(plain[which], np.int8(_PLAIN), np.int8(0))
    id_col = np.empty(len(records), dtype=object)
    id_col[:] = record_ids(block, record_list)
    at = hint[chosen]
    at = np.where(at >= 0, at - block.starts[r], -1)
    res.add(ustim[chosen], (keys[chosen], np.full(len(chosen), findex, dtype=np.int64),
                            offsets[chosen], ordinal[chosen], text_col[which], block.lines[r],
                            id_col[which], at, form))


def _groups(files: Sequence[CorpusFile], n: int) -> list[list[int]]:
    """Files (indices) in ``n`` groups of similar size (largest first into the lightest group)."""
    bins: list[tuple[int, int, list[int]]] = [(0, g, []) for g in range(n)]
    for i in sorted(range(len(files)), key=lambda i: (-files[i].size, i)):
        size, g, members = heapq.heappop(bins)
        members.append(i)
        heapq.heappush(bins, (size + files[i].size, g, members))
    return [sorted(m) for _, _, m in sorted(bins, key=lambda b: b[1]) if m]


def _merge(parts: list[dict[str, Any]], stimuli: Sequence[str], n: int, names: Sequence[str]):  # noqa: ANN202
    """The n smallest (key, file, offset, ordinal) per stimulus over all partial reservoirs, as
    :class:`Contexts` (``names``: the file names by file index)."""
    seen = np.zeros(len(stimuli), dtype=np.int64)
    merged: dict[str, Sequence[Context]] = {}
    for part in parts:
        seen += part["seen"]
    empty = _contexts_columns_empty()
    for s, word in enumerate(stimuli):
        cols = [part["kept"][s] for part in parts if len(part["kept"][s][0])]
        if len(cols) > 1:
            cols = [np.concatenate(c) for c in zip(*cols, strict=True)]
            key, file, offset, ordinal = cols[:4]
            order = np.lexsort((ordinal, offset, file, key))[:n]
            merged[word] = Contexts(word, names, [c[order] for c in cols])
        else:
            merged[word] = Contexts(word, names, cols[0] if cols else empty)
    return merged, {w: int(c) for w, c in zip(stimuli, seen.tolist(), strict=True)}


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc="corpus",
                dynamic_ncols=True, smoothing=0.1)


def sample_contexts(
    corpus: str | PathLike[str] | Sequence[str | PathLike[str]],
    stimuli: Sequence[str],
    *,
    n: int,
    seed: int = 0,
    unit: Unit = "sentence",
    case_sensitive: bool = False,
    text_field: str = "text",
    id_field: str | None = "id",
    format: Format = "auto",
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = False,
) -> ContextSample:
    """Sample up to ``n`` contexts of every stimulus in one pass over the corpus.

    Parameters
    ----------
    corpus : path, glob, or a sequence of them
        Text, JSON Lines or Parquet files, optionally gzip/zstd/xz/bz2-compressed
        (:func:`emb.corpus.files.corpus_files`).
    stimuli : sequence of str
        The words (distinct).
    n : int
        Contexts kept per stimulus.
    seed : int
    unit : {"sentence", "document", "reference"}
        See :mod:`emb.corpus.matching`.
    case_sensitive : bool
        Match the stimulus' case exactly (``reference`` always does).
    text_field, id_field : str
        JSON keys / Parquet columns of the text and the record id.
    workers : int, optional
        Local processes (default: the number of cores, at most the number of files); 1 scans in
        this process. The sample does not depend on it.
    scheduler : str, optional
        Address of a Dask distributed scheduler: the files are scanned on its workers instead.
    progress : bool
        Show a progress bar over the bytes read from disk, with the rate.

    Returns
    -------
    ContextSample

    Raises
    ------
    CorpusError
        Unreadable files or records (see :func:`~emb.corpus.stream.iter_blocks`), bad
        options.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CorpusError(f"the number of contexts must be a positive integer; got {n!r}")
    words = list(dict.fromkeys(str(s) for s in stimuli))
    if not words:
        raise CorpusError("no stimuli to sample contexts for")
    files = corpus_files(corpus if not isinstance(corpus, (str, PathLike)) else [corpus], format=format)
    matcher = Matcher(words, case_sensitive=case_sensitive, unit=unit)
    workers = _workers(workers, files)
    t0 = time.perf_counter()
    groups = _groups(files, workers if scheduler is None else max(len(files), 1))
    jobs = [
        _Job(tuple(files[i] for i in g), tuple(g), matcher, n, int(seed), text_field, id_field)
        for g in groups
    ]
    total = sum(f.size for f in files)
    parts = _scan_jobs(jobs, scheduler, _progress_bar(total, progress))
    t_merge = time.perf_counter()
    contexts, seen = _merge(parts, matcher.stimuli, n, [f.name for f in files])
    merge_seconds = time.perf_counter() - t_merge
    elapsed = time.perf_counter() - t0
    return ContextSample(
        contexts=contexts, seen=seen, files=files, n=n, seed=int(seed), unit=unit,
        case_sensitive=matcher.case_sensitive, text_field=text_field, id_field=id_field,
        records_skipped=sum(p["skipped"] for p in parts),
        records_too_long=sum(p["too_long"] for p in parts),
        records_invalid_unicode=sum(p["invalid_unicode"] for p in parts), bytes_read=total,
        bytes_text=sum(p["scanned"] for p in parts), seconds=elapsed,
        workers=len(jobs) if scheduler is None else 0,
        options={"worker_cpu_seconds": [round(p["cpu"], 3) for p in parts],
                 "worker_wall_seconds": [round(p["wall"], 3) for p in parts],
                 "merge_seconds": round(merge_seconds, 3)},
    )


def _workers(workers: int | None, files: Sequence[Any]) -> int:
    """The local processes: those asked for (a positive integer), else one per core, at most one
    per file."""
    if workers is None:
        workers = min(os.cpu_count() or 1, len(files))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise CorpusError(f"workers must be a positive integer; got {workers!r}")
    return workers


def _scan_jobs(jobs: list[_Job], scheduler: str | None, bar: Any) -> list[dict[str, Any]]:
    """Each job's scan: on a Dask scheduler's workers, in this process (one job), or in local
    processes; the progress bar closed once they are done."""
    if scheduler is not None:
        parts = _run_distributed(jobs, scheduler, bar)
    elif len(jobs) == 1:
        parts = [_scan(jobs[0], report=(bar.update if bar is not None else None))]
    else:
        parts = _run_local(jobs, bar)
    if bar is not None:
        bar.close()
    return parts


def _run_local(jobs: list[_Job], bar: Any) -> list[dict[str, Any]]:
    context = multiprocessing.get_context("spawn")
    counters = context.Array("q", len(jobs), lock=False)
    n_stimuli = len(jobs[0].matcher.stimuli)
    thresholds = context.Array("Q", len(jobs) * n_stimuli, lock=False)
    np.frombuffer(thresholds, dtype=np.uint64)[:] = np.iinfo(np.uint64).max
    slots = context.Queue()
    for i in range(len(jobs)):
        slots.put(i)
    with cf.ProcessPoolExecutor(
        max_workers=len(jobs), mp_context=context, initializer=_init_worker,
        initargs=(counters, slots, thresholds),
    ) as pool:
        futures = [pool.submit(_scan, job) for job in jobs]
        done_bytes = 0
        pending = set(futures)
        while pending:
            _, pending = cf.wait(pending, timeout=0.5)
            if bar is not None:
                now = sum(counters)
                bar.update(now - done_bytes)
                done_bytes = now
        return [f.result() for f in futures]


def _run_distributed(jobs: list[_Job], scheduler: str, bar: Any) -> list[dict[str, Any]]:
    from emb._scheduler import connect_scheduler

    client = connect_scheduler(scheduler)  # also says when dask.distributed is missing
    from dask.distributed import as_completed

    with client:
        futures = client.map(_scan, jobs, pure=False)
        for future in as_completed(futures):
            if bar is not None:
                bar.update(sum(f.size for f in jobs[futures.index(future)].files))
        return client.gather(futures)
