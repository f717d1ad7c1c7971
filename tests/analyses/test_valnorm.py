"""emb.analyses.valnorm (SC-WEAT, ValNorm) on synthetic 'vast'-shaped Datasets vs scipy and loops."""

from __future__ import annotations

import itertools
import json
import math

import dask.array as da
import numpy as np
import pytest
import scipy.stats
import xarray as xr
from dask.callbacks import Callback

from emb.analyses.sc_weat import sc_weat, sc_weat_effect_sizes
from emb.analyses.valnorm import valnorm
from emb.errors import AnalysisError, MissingStimuliError

LAYERS = (0, 1, 2)
POOLINGS = ("first", "last")
PLANTED, NOISE = 1, 2
D = 32
PLEASANT = [f"good{i}" for i in range(25)]
UNPLEASANT = [f"bad{i}" for i in range(25)]


def vast_ds(
    *,
    n_words: int = 150,
    lexicons: tuple[str, ...] = ("toy",),
    settings_: tuple[str, ...] = ("bleached", "aligned"),
    polar_in_misaligned: bool = True,
    polar_in_lexicon: int = 4,
    seed: int = 0,
    noise: float = 0.1,
    polar_noise: float = 4.0,
    chunk: int = 64,
) -> xr.Dataset:
    """A 'vast'-suite-shaped Dataset whose vectors at layer PLANTED are (valence − 5)·u + noise.

    Every vector also has a shared offset (anisotropy, as in real models); polar words are
    noisier than lexicon words, so that the SC-WEAT effect size stays linear in the valence.
    Layer 0 carries half the signal, layer NOISE none.  The first ``polar_in_lexicon`` pleasant
    and unpleasant words are also lexicon words (as in real lexica).
    """
    rng = np.random.default_rng(seed)
    u = rng.normal(size=D)
    u /= np.linalg.norm(u)
    base = 5.0 * rng.normal(size=(len(LAYERS), len(POOLINGS), D)) / math.sqrt(D)

    def vector(valence: float, sigma: float) -> np.ndarray:
        v = base + sigma * rng.normal(size=(len(LAYERS), len(POOLINGS), D))
        v[PLANTED] += (valence - 5.0) * u
        v[0] += 0.5 * (valence - 5.0) * u
        return v

    rows, vecs = [], []
    for lex in lexicons:
        words = [f"{lex}w{i}" for i in range(n_words)]
        words += PLEASANT[:polar_in_lexicon] + UNPLEASANT[:polar_in_lexicon]
        valence = rng.uniform(1, 9, size=len(words))
        valence[n_words : n_words + polar_in_lexicon] = rng.uniform(7, 9, polar_in_lexicon)
        valence[n_words + polar_in_lexicon :] = rng.uniform(1, 3, polar_in_lexicon)
        arousal = rng.uniform(1, 9, size=len(words))
        for setting in settings_:
            for w, v, ar in zip(words, valence, arousal, strict=True):
                rows.append(dict(word=w, context=f"{setting}: {w}", setting=setting,
                                 stimulus_set="lexicon", lexicon=lex, valence=v, arousal=ar))
                vecs.append(vector(v, noise))
            if setting == "misaligned" and not polar_in_misaligned:
                continue
            for pole, pole_words, v in (("pleasant", PLEASANT, 8.5), ("unpleasant", UNPLEASANT, 1.5)):
                for w in pole_words:
                    rows.append(dict(word=w, context=f"{setting}: {w}", setting=setting,
                                     stimulus_set=pole, lexicon=lex, valence=np.nan,
                                     arousal=np.nan))
                    vecs.append(vector(v, polar_noise))
    emb = np.stack(vecs).astype(np.float16)
    coords = {k: ("item", np.array([r[k] for r in rows])) for k in rows[0]}
    return xr.Dataset(
        {
            "embedding": (
                ("item", "layer", "pooling", "feature"),
                da.from_array(emb, chunks=(chunk, 1, 1, D)),
            )
        },
        coords={**coords, "layer": list(LAYERS), "pooling": list(POOLINGS)},
        attrs={"model": {"id": "toy-lm"}, "suite": {"name": "vast", "generator": "vast"}},
    )


def _rows(ds, **match):
    mask = np.ones(ds.sizes["item"], bool)
    for k, v in match.items():
        mask &= ds[k].values == v
    return np.flatnonzero(mask)


def _valnorm_by_hand(ds, *, lexicon, setting, layer, pooling, keep_polar=False, polar_setting=None):
    """ValNorm with explicit per-word loops and scipy (independent of emb.analyses.stats)."""
    x = ds.embedding.sel(layer=layer, pooling=pooling).values.astype(np.float64)
    ps = polar_setting or setting
    a = x[_rows(ds, setting=ps, stimulus_set="pleasant", lexicon=lexicon)]
    b = x[_rows(ds, setting=ps, stimulus_set="unpleasant", lexicon=lexicon)]
    polar = set(PLEASANT) | set(UNPLEASANT)
    es, ratings = [], []
    for i in _rows(ds, setting=setting, stimulus_set="lexicon", lexicon=lexicon):
        if not keep_polar and ds.word.values[i] in polar:
            continue
        w = x[i]
        ca = [w @ v / np.linalg.norm(w) / np.linalg.norm(v) for v in a]
        cb = [w @ v / np.linalg.norm(w) / np.linalg.norm(v) for v in b]
        es.append((np.mean(ca) - np.mean(cb)) / np.std(ca + cb, ddof=1))
        ratings.append(ds.valence.values[i])
    return np.array(es), np.array(ratings)


class TaskCounter(Callback):
    """Counts every dask task executed while it is active."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def _posttask(self, key, result, dsk, state, id) -> None:  # noqa: A002
        self.count += 1


# ------------------------------------------------------------------ ValNorm numbers


def test_valnorm_matches_loops_and_scipy():
    ds = vast_ds(n_words=60)
    res = valnorm(ds).compute()
    assert res.r.dims == ("lexicon", "setting", "layer", "pooling")
    assert set(res.data_vars) == {"r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p",
                                  "n_poles", "sc_weat", "rating", "n_subtokens", "residual"}
    for setting in ("bleached", "aligned"):
        for layer in LAYERS:
            for pooling in POOLINGS:
                es, ratings = _valnorm_by_hand(
                    ds, lexicon="toy", setting=setting, layer=layer, pooling=pooling
                )
                cell = res.sel(lexicon="toy", setting=setting, layer=layer, pooling=pooling)
                ref = scipy.stats.pearsonr(es, ratings)
                ci = ref.confidence_interval()
                assert int(cell.n) == 60  # the 8 polar words are removed from the lexicon
                assert float(cell.r) == pytest.approx(ref.statistic, rel=1e-9)
                assert float(cell.p) == pytest.approx(ref.pvalue, rel=1e-7, abs=1e-300)
                assert float(cell.ci_low) == pytest.approx(ci.low, rel=1e-9)
                assert float(cell.ci_high) == pytest.approx(ci.high, rel=1e-9)
                sp = scipy.stats.spearmanr(es, ratings)
                assert float(cell.spearman_r) == pytest.approx(sp.statistic, rel=1e-9)
                assert float(cell.spearman_p) == pytest.approx(sp.pvalue, rel=1e-7, abs=1e-300)
                # each word's SC-WEAT and rating, as the loop computed them, in the loop's order
                words = cell.sc_weat.dropna("word")
                np.testing.assert_allclose(words.values, es, rtol=1e-9)
                np.testing.assert_allclose(cell.rating.sel(word=words.word).values, ratings)


def test_planted_valence_gives_r_near_one_and_noise_layer_near_zero():
    res = valnorm(vast_ds(n_words=300, seed=1)).compute()
    assert (res.r.sel(layer=PLANTED) > 0.97).all()
    assert (res.ci_low.sel(layer=PLANTED) > 0.95).all()
    assert (np.abs(res.r.sel(layer=NOISE)) < 0.2).all()
    assert (res.p.sel(layer=NOISE) > 0.001).all()


def test_reference_mode_keeps_polar_words_in_the_lexicon():
    ds = vast_ds(n_words=60, polar_in_lexicon=4)
    default = valnorm(ds).compute()
    reference = valnorm(ds, method="reference").compute()
    assert (default.n == 60).all() and (reference.n == 68).all()
    es, ratings = _valnorm_by_hand(
        ds, lexicon="toy", setting="bleached", layer=0, pooling="last", keep_polar=True
    )
    cell = reference.sel(lexicon="toy", setting="bleached", layer=0, pooling="last")
    assert float(cell.r) == pytest.approx(scipy.stats.pearsonr(es, ratings).statistic, rel=1e-9)
    assert reference.attrs["polar_words_removed"] == "false"


def test_misaligned_setting_uses_aligned_polar_words_when_it_has_none():
    ds = vast_ds(n_words=50, settings_=("aligned", "misaligned"), polar_in_misaligned=False)
    res = valnorm(ds).compute()
    es, ratings = _valnorm_by_hand(
        ds, lexicon="toy", setting="misaligned", layer=1, pooling="first", polar_setting="aligned"
    )
    cell = res.sel(lexicon="toy", setting="misaligned", layer=1, pooling="first")
    assert float(cell.r) == pytest.approx(scipy.stats.pearsonr(es, ratings).statistic, rel=1e-9)
    assert json.loads(res.attrs["polar_settings"])["misaligned"] == "aligned"


def test_several_lexicons_and_settings_selection():
    ds = vast_ds(n_words=40, lexicons=("alpha", "beta"), settings_=("bleached", "random"))
    res = valnorm(ds, lexicon="beta", settings=["random"]).compute()
    assert list(res.lexicon.values) == ["beta"] and list(res.setting.values) == ["random"]
    es, ratings = _valnorm_by_hand(ds, lexicon="beta", setting="random", layer=2, pooling="last")
    cell = res.sel(lexicon="beta", setting="random", layer=2, pooling="last")
    assert float(cell.r) == pytest.approx(scipy.stats.pearsonr(es, ratings).statistic, rel=1e-9)
    both = valnorm(ds, per_word=False).compute()
    assert both.sizes == {"lexicon": 2, "setting": 2, "layer": 3, "pooling": 2}
    words = valnorm(ds).compute()
    assert words.sizes["word"] == 80  # the union of the two lexicons' 40 words
    with pytest.raises(AnalysisError, match="not in this suite"):
        valnorm(ds, lexicon="gamma")


def test_arousal_uses_top_and_bottom_25_rated_words_removed_from_targets():
    ds = vast_ds(n_words=80, settings_=("bleached",))
    res = valnorm(ds, ratings="arousal").compute()
    x = ds.embedding.sel(layer=1, pooling="first").values.astype(np.float64)
    lex = _rows(ds, setting="bleached", stimulus_set="lexicon")
    order = lex[np.argsort(ds.arousal.values[lex], kind="stable")]
    low, high = order[:25], order[-25:]
    rest = [i for i in lex if i not in set(low) | set(high)]
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    cos_a, cos_b = unit[rest] @ unit[high].T, unit[rest] @ unit[low].T
    both = np.concatenate([cos_a, cos_b], axis=1)
    es = (cos_a.mean(1) - cos_b.mean(1)) / both.std(1, ddof=1)
    ref = scipy.stats.pearsonr(es, ds.arousal.values[rest])
    cell = res.sel(lexicon="toy", setting="bleached", layer=1, pooling="first")
    assert int(cell.n) == 88 - 50
    assert float(cell.r) == pytest.approx(ref.statistic, rel=1e-9)


def test_ddof_is_applied():
    ds = vast_ds(n_words=40, settings_=("bleached",))
    r0 = valnorm(ds, ddof=0).compute()
    r1 = valnorm(ds, ddof=1).compute()
    # the SC-WEAT denominator differs by a constant factor: r is unchanged
    np.testing.assert_allclose(r0.r, r1.r, rtol=1e-9)
    assert r0.attrs["ddof"] == 0


# ------------------------------------------------------------------ SC-WEAT


def test_sc_weat_effect_sizes_and_exact_p_against_brute_force():
    ds = vast_ds(n_words=10, settings_=("bleached",))
    a, b = PLEASANT[:3], UNPLEASANT[:3]
    words = ["toyw0", "toyw1", "toyw2"]
    res = sc_weat(ds, words=words, setting="bleached", attribute_a=a, attribute_b=b,
                  n_permutations=100, attribute_labels={"stimulus_set": ["pleasant", "unpleasant"]},
                  word_labels={"stimulus_set": "lexicon"}).compute()
    assert res.effect_size.dims == ("word", "layer", "pooling")
    x = ds.embedding.values.astype(np.float64)
    for w in words:
        for li, layer in enumerate(LAYERS):
            for pi, pooling in enumerate(POOLINGS):
                def vec(word, pole, li=li, pi=pi):
                    i = _rows(ds, word=word, stimulus_set=pole)[0]
                    return x[i, li, pi]

                t = vec(w, "lexicon")
                cos = [t @ v / np.linalg.norm(t) / np.linalg.norm(v)
                       for v in [vec(p, "pleasant") for p in a] + [vec(q, "unpleasant") for q in b]]
                es = (np.mean(cos[:3]) - np.mean(cos[3:])) / np.std(cos, ddof=1)
                stat = sum(cos[:3]) - sum(cos[3:])
                null = [2 * sum(cos[i] for i in c) - sum(cos)
                        for c in itertools.combinations(range(6), 3)]
                p = np.mean(np.array(null) >= stat - 1e-12)
                cell = res.sel(word=w, layer=layer, pooling=pooling)
                assert float(cell.effect_size) == pytest.approx(es, rel=1e-9)
                assert float(cell.p) == pytest.approx(p)  # C(6, 3) = 20 splits: exact


def test_sc_weat_without_permutations_has_no_p_and_follows_the_planted_valence():
    ds = vast_ds(n_words=40, settings_=("bleached",), polar_in_lexicon=0)
    val = dict(zip(ds.word.values, ds.valence.values, strict=True))
    words = [f"toyw{i}" for i in range(40)]
    res = sc_weat(ds, words=words, setting="bleached", attribute_a=PLEASANT,
                  attribute_b=UNPLEASANT).compute()
    assert "p" not in res and list(res.word.values) == words
    ratings = np.array([val[w] for w in words])
    planted = res.effect_size.sel(layer=PLANTED, pooling="first").values
    noise = res.effect_size.sel(layer=NOISE, pooling="first").values
    assert scipy.stats.pearsonr(planted, ratings).statistic > 0.85
    assert abs(scipy.stats.pearsonr(noise, ratings).statistic) < 0.5


def test_sc_weat_effect_sizes_scale_invariant():
    rng = np.random.default_rng(0)
    t = xr.DataArray(rng.normal(size=(7, 2, D)), dims=("item", "layer", "feature"))
    a = xr.DataArray(rng.normal(size=(4, 2, D)), dims=("item", "layer", "feature"))
    b = xr.DataArray(rng.normal(size=(5, 2, D)), dims=("item", "layer", "feature"))
    base = sc_weat_effect_sizes(t, a, b)
    scales = xr.DataArray(rng.uniform(0.1, 10, size=7), dims="item")
    np.testing.assert_allclose(sc_weat_effect_sizes(t * scales, 3 * a, b).values, base.values)
    with pytest.raises(AnalysisError, match="zero or non-finite"):
        sc_weat_effect_sizes(t * 0, a, b).values  # noqa: B018


# ------------------------------------------------------------------ errors and laziness


def test_missing_polar_word_raises_naming_it():
    ds = vast_ds(n_words=20, settings_=("bleached", "aligned"))
    keep = (ds.word.values != "bad7") | (ds.setting.values != "aligned")
    ds = ds.isel(item=np.flatnonzero(keep))
    ds.encoding["source"] = "gpt2.zarr"
    with pytest.raises(MissingStimuliError) as err:
        valnorm(ds, word_set="per-setting")
    msg = str(err.value)
    assert "1 of 25 words are missing" in msg and "'bad7'" in msg and "'aligned'" in msg
    assert "suite 'vast' in store gpt2.zarr" in msg and "emb extract" in msg
    with pytest.raises(MissingStimuliError, match="'nope'"):
        sc_weat(ds, words=["nope"], setting="bleached", attribute_a=PLEASANT,
                attribute_b=UNPLEASANT[:5])


def test_not_a_vast_suite():
    ds = vast_ds(n_words=10, settings_=("bleached",)).drop_vars("lexicon")
    with pytest.raises(AnalysisError, match="needs a 'vast' suite"):
        valnorm(ds)


def test_nothing_computes_before_compute():
    ds = vast_ds(n_words=100, settings_=("bleached", "aligned"))
    tasks = TaskCounter()
    with tasks:
        res = valnorm(ds)
        sc = sc_weat(ds, words=["toyw1"], setting="aligned", attribute_a=PLEASANT,
                     attribute_b=UNPLEASANT, n_permutations=50,
                     attribute_labels={"stimulus_set": ["pleasant", "unpleasant"]})
    assert tasks.count == 0
    for name in ("r", "p", "spearman_r", "ci_low"):
        assert isinstance(res[name].data, da.Array)
    assert isinstance(sc.effect_size.data, da.Array) and isinstance(sc.p.data, da.Array)
    with tasks:
        res.compute()
    assert tasks.count > 0


def test_valnorm_result_attrs_are_netcdf_safe(tmp_path):
    ds = vast_ds(n_words=30, settings_=("bleached",))
    res = valnorm(ds).compute()
    path = tmp_path / "valnorm.nc"
    res.to_netcdf(path, engine="scipy")  # netCDF3: attributes must be strings or numbers
    back = xr.open_dataset(path, engine="scipy").load()
    xr.testing.assert_allclose(back.r, res.r)
    assert json.loads(back.attrs["polar_words"])["pleasant"] == PLEASANT
    assert math.isfinite(float(back.r.max()))


def test_results_do_not_depend_on_chunking_or_dask():
    ds = vast_ds(n_words=70, settings_=("bleached", "aligned"), chunk=16)
    a = valnorm(ds).compute()
    b = valnorm(ds.chunk({"item": 1000, "layer": 1, "pooling": 2})).compute()
    c = valnorm(ds.compute())
    xr.testing.assert_allclose(a, b)
    xr.testing.assert_allclose(a, c)
