"""Small and empty word sets (issue 24): n of each set in every table, ``small_n`` below
``min_words``, a test with an empty set dropped with a note while the others go on, and no numpy
repr in any message."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from emb.analyses import ANALYSES
from emb.analyses._examples import weat_dataset
from emb.analyses.weat import weat
from emb.errors import AnalysisError, EmbWarning

#: What a numpy scalar's repr looks like in a message (``np.str_('WEAT10')``, ``np.int64(3)``).
NUMPY_REPR = re.compile(r"np\.(str_|int\d*|float\d*|bool_?|uint\d*)\(")


def _keep(ds, drop):
    """``ds`` without the items for which ``drop(test, role, word)`` holds."""
    rows = zip(ds["test"].values.tolist(), ds["role"].values.tolist(), ds["word"].values.tolist(),
               strict=True)
    return ds.isel(item=np.array([not drop(*r) for r in rows]))


def _small(ds):
    # WEAT1's X keeps 2 words (Y, A, B 8 each); WEAT2 untouched (8 per set)
    return _keep(ds, lambda t, r, w: t == "WEAT1" and r == "X" and w not in ("flower0", "flower1"))


OPTS = {"n_permutations": 200, "n_bootstrap": 0, "seed": 1}


def test_weat_small_sets_flagged_and_named():
    ds = _small(weat_dataset())
    res = weat(ds, **OPTS).compute()
    assert res["n_x"].sel(test="WEAT1").item() == 2
    assert res["small_n"].values.tolist() == [True, False]
    assert res.attrs["min_words"] == 8
    tables = ANALYSES["weat"].tables(res)
    main = tables["weat"]
    for col in ("n_x", "n_y", "n_a", "n_b", "small_n"):
        assert col in main
    assert set(main.loc[main["test"] == "WEAT1", "small_n"]) == {True}
    assert set(main.loc[main["test"] == "WEAT2", "small_n"]) == {False}
    best = tables["weat_best_layers"]
    assert best.columns[-5:].tolist() == ["n_x", "n_y", "n_a", "n_b", "small_n"]
    assert best.groupby("test")["small_n"].all().to_dict() == {"WEAT1": True, "WEAT2": False}
    assert set(best.loc[best["test"] == "WEAT1", "n_x"]) == {2}
    notes = ANALYSES["weat"].summary(res, tables).notes
    warning = [n for n in notes if n.startswith("Warning: small word sets")]
    assert len(warning) == 1 and "WEAT1 (X 2, Y 8, A 8, B 8)" in warning[0]
    assert "WEAT2" not in warning[0]
    # a lower threshold flags nothing, and the numbers do not move
    low = weat(ds, min_words=2, **OPTS).compute()
    assert not low["small_n"].any()
    np.testing.assert_array_equal(low["effect_size"].values, res["effect_size"].values)
    assert not [n for n in ANALYSES["weat"].summary(low, ANALYSES["weat"].tables(low)).notes
                if "small word sets" in n]


def test_weat_empty_test_dropped_run_goes_on():
    ds = _keep(weat_dataset(), lambda t, r, w: t == "WEAT2" and r == "A")
    with pytest.warns(EmbWarning, match=r"dropped, the others go on: 'WEAT2' \(no A words") as rec:
        res = weat(ds, **OPTS).compute()
    assert res["test"].values.tolist() == ["WEAT1"]
    full = weat(weat_dataset(), tests=["WEAT1"], **OPTS).compute()
    np.testing.assert_array_equal(res["effect_size"].values, full["effect_size"].values)
    notes = ANALYSES["weat"].summary(res, ANALYSES["weat"].tables(res)).notes
    assert any(n.startswith("Dropped (a word set is empty, or too small to compute, in this store): WEAT2: no A words")
               for n in notes)
    for w in rec:
        assert not NUMPY_REPR.search(str(w.message)), str(w.message)


def test_weat_one_word_target_set_of_the_suite_dropped():
    """WEAT6 on a word2vec store kept 1 female name: d is fixed at ±sqrt(2) there, so the test
    is dropped with a note (it was computed, unflagged) and the others run."""
    ds = _keep(weat_dataset(), lambda t, r, w: t == "WEAT1" and r == "Y" and w != "insect3")
    with pytest.warns(EmbWarning, match=r"'WEAT1' \(1 Y word \(insect3\) in this suite, and d "
                                        r"needs at least 2 per target set\)"):
        res = weat(ds, **OPTS).compute()
    assert res["test"].values.tolist() == ["WEAT2"]
    notes = ANALYSES["weat"].summary(res, ANALYSES["weat"].tables(res)).notes
    assert any("WEAT1: 1 Y word (insect3)" in n for n in notes)


def test_weat_all_tests_empty_is_an_error():
    ds = _keep(weat_dataset(), lambda t, r, w: r == "B")
    with pytest.raises(AnalysisError, match="every WEAT test has an empty") as err:
        weat(ds, **OPTS)
    assert not NUMPY_REPR.search(str(err.value))
    assert "'WEAT1'" in str(err.value) and "'WEAT2'" in str(err.value)


def test_min_words_is_a_declared_option():
    for name in ("weat", "ceat", "ibd"):
        options = {o.name: o for o in ANALYSES[name].options}
        assert "min_words" in options, name
    with pytest.raises(AnalysisError, match=r"--min-words \(min_words= in Python\)"):
        weat(weat_dataset(), min_words=0, **OPTS)


@pytest.mark.parametrize("case", ["unknown_test", "one_target", "twice", "setting"])
def test_weat_messages_have_no_numpy_repr(case):
    ds = weat_dataset()
    calls = {
        "unknown_test": lambda: weat(ds, tests=["WEAT9"], **OPTS),
        "one_target": lambda: weat(ds, x=[np.str_("flower0")], y=["insect0", "insect1"],
                                   a=["flower2"], b=["insect2"], **OPTS),
        "twice": lambda: weat(ds, tests=["WEAT1", {"tests": {"WEAT1": {
            "X": ["flower0", "flower1"], "Y": ["insect0", "insect1"],
            "A": ["flower2"], "B": ["insect2"]}}}], **OPTS),
        "setting": lambda: weat(ds, settings=["nope"], **OPTS),
    }
    with warnings.catch_warnings(record=True) as rec, pytest.raises(AnalysisError) as err:
        warnings.simplefilter("always")
        calls[case]()
    for text in [str(err.value), *(str(w.message) for w in rec)]:
        assert not NUMPY_REPR.search(text), text


def test_weat_two_models_one_drops_a_test():
    """A test one store lacks is NaN for that model (outer join) and noted under its name."""
    from emb.analyses import run_analysis

    full = weat_dataset()
    gappy = _keep(full, lambda t, r, w: t == "WEAT2" and r == "A")
    with pytest.warns(EmbWarning, match="'WEAT2'"):
        res = run_analysis("weat", {"w2v": gappy, "glove": full}, **OPTS).compute()
    assert res["test"].values.tolist() == ["WEAT1", "WEAT2"]
    assert np.isnan(res["effect_size"].sel(model="w2v", test="WEAT2")).all()
    tables = ANALYSES["weat"].tables(res)
    notes = ANALYSES["weat"].summary(res, tables).notes
    assert any("w2v: WEAT2: no A words" in n for n in notes), notes
    assert not any(NUMPY_REPR.search(n) for n in notes)
