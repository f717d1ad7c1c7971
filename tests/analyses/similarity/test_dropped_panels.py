"""Word similarity: a benchmark, pooling or panel left out of the figure is named in the summary
with its reason (issue 24). A benchmark with fewer than 3 scorable pairs used to abort the whole
run; a pooling the similarity suite lacks, or a benchmark without a rho, left the figure without
its panel and the summary without a word."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from emb.analyses import ANALYSES, run_analysis
from emb.analyses._examples import similarity_dataset, similarity_pairs
from emb.analyses.ratings import figure_panels
from emb.analyses.similarity import word_similarity
from emb.errors import AnalysisError
from tests.analyses.test_figure_canvas import figure_problems


def _suite_and_pairs() -> tuple[object, pd.DataFrame]:
    ds, pairs = similarity_dataset(similarity_pairs(n_words=30, n_pairs=60))
    # a third benchmark: 2 pairs of stored words, 5 with a word the store lacks
    men = pd.DataFrame({"dataset": "men",
                        "word1": ["sim000", "sim001"] + [f"absent{i}" for i in range(5)],
                        "word2": ["sim002", "sim003"] + ["sim004"] * 5,
                        "score": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]})
    return ds, pd.concat([pairs, men], ignore_index=True)


def _summary_notes(name: str, result: object) -> list[str]:
    analysis = ANALYSES[name]
    return analysis.report_summary(result, analysis.report_tables(result)).notes


def test_a_benchmark_with_too_few_pairs_is_left_out_and_named() -> None:
    ds, pairs = _suite_and_pairs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_analysis("similarity", {"m": ds}, pairs=pairs, allow_missing=True,
                           k_max=1).compute()
    assert list(res["dataset"].values) == ["ws353", "simlex999"]
    notes = _summary_notes("similarity", res)
    assert ("benchmark 'men' left out: only 2 of 7 pairs have both words in the store "
            "(Spearman's rho needs at least 3).") in notes
    figures = ANALYSES["similarity"].draw(res)
    titles = [ax.get_title() for fig in figures.values() for ax in fig.axes if ax.get_visible()]
    assert not [t for t in titles if "men" in t] and len(titles) == 2 * 2  # benchmarks x poolings
    assert not any(figure_problems(fig) for fig in figures.values())


def test_no_scorable_benchmark_is_one_error_naming_each() -> None:
    ds, pairs = _suite_and_pairs()
    with pytest.raises(AnalysisError, match=r"no word-similarity benchmark can be scored.*men: "
                                             r"only 2 of 7 pairs"):
        word_similarity(ds, pairs=pairs[pairs["dataset"] == "men"], allow_missing=True)


def test_a_benchmark_without_rho_and_a_pooling_not_extracted_have_no_panel_and_a_reason() -> None:
    ds, pairs = similarity_dataset(similarity_pairs(n_words=30, n_pairs=60))
    pairs.loc[pairs["dataset"] == "simlex999", "score"] = 5.0  # constant scores: rho undefined
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = word_similarity(ds, pairs=pairs, k_max=1).compute()
    res["rho"].loc[{"pooling": "mean"}] = np.nan  # as when the suite lacks the pooling (vast)
    poolings, datasets, notes = figure_panels(res)
    assert (poolings, datasets) == (["last"], ["ws353"])
    assert notes == [
        "pooling 'mean': no panel, no rho at any layer (the similarity suite holds no vectors of "
        "this pooling: it was extracted without it)",
        "benchmark 'simlex999': no panel, no rho in any cell (its human scores or its pairs' "
        "cosines are constant)",
    ]
    summary = _summary_notes("similarity", res)
    assert all(n in summary for n in notes)
    (fig,) = ANALYSES["similarity"].draw(res).values()
    assert [ax.get_title() for ax in fig.axes if ax.get_visible()] == ["ws353 (n = 60)"]
    assert not figure_problems(fig)


def test_vast_names_the_similarity_panels_it_leaves_out() -> None:
    """VAST's store has poolings last and mean; its similarity suite was extracted with last
    only, and one benchmark has too few pairs."""
    analysis = ANALYSES["vast"]
    ds, options = analysis.example()
    sim, pairs = _suite_and_pairs()
    options.update(similarity=sim.sel(pooling=["last"]), pairs=pairs, allow_missing=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_analysis(analysis, {"m": ds}, **options).compute()
    notes = _summary_notes("vast", res)
    assert "word similarity: benchmark 'men' left out: only 2 of 7 pairs have both words in the " \
           "store (Spearman's rho needs at least 3)." in notes
    assert [n for n in notes if n.startswith("word similarity: pooling 'mean': no panel")]
    fig = analysis.draw(res)["similarity"]
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 2  # ws353, simlex999 at 'last'
    assert not figure_problems(fig)
