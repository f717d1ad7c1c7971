"""``emb extract``: feed suites through a model and write every layer's target embedding to a store.

The plan of a suite is a function of its items alone: items are cut into blocks of
``block_size`` (one zarr shard each), and blocks into windows of ``window_blocks``.  Within a
window, each distinct (context, char span) whose first occurrence lies in it is computed once, in
one length-sorted pass (batches of similar length carry little padding); items repeating an
earlier key copy its row, and keys already stored by another finished suite of the same model and
settings are copied from there.  Blocks are encoded and written by writer threads (several
blocks at once) while the next window is computed; each block's done-marker follows its shard.
An interrupted run resumes with the windows that still have unwritten blocks, recomputing each
such window whole, so its batches and therefore its vectors are bitwise those of an
uninterrupted run.

With ``shard="I/N"`` a worker computes only its shard of the windows (:mod:`emb.extraction.shards`,
coordinated through the store's shard record); the worker that writes the last block completes
the suite, bitwise what one process writes.

Everything written goes through the store's one write handle, :class:`emb.store.StoreWriter`
(locks, layout, shard record, markers, manifest): the pipeline decides what to compute, the store
how it is kept.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from emb import backends
from emb.errors import EmbError, EmbWarning, StoreError
from emb.extraction import settings as extraction_settings
from emb.extraction._backoff_record import Mark, run_record
from emb.extraction._plan import BlockSources, Plan
from emb.extraction._prepared import Prepared, first_position, position_zero_fix
from emb.extraction.options import DTYPE, OPTIONS
from emb.extraction.settings import ExtractionSettings, SuiteReport, parse_layers, parse_settings
from emb.extraction.shards import (
    Shard,
    available_rows,
    check_count,
    settle,
    shard_record,
    shard_windows,
    window_blocks_of,
)
from emb.schemas import datamodel as dm
from emb.store import COPIES_PENDING, DONE, StoreWriter, check_group_name, layer_major
from emb.store.shards import other_shard_count

if TYPE_CHECKING:  # pragma: no cover
    from emb.backends import Runner
    from emb.extraction.estimate import Estimate
    from emb.stimuli.suites import Suite
    from emb.store import ShardRecord, SuiteWriter

__all__ = ["extract"]

#: Windows whose blocks may be waiting for or in the writer threads while the next window is
#: computed: with 2, the threads never wait for the computing thread at a window's end, and the
#: host holds at most three windows of vectors (two queued, one being computed), whatever the
#: suite's size.
QUEUE_WINDOWS = 2

#: The keywords of :data:`~emb.extraction.options.OPTIONS` (the others are the backends').
_PIPELINE_OPTIONS = frozenset(option.name for option in OPTIONS)


def extract(
    model: str | os.PathLike[str] | Runner,
    suites: Suite | Sequence[Suite],
    store: str | os.PathLike[str],
    settings: ExtractionSettings | None = None,
    *,
    progress: bool = True,
    storage_options: dict[str, Any] | None = None,
    on_estimate: Callable[[Estimate], object] | None = None,
    on_note: Callable[[str], object] | None = None,
    **options: Any,
) -> list[SuiteReport]:
    """Extract every layer's embedding of each suite item's target into ``store``.

    Parameters
    ----------
    model
        Hugging Face model id, local model directory, ``.gguf`` file, static vectors file
        (:mod:`emb.backends.static`: one layer, pooling ``static``), or what an installed
        backend opens — a ``str`` or any ``os.PathLike``, loaded by the backend that opens it
        (:func:`emb.backends.load`) — or an already loaded :class:`~emb.backends.Runner`.
    suites
        One or more :class:`~emb.stimuli.suites.Suite`; each becomes a group of the store.
    store
        Local path or fsspec URL of the (new or existing) store.
    settings
        The run's settings, parsed (:func:`~emb.extraction.settings.parse_settings`: what the
        front door :func:`emb.extract` passes); None: parsed here from the pipeline's options
        among ``options``.
    progress
        Show a progress bar.
    storage_options
        fsspec options of a store URL.
    on_estimate
        Called with the :class:`~emb.extraction.estimate.Estimate` before anything is written.
    on_note
        Called with each line the runner has to say about the suites it prepared (static
        vectors: the words with a vector), before anything is written.
    **options
        The pipeline's options without ``settings`` (:data:`emb.extraction.options.OPTIONS`,
        each documented there: ``poolings``, ``dtype``, ``storage_dtype``, ``batch_size``,
        ``device``, ``bos``, ``bos_token``, ``group_names``, ``overwrite``, ``layers``,
        ``dry_run``, ``shard``, ``block_size``, ``window_blocks``), and the options of the backend
        that opens ``model`` (:attr:`emb.backends.Backend.options`): ``revision`` and
        ``trust_remote_code`` (whether a model that ships its own Python code may run it, see
        :func:`emb.backends.load_model`; recorded in the store) for transformers models;
        ``format``, ``lowercase_fallback`` and ``allow_missing`` for static vectors files.
        Backend options are ignored with a loaded runner.

    Returns
    -------
    list of SuiteReport

    Raises
    ------
    OptionError
        An option its declaration refuses, before anything is loaded.
    ModelError, TargetNotFoundError, SuiteError, StoreError
        Before anything is written: every input (names, settings, model, suites, the store
        location) is checked first.
    StoreMismatchError
        The store holds another model, or the group another suite definition / settings.
    StoreLockedError
        Another process is writing the same suite.

    Warns
    -----
    EmbWarning
        Targets that tokenize to nothing but the unknown token (count and examples; recorded in
        the suite's extraction attributes as ``unknown_targets``).
    """
    settings = _own_settings(settings, options)
    backend_options = options
    suite_list, group_names = _suites_named(suites, settings)
    target = StoreWriter(store, storage_options=storage_options)
    # a store path emb cannot or must not write into, or a suite another process is writing
    # (with --shard: another worker with the same shard), is refused before the model loads
    target.check(suites=group_names, shard=settings.shard_label)

    if isinstance(model, str | os.PathLike):  # loaded by the backend that opens it
        runner = backends.load(
            model, suite_list, dtype=settings.dtype, device=settings.device,
            layers=settings.layers, **backend_options,
        )
    else:
        runner = model
    suite_list, settings, bos_id, info = _prepare(runner, suite_list, settings, on_note)
    chosen = parse_layers(settings.layers, int(runner.info.n_layers))
    t_start = time.perf_counter()  # the extraction's time, the model loaded (see the estimate)
    with _frozen_gc():
        checked = _check_suites(runner, target, suite_list, group_names, settings,
                                bos_id=bos_id, chosen=chosen, info=info)
        if settings.dry_run or on_estimate is not None:
            estimate = _estimate(runner, target, checked, settings, chosen=chosen,
                                 t_start=t_start)
            if on_estimate is not None:
                on_estimate(estimate)
            if settings.dry_run:
                return []

        target.open(model=info)
        reports = []
        for suite, plan, prep, b, (action, attrs) in zip(
            checked.suites, checked.plans, checked.prepared, checked.bos, checked.states,
            strict=True,
        ):
            seen = _backoffs(runner)
            reports.append(
                _extract_suite(
                    runner,
                    target,
                    suite=suite,
                    plan=plan,
                    prep=prep,
                    settings=replace(settings, bos=b),
                    progress=progress,
                    tokens_tag=_tokens_tag(runner, prep, plan, bos_id),
                    # the group as the check above found it, resumable: not scanned again
                    scanned=attrs if action == "resume" else None,
                )
            )
            if len(_backoffs(runner)) > len(seen):  # the OOM back-off halved batches
                reports[-1] = replace(reports[-1], backoffs=tuple(_backoffs(runner)[len(seen):]))
    return reports


def _own_settings(
    settings: ExtractionSettings | None, options: dict[str, Any],
) -> ExtractionSettings:
    """The run's settings: those given, or parsed from the pipeline's keywords, which are taken
    out of ``options`` (what is left are the backend's)."""
    own = {k: options.pop(k) for k in list(options) if k in _PIPELINE_OPTIONS}
    if settings is None:
        return parse_settings(own)
    if own:
        raise TypeError(f"extract() takes the settings or their keywords, not both: {sorted(own)}")
    return settings


def _suites_named(
    suites: Suite | Sequence[Suite], settings: ExtractionSettings,
) -> tuple[list[Suite], list[str]]:
    """The suites as a list, and one distinct, valid group name for each."""
    suite_list = [suites] if not isinstance(suites, Sequence) else list(suites)
    group_names = (list(settings.group_names) if settings.group_names is not None
                   else [s.name for s in suite_list])
    if len(group_names) != len(suite_list) or len(set(group_names)) != len(group_names):
        raise EmbError(
            f"need one distinct group name per suite; got {len(group_names)} names "
            f"{[str(n) for n in group_names]} for {len(suite_list)} suites"
        )
    return suite_list, [check_group_name(group_name) for group_name in group_names]


def _prepare(
    runner: Runner, suite_list: list[Suite], settings: ExtractionSettings,
    on_note: Callable[[str], object] | None,
) -> tuple[list[Suite], ExtractionSettings, int | None, dict[str, Any]]:
    """The suites as this runner extracts them (static vectors: words covered, one pooling),
    checked before the store is touched; the settings with the runner's poolings, dtype and
    device; the BOS token's id (None: none asked for); the runner's description."""
    suite_list, pools = runner.prepare(
        suite_list, poolings=settings.poolings, storage_dtype=settings.storage_dtype,
        bos_token=settings.bos_token,
    )
    for line in runner.notes(suite_list) if on_note is not None else ():
        on_note(line)
    bos_id = runner.token_id(settings.bos_token) if settings.bos_token is not None else None
    info = runner.info.to_dict()
    settings = replace(
        settings,
        poolings=pools,
        # --dtype auto: the dtype the model was loaded in (an identity setting)
        dtype=str(info.get("dtype", DTYPE.default)) if settings.dtype == "auto" else settings.dtype,
        device=str(info.get("device", settings.device)),
    )
    return suite_list, settings, bos_id, info


@dataclass(frozen=True)
class _Checked:
    """The run's suites, checked before the store is written: per suite, its BOS policy, plan,
    prepared layout, what the store holds of its group (``states``, as
    :meth:`~emb.store.StoreWriter.check_suites` says) and the extraction attributes it was laid
    out with (``stored``; None: not laid out yet)."""

    suites: list[Suite]
    bos: list[bool | None]
    plans: list[Plan]
    prepared: list[Prepared]
    states: list[tuple[str, dict[str, Any] | None]]
    stored: list[dict[str, Any] | None]


def _check_suites(
    runner: Runner, target: StoreWriter, suite_list: list[Suite], group_names: list[str],
    settings: ExtractionSettings, *, bos_id: int | None, chosen: Any, info: dict[str, Any],
) -> _Checked:
    """Every input validated before the store is touched (called by :func:`extract` only: its
    warnings name the line that called ``extract``)."""
    shard = settings.shard
    # Validate every input before touching the store: key each suite's items, lay out its
    # attributes, and check what the store holds (another model, another definition under
    # the same name) by reading only.  A suite the store does not hold yet is tokenised whole
    # here (a target that cannot be found fails now) and its coordinates made; a suite laid
    # out before (a resumed run, another shard's worker) was tokenised whole by the run that
    # laid it out with the same model, so this run tokenises only the contexts it computes.
    suite_bos = [_suite_bos(suite, settings.bos, runner) for suite in suite_list]
    plans = [
        Plan.build(runner, suite, bos=b, bos_token_id=bos_id)
        for suite, b in zip(suite_list, suite_bos, strict=True)
    ]
    prepared = [
        Prepared.of(runner, suite, plan, replace(settings, bos=b), name=name, layers=chosen)
        for suite, plan, name, b in zip(suite_list, plans, group_names, suite_bos, strict=True)
    ]
    target.check(model=info)
    states = target.check_suites(
        [(prep.name, prep.suite_attrs, prep.identity) for prep in prepared],
        overwrite=settings.overwrite, shard=settings.shard_label,
    )
    stored: list[dict[str, Any] | None] = []  # per suite: the attributes it was laid out with
    for suite, plan, prep, b, (action, attrs) in zip(
        suite_list, plans, prepared, suite_bos, states, strict=True
    ):
        laid_out = action == "resume" and attrs is not None and dm.ATTR_EXTRACTION in attrs
        extraction = dict(attrs[dm.ATTR_EXTRACTION]) if laid_out else None  # type: ignore[index]
        stored.append(extraction)
        if extraction is None:
            _ = plan.encodings, prep.extraction, prep.coords  # the whole suite, checked now
            at_zero = first_position(plan)
        else:
            at_zero = int(extraction.get("targets_at_position_0") or 0)
        if extraction is not None and shard is not None:
            # the encodings of this shard's contexts, kept by the worker that laid the suite
            # out (none: this worker tokenises them)
            kept = target.recorded_tokens(prep.name, shard.label)
            if kept is not None:
                plan.seed(kept, _tokens_tag(runner, prep, plan, bos_id))
        _warn_position_zero(runner, suite, at_zero, b)
        if (message := prep.unknown_message(runner, extraction)) is not None:
            warnings.warn(message, EmbWarning, stacklevel=3)  # extract's caller
    if shard is not None:
        complete = {prep.name for prep, (_, attrs) in zip(prepared, states, strict=True)
                    if attrs is not None and attrs.get(dm.ATTR_COMPLETE)}
        _check_shard_count(target, prepared, shard, settings.block_size,
                           settings.storage_dtype, complete=complete)
    return _Checked(suite_list, suite_bos, plans, prepared, states, stored)


def _estimate(
    runner: Runner, target: StoreWriter, checked: _Checked, settings: ExtractionSettings, *,
    chosen: Any, t_start: float,
) -> Estimate:
    """What the run will take (:func:`~emb.extraction.estimate.estimate_extraction`), from the
    contexts it computes, tokenised now (the whole run's, or its shard's), and a miniature run
    of each suite (its fixed costs)."""
    from emb.extraction.estimate import estimate_extraction

    shard = settings.shard
    # the contexts this run computes, tokenised now (the whole run's, or its shard's)
    work = [_work(target, prep, plan, st, shard, settings.block_size, settings.storage_dtype)
            for prep, plan, st in zip(checked.prepared, checked.plans, checked.stored, strict=True)]
    encodings = [plan.encoded(keys) for plan, (keys, _, _) in zip(checked.plans, work, strict=True)]

    def fixed() -> tuple[float, int]:  # a miniature run of each suite, of this run's kind
        measured = [
            _fixed_seconds(runner, suite, replace(settings, bos=b), blocks=blocks,
                           laid_out=st is not None)
            for suite, st, b, (_, _, blocks) in zip(
                checked.suites, checked.stored, checked.bos, work, strict=True)
        ]
        return sum(t for t, _ in measured), sum(n for _, n in measured)

    return estimate_extraction(
        runner, encodings, [n for _, n, _ in work],
        layers=chosen, poolings=settings.poolings, storage_dtype=settings.storage_dtype,
        batch_size=settings.batch_size,
        seconds_before=time.perf_counter() - t_start, fixed=fixed,
    )


#: Most blocks of the miniature run that measures an extraction's fixed costs (its time grows
#: with them: a block's marker, digest and manifest entry).
FIXED_BLOCKS = 64


def _fixed_seconds(
    runner: Runner, suite: Suite, settings: ExtractionSettings, *, blocks: int, laid_out: bool,
) -> tuple[float, int]:
    """What a run of ``suite`` with ``settings`` costs besides computing and writing its vectors,
    measured: the time of a miniature run into a temporary store with as many blocks as this run
    writes (one item each, at most :data:`FIXED_BLOCKS`, one window): locks, checks, layout, each
    block's marker (and digest), the manifest; as a shard worker (``settings.shard``: the one that
    lays the suite out, or, ``laid_out``, one that finds it laid out and settles it) or as one
    process; with the contexts it computed (the model's part of its time, one embed call).
    (0, 0) where such a run cannot be made."""
    import tempfile

    from emb.stimuli.suites import Suite as SuiteType

    if not set(settings.poolings) <= set(dm.POOLINGS):
        # a runner's own pooling (static vectors' "static") is none a run can ask for, so no
        # miniature run stands for it: such a run's fixed costs are not measured
        return 0.0, 0
    k = max(2, min(blocks, FIXED_BLOCKS))
    items = tuple(suite.items[i % len(suite.items)] for i in range(k)) if suite.items else ()
    kinds: list[Shard | None] = [None]
    if settings.shard is not None and len(items) >= 2:
        # two windows of k blocks: the worker that lays the suite out (timed alone), or the one
        # after it (timed: it resumes and settles what the first laid out)
        items = tuple(suite.items[i % len(suite.items)] for i in range(2 * k))
        kinds = [Shard(1, 2), Shard(2, 2)] if laid_out else [Shard(1, 2)]
    seconds, computed = 0.0, 0
    with tempfile.TemporaryDirectory(prefix="emb-estimate-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind in kinds:
            t0 = time.perf_counter()
            try:
                probe = replace(settings, group_names=None, overwrite=False, dry_run=False,
                                block_size=1, window_blocks=k, shard=kind)
                (report,) = extract(runner, SuiteType(name="probe", items=items),
                                    os.path.join(tmp, "probe.zarr"), probe, progress=False)
            except EmbError:  # a suite this miniature run cannot stand for: not counted
                return 0.0, 0
            finally:
                gc.freeze()  # the miniature run's own _frozen_gc unfroze this run's objects
            seconds, computed = time.perf_counter() - t0, report.n_computed
    return seconds, computed


def _tokens_tag(runner: Runner, prep: Prepared, plan: Plan, bos_token_id: int | None) -> str:
    """What kept encodings must have been made for: the suite, its keys, the tokenizer and the
    settings (see :meth:`Plan.seed`), but not the batch size or device, which change no
    encoding and may differ between workers (one per GPU: ``--device cuda:K``)."""
    import json

    identity = {k: v for k, v in prep.identity.items() if k not in ("batch_size", "device")}
    return json.dumps(
        {"suite": prep.suite_attrs.get("content_hash"), "keys": len(plan.keys),
         "tokenizer": str(getattr(runner.info, "tokenizer", "")), "identity": identity,
         "bos_token_id": bos_token_id},
        sort_keys=True, default=str,
    )


def _keep_tokens(
    writer: SuiteWriter, plan: Plan, record: ShardRecord, shard: Shard, windows: Sequence[Sequence[int]],
    ranges: Sequence[tuple[int, int]], reuse: Any, tag: str,
) -> None:
    """Keep, for each other shard's worker, the encodings of the contexts it computes (this
    worker laid the suite out and tokenised it whole); on a writer thread, after the layout."""
    for index in range(1, record.count + 1):
        if index == shard.index:
            continue
        keys = [
            k for w in shard_windows(record, index)
            for k in BlockSources.of(plan, ranges[windows[w][0]][0], ranges[windows[w][-1]][1], reuse).compute_keys
        ]
        data = plan.pack(keys, tag)
        if data is None:  # encodings with nothing worth keeping (static vectors)
            return
        writer.record_tokens(Shard(index, record.count).label, data)


def _backoffs(runner: Runner) -> list[dict[str, int]]:
    """The out-of-memory halvings of the runner so far (a runner without a back-off: none)."""
    state = getattr(runner, "backoff", None)
    return list(getattr(state, "events", None) or ())


def _suite_bos(suite: Suite, bos: bool | None, runner: Runner) -> bool | None:
    """The BOS policy of one suite: the run's ``bos`` when given (``--bos``/``--no-bos``), else
    the suite's own request (``parameters["bos"] == "causal"``: the BOS token before every item
    of a causal model whose tokenizer has one), else None (the tokenizer's behaviour)."""
    if bos is not None:
        return bos
    wants = (suite.parameters or {}).get("bos") == "causal"
    info = runner.info
    if wants and getattr(info, "causal", False) and getattr(info, "bos_token_id", None) is not None:
        return True
    return None


def _warn_position_zero(runner: Runner, suite: Suite, n: int, bos: bool | None) -> None:
    """Warn when ``n`` targets sit at position 0 of a causal model: their states see nothing but
    the target itself (and act as the attention sink), so e.g. WEAT on words alone measures noise."""
    if not getattr(runner.info, "causal", False):
        return
    if not n:
        return
    fix = position_zero_fix(runner.info)
    warnings.warn(
        f"suite {suite.name!r}: {n} of {len(suite.items)} targets sit at position 0 of causal "
        f"model {runner.info.model_id} (bos={bos}), where a causal model's states see no "
        f"context and are degenerate; {fix}",
        EmbWarning,
        stacklevel=4,  # extract's caller (through _check_suites)
    )


def _check_shard_count(
    target: StoreWriter,
    prepared: Sequence[Prepared],
    shard: Shard,
    block_size: int | None,
    storage_dtype: str,
    complete: Set[str] = frozenset(),
) -> None:
    """Refuse a shard count above a suite's compute windows (:func:`~emb.extraction.shards.check_count`),
    with the block and window sizes the suite will be written with (those stored, on a resume),
    and one other than the shard record's of a suite not ``complete`` (as claiming the shard
    would; a dry run never claims it; a complete suite has nothing left to claim)."""
    stored_plans = target.stored_plans([prep.name for prep in prepared])
    for prep, (stored, recorded) in zip(prepared, stored_plans, strict=True):
        if recorded is not None and recorded != shard.count and prep.name not in complete:
            raise other_shard_count(prep.name, target.location, recorded=recorded, asked=shard.count)
        block = block_size or target.default_block_size(prep.shape, storage_dtype)
        window = prep.window_blocks
        if isinstance(stored, dict):
            with contextlib.suppress(ValueError, TypeError):
                block = int(stored.get("block_size", block))
                window = int(stored.get("window_blocks", 1))
        check_count(shard, name=prep.name, n_items=prep.shape[0], block_size=block,
                    window_blocks=window, recorded=recorded)


def _work(
    target: StoreWriter,
    prep: Prepared,
    plan: Plan,
    stored: dict[str, Any] | None,
    shard: Shard | None,
    block_size: int | None,
    storage_dtype: str,
) -> tuple[list[int], int, int]:
    """What this run will compute of a suite, as planned before it starts (for the estimate):
    the keys first used in its windows (all of them, or its shard's), their items, and their
    blocks.  A resumed run is counted as if none of its blocks were written."""
    block = block_size or target.default_block_size(prep.shape, storage_dtype)
    window = prep.window_blocks
    if stored is not None:
        with contextlib.suppress(ValueError, TypeError):
            block = int(stored.get("block_size", block))
            window = int(stored.get("window_blocks", 1))
    n = prep.shape[0]
    ranges = [(start, min(n, start + block)) for start in range(0, n, block)]
    windows = window_blocks_of(len(ranges), window)
    mine: Sequence[int] = range(len(windows))
    if shard is not None and windows:
        record = target.stored_record(prep.name)
        if record is None or record.count != shard.count:  # planned as the first worker will
            record = shard_record(plan, ranges, windows, shard.count, window, ())
        mine = shard_windows(record, shard.index)
    keys: list[int] = []
    items = 0
    for w in mine:
        start, stop = ranges[windows[w][0]][0], ranges[windows[w][-1]][1]
        keys += BlockSources.of(plan, start, stop, {}).compute_keys
        items += stop - start
    return keys, items, sum(len(windows[w]) for w in mine)


@contextlib.contextmanager
def _frozen_gc() -> Iterator[None]:
    """Keep the garbage collector off the millions of objects torch and transformers hold.

    Tokenising and writing create many short-lived objects; each full collection then scanned
    the whole loaded model stack (measured: tokenising 10,000 contexts took 0.35 s, 0.10 s with
    the existing objects frozen).  New objects are still collected; the old ones are unfrozen
    on the way out.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


# -- running ----------------------------------------------------------------------------------------
def _extract_suite(
    runner: Runner,
    target: StoreWriter,
    *,
    suite: Suite,
    plan: Plan,
    prep: Prepared,
    settings: ExtractionSettings,
    progress: bool,
    tokens_tag: str = "",
    scanned: Mapping[str, Any] | None = None,
) -> SuiteReport:
    """Write one suite: its group opened (laid out, or resumed), the blocks this run writes
    assigned (:func:`_assign`), its windows computed and queued to the writer threads
    (:func:`_run_windows`), then the suite finished (or, a shard's worker, settled)."""
    t0 = time.perf_counter()
    name, shape, shard = prep.name, prep.shape, settings.shard
    writer: SuiteWriter | None = None
    try:  # the suite lock is released once the writer thread has ended
        with ThreadPoolExecutor(max_workers=extraction_settings.writer_threads(), thread_name_prefix="emb-writer") as pool:
            # a new layout is written by a writer thread while the first block is computed (the
            # blocks submitted after it wait for it); a window's blocks encode and write at once
            writer = target.open_suite(
                name,
                # made here only for a new layout (a resumed one needs neither)
                coords=lambda: prep.coords,
                shape=shape,
                storage_dtype=settings.storage_dtype,
                suite_attrs=prep.suite_attrs,
                extraction_attrs=lambda: prep.extraction,
                identity=prep.identity,
                overwrite=settings.overwrite,
                block_size=settings.block_size,
                executor=pool,
                shard=settings.shard_label,
                scanned=scanned,
            )
            layout = _Layout.of(writer)
            if not writer.fresh and writer.complete and (layout.markers == DONE).all():
                return _already_complete(writer, plan, prep, layout, t0)
            work = _assign(target, writer, pool, name=name, plan=plan, shard=shard,
                           layout=layout, tokens_tag=tokens_tag)
            bar = _progress_bar(
                progress, total=sum(len(src.compute_keys) for src in work.sources),
                desc=name if shard is None else f"{name} {shard}",
            )
            n_computed, n_copied = _run_windows(
                runner, target, writer, pool, plan=plan, prep=prep, settings=settings,
                layout=layout, work=work, bar=bar,
            )
            if work.kept is not None:
                work.kept.result()
        if bar is not None:
            bar.close()
        if shard is None:
            writer.finish()
        else:  # pending copies filled in where their rows exist; the last one finishes the suite
            settle(writer, plan, work.reuse, layout.per_window)
    finally:
        if writer is not None:
            writer.close()
    return SuiteReport(
        name=name, n_items=shape[0], n_unique=len(plan.keys), n_computed=n_computed,
        n_copied=n_copied, blocks_written=len(work.pending), blocks_total=len(layout.ranges),
        already_complete=False, seconds=time.perf_counter() - t0, **layout.unknown,
        blocks_assigned=sum(len(layout.windows[w]) for w in work.mine),
    )


@dataclass(frozen=True)
class _Layout:
    """A suite's group as opened: its blocks' row ranges, its compute windows (the stored
    setting: a resumed run cuts the same windows), the blocks' markers, and what it records of
    its unknown targets and of truncation."""

    ranges: list[tuple[int, int]]
    per_window: int
    windows: list[list[int]]
    markers: np.ndarray
    truncate: bool
    unknown: dict[str, Any]

    @classmethod
    def of(cls, writer: SuiteWriter) -> _Layout:
        ranges = writer.block_ranges()
        # as the group records them (a resumed group: the run that laid it out counted them)
        recorded = writer.extraction.get("unknown_targets") or {}
        unknown = {"n_unknown_targets": int(recorded.get("n_items") or 0),
                   "unknown_examples": tuple(str(w) for w in (recorded.get("words") or ())[:10])}
        # computed window by window (the stored setting: a resumed run cuts the same windows)
        per_window = int(writer.extraction.get("window_blocks", 1))
        all_windows = window_blocks_of(len(ranges), per_window)
        markers = writer.markers() if not writer.fresh else np.zeros(len(ranges), np.uint8)
        truncate = bool(writer.extraction.get("truncate_after_target", False))
        return cls(ranges, per_window, all_windows, markers, truncate, unknown)


def _already_complete(
    writer: SuiteWriter, plan: Plan, prep: Prepared, layout: _Layout, t0: float,
) -> SuiteReport:
    """A suite found complete: what a killed run's last steps left behind is tidied up, and
    nothing is written."""
    writer.refresh_consolidated()  # where a failed last step left it stale
    # kept encodings written after another worker completed the suite by a worker
    # killed before its own last step
    writer.drop_tokens()
    writer.drop_digests()  # and the digest records of a finisher killed so
    writer.drop_partial_files()  # and what killed writes left half-written
    return SuiteReport(
        name=prep.name, n_items=prep.shape[0], n_unique=len(plan.keys), n_computed=0, n_copied=0,
        blocks_written=0, blocks_total=len(layout.ranges), already_complete=True,
        seconds=time.perf_counter() - t0, **layout.unknown,
    )


@dataclass(frozen=True)
class _Work:
    """What this run writes of a suite: the rows it copies from other suites (``reuse``), its
    windows (all, or its shard's: ``mine``), the blocks still to write (``pending``), the windows
    that hold them with their row spans and their items' sources, and the future of the
    encodings kept for the other shards' workers."""

    reuse: Any
    mine: Sequence[int]
    kept: Future[None] | None
    pending: set[int]
    windows: list[tuple[list[int], int, int]]
    computing: set[int]
    sources: list[BlockSources]


def _assign(
    target: StoreWriter, writer: SuiteWriter, pool: ThreadPoolExecutor, *, name: str, plan: Plan,
    shard: Shard | None, layout: _Layout, tokens_tag: str,
) -> _Work:
    """The rows another suite already holds, this run's windows (a shard's worker: its shard's,
    by the shard record, recorded now), and the blocks of them still to write."""
    ranges, all_windows, per_window = layout.ranges, layout.windows, layout.per_window
    record = writer.shard_record()
    reuse, reuse_from = target.reusable_rows(
        name, writer.extraction, only=record.reuse_from if record else None,
        wanted=plan.keys,
    )
    mine: Sequence[int] = range(len(all_windows))
    kept: Future[None] | None = None  # the encodings kept for the other shards' workers
    if shard is not None:
        # the plan recorded by the first worker (whose windows are a function of the
        # suite, the tokenizer and the settings, checked equal above) is not made again:
        # that would tokenise the whole suite
        if (record is not None and record.count == shard.count
                and record.window_blocks == per_window):
            planned = replace(record, reuse_from=tuple(reuse_from))
        else:
            planned = shard_record(plan, ranges, all_windows, shard.count, per_window, reuse_from)
        record = writer.record_shards(planned)
        mine = shard_windows(record, shard.index)
        if writer.fresh and record.count > 1 and plan.tokenized == len(plan.keys):
            # the other workers read their contexts' encodings instead of tokenising
            kept = pool.submit(_keep_tokens, writer, plan, record, shard, all_windows,
                               ranges, reuse, tokens_tag)
    # a shard writer leaves blocks written with copies pending to the settling step
    markers = layout.markers
    pending_set = {
        b for w in mine for b in all_windows[w]
        if (markers[b] == 0 if shard is not None else markers[b] != DONE)
    }
    windows = [
        (blocks, ranges[blocks[0]][0], ranges[blocks[-1]][1])
        for w in mine
        if pending_set.intersection(blocks := all_windows[w])
    ]
    computing = {b for blocks, _, _ in windows for b in blocks}
    sources = [BlockSources.of(plan, start, stop, reuse) for _, start, stop in windows]
    return _Work(reuse, mine, kept, pending_set, windows, computing, sources)


def _run_windows(
    runner: Runner, target: StoreWriter, writer: SuiteWriter, pool: ThreadPoolExecutor, *,
    plan: Plan, prep: Prepared, settings: ExtractionSettings, layout: _Layout, work: _Work,
    bar: Any,
) -> tuple[int, int]:
    """Compute this run's windows one after another, each in one embed call (:func:`_embed`),
    its copied rows filled in (:func:`_copy_rows`), its blocks queued to the writer threads
    while the next is computed (at most :data:`QUEUE_WINDOWS` waiting); return the items
    computed and copied once every block is written."""
    shape, shard = prep.shape, settings.shard
    n_computed = n_copied = 0
    mark, recorded = Mark.of(runner), None  # this run's out-of-memory back-offs
    dtype = np.dtype(settings.storage_dtype)
    inflight: list[InFlight] = []  # per window, oldest first
    for (blocks, start, stop), src in zip(work.windows, work.sources, strict=True):
        compute_keys, seen = src.compute_keys, src.first_position
        vectors = None
        if compute_keys:  # one embed call: its batches are length-sorted over the window
            vectors, recorded = _embed(
                runner, writer, plan, compute_keys, prep=prep, settings=settings,
                layout=layout, bar=bar, mark=mark, recorded=recorded,
            )
            n_computed += len(compute_keys)
        if vectors is not None and len(vectors) == stop - start and vectors.dtype == dtype:
            values = vectors  # every row computed here, in order: no copy
        else:
            values = layer_major((stop - start, *shape[1:]), dtype, zeros=True)
            if vectors is not None:
                values[[seen[k] for k in compute_keys]] = vectors
        waiting = _copy_rows(values, src, start, target, writer, inflight,
                             computing=work.computing, sharded=shard is not None)
        n_copied += (len(src.self_rows) + sum(len(v) for v in src.other_rows.values())
                     + len(src.later))
        while len(inflight) >= QUEUE_WINDOWS:  # host memory: a bounded queue
            for future in inflight.pop(0).futures:
                future.result()
        inflight.append(InFlight(start, values, frozenset(
            b for b in blocks if b in work.pending), [
            pool.submit(
                _store_block, writer, b,
                values[layout.ranges[b][0] - start : layout.ranges[b][1] - start],
                prep.name, COPIES_PENDING if b in waiting else DONE,
            )
            for b in blocks
            if b in work.pending
        ]))
    for future in (f for window in inflight for f in window.futures):
        future.result()
    return n_computed, n_copied


def _embed(
    runner: Runner, writer: SuiteWriter, plan: Plan, compute_keys: list[int], *, prep: Prepared,
    settings: ExtractionSettings, layout: _Layout, bar: Any, mark: Mark,
    recorded: dict[str, Any] | None,
) -> tuple[np.ndarray, dict[str, Any] | None]:
    """One window's vectors, and this run's out-of-memory back-offs recorded in the group (kept
    before the window's blocks are marked done; a run stopped by one records it too)."""
    try:
        vectors = runner.embed(
            plan.encoded(compute_keys),
            poolings=settings.poolings,
            batch_size=settings.batch_size,
            progress=bar.update if bar is not None else None,
            out_dtype=settings.storage_dtype,
            truncate=layout.truncate,
            # all layers: the runner's default (runners without the keyword work)
            **({"layers": prep.layers} if prep.subset else {}),
        )
    except EmbError as err:  # a context that ran out of memory alone: recorded
        record = run_record(runner, mark, batch_size=settings.batch_size,
                            device=settings.device, stopped=str(err))
        if record is not None and record["stopped"] is not None:
            with contextlib.suppress(StoreError):  # the error says more
                writer.record_backoffs(record)
        raise
    # the back-offs so far, kept before this window's blocks are marked done
    record = run_record(runner, mark, batch_size=settings.batch_size,
                        device=settings.device)
    if record is not None and record != recorded:
        writer.record_backoffs(record)
        recorded = record
    return vectors, recorded


def _copy_rows(
    values: np.ndarray, src: BlockSources, start: int, target: StoreWriter, writer: SuiteWriter,
    inflight: Sequence[InFlight], *, computing: set[int], sharded: bool,
) -> set[int]:
    """Fill in a window's copied rows: those of earlier windows (from memory or read back),
    of other suites, and of keys used again in the window; return the blocks with rows another
    shard has not written yet."""
    waiting: set[int] = set()  # blocks with rows another shard has not written yet
    if src.self_rows:  # rows of earlier windows: taken from memory while their window is
        # still being written, else read back (the row a copy takes is always a row
        # computed in its window: the key's first use)
        stored = _from_memory(values, src.self_rows, inflight, writer.block_size)
        ready, waiting_rows = available_rows(writer, stored, computing=computing, sharded=sharded)
        waiting = {(start + pos) // writer.block_size for pos, _ in waiting_rows}
        if ready:
            pos, rows = zip(*ready, strict=True)
            values[list(pos)] = writer.read_rows(rows)
    for other, pairs in src.other_rows.items():
        pos, rows = zip(*pairs, strict=True)
        values[list(pos)] = target.read_rows(other, rows)
    for pos, first_pos in src.later:
        values[pos] = values[first_pos]
    return waiting


@dataclass(frozen=True)
class InFlight:
    """A window whose blocks the writer threads are writing: its vectors stay in memory until
    they are written (the queue bounds how many), and later windows copy rows from them."""

    start: int  # its first row
    values: np.ndarray  # its rows, layer major
    computed: frozenset[int]  # the blocks this run is writing (their computed rows are final)
    futures: list[Future[None]]


def _from_memory(
    values: np.ndarray, rows: Sequence[tuple[int, int]], inflight: Sequence[InFlight],
    block_size: int,
) -> list[tuple[int, int]]:
    """Fill ``values`` at the positions whose earlier row lies in a block being written by this
    run (the same numbers the store will hold: this run computed them); the other pairs, to be
    read back, are returned.  Rows of written blocks need no wait, and no shard is decoded for
    rows still in memory."""
    for window in inflight:
        taken = [(p, r) for p, r in rows if r // block_size in window.computed]
        if taken:
            pos, src = zip(*taken, strict=True)
            values[list(pos)] = window.values[np.asarray(src) - window.start]
    held = {b for window in inflight for b in window.computed}
    return [(p, r) for p, r in rows if r // block_size not in held]


def _store_block(
    writer: SuiteWriter, index: int, block: np.ndarray, name: str, marker: int = DONE
) -> None:
    """Encode the block, refuse non-finite values, then write it (on a writer thread).

    The runner refuses NaN and infinite hidden states itself, so a non-finite value here is a
    finite activation that overflowed the float16 storage dtype.  The check rides on the
    encoding (each inner chunk checked while it is in cache), so nothing is written before it.
    """
    encoded = writer.encode_block(index, block)
    if not encoded.finite:
        if np.isnan(block).any():
            raise StoreError(
                f"suite {name!r}: the model returned NaN hidden states in block {index}; "
                "try --dtype float32 (half precision can overflow inside the model)"
            )
        if block.dtype == np.float16:
            raise StoreError(
                f"suite {name!r}: block {index} holds values beyond the float16 range (±65504); "
                "re-run with --storage-dtype float32 (and --overwrite)"
            )
        raise StoreError(f"suite {name!r}: the model returned infinite values in block {index}")
    writer.write_block(index, block, marker=marker, encoded=encoded)


def _progress_bar(enabled: bool, *, total: int, desc: str) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="item", dynamic_ncols=True, smoothing=0.1)

