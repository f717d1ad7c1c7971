"""The hostile reviewer's cases against ``emb analyze`` that earlier campaigns did not try, each
run as a user runs it (tests/_hostile.py) where the CLI is the point, and through the Python API
where the same value reaches the analysis function: option values that name nothing (``''``,
``','``), option values at the edge of what an option allows, and odd but valid stores."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from emb.analyses import ANALYSES
from emb.errors import AnalysisError
from tests._hostile import assert_refused, run_emb
from tests.analyses._synthetic import (
    ceat_dataset,
    ibd_dataset,
    vast_dataset,
    weat_dataset,
    write_store,
)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hostile-stores")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on fixed-width string dtypes
        return {
            "weat": write_store(root / "weat.zarr", {"weat": weat_dataset(n_layers=2, d=8)}),
            "vast": write_store(root / "vast.zarr",
                                {"vast": vast_dataset(n_words=12, settings=("bleached", "random"),
                                                      n_layers=2, poolings=("last",))},
                                model_id="toy-v"),
            "ibd": write_store(root / "ibd.zarr", {"ibd": ibd_dataset(n_layers=2)}, model_id="toy-i"),
            "ceat": write_store(root / "ceat.zarr", {"ceat": ceat_dataset()}, model_id="toy-c"),
        }


def _analyze(name: str, store: Path, out: Path, *args: str) -> tuple[str, ...]:
    return ("analyze", name, "--store", str(store), "--out", str(out), "--no-plots", "--quiet",
            *args)


# -- a list option given only separators ---------------------------------------------------------
#: ``--setting ''`` (or ``','``, ``' '``) splits into no value at all; these analyses took the empty
#: list for a selection and failed deep inside (exit 3, "internal error: ValueError: need at least
#: one array to stack" / "TypeError: unbound method set.intersection() needs an argument" /
#: "TypeError: can only concatenate xarray Dataset and DataArray objects, got NoneType").
EMPTY_LISTS = [
    ("weat", "weat", "--setting", "settings", ("--n-permutations", "20", "--n-bootstrap", "0")),
    ("mac", "weat", "--setting", "settings", ()),
    ("ibd", "ibd", "--setting", "settings", ()),
    ("vast", "vast", "--nullify-layer", "nullify_layers", ("--n-subsets", "2", "--k-max", "2")),
    ("ceat", "ceat", "--test", "tests", ("--n-samples", "20", "--n-bootstrap", "0")),
]


@pytest.mark.parametrize("name, store, flag, keyword, extra", EMPTY_LISTS,
                         ids=[f"{c[0]}{c[2]}" for c in EMPTY_LISTS])
def test_a_list_option_of_separators_alone_is_one_clear_error(
    stores: dict[str, Path], tmp_path: Path, name: str, store: str, flag: str, keyword: str,
    extra: tuple[str, ...],
) -> None:
    outcome = run_emb(*_analyze(name, stores[store], tmp_path / "o", *extra, flag, ","))
    assert_refused(outcome, codes=(2,), mentions=[flag, "is empty", "leave it out"])
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("name, store, flag, keyword, extra", EMPTY_LISTS,
                         ids=[f"{c[0]}{c[2]}" for c in EMPTY_LISTS])
def test_an_empty_list_in_python_is_an_analysis_error(
    stores: dict[str, Path], name: str, store: str, flag: str, keyword: str, extra: tuple[str, ...],
) -> None:
    import emb

    ds = emb.open_store(str(stores[store])).dataset(ANALYSES[name].suite)
    with pytest.raises(AnalysisError, match=f"{keyword} is empty; give at least one or leave it out"):
        ANALYSES[name].function(ds, **{keyword: []})


def _example_store(path: Path, name: str, *, constant: bool = False) -> Path:
    """A store of the analysis record's example suite of ``name`` (``constant``: every embedding
    vector the same)."""
    ds = ANALYSES[name].example()[0].compute()
    if constant:
        ds["embedding"] = ds["embedding"].copy(
            data=np.ones(ds["embedding"].shape, ds["embedding"].dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on fixed-width string dtypes
        return write_store(path, {ANALYSES[name].suite: ds})


# -- --cv-folds 0 ("none", as the option's message says) -------------------------------------------
def test_valence_subspace_without_cross_validation_reports_its_valnorm(tmp_path: Path) -> None:
    """``--cv-folds 0`` (no cross-validated accuracy, which the option allows) left the table
    without a row (every row dropped for its NaN accuracy) and the summary failed on it (exit 3,
    "internal error: ValueError: attempt to get argmax of an empty sequence"). The ValNorm of the
    projection is computed all the same: it is reported, and the accuracy is said to be absent,
    never printed as nan."""
    store = _example_store(tmp_path / "i.zarr", "valence-subspace")
    out = tmp_path / "o"
    ok = run_emb("analyze", "valence-subspace", "--store", str(store), "--out", str(out),
                 "--no-plots", "--quiet", "--cv-folds", "0")
    assert ok.code == 0, str(ok)
    assert "nan" not in ok.stdout.lower(), ok.stdout
    assert "not cross-validated" in ok.stdout, ok.stdout
    import pandas as pd

    table = pd.read_csv(out / "valence_subspace.csv")
    assert len(table) > 0 and table["r_projection"].notna().all()
    assert table["svc_accuracy"].isna().all()
    refused = run_emb("analyze", "valence-subspace", "--store", str(store), "--out",
                      str(tmp_path / "o2"), "--no-plots", "--quiet", "--cv-folds", "0",
                      "--no-valnorm")
    assert_refused(refused, codes=(1,), mentions=["cv_folds=0", "valnorm=False", "nothing"])


# -- seed-sensitivity with sets too small to leave a word out --------------------------------------
def test_seed_sensitivity_on_the_smallest_sets_prints_no_nan(stores: dict[str, Path],
                                                             tmp_path: Path) -> None:
    """2 words per target set and 1 per attribute set (a defined WEAT): no word can be left out,
    so there is no influence and no jackknife SE. The summary printed "nan (nan, +nan)" as the
    most influential word, after two numpy RuntimeWarnings (divide by zero, invalid value)."""
    ok = run_emb(*_analyze("seed-sensitivity", stores["weat"], tmp_path / "o", "--x",
                           "flower0,flower1", "--y", "insect0,insect1", "--a", "caress", "--b",
                           "abuse", "--n-subsets", "20"))
    assert ok.code == 0, str(ok)
    assert "nan" not in ok.output.lower(), str(ok)
    assert "RuntimeWarning" not in ok.stderr, str(ok)
    assert "no word can be left out" in ok.stdout, str(ok)


# -- a store schema version that no emb wrote -------------------------------------------------------
@pytest.mark.parametrize("version, advice", [
    (99, "upgrade emb"),  # a newer emb's store: the one case where upgrading helps
    ("4", "damaged"), (0, "damaged"), ([4], "damaged"),
])
def test_a_schema_version_no_emb_wrote_is_called_damaged_not_newer(
    stores: dict[str, Path], tmp_path: Path, version: object, advice: str,
) -> None:
    """``emb info``/``emb analyze`` said "upgrade emb" for a version of "4" (text), 0 or null: no
    emb reads those, an upgrade does not help; the attribute is damaged."""
    import json
    import shutil

    store = tmp_path / "s.zarr"
    shutil.copytree(stores["weat"], store)
    root = json.loads((store / "zarr.json").read_text())
    root["attributes"]["emb_schema_version"] = version
    (store / "zarr.json").write_text(json.dumps(root))
    message = assert_refused(run_emb("info", str(store)), codes=(1,), mentions=["schema version", advice])
    if advice != "upgrade emb":
        assert "upgrade emb" not in message
    report = run_emb("validate", str(store))
    assert report.code == 2 and advice in report.stdout, str(report)
    if advice != "upgrade emb":
        assert "upgrade emb" not in report.stdout, str(report)


# -- a store whose vectors are all the same (a broken checkpoint, a collapsed layer) ------------------
def _constant_store(path: Path, name: str) -> Path:
    """The record's example suite of ``name`` with every embedding vector the same."""
    return _example_store(path, name, constant=True)


@pytest.mark.parametrize("name, extra", [
    ("stereotype", ()),
    ("ceat", ("--n-samples", "20", "--n-bootstrap", "0", "--n-permutations", "0")),
])
def test_an_analysis_of_identical_vectors_draws_and_prints_no_nan(tmp_path: Path, name: str,
                                                                  extra: tuple[str, ...]) -> None:
    """Every d is undefined (no variance): the figures failed (exit 3: "zero-size array to
    reduction operation maximum" in stereotype's layer heat map, "index -1 is out of bounds" in
    CEAT's declared cell) and stereotype's headline read "d = +nan, p = nan … higher: male_names"."""
    store = _constant_store(tmp_path / "c.zarr", name)
    ok = run_emb("analyze", name, "--store", str(store), "--out", str(tmp_path / "o"), "--quiet",
                 *extra)
    assert ok.code == 0, str(ok)
    # the summary of a result without numbers says so in words ("every cell is NaN")
    assert "nan" not in ok.stdout.lower().replace("every cell is nan", ""), ok.stdout
    assert "higher:" not in ok.stdout, ok.stdout


# -- another family's suite -------------------------------------------------------------------------
def test_vast_on_an_intersectional_suite_names_the_lexicon_plainly(tmp_path: Path) -> None:
    """``emb analyze vast --suite intersectional`` (its words have a lexicon, but in the settings
    'phrase' and 'alone') said "lexicon np.str_('toy') has no items in setting 'phrase'"."""
    store = _example_store(tmp_path / "i.zarr", "intersectional")
    outcome = run_emb("analyze", "vast", "--store", str(store), "--suite", "intersectional",
                      "--out", str(tmp_path / "o"), "--no-plots", "--quiet")
    message = assert_refused(outcome, codes=(1,), mentions=["lexicon 'toy'", "setting"])
    assert "np." not in message


def test_sc_weat_on_a_setting_without_lexicon_words_says_which_settings_have_them(
    tmp_path: Path,
) -> None:
    """``emb analyze sc-weat --suite intersectional`` (its lexicon words only in the setting
    'alone') said "no words given to select; pass at least one word", though none was given."""
    store = _example_store(tmp_path / "i.zarr", "intersectional")
    outcome = run_emb("analyze", "sc-weat", "--store", str(store), "--suite", "intersectional",
                      "--out", str(tmp_path / "o"), "--no-plots", "--quiet")
    message = assert_refused(outcome, codes=(1,), mentions=["lexicon 'toy'", "'phrase'",
                                                            "'alone'", "--setting"])
    assert "no words given" not in message
    # in 'alone' it has lexicon words but no polar words of that lexicon
    outcome = run_emb("analyze", "sc-weat", "--store", str(store), "--suite", "intersectional",
                      "--setting", "alone", "--out", str(tmp_path / "o"), "--no-plots", "--quiet")
    message = assert_refused(outcome, codes=(1,), mentions=["pleasant polar words", "--a"])
    assert "no words given" not in message


def test_seed_sensitivity_says_how_many_words_a_tiny_fraction_keeps(stores: dict[str, Path],
                                                                    tmp_path: Path) -> None:
    """``--fraction 0.001`` (allowed: > 0) keeps 2 words of each target set and 1 of each
    attribute set (the floor); the note said the subsets kept "0% of each of X, Y, A and B"."""
    ok = run_emb(*_analyze("seed-sensitivity", stores["weat"], tmp_path / "o", "--fraction",
                           "0.001", "--n-subsets", "20"))
    assert ok.code == 0, str(ok)
    assert "keeping 0%" not in ok.stdout, ok.stdout
    assert "0.1%" in ok.stdout and "at least 2 words of X and of Y and 1 of A and of B" in ok.stdout


def test_valence_subspace_of_identical_vectors_prints_no_nan_and_the_n_of_its_r(
    tmp_path: Path,
) -> None:
    """Identical vectors: the cosine SC-WEAT is 0/0 for every word, so its ValNorm is undefined.
    The headline read "… by projection vs nan [nan, nan] by cosine (n = 0)", and the table's n
    was the cosine's 0 beside the projection's r over 40 words."""
    import pandas as pd

    store = _constant_store(tmp_path / "c.zarr", "valence-subspace")
    out = tmp_path / "o"
    ok = run_emb("analyze", "valence-subspace", "--store", str(store), "--out", str(out),
                 "--quiet")
    assert ok.code == 0, str(ok)
    headline = ok.stdout.splitlines()[2]
    assert "nan" not in headline.lower() and "undefined by cosine" in headline, ok.stdout
    # every word's projection is the same number: its r is undefined too, not the ~1e-16 of
    # the rounding of their mean (which also named a "highest projection r" of 9e-17)
    assert "r = undefined by projection" in headline, ok.stdout
    assert "highest projection r" not in ok.stdout, ok.stdout
    table = pd.read_csv(out / "valence_subspace.csv")
    assert (table["n"] == table["n"].max()).all() and table["n"].max() > 3
    assert table["r_cosine"].isna().all() and table["r_projection"].isna().all()
    assert (out / "valence_subspace_valnorm_curves.png").stat().st_size > 0


def test_numbers_made_undefined_are_one_plain_warning(tmp_path: Path) -> None:
    """numpy's "warning: invalid value encountered in divide (RuntimeWarning)" (SC-WEAT's 0/0 of
    identical vectors; "Degrees of freedom <= 0 for slice" in seed-sensitivity) named neither the
    input nor what it means: one plain line per command says it."""
    store = _constant_store(tmp_path / "c.zarr", "sc-weat")
    ok = run_emb("analyze", "sc-weat", "--store", str(store), "--out", str(tmp_path / "o"),
                 "--quiet")
    assert ok.code == 0, str(ok)
    lines = [line for line in ok.stderr.splitlines() if line.startswith("warning:")]
    assert lines == [line for line in lines if "encountered" not in line and "Runtime" not in line]
    assert sum("some numbers are undefined" in line for line in lines) == 1, ok.stderr


def test_ibd_with_a_group_given_twice_is_one_clear_error(stores: dict[str, Path],
                                                         tmp_path: Path) -> None:
    """``--group african_female --group african_female`` failed deep in pandas (exit 3: "Length
    mismatch: Expected axis has 408 elements, new values have 216 elements")."""
    outcome = run_emb(*_analyze("ibd", stores["ibd"], tmp_path / "o", "--group", "african_female",
                                "--group", "african_female,mexican_female"))
    assert_refused(outcome, codes=(1,), mentions=["['african_female']", "twice", "once"])
    assert not (tmp_path / "o").exists()


# -- a selection that names a value twice ------------------------------------------------------------
#: Each failed deep inside (exit 3: "Length mismatch", "conflicting sizes for dimension",
#: "index 4 is out of bounds", "too many indices"), or (weat, valnorm) computed a cell twice.
REPEATS = [
    ("weat", "weat", "--setting", "bleached,bleached", "settings", ("--n-permutations", "20")),
    ("sc-weat", "vast", "--setting", "bleached,bleached", "settings", ()),
    ("valnorm", "vast", "--setting", "bleached,bleached", "settings", ()),
    ("vast", "vast", "--pooling", "last,last", "poolings", ("--n-subsets", "2", "--k-max", "2")),
    ("vast", "vast", "--rating", "valence,valence", "ratings", ("--n-subsets", "2", "--k-max", "2")),
    ("ibd", "ibd", "--setting", "bleached,bleached", "settings", ()),
    ("ceat", "ceat", "--test", "T1,T1", "tests", ("--n-samples", "20", "--n-bootstrap", "0")),
]


@pytest.mark.parametrize("name, store, flag, value, keyword, extra", REPEATS,
                         ids=[f"{c[0]}{c[2]}" for c in REPEATS])
def test_a_selection_naming_a_value_twice_is_one_clear_error(
    stores: dict[str, Path], tmp_path: Path, name: str, store: str, flag: str, value: str,
    keyword: str, extra: tuple[str, ...],
) -> None:
    outcome = run_emb(*_analyze(name, stores[store], tmp_path / "o", *extra, flag, value))
    twice = value.split(",")[0]
    assert_refused(outcome, codes=(1,), mentions=[f"{keyword} lists ['{twice}'] twice",
                                                  "give each once"])
    assert not (tmp_path / "o").exists()


def test_vast_with_an_empty_rating_list_is_refused(stores: dict[str, Path], tmp_path: Path) -> None:
    """``--rating ','`` ran as if no rating had been given (ratings=[] in Python: no rating)."""
    import emb

    ds = emb.open_store(str(stores["vast"])).dataset("vast")
    with pytest.raises(AnalysisError, match="ratings is empty; give at least one or leave it out"):
        ANALYSES["vast"].function(ds, ratings=[])


# -- similarity: a benchmark named twice counted its pairs twice --------------------------------------
@pytest.fixture(scope="module")
def similarity_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The record's example similarity suite and its benchmark pairs as files (--pairs DIR)."""
    root = tmp_path_factory.mktemp("similarity")
    ds, options = ANALYSES["similarity"].example()
    pairs = root / "pairs"
    pairs.mkdir()
    for name, rows in options["pairs"].groupby("dataset"):
        rows[["word1", "word2", "score"]].to_csv(pairs / f"{name}.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return write_store(root / "s.zarr", {"similarity": ds.compute()}), pairs


@pytest.mark.parametrize("flag, value, found", [
    # n = 160 from 80 pairs read twice: a narrower CI and p 0.0746 instead of 0.211 (exit 0)
    ("--dataset", "ws353,ws353", "datasets lists ['ws353'] twice"),
    ("--pooling", "last,last", "poolings lists ['last'] twice"),  # exit 3: InvalidIndexError
    ("--pooling", ",", "--pooling is empty"),  # exit 3: "Dimension '__loopdim1__' …"
    ("--dataset", ",", "--dataset is empty"),  # "… holds none of the similarity files"
])
def test_similarity_refuses_a_benchmark_or_pooling_named_twice_or_not_at_all(
    similarity_store: tuple[Path, Path], tmp_path: Path, flag: str, value: str, found: str,
) -> None:
    store, pairs = similarity_store
    outcome = run_emb("analyze", "similarity", "--store", str(store), "--pairs", str(pairs),
                      "--out", str(tmp_path / "o"), "--no-plots", "--quiet", flag, value)
    # an empty list is the CLI's usage error (2), a repeat the analysis' (1)
    assert_refused(outcome, codes=(2,) if "empty" in found else (1,), mentions=[found])
    assert not (tmp_path / "o").exists()


def test_stereotype_refuses_a_comparison_given_twice(tmp_path: Path) -> None:
    """``--group female_names,male_names`` twice wrote 576 rows for 72 (every row 8 times) and
    printed each headline line repeatedly, with exit 0."""
    store = _example_store(tmp_path / "s.zarr", "stereotype")
    outcome = run_emb("analyze", "stereotype", "--store", str(store), "--out", str(tmp_path / "o"),
                      "--no-plots", "--quiet", "--group", "female_names,male_names",
                      "--group", "female_names,male_names")
    assert_refused(outcome, codes=(1,), mentions=["('female_names', 'male_names')", "twice"])


def test_sc_weat_refuses_a_target_word_given_twice(stores: dict[str, Path], tmp_path: Path) -> None:
    """``--word toy0000,toy0000,toy0001`` wrote toy0000's rows 4 times over (xarray aligning a
    repeated label), counted it twice in n_words and fitted the residual line on the copies."""
    outcome = run_emb(*_analyze("sc-weat", stores["vast"], tmp_path / "o", "--word",
                                "toy0000,toy0000,toy0001"))
    assert_refused(outcome, codes=(1,), mentions=["words lists ['toy0000'] twice"])
    assert not (tmp_path / "o").exists()


# -- fsspec's chained zip URLs ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def zipped(stores: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    import emb

    target = tmp_path_factory.mktemp("zipped") / "weat.zip"
    emb.open_store(str(stores["weat"])).to_zip(str(target))
    return target


@pytest.mark.parametrize("form", ["zip://::file://{}", "zip::{}", "zip://::{}"])
def test_a_store_zip_opens_through_fsspecs_chained_zip_url(zipped: Path, tmp_path: Path,
                                                           form: str) -> None:
    """``zip://::file:///x.zip`` (fsspec's form) said "cannot reach … (reading):
    FileNotFoundError … check that the server is running", and ``zip::/x.zip`` "no store at
    zip::/x.zip: the zip file does not exist", of a store zip that is there."""
    url = form.format(zipped)
    ok = run_emb(*_analyze("mac", url, tmp_path / "o"))  # type: ignore[arg-type]
    assert ok.code == 0, str(ok)
    assert (tmp_path / "o" / "mac.csv").is_file()


def test_a_path_inside_a_zip_url_is_one_clear_error(zipped: Path, tmp_path: Path) -> None:
    outcome = run_emb("info", f"zip://weat::file://{zipped}")
    assert_refused(outcome, codes=(1,), mentions=["inside the zip", "zip::"])


@pytest.mark.parametrize("name, store, flag, value", [
    ("weat", "weat", "--test", ""), ("sc-weat", "vast", "--lexicon", " "),
])
def test_an_empty_single_value_is_refused_not_taken_for_the_default(
    stores: dict[str, Path], tmp_path: Path, name: str, store: str, flag: str, value: str,
) -> None:
    """``--test ''`` ran the default tests and ``--lexicon ''`` the default lexicon, quietly."""
    outcome = run_emb(*_analyze(name, stores[store], tmp_path / "o", flag, value))
    assert_refused(outcome, codes=(2,), mentions=[f"{flag} is empty", "leave it out"])
    assert not (tmp_path / "o").exists()
