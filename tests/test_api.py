"""The front door (:mod:`emb.api`): ``emb.extract`` and ``emb.analyze`` give what the CLI gives —
the same store, the same files, the same numbers — and ``import emb`` stays light."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner

import emb
from emb.cli.main import main
from emb.errors import AnalysisError, OptionError
from tests.analyses._synthetic import weat_dataset, write_store

W2V = "static/GoogleNews-vectors-negative300-bolukbasi.bin"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return write_store(tmp_path_factory.mktemp("api") / "toy.zarr", {"weat": weat_dataset(n_layers=2)})


def test_import_emb_is_light_and_names_the_front_door() -> None:
    code = ("import sys, types, emb; "
            "assert not any(m in sys.modules for m in ('zarr', 'xarray', 'torch')); "
            "assert isinstance(emb.extract, types.FunctionType) and callable(emb.analyze); "
            "import emb.extraction.pipeline; assert 'torch' not in sys.modules; "
            "assert emb.extract is emb.api.extract, 'a submodule import must not replace it'")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert emb.analyze is emb.api.analyze and emb.extract is emb.api.extract
    assert "extract" in emb.__all__


def test_analyze_writes_the_files_and_numbers_of_the_cli(store: Path, tmp_path: Path) -> None:
    args = ["--n-permutations", "200", "--seed", "3", "--correction", "holm"]
    cli_out, api_out = tmp_path / "cli", tmp_path / "api"
    result = CliRunner().invoke(main, ["analyze", "weat", "--store", f"toy={store}", "--out",
                                       str(cli_out), "--no-plots", "-q", *args])
    assert result.exit_code == 0, result.output
    run = emb.analyze("weat", {"toy": store}, out=api_out, figures=False, n_permutations=200,
                      seed=3, correction="holm")
    assert run.directory == api_out
    assert sorted(p.name for p in run.files) == sorted(p.name for p in cli_out.iterdir())
    for path in cli_out.glob("*.csv"):
        assert path.read_bytes() == (api_out / path.name).read_bytes(), path.name
    cli_nc = xr.open_dataset(cli_out / "weat.nc")
    api_nc = xr.open_dataset(api_out / "weat.nc")
    xr.testing.assert_identical(cli_nc.drop_attrs(), api_nc.drop_attrs())
    cli_nc.close(), api_nc.close()
    # the summary the CLI printed is the one returned
    assert all(line in result.output for line in run.summary.lines() if line.strip())


def test_analyze_without_out_writes_nothing_and_returns_the_tables(store: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = emb.analyze("weat", str(store), n_permutations=200, seed=3)
    assert run.directory is None and not run.files and not list(tmp_path.iterdir())
    assert isinstance(run.dataset, xr.Dataset) and "effect_size" in run.dataset
    main_table = next(iter(run.tables.values()))
    assert isinstance(main_table, pd.DataFrame) and len(main_table)
    assert run.summary.title
    written = emb.analyze("weat", str(store), out=tmp_path / "o", figures=False,
                          n_permutations=200, seed=3)
    pd.testing.assert_frame_equal(main_table.reset_index(drop=True),
                                  pd.read_csv(tmp_path / "o" / "weat.csv"), check_dtype=False)
    assert written.summary.lines() == run.summary.lines()


def test_analyze_refuses_what_the_cli_refuses(store: Path) -> None:
    with pytest.raises(AnalysisError, match="no_such"):
        emb.analyze("no_such", str(store))
    with pytest.raises(AnalysisError, match=r"--alternative \(alternative= in Python\) of analysis "
                                            r"'weat' must be one of greater, less, two-sided; got 'up'"):
        emb.analyze("weat", str(store), alternative="up")
    with pytest.raises(OptionError, match="given to two stores"):
        emb.analyze("weat", [f"a={store}", f"a={store}"])


@pytest.mark.slow
def test_extract_writes_the_store_of_the_cli(data_dir: Path, tmp_path: Path) -> None:
    model = data_dir / W2V
    if not model.is_file():
        pytest.skip(f"{W2V} not in the test data")
    done = CliRunner().invoke(main, ["extract", "--model", str(model), "--suite", "weat", "--test",
                                     "WEAT5", "--store", str(tmp_path / "cli.zarr"), "-q"])
    assert done.exit_code == 0, done.output
    reports = emb.extract(model, [("weat", {"select": ["WEAT5"]})], tmp_path / "api.zarr",
                          progress=False)
    assert [r.name for r in reports] == ["weat"]
    cli = emb.open_store(str(tmp_path / "cli.zarr")).dataset("weat")
    api = emb.open_store(str(tmp_path / "api.zarr")).dataset("weat")
    np.testing.assert_array_equal(cli.embedding.values, api.embedding.values)
    assert list(cli.word.values) == list(api.word.values)
    # the shared-options spelling, as the CLI's flags
    emb.extract(model, "weat", tmp_path / "shared.zarr", select=["WEAT5"], progress=False)
    shared = emb.open_store(str(tmp_path / "shared.zarr")).dataset("weat")
    np.testing.assert_array_equal(cli.embedding.values, shared.embedding.values)


def test_extract_refuses_an_option_no_requested_suite_takes(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="--lexicon belongs to suite"):
        emb.extract("x.txt", "weat", tmp_path / "s.zarr", lexicon=["warriner"])


def test_the_command_line_is_spelled_by_the_declarations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``emb analyze`` command a Python run records: each value by its option's declaration
    (:meth:`emb.options.Option.argv`), what equals a default left out."""
    from emb.analyses import ANALYSES
    from emb.api import command_line

    monkeypatch.setattr(sys, "argv", ["python"])
    weat = ANALYSES["weat"]
    run = {"suite": None, "out": None, "table_format": "auto", "figure_formats": (),
           "relative_depth": False, "figures": True, "overwrite": False}
    assert command_line(weat, ["s.zarr"], {}, **run) == ["emb", "analyze", "weat", "--store", "s.zarr"]
    given = command_line(
        weat, ["a=x.zarr", "b=y.zarr"],
        {"alternative": "less", "seed": 3, "method": "reference", "tests": ["WEAT1", "WEAT7"]},
        suite={"a": "weat", "b": "weat_eot"}, out="o", table_format=["csv", "latex"],
        figure_formats=["pdf"], relative_depth=True, figures=False, overwrite=True,
        standardize="center")
    assert given == ["emb", "analyze", "weat", "--store", "a=x.zarr", "--store", "b=y.zarr",
                     "--alternative", "less", "--seed", "3", "--reference", "--test", "WEAT1",
                     "--test", "WEAT7", "--suite", "a=weat", "--suite", "b=weat_eot", "--out", "o",
                     "--format", "csv", "--format", "latex", "--figure-format", "pdf",
                     "--standardize", "center", "--relative-depth", "--no-plots", "--overwrite"]
    # the command parses: every flag is one of emb analyze weat's
    flags = {f for p in main.commands["analyze"].get_command(None, "weat").params
             for f in getattr(p, "opts", ())}
    assert {a for a in given if a.startswith("--")} <= flags
