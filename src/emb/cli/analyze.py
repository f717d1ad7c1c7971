"""``emb analyze NAME``: one subcommand per registered analysis, generated from its declaration.

Each subcommand's options are the analysis' :class:`~emb.analyses.Option` declarations (defaults
read from the function's signature, shown in ``--help``, never repeated here) plus the shared ones
defined once below. The command opens the stores, calls :func:`emb.analyses.run_analysis`, computes
with a progress display, writes every output through :func:`emb.results.write_results` and prints the
analysis' summary. There is no per-analysis code in this module.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from emb.cli._errors import EmbCommand, EmbGroup

__all__ = ["analyze"]

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


# -- stores ----------------------------------------------------------------------------------------
def _split_label(spec: str) -> tuple[str | None, str]:
    """``label=path`` → (label, path); a plain path (or URL) → (None, path). A spec that exists
    as a path is a path, even with an ``=`` in its name (``we=ird.zarr``)."""
    if "=" in spec and not Path(spec).exists():
        label, path = spec.split("=", 1)
        if _LABEL.match(label) and path:
            return label, path
    return None, spec


def _check_stores(ctx: click.Context, param: click.Parameter, specs: Sequence[str]) -> Sequence[str]:
    """Refuse an empty store path (``--store ''`` or ``--store gpt2=``) before anything is opened."""
    for spec in specs:
        label, path = _split_label(spec)
        dangling = label is None and spec.endswith("=") and not Path(spec).exists()
        if not path.strip() or (dangling and _LABEL.match(spec[:-1])):
            raise click.BadParameter(
                f"{spec!r} names no store: the path is empty. Give the store's path or URL "
                "(--store gpt2.zarr, or --store LABEL=gpt2.zarr)", ctx, param)
    return specs


def _names_for(specs: Sequence[str], models: Sequence[Mapping[str, Any]]) -> list[str]:
    """One unique label per store: the one given (``--store gpt2=path``), else a hub model's id
    (``gpt2``), else the store's file name (``minilm`` for ``minilm.zarr``): local paths and
    site-packages directories make unreadable labels."""
    names: list[str] = []
    for spec, model in zip(specs, models, strict=True):
        label, path = _split_label(spec)
        stem = Path(path.rstrip("/")).name.removesuffix(".zip").removesuffix(".zarr")
        hub = model.get("source") == "hub" and model.get("model_id")
        base = str(label or hub or stem or model.get("model_id"))
        name, i = base, 2
        while name in names:
            if label:
                raise click.UsageError(f"the label {label!r} is given to two stores; give each its own")
            name, i = f"{base} ({i})", i + 1
        names.append(name)
    return names


# -- options ---------------------------------------------------------------------------------------
def _show_default(value: Any) -> str | None:
    if value is inspect.Parameter.empty or value is None:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple | list):
        return ",".join(map(str, value)) or None
    return str(value)


def _split_values(values: Sequence[str]) -> list[str]:
    out: list[str] = []
    for value in values:
        out.extend(v.strip() for v in str(value).split(",") if v.strip())
    return out


def _layer(value: str) -> int | str:
    return int(value) if value.lstrip("-").isdigit() else value


class _Choice(click.Choice):
    """click's Choice whose error adds a "did you mean" (stdlib difflib; click 8.1 and later)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from emb._text import did_you_mean

        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as err:
            hint = did_you_mean(value, self.choices)
            if hint and hint not in err.message:
                err.message += hint
            raise


class _Bounded(click.ParamType):
    """An ``int``/``float`` option checked against its declared bounds (:class:`Option`'s
    ``low``/``high``, the same check the analysis function makes), so that a seed of -1 or
    10^23 permutations is refused before anything is opened."""

    def __init__(self, option: Any) -> None:
        self.option = option
        self.name = "integer" if option.type == "int" else "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = value
        if isinstance(value, str):
            try:
                number = int(value) if self.option.type == "int" else float(value)
            except ValueError:
                self.fail(f"{value!r} is not {self.option.range_text}", param, ctx)
        if not self.option.in_range(number):
            self.fail(f"{value} is not {self.option.range_text}", param, ctx)
        return number


def _range_help(option: Any) -> str:
    if option.type == "int":
        low, high = option.bounds
        return f"  [range: {low}..{high}]"
    return f"  [range: {option.float_bounds}]" if option.float_bounds else "  [finite]"


_TYPES: dict[str, Any] = {"str": str, "layer": str, "path": click.Path(exists=True)}


def _click_option(option: Any, default: Any) -> Callable[[Any], Any]:
    """The click decorator of one declared analysis option (its value None/() when not given)."""
    shown = _show_default(default)
    help_text = option.help + (f"  [default: {shown}]" if shown else "")
    if option.type == "bool":
        name = option.cli_flag.removeprefix("--")
        return click.option(f"--{name}/--no-{name}", option.name, default=None, help=help_text)
    kwargs: dict[str, Any] = {"default": None, "help": help_text, "metavar": option.metavar}
    if option.choices:
        kwargs["type"] = _Choice(list(option.choices))
    elif option.type in ("int", "float"):
        kwargs["type"] = _Bounded(option)
        kwargs["help"] = help_text + _range_help(option)
    else:
        kwargs["type"] = _TYPES[option.type]
    if option.multiple:
        kwargs["help"] += "  (repeatable; or comma-separated)"
    # single-valued options are collected as lists too, so that a repeated one is refused, not
    # silently overwritten
    kwargs["multiple"] = True
    return click.option(option.cli_flag, *getattr(option, "aliases", ()), option.name, **kwargs)


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
        if option.multiple:
            values = _split_values(values) if option.type in ("str", "layer") else values
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
    options = [
        click.option("--store", "stores", multiple=True, required=True, metavar="[LABEL=]PATH",
                     callback=_check_stores,
                     help="Store path or URL (a .zip, s3://, https://…); repeat for several "
                          "models; LABEL=PATH names the model in tables and figures (a path "
                          "that exists is taken whole, even with an '=' in it)."),
        click.option("--suite", "suite", default=None, metavar="GROUP",
                     help=f"The store group to read  [default: {analysis.suite}]"),
        click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
                     help="Output directory  [default: emb-results/<stores>/<analysis>/, "
                          "replaced on every run]"),
        click.option("--overwrite", is_flag=True,
                     help="Replace an earlier run's files in --out (refused otherwise)."),
        click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="dask.distributed scheduler address  [default: local threads]"),
    ]
    if "seed" in params:
        options.append(click.option(
            "--seed", type=_Bounded(analysis.seed), default=None,
            help=f"{analysis.seed.help}  [default: {_show_default(params['seed'].default)}]"
                 + _range_help(analysis.seed)))
    if "method" in params:
        options.append(click.option(
            "--reference", is_flag=True,
            help="Reproduce the authors' published code instead of the correct method "
                 "(see METHODS.md)."))
    options += [
        click.option("--format", "table_format", type=_Choice(["auto", "csv", "parquet"]),
                     default="auto", show_default=True,
                     help="Tables as CSV or Parquet; auto: CSV, and Parquet for the per-word tables."),
        click.option("--figure-format", "figure_formats", type=_Choice(["png", "pdf", "svg"]),
                     multiple=True, help="Figure file format; repeat for several  [default: png]"),
        click.option("--relative-depth", is_flag=True,
                     help="Figures: x = layer / last layer (compares models of different depth)."),
        click.option("--no-plots", is_flag=True, help="Do not draw figures."),
        click.option("--dpi", type=click.IntRange(min=20, max=2400), default=200, show_default=True,
                     help="Resolution of PNG figures."),
        click.option("--json", "as_json", is_flag=True,
                     help="Print the summary as JSON on stdout (messages go to stderr)."),
        click.option("--quiet", "-q", is_flag=True, help="No progress display."),
    ]
    return options


# -- the command -----------------------------------------------------------------------------------
def _open(specs: Sequence[str], analysis: Any, suite: str | None) -> tuple[list[str], dict, dict]:
    from emb._text import did_you_mean
    from emb._text import names as name_list
    from emb.errors import StoreError
    from emb.store import open_store

    opened = [open_store(_split_label(spec)[1]) for spec in specs]
    names = _names_for(specs, [s.model for s in opened])
    group = suite or analysis.suite
    for spec, store in zip(specs, opened, strict=True):
        present = list(store.suites)
        if group not in present:
            if (damaged := store.damaged(group)) is not None:
                raise damaged  # there, but unreadable: 'emb extract' would refuse it too
            hint = did_you_mean(group, present)
            raise StoreError(
                f"the store {_split_label(spec)[1]} has no suite {group!r}; it has "
                f"{name_list(present)}.{hint} Pass --suite NAME for another group, or add it with "
                f"'emb extract --model {store.model.get('model_id') or 'MODEL'} --suite "
                f"{analysis.suite if group == analysis.suite else 'FILE'} --store {_split_label(spec)[1]}'"
            )
    datasets = {n: s.dataset(group, chunks="layer", chunk_by=analysis.chunk_by)
                for n, s in zip(names, opened, strict=True)}
    per_model: dict[str, dict[str, Any]] = {}
    for name, store in zip(names, opened, strict=True):
        extra = {key: store.dataset(g, chunks="layer")
                 for key, g in analysis.optional_suites.items() if g in store.suites}
        if extra:
            per_model[name] = extra
    return names, datasets, per_model


def _command_line(analysis: Any, stores: Sequence[str], params: Mapping[str, Any],
                  options: Mapping[str, Any]) -> list[str]:
    """The command as typed when run from a shell, else rebuilt from the values given."""
    if sys.argv and Path(sys.argv[0]).name == "emb":
        return ["emb", *sys.argv[1:]]
    args = ["emb", "analyze", analysis.name]
    for store in stores:
        args += ["--store", store]
    flags = {o.name: o for o in analysis.options}
    for key, value in options.items():
        if key == "method":
            args += ["--reference"] if value == "reference" else []
        elif key == "seed":
            args += ["--seed", str(value)]
        elif flags[key].type == "bool":
            args.append(flags[key].cli_flag if value else "--no-" + flags[key].cli_flag[2:])
        else:
            for v in value if isinstance(value, list) else [value]:
                args += [flags[key].cli_flag, str(v)]
    for key in ("suite", "out_dir"):
        if params.get(key):
            args += ["--" + key.removesuffix("_dir"), str(params[key])]
    if params.get("table_format", "auto") != "auto":
        args += ["--format", str(params["table_format"])]
    for fmt in params.get("figure_formats") or ():
        args += ["--figure-format", str(fmt)]
    for flag in ("relative_depth", "no_plots", "overwrite"):
        if params.get(flag):
            args.append("--" + flag.replace("_", "-"))
    return args


def _default_out(names: Sequence[str], analysis: Any) -> Path:
    from emb.analyses._analysis import slug

    return Path("emb-results") / "+".join(slug(n) for n in names) / analysis.stem


def _run(analysis: Any, params: dict[str, Any]) -> None:
    from emb.analyses import run_analysis
    from emb.analyses.stats._work import planning
    from emb.cli._progress import compute, estimate
    from emb.results import discard_out, prepare_out, write_results
    from emb.store import check_unchanged, damage_reported

    stores: tuple[str, ...] = params.pop("stores")
    as_json: bool = params.pop("as_json")
    quiet: bool = params.pop("quiet")
    echo = (lambda msg: click.echo(msg, err=True)) if as_json else click.echo
    options = _library_options(analysis, params)
    if params.get("seed") is not None:
        options["seed"] = params["seed"]
    if params.get("reference"):
        options["method"] = "reference"

    locations = [_split_label(s)[1] for s in stores]
    with damage_reported(locations):
        names, datasets, per_model = _open(stores, analysis, params["suite"])
    out_dir = Path(params["out_dir"]) if params["out_dir"] else _default_out(names, analysis)
    # check everything cheap before computing and before creating anything: the options (the
    # lazy result), then the output directory
    with planning() as work:  # the permutation tests' work, declared while the graph is built
        lazy = run_analysis(analysis, datasets, per_model=per_model, **options)
    plan = prepare_out(out_dir, analysis, overwrite=params["overwrite"],
                       default=params["out_dir"] is None)
    for note in plan.notes:
        click.echo(f"({note})", err=True)
    if not quiet and (line := estimate(work.units, work.parts, scheduler=params["scheduler"])):
        click.echo(line, err=True)
    try:
        with damage_reported(locations):  # a shard that does not decode: which store, what to run
            result = compute(lazy, scheduler=params["scheduler"], quiet=quiet, work=work.units)
        # a suite rewritten while it was read: refused, nothing written
        check_unchanged([*datasets.values(), *(d for m in per_model.values() for d in m.values())])
        written = write_results(
            plan,
            analysis,
            result,
            stores=dict(zip(names, locations, strict=True)),
            options=options,
            suite=params["suite"] or analysis.suite,
            command=_command_line(analysis, stores, params, options),
            figures=not params["no_plots"],
            dpi=params["dpi"],
            table_format=params["table_format"],
            figure_formats=tuple(params["figure_formats"]) or ("png",),
            figure_options={"relative_depth": bool(params["relative_depth"])},
        )
    except BaseException:  # an error, Ctrl-C: no empty --out left behind
        discard_out(plan)
        raise
    summary = written.summary
    if as_json:
        click.echo(json.dumps({"summary": summary.to_dict(), "out": str(written.directory),
                               "files": [str(p) for p in written.files]}, indent=2))
    else:
        for line in summary.lines():
            echo(line)
    if plan.replaced:
        echo(f"(removed the earlier run's {len(plan.replaced)} files in {written.directory})")
    echo(f"wrote {len(written.files)} files to {written.directory}/: "
         + ", ".join(p.name if p.parent == written.directory else str(p) for p in written.files))


def _make_command(analysis: Any) -> click.Command:
    params = analysis.parameters()

    def callback(**values: Any) -> None:
        _run(analysis, values)

    decorators = _shared_options(analysis) + [
        _click_option(option, params[option.name].default) for option in analysis.options
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
    return click.command(
        analysis.name, cls=EmbCommand, help=help_text, short_help=analysis.description,
        context_settings={"help_option_names": ["-h", "--help"], "show_default": True},
    )(callback)


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
