"""Hostile inputs: only EmbErrors may escape the readers of users' files (issue 7).

The first tests are the crash signatures found by hand and by an earlier fuzzer (each ended in a
raw traceback); the hypothesis tests then throw generated suite documents, suite files, lexicon
CSVs and corpus JSONL lines at the readers. The hypothesis runs are bounded and derandomized
(the same examples on every run and every machine), so CI stays fast and stable.
"""

from __future__ import annotations

import datetime
import json
import math
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from emb.corpus.in_memory import load_corpus
from emb.errors import CorpusError, EmbError, LexiconError, SuiteError
from emb.stimuli.lexicon import load_lexicon
from emb.stimuli.suites import BUILTIN_SUITES, Suite, load_suite

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

NINES_400, NINES_5000 = "9" * 400, "9" * 5000


def _suite_json(item_extra: str = "", top_extra: str = "") -> str:
    item = '{"context": "love is all", "word": "love"' + item_extra + "}"
    return '{"name": "s"' + top_extra + ', "items": [' + item + "]}"


def _suite_yaml(item_extra: str = "", top_extra: str = "") -> str:
    return f"name: s\n{top_extra}items:\n- {{context: love is all, word: love{item_extra}}}\n"


BILLION_LAUGHS = (
    "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]\n"
        for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "name: s\nitems: [{context: love, word: love, labels: {x: *i}}]\n"
)

# (file name, text, what the message must say); every one ended in a traceback before issue 7.
CRASHES = [
    ("float-span.json", _suite_json(', "span": [0.0, 4]'), r"span \[0\.0, 4\] must hold whole"),
    ("float-span.yaml", _suite_yaml(", span: [0, 4.0]"), r"span \[0, 4\.0\] must hold whole"),
    ("float-occurrence.json", _suite_json(', "occurrence": 1.0'), "occurrence 1.0 must be a whole"),
    ("400-digits.json", _suite_json(f', "labels": {{"x": {NINES_400}}}'), "integer of 400 digits"),
    ("400-digits.yaml", _suite_yaml(f", labels: {{x: {NINES_400}}}"), "integer of 400 digits"),
    ("5000-digits.json", _suite_json(f', "labels": {{"x": {NINES_5000}}}'), "5,000 digits"),
    ("5000-digits.yaml", _suite_yaml(f", labels: {{x: {NINES_5000}}}"), "5,000 characters"),
    ("deep.json", "[" * 100_000 + "]" * 100_000, "nested deeper than"),
    ("deep.yaml", "[" * 100_000 + "]" * 100_000, "nested deeper than 100 levels"),
    ("deep-dict.yaml", "a: {" * 50_000 + "}" * 50_000, "nested deeper than 100 levels"),
    ("date-key.yaml", _suite_yaml(", labels: {2020-01-01: 1}"), r"labels\[\"2020-01-01\"\]: name"),
    ("int-key.yaml", _suite_yaml(", 3: x"), r"\$\.items\[0\] has the key 3 \(an integer\)"),
    ("int-key-top.yaml", _suite_yaml(top_extra="1: 2\n"), r"\$ has the key 1 \(an integer\)"),
    ("null-key.yaml", _suite_yaml(", labels: {~: 1}"), r"has the key None \(null\)"),
    ("circular.yaml", "&a [*a]\n", "found the alias \\*a: aliases are not allowed"),
    ("circular-item.yaml", "name: s\nitems: &i\n- {context: a, word: a, labels: *i}\n", "alias"),
    ("billion-laughs.yaml", BILLION_LAUGHS, "found the alias \\*a: aliases are not allowed"),
    ("inf.yaml", _suite_yaml(", labels: {x: .inf}"), r"\$\.items\[0\]\.labels\.x is infinity"),
    ("minus-inf.json", _suite_json(', "labels": {"x": -Infinity}'), "is -infinity"),
    ("1e400.json", _suite_json(', "labels": {"x": 1e400}'), "is infinity"),
    (
        "parameters-inf.yaml",
        _suite_yaml(top_extra="generator: {name: vast, parameters: {a: [.inf]}}\n"),
        r"\$\.generator\.parameters\.a\[0\] is infinity",
    ),
    (
        "parameters-nan.json",
        _suite_json(top_extra=', "generator": {"name": "g", "parameters": {"a": NaN}}'),
        r"\$\.generator\.parameters\.a is NaN",
    ),
    ("binary.yaml", _suite_yaml(", labels: {x: !!binary aGk=}"), "!!binary \\(binary data\\)"),
    ("timestamp.yaml", _suite_yaml(", labels: {x: !!timestamp 2020-13-45}"), "!!timestamp"),
    ("set.yaml", "name: !!set {a}\nitems: []\n", "!!set"),
    ("python.yaml", "name: !!python/object/apply:os.system [true]\n", "could not determine"),
    ("surrogate.json", _suite_json(', "labels": {"x": "\\ud800"}'), "unpaired surrogate"),
    ("not-utf8.yaml", b"name: \xff\n", "is not UTF-8 text"),
    ("two-documents.yaml", "name: a\n---\nname: b\n", "expected a single document"),
]


@pytest.mark.parametrize(("name", "text", "message"), CRASHES, ids=[c[0] for c in CRASHES])
def test_crash_signatures_are_suite_errors(tmp_path, name, text, message):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    tracemalloc.start()
    try:
        with pytest.raises(SuiteError, match=message) as caught:
            load_suite(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, peak  # refused before anything blows up (bytes, not seconds)
    text = str(caught.value)
    assert str(path) in text and "Traceback" not in text and len(text) < 2_000
    assert "np." not in text and "set_int_max_str_digits" not in text


@pytest.mark.parametrize("date", ["2020-13-45", "2020-12-01", "2001-12-14t21:59:43.10-05:00"])
def test_yaml_dates_are_strings(tmp_path, date):
    # YAML 1.2 has no timestamp type and a suite is JSON data: a date is the text written.
    path = tmp_path / "dates.yaml"
    path.write_text(_suite_yaml(f", labels: {{recorded: {date}}}"), encoding="utf-8")
    assert load_suite(path).items[0].labels == {"recorded": date}


def test_python_documents_get_the_same_checks():
    def doc(**item):
        return {"name": "s", "items": [{"context": "love is all", "word": "love", **item}]}

    cases = [
        (doc(span=[0.0, 4]), "must hold whole numbers"),
        (doc(span=(0, 4)), r"\(0, 4\) is not of type 'array'"),
        (doc(labels={"x": 10**400}), "integer of 401 digits"),
        (doc(labels={"x": datetime.date(2020, 1, 1)}), r"is a date \(datetime\.date\(2020, 1, 1\)"),
        (doc(labels={datetime.date(2020, 1, 1): 1}), "has the key datetime.date"),
        (doc(labels={("a",): 1}), r"has the key \('a',\) \(a tuple\)"),
        (doc(labels={"x": b"hi"}), r"is binary data \(b'hi'\)"),
        (doc(labels={"x": {1, 2}}), "is a set"),
        (doc(labels={"x": math.inf}), "is infinity"),
        (doc(labels={"x": object()}), "an object of type object"),
    ]
    circular = doc()
    circular["items"][0]["labels"] = {"x": circular}
    cases.append((circular, "contains itself"))
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    cases.append(({"name": "s", "items": deep}, "nested deeper than 100 levels"))
    params = doc()
    params["generator"] = {"name": "vast", "parameters": {"lexica": [1], "missing_random": 5}}
    for document, message in cases:
        with pytest.raises(SuiteError, match=message):
            Suite.from_dict(document)
    # crafted parameters of a known generator load, and its warnings ignore what they cannot use
    suite = Suite.from_dict(params)
    assert BUILTIN_SUITES["vast"].warnings(suite) == ()
    # NaN is a missing label (as null is), in a document as in Python
    assert math.isnan(Suite.from_dict(doc(labels={"x": math.nan})).items[0].labels["x"])


def test_shared_python_objects_are_checked_once():
    labels = {"valence": 5.0}
    shared = [labels] * 9
    for _ in range(30):  # 9**30 paths through the same few objects: linear, not exponential
        shared = [shared] * 9
    items = [{"context": "a", "word": "a", "labels": labels}] * 3
    started = time.perf_counter()
    suite = Suite.from_dict(
        {"name": "s", "items": items, "generator": {"name": "g", "parameters": {"x": shared}}}
    )
    # a hang guard, not a timing: linear is milliseconds, exponential would never end
    assert len(suite) == 3 and time.perf_counter() - started < 120


# --------------------------------------------------------------------------- hypothesis: suites

KEYS = [
    "name",
    "items",
    "generator",
    "description",
    "schema_version",
    "parameters",
    "context",
    "word",
    "span",
    "occurrence",
    "setting",
    "stimulus_set",
    "labels",
    "valence",
    "x",
    "word ",
]

strings = st.one_of(
    st.sampled_from(["love", "Love", "This is {target}", "{target} {target}", "", " ", "a b"]),
    st.text(max_size=12),
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2),
)
numbers = st.one_of(
    st.integers(min_value=-3, max_value=20),
    st.integers(),
    st.sampled_from([400, -400, 5000]).map(lambda n: 10 ** abs(n) * (1 if n > 0 else -1)),
    st.sampled_from([2**1024, 2**1023, 2**1024 - 2**970, 2**1024 - 2**971]),
    st.floats(),
    st.sampled_from([0.0, 4.0, 1.5, -0.0, 1e308, math.inf, -math.inf, math.nan]),
)
odd = st.one_of(
    st.dates(),
    st.binary(max_size=4),
    st.frozensets(st.integers(0, 3), max_size=2),
    st.tuples(st.integers(0, 9), st.integers(0, 9)),
    st.builds(object),
)
keys = st.one_of(
    st.sampled_from(KEYS),
    strings,
    st.integers(-2, 2),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.dates(),
    st.tuples(st.integers(0, 2)),
)
leaves = st.one_of(st.none(), st.booleans(), numbers, strings, odd)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)
# deeper than MAX_DEPTH (100), not so deep that hypothesis cannot print a failing example
deep = st.integers(1, 250).map(lambda n: _deep_list(n))


def _deep_list(depth: int) -> list:
    out: list = []
    for _ in range(depth):
        out = [out]
    return out


def _maybe(strategy, other=values):
    """Mostly the well-formed value, sometimes anything at all."""
    return st.one_of(strategy, strategy, strategy, other)


items = st.fixed_dictionaries(
    {
        "context": _maybe(strings),
        "word": _maybe(st.sampled_from(["love", "Love", "a b"]) | strings),
    },
    optional={
        "span": _maybe(
            st.lists(_maybe(st.integers(-1, 20), numbers), min_size=0, max_size=3), values | deep
        ),
        "occurrence": _maybe(st.integers(-1, 4), numbers),
        "setting": _maybe(strings),
        "stimulus_set": _maybe(strings),
        "labels": _maybe(
            st.dictionaries(
                _maybe(st.sampled_from(["valence", "x", "ok_1"]), keys),
                _maybe(numbers | strings | st.none()),
                max_size=3,
            )
        ),
        "extra": values,
    },
)
documents = st.one_of(
    st.fixed_dictionaries(
        {
            "name": _maybe(st.sampled_from(["s", "my-suite", "a.b_c"]) | strings),
            "items": _maybe(st.lists(_maybe(items), min_size=0, max_size=4), values | deep),
        },
        optional={
            "generator": _maybe(
                st.fixed_dictionaries(
                    {
                        "name": _maybe(st.sampled_from(["vast", "weat", "g"])),
                        "parameters": _maybe(st.dictionaries(keys, values, max_size=3), deep),
                    }
                )
            ),
            "description": _maybe(strings),
            "schema_version": _maybe(st.just(1), numbers),
            "extra": values,
        },
    ),
    values,
    deep,
)


@FUZZ
@given(doc=documents)
@example(doc={"name": "s", "items": [{"context": "love is all", "word": "love", "span": [0.0, 4]}]})
@example(doc={"name": "s", "items": [{"context": "love", "word": "love", "occurrence": 1.0}]})
@example(doc={"name": "s", "items": [{"context": "love", "word": "love", "labels": {"x": 9**420}}]})
@example(doc={"name": "s", "items": [{"context": "love", "word": "love", "labels": {1: 1}}]})
@example(
    doc={"name": "s", "items": [{"context": "love", "word": "love", "labels": {"x": math.inf}}]}
)
@example(doc={"name": "s", "items": [{"context": "a", "word": "a"}], 1: 2})
def test_only_suite_errors_escape_from_dict(doc):
    try:
        suite = Suite.from_dict(doc)
    except EmbError:
        return
    suite.content_hash()
    Suite.from_dict(json.loads(json.dumps(suite.to_dict(), allow_nan=False)))


# --------------------------------------------------------------------------- hypothesis: files


class Raw(str):
    """Text written into a suite file as it is: a YAML or JSON token, not a quoted string."""


# Scalars and keys as a user could type them; most were a traceback once.
RAW_VALUES = [
    "0.0",
    "4.0",
    "1.0",
    "-0",
    "1e400",
    "-1e400",
    "9" * 400,
    "-" + "9" * 400,
    "9" * 5000,
    ".inf",
    "-.inf",
    ".nan",
    "NaN",
    "Infinity",
    "-Infinity",
    "2020-13-45",
    "2020-01-01",
    "2001-12-14t21:59:43.10-05:00",
    "!!timestamp 2020-01-01",
    "!!binary aGk=",
    "!!set {a}",
    "!!omap [a: 1]",
    "!!python/name:os.system",
    "!!str 1",
    "!!float 1",
    "!!int 1.5",
    "&a [1]",
    "*a",
    "&a [*a]",
    "yes",
    "no",
    "on",
    "~",
    "null",
    "true",
    "0x1F",
    "0o17",
    "0b101",
    "1_000",
    "1:20",
    '"\\ud800"',
    '"a\\udc00b"',
    '"\\u0000"',
    "[" * 150 + "]" * 150,
    "[" * 3000 + "]" * 3000,
    "{a: " * 120 + "1" + "}" * 120,
    "{1: 2}",
    "{2020-01-01: 1}",
    "{? [a]: 1}",
    "{[a]: 1}",
    "[1, 2",
    "{",
    "'",
]
RAW_KEYS = ["1", "2020-01-01", "~", "true", "1.5", ".inf", "[a]", "? [a]", "*a", "&k x", "<<"]
raw_values = st.integers(0, len(RAW_VALUES) - 1).map(lambda i: Raw(RAW_VALUES[i]))
raw_keys = st.integers(0, len(RAW_KEYS) - 1).map(lambda i: Raw(RAW_KEYS[i]))
# Syntax noise inserted anywhere in the text (by index: a strategy's repr would hold them all).
TOKENS = [
    "&a ",
    "*a",
    "<<: *a",
    "\t",
    "\x00",
    "\\",
    '"',
    "'",
    "#",
    ": ",
    "- ",
    "? ",
    ", ",
    "%YAML 1.1\n---\n",
    "\n---\n",
    "\n",
    "  ",
    "\ufeff",
    "\u2028",
    "]",
    "}",
    "[",
    "{",
]
tokens = st.integers(0, len(TOKENS) - 1).map(TOKENS.__getitem__)


def _flow(value) -> str:
    """JSON text, also YAML flow style, with Raw values written as they are."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flow(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(_flow, value)) + "]"
    return json.dumps(value)


text_scalars = st.one_of(
    raw_values,
    st.integers(-2, 20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["love", "Love", "love is all", "This is {target}", "", "s"]),
    st.text(max_size=8),
    st.none(),
    st.booleans(),
)
text_values = st.recursive(
    text_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(KEYS) | raw_keys, inner, max_size=3),
    ),
    max_leaves=8,
)
text_items = st.fixed_dictionaries(
    {
        "context": _maybe(
            st.sampled_from(["love is all", "I love love", "This is {target}"]), text_values
        ),
        "word": _maybe(st.sampled_from(["love", "Love"]), text_values),
    },
    optional={
        "span": _maybe(
            st.lists(_maybe(st.integers(0, 12), raw_values), min_size=2, max_size=2), text_values
        ),
        "occurrence": _maybe(st.integers(1, 3), raw_values),
        "setting": _maybe(st.sampled_from(["bleached", "random"]), text_values),
        "labels": _maybe(
            st.dictionaries(
                _maybe(st.sampled_from(["valence", "x"]), raw_keys),
                _maybe(st.floats(-9, 9) | st.text(max_size=4), raw_values),
                max_size=3,
            ),
            text_values,
        ),
        Raw("3"): text_values,
    },
)
text_documents = st.fixed_dictionaries(
    {
        "name": _maybe(st.just("s"), text_values),
        "items": _maybe(st.lists(text_items, min_size=1, max_size=3), text_values),
    },
    optional={
        "generator": st.fixed_dictionaries(
            {"name": _maybe(st.sampled_from(["vast", "g"]), text_values)},
            optional={
                "parameters": _maybe(
                    st.dictionaries(st.sampled_from(KEYS) | raw_keys, text_values, max_size=3),
                    text_values,
                )
            },
        ),
        "description": _maybe(st.just("d"), text_values),
        "schema_version": _maybe(st.just(1), raw_values),
        Raw("1"): text_values,
    },
)


@st.composite
def suite_texts(draw):
    text = _flow(draw(text_documents))
    if draw(st.integers(0, 4)) == 0:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(tokens) + text[at:]
    return draw(st.sampled_from(["json", "yaml", "yml", "txt"])), text


@FUZZ
@given(case=suite_texts())
@example(case=("yaml", BILLION_LAUGHS))
@example(case=("yaml", _suite_yaml(", labels: {x: 2020-13-45}")))
@example(case=("yaml", _suite_yaml(", labels: {x: .inf}")))
def test_only_suite_errors_escape_load_suite(tmp_path_factory, case):
    kind, text = case
    path = tmp_path_factory.mktemp("fuzz") / f"suite.{kind}"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        suite = load_suite(path)
    except EmbError as err:
        assert isinstance(err, SuiteError) and str(path) in str(err)
        return
    suite.content_hash()
    Suite.from_dict(json.loads(json.dumps(suite.to_dict(), allow_nan=False)))


# --------------------------------------------------------------------------- hypothesis: lexica

CELLS = [
    "love",
    "Love",
    "",
    " ",
    "5",
    "5.5",
    "1e400",
    "-1e400",
    "nan",
    "inf",
    "-inf",
    "NaN",
    "9" * 400,
    "9" * 5000,
    "0x10",
    "1,5",
    '"a,b"',
    '"',
    "null",
    "None",
    "\x00",
    "é",
    "\ufeff",
    "es",
    "tr",
]
HEADER = ["word", "valence", "arousal", "dominance", "language", "Word", "VALENCE", "x", ""]


@st.composite
def lexicon_texts(draw):
    cell = st.one_of(st.sampled_from(CELLS), st.text(max_size=6))
    header = draw(st.lists(st.sampled_from(HEADER) | st.text(max_size=5), min_size=0, max_size=5))
    rows = draw(st.lists(st.lists(cell, min_size=0, max_size=6), max_size=6))
    sep = draw(st.sampled_from([",", "\t", ";"]))
    lines = [sep.join(header), *(sep.join(row) for row in rows)]
    return sep, "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


@FUZZ
@given(
    case=lexicon_texts(),
    scale=st.one_of(st.none(), st.sampled_from(["1,9", "9,1", "a,b", "1e400,2", (1, 10**400)])),
    language=st.one_of(st.none(), st.sampled_from(["es", "zz"])),
    duplicates=st.one_of(st.none(), st.sampled_from(["first", "mean", "bogus"])),
)
@example(case=(",", "word,valence\nlove,1e400\n"), scale=None, language=None, duplicates=None)
@example(case=(",", "word,valence\nlove,5\n"), scale=(1, 10**400), language=None, duplicates=None)
def test_only_lexicon_errors_escape_load_lexicon(
    tmp_path_factory, case, scale, language, duplicates
):
    sep, text = case
    path = tmp_path_factory.mktemp("lex") / ("lex.tsv" if sep == "\t" else "lex.csv")
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        lexicon = load_lexicon(path, scale=scale, language=language, duplicates=duplicates)
    except LexiconError as err:
        assert "np." not in str(err)
        return
    assert all(math.isfinite(v) for v in lexicon.valence)
    lexicon.rescaled()


# --------------------------------------------------------------------------- hypothesis: corpora


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "line 2: nested too deeply for the JSON parser"),
        (f'{{"text": "a", "n": {NINES_5000}}}', "line 2: holds an integer of over 4,300 digits"),
        ('{"text": "a \\ud800"}', r"line 2: field 'text' holds an unpaired surrogate '\\ud800'"),
        ('{"text": ["a"]}', r"line 2: field 'text' is a list, not a string; give --text-field"),
        ('{"body": "a"}', r"line 2: no 'text' field \(found \['body'\]\); give --text-field KEY"),
    ],
)
def test_corpus_crash_signatures_are_corpus_errors(tmp_path, line, message):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"text": "A sentence."}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=message):
        load_corpus(path)


def test_lexicon_crash_signatures_are_lexicon_errors(tmp_path):
    path = tmp_path / "lex.csv"
    path.write_text(f"word,valence\nlove,{NINES_5000}\n", encoding="utf-8")
    with pytest.raises(LexiconError, match=r"1 valence rating\(s\) are empty or not numbers"):
        load_lexicon(path)
    path.write_text("word,valence\nlove,5\n", encoding="utf-8")
    with pytest.raises(LexiconError, match=r"must be a pair LO,HI of numbers .* got \(1, 1000"):
        load_lexicon(path, scale=(1, 10**400))
    with pytest.raises(LexiconError, match="must have finite LO < HI, got \\(1, inf\\)"):
        load_lexicon(path, scale="1,1e400")


@st.composite
def jsonl_lines(draw):
    doc = draw(
        st.one_of(st.fixed_dictionaries({"text": _maybe(strings, text_values)}), text_values)
    )
    line = _flow(doc)
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(line)))
        line = line[:at] + draw(tokens) + line[at:]
    return line


@FUZZ
@given(lines=st.lists(jsonl_lines(), min_size=1, max_size=4))
@example(lines=['{"text": "\\ud800"}', '{"text": "a"}'])
def test_only_corpus_errors_escape_the_jsonl_reader(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
    try:
        corpus = load_corpus(path)
    except CorpusError as err:
        assert str(path) in str(err)
        return
    for sentence in corpus.sentences:
        sentence.encode("utf-8")


@pytest.mark.parametrize(
    ("name", "text", "reader", "message"),
    [
        (
            "deep.jsonl",
            "[" * 100_000 + "]" * 100_000,
            "read_generated_examples",
            "line 1 is nested",
        ),
        (
            "big.jsonl",
            '{"term": "a", "n": ' + NINES_5000 + "}",
            "read_generated_examples",
            "too long",
        ),
        (
            "deep.json",
            "[" * 100_000 + "]" * 100_000,
            "read_populations",
            "groups file .* nested deeper than the JSON parser",
        ),
        (
            "dictionary.csv",
            'dimension,term,direction,examples\nMorality,kind,high,"' + "[" * 100_000 + '"\n',
            "read_dictionary",
            r"the examples \(a JSON list of sentences.*\) is nested deeper",
        ),
    ],
)
def test_stereotype_files_too_deep_or_too_long_are_suite_errors(
    tmp_path, name, text, reader, message
):
    from emb.stimuli.suites import stereotype

    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError, match=message):
        getattr(stereotype, reader)(path)
