"""Click options generated from :class:`emb.options.Option` declarations (no option mapped by hand).

Suites', backends', the extraction pipeline's and analyses' options reach the command line only
through these functions:
each becomes one flag with the declared type, choices and bounds, and a value is checked by the
declaration's own validator (:meth:`emb.options.Option.parse`), so the CLI refuses it with the
same message as the Python API. Defaults come from the declaration or the function's signature.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable
from typing import Any

import click

__all__ = ["Choice", "DeclaredValue", "apply", "click_option", "close_options", "deprecated_flags", "every_renamed",
           "rename_deprecated", "setting_option", "show_default"]


def show_default(value: Any) -> str | None:
    """A default as ``--help`` shows it (None: nothing to show)."""
    if value is inspect.Parameter.empty or value is None:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple | list):
        return ",".join(map(str, value)) or None
    return str(value)


class Choice(click.Choice):
    """click's Choice refusing a value with the declaration's message (the one Python gives, when
    the option is declared) and a "did you mean" (stdlib difflib; click 8.1 and later)."""

    def __init__(self, choices: Any, option: Any = None, owner: str | None = None) -> None:
        super().__init__(list(choices))
        self.option = option
        self.owner = owner

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from emb.text import did_you_mean

        if getattr(self.option, "multiple", False) and isinstance(value, str) and "," in value:
            # a repeatable option's comma-separated values: each one checked (split later)
            return ",".join(self.convert(v.strip(), param, ctx) for v in value.split(",") if v.strip())
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as err:
            if self.option is not None:
                err.message = self.option.message(value, owner=self.owner)
            hint = did_you_mean(value, self.choices)
            if hint and hint not in err.message:
                err.message += hint
            raise


class DeclaredValue(click.ParamType):
    """An ``int``/``float`` option, or one with a parser of its own (a device, a shard ``I/N``),
    checked by its declaration (:meth:`emb.options.Option.parse`: the same check and message as
    the function's), so that a seed of -1 or 10^23 permutations is refused before anything is
    opened."""

    def __init__(self, option: Any, owner: str | None = None) -> None:
        self.option = option
        self.owner = owner
        self.name = {"int": "integer", "float": "float"}.get(option.type, "text")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from emb.errors import EmbError

        number = value
        if isinstance(value, str) and self.option.type in ("int", "float"):
            try:  # as Python would get it: the message is the same
                number = int(value) if self.option.type == "int" else float(value)
            except ValueError:
                pass
        try:
            return self.option.parse(number, owner=self.owner)
        except EmbError as err:
            self.fail(str(err), param, ctx)


def range_help(option: Any) -> str:
    """The bounds of a numeric option for ``--help``."""
    if option.type == "int":
        low, high = option.bounds
        return f"  [range: >= {low}]" if high == math.inf else f"  [range: {low}..{high}]"
    return f"  [range: {option.float_bounds}]" if option.float_bounds else "  [finite]"


_TYPES: dict[str, Any] = {"str": str, "layer": str, "path": click.Path(exists=True)}


def click_option(option: Any, default: Any, *, owner: str | None = None) -> Callable[[Any], Any]:
    """The click decorator of one declared analysis option (its value None/() when not given;
    single-valued options are collected as lists too, so that a repeated one is refused, not
    silently overwritten)."""
    shown = show_default(default)
    help_text = option.help + (f"  [default: {shown}]" if shown else "")
    if option.type == "bool":
        name = option.cli_flag.removeprefix("--")
        return click.option(f"--{name}/--no-{name}", option.name, default=None, help=help_text)
    kwargs: dict[str, Any] = {"default": None, "help": help_text, "metavar": option.metavar}
    if option.choices:
        kwargs["type"] = Choice(option.choices, option, owner)
    elif option.type in ("int", "float"):
        kwargs["type"] = DeclaredValue(option, owner)
        kwargs["help"] = help_text + range_help(option)
    else:
        kwargs["type"] = _TYPES[option.type]
    if option.multiple:
        kwargs["help"] += "  (repeatable; or comma-separated)"
    kwargs["multiple"] = True
    return click.option(option.cli_flag, *option.aliases, option.name, **kwargs)


def extract_option(declared: list[Any], help_text: str, *, default: Any = None,
                   multiple: bool | None = None) -> Callable[[Any], Any]:
    """The click decorator of one ``emb extract`` flag that ``declared`` options (one name, of
    one or several suites or backends) share: the value reaches the library unconverted (the
    suite's or backend's own validator converts and checks it)."""
    opt = declared[0]
    kwargs: dict[str, Any] = {"default": default, "help": help_text}
    if opt.type == "bool":
        kwargs["is_flag"] = True
    else:
        kwargs["multiple"] = any(o.multiple for o in declared) if multiple is None else multiple
        if opt.choices:
            kwargs["type"] = click.Choice(list(opt.choices))
        elif opt.type in ("int", "float"):
            kwargs["type"] = int if opt.type == "int" else float
    return click.option(opt.cli_flag, opt.name, **kwargs)


def setting_option(option: Any) -> Callable[[Any], Any]:
    """The click decorator of one of the extraction pipeline's options
    (:data:`emb.extraction.options.OPTIONS`: ``--pooling``, ``--dtype``, ``--batch-size`` …), its
    value None (or ``()``) when not given, the library's default then.

    A value is checked by the declaration as click reads it (:class:`Choice`,
    :class:`DeclaredValue`; a repeatable option's values together), with the message Python
    gets; the front door parses what it is handed once more (every parser takes what it
    returned). A ``bool`` is a switch, with its ``--no-`` form where not giving it means neither
    (the default None: ``--bos/--no-bos``).
    """
    shown = None if option.type == "bool" else show_default(option.default)
    help_text = option.help + (f"  [default: {shown}]" if shown else "")
    if option.type == "bool":
        if option.default is not None:
            return click.option(option.cli_flag, option.name, is_flag=True, help=help_text)
        name = option.cli_flag.removeprefix("--")
        return click.option(f"--{name}/--no-{name}", option.name, default=None, help=help_text)
    kwargs: dict[str, Any] = {"default": None, "help": help_text, "metavar": option.metavar}
    if option.multiple:
        def parsed(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> Any:
            from emb.errors import EmbError

            try:
                return option.parse(values) if values else None
            except EmbError as err:
                raise click.BadParameter(str(err), ctx, param) from None

        kwargs.update(multiple=True, callback=parsed)
    elif option.choices:
        kwargs["type"] = Choice(option.choices, option)
    elif option.type in ("int", "float") or option.parser is not None:
        kwargs["type"] = DeclaredValue(option)
        if option.type in ("int", "float"):
            kwargs["help"] += range_help(option)
    return click.option(option.cli_flag, *option.aliases, option.name, **kwargs)


def apply(decorators: Iterable[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    """One decorator applying ``decorators`` in order (the first outermost)."""
    def wrap(func: Any) -> Any:
        for dec in reversed(list(decorators)):
            func = dec(func)
        return func

    return wrap


# -- one name per concept: earlier flags, and suggestions for a mistyped one -------------------------
def deprecated_flags(options: Iterable[Any]) -> dict[str, str]:
    """Earlier flag → the one name, from declared options' ``deprecated`` flags."""
    return {old: opt.cli_flag for opt in options for old in getattr(opt, "deprecated", ())}


def rename_deprecated(command: click.Command, args: list[str]) -> list[str]:
    """``args`` with each earlier flag of ``command`` (its ``deprecated_flags``: old → new)
    replaced by the one name, warning once per flag on stderr; nothing after ``--`` is touched."""
    table: dict[str, str] = getattr(command, "deprecated_flags", None) or {}
    if not table:
        return args
    out: list[str] = []
    warned: set[str] = set()
    for i, arg in enumerate(args):
        if arg == "--":
            out += args[i:]
            break
        old = arg.split("=", 1)[0]
        new = table.get(old)
        if new is None:
            out.append(arg)
            continue
        if old not in warned:
            warned.add(old)
            click.echo(f"warning: {old} is deprecated and will be removed: use {new} (one name "
                       "for one concept in every emb command)", err=True)
        out.append(new + arg[len(old):])
    return out


def every_renamed() -> dict[str, str]:
    """Earlier flag → the one name, over every command (an earlier name typed where it never
    existed, ``--similarity`` on ``emb extract``, still points to the one name)."""
    from emb.analyses import ANALYSES
    from emb.backends import available
    from emb.stimuli.suites import BUILTIN_SUITES

    declared = [o for a in ANALYSES.values() for o in a.options]
    declared += [o for g in BUILTIN_SUITES.values() for o in g.options]
    declared += [o for b in available().values() for o in b.options]
    return {"--poolings": "--pooling", **deprecated_flags(declared)}


def close_options(command: click.Command, ctx: click.Context, name: str) -> list[str]:
    """The flags of ``command`` to suggest for the unknown ``name``: the one name of an earlier
    flag, else the flags whose names (without the dashes: ``--pairs`` is not like ``--dpi``)
    are close to it."""
    import difflib

    flags = [o for p in command.get_params(ctx) if isinstance(p, click.Option) and not p.hidden
             for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]
    renamed = {**every_renamed(), **(getattr(command, "deprecated_flags", None) or {})}.get(name)
    if renamed in flags:
        return [renamed]
    bare = {f.lstrip("-"): f for f in flags}
    close = difflib.get_close_matches(name.lstrip("-"), list(bare), n=3, cutoff=0.6)
    return [bare[c] for c in close]
