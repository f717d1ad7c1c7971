"""The hostile user's cases against the analysis side (issue 20), each run as a user runs it
(tests/_hostile.py): ``--tests`` files that explode or nest without end, degenerate word sets,
a contrast group equal to a target, counts at and beyond their bounds, a reader that closes the
pipe, sidecars that break ``emb report``, correlations over three words."""

from __future__ import annotations

import io
import json
import os
import subprocess
import warnings
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest

from tests._hostile import EMB, _environment, assert_refused, run_emb
from tests.analyses._synthetic import ibd_dataset, vast_dataset, weat_dataset, write_store

#: The longest refusal a case may print (a quoted value is cut, never megabytes).
MAX_MESSAGE = 2_000
#: Peak memory of a refused case (MiB): the interpreter with numpy, xarray and zarr is ~250.
MAX_RSS_MIB = 1_000


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("stores")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on fixed-width string dtypes
        return {
            "weat": write_store(root / "weat.zarr", {"weat": weat_dataset(n_layers=2, d=8)}),
            "vast": write_store(root / "vast.zarr",
                                {"vast": vast_dataset(n_words=12, settings=("bleached",), n_layers=2)},
                                model_id="toy-v"),
            "three": write_store(root / "three.zarr",
                                 {"vast": vast_dataset(n_words=3, settings=("bleached",), n_layers=2,
                                                       poolings=("last",))}, model_id="toy-3"),
            "ibd": write_store(root / "ibd.zarr", {"ibd": ibd_dataset(n_layers=2)}, model_id="toy-i"),
        }


def _analyze(name: str, store: Path, out: Path, *args: str) -> tuple[str, ...]:
    return ("analyze", name, "--store", str(store), "--out", str(out), "--no-plots", "--quiet",
            *args)


def _short(outcome) -> None:
    """A short message from a run that read little (its peak memory measured: run it fresh)."""
    assert len(outcome.stderr) < MAX_MESSAGE, f"{len(outcome.stderr):,} characters of stderr"
    assert outcome.peak_rss_mib < MAX_RSS_MIB, str(outcome)


# -- --tests files -------------------------------------------------------------------------------
#: 323 bytes of nested YAML aliases: 9^7 = 4.8 million words once expanded (54 s, 1.8 GB and a
#: 312 MB error message before).
ALIAS_BOMB = (
    "description: [&a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"
    + "".join(f", &{n} [{', '.join(['*' + p] * 9)}]" for p, n in zip("abcdef", "bcdefg", strict=True))
    + "]\ntests: {T: {X: *g, Y: [b], A: [c], B: [d]}}\n"
)


def test_a_tests_file_of_nested_aliases_is_refused_at_once(stores: dict[str, Path],
                                                           tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB)
    outcome = run_emb(*_analyze("weat", stores["weat"], tmp_path / "o", "--test", str(bomb)),
                      timeout=120, fresh=True)
    assert_refused(outcome, codes=(1,), mentions=["bomb.yaml", "alias", "line 1"])
    _short(outcome)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("kind, text", [
    ("yaml", "tests: " + "[" * 5_000 + "]" * 5_000 + "\n"),
    ("yaml", "tests:\n" + "".join(" " * i + "a:\n" for i in range(1, 3_000))),
    ("json", '{"tests": ' + "[" * 100_000 + "]" * 100_000 + "}"),
], ids=["yaml-flow", "yaml-block", "json"])
def test_a_tests_file_nested_thousands_deep_is_refused(stores: dict[str, Path], tmp_path: Path,
                                                       kind: str, text: str) -> None:
    deep = tmp_path / f"deep.{kind}"
    deep.write_text(text)
    outcome = run_emb(*_analyze("weat", stores["weat"], tmp_path / "o", "--test", str(deep)),
                      fresh=True)
    assert_refused(outcome, codes=(1,), mentions=["deep.", "nested deeper"])
    _short(outcome)


@pytest.mark.parametrize("body", [  # more places in test_analyses_fuzz (library level)
    '{"tests": {"T": {"X": ["a"], "Y": ["b"], "A": ["c"], "B": {"KEY": 1}}}}',
    '{"KEY": 1}',
], ids=["role-key", "top-level-key"])
def test_a_refusal_quotes_at_most_a_few_hundred_characters(stores: dict[str, Path],
                                                           tmp_path: Path, body: str) -> None:
    tests = tmp_path / "tests.json"
    tests.write_text(body.replace("KEY", "k" * 1_000_000))
    outcome = run_emb(*_analyze("weat", stores["weat"], tmp_path / "o", "--test", str(tests)),
                      fresh=True)
    assert_refused(outcome, codes=(1,), mentions=["tests.json", "…"])
    _short(outcome)


# -- degenerate word sets ------------------------------------------------------------------------
def test_weat_with_one_word_per_target_set_is_refused(stores: dict[str, Path], tmp_path: Path) -> None:
    """|d| was sqrt(2) whatever the vectors, with a zero-width CI."""
    outcome = run_emb(*_analyze("weat", stores["weat"], tmp_path / "o", "--x", "flower0", "--y",
                                "insect0", "--a", "caress", "--b", "abuse"))
    assert_refused(outcome, codes=(1,), mentions=["at least 2 words in each target set",
                                                  "sqrt(2)", "flower0"])
    outcome = run_emb(*_analyze("weat", stores["weat"], tmp_path / "o", "--x", "flower0,flower1",
                                "--y", "insect0", "--a", "caress", "--b", "abuse"))
    assert_refused(outcome, codes=(1,), mentions=["Y has 1", "insect0"])


def test_weat_with_one_word_per_attribute_set_is_a_defined_test(stores: dict[str, Path],
                                                                tmp_path: Path) -> None:
    ok = run_emb(*_analyze("weat", stores["weat"], tmp_path / "o", "--x", "flower0,flower1",
                           "--y", "insect0,insect1", "--a", "caress", "--b", "abuse",
                           "--n-bootstrap", "0"))
    assert ok.code == 0, str(ok)  # one attribute word per set is a defined WEAT


def test_sc_weat_with_a_word_in_both_attribute_sets_is_refused(stores: dict[str, Path],
                                                                tmp_path: Path) -> None:
    """It wrote an all-NaN table with exit 0."""
    outcome = run_emb(*_analyze("sc-weat", stores["vast"], tmp_path / "o", "--a",
                                "love", "--b", "love"))
    assert_refused(outcome, codes=(1,), mentions=["A and B share ['love']"])
    assert not (tmp_path / "o").exists()
    outcome = run_emb(*_analyze("sc-weat", stores["vast"], tmp_path / "o", "--a",
                                "love", "--b", "abuse"))
    assert_refused(outcome, codes=(1,), mentions=["at least 2 attribute words in each set"])


def test_ibd_with_the_contrast_among_the_groups_is_refused(stores: dict[str, Path],
                                                           tmp_path: Path) -> None:
    outcome = run_emb(*_analyze("ibd", stores["ibd"], tmp_path / "o", "--group", "african_female",
                                "--contrast", "african_female"))
    assert_refused(outcome, codes=(1,), mentions=["contrast group 'african_female'",
                                                  "also a target group"])


# -- counts at and beyond their bounds -----------------------------------------------------------
@pytest.mark.parametrize("name, store, flag, value, bound", [
    ("weat", "weat", "--n-permutations", "1000000000", "10,000,000"),
    ("weat", "weat", "--exact-limit", "1000000000", "10,000,000"),
    ("sc-weat", "vast", "--n-permutations", "10000001", "10,000,000"),
    ("vast", "vast", "--k-max", "1000000000", "1,024"),  # exit 3 before: MemoryError, 7.45 GiB
    ("vast", "vast", "--n-subsets", "1000000000", "10,000"),  # exit 3 before: 149 GiB
])
def test_counts_beyond_their_bounds_are_usage_errors(stores: dict[str, Path], tmp_path: Path,
                                                     name: str, store: str, flag: str, value: str,
                                                     bound: str) -> None:
    outcome = run_emb(*_analyze(name, stores[store], tmp_path / "o", flag, value))
    assert_refused(outcome, codes=(2,), mentions=[flag, bound])


def test_an_ibd_threshold_grid_beyond_its_bound_is_refused(stores: dict[str, Path],
                                                           tmp_path: Path) -> None:
    """Exit 3 before: MemoryError, 7.28 TiB for 10^12 thresholds."""
    for grid, found in (("0:1:1e-12", "1,000,000,000,000 values"),
                        ("-1e308:1e308:1e-300", "too many values")):
        outcome = run_emb(*_analyze("ibd", stores["ibd"], tmp_path / "o", "--thresholds", grid))
        assert_refused(outcome, codes=(1,), mentions=[found, "100,000"])


def test_every_count_option_declares_its_bound() -> None:
    """No count is left at the generic 10^9 (where a run would not end): each declares a bound
    its analysis can reach, except ddof (refused against the data's size when too large)."""
    from emb.analyses import ANALYSES
    from emb.analyses._analysis import MAX_COUNT

    loose = [(a.name, o.name) for a in ANALYSES.values() for o in a.options
             if o.type == "int" and o.name != "ddof" and o.bounds[1] >= MAX_COUNT]
    assert not loose


def test_the_permutation_work_is_planned_estimated_and_metered() -> None:
    """What the CLI shows before and while computing a long permutation test: the planned work
    (exactly what permutation_test then counts), a one-line estimate, a progress display."""
    from emb.analyses.stats import work as _work
    from emb.analyses.weat import weat
    from emb.cli import _progress

    ds = weat_dataset(n_layers=2, d=8).chunk({"layer": 1})  # dask-backed, as a store's
    with _work.planning() as plan:
        lazy = weat(ds, tests="WEAT1", n_permutations=5_000, exact_limit=0, n_bootstrap=0)
    cells = 2 * 2 * 2  # settings x layers x poolings
    assert plan.units == 5_000 * 16 * cells and plan.parts == ["WEAT permutation tests"]
    stream = io.StringIO()
    with dask.config.set(scheduler="threads"), _progress.WorkProgress(plan.units, stream=stream):
        lazy.compute()
    assert _work.METER.value == plan.units
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("computing:   0% of the permutation tests")
    assert lines[-1].startswith("computing: 100% of the permutation tests")
    # the estimate: silent for a short run, one line for a long one
    assert _progress.estimate(plan.units, plan.parts) is None
    line = _progress.estimate(1e14, plan.parts)
    assert line is not None and line.startswith("estimate: ~") and "--n-permutations" in line
    assert _progress.estimate(1e14, plan.parts, scheduler="tcp://x:1") is None


# -- a closed pipe -------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["suites", "info", "validate", "analyze"])
def test_a_reader_that_closes_the_pipe_ends_emb_quietly(stores: dict[str, Path], tmp_path: Path,
                                                        command: str) -> None:
    """``emb suites | head -1``: exit 1 without a word (as click does for a broken pipe), never
    "internal error: BrokenPipeError" (exit 3 before)."""
    args = {"suites": ["suites"], "info": ["info", str(stores["weat"])],
            "validate": ["validate", str(stores["weat"])],
            "analyze": ["analyze", "weat", "--store", str(stores["weat"]), "--out",
                        str(tmp_path / "o"), "--no-plots", "--quiet", "--json",
                        "--n-bootstrap", "0", "--n-permutations", "100"]}[command]
    read, write = os.pipe()
    os.close(read)  # the reader is gone before emb writes its first line
    try:
        proc = subprocess.run([*EMB, *args], stdout=write, stderr=subprocess.PIPE,
                              env=_environment(None), timeout=300, check=False)
    finally:
        os.close(write)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 1, stderr
    assert "internal error" not in stderr and "Traceback" not in stderr and "Error" not in stderr
    if command == "analyze":  # the results were written before the summary was printed
        assert (tmp_path / "o" / "weat.json").is_file()


# -- emb report's inputs -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run_dir(stores: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "weat"
    done = run_emb(*_analyze("weat", stores["weat"], out, "--n-bootstrap", "0",
                             "--n-permutations", "100", "--test", "WEAT1"))
    assert done.code == 0, str(done)
    return out


@pytest.mark.parametrize("damage", ["deep", "figure-entry"])
def test_emb_report_refuses_a_sidecar_it_cannot_render(run_dir: Path, tmp_path: Path,
                                                       damage: str) -> None:
    """Exit 3 before: RecursionError (a sidecar 5,000 levels deep), TypeError (a figure entry
    that is a mapping)."""
    copy = tmp_path / "run"
    copy.mkdir()
    for file in run_dir.iterdir():
        (copy / file.name).write_bytes(file.read_bytes())
    meta = json.loads((copy / "weat.json").read_text())
    if damage == "deep":
        text = json.dumps(meta)[:-1] + ', "x": ' + "[" * 5_000 + "]" * 5_000 + "}"
    else:
        meta["figures"] = {"heatmap": [{"a": 1}]}
        text = json.dumps(meta)
    (copy / "weat.json").write_text(text)
    outcome = run_emb("report", str(copy), "--out", str(tmp_path / "page.html"))
    assert_refused(outcome, codes=(1,), mentions=["weat.json", "nested deeper" if damage == "deep"
                                                  else "'figures' must map each figure"])
    assert not (tmp_path / "page.html").exists()


# -- correlations over three words ---------------------------------------------------------------
def test_valnorm_over_three_words_reports_exact_permutation_p(stores: dict[str, Path],
                                                              tmp_path: Path) -> None:
    """Spearman's p of 3 pairs was 1.3e-8; no p of 3 pairs is below 1/3."""
    outcome = run_emb(*_analyze("valnorm", stores["three"], tmp_path / "o"))
    assert outcome.code == 0, str(outcome)
    table = pd.read_csv(tmp_path / "o" / "valnorm.csv")
    assert (table["n"] == 3).all()
    for column in ("p", "spearman_p"):
        assert (table[column] >= 1 / 3 - 1e-12).all(), table[column].tolist()
    np.testing.assert_allclose(table["spearman_log10_p"], np.log10(table["spearman_p"]))
