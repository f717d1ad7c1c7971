"""The contract every registered analysis keeps (docs/contracts.md).

Input untouched, nothing computed before the result is, the documented variables present, the
same seed giving the same result; plus the registry, run_analysis and the torch-free import.
Each record declares what this test reads of it (``outputs``, ``example``, ``api_only``): a new
family is checked here without an edit of this file.
"""

from __future__ import annotations

import copy
import inspect
import json
import subprocess
import sys
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from dask.callbacks import Callback

from emb.analyses import ANALYSES, Analysis, run_analysis
from emb.analyses._examples import lazy
from emb.analyses._select import provenance_attrs
from emb.errors import AnalysisError
from emb.results.directory import prepare_out, write_results
from emb.schemas.datamodel import EMBEDDING, EMBEDDING_LONG_NAME
from tests.analyses._synthetic import vast_dataset, weat_dataset


class _TaskCounter(Callback):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def _pretask(self, key: Any, dsk: Any, state: Any) -> None:
        self.count += 1


@pytest.fixture(params=sorted(ANALYSES), scope="module")
def case(request: pytest.FixtureRequest) -> tuple[str, xr.Dataset, dict[str, Any]]:
    """The record's example: a small lazy suite and the options that make it exercise everything."""
    ds, options = ANALYSES[request.param].example()
    return request.param, ds, options


def test_registry_entries_are_complete() -> None:
    assert {"weat", "sc-weat", "valnorm", "vast"} <= set(ANALYSES)
    for name, analysis in ANALYSES.items():
        assert isinstance(analysis, Analysis) and analysis.name == name
        assert analysis.outputs, f"{name}: document the result's variables (Analysis.outputs)"
        assert callable(analysis.example), f"{name}: give an example input (Analysis.example)"
        assert isinstance(analysis.suite, str) and analysis.suite
        params = inspect.signature(analysis.function).parameters
        first, *rest = params.values()
        assert first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in rest), name
        assert analysis.to_dict()["function"].startswith("emb.analyses.")


def test_input_unchanged_nothing_computed_and_documented_variables(
    case: tuple[str, xr.Dataset, dict[str, Any]],
) -> None:
    name, ds, options = case
    before = copy.deepcopy(ds)
    options_before = copy.deepcopy({k: v for k, v in options.items() if not isinstance(v, xr.Dataset)})
    counter = _TaskCounter()
    with counter:
        lazy = ANALYSES[name].function(ds, **options)
    assert counter.count == 0, f"{name} computed {counter.count} dask tasks before .compute()"
    dask_backed = [v for v in lazy.data_vars if lazy[v].chunks is not None]
    assert dask_backed, f"{name} returned no lazy variable on a lazy input"
    with counter:
        result = lazy.compute()
    assert counter.count > 0
    xr.testing.assert_identical(ds, before)
    for key, value in options_before.items():
        if isinstance(value, pd.DataFrame):
            pd.testing.assert_frame_equal(options[key], value)
    outputs = ANALYSES[name].outputs
    for var, dims in outputs.items():
        assert var in result, f"{name}: documented variable {var!r} missing"
        assert set(result[var].dims) == set(dims), f"{name}.{var}: dims {result[var].dims}"
    finite = [v for v in outputs if result[v].dtype.kind == "f"]
    assert all(np.isfinite(result[v].values).any() for v in finite), name
    assert result.attrs, f"{name}: no attributes (parameters, provenance)"
    for key, value in result.attrs.items():
        assert isinstance(value, str | int | float), f"{name}: attribute {key!r} is {type(value)}"


def test_same_seed_same_result(case: tuple[str, xr.Dataset, dict[str, Any]]) -> None:
    name, ds, options = case
    a = ANALYSES[name].function(ds, **options).compute()
    b = ANALYSES[name].function(ds, **options).compute()
    xr.testing.assert_identical(a, b)
    if "seed" in options:
        assert a.attrs.get("seed") == options["seed"]


def test_tables_figures_and_summary(case: tuple[str, xr.Dataset, dict[str, Any]]) -> None:
    name, ds, options = case
    analysis = ANALYSES[name]
    result = analysis.function(ds, **options).compute()
    tables = analysis.tables(result)
    assert next(iter(tables)) == analysis.stem, "the first table is the analysis' main table"
    table = tables[analysis.stem]
    assert isinstance(table, pd.DataFrame) and len(table) > 0
    dims = {d for var_dims in analysis.outputs.values() for d in var_dims}
    assert {"pooling", "layer"} & dims <= set(table.columns)
    figures = analysis.figures(result)
    assert figures, f"{name}: no figures"
    for fig in figures.values():
        assert fig.axes
    summary = analysis.summary(result, tables)
    assert summary.title and summary.headline, f"{name}: the summary has no declared cell"
    assert "declared cell" in summary.headline[0]
    json.dumps(summary.to_dict())  # JSON-able for --json
    assert summary.lines()[0] == summary.title


def test_result_carries_the_store_provenance(case: tuple[str, xr.Dataset, dict[str, Any]]) -> None:
    """The model, suite and extraction of the store, for the sidecar and the report."""
    name, ds, options = case
    expected = provenance_attrs(ds)
    assert {"model", "suite", "extraction"} <= set(expected), "the test store lacks provenance"
    attrs = ANALYSES[name].function(ds, **options).attrs
    assert {k: attrs.get(k) for k in expected} == expected, f"{name}: store provenance missing"


def _as_stored(value: Any) -> Any:
    """A suite group as a store hands it out: the embedding with the store's description."""
    if not isinstance(value, xr.Dataset):
        return value
    return value.assign({EMBEDDING: value[EMBEDDING].assign_attrs(long_name=EMBEDDING_LONG_NAME)})


def test_descriptions_are_the_analysis_own(case: tuple[str, xr.Dataset, dict[str, Any]],
                                           tmp_path: Any) -> None:
    """No result variable, netCDF attribute or table column is described as the store's
    embedding: a count, rate or p-value computed from it must not inherit its ``long_name``."""
    name, ds, options = case
    analysis = ANALYSES[name]
    stored = _as_stored(ds)
    result = run_analysis(analysis, {"m": stored},
                          **{k: _as_stored(v) for k, v in options.items()}).compute()
    assert stored[EMBEDDING].attrs["long_name"] == EMBEDDING_LONG_NAME  # the input untouched
    inherited = [v for v in result.variables if result[v].attrs.get("long_name") == EMBEDDING_LONG_NAME]
    assert not inherited, f"{name}: {inherited} described as the store's embedding"
    direct = analysis.function(stored, **{k: _as_stored(v) for k, v in options.items()})
    inherited = [v for v in direct.variables if direct[v].attrs.get("long_name") == EMBEDDING_LONG_NAME]
    assert not inherited, f"{name}, called directly: {inherited} described as the store's embedding"
    assert stored[EMBEDDING].attrs["long_name"] == EMBEDDING_LONG_NAME
    plan = prepare_out(tmp_path / "out", analysis)
    write_results(plan, analysis, result, stores={"m": "m.zarr"}, options={}, suite=analysis.suite,
                  figures=False)
    meta = json.loads((plan.directory / f"{analysis.stem}.json").read_text(encoding="utf-8"))
    wrong = [f"{table}.{column}" for table, info in meta["tables"].items()
             for column, text in info["columns"].items() if text == EMBEDDING_LONG_NAME]
    assert not wrong, f"{name}: columns described as the store's embedding: {wrong}"
    described = [text for info in meta["tables"].values() for text in info["columns"].values() if text]
    assert described, f"{name}: no column described at all"


@pytest.mark.parametrize("name", sorted(ANALYSES))
def test_declared_options_are_keywords_with_defaults(name: str) -> None:
    """Every option the CLI shows is a keyword-only parameter with a default in the signature,
    and every keyword-only parameter is either declared or consciously left to the API."""
    analysis = ANALYSES[name]
    params = analysis.parameters()
    for option in analysis.options:
        assert params[option.name].default is not inspect.Parameter.empty, option.name
    shared = {"seed", "method"}  # the CLI's --seed and --reference
    declared = {o.name for o in analysis.options} | set(analysis.optional_suites)
    missing = set(params) - declared - shared - set(analysis.api_only)
    assert not missing, f"{name}: keywords neither declared nor API-only: {sorted(missing)}"


def test_run_analysis_stacks_models_with_different_layers() -> None:
    small = vast_dataset(n_words=60, n_layers=3, seed=1)
    large = vast_dataset(n_words=60, n_layers=5, seed=2)
    options = {"tokenization": False, "nullification": False, "ratings": "valence",
               "settings": ["bleached"]}
    res = run_analysis("vast", {"small": lazy(small), "large": lazy(large)}, **options).compute()
    assert list(res.model.values) == ["small", "large"]
    assert list(res.layer.values) == [0, 1, 2, 3, 4]
    r = res.r.sel(rating="valence", lexicon="toy", setting="bleached", pooling="last")
    assert np.isnan(r.sel(model="small", layer=[3, 4])).all()
    alone = ANALYSES["vast"].function(large, **options).compute()
    np.testing.assert_allclose(
        r.sel(model="large"),
        alone.r.sel(rating="valence", lexicon="toy", setting="bleached", pooling="last"),
    )
    assert "models" in res.attrs and '"small"' in res.attrs["models"]
    table = ANALYSES["vast"].tables(res)["vast"]
    assert set(table.model) == {"small", "large"}
    assert len(table) == 4 * (3 + 5)  # poolings x layers of each model, NaN layers dropped


def test_run_analysis_rejects_unknown_names_and_options() -> None:
    with pytest.raises(AnalysisError, match="unknown analysis"):
        run_analysis("glove", {"m": vast_dataset(n_words=60)})
    with pytest.raises(AnalysisError, match="k_max"):
        run_analysis("weat", {"m": weat_dataset()}, k_max=3)
    with pytest.raises(AnalysisError, match="no datasets"):
        run_analysis("weat", {})


def test_importing_analyses_does_not_import_torch() -> None:
    code = "import emb.analyses, sys; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
