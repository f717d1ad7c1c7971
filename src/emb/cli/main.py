"""The ``emb`` command line: parse, call one library function, write, print a short summary."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from emb._version import __version__
from emb.cli._errors import EmbCommand, EmbGroup
from emb.cli._options import apply, deprecated_flags, extract_option, setting_option

__all__ = ["main"]


@click.group(cls=EmbGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="emb")
def main() -> None:
    """Measure semantics and social bias in the contextual embeddings of language models.

    \b
    emb extract  --model M --suite S --store PATH   write every layer's embeddings (needs emb[extract])
    emb analyze  NAME --store PATH --out DIR          compute a test from a store (no torch needed)
    emb report   DIR... --out report.html             one page: headlines, figures, provenance
    emb info | validate | suites | zip                look at stores and suites
    """


# -- suite options -----------------------------------------------------------------------------------
def _suite_options() -> list[Any]:
    """One click option per distinct built-in suite option (flags shared by name across suites).

    An option several generators declare is one flag: repeatable when any of them takes several
    values, its help joined; ``bool`` options are flags.
    """
    from emb.extraction.front import backend_option_names
    from emb.stimuli.suites import BUILTIN_SUITES

    seen: dict[str, list[Any]] = {}
    # an option whose flag another option took over (weat's select=: --test WEAT1) stays Python's
    earlier = set(deprecated_flags(o for g in BUILTIN_SUITES.values() for o in g.options))
    for generator in BUILTIN_SUITES.values():
        for opt in generator.options:
            if opt.name in backend_option_names() or opt.cli_flag in earlier:
                continue
            seen.setdefault(opt.name, []).append((generator.name, opt))
    decorators = []
    for declared in seen.values():
        opt = declared[0][1]
        helps = list(dict.fromkeys(o.help for _, o in declared))
        default = next((o.default for _, o in declared if o.default not in (None, ())), None)
        help_text = (f"[{', '.join(g for g, _ in declared)}] {' / '.join(helps)}"
                     + ("" if default is None or opt.type == "bool" else f" (default {_show(default)})"))
        decorators.append(extract_option([o for _, o in declared], help_text))
    return decorators


def _setting_options() -> list[Any]:
    """One click option per option of the extraction pipeline that has a flag
    (:data:`emb.extraction.options.OPTIONS`), in their declared order."""
    from emb.extraction.options import OPTIONS

    return [setting_option(option) for option in OPTIONS if option.cli]


def _backend_options() -> list[Any]:
    """One click option per backend option (:func:`emb.backends.available`), its help after
    what it applies to: the backend's label and the suites that take it too (``--allow-missing``
    leaves out what is missing for static vectors, words without a vector, and for ceat, stimuli
    without a context); ``bool`` options are flags."""
    from emb.backends import available
    from emb.stimuli.suites import BUILTIN_SUITES

    decorators = []
    seen: set[str] = set()
    for backend in available().values():
        for opt in backend.options:
            if opt.name in seen:
                continue
            seen.add(opt.name)
            sharing = [g.name for g in BUILTIN_SUITES.values()
                       if any(o.name == opt.name for o in g.options)]
            owners = ", ".join(x for x in (backend.label, *sharing) if x)
            decorators.append(extract_option(
                [opt], f"[{owners}] {opt.help}" if owners else opt.help, default=opt.default,
                multiple=False))
    return decorators


def _usage_error(err: Any) -> click.UsageError:
    """A library's :class:`~emb.errors.OptionError` as click's usage error (exit 2)."""
    if err.option is not None:
        return click.BadParameter(str(err), param_hint=err.option)
    return click.UsageError(str(err))


def _show(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)


@main.command(cls=EmbCommand)
@click.option("--model", "-m", required=True,
              help="Hugging Face model id, local directory, .gguf file, or static vectors file "
                   "(word2vec .bin/.txt, GloVe .txt, fastText .vec; optionally .gz/.zip).")
@click.option("--suite", "-s", "suite_specs", required=True, multiple=True,
              help="Built-in suite name (see 'emb suites') or a suite file (JSON/YAML); repeatable.")
@click.option("--store", required=True, help="Store path or fsspec URL (created when missing).")
@apply(_setting_options())
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@apply(_backend_options())
@apply(_suite_options())
def extract(
    model: str,
    suite_specs: tuple[str, ...],
    store: str,
    quiet: bool,
    **options: Any,
) -> None:
    """Write every layer's embedding of each suite item's target word into STORE."""
    from emb.api import extract as run_extract
    from emb.errors import OptionError
    from emb.extraction.options import OPTIONS
    from emb.store import describe, open_store

    # the pipeline's options as given (not given: the library's defaults); the suites' and
    # backends' all, as their own parsers take them
    settings = {option.name for option in OPTIONS}
    given = {k: v for k, v in options.items() if k not in settings or v not in (None, ())}
    dry_run = bool(given.get("dry_run"))
    estimates: list[Any] = []

    def on_estimate(estimate: Any) -> None:  # printed now, set against the time taken at the end
        estimates.append((estimate, time.perf_counter()))
        click.echo(estimate.line(), err=not dry_run)

    try:
        reports = run_extract(
            model,
            list(suite_specs),
            store,
            progress=not quiet,
            on_estimate=on_estimate,
            on_note=lambda line: click.echo(line, err=True),
            **given,
        )
    except OptionError as err:
        raise _usage_error(err) from None
    ended = time.perf_counter()
    if dry_run:
        return
    for r in reports:
        if r.already_complete:
            click.echo(f"{r.name}: already complete ({r.n_items} items), nothing to do")
        else:
            click.echo(
                f"{r.name}: {r.n_items} items ({r.n_unique} distinct contexts), {r.n_computed} computed, "
                f"{r.n_copied} copied, {r.blocks_written}/{r.blocks_total} blocks written in "
                f"{r.seconds:.1f} s"
            )
        if r.backoffs:
            from emb.backends.backoff import describe as describe_backoffs

            click.echo(f"{r.name}: {describe_backoffs(list(r.backoffs))}")
    # the estimate covers this run's work (all blocks, or its shard's) from the model loaded to
    # the end, its own probes left out: compared only when this run wrote every block of it
    if estimates and reports and all(
        not r.already_complete and r.blocks_written == r.blocks_assigned for r in reports
    ):
        estimate, stamp = estimates[-1]
        click.echo(f"time: {estimate.versus(estimate.seconds_before + ended - stamp)}")
    click.echo(describe(open_store(store).info()))


def _extract_deprecated() -> dict[str, str]:
    """Earlier flags of ``emb extract`` → the one name (see docs/rules/options-and-warnings.md)."""
    from emb.backends import available
    from emb.stimuli.suites import BUILTIN_SUITES

    declared = [o for g in BUILTIN_SUITES.values() for o in g.options]
    declared += [o for b in available().values() for o in b.options]
    return {"--poolings": "--pooling", **deprecated_flags(declared)}


extract.deprecated_flags = _extract_deprecated()


@main.command(cls=EmbCommand)
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def info(path: str, as_json: bool) -> None:
    """Model, suites, items, layers, size on disk and completeness of the store at PATH."""
    from emb.store import describe, open_store

    summary = open_store(path).info()
    click.echo(json.dumps(summary.to_dict(), indent=2, default=str) if as_json else describe(summary))


@main.command(cls=EmbCommand)
@click.argument("path")
@click.option("--deep", is_flag=True,
              help="Also read every byte (manifest checksums) and decode every block (finite values).")
def validate(path: str, deep: bool) -> None:
    """Check a store: exit 0 complete, 1 incomplete (re-run the extract), 2 corrupt or not a store.

    A plain check reads metadata, done-markers and the sizes of what each complete suite's
    manifest lists (cheap); --deep reads everything.
    """
    from emb.errors import EmbError
    from emb.store.validate import validate_store

    try:
        report = validate_store(path, deep=deep)
    except EmbError as err:  # nothing to validate: exit 2, not 1 (1 means "re-run to finish")
        click.echo(f"{path}: not validated: {type(err).__name__}: {err}", err=True)
        sys.exit(2)
    click.echo(f"{path}: {report.status}")
    for problem in report.problems:
        click.echo(f"  - {problem}")
    for note in report.notes:
        click.echo(f"  note: {note}")
    sys.exit(report.exit_code)


@main.group(invoke_without_command=True)
@click.pass_context
def suites(ctx: click.Context) -> None:
    """List the built-in stimulus suites and their options (or export a stored suite)."""
    if ctx.invoked_subcommand is not None:
        return
    from emb.stimuli.suites import BUILTIN_SUITES

    earlier = set(deprecated_flags(o for g in BUILTIN_SUITES.values() for o in g.options))
    for gen in BUILTIN_SUITES.values():
        click.echo(f"{gen.name}\n    {gen.description}")
        for opt in gen.options:
            if opt.cli_flag in earlier:  # Python's select=, the CLI's --test
                continue
            default = "" if opt.default in (None, ()) else f" (default {opt.default})"
            many = " [repeatable]" if opt.multiple else ""
            click.echo(f"    {opt.cli_flag}{many}: {opt.help}{default}")
    click.echo("A suite file (JSON/YAML, schema emb/schemas/suite.schema.json) can be passed to --suite too.")
    click.echo("emb suites export STORE --suite NAME FILE writes a stored suite to a file for other models.")


@suites.command(name="export", cls=EmbCommand)
@click.argument("store")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--suite", "-s", "group", required=True, help="The store group to export (e.g. ceat).")
@click.option("--overwrite", is_flag=True, help="Replace FILE if it exists (refused otherwise).")
def export_suite(store: str, file: str, group: str, overwrite: bool) -> None:
    """Write the suite stored in STORE (items, contexts, labels, parameters) to FILE (JSON/YAML).

    Extracting FILE into other models' stores gives every model the same contexts
    (emb extract --model M --suite FILE --store M.zarr). An existing FILE is refused unless
    --overwrite; FILE's directory must exist and lie outside any store.
    """
    from emb.stimuli.suites import write_suite
    from emb.stimuli.suites.export import suite_from_store

    suite = suite_from_store(store, group)
    path = write_suite(suite, file, overwrite=overwrite)
    click.echo(f"wrote suite {suite.name!r} ({len(suite)} items) to {path}")


@main.command(name="zip", cls=EmbCommand)
@click.argument("path")
@click.argument("target")
def zip_command(path: str, target: str) -> None:
    """Pack the finished store PATH into one zip file TARGET for sharing (read with emb as is)."""
    from emb.store import open_store

    out = open_store(path).to_zip(target)
    click.echo(f"wrote {out} ({out.stat().st_size / 2**20:.1f} MiB)")


def _register_analyze() -> None:
    from emb.cli.analyze import analyze
    from emb.cli.report import report

    main.add_command(analyze)
    main.add_command(report)


_register_analyze()
