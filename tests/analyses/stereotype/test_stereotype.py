"""Stereotype-content profiles: planted dimensions recovered exactly, coordinates = numpy's
lstsq, t and p = scipy's, leave-one-sense-out = a brute-force rebuild, outputs that survive
netCDF and CSV."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from emb.analyses import ANALYSES, run_analysis
from emb.analyses.stats import cohens_d, t_test
from emb.analyses.stats.polar import held_out_coordinates, polar_coordinates, pole_basis
from emb.analyses.stereotype import stereotype
from emb.cli.analyze import analyze
from emb.errors import AnalysisError, MissingStimuliError
from tests.analyses._synthetic import STEREO_DIMENSIONS, stereotype_dataset, write_store


@pytest.fixture(scope="module")
def planted() -> tuple[xr.Dataset, dict, xr.Dataset]:
    ds, truth = stereotype_dataset()
    return ds, truth, stereotype(ds).compute()


def _member(result: xr.Dataset, group: str, word: str) -> int:
    return int(np.flatnonzero((result["group"].values == group) & (result["word"].values == word))[0])


def test_planted_dimensions_are_recovered_exactly(planted) -> None:
    ds, truth, res = planted
    for (group, word), c in truth["c"].items():
        got = res["coordinate"].isel(member=_member(res, group, word)).sel(pooling="mean")
        for layer, s in enumerate(truth["scales"]):
            np.testing.assert_allclose(got.sel(layer=layer, dimension=list(STEREO_DIMENSIONS)), c / s,
                                       rtol=1e-9, atol=1e-12)
            # warmth = (u_soc + u_mor) s / 2, competence alike: coordinate (c_1 + c_2) / s
            np.testing.assert_allclose(got.sel(layer=layer, dimension="warmth"), (c[0] + c[1]) / s, rtol=1e-9)
            np.testing.assert_allclose(got.sel(layer=layer, dimension="competence"), (c[2] + c[3]) / s, rtol=1e-9)
        # layer mean: the representations averaged (scale = mean of the scales)
        np.testing.assert_allclose(got.sel(layer="mean", dimension=list(STEREO_DIMENSIONS)),
                                   c / truth["scales"].mean(), rtol=1e-9, atol=1e-12)
    # the planted gender shift: female names higher on warmth, lower on competence
    d = res["d"].sel(comparison="female_names vs male_names", layer="mean", pooling="mean")
    assert d.sel(dimension="warmth") > 1 and d.sel(dimension="competence") < -1
    assert res["p"].sel(layer="mean", pooling="mean", dimension="warmth").item() < 1e-3


def test_reference_averages_projections_in_float32() -> None:
    ds, truth = stereotype_dataset()
    ref = stereotype(ds, method="reference").compute()
    inv = np.mean(1 / truth["scales"])
    for (group, word), c in list(truth["c"].items())[:5]:
        got = ref["coordinate"].isel(member=_member(ref, group, word)).sel(pooling="mean", layer="mean")
        # the mean of the per-layer projections c / s_l, to float32 precision
        np.testing.assert_allclose(got.sel(dimension=list(STEREO_DIMENSIONS)), c * inv, rtol=2e-5, atol=2e-6)
        assert not np.allclose(got.sel(dimension=list(STEREO_DIMENSIONS)), c / truth["scales"].mean())
    assert ref.attrs["pinv_dtype"] == "float32" and ref.attrs["layer_mean"] == "projections"


def _brute_force(ds: xr.Dataset, layer: int, pooling: str) -> tuple[dict, np.ndarray, pd.DataFrame]:
    """Sense vectors, pole bases and member vectors by pandas group-bys, independent of the
    analysis' segment arithmetic."""
    emb = np.asarray(ds["embedding"].sel(layer=layer, pooling=pooling).values, dtype=np.float64)
    labels = pd.DataFrame({k: np.asarray(ds[k].values).astype(str) for k in
                           ("role", "dimension", "direction", "sense", "group", "word")})
    senses = labels[labels.role == "sense"]
    vec = pd.DataFrame(emb[senses.index]).groupby(senses["sense"].to_numpy()).mean()
    meta = senses.drop_duplicates("sense").set_index("sense")
    rows = {}
    for dim in STEREO_DIMENSIONS:
        pole = {dr: vec.loc[meta.index[(meta.dimension == dim) & (meta.direction == dr)]].mean().to_numpy()
                for dr in ("high", "low")}
        rows[dim] = pole["high"] - pole["low"]
    members = labels[labels.role == "population"]
    x = pd.DataFrame(emb[members.index]).groupby([members["group"].to_numpy(), members["word"].to_numpy()]).mean()
    return rows, np.stack([rows[d] for d in STEREO_DIMENSIONS]), x


def test_coordinates_equal_numpy_lstsq_on_unstructured_vectors() -> None:
    ds, _ = stereotype_dataset(seed=4)
    rng = np.random.default_rng(9)
    ds = ds.assign(embedding=(ds["embedding"].dims, rng.normal(size=ds["embedding"].shape)))
    res = stereotype(ds, basis="7d").compute()
    for layer in (0, 2):
        _, basis, x = _brute_force(ds, layer, "last")
        solution = np.linalg.lstsq(basis.T, x.to_numpy().T, rcond=None)[0].T  # (members, 7)
        for (group, word), row in zip(x.index, solution, strict=True):
            got = res["coordinate"].isel(member=_member(res, group, word)).sel(layer=layer, pooling="last")
            np.testing.assert_allclose(got.values, row, rtol=1e-9, atol=1e-12)


def test_polar_coordinates_match_lstsq_in_batches() -> None:
    rng = np.random.default_rng(1)
    basis = rng.normal(size=(3, 2, 5, 40))
    x = rng.normal(size=(3, 2, 11, 40))
    got = polar_coordinates(basis, x)
    for i in range(3):
        for j in range(2):
            want = np.linalg.lstsq(basis[i, j].T, x[i, j].T, rcond=None)[0].T
            np.testing.assert_allclose(got[i, j], want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["student", "welch"])
def test_t_p_and_d_against_scipy(planted, kind: str) -> None:
    ds, _, _ = planted
    res = stereotype(ds, test=kind, groups=["female_names", "male_names", "female_terms", "male_terms"]).compute()
    for comparison, (a, b) in zip(res["comparison"].values,
                                  [("female_names", "male_names"), ("female_terms", "male_terms")], strict=True):
        for layer in (0, "mean"):
            z = res["z"].sel(comparison=comparison, layer=layer, pooling="last")
            za = z.isel(member=np.flatnonzero(res["group"].values == a)).values
            zb = z.isel(member=np.flatnonzero(res["group"].values == b)).values
            ref = sps.ttest_ind(za, zb, axis=0, equal_var=kind == "student")
            cell = res.sel(comparison=comparison, layer=layer, pooling="last")
            np.testing.assert_allclose(cell["t"].values, ref.statistic, rtol=1e-10)
            np.testing.assert_allclose(cell["p"].values, ref.pvalue, rtol=1e-8)
            np.testing.assert_allclose(cell["df"].values, ref.df, rtol=1e-10)
            na, nb = len(za), len(zb)
            pooled = np.sqrt(((na - 1) * za.var(0, ddof=1) + (nb - 1) * zb.var(0, ddof=1)) / (na + nb - 2))
            np.testing.assert_allclose(cell["d"].values, (za.mean(0) - zb.mean(0)) / pooled, rtol=1e-10)
            np.testing.assert_allclose(cell["mean_a"].values, za.mean(0), rtol=1e-10, atol=1e-14)
            both = np.concatenate([za, zb])  # standardised across both groups, ddof 0
            np.testing.assert_allclose(both.mean(0), 0, atol=1e-12)
            np.testing.assert_allclose(both.std(0, ddof=0), 1, rtol=1e-12)
            raw = res["coordinate"].sel(layer=layer, pooling="last")
            ra = raw.isel(member=np.flatnonzero(res["group"].values == a)).values
            rb = raw.isel(member=np.flatnonzero(res["group"].values == b)).values
            np.testing.assert_allclose(sps.ttest_ind(ra, rb, axis=0, equal_var=kind == "student").statistic,
                                       ref.statistic, rtol=1e-9)  # t is unchanged by the z-scores


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 9), st.integers(2, 9), st.integers(0, 2**31 - 1), st.floats(0.1, 10), st.floats(-5, 5))
def test_t_test_invariants(na: int, nb: int, seed: int, scale: float, shift: float) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=na), rng.normal(0.5, 1.5, size=nb)
    for kind in ("student", "welch"):
        res = t_test(a, b, kind=kind)
        assert 0 <= res.pvalue <= 1
        flipped = t_test(b, a, kind=kind)
        np.testing.assert_allclose(flipped.statistic, -res.statistic, rtol=1e-12)
        affine = t_test(a * scale + shift, b * scale + shift, kind=kind)
        np.testing.assert_allclose(affine.statistic, res.statistic, rtol=1e-9)
        np.testing.assert_allclose(affine.pvalue, res.pvalue, rtol=1e-7, atol=1e-300)
    np.testing.assert_allclose(cohens_d(b, a), -cohens_d(a, b), rtol=1e-12)


def test_leave_one_sense_out_equals_a_rebuilt_basis() -> None:
    rng = np.random.default_rng(3)
    senses = rng.normal(size=(2, 10, 30))
    high = np.zeros((3, 10), bool)
    low = np.zeros((3, 10), bool)
    high[0, [0, 1, 2]] = low[0, [3, 4]] = True
    high[1, [5, 6]] = low[1, [7]] = True
    high[2, [8]] = low[2, [9, 2]] = True  # sense 2 sits in two dimensions' poles
    dims = np.array([0, 0, 1, 1, 2, 2])
    held = np.array([1, 4, 5, 7, 8, 2])
    got = held_out_coordinates(senses, high, low, dims, held)
    for i, (k, j) in enumerate(zip(dims, held, strict=True)):
        keep_h, keep_l = high.copy(), low.copy()
        keep_h[k, j] = keep_l[k, j] = False
        if not keep_h[k].any() and high[k, j] or not keep_l[k].any() and low[k, j]:
            assert np.isnan(got[:, i]).all()  # its pole's only sense: nothing left to build on
            continue
        for b in range(2):
            basis = np.stack([senses[b, keep_h[r]].mean(0) - senses[b, keep_l[r]].mean(0)
                              if r == k else senses[b, high[r]].mean(0) - senses[b, low[r]].mean(0)
                              for r in range(3)])
            want = np.linalg.lstsq(basis.T, senses[b, j], rcond=None)[0][k]
            np.testing.assert_allclose(got[b, i], want, rtol=1e-9)
    np.testing.assert_allclose(pole_basis(senses, high, low)[0, 1],
                               senses[0, [5, 6]].mean(0) - senses[0, 7], rtol=1e-12)


def test_accuracy_is_the_share_of_correct_signs(planted) -> None:
    _, _, res = planted
    h = res["heldout_coordinate"].sel(layer=1, pooling="mean")
    for dim in ("warmth", "Religion"):
        rows = h.isel(heldout=np.flatnonzero(res["heldout_dimension"].values == dim))
        high = rows["heldout_direction"].values == "high"
        v = rows.values
        assert res["accuracy"].sel(dimension=dim, layer=1, pooling="mean") == pytest.approx(np.mean((v > 0) == high))
        assert res["accuracy_centred"].sel(dimension=dim, layer=1, pooling="mean") == pytest.approx(
            np.mean((v > v.mean()) == high))
    assert res["n_heldout"].sel(dimension="warmth") == 12 and res["n_heldout"].sel(dimension="Status") == 6


def test_extended_terms_are_the_held_out_set() -> None:
    ds, _ = stereotype_dataset(heldout=True)
    res = stereotype(ds).compute()
    assert res.attrs["heldout"] == "extended"
    assert set(res["heldout_sense"].values) == {s for s in ds["sense"].values if str(s).startswith("extended-")}
    # per dimension two terms point the right way and two the wrong way around the common offset
    np.testing.assert_allclose(res["accuracy_centred"].sel(dimension=list(STEREO_DIMENSIONS)), 0.5)
    assert res["n_heldout"].sel(dimension="Sociability") == 4 and res["n_heldout"].sel(dimension="warmth") == 8


def test_correction_is_across_the_dimensions_of_each_basis(planted) -> None:
    ds, _, plain = planted
    assert "p_adjusted" not in plain
    res = stereotype(ds, correction="holm").compute()
    cell = res.sel(comparison="female_names vs male_names", layer="mean", pooling="mean")
    for basis in ("2d", "7d"):
        dims = [d for d, b in zip(res["dimension"].values, res["basis"].values, strict=True) if b == basis]
        want = multipletests(cell["p"].sel(dimension=dims).values, method="holm")[1]
        np.testing.assert_allclose(cell["p_adjusted"].sel(dimension=dims).values, want, rtol=1e-12)


def test_bases_and_group_errors(planted) -> None:
    ds, _, _ = planted
    only = stereotype(ds, basis="2d").compute()
    assert list(only["dimension"].values) == ["warmth", "competence"]
    with pytest.raises(MissingStimuliError, match=r"nonexistent.*--groups FILE"):
        stereotype(ds, groups=["female_names", "nonexistent"])
    with pytest.raises(AnalysisError, match="pairs"):
        stereotype(ds, groups=["female_names"])
    with pytest.raises(AnalysisError, match="basis"):
        stereotype(ds, basis="3d")
    no_low = ds.isel(item=np.flatnonzero(~((ds["dimension"].values == "Status") & (ds["direction"].values == "low"))))
    with pytest.raises(AnalysisError, match=r"\['Status'\] lack a high or a low sense"):
        stereotype(no_low)
    with pytest.raises(AnalysisError, match="not a 'stereotype' suite"):
        stereotype(ds.drop_vars("sense"))


def test_outputs_survive_netcdf_csv_and_the_cli(tmp_path: Path) -> None:
    small, _ = stereotype_dataset(n_layers=3, seed=1, dtype="float32")
    large, _ = stereotype_dataset(n_layers=5, seed=2, dtype="float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = write_store(tmp_path / "a.zarr", {"stereotype": small}, model_id="toy-a")
        b = write_store(tmp_path / "b.zarr", {"stereotype": large}, model_id="toy-b")
    out = tmp_path / "out"
    result = CliRunner().invoke(analyze, ["stereotype", "--store", f"a={a}", "--store", f"b={b}",
                                          "--out", str(out), "--quiet", "--correction", "bh"])
    assert result.exit_code == 0, result.output
    assert "declared cell: layer mean" in result.output
    table = pd.read_csv(out / "stereotype.csv", keep_default_na=False, na_values=[""])
    assert list(table.columns[:14]) == ["model", "basis", "dimension", "layer", "pooling", "group_a", "group_b",
                                        "mean_a", "mean_b", "d", "t", "p", "p_adjusted", "test"]
    assert set(table["layer"].astype(str)) == {"0", "1", "2", "3", "4", "mean"}
    assert len(table[table.model == "a"]) == 9 * 4 * 2 and len(table[table.model == "b"]) == 9 * 6 * 2
    assert set(table["basis"]) == {"2d", "7d"} and table["p_adjusted"].notna().all()
    coords = pd.read_csv(out / "stereotype_coordinates.csv")
    assert list(coords.columns[:9]) == ["model", "basis", "dimension", "layer", "pooling", "group", "word",
                                        "coordinate", "z"]
    acc = pd.read_csv(out / "stereotype_accuracy.csv")
    assert {"accuracy", "accuracy_centred", "n_heldout"} <= set(acc.columns)
    nc = xr.open_dataset(out / "stereotype.nc", engine="h5netcdf")
    assert list(nc["layer"].values) == ["0", "1", "2", "3", "4", "mean"]
    lazy = run_analysis("stereotype", {"a": small, "b": large}, correction="bh").compute()
    np.testing.assert_allclose(nc["d"].values, lazy["d"].values, equal_nan=True)
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["stereotype_layers_female_names-vs-male_names.png",
                    "stereotype_profile_7d_female_names-vs-male_names.png",
                    "stereotype_warmth_competence_female_names-vs-male_names.png"]
    plain = CliRunner().invoke(analyze, ["stereotype", "--store", str(a), "--out", str(tmp_path / "o2"),
                                         "--quiet", "--group", "female_terms,male_terms", "--basis", "2d"])
    assert plain.exit_code == 0, plain.output
    table = pd.read_csv(tmp_path / "o2" / "stereotype.csv", keep_default_na=False, na_values=[""])
    assert set(table["group_a"]) == {"female_terms"} and table["p_adjusted"].isna().all()
    assert ANALYSES["stereotype"].stem == "stereotype"


# -- figures and summary ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_models() -> xr.Dataset:
    """Two models of different depth (3 and 5 layers) and different significant dimensions:
    model a has the planted gender shift, model b none."""
    a, _ = stereotype_dataset(n_layers=3, shift=1.5, seed=1)
    b, _ = stereotype_dataset(n_layers=5, shift=0.0, seed=2)
    return run_analysis("stereotype", {"a": a, "b": b}).compute()


def test_profile_panels_show_their_own_models_stars(two_models) -> None:
    from emb.analyses.stereotype import _figures as figs

    res = two_models
    comparison = "female_names vs male_names"
    fig = figs.profile(res, comparison=comparison, pooling="mean")
    dims = [str(d) for d, b in zip(res["dimension"].values, res["basis"].values, strict=True) if b == "7d"]
    fig.draw_without_rendering()
    starred = {}
    for ax in fig.axes:
        if not ax.get_title():
            continue
        model = ax.get_title().split("\n")[0]
        labels = {t.get_text().split("\n")[0].rstrip("*"): t.get_text().split("\n")[0].endswith("*")
                  for t in ax.get_yticklabels()}
        p = res["p"].sel(model=model, comparison=comparison, layer="mean", pooling="mean")
        want = {d: bool(p.sel(dimension=d) < 0.05) for d in dims}
        assert labels == want, model
        starred[model] = want
    assert set(starred) == {"a", "b"}
    assert starred["a"] != starred["b"]  # else the test could not tell the panels apart


def test_layer_heatmap_is_a_page_wide_and_each_model_on_its_own_layers(two_models) -> None:
    from emb.analyses import _figure as fg
    from emb.analyses.stereotype import _figures as figs

    fig = figs.layer_heatmap(two_models, comparison="female_names vs male_names", pooling="mean")
    assert fig.get_figwidth() <= fg.PAGE_WIDTH
    panels = {ax.get_title(loc="left"): ax for ax in fig.axes if ax.get_title(loc="left")}
    assert [t.get_text() for t in panels["a"].get_xticklabels()] == ["0", "1", "2", "mean"]
    assert [t.get_text() for t in panels["b"].get_xticklabels()] == ["0", "1", "2", "3", "4", "mean"]
    one = figs.layer_heatmap(two_models.sel(model=["a"]), comparison="female_names vs male_names",
                             pooling="mean")
    assert one.get_figwidth() == fg.COLUMN_WIDTH


def test_scatter_labels_do_not_overlap(two_models) -> None:
    from matplotlib.text import Text

    from emb.analyses.stereotype import _figures as figs

    res = two_models.copy(deep=True)
    comparison = "female_names vs male_names"
    # every term of model a within 0.01 of one point: unrepelled labels would sit on each other
    terms = np.flatnonzero(np.char.endswith(res["group"].values.astype(str), "_terms"))
    rng = np.random.default_rng(0)
    for dim in ("warmth", "competence"):
        res["z"].loc[{"model": "a", "comparison": comparison, "layer": "mean", "pooling": "mean",
                      "dimension": dim, "member": res["member"].values[terms]}] = 0.5 + rng.normal(0, 0.01, terms.size)
    fig = figs.scatter_2d(res, comparison=comparison, pooling="mean")
    fig.draw_without_rendering()
    for ax in fig.axes:
        texts = [t for t in ax.texts if t.get_text()]
        assert sorted(t.get_text() for t in texts) == sorted(res["word"].values[terms].astype(str))
        boxes = [Text.get_window_extent(t) for t in texts]  # the text alone, without its leader line
        frame = ax.get_window_extent()
        for i, box in enumerate(boxes):
            assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            for other in boxes[i + 1:]:
                assert not box.overlaps(other), (texts[i].get_text(), box, other)


def test_summary_uses_each_models_own_top_layer_and_names_the_model(two_models) -> None:
    spec = ANALYSES["stereotype"]
    tables = spec.tables(two_models)
    summary = spec.summary(two_models, tables)
    shown = summary.table.groupby("model")["layer"].apply(lambda s: sorted(map(str, set(s))))
    assert shown.to_dict() == {"a": ["2", "mean"], "b": ["4", "mean"]}
    assert len(summary.table) == 2 * 2 * 9
    accuracy = [n for n in summary.notes if "direction accuracy" in n]
    largest = [n for n in summary.notes if "largest |d|" in n]
    assert [n.split(":")[0] for n in accuracy] == ["a", "b"] and [n.split(":")[0] for n in largest] == ["a", "b"]
    for note in accuracy:
        assert all(f"{d} " in note for d in ("warmth", "competence", *STEREO_DIMENSIONS))
    assert all(line.split(":")[0] in ("a", "b") for line in summary.headline[1:])
