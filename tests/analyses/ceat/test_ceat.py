"""CEAT: the vectorised samples against a per-sample loop in the authors' style, a planted effect,
sampling with and without replacement, the reference mode, errors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import distance

from emb.analyses.ceat import ceat, sample_indices
from emb.errors import AnalysisError, MissingStimuliError
from tests.analyses._synthetic import ceat_dataset


def _brute_force_es(ds, stimuli: dict[str, list[str]], idx_of, n: int) -> np.ndarray:
    """The authors' cweat_random: per sample, dictionaries of vectors and Python loops of cosines."""
    emb = ds["embedding"].sel(layer=2, pooling="last").values.astype(np.float64)
    stim = ds["stimulus"].values.astype(str)
    rows = {s: np.flatnonzero(stim == s) for r in "XYAB" for s in stimuli[r]}
    out = []
    for i in range(n):
        vec = {s: emb[rows[s][idx_of(s, i)]] for s in rows}

        def assoc(w, vec=vec):
            a = np.mean([1 - distance.cosine(vec[w], vec[x]) for x in stimuli["A"]])
            b = np.mean([1 - distance.cosine(vec[w], vec[x]) for x in stimuli["B"]])
            return a - b

        sx = [assoc(x) for x in stimuli["X"]]
        sy = [assoc(y) for y in stimuli["Y"]]
        out.append((np.mean(sx) - np.mean(sy)) / np.std(sx + sy, ddof=1))
    return np.asarray(out)


def test_vectorised_samples_equal_a_per_sample_loop() -> None:
    ds = ceat_dataset(contexts=[12, 7, 30, 9, 12, 40, 3, 12, 12, 12, 12, 8, 12, 12, 12, 12, 12, 12])
    n = 40
    res = ceat(ds, tests="T1", n_samples=n, seed=5, n_bootstrap=0, n_permutations=0).compute()
    stimuli = {"X": [f"x{i}" for i in range(5)], "Y": [f"y{i}" for i in range(5)],
               "A": [f"pleasant{i}" for i in range(4)], "B": [f"unpleasant{i}" for i in range(4)]}
    order = [s for r in "XYAB" for s in stimuli[r]]
    import zlib

    stim = ds["stimulus"].values.astype(str)
    counts = [int((stim == s).sum()) for s in order]
    idx = sample_indices(counts, n, replace="auto",
                         rng_seeds=[[5, zlib.crc32(b"T1"), zlib.crc32(s.encode())] for s in order])
    col = {s: j for j, s in enumerate(order)}
    brute = _brute_force_es(ds, stimuli, lambda s, i: idx[i, col[s]], n)
    got = res["es"].sel(test="T1", layer=2, pooling="last").values
    np.testing.assert_allclose(got, brute, rtol=2e-5, atol=2e-5)  # float32 unit vectors


def test_planted_effect_is_recovered_with_sign_and_size() -> None:
    ds = ceat_dataset(effect=1.0, spread=0.3, contexts=40)
    res = ceat(ds, n_samples=400, seed=1, n_bootstrap=40, bootstrap_samples=50,
               n_permutations=50).compute()
    t1 = res.sel(test="T1", pooling="last")
    t2 = res.sel(test="T2", pooling="last")
    # the planted association is large and grows with the layer
    ces = t1["ces"].values
    assert (ces > 0.2).all() and (np.diff(ces) > 0).all() and ces[-1] > 1.0
    assert ces[-1] == pytest.approx(float(t1["es"].isel(layer=-1).mean()), abs=0.05)
    # its size: the WEAT d of the stimuli's mean vectors (the context noise averaged out)
    emb = ds["embedding"].sel(layer=2, pooling="last").values.astype(float)
    stim = ds["stimulus"].values.astype(str)
    mean = {s: emb[stim == s].mean(0) for s in np.unique(stim)}
    unit = {s: v / np.linalg.norm(v) for s, v in mean.items()}
    a = np.mean([unit[f"pleasant{i}"] for i in range(4)], 0)
    b = np.mean([unit[f"unpleasant{i}"] for i in range(4)], 0)
    sx = [unit[f"x{i}"] @ (a - b) for i in range(5)]
    sy = [unit[f"y{i}"] @ (a - b) for i in range(5)]
    expected = (np.mean(sx) - np.mean(sy)) / np.std(sx + sy, ddof=1)
    assert ces[-1] == pytest.approx(expected, rel=0.25)
    assert (t1["boot_ci_low"].isel(layer=slice(1, None)) > 0).all()
    # no planted effect: the bootstrap CI covers 0, while the meta-analytic CI is much narrower
    top2 = t2.isel(layer=-1)
    assert float(top2["boot_ci_low"]) < 0 < float(top2["boot_ci_high"])
    width_meta = float(top2["ci_high"] - top2["ci_low"])
    width_boot = float(top2["boot_ci_high"] - top2["boot_ci_low"])
    assert width_boot > 3 * width_meta
    # swapping X and Y flips the sign
    flipped = ds.assign_coords(roles=("item", np.where(
        ds["roles"].values == "X", "Y", np.where(ds["roles"].values == "Y", "X", ds["roles"].values)
    ).astype(object)))
    res_f = ceat(flipped, tests="T1", n_samples=400, seed=1, n_bootstrap=0,
                 n_permutations=0).compute()
    np.testing.assert_allclose(res_f["ces"].sel(test="T1"), -res["ces"].sel(test="T1"), atol=1e-9)
    # per-sample p: small where the planted effect is
    assert float(t1["p_sample"].isel(layer=-1).mean()) < 0.05 < float(top2["p_sample"].mean())


def test_sampling_without_and_with_replacement_by_counting() -> None:
    idx = sample_indices([50, 10], 50, rng_seeds=[[0, 1], [0, 2]], replace="auto")
    assert sorted(idx[:, 0]) == list(range(50))  # n >= N: each context exactly once
    assert len(set(idx[:, 1])) < 50 and idx[:, 1].max() < 10  # n < N: reused
    idx = sample_indices([200, 10], 50, rng_seeds=[[0, 1], [0, 2]], replace="auto")
    assert len(set(idx[:, 0])) == 50  # without replacement
    idx = sample_indices([200], 50, rng_seeds=[[0, 1]], replace="always")
    assert len(set(idx[:, 0])) < 50  # the authors' code: with replacement (birthday: ~6 repeats)
    # the stored per-stimulus flag
    ds = ceat_dataset(contexts=[60] * 5 + [10] * 13)
    res = ceat(ds, tests="T1", n_samples=50, n_bootstrap=0, n_permutations=0)
    flags = dict(zip(res["stimulus"].values, res["with_replacement"].values, strict=True))
    assert not flags["x0"] and flags["y0"]


def test_reference_mode_uses_the_supplements_variance() -> None:
    ds = ceat_dataset()
    default = ceat(ds, tests="T1", n_samples=50, n_bootstrap=0, n_permutations=0).compute()
    ref = ceat(ds, tests="T1", n_samples=50, n_bootstrap=0, n_permutations=0,
               method="reference").compute()
    es = default["es"].values
    np.testing.assert_allclose(default["v"].values, 10 / 25 + es**2 / 20)
    assert ref.attrs["variance"] == "reference" and not np.allclose(ref["v"], default["v"])
    assert ref.attrs["sampling"] == "with replacement"


def test_errors() -> None:
    ds = ceat_dataset()
    with pytest.raises(MissingStimuliError, match="T9"):
        ceat(ds, tests="T9")
    with pytest.raises(AnalysisError, match="n_samples"):
        ceat(ds, n_samples=1)
    with pytest.raises(AnalysisError, match="not a 'ceat' suite"):
        ceat(ds.drop_vars("tests"))


def test_summary_says_which_tests_and_stimuli_the_suite_left_out() -> None:
    import json as _json

    import xarray as xr

    from emb.analyses.ceat._summary import _coverage_notes

    params = {"tests": {"C1": {"X": ["a", "b"], "Y": ["c"], "A": ["d", "e"], "B": ["f"]}},
              "missing_by_test": {"C1": ["b"], "C9": ["x"]}, "dropped_tests": ["I1", "I2"]}
    one = xr.Dataset(attrs={"suite": _json.dumps({"parameters": params})})
    notes = _coverage_notes(one, computed={"C1"})
    assert notes == [
        "tests I1, I2 were not extracted: a word set of each had no stimulus with a context in "
        "the corpus (suite parameter dropped_tests).",
        "stimuli without a context in the corpus, left out of their tests: C1 1 of 6 (suite "
        "parameter missing_by_test).",
    ]
    other = {**params, "dropped_tests": [], "missing_by_test": {}}
    two = xr.Dataset(attrs={"models": _json.dumps({
        "a": {"suite": _json.dumps({"parameters": params})},
        "b": {"suite": _json.dumps({"parameters": other})},
    })})
    notes = _coverage_notes(two, computed={"C1"})
    assert len(notes) == 2 and all(n.startswith("a: ") for n in notes)
    assert _coverage_notes(xr.Dataset(), computed={"C1"}) == []


def test_figures_name_the_word_sets_and_mark_the_p_floor() -> None:
    from emb.analyses.ceat import _figures as plots

    res = ceat(ceat_dataset(effect=1.0, contexts=20), n_samples=60, seed=1, n_bootstrap=0,
               n_permutations=49).compute()
    fig = plots.es_histograms(res)
    (bar,) = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert bar.get_ylim()[0] == pytest.approx(1 / 50)  # the scale starts at the floor 1/(N+1)
    assert "floor 1/50" in bar.get_ylabel() and "two-sided" in bar.get_ylabel()
    groups = [str(res[g].sel(test="T1").values) for g in ("x_group", "y_group", "a_group", "b_group")]
    titles = [ax.get_title() for ax in plots.ces_by_layer(res).axes]
    assert any(all(g in t.replace("\n", " ") for g in groups) for t in titles)
    assert max(len(line) for t in titles for line in t.splitlines()) <= 24
    for figure in (fig, plots.ces_by_layer(res), plots.convergence(res), plots.heat_table(res)):
        assert figure.get_size_inches()[0] <= 7.0 + 1e-9  # the page width
