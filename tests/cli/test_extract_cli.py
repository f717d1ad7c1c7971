"""``emb extract | info | validate | suites | zip`` end to end, and bad input: a clear message,
a non-zero exit, and nothing half-written."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import emb
from emb.cli.main import main
from emb.extract.pipeline import extract
from tests import models
from tests.fakes import FakeRunner
from tests.store.test_pipeline import words_suite


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory) -> str:
    return str(models.tiny_gpt2(tmp_path_factory.mktemp("gpt2")))


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> str:
    return str(models.tiny_bert(tmp_path_factory.mktemp("bert")))


@pytest.fixture()
def lexicon(tmp_path, data_dir) -> Path:
    """The first 40 Bellezza words (scale 1–5) plus 'love' and 'death'."""
    lines = (data_dir / "lexica" / "bellezza.csv").read_text().splitlines()
    path = tmp_path / "bellezza_small.csv"
    path.write_text("\n".join(lines[:41]) + "\n")
    return path


@pytest.fixture()
def corpus(tmp_path, data_dir) -> Path:
    """Sentences of the shared corpus that hold one of the first Bellezza words."""
    words = [line.split(",")[0] for line in (data_dir / "lexica" / "bellezza.csv").read_text().splitlines()[1:41]]
    words += ["love", "death", "peace", "family", "happy"]
    keep = []
    import re

    pattern = re.compile(r"\b(" + "|".join(words) + r")\b", re.IGNORECASE)
    with gzip.open(data_dir / "corpus" / "sentences.jsonl.gz", "rt") as fh:
        for line in fh:
            if pattern.search(json.loads(line)["text"]):
                keep.append(line)
            if len(keep) >= 3000:
                break
    path = tmp_path / "corpus.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.writelines(keep)
    return path


def run(*args: str, ok: bool = True):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_extract_vast_with_corpus_then_weat_info_validate_zip(gpt2_dir, lexicon, corpus, tmp_path):
    store = tmp_path / "gpt2.zarr"
    out = run("extract", "--model", gpt2_dir, "--suite", "vast", "--lexicon", lexicon,
              "--corpus", corpus, "--seed", "3", "--store", store, "--quiet").output
    assert "status    complete" in out
    ds = emb.open_store(str(store)).dataset("vast")
    assert set(ds.setting.values) == {"bleached", "aligned", "misaligned", "random"}
    n_lex = (ds.stimulus_set == "lexicon").sum().item()
    assert n_lex >= 3 * 40  # every lexicon word in three template settings, most with a sentence
    assert ds.attrs["suite"]["parameters"]["seed"] == 3
    assert ds.attrs["model"]["n_layers"] == 3 and ds.sizes["layer"] == 4
    assert np.isfinite(ds.embedding.values).all()
    # the context really holds the word at the span
    for ctx, w, a, b in zip(ds.context.values, ds.word.values, ds.char_start.values, ds.char_end.values, strict=True):
        assert ctx[a:b].lower() == w.lower()

    out = run("extract", "--model", gpt2_dir, "--suite", "weat", "--store", store, "-q").output
    assert "weat:" in out and "copied" in out
    out = run("extract", "--model", gpt2_dir, "--suite", "weat", "--store", store, "-q").output
    assert "already complete" in out
    info = json.loads(run("info", store, "--json").output)
    assert [s["name"] for s in info["suites"]] == ["vast", "weat"] and info["complete"]
    assert "weat" in run("info", store).output
    assert "complete" in run("validate", store, "--deep").output
    run("zip", store, tmp_path / "gpt2.zip")
    assert "vast" in run("info", tmp_path / "gpt2.zip").output


def test_suites_lists_builtins():
    out = run("suites").output
    for name in ("vast", "weat", "similarity", "--lexicon", "--corpus"):
        assert name in out


def test_suite_file_and_poolings(gpt2_dir, tmp_path):
    suite = tmp_path / "mine.yaml"
    suite.write_text(
        "name: mine\nitems:\n"
        "  - {context: 'This is {target}.', word: love, setting: bleached, stimulus_set: pleasant}\n"
        "  - {context: 'I love love songs', word: love, occurrence: 2, setting: random, stimulus_set: x}\n"
    )
    store = tmp_path / "s.zarr"
    run("extract", "-m", gpt2_dir, "-s", suite, "--store", store, "--poolings", "mean,last",
        "--storage-dtype", "float32", "-q")
    ds = emb.open_store(str(store)).dataset("mine")
    assert list(ds.pooling.values) == ["mean", "last"] and ds.embedding.dtype == np.float32
    assert list(ds.char_start.values) == [8, 7]


def _assert_failed(result, *needles):
    assert result.exit_code != 0
    for needle in needles:
        assert needle in result.output, result.output


def test_unknown_model_writes_nothing(lexicon, tmp_path):
    store = tmp_path / "s.zarr"
    res = run("extract", "--model", tmp_path / "no-such-model", "--suite", "vast", "--lexicon",
              lexicon, "--store", store, ok=False)
    _assert_failed(res, "ModelError", "no-such-model")
    assert not store.exists()


def test_malformed_suite_file_names_the_json_path(gpt2_dir, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "bad", "items": [{"context": "x", "word": "x", "span": [0]}]}))
    store = tmp_path / "s.zarr"
    res = run("extract", "-m", gpt2_dir, "-s", bad, "--store", store, ok=False)
    _assert_failed(res, "SuiteError", "$.items[0]")
    assert not store.exists()


def test_target_missing_from_its_context_lists_items(gpt2_dir, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nitems:\n  - {context: 'This is fine.', word: love}\n"
                   "  - {context: 'no target here', word: hate}\n")
    store = tmp_path / "s.zarr"
    res = run("extract", "-m", gpt2_dir, "-s", bad, "--store", store, ok=False)
    _assert_failed(res, "SuiteError", "love", "hate")
    assert not store.exists()


@pytest.mark.parametrize(
    "content, needle",
    [
        ("word,valence\n", "no"),  # empty
        ("word,valence\nlove,8\nlove,7\n", "love"),  # duplicate
        ("word,valence\nlove,high\n", "high"),  # non-numeric
        ("term,score\nlove,8\n", "term"),  # no word/valence columns: lists what it found
    ],
)
def test_bad_lexicon_is_refused(gpt2_dir, tmp_path, content, needle):
    lex = tmp_path / "lex.csv"
    lex.write_text(content)
    store = tmp_path / "s.zarr"
    res = run("extract", "-m", gpt2_dir, "-s", "vast", "--lexicon", lex, "--store", store, ok=False)
    _assert_failed(res, "LexiconError", needle)
    assert not store.exists()


def test_unreadable_corpus_is_refused(gpt2_dir, lexicon, tmp_path):
    broken = tmp_path / "corpus.jsonl.gz"
    broken.write_bytes(b"not gzip at all")
    store = tmp_path / "s.zarr"
    res = run("extract", "-m", gpt2_dir, "-s", "vast", "--lexicon", lexicon, "--corpus", broken,
              "--store", store, ok=False)
    _assert_failed(res, "CorpusError")
    assert not store.exists()


def test_store_of_another_model_is_refused_and_untouched(gpt2_dir, bert_dir, lexicon, tmp_path):
    store = tmp_path / "s.zarr"
    run("extract", "-m", gpt2_dir, "-s", "weat", "--select", "WEAT1", "--store", store, "-q")
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    res = run("extract", "-m", bert_dir, "-s", "vast", "--lexicon", lexicon, "--store", store,
              ok=False)
    _assert_failed(res, "StoreMismatchError", "another model", "new store")
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before


def test_validate_exit_codes(tmp_path):
    store = tmp_path / "s.zarr"

    class Boom(FakeRunner):
        def embed(self, encodings, **kw):
            if self.calls:
                raise RuntimeError("interrupted")
            return super().embed(encodings, **kw)

    with pytest.raises(RuntimeError):
        extract(Boom(), words_suite(100), str(store), block_size=32, window_blocks=1, progress=False)
    res = run("validate", store, ok=False)
    assert res.exit_code == 1 and "incomplete" in res.output and "re-run" in res.output
    extract(FakeRunner(), words_suite(100), str(store), block_size=32, progress=False)
    assert run("validate", store).exit_code == 0
    res = run("info", tmp_path / "nothing.zarr", ok=False)
    _assert_failed(res, "StoreError", "does not exist")


@pytest.mark.slow
def test_smollm2_gguf_end_to_end(tmp_path):
    gguf = models.smollm2_gguf()
    store = tmp_path / "smol.zarr"
    run("extract", "-m", gguf, "-s", "weat", "--select", "WEAT7", "--store", store, "-q",
        "--batch-size", "16")
    info = emb.open_store(str(store)).info()
    assert info.model["n_layers"] == 30 and info.model["hidden_size"] == 576
    assert info.model["source"] == "gguf" and info.complete
    ds = emb.open_store(str(store)).dataset("weat")
    assert ds.sizes["layer"] == 31 and np.isfinite(ds.embedding.values).all()
