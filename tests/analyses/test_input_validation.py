"""Out-of-range options, sizes that cannot fit in memory, degenerate word sets and the hints of
missing-stimuli errors: each is an AnalysisError (or MissingStimuliError) with a message that
says what to do, raised by the analysis function itself (the Python API, not only the CLI)."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pandas as pd
import pytest

from emb.analyses import ANALYSES
from emb.analyses._analysis import MAX_COUNT, MAX_SEED, SEED, Option, check_options
from emb.analyses.ceat import ceat
from emb.analyses.sc_weat import sc_weat_lexicon
from emb.analyses.similarity import word_similarity
from emb.analyses.stereotype import stereotype
from emb.analyses.valence_subspace import valence_subspace
from emb.analyses.valnorm import valnorm
from emb.analyses.weat import weat
from emb.errors import AnalysisError, EmbWarning, MissingStimuliError
from tests.analyses._synthetic import (
    ceat_dataset,
    ibd_dataset,
    similarity_dataset,
    similarity_pairs,
    stereotype_dataset,
    vast_dataset,
    weat_dataset,
)
from tests.analyses._synthetic_intersectional import intersectional_dataset


# -- declared bounds -------------------------------------------------------------------------------
def test_option_bounds_and_their_words() -> None:
    count = Option(name="n", type="int", low=2)
    assert count.bounds == (2, MAX_COUNT) and count.range_text == "an integer from 2 to 1,000,000,000"
    assert count.in_range(2) and count.in_range(np.int64(MAX_COUNT))
    assert not any(count.in_range(v) for v in (1, MAX_COUNT + 1, 2.0, True, "3"))
    c = Option(name="C", type="float", low=0, low_open=True)
    assert c.in_range(1e-9) and c.in_range(5)
    assert not any(c.in_range(v) for v in (0.0, -1.0, np.inf, np.nan))
    assert SEED.in_range(0) and SEED.in_range(MAX_SEED)
    assert not SEED.in_range(-1) and not SEED.in_range(MAX_SEED + 1)
    with pytest.raises(AnalysisError, match=r"\(seed= in Python\) of analysis '[a-z_-]+' must be an integer from 0 to 9,223,372,036,854,775,807; got -1"):
        check_options(ANALYSES["weat"], seed=-1)


def test_every_declared_default_lies_within_its_bounds() -> None:
    for analysis in ANALYSES.values():
        for option in analysis.options:
            default = analysis.default(option.name)
            if option.type in ("int", "float") and default is not None:
                assert option.in_range(default), (analysis.name, option.name, default)
        if "seed" in analysis.parameters():
            assert analysis.seed.in_range(analysis.default("seed"))
            assert analysis.seed.bounds[1] <= SEED.bounds[1]


@pytest.mark.parametrize("options, match", [
    ({"seed": -1}, r"\(seed= in Python\) of analysis '[a-z_-]+' must be an integer from 0"),
    ({"seed": 2**64}, r"\(seed= in Python\) of analysis '[a-z_-]+' must be an integer from 0"),
    ({"n_permutations": 10**23}, r"\(n_permutations= in Python\) of analysis '[a-z_-]+' must be an integer from 2 to 10,000,000"),
    ({"n_bootstrap": 10**23}, r"\(n_bootstrap= in Python\) of analysis '[a-z_-]+' must be an integer from 0 to 100,000"),
    ({"confidence": float("inf")}, r"\(confidence= in Python\) of analysis '[a-z_-]+' must be a finite number > 0 and < 1"),
])
def test_weat_refuses_out_of_range_options(options: dict, match: str) -> None:
    with pytest.raises(AnalysisError, match=match):
        weat(weat_dataset(), **options)


def test_other_analyses_refuse_bad_seeds_and_counts() -> None:
    with pytest.raises(AnalysisError, match=r"\(seed= in Python\) of analysis '[a-z_-]+' must be"):
        sc_weat_lexicon(vast_dataset(n_words=40), seed=-1)
    with pytest.raises(AnalysisError, match=r"\(seed= in Python\) of analysis '[a-z_-]+' must be"):
        ceat(ceat_dataset(), seed=2**64)
    with pytest.raises(AnalysisError, match=r"\(n_permutations= in Python\) of analysis '[a-z_-]+' must be"):
        ceat(ceat_dataset(), n_permutations=10**23)


def test_seeds_that_reach_scikit_learn_stay_below_2_to_the_32() -> None:
    with pytest.raises(AnalysisError, match=r"\(seed= in Python\) of analysis '[a-z_-]+' must be an integer from 0 to 4,294,967,295"):
        valence_subspace(intersectional_dataset(), seed=2**32)


@pytest.mark.parametrize("C", [float("inf"), float("nan"), 0.0, -1.0])
def test_valence_subspace_needs_a_finite_positive_C(C: float) -> None:
    with pytest.raises(AnalysisError, match=r"\(C= in Python\) of analysis '[a-z_-]+' must be a finite number > 0"):
        valence_subspace(intersectional_dataset(), C=C)


# -- ceat: sizes that cannot fit -------------------------------------------------------------------
def test_ceat_refuses_sizes_beyond_memory_before_allocating(monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module("emb.analyses.ceat._ceat")  # emb.analyses exports the function
    monkeypatch.setattr(module, "_memory_limit", lambda: 2**20)  # a 1 MiB machine
    ds = ceat_dataset()
    with pytest.raises(AnalysisError, match=r"GiB of memory.*lower --n-samples") as err:
        ceat(ds, tests="T1", n_samples=200_000, n_bootstrap=0, n_permutations=0)
    assert "n_samples=200,000" in str(err.value)
    with pytest.raises(AnalysisError, match=r"--n-bootstrap x --bootstrap-samples"):
        ceat(ds, tests="T1", n_samples=100, bootstrap_samples=100_000, n_permutations=0)


def test_ceat_n_bootstrap_between_1_and_19_is_refused_and_documented() -> None:
    with pytest.raises(AnalysisError, match=r"0 \(no bootstrap CI\) or at least 20"):
        ceat(ceat_dataset(), n_bootstrap=5)
    help_text = {o.name: o.help for o in ANALYSES["ceat"].options}["n_bootstrap"]
    assert "at least 20" in help_text


# -- valnorm: polar words that leave too few targets -----------------------------------------------
def test_valnorm_refuses_a_rating_whose_poles_leave_too_few_words() -> None:
    ds = vast_dataset(n_words=12, n_layers=2, with_arousal=True)
    lexicon = np.asarray(ds["stimulus_set"].values).astype(str) == "lexicon"
    words = np.asarray(ds["word"].values).astype(str)
    kept = sorted(set(words[lexicon]))[:2]  # every other lexicon word is a labelled pole
    polar = np.where(lexicon & ~np.isin(words, kept),
                     np.where(np.arange(words.size) % 2 == 0, "high", "low"), "")
    ds = ds.assign_coords(polar_arousal=("item", polar.astype(object)))
    with pytest.raises(AnalysisError, match=r"only 2 word\(s\) rated on 'arousal' remain.*at least 3"):
        valnorm(ds, ratings="arousal")


# -- WEAT word sets --------------------------------------------------------------------------------
def _words() -> dict[str, list[str]]:
    ds = weat_dataset()
    test = np.asarray(ds["test"].values).astype(str)
    role = np.asarray(ds["role"].values).astype(str)
    word = np.asarray(ds["word"].values).astype(str)
    return {r: list(dict.fromkeys(word[(test == "WEAT1") & (role == r)])) for r in "XYAB"}


def test_weat_refuses_duplicate_and_shared_words() -> None:
    ds, w = weat_dataset(), _words()
    with pytest.raises(AnalysisError, match=r"X lists \['flower0'\] twice"):
        weat(ds, tests={"tests": {"T1": {"X": [*w["X"], "flower0"], "Y": w["Y"], "A": w["A"],
                                         "B": w["B"]}}})
    with pytest.raises(AnalysisError, match=r"X and Y share \['flower0'\]"):
        weat(ds, tests={"tests": {"T1": {"X": w["X"], "Y": [*w["Y"], "flower0"], "A": w["A"],
                                         "B": w["B"]}}})
    with pytest.raises(AnalysisError, match=r"X and Y share .*A and B share"):
        weat(ds, x=["flower0"], y=["flower0"], a=[w["A"][0]], b=[w["A"][0]])


def test_built_in_weat_tests_pass_and_an_overlap_in_a_suite_only_warns() -> None:
    ds = weat_dataset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbWarning)
        weat(ds, n_bootstrap=0, n_permutations=100)
    word = np.asarray(ds["word"].values).astype(object)
    word[word == "insect0"] = "flower0"  # the suite itself puts flower0 in X and Y of WEAT1
    with pytest.warns(EmbWarning, match=r"WEAT1.*X and Y share \['flower0'\]"):
        weat(ds.assign_coords(word=("item", word)), tests="WEAT1", n_bootstrap=0,
             n_permutations=100)


# -- hints of missing stimuli ----------------------------------------------------------------------
def test_stereotype_hint_extracts_into_a_new_group() -> None:
    ds, _ = stereotype_dataset()
    with pytest.raises(MissingStimuliError) as err:
        stereotype(ds, groups=["female_names", "nonexistent"])
    msg = str(err.value)
    # the groups are part of the suite's definition: adding them to the same group is refused
    assert "--groups FILE --name stereotype_new" in msg
    assert "--suite stereotype_new --group female_names,nonexistent" in msg


def test_ceat_hint_tells_built_in_tests_from_unknown_ones() -> None:
    ds = ceat_dataset()
    with pytest.raises(MissingStimuliError) as err:
        ceat(ds, tests="T9")
    assert "'T9' is not a built-in CEAT test" in str(err.value)
    assert "--test FILE --name ceat_new" in str(err.value)
    with pytest.raises(MissingStimuliError) as err:
        ceat(ds, tests="C1")
    assert "not a built-in" not in str(err.value)
    assert "--test C1 --name ceat_new" in str(err.value)


def test_sc_weat_hint_names_the_vast_options_not_a_suite_file() -> None:
    with pytest.raises(MissingStimuliError) as err:
        sc_weat_lexicon(vast_dataset(n_words=40), words=["zzq"])
    msg = str(err.value)
    assert "--suite vast --lexicon CSV --polar JSON --name vast_new" in msg
    assert "--suite FILE" not in msg


def test_similarity_refuses_another_suite_and_names_the_cli_flag() -> None:
    with pytest.raises(AnalysisError, match="'ibd' .* is not a similarity suite"):
        word_similarity(ibd_dataset())
    ds, pairs = similarity_dataset(similarity_pairs(n_words=20, n_pairs=30))
    extra = pairs.iloc[:1].assign(word1="zzq")
    with pytest.raises(MissingStimuliError, match="--allow-missing on the command line") as err:
        word_similarity(ds, pairs=pd.concat([pairs, extra], ignore_index=True))
    assert "--name similarity_new" in str(err.value)
