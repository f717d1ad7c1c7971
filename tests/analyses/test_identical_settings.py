"""Settings with identical numbers are said to be one result, and why (issue 24): on static
vectors ``weat``'s bleached and alone rows, ``vast``'s aligned and misaligned ones are the same
numbers, and ``intersectional`` is flat, because a word has one vector whatever its context."""

from __future__ import annotations

import json
import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure

from emb.analyses import ANALYSES, run_analysis
from emb.analyses._settings import (
    caption_identical_settings,
    identical_settings,
    identical_settings_notes,
    static_models,
)
from emb.analyses.intersectional._intersectional import _share_kernel

STATIC = json.dumps({"model_type": "static"})
GPT2 = json.dumps({"model_type": "gpt2"})


def _two_models() -> xr.Dataset:
    """``w2v`` (static): bleached = alone, random differs; ``gpt2``: every setting differs."""
    d = np.array([[[0.5, np.nan], [0.5, np.nan], [0.1, 0.2]],
                  [[0.5, 0.6], [0.4, 0.6], [0.1, 0.2]]])
    return xr.Dataset(
        {"effect_size": (("model", "setting", "layer"), d),
         "n": (("model", "setting"), [[8, 8, 8], [8, 8, 8]])},
        coords={"model": ["w2v", "gpt2"], "setting": ["bleached", "alone", "random"],
                "layer": [0, 1]},
        attrs={"models": json.dumps({"w2v": {"model": STATIC}, "gpt2": {"model": GPT2}})},
    )


def test_groups_are_found_per_model_nan_for_nan() -> None:
    res = _two_models()
    assert identical_settings(res) == {"w2v": [["bleached", "alone"]]}
    assert static_models(res) == {"w2v"}
    # one differing variable is enough to tell two settings apart
    other = res.copy(deep=True)
    other["n"].loc[{"model": "w2v", "setting": "alone"}] = 7
    assert identical_settings(other) == {}


def test_the_note_says_why_from_the_provenance() -> None:
    (note,) = identical_settings_notes(_two_models())
    assert note.startswith("w2v: settings bleached = alone: identical numbers in every cell")
    assert "static word vectors" in note and "one result, not 2 agreeing ones" in note
    # the same numbers from a contextual model: said, without blaming static vectors
    one = _two_models().sel(model="w2v", drop=True).assign_attrs(models="", model=GPT2)
    (note,) = identical_settings_notes(one)
    assert note.startswith("settings bleached = alone:") and "static" not in note
    assert "the same vectors" in note


def test_settings_without_numbers_or_apart_are_not_a_group() -> None:
    nan = xr.Dataset({"r": (("setting",), [np.nan, np.nan, 0.3])},
                     coords={"setting": ["bleached", "alone", "random"]})
    assert identical_settings(nan) == {}  # two empty settings agree on nothing
    differ = xr.Dataset({"r": (("setting",), [0.3, 0.30000001])},
                        coords={"setting": ["bleached", "alone"]})
    assert identical_settings(differ) == {}


def test_a_lazy_result_is_not_computed() -> None:
    def boom(block: np.ndarray) -> np.ndarray:
        raise AssertionError("computed")

    lazy = xr.Dataset({"r": (("setting",), da.ones(2, chunks=1).map_blocks(boom, dtype=float, meta=np.array((), dtype=float)))},
                      coords={"setting": ["bleached", "alone"]})
    assert identical_settings(lazy) == {}


def test_a_figure_that_draws_identical_settings_apart_says_so() -> None:
    res = _two_models()
    fig = Figure()
    ax = fig.subplots()
    for s in ("bleached", "alone", "random"):
        ax.plot([0, 1], [0, 1], label=s)
    fig.legend()
    fig.suptitle("d by layer")
    caption_identical_settings(fig, identical_settings(res), static=static_models(res))
    assert fig._suptitle.get_text() == (
        "d by layer\n(w2v: settings bleached = alone: identical numbers; static vectors: a word has one "
        "vector whatever its context)")
    # a figure that already joins them ("bleached = alone") or draws one of them is left alone
    for labels in (["bleached = alone", "random"], ["bleached", "random"]):
        fig = Figure()
        ax = fig.subplots()
        for s in labels:
            ax.plot([0, 1], [0, 1], label=s)
        fig.legend()
        fig.suptitle("d")
        caption_identical_settings(fig, identical_settings(res), static=static_models(res))
        assert fig._suptitle.get_text() == "d"


def test_intersectional_ranks_no_tie() -> None:
    """A row of equal projections has no top or bottom 10 %: the shares are NaN, not the
    phrases an argsort put first; a row with an order gets the shares counted by hand."""
    has = np.array([[1, 0], [0, 1], [1, 0], [0, 1]], dtype=float)  # values a, b of 4 phrases
    at = has[:, :, None]
    flat = np.full((1, 4), 0.25)
    share, position = _share_kernel(flat, has_value=has, at_position=at, k=1)
    assert np.isnan(share).all() and np.isnan(position).all()
    ordered = np.array([[0.1, 0.9, 0.3, 0.2]])  # top: phrase 1 (b), bottom: phrase 0 (a)
    share, _ = _share_kernel(ordered, has_value=has, at_position=at, k=1)
    np.testing.assert_array_equal(share[0], [[0, 1], [1, 0]])


def test_intersectional_on_static_vectors_says_it_is_flat() -> None:
    """Static vectors: 'person' has one vector in every phrase; the summary says so and why,
    and no figure draws an empty table, a tie ranked as a finding or violins of one point."""
    from tests.analyses.test_figure_canvas import static_store

    analysis = ANALYSES["intersectional"]
    ds, options = analysis.example()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_analysis(analysis, {"w2v": static_store(ds)}, **options).compute()
    assert np.isnan(result["effect_size"]).all() and np.isnan(result["share"]).all()
    summary = analysis.report_summary(result, analysis.report_tables(result))
    (note,) = [n for n in summary.notes if n.startswith("flat:")]
    assert "every cell" in note and "static word vectors" in note and "no figures" in note
    assert analysis.draw(result) == {}


@pytest.mark.parametrize("name", ["weat", "vast"])
def test_the_cli_summary_names_the_identical_settings(name: str) -> None:
    from tests.analyses.test_figure_canvas import static_store

    analysis = ANALYSES[name]
    ds, options = analysis.example()
    options = {k: static_store(v) if isinstance(v, xr.Dataset) else v for k, v in options.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_analysis(analysis, {"w2v": static_store(ds)}, **options).compute()
    from emb.analyses._provenance import summarize

    notes = summarize(analysis, result, analysis.report_tables(result)).notes
    settings = " = ".join(str(s) for s in result["setting"].values)
    assert [n for n in notes if n.startswith(f"settings {settings}: identical numbers")]


def test_intersectional_beside_a_contextual_model_draws_the_contextual_one() -> None:
    """Two stores in one run, one static: the static model's flat cells are named, and the
    figures draw the contextual model's panels without empty ones beside them."""
    from tests.analyses.test_figure_canvas import figure_problems, static_store

    analysis = ANALYSES["intersectional"]
    ds, options = analysis.example()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_analysis(analysis, {"w2v": static_store(ds), "ctx": ds}, **options).compute()
    notes = analysis.report_summary(result, analysis.report_tables(result)).notes
    (note,) = [n for n in notes if n.startswith("flat:")]
    assert "(layer 0, static pooling, w2v)" in note and "no figure panels there" in note
    figures = analysis.draw(result)
    assert set(figures) == {"heat_table", "distributions", "experiment3_shares"}
    assert not {k: p for k, fig in figures.items() if (p := figure_problems(fig))}


@pytest.mark.parametrize("kind", ["static", "layers"])
def test_ceat_on_static_vectors_says_its_samples_are_one_draw(kind: str) -> None:
    """Static vectors give every sample of contexts the same d (tau^2 = 0, a random-effects CI
    from N copies of one number): the summary says so, and only then."""
    from tests.analyses.test_figure_canvas import static_store

    analysis = ANALYSES["ceat"]
    ds, options = analysis.example()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_analysis(analysis, {"m": static_store(ds) if kind == "static" else ds},
                              **options).compute()
    es = result["es"].values
    assert (np.ptp(es, axis=-1) == 0).all() == (kind == "static")  # the premise, checked
    notes = analysis.report_summary(result, analysis.report_tables(result)).notes
    said = [n for n in notes if "samples gives the same es in every cell" in n]
    if kind == "static":
        (note,) = said
        assert note.startswith(f"every one of the {result.sizes['sample']} samples")
        assert "static word vectors" in note and "bootstrap CI over the stimuli" in note
    else:
        assert not said
