"""Plan.build keys a suite's items by (context, char span), numbered in order of first use."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from emb.extraction._plan import Plan
from emb.stimuli.suites import Item, Suite


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a b", "b a", "a a b", "é a"]), st.integers(0, 1),
                          st.sampled_from(["x", "y"])), min_size=1, max_size=30))
def test_keys_in_order_of_first_use(rows):
    items = []
    for context, nth, setting in rows:
        starts = [i for i, ch in enumerate(context) if ch == "a"]
        start = starts[min(nth, len(starts) - 1)]
        items.append(Item(context=context, word="a", char_start=start, char_end=start + 1,
                          setting=setting))
    plan = Plan.build(None, Suite(name="k", items=items), bos=None)  # type: ignore[arg-type]
    keys: list[tuple[str, int, int]] = []  # a plain loop, as the plan was first written
    for item in items:
        if item.target_key not in keys:
            keys.append(item.target_key)
    assert plan.keys == keys
    assert all(type(v) is int for key in plan.keys for v in key[1:])
    assert plan.item_key.dtype == np.int64 and plan.first_item.dtype == np.int64
    assert plan.item_key.tolist() == [keys.index(item.target_key) for item in items]
    assert plan.first_item.tolist() == [
        next(i for i, item in enumerate(items) if item.target_key == key) for key in keys]
