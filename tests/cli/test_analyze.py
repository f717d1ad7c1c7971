"""``emb analyze`` end to end on small synthetic stores written with the store's own writer."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner

from emb.analyses import ANALYSES
from emb.analyses.vast import vast
from emb.cli.analyze import analyze
from tests.analyses._synthetic import (
    similarity_dataset,
    similarity_pairs,
    vast_dataset,
    weat_dataset,
    write_store,
)

N_WORDS = 60


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("stores")
    sim, pairs = similarity_dataset(similarity_pairs(n_words=40, n_pairs=80))
    pair_dir = root / "pairs"
    pair_dir.mkdir()
    for name, group in pairs.groupby("dataset"):
        group[["word1", "word2", "score"]].to_csv(pair_dir / f"{name}.csv", index=False)
    ds = vast_dataset(n_words=N_WORDS)
    words = np.asarray(ds["word"].values).astype(str)
    setting = np.asarray(ds["setting"].values).astype(str)
    gappy = ds.isel(item=np.flatnonzero(~((words == "agony") & (setting == "random"))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on fixed-width string dtypes
        return {
            "a": write_store(root / "a.zarr", {"vast": ds, "weat": weat_dataset(), "similarity": sim},
                             model_id="toy-a"),
            "b": write_store(root / "b.zarr", {"vast": vast_dataset(n_words=N_WORDS, n_layers=6, seed=1)},
                             model_id="toy-b"),
            "gappy": write_store(root / "gappy.zarr", {"vast": gappy}, model_id="toy-gappy"),
            "pairs": pair_dir,
        }


def _run(*args: str) -> tuple[int, str]:
    args = tuple(map(str, args))
    quiet = ["--quiet"] if args and not args[0].startswith("-") else []
    result = CliRunner().invoke(analyze, [*args, *quiet])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_vast_writes_csv_netcdf_json_and_figures(stores: dict[str, Path], tmp_path: Path) -> None:
    code, out = _run("vast", "--store", stores["a"], "--out", tmp_path, "--k-max", "2",
                     "--n-subsets", "2", "--pairs", stores["pairs"], "--seed", "7")
    assert code == 0, out
    table = pd.read_csv(tmp_path / "vast.csv", keep_default_na=False, na_values=[""])
    assert {"lexicon", "setting", "pooling", "layer", "k", "n", "r", "p"} <= set(table.columns)
    settings = table[table.experiment == "settings"]
    # 3 ratings x 1 lexicon x 4 settings x 4 poolings x 4 layers
    assert len(settings) == 3 * 4 * 4 * 4
    assert settings.k.isna().all() and (settings.statistic == "pearson").all()
    null = table[table.experiment == "nullification"]
    assert set(null.k) == {0, 1, 2} and set(null.layer) <= {0, 1, 2, 3}
    sim = table[table.experiment == "similarity"]
    assert set(sim.dataset) == {"ws353", "simlex999"} and (sim.statistic == "spearman").all()
    assert set(table.experiment) == {"settings", "tokenization", "nullification", "similarity"}

    nc = xr.open_dataset(tmp_path / "vast.nc")
    row = settings[(settings.setting == "bleached") & (settings.pooling == "last")
                   & (settings.layer == 2) & (settings.rating == "valence")].iloc[0]
    assert float(nc.r.sel(model="a", rating="valence", lexicon="toy", setting="bleached",
                          pooling="last", layer=2)) == pytest.approx(row.r)
    assert json.loads(nc.attrs["parameters"])["seed"] == 7
    assert list(json.loads(nc.attrs["models"])) == ["a"]  # labelled by store name
    assert json.loads(nc.attrs["model"])["model_id"] == "toy-a"  # the store's provenance
    nc.close()

    # the same numbers as the library on the store
    import emb

    lib = vast(emb.open_store(stores["a"]).dataset("vast"), tokenization=False,
               nullification=False, ratings="valence").compute()
    assert row.r == pytest.approx(float(lib.r.sel(rating="valence", lexicon="toy",
                                                   setting="bleached", pooling="last", layer=2)))

    meta = json.loads((tmp_path / "vast.json").read_text())
    assert meta["options"]["seed"] == 7 and meta["stores"]["a"] == str(stores["a"])
    pngs = sorted(tmp_path.glob("vast_*.png"))
    assert {p.name for p in pngs} >= {"vast_settings_toy.png", "vast_tokenization_toy.png",
                                      "vast_nullification_toy.png", "vast_similarity.png"}
    assert all(p.stat().st_size > 5_000 for p in pngs)
    assert "declared cell: top layer, setting 'bleached'" in out and str(tmp_path) in out
    assert "vast.csv" in out


def test_weat_csv(stores: dict[str, Path], tmp_path: Path) -> None:
    code, out = _run("weat", "--store", stores["a"], "--out", tmp_path, "--correction", "holm",
                     "--no-plots")
    assert code == 0, out
    table = pd.read_csv(tmp_path / "weat.csv")
    assert {"test", "setting", "pooling", "layer", "effect_size", "p", "n_permutations"} <= set(table.columns)
    assert len(table) == 2 * 2 * 2 * 4  # tests x settings x poolings x layers
    assert (table.n_permutations == 0).all()  # 8 + 8 words: exact
    assert table.p.between(0, 1).all()
    assert not list(tmp_path.glob("*.png"))
    assert "declared cell" in out and "Largest |d|" in out and "exploratory" in out


def test_weat_empty_test_dropped_run_goes_on(tmp_path: Path) -> None:
    """A test whose A words the store lacks (a word2vec vocabulary) is dropped with a warning
    line and a summary line; the other test is computed, its rows carry n and small_n."""
    ds = weat_dataset()
    gone = (np.asarray(ds["test"].values).astype(str) == "WEAT2") & (
        np.asarray(ds["role"].values).astype(str) == "A")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "w2v.zarr", {"weat": ds.isel(item=np.flatnonzero(~gone))})
    result = CliRunner().invoke(analyze, ["weat", "--store", str(store), "--out",
                                          str(tmp_path / "out"), "--no-plots",
                                          "--n-bootstrap", "0", "--min-words", "9"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "warning: WEAT tests dropped, the others go on: 'WEAT2' (no A words" in out
    assert "Dropped (a word set is empty, or too small to compute, in this store): WEAT2: no A words" in out
    assert "small word sets (fewer than 9 words" in out and "WEAT1 (X 8, Y 8, A 8, B 8)" in out
    assert "np.str_(" not in out and "np.int64(" not in out
    table = pd.read_csv(tmp_path / "out" / "weat.csv")
    assert set(table.test) == {"WEAT1"}
    assert {"n_x", "n_y", "n_a", "n_b", "small_n"} <= set(table.columns) and table.small_n.all()
    every = (np.asarray(ds["role"].values).astype(str) == "B")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "none.zarr", {"weat": ds.isel(item=np.flatnonzero(~every))})
    result = CliRunner().invoke(analyze, ["weat", "--store", str(store), "--out",
                                          str(tmp_path / "out2"), "--no-plots"])
    assert result.exit_code != 0 and "every WEAT test has an empty" in result.output
    assert "Traceback" not in result.output and "np.str_(" not in result.output


def test_two_stores_stack_along_model(stores: dict[str, Path], tmp_path: Path) -> None:
    code, out = _run("valnorm", "--store", stores["a"], "--store", stores["b"], "--out", tmp_path,
                     "--setting", "bleached", "--no-plots")
    assert code == 0, out
    table = pd.read_csv(tmp_path / "valnorm.csv")
    assert table.groupby("model").layer.max().to_dict() == {"a": 3, "b": 5}
    assert len(table) == 4 * 4 + 4 * 6  # poolings x layers per model
    nc = xr.open_dataset(tmp_path / "valnorm.nc")
    assert list(nc.model.values) == ["a", "b"]
    nc.close()


def test_a_contextual_and_a_static_store_in_one_run(tmp_path: Path) -> None:
    """``emb analyze weat --store ctx=… --store w2v=…`` with word2vec-like static vectors beside
    a contextual model (issue 24): the headline reports each at its own pooling, and each
    pooling's figures are written (the static store's heat maps were empty panels beside the
    contextual store's, and its rows missing from the summary)."""
    from tests.analyses.test_figure_canvas import static_store

    ds = weat_dataset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on fixed-width string dtypes
        ctx = write_store(tmp_path / "ctx.zarr", {"weat": ds}, model_id="toy-ctx")
        w2v = write_store(tmp_path / "w2v.zarr", {"weat": static_store(ds)}, model_id="toy-w2v")
    out = tmp_path / "out"
    code, text = _run("weat", "--store", f"ctx={ctx}", "--store", f"w2v={w2v}", "--out", out,
                      "--n-permutations", "100", "--n-bootstrap", "0")
    assert code == 0, text
    assert "pooling 'last' (w2v: 'static', the only one it has)" in text
    table = pd.read_csv(out / "weat.csv")
    assert set(table.dropna(subset=["effect_size"]).groupby("model").pooling.unique().map(
        tuple).to_dict().items()) == {("ctx", ("last", "mean")), ("w2v", ("static",))}
    assert {"weat_heatmap_last.png", "weat_heatmap_static.png"} <= {p.name for p in out.iterdir()}


def test_list() -> None:
    code, out = _run("--list")
    assert code == 0
    for name, analysis in ANALYSES.items():
        assert name in out and analysis.suite in out


def test_unknown_analysis(stores: dict[str, Path], tmp_path: Path) -> None:
    code, out = _run("glove", "--store", stores["a"], "--out", tmp_path)
    assert code == 2 and "unknown analysis 'glove'" in out and "vast" in out


def test_missing_store(tmp_path: Path) -> None:
    code, out = _run("vast", "--store", tmp_path / "nowhere.zarr", "--out", tmp_path / "out")
    assert code == 1 and "nowhere.zarr" in out and "StoreError" in out


def test_missing_suite(stores: dict[str, Path], tmp_path: Path) -> None:
    code, out = _run("weat", "--store", stores["b"], "--out", tmp_path)
    assert code == 1 and "suite 'weat'" in out and "emb extract" in out


def test_missing_stimuli_message(stores: dict[str, Path], tmp_path: Path) -> None:
    # per setting, the random setting lacks a polar word: the error names it
    code, out = _run("vast", "--store", stores["gappy"], "--out", tmp_path, "--no-plots",
                     "--word-set", "per-setting")
    assert code == 1
    assert "MissingStimuliError" in out and "agony" in out and "random" in out
    # on the common words (the default) 'agony' is left out of every setting, and the summary says so
    code, out = _run("vast", "--store", stores["gappy"], "--out", tmp_path / "common",
                     "--no-plots", "--no-nullification", "--no-tokenization")
    assert code == 0, out
    assert "24 unpleasant polar words present in every setting (1 dropped: 1 absent from " \
           "'random', e.g. agony)" in out and "np.str_" not in out
    with xr.open_dataset(tmp_path / "common" / "vast.nc") as nc:
        assert json.loads(nc.attrs["parameters"])["word_set"] == "common"
    code, out = _run("vast", "--store", stores["gappy"], "--out", tmp_path, "--no-plots",
                     "--setting", "bleached", "--no-nullification", "--no-tokenization")
    assert code == 0, out


def test_option_that_does_not_apply(stores: dict[str, Path], tmp_path: Path) -> None:
    code, out = _run("weat", "--store", stores["a"], "--out", tmp_path, "--k-max", "3")
    assert code == 2 and "--k-max" in out and "weat" in out


def test_registered_in_the_main_group(stores: dict[str, Path], tmp_path: Path) -> None:
    from emb.cli.main import main

    result = CliRunner().invoke(main, ["analyze", "--list"])
    assert result.exit_code == 0 and "vast" in result.output


def test_distributed_scheduler(stores: dict[str, Path], tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        code, out = _run("vast", "--store", stores["a"], "--out", tmp_path, "--no-plots",
                         "--k-max", "2", "--n-subsets", "2", "--scheduler", cluster.scheduler_address)
    assert code == 0, out
    table = pd.read_csv(tmp_path / "vast.csv")
    local_dir = tmp_path / "local"
    code, out = _run("vast", "--store", stores["a"], "--out", local_dir, "--no-plots",
                     "--k-max", "2", "--n-subsets", "2")
    assert code == 0, out
    pd.testing.assert_frame_equal(table, pd.read_csv(local_dir / "vast.csv"))


def test_similarity_with_one_setting(stores: dict[str, Path], tmp_path: Path) -> None:
    code, out = _run("similarity", "--store", stores["a"], "--out", tmp_path, "--no-plots",
                     "--pairs", stores["pairs"], "--setting", "bleached", "--k-max", "1")
    assert code == 0, out
    table = pd.read_csv(tmp_path / "similarity.csv")
    assert set(table.k) == {0, 1} and set(table.dataset) == {"ws353", "simlex999"}
    assert json.loads((tmp_path / "similarity.json").read_text())["options"]["setting"] == "bleached"
    code, out = _run("similarity", "--store", stores["a"], "--out", tmp_path, "--no-plots",
                     "--pairs", stores["pairs"], "--setting", "bleached", "--setting", "alone")
    assert code == 2 and "one --setting" in out


def test_similarity_names_the_benchmark_it_leaves_out(stores: dict[str, Path], tmp_path: Path) -> None:
    """A benchmark with 2 pairs of stored words (MEN here) used to abort the run; now it is left
    out, the summary says why, and the figure draws the others (issue 24)."""
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    for name in ("ws353", "simlex999"):
        (pairs / f"{name}.csv").write_text((stores["pairs"] / f"{name}.csv").read_text())
    pd.DataFrame({"word1": ["sim000", "sim001", "absent", "absent"],
                  "word2": ["sim002", "sim003", "sim004", "sim005"],
                  "score": [1.0, 2.0, 3.0, 4.0]}).to_csv(pairs / "men.csv", index=False)
    code, out = _run("similarity", "--store", stores["a"], "--out", tmp_path / "out",
                     "--pairs", pairs, "--allow-missing", "--k-max", "1")
    assert code == 0, out
    assert ("benchmark 'men' left out: only 2 of 4 pairs have both words in the store "
            "(Spearman's rho needs at least 3).") in " ".join(out.split())
    assert set(pd.read_csv(tmp_path / "out" / "similarity.csv").dataset) == {"ws353", "simlex999"}


def test_warnings_print_as_one_line_without_code() -> None:
    """Every command's warnings are ``warning: …`` lines: emb's own as they are (every time),
    others with their category; never Python's ``file:line: Category`` and the line of code."""
    import click

    from emb.cli._errors import EmbGroup
    from emb.errors import EmbWarning

    @click.group(cls=EmbGroup)
    def group() -> None:
        pass

    @group.command()
    def warn() -> None:
        for _ in range(2):
            warnings.warn("3 words left out", EmbWarning, stacklevel=1)
        warnings.warn("mean of empty slice", RuntimeWarning, stacklevel=1)

    result = CliRunner().invoke(group, ["warn"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line]
    assert lines == ["warning: 3 words left out", "warning: 3 words left out",
                     "warning: mean of empty slice (RuntimeWarning)"], lines
    assert "test_analyze.py" not in result.output and "warnings.warn" not in result.output


def test_the_analyses_own_warnings_are_emb_warnings() -> None:
    """What the analyses warn about (words left out, groups without names) is an EmbWarning,
    so the CLI prints it as one line every time it happens."""
    import ast

    for module in ("_run", "ibd/_design"):
        source = (Path(__file__).parents[2] / "src" / "emb" / "analyses" / f"{module}.py").read_text()
        calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
                 and ast.unparse(n.func) == "warnings.warn"]
        assert calls and all(ast.unparse(c.args[1]) == "EmbWarning" for c in calls), module


def test_ceat_headline_end_to_end(tmp_path: Path) -> None:
    """emb analyze ceat on a store with 2 contexts per stimulus (4,096 distinct samples) and
    N = 5,000: the bootstrap CI leads, the RE CI and p are labelled, both warnings are printed;
    with --n-bootstrap 0 nothing printed speaks of a bootstrap; the table file has test_name and
    an empty p where it is below the float range (issue 24)."""
    from tests.analyses._synthetic import ceat_dataset

    ds = ceat_dataset(n_stim=(3, 3, 3, 3), contexts=2, second_test=False, n_layers=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "c.zarr", {"ceat": ds})
    common = ["ceat", "--store", str(store), "--no-plots", "--samples", "5000",
              "--n-permutations", "0", "--min-words", "3"]
    result = CliRunner().invoke(analyze, [*common, "--out", str(tmp_path / "a"),
                                          "--n-bootstrap", "20", "--bootstrap-samples", "30"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.index("boot_ci") < out.index("re_ci") and "not independent studies" in out
    assert "exceed the distinct combinations" in out and "T1: 4,096" in out
    assert "tau2 = 0 in all" in out
    table = pd.read_csv(tmp_path / "a" / "ceat.csv")
    assert set(table["test_name"]) == {"x vs y × a/b"} and set(table["test"]) == {"T1"}
    assert table["p"].isna().all() and (table["log10_p"] < -308).all()
    result = CliRunner().invoke(analyze, [*common, "--out", str(tmp_path / "b"),
                                          "--n-bootstrap", "0"])
    assert result.exit_code == 0, result.output
    assert "bootstrap" not in result.output.lower() and "re_ci" in result.output
