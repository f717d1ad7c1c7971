"""Per-item label reads at corpus scale: the analyses read text labels as the items' own strings,
never as numpy's fixed-width ``<U`` copy (which holds every value at the width of the longest:
one long phrase among millions of items asks for gigabytes), and their results equal
brute-force loops over the items. ``benchmarks/scale_items.py`` measures the same paths at
millions of items."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import xarray as xr

from emb.analyses import _run
from emb.analyses._run import common_stimuli
from emb.analyses._select import item_text, text_column
from emb.analyses.ceat import _ceat, ceat
from emb.analyses.stats.anisotropy import first_items, random_pairs
from emb.analyses.wordsets.contexts import per_stimulus
from tests.analyses._synthetic import ceat_dataset
from tests.analyses._synthetic_intersectional import intersectional_dataset

#: the length of the one long label: at 20,000 items a ``<U`` copy of its column is 160 MB
LONG = 2_000
#: what reading the labels may allocate: the arrays of codes and positions, not n × LONG
BUDGET = 12 * 2**20


def _peak(func: Callable[[], Any]) -> tuple[Any, int]:
    """``func()`` and the peak of what it allocated (tracemalloc: numpy's buffers included)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = func()
        return out, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def corpus() -> xr.Dataset:
    """A ``ceat`` suite of ~20,000 items whose stimulus ``x0`` is a 2,000-character phrase."""
    ds = ceat_dataset(contexts=720, n_layers=1, d=8, poolings=("mean",))
    phrase = "x0 " + "and so on " * (LONG // 10)
    relabel = {}
    for name in ("stimulus", "word"):
        values = np.asarray(ds[name].values, dtype=object).copy()
        values[values == "x0"] = phrase
        relabel[name] = ("item", values)
    out = ds.assign_coords(relabel)
    assert out.sizes["item"] >= 20_000
    return out


def test_text_column_is_astype_str_without_the_width() -> None:
    long = "a " * 50_000
    column = np.array(["love", long, "hate"] * 1000, dtype=object)
    assert text_column(column) is column  # the items' own strings: not copied at all
    # anything else reads as .astype(str) spells it, as str objects
    for values in (np.array(["a", 1.5, None, b"x"], dtype=object), np.array([1.5, 2.0]),
                   np.array([True, False]), np.array(["a", "bc"]), np.array([], dtype=object)):
        out = text_column(values)
        assert out.dtype == object and all(type(v) is str for v in out)
        assert out.tolist() == values.astype(str).tolist()
    stringdtype = np.array(["x", "y\x00"], dtype=np.dtypes.StringDType())
    assert text_column(stringdtype).tolist() == ["x", "y\x00"]  # the NUL kept (<U drops it)


def test_ceat_labels_are_read_without_a_fixed_width_copy(corpus: xr.Dataset) -> None:
    tests, peak = _peak(lambda: _ceat._tests(corpus, None))
    assert peak < BUDGET, f"reading the test definitions allocated {peak / 2**20:.0f} MB"
    where_of, peak = _peak(lambda: _ceat._positions(corpus))
    assert peak < BUDGET, f"locating the stimuli allocated {peak / 2**20:.0f} MB"
    # the same as a loop over the items
    stim = item_text(corpus, "stimulus").tolist()
    expect: dict[str, dict[str, list[str]]] = {}
    for s, t_, r_ in zip(stim, item_text(corpus, "tests").tolist(),
                         item_text(corpus, "roles").tolist(), strict=True):
        for t, r in zip(t_.split("|"), r_.split("|"), strict=True):
            words = expect.setdefault(t, {}).setdefault(r, [])
            if s not in words:
                words.append(s)
    assert {t.name: {r: list(w) for r, w in t.stimuli.items()} for t in tests} == expect
    assert where_of.keys() == set(stim)
    for s, where in where_of.items():
        np.testing.assert_array_equal(where, [i for i, v in enumerate(stim) if v == s])


def test_ceat_locates_the_stimuli_once_for_all_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    ds = ceat_dataset(contexts=20)
    calls = []
    real = _ceat._positions
    monkeypatch.setattr(_ceat, "_positions", lambda d: calls.append(1) or real(d))
    res = ceat(ds, n_samples=20, n_permutations=0, n_bootstrap=0)
    assert res.sizes["test"] == 2 and len(calls) == 1


def test_per_stimulus_reads_the_labels_without_a_fixed_width_copy(corpus: xr.Dataset) -> None:
    lean = corpus.drop_vars("embedding").assign(
        embedding=(("item", "feature"), np.zeros((corpus.sizes["item"], 1), np.float32)))
    out, peak = _peak(lambda: per_stimulus(lean))
    assert peak < BUDGET, f"the per-stimulus labels allocated {peak / 2**20:.0f} MB"
    stim = item_text(corpus, "stimulus")
    counts = {s: int((stim == s).sum()) for s in set(stim.tolist())}
    rows = {(str(w), str(t)): int(n) for w, t, n in zip(
        out["word"].values, out["test"].values, out["n_contexts"].values, strict=True)}
    assert {w for w, _ in rows} == set(counts)
    assert all(n == counts[w] for (w, _), n in rows.items())


def test_common_stimuli_keys_without_a_fixed_width_copy(corpus: xr.Dataset) -> None:
    codes_distinct, peak = _peak(lambda: _run._stimulus_keys(corpus))
    assert peak < BUDGET, f"the stimulus keys allocated {peak / 2**20:.0f} MB"
    codes, distinct = codes_distinct
    per_item = ["/".join(k) for k in zip(*(item_text(corpus, n).tolist()
                                            for n in ("setting", "stimulus_set", "word")),
                                          strict=True)]
    assert [distinct[c] for c in codes] == per_item
    assert distinct == list(dict.fromkeys(per_item))
    # a second store without two of the stimuli: both keep the items of the stimuli both have
    word = item_text(corpus, "word")
    gone = ["y1", "n2"]
    other = corpus.isel(item=np.flatnonzero(~np.isin(word, gone)))
    out, note = common_stimuli({"a": corpus, "b": other})
    keep = [i for i, k in enumerate(per_item) if k.rsplit("/", 1)[1] not in gone]
    assert out["a"].sizes["item"] == len(keep)
    np.testing.assert_array_equal(out["a"]["line"].values, corpus["line"].values[keep])
    assert item_text(out["a"], "word").tolist() == word[keep].tolist()
    assert out["b"] is other
    assert note is not None and "2 dropped" in note and "absent from store 'b'" in note


def test_anisotropy_pairs_group_the_words_without_a_fixed_width_copy(corpus: xr.Dataset) -> None:
    words = item_text(corpus, "word")
    pairs, peak = _peak(lambda: random_pairs(words, n_pairs=200, seed=3))
    assert peak < BUDGET, f"the anisotropy pairs allocated {peak / 2**20:.0f} MB"
    # each word's first item, as a loop over the items finds it
    first: dict[str, int] = {}
    for i, w in enumerate(words.tolist()):
        first.setdefault(w, i)
    positions = sorted(first.values())
    assert set(pairs.ravel().tolist()) <= set(positions)
    k = len(positions)
    assert len(pairs) == min(200, k * (k - 1) // 2)
    assert all(words[i] != words[j] for i, j in pairs)
    # the same first items as grouping the words by sorting them (the way it was done)
    _, by_sorting = np.unique(words.astype(str)[:2000], return_index=True)
    np.testing.assert_array_equal(first_items(words[:2000]), np.sort(by_sorting))


def test_intersectional_reads_the_phrases_contexts_only() -> None:
    """A long context elsewhere in the suite (an item outside the phrases) costs nothing: the
    phrases' contexts are read as text at the phrases only; the result is the same."""
    from emb.analyses.intersectional import intersectional
    from emb.analyses.intersectional._intersectional import (
        _groups,
        _phrase_positions,
        _suite_design,
    )

    ds = intersectional_dataset()
    contexts = np.asarray(ds["context"].values, dtype=object).copy()
    alone = int(np.flatnonzero(ds["setting"].values == "alone")[0])
    contexts[alone] = "word " * 4_000  # 20,000 characters: 645 MB as <U over 8,068 items
    long = ds.assign_coords(context=("item", contexts))
    exp2 = _phrase_positions(long, "experiment2")
    pairs = _suite_design(long)[0]
    _, peak = _peak(lambda: _groups(long, exp2, pairs, True))
    assert peak < BUDGET, f"grouping the phrases allocated {peak / 2**20:.0f} MB"
    options = {"n_permutations": 20, "method": "reference"}
    xr.testing.assert_identical(intersectional(long, **options).compute(),
                                intersectional(ds, **options).compute())
