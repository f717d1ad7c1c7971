"""Figures: what they draw (lines, panels, bands, markers, n), their sizes, and that they save."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from emb.analyses import _figure, plots, run_analysis
from emb.analyses.similarity import word_similarity
from emb.analyses.vast import vast
from emb.analyses.weat import _figures as weat_figures
from emb.analyses.weat import weat
from emb.errors import AnalysisError
from tests.analyses._synthetic import (
    similarity_dataset,
    similarity_pairs,
    vast_dataset,
    weat_dataset,
)


@pytest.fixture(scope="module")
def vast_result() -> xr.Dataset:
    return vast(vast_dataset(n_words=60), k_max=3, n_subsets=3).compute()


@pytest.fixture(scope="module")
def two_models() -> xr.Dataset:
    datasets = {"small": vast_dataset(n_words=60, n_layers=3), "large": vast_dataset(n_words=60, n_layers=5)}
    return run_analysis("vast", datasets, k_max=2, n_subsets=2, ratings="valence").compute()


def _visible_axes(fig: Figure) -> list:
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]


def _legend_texts(fig: Figure) -> list[str]:
    return [t.get_text() for leg in fig.legends for t in leg.get_texts()]


def _lines(ax) -> dict[str, object]:
    return {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}


def _png(fig: Figure, path: Path) -> int:
    fig.savefig(path, dpi=60)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return len(data)


def _width(fig: Figure) -> float:
    return float(fig.get_size_inches()[0])


def test_layer_curves_one_panel_per_pooling_one_line_per_setting(
    vast_result: xr.Dataset, tmp_path: Path
) -> None:
    fig = plots.layer_curves(vast_result)
    axes = _visible_axes(fig)
    assert [ax.get_title() for ax in axes] == [f"{p} pooling" for p in ("first", "last", "mean", "max")]
    lines = _lines(axes[1])
    assert list(lines) == [f"{s} (n = 60)" for s in ("bleached", "aligned", "misaligned", "random")]
    expected = vast_result.r.sel(rating="valence", lexicon="toy", setting="misaligned", pooling="last")
    np.testing.assert_allclose(lines["misaligned (n = 60)"].get_ydata(), expected.values)
    np.testing.assert_array_equal(lines["misaligned (n = 60)"].get_xdata(), vast_result.layer.values)
    # one CI band per setting, explained in the legend
    bands = [c for c in axes[1].collections if isinstance(c, PolyCollection)]
    assert len(bands) == 4
    assert "shaded: 95% CI (Fisher z)" in _legend_texts(fig)
    assert "Pearson's r" in axes[0].get_ylabel()
    assert _width(fig) == _figure.PAGE_WIDTH
    assert _png(fig, tmp_path / "curves.png") > 5_000


def test_layer_curves_other_rating(vast_result: xr.Dataset) -> None:
    fig = plots.layer_curves(vast_result, rating="arousal")
    line = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("bleached")][0]
    expected = vast_result.r.sel(rating="arousal", lexicon="toy", setting="bleached", pooling="first")
    np.testing.assert_allclose(line.get_ydata(), expected.values)
    assert "arousal" in fig.get_suptitle()


def test_several_models_share_panels_hue_model_and_relative_depth(
    two_models: xr.Dataset, tmp_path: Path
) -> None:
    fig = plots.layer_curves(two_models)
    axes = _visible_axes(fig)
    assert len(axes) == 4 * 4  # settings x poolings; the models share each panel
    assert axes[1].get_title() == "bleached · last pooling"
    lines = _lines(axes[1])
    assert list(lines) == ["small", "large"]
    assert to_rgba(lines["small"].get_color()) != to_rgba(lines["large"].get_color())
    assert list(lines["small"].get_xdata()) == [0, 1, 2]  # NaN layers of the smaller model not drawn
    assert list(lines["large"].get_xdata()) == [0, 1, 2, 3, 4]
    depth = _lines(_visible_axes(plots.layer_curves(two_models, relative_depth=True))[1])
    np.testing.assert_allclose(depth["small"].get_xdata(), [0, 0.5, 1])
    np.testing.assert_allclose(depth["large"].get_xdata(), [0, 0.25, 0.5, 0.75, 1])
    for draw in (plots.tokenization_curves, plots.nullification_curves):
        assert _png(draw(two_models), tmp_path / f"{draw.__name__}.png") > 5_000


def test_tokenization_curves(vast_result: xr.Dataset) -> None:
    fig = plots.tokenization_curves(vast_result)
    axes = _visible_axes(fig)
    n = int(vast_result.tokenization_n.sel(lexicon="toy", setting="bleached"))
    assert axes[0].get_title() == f"bleached (n = {n} per set)"
    assert [ax.get_title().split(" ")[0] for ax in axes] == ["bleached", "aligned", "misaligned", "random"]
    lines = _lines(axes[0])
    single, multi = lines["single · last"], lines["multi · last"]
    assert single.get_linestyle() == "-" and multi.get_linestyle() == "--"
    expected = vast_result.tokenization_r.sel(lexicon="toy", setting="bleached", pooling="last",
                                              token_set="single").mean("subset")
    np.testing.assert_allclose(single.get_ydata(), expected.values)
    assert any("range over 3 random subsets" in t for t in _legend_texts(fig))


def test_tokenization_single_subtoken_curves_drawn_once_when_equal(vast_result: xr.Dataset) -> None:
    """A singly tokenized word has first = last = mean = max: its four curves are one line."""
    tok = vast_result["tokenization_r"]
    single = tok.sel(token_set="single", drop=True)
    same = single.sel(pooling="last", drop=True).broadcast_like(single).transpose(*single.dims)
    equal = xr.concat([same, tok.sel(token_set="multi", drop=True)], dim="token_set")
    equal = equal.assign_coords(token_set=["single", "multi"]).transpose(*tok.dims)
    fig = plots.tokenization_curves(vast_result.assign(tokenization_r=equal))
    labels = list(_lines(_visible_axes(fig)[0]))
    assert labels.count("single · every pooling (equal)") == 1
    assert not [lab for lab in labels if lab.startswith("single · ") and "every" not in lab]
    assert len([lab for lab in labels if lab.startswith("multi · ")]) == 4
    assert fig.legends[0].get_title().get_text() == "single-subtoken words: first = last = mean = max"


def test_nullification_every_pooling_and_the_title_keeps_the_model(vast_result: xr.Dataset) -> None:
    one = vast_result.expand_dims(model=["gpt2-small"])
    fig = plots.nullification_curves(one)
    axes = _visible_axes(fig)
    best = int(vast_result.best_layer.sel(lexicon="toy", pooling="last"))
    top = int(vast_result.top_layer)
    titles = [ax.get_title() for ax in axes]
    assert {t.split(" · ")[0] for t in titles} == {"first", "last", "mean", "max"}
    assert any(t.startswith(f"last · layer {top}") and "top" in t for t in titles)
    # the best layer is the best of the bleached curve only: the tag says so (the panel draws all)
    assert any(t.startswith(f"last · layer {best} (best for bleached") for t in titles)
    assert not any("(best)" in t or "(best," in t for t in titles)
    # the layer tag never overwrites the model name in the figure title (a former bug)
    assert fig.get_suptitle().endswith("[gpt2-small]")
    panel = [ax for ax in axes if ax.get_title().startswith(f"last · layer {top}")][0]
    line = _lines(panel)["bleached"]
    np.testing.assert_array_equal(line.get_xdata(), [0, 1, 2, 3])
    expected = vast_result.nullified_r.sel(rating="valence", lexicon="toy", setting="bleached",
                                           pooling="last", layer=top)
    np.testing.assert_allclose(line.get_ydata(), expected.values)


def test_similarity_curves_ordered_colours_every_pooling_and_ci(tmp_path: Path) -> None:
    ds, pairs = similarity_dataset(similarity_pairs(n_words=40, n_pairs=60))
    res = word_similarity(ds, pairs=pairs, k_max=4).compute()
    fig = plots.similarity_curves(res)
    axes = _visible_axes(fig)
    assert [ax.get_title() for ax in axes] == [
        "ws353 (n = 60) · last", "simlex999 (n = 30) · last",
        "ws353 (n = 60) · mean", "simlex999 (n = 30) · mean"]
    lines = _lines(axes[0])
    assert list(lines) == ["k = 0", "k = 1", "k = 2", "k = 4"]
    colors = [to_rgba(ln.get_color()) for ln in lines.values()]
    # k = 0 (nothing nullified) black, then viridis from blue on (dark = small k)
    assert colors == [to_rgba("black")] + [to_rgba(c) for c in _figure.ordered_colors(3, start=0.3, stop=0.9)]
    assert any("Bonett-Wright" in t for t in _legend_texts(fig))
    assert "bleached setting" in fig.get_suptitle()
    assert _png(fig, tmp_path / "sim.png") > 5_000


def test_similarity_curves_k0_and_k1_far_apart_and_the_setting_named() -> None:
    ds, pairs = similarity_dataset(similarity_pairs(n_words=40, n_pairs=60))
    res = word_similarity(ds, pairs=pairs, k_max=12, poolings=["last"], datasets=["ws353"]).compute()
    fig = plots.similarity_curves(res)
    lines = _lines(_visible_axes(fig)[0])
    assert list(lines) == ["k = 0", "k = 1", "k = 2", "k = 4", "k = 8", "k = 12"]
    rgb = {k: np.array(to_rgba(ln.get_color())[:3]) for k, ln in lines.items()}
    names = list(rgb)
    gaps = [np.linalg.norm(rgb[a] - rgb[b]) for a, b in zip(names, names[1:], strict=False)]
    assert np.linalg.norm(rgb["k = 0"] - rgb["k = 1"]) > 0.4, "k = 0 and k = 1 look alike"
    assert min(gaps) > 0.12
    # a title longer than its one-column canvas is wrapped (it was cut off at both sides)
    assert " ".join(fig.get_suptitle().split()) == "Word similarity by layer — bleached setting, last pooling"
    # a VAST result: the similarity block keeps the setting it was computed on
    vast_like = res.rename({n: f"similarity_{n}" for n in res.data_vars})
    vast_like.attrs = {}
    assert "bleached setting" in plots.similarity_curves(vast_like).get_suptitle()
    assert "random setting" in plots.similarity_curves(res, setting="random").get_suptitle()


def test_weat_markers_panels_titled_with_groups_and_legend_says_which_p(tmp_path: Path) -> None:
    res = weat(weat_dataset(), seed=0).compute()
    fig = weat_figures.weat_effect_sizes(res, pooling="last")
    axes = _visible_axes(fig)
    assert axes[0].get_title().startswith("WEAT1: flowers vs insects / pleasant vs")
    assert "n = 8+8 | 8+8 words" in axes[0].get_title()
    p = res.p.sel(test="WEAT1", setting="bleached", pooling="last").values
    es = res.effect_size.sel(test="WEAT1", setting="bleached", pooling="last").values
    assert (p < 0.05).any() and (p >= 0.05).any(), "the fixture should mix significant and not"
    markers = [ln for ln in axes[0].get_lines() if ln.get_marker() == "o"]
    color = to_rgba(plots._setting_colors(["bleached"])["bleached"])
    filled = [ln for ln in markers if to_rgba(ln.get_markerfacecolor()) == color]
    hollow = [ln for ln in markers if to_rgba(ln.get_markerfacecolor()) == to_rgba("white")
              and to_rgba(ln.get_markeredgecolor()) == color]
    np.testing.assert_allclose(np.concatenate([ln.get_ydata() for ln in filled]), es[p < 0.05])
    np.testing.assert_allclose(np.concatenate([ln.get_ydata() for ln in hollow]), es[p >= 0.05])
    texts = _legend_texts(fig)
    assert "filled: p (not corrected) < 0.05" in texts
    assert "shaded, thin edges: 95% bootstrap CI over stimuli" in texts
    holm = weat(weat_dataset(), seed=0, correction="holm").compute()
    assert "filled: Holm-adjusted p (family: test) < 0.05" in _legend_texts(
        weat_figures.weat_effect_sizes(holm, pooling="last"))
    assert _png(fig, tmp_path / "weat.png") > 5_000


def test_weat_heatmap_cells_and_dots() -> None:
    res = weat(weat_dataset(), seed=0, correction="holm").compute()
    fig = weat_figures.weat_heatmap(res, pooling="mean")
    axes = _visible_axes(fig)
    assert [ax.get_title() for ax in axes] == ["bleached", "alone"]
    mesh = axes[0].collections[0]
    want = res.effect_size.sel(setting="bleached", pooling="mean").transpose("test", "layer").values
    np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(want.shape), want)
    dots = axes[0].get_lines()  # black on light cells, white on dark ones
    sig = res.p_adjusted.sel(setting="bleached", pooling="mean").transpose("test", "layer").values < 0.05
    assert sum(len(d.get_xdata()) for d in dots) == int(sig.sum())
    # the legend says what a dot means; the key gives each test's groups and word counts
    texts = _legend_texts(fig)
    assert "dot: Holm-adjusted p (family: test) < 0.05" in texts
    assert "WEAT1: flowers vs insects / pleasant vs unpleasant (n\u00a0=\u00a08+8\u00a0|\u00a08+8)" in texts
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["WEAT1", "WEAT2"]


@pytest.fixture(scope="module")
def weat_two_models() -> xr.Dataset:
    """A model of 4 layers beside one of 31 (the audit's minilm and SmolLM2 shapes)."""
    datasets = {"short": weat_dataset(n_layers=4), "deep": weat_dataset(n_layers=31, seed=1)}
    return run_analysis("weat", datasets, n_permutations=500, n_bootstrap=50, seed=0,
                        correction="holm", correction_over="test+layer").compute()


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("relative_depth", [False, True])
def test_weat_heatmap_two_models_each_on_its_own_layer_axis(
    weat_two_models: xr.Dataset, relative_depth: bool
) -> None:
    depth = {"relative_depth": True} if relative_depth else {}
    fig = weat_figures.weat_heatmap(weat_two_models, pooling="last", **depth)
    axes = _visible_axes(fig)
    titles = [ax.get_title() for ax in axes]
    assert titles == ["short: bleached", "short: alone", "deep: bleached", "deep: alone"]
    for ax in axes:
        n_layers = 4 if ax.get_title().startswith("short") else 31
        lo, hi = ax.get_xlim()
        if relative_depth:  # layer / last, cells of width 1 / last
            np.testing.assert_allclose([lo, hi], [-0.5 / (n_layers - 1), 1 + 0.5 / (n_layers - 1)])
        else:  # only the model's own layers: the short model's panels are not 3/4 empty
            assert (lo, hi) == (-0.5, n_layers - 0.5)
        ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
        assert 2 <= len(ticks) <= 7, f"{len(ticks)} layer ticks on {ax.get_title()!r}"
    short = weat_two_models.effect_size.sel(model="short", setting="alone", pooling="last")
    mesh = np.asarray(axes[1].collections[0].get_array()).reshape(2, -1)
    np.testing.assert_allclose(mesh, short.isel(layer=slice(0, 4)).transpose("test", "layer").values)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # lays the figure out
    renderer = canvas.get_renderer()
    boxes = [ax.title.get_window_extent(renderer) for ax in axes]
    assert not any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), "titles collide"
    # the test labels take a small share of the width; the maps the rest
    width = fig.bbox.width
    labels = [t.get_window_extent(renderer) for t in axes[0].get_yticklabels() if t.get_text()]
    assert max(b.width for b in labels) < 0.12 * width
    assert axes[0].get_window_extent(renderer).width > 0.3 * width
    # a dot stays inside its cell: smaller than the deep model's cells
    deep = axes[2]
    cell_px = deep.get_window_extent(renderer).width / 31
    for line in deep.get_lines():
        assert line.get_markersize() * fig.dpi / 72 < 0.8 * cell_px
    assert any(t.startswith("dot: Holm-adjusted p (family: test x layer) < 0.05") for t in _legend_texts(fig))


def test_weat_effect_sizes_settings_differ_by_colour_style_and_marker(
    weat_two_models: xr.Dataset,
) -> None:
    one = weat(weat_dataset(), seed=0, n_bootstrap=50).compute()
    fig = weat_figures.weat_effect_sizes(one, pooling="last")
    handles = {t.get_text(): h for leg in fig.legends
               for t, h in zip(leg.get_texts(), leg.legend_handles, strict=True)}
    bleached, alone = handles["bleached"], handles["alone"]
    assert to_rgba(bleached.get_color()) != to_rgba(alone.get_color())
    assert bleached.get_linestyle() != alone.get_linestyle()
    assert bleached.get_marker() != alone.get_marker()
    bands = [c for c in _visible_axes(fig)[0].collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2 and all(b.get_alpha() <= 0.1 for b in bands)  # light: no purple blend

    fig = weat_figures.weat_effect_sizes(weat_two_models, pooling="last")
    ax = _visible_axes(fig)[0]
    es = weat_two_models.effect_size.sel(model="deep", setting="bleached", pooling="last", test="WEAT1")
    p = weat_two_models.p_adjusted.sel(model="deep", setting="bleached", pooling="last", test="WEAT1")
    deep = to_rgba(_figure.colors_for(["short", "deep"])["deep"])
    marks = [ln for ln in ax.get_lines() if ln.get_linestyle() == "None" and ln.get_marker() == "o"
             and to_rgba(ln.get_markeredgecolor()) == deep]
    filled = [ln for ln in marks if to_rgba(ln.get_markerfacecolor()) == deep]
    hollow = [ln for ln in marks if to_rgba(ln.get_markerfacecolor()) == to_rgba("white")]
    # every significant layer is marked; the other 31-layer markers are thinned
    assert sum(len(ln.get_xdata()) for ln in filled) == int((p < 0.05).sum())
    assert 0 < sum(len(ln.get_xdata()) for ln in hollow) <= 12
    assert (es.notnull().sum() - (p < 0.05).sum()) > 12
    handles = {t.get_text(): h for leg in fig.legends
               for t, h in zip(leg.get_texts(), leg.legend_handles, strict=True)}
    assert handles["deep · bleached"].get_linestyle() != handles["deep · alone"].get_linestyle()
    assert handles["deep · bleached"].get_marker() != handles["deep · alone"].get_marker()
    assert any("open: not significant (every few layers" in t for t in handles)


def test_word_scatter_shows_r_and_n() -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"setting": ["bleached"] * 50 + ["random"] * 50,
                          "rating": rng.uniform(1, 9, 100)})
    frame["sc_weat"] = 0.1 * frame["rating"] + rng.normal(0, 0.2, 100)
    fig = plots.word_scatter(frame)
    axes = _visible_axes(fig)
    assert [ax.get_title() for ax in axes] == ["bleached", "random"]
    sub = frame[frame.setting == "bleached"]
    r = np.corrcoef(sub.rating, sub.sc_weat)[0, 1]
    assert axes[0].texts[0].get_text() == f"r = {r:.3f}\nn = 50"
    assert len(axes[0].collections[0].get_offsets()) == 50


def test_word_scatter_one_row_per_model() -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame([{"model": m, "setting": s, "rating": rng.uniform(1, 9)}
                          for m in ("minilm", "smol") for s in ("bleached", "aligned", "misaligned")
                          for _ in range(20)])
    frame["sc_weat"] = 0.1 * frame["rating"] + rng.normal(0, 0.2, len(frame))
    fig = plots.word_scatter(frame)
    rows: dict[int, list[str]] = {}
    for ax in _visible_axes(fig):
        rows.setdefault(ax.get_subplotspec().rowspan.start, []).append(ax.get_title())
    assert list(rows.values()) == [["minilm · bleached", "minilm · aligned", "minilm · misaligned"],
                                   ["smol · bleached", "smol · aligned", "smol · misaligned"]]
    # a model with fewer panels leaves the rest of its row empty instead of lending it
    fig = plots.word_scatter(frame[~((frame.model == "minilm") & (frame.setting == "misaligned"))])
    rows = {}
    for ax in _visible_axes(fig):
        rows.setdefault(ax.get_subplotspec().rowspan.start, []).append(ax.get_title().split(" · ")[0])
    assert list(rows.values()) == [["minilm", "minilm"], ["smol", "smol", "smol"]]


@pytest.mark.parametrize("draw", ["layer_curves", "tokenization_curves", "nullification_curves",
                                  "similarity_curves"])
def test_figure_widths_are_one_or_two_columns(vast_result: xr.Dataset, draw: str) -> None:
    if draw == "similarity_curves":
        ds, pairs = similarity_dataset(similarity_pairs(n_words=40, n_pairs=60))
        result = word_similarity(ds, pairs=pairs, k_max=2, poolings=["last"],
                                 datasets=["ws353"]).compute()
        fig = plots.similarity_curves(result)
        assert _width(fig) == _figure.COLUMN_WIDTH  # one panel: one column
    else:
        fig = getattr(plots, draw)(vast_result)
        assert _width(fig) == _figure.PAGE_WIDTH
    assert fig.get_size_inches()[1] < 10


def test_missing_variable_is_a_clear_error(vast_result: xr.Dataset) -> None:
    with pytest.raises(AnalysisError, match="tokenization_r"):
        plots.tokenization_curves(vast_result.drop_vars("tokenization_r"))
    with pytest.raises(AnalysisError, match="pooling"):
        plots.nullification_curves(vast_result, pooling="median")
    with pytest.raises(AnalysisError, match="Did you mean 'last'"):
        plots.nullification_curves(vast_result, pooling="lats")


def test_similarity_figure_without_nullification() -> None:
    """--k-max 0 (no component removed): the curves draw, no colour is asked of an empty scale."""
    import warnings

    from emb.analyses import ANALYSES

    analysis = ANALYSES["similarity"]
    ds, options = analysis.example()
    options = {**options, "k_max": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.function(ds, **options).compute()
    figures = analysis.draw(result)
    assert figures and all(f.axes for f in figures.values())
