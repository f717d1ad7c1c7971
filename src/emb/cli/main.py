"""The ``emb`` command line: parse, call one library function, write, print a short summary."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from emb._version import __version__
from emb.cli._errors import EmbGroup

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
    from emb.extract.suites import BUILTIN_SUITES

    seen: dict[str, list[Any]] = {}
    for generator in BUILTIN_SUITES.values():
        for opt in generator.options:
            if opt.name in _EXTRACT_LEVEL:  # one flag, declared by extract and handed on
                continue
            seen.setdefault(opt.name, []).append((generator.name, opt))
    decorators = []
    for name, declared in seen.items():
        opt = declared[0][1]
        flag = "--" + name.replace("_", "-")
        helps = list(dict.fromkeys(o.help for _, o in declared))
        default = next((o.default for _, o in declared if o.default not in (None, ())), None)
        kwargs: dict[str, Any] = {
            "default": None,
            "multiple": any(o.multiple for _, o in declared),
            "help": f"[{', '.join(g for g, _ in declared)}] {' / '.join(helps)}"
            + ("" if default is None or opt.type is bool else f" (default {_show(default)})"),
        }
        if opt.type is bool:
            kwargs["is_flag"] = True
            kwargs.pop("multiple")
        elif opt.choices:
            kwargs["type"] = click.Choice(list(opt.choices))
        elif opt.type is int:
            kwargs["type"] = int
        elif opt.type is float:
            kwargs["type"] = float
        decorators.append(click.option(flag, name, **kwargs))
    return decorators


#: Suite options that are also extract's own flags: ``--allow-missing`` leaves out what is missing
#: for static vectors (words without a vector) and for the suites that declare it (ceat: stimuli
#: without a context).
_EXTRACT_LEVEL = frozenset({"allow_missing"})


def _show(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)


def _apply(decorators: Iterable[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    def wrap(func: Any) -> Any:
        for dec in reversed(list(decorators)):
            func = dec(func)
        return func

    return wrap


def _build_suites(specs: tuple[str, ...], options: dict[str, Any]) -> list[Any]:
    from emb.extract.suites import BUILTIN_SUITES, build_suite, load_suite

    # --allow-missing is also a static vectors flag: _static_runner judges where it applies
    given = sorted(
        k for k, v in options.items() if v is not None and v != () and k != "allow_missing"
    )
    used = {o.name for spec in specs if spec in BUILTIN_SUITES for o in BUILTIN_SUITES[spec].options}
    ignored = [k for k in given if k not in used]
    if ignored:
        owners = {
            k: [g.name for g in BUILTIN_SUITES.values() if any(o.name == k for o in g.options)]
            for k in ignored
        }
        listed = "; ".join(
            f"--{k.replace('_', '-')} belongs to suite {', '.join(owners[k]) or '?'}" for k in ignored
        )
        raise click.UsageError(
            f"option(s) given that no requested suite ({', '.join(specs)}) takes: {listed}. "
            "Remove them, or request the suite they belong to"
        )
    suites = []
    for spec in specs:
        if spec in BUILTIN_SUITES:
            gen = BUILTIN_SUITES[spec]
            declared = {o.name: o for o in gen.options}
            kwargs = {}
            for key, value in options.items():
                if key not in declared or value is None or value == () or value is False:
                    continue
                if isinstance(value, tuple) and not declared[key].multiple:
                    if len(value) > 1:
                        raise click.BadParameter(
                            f"suite {spec!r} takes one --{key.replace('_', '-')}; got {len(value)}",
                            param_hint=f"--{key.replace('_', '-')}",
                        )
                    value = value[0]
                kwargs[key] = list(value) if isinstance(value, tuple) else value
            suites.append(build_suite(spec, **kwargs))
        elif Path(spec).is_file():
            suites.append(load_suite(spec))
        else:
            raise click.BadParameter(
                f"{spec!r} is neither a built-in suite ({', '.join(BUILTIN_SUITES)}) nor a suite file",
                param_hint="--suite",
            )
    return suites


def _static_options() -> list[Any]:
    """The flags of static vectors files (emb.extract.static), which validates their values."""
    return [
        click.option("--format", "vectors_format", default=None, metavar="FORMAT",
                     help="[static vectors] word2vec-binary, word2vec-text, glove or fasttext "
                          "(default: from the file name; a .txt by its first line)."),
        click.option("--lowercase-fallback", is_flag=True,
                     help="[static vectors] Look a word missing in its case up lower-cased "
                          "(recorded per item, label vector_key)."),
        click.option("--allow-missing", is_flag=True,
                     help="[static vectors, ceat] Leave out the items of words without a vector, "
                          "or CEAT stimuli without a context (recorded in the store and reported), "
                          "instead of failing."),
    ]


def _static_runner(model: str, suites: list[Any], options: dict[str, Any]) -> Any:
    """A static vectors runner when --model is a vectors file (or --format is given), else None."""
    from emb.extract.static import is_vectors_file, load_vectors

    fmt = options.pop("vectors_format")
    lowercase, allow = options.pop("lowercase_fallback"), options.pop("allow_missing")
    if fmt is None and not is_vectors_file(model):
        uses_allow = any(s.parameters.get("allow_missing") for s in suites)
        if lowercase or (allow and not uses_allow):
            raise click.UsageError(
                "--lowercase-fallback and --allow-missing apply to static vectors files only "
                "(.bin, .txt, .vec, optionally .gz/.zip; or give --format), and --allow-missing "
                "to the ceat suite")
        return None
    return load_vectors(model, (it.word for s in suites for it in s.items), format=fmt,
                        lowercase_fallback=lowercase, allow_missing=allow)


def _coverage_lines(suites: list[Any]) -> list[str]:
    lines = []
    for suite in suites:
        rec = suite.parameters.get("vectors", {})
        found = rec.get("n_words", 0) - rec.get("n_missing", 0)
        line = f"{suite.name}: {found} of {rec.get('n_words')} words have a vector in {rec.get('file')}"
        if rec.get("lowercased"):
            line += f" ({len(rec['lowercased'])} found lower-cased)"
        if rec.get("n_missing"):
            shown = ", ".join(rec["missing"][:15]) + (" …" if rec["n_missing"] > 15 else "")
            line += (f"; {rec['n_missing']} without one, their {rec['n_items_left_out']} items "
                     f"left out: {shown}")
        lines.append(line)
    return lines


@main.command()
@click.option("--model", "-m", required=True,
              help="Hugging Face model id, local directory, .gguf file, or static vectors file "
                   "(word2vec .bin/.txt, GloVe .txt, fastText .vec; optionally .gz/.zip).")
@click.option("--suite", "-s", "suite_specs", required=True, multiple=True,
              help="Built-in suite name (see 'emb suites') or a suite file (JSON/YAML); repeatable.")
@click.option("--store", required=True, help="Store path or fsspec URL (created when missing).")
@click.option("--name", "group_names", multiple=True, help="Group name per suite (default: the suite's name).")
@click.option("--poolings", default=None, help="Comma-separated subset of first,last,mean,max (default: all).")
@click.option("--dtype", type=click.Choice(["float32", "float16", "bfloat16"]), default=None,
              help="Model compute dtype (default float32).")
@click.option("--storage-dtype", type=click.Choice(["float16", "float32"]), default=None,
              help="Stored vector dtype (default float16; see README for the precision impact).")
@click.option("--batch-size", type=int, default=None, help="Items per forward batch (default 64).")
@click.option("--device", default=None,
              help="auto (default), cpu, cuda, or cuda:K for GPU K (0-based).")
@click.option("--shard", default=None, metavar="I/N",
              help="Compute and write only shard I of N (1-based) of each suite; run N workers "
                   "(e.g. a SLURM array or one per GPU) with the same command and N. The last "
                   "one to finish completes the suite; a killed shard resumes when re-run.")
@click.option("--bos/--no-bos", default=None,
              help="Force / suppress a BOS token (default: the tokenizer's own behaviour).")
@click.option("--bos-token", default=None, metavar="TOKEN",
              help="Put TOKEN first instead of the tokenizer's BOS token (implies --bos), e.g. "
                   "'<|endoftext|>' for a model whose BOS token is a chat marker such as "
                   "'<|im_start|>'; one token of the vocabulary, as the tokenizer writes it.")
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit).")
@click.option("--trust-remote-code", is_flag=True,
              help="Let a model that ships its own Python code run it (read that code first; "
                   "recorded in the store). Without it such a model is refused.")
@click.option("--overwrite", is_flag=True,
              help="Replace the suite's group (and only it) if it holds another definition.")
@click.option("--layers", default=None,
              help="Layers to store: 'all' (default) or e.g. '0,6,-1' (negative = from the top); "
                   "the forward pass stops after the highest.")
@click.option("--dry-run", is_flag=True,
              help="Build the suites, tokenise, print the estimated store size and time; write nothing.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@_apply(_static_options())
@_apply(_suite_options())
def extract(
    model: str,
    suite_specs: tuple[str, ...],
    store: str,
    group_names: tuple[str, ...],
    poolings: str | None,
    dtype: str | None,
    storage_dtype: str | None,
    batch_size: int | None,
    device: str | None,
    shard: str | None,
    bos: bool | None,
    bos_token: str | None,
    revision: str | None,
    trust_remote_code: bool,
    overwrite: bool,
    layers: str | None,
    dry_run: bool,
    quiet: bool,
    **suite_options: Any,
) -> None:
    """Write every layer's embedding of each suite item's target word into STORE."""
    from emb.extract.pipeline import extract as run_extract
    from emb.store import describe, open_store

    static_options = {k: suite_options.pop(k) for k in
                      ("vectors_format", "lowercase_fallback", "allow_missing")}
    suite_options["allow_missing"] = static_options["allow_missing"] or None  # ceat takes it too
    suites = _build_suites(suite_specs, suite_options)
    from emb.extract.suites import BUILTIN_SUITES

    for suite in suites:
        generator = BUILTIN_SUITES.get(suite.generator or "")
        for line in generator.warnings(suite) if generator is not None else ():
            click.echo(f"{suite.name}: {line}", err=True)
    runner = _static_runner(model, suites, static_options)
    if runner is not None:  # static vectors: words checked (and reported) before writing
        suites = runner.cover(suites)
        for line in _coverage_lines(suites):
            click.echo(line, err=True)
    else:
        _quiet_transformers()
    kwargs: dict[str, Any] = {
        k: v
        for k, v in {
            "dtype": dtype,
            "storage_dtype": storage_dtype,
            "batch_size": batch_size,
            "device": device,
            "revision": revision,
        }.items()
        if v is not None
    }
    if poolings is not None:
        kwargs["poolings"] = tuple(p.strip() for p in poolings.split(",") if p.strip())
    if trust_remote_code:
        kwargs["trust_remote_code"] = True
    reports = run_extract(
        runner if runner is not None else model,
        suites,
        store,
        bos=bos,
        bos_token=bos_token,
        names=list(group_names) if group_names else None,
        overwrite=overwrite,
        progress=not quiet,
        layers=layers,
        dry_run=dry_run,
        on_estimate=lambda estimate: click.echo(estimate.line(), err=not dry_run),
        shard=shard,
        **kwargs,
    )
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
    click.echo(describe(open_store(store).info()))


def _quiet_transformers() -> None:
    """Our own progress bar reports the work; transformers' weight-loading bars only add noise."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # the extract extra is missing: load_model says what to install
        return
    hf_logging.disable_progress_bar()


@main.command()
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def info(path: str, as_json: bool) -> None:
    """Model, suites, items, layers, size on disk and completeness of the store at PATH."""
    from emb.store import describe, open_store

    summary = open_store(path).info()
    click.echo(json.dumps(summary.to_dict(), indent=2, default=str) if as_json else describe(summary))


@main.command()
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
    from emb.extract.suites import BUILTIN_SUITES

    for gen in BUILTIN_SUITES.values():
        click.echo(f"{gen.name}\n    {gen.description}")
        for opt in gen.options:
            default = "" if opt.default in (None, ()) else f" (default {opt.default})"
            many = " [repeatable]" if opt.multiple else ""
            click.echo(f"    --{opt.name.replace('_', '-')}{many}: {opt.help}{default}")
    click.echo("A suite file (JSON/YAML, schema emb/schemas/suite.schema.json) can be passed to --suite too.")
    click.echo("emb suites export STORE --suite NAME FILE writes a stored suite to a file for other models.")


@suites.command(name="export")
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
    from emb.extract.suites import write_suite
    from emb.extract.suites.export import suite_from_store

    suite = suite_from_store(store, group)
    path = write_suite(suite, file, overwrite=overwrite)
    click.echo(f"wrote suite {suite.name!r} ({len(suite)} items) to {path}")


@main.command(name="zip")
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
