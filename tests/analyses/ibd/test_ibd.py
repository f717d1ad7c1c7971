"""IBD and EIBD: scores, ROC, threshold choice and metrics against independent computations."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.metrics import roc_curve

from emb.analyses import run_analysis
from emb.analyses.ibd import ANALYSIS, ibd
from emb.analyses.ibd._export import ceat_tests
from emb.analyses.ibd._ibd import CODE_GRID, _parse_thresholds
from emb.analyses.stats import detection, sc_weat_effect_size
from emb.errors import AnalysisError
from tests.analyses._synthetic import _attrs, ibd_dataset, write_store

# -- the metric code against the paper ---------------------------------------------------------------
#: (FP, N, TP, P) of the code's hard-coded operating points (FPR, TPR) = (FP/N, TP/P), with the
#: published accuracy, the majority baseline and the chance rate (METHODS.md, "IBD and EIBD").
PAPER = {
    "AF IBD": (9, 84, 5, 14, 0.816, 0.857, 0.143),
    "MF IBD": (9, 85, 5, 13, 0.827, 0.867, 0.133),
    "AF EIBD": (10, 89, 4, 9, 0.847, 0.908, 0.092),
    "MF EIBD": (33, 92, 5, 6, 0.653, 0.939, 0.061),
}


@pytest.mark.parametrize("task", list(PAPER))
def test_paper_operating_points_give_the_published_accuracies(task: str) -> None:
    fp, n, tp, p, accuracy, majority, chance = PAPER[task]
    m = detection.classification_metrics(tp, fp, n - fp, p - tp)
    assert p + n == 98  # the 98-word validation set
    assert float(m["fpr"]) == fp / n and float(m["tpr"]) == tp / p
    assert round(float(m["accuracy"]), 3) == accuracy
    assert round(float(m["majority_baseline"]), 3) == majority
    assert round(float(m["chance_rate"]), 3) == chance
    assert float(m["accuracy"]) < float(m["majority_baseline"])  # below "flag nothing"


def test_classification_metrics_hand_computed() -> None:
    m = detection.classification_metrics(3, 1, 5, 2)  # P = 5, N = 6
    assert float(m["tpr"]) == pytest.approx(0.6)
    assert float(m["fpr"]) == pytest.approx(1 / 6)
    assert float(m["precision"]) == pytest.approx(0.75)
    assert float(m["f1"]) == pytest.approx(2 * 0.75 * 0.6 / (0.75 + 0.6))
    assert float(m["balanced_accuracy"]) == pytest.approx((0.6 + 5 / 6) / 2)
    assert float(m["accuracy"]) == pytest.approx(8 / 11)
    assert np.isnan(detection.classification_metrics(0, 0, 4, 2)["precision"])  # nothing flagged
    with pytest.raises(AnalysisError, match="non-negative"):
        detection.classification_metrics(-1, 0, 1, 1)


# -- the exact ROC against scikit-learn ----------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_exact_roc_points_equal_sklearn_roc_curve(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 60))
    scores = np.round(rng.normal(0.3, 1.0, n), 1)  # rounded: ties on purpose
    labels = rng.random(n) < 0.3
    labels[:2] = [True, False]
    low = np.full(n, -np.inf)
    cand = detection.interval_candidates(low, scores)
    tp, fp = detection.interval_confusion(low, scores, labels, cand)
    ours = set(zip(fp.tolist(), tp.tolist(), strict=True))
    fpr, tpr, thr = roc_curve(labels, scores, drop_intermediate=False)
    p, neg = int(labels.sum()), int((~labels).sum())
    theirs = set(zip(np.rint(fpr * neg).astype(int).tolist(), np.rint(tpr * p).astype(int).tolist(),
                     strict=True))
    assert ours == theirs
    # the chosen point is sklearn's best TPR - FPR among the thresholds t >= 0 can reach: a point
    # "score >= thr" is "score > t" for t just below thr, eligible when thr > 0 (thr = inf: none)
    best = detection.choose_threshold(cand, tp, fp, p, neg)
    j = tp[best] / p - fp[best] / neg
    eligible = thr > 0
    assert j == pytest.approx(np.max(tpr[eligible] - fpr[eligible]))
    assert cand[best] >= 0


def test_choose_threshold_prefers_most_true_positives_then_smallest_t() -> None:
    # P = 2, N = 2; J(0) = 1 - 1/2 = 0.5 with 2 TP, J(1) = 1/2 - 0 = 0.5 with 1 TP
    assert detection.choose_threshold([0.0, 1.0, 2.0], [2, 1, 0], [1, 0, 0], 2, 2).item() == 0
    # an operating point with a larger J below t = 0 is not eligible
    assert detection.choose_threshold([-1.0, 0.5, 1.0], [2, 1, 0], [0, 0, 0], 2, 2).item() == 1
    # the same operating point at two thresholds: the smaller t
    assert detection.choose_threshold([0.2, 0.4, 0.9], [1, 1, 0], [0, 0, 0], 2, 2).item() == 0
    # no positives: undefined
    assert detection.choose_threshold([0.0, 1.0], [0, 0], [1, 0], 0, 2).item() == -1


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.integers(4, 30), elements=st.floats(-3, 3, allow_nan=False)),
       st.integers(0, 2**31 - 1))
def test_ibd_counts_fall_with_t_and_the_exact_roc_beats_any_grid(scores: np.ndarray, seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.random(scores.size) < 0.4
    labels[0], labels[-1] = True, False
    low = np.full(scores.size, -np.inf)
    cand = detection.interval_candidates(low, scores)
    tp, fp = detection.interval_confusion(low, scores, labels, cand)
    assert (np.diff(tp) <= 0).all() and (np.diff(fp) <= 0).all()  # IBD: fewer words as t rises
    p, n = labels.sum(), (~labels).sum()
    best = detection.choose_threshold(cand, tp, fp, p, n)
    grid = np.linspace(-2, 2, 41)
    gtp, gfp = detection.interval_confusion(low, scores, labels, grid)
    gbest = detection.choose_threshold(grid, gtp, gfp, p, n)
    assert tp[best] / p - fp[best] / n >= gtp[gbest] / p - gfp[gbest] / n - 1e-12


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, (2, 7), elements=st.floats(-1, 1, allow_nan=False)))
def test_association_score_flips_sign_when_the_groups_swap(cos: np.ndarray) -> None:
    a, b = cos[0, :3], cos[1, 3:]
    if np.ptp(np.concatenate([a, b])) < 1e-9:
        return
    assert sc_weat_effect_size(a, b) == pytest.approx(-sc_weat_effect_size(b, a))


def test_interval_rule_any_and_all_on_a_crafted_case() -> None:
    # one IBD word (score 2.0 > t = 1) with a race score of 2.0 and a gender score of 0.1
    constituents = np.array([2.0, 0.1])
    high, t = 2.0, 1.0
    any_low, all_low = constituents.max(), constituents.min()
    assert not detection.interval_detect(any_low, high, t)  # any: tied to race -> removed
    assert detection.interval_detect(all_low, high, t)  # all: not tied to gender -> kept
    assert detection.interval_detect(-np.inf, high, t)  # IBD


# -- the analysis --------------------------------------------------------------------------------------
def _tiny(names: dict[str, list[list[float]]], attributes: dict[str, list[float]],
          ibd_of: dict[str, str], eibd_of: dict[str, str]) -> xr.Dataset:
    """A one-layer ``ibd`` suite from given vectors (names by group ``race_gender``)."""
    rows, vectors = [], []
    for setting in ("alone", "bleached"):
        for group, vecs in names.items():
            race, gender = group.split("_")
            for i, v in enumerate(vecs):
                rows.append({"word": f"{group}{i}", "setting": setting, "stimulus_set": group,
                             "role": "name", "group": group, "race": race, "gender": gender,
                             "ibd_of": "", "eibd_of": ""})
                vectors.append(v)
        for word, v in attributes.items():
            rows.append({"word": word, "setting": setting, "stimulus_set": "attribute",
                         "role": "attribute", "group": "", "race": "", "gender": "",
                         "ibd_of": ibd_of.get(word, ""), "eibd_of": eibd_of.get(word, "")})
            vectors.append(v)
    items = pd.DataFrame(rows)
    emb = np.asarray(vectors, dtype=np.float64)[:, None, None, :]
    coords = {c: ("item", items[c].to_numpy().astype(object)) for c in items}
    coords.update({"layer": [0], "pooling": ["static"]})
    ds = xr.Dataset({"embedding": (("item", "layer", "pooling", "feature"), emb)}, coords=coords)
    ds.attrs = _attrs("ibd", len(items), 1, emb.shape[-1], ["static"], ["alone", "bleached"])
    return ds


def test_association_score_hand_computed() -> None:
    # w = (1, 0); af names give cos 1 and 0, am names 0 and -1: means 0.5 and -0.5, the four
    # cosines have sd sqrt(2/3) (ddof 1), so s(w, af, am) = 1 / sqrt(2/3)
    names = {"a_f": [[1, 0], [0, 1]], "a_m": [[0, 1], [-1, 0]],
             "e_f": [[1, 1], [1, -1]], "e_m": [[-1, 1], [-1, -1]]}
    ds = _tiny(names, {"w": [1, 0], "v": [0, 1]}, {"w": "a_f"}, {"w": "a_f"})
    res = ibd(ds, groups=["a_f"], contrast=None).compute()
    s = res.score.sel(setting="alone", layer=0, pooling="static")
    assert float(s.sel(attribute="w", pair="a_f|a_m")) == pytest.approx(1 / np.sqrt(2 / 3))
    # against the race set "e" (e_f + e_m: cosines ±1/√2 twice): a = [1, 0, 0, -1] (mean 0),
    # e = [.707, .707, -.707, -.707] (mean 0) -> 0
    assert float(s.sel(attribute="w", pair="a|e")) == pytest.approx(0.0, abs=1e-12)
    # gender: f = a_f + e_f = [1, 0, .707, .707], m = a_m + e_m = [0, -1, -.707, -.707]
    f = np.array([1, 0, 1 / np.sqrt(2), 1 / np.sqrt(2)])
    m = np.array([0, -1, -1 / np.sqrt(2), -1 / np.sqrt(2)])
    expected = (f.mean() - m.mean()) / np.concatenate([f, m]).std(ddof=1)
    assert float(s.sel(attribute="w", pair="f|m")) == pytest.approx(expected)
    assert res.attrs["ibd_comparisons"] == json.dumps({"a_f": ["a_m", "e_f", "e_m"]})


def test_scores_equal_a_brute_force_loop() -> None:
    ds = ibd_dataset(n_layers=2, d=12, poolings=("mean",))
    res = ibd(ds).compute()
    names = res.attrs["names"]
    groups = json.loads(names)
    emb = ds.embedding.sel(pooling="mean")
    for pair in ["african_female|european_male", "african|mexican", "female|male",
                 "mexican_female|african_male"]:
        first, second = pair.split("|")
        sets = []
        for key in (first, second):
            members = [n for g, ns in groups.items() if key == g or key in g.split("_") for n in ns]
            sets.append(members)
        for word in ["af_emergent0", "mf_race", "neutral3"]:
            for layer in (0, 1):
                sel = emb.sel(layer=layer).where(ds.setting == "bleached", drop=True)
                words = list(sel.word.values)
                vec = sel.values.astype(np.float64)
                w = vec[words.index(word)]
                cos = {n: float(w @ vec[words.index(n)]
                                / np.linalg.norm(w) / np.linalg.norm(vec[words.index(n)]))
                       for n in sets[0] + sets[1]}
                a = [cos[n] for n in sets[0]]
                b = [cos[n] for n in sets[1]]
                both = a + b
                mean = sum(both) / len(both)
                sd = (sum((x - mean) ** 2 for x in both) / (len(both) - 1)) ** 0.5
                expected = (sum(a) / len(a) - sum(b) / len(b)) / sd
                got = float(res.score.sel(setting="bleached", attribute=word, pair=pair,
                                          layer=layer, pooling="mean"))
                assert got == pytest.approx(expected, rel=1e-9), (pair, word, layer)


def test_planted_effects_and_the_two_rules() -> None:
    ds = ibd_dataset()
    cell = {"setting": "alone", "layer": 2, "pooling": "last", "group": "african_female"}
    any_ = ibd(ds).compute()
    all_ = ibd(ds, rule="all").compute()
    det_any, det_all = any_.detected.sel(cell), all_.detected.sel(cell)
    # IBD finds the group's emergent words and its single-category (race, gender) words
    for word in ("af_emergent0", "af_emergent1", "af_race", "af_gender", "mf_gender"):
        assert bool(det_any.sel({"detector": "ibd", "attribute": word})), word
    # EIBD: the emergent words stay; 'any' removes the race-only and gender-only words, 'all'
    # keeps them (they are not tied to *both* constituent categories)
    for word in ("af_emergent0", "af_emergent1"):
        assert bool(det_any.sel({"detector": "eibd", "attribute": word}))
        assert bool(det_all.sel({"detector": "eibd", "attribute": word}))
    for word in ("af_race", "af_gender"):
        assert not bool(det_any.sel({"detector": "eibd", "attribute": word})), word
        assert bool(det_all.sel({"detector": "eibd", "attribute": word})), word
    # IBD does not depend on the rule; EIBD reuses IBD's threshold by default
    xr.testing.assert_identical(any_.threshold.sel({"detector": "ibd"}), all_.threshold.sel({"detector": "ibd"}))
    np.testing.assert_array_equal(any_.threshold.sel({"detector": "eibd"}).values,
                                  any_.threshold.sel({"detector": "ibd"}).values)
    # the metrics equal counts recomputed from the detected words and the labels
    lab = any_.label.sel(group="african_female")
    for method in ("ibd", "eibd"):
        d = det_any.sel({"detector": method}).values
        y = lab.sel({"detector": method}).values
        assert int(any_.tp.sel({**cell, "detector": method})) == int((d & y).sum())
        assert int(any_.fp.sel({**cell, "detector": method})) == int((d & ~y).sum())
    # the top layer carries the planted signal: the emergent words rank first for EIBD
    assert float(any_.balanced_accuracy.sel({**cell, "detector": "eibd"})) > 0.9


def test_eibd_own_threshold_and_reference_mode() -> None:
    ds = ibd_dataset(n_layers=2)
    own = ibd(ds, eibd_threshold="own").compute()
    ref = ibd(ds, method="reference").compute()
    default = ibd(ds).compute()
    # 'own': EIBD's threshold maximises its own TPR - FPR, so its J is at least the default's
    j = lambda r: (r.tpr - r.fpr).sel({"detector": "eibd"})  # noqa: E731
    assert (j(own) >= j(default) - 1e-12).all()
    assert ref.attrs["rule"] == "all" and ref.attrs["eibd_threshold"] == "own"
    grid = json.loads(ref.attrs["thresholds"])
    np.testing.assert_allclose(grid, np.arange(-200, 200, 5) / 100)
    assert ref.sizes["candidate"] == 80
    assert (ref.threshold >= 0).all()
    comps = json.loads(ref.attrs["ibd_comparisons"])
    assert "african_male" not in comps["mexican_female"]  # the authors' Latina-column bug
    assert "african_male" in json.loads(default.attrs["ibd_comparisons"])["mexican_female"]
    assert comps["african_female"] == json.loads(default.attrs["ibd_comparisons"])["african_female"]
    # ... in their IBD block only: their EIBD block reads all five Latina columns
    eibd_comps = json.loads(ref.attrs["eibd_comparisons"])
    assert eibd_comps == json.loads(default.attrs["ibd_comparisons"])
    assert eibd_comps["mexican_female"] == ["african_female", "african_male", "european_female",
                                            "european_male", "mexican_male"]
    mf = {"group": "mexican_female"}
    pairs = [f"mexican_female|{o}" for o in eibd_comps["mexican_female"]]
    top = ref.score.sel(pair=pairs).max("pair")
    low = ref.constituent_score.sel(mf)
    for method, high in (("ibd", ref.ibd_score.sel(mf)), ("eibd", top)):
        t = ref.threshold.sel({**mf, "detector": method})
        lower = -np.inf if method == "ibd" else low
        expected = (lower <= t) & (t < high)
        np.testing.assert_array_equal(ref.detected.sel({**mf, "detector": method}).values,
                                      expected.transpose(*ref.detected.sel(mf).isel(detector=0).dims).values)
    assert not np.array_equal(ref.ibd_score.sel(mf).values, top.values)  # african_male counts
    np.testing.assert_array_equal(ref.eibd_score.sel(mf).values, top.values)
    words = ANALYSIS.tables(ref)["ibd_words"]
    rows = words[(words.group == "mexican_female") & (words.method == "eibd")]
    expected = top.sel(setting=rows.setting.to_xarray(), layer=rows.layer.to_xarray(),
                       pooling=rows.pooling.to_xarray(), attribute=rows.word.to_xarray())
    np.testing.assert_array_equal(rows.score.values, expected.values)
    # explicit options win over the reference defaults
    mixed = ibd(ds, method="reference", rule="any", thresholds="exact")
    assert mixed.attrs["rule"] == "any" and mixed.attrs["thresholds"] == "exact"


def test_threshold_grids() -> None:
    np.testing.assert_allclose(_parse_thresholds(CODE_GRID), np.arange(-200, 200, 5) / 100)
    assert _parse_thresholds("exact") is None and _parse_thresholds(None) is None
    np.testing.assert_allclose(_parse_thresholds("0.5,0.1"), [0.1, 0.5])
    np.testing.assert_allclose(_parse_thresholds([1, 0]), [0, 1])
    for bad in ("a:b:c", "1:0:0.1", "-2:-1:0.5", "x", "0:1:0"):
        with pytest.raises(AnalysisError, match="threshold"):
            _parse_thresholds(bad)
    res = ibd(ibd_dataset(n_layers=1), thresholds="0,0.5,1,1.5,2,2.5").compute()
    assert set(np.unique(res.threshold.values)) <= {0.0, 0.5, 1.0, 1.5, 2.0, 2.5}


def test_groups_without_names_are_left_out_with_a_warning() -> None:
    ds = ibd_dataset(n_layers=1, drop_groups=("mexican_female", "mexican_male"))
    with pytest.warns(UserWarning, match="mexican_female"):
        res = ibd(ds).compute()
    assert list(res.group.values) == ["african_female", "european_male"]
    assert list(res.group_role.values) == ["target", "contrast"]
    assert int(res.n_names.sel(name_set="mexican_female")) == 0
    assert int(res.n_names_total.sel(name_set="mexican_female")) == 6
    assert json.loads(res.attrs["missing_names"])["mexican_male"] == [f"mmname{i}" for i in range(6)]
    comps = json.loads(res.attrs["ibd_comparisons"])["african_female"]
    assert comps == ["african_male", "european_female", "european_male"]
    summary = ANALYSIS.summary(res, ANALYSIS.tables(res))
    assert any("mexican_female 0/6" in note for note in summary.notes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AnalysisError, match="none of the groups"):
            ibd(ds, groups=["mexican_female"])


def test_bad_inputs_are_clear_errors(tmp_path: Path) -> None:
    ds = ibd_dataset(n_layers=1)
    with pytest.raises(AnalysisError, match="not in this suite"):
        ibd(ds, groups=["martian_female"])
    with pytest.raises(AnalysisError, match="rule"):
        ibd(ds, rule="some")  # type: ignore[arg-type]
    with pytest.raises(AnalysisError, match="directory"):
        ibd(ds, export_tests=tmp_path / "no" / "such" / "dir.json")
    with pytest.raises(AnalysisError, match="not an 'ibd' suite"):
        ibd(ds.drop_vars("eibd_of"))


def test_ceat_export_has_the_layout_of_ceat_weat_groups(data_dir: Path) -> None:
    reference = json.loads((data_dir / "weat" / "ceat_weat_groups.json").read_text())
    res = ibd(ibd_dataset()).compute()
    doc = ceat_tests(res)
    assert list(doc) == list(reference)
    assert set(doc["tests"]) == {f"{g}_{m}" for g in ("african_female", "mexican_female")
                                 for m in ("ibd", "eibd")}
    for name, test in doc["tests"].items():
        # the layout, with the optional readable name first (emb's ceat_tests.json has one)
        assert list(test) == ["name", *reference["tests"]["I1"]], name
        group, method = name.rsplit("_", 1)
        assert test["name"] == (f"{json.loads(res.attrs['titles'])[group]} vs European-American "
                                f"males names × the words {method.upper()} detected for each")
        assert test["X_name"] == group and test["Y_name"] == "european_male"
        assert test["X"] == json.loads(res.attrs["names"])[group]
        assert not set(test["A"]) & set(test["B"])
        cell = {"setting": "bleached", "pooling": "last", "layer": 2, "detector": method}
        detected = set(res.attribute.values[res.detected.sel({**cell, "group": group}).values])
        contrast = set(res.attribute.values[res.detected.sel({**cell, "group": "european_male"}).values])
        assert set(test["A"]) == detected - contrast
        assert set(test["B"]) == contrast - detected


def test_cli_writes_tables_figures_and_the_exported_tests(tmp_path: Path, monkeypatch) -> None:
    from emb.cli.main import main

    store = write_store(tmp_path / "toy.zarr", {"ibd": ibd_dataset(n_layers=2)})
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, [
        "analyze", "ibd", "--store", str(store), "--out", "out", "--export-tests", "tests.json",
        "--thresholds", "-2:2:0.05", "--rule", "all", "-q", "--dpi", "40",
    ])
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    names = {p.name for p in out.iterdir()}
    assert {"ibd.csv", "ibd_words.csv", "ibd_roc.csv", "ibd.nc", "ibd_tests.json", "ibd.json",
            "ibd_roc.png", "ibd_accuracy_by_layer.png"} <= names
    assert (tmp_path / "tests.json").read_bytes() == (out / "ibd_tests.json").read_bytes()
    sidecar = json.loads((out / "ibd.json").read_text())
    assert list(sidecar["exports"]) == [str(tmp_path / "tests.json")]
    assert sidecar["options"]["rule"] == "all"
    table = pd.read_csv(out / "ibd.csv")
    for column in ("group", "method", "layer", "pooling", "threshold", "tp", "fp", "tn", "fn", "tpr",
                   "fpr", "accuracy", "balanced_accuracy", "majority_baseline", "chance_rate",
                   "precision", "recall", "f1"):
        assert column in table, column
    assert len(table) == 3 * 2 * 2 * 2 * 2  # groups × methods × settings × layers × poolings
    roc = pd.read_csv(out / "ibd_roc.csv")
    chosen = roc[roc["chosen"]]
    assert len(chosen) == len(table)
    merged = chosen.merge(table, on=["group", "method", "setting", "layer", "pooling"])
    np.testing.assert_array_equal(merged["tp_x"], merged["tp_y"])
    assert (merged["threshold_x"] >= 0).all()
    words = pd.read_csv(out / "ibd_words.csv")
    assert set(words.columns) >= {"group", "method", "word", "score", "label", "detected"}
    # an export path in a missing directory is refused before anything is computed
    bad = CliRunner().invoke(main, ["analyze", "ibd", "--store", str(store), "--out", "out2",
                                    "--export-tests", "nowhere/tests.json", "-q"])
    assert bad.exit_code != 0 and "does not exist" in bad.output
    assert "Traceback" not in bad.output


def test_two_models_stack(tmp_path: Path) -> None:
    a = ibd_dataset(n_layers=2, seed=1)
    b = ibd_dataset(n_layers=3, seed=2, drop_groups=("mexican_male",))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_analysis("ibd", {"a": a, "b": b}).compute()
    tables = ANALYSIS.tables(res)
    assert set(tables["ibd"]["model"]) == {"a", "b"}
    doc = ceat_tests(res)
    assert all(name.startswith(("a/", "b/")) for name in doc["tests"])
    figures = ANALYSIS.figures(res)
    assert {"roc_a", "roc_b"} <= set(figures)


def test_roc_figure_says_which_threshold_each_detector_used() -> None:
    from emb.analyses.ibd._figures import accuracy_by_layer, roc_curves

    ds = ibd_dataset(n_layers=2)
    cell = {"setting": "bleached", "pooling": "last", "layer": 1}
    for eibd_threshold, phrase in (("ibd", "EIBD uses it too"), ("own", "max TPR − FPR")):
        res = ibd(ds, eibd_threshold=eibd_threshold).compute()
        fig = roc_curves(res, **cell)
        (legend,) = fig.legends
        texts = " ".join(t.get_text() for t in legend.get_texts())
        assert phrase in texts
        assert ("uses it too" in texts) == (eibd_threshold == "ibd")
    acc = accuracy_by_layer(res, setting="bleached", pooling="last")
    assert "chance balanced accuracy (0.5)" in [t.get_text() for t in acc.legends[0].get_texts()]


def test_roc_table_columns_describe_the_candidates_not_the_chosen_cell() -> None:
    """ibd_roc's threshold, tp, … hold every candidate (roc_* variables), not the chosen
    threshold's numbers that the main table's columns of the same names hold."""
    from emb.results.directory import _descriptions

    result = run_analysis(ANALYSIS, {"m": ibd_dataset()}).compute()
    tables = ANALYSIS.tables(result)
    roc = _descriptions(result, tables["ibd_roc"])
    main = _descriptions(result, tables["ibd"])
    assert roc["threshold"].startswith("candidate threshold"), roc["threshold"]
    assert main["threshold"].startswith("chosen threshold"), main["threshold"]
    for column in ("tp", "fp", "tpr", "fpr"):
        assert "candidate threshold" in roc[column] and "chosen threshold" in main[column], column


def test_cli_refuses_an_export_path_that_is_one_of_the_runs_outputs(tmp_path: Path, monkeypatch) -> None:
    """'--out e5 --export-tests e5/ibd.csv' replaced the run's own table after its checksum was
    recorded: the finished run then failed its own check in 'emb report'."""
    from emb.cli.main import main
    from emb.results.directory import find_runs

    store = write_store(tmp_path / "toy.zarr", {"ibd": ibd_dataset(n_layers=2)})
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e5").mkdir()
    for target in ("e5/ibd.csv", "e5/ibd.json", "e5/ibd_tests.json"):
        bad = CliRunner().invoke(main, ["analyze", "ibd", "--store", str(store), "--out", "e5",
                                        "--export-tests", target, "-q", "--no-plots"])
        assert bad.exit_code == 1 and "cannot export to" in bad.output, bad.output
        assert "Traceback" not in bad.output and not list((tmp_path / "e5").iterdir())
    ok = CliRunner().invoke(main, ["analyze", "ibd", "--store", str(store), "--out", "e5",
                                   "--export-tests", "e5/mine.json", "-q", "--no-plots"])
    assert ok.exit_code == 0, ok.output
    assert find_runs([tmp_path / "e5"])  # the run passes its own check
