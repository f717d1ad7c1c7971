"""The house of ``emb analyze``: one generated subcommand per analysis, shared options defined once,
a default output directory, JSON summaries, quiet progress off a terminal, runs never mixed."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from emb.analyses import ANALYSES
from emb.cli._progress import Progress
from emb.cli.main import main
from tests.analyses._synthetic import vast_dataset, weat_dataset, write_store

SHARED = ("--store", "--suite", "--out", "--overwrite", "--scheduler", "--no-plots", "--dpi",
          "--json", "--quiet")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("house")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return write_store(root / "toy.zarr", {"vast": vast_dataset(n_words=60),
                                               "weat": weat_dataset()}, model_id="toy")


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(map(str, args)))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize("name", sorted(ANALYSES))
def test_each_subcommand_help_shows_its_own_options_and_the_shared_ones(name: str) -> None:
    code, out = _invoke("analyze", name, "--help")
    assert code == 0, out
    analysis = ANALYSES[name]
    for option in analysis.options:
        flag = option.cli_flag
        assert flag in out, f"{name}: {flag} missing from --help"
    for flag in SHARED:
        assert flag in out
    assert ("--seed" in out) == ("seed" in analysis.parameters())
    assert ("--reference" in out) == ("method" in analysis.parameters())
    others = {o.cli_flag for a in ANALYSES.values() for o in a.options} - {
        o.cli_flag for o in analysis.options} - set(SHARED)
    for flag in others:
        assert f"{flag} " not in out and f"{flag}\n" not in out, f"{name} shows {flag}"


def test_help_shows_defaults_from_the_signature() -> None:
    code, out = _invoke("analyze", "weat", "--help")
    assert code == 0
    default = ANALYSES["weat"].default("n_permutations")
    assert f"[default: {default}]" in out.replace("\n", " ").replace("  ", " ") or str(default) in out


def test_list_and_bare_group() -> None:
    code, out = _invoke("analyze", "--list")
    assert code == 0 and all(name in out for name in ANALYSES)
    code, out = _invoke("analyze")
    assert code == 2 and "Commands:" in out


def test_unknown_analysis_did_you_mean(store: Path) -> None:
    code, out = _invoke("analyze", "vats", "--store", store)
    assert code == 2 and "Did you mean 'vast'?" in out


def test_default_output_directory_follows_the_rule_of_an_explicit_one(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default directory was replaced on every run while an explicit --out refused an
    earlier run without --overwrite (issue 24): one rule for both now."""
    monkeypatch.chdir(tmp_path)
    args = ["analyze", "weat", "--store", str(store), "--no-plots", "--quiet"]
    code, out = _invoke(*args)
    assert code == 0, out
    out_dir = tmp_path / "emb-results" / "toy" / "weat"
    assert {p.name for p in out_dir.iterdir()} == {"weat.csv", "weat_best_layers.csv", "weat.nc",
                                                   "weat.json", "weat_anisotropy.csv"}
    assert "emb-results/toy/weat" in out
    (out_dir / "notes.txt").write_text("mine")  # not emb's: never removed
    before = (out_dir / "weat.json").read_text()
    code, out = _invoke(*args)  # as with --out: an earlier run is not replaced unasked
    assert code == 1 and "--overwrite" in out and "earlier 'weat' run" in out, out
    assert (out_dir / "weat.json").read_text() == before
    code, out = _invoke(*args, "--overwrite")
    assert code == 0, out
    assert "removed the earlier run's 5 files" in out
    assert (out_dir / "notes.txt").read_text() == "mine"
    assert not [p for p in out_dir.iterdir() if p.name.startswith(".")], "temporary files left"


def test_explicit_out_refuses_to_mix_runs_without_overwrite(store: Path, tmp_path: Path) -> None:
    args = ["analyze", "weat", "--store", str(store), "--no-plots", "--quiet", "--out", str(tmp_path)]
    assert _invoke(*args)[0] == 0
    before = (tmp_path / "weat.json").read_text()
    code, out = _invoke(*args)
    assert code == 1 and "--overwrite" in out and "earlier 'weat' run" in out
    assert (tmp_path / "weat.json").read_text() == before
    code, out = _invoke(*args, "--overwrite")
    assert code == 0, out


def test_tables_as_csv_latex_and_parquet(store: Path, tmp_path: Path) -> None:
    import pandas as pd

    out_dir = tmp_path / "formats"
    code, out = _invoke("analyze", "weat", "--store", store, "--no-plots", "--quiet", "--out", out_dir,
                        "--format", "csv", "--format", "latex,parquet")
    assert code == 0, out
    names = {p.name for p in out_dir.iterdir()}
    for table in ("weat", "weat_best_layers"):
        assert {f"{table}.csv", f"{table}.tex", f"{table}.parquet"} <= names
    csv = pd.read_csv(out_dir / "weat.csv")
    parquet = pd.read_parquet(out_dir / "weat.parquet")
    assert list(parquet.columns) == list(csv.columns) and len(parquet) == len(csv)
    pd.testing.assert_series_equal(parquet["effect_size"], csv["effect_size"], check_dtype=False)
    tex = (out_dir / "weat.tex").read_text()
    assert "\\begin{tabular}" in tex and "\\toprule" in tex and "\\midrule" in tex
    assert "\\bottomrule" in tex and "needs \\usepackage{booktabs}" in tex
    assert "effect\\_size" in tex  # escaped: a bare _ does not compile
    header = next(line for line in tex.splitlines() if "effect" in line and "&" in line)
    assert header.count("&") == len(csv.columns) - 1
    body = tex.split("\\midrule")[1].split("\\bottomrule")[0].strip().splitlines()
    assert len(body) == len(csv)
    first = float(body[0].split("&")[list(csv.columns).index("effect_size")].strip())
    assert first == pytest.approx(csv["effect_size"].iloc[0], rel=1e-3)  # 4 significant digits
    meta = json.loads((out_dir / "weat.json").read_text())
    assert meta["tables"]["weat"]["files"] == {"csv": "weat.csv", "latex": "weat.tex",
                                               "parquet": "weat.parquet"}
    assert meta["output"]["table_format"] == ["csv", "latex", "parquet"]
    assert set(meta["files"]) >= {"weat.tex", "weat.parquet"}


def test_a_latex_table_emb_did_not_write_is_never_replaced(store: Path, tmp_path: Path) -> None:
    (tmp_path / "weat.tex").write_text("% my own table\n")
    args = ["analyze", "weat", "--store", store, "--no-plots", "--quiet", "--out", tmp_path,
            "--format", "latex"]
    for extra in ((), ("--overwrite",)):
        code, out = _invoke(*args, *extra)
        assert code == 1 and "weat.tex" in out and "emb never replaces" in out, out
        assert (tmp_path / "weat.tex").read_text() == "% my own table\n"
    assert not (tmp_path / "weat.json").exists()


def test_an_unknown_table_format_is_refused(store: Path, tmp_path: Path) -> None:
    code, out = _invoke("analyze", "weat", "--store", store, "--quiet", "--out", tmp_path,
                        "--format", "xlsx")
    assert code == 2 and "xlsx" in out and "latex" in out and "Traceback" not in out, out


def test_out_that_is_a_file_is_refused_before_computing(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_text("x")
    code, out = _invoke("analyze", "weat", "--store", store, "--quiet", "--out", target / "sub")
    assert code == 1 and "is a file" in out and "Traceback" not in out


def test_json_summary(store: Path, tmp_path: Path) -> None:
    code, out = _invoke("analyze", "weat", "--store", f"mini={store}", "--no-plots", "--quiet",
                        "--json", "--out", tmp_path)
    assert code == 0, out
    doc = json.loads(out[out.index("{"):out.rindex("}") + 1])
    assert doc["summary"]["headline"][0].startswith("declared cell")
    assert {row["model"] for row in doc["summary"]["table"]} == {"mini"}
    assert Path(doc["out"]) == tmp_path


def test_repeated_single_option_is_refused(store: Path, tmp_path: Path) -> None:
    code, out = _invoke("analyze", "weat", "--store", store, "--out", tmp_path, "--ddof", "0",
                        "--ddof", "1")
    assert code == 2 and "takes one --ddof" in out


def test_progress_off_a_terminal_prints_a_few_lines() -> None:
    import dask.array as da

    stream = io.StringIO()
    x = da.ones((400, 10), chunks=(1, 10)).sum(axis=1)
    with Progress(stream=stream):
        x.compute()
    lines = stream.getvalue().splitlines()
    assert 2 <= len(lines) <= 5, lines
    assert lines[-1].startswith("computing: 100%")


def test_the_suite_is_opened_with_the_analysis_chunk_size(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI opens the suite with the chunks the analysis declares (vast: chunks that follow
    its (lexicon, setting) runs, one read per run), and with the store's default for others."""
    from emb.store.store import Store

    seen: dict[str, object] = {}
    opened = Store.dataset

    def spy(self: Store, name: str, **kwargs: object):
        seen[name] = kwargs.get("chunk_by")
        return opened(self, name, **kwargs)

    monkeypatch.setattr(Store, "dataset", spy)
    assert ANALYSES["vast"].chunk_by == ("lexicon", "setting", "stimulus_set")
    code, out = _invoke("analyze", "vast", "--store", store, "--out", tmp_path / "v", "--quiet",
                        "--no-plots", "--no-tokenization", "--no-nullification")
    assert code == 0, out
    assert seen["vast"] == ANALYSES["vast"].chunk_by
    code, out = _invoke("analyze", "weat", "--store", store, "--out", tmp_path / "w", "--quiet",
                        "--no-plots", "--n-permutations", "99")
    assert code == 0, out
    assert seen["weat"] == ()
