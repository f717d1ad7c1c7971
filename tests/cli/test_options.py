"""Options become flags (:mod:`emb.cli._options`): every declared option of every suite, backend
and analysis, with its choices and bounds, refused with the declaration's own message."""

from __future__ import annotations

import click
import pytest
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


# -- every declared option is a generated flag with its declaration's choices and bounds -----------
def _params(command: click.Command) -> dict[str, click.Parameter]:
    return {p.name: p for p in command.params if p.name}


def test_every_analysis_option_is_its_declared_flag() -> None:
    from emb.analyses import ANALYSES
    from emb.cli._options import Choice, DeclaredValue
    from emb.cli.analyze import _make_command

    for analysis in ANALYSES.values():
        params = _params(_make_command(analysis))
        for option in (*analysis.options, *([analysis.seed] if "seed" in analysis.parameters() else [])):
            param = params[option.name]
            assert option.cli_flag in param.opts or option.cli_flag in param.secondary_opts or \
                any(o.startswith(option.cli_flag) for o in param.opts), (analysis.name, option.name)
            if option.choices:
                assert isinstance(param.type, Choice) and list(param.type.choices) == list(option.choices)
                assert param.type.option is option
            elif option.type in ("int", "float"):
                assert isinstance(param.type, DeclaredValue) and param.type.option is option


def test_every_suite_and_backend_option_is_an_extract_flag() -> None:
    from emb.backends import available
    from emb.cli.main import main

    params = _params(main.commands["extract"])
    declared = []
    for options in [g.options for g in BUILTIN_SUITES.values()] + [b.options for b in available().values()]:
        taken: set[str] = set()
        for option in options:
            if option.cli_flag in taken:  # its flag is an earlier option's old spelling
                # (weat's select=, the CLI's --test): Python's alone, never a second flag
                assert option.name not in params or option.cli_flag not in params[option.name].opts
                continue
            taken |= {option.cli_flag, *getattr(option, "deprecated", ())}
            declared.append(option)
    for option in declared:
        param = params[option.name]
        assert option.cli_flag in param.opts, option.name
        if option.type == "bool":
            assert param.is_flag, option.name
        elif option.choices:
            assert set(param.type.choices) == set(option.choices), option.name
        elif option.type in ("int", "float"):
            assert param.type.name == ("integer" if option.type == "int" else "float"), option.name


@pytest.mark.parametrize("flag, value, keyword, python_value", [
    ("--alternative", "bigger", "alternative", "bigger"),
    ("--n-permutations", "1", "n_permutations", 1),
    ("--seed", "-1", "seed", -1),
    ("--confidence", "1.5", "confidence", 1.5),
])
def test_the_validator_says_the_same_from_python_and_the_cli(tmp_path, flag, value, keyword,
                                                             python_value) -> None:
    from emb.analyses import weat
    from emb.cli.main import main
    from emb.errors import AnalysisError
    from tests.analyses._synthetic import weat_dataset

    with pytest.raises(AnalysisError) as caught:
        weat(weat_dataset(), **{keyword: python_value})
    result = CliRunner().invoke(main, ["analyze", "weat", "--store", str(tmp_path / "none.zarr"),
                                       flag, value])
    assert result.exit_code == 2
    assert str(caught.value) in " ".join(result.output.split()), (str(caught.value), result.output)
