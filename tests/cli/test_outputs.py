"""What ``emb analyze`` leaves on disk: all files or none, never two runs mixed, provenance in
every file, byte-identical tables, CSV or Parquet, labels instead of paths, clear messages."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner

import emb
from emb.analyses import ANALYSES
from emb.cli.main import main
from emb.results.directory import netcdf_ready, prepare_out, write_results
from tests.analyses._synthetic import vast_dataset, weat_dataset, write_store


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("outputs")
    weat = weat_dataset(n_layers=3)
    # a third, custom setting beside bleached/alone: it must not vanish
    said = weat.isel(item=np.flatnonzero(weat.setting.values == "bleached"))
    said = said.assign_coords(setting=("item", np.array(["said"] * said.sizes["item"], dtype=object)),
                              context=("item", np.array([f"She said {w}." for w in said.word.values],
                                                        dtype=object)))
    weat3 = xr.concat([weat, said], dim="item")
    weat3.attrs = weat.attrs
    # a store whose directory looks like an installed package's, and whose model id is a path
    site = root / "lib" / "python3.11" / "site-packages" / "pkg"
    site.mkdir(parents=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "toy": write_store(root / "toy.zarr", {"vast": vast_dataset(n_words=60, n_layers=3),
                                                   "weat": weat3}, model_id="toy-model"),
            "site": write_store(site / "minilm.zarr", {"vast": vast_dataset(n_words=60, n_layers=3)},
                                model_id=str(site / "model")),
            "root": root,
        }


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["analyze", *map(str, args), "--quiet"])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_sc_weat_writes_a_readable_netcdf_from_a_real_store(stores: dict[str, Path], tmp_path: Path) -> None:
    """Issue 9: 'emb analyze sc-weat' ended in a netCDF TypeError on numpy str_ attributes."""
    code, out = _run("sc-weat", "--store", stores["toy"], "--out", tmp_path, "--no-plots")
    assert code == 0, out
    nc = xr.open_dataset(tmp_path / "sc_weat.nc")
    table = pd.read_parquet(tmp_path / "sc_weat.parquet")
    row = table.iloc[7]
    value = nc.effect_size.sel(model=row.model, setting=row.setting, word=row.word,
                               pooling=row.pooling, layer=row.layer)
    assert float(value) == row.effect_size
    assert nc.attrs["lexicon"] == "toy" and "emb analyze sc-weat" in nc.attrs["emb_command"]
    assert nc.effect_size.attrs["long_name"] == "SC-WEAT effect size"
    nc.close()


def test_netcdf_ready_takes_numpy_strings_and_arrays(tmp_path: Path) -> None:
    ds = xr.Dataset({"x": ("word", np.array([1.0, 2.0]))},
                    coords={"word": np.array(["a", "bb"], dtype="<U8")})
    ds.attrs = {"lexicon": np.str_("warriner"), "list": [np.str_("a"), np.int64(2)],
                "array": np.array(["x", "y"]), "n": np.int64(3), "flag": True}
    ds["x"].attrs = {"unit": np.str_("d")}
    netcdf_ready(ds).to_netcdf(tmp_path / "t.nc", engine="h5netcdf")
    back = xr.open_dataset(tmp_path / "t.nc")
    assert back.attrs["lexicon"] == "warriner" and json.loads(back.attrs["list"]) == ["a", 2]
    assert json.loads(back.attrs["array"]) == ["x", "y"] and back.attrs["n"] == 3
    assert back.x.attrs["unit"] == "d"
    back.close()


def test_a_failing_run_leaves_nothing_and_keeps_the_earlier_run(stores: dict[str, Path], tmp_path: Path) -> None:
    code, out = _run("valnorm", "--store", stores["toy"], "--out", tmp_path, "--setting", "bleached")
    assert code == 0, out
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    analysis = ANALYSES["valnorm"]
    result = analysis.function(emb.open_store(stores["toy"]).dataset("vast"), settings="bleached")

    class Broken:
        def __getattr__(self, name):  # the record, except that drawing fails half-way
            return getattr(analysis, name)

        def draw(self, result, **options):
            raise RuntimeError("the disk filled up")

    plan = prepare_out(tmp_path, analysis, overwrite=True)
    with pytest.raises(RuntimeError, match="disk filled"):
        write_results(plan, Broken(), result.compute(), stores={"toy": str(stores["toy"])},
                      options={}, suite="vast")
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after == before  # no partial file, no temporary directory, the earlier run intact


def test_out_never_mixes_runs(stores: dict[str, Path], tmp_path: Path) -> None:
    code, out = _run("valnorm", "--store", stores["toy"], "--out", tmp_path, "--setting", "bleached")
    assert code == 0
    first = sorted(p.name for p in tmp_path.iterdir())
    assert "valnorm_curves_toy.png" in first
    code, out = _run("valnorm", "--store", stores["toy"], "--out", tmp_path, "--no-plots")
    assert code == 1 and "already holds the results of an earlier 'valnorm' run" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == first
    (tmp_path / "notes.txt").write_text("mine")
    code, out = _run("valnorm", "--store", stores["toy"], "--out", tmp_path, "--no-plots",
                     "--overwrite")
    assert code == 0 and "removed the earlier run's" in out
    now = sorted(p.name for p in tmp_path.iterdir())
    assert not [n for n in now if n.endswith(".png")]  # the earlier run's figures are gone
    assert "notes.txt" in now  # a file emb did not write is never touched


def test_every_output_carries_command_time_and_versions(stores: dict[str, Path], tmp_path: Path) -> None:
    code, out = _run("weat", "--store", f"toy={stores['toy']}", "--out", tmp_path, "--test", "WEAT1",
                     "--figure-format", "png", "--figure-format", "pdf", "--figure-format", "svg")
    assert code == 0, out
    meta = json.loads((tmp_path / "weat.json").read_text())
    assert "emb analyze weat" in meta["command"] and meta["analysed_at"]
    assert meta["versions"]["numpy"] == np.__version__
    assert meta["provenance"]["toy"]["model"]["model_id"] == "toy-model"
    assert meta["tables"]["weat"]["columns"]["effect_size"] == "WEAT effect size (Cohen's d)"
    nc = xr.open_dataset(tmp_path / "weat.nc")
    assert nc.attrs["emb_command"] == meta["command"]
    assert nc.attrs["emb_analysed_at"] == meta["analysed_at"]
    assert json.loads(nc.attrs["emb_versions"]) == meta["versions"]
    assert nc.effect_size.attrs["long_name"] == "WEAT effect size (Cohen's d)"
    assert "bootstrap" in nc.ci_low.attrs["long_name"]
    nc.close()
    from PIL import Image

    with Image.open(tmp_path / "weat_effect_sizes_last.png") as image:
        assert meta["command"] in image.text["Description"]
        assert json.loads(image.text["Comment"])["emb"] == meta["versions"]["emb"]
    assert b"emb analyze weat" in (tmp_path / "weat_heatmap_last.pdf").read_bytes()
    svg = (tmp_path / "weat_heatmap_last.svg").read_text()
    assert "emb analyze weat" in svg and "<svg" in svg
    assert sorted(meta["figures"]["heatmap_last"]) == [
        "weat_heatmap_last.pdf", "weat_heatmap_last.png", "weat_heatmap_last.svg"]


def test_tables_are_byte_identical_across_identical_runs(stores: dict[str, Path], tmp_path: Path) -> None:
    files = {}
    for run in ("a", "b"):
        code, out = _run("weat", "--store", stores["toy"], "--out", tmp_path / run, "--no-plots",
                         "--exact-limit", "10", "--n-permutations", "300", "--seed", "4")
        assert code == 0, out
        code, out = _run("sc-weat", "--store", stores["toy"], "--out", tmp_path / run, "--no-plots",
                         "--setting", "bleached")
        assert code == 0, out
        files[run] = {p.name: p.read_bytes() for p in (tmp_path / run).iterdir()
                      if p.suffix in (".csv", ".parquet")}
    assert set(files["a"]) == {"weat.csv", "weat_best_layers.csv", "sc_weat.parquet",
                               "weat_anisotropy.csv", "sc_weat_anisotropy.csv"}
    assert files["a"] == files["b"]


@pytest.mark.slow
def test_tables_byte_identical_on_a_wide_float16_store(tmp_path: Path) -> None:
    """With BLAS free to use its threads under dask's, products varied in their last bits from
    one process to the next on real-sized vectors (384 features, as MiniLM): the CLI computes
    with one BLAS thread. Each run is a fresh process, as a user's would be."""
    import os
    import subprocess
    import sys

    ds = vast_dataset(n_words=300, n_layers=3, d=384, settings=("bleached", "random"),
                      dtype="float16")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "wide.zarr", {"vast": ds})
    runs = []
    for i in range(3):
        args = ["analyze", "valnorm", "--store", str(store), "--out", str(tmp_path / str(i)),
                "--no-plots", "--quiet"]
        done = subprocess.run([sys.executable, "-c", "from emb.cli.main import main; main()", *args],
                              capture_output=True, text=True, env=os.environ.copy(), timeout=300)
        assert done.returncode == 0, done.stderr
        runs.append({p.name: p.read_bytes() for p in (tmp_path / str(i)).iterdir()
                     if p.suffix in (".csv", ".parquet")})
    assert set(runs[0]) == {"valnorm.csv", "valnorm_words.parquet", "valnorm_best_layers.csv",
                            "valnorm_anisotropy.csv"}
    assert runs[0] == runs[1] == runs[2]


def test_table_formats(stores: dict[str, Path], tmp_path: Path) -> None:
    code, _ = _run("valnorm", "--store", stores["toy"], "--out", tmp_path / "auto", "--no-plots")
    assert code == 0
    names = {p.name for p in (tmp_path / "auto").iterdir()}
    assert {"valnorm.csv", "valnorm_words.parquet", "valnorm_best_layers.csv"} <= names
    code, _ = _run("valnorm", "--store", stores["toy"], "--out", tmp_path / "csv", "--no-plots",
                   "--format", "csv")
    assert code == 0
    words_csv = pd.read_csv(tmp_path / "csv" / "valnorm_words.csv")
    words_pq = pd.read_parquet(tmp_path / "auto" / "valnorm_words.parquet")
    pd.testing.assert_frame_equal(words_csv, words_pq, check_dtype=False)
    import pyarrow.parquet as pq

    field = pq.read_schema(tmp_path / "auto" / "valnorm_words.parquet").field("sc_weat")
    assert field.metadata[b"description"] == b"SC-WEAT effect size of the word"
    code, _ = _run("valnorm", "--store", stores["toy"], "--out", tmp_path / "pq", "--no-plots",
                   "--format", "parquet")
    assert code == 0 and (tmp_path / "pq" / "valnorm.parquet").is_file()


def test_labels_never_a_site_packages_path(stores: dict[str, Path], tmp_path: Path) -> None:
    code, out = _run("valnorm", "--store", stores["site"], "--out", tmp_path, "--setting", "bleached")
    assert code == 0, out
    table = (tmp_path / "valnorm.csv").read_text()
    assert "site-packages" not in table and "minilm" in table
    assert "site-packages" not in out.split("wrote")[0]  # the summary names the model 'minilm'
    code, out = _run("valnorm", "--store", f"MiniLM-L6={stores['site']}", "--out", tmp_path / "l",
                     "--setting", "bleached", "--no-plots")
    assert code == 0 and "MiniLM-L6" in (tmp_path / "l" / "valnorm.csv").read_text()


def test_weat_keeps_every_setting_by_default(stores: dict[str, Path], tmp_path: Path) -> None:
    code, out = _run("weat", "--store", stores["toy"], "--out", tmp_path, "--no-plots")
    assert code == 0, out
    table = pd.read_csv(tmp_path / "weat.csv")
    assert set(table.setting) == {"bleached", "alone", "said"}


def test_valnorm_arousal(stores: dict[str, Path], tmp_path: Path) -> None:
    """Issue 9: 'emb analyze valnorm --rating arousal' ended in a traceback."""
    code, out = _run("valnorm", "--store", stores["toy"], "--out", tmp_path, "--rating", "arousal")
    assert code == 0, out
    assert "human arousal ratings" in out
    nc = xr.open_dataset(tmp_path / "valnorm.nc")
    assert nc.attrs["ratings"] == "arousal" and np.isfinite(nc.r).any()
    nc.close()
    assert (tmp_path / "valnorm_scatter_toy.png").is_file()


def test_help_shows_defaults_and_unknown_names_get_a_suggestion(stores: dict[str, Path], tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["analyze", "weat", "--help"])
    assert "[default: 100000]" in result.output and "[default: 1000]" in result.output
    assert "--test" in result.output and "--figure-format" in result.output
    cases = {
        ("weat", "--test", "WEAt1"): "Did you mean 'WEAT1'?",
        ("weat", "--setting", "bleachd"): "Did you mean 'bleached'?",
        ("weat", "--suite", "waet"): "Did you mean 'weat'?",
        ("valnorm", "--lexicon", "tyo"): "Did you mean 'toy'?",
        ("vast", "--pooling", "lats"): "Did you mean 'last'?",
        ("valnorm", "--rating", "arousl"): "Did you mean 'arousal'?",
        ("weat", "--alternative", "greatr"): "Did you mean 'greater'?",
    }
    for args, hint in cases.items():
        code, out = _run(*args, "--store", stores["toy"], "--out", tmp_path / "x", "--no-plots")
        assert code in (1, 2) and hint in out, (args, out)
        assert "np.str_" not in out and "np.int64" not in out
    code, out = _run("wat", "--store", stores["toy"])
    assert code == 2 and "Did you mean 'weat'?" in out


def test_the_cli_computes_with_one_blas_thread() -> None:
    """Every task of the CLI's compute sees one BLAS thread (dask supplies the parallelism), so no
    BLAS call changes its thread count under another one mid-way."""
    import dask.array as da
    from threadpoolctl import threadpool_info

    from emb.api import compute

    seen: list[int] = []

    def probe(block: np.ndarray) -> np.ndarray:
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        return block

    lazy = xr.DataArray(da.ones(8, chunks=2).map_blocks(probe, dtype=float, meta=np.array(())))
    seen.clear()
    compute(lazy)
    assert len(seen) >= 4 and set(seen) == {1}
    # outside the computation the process keeps its own setting
    assert [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_files_emb_did_not_write_are_never_replaced(stores: dict[str, Path], tmp_path: Path) -> None:
    """A user's valnorm.csv in --out was silently replaced (with or without --overwrite), and
    --overwrite deleted a user's file named like the sidecar."""
    args = ("valnorm", "--store", stores["toy"], "--out", tmp_path, "--setting", "bleached",
            "--no-plots")
    (tmp_path / "valnorm.csv").write_text("mine\n")
    for extra in ((), ("--overwrite",)):
        code, out = _run(*args, *extra)
        assert code == 1 and "valnorm.csv" in out and "never replaces such files" in out, out
        assert sorted(p.name for p in tmp_path.iterdir()) == ["valnorm.csv"]  # nothing written
        assert (tmp_path / "valnorm.csv").read_text() == "mine\n"
    (tmp_path / "valnorm.csv").unlink()
    # a file of the sidecar's name that is not emb's sidecar: refused, --overwrite or not
    (tmp_path / "valnorm.json").write_text('{"my": "notes"}')
    code, out = _run(*args, "--overwrite")
    assert code == 1 and "is not the sidecar of an earlier 'emb analyze valnorm' run" in out, out
    assert (tmp_path / "valnorm.json").read_text() == '{"my": "notes"}'
    (tmp_path / "valnorm.json").unlink()
    # --overwrite replaces emb's own earlier outputs, but not one the user changed since
    code, out = _run(*args)
    assert code == 0, out
    code, out = _run(*args, "--overwrite")
    assert code == 0 and "removed the earlier run's" in out, out
    (tmp_path / "valnorm.csv").write_text("edited by hand\n")
    code, out = _run(*args, "--overwrite")
    assert code == 1 and "valnorm.csv" in out and "changed since" in out, out
    assert (tmp_path / "valnorm.csv").read_text() == "edited by hand\n"


@pytest.mark.parametrize("failure", ["option", "interrupt", "bug"])
def test_a_failed_run_leaves_no_empty_out_directory(stores: dict[str, Path], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    """An error after the output check (or Ctrl-C during the compute) left --out p1/sub/ behind."""
    import emb.api

    out = tmp_path / "p1" / "sub"
    args = ["analyze", "valnorm", "--store", str(stores["toy"]), "--out", str(out), "-q"]
    if failure == "option":
        args += ["--setting", "nosuch"]
    else:
        error = KeyboardInterrupt if failure == "interrupt" else RuntimeError

        def broken(*a, **k):
            raise error("stopped half-way")

        monkeypatch.setattr(emb.api, "compute", broken)
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    assert not (tmp_path / "p1").exists()
    # a directory that was there before is left
    (tmp_path / "p1").mkdir()
    CliRunner().invoke(main, args)
    assert (tmp_path / "p1").is_dir() and not out.exists()
