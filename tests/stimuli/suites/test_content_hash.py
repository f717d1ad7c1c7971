"""Suite.content_hash: the stored hash of existing stores, so its value must never change."""

from __future__ import annotations

import hashlib
import json
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from emb.stimuli.suites import Item, Suite


def _dumped_hash(suite: Suite) -> str:
    """The hash as first defined: the canonical JSON of every item's to_dict(), dumped whole."""
    document = {"name": suite.name, "items": [item.to_dict() for item in suite.items]}
    text = json.dumps(
        document, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


TRICKY = ['"quoted"', "back\\slash", "tab\tnew\nline\r", "\x00\x01\x1f\x7f", "é ü ß", "\u2028\u2029",
          "😀 𝔘", "日本語", "</script>", ""]


def _printable(text: str) -> str:
    """``text`` without its control characters and outer whitespace, which only a context may
    hold (a label value may have outer whitespace)."""
    return "".join(c for c in text if unicodedata.category(c) != "Cc").strip()


def test_hash_equals_the_dumped_canonical_json_on_varied_suites():
    items = [
        Item(context=f"{extra} love {i}", word="love", char_start=len(extra) + 1,
             char_end=len(extra) + 5, setting=_printable(extra) or "default",
             stimulus_set=_printable(extra),
             labels={"valence": [1.0, -0.0, 1e300, 5e-324, 0.1, float("nan"), 2.0**53][i % 7],
                     "note": _printable(TRICKY[(i + 3) % len(TRICKY)]), "aaa": None})
        for i, extra in enumerate(TRICKY)
    ]
    labelled = Suite(name="varied-1.0_x", items=items, generator="vast",
                     parameters={"seed": 3, "files": ["a"]}, description="d")
    # label keys in another order in some items: sorted in the hash either way
    shuffled = Suite(name="s", items=[
        Item(context="a b", word="a", char_start=0, char_end=1, labels={"z": 1.0, "a": "x"}),
        Item(context="a b", word="b", char_start=2, char_end=3, labels={"a": "y", "z": 2.5}),
    ])
    bare = Suite(name="bare", items=[Item(context="x", word="x", char_start=0, char_end=1)])
    from_doc = Suite.from_dict({"name": "doc", "items": [
        {"context": "Ça {target}", "word": "va", "labels": {"x": 1, "y": None}},
        {"context": "I love love songs", "word": "love", "occurrence": 2, "labels": {"x": -3}},
    ]})
    for suite in (labelled, shuffled, bare, from_doc):
        assert suite.content_hash() == _dumped_hash(suite)
    # what does not enter the hash still does not
    assert Suite(name="varied-1.0_x", items=items).content_hash() == labelled.content_hash()


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
_name = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=6).filter(
    lambda text: text == text.strip())
_word = st.text(st.characters(blacklist_categories=("Cs", "Z", "Cc")), min_size=1, max_size=4)
_item = st.builds(
    lambda pre, word, post, setting, sset, s, f: Item(
        context=pre + word + post, word=word, char_start=len(pre), char_end=len(pre) + len(word),
        setting=setting, stimulus_set=sset, labels={"s_label": s, "f_label": f}),
    _text, _word, _text, _name.filter(bool), _name,
    st.one_of(st.none(), _name),
    st.one_of(st.none(), st.floats(allow_infinity=False), st.integers(-(2**53), 2**53)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_item, min_size=1, max_size=8), st.booleans())
def test_hash_equals_the_dumped_canonical_json_on_random_suites(items, drop_labels):
    if drop_labels:  # no labels at all, or labels some items lack
        items = [Item(context=it.context, word=it.word, char_start=it.char_start,
                      char_end=it.char_end, labels={} if i % 2 else it.labels)
                 for i, it in enumerate(items)]
    suite = Suite(name="random", items=items)
    assert suite.content_hash() == _dumped_hash(suite)
