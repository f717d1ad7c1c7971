"""Figures: what they draw (lines, panels, markers) and that they save as non-empty PNGs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from emb.analyses import plots, run_analysis
from emb.analyses.similarity import word_similarity
from emb.analyses.vast import vast
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
    return [ax for ax in fig.axes if ax.get_visible()]


def _png(fig: Figure, path: Path) -> int:
    fig.savefig(path, dpi=60)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return len(data)


def test_layer_curves_one_panel_per_pooling_one_line_per_setting(
    vast_result: xr.Dataset, tmp_path: Path
) -> None:
    fig = plots.layer_curves(vast_result)
    axes = _visible_axes(fig)
    assert [ax.get_title() for ax in axes] == [f"{p} pooling" for p in ("first", "last", "mean", "max")]
    ax = axes[1]
    lines = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
    assert list(lines) == ["bleached", "aligned", "misaligned", "random"]
    expected = vast_result.r.sel(rating="valence", lexicon="toy", setting="misaligned", pooling="last")
    np.testing.assert_allclose(lines["misaligned"].get_ydata(), expected.values)
    np.testing.assert_array_equal(lines["misaligned"].get_xdata(), vast_result.layer.values)
    assert "VAST" in ax.get_ylabel() or "VAST" in axes[0].get_ylabel()
    assert _png(fig, tmp_path / "curves.png") > 5_000


def test_layer_curves_other_rating(vast_result: xr.Dataset) -> None:
    fig = plots.layer_curves(vast_result, rating="arousal")
    line = [ln for ln in fig.axes[0].get_lines() if ln.get_label() == "bleached"][0]
    expected = vast_result.r.sel(rating="arousal", lexicon="toy", setting="bleached", pooling="first")
    np.testing.assert_allclose(line.get_ydata(), expected.values)
    assert "arousal" in fig.get_suptitle()


def test_models_side_by_side(two_models: xr.Dataset, tmp_path: Path) -> None:
    fig = plots.layer_curves(two_models)
    axes = _visible_axes(fig)
    assert len(axes) == 2 * 4  # one row per model
    assert axes[0].get_title().startswith("small:") and axes[4].get_title().startswith("large:")
    small = [ln for ln in axes[1].get_lines() if ln.get_label() == "bleached"][0]
    large = [ln for ln in axes[5].get_lines() if ln.get_label() == "bleached"][0]
    assert list(small.get_xdata()) == [0, 1, 2]  # NaN layers of the smaller model not drawn
    assert list(large.get_xdata()) == [0, 1, 2, 3, 4]
    for draw in (plots.tokenization_curves, plots.nullification_curves):
        assert _png(draw(two_models), tmp_path / f"{draw.__name__}.png") > 5_000


def test_tokenization_curves(vast_result: xr.Dataset) -> None:
    fig = plots.tokenization_curves(vast_result)
    axes = _visible_axes(fig)
    assert [ax.get_title() for ax in axes] == ["bleached", "aligned", "misaligned", "random"]
    lines = {ln.get_label(): ln for ln in axes[0].get_lines()}
    single = lines["single · last"]
    multi = lines["multi · last"]
    assert single.get_linestyle() == "-" and multi.get_linestyle() == "--"
    expected = vast_result.tokenization_r.sel(lexicon="toy", setting="bleached", pooling="last",
                                              token_set="single").mean("subset")
    np.testing.assert_allclose(single.get_ydata(), expected.values)


def test_nullification_curves_one_panel_per_swept_layer(vast_result: xr.Dataset) -> None:
    fig = plots.nullification_curves(vast_result)
    axes = _visible_axes(fig)
    best = int(vast_result.best_layer.sel(lexicon="toy", pooling="last"))
    top = int(vast_result.top_layer)
    titles = [ax.get_title() for ax in axes]
    assert any(f"layer {top}" in t and "top" in t for t in titles)
    assert any(f"layer {best}" in t and "best" in t for t in titles)
    line = [ln for ln in axes[-1].get_lines() if ln.get_label() == "bleached"][0]
    np.testing.assert_array_equal(line.get_xdata(), [0, 1, 2, 3])
    expected = vast_result.nullified_r.sel(rating="valence", lexicon="toy", setting="bleached",
                                           pooling="last", layer=top)
    np.testing.assert_allclose(line.get_ydata(), expected.values)


def test_similarity_curves(tmp_path: Path) -> None:
    ds, pairs = similarity_dataset(similarity_pairs(n_words=40, n_pairs=60))
    res = word_similarity(ds, pairs=pairs, k_max=4).compute()
    fig = plots.similarity_curves(res)
    axes = _visible_axes(fig)
    assert [ax.get_title() for ax in axes] == ["ws353 (n = 60)", "simlex999 (n = 30)"]
    labels = [ln.get_label() for ln in axes[0].get_lines()]
    assert labels == ["k = 0", "k = 1", "k = 2", "k = 4"]
    assert _png(fig, tmp_path / "sim.png") > 5_000


def test_weat_markers_filled_when_significant(tmp_path: Path) -> None:
    res = weat(weat_dataset(), seed=0).compute()
    fig = plots.weat_effect_sizes(res, pooling="last")
    axes = _visible_axes(fig)
    assert [ax.get_title() for ax in axes] == ["WEAT1", "WEAT2"]
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
    assert _png(fig, tmp_path / "weat.png") > 5_000


def test_missing_variable_is_a_clear_error(vast_result: xr.Dataset) -> None:
    with pytest.raises(AnalysisError, match="tokenization_r"):
        plots.tokenization_curves(vast_result.drop_vars("tokenization_r"))
    with pytest.raises(AnalysisError, match="pooling"):
        plots.nullification_curves(vast_result, pooling="median")
