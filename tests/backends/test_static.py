"""Static word vectors as a model: reading every format, one pass, missing words, the store.

Checked against gensim's ``KeyedVectors.load_word2vec_format`` on the shared word2vec subset and on
text files gensim writes from it; the store's vectors must equal gensim's bit for bit (float32
storage) or gensim's rounded to float16.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import emb
from emb.backends.static import detect_format, is_vectors_file, load_vectors, read_vectors
from emb.errors import EmbError, ModelError
from emb.extraction.pipeline import extract
from emb.stimuli.suites import Item, Suite, build_suite

gensim_models = pytest.importorskip("gensim.models")
KeyedVectors = gensim_models.KeyedVectors

BIN = "static/GoogleNews-vectors-negative300-bolukbasi.bin"


@pytest.fixture(scope="module")
def w2v(data_dir: Path) -> Path:
    return data_dir / BIN


@pytest.fixture(scope="module")
def gensim_kv(w2v: Path):
    return KeyedVectors.load_word2vec_format(str(w2v), binary=True)


def _suite(words, *, name="words", settings=("alone", "bleached")) -> Suite:
    items = []
    for setting in settings:
        prefix = "" if setting == "alone" else "This is "
        for w in words:
            items.append(Item(context=prefix + w, word=w, char_start=len(prefix),
                              char_end=len(prefix) + len(w), setting=setting, stimulus_set="s"))
    return Suite(name=name, items=tuple(items))


def _sample(kv, n=400, seed=0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [kv.index_to_key[i] for i in sorted(rng.choice(len(kv), n, replace=False))]


def test_binary_vectors_equal_gensim(w2v: Path, gensim_kv) -> None:
    words = _sample(gensim_kv) + ["love", "John", "he", "she"]
    read = read_vectors(w2v, words)
    assert read.vocab_size == len(gensim_kv) == 26423 and read.dim == 300
    assert read.sha256 == hashlib.sha256(w2v.read_bytes()).hexdigest()
    assert read.size == w2v.stat().st_size
    for word in words:
        row, vec = read.vectors[word]
        assert row == gensim_kv.key_to_index[word]
        np.testing.assert_array_equal(vec, gensim_kv[word])  # bit for bit


def _subset(kv, words) -> KeyedVectors:
    out = KeyedVectors(kv.vector_size)
    out.add_vectors(list(words), np.stack([kv[w] for w in words]))
    return out


@pytest.mark.parametrize("kind", ["glove.txt", "w2v.txt", "ft.vec", "glove.txt.gz",
                                  "w2v.txt.bz2", "glove.zip", "small.bin"])
def test_text_and_compressed_formats_equal_gensim(tmp_path: Path, gensim_kv, kind: str) -> None:
    words = _sample(gensim_kv, n=600, seed=1)
    small = _subset(gensim_kv, words)
    header = not kind.startswith("glove")
    plain = tmp_path / ("plain.bin" if kind.endswith(".bin") else "plain.txt")
    small.save_word2vec_format(str(plain), binary=kind.endswith(".bin"), write_header=header)
    reference = KeyedVectors.load_word2vec_format(str(plain), binary=kind.endswith(".bin"),
                                                  no_header=not header)
    path = tmp_path / kind
    data = plain.read_bytes()
    if kind.endswith(".gz"):
        path.write_bytes(gzip.compress(data))
    elif kind.endswith(".bz2"):
        path.write_bytes(bz2.compress(data))
    elif kind.endswith(".zip"):
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("glove.6B.300d.txt", data)
    else:
        path.write_bytes(data)
    expected_format = {"glove": "glove", "w2v": "word2vec-text", "ft": "fasttext",
                       "small": "word2vec-binary"}[kind.split(".")[0]]
    assert is_vectors_file(path) and detect_format(path) == expected_format
    wanted = words[::7]
    read = read_vectors(path, wanted)
    assert read.vocab_size == 600 and read.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    for word in wanted:
        np.testing.assert_array_equal(read.vectors[word][1], reference[word])
        np.testing.assert_array_equal(read.vectors[word][1], gensim_kv[word])  # repr round-trips


def _write_binary(path: Path, words, vectors, *, newline=False) -> None:
    with open(path, "wb") as fh:
        fh.write(f"{len(words)} {vectors.shape[1]}\n".encode())
        for w, v in zip(words, vectors, strict=True):
            fh.write(w.encode() + b" " + v.astype("<f4").tobytes() + (b"\n" if newline else b""))


def test_memory_is_bounded_by_the_suite_not_the_vocabulary(tmp_path: Path) -> None:
    n, dim = 120_000, 25
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(n)]
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    binary, text = tmp_path / "big.bin", tmp_path / "big.txt"
    _write_binary(binary, words, vectors, newline=True)
    with open(text, "w") as fh:
        for w, v in zip(words[:40_000], vectors, strict=False):
            fh.write(w + " " + " ".join(f"{x:.5f}" for x in v) + "\n")
    wanted = ["w5", "w77777", "w119999", "nope"]
    full = vectors.nbytes  # what keeping every vector would take, before any dict overhead
    for path in (binary, text):
        tracemalloc.start()
        read = read_vectors(path, wanted)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert set(read.vectors) <= set(wanted) - {"nope"}
        assert peak < 2.5 * 2**20, f"{path.name}: peak {peak / 2**20:.1f} MiB"
        assert peak < full / 4
    read = read_vectors(binary, wanted)
    np.testing.assert_array_equal(read.vectors["w77777"][1], vectors[77777])
    assert read.vectors["w119999"][0] == 119999 and read.vocab_size == n


def test_store_from_static_vectors_equals_gensim(tmp_path: Path, w2v: Path, gensim_kv) -> None:
    words = ["love", "hate", "doctor", "nurse", "John", "engineer"]
    suite = _suite(words)
    for storage in ("float32", "float16"):
        store = tmp_path / f"w2v-{storage}.zarr"
        reports = extract(str(w2v), suite, str(store), storage_dtype=storage, progress=False)
        assert reports[0].n_items == 12 and reports[0].n_computed == 12
        s = emb.open_store(str(store))
        ds = s.dataset("words")
        assert list(ds.layer.values) == [0] and list(ds.pooling.values) == ["static"]
        stored = ds.embedding.sel(layer=0, pooling="static").values
        ref = np.stack([gensim_kv[w] for w in ds.word.values]).astype(storage)
        np.testing.assert_array_equal(stored, ref)  # float16: gensim's value rounded, nothing else
        np.testing.assert_array_equal(ds.subtoken_ids.values[:, 0],
                                      [gensim_kv.key_to_index[w] for w in ds.word.values])
        assert (ds.n_subtokens.values == 1).all() and (ds.token_end.values == 1).all()
        model = s.model
        assert model["source"] == "static" and model["format"] == "word2vec-binary"
        assert model["vocab_size"] == 26423 and model["hidden_size"] == 300
        assert model["sha256"] == model["fingerprint"] == hashlib.sha256(w2v.read_bytes()).hexdigest()
        assert model["file_size"] == w2v.stat().st_size
        assert s.validate(deep=True).status == "complete"
        assert "static" in emb.store.describe(s.info())
        extraction = ds.attrs["extraction"]
        assert extraction["poolings"] == ["static"] and "static word vectors" in extraction["layer_semantics"]


def test_missing_words_error_or_are_left_out_and_recorded(tmp_path: Path, w2v: Path) -> None:
    suite = _suite(["love", "zzqxj", "hate", "Qwertyuiop"])
    with pytest.raises(ModelError, match=r"2 of 4 words .* no vector .*'zzqxj'.*--allow-missing"):
        extract(str(w2v), suite, str(tmp_path / "a.zarr"), progress=False)
    assert not (tmp_path / "a.zarr").exists()  # refused before anything was written
    runner = load_vectors(w2v, [it.word for it in suite.items], allow_missing=True)
    extract(runner, suite, str(tmp_path / "b.zarr"), progress=False)
    ds = emb.open_store(str(tmp_path / "b.zarr")).dataset("words")
    assert sorted(set(ds.word.values)) == ["hate", "love"] and ds.sizes["item"] == 4
    assert np.isfinite(ds.embedding.values).all()  # no NaN stands in for a missing word
    record = ds.attrs["suite"]["parameters"]["vectors"]
    assert record["missing"] == ["zzqxj", "Qwertyuiop"] and record["n_items_left_out"] == 4
    assert record["n_words"] == 4 and record["allow_missing"] is True


def test_lowercase_fallback_is_recorded_per_item(tmp_path: Path) -> None:
    path = tmp_path / "tiny.txt"
    path.write_text("3 2\nlove 1 0\nLondon 0 1\nparis 0.5 0.5\n")
    suite = _suite(["Love", "London", "Paris", "love"])
    with pytest.raises(ModelError, match="--lowercase-fallback"):
        load_vectors(path, ["Love", "London", "Paris", "love"]).cover([suite])
    runner = load_vectors(path, [it.word for it in suite.items], lowercase_fallback=True)
    extract(runner, suite, str(tmp_path / "s.zarr"), storage_dtype="float32", progress=False)
    ds = emb.open_store(str(tmp_path / "s.zarr")).dataset("words")
    keys = dict(zip(ds.word.values.tolist(), ds.vector_key.values.tolist(), strict=False))
    assert keys == {"Love": "love", "London": "London", "Paris": "paris", "love": "love"}
    vec = dict(zip(ds.word.values.tolist(), ds.embedding.values[:, 0, 0].tolist(), strict=False))
    assert vec["Love"] == vec["love"] == [1.0, 0.0] and vec["Paris"] == [0.5, 0.5]
    assert ds.attrs["suite"]["parameters"]["vectors"]["lowercased"] == ["Love", "Paris"]


def test_an_interrupted_static_store_resumes_to_the_same_vectors(tmp_path: Path, w2v: Path,
                                                                 gensim_kv) -> None:
    import zarr

    suite = _suite(_sample(gensim_kv, n=40, seed=3), name="many")
    path = str(tmp_path / "r.zarr")
    extract(str(w2v), suite, path, block_size=16, progress=False)
    full = emb.open_store(path).dataset("many").embedding.values
    group = zarr.open_group(path, path="many", mode="a")
    group["_progress/done"][1] = 0  # as if killed before block 1 was written
    group["embedding"][16:32] = np.nan
    group.attrs["complete"] = False
    assert emb.open_store(path).validate().status == "incomplete"
    reports = extract(str(w2v), suite, path, block_size=16, progress=False)
    assert reports[0].blocks_written == 1
    np.testing.assert_array_equal(emb.open_store(path).dataset("many").embedding.values, full)


def test_bad_files_are_clear_errors(tmp_path: Path) -> None:
    good = np.ones((2, 3), dtype=np.float32)
    truncated = tmp_path / "t.bin"
    _write_binary(truncated, ["a", "b"], good)
    truncated.write_bytes(truncated.read_bytes()[:-5])
    with pytest.raises(ModelError, match="truncated"):
        read_vectors(truncated, ["a"])
    noheader = tmp_path / "n.vec"
    noheader.write_text("a 1 2 3\n")
    with pytest.raises(ModelError, match="header"):
        read_vectors(noheader, ["a"])
    ragged = tmp_path / "r.txt"
    ragged.write_text("a 1 2 3\nb 1 2\n")
    with pytest.raises(ModelError, match="line 2"):
        read_vectors(ragged, ["b"])
    short = tmp_path / "s.txt"
    short.write_text("3 2\na 1 2\nb 1 2\n")
    with pytest.raises(ModelError, match="header announces 3"):
        read_vectors(short, ["a"])
    unknown = tmp_path / "vectors.dat"
    unknown.write_text("a 1 2\n")
    with pytest.raises(ModelError, match="--vectors-format"):
        read_vectors(unknown, ["a"])
    assert read_vectors(unknown, ["a"], format="glove").vectors["a"][1].tolist() == [1.0, 2.0]
    with pytest.raises(ModelError, match="unknown vectors format"):
        read_vectors(unknown, ["a"], format="word2vec")  # type: ignore[arg-type]
    two = tmp_path / "two.zip"
    with zipfile.ZipFile(two, "w") as archive:
        archive.writestr("a.txt", "a 1\n")
        archive.writestr("b.txt", "b 1\n")
    with pytest.raises(ModelError, match="exactly one"):
        read_vectors(two, ["a"])
    with pytest.raises(ModelError, match="does not exist"):
        read_vectors(tmp_path / "missing.bin", ["a"])


def test_cli_extracts_a_static_store_and_reports_coverage(tmp_path: Path, w2v: Path,
                                                          monkeypatch) -> None:
    from emb.cli.main import main

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    refused = runner.invoke(main, ["extract", "--model", str(w2v), "--suite", "ibd", "--store",
                                   "s.zarr", "-q"])
    assert refused.exit_code != 0 and "--allow-missing" in refused.output
    assert "Traceback" not in refused.output
    done = runner.invoke(main, ["extract", "--model", str(w2v), "--suite", "ibd", "--store",
                                "s.zarr", "--allow-missing", "-q"])
    assert done.exit_code == 0, done.output
    assert "ibd: 75 of 170 words have a vector" in done.output
    assert "95 without one, their 190 items left out" in done.output
    info = runner.invoke(main, ["info", "s.zarr", "--json"])
    assert json.loads(info.output)["model"]["format"] == "word2vec-binary"
    assert runner.invoke(main, ["validate", "s.zarr"]).exit_code == 0
    flags = runner.invoke(main, ["extract", "--model", "gpt2", "--suite", "ibd", "--store",
                                 "x.zarr", "--allow-missing"])
    assert flags.exit_code != 0 and "static vectors files only" in flags.output


def test_suites_that_share_a_span_but_need_different_vectors_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "v.txt"
    path.write_text("2 2\nPresident 1 0\npresident 0 1\n")
    a = Suite(name="a", items=(Item(context="President said", word="President", char_start=0,
                                    char_end=9),))
    b = Suite(name="b", items=(Item(context="President said", word="president", char_start=0,
                                    char_end=9),))
    runner = load_vectors(path, ["President", "president"])
    with pytest.raises(ModelError, match="share"):
        runner.cover([a, b])


def test_built_in_suite_on_static_vectors(tmp_path: Path, w2v: Path) -> None:
    suite = build_suite("weat", select=["WEAT5"])
    extract(str(w2v), suite, str(tmp_path / "w.zarr"), progress=False)
    ds = emb.open_store(str(tmp_path / "w.zarr")).dataset("weat")
    assert ds.sizes["item"] == len(suite.items)  # WEAT5 is fully covered: nothing left out
    assert ds.attrs["suite"]["parameters"]["vectors"]["n_missing"] == 0


def test_a_bos_token_for_static_vectors_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "v.txt"
    path.write_text("2 2\nlove 1 0\nhate 0 1\n")
    suite = Suite(name="a", items=(Item(context="love", word="love", char_start=0, char_end=4),))
    with pytest.raises(EmbError, match="static word vectors, which have no tokens"):
        extract(str(path), suite, str(tmp_path / "s.zarr"), progress=False, bos_token="</s>")
    assert not (tmp_path / "s.zarr").exists()
