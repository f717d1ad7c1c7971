"""Hostile group files (issue 20): a user's groups must never be merged silently into the groups the
suite already holds, and a word must not sit on both sides of one comparison.

``--groups`` (stereotype) naming a group that ``--names``/``--terms`` fill, a names file whose sex
column holds something other than F/M (those rows fell out of both groups without a word), a polar
word in both pole lists (vast ``--polar``), a WEAT test with a word in both sets it compares.
``--ibd-groups``, ``--tests`` (weat, ceat) and ``--polar`` replace the built-in definition whole.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from emb.errors import SuiteError
from emb.stimuli.suites import build_suite
from emb.stimuli.suites.stereotype import read_names
from tests._hostile import assert_refused, run_emb


@pytest.fixture(scope="module")
def stereotype_files(data_dir: Path) -> dict[str, Path]:
    return {"dictionary": data_dir / "stereotype" / "seed_dictionary.csv",
            "names": data_dir / "names" / "ssa_top100.csv"}


def _groups(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "groups.csv"
    path.write_text("group,word,kind\n" + rows, encoding="utf-8")
    return path


def test_a_groups_file_naming_a_filled_group_is_refused_on_the_command_line(tmp_path,
                                                                             stereotype_files):
    vectors = tmp_path / "v.txt"
    vectors.write_text("1 2\nAlexa 1 0\n", encoding="utf-8")
    groups = _groups(tmp_path, "female_names,Alexa,name\n")
    store = tmp_path / "s.zarr"
    outcome = run_emb("extract", "--model", vectors, "--suite", "stereotype", "--dictionary",
                      stereotype_files["dictionary"], "--names", stereotype_files["names"],
                      "--groups", groups, "--store", store, "-q", timeout=120)
    assert_refused(outcome, codes=(1,), mentions=["groups.csv", "'female_names'", "merged",
                                                  "--names none"])
    assert not store.exists()


@pytest.mark.parametrize(
    ("rows", "options", "refused"),
    [
        ("female_names,Alexa,name\n", {}, ["'female_names'", "--names none"]),
        ("male_terms,dude,noun\n", {"names": "none"}, ["'male_terms'", "--terms none"]),
        ("nonbinary,they,pronoun\nmale_names,Alex,name\nfemale_terms,gal,noun\n", {},
         ["'male_names', 'female_terms'", "--names none or --terms none"]),
    ],
)
def test_groups_that_the_suite_already_fills_are_refused_not_merged(tmp_path, stereotype_files,
                                                                     rows, options, refused):
    groups = _groups(tmp_path, rows)
    kwargs = {"dictionary": stereotype_files["dictionary"], "names": stereotype_files["names"],
              "groups": groups, **options}
    with pytest.raises(SuiteError) as caught:
        build_suite("stereotype", **kwargs)
    assert all(r in str(caught.value) for r in refused), caught.value
    assert "groups.csv" in str(caught.value)


def test_a_built_in_group_name_is_the_users_own_when_the_suite_leaves_it_out(tmp_path,
                                                                              stereotype_files):
    groups = _groups(tmp_path, "female_names,Alexa,name\nmale_terms,dude,noun\n")
    suite = build_suite("stereotype", dictionary=stereotype_files["dictionary"], names="none",
                        terms="none", groups=groups)
    assert suite.parameters["groups"] == {"female_names": 1, "male_terms": 1}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("name,sex,rank\nMary,F,1\nJohn,M,1\nSam,Female,2\n", r"row\(s\) \[3\] have sex \['Female'\]"),
        ("name,sex,rank\nMary,F,1\nJohn,M,1\nAl,,2\n", r"row\(s\) \[3\] have sex \[''\]"),
        ("name,sex,rank\nMary,F,1\nJohn,M,1.5\n", r"row\(s\) \[2\] lack a name or an integer rank"),
    ],
)
def test_names_file_rows_that_would_be_dropped_silently_are_refused(tmp_path, table, message):
    path = tmp_path / "names.csv"
    path.write_text(table, encoding="utf-8")
    with pytest.raises(SuiteError, match=message):
        read_names(path)


def test_lower_case_sex_is_still_read(tmp_path):
    path = tmp_path / "names.csv"
    path.write_text("name,sex,rank\nMary,f,1\nJohn, m ,1\n", encoding="utf-8")
    names, _ = read_names(path)
    assert [(p.group, p.word) for p in names] == [("female_names", "Mary"), ("male_names", "John")]


def test_a_polar_word_on_both_poles_is_refused(tmp_path, data_dir):
    path = tmp_path / "polar.json"
    path.write_text(json.dumps({"pleasant": ["love", "joy"], "unpleasant": ["hate", "love"]}))
    with pytest.raises(SuiteError, match=r"polar\.json: \['love'\] are in both \$\.pleasant and "
                                         r"\$\.unpleasant"):
        build_suite("vast", lexicon=[str(data_dir / "lexica" / "bellezza.csv")], polar=path)


def test_a_weat_test_comparing_a_word_with_itself_is_refused(tmp_path):
    test = {"id": "T1", "target_x": {"name": "x", "words": ["rose", "tulip"]},
            "target_y": {"name": "y", "words": ["ant", "rose"]},
            "attribute_a": {"name": "a", "words": ["love"]},
            "attribute_b": {"name": "b", "words": ["hate"]}}
    path = tmp_path / "tests.json"
    path.write_text(json.dumps({"tests": [test]}))
    with pytest.raises(SuiteError, match=r"\['rose'\] are in both target_x and target_y"):
        build_suite("weat", tests=path)
    test["target_y"]["words"] = ["ant"]
    test["attribute_b"]["words"] = ["hate", "love"]
    path.write_text(json.dumps({"tests": [test]}))
    with pytest.raises(SuiteError, match=r"\['love'\] are in both attribute_a and attribute_b"):
        build_suite("weat", tests=path)


@pytest.mark.parametrize(
    ("suite", "option", "what"),
    [
        ("stereotype", "--groups", "groups file"),
        ("stereotype", "--names", "names file"),
        ("stereotype", "--extended", "extended dictionary"),
        ("ibd", "--ibd-groups", "IBD groups file"),
        ("weat", "--test", "WEAT test file"),
        ("similarity", "--pairs", "similarity file"),
    ],
)
def test_a_fifo_as_a_group_or_word_file_is_refused_not_waited_on(tmp_path, stereotype_files,
                                                                  suite, option, what):
    vectors = tmp_path / "v.txt"
    vectors.write_text("1 2\nlove 1 0\n", encoding="utf-8")
    if suite == "similarity":  # a FIFO where the directory's ws353.csv should be
        value = tmp_path / "pairs"
        value.mkdir()
        os.mkfifo(value / "ws353.csv")
        extra = ["--dataset", "ws353"]
    else:
        value = tmp_path / "input.csv"
        os.mkfifo(value)
        extra = ["--dictionary", str(stereotype_files["dictionary"])] if suite == "stereotype" else []
    outcome = run_emb("extract", "--model", vectors, "--suite", suite, option, value, *extra,
                      "--store", tmp_path / "s.zarr", "-q", timeout=60)
    assert_refused(outcome, codes=(1,), mentions=[what, "is a named pipe (FIFO)"])


def test_dev_zero_as_a_dictionary_is_refused(tmp_path):
    vectors = tmp_path / "v.txt"
    vectors.write_text("1 2\nlove 1 0\n", encoding="utf-8")
    outcome = run_emb("extract", "--model", vectors, "--suite", "stereotype", "--dictionary",
                      "/dev/zero", "--store", tmp_path / "s.zarr", "-q", timeout=60,
                      fresh=True)  # its peak memory is read
    assert_refused(outcome, codes=(1,),
                   mentions=["stereotype dictionary /dev/zero is a character device"])
    assert outcome.peak_rss_mib < 1024  # refused up front, not read
