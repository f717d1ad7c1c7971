"""The contract every registered analysis keeps (docs/architecture.md, "Tests").

Input untouched, nothing computed before the result is, the documented variables present, the
same seed giving the same result; plus the registry, run_analysis and the torch-free import.
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
from emb.analyses._select import provenance_attrs
from emb.errors import AnalysisError
from emb.results import prepare_out, write_results
from emb.schemas.datamodel import EMBEDDING, EMBEDDING_LONG_NAME
from tests.analyses._synthetic import (
    ceat_dataset,
    ibd_dataset,
    similarity_dataset,
    similarity_pairs,
    stereotype_dataset,
    vast_dataset,
    weat_dataset,
)
from tests.analyses._synthetic_intersectional import intersectional_dataset

#: The variables (and their dims) each analysis documents. A new analysis must be added here.
DOCUMENTED: dict[str, dict[str, tuple[str, ...]]] = {
    "weat": {
        "effect_size": ("test", "setting", "layer", "pooling"),
        "statistic": ("test", "setting", "layer", "pooling"),
        "p": ("test", "setting", "layer", "pooling"),
        "p_adjusted": ("test", "setting", "layer", "pooling"),
        "p_mc_se": ("test", "setting", "layer", "pooling"),
        "ci_low": ("test", "setting", "layer", "pooling"),
        "ci_high": ("test", "setting", "layer", "pooling"),
        "n_permutations": ("test",),
    },
    "sc-weat": {
        "effect_size": ("setting", "word", "layer", "pooling"),
        "residual": ("setting", "word", "layer", "pooling"),
        "rating": ("setting", "word"),
        "n_subtokens": ("setting", "word"),
    },
    "valnorm": {
        **{name: ("lexicon", "setting", "layer", "pooling")
           for name in ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p")},
        "sc_weat": ("lexicon", "setting", "word", "layer", "pooling"),
        "residual": ("lexicon", "setting", "word", "layer", "pooling"),
        "rating": ("lexicon", "setting", "word"),
        "n_subtokens": ("lexicon", "setting", "word"),
    },
    "vast": {
        **{
            name: ("rating", "lexicon", "setting", "pooling", "layer")
            for name in ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p")
        },
        **{
            f"tokenization_{name}": ("lexicon", "setting", "token_set", "subset", "pooling", "layer")
            for name in ("r", "p", "ci_low", "ci_high", "spearman_r", "spearman_p")
        },
        "tokenization_n": ("lexicon", "setting"),
        "tokenization_n_polar": ("lexicon", "setting"),
        **{
            f"nullified_{name}": ("rating", "lexicon", "setting", "pooling", "layer", "k")
            for name in ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p")
        },
        "best_layer": ("lexicon", "pooling"),
        "top_layer": (),
        "similarity_rho": ("dataset", "pooling", "layer", "k"),
        "similarity_p": ("dataset", "pooling", "layer", "k"),
        "similarity_ci_low": ("dataset", "pooling", "layer", "k"),
        "similarity_ci_high": ("dataset", "pooling", "layer", "k"),
        "similarity_n": ("dataset",),
        "similarity_n_missing": ("dataset",),
    },
    "stereotype": {
        **{name: ("comparison", "dimension", "layer", "pooling")
           for name in ("mean_a", "mean_b", "d", "t", "df", "p", "p_adjusted")},
        "coordinate": ("member", "dimension", "layer", "pooling"),
        "z": ("comparison", "member", "dimension", "layer", "pooling"),
        "accuracy": ("dimension", "layer", "pooling"),
        "accuracy_centred": ("dimension", "layer", "pooling"),
        "n_heldout": ("dimension",),
        "heldout_coordinate": ("heldout", "layer", "pooling"),
    },
    "ibd": {
        "score": ("setting", "attribute", "pair", "layer", "pooling"),
        "ibd_score": ("setting", "group", "attribute", "layer", "pooling"),
        "constituent_score": ("setting", "group", "attribute", "layer", "pooling"),
        "label": ("group", "detector", "attribute"),
        **{name: ("setting", "group", "detector", "layer", "pooling")
           for name in ("threshold", "tp", "fp", "tn", "fn", "tpr", "fpr", "accuracy",
                        "balanced_accuracy", "precision", "recall", "f1")},
        **{name: ("group", "detector")
           for name in ("chance_rate", "majority_baseline", "n_positive", "n_negative")},
        "detected": ("setting", "group", "detector", "attribute", "layer", "pooling"),
        **{f"roc_{name}": ("setting", "group", "detector", "candidate", "layer", "pooling")
           for name in ("threshold", "tp", "fp", "tpr", "fpr")},
        "n_names": ("name_set",),
        "n_names_total": ("name_set",),
        "n_attributes": (),
    },
    "ceat": {
        **{name: ("test", "layer", "pooling", "sample") for name in ("es", "v", "p_sample")},
        **{name: ("test", "layer", "pooling")
           for name in ("ces", "se", "ci_low", "ci_high", "z", "p", "tau2", "q", "i2",
                        "boot_ci_low", "boot_ci_high")},
        **{name: ("test", "layer", "pooling", "n_grid")
           for name in ("conv_p", "conv_ci_low", "conv_ci_high")},
        "conv_boot_ci_low": ("test", "n_boot_grid"),
        "n_contexts": ("stimulus",),
        "n_x": ("test",),
    },
    "similarity": {
        "rho": ("dataset", "pooling", "layer", "k"),
        "p": ("dataset", "pooling", "layer", "k"),
        "ci_low": ("dataset", "pooling", "layer", "k"),
        "ci_high": ("dataset", "pooling", "layer", "k"),
        "n": ("dataset",),
        "n_missing": ("dataset",),
    },
    "valence-subspace": {
        **{name: ("layer", "pooling") for name in (
            "svc_accuracy", "svc_converged", "offset", "n", "r_projection", "p_projection",
            "ci_low_projection", "ci_high_projection", "r_cosine", "p_cosine", "ci_low_cosine",
            "ci_high_cosine")},
        "valence_axis": ("layer", "pooling", "feature"),
        "direction": ("layer", "pooling", "feature"),
        "n_train": (),
    },
    "intersectional": {
        **{name: ("pair", "layer", "pooling") for name in (
            "effect_size", "p", "p_adjusted", "mean_a", "mean_b")},
        "n_a": ("pair",),
        "n_b": ("pair",),
        "n_permutations": (),
        "projection": ("phrase", "layer", "pooling"),
        "share": ("extreme", "value", "layer", "pooling"),
        "position_share": ("extreme", "value", "position", "layer", "pooling"),
        "n_extreme": (),
        "svc_accuracy": ("layer", "pooling"),
    },
}


def _lazy(ds: xr.Dataset, item_chunk: int = 64) -> xr.Dataset:
    """As a store hands it out: coordinates in memory, the embedding dask-backed (store chunks)."""
    return ds.assign(embedding=ds["embedding"].chunk({"item": item_chunk, "layer": 1, "pooling": 1}))


def _inputs(name: str) -> tuple[xr.Dataset, dict[str, Any]]:
    """A small lazy suite for the analysis and the options that make it exercise everything."""
    pairs = similarity_pairs(n_words=40, n_pairs=80)
    sim, pairs = similarity_dataset(pairs)
    if name == "weat":
        return _lazy(weat_dataset()), {"correction": "holm", "seed": 3, "exact_limit": 100,
                                       "n_permutations": 200, "n_bootstrap": 100}
    if name == "sc-weat":
        return _lazy(vast_dataset(n_words=40, settings=("bleached", "aligned"))), {"seed": 3}
    if name == "valnorm":
        return _lazy(vast_dataset(n_words=60)), {}
    if name == "vast":
        return _lazy(vast_dataset(n_words=60)), {
            "k_max": 3, "n_subsets": 3, "seed": 3, "similarity": _lazy(sim), "pairs": pairs,
        }
    if name == "similarity":
        return _lazy(sim), {"pairs": pairs, "k_max": 2}
    if name == "stereotype":
        return _lazy(stereotype_dataset(dtype="float32")[0]), {"correction": "holm", "test": "welch"}
    if name == "ibd":
        return _lazy(ibd_dataset()), {}
    if name == "valence-subspace":
        return _lazy(intersectional_dataset(n_layers=2), item_chunk=512), {"seed": 3}
    if name == "intersectional":
        return _lazy(intersectional_dataset(n_layers=2), item_chunk=512), {
            "seed": 3, "n_permutations": 300, "correction": "holm"}
    if name == "ceat":
        return _lazy(ceat_dataset(), item_chunk=50), {
            "n_samples": 60, "seed": 3, "n_bootstrap": 20, "bootstrap_samples": 10,
            "n_permutations": 20, "convergence": (10, 30), "bootstrap_convergence": (5, 10),
        }
    raise AssertionError(f"no test inputs for analysis {name!r}: add them to _inputs()")


class _TaskCounter(Callback):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def _pretask(self, key: Any, dsk: Any, state: Any) -> None:
        self.count += 1


@pytest.fixture(params=sorted(ANALYSES), scope="module")
def case(request: pytest.FixtureRequest) -> tuple[str, xr.Dataset, dict[str, Any]]:
    ds, options = _inputs(request.param)
    return request.param, ds, options


def test_registry_entries_are_complete() -> None:
    assert {"weat", "sc-weat", "valnorm", "vast"} <= set(ANALYSES)
    assert set(ANALYSES) == set(DOCUMENTED), "document the variables of every analysis"
    for name, analysis in ANALYSES.items():
        assert isinstance(analysis, Analysis) and analysis.name == name
        assert analysis.suite in ("vast", "weat", "similarity", "stereotype", "ibd", "intersectional",
                                  "ceat")
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
    for var, dims in DOCUMENTED[name].items():
        assert var in result, f"{name}: documented variable {var!r} missing"
        assert set(result[var].dims) == set(dims), f"{name}.{var}: dims {result[var].dims}"
    finite = [v for v in DOCUMENTED[name] if result[v].dtype.kind == "f"]
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
    dims = {d for var in DOCUMENTED[name] for d in DOCUMENTED[name][var]}
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
    api_only = {"similarity", "exact_limit", "word_labels", "attribute_labels", "layers",
                "subtract_mean", "setting", "convergence", "bootstrap_convergence"}
    declared = {o.name for o in analysis.options} | set(analysis.optional_suites)
    missing = set(params) - declared - shared - api_only
    assert not missing, f"{name}: keywords neither declared nor API-only: {sorted(missing)}"


def test_run_analysis_stacks_models_with_different_layers() -> None:
    small = vast_dataset(n_words=60, n_layers=3, seed=1)
    large = vast_dataset(n_words=60, n_layers=5, seed=2)
    options = {"tokenization": False, "nullification": False, "ratings": "valence",
               "settings": ["bleached"]}
    res = run_analysis("vast", {"small": _lazy(small), "large": _lazy(large)}, **options).compute()
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
