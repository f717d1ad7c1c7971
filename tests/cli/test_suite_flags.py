"""Suite options become ``emb extract`` flags: a boolean option is a bare switch."""

from __future__ import annotations

import click
from click.testing import CliRunner

from emb.cli._options import apply as _apply
from emb.cli.main import _suite_options
from emb.stimuli.suites import BUILTIN_SUITES


def _parse(*args: str) -> dict:
    seen: dict = {}

    @click.command()
    @_apply(_suite_options())
    def cmd(**kwargs):
        seen.update(kwargs)

    result = CliRunner().invoke(cmd, list(args))
    assert result.exit_code == 0, result.output
    return seen


def test_boolean_suite_options_are_bare_switches() -> None:
    flags = [o for g in BUILTIN_SUITES.values() for o in g.options if o.type == "bool"]
    assert flags, "no boolean suite option to test"
    name = flags[0].name
    assert _parse()[name] in (None, False)
    # a bare switch, and the next option is not swallowed as its value
    given = _parse(flags[0].cli_flag, "--seed", "3")
    assert given[name] is True and given["seed"] == 3
