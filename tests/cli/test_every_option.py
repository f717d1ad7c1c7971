"""Every ``emb analyze`` subcommand with every option type, generated from the registry: never a
traceback, only exit 0 (done), 1 (an emb error) or 2 (a usage error), each error one line.

Families registered later are covered without touching this file: their options come from their
:class:`~emb.analyses.Option` declarations, and a suite the test store lacks is itself an error
that must read as one line.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from emb.analyses import ANALYSES
from emb.cli.main import main
from tests.analyses._synthetic import (
    similarity_dataset,
    similarity_pairs,
    vast_dataset,
    weat_dataset,
    write_store,
)

#: numpy reprs that must never reach a user (np.str_('warriner'), np.int64(3) …).
NUMPY_REPR = re.compile(r"\bnp\.\w+\(|numpy\.\w+\(|dtype\(")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("every")
    sim, pairs = similarity_dataset(similarity_pairs(n_words=30, n_pairs=40), n_layers=2, d=8)
    pair_dir = root / "pairs"
    pair_dir.mkdir()
    for name, group in pairs.groupby("dataset"):
        group[["word1", "word2", "score"]].to_csv(pair_dir / f"{name}.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = write_store(root / "s.zarr", {
            "vast": vast_dataset(n_words=60, n_layers=2, d=10, settings=("bleached", "random")),
            "weat": weat_dataset(n_layers=2, d=8),
            "similarity": sim,
        })
    return {"store": path, "pairs": pair_dir, "root": root}


def _values(option: Any, paths: dict[str, Path]) -> list[tuple[str, list[str]]]:
    """(kind, CLI arguments) to try for one declared option: a plausible value and an odd one."""
    flag = option.cli_flag
    if option.type == "bool":
        return [("on", [flag]), ("off", ["--no-" + flag[2:]])]
    if option.choices:
        return [("choice", [flag, option.choices[-1]]), ("bad-choice", [flag, option.choices[0] + "x"])]
    if option.type == "int":
        return [("int", [flag, "1"]), ("negative", [flag, "-1"])]
    if option.type == "float":
        return [("float", [flag, "0.5"]), ("nan", [flag, "nan"])]
    if option.type == "layer":
        return [("layer", [flag, "top"]), ("bad-layer", [flag, "bottom"])]
    if option.type == "path":
        return [("path", [flag, str(paths["pairs"])]), ("no-path", [flag, str(paths["root"] / "nope")])]
    return [("unknown-name", [flag, "no-such-name"]), ("two", [flag, "alpha,beta"])]


def _cases() -> list[tuple[str, str, str | None]]:
    cases: list[tuple[str, str, str | None]] = []
    for name, analysis in ANALYSES.items():
        cases.append((name, "defaults", None))
        for option in analysis.options:
            for kind in ("first", "second"):
                cases.append((name, option.name, kind))
    return cases


def _check(result: Any, where: str) -> None:
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        tb = "".join(traceback.format_exception(result.exception))
        pytest.fail(f"{where}: a traceback reached the user:\n{tb}")
    out = result.output
    assert result.exit_code in (0, 1, 2), f"{where}: exit {result.exit_code}\n{out}"
    assert "Traceback" not in out, f"{where}:\n{out}"
    assert not NUMPY_REPR.search(out), f"{where}: a numpy repr in the output:\n{out}"
    if result.exit_code:
        lines = [ln for ln in out.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("Error:")]
        assert len(errors) == 1 and lines[-1] == errors[0], f"{where}: not one error line:\n{out}"


@pytest.mark.slow
@pytest.mark.parametrize("name, option_name, which", _cases())
def test_every_subcommand_and_option_type(
    store: dict[str, Path], tmp_path: Path, name: str, option_name: str, which: str | None
) -> None:
    analysis = ANALYSES[name]
    args = ["analyze", name, "--store", f"toy={store['store']}", "--out", str(tmp_path / "out"),
            "--quiet"]
    if which is None:
        args += ["--figure-format", "png"]  # the defaults run draws its figures once
        if "pairs" in analysis.parameters():
            args += [next(o.cli_flag for o in analysis.options if o.name == "pairs"), str(store["pairs"])]
        result = CliRunner().invoke(main, args)
        _check(result, f"emb analyze {name} (defaults)")
        return
    option = next(o for o in analysis.options if o.name == option_name)
    kind, extra = _values(option, store)[0 if which == "first" else 1]
    args += ["--no-plots", *extra]
    result = CliRunner().invoke(main, args)
    _check(result, f"emb analyze {name} {' '.join(extra)} ({kind})")
    if kind in ("bad-choice", "no-path"):
        assert result.exit_code == 2, result.output
    if kind == "bad-choice":
        assert "Did you mean" in result.output


def test_every_registered_analysis_is_covered() -> None:
    covered = {case[0] for case in _cases()}
    assert covered == set(ANALYSES)
    assert all(any(c[1] == o.name for c in _cases()) for a in ANALYSES.values() for o in a.options)
