"""item_coords lays out a suite's item coordinates from its keys' encodings, concatenated: the
same coordinates as the item-by-item loop it replaced, and text columns that keep the items'
own strings (no fixed-width numpy text: trailing NULs kept, no padding to the longest)."""

from __future__ import annotations

import numpy as np

from emb.extraction._plan import Plan, item_coords
from emb.stimuli.suites import Item, Suite


def _reference(suite: Suite, plan: Plan) -> dict[str, np.ndarray]:
    """The coordinates as the first item_coords computed them, one item at a time."""
    enc = [plan.encodings[k] for k in plan.item_key]
    targets = [np.asarray(e.target) for e in enc]
    n_sub = np.array([t.size for t in targets], dtype=np.int32)
    width = max(1, int(n_sub.max(initial=1)))
    sub_ids = np.full((len(enc), width), -1, dtype=np.int32)
    for i, e in enumerate(enc):
        ids = np.asarray(e.subtoken_ids, dtype=np.int32)
        sub_ids[i, : ids.size] = ids
    return {
        "n_subtokens": n_sub,
        "token_start": np.array([int(t.min()) for t in targets], dtype=np.int32),
        "token_end": np.array([int(t.max()) + 1 for t in targets], dtype=np.int32),
        "n_tokens": np.array([len(e.input_ids) for e in enc], dtype=np.int32),
        "subtoken_ids": sub_ids,
        "word": np.array([item.word for item in suite.items], dtype=object),
        "context": np.array([item.context for item in suite.items], dtype=object),
    }


def _item(context: str, word: str, nth: int = 0, **labels) -> Item:
    start = -1
    for _ in range(nth + 1):
        start = context.index(word, start + 1)
    return Item(context=context, word=word, char_start=start, char_end=start + len(word),
                labels=labels, setting="s\u200b" if labels.get("tag") == "nul" else "bleached")


def test_coordinates_equal_the_item_by_item_layout(gpt2_runner):
    long = " ".join(["filler"] * 400) + " the unbelievably long tail"  # cut to the model's window
    items = [
        _item("This is love.", "love", tag="a", score=1.5),
        _item("Unbelievably, antidisestablishmentarianism won.\x00", "antidisestablishmentarianism",
              tag="nul", score=float("nan")),
        _item("This is love.", "love", tag="b", score=2.0),  # a repeated key
        _item("love and love again\x00", "love", 1, tag="c\u200b", score=-1.0),  # the 2nd "love"
        _item(long, "unbelievably", tag="", score=0.0),
        _item("This is love.", "This", tag="a", score=1.0),
        _item("Ça va, naïve café?", "naïve", tag="é", score=3.0),
    ]
    suite = Suite(name="coords", items=items)
    plan = Plan.build(gpt2_runner, suite, bos=None)
    coords = item_coords(suite, plan, [0, 1], ["mean"])
    expected = _reference(suite, plan)
    for name, values in expected.items():
        got = coords[name].values
        assert got.dtype == values.dtype, name
        assert got.shape == values.shape and (got == values).all(), name
    assert len(plan.keys) < len(items) and (expected["n_subtokens"] > 1).any()
    assert "cut_start" in coords  # the long context was cut around its target
    # the items' own strings: a context's trailing NUL kept (a label or setting cannot hold
    # one: suites refuse control characters there), nothing padded
    assert coords["tag"].values.dtype == object and coords["tag"].values[3] == "c\u200b"
    assert coords["context"].values[3] == "love and love again\x00"
    assert coords["setting"].values[1] == "s\u200b" and coords["context"].values[4] == long
    assert np.isnan(coords["score"].values[1]) and coords["score"].values.dtype == np.float64


def test_columns_hold_the_items_strings_without_a_fixed_width():
    items = [Item(context="x" * 5000, word="x", char_start=0, char_end=1),
             *[Item(context="y\x00", word="y", char_start=0, char_end=1, labels={"k": "v\u200b"})
               for _ in range(3)]]
    columns = Suite(name="w", items=items).columns()
    assert columns["context"].dtype == object and columns["context"][1] == "y\x00"
    assert columns["k"].tolist() == ["", "v\u200b", "v\u200b", "v\u200b"]
    assert columns["context"].nbytes == 4 * 8  # references, not 4 x 5000 characters x 4 bytes
