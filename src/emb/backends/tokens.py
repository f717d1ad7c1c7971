"""Locate a target word among its context's subtokens, and the BOS-token policy (torch-free).

A fast (Rust) tokenizer reports, for every token, the character span ``[start, end)`` of the
original text it came from (its *offsets*).  The target's subtokens are the tokens whose offsets
overlap the target's character span; special tokens added by the tokenizer (``[CLS]``, ``<s>``,
``</s>``) have zero-width offsets and never belong to a target.

This works the same way for byte-level BPE (GPT-2: ``"Ġlove"`` with or without the space in its
offsets), SentencePiece-style tokens (``"▁love"``, or a lone ``"▁"`` before ``"("``), WordPiece
(``"un" "##bel" "##ie" ...``), lower-casing tokenizers (offsets point into the original text), and
repeated words (only the requested span counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from emb.errors import ModelError, TargetNotFoundError

__all__ = ["apply_bos", "locate_subtokens"]


def _as_offsets(offsets: Any) -> np.ndarray:
    array = np.asarray(offsets, dtype=np.int64)
    if array.size == 0:
        return array.reshape(0, 2)
    if array.ndim != 2 or array.shape[1] != 2:
        raise ValueError(
            f"offsets must be a sequence of (start, end) pairs; got an array of shape {array.shape}"
        )
    return array


def locate_subtokens(
    offsets: Sequence[tuple[int, int]] | np.ndarray,
    char_start: int,
    char_end: int,
    *,
    text: str | None = None,
) -> np.ndarray:
    """Indices of the tokens that make up the character span ``[char_start, char_end)``.

    Parameters
    ----------
    offsets : sequence of (start, end) pairs or array (n_tokens, 2)
        Each token's character span in the context, as a fast tokenizer returns it
        (``return_offsets_mapping=True``).  Zero-width pairs (special tokens) are ignored.
    char_start, char_end : int
        The target's character span in the context, end exclusive.
    text : str, optional
        The context.  When given, each token's span is first trimmed of surrounding whitespace, so a
        token that carries the space before or after the target (``"Ġlove"``, ``"▁love"``,
        ``"love▁"``) is judged by its visible characters only.

    Returns
    -------
    numpy.ndarray of int64, shape (n_subtokens,)
        Increasing token indices: every non-special token from the first to the last one whose
        (trimmed) span overlaps the target, i.e. a token ``[s, e)`` with ``s < char_end`` and
        ``e > char_start``.  Whitespace-only tokens lying inside a multi-word target are kept.

    Raises
    ------
    TargetNotFoundError
        When the span is empty or no token overlaps it.

    Notes
    -----
    Overlap, not containment, is used: a target that is part of a longer token (``"love"`` inside
    ``"lovely"``) gets that token, and a token that straddles the target's boundary
    (``"Ġ("`` before ``"love"`` in ``" (love)"``) does not belong to it unless its visible
    characters overlap the target.

    Examples
    --------
    >>> locate_subtokens([(0, 0), (0, 1), (1, 6), (6, 7), (0, 0)], 2, 6).tolist()
    [2]
    """
    char_start, char_end = int(char_start), int(char_end)
    # plain Python over the (start, end) pairs: contexts are a few dozen tokens, and per-item
    # numpy calls cost more than the loop (tokenising a suite spent half its time here)
    spans = offsets.tolist() if isinstance(offsets, np.ndarray) else offsets
    if char_end <= char_start:
        raise TargetNotFoundError(
            f"the target span [{char_start}, {char_end}) is empty; give char_start < char_end"
        )
    hits = []
    for i, pair in enumerate(spans):
        start, end = int(pair[0]), int(pair[1])
        # zero-width tokens are special tokens added by the tokenizer
        if not (start < end and start < char_end and end > char_start):
            continue
        if text is not None:  # judge the token by its visible characters only
            piece = text[start:end]
            lead = len(piece) - len(piece.lstrip())
            if lead == len(piece):  # whitespace only: no visible character of its own
                continue
            if not (start + lead < char_end and end - (len(piece) - len(piece.rstrip())) > char_start):
                continue
        hits.append(i)
    if not hits:
        shown = f" {text[char_start:char_end]!r}" if text is not None else ""
        raise TargetNotFoundError(
            f"no token overlaps the target span [{char_start}, {char_end}){shown} "
            f"among {len(spans)} tokens; check that the span lies inside the context and covers "
            "visible characters"
        )
    inside = [i for i in range(hits[0], hits[-1] + 1) if spans[i][1] > spans[i][0]]
    return np.array(inside, dtype=np.int64)


def apply_bos(
    input_ids: Sequence[int] | np.ndarray,
    offsets: Sequence[tuple[int, int]] | np.ndarray,
    special_mask: Sequence[int] | np.ndarray | None = None,
    *,
    bos: bool | None,
    bos_token_id: int | None,
    chosen_id: int | None = None,
    tokenizer_name: str = "the tokenizer",
) -> tuple[np.ndarray, np.ndarray]:
    """Apply the BOS-token policy to one tokenized context.

    Parameters
    ----------
    input_ids : sequence of int
        Token ids as the tokenizer returned them with ``add_special_tokens=True``.
    offsets : sequence of (start, end) pairs
        Their character offsets (zero-width for special tokens).
    special_mask : sequence of 0/1, optional
        The tokenizer's ``special_tokens_mask``.  A first token counts as one the tokenizer added
        when its offsets are zero-width and (if the mask is given) the mask flags it.
    bos : {None, True, False}
        ``None``: keep the tokenizer's own behaviour.  ``True``: make sure the sequence starts with
        the BOS token, prepending ``bos_token_id`` (offsets ``(0, 0)``) when the tokenizer did not
        add it; a tokenizer without a BOS token is accepted when it starts the sequence with a
        special token of its own (``[CLS]``).  ``False``: drop a leading BOS token that the
        tokenizer added (a ``[CLS]`` that is not the BOS token is kept).
    bos_token_id : int or None
        The tokenizer's BOS token id.
    chosen_id : int, optional
        A token to put first instead of the tokenizer's BOS token (``--bos-token``; only with
        ``bos=True``): a BOS token the tokenizer added is replaced by it, and it is prepended where
        the tokenizer added no special token.
    tokenizer_name : str
        Used in error messages.

    Returns
    -------
    (input_ids, offsets) : (numpy.ndarray int64 (n,), numpy.ndarray int64 (n, 2))

    Raises
    ------
    ModelError
        ``bos=True`` for a tokenizer that has no BOS token and adds no leading special token;
        ``chosen_id`` for a tokenizer that starts every sequence with a special token of its own
        that is not its BOS token (``[CLS]``).
    ValueError
        ``chosen_id`` without ``bos=True``.
    """
    ids = np.asarray(input_ids, dtype=np.int64).reshape(-1)
    spans = _as_offsets(offsets)
    if len(spans) != len(ids):
        raise ValueError(f"{len(ids)} input ids but {len(spans)} offsets")
    if chosen_id is not None and bos is not True:
        raise ValueError(f"a chosen BOS token needs bos=True; got bos={bos!r}")
    if bos is None:
        return ids, spans
    # a token the tokenizer added has zero-width offsets (and is flagged in the special mask);
    # a "<s>" written in the text itself has real offsets and is left alone
    first_is_special = bool(len(ids)) and bool(spans[0, 0] == spans[0, 1])
    if first_is_special and special_mask is not None:
        first_is_special = bool(np.asarray(special_mask).reshape(-1)[0])
    starts_with_bos = first_is_special and bos_token_id is not None and ids[0] == bos_token_id
    if bos is True and chosen_id is not None:
        if first_is_special and ids[0] == chosen_id:
            return ids, spans
        if starts_with_bos:
            return np.concatenate([[chosen_id], ids[1:]]).astype(np.int64), spans
        if first_is_special:
            raise ModelError(
                f"{tokenizer_name} starts every sequence with a special token of its own (id "
                f"{int(ids[0])}) that is not a BOS token; a chosen BOS token is for tokenizers "
                "that start with their BOS token or with no special token: drop --bos-token"
            )
        return _prepend(chosen_id, ids, spans)
    if bos is True:
        if starts_with_bos:
            return ids, spans
        if bos_token_id is None:
            if first_is_special:  # [CLS]-like: the tokenizer's own sequence start
                return ids, spans
            raise ModelError(
                f"bos=True, but {tokenizer_name} has no BOS token and adds no leading special "
                "token; use bos=None (the tokenizer's own behaviour) or bos=False"
            )
        return _prepend(bos_token_id, ids, spans)
    if bos is False:
        if starts_with_bos:
            return ids[1:], spans[1:]
        return ids, spans
    raise ValueError(f"bos must be None, True or False; got {bos!r}")


def _prepend(token_id: int, ids: np.ndarray, spans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``token_id`` put before ``ids``, with zero-width offsets ``(0, 0)``."""
    return (
        np.concatenate([[token_id], ids]).astype(np.int64),
        np.concatenate([np.zeros((1, 2), dtype=np.int64), spans]),
    )
