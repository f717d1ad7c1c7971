"""The front door: :func:`extract` and :func:`analyze`, the same for a notebook and the CLI.

``emb extract`` and ``emb analyze`` parse their flags, call these two functions and print; every
choice they make (which suites to build and with which options, which backend opens the model,
how stores are opened and labelled, which optional suites an analysis reads, how the suite is
chunked, where results go) is made here, so that Python gets exactly what the command line gives::

    import emb

    emb.extract("gpt2", ["weat", ("vast", {"lexicon": "warriner"})], "gpt2.zarr", dtype="float16")
    run = emb.analyze("weat", {"gpt2": "gpt2.zarr"}, out="results/weat", correction="holm")
    run.summary, run.tables["weat"], run.figures, run.dataset

Options are checked by their declarations (:mod:`emb.options`): a wrong value gets the same
message here as from the CLI. Both are plain functions, and ``emb.extract`` and ``emb.analyze``
are these two; importing this module imports no torch (each imports what it runs when called).
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emb.options import (
    FIGURE_FORMATS,
    NO_PLOTS,
    OUT,
    OVERWRITE,
    REFERENCE,
    RELATIVE_DEPTH,
    STANDARDIZE,
    STORES,
    SUITE,
    TABLE_FORMAT,
)

if TYPE_CHECKING:
    import xarray as xr
    from matplotlib.figure import Figure

    from emb.analyses import Analysis, Summary
    from emb.extraction.settings import SuiteReport

__all__ = ["Analyzed", "analyze", "extract"]


_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


# -- extract -------------------------------------------------------------------------------------------
def extract(
    model: str | os.PathLike[str],
    suites: Any,
    store: str | os.PathLike[str],
    *,
    progress: bool = True,
    storage_options: dict[str, Any] | None = None,
    on_estimate: Callable[[Any], object] | None = None,
    on_note: Callable[[str], object] | None = None,
    **options: Any,
) -> list[SuiteReport]:
    """Build the suites, choose the backend that opens ``model`` and write every layer's
    embeddings into ``store``: what ``emb extract`` does (``emb.extract``).

    Parameters
    ----------
    model
        A Hugging Face model id, local directory, ``.gguf`` file, static vectors file, or what
        an installed backend opens.
    suites
        One or a list of: a built-in suite's name (``"weat"``) or a suite file, built with the
        suite options among ``options`` (shared by every named suite that declares them, as
        the CLI's flags are); a ``(name, {option: value})`` pair, built with its own options;
        or a built :class:`~emb.stimuli.suites.Suite`.
    store
        The store's path or fsspec URL (created when missing).
    progress
        Show a progress bar.
    storage_options
        fsspec options of a store URL.
    on_estimate, on_note
        Called with the estimate of size and time, and with each note of the run (default:
        nothing is printed).
    **options
        The pipeline's options (:data:`emb.extraction.options.OPTIONS`, the flags of ``emb
        extract``: ``group_names`` (``--name``), ``poolings``, ``dtype``, ``storage_dtype``,
        ``batch_size``, ``device``, ``shard``, ``bos``, ``bos_token``, ``overwrite``,
        ``layers``, ``dry_run``; and ``block_size``, ``window_blocks``), parsed once into the
        run's :class:`~emb.extraction.settings.ExtractionSettings`; the suites' options (``emb
        suites``) and the backends' options (``revision``, ``trust_remote_code``, ``format`` …).

    Returns
    -------
    list of SuiteReport
        One per suite (empty for a dry run).

    Raises
    ------
    OptionError
        An option no requested suite, backend or the pipeline takes, a value its declaration
        refuses (the message ``emb extract`` gives), or an option that cannot apply.
    SuiteError, ModelError, StoreError
        From the suites, the backend and the store.
    """
    import warnings

    from emb.backends import check_options
    from emb.errors import EmbWarning, OptionError
    from emb.extraction.front import as_given, backend_option_names, build, suite_option_names
    from emb.extraction.options import OPTIONS
    from emb.extraction.pipeline import extract as run_extract
    from emb.extraction.settings import parse_settings
    from emb.stimuli import suite_warnings
    from emb.text import unknown_names

    backends = backend_option_names()
    backend_options = {k: options.pop(k) for k in list(options) if k in backends}
    suite_names = suite_option_names()
    suite_options = {k: options.pop(k) for k in list(options) if k in suite_names}
    pipeline = [o.name for o in OPTIONS]
    if unknown := [k for k in options if k not in pipeline]:
        raise OptionError(unknown_names("option", unknown, pipeline + sorted(suite_names | backends),
                                        "the options of emb.extract"))
    settings = parse_settings(options)  # the rest: the pipeline's, each checked by its record
    built = build(suites, {k: as_given(v) for k, v in suite_options.items()},
                  shared=backend_options)
    for line in suite_warnings(built):
        if on_note is None:
            warnings.warn(line, EmbWarning, stacklevel=2)
        else:
            on_note(line)
    backend = check_options(model, backend_options, suites=built)
    backend.quiet()
    return run_extract(model, built, store, settings, progress=progress,
                       storage_options=storage_options, on_estimate=on_estimate,
                       on_note=on_note, **backend_options)


# -- analyze -------------------------------------------------------------------------------------------
def split_label(spec: str) -> tuple[str | None, str]:
    """``label=path`` → (label, path); a plain path (or URL) → (None, path). A spec that exists
    as a path is a path, even with an ``=`` in its name (``we=ird.zarr``)."""
    if "=" in spec and not Path(spec).exists():
        label, path = spec.split("=", 1)
        if _LABEL.match(label) and path:
            return label, path
    return None, spec


def store_specs(stores: Any) -> list[str]:
    """``stores`` as the CLI's ``--store`` values: a path, a list of ``[LABEL=]PATH``, or a
    mapping label → path."""
    if isinstance(stores, Mapping):
        return [f"{label}={os.fspath(path)}" for label, path in stores.items()]
    if isinstance(stores, str | os.PathLike):
        return [os.fspath(stores)]
    return [os.fspath(s) for s in stores]


def _names_for(specs: Sequence[str], models: Sequence[Mapping[str, Any]]) -> list[str]:
    """One unique label per store: the one given (``--store gpt2=path``), else a hub model's id
    (``gpt2``), else the store's file name (``minilm`` for ``minilm.zarr``): local paths and
    site-packages directories make unreadable labels."""
    from emb.errors import OptionError

    names: list[str] = []
    for spec, model in zip(specs, models, strict=True):
        label, path = split_label(spec)
        stem = Path(path.rstrip("/")).name.removesuffix(".zip").removesuffix(".zarr")
        hub = model.get("source") == "hub" and model.get("model_id")
        base = str(label or hub or stem or model.get("model_id"))
        name, i = base, 2
        while name in names:
            if label:
                raise OptionError(f"the label {label!r} is given to two stores; give each its own")
            name, i = f"{base} ({i})", i + 1
        names.append(name)
    return names


SuiteSpec = str | Mapping[str, str] | Sequence[str] | None


def suite_groups(suite: SuiteSpec, names: Sequence[str], default: str) -> dict[str, str]:
    """The suite group each store (by its label) is read from.

    ``suite`` is None (every store: ``default``, the analysis' own suite), a group name for
    every store (``"weat_eot"``), ``"LABEL=GROUP"`` for one store, a list of such (the CLI's
    repeated ``--suite``: at most one without a label, for the stores not named), or a mapping
    label → group. ``names`` are the stores' labels (``--store LABEL=PATH``, else the model's
    or the store's name).

    Raises
    ------
    OptionError
        A label no store has (the labels are listed), a label given twice, two groups for
        every store, or an empty group name.
    """
    from emb.errors import OptionError
    from emb.text import did_you_mean
    from emb.text import names as name_list

    if suite is None:
        entries: list[tuple[str | None, str]] = []
    elif isinstance(suite, Mapping):
        entries = [(str(k), v) for k, v in suite.items()]
    else:
        specs = [suite] if isinstance(suite, str) else list(suite)
        entries = []
        for spec in specs:
            if not isinstance(spec, str):
                raise OptionError(f"--suite (suite= in Python) takes a group name or LABEL=GROUP; "
                                  f"got {spec!r}", option="--suite")
            label, _, group = spec.rpartition("=")
            entries.append((label or None, group) if "=" in spec else (None, spec))
    everyone = [g for label, g in entries if label is None]
    if len(everyone) > 1:
        raise OptionError(f"--suite names a group for every store twice ({name_list(everyone)}); "
                          "give one, and LABEL=GROUP for a store that reads another",
                          option="--suite")
    groups = dict.fromkeys(names, everyone[0] if everyone else default)
    seen: set[str] = set()
    for label, group in entries:
        if label is None:
            continue
        if label not in groups:
            raise OptionError(
                f"--suite {label}={group}: no store is labelled {label!r}; the stores' labels "
                f"are {name_list(list(names))}.{did_you_mean(label, list(names))} Label a store "
                f"with --store {label}=PATH", option="--suite")
        if label in seen:
            raise OptionError(f"--suite gives the store {label!r} two groups; give it one",
                              option="--suite")
        seen.add(label)
        groups[label] = group
    for label, group in groups.items():
        if not isinstance(group, str) or not group.strip():
            raise OptionError(f"--suite names no group for the store {label!r}: the name is "
                              "empty; give a suite group of the store (emb info STORE lists them)",
                              option="--suite")
    return groups


def suite_record(groups: Mapping[str, str]) -> str | dict[str, str]:
    """The suite groups as a result records them: one name when every store read the same,
    else label → group."""
    distinct = set(groups.values())
    return next(iter(distinct)) if len(distinct) == 1 else dict(groups)


def open_inputs(specs: Sequence[str], analysis: Analysis,
                suite: SuiteSpec) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """The stores' labels, each store's suite group as a Dataset (chunked as the analysis reads
    it), and the optional suites each store holds (``per_model``). ``suite``: see
    :func:`suite_groups`."""
    from emb.errors import StoreError
    from emb.store import open_store
    from emb.text import did_you_mean
    from emb.text import names as name_list

    opened = [open_store(split_label(spec)[1]) for spec in specs]
    names = _names_for(specs, [s.model for s in opened])
    groups = suite_groups(suite, names, analysis.suite)
    for name, spec, store in zip(names, specs, opened, strict=True):
        group = groups[name]
        present = list(store.suites)
        if group not in present:
            if (damaged := store.damaged(group)) is not None:
                raise damaged  # there, but unreadable: 'emb extract' would refuse it too
            hint = did_you_mean(group, present)
            which = f" (label {name!r})" if len(specs) > 1 else ""
            raise StoreError(
                f"the store {split_label(spec)[1]}{which} has no suite {group!r}; it has "
                f"{name_list(present)}.{hint} Pass --suite NAME for another group"
                f"{f' (--suite {name}=NAME for this store alone)' if which else ''}, or add it with "
                f"'emb extract --model {store.model.get('model_id') or 'MODEL'} --suite "
                f"{analysis.suite if group == analysis.suite else 'FILE'} --store {split_label(spec)[1]}'"
            )
    datasets = {n: s.dataset(groups[n], chunks="layer", chunk_by=analysis.chunk_by)
                for n, s in zip(names, opened, strict=True)}
    per_model: dict[str, dict[str, Any]] = {}
    for name, store in zip(names, opened, strict=True):
        extra = {key: store.dataset(g, chunks="layer")
                 for key, g in analysis.optional_suites.items() if g in store.suites}
        if extra:
            per_model[name] = extra
    return names, datasets, per_model


def default_out(names: Sequence[str], analysis: Analysis) -> Path:
    """``emb-results/<stores>/<analysis>/``: where results go when no directory is given."""
    from emb.analyses._analysis import slug

    return Path("emb-results") / "+".join(slug(n) for n in names) / analysis.stem


def command_line(analysis: Analysis, stores: Sequence[str], options: Mapping[str, Any], *,
                 suite: SuiteSpec, out: str | None, table_format: str | Sequence[str],
                 figure_formats: Sequence[str], relative_depth: bool, figures: bool,
                 overwrite: bool, standardize: str = STANDARDIZE.default) -> list[str]:
    """The command as typed when run from a shell, else the ``emb analyze`` command that gives
    the same run (the results' sidecar records it), spelled by the options' declarations
    (:meth:`emb.options.Option.argv`): the analysis' own, then the run's (:data:`emb.options.SUITE`
    …) where they differ from their defaults."""
    if sys.argv and Path(sys.argv[0]).name == "emb":
        return ["emb", *sys.argv[1:]]
    args = ["emb", "analyze", analysis.name, *STORES.argv(list(stores))]
    declared = {o.name: o for o in (*analysis.options, analysis.seed)}
    for key, value in options.items():
        if key == "method":  # the CLI's switch for method="reference"
            args += REFERENCE.argv(True) if value == "reference" else []
        else:
            args += declared[key].argv(value)
    if isinstance(suite, Mapping):
        suites = [f"{label}={group}" for label, group in suite.items()]
    else:
        suites = [suite] if isinstance(suite, str) else [str(spec) for spec in suite or ()]
    formats = [table_format] if isinstance(table_format, str) else list(table_format)
    for option, value in ((SUITE, suites), (OUT, str(out) if out else None),
                          (TABLE_FORMAT, formats), (FIGURE_FORMATS, list(figure_formats or ())),
                          (STANDARDIZE, standardize), (RELATIVE_DEPTH, relative_depth),
                          (NO_PLOTS, not figures), (OVERWRITE, overwrite)):
        default = list(option.default) if option.multiple and option.default else option.default
        if value not in (None, False, [], default):
            args += option.argv(value)
    return args


@dataclass(frozen=True, kw_only=True, eq=False)
class Analyzed:
    """One computed analysis: its Dataset, tables, figures and summary, and what was written.

    Attributes
    ----------
    analysis : Analysis
        The registry record that ran.
    dataset : xarray.Dataset
        The computed result (stacked along ``model`` over the stores).
    directory : Path or None
        Where the files were written (None: nothing was written).
    files : tuple of Path
        The files written.
    """

    analysis: Analysis
    dataset: xr.Dataset
    directory: Path | None = None
    files: tuple[Path, ...] = ()
    replaced: tuple[Path, ...] = ()
    figure_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    written_summary: Any = field(default=None, repr=False)

    @functools.cached_property
    def tables(self) -> dict[str, Any]:
        """The tidy tables by name (the first is the main one), as the CLI writes them."""
        return self.analysis.report_tables(self.dataset)

    @functools.cached_property
    def figures(self) -> dict[str, Figure]:
        """The figures by name, as the CLI draws them."""
        return self.analysis.draw(self.dataset, **self.figure_options)

    @functools.cached_property
    def summary(self) -> Summary:
        """What ``emb analyze`` prints (:meth:`Summary.lines`; ``to_dict()`` for JSON)."""
        if self.written_summary is not None:
            return self.written_summary
        from emb.analyses._provenance import summarize

        return summarize(self.analysis, self.dataset, self.tables)


def compute(lazy: Any, *, scheduler: str | None = None,
            progress: AbstractContextManager[Any] | None = None,
            on_note: Callable[[str], object] | None = None) -> Any:
    """``lazy.compute()`` on the local threads (one BLAS thread each: the same bytes on every
    run) or on a dask.distributed ``scheduler``, inside ``progress`` (a dask callback)."""
    if scheduler:
        from emb._scheduler import connect_scheduler

        with connect_scheduler(scheduler) as client:
            if on_note is not None:
                on_note(f"computing on {client.dashboard_link or scheduler}")
            # one BLAS thread on every worker, as locally (Dask's nanny starts workers so; a
            # worker started otherwise, or threads in this process, may have more)
            client.run(_one_blas_thread)
            return lazy.compute()  # the client is the default scheduler inside this block
    # dask runs one task per core; BLAS threads on top only oversubscribe them, and a product
    # computed with a varying number of BLAS threads varies in its last bits from run to run
    # (tables would not be byte-identical across identical runs): one BLAS thread throughout
    from emb.analyses.stats import single_threaded_blas

    with single_threaded_blas(), progress or nullcontext():
        return lazy.compute()


def _one_blas_thread() -> None:
    """Set every BLAS library loaded in this process to one thread (run on each worker)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def analyze(
    name: str,
    stores: Any,
    *,
    out: str | os.PathLike[str] | bool | None = None,
    suite: SuiteSpec = None,
    overwrite: bool = False,
    scheduler: str | None = None,
    figures: bool = True,
    figure_formats: Sequence[str] = FIGURE_FORMATS.default,
    table_format: str | Sequence[str] = "auto",
    dpi: int = 200,
    relative_depth: bool = False,
    standardize: str = STANDARDIZE.default,
    progress: Callable[[Any], AbstractContextManager[Any] | None] | None = None,
    on_note: Callable[[str], object] | None = None,
    command: Sequence[str] | None = None,
    **options: Any,
) -> Analyzed:
    """Run the analysis ``name`` over one or several stores: what ``emb analyze NAME`` does.

    Parameters
    ----------
    name
        A registered analysis (``emb analyze --list``; :data:`emb.analyses.ANALYSES`).
    stores
        A store's path or URL, a list of ``[LABEL=]PATH``, or a mapping label → path; the
        results are stacked along ``model``, one label per store.
    out
        None (default): compute and return, write nothing. A directory: write every file the
        CLI writes there (an earlier run's files are replaced only with ``overwrite``). True:
        the CLI's default directory ``emb-results/<stores>/<analysis>/``. Either way an earlier
        run there is replaced only with ``overwrite``.
    suite
        The store group to read (default: the analysis' own, e.g. ``weat``): one name for every
        store, or per store by its label: ``{"smol": "weat_eot"}``, ``["weat", "smol=weat_eot"]``
        (as ``--suite weat --suite smol=weat_eot``), so that two models' differently named
        suites compare in one run.
    overwrite, scheduler, figures, figure_formats, table_format, dpi, relative_depth
        As ``--overwrite``, ``--scheduler``, ``--no-plots``, ``--figure-format``, ``--format``,
        ``--dpi``, ``--relative-depth``.
    standardize
        As ``--standardize``: ``center`` subtracts each layer's mean vector over the suite's items
        before any cosine, ``zscore`` also scales every dimension to unit variance; ``none``
        (default) reads the vectors as stored. Every run reports each layer's anisotropy (the
        mean cosine of random word pairs) in its ``anisotropy`` table.
    progress
        ``progress(work)`` → a context manager shown while computing (``work``: the planned
        permutation work, :func:`emb.analyses.stats.work.planning`), or None: nothing shown.
    on_note
        Called with each note (an earlier run finished, the scheduler's dashboard).
    command
        The command line recorded with the results (default: the ``emb analyze`` command that
        gives the same run).
    **options
        The analysis' keyword options (``emb analyze NAME --help``), checked by their
        declarations.

    Returns
    -------
    Analyzed
        ``.dataset``, ``.tables``, ``.figures``, ``.summary``, and ``.directory``/``.files``
        when written.
    """
    from emb.analyses import ANALYSES, run_analysis
    from emb.analyses.stats.work import planning
    from emb.results.directory import discard_out, prepare_out, write_results
    from emb.store import check_unchanged, damage_reported

    if isinstance(name, str) and name not in ANALYSES:
        from emb.errors import AnalysisError
        from emb.text import unknown_names

        raise AnalysisError(unknown_names("analysis", [name], list(ANALYSES), "the analyses"))
    analysis = ANALYSES[name] if isinstance(name, str) else name
    specs = store_specs(stores)
    locations = [split_label(s)[1] for s in specs]
    with damage_reported(locations):
        names, datasets, per_model = open_inputs(specs, analysis, suite)
    # check everything cheap before computing and before creating anything: the options (the
    # lazy result), then the output directory
    with planning() as work:  # the permutation tests' work, declared while the graph is built
        lazy = run_analysis(analysis, datasets, per_model=per_model, standardize=standardize,
                            **options)
    figure_options = {"relative_depth": bool(relative_depth)}
    if out is None or out is False:
        shown = progress(work) if progress is not None else None
        with damage_reported(locations):
            result = compute(lazy, scheduler=scheduler, progress=shown, on_note=on_note)
        check_unchanged([*datasets.values(), *(d for m in per_model.values() for d in m.values())])
        return Analyzed(analysis=analysis, dataset=result, figure_options=figure_options)
    given_out = None if out is True else os.fspath(out)
    directory = Path(given_out) if given_out else default_out(names, analysis)
    plan = prepare_out(directory, analysis, overwrite=overwrite)
    for note in plan.notes:
        if on_note is not None:
            on_note(f"({note})")
    shown = progress(work) if progress is not None else None
    try:
        with damage_reported(locations):  # a shard that does not decode: which store, what to run
            result = compute(lazy, scheduler=scheduler, progress=shown, on_note=on_note)
        # a suite rewritten while it was read: refused, nothing written
        check_unchanged([*datasets.values(), *(d for m in per_model.values() for d in m.values())])
        written = write_results(
            plan,
            analysis,
            result,
            stores=dict(zip(names, locations, strict=True)),
            options=options,
            suite=suite_record(suite_groups(suite, names, analysis.suite)),
            command=list(command) if command is not None else command_line(
                analysis, specs, options, suite=suite, out=given_out, table_format=table_format,
                figure_formats=() if tuple(figure_formats) == FIGURE_FORMATS.default else figure_formats,
                relative_depth=relative_depth, figures=figures, overwrite=overwrite,
                standardize=standardize),
            figures=figures,
            dpi=dpi,
            table_format=table_format,
            figure_formats=tuple(figure_formats) or FIGURE_FORMATS.default,
            figure_options=figure_options,
        )
    except BaseException:  # an error, Ctrl-C: no empty directory left behind
        discard_out(plan)
        raise
    return Analyzed(analysis=analysis, dataset=result, directory=written.directory,
                    files=tuple(written.files), replaced=tuple(plan.replaced),
                    figure_options=figure_options, written_summary=written.summary)

