"""A new analysis family is its own files plus one registry line: a tiny family defined here (its
function, its record with a shared option) becomes ``emb analyze toy-norm`` with generated flags
and ``emb.analyze("toy-norm", ...)``, with no edit of the CLI, the front door or the shared tests.

What a real family touches: ``src/emb/analyses/<family>/`` (or one ``<family>.py``: the function,
its tables, figures and summary, and its ``ANALYSIS`` record declaring its options, outputs and
example), one line in ``src/emb/analyses/registry.py``, its suite generator in
``src/emb/stimuli/suites/<family>.py`` with one line in ``suites/_registry.py`` when it needs its
own stimuli, and its tests in ``tests/analyses/<family>/``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner

import emb
from emb.analyses import ANALYSES, Analysis, Summary
from emb.cli.main import main
from emb.options import DDOF
from tests.analyses._synthetic import weat_dataset, write_store


def toy_norm(ds: xr.Dataset, *, ddof: int = 1) -> xr.Dataset:
    """The spread of the vectors' norms per layer and pooling."""
    norms = (ds.embedding.astype("float64") ** 2).sum("feature") ** 0.5
    return xr.Dataset({"spread": norms.std("item", ddof=ddof)}, attrs={"ddof": ddof})


def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    return {"toy_norm": result.spread.to_dataframe().reset_index()}


def _summary(result: xr.Dataset, tables: dict[str, pd.DataFrame]) -> Summary:
    return Summary(title=f"toy-norm (ddof {result.attrs['ddof']})", table=tables["toy_norm"])


RECORD = Analysis(name="toy-norm", function=toy_norm, suite="weat", description="spread of norms",
                  options=(DDOF.but(help="delta degrees of freedom of the spread"),),
                  tables=_tables, figures=lambda result: {}, summary=_summary,
                  outputs={"spread": ("layer", "pooling")})


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Analysis:
    monkeypatch.setitem(ANALYSES, RECORD.name, RECORD)  # the one registry line
    return RECORD


def test_a_new_family_is_a_subcommand_and_a_front_door_name(registered: Analysis,
                                                            tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "toy.zarr", {"weat": weat_dataset(n_layers=2)})
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["analyze", "toy-norm", "--store", str(store), "--ddof", "0",
                                       "--out", str(out), "-q", "--no-plots"])
    assert result.exit_code == 0, result.output
    assert "toy-norm (ddof 0)" in result.output and (out / "toy_norm.csv").is_file()
    run = emb.analyze("toy-norm", str(store), ddof=0)
    pd.testing.assert_frame_equal(run.tables["toy_norm"], pd.read_csv(out / "toy_norm.csv"),
                                  check_dtype=False)
    # its shared option is refused with the one message, from the CLI and from Python
    refused = CliRunner().invoke(main, ["analyze", "toy-norm", "--store", str(store), "--ddof", "-1"])
    assert refused.exit_code == 2
    assert "--ddof (ddof= in Python) of analysis 'toy-norm' must be an integer from 0" in refused.output
