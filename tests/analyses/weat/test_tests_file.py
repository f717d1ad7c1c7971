"""WEAT tests from a YAML/JSON file on any suite: X/Y/A/B by word lists or by labels, validated
with messages that name the file, the place and the closest key or value."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner

from emb.analyses import weat
from emb.cli.main import main
from emb.errors import AnalysisError, MissingStimuliError
from tests.analyses._synthetic import PLEASANT, UNPLEASANT, weat_dataset, write_store

FLOWERS = [f"flower{i}" for i in range(8)]
INSECTS = [f"insect{i}" for i in range(8)]
YAML = f"""
description: flowers and insects, defined by hand
tests:
  flowers-insects:
    X: {{name: Flowers, labels: {{stimulus_set: flowers}}}}
    Y: {{name: Insects, words: [{", ".join(INSECTS)}]}}
    A: {{name: Pleasant, labels: {{stimulus_set: [pleasant]}}}}
    B: [{", ".join(UNPLEASANT[:8])}]
"""


def _occupations() -> xr.Dataset:
    """A suite that is not the built-in 'weat' one: WEAT1's items, no test/role/group labels."""
    ds = weat_dataset(n_layers=3)
    one = ds.isel(item=np.flatnonzero(ds["test"].values == "WEAT1"))
    one = one.drop_vars(["test", "role", "group"])
    one.attrs = {**ds.attrs, "suite": {"name": "occupations", "generator": None,
                                       "content_hash": "hash-occ", "n_items": one.sizes["item"]}}
    return one


@pytest.fixture
def test_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_tests.yaml"
    path.write_text(YAML, encoding="utf-8")
    return path


def test_a_test_file_reproduces_the_builtin_test_on_another_suite(test_file: Path) -> None:
    builtin = weat(weat_dataset(n_layers=3), tests="WEAT1", n_bootstrap=100).compute()
    mine = weat(_occupations(), tests=test_file, n_bootstrap=100).compute()
    assert list(mine.test.values) == ["flowers-insects"]
    for var in ("effect_size", "p", "statistic", "ci_low", "ci_high"):
        np.testing.assert_array_equal(mine[var].values, builtin[var].values)
    assert [str(mine[f"{r}_group"].values[0]) for r in "xyab"] == ["Flowers", "Insects", "Pleasant", "B"]
    by_lists = weat(_occupations(), x=FLOWERS, y=INSECTS, a=PLEASANT[:8], b=UNPLEASANT[:8],
                    n_bootstrap=0).compute()
    np.testing.assert_array_equal(mine.effect_size.values, by_lists.effect_size.values)
    as_json = test_file.with_suffix(".json")
    import yaml

    as_json.write_text(json.dumps(yaml.safe_load(YAML)), encoding="utf-8")
    again = weat(_occupations(), tests=[str(as_json)], n_bootstrap=100).compute()
    np.testing.assert_array_equal(again.effect_size.values, mine.effect_size.values)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("words: [insect0", "wrds: [insect0"), "unknown key 'wrds'.*Did you mean 'words'"),
    (lambda t: t.replace("    B: [", "    Z: ["), "unknown role 'Z'"),
    (lambda t: t.replace("stimulus_set: flowers", "stimulus_sett: flowers"),
     "no label 'stimulus_sett'.*Did you mean 'stimulus_set'"),
    (lambda t: t.replace("stimulus_set: flowers", "stimulus_set: flower"),
     "no item has stimulus_set = 'flower'.*Did you mean 'flowers'"),
    (lambda t: t.replace("tests:", "test:"), "must be a mapping with a 'tests' key.*Did you mean 'tests'"),
    (lambda t: t.replace("words: [insect0, insect1, insect2, insect3, insect4, insect5, insect6, insect7]",
                         "words: []"), "words is empty"),
    (lambda t: t + "  : [", "not valid YAML"),
])
def test_malformed_files_are_clear_errors(tmp_path: Path, edit, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(edit(YAML), encoding="utf-8")
    with pytest.raises(AnalysisError, match=message) as err:
        weat(_occupations(), tests=path)
    assert "np.str_" not in str(err.value)


def test_a_missing_word_names_the_suite_and_a_suite_file_not_a_builtin(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(YAML.replace("insect7]", "insect7, mosquito]"), encoding="utf-8")
    ds = _occupations()
    ds.encoding["source"] = "occ.zarr"
    with pytest.raises(MissingStimuliError) as err:
        weat(ds, tests=path)
    msg = str(err.value)
    assert "'mosquito'" in msg and "suite 'occupations' in store occ.zarr" in msg
    assert "suite file that defined 'occupations'" in msg and "--suite weat" not in msg


def test_cli_any_suite_any_test(tmp_path: Path, test_file: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "occ.zarr", {"occupations": _occupations()})
    result = CliRunner().invoke(main, ["analyze", "weat", "--store", f"toy={store}", "--suite",
                                       "occupations", "--test", str(test_file), "--out",
                                       str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "out" / "weat.csv")
    assert set(table.test) == {"flowers-insects"} and set(table.x_group) == {"Flowers"}
    assert "Flowers vs Insects / Pleasant vs B" in result.output
    meta = json.loads((tmp_path / "out" / "weat.json").read_text())
    assert meta["suite"] == "occupations"
