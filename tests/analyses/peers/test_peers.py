"""MAC, ECT, RIPA and RNSB: against WEFE 1.0.1 (a fixture made in WEFE's own environment), against
brute-force loops over scipy and scikit-learn, and on planted effects."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner
from scipy.spatial import distance
from scipy.stats import entropy, spearmanr
from sklearn.linear_model import LogisticRegression

import emb
from emb.analyses import ANALYSES
from emb.analyses.peers import ect, mac, ripa, rnsb
from emb.analyses.stats import peers as kernels
from emb.cli.main import main
from tests.analyses._synthetic import weat_dataset, write_store

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "wefe" / "wefe_values.json"
BIN = "static/GoogleNews-vectors-negative300-bolukbasi.bin"


# -- against WEFE ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def w2v_weat(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> xr.Dataset:
    from emb.backends.static import load_vectors
    from emb.extraction.pipeline import extract
    from emb.stimuli.suites import build_suite

    suite = build_suite("weat")
    runner = load_vectors(data_dir / BIN, [it.word for it in suite.items], allow_missing=True)
    path = tmp_path_factory.mktemp("w2v") / "w2v.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        extract(runner, [suite], str(path), progress=False, storage_dtype="float32")
    return emb.open_store(str(path)).dataset("weat")


def _values(result: xr.Dataset, metric: str) -> dict[str, float]:
    """Per test, the value of the one static layer and pooling, the same in every setting (a
    static vector does not depend on its context)."""
    da = result[metric].squeeze(["layer", "pooling"], drop=True).transpose("test", "setting")
    spread = np.asarray(da.max("setting") - da.min("setting"))
    assert np.all(np.isnan(spread) | (spread == 0)) and da.sizes["setting"] > 1
    return {str(t): float(v) for t, v in zip(da.test.values, da.values[:, 0], strict=True)}


def test_equal_to_wefe_on_the_word2vec_subset(w2v_weat: xr.Dataset) -> None:
    fixture = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert fixture["versions"]["wefe"] == "1.0.1"
    expected = fixture["tests"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = {
            "mac": mac(w2v_weat).compute(),
            "ect": ect(w2v_weat).compute(),
            "ripa_default": ripa(w2v_weat).compute(),
            "ripa_reference": ripa(w2v_weat, method="reference").compute(),
            "rnsb_default": rnsb(w2v_weat, seed=fixture["seed"]).compute(),
            "rnsb_reference": rnsb(w2v_weat, method="reference", seed=fixture["seed"]).compute(),
        }
    # the same tests on the same words (WEAT6 and WEAT10 dropped: a set without words)
    words = json.loads(runs["mac"].attrs["words"])
    assert sorted(words) == sorted(expected) and len(expected) == 8
    for test, entry in expected.items():
        assert words[test] == entry["words"], test
    checked = 0
    for key, result in runs.items():
        metric, _, kind = key.partition("_")
        # RIPA as WEFE means it: the target pairs and one attribute set, A, then B
        wanted = [(f"ripa_{s}", f"ripa_{s}_{kind}") for s in "ab"] if metric == "ripa" else [(metric, key)]
        for variable, fixture_key in wanted:
            got = _values(result, variable)
            for test, entry in expected.items():
                if entry[fixture_key] is None:  # no pair of WEAT3's definition survives: no RIPA
                    assert np.isnan(got[test]) and int(result.n_pairs.sel(test=test)) == 0
                    continue
                assert got[test] == pytest.approx(entry[fixture_key], abs=1e-6, rel=0), (key, test)
                checked += 1
        if metric == "ripa":  # the test's value is the contrast
            np.testing.assert_array_equal(result.ripa.values, (result.ripa_a - result.ripa_b).values)
    assert checked == 8 * 4 + 7 * 2 + 8 * 2
    # WEAT3 has no pair whose two words are in the store: no row, and the summary says why
    record = ANALYSES["ripa"]
    summary = record.summary(runs["ripa_default"], record.tables(runs["ripa_default"]))
    assert "WEAT3" not in set(summary.table["test"])
    assert any(n.startswith("WEAT3: no RIPA") and "no pair" in n for n in summary.notes), summary.notes
    # the pairs differ where a missing word shifts WEFE's (WEAT2: 12 defined pairs, 16 found)
    assert int(runs["ripa_default"].n_pairs.sel(test="WEAT2")) == 12
    assert int(runs["ripa_reference"].n_pairs.sel(test="WEAT2")) == 16


# -- against brute-force loops ---------------------------------------------------------------------
def _sets(rng: np.random.Generator, n=(6, 7, 5, 9), d=12) -> list[np.ndarray]:
    return [rng.normal(size=(k, d)) + rng.normal(size=d) for k in n]


def test_kernels_equal_loops_over_scipy_and_sklearn() -> None:
    rng = np.random.default_rng(4)
    for _ in range(5):
        X, Y, A, B = _sets(rng)
        emb_ = np.concatenate([X, Y, A, B])[None]  # one leading cell
        nx, ny, na = len(X), len(Y), len(A)
        mac_loop = np.mean([np.mean([distance.cosine(t, s) for s in S]) for t in [*X, *Y] for S in (A, B)])
        assert kernels.mac(emb_, nx, ny, na)[0] == pytest.approx(mac_loop, abs=1e-12)
        AB = np.concatenate([A, B])
        sx = [1 - distance.cosine(X.mean(0), a) for a in AB]
        sy = [1 - distance.cosine(Y.mean(0), a) for a in AB]
        assert kernels.ect(emb_, nx, ny, na)[0] == pytest.approx(spearmanr(sx, sy).correlation, abs=1e-12)
        pairs = np.array([[0, 2], [3, 1], [4, 4]])
        bs = [(X[i] - Y[j]) / np.linalg.norm(X[i] - Y[j]) for i, j in pairs]
        ripa_a, ripa_b = (np.mean([np.mean([w @ b for b in bs]) for w in S]) for S in (A, B))
        np.testing.assert_allclose(kernels.ripa_sets(emb_, pairs, nx, ny, na)[0], [ripa_a, ripa_b],
                                   rtol=0, atol=1e-12)
        assert kernels.ripa(emb_, pairs, nx, ny, na)[0] == pytest.approx(ripa_a - ripa_b, abs=1e-12)
        clf = LogisticRegression(solver="liblinear", max_iter=10_000, random_state=3).fit(
            AB, np.r_[np.ones(na), -np.ones(len(B))])
        p = clf.predict_proba(np.concatenate([X, Y]))[:, list(clf.classes_).index(-1)]
        expected = entropy(p / p.sum(), np.full(p.size, 1 / p.size))
        assert kernels.rnsb(emb_, nx, ny, na, seed=3)[0] == pytest.approx(expected, abs=1e-12)


def test_kernels_vectorise_over_leading_cells() -> None:
    rng = np.random.default_rng(1)
    cells = np.stack([np.concatenate(_sets(rng)) for _ in range(6)]).reshape(2, 3, 27, 12)
    for f, args in ((kernels.mac, (6, 7, 5)), (kernels.ect, (6, 7, 5)),
                    (kernels.ripa, (np.array([[0, 0], [1, 1]]), 6, 7, 5))):
        whole = f(cells, *args)
        one_by_one = np.array([[f(cells[i, j][None], *args)[0] for j in range(3)] for i in range(2)])
        np.testing.assert_allclose(whole, one_by_one, rtol=0, atol=1e-12)


# -- planted effects -------------------------------------------------------------------------------
def _planted(shift: float, d: int = 20, n: int = 10, seed: int = 0) -> np.ndarray:
    """X near +u, Y near −u, A near +u·shift, B near −u·shift (u one direction), plus noise."""
    rng = np.random.default_rng(seed)
    u = np.eye(d)[0]
    base = [rng.normal(scale=0.3, size=(n, d)) + c for c in (u, -u, shift * u, -shift * u)]
    base = [b + np.eye(d)[1] * 2 for b in base]  # a shared offset: cosines not centred on 0
    return np.concatenate(base)[None]


def test_planted_effects_are_recovered() -> None:
    strong, none = _planted(1.0), _planted(0.0)
    pairs = np.stack([np.arange(10), np.arange(10)], 1)
    # RIPA: A towards X (> 0), B towards Y (< 0); pooled over A ∪ B they would cancel, the
    # contrast A − B keeps the effect; with no effect every value is near 0
    ripa_a, ripa_b = kernels.ripa_sets(strong, pairs, 10, 10, 10)[0]
    assert ripa_a > 0.5 and ripa_b < -0.5 and abs(ripa_a + ripa_b) < 0.2
    assert kernels.ripa(strong, pairs, 10, 10, 10)[0] > 1.0
    assert abs(kernels.ripa(none, pairs, 10, 10, 10)[0]) < 0.2
    # ECT: X and Y rank the attributes in opposite orders when associated, alike when not
    assert kernels.ect(strong, 10, 10, 10)[0] < -0.5 < kernels.ect(none, 10, 10, 10)[0]
    # RNSB: Y (towards B, the negative class) is negative, X is not: far from uniform
    p = kernels.rnsb_probabilities(strong, 10, 10, 10)[0]
    assert p[10:].min() > 0.5 > p[:10].max()
    assert kernels.rnsb(strong, 10, 10, 10)[0] > 4 * kernels.rnsb(none, 10, 10, 10)[0]


def test_ripa_default_pairs_drop_a_missing_words_pair_and_reference_shifts() -> None:
    from emb.analyses.wordsets import target_pairs as _pairs
    from emb.analyses.wordsets.tests_file import TestSpec

    spec = json.loads((Path(emb.__file__).parent / "data" / "weat_tests.json").read_text())["tests"]
    weat4 = next(t for t in spec if t["id"] == "WEAT4")
    xs, ys = weat4["target_x"]["words"], weat4["target_y"]["words"]
    found = {"X": [w for w in xs if w != xs[0]], "Y": list(ys), "A": ["a"], "B": ["b"]}
    test = TestSpec(name="WEAT4", words=found, groups={r: r for r in "XYAB"})
    default = _pairs(test, "default")
    # the first X word is missing: its pair goes, every other pair stays (x_i, y_i)
    assert [(found["X"][i], found["Y"][j]) for i, j in default] == list(zip(xs[1:], ys[1:], strict=False))
    reference = _pairs(test, "reference")
    assert [(found["X"][i], found["Y"][j]) for i, j in reference][0] == (xs[1], ys[0])


# -- the analyses ----------------------------------------------------------------------------------
def test_every_metric_through_the_cli_and_two_stores(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = write_store(tmp_path / "a.zarr", {"weat": weat_dataset(n_layers=3)})
        two = write_store(tmp_path / "b.zarr", {"weat": weat_dataset(n_layers=2, seed=5)})
    for metric in ("mac", "ect", "ripa", "rnsb"):
        out = tmp_path / metric
        result = CliRunner().invoke(main, ["analyze", metric, "--store", f"a={one}", "--store",
                                           f"b={two}", "--out", str(out), "-q"])
        assert result.exit_code == 0, result.output
        table = pd.read_csv(out / f"{metric}.csv")
        assert list(table.columns[:1]) == ["model"]
        for column in ("test", "setting", "layer", "pooling", metric, "n_x", "n_y", "n_a", "n_b",
                       "small_n"):
            assert column in table
        assert set(table["model"]) == {"a", "b"} and table[metric].notna().all()
        assert (out / f"{metric}_by_layer.png").is_file()
    # the API gives the same numbers as the CLI's table
    run = emb.analyze("ect", str(one))
    assert run.tables["ect"]["ect"].notna().all()


def test_small_sets_are_flagged_and_named() -> None:
    ds, _ = ANALYSES["ripa"].example()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ripa(ds, tests=["WEAT1"], min_words=9).compute()
    assert bool(res.small_n.sel(test="WEAT1"))
    summary = ANALYSES["ripa"].summary(res, ANALYSES["ripa"].tables(res))
    assert any("WEAT1" in n and "9" in n for n in summary.notes), summary.notes
