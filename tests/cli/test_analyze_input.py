"""``emb analyze`` refuses bad input with one clear message and a non-zero exit, never a
traceback: out-of-range numbers (from the options' declared bounds), empty store paths, a store
path with '=' in its name, an unreachable scheduler."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from emb.cli.analyze import analyze
from tests.analyses._synthetic import weat_dataset, write_store


@pytest.fixture(scope="module")
def weird_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stores")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on fixed-width string dtypes
        return write_store(root / "we=ird.zarr", {"weat": weat_dataset()}, model_id="toy-w")


def _run(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(analyze, [*map(str, args), "--quiet"])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback: the test fails
    return result.exit_code, result.output


@pytest.mark.parametrize("args, message", [
    (("weat", "--seed", "-1"), "'--seed': --seed (seed= in Python) of analysis 'weat' must be an "
                               "integer from 0 to 9,223,372,036,854,775,807; got -1"),
    (("weat", "--seed", str(2**64)), "must be an integer from 0 to"),
    (("weat", "--n-permutations", "99999999999999999999999"),
     "of analysis 'weat' must be an integer from 2 to 10,000,000; got 99999999999999999999999"),
    (("weat", "--n-bootstrap", "-3"), "must be an integer from 0 to 100,000; got -3"),
    (("weat", "--n-permutations", "ten"), "must be an integer from 2 to 10,000,000; got 'ten'"),
    (("intersectional", "--seed", str(2**32)), "must be an integer from 0 to 4,294,967,295"),
    (("intersectional", "--C", "inf"), "'--C': --C (C= in Python) of analysis 'intersectional' "
                                       "must be a finite number > 0; got inf"),
    (("valence-subspace", "--C", "nan"), "must be a finite number > 0; got nan"),
    (("valence-subspace", "--cv-folds", "26"), "must be an integer from 0 to 25; got 26"),
    (("ceat", "--n-samples", "1"), "'--n-samples': --n-samples (n_samples= in Python) of analysis 'ceat' "
                                 "must be an integer from 2 to"),
])
def test_numbers_outside_their_declared_bounds_are_usage_errors(tmp_path: Path, args: tuple,
                                                                message: str) -> None:
    # refused while parsing: the (absent) store is never opened
    code, out = _run(*args, "--store", tmp_path / "none.zarr", "--out", tmp_path / "o")
    assert code == 2 and message in out, out


def test_help_shows_the_bounds_and_the_ceat_bootstrap_rule() -> None:
    code, out = _run("weat", "--help")
    assert code == 0 and "[range: 0..9223372036854775807]" in " ".join(out.split())
    code, out = _run("ceat", "--help")
    assert "0 (no bootstrap CI) or at least 20" in " ".join(out.split())


@pytest.mark.parametrize("spec", ["", " ", "gpt2="])
def test_an_empty_store_path_is_refused(tmp_path: Path, spec: str) -> None:
    code, out = _run("weat", "--store", spec, "--out", tmp_path / "o")
    assert code == 2 and "names no store: the path is empty" in out, out


def test_a_store_path_with_an_equals_sign_is_a_path(weird_store: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(weird_store.parent)  # 'we=ird.zarr' reads as label 'we', path 'ird.zarr'
    code, out = _run("weat", "--store", weird_store.name, "--out", tmp_path / "o", "--no-plots",
                     "--n-bootstrap", "0", "--n-permutations", "100")
    assert code == 0, out
    # a LABEL=PATH spec still names the model
    code, out = _run("weat", "--store", f"toy={weird_store}", "--out", tmp_path / "o2",
                     "--no-plots", "--n-bootstrap", "0", "--n-permutations", "100", "--json")
    assert code == 0 and '"toy"' in (tmp_path / "o2" / "weat.json").read_text(), out


def test_an_unreachable_scheduler_is_one_clear_error(weird_store: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    code, out = _run("weat", "--store", weird_store, "--out", tmp_path / "o", "--no-plots",
                     "--n-bootstrap", "0", "--scheduler", "garbage")
    assert code == 1 and "cannot connect to the dask scheduler 'garbage'" in out, out
    assert "leave --scheduler out" in out
