"""CEAT's small and empty word sets (issue 24): n and ``small_n`` per test in the result and the
table, a summary line naming the flagged tests, an empty test dropped while the others go on."""

from __future__ import annotations

import numpy as np
import pytest

from emb.analyses import ANALYSES
from emb.analyses.ceat import ceat
from emb.analyses.ceat._example import ceat_dataset
from emb.errors import EmbWarning, MissingStimuliError
from tests.analyses.weat.test_small_n import NUMPY_REPR

OPTS = {"n_samples": 30, "n_bootstrap": 0, "n_permutations": 0, "seed": 1}


def _without(ds, prefix):
    stim = np.asarray(ds["stimulus"].values).astype(str)
    return ds.isel(item=np.flatnonzero(~np.char.startswith(stim, prefix)))


def test_ceat_small_sets_flagged_and_named():
    ds = ceat_dataset(n_stim=(8, 8, 8, 3))  # B: 3 stimuli, shared by T1 and T2
    res = ceat(ds, min_words=4, **OPTS).compute()
    assert res["n_b"].values.tolist() == [3, 3] and res["small_n"].values.tolist() == [True, True]
    tables = ANALYSES["ceat"].tables(res)
    table = tables["ceat"]
    conv = tables["ceat_convergence"]
    assert conv.columns[-5:].tolist() == ["n_x", "n_y", "n_a", "n_b", "small_n"]
    assert set(conv["n_b"]) == {3} and conv["small_n"].all()
    assert {"n_x", "n_y", "n_a", "n_b", "small_n"} <= set(table.columns) and table["small_n"].all()
    notes = ANALYSES["ceat"].summary(res, ANALYSES["ceat"].tables(res)).notes
    warning = [n for n in notes if n.startswith("Warning: small word sets (fewer than 4")]
    assert len(warning) == 1 and "T1 (X 8, Y 8, A 8, B 3); T2 (X 8, Y 8, A 8, B 3)" in warning[0]
    ok = ceat(ds, min_words=3, **OPTS).compute()
    assert not ok["small_n"].any()
    np.testing.assert_array_equal(ok["ces"].values, res["ces"].values)


def test_ceat_empty_test_dropped_run_goes_on():
    ds = _without(ceat_dataset(), "n")  # T2's X stimuli are n0 … n4
    with pytest.warns(EmbWarning, match=r"CEAT tests dropped, the others go on: 'T2' \(no X") as rec:
        res = ceat(ds, **OPTS).compute()
    assert res["test"].values.tolist() == ["T1"]
    full = ceat(ceat_dataset(), tests=["T1"], **OPTS).compute()
    np.testing.assert_array_equal(res["ces"].values, full["ces"].values)
    notes = ANALYSES["ceat"].summary(res, ANALYSES["ceat"].tables(res)).notes
    assert any(n.startswith("Dropped (a word set is empty, or too small to compute, in this store): T2: no X") for n in notes)
    assert not any(NUMPY_REPR.search(str(w.message)) for w in rec)
    with pytest.raises(MissingStimuliError, match="every CEAT test has an empty word set") as err:
        ceat(_without(ds, "pleasant"), **OPTS)
    assert not NUMPY_REPR.search(str(err.value))


def test_ceat_unknown_test_message_plain():
    with pytest.raises(MissingStimuliError) as err:
        ceat(ceat_dataset(), tests=["T9"], **OPTS)
    assert not NUMPY_REPR.search(str(err.value))
