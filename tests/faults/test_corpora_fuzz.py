"""Fuzzing the corpus readers (issue 20): every format (text, JSON Lines, Parquet) in every
compression (none, gzip, zstd, xz, bzip2), whole, cut, with bytes flipped, inserted or appended,
and JSON nested deeply. Each outcome is a correct read or a :class:`~emb.errors.CorpusError`
naming the file; a whole file reads exactly the records written; a compressed file cut short is
always an error. Bounded and derandomized (the same examples on every run), well under a minute.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from emb.corpus import stream as corpus_stream
from emb.corpus.in_memory import load_corpus, whole_word_pattern
from emb.corpus.matching import Matcher
from emb.corpus.stream import SKIPPED_TEXTS, corpus_files, iter_blocks
from emb.errors import CorpusError

FUZZ = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)
STIMULI = ["rose", "war", "love"]
MATCHER = Matcher(STIMULI, case_sensitive=False, unit="sentence")
COMPRESSIONS = ["none", "gzip", "zstd", "xz", "bz2"]
SUFFIX = {"none": "", "gzip": ".gz", "zstd": ".zst", "xz": ".xz", "bz2": ".bz2"}
#: the magic bytes must survive a cut for the file to be known as compressed at all
MAGIC = {"gzip": 2, "zstd": 4, "xz": 6, "bz2": 3}

words = st.sampled_from(["rose", "Rose", "war", "love's", "self-love", "lovely", "a", "the",
                         "é", "日本", "\\n", "\t", "[deleted]", "", " ", "\u2028", "\U0001F600"])
texts = st.one_of(
    st.lists(words, max_size=8).map(" ".join),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=30),
    st.sampled_from(["[deleted]", "[removed]", "", "   "]),
)


def _compress(kind: str, data: bytes) -> bytes:
    if kind == "gzip":
        return gzip.compress(data, mtime=0)
    if kind == "zstd":
        return zstandard.ZstdCompressor().compress(data)
    if kind == "xz":
        return lzma.compress(data)
    if kind == "bz2":
        return bz2.compress(data)
    return data


def _encode(fmt: str, records: list[str]) -> bytes:
    if fmt == "jsonl":
        return "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(records)).encode()
    if fmt == "parquet":
        sink = io.BytesIO()
        pq.write_table(pa.table({"id": list(range(len(records))), "text": records}), sink)
        return sink.getvalue()
    return "".join(t + "\n" for t in records).encode()


def _expected(fmt: str, records: list[str]) -> list[str]:
    """What the reader returns: text lines as they are (a record per line, blank lines none),
    decoded texts without the blank ones and Reddit's placeholders."""
    if fmt == "text":
        lines = "".join(t + "\n" for t in records).encode().split(b"\n")[:-1]
        return [line.removesuffix(b"\r").decode() for line in lines
                if line.removesuffix(b"\r")]
    return [t for t in records if t and not t.isspace() and t not in SKIPPED_TEXTS]


def _holds_a_stimulus(text: str) -> bool:
    return any(whole_word_pattern(w).search(text) for w in STIMULI)


def _read_all(path: Path, *, prefilter: bool) -> list[str]:
    out: list[str] = []
    for file in corpus_files([str(path)]):
        for block in iter_blocks(file, prefilter=MATCHER.scan if prefilter else None):
            lines = block.lines.tolist()
            assert lines == sorted(lines) and len(set(lines)) == len(lines)
            for i in range(len(block)):
                text = block.text(i)
                text.encode("utf-8")  # valid Unicode, always
                out.append(text)
    return out


def _mutate(data: bytes, how: str, at: int, payload: bytes) -> bytes:
    at = at % (len(data) + 1)
    if how == "cut":
        return data[:at]
    if how == "flip" and data:
        at = min(at, len(data) - 1)
        return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]
    if how == "insert":
        return data[:at] + payload + data[at:]
    if how == "append":
        return data + payload
    return data


@settings(FUZZ, max_examples=500)
@given(
    fmt=st.sampled_from(["text", "jsonl", "parquet"]),
    kind=st.sampled_from(COMPRESSIONS),
    records=st.lists(texts, min_size=1, max_size=12),
    how=st.sampled_from(["none", "cut", "flip", "insert", "append"]),
    at=st.integers(0, 10_000),
    payload=st.binary(min_size=1, max_size=16),
    prefilter=st.booleans(),
)
@example(fmt="jsonl", kind="zstd", records=["The rose."] * 3, how="cut", at=20, payload=b"x",
         prefilter=True)
@example(fmt="jsonl", kind="xz", records=["The rose."], how="append", at=0,
         payload=b"\xfd7zXZ\x00", prefilter=False)
def test_every_corpus_read_is_correct_or_a_corpus_error(
    tmp_path_factory, fmt, kind, records, how, at, payload, prefilter
):
    data = _compress(kind, _encode(fmt, records))
    mutated = _mutate(data, how, at, payload)
    name = f"corpus.{'jsonl' if fmt == 'jsonl' else fmt}{SUFFIX[kind]}"
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_bytes(mutated)
    try:
        got = _read_all(path, prefilter=prefilter)
    except CorpusError as err:
        assert str(path) in str(err) or path.name in str(err), str(err)
        assert mutated != data or (fmt == "parquet" and kind != "none"), f"whole file refused: {err}"
        return
    if mutated == data:
        want = _expected(fmt, records)
        if prefilter:  # only the records that may hold a stimulus are decoded (JSON)
            rest = iter(want)
            assert all(t in rest for t in got), "not the records written, in their order"
            assert [t for t in want if _holds_a_stimulus(t)] == [
                t for t in got if _holds_a_stimulus(t)]
        else:
            assert got == want
    if how == "cut" and kind != "none" and MAGIC[kind] <= len(mutated) < len(data):
        pytest.fail(f"a {kind} file cut at {len(mutated)} of {len(data)} bytes was read")


@FUZZ
@given(
    fmt=st.sampled_from(["text", "jsonl"]),
    kind=st.sampled_from(COMPRESSIONS),
    records=st.lists(texts, min_size=1, max_size=8),
    how=st.sampled_from(["none", "cut", "flip", "insert", "append"]),
    at=st.integers(0, 10_000),
    payload=st.binary(min_size=1, max_size=16),
)
def test_the_sentence_corpus_reader_is_correct_or_a_corpus_error(
    tmp_path_factory, fmt, kind, records, how, at, payload
):
    """load_corpus (VAST's random setting) reads the same compressions, whole."""
    data = _compress(kind, _encode(fmt, records))
    mutated = _mutate(data, how, at, payload)
    path = tmp_path_factory.mktemp("fuzz") / f"corpus.{'jsonl' if fmt == 'jsonl' else 'txt'}{SUFFIX[kind]}"
    path.write_bytes(mutated)
    try:
        corpus = load_corpus(path)
    except CorpusError as err:
        assert str(path) in str(err), str(err)
        return
    for sentence in corpus.sentences:
        sentence.encode("utf-8")
    if how == "cut" and kind != "none" and MAGIC[kind] <= len(mutated) < len(data):
        pytest.fail(f"a {kind} file cut at {len(mutated)} of {len(data)} bytes was read")


@FUZZ
@given(
    depth=st.integers(1, 5000),
    where=st.sampled_from(["text", "other", "id", "line"]),
    extra=st.sampled_from(['"\\ud800"', '"\\udfff x"', "1" + "0" * 5000, "1e400", "-0", "null"]),
)
def test_nested_and_odd_json_lines_are_read_or_refused(tmp_path_factory, depth, where, extra):
    nested = "[" * depth + extra + "]" * depth
    line = {
        "text": '{"id": 1, "text": ' + nested + "}",
        "other": '{"id": 1, "text": "The rose.", "x": ' + nested + "}",
        "id": '{"id": ' + nested + ', "text": "The rose."}',
        "line": nested,
    }[where]
    path = tmp_path_factory.mktemp("fuzz") / "corpus.jsonl"
    path.write_text('{"id": 0, "text": "The war."}\n' + line + "\n", encoding="utf-8")
    try:
        got = _read_all(path, prefilter=False)
    except CorpusError as err:
        assert "line 2" in str(err), str(err)
        return
    assert got[0] == "The war."


@pytest.mark.parametrize("block", [64, 1000])
@FUZZ
@given(lengths=st.lists(st.integers(0, 3000), min_size=1, max_size=12), final=st.booleans())
def test_long_records_are_skipped_whatever_the_read_boundaries(
    tmp_path_factory, monkeypatch, block, lengths, final
):
    """Records over the limit go, each counted once; the others keep their line and offset,
    whatever the block size (small limits stand in for 8 MiB)."""
    monkeypatch.setattr(corpus_stream, "BLOCK_BYTES", block)
    monkeypatch.setattr(corpus_stream, "MAX_RECORD_BYTES", 500)
    lines = [f"{i}" + "x" * n for i, n in enumerate(lengths)]
    data = "\n".join(lines).encode() + (b"\n" if final else b"")
    path = tmp_path_factory.mktemp("fuzz") / "c.txt"
    path.write_bytes(data)
    got, too_long = [], 0
    for file in corpus_files([str(path)]):
        for b in iter_blocks(file):
            too_long += b.too_long
            got += [(b.text(i), int(b.lines[i]), int(b.offsets[i])) for i in range(len(b))]
    offsets = [sum(len(x) + 1 for x in lines[:i]) for i in range(len(lines))]
    want = [(t, i + 1, offsets[i]) for i, t in enumerate(lines) if len(t) <= 500]
    assert got == want
    assert too_long == sum(len(t) > 500 for t in lines)
