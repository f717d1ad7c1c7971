"""The runner's encode as it was before it was vectorised (emb 2026-11, HFRunner.encode and
_cut, one item at a time through locate_subtokens and apply_bos): the reference the vectorised
encode must equal (tests/backends/test_encode.py, benchmarks/encode.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from emb.backends._hf_runner import _frozen, _max_positions
from emb.backends.base import Encoding
from emb.backends.tokens import apply_bos, locate_subtokens
from emb.errors import ModelError, TargetNotFoundError

__all__ = ["reference_encode"]


def reference_encode(
    self,
    contexts: Sequence[str],
    spans: Sequence[tuple[int, int]],
    *,
    bos: bool | None = None,
    bos_token_id: int | None = None,
) -> list[Encoding]:
    """Tokenize contexts and find each target's subtokens.

    Parameters
    ----------
    contexts : sequence of str
    spans : sequence of (char_start, char_end)
        Each target's character span in its context, end exclusive.
    bos : {None, True, False}
        None: the tokenizer's own special tokens; True: make the BOS token the first token
        (prepended when the tokenizer does not add it); False: drop a BOS token the tokenizer
        added.  See :func:`emb.backends.tokens.apply_bos`.
    bos_token_id : int, optional
        With ``bos=True``: the token to put first instead of the tokenizer's BOS token
        (:meth:`token_id` of ``--bos-token``).

    Returns
    -------
    list of Encoding, in input order.

    Raises
    ------
    TargetNotFoundError
        Listing every item whose span overlaps no token: ``(index, context, span)``; the
        same tuples are in the exception's ``failures`` attribute.
    ModelError
        ``bos=True`` with a tokenizer that has no BOS token; ``bos_token_id`` with a tokenizer
        that starts every sequence with a special token that is not its BOS (``[CLS]``).

    Notes
    -----
    A context longer than the model's positions is cut to the longest window of whole tokens
    around the target that fits (:attr:`Encoding.window` says which characters); it is never
    dropped.
    """
    contexts = list(contexts)
    spans = [(int(start), int(end)) for start, end in spans]
    if len(spans) != len(contexts):
        raise ValueError(f"{len(contexts)} contexts but {len(spans)} spans; give one span each")
    if bos not in (None, True, False):
        raise ValueError(f"bos must be None, True or False; got {bos!r}")
    if not contexts:
        return []
    batch = self.tokenizer(
        contexts,
        add_special_tokens=True,
        return_offsets_mapping=True,
        return_special_tokens_mask=bos is not None,  # only the BOS policy reads it
        return_attention_mask=False,
        return_token_type_ids=False,
    )
    name = self.info.tokenizer
    encodings: list[Encoding] = []
    failures: list[tuple[int, str, tuple[int, int]]] = []
    for index, (context, (start, end)) in enumerate(zip(contexts, spans, strict=True)):
        ids, offsets = batch["input_ids"][index], batch["offset_mapping"][index]
        if bos is not None:
            ids, offsets = apply_bos(
                ids,
                offsets,
                batch["special_tokens_mask"][index],
                bos=bos,
                bos_token_id=self.tokenizer.bos_token_id,
                chosen_id=bos_token_id,
                tokenizer_name=name,
            )
        try:
            target = locate_subtokens(offsets, start, end, text=context)
        except TargetNotFoundError:
            failures.append((index, context, (start, end)))
            continue
        encodings.append(
            Encoding(input_ids=_frozen(np.asarray(ids, dtype=np.int32)), target=_frozen(target))
        )
    if failures:
        listed = "; ".join(
            f"item {index}: span [{start}, {end}) {context[start:end]!r} in {context!r}"
            for index, context, (start, end) in failures
        )
        error = TargetNotFoundError(
            f"{len(failures)} of {len(contexts)} targets overlap no token of their context "
            f"with {name}: {listed}; check each span (char_start < char_end, inside the "
            "context, covering the word)"
        )
        error.failures = tuple(failures)  # type: ignore[attr-defined]
        raise error
    limit = _max_positions(self.model.config)
    too_long = [i for i, enc in enumerate(encodings) if limit and enc.n_tokens > limit]
    for i in too_long:  # cut around the target, never dropped
        encodings[i] = _reference_cut(
            self, contexts[i], spans[i], encodings[i], int(limit), bos=bos, bos_token_id=bos_token_id
        )
    return encodings


def _reference_cut(
    self, context: str, span: tuple[int, int], enc: Encoding, limit: int, *,
    bos: bool | None, bos_token_id: int | None,
) -> Encoding:
    """The encoding of the longest window of ``context`` around its target that fits."""
    offsets = self.tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)[
        "offset_mapping"
    ]
    n_special = enc.n_tokens - len(offsets)
    first = int(np.searchsorted([b for _, b in offsets], span[0], side="right"))
    last = max(first, int(np.searchsorted([a for a, _ in offsets], span[1], side="left")) - 1)
    for slack in (0, 2, 8, 32):
        budget = limit - n_special - slack
        if budget <= last - first:
            break
        lo = max(0, min(first - (budget - (last - first + 1)) // 2, len(offsets) - budget))
        hi = min(len(offsets), lo + budget)
        a, b = offsets[lo][0], offsets[hi - 1][1]
        (cut,) = reference_encode(
            self, [context[a:b]], [(span[0] - a, span[1] - a)], bos=bos, bos_token_id=bos_token_id
        )
        if cut.n_tokens <= limit:
            return Encoding(input_ids=cut.input_ids, target=cut.target, window=(a, b))
    raise ModelError(
        f"cannot fit the target {context[span[0]:span[1]]!r} with its context into the "
        f"{limit} positions of {self.info.model_id} ({enc.n_tokens} tokens)"
    )
