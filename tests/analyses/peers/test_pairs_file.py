"""RIPA's explicit pairs (``--pairs FILE``): the pairs a study means, read from a CSV (x, y and,
for several tests, test); every fault of the file is one AnalysisError naming it and the lines."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emb._pair_files import read_target_pairs
from emb.analyses import ANALYSES
from emb.analyses.peers import ripa
from emb.analyses.stats import peers as kernels
from emb.errors import AnalysisError


@pytest.fixture(scope="module")
def example():
    ds, _ = ANALYSES["ripa"].example()
    return ds


def _ripa(ds, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ripa(ds, **kwargs).compute()


def test_given_pairs_are_the_pairs_used(example, tmp_path: Path) -> None:
    default = _ripa(example, tests=["WEAT1"])
    xs, ys = (json.loads(default.attrs["words"])["WEAT1"][r] for r in ("X", "Y"))
    crossed = [(xs[i], ys[len(ys) - 1 - i]) for i in range(4)]  # another pairing, four pairs
    path = tmp_path / "pairs.csv"
    path.write_text("x,y\n" + "".join(f"{x},{y}\n" for x, y in crossed), encoding="utf-8")
    got = _ripa(example, tests=["WEAT1"], pairs=path)
    assert int(got.n_pairs.sel(test="WEAT1")) == 4
    assert json.loads(got.attrs["pairs"]) == {"WEAT1": [list(p) for p in crossed]}
    assert "pairs.csv" in got.attrs["pairing"]
    # the values are the kernel's over those pairs (indices into X and Y)
    cell = dict(setting="bleached", pooling="last", layer=1)
    words = json.loads(default.attrs["words"])["WEAT1"]
    items = [w for role in "XYAB" for w in words[role]]
    v = example.embedding.sel(**{k: v for k, v in cell.items()})
    text = np.asarray(example["word"].values).astype(str)
    setting = np.asarray(example["setting"].values).astype(str) if "setting" in example.coords else None
    rows = [int(np.flatnonzero((text == w) & ((setting == "bleached") if setting is not None and setting.ndim else True))[0])
            for w in items]
    emb_ = np.asarray(v.isel(item=rows).values, dtype=np.float64)[None]
    pairs = np.array([[xs.index(x), ys.index(y)] for x, y in crossed])
    want = kernels.ripa_sets(emb_, pairs, len(words["X"]), len(words["Y"]), len(words["A"]))[0]
    np.testing.assert_allclose([float(got.ripa_a.sel(test="WEAT1", **cell)),
                                float(got.ripa_b.sel(test="WEAT1", **cell))], want, rtol=0, atol=1e-12)
    assert float(got.ripa.sel(test="WEAT1", **cell)) == pytest.approx(want[0] - want[1], abs=1e-12)
    # re-pairing changes the value: the pairing is a choice the table must show
    assert float(default.ripa.sel(test="WEAT1", **cell)) != pytest.approx(float(got.ripa.sel(test="WEAT1", **cell)))


def test_a_pair_of_words_not_in_the_store_is_left_out_and_named(example, tmp_path: Path) -> None:
    words = json.loads(_ripa(example, tests=["WEAT1"]).attrs["words"])["WEAT1"]
    path = tmp_path / "pairs.csv"
    path.write_text(f"test,x,y\nWEAT1,{words['X'][0]},{words['Y'][0]}\nWEAT1,zebra,{words['Y'][1]}\n",
                    encoding="utf-8")
    got = _ripa(example, tests=["WEAT1"], pairs=path)
    assert int(got.n_pairs.sel(test="WEAT1")) == 1
    left = json.loads(got.attrs["pairs_left_out"])["WEAT1"]
    assert len(left) == 1 and "zebra" in left[0] and "line 3" in left[0]
    summary = ANALYSES["ripa"].summary(got, ANALYSES["ripa"].tables(got))
    assert any("WEAT1: 1 pair(s) of the pairs file left out" in n for n in summary.notes)


@pytest.mark.parametrize(("text", "words"), [
    ("", ["is empty"]),
    ("a,b\nx,y\n", ["lacks the column(s) ['x', 'y']"]),
    ("x,y,x\nrose,ant,lily\n", ["twice"]),
    ("x,y\nrose\n", ["line 2 has 1 fields"]),
    ("x,y\nrose,\n", ["line 2 has an empty word"]),
    ("test,x,y\n,rose,ant\n", ["line 2 has an empty test name"]),
    ("x,y\n", ["has no pairs"]),
    ("x,y\nrose,ant\nrose,bee\n", ["line 3 pairs the X word 'rose'", "first on line 2"]),
    ("x,y\nro\tse,ant\n", ["line 2"]),
    ('x,y\n"rose,ant\n', ["line 2 has 1 fields"]),  # an unclosed quote runs to the end
])
def test_a_bad_pairs_file_is_one_clear_error(tmp_path: Path, text: str, words: list[str]) -> None:
    path = tmp_path / "pairs.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AnalysisError) as err:
        read_target_pairs(path, error=AnalysisError, what="--pairs file")
    assert str(path) in str(err.value)
    for word in words:
        assert word in str(err.value), str(err.value)


def test_binary_fifo_missing_and_latin1_files_are_refused(tmp_path: Path) -> None:
    cases = {"binary": b"x,y\n\x00\x01", "latin": "x,y\ncaf\xe9,ant\n".encode("latin-1")}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, word in ((tmp_path / "binary", "NUL byte"), (tmp_path / "latin", "not UTF-8"),
                       (fifo, "not a regular file"), (tmp_path / "nothing", "does not exist")):
        with pytest.raises(AnalysisError, match=word):
            read_target_pairs(path, error=AnalysisError, what="--pairs file")


def test_a_file_naming_another_test_or_lacking_the_test_column_is_refused(example, tmp_path) -> None:
    path = tmp_path / "pairs.csv"
    path.write_text("test,x,y\nWEAT9,a,b\n", encoding="utf-8")
    with pytest.raises(AnalysisError, match=r"names the test\(s\) \['WEAT9'\]"):
        _ripa(example, pairs=path)
    path.write_text("x,y\na,b\n", encoding="utf-8")
    with pytest.raises(AnalysisError, match="has no test column but the run has 2 tests"):
        _ripa(example, pairs=path)


def test_the_cli_takes_the_pairs_file(example, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from emb.cli.main import main
    from tests.analyses._synthetic import weat_dataset, write_store

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "s.zarr", {"weat": weat_dataset(n_layers=2)})
    words = json.loads(_ripa(example, tests=["WEAT1"]).attrs["words"])["WEAT1"]
    path = tmp_path / "pairs.csv"
    path.write_text(f"x,y\n{words['X'][0]},{words['Y'][0]}\n{words['X'][1]},{words['Y'][1]}\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["analyze", "ripa", "--store", str(store), "--test", "WEAT1",
                                       "--pairs", str(path), "--out", str(out), "--no-plots", "-q"])
    assert result.exit_code == 0, result.output
    import pandas as pd

    table = pd.read_csv(out / "ripa.csv")
    assert set(table["n_pairs"]) == {2} and {"ripa", "ripa_a", "ripa_b"} <= set(table.columns)
    bad = CliRunner().invoke(main, ["analyze", "ripa", "--store", str(store), "--pairs",
                                    str(tmp_path / "none.csv"), "--out", str(tmp_path / "o2"), "-q"])
    assert bad.exit_code != 0 and "does not exist" in bad.output and "Traceback" not in bad.output


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=300) | st.text(alphabet="xyt,es\n\"\t r0a\x00é", max_size=120).map(
    lambda t: t.encode("utf-8")))
def test_fuzz_the_pairs_reader(tmp_path_factory, data: bytes) -> None:
    """Any bytes: a list of pairs or one AnalysisError, never another exception."""
    path = tmp_path_factory.mktemp("fuzz") / "pairs.csv"
    path.write_bytes(data)
    try:
        pairs = read_target_pairs(path, error=AnalysisError)
    except AnalysisError as err:
        assert str(path) in str(err)
    else:
        assert pairs and all(p.x and p.y and "\n" not in p.x + p.y for p in pairs)
