"""``emb analyze NAME``: one subcommand per registered analysis, generated from its declaration.

Each subcommand's options are the analysis' :class:`~emb.analyses.Option` declarations (defaults
read from the function's signature, shown in ``--help``, never repeated here) plus the shared ones
defined once below. The command opens the stores, calls :func:`emb.analyses.run_analysis`, computes
with a progress display, writes every output through :func:`emb.results.write_results` and prints the
analysis' summary. There is no per-analysis code in this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from emb.cli._errors import EmbCommand, EmbGroup
from emb.cli._options import (
    Choice,
    DeclaredValue,
    click_option,
    deprecated_flags,
    range_help,
    show_default,
)
from emb.errors import OptionError
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

__all__ = ["analyze"]

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


# -- stores ----------------------------------------------------------------------------------------
def _check_stores(ctx: click.Context, param: click.Parameter, specs: Sequence[str]) -> Sequence[str]:
    """Refuse an empty store path (``--store ''`` or ``--store gpt2=``) before anything is opened."""
    from emb.api import split_label

    for spec in specs:
        label, path = split_label(spec)
        dangling = label is None and spec.endswith("=") and not Path(spec).exists()
        if not path.strip() or (dangling and _LABEL.match(spec[:-1])):
            raise click.BadParameter(
                f"{spec!r} names no store: the path is empty. Give the store's path or URL "
                "(--store gpt2.zarr, or --store LABEL=gpt2.zarr)", ctx, param)
    return specs


# -- options ---------------------------------------------------------------------------------------
def _split_values(values: Sequence[str]) -> list[str]:
    out: list[str] = []
    for value in values:
        out.extend(v.strip() for v in str(value).split(",") if v.strip())
    return out


def _layer(value: str) -> int | str:
    return int(value) if value.lstrip("-").isdigit() else value


def _library_options(analysis: Any, given: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for the analysis function from the values the user gave."""
    out: dict[str, Any] = {}
    for option in analysis.options:
        value = given.get(option.name)
        if value is None or value == ():
            continue
        if option.type == "bool":
            out[option.name] = bool(value)
            continue
        values = list(value)
        if option.multiple and option.type in ("str", "layer"):
            values = _split_values(values)
        if all(isinstance(v, str) and not v.strip() for v in values):  # --test '', --setting ','
            raise click.UsageError(
                f"{option.cli_flag} is empty; give a value or leave it out (its default is used "
                "then)")
        if option.multiple:
            if option.type == "layer":
                values = [_layer(v) for v in values]
            out[option.name] = values
        else:
            if len(values) > 1:
                raise click.UsageError(
                    f"{analysis.name} takes one {option.cli_flag}; got {len(values)}: "
                    f"{', '.join(map(str, values))}"
                )
            out[option.name] = _layer(values[0]) if option.type == "layer" else values[0]
    return out


# -- shared options, defined once ------------------------------------------------------------------
def _shared_options(analysis: Any) -> list[Callable[[Any], Any]]:
    params = analysis.parameters()
    owner = f"analysis {analysis.name!r}"
    options = [
        click.option(STORES.cli_flag, STORES.name, multiple=True, required=STORES.required,
                     metavar=STORES.metavar, callback=_check_stores, help=STORES.help),
        click.option(SUITE.cli_flag, SUITE.name, multiple=True, metavar=SUITE.metavar,
                     help=f"{SUITE.help}  [default: {analysis.suite}]"),
        click.option(OUT.cli_flag, "out_dir", type=click.Path(file_okay=False), default=None,
                     help=f"{OUT.help}  [default: emb-results/<stores>/<analysis>/]"),
        click.option(OVERWRITE.cli_flag, OVERWRITE.name, is_flag=True, help=OVERWRITE.help),
        click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="dask.distributed scheduler address  [default: local threads]"),
    ]
    if "seed" in params:
        options.append(click.option(
            analysis.seed.cli_flag, analysis.seed.name, type=DeclaredValue(analysis.seed, owner),
            default=None,
            help=f"{analysis.seed.help}  [default: {show_default(params['seed'].default)}]"
                 + range_help(analysis.seed)))
    if "method" in params:
        options.append(click.option(REFERENCE.cli_flag, REFERENCE.name, is_flag=True,
                                    help=REFERENCE.help))
    options += [
        click_option(TABLE_FORMAT, TABLE_FORMAT.default[0], owner="emb analyze"),
        click.option(FIGURE_FORMATS.cli_flag, FIGURE_FORMATS.name,
                     type=Choice(FIGURE_FORMATS.choices), multiple=True,
                     help=f"{FIGURE_FORMATS.help}  [default: {show_default(FIGURE_FORMATS.default)}]"),
        click.option(STANDARDIZE.cli_flag, STANDARDIZE.name,
                     type=Choice(STANDARDIZE.choices, STANDARDIZE, owner),
                     default=STANDARDIZE.default,
                     help=f"{STANDARDIZE.help}  [default: {STANDARDIZE.default}]"),
        click.option(RELATIVE_DEPTH.cli_flag, RELATIVE_DEPTH.name, is_flag=True,
                     help=RELATIVE_DEPTH.help),
        click.option(NO_PLOTS.cli_flag, NO_PLOTS.name, is_flag=True, help=NO_PLOTS.help),
        click.option("--dpi", type=click.IntRange(min=20, max=2400), default=200, show_default=True,
                     help="Resolution of PNG figures."),
        click.option("--json", "as_json", is_flag=True,
                     help="Print the summary as JSON on stdout (messages go to stderr)."),
        click.option("--quiet", "-q", is_flag=True, help="No progress display."),
    ]
    return options


# -- the command -----------------------------------------------------------------------------------
def _run(analysis: Any, params: dict[str, Any]) -> None:
    from emb.api import analyze as run
    from emb.api import command_line
    from emb.cli._progress import progress_display

    stores: tuple[str, ...] = params.pop("stores")
    params["suite"] = list(params["suite"]) or None
    as_json: bool = params.pop("as_json")
    quiet: bool = params.pop("quiet")
    echo = (lambda msg: click.echo(msg, err=True)) if as_json else click.echo
    options = _library_options(analysis, params)
    params["table_format"] = _split_values(params["table_format"] or ()) or list(TABLE_FORMAT.default)
    if params.get("seed") is not None:
        options["seed"] = params["seed"]
    if params.get("reference"):
        options["method"] = "reference"
    command = command_line(
        analysis, stores, options, suite=params["suite"], out=params["out_dir"],
        table_format=params["table_format"], figure_formats=params["figure_formats"],
        relative_depth=params["relative_depth"], figures=not params["no_plots"],
        overwrite=params["overwrite"], standardize=params["standardize"])
    try:
        written = run(
            analysis.name, stores, out=params["out_dir"] or True, suite=params["suite"],
            overwrite=params["overwrite"], scheduler=params["scheduler"],
            figures=not params["no_plots"], dpi=params["dpi"], table_format=params["table_format"],
            figure_formats=tuple(params["figure_formats"]) or FIGURE_FORMATS.default,
            relative_depth=bool(params["relative_depth"]), command=command,
            standardize=params["standardize"],
            progress=lambda work: progress_display(work, quiet=quiet, scheduler=params["scheduler"]),
            on_note=lambda line: click.echo(line, err=True), **options)
    except OptionError as err:  # two stores given one label
        raise click.UsageError(str(err)) from None
    summary = written.summary
    if as_json:
        click.echo(json.dumps({"summary": summary.to_dict(), "out": str(written.directory),
                               "files": [str(p) for p in written.files]}, indent=2))
    else:
        for line in summary.lines():
            echo(line)
    if written.replaced:
        echo(f"(removed the earlier run's {len(written.replaced)} files in {written.directory})")
    echo(f"wrote {len(written.files)} files to {written.directory}/: "
         + ", ".join(p.name if p.parent == written.directory else str(p) for p in written.files))


def _make_command(analysis: Any) -> click.Command:
    params = analysis.parameters()

    def callback(**values: Any) -> None:
        _run(analysis, values)

    decorators = _shared_options(analysis) + [
        click_option(option, params[option.name].default, owner=f"analysis {analysis.name!r}")
        for option in analysis.options
    ]
    for decorator in reversed(decorators):
        callback = decorator(callback)
    doc = (analysis.function.__doc__ or "").strip().splitlines()
    help_text = (
        f"{analysis.description}.\n\nReads the store group '{analysis.suite}'"
        + (f" (and, when present, {', '.join(repr(g) for g in analysis.optional_suites.values())})"
           if analysis.optional_suites else "")
        + f". Python: {analysis.function.__module__}.{analysis.function.__name__}"
        + (f" — {doc[0]}" if doc else "")
    )
    command = click.command(
        analysis.name, cls=EmbCommand, help=help_text, short_help=analysis.description,
        context_settings={"help_option_names": ["-h", "--help"], "show_default": True},
    )(callback)
    command.deprecated_flags = deprecated_flags(analysis.options)
    return command


class _AnalyzeGroup(EmbGroup):
    """Subcommands built from the registry on first use (``emb --help`` stays light)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from emb.analyses import ANALYSES

        return list(ANALYSES)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from emb.analyses import ANALYSES

        if name not in ANALYSES:
            return None
        return _make_command(ANALYSES[name])

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        from emb.analyses import ANALYSES

        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in ANALYSES:
            import difflib

            close = difflib.get_close_matches(name, list(ANALYSES), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise click.UsageError(
                f"unknown analysis {name!r}.{hint} The analyses are: {', '.join(ANALYSES)} "
                "(see 'emb analyze --list')", ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=_AnalyzeGroup, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--list", "list_", is_flag=True, help="List the analyses and exit.")
@click.pass_context
def analyze(ctx: click.Context, list_: bool) -> None:
    """Compute an analysis from one or more stores (CPU only, no torch) and write its results.

    \b
    emb analyze --list
    emb analyze vast --store gpt2.zarr
    emb analyze weat --store gpt2=gpt2.zarr --store bert=bert.zarr --correction holm --out results/
    emb analyze NAME --help          the options of one analysis
    """
    if list_:
        from emb.analyses import ANALYSES

        width = max(len(n) for n in ANALYSES)
        for analysis in ANALYSES.values():
            click.echo(f"{analysis.name:<{width}}  [{analysis.suite}] {analysis.description}")
        ctx.exit(0)
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())
        ctx.exit(2)
