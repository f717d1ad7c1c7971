"""Stored vectors equal a direct ``model(..., output_hidden_states=True)`` call, pooled by hand.

The reference here shares no code with emb's runner: it tokenises each sentence alone with the
Hugging Face tokenizer, finds the target's tokens from the offsets with a few lines of its own,
runs the model on that one sentence, and pools with numpy.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

import emb
from emb.backends import load_model
from emb.extraction.pipeline import extract
from tests.store.test_pipeline import item, make_suite

SENTENCES = [
    ("This is love.", "love", 0),
    ("Unbelievably, the cat sat.", "Unbelievably", 0),
    ("I love love songs", "love", 1),  # the second occurrence
    ("(Bobbie-Sue) waved.", "Bobbie-Sue", 0),
    ("A huge dog barked at the postman.", "postman", 0),
    ("aardvark", "aardvark", 0),
]


def _suite():
    items = [item(ctx, word, setting="random", occurrence=occ) for ctx, word, occ in SENTENCES]
    return make_suite(items, name="vectors")


@functools.lru_cache(maxsize=2)
def _load(model_dir):
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    return tok, model.get_encoder() if model.config.is_encoder_decoder else model


def _reference(model_dir, context, start, end):
    tok, model = _load(model_dir)
    enc = tok(context, return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping")[0].tolist()
    idx = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    assert idx, (context, offsets)
    with torch.no_grad():
        states = model(input_ids=enc["input_ids"], output_hidden_states=True).hidden_states
    h = np.stack([s[0].numpy() for s in states])[:, idx]  # (layer, n_sub, feature)
    return np.stack([h[:, 0], h[:, -1], h.mean(1), h.max(1)], axis=1), len(idx)


@pytest.mark.parametrize("fixture", ["tiny_gpt2_dir", "tiny_bert_dir", "tiny_t5_dir",
                                     "tiny_llama_dir", "minilm_path"])
@pytest.mark.parametrize("storage", ["float16", "float32"])
def test_store_equals_direct_model_call(fixture, storage, request, tmp_path):
    model_dir = str(request.getfixturevalue(fixture))
    suite = _suite()
    path = str(tmp_path / "s.zarr")
    extract(load_model(model_dir), suite, path, storage_dtype=storage, batch_size=4, progress=False)
    ds = emb.open_store(path).dataset("vectors")
    assert list(ds.pooling.values) == ["first", "last", "mean", "max"]
    for i, it in enumerate(suite.items):
        want, n_sub = _reference(model_dir, it.context, it.char_start, it.char_end)
        got = ds.embedding.isel(item=i).values.astype(np.float64)
        assert int(ds.n_subtokens[i]) == n_sub
        if storage == "float16":  # half precision: 2**-11 relative, plus tiny-value slack
            np.testing.assert_allclose(got, want, rtol=2**-10, atol=1e-3 * np.abs(want).max())
        else:
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def test_float16_output_rounds_like_numpy(tiny_gpt2_dir):
    runner = load_model(str(tiny_gpt2_dir))
    enc = runner.encode([c for c, _, _ in SENTENCES],
                        [(c.index(w), c.index(w) + len(w)) for c, w, _ in SENTENCES])
    full = runner.embed(enc, batch_size=4)
    half = runner.embed(enc, batch_size=4, out_dtype="float16")
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half, full.astype(np.float16))
