"""CEAT's headline (issue 24): the summary leads with the uncertainty that does not shrink with N
(the bootstrap CI), labels the paper's random-effects CI and p as such, warns when N exceeds the
distinct combinations of contexts or tau2 is 0 in every cell; with ``n_bootstrap=0`` no line speaks
of a bootstrap; tests carry their readable names into tables and figures."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from emb.analyses import ANALYSES
from emb.analyses.ceat import _figures as plots
from emb.analyses.ceat import ceat
from emb.analyses.ceat._ceat import readable_name
from emb.analyses.ceat._example import ceat_dataset
from emb.analyses.stats import meta_log10_pvalue

# 3 stimuli per set, 2 contexts each: 2**12 = 4,096 distinct samples; N = 5,000 exceeds them
FEW = {"n_stim": (3, 3, 3, 3), "contexts": 2, "second_test": False, "n_layers": 2}
OPTS = {"n_samples": 5_000, "n_permutations": 0, "seed": 2, "min_words": 3}


def _summary(res):
    tables = ANALYSES["ceat"].tables(res)
    return ANALYSES["ceat"].summary(res, tables), tables


def _text(summary) -> str:
    return "\n".join(summary.lines())


def test_headline_leads_with_the_bootstrap_ci_and_labels_the_random_effects_numbers():
    res = ceat(ceat_dataset(**FEW), n_bootstrap=20, bootstrap_samples=50, **OPTS).compute()
    assert (res["tau2"].values == 0).all()  # the case of the issue: tau2 = 0 in every cell
    summary, tables = _summary(res)
    columns = summary.table.columns.tolist()
    assert columns.index("boot_ci") < columns.index("re_ci") < columns.index("re_p")
    assert columns.index("ces") < columns.index("boot_ci")
    row = summary.table.iloc[0]
    top = res.sel(test="T1", layer=1, pooling="last")
    assert row["boot_ci"] == f"[{float(top.boot_ci_low):.2f}, {float(top.boot_ci_high):.2f}]"
    assert row["re_ci"] == f"[{float(top.ci_low):.2f}, {float(top.ci_high):.2f}]"
    # the bootstrap CI is the wider one here: the RE CI has shrunk with N
    assert float(top.boot_ci_high - top.boot_ci_low) > 3 * float(top.ci_high - top.ci_low)
    # the p is far below float range: printed by its order, computed independently from z
    expected = float(meta_log10_pvalue(np.asarray(float(top.z)), "two-sided"))
    assert expected < -308 and row["re_p"] == f"≈ 10^{expected:.1f}"
    head = " ".join(summary.headline)
    assert head.index("boot_ci") < head.index("re_ci")
    assert "not independent studies" in head and "does not shrink with N" in head
    warnings = [n for n in summary.notes if n.startswith("Warning")]
    combos = [n for n in warnings if "distinct combinations" in n]
    assert len(combos) == 1 and f"T1: {2 ** 12:,}" in combos[0] and "N = 5,000" in combos[0]
    tau = [n for n in warnings if "tau2 = 0 in all" in n]
    assert len(tau) == 1 and f"all {res['tau2'].size} cells" in tau[0]
    target = [n for n in summary.notes if n.startswith("boot_ci is the normal bootstrap interval")]
    assert len(target) == 1 and "covers the population d" in target[0]
    assert "normal bootstrap CI of the CES, CES ± 1.96 SD of 20 replicates" in head
    # the normal interval is centred on the CES (the percentile interval was not)
    assert float((top.boot_ci_low + top.boot_ci_high) / 2) == pytest.approx(float(top.ces), abs=1e-12)
    assert "2.2e-308" not in tables["ceat"]["p"].astype(str).str.cat()
    assert tables["ceat"]["p"].isna().all() and (tables["ceat"]["log10_p"] < -308).all()
    table_columns = tables["ceat"].columns.tolist()
    assert table_columns.index("boot_ci_high") < table_columns.index("ci_low")
    assert "not independent studies" in tables["ceat"].attrs["descriptions"]["ci_low"]


def test_no_warning_when_the_contexts_allow_n_distinct_samples_and_tau2_is_positive():
    # 30 contexts per stimulus: 30**18 combinations; the supplement's V_i (reference) is small
    # beside the spread of the samples' ES, so tau2 > 0
    res = ceat(ceat_dataset(n_layers=2), n_samples=200, n_bootstrap=0, n_permutations=0, seed=2,
               method="reference").compute()
    assert (res["tau2"].values > 0).any()
    summary, _ = _summary(res)
    assert not [n for n in summary.notes if "distinct combinations" in n or "tau2 = 0" in n]


def test_without_bootstrap_no_line_speaks_of_a_bootstrap():
    res = ceat(ceat_dataset(**FEW), n_bootstrap=0, **OPTS).compute()
    summary, tables = _summary(res)
    text = _text(summary)
    assert "bootstrap" not in text.lower() and "boot_ci" not in summary.table
    assert "re_ci" in summary.table and "no interval independent of N" in text
    assert "tau2 = 0 in all" in text and "distinct combinations" in text
    assert not any("bootstrap" in d.lower() for d in tables["ceat"].attrs["descriptions"].values())
    for figure in (plots.convergence(res), plots.heat_table(res), plots.ces_by_layer(res)):
        texts = [t.get_text() for t in figure.findobj(lambda o: hasattr(o, "get_text"))]
        assert not any("bootstrap" in t.lower() for t in texts), texts


def test_combinations_are_the_product_of_the_context_counts():
    from emb.analyses.ceat._summary import _combinations

    counts = [3, 2, 4, 2, 5, 2, 2, 2, 3, 2, 2, 2]  # X, Y, A, B stimuli in order
    res = ceat(ceat_dataset(n_stim=(3, 3, 3, 3), contexts=counts, second_test=False, n_layers=2),
               n_samples=50, n_bootstrap=0, n_permutations=0, min_words=3).compute()
    assert _combinations(res)["T1"] == pytest.approx(math.log10(math.prod(counts)))


def test_title_from_the_definition_the_builtin_test_or_the_word_sets():
    groups = {"X": "european_3", "Y": "african_3", "A": "pleasant_3", "B": "unpleasant_3"}
    assert readable_name("C3", {"name": "My name"}, groups) == "My name"
    # a store extracted before the definitions had names: the built-in test of that id
    assert readable_name("C3", {"X_name": "european_3"}, groups) == (
        "European vs African-American names × pleasant/unpleasant (WEAT 3 lists)")
    # the same id with other word sets is not the built-in test
    other = {**groups, "A": "good"}
    assert readable_name("C3", None, other) == "european 3 vs african 3 × good/unpleasant 3"


def test_every_builtin_test_has_a_distinct_readable_name():
    from emb import data
    from emb.stimuli.suites.ceat import CEAT_TESTS

    tests = data.read_json("ceat_tests.json")["tests"]
    names = [t["name"] for t in tests.values()]
    assert len(set(names)) == len(names) == 14
    assert all("_" not in n for n in names)
    assert CEAT_TESTS["C3"].to_dict()["name"] == tests["C3"]["name"]  # carried into the store


def test_readable_names_in_tables_and_figures():
    ds = ceat_dataset(n_layers=2)
    suite = {"parameters": {"tests": {"T1": {"name": "Planted test × good/bad"}}}}
    ds.attrs["suite"] = json.dumps(suite)
    res = ceat(ds, n_samples=60, n_bootstrap=0, n_permutations=0).compute()
    assert res["test_name"].values.tolist() == ["Planted test × good/bad", "x vs y × a/b"]
    summary, tables = _summary(res)
    assert set(tables["ceat"]["test_name"]) == {"Planted test × good/bad", "x vs y × a/b"}
    assert tables["ceat"]["test"].tolist()[0] == "T1"  # the id column stays
    assert summary.table["test_name"].tolist() == ["Planted test × good/bad", "x vs y × a/b"]
    for figure in (plots.es_histograms(res), plots.ces_by_layer(res), plots.heat_table(res)):
        texts = "".join(t.get_text() for t in figure.findobj(lambda o: hasattr(o, "get_text")))
        assert "T1:Plantedtest×good/bad" in "".join(texts.split())  # lines break anywhere


def test_two_stores_that_name_a_test_differently():
    from emb.analyses import run_analysis

    ds = ceat_dataset(n_layers=2)
    named = ds.assign_attrs(suite=json.dumps({"parameters": {"tests": {"T1": {"name": "Mine"}}}}))
    res = run_analysis("ceat", {"a": ds, "b": named}, n_samples=40, n_bootstrap=0,
                       n_permutations=0).compute()
    assert plots.label_of(res, "T1", width=80) == "T1: x vs y × a/b; Mine"
    table = ANALYSES["ceat"].tables(res)["ceat"]
    names = table.drop_duplicates(["model", "test"]).set_index(["model", "test"])["test_name"]
    assert names[("a", "T1")] == "x vs y × a/b" and names[("b", "T1")] == "Mine"
