"""Hostile word-pair files (issue 20): ``emb extract --suite similarity --pairs DIR`` and
``emb analyze similarity --pairs DIR`` read them with one reader (emb._pair_files).

Binary, empty, header-only, Latin-1 files and non-numeric, NaN or infinite scores each end in
exit 1 with one line naming the file and the line; a NaN score never reaches the ranks.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from emb._pair_files import read_pair_file
from emb.analyses.similarity import load_pairs, word_similarity
from emb.errors import AnalysisError, SuiteError
from emb.stimuli.suites import build_suite
from tests._hostile import assert_refused, run_emb
from tests.analyses._synthetic import similarity_dataset, similarity_pairs

GOOD = "word1,word2,score\nlove,hate,1.5\nman,woman,3\ncat,dog,2\nking,queen,5\nsad,happy,1\n"
WORDS = ["love", "hate", "man", "woman", "cat", "dog", "king", "queen", "sad", "happy"]

# (case, file bytes, what the one line must name besides the file)
BAD = [
    ("binary", bytes(range(256)) * 4, ["line 1", "NUL byte"]),
    ("utf16", GOOD.encode("utf-16"), ["line 1", "NUL byte"]),
    ("empty", b"", ["is empty"]),
    ("blank", b"\n\n  \n", ["is empty"]),
    ("header-only", b"word1,word2,score\n", ["no pairs"]),
    ("latin1", "word1,word2,score\nlove,hate,1\ncaf\xe9,tea,5\n".encode("latin-1"),
     ["line 3", "not UTF-8"]),
    ("non-numeric", b"word1,word2,score\nlove,hate,1\nman,woman,high\n", ["line 3", "'high'"]),
    ("nan", b"word1,word2,score\nlove,hate,nan\nman,woman,3\ncat,dog,2\n", ["line 2", "'nan'"]),
    ("inf", b"word1,word2,score\nlove,hate,1\nman,woman,-inf\ncat,dog,2\n", ["line 3", "'-inf'"]),
    ("huge", b"word1,word2,score\nlove,hate,1e400\nman,woman,3\ncat,dog,2\n", ["line 2", "finite"]),
    ("empty-word", b"word1,word2,score\nlove,,1\n", ["line 2", "empty word"]),
    ("extra-fields", b"word1,word2,score\nlove,hate,1,2,3\n", ["line 2", "5 fields"]),
    ("short-row", b"word1,word2,score\nlove,hate\n", ["line 2", "2 fields"]),
    ("no-score", b"word1,word2\nlove,hate\n", ["['score']"]),
    ("twice", b"word1,word1,word2,score\nlove,hate,x,1\n", ["twice"]),
    ("nul-in-word", b"word1,word2,score\nlo\x00ve,hate,1\n", ["line 2", "NUL byte"]),
]


def _pairs_dir(tmp_path: Path, data: bytes) -> Path:
    directory = tmp_path / "pairs"
    directory.mkdir(exist_ok=True)
    (directory / "ws353.csv").write_bytes(data)
    return directory


@pytest.fixture(scope="module")
def vectors_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("vectors") / "tiny.txt"
    rng = np.random.default_rng(0)
    rows = [f"{w} " + " ".join(f"{x:.4f}" for x in rng.normal(size=8)) for w in WORDS]
    path.write_text(f"{len(WORDS)} 8\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def similarity_store(tmp_path_factory, vectors_file) -> Path:
    root = tmp_path_factory.mktemp("store")
    directory = _pairs_dir(root, GOOD.encode())
    store = root / "sim.zarr"
    done = run_emb("extract", "--model", vectors_file, "--suite", "similarity", "--pairs",
                   directory, "--dataset", "ws353", "--store", store, "-q", timeout=120)
    assert done.code == 0, done
    return store


@pytest.mark.parametrize(("case", "data", "mentions"), BAD, ids=[b[0] for b in BAD])
def test_bad_pair_files_are_refused_by_extract(tmp_path, vectors_file, case, data, mentions):
    directory = _pairs_dir(tmp_path, data)
    store = tmp_path / "s.zarr"
    outcome = run_emb("extract", "--model", vectors_file, "--suite", "similarity", "--pairs",
                      directory, "--dataset", "ws353", "--store", store, "-q", timeout=60)
    assert_refused(outcome, codes=(1,), mentions=["ws353.csv", *mentions])
    assert not store.exists()


#: the analysis' command line on a few of them (the same reader: every case at the library level)
CLI_ANALYSIS = ("binary", "empty", "header-only", "latin1", "non-numeric", "nan")


@pytest.mark.parametrize(("case", "data", "mentions"), [b for b in BAD if b[0] in CLI_ANALYSIS],
                         ids=list(CLI_ANALYSIS))
def test_bad_pair_files_are_refused_by_the_analysis(tmp_path, similarity_store, case, data,
                                                     mentions):
    directory = _pairs_dir(tmp_path, data)
    out = tmp_path / "out"
    outcome = run_emb("analyze", "similarity", "--store", similarity_store, "--pairs",
                      directory, "--out", out, "--no-plots", "--quiet", timeout=60)
    assert_refused(outcome, codes=(1,), mentions=["ws353.csv", *mentions])
    assert not out.exists()


@pytest.mark.parametrize(("case", "data", "mentions"), BAD, ids=[b[0] for b in BAD])
def test_bad_pair_files_are_refused_by_load_pairs(tmp_path, case, data, mentions):
    directory = _pairs_dir(tmp_path, data)
    with pytest.raises(AnalysisError) as caught:
        load_pairs(directory, datasets=["ws353"])
    message = str(caught.value)
    assert "\n" not in message and "ws353.csv" in message
    assert all(m in message for m in mentions), message


def test_a_good_pair_file_is_read_by_both(tmp_path, similarity_store):
    directory = _pairs_dir(tmp_path, ("\ufeff" + GOOD.replace("\n", "\r\n")).encode())
    suite = build_suite("similarity", pairs=directory, datasets=["ws353"])
    assert sorted({i.word for i in suite.items}) == sorted(WORDS)
    pairs = load_pairs(directory, datasets=["ws353"])
    assert pairs["score"].tolist() == [1.5, 3.0, 2.0, 5.0, 1.0]
    out = tmp_path / "out"
    done = run_emb("analyze", "similarity", "--store", similarity_store, "--pairs",
                   directory, "--out", out, "--no-plots", "--quiet", "--k-max", "0", timeout=60)
    assert done.code == 0, done
    table = pd.read_csv(out / "similarity.csv")
    assert table["n"].tolist() == [5]


def test_the_readers_raise_their_own_error_class(tmp_path):
    path = _pairs_dir(tmp_path, b"word1,word2,score\nlove,hate,x\n") / "ws353.csv"
    with pytest.raises(SuiteError, match=r"ws353\.csv: 1 bad line\(s\): line 2: score 'x'"):
        read_pair_file(path, error=SuiteError)
    with pytest.raises(AnalysisError, match="line 2"):
        load_pairs(path.parent, datasets=["ws353"])
    tsv = tmp_path / "rw.tsv"
    tsv.write_bytes(b"# comment\nlove\thate\t1\nman\twoman\tNaN\nx\n")
    with pytest.raises(AnalysisError, match=r"2 bad line\(s\): line 3: score 'NaN' is not a finite "
                                            r"number; line 4 does not hold word1<TAB>word2<TAB>score"):
        load_pairs(tsv)


def test_a_single_csv_with_a_dataset_column(tmp_path):
    path = tmp_path / "all.csv"
    path.write_text("dataset,word1,word2,score\nws353,love,hate,1\nmen,cat,dog,2\n,a,b,3\n")
    with pytest.raises(AnalysisError, match="line 4 has an empty dataset"):
        load_pairs(path)
    path.write_text("dataset,word1,word2,score\nws353,love,hate,1\nmen,cat,dog,2\n")
    assert load_pairs(path, datasets=["men"]).to_dict("records") == [
        {"dataset": "men", "word1": "cat", "word2": "dog", "score": 2.0}
    ]


@pytest.mark.parametrize("bad", [math.nan, math.inf, "high", None])
def test_a_pairs_table_with_a_non_finite_score_is_refused_never_ranked(bad):
    ds, pairs = similarity_dataset(similarity_pairs(n_words=20, n_pairs=30))
    pairs = pairs.astype({"score": object})
    pairs.loc[3, "score"] = bad
    with pytest.raises(AnalysisError, match=r"1 of 45 pairs have a score that is not a finite "
                                            r"number \(rows \[3\]"):
        word_similarity(ds, pairs=pairs)
    with pytest.raises(AnalysisError, match=r"lacks the column\(s\) \['score'\]"):
        word_similarity(ds, pairs=pairs.drop(columns="score"))
