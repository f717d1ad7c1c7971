"""Every analysis runs on a static store: suites extracted from the shared word2vec subset.

The subset (Bolukbasi et al.'s 26,423 GoogleNews words) lacks many stimuli, so the suites are
extracted with ``allow_missing``: the store records what was left out, the analyses use the words
present and say so. The coverage numbers asserted here are the ones reported.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import emb
from emb.analyses import ANALYSES, run_analysis
from emb.backends.static import load_vectors
from emb.errors import MissingStimuliError
from emb.extraction.pipeline import extract
from emb.stimuli.suites import build_suite
from emb.stimuli.suites.weat import WEAT_TESTS

BIN = "static/GoogleNews-vectors-negative300-bolukbasi.bin"


@pytest.fixture(scope="module")
def static_store(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    suites = [
        build_suite("weat"),
        build_suite("vast", lexicon=[str(data_dir / "lexica" / "bellezza.csv")]),
        build_suite("similarity", pairs=str(data_dir / "similarity")),
        build_suite("ibd"),
    ]
    runner = load_vectors(data_dir / BIN, [it.word for s in suites for it in s.items],
                          allow_missing=True)
    path = tmp_path_factory.mktemp("static") / "w2v.zarr"
    extract(runner, suites, str(path), progress=False)
    return path


def _coverage(store: emb.Store, suite: str) -> tuple[int, int]:
    rec = store.dataset(suite).attrs["suite"]["parameters"]["vectors"]
    return rec["n_words"] - rec["n_missing"], rec["n_words"]


def test_coverage_is_recorded(static_store: Path) -> None:
    store = emb.open_store(str(static_store))
    assert store.validate().status == "complete"
    assert _coverage(store, "weat") == (222, 395)
    assert _coverage(store, "vast") == (355, 401)
    assert _coverage(store, "similarity") == (2911, 4524)
    assert _coverage(store, "ibd") == (75, 170)


@pytest.mark.slow
def test_weat_sc_weat_valnorm_vast_similarity_run(static_store: Path, data_dir: Path) -> None:
    store = emb.open_store(str(static_store))
    weat = store.dataset("weat")
    with pytest.warns(UserWarning, match="173 of 395 words of suite 'weat'"):
        res = run_analysis("weat", {"w2v": weat}, tests=["WEAT5"]).compute()
    weat5 = {g.role: len(g.words) - len(g.excluded)  # Caliskan et al.'s dropped names
             for t in WEAT_TESTS if t.id == "WEAT5" for g in t.groups}
    assert int(res.n_x.squeeze()) == weat5["X"] and int(res.n_y.squeeze()) == weat5["Y"]
    assert np.isfinite(res.effect_size).all()
    # a custom test naming a word without a vector: the error says why it is missing
    with pytest.raises(MissingStimuliError, match="static vectors from GoogleNews"):
        ANALYSES["weat"].function(weat, x=["aster", "clover"], y=["ant", "flea"], a=["love"],
                                  b=["hate"])
    vast_ds = store.dataset("vast")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        sc = run_analysis("sc-weat", {"w2v": vast_ds}).compute()
        vn = run_analysis("valnorm", {"w2v": vast_ds}).compute()
        va = run_analysis("vast", {"w2v": vast_ds}, k_max=2, n_subsets=2,
                          similarity=store.dataset("similarity"),
                          pairs=str(data_dir / "similarity"), allow_missing=True).compute()
        sim = run_analysis("similarity", {"w2v": store.dataset("similarity")},
                           pairs=str(data_dir / "similarity"), allow_missing=True, k_max=1).compute()
    assert np.isfinite(sc.effect_size).any()
    r = vn.r.sel(lexicon="bellezza", layer=0, pooling="static").squeeze()
    # one vector per word: every setting gives the same ValNorm r
    np.testing.assert_allclose(r.values, r.values[0], rtol=0, atol=1e-12)
    assert 0.75 < float(r.values[0]) < 0.85
    assert float(va.r.sel(rating="valence", lexicon="bellezza", setting="bleached",
                          pooling="static", layer=0).squeeze()) == pytest.approx(float(r.values[0]))
    rho = sim.rho.sel(dataset="ws353", layer=0, pooling="static", k=0).squeeze()
    assert 0.6 < float(rho) < 0.75  # word2vec on WordSim-353
    assert int(sim.n_missing.sel(dataset="ws353").squeeze()) > 0


def test_ibd_on_the_word2vec_subset(static_store: Path) -> None:
    ds = emb.open_store(str(static_store)).dataset("ibd")
    with pytest.warns(UserWarning, match=r"\['mexican_female', 'mexican_male'\]"):
        res = ANALYSES["ibd"].function(ds).compute()
    assert list(res.group.values) == ["african_female", "european_male"]  # MF has no names
    names = dict(zip(res.name_set.values.tolist(), res.n_names.values.tolist(), strict=True))
    assert names == {"african_female": 6, "african_male": 4, "european_female": 3,
                     "european_male": 4, "mexican_female": 0, "mexican_male": 0}
    assert int(res.n_attributes) == 58 and int(res.n_attributes_total) == 98
    assert "bigbutt" in json.loads(res.attrs["missing_attributes"])
    cell = {"setting": "alone", "layer": 0, "pooling": "static", "group": "african_female"}
    assert int(res.n_positive.sel(group="african_female", detector="ibd")) == 7
    assert int(res.n_positive.sel(group="african_female", detector="eibd")) == 4
    assert (res.threshold.sel(cell) >= 0).all()
    assert np.isfinite(res.accuracy.sel(cell)).all()
    tables = ANALYSES["ibd"].tables(res)
    assert len(tables["ibd"]) == 2 * 2 * 2  # groups × methods × settings
