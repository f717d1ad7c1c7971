"""IBD's small name sets (issue 24): n per name set and group, ``small_n`` below ``min_words``, a
summary warning naming them; a group with no name is left out with a plain-text warning."""

from __future__ import annotations

import numpy as np
import pytest

from emb.analyses import ANALYSES
from emb.analyses.ibd import ibd
from emb.errors import EmbWarning
from tests.analyses.weat.test_small_n import NUMPY_REPR


def _example():
    ds, _ = ANALYSES["ibd"].example()
    return ds


def _thin(ds, group, keep):
    role = np.asarray(ds["role"].values).astype(str)
    grp = np.asarray(ds["group"].values).astype(str)
    word = np.asarray(ds["word"].values).astype(str)
    names = sorted({w for w, r, g in zip(word, role, grp, strict=True) if r == "name" and g == group})
    drop = (role == "name") & (grp == group) & ~np.isin(word, names[:keep])
    return ds.isel(item=np.flatnonzero(~drop))


def test_ibd_small_name_set_flagged_and_named():
    ds = _thin(_example(), "mexican_male", 2)
    res = ibd(ds, min_words=3).compute()
    assert res["n_names"].sel(name_set="mexican_male").item() == 2
    assert res["small_n"].to_series().to_dict() == {
        g: g == "mexican_male" for g in res["name_set"].values.tolist()}
    # mexican_female's scores compare mexican_male (its gender pair's race set holds its names)
    flagged = res["small_n_compared"].to_series().to_dict()
    assert flagged["mexican_female"] and any(flagged.values())
    tables = ANALYSES["ibd"].tables(res)
    main = tables["ibd"]
    assert {"n_names", "small_n"} <= set(main.columns)
    assert set(main.loc[main["group"] == "mexican_female", "small_n"]) == {True}
    assert set(main.loc[main["group"] == "mexican_female", "n_names"]) == {6}
    for other in ("ibd_words", "ibd_roc"):
        frame = tables[other]
        assert frame.columns[-2:].tolist() == ["n_names", "small_n"], other
        assert set(frame.loc[frame["group"] == "mexican_female", "small_n"]) == {True}
    notes = ANALYSES["ibd"].summary(res, tables).notes
    warning = [n for n in notes if n.startswith("Warning: small name sets (fewer than 3")]
    assert len(warning) == 1 and "mexican_male 2" in warning[0] and "african_male" not in warning[0]
    assert not any(NUMPY_REPR.search(n) for n in notes)
    none = ibd(ds, min_words=2).compute()
    assert not none["small_n"].any() and not none["small_n_compared"].any()
    np.testing.assert_array_equal(none["ibd_score"].values, res["ibd_score"].values)


def test_ibd_empty_group_left_out_plain_message():
    ds = _thin(_example(), "african_male", 0)
    with pytest.warns(EmbWarning, match="groups with no name in the store") as rec:
        res = ibd(ds).compute()
    assert "african_male" in res["name_set"].values.tolist()
    assert res["n_names"].sel(name_set="african_male").item() == 0
    for w in rec:
        assert not NUMPY_REPR.search(str(w.message)), str(w.message)
    notes = ANALYSES["ibd"].summary(res, ANALYSES["ibd"].tables(res)).notes
    assert not any(NUMPY_REPR.search(n) for n in notes)
    assert not any("african_male 0" in n for n in notes if n.startswith("Warning: small"))
