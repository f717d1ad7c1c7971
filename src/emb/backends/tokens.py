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

__all__ = ["apply_bos", "apply_bos_batch", "locate_batch", "locate_subtokens"]


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


#: Every character ``str.isspace`` (and so ``str.strip``) counts as whitespace lies below U+3001.
_SPACE_LIMIT = 0x3001
_IS_SPACE = np.array([chr(code).isspace() for code in range(_SPACE_LIMIT)] + [False], dtype=bool)


def _codes(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Where each text starts in their concatenation, and the concatenation's code points."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    base = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=base[1:])
    codes = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return base, codes


def _is_space(codes: np.ndarray) -> np.ndarray:
    """Which code points ``str.isspace`` counts as whitespace."""
    return _IS_SPACE[np.minimum(codes, _SPACE_LIMIT)]


def _as_bounds(spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """(n, 2) int64 spans; values beyond int64 clipped (their comparisons with offsets, which
    are small, are unchanged)."""
    try:
        return np.array(spans, dtype=np.int64).reshape(-1, 2)
    except OverflowError:
        edge = 2**62
        return np.array(
            [(min(max(a, -edge), edge), min(max(b, -edge), edge)) for a, b in spans],
            dtype=np.int64,
        ).reshape(-1, 2)


def locate_batch(
    offsets: np.ndarray,
    lengths: np.ndarray,
    spans: Sequence[tuple[int, int]],
    texts: Sequence[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`locate_subtokens` (with ``text=``) for a whole batch at once, vectorised.

    Parameters
    ----------
    offsets : numpy.ndarray of int64, (n_tokens, 2)
        Every context's token offsets, one context after another.
    lengths : numpy.ndarray of int64, (n_contexts,)
        Tokens per context.
    spans : sequence of (char_start, char_end)
        Each context's target span.
    texts : sequence of str
        The contexts.

    Returns
    -------
    targets : numpy.ndarray of int64, (n_found_subtokens,)
        The subtoken indices (within its context) of each found target, one after another.
    bounds : numpy.ndarray of int64, (n_contexts + 1,)
        Context ``i``'s subtokens are ``targets[bounds[i]:bounds[i + 1]]`` (empty where not found).
    found : numpy.ndarray of bool, (n_contexts,)
        Whether :func:`locate_subtokens` finds the target (False where it raises).

    Notes
    -----
    Token ``k`` of context ``i``, offsets ``[s, e)``, is judged by its visible characters: the
    piece ``texts[i][s:e]`` trimmed of whitespace at both ends, ``[s + lead, e - trail)``; a
    whitespace-only piece never counts.  ``lead`` and ``trail`` are 0 where the piece starts
    (ends) with a visible character, else found by one ``searchsorted`` among the positions of
    the visible characters of all texts concatenated: no loop over tokens.
    """
    n = len(texts)
    lengths = np.asarray(lengths, dtype=np.int64)
    token_base = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=token_base[1:])
    bounds_in = _as_bounds(spans)
    char_start, char_end = bounds_in[:, 0], bounds_in[:, 1]
    item = np.repeat(np.arange(n), lengths)
    start, end = offsets[:, 0], offsets[:, 1]
    char_base, codes = _codes(texts)
    text_length = np.diff(char_base)[item]
    # the piece text[start:end] as Python slices it (clipped to the text), in the concatenation
    lo = char_base[item] + np.minimum(start, text_length)
    hi = char_base[item] + np.minimum(end, text_length)
    piece = lo < hi
    # its first and last visible characters: the ends themselves, unless they are whitespace
    first_visible, last_visible = lo.copy(), hi - 1
    blank_start, blank_end = piece.copy(), piece.copy()
    blank_start[piece] = _is_space(codes[lo[piece]])
    blank_end[piece] = _is_space(codes[hi[piece] - 1])
    if blank_start.any() or blank_end.any():
        visible = np.flatnonzero(~_is_space(codes))
        if len(visible):
            after = np.searchsorted(visible, lo[blank_start], side="left")
            first_visible[blank_start] = np.where(
                after < len(visible), visible[np.minimum(after, len(visible) - 1)], len(codes)
            )
            before = np.searchsorted(visible, hi[blank_end], side="left") - 1
            last_visible[blank_end] = np.where(before >= 0, visible[np.maximum(before, 0)], -1)
        else:  # whitespace only: no piece is shown
            first_visible[blank_start] = len(codes)
    shown = piece & (first_visible < hi)  # the piece has a visible character of its own
    trimmed_start = start + (first_visible - lo)
    trimmed_end = end - (hi - 1 - last_visible)
    hit = (
        (start < end) & shown
        & (trimmed_start < char_end[item]) & (trimmed_end > char_start[item])
    )
    hits = np.flatnonzero(hit)
    hit_item = item[hits]
    first_hit = np.searchsorted(hit_item, np.arange(n), side="left")
    past_hit = np.searchsorted(hit_item, np.arange(n), side="right")
    found = (past_hit > first_hit) & (char_end > char_start)
    # every non-special token from the first hit to the last one
    first = hits[first_hit[found]]
    last = hits[past_hit[found] - 1]
    counts = last - first + 1
    run_base = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=run_base[1:])
    tokens = np.repeat(first - run_base[:-1], counts) + np.arange(run_base[-1])
    keep = end[tokens] > start[tokens]
    tokens = tokens[keep]
    owner = item[tokens]
    per_item = np.bincount(owner, minlength=n)
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(per_item, out=bounds[1:])
    return tokens - token_base[owner], bounds, found


def apply_bos_batch(
    input_ids: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
    special_mask: np.ndarray | None = None,
    *,
    bos: bool | None,
    bos_token_id: int | None,
    chosen_id: int | None = None,
    tokenizer_name: str = "the tokenizer",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`apply_bos` for a whole batch of tokenized contexts, one after another.

    The policy reads only a context's first token (its id, whether its offsets are zero-width,
    its special-token flag) and whether it has one, so :func:`apply_bos` runs once per distinct
    first token, in order of first occurrence (its errors are the first context's that fails),
    and the result is applied to every context that starts that way.

    Parameters
    ----------
    input_ids : numpy.ndarray of int64, (n_tokens,)
    offsets : numpy.ndarray of int64, (n_tokens, 2)
    lengths : numpy.ndarray of int64, (n_contexts,)
        Tokens per context.
    special_mask : numpy.ndarray, (n_tokens,), optional
    bos, bos_token_id, chosen_id, tokenizer_name
        As :func:`apply_bos`.

    Returns
    -------
    input_ids : numpy.ndarray of int64, (n_tokens_after,)
    lengths : numpy.ndarray of int64, (n_contexts,)
    shift : numpy.ndarray of int64, (n_contexts,)
        How far each context's tokens moved: +1 (a token put first), -1 (its first token
        dropped), 0.

    Raises
    ------
    ModelError, ValueError
        As :func:`apply_bos`, for the first context it refuses.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    shift = np.zeros(n, dtype=np.int64)
    if bos is None or n == 0:  # apply_bos is not called: nothing to check either
        return input_ids, lengths, shift
    token_base = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=token_base[1:])
    nonempty = lengths > 0
    first = np.minimum(token_base[:-1], max(len(input_ids) - 1, 0))
    if len(input_ids):
        first_id = np.where(nonempty, input_ids[first], -1)
        zero = nonempty & (offsets[first, 0] == offsets[first, 1])
        flag = (
            nonempty if special_mask is None else nonempty & (np.asarray(special_mask)[first] != 0)
        )
    else:
        first_id = np.full(n, -1, dtype=np.int64)
        zero = flag = np.zeros(n, dtype=bool)
    keys = np.stack([nonempty, first_id, zero, flag], axis=1).astype(np.int64)
    unique, where, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    put = np.full(len(unique), -1, dtype=np.int64)  # the id put first (prepended or replacing)
    action = np.zeros(len(unique), dtype=np.int64)  # 0 keep, 1 prepend, -1 drop, 2 replace
    for k in np.argsort(where, kind="stable"):
        i = int(where[k])
        ids = input_ids[first[i] : first[i] + 1] if nonempty[i] else input_ids[:0]
        pairs = offsets[first[i] : first[i] + 1] if nonempty[i] else offsets[:0]
        mask = None if special_mask is None else np.asarray(special_mask)[first[i] : first[i] + len(ids)]
        out, _ = apply_bos(
            ids, pairs, mask, bos=bos, bos_token_id=bos_token_id, chosen_id=chosen_id,
            tokenizer_name=tokenizer_name,
        )
        if len(out) > len(ids):
            action[k], put[k] = 1, int(out[0])
        elif len(out) < len(ids):
            action[k] = -1
        elif len(out) and int(out[0]) != int(ids[0]):
            action[k], put[k] = 2, int(out[0])
    inverse = inverse.reshape(-1)
    act, first_put = action[inverse], put[inverse]
    shift = np.where(act == 1, 1, np.where(act == -1, -1, 0)).astype(np.int64)
    if not shift.any() and not (act == 2).any():
        return input_ids, lengths, shift
    new_lengths = lengths + shift
    new_base = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(new_lengths, out=new_base[1:])
    item = np.repeat(np.arange(n), lengths)
    position = np.arange(len(input_ids)) - token_base[item] + shift[item] + new_base[item]
    kept = ~((act[item] == -1) & (position < new_base[item]))  # a dropped first token
    ids = np.empty(int(new_base[-1]), dtype=np.int64)
    ids[position[kept]] = input_ids[kept]
    changed = (act == 1) | (act == 2)
    ids[new_base[:-1][changed]] = first_put[changed]
    return ids, new_lengths, shift
