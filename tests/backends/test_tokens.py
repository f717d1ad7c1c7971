"""locate_subtokens and the BOS policy on real tokenizers (GPT-2 BPE, MiniLM WordPiece, a
SentencePiece-style BPE) and on synthetic offsets against a brute-force definition."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emb.backends.tokens import apply_bos, locate_subtokens
from emb.errors import ModelError, TargetNotFoundError

transformers = pytest.importorskip("transformers")


def span_of(context: str, word: str, occurrence: int = 1) -> tuple[int, int]:
    """The n-th case-insensitive whole-word match of word in context."""
    matches = list(re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", context, re.IGNORECASE))
    match = matches[occurrence - 1]
    return match.start(), match.end()


# (context, word, occurrence) -> the target's tokens, checked by eye against each vocabulary.
CASES = [
    ("I love you.", "love", 1),
    ("Love is all you need", "Love", 1),  # start of the sentence, capitalised
    ("We were unbelievably lucky", "unbelievably", 1),
    ("unbelievably", "unbelievably", 1),  # alone: no leading space
    ("Ask Bobbie-Sue today", "Bobbie-Sue", 1),
    ("They said (love) twice", "love", 1),  # brackets around the word
    ("What is love.", "love", 1),  # full stop after it
    ("I love love songs", "love", 2),  # the second of two occurrences
    ("He is a LOVELY guy", "LOVELY", 1),
    ("New  York is big", "New  York", 1),  # multi-word target with a double space
    ("I am  here", "here", 1),  # lone space token before the word
]
EXPECTED = {
    "gpt2": [
        ["Ġlove"], ["Love"], ["Ġunbelievably"], ["un", "bel", "iev", "ably"],
        ["ĠBob", "bie", "-", "S", "ue"], ["love"], ["Ġlove"], ["Ġlove"],
        ["ĠL", "OV", "ELY"], ["New", "Ġ", "ĠYork"], ["Ġhere"],
    ],
    "minilm": [
        ["love"], ["love"], ["un", "##bel", "##ie", "##va", "##bly"],
        ["un", "##bel", "##ie", "##va", "##bly"], ["bobbie", "-", "sue"], ["love"], ["love"],
        ["love"], ["lovely"], ["new", "york"], ["here"],
    ],
    "llama": [
        ["▁love"], ["▁Love"], ["▁unbelievably"], ["▁unbelievably"],
        ["▁Bob", "bie", "-", "S", "ue"], ["love"], ["▁love"], ["▁love"],
        ["▁L", "OV", "ELY"], ["▁New", "▁", "▁York"], ["▁here"],
    ],
}
# index of the target's first token in the tokenizer's own (default) encoding
FIRST_INDEX = {
    "gpt2": [1, 0, 2, 0, 1, 3, 2, 2, 3, 0, 3],
    "minilm": [2, 1, 3, 1, 2, 4, 3, 3, 4, 1, 3],
    "llama": [2, 1, 3, 1, 2, 4, 3, 3, 4, 1, 4],
}


@pytest.fixture(scope="module")
def tokenizers(tiny_gpt2_dir, minilm_path, tiny_llama_dir):
    load = transformers.AutoTokenizer.from_pretrained
    return {"gpt2": load(tiny_gpt2_dir), "minilm": load(minilm_path), "llama": load(tiny_llama_dir)}


@pytest.mark.parametrize("name", ["gpt2", "minilm", "llama"])
def test_locate_on_real_tokenizers(tokenizers, name):
    tokenizer = tokenizers[name]
    for (context, word, occurrence), tokens, first in zip(
        CASES, EXPECTED[name], FIRST_INDEX[name], strict=True
    ):
        start, end = span_of(context, word, occurrence)
        encoding = tokenizer(context, return_offsets_mapping=True)
        found = locate_subtokens(encoding["offset_mapping"], start, end, text=context)
        pieces = tokenizer.convert_ids_to_tokens([encoding["input_ids"][i] for i in found])
        assert pieces == tokens, (name, context)
        assert found[0] == first, (name, context)
        assert np.array_equal(found, np.arange(first, first + len(tokens)))
        # independent cross-check: the tokenizer's own char_to_token over the word's characters
        by_char = {encoding.char_to_token(c) for c in range(start, end) if not context[c].isspace()}
        assert by_char <= set(found.tolist())
        assert min(by_char) == found[0] and max(by_char) == found[-1]


@pytest.mark.parametrize("name", ["gpt2", "minilm", "llama"])
def test_second_occurrence_is_not_the_first(tokenizers, name):
    context = "I love love songs"
    encoding = tokenizers[name](context, return_offsets_mapping=True)
    first = locate_subtokens(encoding["offset_mapping"], *span_of(context, "love", 1), text=context)
    second = locate_subtokens(encoding["offset_mapping"], *span_of(context, "love", 2), text=context)
    assert second[0] == first[-1] + 1


def test_offsets_with_or_without_the_leading_space():
    # "I love you." as GPT-2 reports it ("Ġlove" = (1, 6)) and with trimmed offsets ((2, 6))
    with_space = [(0, 1), (1, 6), (6, 10), (10, 11)]
    trimmed = [(0, 1), (2, 6), (7, 10), (10, 11)]
    for offsets in (with_space, trimmed):
        assert locate_subtokens(offsets, 2, 6).tolist() == [1]
        assert locate_subtokens(offsets, 2, 6, text="I love you.").tolist() == [1]


def test_trailing_space_token_is_judged_by_its_visible_characters():
    # a tokenizer that attaches the following space to the token: "I " "love " "you."
    text = "I love you."
    offsets = [(0, 2), (2, 7), (7, 11)]
    assert locate_subtokens(offsets, 7, 10, text=text).tolist() == [2]
    assert locate_subtokens(offsets, 2, 6, text=text).tolist() == [1]


def test_special_tokens_are_ignored():
    offsets = [(0, 0), (0, 4), (5, 7), (0, 0)]
    assert locate_subtokens(offsets, 0, 4).tolist() == [1]
    assert locate_subtokens(np.asarray(offsets), 0, 7).tolist() == [1, 2]


@pytest.mark.parametrize("span", [(3, 3), (5, 2), (20, 25)])
def test_nothing_overlaps(span):
    with pytest.raises(TargetNotFoundError, match="span"):
        locate_subtokens([(0, 1), (1, 6), (6, 10)], *span)


def test_whitespace_only_span_is_not_found():
    text = "I  love"
    with pytest.raises(TargetNotFoundError):
        locate_subtokens([(0, 1), (1, 2), (2, 7)], 1, 2, text=text)


@st.composite
def tokenized(draw):
    """Random non-overlapping offsets (with gaps and zero-width specials) and a random span."""
    n = draw(st.integers(1, 12))
    position, offsets = 0, []
    for _ in range(n):
        if draw(st.booleans()) and draw(st.booleans()):
            offsets.append((0, 0))
            continue
        position += draw(st.integers(0, 2))
        length = draw(st.integers(1, 4))
        offsets.append((position, position + length))
        position += length
    start = draw(st.integers(0, position + 1))
    end = draw(st.integers(start + 1, position + 2))
    return offsets, start, end


@settings(max_examples=300, deadline=None)
@given(tokenized())
def test_locate_matches_brute_force(case):
    offsets, start, end = case
    covered = [
        i for i, (s, e) in enumerate(offsets) if e > s and set(range(s, e)) & set(range(start, end))
    ]
    if not covered:
        with pytest.raises(TargetNotFoundError):
            locate_subtokens(offsets, start, end)
        return
    between = [i for i in range(covered[0], covered[-1] + 1) if offsets[i][1] > offsets[i][0]]
    assert locate_subtokens(offsets, start, end).tolist() == between


# --- BOS policy --------------------------------------------------------------------------


def _encode(tokenizer, text, bos):
    encoding = tokenizer(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    return apply_bos(
        encoding["input_ids"], encoding["offset_mapping"], encoding["special_tokens_mask"],
        bos=bos, bos_token_id=tokenizer.bos_token_id,
    )


def test_bos_gpt2_not_added_by_default(tokenizers):
    tokenizer = tokenizers["gpt2"]
    text = "I love you."
    plain = tokenizer(text)["input_ids"]
    assert tokenizer.bos_token_id == 50256 and plain[0] != 50256
    for bos in (None, False):
        ids, offsets = _encode(tokenizer, text, bos)
        assert ids.tolist() == plain
    ids, offsets = _encode(tokenizer, text, True)
    assert ids.tolist() == [50256, *plain]
    assert offsets[0].tolist() == [0, 0]
    assert locate_subtokens(offsets, 2, 6, text=text).tolist() == [2]  # shifted by the BOS


def test_bos_llama_added_by_default(tokenizers):
    tokenizer = tokenizers["llama"]
    text = "I love you."
    plain = tokenizer(text)["input_ids"]
    assert plain[0] == tokenizer.bos_token_id == 1 and plain[1] != 1
    for bos in (None, True):  # True does not add a second one
        ids, _ = _encode(tokenizer, text, bos)
        assert ids.tolist() == plain
    ids, offsets = _encode(tokenizer, text, False)
    assert ids.tolist() == plain[1:]
    assert locate_subtokens(offsets, 2, 6, text=text).tolist() == [1]


def test_bos_bert_keeps_cls(tokenizers):
    tokenizer = tokenizers["minilm"]
    plain = tokenizer("I love you.")["input_ids"]
    assert tokenizer.bos_token_id is None and plain[0] == tokenizer.cls_token_id
    for bos in (None, True, False):
        ids, _ = _encode(tokenizer, "I love you.", bos)
        assert ids.tolist() == plain


def test_bos_true_without_any_start_token_is_an_error():
    with pytest.raises(ModelError, match="no BOS token"):
        apply_bos([5, 6], [(0, 1), (2, 3)], [0, 0], bos=True, bos_token_id=None)
    # without a special-tokens mask a zero-width first token counts as the tokenizer's own
    ids, _ = apply_bos([7, 5], [(0, 0), (0, 1)], bos=True, bos_token_id=None)
    assert ids.tolist() == [7, 5]


def test_bos_false_keeps_a_literal_bos_in_the_text():
    # the text itself starts with the BOS string: real offsets, not a special token added
    ids, _ = apply_bos([1, 5], [(0, 3), (4, 5)], [0, 0], bos=False, bos_token_id=1)
    assert ids.tolist() == [1, 5]


def test_a_chosen_bos_token_is_prepended_or_replaces_the_tokenizers(tokenizers):
    """--bos-token: prepended where the tokenizer adds no special token (GPT-2), put in place of
    the BOS token the tokenizer adds (Llama), kept where the tokenizer already starts with it,
    refused where the tokenizer starts with a special token that is not a BOS ([CLS])."""
    text = "I love you."

    def encode(name, chosen, bos=True):
        tokenizer = tokenizers[name]
        encoding = tokenizer(text, return_offsets_mapping=True, return_special_tokens_mask=True)
        return encoding["input_ids"], apply_bos(
            encoding["input_ids"], encoding["offset_mapping"], encoding["special_tokens_mask"],
            bos=bos, bos_token_id=tokenizer.bos_token_id, chosen_id=chosen,
        )

    plain, (ids, offsets) = encode("gpt2", 198)  # "\n" is one token of GPT-2's vocabulary
    assert ids.tolist() == [198, *plain] and offsets[0].tolist() == [0, 0]
    assert locate_subtokens(offsets, 2, 6, text=text).tolist() == [2]
    plain, (ids, offsets) = encode("llama", 2)  # Llama adds <s> (1); </s> (2) in its place
    assert plain[0] == 1 and ids.tolist() == [2, *plain[1:]]
    assert locate_subtokens(offsets, 2, 6, text=text).tolist() == locate_subtokens(
        tokenizers["llama"](text, return_offsets_mapping=True)["offset_mapping"], 2, 6
    ).tolist()
    plain, (ids, _) = encode("llama", 1)  # the tokenizer's own BOS chosen: unchanged
    assert ids.tolist() == plain
    with pytest.raises(ModelError, match="special token of its own .* not a BOS token"):
        encode("minilm", 100)
    for bos in (None, False):
        with pytest.raises(ValueError, match="needs bos=True"):
            encode("gpt2", 198, bos=bos)


def test_a_chosen_bos_token_keeps_a_literal_bos_in_the_text():
    # the text starts with the chosen token's string: real offsets, so the token is still put first
    ids, spans = apply_bos([9, 5], [(0, 3), (4, 5)], [0, 0], bos=True, bos_token_id=1, chosen_id=9)
    assert ids.tolist() == [9, 9, 5] and spans[1].tolist() == [0, 3]
