"""Property-based fuzzing of the readers of static vectors, word-pair, group, dictionary and lexicon
files (issue 20): whatever the bytes, every outcome is a correct read or one EmbError of the
reader's class, on one line, naming the file.

Static vectors: word2vec binary and text, GloVe, fastText, each plain, .gz, .bz2, .xz or .zip,
built well-formed from drawn words and values (NaN, infinities, values beyond float32 and below
float16) and then, often, damaged (truncated, bytes flipped, tokens inserted) before or after
compression. The crash signatures found while writing these are kept as explicit cases
(``CRASHES``). The runs are bounded and derandomized (the same examples everywhere).
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from emb._pair_files import read_pair_file
from emb.backends.static import load_vectors, read_vectors
from emb.errors import EmbError, LexiconError, ModelError, SuiteError
from emb.files.documents import control_character
from emb.stimuli.lexicon import load_lexicon
from emb.stimuli.suites import Item, Suite
from emb.stimuli.suites._common import read_json
from emb.stimuli.suites.ibd import parse_ibd_data
from emb.stimuli.suites.stereotype import (
    read_dictionary,
    read_generated_examples,
    read_names,
    read_populations,
)

FUZZ = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)

FORMATS = ("word2vec-binary", "word2vec-text", "glove", "fasttext")
SUFFIX = {"word2vec-binary": ".bin", "word2vec-text": ".txt", "glove": ".txt", "fasttext": ".vec"}
COMPRESSIONS = ("", ".gz", ".bz2", ".xz", ".zip")
WORDS = ["love", "hate", "Love", "a b", "é", "x\u00a0y", "{target}", "1", "nan"]
VALUES = [0.0, 1.0, -2.5, 1e-9, -1e-7, 7e4, 1e39, 1e-50, math.nan, math.inf, -math.inf, 65504.0,
          6e-5, 3.4e38]
# bytes a hostile file holds: separators, line ends, NUL, non-UTF-8, numbers a parser trips on
TOKENS = [b" ", b"\n", b"\r\n", b"\t", b"\x00", b"\xff", b"\xe9", b"9" * 30, b"9" * 5000, b"-",
          b"nan", b"inf", b"1e400", b"0x10", b"1_0", b",", b'"', b"#", b"\xef\xbb\xbf", b"PK\x03\x04",
          b"\x1f\x8b", b"BZh9", b"\xfd7zXZ\x00"]


def _one_line(err: EmbError, path: Path) -> None:
    text = str(err)
    assert "\n" not in text, text
    assert path.name in text, text
    assert "np." not in text and "Traceback" not in text, text


def _text_value(value: float) -> str:
    return repr(value) if math.isfinite(value) else {math.inf: "inf", -math.inf: "-inf"}.get(
        value, "nan")


def _compress(data: bytes, compression: str, member: str) -> bytes:
    if compression == ".gz":
        return gzip.compress(data)
    if compression == ".bz2":
        return bz2.compress(data)
    if compression == ".xz":
        return lzma.compress(data)
    if compression == ".zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(member, data)
        return buffer.getvalue()
    return data


@st.composite
def damage(draw, data: bytes) -> bytes:
    """``data`` unchanged, truncated, with bytes flipped or with tokens inserted."""
    how = draw(st.sampled_from(["keep", "keep", "truncate", "flip", "insert"]))
    if how == "truncate" or not data:
        return data[: draw(st.integers(0, len(data)))]
    if how == "flip":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(out) - 1))
            out[at] ^= draw(st.integers(1, 255))
        return bytes(out)
    if how == "insert":
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.sampled_from(TOKENS)) + data[at:]
    return data


@st.composite
def vector_files(draw):
    fmt = draw(st.sampled_from(FORMATS))
    n = draw(st.integers(0, 4))
    dim = draw(st.integers(1, 3))
    words = draw(st.lists(st.sampled_from(WORDS) | st.text(max_size=3), min_size=n, max_size=n))
    value = st.floats(-10, 10, width=32) | st.sampled_from(VALUES) | st.floats(width=32)
    rows = draw(st.lists(st.lists(value, min_size=dim, max_size=dim), min_size=n, max_size=n))
    header = (draw(st.sampled_from([n] * 6 + [n + 1, 0, 10**19, 10**400])),
              draw(st.sampled_from([dim] * 6 + [dim + 1, 0, 2**21])))
    if fmt == "word2vec-binary":
        data = f"{header[0]} {header[1]}\n".encode()
        for word, row in zip(words, rows, strict=True):
            with np.errstate(over="ignore"):  # 1e39 is written as float32's inf, as a file may
                values = np.asarray(row, dtype="<f4").tobytes()
            data += word.encode("utf-8", "surrogatepass") + b" " + values + b"\n"
    else:
        lines = [f"{header[0]} {header[1]}"] if fmt != "glove" else []
        lines += [word + " " + " ".join(_text_value(v) for v in row)
                  for word, row in zip(words, rows, strict=True)]
        data = "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n"
    intact = draw(st.booleans())  # half the files well-formed (their values still hostile)
    if not intact:
        data = draw(damage(data))
    compression = draw(st.sampled_from(COMPRESSIONS))
    member = "v" + SUFFIX[fmt]
    data = _compress(data, compression, member)
    if not intact:
        data = draw(damage(data))
    given = draw(st.sampled_from([None, None, None, fmt, "glove", "word2vec-binary"]))
    wanted = draw(st.just(words) | st.lists(st.sampled_from(WORDS) | st.text(max_size=3),
                                            max_size=4))
    return member + compression, data, given, wanted


# crash signatures found while this fuzzer was written (each an internal error before)
CRASHES = [
    ("v.txt.gz", b"\x1f\x8b\x08\x00" + b"garbage" * 4, None, ["love"]),
    ("v.txt.zip", b"not a zip", None, ["love"]),
    ("v.vec", b"9" * 5000 + b" 2\nlove 1 2\n", None, ["love"]),
    ("v.bin", b"1 " + b"9" * 5000 + b"\n", None, ["love"]),
    # a central directory asking for zip version 8.4 (zipfile: NotImplementedError)
    ("v.bin.zip",
     b"PK\x03\x04\x14\x00\x00\x00\x08\x00|kz]\xf1\x8f\xaa\xcf\x06\x00\x00\x00\x04\x00\x00\x00"
     b"\x05\x00\x00\x00v.bin3P0\xe4\x02\x00PK\x01\x02\x14\x03T\x00\x00\x00\x08\x00|kz]\xf1"
     b"\x8f\xaa\xcf\x06\x00\x00\x00\x04\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00"
     b"\x00\x00\x80\x01\x00\x00\x00\x00v.binPK\x05\x06\x00\x00\x00\x00\x01\x00\x01\x003\x00"
     b"\x00\x00)\x00\x00\x00\x00\x00", None, []),
]


@FUZZ
@given(case=vector_files())
@example(case=CRASHES[0])
@example(case=CRASHES[1])
@example(case=CRASHES[2])
@example(case=CRASHES[3])
@example(case=CRASHES[4])
def test_only_model_errors_escape_the_vectors_reader(tmp_path_factory, case):
    name, data, given, wanted = case
    path = tmp_path_factory.mktemp("vectors") / name
    path.write_bytes(data)
    try:
        read = read_vectors(path, wanted, format=given)
    except ModelError as err:
        _one_line(err, path)
        event("refused")
        return
    event(f"read, {len(read.vectors)} kept")
    for row, vector in read.vectors.values():
        assert vector.dtype == np.float32 and vector.shape == (read.dim,)
        assert np.isfinite(vector).all() and 0 <= row < read.vocab_size
    runner = load_vectors(path, wanted, format=given, allow_missing=True)
    found = [w for w in dict.fromkeys(wanted)  # the words a suite may hold
             if w in runner.vectors and w.strip() == w and w and control_character(w) is None]
    if not found:
        return
    suite = Suite(name="s", items=tuple(
        Item(context=w, word=w, char_start=0, char_end=len(w)) for w in found))
    covered = runner.cover([suite])
    try:
        runner.check_storage(covered, "float16")
    except ModelError as err:
        assert "--storage-dtype float32" in str(err) and "\n" not in str(err)
        return
    stored = runner.embed(runner.encode([w for w in found], [(0, len(w)) for w in found]),
                          out_dtype="float16")
    assert np.isfinite(stored).all()


@pytest.mark.parametrize("case", CRASHES, ids=[c[0] + "-" + str(i) for i, c in enumerate(CRASHES)])
def test_vectors_crash_signatures_are_model_errors(tmp_path, case):
    name, data, given, wanted = case
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ModelError) as caught:
        read_vectors(path, wanted, format=given)
    _one_line(caught.value, path)


# --------------------------------------------------------------------------- text tables

CELLS = ["love", "hate", "", " ", "5", "5.5", "1e400", "nan", "inf", "-inf", "NaN", "9" * 400,
         "0x10", "1,5", '"a,b"', '"', "\x00", "é", "\ufeff", "F", "M", "f", "Female", "name", "noun",
         "pronoun", "female_names", "1", "1.5", "-1", "high", "low", "Sociability", "a.n.01",
         '["A love song"]', "[", "{}", "null"]


@st.composite
def tables(draw, header_words):
    cell = st.sampled_from(CELLS) | st.text(max_size=5)
    header = draw(st.lists(st.sampled_from(header_words) | st.text(max_size=4), max_size=5))
    rows = draw(st.lists(st.lists(cell, max_size=6), max_size=5))
    sep = draw(st.sampled_from([",", "\t", ";"]))
    text = "\n".join([sep.join(header), *(sep.join(r) for r in rows)])
    data = (text + draw(st.sampled_from(["", "\n", "\r\n"]))).encode("utf-8", "surrogatepass")
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "latin-1", "utf-16"]))
    if encoding != "utf-8":
        data = text.encode(encoding, "replace")
    return draw(damage(data))


@FUZZ
@given(data=tables(["word1", "word2", "score", "dataset", "Word1"]),
       layout=st.sampled_from(["csv", "tsv"]))
@example(data=bytes(range(256)), layout="csv")
@example(data=b"word1,word2,score\n", layout="csv")
@example(data="word1,word2,score\ncaf\xe9,tea,1\n".encode("latin-1"), layout="csv")
@example(data=b"word1,word2,score\nlove,hate,nan\n", layout="tsv")
def test_only_suite_errors_escape_the_pair_reader(tmp_path_factory, data, layout):
    path = tmp_path_factory.mktemp("pairs") / ("ws353.csv" if layout == "csv" else "rw.tsv")
    path.write_bytes(data)
    try:
        pairs = read_pair_file(path, error=SuiteError, layout=layout)
    except SuiteError as err:
        _one_line(err, path)
        return
    assert pairs and all(p.word1 and p.word2 and math.isfinite(p.score) for p in pairs)


@FUZZ
@given(data=tables(["group", "word", "kind", "Group"]), kind=st.sampled_from(["csv", "json"]))
def test_only_suite_errors_escape_the_groups_reader(tmp_path_factory, data, kind):
    directory = tmp_path_factory.mktemp("groups")
    if kind == "json":  # the same cells as rows of a JSON document, or the bytes as they are
        path = directory / "groups.json"
        try:
            lines = data.decode("utf-8").splitlines()
            head = lines[0].split(",") if lines else []
            rows = [dict(zip(head, line.split(","), strict=False)) for line in lines[1:]]
            path.write_text(json.dumps({"rows": rows}), encoding="utf-8")
        except UnicodeDecodeError:
            path.write_bytes(data)
    else:
        path = directory / "groups.csv"
        path.write_bytes(data)
    try:
        rows = read_populations(path)
    except SuiteError as err:
        _one_line(err, path)
        return
    assert rows and all(p.group and p.word and p.kind in ("name", "noun", "pronoun") for p in rows)


@FUZZ
@given(data=tables(["name", "sex", "rank", "count"]))
@example(data=b"name,sex,rank\nlove,love,love,love")  # was a TypeError (an index of names)
def test_only_suite_errors_escape_the_names_reader(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("names") / "names.csv"
    path.write_bytes(data)
    try:
        names, _ = read_names(path, ranks=(1, 5))
    except SuiteError as err:
        _one_line(err, path)
        return
    assert {p.group for p in names} == {"female_names", "male_names"}


@FUZZ
@given(data=tables(["dimension", "term", "direction", "synset", "examples", "id"]))
def test_only_suite_errors_escape_the_dictionary_reader(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("dictionary") / "dictionary.csv"
    path.write_bytes(data)
    try:
        senses = read_dictionary(path)
    except SuiteError as err:
        _one_line(err, path)
        return
    assert senses and all(s.term and s.direction in ("high", "low") for s in senses)


@FUZZ
@given(lines=st.lists(
    st.fixed_dictionaries({"term": st.sampled_from(CELLS) | st.integers(),
                           "examples": st.lists(st.sampled_from(CELLS), max_size=2) | st.none()},
                          optional={"synset": st.sampled_from(CELLS) | st.none()}).map(json.dumps)
    | st.sampled_from(["", "{", "[]", "null", '{"term": "a"}']), max_size=4),
    noise=st.binary(max_size=3))
def test_only_suite_errors_escape_the_examples_reader(tmp_path_factory, lines, noise):
    path = tmp_path_factory.mktemp("examples") / "examples.jsonl"
    path.write_bytes("\n".join(lines).encode() + noise)
    try:
        examples = read_generated_examples(path)
    except SuiteError as err:
        _one_line(err, path)
        return
    assert examples and all(isinstance(v, tuple) for v in examples.values())


names = st.lists(st.sampled_from(["Ann", "Bo", "Cy", "Di", "love", "", 1, None]), max_size=3)
ibd_documents = st.one_of(
    st.dictionaries(
        st.sampled_from(["a_female", "a_male", "b_female", "b_male", "paper_lst_union",
                         "a_female_bias", "a_female_intersectional_bias", "x_bias", "_source",
                         "data_source", "A_B_C"]),
        names | st.sampled_from(["text", 1.5]), max_size=8),
    st.lists(st.integers(), max_size=2), st.none(), st.text(max_size=3),
)


@FUZZ
@given(doc=ibd_documents, raw=st.binary(max_size=4))
@example(doc={"a_female": ["Ann"], "a_male": ["Bo"], "b_female": ["Cy"], "b_male": ["Di"],
              "paper_lst_union": ["love"], "a_female_bias": ["love"]}, raw=b"")
def test_only_suite_errors_escape_the_ibd_groups_reader(tmp_path_factory, doc, raw):
    path = tmp_path_factory.mktemp("ibd") / "groups.json"
    path.write_bytes(json.dumps(doc).encode() + raw)
    try:
        spec = parse_ibd_data(read_json(path, "IBD groups file"), path)
    except SuiteError as err:
        _one_line(err, path)
        return
    owners = [n for names_ in spec.groups.values() for n in names_]
    assert len(owners) == len(set(owners)) and not set(owners) & set(spec.attributes)


@FUZZ
@given(data=tables(["word", "valence", "arousal", "dominance", "language", "Word"]),
       suffix=st.sampled_from([".csv", ".tsv"]))
@example(data=bytes(range(256)), suffix=".csv")
@example(data="word,valence\ncaf\xe9,5\n".encode("latin-1"), suffix=".csv")
@example(data=b"word,valence\nlove,5\nhate\x00,1\n", suffix=".csv")
@example(data=b"word\nlove\nlove,love", suffix=".csv")  # pandas' message ended in a newline
def test_only_lexicon_errors_escape_the_lexicon_reader(tmp_path_factory, data, suffix):
    path = tmp_path_factory.mktemp("lexicon") / ("lexicon" + suffix)
    path.write_bytes(data)
    try:
        lexicon = load_lexicon(path)
    except LexiconError as err:
        _one_line(err, path)
        return
    assert len(lexicon.words) and np.isfinite(lexicon.valence).all()


# silent shifts and crashes of the pandas-read tables, found by the fuzzers above
@pytest.mark.parametrize(
    ("reader", "name", "data", "message"),
    [
        ("lexicon", "lex.csv", b"word,valence\nlove,hate,5\n", "more fields than its header"),
        ("lexicon", "lex.csv", b"word,valence\nlove,5,\nhate,1,\n", "more fields than its header"),
        ("lexicon", "lex.csv", b"word\nlove\nlove,love", "Expected 1 fields in line 3, saw 2"),
        ("names", "names.csv", b"name,sex,rank\nlove,love,love,love", "more fields than its header"),
        ("groups", "groups.csv", b"group,word,kind\na,b,noun,x\n", "more fields than its header"),
        ("dictionary", "d.csv", b"dimension,term,direction\nMorality,kind,high,x\n",
         "more fields than its header"),
        ("dictionary", "d.csv", b"dimension,term,direction\nMorality,,high\nMorality,kind,up\n",
         r"2 bad row\(s\): row 1: blank term or dimension; row 2 \('kind'\): direction 'up'"),
    ],
)
def test_table_crash_signatures_are_one_line_errors(tmp_path, reader, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    call = {"lexicon": load_lexicon, "names": read_names, "groups": read_populations,
            "dictionary": read_dictionary}[reader]
    with pytest.raises(EmbError, match=message) as caught:
        call(path)
    _one_line(caught.value, path)
