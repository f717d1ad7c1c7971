"""Sampling contexts from a corpus: formats and compressions (a Pushshift-shaped dump included),
the whole-word rule, context units, worker independence and uniformity of the reservoir."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as st_

from emb.corpus.contexts import candidate_keys, sample_contexts
from emb.corpus.in_memory import whole_word_pattern
from emb.corpus.matching import Matcher, reference_text, reference_window
from emb.corpus.stream import corpus_files
from emb.errors import CorpusError

SENTENCES = [
    "I love my family.", "Love is all you need!", "She loves him.", "He said: love, love.",
    "Self-love matters. Love is patient.", "The glove is lovely.", "café love", "élove here",
    "We went home. It was late.", "Brad met Bill at home.", "[deleted]", "[removed]",
]


def _records(n: int = 300) -> list[dict]:
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        body = SENTENCES[i % len(SENTENCES)]
        if not body.startswith("["):
            body += f" n{int(rng.integers(1000))}"
        out.append({"id": f"t{i}", "body": body, "author": "home"})
    return out


def _write(path: Path, records: list[dict], field: str = "body") -> Path:
    lines = "".join(json.dumps({**r, "text": r["body"]} if field == "text" else r) + "\n" for r in records)
    opener = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}.get(path.suffix, open)
    with opener(path, "wt", encoding="utf-8") as handle:
        handle.write(lines)
    return path


def _pushshift(path: Path, records: list[dict]) -> Path:
    """NDJSON compressed like the Pushshift dumps: zstd with a 2 GiB long-distance window."""
    zstd = pytest.importorskip("zstandard")
    params = zstd.ZstdCompressionParameters.from_level(3, window_log=31, enable_ldm=True)
    with open(path, "wb") as raw, zstd.ZstdCompressor(compression_params=params).stream_writer(raw) as w:
        for r in records:
            w.write((json.dumps(r) + "\n").encode())
    return path


def _flat(sample) -> list[tuple]:
    return [(c.stimulus, c.file, c.offset, c.ordinal, c.key, c.text, c.char_start)
            for s in sample.contexts for c in sample.contexts[s]]


def test_pushshift_dump_needs_the_long_window_and_skips_deleted(tmp_path: Path) -> None:
    zstd = pytest.importorskip("zstandard")
    path = _pushshift(tmp_path / "RC_2014-01.zst", _records())
    with open(path, "rb") as handle, pytest.raises(zstd.ZstdError):
        zstd.ZstdDecompressor().stream_reader(handle).read()  # the default window refuses it
    sample = sample_contexts(path, ["love", "home", "Brad"], n=1000, text_field="body", workers=1)
    assert sample.records_skipped == 2 * 300 // len(SENTENCES)  # [deleted] and [removed]
    love = sample.contexts["love"]
    assert {c.record_id for c in love} <= {f"t{i}" for i in range(300)}
    for c in love:
        assert c.text[c.char_start:c.char_end].lower() == "love"
        assert c.line == int(c.record_id[1:]) + 1
    # 'home' in the author field is not text; 'Brad' is matched without case
    assert all("home" in c.text.lower() for c in sample.contexts["home"])
    assert sample.seen["Brad"] == 25 and sample.kept("Brad") == 25


def test_formats_and_compressions_give_the_same_sample(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    records = _records(120)
    reference = None
    for name in ("c.jsonl", "c.jsonl.gz", "c.ndjson.xz", "c.jsonl.bz2"):
        sample = sample_contexts(_write(tmp_path / name, records), ["love", "home"], n=50,
                                 text_field="body", workers=1)
        got = [(c.stimulus, c.offset, c.text) for s in sample.contexts for c in sample.contexts[s]]
        assert [c for c in got] and sample.seen["love"] > 50
        if reference is None:
            reference = sample.seen
        assert sample.seen == reference, name
    table = pa.table({"id": [r["id"] for r in records], "body": [r["body"] for r in records]})
    pq.write_table(table, tmp_path / "c.parquet")
    sample = sample_contexts(tmp_path / "c.parquet", ["love", "home"], n=50, text_field="body",
                             workers=1)
    assert sample.seen == reference
    assert all(c.record_id == f"t{c.offset}" for c in sample.contexts["love"])
    text = tmp_path / "c.txt"
    text.write_text("\n".join(r["body"] for r in records) + "\n", encoding="utf-8")
    assert sample_contexts(text, ["love", "home"], n=50, workers=1).seen == reference


def test_errors_name_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "love"}\n{"body": "x"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"line 2: no 'text' field"):
        sample_contexts(bad, ["love", "x"], n=5, workers=1)
    with pytest.raises(CorpusError, match="matches no file"):
        corpus_files([str(tmp_path / "nothing-*.zst")])
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"text": "love"}\n{"text": "love\n', encoding="utf-8")
    with pytest.raises(CorpusError, match="line 2: invalid JSON"):
        sample_contexts(broken, ["love"], n=5, workers=1)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["love", "Love", "LOVE", "glove", "lovely", "love's", "self-love",
                                 "é", "café", "ü", " ", "  ", ".", ",", "’", "-", "_", "1", "\t",
                                 "he", "the", "He", "«", "x"]), max_size=25))
def test_whole_word_rule_equals_the_regex(parts: list[str]) -> None:
    text = "".join(parts)
    if not text.strip():
        return
    matcher = Matcher(["love", "he"], case_sensitive=False, unit="document")
    for s, word in enumerate(["love", "he"]):
        expected = [(m.start(), m.end()) for m in whole_word_pattern(word).finditer(text)]
        assert matcher.occurrences_in(text, s) == expected, (word, text)
        raw = text.encode()
        data = b"\n" + raw + b"\n"
        rec, stim, ws, we = matcher.occurrences(data, np.array([1]), np.array([1 + len(raw)]))
        assert len(ws[stim == s]) == len(expected)


def test_context_units(tmp_path: Path) -> None:
    path = tmp_path / "u.txt"
    path.write_text("I love it. We love them. Love, love!\nNothing here.\nlove\n", encoding="utf-8")
    sentence = sample_contexts(path, ["love"], n=10, workers=1)
    texts = sorted(c.text for c in sentence.contexts["love"])
    assert texts == ["I love it.", "Love, love!", "We love them.", "love"]  # 3 sentences + 1 line
    document = sample_contexts(path, ["love"], n=10, unit="document", workers=1)
    assert document.seen["love"] == 2
    ref = sample_contexts(path, ["love", "Love"], n=10, unit="reference", workers=1)
    # case-sensitive, punctuation stripped, and a word first or last in the record is missed
    assert ref.seen["love"] == 1 and ref.seen["Love"] == 1
    assert reference_text("a &amp; b, c") == "a   b  c"
    long = "one two three four five six seven eight nine ten eleven target twelve thirteen"
    # fewer than 4 words after it: the last 9; in the middle: 4 before, 3 after (the code's [i-4:i+4])
    assert reference_window(long, "target")[0] == "six seven eight nine ten eleven target twelve thirteen"
    words = [f"w{i}" for i in range(20)]
    window, a, b = reference_window(" ".join(words), "w10")
    assert window == "w6 w7 w8 w9 w10 w11 w12 w13" and window[a:b] == "w10"
    assert reference_window(long, "one")[0] == "one two three four five six seven eight nine"


def test_missing_and_short_stimuli_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "m.txt"
    path.write_text("love\nlove\nhome\n", encoding="utf-8")
    sample = sample_contexts(path, ["love", "home", "zebra"], n=2, workers=1)
    assert sample.missing() == ["zebra"] and sample.short() == ["home", "zebra"]


def _corpus(tmp_path: Path, n_files: int = 5) -> list[Path]:
    rng = np.random.default_rng(1)
    files = []
    for f in range(n_files):
        lines = [" ".join(rng.choice(["love", "home", "he", "is", "the", "a", "war"], 6))
                 for _ in range(200 + 37 * f)]
        path = tmp_path / f"part-{f}.txt.gz"
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        files.append(path)
    return files


@pytest.mark.slow
def test_the_sample_does_not_depend_on_the_workers(tmp_path: Path) -> None:
    files = _corpus(tmp_path)
    words = ["love", "home", "he", "war"]
    one = sample_contexts(files, words, n=40, seed=3, workers=1)
    for workers in (2, 3):
        assert _flat(sample_contexts(files, words, n=40, seed=3, workers=workers)) == _flat(one)
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=False, dashboard_address=None) as cluster:
        on_dask = sample_contexts(files, words, n=40, seed=3, scheduler=cluster.scheduler_address)
    assert _flat(on_dask) == _flat(one)
    assert on_dask.seen == one.seen
    other = sample_contexts(files, words, n=40, seed=4, workers=1)
    assert _flat(other) != _flat(one)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 12), st.integers(0, 2**32 - 1), st.integers(2, 4))
def test_bounds_shared_between_workers_leave_out_only_what_the_merge_drops(
    n_stimuli: int, n: int, seed: int, workers: int
) -> None:
    """Workers that lower their reservoirs' thresholds to the others' (as local workers do
    through shared memory, at any moment) keep every candidate of the n smallest of the union,
    and never more candidates than without the bounds."""
    from emb.corpus.reservoir import Reservoirs, below

    rng = np.random.default_rng(seed)
    size = int(rng.integers(n, 8 * n + 2))
    keys = rng.choice(2**62, size=(n_stimuli, size), replace=False).astype(np.uint64)
    owner = rng.integers(0, workers, size=size)
    table = np.full((workers, n_stimuli), np.iinfo(np.uint64).max, dtype=np.uint64)
    plain = [Reservoirs(n_stimuli, n) for _ in range(workers)]
    bounded = [Reservoirs(n_stimuli, n) for _ in range(workers)]
    for j in rng.permutation(size):  # one candidate per stimulus at a time, in a random order
        w = owner[j]
        stim = np.arange(n_stimuli)
        cols = (keys[:, j], np.full(n_stimuli, w), np.full(n_stimuli, j), np.zeros(n_stimuli, int))
        plain[w].add(stim, cols)
        ok = bounded[w].admit(stim, keys[:, j])
        bounded[w].add(stim[ok], tuple(c[ok] for c in cols))
        if rng.random() < 0.3:  # publish and read the others' at random moments
            table[w] = bounded[w].threshold
            bounded[w].bound(table.min(axis=0))
    kept_plain = [r.kept() for r in plain]
    kept_bounded = []
    for w in rng.permutation(workers):  # each worker finishes and prunes in turn
        cols = bounded[w].kept()
        table[w] = bounded[w].threshold
        kept_bounded.append(below(cols, table.min(axis=0)))
    for s in range(n_stimuli):
        want = np.sort(keys[s])[:n]
        for kept in (kept_plain, kept_bounded):
            union = np.sort(np.concatenate([k[s][0] for k in kept if len(k[s])]))
            assert np.array_equal(union[:n], want)
        counts = [sum(len(k[s][0]) for k in kept if len(k[s])) for kept in (kept_bounded, kept_plain)]
        assert counts[0] <= counts[1]


def test_reservoir_is_uniform() -> None:
    """Over 600 seeds, each of 30 candidates is kept in a sample of 6 about equally often."""
    m, k, seeds = 30, 6, 600
    counts = np.zeros(m)
    offsets = np.arange(m) * 57
    for seed in range(seeds):
        keys = candidate_keys(seed, ["love"], "f.txt", np.zeros(m, dtype=np.int64), offsets,
                              np.zeros(m, dtype=np.int64))
        counts[np.argsort(keys)[:k]] += 1
    chi2 = st_.chisquare(counts, np.full(m, seeds * k / m))
    assert chi2.pvalue > 1e-3, chi2
    # pairs are kept together as often as a uniform sample without replacement predicts
    assert counts.sum() == seeds * k


def test_reservoir_uniform_end_to_end(tmp_path: Path) -> None:
    path = tmp_path / "u.txt"
    path.write_text("".join(f"line {i} love\n" for i in range(12)), encoding="utf-8")
    counts = np.zeros(12)
    for seed in range(150):
        for c in sample_contexts(path, ["love"], n=3, seed=seed, workers=1).contexts["love"]:
            counts[c.line - 1] += 1
    assert st_.chisquare(counts).pvalue > 1e-3
    assert re.match(r"line \d+ love", "line 3 love")


def test_one_sentence_shortcut_agrees_with_sentencex(data_dir: Path) -> None:
    """Texts the shortcut calls one sentence are one sentence for sentencex too (shared corpus)."""
    sentencex = pytest.importorskip("sentencex")
    from emb.corpus.sentences import _TERMINATORS

    with gzip.open(data_dir / "corpus" / "sentences.jsonl.gz", "rt", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"] for i, line in enumerate(handle) if i % 7 == 0]
    single = [t for t in texts if not _TERMINATORS.search(t.rstrip(" \t").rstrip(".!?…"))]
    assert len(single) > 10_000
    assert all(len(sentencex.get_sentence_boundaries("en", t)) == 1 for t in single)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=list("ab .!?…。！？\n\r)(\t é’1"), max_size=12), min_size=1, max_size=8))
def test_vectorised_one_sentence_test_equals_the_string_rule(texts: list[str]) -> None:
    """one_sentence (bytes of a whole block, NumPy) says True exactly where the body of the text
    (rstrip " \\t", then ".!?…") holds no terminator, the rule _sentences uses to skip sentencex."""
    from emb.corpus.sentences import _CANDIDATES, _sentences, one_sentence
    from emb.corpus.stream import RecordBlock

    block = RecordBlock.from_texts(texts, np.arange(len(texts)), np.arange(len(texts)))
    got = one_sentence(block.data, block.starts, block.ends)
    want = [not _CANDIDATES.search(t.rstrip(" \t").rstrip(".!?…")) for t in texts]
    assert got.tolist() == want
    for t, single in zip(texts, got.tolist(), strict=True):
        if single:
            assert _sentences(t) == [(0, len(t))]


_WORDS = st.sampled_from(["love", "Love", "home", "he", "she", "glove", "café", "é", ".", " ", "\n",
                          '"', "\\", "text", '"text": "x"', "\u2028", "’", "love's"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(_WORDS, max_size=8), st.sampled_from([None, "before", "after"]),
                          st.booleans(), st.sampled_from([(", ", ": "), (",", ":"), (" , ", " :  ")])),
                min_size=1, max_size=12))
def test_hits_reused_from_the_prefilter_equal_a_second_scan(tmp_path_factory, records) -> None:
    """Records whose text is verbatim in its JSON line reuse the prefilter's hits; the occurrences
    equal those of a scan of the decoded block (escapes, nested or repeated keys, odd spacing)."""
    from emb.corpus.stream import iter_blocks

    lines = []
    for i, (words, nested, ascii_only, seps) in enumerate(records):
        text = " ".join(words)
        obj = {"id": i, "text": text}
        if nested:  # a nested "text" of the same length (other hits), before or after the real one
            meta = {"meta": {"text": text[::-1], "kind": "text"}}
            obj = {**meta, **obj, "tail": "text"} if nested == "before" else {**obj, **meta}
        lines.append(json.dumps(obj, ensure_ascii=ascii_only, separators=seps))
    path = tmp_path_factory.mktemp("known") / "c.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    matcher = Matcher(["love", "home", "he", "she", "café"], case_sensitive=False, unit="sentence")
    (file,) = corpus_files([path])
    for block in iter_blocks(file, prefilter=matcher.scan):
        assert block.known is not None or not len(block)
        got = matcher.occurrences(block.data, block.starts, block.ends, block.known)
        want = matcher.occurrences(block.data, block.starts, block.ends)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_contexts_read_as_a_list_of_context(tmp_path: Path) -> None:
    """The merged contexts are columns that read as a sequence of Context: by index (negative
    too), slice and iteration alike, equal to the list of them, and picklable."""
    import pickle

    from emb.corpus.contexts import Context, Contexts

    files = _corpus(tmp_path)
    for workers in (1, 2):
        sample = sample_contexts(files, ["love", "home"], n=7, seed=5, workers=workers)
        seq = sample.contexts["love"]
        assert isinstance(seq, Contexts) and 0 < len(seq) <= 7
        as_list = list(seq)
        assert all(type(c) is Context for c in as_list)
        assert [seq[i] for i in range(len(seq))] == as_list == seq
        assert seq[-1] == as_list[-1] and seq[1:3] == as_list[1:3]
        assert [c.key for c in seq] == sorted(c.key for c in seq)
        assert all(c.text[c.char_start:c.char_end].lower() == "love" for c in seq)
        assert pickle.loads(pickle.dumps(seq)) == as_list
        with pytest.raises(IndexError):
            seq[len(seq)]


_PARTS = st.sampled_from(["love", "Love", "he", "He", "café", "CAFÉ", " ", "  ", "\t", ".", "!", "?",
                          "é", "’", "Dr.", "x", "\u00a0", "\u3000", "\n", "(a)", "1", "lovely"])


def _reference_units(text: str, word: str, unit: str) -> list[tuple[str, int, int]]:
    """By brute force: (context, char_start, char_end) of every unit of ``text`` holding
    ``word`` (regex whole-word occurrences, sentencex's spans, the first occurrence per unit)."""
    import sentencex

    occ = [(m.start(), m.end()) for m in whole_word_pattern(word).finditer(text)]
    if not occ:
        return []
    spans = ([(0, len(text))] if unit == "document" else
             [(b["start_index"], b["end_index"]) for b in sentencex.get_sentence_boundaries("en", text)])
    first: dict[tuple[int, int], tuple[int, int]] = {}
    for a, b in occ:
        span = next(((lo, hi) for lo, hi in spans if lo <= a < hi), (a, b))
        first.setdefault(span, (a, b))
    out = []
    for (lo, hi), (a, b) in first.items():
        piece = text[lo:hi]
        lead = len(piece) - len(piece.lstrip())
        out.append((piece.strip(), a - lo - lead, b - lo - lead))
    return out


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.lists(_PARTS, min_size=1, max_size=14), st.booleans()),
                min_size=1, max_size=10),
       st.sampled_from(["sentence", "document"]))
def test_kept_contexts_equal_a_brute_force_split(tmp_path_factory, records, unit) -> None:
    """With n above every count, the sample holds exactly the units a brute-force pass finds:
    the regex's whole-word occurrences, sentencex's sentences, each unit stripped with its
    target's offsets (ASCII or not, outer whitespace or not, one sentence or several, JSON
    escapes or verbatim text)."""
    words = ["love", "he", "café"]
    lines, texts = [], []
    for i, (parts, ascii_only) in enumerate(records):
        text = "".join(parts)
        if not text.strip():
            continue
        texts.append(text)
        lines.append(json.dumps({"id": i, "text": text}, ensure_ascii=ascii_only))
    if not lines:
        return
    path = tmp_path_factory.mktemp("units") / "c.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sample = sample_contexts(path, words, n=10_000, unit=unit, workers=1)
    for word in words:
        want = sorted(u for t in texts for u in _reference_units(t, word, unit))
        got = sorted((c.text, c.char_start, c.char_end) for c in sample.contexts.get(word, []))
        assert got == want, word
        assert all(t[a:b].lower() == word.lower() for t, a, b in got)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(
    st.text(max_size=20),
    st.one_of(st.none(), st.integers(-10**30, 10**30), st.text(max_size=5), st.booleans(),
              st.floats(allow_nan=False, allow_infinity=False), st.just("absent")),
    st.dictionaries(st.sampled_from(["a", "t", "i", "meta"]),
                    st.recursive(st.none() | st.integers() | st.text(max_size=4),
                                 lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3)),
                    max_size=3),
    st.booleans()), min_size=1, max_size=8))
def test_fast_json_reading_equals_the_standard_library(tmp_path_factory, rows) -> None:
    """The JSON lines' texts and ids as msgspec reads them (two fields only) are those of
    ``json.loads``: any id type or none, other fields of any shape (named like msgspec's
    internal fields too), escapes or not."""
    from emb.corpus.stream import iter_blocks, record_ids

    lines, want = [], []
    for text, ident, extra, ascii_only in rows:
        obj = {**extra, "text": text}
        if ident != "absent":
            obj["id"] = ident
        lines.append(json.dumps(obj, ensure_ascii=ascii_only))
        if text.strip() and text not in ("[deleted]", "[removed]"):
            want.append((text, "" if ident in (None, "absent") else str(json.loads(json.dumps(ident)))))
    path = tmp_path_factory.mktemp("json") / "c.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (file,) = corpus_files([path])
    got = []
    for block in iter_blocks(file):
        got += list(zip(block.texts, record_ids(block, list(range(len(block)))), strict=True))
    assert got == want
