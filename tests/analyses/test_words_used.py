"""Which words sc-weat's and valnorm's "same" r use (issue 24): sc-weat keeps every lexicon word,
the polar words among them included (n_words, n_polar, n_rated), valnorm leaves the polar words
out of its targets; each summary says so, so the two n (13,915 vs 13,865 on Warriner) are read
right."""

from __future__ import annotations

import json

import numpy as np

from emb.analyses import ANALYSES


def test_sc_weat_summary_counts_the_polar_words_among_its_targets():
    analysis = ANALYSES["sc-weat"]
    ds, options = analysis.example()
    res = analysis.function(ds, **options).compute()
    poles = json.loads(res.attrs["attribute_a"])
    # as on Warriner, where the polar words are lexicon words too: two of them among the targets
    res.attrs["attribute_a"] = json.dumps([*poles, "toy0003", "toy0015"])
    summary = analysis.summary(res, analysis.tables(res))
    table = summary.table
    assert {"n_words", "n_polar", "n_rated", "r_rating"} <= set(table.columns)
    assert not [c for c in table.columns if " " in c or "(" in c]  # identifiers
    assert table["n_polar"].tolist() == [2, 2] and table["n_words"].tolist() == [40, 40]
    top = res.sel(setting="bleached", pooling="last", layer=3)
    rated = np.isfinite(top["rating"].values)
    r = np.corrcoef(top["rating"].values[rated], top["effect_size"].values[rated])[0, 1]
    row = table[table["setting"] == "bleached"].iloc[0]
    assert row["n_rated"] == int(rated.sum()) and np.isclose(row["r_rating"], r)
    text = " ".join(summary.notes)
    assert "polar" in text and "valnorm" in text and "n_polar" in text


def test_valnorm_summary_and_n_say_the_polar_words_are_left_out():
    analysis = ANALYSES["valnorm"]
    ds, options = analysis.example()
    res = analysis.function(ds, **options).compute()
    assert "polar" in res["n"].attrs["long_name"]
    notes = analysis.summary(res, analysis.tables(res)).notes
    (line,) = [n for n in notes if n.startswith("n: ")]
    assert "left out of the targets" in line and "sc-weat" in line
    ref = analysis.function(ds, method="reference").compute()
    (line,) = [n for n in analysis.summary(ref, analysis.tables(ref)).notes if n.startswith("n: ")]
    assert "kept among the targets" in line
