"""Per-item work of a suite at corpus scale (millions of items): what materialising an item and
asking for the suite's columns cost beyond the checks themselves. ``benchmarks/scale_items.py``
times the same paths at millions of items."""

from __future__ import annotations

import math

import numpy as np
import pytest

from emb.errors import SuiteError
from emb.stimuli.suites import Item, Suite, core


def _items(n: int) -> list[Item]:
    return [Item(context=f"they said w{i % 7} today", word=f"w{i % 7}", char_start=10,
                 char_end=12, labels={"stimulus": f"w{i % 7}", "tests": "T1|T2",
                                      "line": float(i), "note": None if i % 3 else "x"})
            for i in range(n)]


def test_plain_text_labels_format_no_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """A label that is plain ASCII text or a finite float needs no check: no message is built for
    it (one per label of every item was 30% of materialising a corpus suite)."""
    def show(value: object) -> str:
        raise AssertionError(f"a message was formatted for {value!r}")

    monkeypatch.setattr(core, "show", show)
    item = Item(context="a b", word="a", char_start=0, char_end=1,
                labels={"tests": "T1|T2", "roles": "X|A", "line": 12.0, "offset": -0.0})
    assert item.labels == {"tests": "T1|T2", "roles": "X|A", "line": 12.0, "offset": 0.0}
    assert math.copysign(1.0, item.labels["offset"]) == 1.0


def test_labels_still_checked() -> None:
    item = Item(context="a b", word="a", char_start=0, char_end=1,
                labels={"n": 3, "neg": -0.0, "gone": None, "text": "é"})
    assert item.labels["n"] == 3.0 and type(item.labels["n"]) is float
    assert math.copysign(1.0, item.labels["neg"]) == 1.0
    assert math.isnan(item.labels["gone"]) and item.labels["text"] == "é"
    with pytest.raises(SuiteError, match="label 'flag' of item 'a' is the boolean True"):
        Item(context="a b", word="a", char_start=0, char_end=1, labels={"flag": True})
    with pytest.raises(SuiteError, match="label 'big' of item 'a' is inf, not a finite number"):
        Item(context="a b", word="a", char_start=0, char_end=1, labels={"big": math.inf})
    nan = Item(context="a b", word="a", char_start=0, char_end=1, labels={"x": math.nan})
    assert math.isnan(nan.labels["x"])
    with pytest.raises(SuiteError, match="label 'bad' of item 'a'"):
        Item(context="a b", word="a", char_start=0, char_end=1, labels={"bad": "\ud800"})


def test_label_types_found_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The label columns' types are found once, when the suite is made: ``columns()`` and
    ``label_types`` do not scan every item again."""
    calls = []
    real = core._label_types
    monkeypatch.setattr(core, "_label_types", lambda items: calls.append(1) or real(items))
    suite = Suite(name="s", items=tuple(_items(30)))
    assert suite.label_types == {"stimulus": "str", "tests": "str", "line": "float", "note": "str"}
    columns = suite.columns()
    assert len(calls) == 1
    # the same columns as the items say, value by value
    assert columns["note"].tolist() == ["x" if i % 3 == 0 else "" for i in range(30)]
    np.testing.assert_array_equal(columns["line"], np.arange(30.0))
    assert real(suite.items) == suite.label_types
    assert suite == Suite(name="s", items=tuple(_items(30)))  # equality: the fields only
