"""The intersectional analysis (and the valence direction it projects onto), checked against
independent computations: scikit-learn's own LinearSVC fit, scipy's permutation test,
statsmodels' corrections, brute-force grouping on the phrase words, and a synthetic store with a
planted valence direction and planted attribute shifts. The valence subspace's own numbers are in
tests/analyses/valence_subspace/."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.optimize
import scipy.stats
import xarray as xr
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler, normalize
from sklearn.svm import LinearSVC
from statsmodels.stats.multitest import multipletests

from emb.analyses import ANALYSES
from emb.analyses.intersectional import intersectional
from emb.analyses.intersectional._intersectional import _pair_kernel
from emb.analyses.stats.subspace import MAX_ITER
from emb.analyses.valence_subspace import valence_subspace
from emb.cli.analyze import analyze
from emb.errors import AnalysisError, MissingStimuliError
from tests.analyses._synthetic import write_store
from tests.analyses._synthetic_intersectional import (
    SHIFTS,
    VAL,
    expected_d,
    intersectional_dataset,
    training_vectors,
)

N_PERM = 2000
TOP = 2  # the synthetic store's top layer


@pytest.fixture(scope="module")
def ds() -> xr.Dataset:
    return intersectional_dataset()


@pytest.fixture(scope="module")
def result(ds: xr.Dataset) -> xr.Dataset:
    return intersectional(ds, n_permutations=N_PERM, correction="holm").compute()


@pytest.fixture(scope="module")
def subspace(ds: xr.Dataset) -> xr.Dataset:
    return valence_subspace(ds).compute()


def _vectors(ds: xr.Dataset, stimulus_set: str, layer: int, pooling: str) -> tuple[np.ndarray, np.ndarray]:
    rows = np.flatnonzero(ds["stimulus_set"].values.astype(str) == stimulus_set)
    V = ds["embedding"].sel(layer=layer, pooling=pooling).values[rows].astype(np.float64)
    return V, ds["context"].values[rows].astype(str)


# -- the direction ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("layer", "pooling"), [(0, "last"), (TOP, "mean")])
def test_direction_equals_scikit_learns_own_fit(ds, subspace, result, layer, pooling):
    X, y, _ = training_vectors(ds, layer, pooling)
    svc = LinearSVC(C=5.0, dual=True, random_state=0, max_iter=MAX_ITER).fit(normalize(X, axis=0), y)
    u = svc.coef_[0] / np.linalg.norm(svc.coef_[0])
    np.testing.assert_allclose(subspace["direction"].sel(layer=layer, pooling=pooling), u, atol=1e-12)
    # projections: the training words' column norms applied to the phrase vectors, then · u
    V, _ = _vectors(ds, "experiment2", layer, pooling)
    expected = (V / np.sqrt((X**2).sum(axis=0))) @ u
    got = result["projection"].sel(layer=layer, pooling=pooling).values[: len(V)]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    # the authors' mismatch: the same fit, raw vectors projected
    ref = intersectional(ds.isel(layer=[layer]), n_permutations=10, method="reference").compute()
    np.testing.assert_allclose(ref["projection"].sel(pooling=pooling).values[: len(V), 0], V @ u,
                               rtol=1e-9, atol=1e-12)
    # standard scaling: scikit-learn's own pipeline
    pipe = Pipeline([("s", StandardScaler()), ("svc", LinearSVC(C=5.0, dual=True, random_state=0, max_iter=MAX_ITER))])
    pipe.fit(X, y)
    w = pipe.named_steps["svc"].coef_[0]
    std = intersectional(ds.isel(layer=[layer]), n_permutations=10, scaling="standard").compute()
    np.testing.assert_allclose(std["projection"].sel(pooling=pooling).values[: len(V), 0],
                               pipe.named_steps["s"].transform(V) @ (w / np.linalg.norm(w)),
                               rtol=1e-9, atol=1e-12)


# -- experiment 2 ----------------------------------------------------------------------------------
def test_planted_shifts_are_recovered_with_sign_and_size(ds, result):
    """d equals the d of the planted valence feature itself (the phrases' sampled values), and
    that the analytic d of the planted shifts within sampling error (se of d ≈ 2/√4096 = 0.03)."""
    is2 = ds["stimulus_set"].values.astype(str) == "experiment2"
    for layer in range(3):
        expected = expected_d(layer, 3)
        planted = ds["embedding"].sel(layer=layer, pooling="last").values[is2, VAL].astype(np.float64)
        for pair, d in result["effect_size"].sel(layer=layer, pooling="last").to_series().items():
            a, b = pair.split("/")
            category = str(result["category"].sel(pair=pair).values)
            values = ds[category].values[is2].astype(str)
            exact = (planted[values == a].mean() - planted[values == b].mean()) / planted.std(ddof=1)
            assert d == pytest.approx(exact, abs=0.01), (layer, pair)
            assert d == pytest.approx(expected[pair], abs=0.1), (layer, pair)
            if abs(SHIFTS[pair]) >= 0.2:
                assert np.sign(d) == np.sign(SHIFTS[pair])


def test_effect_sizes_equal_a_brute_force_on_the_phrase_words(ds, result):
    V, texts = _vectors(ds, "experiment2", TOP, "last")
    proj = result["projection"].sel(layer=TOP, pooling="last").values[: len(V)]
    words = [set(t.split(" ")) for t in texts]
    for pair in result["pair"].values:
        a, b = str(pair).split("/")
        in_a = np.array([a in w for w in words])
        in_b = np.array([b in w for w in words])
        assert in_a.sum() == in_b.sum() == 2048 and not (in_a & in_b).any()
        d = (proj[in_a].mean() - proj[in_b].mean()) / proj[in_a | in_b].std(ddof=1)
        assert float(result["effect_size"].sel(pair=pair, layer=TOP, pooling="last")) == pytest.approx(d, rel=1e-10)
    assert (result["n_a"].values == 2048).all() and (result["n_b"].values == 2048).all()


def test_p_values_match_scipy_and_sit_at_their_floor(ds, result):
    proj = result["projection"].sel(layer=TOP, pooling="last").values[:4096]
    labels = result["age"].values[:4096].astype(str)
    ours = float(result["p"].sel(pair="young/old", layer=TOP, pooling="last"))  # no planted shift
    theirs = scipy.stats.permutation_test(
        (proj[labels == "young"], proj[labels == "old"]),
        lambda a, b, axis: a.mean(axis=axis) - b.mean(axis=axis),
        n_resamples=4_999, alternative="two-sided", random_state=1, vectorized=True,
    ).pvalue
    assert 0.05 < ours < 1 and abs(ours - theirs) < 0.05
    floor = 1 / (N_PERM + 1)
    big = result["p"].sel(pair="heterosexual/homosexual")
    assert (big.values == floor).all()
    table = ANALYSES["intersectional"].tables(result)["intersectional"]
    rows = table[table["pair"] == "heterosexual/homosexual"]
    assert rows["p_at_floor"].all() and (rows["n_permutations"] == N_PERM).all()
    summary = ANALYSES["intersectional"].summary(result, ANALYSES["intersectional"].tables(result))
    assert f"≤ 1/{N_PERM + 1:,}" in summary.table.set_index("pair").loc["heterosexual/homosexual", "p"]


@pytest.mark.parametrize(("correction", "name"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_correction_across_pairs_matches_statsmodels(ds, result, correction, name):
    res = result if correction == "holm" else intersectional(ds, n_permutations=N_PERM, correction="bh").compute()
    for layer in range(3):
        for pooling in ("last", "mean"):
            p = res["p"].sel(layer=layer, pooling=pooling).values
            expected = multipletests(p, method=name)[1]
            np.testing.assert_allclose(res["p_adjusted"].sel(layer=layer, pooling=pooling), expected)


def test_no_correction_means_no_adjusted_p(ds):
    res = intersectional(ds.isel(layer=[TOP]), n_permutations=50).compute()
    assert "p_adjusted" not in res
    table = ANALYSES["intersectional"].tables(res)["intersectional"]
    assert list(table.columns[:8]) == ["pair", "layer", "pooling", "effect_size", "p", "p_adjusted",
                                       "n_a", "n_b"]
    assert table["p_adjusted"].isna().all() and not table["p"].isna().any()


def test_reference_reproduces_the_authors_grouping(ds):
    res = intersectional(ds, n_permutations=200, method="reference").compute()
    counts = pd.DataFrame({"n_a": res["n_a"].to_series(), "n_b": res["n_b"].to_series()})
    assert tuple(counts.loc["male/female"]) == (4026, 2013)  # "male" is in every "female" phrase
    # phrases 64-69 (of the 70 dropped) are "illiterate": 2048 - 6 left
    assert tuple(counts.loc["literate/illiterate"]) == (4026, 2042)
    assert tuple(counts.loc["young/old"]) == (2048 - 70, 2048)  # the first 70 phrases are "young"
    assert res.attrs["phrases_dropped"] == 70 and "substring" in res.attrs["grouping"]
    # brute force on the reference projections: substring groups of phrases 70..4095
    _, texts = _vectors(ds, "experiment2", TOP, "last")
    proj = res["projection"].sel(layer=TOP, pooling="last").values[:4096]
    for pair in ("male/female", "literate/illiterate", "cisgender/transgender"):
        a, b = pair.split("/")
        kept = np.arange(70, 4096)
        pa = proj[[i for i in kept if a in texts[i]]]
        pb = proj[[i for i in kept if b in texts[i]]]
        d = (pa.mean() - pb.mean()) / np.concatenate([pa, pb]).std(ddof=1)
        assert float(res["effect_size"].sel(pair=pair, layer=TOP, pooling="last")) == pytest.approx(d, rel=1e-10)
    p = res["p"].values
    assert ((p > 0) & (p <= 0.5)).all()  # the smaller tail of a normal fit, not doubled


def test_reference_substring_grouping_roughly_halves_male_female():
    shifts = {pair: 0.0 for pair in SHIFTS} | {"male/female": 1.0, "literate/illiterate": 0.8}
    planted = intersectional_dataset(n_layers=2, shifts=shifts, seed=3)
    default = intersectional(planted, n_permutations=10).effect_size.sel(layer=1, pooling="last")
    ref = intersectional(planted, n_permutations=10, method="reference").effect_size.sel(layer=1, pooling="last")
    for pair in ("male/female", "literate/illiterate"):
        ratio = float(ref.sel(pair=pair) / default.sel(pair=pair))
        assert 0.4 < ratio < 0.65, (pair, ratio)
    assert float(ref.sel(pair="cisgender/transgender")) == pytest.approx(0, abs=0.1)


# -- experiment 3 ----------------------------------------------------------------------------------
def test_experiment3_shares_equal_a_count_on_the_sorted_phrases(ds, result):
    proj = result["projection"].sel(layer=TOP, pooling="mean")
    exp3 = proj.values[result["experiment"].values == 3]
    texts = np.asarray(proj["phrase"].values)[result["experiment"].values == 3].astype(str)
    k = round(0.1 * len(texts))
    assert int(result["n_extreme"]) == k == 384
    order = np.argsort(exp3, kind="stable")
    for extreme, chosen in (("top", order[-k:]), ("bottom", order[:k])):
        tokens = [texts[i].split(" ") for i in chosen]
        for value in result["value"].values:
            share = np.mean([value in t for t in tokens])
            got = float(result["share"].sel(extreme=extreme, value=value, layer=TOP, pooling="mean"))
            assert got == pytest.approx(share, abs=1e-12)
            for position in range(1, 6):
                at = np.mean([t[position] == value for t in tokens])
                got = result["position_share"].sel(extreme=extreme, value=value, position=position,
                                                   layer=TOP, pooling="mean")
                assert float(got) == pytest.approx(at, abs=1e-12)
    share = result["share"].sel(layer=TOP, pooling="last")
    assert float(share.sel(extreme="top", value="heterosexual")) > 0.9  # planted shift 1.5
    assert float(share.sel(extreme="bottom", value="homosexual")) > 0.9
    # each phrase holds one value of each category, at one position
    by_category = share.groupby(result["value_category"]).sum()
    np.testing.assert_allclose(by_category.values, 1.0)
    np.testing.assert_allclose(
        result["position_share"].sum("position").values, result["share"].values, atol=1e-12
    )


# -- invariants of the pair kernel -----------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 10_000),
    st.integers(3, 9),
    st.integers(3, 9),
    st.floats(0.1, 50.0),
    st.floats(-5.0, 5.0),
)
def test_swapping_groups_flips_d_and_scaling_changes_nothing(seed, n_a, n_b, scale, shift):
    rng = np.random.default_rng(seed)
    P = rng.normal(0, 1, (2, n_a + n_b + 3))
    perm = rng.permutation(P.shape[-1])
    a, b = perm[:n_a], perm[n_a:n_a + n_b]
    kwargs = {"ddof": 1, "alternative": "two-sided", "n_permutations": 300, "seed": 0, "reference": False}
    d, p, _, _ = _pair_kernel(P, groups=[(a, b)], **kwargs)
    d_swap, p_swap, _, _ = _pair_kernel(P, groups=[(b, a)], **kwargs)
    d_scaled, p_scaled, _, _ = _pair_kernel(scale * P + shift, groups=[(a, b)], **kwargs)
    np.testing.assert_allclose(d_swap, -d, atol=1e-12)
    np.testing.assert_allclose(d_scaled, d, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(p_swap, p)
    np.testing.assert_allclose(p_scaled, p)
    assert ((p > 0) & (p <= 1)).all()


def test_reference_smaller_tail_keeps_its_precision_in_both_directions():
    """The authors' smaller tail of the normal fit, Φ(-|z|), computed without 1 - Φ(-z): a large
    negative effect gets the same tiny p as its mirror image, not 0 or 1e-16."""
    rng = np.random.default_rng(1)
    P = rng.normal(0, 1, (1, 200))
    P[0, :100] += 3.0  # |z| of the normal fit ≈ 14
    a, b = np.arange(100), np.arange(100, 200)
    kwargs = {"ddof": 1, "alternative": "two-sided", "n_permutations": 400, "seed": 0, "reference": True}
    d, p, _, _ = _pair_kernel(P, groups=[(a, b)], **kwargs)
    d_swap, p_swap, _, _ = _pair_kernel(P, groups=[(b, a)], **kwargs)
    assert float(d[0, 0]) > 1 and float(d_swap[0, 0]) < -1
    assert 0 < float(p[0, 0]) < 1e-30 and 0 < float(p_swap[0, 0]) < 1e-30
    # the swapped split draws other random splits: another normal fit, z within a few per cent
    z, z_swap = (float(scipy.stats.norm.isf(x[0, 0])) for x in (p, p_swap))
    assert z == pytest.approx(z_swap, rel=0.05)


def test_missing_parts_are_errors_that_say_what_to_do(ds):
    alone = ds["setting"].values.astype(str) == "alone"
    no_lexicon = ds.isel(item=np.flatnonzero(ds["stimulus_set"].values.astype(str) != "lexicon"))
    with pytest.raises(MissingStimuliError, match="--lexicon"):
        valence_subspace(no_lexicon)
    assert "r_projection" not in valence_subspace(no_lexicon, valnorm=False)
    with pytest.raises(MissingStimuliError, match="'pleasant' words alone"):
        intersectional(ds.isel(item=np.flatnonzero(~alone)))
    no_exp3 = ds.isel(item=np.flatnonzero(ds["stimulus_set"].values.astype(str) != "experiment3"))
    with pytest.raises(MissingStimuliError, match="experiment3 phrases"):
        intersectional(no_exp3)
    for bad in ({"C": 0}, {"scaling": "zscore"}, {"n_permutations": 1}, {"extreme_share": 0.7},
                {"alternative": "bigger"}, {"correction": "bonferroni"}, {"cv_folds": 1}):
        with pytest.raises(AnalysisError):
            intersectional(ds, **bad)


# -- the CLI writes what the issue lists -----------------------------------------------------------
def test_cli_writes_the_listed_files(ds, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "toy.zarr", {"intersectional": ds})
    out = tmp_path / "out"
    for args in (["intersectional", "--n-permutations", "200", "--correction", "holm"],
                 ["valence-subspace"]):
        res = CliRunner().invoke(analyze, [*args, "--store", f"toy={store}", "--out", str(out), "-q"])
        assert res.exit_code == 0, res.output
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([
        "intersectional.csv", "intersectional.nc", "intersectional_ranks.csv", "intersectional.json",
        "intersectional_heat_table.png", "intersectional_distributions.png",
        "intersectional_experiment3_shares.png",
        "valence_subspace.csv", "valence_subspace.nc", "valence_subspace.json",
        "valence_subspace_valnorm_curves.png",
        "intersectional_anisotropy.csv", "valence_subspace_anisotropy.csv",
    ])
    main = pd.read_csv(out / "intersectional.csv")
    assert list(main.columns[:9]) == ["model", "pair", "layer", "pooling", "effect_size", "p",
                                      "p_adjusted", "n_a", "n_b"]
    assert "male/female" in set(main["pair"]) and len(main) == 12 * 3 * 2
    vs = pd.read_csv(out / "valence_subspace.csv")
    assert list(vs.columns[:7]) == ["model", "layer", "pooling", "svc_accuracy", "r_projection",
                                    "r_cosine", "n"]
    ranks = pd.read_csv(out / "intersectional_ranks.csv")
    assert {"extreme", "category", "value", "position", "share"} <= set(ranks.columns)
    with xr.open_dataset(out / "intersectional.nc", engine="h5netcdf") as nc:
        assert nc["projection"].dims == ("model", "phrase", "layer", "pooling")
        assert nc.sizes["phrase"] == 4096 + 3840
        assert str(nc["phrase"].values[0]) == (
            "a young thin tall smart educated literate affluent white heterosexual christian "
            "cisgender male person"
        )


def test_scaling_every_vector_changes_nothing(ds):
    """Column-normalised training and projection: a positive factor on every stored vector gives
    the same classifier input, the same projections and the same d and p."""
    one = ds.isel(layer=[TOP])
    scaled = one.assign(embedding=one["embedding"] * np.float32(3.5))
    a = intersectional(one, n_permutations=100).compute()
    b = intersectional(scaled, n_permutations=100).compute()
    np.testing.assert_allclose(b["projection"], a["projection"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(b["effect_size"], a["effect_size"], rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(b["share"], a["share"])


@pytest.mark.parametrize("name", ["valence-subspace", "intersectional"])
def test_models_of_different_widths_and_depths_stack(ds, name):
    from emb.analyses import run_analysis

    other = intersectional_dataset(n_layers=2, d=12, seed=5)
    options = {"n_permutations": 50} if name == "intersectional" else {}
    res = run_analysis(name, {"a": ds, "b": other}, **options).compute()
    assert list(res["model"].values) == ["a", "b"] and res.sizes["layer"] == 3
    table = ANALYSES[name].tables(res)[ANALYSES[name].stem]
    assert set(table["model"]) == {"a", "b"} and not (table.query("model == 'b'")["layer"] == 2).any()
    if name == "valence-subspace":
        assert res.sizes["feature"] == 12 and res["valence_axis"].sel(model="a", feature=11).isnull().all()


def test_figures_say_which_p_marks_a_cell_and_where_chance_lies(ds, result, subspace):
    from emb.analyses.intersectional import _figures as figures
    from emb.analyses.valence_subspace._figures import valnorm_curves

    corrected = figures.heat_table(result).axes[0].get_xlabel()
    assert "Holm-corrected over the pairs" in corrected and "p_adjusted" not in corrected
    plain = intersectional(ds.isel(layer=[0]), n_permutations=10).compute()
    assert "p (uncorrected)" in figures.heat_table(plain).axes[0].get_xlabel()
    legend = valnorm_curves(subspace).legends[0]
    assert "chance accuracy (0.5)" in [t.get_text() for t in legend.get_texts()]


def test_valnorm_figure_says_where_r_is_undefined_and_lists_only_lines_drawn(subspace):
    """A constant score (identical vectors) has no ValNorm r at any layer: the figure's legend
    listed the two ValNorm lines though none was drawn, and the panel did not say why."""
    from emb.analyses.valence_subspace._figures import valnorm_curves

    def texts(figure):
        legend = [t.get_text() for t in figure.legends[0].get_texts()]
        notes = [t.get_text() for ax in figure.axes for t in ax.texts]
        return legend, notes

    legend, notes = texts(valnorm_curves(subspace))
    assert "ValNorm by projection (r, 95% CI)" in legend and "band: Fisher-z 95% CI" in legend
    assert not notes
    blank = subspace.copy()
    for name in ("r_projection", "ci_low_projection", "ci_high_projection",
                 "r_cosine", "ci_low_cosine", "ci_high_cosine"):
        blank[name] = xr.full_like(subspace[name], np.nan)
    legend, notes = texts(valnorm_curves(blank))
    assert not any("ValNorm" in label or "band" in label for label in legend), legend
    assert "SVC accuracy (cross-validated)" in legend
    assert len(notes) == blank.sizes["pooling"]
    assert all("r undefined" in n and "by projection and by cosine" in n for n in notes), notes
    # undefined by cosine only: the projection's line is drawn and listed, the note names cosine
    half = subspace.copy()
    half["r_cosine"] = xr.full_like(subspace["r_cosine"], np.nan)
    legend, notes = texts(valnorm_curves(half))
    assert "ValNorm by projection (r, 95% CI)" in legend and "ValNorm by cosine (r, 95% CI)" not in legend
    assert notes and all("(by cosine:" in n for n in notes), notes


def test_experiment3_legend_when_the_first_model_has_no_shares(result):
    """A first model without a finite share draws no bars; the legend still names the bars of the
    models below it (it used to read the first row's only, and came out empty)."""
    from emb.analyses.intersectional._figures import experiment3_shares

    shares = result[["share", "position_share", "n_extreme"]]
    empty = shares.copy(data={"share": shares["share"] * np.nan,
                              "position_share": shares["position_share"] * np.nan,
                              "n_extreme": shares["n_extreme"]})
    two = xr.concat([empty, shares], dim=pd.Index(["m1", "m2"], name="model"))
    two.attrs = result.attrs
    fig = experiment3_shares(two)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        f"{e} {int(np.max(result['n_extreme'].values)):,} phrases" for e in ("top", "bottom")]
