"""The suites a run asks for: built-in ones by name with the options given, and suite files
(what ``emb extract --suite … --<option> …`` runs), and what their generators say about them."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from emb.errors import OptionError
from emb.stimuli.suites._registry import BUILTIN_SUITES, build_suite
from emb.stimuli.suites.core import Suite, load_suite

__all__ = ["build_suites", "suite_warnings"]


def build_suites(
    specs: Sequence[str], options: Mapping[str, Any], *, shared: Collection[str] = ()
) -> list[Suite]:
    """The suites of several specs: built-in names (built with the options they declare) and
    suite files (JSON/YAML), in the order given; what ``emb extract --suite … --<option> …`` runs.

    Parameters
    ----------
    specs
        Each a key of :data:`BUILTIN_SUITES` or the path of a suite file.
    options
        Options by name, shared by the built-in suites that declare them (values ``None``,
        ``()`` or ``False`` are not given); a tuple for an option a suite takes once must hold
        one value.
    shared
        Names of options that something besides the suites takes too (a backend's
        ``allow_missing``): handed to the suites that declare them, never refused.

    Raises
    ------
    OptionError
        An option given that no requested suite takes (naming the suites it belongs to), several
        values for an option a suite takes once, or a spec that is neither a built-in suite nor a
        file.
    SuiteError
        From the generators and the suite files.
    """
    _refuse_unused(specs, options, shared)
    suites = []
    for spec in specs:
        if spec in BUILTIN_SUITES:
            suites.append(build_suite(spec, **_suite_options(spec, options)))
        elif Path(spec).is_file():
            suites.append(load_suite(spec))
        else:
            raise OptionError(
                f"{spec!r} is neither a built-in suite ({', '.join(BUILTIN_SUITES)}) nor a suite file",
                option="--suite",
            )
    return suites


def _refuse_unused(
    specs: Sequence[str], options: Mapping[str, Any], shared: Collection[str],
) -> None:
    """Refuse an option given that no requested built-in suite takes, naming the suites it
    belongs to."""
    given = sorted(
        k for k, v in options.items() if v is not None and v != () and k not in shared
    )
    used = {o.name for spec in specs if spec in BUILTIN_SUITES for o in BUILTIN_SUITES[spec].options}
    ignored = [k for k in given if k not in used]
    if ignored:
        owners = {
            k: [g.name for g in BUILTIN_SUITES.values() if any(o.name == k for o in g.options)]
            for k in ignored
        }
        flags = {o.name: o.cli_flag for g in BUILTIN_SUITES.values() for o in g.options}
        listed = "; ".join(
            f"{flags.get(k, '--' + k.replace('_', '-'))} belongs to suite "
            f"{', '.join(owners[k]) or '?'}" for k in ignored
        )
        raise OptionError(
            f"option(s) given that no requested suite ({', '.join(specs)}) takes: {listed}. "
            "Remove them, or request the suite they belong to"
        )


def _suite_options(spec: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options built-in suite ``spec`` declares, as its generator takes them (a tuple of
    one value for an option it takes once: that value; a tuple: a list)."""
    declared = {o.name: o for o in BUILTIN_SUITES[spec].options}
    kwargs = {}
    for key, value in options.items():
        if key not in declared or value is None or value == () or value is False:
            continue
        if isinstance(value, tuple) and not declared[key].multiple:
            if len(value) > 1:
                raise OptionError(
                    f"suite {spec!r} takes one --{key.replace('_', '-')}; got {len(value)}",
                    option=f"--{key.replace('_', '-')}",
                )
            value = value[0]
        kwargs[key] = list(value) if isinstance(value, tuple) else value
    return kwargs


def suite_warnings(suites: Sequence[Suite]) -> list[str]:
    """What the built-in generators have to say about the suites they built (words left out,
    and why), one line each, prefixed with the suite's name."""
    lines = []
    for suite in suites:
        generator = BUILTIN_SUITES.get(suite.generator or "")
        for line in generator.warnings(suite) if generator is not None else ():
            lines.append(f"{suite.name}: {line}")
    return lines
