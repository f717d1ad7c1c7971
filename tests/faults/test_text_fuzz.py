"""The hostile user's campaign on text: every string a user controls, read silently wrong or not.

Fields attacked: a suite file's context, word, setting, stimulus_set, label names and values and
suite name; a WEAT test file (test names, groups, words, label filters) and ``--x/--y/--a/--b``;
the word lists read by the built-in generators (lexicon CSV, polar-word JSON, word-pair CSV).
Strings thrown at them: NUL and other control characters (C0, DEL, C1; tab, ``\\r\\n``), lone
surrogates (JSON's ``"\\ud800"``, which UTF-8 cannot encode), outer whitespace, composed and
decomposed forms of one word (NFC ``'café'`` and NFD ``'cafe\\u0301'``), zero-width characters,
a byte-order mark and a right-to-left mark inside a word, a leading combining mark, right-to-left
script, long words and contexts.

Every input ends one of two ways:

- kept exactly, end to end: ``emb extract`` (a tiny random GPT-2, a child process) stores the
  suite's strings as given (the item columns equal :meth:`Suite.columns`), ``emb analyze``'s
  tables, netCDF and JSON sidecar show them as given, and two inputs that differ stay two;
- refused where it is first read, with one ``Error:`` line naming the file, the item or line and
  the field, exit 1, nothing written.

The rule: words, settings, stimulus sets, label values, test names and word-
list entries are printable text, so a control character in one is refused (numpy's fixed-width
text drops a trailing NUL: ``'he\\x00'`` would have become ``'he'``, merged with it); words,
settings and stimulus sets have no outer whitespace (``'he '`` and ``'he'`` print alike, and the
command line trims ``--x 'he '``); a context holds any Unicode text, control characters included
(the model reads it as given). Two Unicode forms of one name are kept apart (a tokenizer gives
them different tokens) with a warning.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from emb._pair_files import read_pair_file
from emb.analyses.wordsets.tests_file import custom_test, parse_tests
from emb.errors import AnalysisError, EmbWarning, LexiconError, SuiteError
from emb.files.documents import control_character
from emb.stimuli.lexicon import load_lexicon
from emb.stimuli.suites import Item, Suite, load_suite
from tests._hostile import Outcome, assert_refused, run_emb
from tests.analyses._synthetic import weat_dataset

NFC, NFD = "caf\u00e9", "cafe\u0301"

#: (field, value) pairs refused at suite load: control characters, lone surrogates, outer space.
REFUSED = [
    ("word", "he\x00"), ("word", "\x00he"), ("word", "he\tshe"), ("word", "he\r\n"),
    ("word", "he\x7f"), ("word", "he\x85"), ("word", "he\x1b[31m"), ("word", "he\ud800"),
    ("word", " he"), ("word", "he\u00a0"), ("word", "he\u2028"),
    ("setting", "plain\x00"), ("setting", "plain\n"), ("setting", "\udc00"), ("setting", "plain "),
    ("stimulus_set", "X\x00"), ("stimulus_set", "X\r"), ("stimulus_set", "\ud83d"),
    ("stimulus_set", " X"),
    ("label", "a\x00"), ("label", "a\tb"), ("label", "\x9b"), ("label", "a\udfff"),
    ("context", "This is {target}.\ud800"),
]


def _items(field: str, value: str) -> list[dict]:
    """Two plain items, then one with ``value`` in ``field`` (the third: $.items[2])."""
    ok = [{"context": "This is {target}.", "word": w, "labels": {"role": "x"}}
          for w in ("love", "war")]
    hostile: dict = {"context": "This is {target}.", "word": "he", "labels": {"role": "x"}}
    if field == "label":
        hostile["labels"] = {"role": value}
    else:
        hostile[field] = value
    return [*ok, hostile]


def _write_suite(path: Path, items: list[dict], name: str = "hostile") -> Path:
    # ensure_ascii: a lone surrogate travels as JSON's escape, as a user's file would carry it
    path.write_text(json.dumps({"name": name, "items": items}, ensure_ascii=True), encoding="utf-8")
    return path


# -- suite files: refused at load, naming the item and the field --------------------------------
@pytest.mark.parametrize(("field", "value"), REFUSED, ids=[f"{f}-{ascii(v)}" for f, v in REFUSED])
def test_suite_refuses_text_that_cannot_be_kept(tmp_path, field, value):
    """Was (control characters, outer whitespace): accepted; a word 'he\\x00' was read by the
    analyses as 'he' (numpy's '<U' drops trailing NULs), 'he ' printed as 'he'."""
    path = _write_suite(tmp_path / "s.json", _items(field, value))
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    message = str(err.value)
    assert "\n" not in message, message
    assert "$.items[2]" in message, message
    assert (field if field != "label" else "role") in message, message
    assert len(message) < 600, message


def test_suite_refuses_a_lone_surrogate_in_the_suite_name_and_a_label_name(tmp_path):
    path = _write_suite(tmp_path / "s.json", _items("word", "he"), name="ho\ud800")
    with pytest.raises(SuiteError, match="name"):
        load_suite(path)
    items = _items("word", "he")
    items[2]["labels"] = {"r\ud800": "x"}
    with pytest.raises(SuiteError, match=r"items\[2\]"):
        load_suite(_write_suite(tmp_path / "t.json", items))
    items[2]["labels"] = {"r\x00": "x"}
    with pytest.raises(SuiteError, match=r"items\[2\]"):
        load_suite(_write_suite(tmp_path / "u.json", items))


def test_items_built_in_python_meet_the_same_rule():
    for field in ("word", "setting", "stimulus_set"):
        kwargs = {"context": "he", "word": "he", "char_start": 0, "char_end": 2, field: "he\x00"}
        with pytest.raises(SuiteError, match=field):
            Item(**kwargs)
    with pytest.raises(SuiteError, match="setting is empty"):  # as the schema has it
        Item(context="he", word="he", char_start=0, char_end=2, setting="")
    with pytest.raises(SuiteError, match="label 'role'"):
        Item(context="he", word="he", char_start=0, char_end=2, labels={"role": "a\x00"})
    # a context may hold control characters (the model reads them): kept exactly
    item = Item(context="he\x00\r\n\t", word="he", char_start=0, char_end=2)
    assert Suite(name="s", items=[item]).columns()["context"][0] == "he\x00\r\n\t"


# -- what is kept: distinct inputs stay distinct ---------------------------------------------------
#: Words that look alike or hide characters, all allowed, all distinct; with settings and
#: stimulus sets of the same kind.
X = [NFC, NFD]
Y = ["he", "he\u200b"]                                # a zero-width space
A = ["\u200fright", "\ufeffbom", "x" * 100]           # a right-to-left mark, a BOM, a long word
B = ["\u0301ok", "\u05e2\u05d1\u05e8\u05d9\u05ea", "good"]  # a leading combining mark, Hebrew
SETTINGS = {"plain": "This is {target}.", "nul": "This is {target}.\x00",
            "crlf": "This is {target}.\r\n", "lf": "This is {target}.\n",
            NFC: "Here {target} is.", NFD: "There {target} is."}


def _kept_suite() -> dict:
    items = []
    for role, words in zip("XYAB", (X, Y, A, B), strict=True):
        for word in words:
            for setting, context in SETTINGS.items():
                items.append({"context": context, "word": word, "setting": setting,
                              "stimulus_set": role + ("\u200d" if role == "A" else ""),
                              "labels": {"role": role, "note": NFC if word == NFC else NFD}})
    return {"name": "weat", "items": items}


def test_distinct_strings_stay_distinct_in_a_suite(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_kept_suite(), ensure_ascii=True), encoding="utf-8")
    with pytest.warns(EmbWarning, match="two Unicode forms") as caught:
        suite = load_suite(path)
    message = str(caught[0].message)
    assert ascii(NFC) in message and ascii(NFD) in message, message
    columns = suite.columns()
    assert list(dict.fromkeys(columns["word"])) == [*X, *Y, *A, *B]
    assert list(dict.fromkeys(columns["setting"])) == list(SETTINGS)
    assert set(columns["context"]) >= {"This is he.\x00", "This is he.\r\n", "This is he.\n"}


def test_one_unicode_form_warns_nothing(tmp_path):
    doc = _kept_suite()
    for item in doc["items"]:
        for key in ("word", "setting", "context"):
            item[key] = unicodedata.normalize("NFC", item[key])
    doc["items"] = list({json.dumps(i): i for i in doc["items"]}.values())
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbWarning)
        Suite.from_dict(doc)


# -- word lists read by the generators and the analyses ---------------------------------------------
def test_lexicon_file_refuses_a_word_with_a_control_character(tmp_path):
    path = tmp_path / "lex.csv"
    path.write_bytes(b"word,valence\nhe\x00,5\nshe,3\nit,2\nthey\x1b,4\n")
    with pytest.raises(LexiconError) as err:
        load_lexicon(path)
    message = str(err.value)
    assert "2 word(s)" in message and "line 2" in message and "line 5" in message, message
    # NFC and NFD forms of one word in a lexicon are two words, both kept
    path.write_text(f"word,valence\n{NFC},5\n{NFD},3\nit,2\n", encoding="utf-8")
    assert list(load_lexicon(path).words) == [NFC, NFD, "it"]


@pytest.mark.parametrize("layout", ["csv", "tsv"])
def test_pair_file_refuses_a_word_with_a_control_character(tmp_path, layout):
    path = tmp_path / f"pairs.{layout}"
    if layout == "csv":
        path.write_text('word1,word2,score\ncat,dog,5\nhe\x01,she,3\n"a\nb",c,2\n', encoding="utf-8")
    else:
        path.write_text("cat\tdog\t5\nhe\x01\tshe\t3\n", encoding="utf-8")
    with pytest.raises(SuiteError) as err:
        read_pair_file(path, error=SuiteError, layout=layout)
    message = str(err.value)
    assert f"line {3 if layout == 'csv' else 2}:" in message and "U+0001" in message, message
    if layout == "csv":
        assert "line 5" in message and "U+000A" in message, message  # the quoted line break


def test_weat_test_definitions_refuse_control_characters():
    """Was: 'he\\x00' reported missing from the suite, with advice to add it there (which the
    suite now refuses); a test named 't\\x00' beside 't' made two rows that print 't'."""
    ds = weat_dataset()
    words = {role: [str(w) for w in np.unique(ds["word"].values)[i::4][:2]]
             for i, role in enumerate("XYAB")}
    parse_tests({"tests": {"t": words}}, ds)  # the plain test is accepted
    cases = {
        "tests.t.Y[1]": {"t": {**words, "Y": [words["Y"][0], "he\x00"]}},
        "has the key": {"t\x00": words},
        "tests.t.A.name": {"t": {**words, "A": {"name": "A\n", "words": words["A"]}}},
        "tests.t.B.labels.stimulus_set": {
            "t": {**words, "B": {"labels": {"stimulus_set": "b\x7f"}}}},
    }
    for place, tests in cases.items():
        with pytest.raises(AnalysisError) as err:
            parse_tests({"source": "tests.yaml", "tests": tests}, ds)
        assert place in str(err.value) and "control character" in str(err.value), str(err.value)
    with pytest.raises(AnalysisError, match=r"word list y\[0\]"):
        custom_test(["a"], ["b\x00"], ["c"], ["d"], None)


def test_control_character_names_each_class():
    for char in [*map(chr, range(0x20)), "\x7f", *map(chr, range(0x80, 0xA0))]:
        assert control_character(f"a{char}") is not None, ascii(char)
    for text in ["a b", NFD, "\u200b\u200c\u200d\u200e\u200f\ufeff", "\u2028", "日本語", "😀"]:
        assert control_character(text) is None, ascii(text)


# -- end to end through the command line -----------------------------------------------------------
def _extract(model: Path, suite: Path, store: Path, *extra: str) -> Outcome:
    return run_emb("extract", "--model", model, "--suite", suite, "--store", store, "-q", *extra,
                   timeout=180)


@pytest.fixture(scope="module")
def kept(tmp_path_factory, tiny_gpt2_dir) -> dict:
    """The suite of look-alike strings extracted by ``emb extract`` (a child process)."""
    root = tmp_path_factory.mktemp("kept")
    suite = root / "suite.json"
    suite.write_text(json.dumps(_kept_suite(), ensure_ascii=True), encoding="utf-8")
    store = root / "s.zarr"
    outcome = _extract(tiny_gpt2_dir, suite, store)
    assert outcome.code == 0, str(outcome)
    return {"root": root, "suite": suite, "store": store, "extract": outcome}


def test_extract_keeps_every_string_exactly(kept):
    assert "two Unicode forms" in kept["extract"].stderr, str(kept["extract"])
    from emb.store import open_store

    ds = open_store(kept["store"]).dataset("weat")
    with pytest.warns(EmbWarning, match="two Unicode forms"):
        expected = load_suite(kept["suite"]).columns()
    for name in ("word", "context", "setting", "stimulus_set", "role", "note"):
        stored = [str(v) for v in np.asarray(ds[name].values)]
        assert stored == list(expected[name]), name


def test_analyze_keeps_every_string_exactly(kept, tmp_path):
    root = kept["root"]
    tests = root / "tests.json"
    tests.write_text(json.dumps({"tests": {"t": {"X": X, "Y": Y, "A": A, "B": B},
                                           "t\u200b": {"X": X, "Y": Y, "A": A, "B": B}}},
                                ensure_ascii=True), encoding="utf-8")
    out = tmp_path / "weat"
    outcome = run_emb("analyze", "weat", "--store", kept["store"], "--test", tests, "--out", out,
                      "-q", "--no-plots", "--n-permutations", "100", timeout=180)
    assert outcome.code == 0, str(outcome)
    table = pd.read_csv(out / "weat.csv", keep_default_na=False, encoding="utf-8")
    assert list(dict.fromkeys(table["setting"])) == list(SETTINGS)
    assert list(dict.fromkeys(table["test"])) == ["t", "t\u200b"]
    assert set(table[["n_x", "n_y", "n_a", "n_b"]].itertuples(index=False)) == {(2, 2, 3, 3)}
    with xr.open_dataset(out / "weat.nc") as result:
        assert [str(v) for v in result["setting"].values] == list(SETTINGS)
        assert [str(v) for v in result["test"].values] == ["t", "t\u200b"]
    sidecar = json.loads((out / "weat.json").read_text(encoding="utf-8"))
    assert sidecar["attrs"]["words"]["t"] == {"X": X, "Y": Y, "A": A, "B": B}
    # the same settings give the same numbers (the causal model never sees what follows the
    # target): a NUL or a line break after it was not dropped into another setting's rows
    d = table.set_index(["test", "setting", "pooling", "layer"])["effect_size"]
    for setting in ("nul", "crlf", "lf"):
        assert np.allclose(d.xs(setting, level="setting"), d.xs("plain", level="setting"))
    assert not math.isclose(float(d.xs(NFC, level="setting").iloc[-1]),
                            float(d.xs(NFD, level="setting").iloc[-1]))


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_export_gives_back_the_suite_exactly(kept, tmp_path, suffix):
    """suite file -> store -> ``emb suites export`` -> suite file: the same items (the content
    hash: every context, word, setting, stimulus set and label), NUL, CR LF, BOM and all."""
    path = tmp_path / f"exported{suffix}"
    outcome = run_emb("suites", "export", kept["store"], path, "--suite", "weat", timeout=120)
    assert outcome.code == 0, str(outcome)
    with pytest.warns(EmbWarning, match="two Unicode forms"):
        original, exported = load_suite(kept["suite"]), load_suite(path)
    assert exported.content_hash() == original.content_hash()
    assert [i.context for i in exported.items] == [i.context for i in original.items]


def test_extract_refuses_a_nul_in_a_word(tiny_gpt2_dir, tmp_path):
    """Was: accepted; 'he\\x00' and 'he' then one word in every analysis."""
    suite = _write_suite(tmp_path / "s.json", _items("word", "he\x00"))
    store = tmp_path / "s.zarr"
    assert_refused(_extract(tiny_gpt2_dir, suite, store), mentions=("$.items[2]", "word", "U+0000"))
    assert not store.exists()


def test_a_target_too_long_for_the_model_is_quoted_cut(tiny_gpt2_dir, tmp_path):
    """Was: the whole 5,000-character target quoted in the error line."""
    word = "x" * 5000
    suite = _write_suite(tmp_path / "s.json", [{"context": "This is {target}.", "word": word}])
    store = tmp_path / "s.zarr"
    message = assert_refused(_extract(tiny_gpt2_dir, suite, store), mentions=("5,000 characters",))
    assert len(message) < 400, message
    assert not store.exists()


@pytest.mark.slow
@pytest.mark.parametrize(("field", "value"), REFUSED, ids=[f"{f}-{ascii(v)}" for f, v in REFUSED])
def test_extract_refuses_each_hostile_string(tiny_gpt2_dir, tmp_path, field, value):
    """The whole table through ``emb extract`` (a child process each, ~3 s)."""
    suite = _write_suite(tmp_path / "s.json", _items(field, value))
    store = tmp_path / "s.zarr"
    assert_refused(_extract(tiny_gpt2_dir, suite, store, "--dry-run"), mentions=("$.items[2]",))
    assert_refused(_extract(tiny_gpt2_dir, suite, store), mentions=("$.items[2]",))
    assert not store.exists()


def test_word_lists_of_the_generators_are_refused_on_the_command_line(tiny_gpt2_dir, tmp_path):
    lexicon = tmp_path / "lex.csv"
    lexicon.write_bytes(b"word,valence\nhe\x00,5\nshe,3\nit,2\n")
    store = tmp_path / "v.zarr"
    assert_refused(_extract(tiny_gpt2_dir, Path("vast"), store, "--lexicon", lexicon),
                   mentions=(str(lexicon), "line 2"))
    lexicon.write_bytes(b"word,valence\nhe,5\nshe,3\nit,2\n")
    polar = tmp_path / "polar.json"
    polar.write_text(json.dumps({"pleasant": ["good", "nice\x00"], "unpleasant": ["bad", "evil"]}),
                     encoding="utf-8")
    assert_refused(_extract(tiny_gpt2_dir, Path("vast"), store, "--lexicon", lexicon, "--polar",
                            polar), mentions=("pleasant[1]", "U+0000"))
    assert not store.exists()


def test_weat_test_file_with_a_control_character_is_refused(kept, tmp_path):
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps({"tests": {"t": {"X": X, "Y": ["he\x00", "he"], "A": A,
                                                 "B": B}}}), encoding="utf-8")
    out = tmp_path / "out"
    assert_refused(run_emb("analyze", "weat", "--store", kept["store"], "--test", tests, "--out",
                           out, "-q", timeout=180), mentions=("tests.t.Y[0]", "U+0000"))
    assert not out.exists()


def test_intersectional_keeps_a_phrase_ending_in_a_nul():
    """Was: the phrase coordinate read contexts through numpy's '<U', which dropped the NUL
    ('… person\\x00' shown as '… person')."""
    from emb.analyses.intersectional import intersectional
    from tests.analyses._synthetic_intersectional import intersectional_dataset

    ds = intersectional_dataset()
    contexts = np.asarray(ds["context"].values).copy()
    first = np.flatnonzero(np.asarray(ds["stimulus_set"].values) == "experiment3")[0]
    contexts[first] = contexts[first] + "\x00"
    result = intersectional(ds.assign_coords(context=("item", contexts)), n_permutations=50)
    phrases = [str(p) for p in result["phrase"].values]
    assert contexts[first] in phrases
    assert len(set(phrases)) == len(phrases)


def test_a_name_that_prints_alike_is_spelled_out_in_the_hint():
    """Was: "setting ['café'] not in this suite, which has [..., 'café']. Did you mean 'café'?"
    (the suite's NFD form, the user's NFC one): the hint named what the user had typed."""
    from emb.text import did_you_mean, unknown_names

    message = unknown_names("setting", [NFC], ["plain", NFD], "this suite")
    assert ascii(NFD) in message and "other code points" in message, message
    assert ascii("he\u200b") in did_you_mean("he", ["he\u200b", "she"])
    assert did_you_mean("bleachd", ["bleached"]) == " Did you mean 'bleached'?"


def test_stereotype_word_files_refuse_a_control_character(tmp_path):
    """Was: a NUL or ESC in a groups or dictionary CSV reached the suite's items unnamed (the
    groups JSON refused only tab and line breaks)."""
    from emb.stimuli.suites._stereotype_files import read_dictionary, read_populations

    groups = tmp_path / "groups.csv"
    groups.write_text("group,word,kind\nnb,them,pronoun\nnb,they\x00,pronoun\n", encoding="utf-8")
    with pytest.raises(SuiteError, match=r"data row 2, column 'word'.*U\+0000"):
        read_populations(groups)
    as_json = tmp_path / "groups.json"
    as_json.write_text(json.dumps({"rows": [{"group": "nb", "word": "they\x1b", "kind": "pronoun"}]}),
                       encoding="utf-8")
    with pytest.raises(SuiteError, match="row 1"):
        read_populations(as_json)
    dictionary = tmp_path / "dictionary.csv"
    dictionary.write_text("dimension,term,direction\nSociability,friendly\x7f,high\n",
                          encoding="utf-8")
    with pytest.raises(SuiteError, match=r"column 'term'.*U\+007F"):
        read_dictionary(dictionary)


def test_yaml_suites_meet_the_same_rule(tmp_path):
    """YAML's escapes (\\0, \\t, \\x85) reach the same checks as JSON's; its line breaks in a
    context are kept as written (\\r\\n escaped, \\n)."""
    path = tmp_path / "s.yaml"
    for escaped, code in (("\\0", "U+0000"), ("\\t", "U+0009"), ("\\x85", "U+0085")):
        path.write_text(f'name: s\nitems:\n  - {{context: "This is {{target}}.", word: "he{escaped}"}}\n',
                        encoding="utf-8")
        with pytest.raises(SuiteError, match=rf"items\[0\]: word .*{re.escape(code)}"):
            load_suite(path)
    path.write_text('name: s\nitems:\n  - {context: "This is {target}.\\r\\n\\0", word: he}\n',
                    encoding="utf-8")
    assert load_suite(path).items[0].context == "This is he.\r\n\x00"
