"""Corpus reader: formats, compression, errors, whole-word lookup and seeded sampling."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from emb.corpus.in_memory import Corpus, load_corpus, whole_word_pattern
from emb.errors import CorpusError

SENTENCES = [
    "Love is patient.",
    "I love love songs.",
    "She was lovely and kind.",
    "Self-love matters, said the glove maker.",
    "The dog's love's reward was a bone.",
    "An action figure stood on the shelf.",
    "The ACTION   FIGURE collection grew.",
    "Bobbie-Sue met Sue at noon.",
    "A smile :) helps.",
    "Nothing here.",
]


def _brute(sentences, word):
    """Independent whole-word search: Python's \\b, case-insensitive, on every sentence."""
    pattern = re.compile(r"\b" + r"\s+".join(map(re.escape, word.split())) + r"\b", re.I)
    return [i for i, s in enumerate(sentences) if pattern.search(s)]


@pytest.fixture
def corpus() -> Corpus:
    return Corpus.from_sentences(SENTENCES)


@pytest.fixture(scope="module")
def real_corpus(data_dir) -> Corpus:
    return load_corpus(data_dir / "corpus" / "sentences.jsonl.gz")


# --------------------------------------------------------------------------- formats


def test_plain_text_skips_blank_lines_and_keeps_line_numbers(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("First one.\n\n  Second one.  \n\r\nThird.\n", encoding="utf-8")
    corpus = load_corpus(path)
    assert corpus.sentences == ("First one.", "Second one.", "Third.")
    assert corpus.line_numbers == (1, 3, 5)
    assert corpus.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert corpus.to_dict() == {"source": str(path), "sha256": corpus.sha256, "n_sentences": 3}


def test_jsonl_gzip_and_zstandard(tmp_path):
    lines = [json.dumps({"id": i, "body": s}) for i, s in enumerate(SENTENCES)]
    text = "\n".join(lines) + "\n"
    (tmp_path / "c.jsonl").write_text(text, encoding="utf-8")
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    zstandard = pytest.importorskip("zstandard")
    (tmp_path / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(text.encode()))
    # a compressed file without the telling suffix is still recognised by its magic bytes
    (tmp_path / "plain.txt").write_bytes(gzip.compress("\n".join(SENTENCES).encode()))
    for name in ("c.jsonl", "c.jsonl.gz", "c.jsonl.zst"):
        assert load_corpus(tmp_path / name, text_field="body").sentences == tuple(SENTENCES)
    assert load_corpus(tmp_path / "plain.txt").sentences == tuple(SENTENCES)
    assert load_corpus(tmp_path / "c.jsonl", text_field="body", format="jsonl").sentences
    as_text = load_corpus(tmp_path / "c.jsonl", format="text")
    assert as_text.sentences[0] == lines[0]


def test_jsonl_keeps_unicode_line_separators_inside_sentences(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"text": "A\u2028B sentence."}, ensure_ascii=False) + "\n", "utf-8")
    assert load_corpus(path).sentences == ("A\u2028B sentence.",)


# --------------------------------------------------------------------------- errors


def test_unreadable_and_empty(tmp_path):
    with pytest.raises(CorpusError, match="cannot read corpus"):
        load_corpus(tmp_path / "absent.txt")
    (tmp_path / "empty.txt").write_text("\n \n", encoding="utf-8")
    with pytest.raises(CorpusError, match="has no sentences"):
        load_corpus(tmp_path / "empty.txt")
    (tmp_path / "latin1.txt").write_bytes("Fine.\nCaf\xe9 au lait.\n".encode("latin-1"))
    with pytest.raises(CorpusError, match=r"not UTF-8 text \(line 2"):
        load_corpus(tmp_path / "latin1.txt")
    (tmp_path / "broken.txt.gz").write_bytes(b"\x1f\x8bnot really gzip")
    with pytest.raises(CorpusError, match="cannot decompress gzip"):
        load_corpus(tmp_path / "broken.txt.gz")


def test_jsonl_errors_name_the_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "Fine."}\n\n{"body": "No text."}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"line 3: no 'text' field \(found \['body'\]\)"):
        load_corpus(path)
    path.write_text('{"text": "Fine."}\n{"text": "Broken.\n', encoding="utf-8")
    with pytest.raises(CorpusError, match="line 2: invalid JSON"):
        load_corpus(path)
    path.write_text('{"text": 3}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match="line 1: field 'text' is a number, not a string; give --text-field KEY"):
        load_corpus(path)
    path.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="line 1: no 'text' field"):
        load_corpus(path)


# --------------------------------------------------------------------------- find


@pytest.mark.parametrize(
    "word",
    [
        "love",
        "LOVE",
        "lovely",
        "glove",
        "self-love",
        "action figure",
        "Bobbie-Sue",
        "sue",
        "reward",
        "dog's",
        "noon",
        "absent",
        "kind",
    ],
)
def test_find_agrees_with_a_brute_force_search(corpus, word):
    assert corpus.find(word).tolist() == _brute(SENTENCES, word)


def test_find_examples(corpus):
    assert corpus.find("love").tolist() == [0, 1, 3, 4]  # not 'lovely', not 'glove'
    assert corpus.find("action figure").tolist() == [5, 6]  # case and runs of spaces
    assert corpus.find(":)").tolist() == [8]  # no letters: a scan of every sentence
    assert corpus.count("Sue") == 1
    assert corpus.find("zebra").dtype == np.int64 and corpus.count("zebra") == 0
    with pytest.raises(CorpusError, match="empty word"):
        corpus.find("  ")


def test_whole_word_pattern_boundaries():
    pattern = whole_word_pattern("love")
    assert [m.span() for m in pattern.finditer("Love, lovely love's glove self-love")] == [
        (0, 4),
        (13, 17),
        (31, 35),
    ]


def test_real_corpus_counts_match_the_documented_table(real_corpus, data_dir):
    """README §7: sentences holding each WEAT polar word, case-insensitive whole word."""
    assert len(real_corpus) == 193_889
    table = pd.read_csv(
        data_dir / "corpus" / "weat_word_sentence_counts.csv", keep_default_na=False, na_values=[""]
    )
    assert len(table) == 50
    counts = {word: real_corpus.count(word) for word in table["word"]}
    assert counts == dict(zip(table["word"], table["n_sentences"], strict=True))


def test_real_corpus_is_indexed_and_searched(data_dir):
    # (~2 s on one core; no timed assertion: a loaded machine must not fail a test)
    corpus = load_corpus(data_dir / "corpus" / "sentences.jsonl.gz")
    assert corpus.find("love").size > 0 and corpus.find("zzqxjv").size == 0


# --------------------------------------------------------------------------- sample


def test_sample_span_is_the_first_match_in_the_chosen_sentence(corpus):
    for word in ("love", "action figure", "Bobbie-Sue", ":)"):
        sentence, start, end = corpus.sample(word, seed=3)
        assert sentence in SENTENCES
        assert sentence[start:end].lower() == word.lower()
        assert start == whole_word_pattern(word).search(sentence).start()
    seed = next(s for s in range(100) if corpus.sample("love", seed=s)[0] == SENTENCES[0])
    sentence, start, end = corpus.sample("love", seed=seed)
    assert (start, end, sentence[start:end]) == (0, 4, "Love")  # the sentence's own case
    assert corpus.sample("zebra", seed=0) is None


def test_sample_is_seeded_per_word(corpus):
    draws = {seed: corpus.sample("love", seed=seed) for seed in range(20)}
    assert draws == {seed: corpus.sample("love", seed=seed) for seed in range(20)}
    assert len({d[0] for d in draws.values()}) > 1  # different seeds pick different sentences
    # the documented generator: rng([seed, crc32(word)]) picks among the hits in index order
    for seed, (sentence, _, _) in draws.items():
        hits = corpus.find("love")
        rng = np.random.default_rng([seed, zlib.crc32(b"love")])
        assert sentence == SENTENCES[hits[rng.integers(len(hits))]]


def test_sample_is_independent_of_other_words(corpus):
    first = corpus.sample("love", seed=7)
    other = Corpus.from_sentences(SENTENCES)
    for word in ("action figure", "noon", "kind", "zebra"):
        other.sample(word, seed=7)
    assert other.sample("love", seed=7) == first


def test_real_corpus_sample(real_corpus):
    a = real_corpus.sample("caress", seed=0)
    b = real_corpus.sample("caress", seed=0)
    assert a == b
    sentence, start, end = a
    assert sentence[start:end].lower() == "caress"
    assert {real_corpus.sample("love", seed=s)[0] for s in range(5)} != {a[0]}
    assert len({real_corpus.sample("love", seed=s)[0] for s in range(5)}) > 1


def test_from_sentences_rejects_empty():
    with pytest.raises(CorpusError, match="no sentences"):
        Corpus.from_sentences(["", "  "])


def test_path_like_and_str(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("One.\n", encoding="utf-8")
    assert load_corpus(str(path)).sentences == load_corpus(Path(path)).sentences
