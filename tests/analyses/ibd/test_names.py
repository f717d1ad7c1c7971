"""IBD's readable group names (issue 24): "African-American females", not ``african_female``, in
the tables (beside the id column, which stays), the summary, the figures and the exported CEAT
tests; one source: the groups file's ``_names``, carried in the store's suite parameters."""

from __future__ import annotations

import json

from emb.analyses.ibd import ANALYSIS, ibd
from emb.analyses.ibd._design import readable_names
from emb.analyses.ibd._export import ceat_tests
from tests.analyses._synthetic import ibd_dataset

NAMES = {"african_female": "African-American females", "mexican_female": "Mexican-American females",
         "european_male": "European-American males"}


def test_group_names_in_tables_summary_and_figures():
    res = ibd(ibd_dataset()).compute()
    assert dict(zip(res["group"].values.tolist(), res["group_name"].values.tolist(),
                    strict=True)) == NAMES
    tables = ANALYSIS.tables(res)
    for name in ("ibd", "ibd_words", "ibd_roc"):
        frame = tables[name]
        cols = frame.columns.tolist()
        assert cols.index("group_name") == cols.index("group") + 1, name  # the id column stays
        assert (frame["group"].map(NAMES) == frame["group_name"]).all(), name
    summary = ANALYSIS.summary(res, tables)
    assert set(summary.table["group_name"]) == set(NAMES.values())
    figures = ANALYSIS.figures(res)
    for key, figure in figures.items():
        titles = [ax.get_title() for ax in figure.axes]
        assert any("African-American females" in t for t in titles), key
        assert not any("african_female" in t for t in titles), key
    exported = ceat_tests(res)["tests"]["mexican_female_eibd"]["name"]
    assert exported.startswith("Mexican-American females vs European-American males names")


def test_names_come_from_the_suite_definition_else_the_builtin_file_else_the_key():
    ds = ibd_dataset()
    own = {"parameters": {"titles": {"african_female": "Black women"}}}
    assert readable_names(ds.assign_attrs(suite=json.dumps(own))) == {"african_female": "Black women"}
    res = ibd(ds.assign_attrs(suite=json.dumps(own))).compute()
    assert res["group_name"].sel(group="african_female").item() == "Black women"
    assert res["group_name"].sel(group="mexican_female").item() == "mexican female"
    # a store extracted before the names existed, from the built-in file
    builtin = {"parameters": {"groups_file": {"source": "builtin"}}}
    assert readable_names(ds.assign_attrs(suite=json.dumps(builtin)))["african_female"] == (
        "African-American females")
    # a user's own groups file without _names: the keys, spaced
    user = {"parameters": {"groups_file": {"source": "/tmp/mine.json"}}}
    assert readable_names(ds.assign_attrs(suite=json.dumps(user))) == {}
    res = ibd(ds.assign_attrs(suite=json.dumps(user))).compute()
    assert res["group_name"].sel(group="african_female").item() == "african female"


def test_the_suite_carries_the_names_and_refuses_bad_ones():
    import pytest

    from emb import data
    from emb.errors import SuiteError
    from emb.stimuli.suites import build_suite
    from emb.stimuli.suites.ibd import parse_ibd_data

    assert build_suite("ibd").parameters["titles"]["mexican_female"] == "Mexican-American females"
    doc = data.read_json("ibd_eibd_names_and_attributes.json")
    with pytest.raises(SuiteError, match=r"\$\._names must map"):
        parse_ibd_data({**doc, "_names": {"african_female": ""}}, "g.json")
    assert parse_ibd_data({k: v for k, v in doc.items() if k != "_names"}, "g.json").titles == {}


def test_two_stores_that_name_a_group_differently_keep_each_name():
    from emb.analyses import run_analysis

    ds = ibd_dataset()
    own = ds.assign_attrs(suite=json.dumps({"parameters": {"titles": {"african_female": "Black women"}}}))
    res = run_analysis("ibd", {"a": ds, "b": own}).compute()
    table = ANALYSIS.tables(res)["ibd"]
    names = table.drop_duplicates(["model", "group"]).set_index(["model", "group"])["group_name"]
    assert names[("a", "african_female")] == "African-American females"
    assert names[("b", "african_female")] == "Black women"
    assert names[("b", "mexican_female")] == "mexican female"
    assert len(table) == len(ANALYSIS.tables(run_analysis("ibd", {"a": ds, "b": ds}))["ibd"])
    ANALYSIS.figures(res)  # each model's figures name its own groups
