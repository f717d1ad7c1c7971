"""emb.analyses.weat on synthetic store-shaped Datasets: hand/brute-force numbers, planted effects."""

from __future__ import annotations

import itertools
import json
import math

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from dask.callbacks import Callback
from hypothesis import given, settings
from hypothesis import strategies as st

from emb.analyses._select import provenance_attrs, select_words
from emb.analyses.weat import weat
from emb.errors import AnalysisError, MissingStimuliError

LAYERS = (0, 1, 2)
POOLINGS = ("first", "mean")
PLANTED, NOISE = 1, 2  # layer 1 carries the effect, layer 2 is pure noise


def _vector(direction: np.ndarray, rng: np.random.Generator, *, signal: float) -> np.ndarray:
    """(layer, pooling, feature): layer 0 weak signal, PLANTED strong, NOISE none."""
    d = direction.size
    out = rng.normal(size=(len(LAYERS), len(POOLINGS), d))
    out[0] += 0.5 * signal * direction
    out[PLANTED] += signal * direction
    return out


def weat_ds(
    spec: dict[str, dict[str, list[str]]],
    *,
    settings_: tuple[str, ...] = ("bleached", "alone"),
    d: int = 24,
    seed: int = 0,
    signal: float = 4.0,
    excluded: dict[str, set[str]] | None = None,
    chunk: int = 7,
) -> xr.Dataset:
    """A 'weat'-suite-shaped Dataset: X words lie near A's direction, Y near B's."""
    rng = np.random.default_rng(seed)
    dirs = {"pos": rng.normal(size=d), "neg": rng.normal(size=d)}
    dirs = {k: v / np.linalg.norm(v) for k, v in dirs.items()}
    side = {"X": "pos", "A": "pos", "Y": "neg", "B": "neg"}
    rows, vecs = [], []
    for setting in settings_:
        for test, roles in spec.items():
            for role, words in roles.items():
                for w in words:
                    rows.append(
                        {
                            "word": w,
                            "context": w if setting == "alone" else f"This is {w}.",
                            "setting": setting,
                            "stimulus_set": f"{test}-{role}",
                            "test": test,
                            "role": role,
                            "group": f"{test} group {role}",
                            "excluded": "true" if w in (excluded or {}).get(test, set()) else "false",
                        }
                    )
                    vecs.append(_vector(dirs[side[role]], rng, signal=signal))
    emb = np.stack(vecs).astype(np.float32)
    coords = {k: ("item", np.array([r[k] for r in rows])) for k in rows[0]}
    coords["char_start"] = ("item", np.zeros(len(rows), dtype=np.int64))
    coords["char_end"] = ("item", np.array([len(r["word"]) for r in rows]))
    return xr.Dataset(
        {
            "embedding": (
                ("item", "layer", "pooling", "feature"),
                da.from_array(emb, chunks=(chunk, 1, 2, d), name=False),
            )
        },
        coords={**coords, "layer": list(LAYERS), "pooling": list(POOLINGS)},
        attrs={
            "model": {"id": "toy-model", "n_layers": 2},
            "suite": {"name": "weat", "generator": "weat"},
            "extraction": {"storage_dtype": "float32"},
            "emb_schema_version": 1,
        },
    )


def _spec(n_x: int, n_y: int, n_a: int, n_b: int, test: str = "WEAT1") -> dict[str, list[str]]:
    return {
        "X": [f"{test.lower()}x{i}" for i in range(n_x)],
        "Y": [f"{test.lower()}y{i}" for i in range(n_y)],
        "A": [f"{test.lower()}a{i}" for i in range(n_a)],
        "B": [f"{test.lower()}b{i}" for i in range(n_b)],
    }


def _by_hand(ds: xr.Dataset, words: dict[str, list[str]], setting: str, layer: int, pooling: str):
    """WEAT with explicit Python loops over words (independent of emb.analyses.stats)."""

    def vec(w: str) -> np.ndarray:
        m = (ds.word.values == w) & (ds.setting.values == setting)
        i = int(np.flatnonzero(m)[0])
        return ds.embedding.sel(layer=layer, pooling=pooling).values[i].astype(float)

    def cos(u: np.ndarray, v: np.ndarray) -> float:
        return float(u @ v / math.sqrt(u @ u) / math.sqrt(v @ v))

    def s(w: str) -> float:
        a = [cos(vec(w), vec(x)) for x in words["A"]]
        b = [cos(vec(w), vec(x)) for x in words["B"]]
        return sum(a) / len(a) - sum(b) / len(b)

    sx = [s(w) for w in words["X"]]
    sy = [s(w) for w in words["Y"]]
    allv = sx + sy
    mean = sum(allv) / len(allv)
    sd = math.sqrt(sum((v - mean) ** 2 for v in allv) / (len(allv) - 1))
    es = (sum(sx) / len(sx) - sum(sy) / len(sy)) / sd
    stat = sum(sx) - sum(sy)
    null = []
    for comb in itertools.combinations(range(len(allv)), len(sx)):
        xs = sum(allv[i] for i in comb)
        null.append(xs - (sum(allv) - xs))
    p = sum(v >= stat - 1e-12 for v in null) / len(null)
    return es, stat, p


class TaskCounter(Callback):
    """Counts every dask task executed while it is active."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def _posttask(self, key, result, dsk, state, id) -> None:  # noqa: A002
        self.count += 1


class CountedArray:
    """An array-like that counts the reads dask makes of it (the embedding's source)."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.shape, self.dtype, self.ndim = data.shape, data.dtype, data.ndim
        self.reads = 0

    def __getitem__(self, key):
        self.reads += 1
        return self.data[key]


# ------------------------------------------------------------------ numbers


def test_weat_matches_hand_computation_and_brute_force_p():
    spec = {"WEAT1": _spec(4, 4, 3, 3)}
    ds = weat_ds(spec, signal=0.6)  # weak effect: p is not at its minimum
    res = weat(ds).compute()
    assert res.effect_size.dims == ("test", "setting", "layer", "pooling")
    for setting in ("bleached", "alone"):
        for layer in LAYERS:
            for pooling in POOLINGS:
                es, stat, p = _by_hand(ds, spec["WEAT1"], setting, layer, pooling)
                cell = res.sel(test="WEAT1", setting=setting, layer=layer, pooling=pooling)
                assert float(cell.effect_size) == pytest.approx(es, rel=1e-9)
                assert float(cell.statistic) == pytest.approx(stat, rel=1e-9, abs=1e-12)
                assert float(cell.p) == pytest.approx(p, abs=1e-12)
    assert int(res.n_permutations.sel(test="WEAT1")) == 0  # C(8, 4) = 70 splits: exact
    assert [int(res[f"n_{r}"].sel(test="WEAT1")) for r in "xyab"] == [4, 4, 3, 3]


def test_planted_effect_sign_size_and_noise_layer():
    spec = {"WEAT1": _spec(8, 8, 6, 6), "WEAT2": _spec(8, 8, 6, 6, "WEAT2")}
    res = weat(weat_ds(spec, seed=3, signal=12.0), correction="holm").compute()
    planted = res.sel(layer=PLANTED)
    assert (planted.effect_size > 1.5).all()
    # 8 + 8 words, perfectly separated: the observed split is the single most extreme one
    np.testing.assert_allclose(planted.p, 1 / math.comb(16, 8))
    np.testing.assert_allclose(planted.p_adjusted, 2 / math.comb(16, 8))
    assert (np.abs(res.effect_size.sel(layer=NOISE)) < 1.5).all()
    assert list(res.test.values) == ["WEAT1", "WEAT2"]
    assert res.x_group.sel(test="WEAT2").item() == "WEAT2 group X"


def test_monte_carlo_and_reference_modes():
    spec = {"WEAT1": _spec(8, 8, 4, 4)}
    ds = weat_ds(spec, signal=0.5, seed=5)
    exact = weat(ds).compute()
    mc = weat(ds, exact_limit=100, n_permutations=20_000, seed=2).compute()
    assert int(mc.n_permutations.item()) == 20_000
    np.testing.assert_allclose(mc.p, exact.p, atol=0.02)
    np.testing.assert_allclose(mc.effect_size, exact.effect_size)
    again = weat(ds, exact_limit=100, n_permutations=20_000, seed=2).compute()
    xr.testing.assert_identical(mc, again)
    ref = weat(ds, method="reference", n_permutations=5000).compute()
    assert int(ref.n_permutations.item()) == 5000
    np.testing.assert_allclose(ref.p, exact.p, atol=0.06)  # normal approximation of the null
    assert ref.attrs["method"] == "reference"


def test_alternatives_and_corrections():
    spec = {f"WEAT{i}": _spec(4, 4, 3, 3, f"WEAT{i}") for i in (1, 2, 10)}
    ds = weat_ds(spec, signal=0.4, seed=7)
    greater = weat(ds).compute()
    less = weat(ds, alternative="less").compute()
    # exact, continuous data: P(S >= s) + P(S <= s) = 1 + P(S = s) = 1 + 1/70
    np.testing.assert_allclose(greater.p + less.p, 1 + 1 / 70, atol=1e-12)
    assert list(greater.test.values) == ["WEAT1", "WEAT2", "WEAT10"]  # natural order
    bh = weat(ds, correction="bh").compute()
    p = bh.p.transpose(..., "test").values
    for idx in np.ndindex(p.shape[:-1]):
        row = p[idx]
        order = np.argsort(row)
        m = row.size
        want = np.minimum.accumulate((row[order] * m / np.arange(1, m + 1))[::-1])[::-1]
        got = bh.p_adjusted.transpose(..., "test").values[idx][order]
        np.testing.assert_allclose(got, np.minimum(want, 1))


def test_custom_word_lists_and_settings():
    spec = {"WEAT1": _spec(5, 5, 4, 4)}
    ds = weat_ds(spec)
    words = spec["WEAT1"]
    res = weat(ds, x=words["X"], y=words["Y"], a=words["A"], b=words["B"], settings="alone")
    res = res.compute()
    assert list(res.test.values) == ["custom"] and list(res.setting.values) == ["alone"]
    suite = weat(ds, settings=["alone"]).compute()
    np.testing.assert_allclose(res.effect_size.values, suite.effect_size.values)
    assert json.loads(res.attrs["words"])["custom"]["A"] == words["A"]


def test_excluded_words():
    spec = {"WEAT3": _spec(6, 6, 3, 3, "WEAT3")}
    ds = weat_ds(spec, excluded={"WEAT3": {"weat3x0", "weat3y5"}})
    res = weat(ds).compute()
    assert res.n_x.item() == 5 and res.n_y.item() == 5
    assert "weat3x0" not in json.loads(res.attrs["words"])["WEAT3"]["X"]
    full = weat(ds, include_excluded=True).compute()
    assert full.n_x.item() == 6 and full.attrs["include_excluded"] == "true"


def test_attrs_hold_parameters_and_provenance():
    ds = weat_ds({"WEAT1": _spec(4, 4, 3, 3)})
    ds.encoding["source"] = "/data/toy.zarr"
    res = weat(ds, seed=11, ddof=0)
    assert res.attrs["seed"] == 11 and res.attrs["ddof"] == 0
    assert json.loads(res.attrs["model"])["id"] == "toy-model"
    assert res.attrs["store"] == "/data/toy.zarr"
    assert provenance_attrs(ds)["suite"] == json.dumps({"generator": "weat", "name": "weat"})
    for value in res.attrs.values():  # netCDF-safe
        assert isinstance(value, str | int | float)


# ------------------------------------------------------------------ properties


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 5), st.integers(3, 5))
def test_swapping_x_and_y_flips_the_sign(seed, n_x, n_y):
    spec = {"WEAT1": _spec(n_x, n_y, 3, 3)}
    ds = weat_ds(spec, seed=seed, signal=1.0, settings_=("bleached",))
    w = spec["WEAT1"]
    fwd = weat(ds, x=w["X"], y=w["Y"], a=w["A"], b=w["B"]).compute()
    rev = weat(ds, x=w["Y"], y=w["X"], a=w["A"], b=w["B"]).compute()
    np.testing.assert_allclose(rev.effect_size, -fwd.effect_size, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rev.statistic, -fwd.statistic, rtol=1e-10, atol=1e-12)
    for r in (fwd, rev):
        assert ((r.p > 0) & (r.p <= 1)).all()
    # swapping A and B flips it too
    ab = weat(ds, x=w["X"], y=w["Y"], a=w["B"], b=w["A"]).compute()
    np.testing.assert_allclose(ab.effect_size, -fwd.effect_size, rtol=1e-10, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.01, 100.0))
def test_positive_scaling_of_vectors_changes_nothing(seed, scale):
    spec = {"WEAT1": _spec(4, 4, 3, 3)}
    ds = weat_ds(spec, seed=seed, settings_=("bleached",))
    rng = np.random.default_rng(seed)
    factors = scale * rng.uniform(0.5, 2.0, size=(ds.sizes["item"], 1, 1, 1))
    scaled = ds.copy()
    scaled["embedding"] = ds.embedding * factors
    a, b = weat(ds).compute(), weat(scaled).compute()
    np.testing.assert_allclose(b.effect_size, a.effect_size, rtol=1e-6)
    np.testing.assert_allclose(b.p, a.p)


# ------------------------------------------------------------------ errors and laziness


def test_missing_words_raise_naming_them():
    spec = {"WEAT1": _spec(4, 4, 3, 3)}
    ds = weat_ds(spec)
    ds.encoding["source"] = "toy.zarr"
    w = spec["WEAT1"]
    missing = [f"zz{i}" for i in range(12)]
    with pytest.raises(MissingStimuliError) as err:
        weat(ds, x=w["X"] + missing, y=w["Y"], a=w["A"], b=w["B"])
    msg = str(err.value)
    assert "12 of 16 words are missing" in msg
    assert "'zz0'" in msg and "'zz9'" in msg and "'zz10'" not in msg
    assert "suite 'weat' in store toy.zarr" in msg
    # the built-in 'weat' group holds the word lists it was extracted with (extracting others
    # into it is refused): the hint extracts a test file into a new group and analyses that
    assert "built-in 'weat' generator" in msg
    assert ("emb extract --model toy-model --suite weat --test FILE --name weat_new "
            "--store toy.zarr" in msg)
    assert "'--suite weat_new'" in msg
    # a test whose words lack one setting
    only_bleached = ds.isel(item=np.flatnonzero(ds.setting.values == "bleached"))
    with pytest.raises(AnalysisError, match=r"setting \['alone'\] not in this suite"):
        weat(only_bleached, settings=["alone"])


def test_ambiguous_word_names_the_distinguishing_label():
    spec = {"WEAT1": _spec(4, 4, 3, 3), "WEAT2": _spec(4, 4, 3, 3)}
    spec["WEAT2"]["X"][0] = "weat1x0"  # same word in two tests ...
    ds = weat_ds(spec, settings_=("bleached",))
    # ... with the same context: one stimulus, selected once
    sel = select_words(ds, ["weat1x0"], setting="bleached")
    assert sel.sizes["item"] == 1
    # with different contexts it is ambiguous, and the message says which label tells them apart
    ctx = ds.context.values.copy()
    ctx[np.flatnonzero(ds.word.values == "weat1x0")[1]] = "Another weat1x0."
    ds = ds.assign_coords(context=("item", ctx))
    with pytest.raises(AnalysisError, match=r"differ in .*test \(values \['WEAT1', 'WEAT2'\]\)"):
        select_words(ds, ["weat1x0"], setting="bleached")
    assert select_words(ds, ["weat1x0"], setting="bleached", test="WEAT2").sizes["item"] == 1


def test_invalid_options():
    ds = weat_ds({"WEAT1": _spec(4, 4, 3, 3)})
    with pytest.raises(AnalysisError, match="alternative"):
        weat(ds, alternative="bigger")
    with pytest.raises(AnalysisError, match="correction"):
        weat(ds, correction="bonferroni")
    with pytest.raises(AnalysisError, match="x, y, a and b"):
        weat(ds, x=["weat1x0"])
    with pytest.raises(AnalysisError, match="not in this suite"):
        weat(ds, tests=["WEAT9"])
    with pytest.raises(AnalysisError, match="not a 'weat' suite"):
        weat(ds.drop_vars("test"))


def test_nothing_computes_before_compute():
    ds = weat_ds({"WEAT1": _spec(8, 8, 5, 5), "WEAT2": _spec(8, 8, 5, 5, "WEAT2")})
    source = CountedArray(ds.embedding.values)
    ds["embedding"] = (ds.embedding.dims, da.from_array(source, chunks=(7, 1, 2, 24)))
    reads_before = source.reads  # dask may peek at the array's meta when wrapping it
    tasks = TaskCounter()
    with tasks:
        res = weat(ds, correction="holm")
    assert tasks.count == 0 and source.reads == reads_before
    for name in ("effect_size", "statistic", "p", "p_adjusted"):
        assert isinstance(res[name].data, da.Array)
    with tasks:
        res.compute()
    assert tasks.count > 0 and source.reads > reads_before


def test_results_do_not_depend_on_chunking_or_dask():
    spec = {"WEAT1": _spec(8, 8, 4, 4), "WEAT3": _spec(9, 9, 4, 4, "WEAT3")}
    ds = weat_ds(spec, signal=0.5, chunk=5)
    options = {"exact_limit": 20_000, "n_permutations": 3000, "seed": 4}  # WEAT3: Monte Carlo
    a = weat(ds, **options).compute()
    b = weat(ds.chunk({"item": 50, "layer": 3, "pooling": 1}), **options).compute()
    c = weat(ds.compute(), **options)  # numpy-backed: computed eagerly
    assert a.n_permutations.values.tolist() == [0, 3000]
    xr.testing.assert_allclose(a, b)
    xr.testing.assert_allclose(a, c)
