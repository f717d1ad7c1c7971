"""A local model's tokenizer files are part of its identity (issue 23's "never mixed"): the
weights' fingerprint alone let a run resume a store after the directory's tokenizer was edited
in place (another vocabulary, another BOS rule), mixing vectors of two tokenisations."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
import zarr

from emb.backends import load_model
from emb.errors import StoreMismatchError
from emb.extraction.pipeline import extract
from emb.schemas import datamodel as dm
from tests.store.test_pipeline import item, make_suite


def _suite(name: str):
    return make_suite([item(f"This is {w}.", w) for w in ("good", "bad", "nice")], name=name)


def _run(model_dir, store, name):
    return extract(load_model(model_dir, device="cpu"), _suite(name), str(store), progress=False)


def test_tokenizer_files_are_fingerprinted_apart_from_the_weights(tiny_gpt2_dir, tmp_path):
    info = load_model(tiny_gpt2_dir, device="cpu").info
    files = sorted(p for p in tiny_gpt2_dir.iterdir()
                   if p.name in {"vocab.json", "merges.txt", "tokenizer_config.json",
                                 "special_tokens_map.json", "tokenizer.json", "added_tokens.json"})
    assert files  # GPT-2's BPE files
    want = hashlib.sha256()
    for p in files:  # by hand: each file's name and sha256, in name order
        want.update(p.name.encode() + b"\0" + hashlib.sha256(p.read_bytes()).hexdigest().encode())
    assert info.tokenizer_fingerprint == want.hexdigest()
    assert info.to_dict()["tokenizer_fingerprint"] == want.hexdigest()
    # a copy of the directory elsewhere is the same model
    copy = tmp_path / "copy"
    shutil.copytree(tiny_gpt2_dir, copy)
    assert load_model(copy, device="cpu").info.tokenizer_fingerprint == info.tokenizer_fingerprint


def test_a_store_is_refused_to_a_tokenizer_edited_in_place(tiny_gpt2_dir, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(tiny_gpt2_dir, model)
    store = tmp_path / "s.zarr"
    _run(model, store, "first")
    _run(model, store, "second")  # the same directory, untouched: accepted
    config = model / "tokenizer_config.json"
    doc = json.loads(config.read_text())
    doc["add_bos_token"] = not doc.get("add_bos_token", False)  # another BOS rule, same weights
    config.write_text(json.dumps(doc))
    with pytest.raises(StoreMismatchError, match="tokenizer files"):
        _run(model, store, "third")
    assert "third" not in zarr.open_group(str(store), mode="r")  # nothing written


def test_a_store_that_records_no_tokenizer_fingerprint_is_checked_as_before(tiny_gpt2_dir, tmp_path):
    """Stores written before the fingerprint was recorded: the weights alone, as they were."""
    model = tmp_path / "model"
    shutil.copytree(tiny_gpt2_dir, model)
    store = tmp_path / "s.zarr"
    _run(model, store, "first")
    root = zarr.open_group(str(store), mode="a")
    attrs = dict(root.attrs[dm.ATTR_MODEL])
    del attrs["tokenizer_fingerprint"]
    root.attrs[dm.ATTR_MODEL] = attrs
    (model / "tokenizer_config.json").write_text(
        json.dumps({**json.loads((model / "tokenizer_config.json").read_text()), "x": 1}))
    (report,) = _run(model, store, "second")
    assert report.n_items == 3
