"""``emb extract | info | validate | suites | zip`` end to end, and bad input: a clear message,
a non-zero exit, and nothing half-written."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import emb
from emb.cli.main import main
from emb.extraction.pipeline import extract
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
    result = run("extract", "-m", gpt2_dir, "-s", suite, "--store", store, "--pooling", "mean,last",
                 "--storage-dtype", "float32", "-q")
    ds = emb.open_store(str(store)).dataset("mine")
    assert list(ds.pooling.values) == ["mean", "last"] and ds.embedding.dtype == np.float32
    assert list(ds.char_start.values) == [8, 7]
    # the summary sets the estimate printed before the run against the time it took
    assert re.search(r"^time: estimated ~.* \(.*–.*\), took .* × the estimate", result.output, re.M), \
        result.output
    again = run("extract", "-m", gpt2_dir, "-s", suite, "--store", store, "--pooling", "mean,last",
                "--storage-dtype", "float32", "-q")
    assert "already complete" in again.output and "time:" not in again.output  # nothing estimated ran


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
    run("extract", "-m", gpt2_dir, "-s", "weat", "--test", "WEAT1", "--store", store, "-q")
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
    run("extract", "-m", gguf, "-s", "weat", "--test", "WEAT7", "--store", store, "-q",
        "--batch-size", "16")
    info = emb.open_store(str(store)).info()
    assert info.model["n_layers"] == 30 and info.model["hidden_size"] == 576
    assert info.model["source"] == "gguf" and info.complete
    ds = emb.open_store(str(store)).dataset("weat")
    assert ds.sizes["layer"] == 31 and np.isfinite(ds.embedding.values).all()


# -- bad input: a clear message, a non-zero exit, nothing half-written ------------------------------
def _no_traceback(result) -> None:
    assert "Traceback" not in result.output and "np.str_" not in result.output, result.output


@pytest.fixture()
def small_suite(tmp_path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text("name: small\nitems:\n  - {context: 'This is {target}.', word: love}\n"
                    "  - {context: 'This is {target}.', word: war}\n")
    return path


def test_store_paths_emb_cannot_write_are_refused(gpt2_dir, small_suite, tmp_path):
    file = tmp_path / "file.txt"
    file.write_text("x")
    for store, needle in ((file, "is a file, not a store"),
                          (file / "s.zarr", "lies under the file"),
                          (tmp_path / "s.zarr.zip", "cannot write into zip file")):
        res = run("extract", "-m", gpt2_dir, "-s", small_suite, "--store", store, "-q", ok=False)
        _assert_failed(res, "StoreError", needle)
        _no_traceback(res)
    assert file.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == [
        "file.txt", "small.yaml"]


def test_bad_group_names_on_the_command_line(gpt2_dir, small_suite, tmp_path):
    store = tmp_path / "s.zarr"
    run("extract", "-m", gpt2_dir, "-s", small_suite, "--store", store, "-q")
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    for name in ("", "/", "a/b", "../x", ".", "n" * 300):
        res = run("extract", "-m", gpt2_dir, "-s", small_suite, "--store", store, "-q",
                  "--name", name, "--overwrite", ok=False)
        _assert_failed(res, "StoreError", "is not allowed", "--name")
        _no_traceback(res)
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before
    assert run("validate", store).exit_code == 0


def test_negative_seed_is_refused_before_anything(gpt2_dir, lexicon, corpus, tmp_path):
    store = tmp_path / "s.zarr"
    res = run("extract", "-m", gpt2_dir, "-s", "vast", "--lexicon", lexicon, "--corpus", corpus,
              "--seed", "-1", "--store", store, ok=False)
    _assert_failed(res, "SuiteError", "--seed", "-1")
    _no_traceback(res)
    assert not store.exists()


def test_options_of_another_suite_are_refused(gpt2_dir, small_suite, tmp_path):
    store = tmp_path / "s.zarr"
    res = run("extract", "-m", gpt2_dir, "-s", "weat", "--corpus", tmp_path / "nonexistent",
              "--store", store, ok=False)
    assert res.exit_code == 2 and "--corpus belongs to suite vast" in res.output, res.output
    res = run("extract", "-m", gpt2_dir, "-s", small_suite, "--seed", "3", "--store", store,
              ok=False)
    assert res.exit_code == 2 and "--seed belongs to suite vast" in res.output, res.output
    assert not store.exists()


def test_zip_targets_that_cannot_be_written(gpt2_dir, small_suite, tmp_path):
    store = tmp_path / "s.zarr"
    run("extract", "-m", gpt2_dir, "-s", small_suite, "--store", store, "-q")
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    for target, needle in ((tmp_path / "missing" / "s.zip", "does not exist"),
                           (store / "s.zip", "inside the zarr store"),
                           (store, "exists")):
        res = run("zip", store, target, ok=False)
        _assert_failed(res, "StoreError", needle)
        _no_traceback(res)
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("content, needle", [(b"", "0 bytes: empty"), (b"not a zip", "BadZipFile")])
def test_broken_zip_is_a_clear_error(tmp_path, content, needle):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(content)
    res = run("info", bad, ok=False)
    _assert_failed(res, "StoreError", "not a readable zip file", needle)
    _no_traceback(res)
    res = run("validate", bad, ok=False)
    assert res.exit_code == 2 and "not a readable zip file" in res.output


def test_same_local_model_by_fingerprint_not_by_path(gpt2_dir, small_suite, tmp_path):
    import shutil

    store = tmp_path / "s.zarr"
    run("extract", "-m", gpt2_dir, "-s", small_suite, "--store", store, "-q")
    run("extract", "-m", gpt2_dir + "/", "-s", small_suite, "--store", store, "-q")  # same suite
    copy = tmp_path / "copy-of-gpt2"
    shutil.copytree(gpt2_dir, copy)
    out = run("extract", "-m", copy, "-s", small_suite, "--store", store, "-q", "--name",
              "again").output
    assert "again: 2 items" in out and "status    complete" in out


def _custom_code_model(source: str, target: Path, marker: Path) -> Path:
    import shutil

    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    config["model_type"] = "emb-test-custom"
    config["auto_map"] = {"AutoConfig": "modeling_custom.CustomConfig",
                          "AutoModel": "modeling_custom.CustomModel"}
    (target / "config.json").write_text(json.dumps(config))
    (target / "modeling_custom.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "from transformers import BertConfig, BertModel\n"
        "class CustomConfig(BertConfig):\n    model_type = 'emb-test-custom'\n"
        "class CustomModel(BertModel):\n    config_class = CustomConfig\n"
    )
    return target


def test_model_with_its_own_code_is_refused_quickly_with_stdin_open(bert_dir, small_suite, tmp_path):
    import os
    import subprocess
    import sys
    import time

    marker = tmp_path / "code-ran"
    model = _custom_code_model(bert_dir, tmp_path / "custom", marker)
    store = tmp_path / "s.zarr"
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from emb.cli.main import main; main()", "extract", "-m", str(model),
         "-s", str(small_suite), "--store", str(store), "-q"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    try:  # stdin stays open and silent: a prompt would block until the timeout
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert time.monotonic() - t0 < 120
    assert proc.returncode == 1 and "ModelError" in out and "--trust-remote-code" in out, out
    assert "auto_map" in out and "Traceback" not in out
    assert not marker.exists() and not store.exists()


def test_transformers_is_told_not_to_run_model_code(bert_dir, tmp_path, monkeypatch):
    """Without emb's own check, transformers still gets trust_remote_code=False and refuses."""
    from emb.backends import _hf_loading as model_module
    from emb.errors import ModelError

    marker = tmp_path / "code-ran"
    model = _custom_code_model(bert_dir, tmp_path / "custom", marker)
    monkeypatch.setattr(model_module, "_refuse_own_code", lambda *a: None)
    with pytest.raises(ModelError, match="--trust-remote-code"):
        model_module.load_model(model, device="cpu")
    assert not marker.exists()


def test_trust_remote_code_runs_it_and_is_recorded(bert_dir, small_suite, tmp_path):
    marker = tmp_path / "code-ran"
    model = _custom_code_model(bert_dir, tmp_path / "custom", marker)
    store = tmp_path / "s.zarr"
    run("extract", "-m", model, "-s", small_suite, "--store", store, "-q", "--trust-remote-code")
    assert marker.exists()
    info = emb.open_store(str(store)).model
    assert info["trust_remote_code"] is True and info["weights_format"] == "safetensors"


def test_pickled_weights_are_loaded_safely_or_refused(bert_dir, small_suite, tmp_path):
    import shutil

    import torch
    from safetensors.torch import load_file

    plain = tmp_path / "plain"
    shutil.copytree(bert_dir, plain)
    state = load_file(plain / "model.safetensors")
    (plain / "model.safetensors").unlink()
    torch.save(state, plain / "pytorch_model.bin")  # tensors only: torch's safe loader takes it
    store = tmp_path / "s.zarr"
    run("extract", "-m", plain, "-s", small_suite, "--store", store, "-q")
    assert emb.open_store(str(store)).model["weights_format"].startswith("pickle (torch.load weights_only")

    marker = tmp_path / "unpickled"
    evil = tmp_path / "evil"
    shutil.copytree(plain, evil)
    torch.save({**state, "payload": _Payload(str(marker))}, evil / "pytorch_model.bin")
    store = tmp_path / "t.zarr"
    res = run("extract", "-m", evil, "-s", small_suite, "--store", store, ok=False)
    _assert_failed(res, "ModelError", "weights_only=True", "refuses", "safetensors")
    _no_traceback(res)
    assert "weights_only=False" not in res.output
    assert not marker.exists() and not store.exists()


class _Payload:
    """A pickle that would create a file when unpickled (it calls ``open``): code, not data."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_targets_of_unknown_tokens_are_warned_about_and_recorded(bert_dir, tmp_path):
    suite = tmp_path / "unk.yaml"
    suite.write_text(
        "name: unk\nitems:\n  - {context: 'This is {target}.', word: love}\n"
        "  - {context: 'This is {target}.', word: '😀'}\n"
        "  - {context: 'I feel {target} today', word: '😀'}\n"
        "  - {context: 'This is {target}.', word: '🙂'}\n"
    )
    store = tmp_path / "s.zarr"
    result = CliRunner().invoke(main, ["extract", "-m", bert_dir, "-s", str(suite), "--store",
                                       str(store), "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    warning = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "3 of 4 targets" in warning[0] and "'😀'" in warning[0]
    assert "unknown token" in warning[0] and "np.str_" not in warning[0]
    recorded = emb.open_store(str(store)).dataset("unk").attrs["extraction"]["unknown_targets"]
    assert recorded == {"n_items": 3, "words": ["😀", "🙂"]}
