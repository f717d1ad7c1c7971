"""The vectorised ``HFRunner.encode`` equals the per-item encode it replaced
(tests/backends/_encode_reference.py) on random batches: the same ids (int32), targets (int64),
windows, read-only arrays, and the same errors with the same messages, for GPT-2's byte-level
BPE, MiniLM's uncased WordPiece, a SentencePiece-style BPE that puts ``<s>`` first (Llama), a
tokenizer that appends ``<|endoftext|>`` (T5-like), an LLM family's tokenizer (Mistral) and
SmolLM2's tokenizer read from its GGUF file;
and ``locate_batch``/``apply_bos_batch`` equal ``locate_subtokens``/``apply_bos`` item by item
on synthetic offsets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emb.backends.tokens import apply_bos, apply_bos_batch, locate_batch, locate_subtokens
from emb.errors import ModelError, TargetNotFoundError
from tests import models
from tests.backends._encode_reference import reference_encode

pytest.importorskip("transformers")

# words with repeats, capitals, hyphens, brackets, accents, CJK, emoji, combining marks; and
# every kind of whitespace str.isspace knows between them
WORDS = [
    "love", "Love", "LOVE", "lovely", "unbelievably", "Bobbie-Sue", "(love)", "love.", "I",
    "a", "New", "York", "café", "naïve", "日本語", "😀", "e\u0301", "don't", "3.14", "--", "",
]
SPACES = [" ", " ", " ", "  ", "\t", "\n", "\u00a0", "\u3000", "\u2009", " \n "]


@st.composite
def items(draw):
    """A context and a span: a word's span, part of a word, several words, or any span at all
    (empty, reversed, outside the context) that must fail the same way."""
    n_words = draw(st.integers(1, 8))
    words = [draw(st.sampled_from(WORDS)) for _ in range(n_words)]
    gaps = [draw(st.sampled_from(SPACES)) for _ in range(n_words + 1)]
    lead = draw(st.booleans())
    context, starts, ends = gaps[0] if lead else "", [], []
    for word, gap in zip(words, gaps[1:], strict=True):
        starts.append(len(context))
        context += word
        ends.append(len(context))
        context += gap
    if not draw(st.booleans()):
        context = context.rstrip()
    kind = draw(st.sampled_from(["word", "word", "words", "inside", "any"]))
    i = draw(st.integers(0, n_words - 1))
    if kind == "word":
        span = (starts[i], ends[i])
    elif kind == "words":
        j = draw(st.integers(i, n_words - 1))
        span = (starts[i], ends[j])
    elif kind == "inside":
        a = draw(st.integers(starts[i], max(starts[i], ends[i] - 1)))
        span = (a, draw(st.integers(a, ends[i])))
    else:
        span = (draw(st.integers(-3, len(context) + 3)), draw(st.integers(-3, len(context) + 3)))
    return context, span


def encode_both(runner, contexts, spans, **options):
    """Each encode's result, or its error as (type, message, failures)."""
    results = []
    for encode in (runner.encode, lambda *a, **k: reference_encode(runner, *a, **k)):
        try:
            results.append(encode(contexts, spans, **options))
        except (TargetNotFoundError, ModelError, ValueError) as error:
            results.append((type(error), str(error), getattr(error, "failures", None)))
    return results


def assert_same(new, old):
    if isinstance(old, tuple) or isinstance(new, tuple):
        assert new == old
        return
    assert len(new) == len(old)
    for a, b in zip(new, old, strict=True):
        assert a.input_ids.dtype == b.input_ids.dtype == np.int32
        assert a.target.dtype == b.target.dtype == np.int64
        np.testing.assert_array_equal(a.input_ids, b.input_ids)
        np.testing.assert_array_equal(a.target, b.target)
        assert a.window == b.window
        assert not a.input_ids.flags.writeable and not a.target.flags.writeable


@pytest.fixture(scope="module")
def mistral_runner(tmp_path_factory):
    from emb.backends import load_model

    directory = models.tiny_family(tmp_path_factory.mktemp("mistral"), "mistral")
    return load_model(directory, dtype="float32", device="cpu")


@pytest.fixture(scope="module")
def smollm2_tokenizer_runner(smollm2_path):
    """SmolLM2's own tokenizer (a byte-level BPE read from its GGUF file, as load_model reads
    it) in a runner whose model only states 128 positions: encode never runs the model."""
    from types import SimpleNamespace

    import torch
    from transformers import AutoTokenizer

    from emb.backends._hf_runner import HFRunner

    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_path.parent), gguf_file=smollm2_path.name)
    model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=models.POSITIONS))
    info = SimpleNamespace(tokenizer=f"{type(tokenizer).__name__} ({smollm2_path.name})")
    return HFRunner(model, tokenizer, torch.device("cpu"), info)  # type: ignore[arg-type]


RUNNERS = [
    "gpt2_runner", "minilm_runner", "llama_runner", "t5_runner", "mistral_runner",
    "smollm2_tokenizer_runner",
]
POLICIES = [(None, None), (True, None), (False, None), (True, 13), (False, 13), (None, 13)]


@pytest.mark.parametrize("through", ["rust", "transformers"])
@pytest.mark.parametrize("runner_name", RUNNERS)
def test_encode_equals_the_per_item_reference(request, monkeypatch, runner_name, through):
    """Tokens read from the Rust encodings (every tokenizer here) or through the tokenizer's
    own call (the path of overridden classes and transformers 4)."""
    from emb.backends import _hf_runner

    runner = request.getfixturevalue(runner_name)
    assert _hf_runner._backend_encodings(runner.tokenizer, ["I love you."]) is not None
    if through == "transformers":
        monkeypatch.setattr(_hf_runner, "_backend_encodings", lambda tokenizer, contexts: None)

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        batch=st.lists(items(), min_size=1, max_size=12),
        policy=st.sampled_from(POLICIES),
    )
    def check(batch, policy):
        contexts, spans = [c for c, _ in batch], [s for _, s in batch]
        bos, chosen = policy
        new, old = encode_both(runner, contexts, spans, bos=bos, bos_token_id=chosen)
        assert_same(new, old)

    check()


def test_the_rust_encodings_are_read_only_under_transformers_own_call():
    """The tokenizer classes of the families emb supports take the direct path; a class that
    overrides the call (CodeLlama's ``_encode_plus``) or a non-str context takes the call."""
    import transformers

    from emb.backends._hf_runner import _backend_encodings, _own_call

    families = [
        "LlamaTokenizer", "GemmaTokenizer", "Qwen2Tokenizer", "GPT2Tokenizer", "GPTNeoXTokenizer",
        "BertTokenizer", "T5Tokenizer", "PreTrainedTokenizerFast",
    ]
    assert all(_own_call(getattr(transformers, name)) for name in families)
    assert not _own_call(transformers.CodeLlamaTokenizer)

    class Overridden(transformers.GPT2Tokenizer):
        def _encode_plus(self, *args, **kwargs):
            return super()._encode_plus(*args, **kwargs)

    assert not _own_call(Overridden)
    vocab, merges = models.gpt2_bpe()
    tokenizer = transformers.GPT2Tokenizer(vocab=dict(vocab), merges=list(merges))
    assert _backend_encodings(tokenizer, ["a", b"b"]) is None  # type: ignore[list-item]
    # truncation and padding set on the Rust tokenizer are turned off, as the call turns them off
    texts = ["I love you very much.", "Hi"]
    tokenizer.backend_tokenizer.enable_truncation(2)
    tokenizer.backend_tokenizer.enable_padding(length=9)
    direct = _backend_encodings(tokenizer, texts)
    tokenizer.backend_tokenizer.enable_truncation(2)
    tokenizer.backend_tokenizer.enable_padding(length=9)
    called = tokenizer(texts, return_offsets_mapping=True, return_special_tokens_mask=True)
    assert [e.ids for e in direct] == called["input_ids"]
    assert [e.offsets for e in direct] == called["offset_mapping"]
    assert [e.special_tokens_mask for e in direct] == called["special_tokens_mask"]
    assert [len(e.ids) for e in direct] == [6, 1]


@pytest.mark.parametrize("runner_name", ["gpt2_runner", "llama_runner", "minilm_runner"])
def test_long_contexts_are_cut_as_before(request, runner_name):
    """Contexts past the model's positions (128 here; MiniLM's 512) are cut around the target,
    which sits at the start, in the middle or at the end."""
    runner = request.getfixturevalue(runner_name)
    filler = 600 if runner_name == "minilm_runner" else 150

    @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        batch=st.lists(
            st.tuples(items(), st.sampled_from([0, filler // 2, filler])), min_size=1, max_size=3
        ),
        policy=st.sampled_from(POLICIES[:3]),
    )
    def check(batch, policy):
        contexts, spans = [], []
        for (context, (start, end)), before in batch:
            prefix = "x " * before
            contexts.append(prefix + context + " y" * (filler - before))
            spans.append((start + len(prefix), end + len(prefix)))
        new, old = encode_both(runner, contexts, spans, bos=policy[0])
        assert_same(new, old)
        if not isinstance(new, tuple):
            assert all(enc.window is not None for enc in new)

    check()


def test_a_suite_of_every_kind_at_once(gpt2_runner, llama_runner):
    """One batch mixing found targets, zero-token contexts and the same context twice."""
    contexts = ["I love you.", "", "I love you.", "  love  ", "日本語 love", "a\u3000 b"]
    spans = [(2, 6), (0, 1), (2, 6), (2, 6), (4, 8), (3, 4)]
    for runner in (gpt2_runner, llama_runner):
        for bos in (None, True, False):
            new, old = encode_both(runner, contexts, spans, bos=bos)
            assert_same(new, old)
            assert new[0] is TargetNotFoundError and "item 1:" in new[1]
        good = [0, 2, 3, 4, 5]
        new, old = encode_both(runner, [contexts[i] for i in good], [spans[i] for i in good])
        assert_same(new, old)
        # the toy SentencePiece vocabulary has no CJK or ideographic-space pieces
        assert len(new) == 5 if runner is gpt2_runner else new[0] is TargetNotFoundError


# ---- the vectorised helpers against their one-item definitions on synthetic offsets ----


@st.composite
def tokenized(draw):
    """A context and offsets as a tokenizer might give them: increasing, possibly overlapping
    by a character (byte-level BPE), with zero-width special tokens anywhere."""
    text = draw(st.text(st.sampled_from(list("ab é日 \t\n\u3000\u00a0")), max_size=14))
    offsets, position = [], 0
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.integers(0, 4)) == 0:
            offsets.append((position, position) if draw(st.booleans()) else (0, 0))
            continue
        start = max(0, position - draw(st.integers(0, 1)))
        end = min(len(text) + draw(st.integers(0, 1)), start + draw(st.integers(1, 4)))
        offsets.append((start, max(start, end)))
        position = max(position, end)
    span = (draw(st.integers(-2, len(text) + 2)), draw(st.integers(-2, len(text) + 2)))
    return text, offsets, span


@settings(max_examples=300, deadline=None)
@given(batch=st.lists(tokenized(), min_size=1, max_size=6))
def test_locate_batch_equals_locate_subtokens_item_by_item(batch):
    texts = [t for t, _, _ in batch]
    lengths = np.array([len(o) for _, o, _ in batch], dtype=np.int64)
    flat = np.array([p for _, o, _ in batch for p in o], dtype=np.int64).reshape(-1, 2)
    targets, bounds, found = locate_batch(flat, lengths, [s for _, _, s in batch], texts)
    for i, (text, offsets, (start, end)) in enumerate(batch):
        try:
            expected = locate_subtokens(offsets, start, end, text=text)
        except TargetNotFoundError:
            assert not found[i] and bounds[i] == bounds[i + 1]
            continue
        assert found[i]
        np.testing.assert_array_equal(targets[bounds[i] : bounds[i + 1]], expected)


@settings(max_examples=300, deadline=None)
@given(
    firsts=st.lists(
        st.tuples(st.sampled_from([0, 1, 2, 7]), st.booleans(), st.booleans(), st.integers(0, 3)),
        min_size=1, max_size=6,
    ),
    bos=st.sampled_from([None, True, False]),
    bos_token_id=st.sampled_from([None, 1, 2]),
    chosen=st.sampled_from([None, 1, 7]),
)
def test_apply_bos_batch_equals_apply_bos_item_by_item(firsts, bos, bos_token_id, chosen):
    """Contexts start with id 0/1/2/7, zero-width or not, flagged special or not, and have 0–3
    tokens; each context's outcome (or the first error) is apply_bos's."""
    ids, offsets, masks, lengths = [], [], [], []
    for first, zero, flag, n in firsts:
        row = [first, *range(10, 10 + n - 1)][:n]
        ids.append(row)
        offsets.append([(0, 0) if zero and k == 0 else (k, k + 1) for k in range(n)])
        masks.append([int(flag and k == 0) for k in range(n)])
        lengths.append(n)
    options = dict(bos=bos, bos_token_id=bos_token_id, chosen_id=chosen, tokenizer_name="tok")
    expected, error = [], None
    if bos is not None:
        try:
            for row, pairs, mask in zip(ids, offsets, masks, strict=True):
                expected.append(apply_bos(row, pairs, mask, **options)[0].tolist())
        except (ModelError, ValueError) as raised:
            error = raised
    else:
        expected = ids
    flat_offsets = np.array([p for o in offsets for p in o], dtype=np.int64).reshape(-1, 2)
    call = lambda: apply_bos_batch(  # noqa: E731
        np.array([i for r in ids for i in r], dtype=np.int64), flat_offsets,
        np.array(lengths, dtype=np.int64), np.array([m for r in masks for m in r]), **options,
    )
    if error is not None:
        with pytest.raises(type(error)) as raised:
            call()
        assert str(raised.value) == str(error)
        return
    out, new_lengths, shift = call()
    bounds = np.concatenate([[0], np.cumsum(new_lengths)])
    got = [out[bounds[i] : bounds[i + 1]].tolist() for i in range(len(ids))]
    assert got == expected
    assert (new_lengths - np.array(lengths) == shift).all()
