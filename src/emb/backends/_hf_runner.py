"""The transformers runner: tokenize contexts and embed target words in every layer of a loaded
model.

Loading a model (identity, trust, provenance) is :mod:`emb.backends._hf_loading`.

This module imports torch and transformers at module level; :mod:`emb.backends.hf` imports it
only when a model is loaded (``import emb.backends`` stays light).

Example
-------
>>> from emb.backends import load_model
>>> runner = load_model("path/to/gpt2")                            # doctest: +SKIP
>>> encodings = runner.encode(["I love you."], [(2, 6)])            # doctest: +SKIP
>>> vectors = runner.embed(encodings, poolings=("first", "mean"))   # doctest: +SKIP
>>> vectors.shape          # (item, layer = L + 1, pooling, feature)  # doctest: +SKIP
(1, 13, 2, 768)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from typing import Any, Literal

import numpy as np
import torch

from emb.backends.backoff import BackOff, forward_with_backoff
from emb.backends.base import Encoding, ModelInfo, Runner
from emb.backends.pooling import POOLINGS, parse_poolings, pool
from emb.backends.tokens import apply_bos_batch, locate_batch
from emb.errors import ModelError, TargetNotFoundError
from emb.files.documents import show
from emb.options import BATCH_SIZE

__all__ = ["DType", "HFRunner", "stop_after"]

DType = Literal["float32", "float16", "bfloat16"]
_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}
FINAL_NORMS = ("ln_f", "norm", "final_layer_norm", "final_layernorm", "LayerNorm")


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _backend_encodings(tokenizer: Any, contexts: list[str]) -> list[Any] | None:
    """The Rust encodings of ``contexts``, made exactly as ``tokenizer(contexts,
    add_special_tokens=True)`` makes them, or None where that call is not transformers' own.

    transformers 5's call on a fast tokenizer (``TokenizersBackend``) with no padding,
    truncation or length: switches to input mode, turns off any truncation and padding set on
    the Rust tokenizer (``set_truncation_and_padding``), sets ``encode_special_tokens`` to
    ``split_special_tokens``, then calls ``encode_batch(texts, add_special_tokens=True,
    is_pretokenized=False)`` and reads each encoding's ``ids``, ``offsets`` and
    ``special_tokens_mask`` (no overflow without truncation).  The same steps are taken here,
    only when the tokenizer's class overrides none of them (else, and on transformers 4, the
    call itself is made: None).  tests/backends/test_encode.py checks the equality on every
    tokenizer family emb's tests have.
    """
    if not (
        _own_call(type(tokenizer))
        and all(isinstance(context, str) for context in contexts)  # else its own message
    ):
        return None
    from transformers.tokenization_utils_base import TruncationStrategy
    from transformers.utils import PaddingStrategy

    in_target = getattr(tokenizer, "_in_target_context_manager", False)
    if not in_target and hasattr(tokenizer, "_switch_to_input_mode"):
        tokenizer._switch_to_input_mode()
    tokenizer.set_truncation_and_padding(
        padding_strategy=PaddingStrategy.DO_NOT_PAD,
        truncation_strategy=TruncationStrategy.DO_NOT_TRUNCATE,
        max_length=None, stride=0, pad_to_multiple_of=None, padding_side=None,
    )
    backend = tokenizer._tokenizer
    if backend.encode_special_tokens != tokenizer.split_special_tokens:
        backend.encode_special_tokens = tokenizer.split_special_tokens
    return backend.encode_batch(contexts, add_special_tokens=True, is_pretokenized=False)


def _own_call(kind: type) -> bool:
    """Whether a tokenizer class's call is transformers 5's own ``TokenizersBackend`` call
    (overriding none of ``__call__``, ``_encode_plus``, ``_get_padding_truncation_strategies``:
    Llama, Gemma, Qwen2, GPT-2, GPT-NeoX, BERT, T5 ...; CodeLlama, mBART, NLLB ... override
    ``_encode_plus``); False on transformers 4."""
    try:
        from transformers.tokenization_utils_base import PreTrainedTokenizerBase
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError:  # transformers 4: its own call
        return False
    return (
        issubclass(kind, TokenizersBackend)
        and kind.__call__ is PreTrainedTokenizerBase.__call__
        and kind._encode_plus is TokenizersBackend._encode_plus
        and kind._get_padding_truncation_strategies
        is PreTrainedTokenizerBase._get_padding_truncation_strategies
    )


#: The pinned host buffer a CUDA runner copies pooled vectors into (``HFRunner.overlap``) holds at
#: most this many bytes (or one batch): when full, it is emptied into the result (one host sync).
#: Pinning is slow (1.6 GB pinned for one 20,000-item call took 3.4 s where the whole call without
#: it took 1.0 s, on an H100), so the buffer is bounded and kept for the next call.
STAGING_BYTES = 256 * 2**20


class HFRunner(Runner):
    """A loaded model with its tokenizer; built by :func:`emb.backends.load_model`.

    Parameters
    ----------
    model : torch.nn.Module
        The base model (for encoder–decoder models: its encoder), in eval mode on ``device``.
    tokenizer : transformers fast tokenizer
    device : torch.device
    info : ModelInfo
    """

    #: The memory plan the weights were placed by (:mod:`emb.backends._memory`), set by the
    #: loader; None where none could be made (a gguf file).
    memory_plan: Any = None
    #: The out-of-memory back-off's state (:class:`emb.backends.backoff.BackOff`), made at the
    #: first batch; its ``events`` are the run's halvings.
    backoff: BackOff | None = None
    #: The fault hook: called with (contexts, tokens) before each forward pass, it may raise an
    #: out-of-memory error (:class:`emb.backends.backoff.InjectedOOM`, ``EMB_INJECT_OOM``).
    oom_fault: Callable[[int, int], None] | None = None

    def __init__(self, model: Any, tokenizer: Any, device: torch.device, info: ModelInfo):
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.info = info

    def __repr__(self) -> str:
        return (
            f"Runner({self.info.model_id!r}, {self.info.architecture}, "
            f"layers=0..{self.info.n_layers}, dtype={self.info.dtype}, device={self.info.device})"
        )

    def encode(
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

        The batch is tokenized in one call and handled as flat arrays: the BOS policy
        (:func:`emb.backends.tokens.apply_bos_batch`) and the targets' location
        (:func:`emb.backends.tokens.locate_batch`) are vectorised, with the same results and
        errors as :func:`~emb.backends.tokens.apply_bos` and
        :func:`~emb.backends.tokens.locate_subtokens` item by item; the encodings' arrays are
        read-only views of one buffer.
        """
        contexts = list(contexts)
        spans = [(int(start), int(end)) for start, end in spans]
        if len(spans) != len(contexts):
            raise ValueError(f"{len(contexts)} contexts but {len(spans)} spans; give one span each")
        if bos not in (None, True, False):
            raise ValueError(f"bos must be None, True or False; got {bos!r}")
        if not contexts:
            return []
        name = self.info.tokenizer
        ids, offsets, lengths, mask = self._tokenize(contexts, special=bos is not None)
        tokenized, shift = lengths, np.zeros(len(contexts), dtype=np.int64)
        if bos is not None:
            ids, lengths, shift = apply_bos_batch(
                ids, offsets, lengths, mask, bos=bos, bos_token_id=self.tokenizer.bos_token_id,
                chosen_id=bos_token_id, tokenizer_name=name,
            )
        targets, bounds, found = locate_batch(offsets, tokenized, spans, contexts)
        failures = [
            (int(index), contexts[index], spans[index]) for index in np.flatnonzero(~found)
        ]
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
        # one read-only buffer each; every encoding holds views into them
        ids = _frozen(ids.astype(np.int32))
        targets = _frozen(targets + np.repeat(shift, np.diff(bounds)))
        token_base = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=token_base[1:])
        encodings = [
            Encoding(input_ids=ids[a:b], target=targets[c:d])
            for a, b, c, d in zip(
                token_base[:-1].tolist(), token_base[1:].tolist(),
                bounds[:-1].tolist(), bounds[1:].tolist(), strict=True,
            )
        ]
        limit = _max_positions(self.model.config)
        too_long = np.flatnonzero(lengths > limit).tolist() if limit else []
        for i in too_long:  # cut around the target, never dropped
            encodings[i] = self._cut(
                contexts[i], spans[i], encodings[i], int(limit), bos=bos, bos_token_id=bos_token_id
            )
        return encodings

    def _tokenize(
        self, contexts: list[str], *, special: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """Every context's tokens one after another: ids (int64), offsets (int64, (n, 2)),
        tokens per context, and the special-tokens mask when ``special``.

        What ``self.tokenizer(contexts, add_special_tokens=True, return_offsets_mapping=True)``
        returns, read straight from the Rust encodings where that call is transformers' own
        (:func:`_backend_encodings`): its per-item lists of tuples cost more than the
        tokenizer's Rust side on a suite of short contexts (and their garbage collections).
        """
        encodings = _backend_encodings(self.tokenizer, contexts)
        if encodings is not None:
            lengths = np.fromiter(map(len, encodings), dtype=np.int64, count=len(encodings))
            ids_of: Iterator[Any] = (e.ids for e in encodings)
            offsets_of: Iterator[Any] = (e.offsets for e in encodings)
            masks_of: Iterator[Any] = (e.special_tokens_mask for e in encodings)
        else:
            batch = self.tokenizer(
                contexts,
                add_special_tokens=True,
                return_offsets_mapping=True,
                return_special_tokens_mask=special,
                return_attention_mask=False,
                return_token_type_ids=False,
            )
            lengths = np.fromiter(map(len, batch["input_ids"]), dtype=np.int64, count=len(contexts))
            ids_of, offsets_of = iter(batch["input_ids"]), iter(batch["offset_mapping"])
            masks_of = iter(batch["special_tokens_mask"]) if special else iter(())
        total = int(lengths.sum())
        ids = np.fromiter(chain.from_iterable(ids_of), dtype=np.int64, count=total)
        offsets = np.fromiter(
            chain.from_iterable(chain.from_iterable(offsets_of)), dtype=np.int64, count=2 * total
        ).reshape(total, 2)
        mask = (
            np.fromiter(chain.from_iterable(masks_of), dtype=np.int64, count=total)
            if special else None
        )
        return ids, offsets, lengths, mask

    def _cut(
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
            (cut,) = self.encode(
                [context[a:b]], [(span[0] - a, span[1] - a)], bos=bos, bos_token_id=bos_token_id
            )
            if cut.n_tokens <= limit:
                return Encoding(input_ids=cut.input_ids, target=cut.target, window=(a, b))
        raise ModelError(
            f"cannot fit the target {show(context[span[0]:span[1]])} ({span[1] - span[0]:,} "
            f"characters) with its context into the {limit} positions of {self.info.model_id} "
            f"({enc.n_tokens} tokens); shorten the target or use a model with a longer window"
        )

    def memory_lines(self, *, batch: int, length: int, layers: Sequence[int]) -> list[str]:
        """The memory plan and one batch's memory at ``length`` tokens, for the estimate
        (:func:`emb.backends._memory.batch_lines`, which refuses a context that cannot fit)."""
        from emb.backends._memory import batch_lines

        return batch_lines(
            self.memory_plan, self.model.config, batch=batch, length=length,
            layers=max(layers) + 1, dtype=self.info.dtype, device=str(self.device),
        )

    def token_id(self, token: str) -> int:
        """The vocabulary id of one token written as the tokenizer writes it, e.g.
        ``"<|endoftext|>"`` (``--bos-token``).

        Raises
        ------
        ModelError
            ``token`` is not one token of the tokenizer's vocabulary.
        """
        vocab = self.tokenizer.get_vocab()
        if isinstance(token, str) and token in vocab:
            return int(vocab[token])
        specials = list(dict.fromkeys(self.tokenizer.all_special_tokens))
        raise ModelError(
            f"--bos-token {show(token)} is not one token of the vocabulary of {self.info.tokenizer}; "
            f"its special tokens are {specials[:12]}{' …' if len(specials) > 12 else ''}: give "
            "one of them, or a token of the vocabulary written as the tokenizer writes it"
        )

    def embed(
        self,
        encodings: Sequence[Encoding],
        *,
        poolings: Sequence[str] = POOLINGS,
        batch_size: int = BATCH_SIZE.default,
        progress: Callable[[int], object] | None = None,
        out_dtype: Literal["float32", "float16"] = "float32",
        truncate: bool | None = None,
        layers: Sequence[int] | None = None,
    ) -> np.ndarray:
        """Every layer's pooled vector of each encoded target.

        Parameters
        ----------
        encodings : sequence of Encoding
            From :meth:`encode`.
        poolings : sequence of {"first", "last", "mean", "max"}
            In the order wanted along the pooling axis.
        batch_size : int
            Contexts per forward pass.  Contexts are sorted by length (stable, so the batches are
            the same for the same input) and padded on the right with an attention mask.
        progress : callable, optional
            Called after each batch with the number of items that batch embedded
            (``tqdm(total=n).update`` fits).
        out_dtype : {"float32", "float16"}
            dtype of the result.  ``float16`` rounds each batch on the device while it is still
            hot (IEEE round-to-nearest-even, as numpy's cast; values beyond ±65504 become ±inf,
            which the caller can test with one pass over half the bytes).
        truncate : bool, optional
            Feed each context only up to its target's last subtoken.  Exact for a causal model,
            whose later tokens cannot reach the target, and it saves their computation (about
            half of it for targets in mid-sentence).  Default: ``info.causal``.
        layers : sequence of int, optional
            The layers to return (0..L, increasing; default all).  When the highest is below L the
            forward pass stops after that block (:func:`stop_after`).

        Returns
        -------
        numpy.ndarray of float32, (item, layer, pooling, feature)
            ``layer`` runs 0..L: 0 = embeddings output, 1..L = the blocks' outputs as the model
            returns them with ``output_hidden_states=True`` (see ``info.last_layer`` for L).
            Items in input order.

        Notes
        -----
        Pooling happens on the device in float32 (:func:`emb.backends.pooling.pool`); only the
        token window holding the batch's targets is pooled, and each batch makes one copy to the
        host (on a GPU a non-blocking one into pinned memory, read once at the end: see
        :attr:`overlap`).  The result is stored layer by layer (a transposed view), which the
        store compresses without a copy.
        """
        names = parse_poolings(poolings)
        BATCH_SIZE.check(batch_size)  # the one message of --batch-size
        n = len(encodings)
        if out_dtype not in ("float32", "float16"):
            raise ValueError(f"out_dtype must be 'float32' or 'float16'; got {out_dtype!r}")
        torch_out = torch.float16 if out_dtype == "float16" else torch.float32
        chosen_layers = list(range(self.info.n_layers + 1)) if layers is None else list(layers)
        _check_loaded(self.info, chosen_layers)
        shape = (n, len(chosen_layers), len(names), self.info.hidden_size)
        # stored layer by layer: a block's inner chunks (one layer each) are then contiguous,
        # and the store compresses them where they lie (emb.store.layer_major)
        out = np.empty((shape[1], n, *shape[2:]), dtype=out_dtype).transpose(1, 0, 2, 3)
        top = max(chosen_layers)
        if n == 0:
            return out
        if truncate is None:
            truncate = self.info.causal
        lengths = np.fromiter(
            (enc.token_end if truncate else enc.n_tokens for enc in encodings),
            dtype=np.int64,
            count=n,
        )
        order = np.argsort(lengths, kind="stable")
        pad_id = padding_id(self.tokenizer)
        # on a GPU: no host sync per batch; each batch's vectors are copied (non-blocking) into
        # pinned host memory in batch order while the next batch runs, the non-finite test is a
        # flag on the device, and both are read when the buffer is full and at the end of the call
        overlap = self.device.type == "cuda" and self.overlap
        staged = None
        if overlap:  # a bounded pinned buffer, emptied into ``out`` whenever it is full
            row_bytes = int(np.prod(shape[1:])) * out.itemsize
            rows = max(batch_size, STAGING_BYTES // max(row_bytes, 1))
            staged = self._staging((rows, *shape[1:]), torch_out)
        flags: list[torch.Tensor] = []
        batches: list[np.ndarray] = []
        filled = 0

        def empty_staging() -> None:  # one host sync: the flags, then the rows copied so far
            nonlocal filled
            finite = torch.stack(flags).cpu().numpy()  # waits for every batch and copy
            if not finite.all():
                self._refuse_non_finite(batches[int(np.argmin(finite))])
            out[np.concatenate(batches)] = staged[:filled].numpy()
            flags.clear()
            batches.clear()
            filled = 0

        with torch.inference_mode():
            for first in range(0, n, batch_size):
                chosen = order[first : first + batch_size]
                batch = [encodings[i] for i in chosen]
                width = int(lengths[chosen].max())
                ids = np.full((len(batch), width), pad_id, dtype=np.int64)
                attention = np.zeros((len(batch), width), dtype=np.int64)
                lo = min(enc.token_start for enc in batch)
                hi = max(enc.token_end for enc in batch)
                target = np.zeros((len(batch), hi - lo), dtype=bool)
                for row, (enc, length) in enumerate(zip(batch, lengths[chosen], strict=True)):
                    ids[row, :length] = enc.input_ids[:length]
                    attention[row, :length] = 1
                    target[row, enc.target - lo] = True
                with stop_after(self.model, max(top, 1), self.info.n_layers):
                    hidden = self._forward(
                        _sent(ids, self.device, overlap), _sent(attention, self.device, overlap)
                    )
                # overlapped: the mask stays on the host (pinned), where pool checks it
                mask = torch.from_numpy(target)
                mask = mask.pin_memory() if overlap else mask.to(self.device)
                pooled = pool_where(hidden, chosen_layers, lo, hi, mask, names, self.device)
                if staged is not None:
                    if filled + len(batch) > len(staged):
                        empty_staging()
                    flags.append(torch.isfinite(pooled).all())
                    batches.append(chosen)
                    staged[filled : filled + len(batch)].copy_(pooled.to(torch_out), non_blocking=True)
                    filled += len(batch)
                else:
                    # a float64 sum of float32 values is finite iff every value is (it cannot
                    # overflow); the exact test, 5x dearer, runs only to confirm a non-finite sum
                    if not math.isfinite(float(pooled.sum(dtype=torch.float64))) and not bool(
                        torch.isfinite(pooled).all()
                    ):
                        self._refuse_non_finite(chosen)
                    out[chosen] = pooled.to(torch_out).cpu().numpy()
                if progress is not None:
                    progress(len(batch))
            if staged is not None and filled:
                empty_staging()
        return out

    #: On a CUDA device, overlap each batch's copy to the host with the next batch (pinned
    #: memory, no host sync per batch); False: one synchronous copy per batch (the CPU path).
    overlap: bool = True

    def _staging(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """A pinned host buffer of at least ``shape`` (kept for the next call: pinning is slow,
        and its size is bounded by :data:`STAGING_BYTES`, whatever the call's length)."""
        buffer = getattr(self, "_pinned", None)
        if (buffer is None or buffer.dtype != dtype or tuple(buffer.shape[1:]) != tuple(shape[1:])
                or len(buffer) < shape[0]):
            buffer = torch.empty(shape, dtype=dtype, pin_memory=True)
            self._pinned = buffer
        return buffer

    def _refuse_non_finite(self, chosen: np.ndarray) -> None:
        raise ModelError(
            f"{self.info.model_id} returned NaN or infinite hidden states for the "
            f"contexts {[int(i) for i in chosen[:10]]}; with --dtype float16/bfloat16 "
            "try float32 (half precision can overflow inside the model)"
        )

    def _forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple:
        """One batch's hidden states, the batch halved where the device runs out of memory
        (:func:`emb.backends.backoff.forward_with_backoff`; ``self.backoff`` keeps what it
        learnt, ``self.oom_fault`` is the fault hook)."""
        if self.backoff is None:
            self.backoff = BackOff()
        return forward_with_backoff(
            self._pass, input_ids, attention_mask, state=self.backoff, fault=self.oom_fault,
            model_id=self.info.model_id,
        )

    def _pass(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple:
        return hidden_states(self.model, input_ids, attention_mask)


def pool_where(
    hidden: Sequence[torch.Tensor], layers: Sequence[int], lo: int, hi: int, mask: torch.Tensor,
    poolings: Sequence[str], device: torch.device,
) -> torch.Tensor:
    """The chosen layers' pooled window, (batch, layer, pooling, feature), on ``device``.

    Each run of consecutive layers whose hidden states lie on one device (a model split across
    GPUs by a device map leaves each block's output on its GPU) is pooled there, and only the
    pooled window moves to ``device``: the hidden states themselves never cross devices.  With
    every layer on one device this is one stack and one :func:`pool` call."""
    groups: list[list[int]] = []
    for j in layers:
        if groups and _device_of(hidden[groups[-1][-1]]) == _device_of(hidden[j]):
            groups[-1].append(j)
        else:
            groups.append([j])
    parts = []
    for group in groups:
        # (layer, batch, seq, feature) as a view of a batch-major copy (see pool)
        window = torch.stack([hidden[j][:, lo:hi] for j in group], dim=1).transpose(0, 1)
        parts.append(pool(window, mask, poolings=poolings).to(device))
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)


def _device_of(tensor: torch.Tensor) -> Any:
    return tensor.device


def _check_loaded(info: Any, layers: Sequence[int]) -> None:
    """Refuse layers above the blocks a cut model loaded (``info.loaded_blocks``)."""
    loaded = getattr(info, "loaded_blocks", None)
    if loaded is not None and max(layers) > loaded:
        raise ModelError(
            f"layers {[int(x) for x in layers if x > loaded]} of {info.model_id} were asked for, "
            f"but only blocks 1..{loaded} of {info.n_layers} were loaded (the run's --layers); "
            "load the model again with those layers"
        )


def _sent(array: np.ndarray, device: torch.device, overlap: bool) -> torch.Tensor:
    """``array`` on ``device``: overlapped, from pinned memory without waiting for the device."""
    if overlap:
        return torch.from_numpy(array).pin_memory().to(device, non_blocking=True)
    return torch.from_numpy(array).to(device)


def _blocks(network: Any, n_layers: int) -> tuple[Any, str, Any] | None:
    """(parent module, attribute, ModuleList) of the model's ``n_layers`` blocks, shallowest first."""
    found = []
    for name, module in network.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n_layers:
            parent_name, _, attr = name.rpartition(".")
            found.append((name.count("."), network.get_submodule(parent_name), attr, module))
    if not found:
        return None
    _, parent, attr, blocks = min(found, key=lambda f: f[0])
    return parent, attr, blocks


@contextlib.contextmanager
def stop_after(network: Any, top: int, n_layers: int) -> Iterator[None]:
    """Run only the first ``top`` blocks while inside (nothing changes when ``top >= n_layers``).

    The block list is cut to its first ``top`` blocks and the final norm (``ln_f``, ``norm``,
    ``final_layer_norm`` …) replaced by the identity, so that hidden state ``top`` is the raw
    output of block ``top`` exactly as the full model returns it.  Models whose block list cannot
    be found run whole.
    """
    found = _blocks(network, n_layers) if top < n_layers else None
    if found is None:
        yield
        return
    parent, attr, blocks = found
    norms = [
        (name, module) for name, module in network.named_children()
        if name in FINAL_NORMS and "norm" in type(module).__name__.lower()
    ]
    setattr(parent, attr, torch.nn.ModuleList(list(blocks)[:top]))
    for name, _ in norms:
        setattr(network, name, torch.nn.Identity())
    try:
        yield
    finally:
        setattr(parent, attr, blocks)
        for name, module in norms:
            setattr(network, name, module)


def hidden_states(
    network: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> tuple:
    """Every hidden state of a batch (attention mask default: all ones)."""
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    return network(
        input_ids=input_ids,
        attention_mask=attention_mask,
        output_hidden_states=True,
        return_dict=True,
    ).hidden_states


def padding_id(tokenizer: Any) -> int:
    for token_id in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if token_id is not None:
            return int(token_id)
    return 0


def _max_positions(config: Any) -> int | None:
    for key in ("max_position_embeddings", "n_positions"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None  # relative or rotary positions without a stated limit


def parse_dtype(dtype: str) -> torch.dtype:
    if dtype not in _DTYPES:
        raise ModelError(f"unknown dtype {dtype!r}; choose one of {sorted(_DTYPES)}")
    return _DTYPES[dtype]


def parse_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ModelError(
            f"unknown device {device!r}; use 'auto', 'cpu', 'cuda' or 'cuda:N'"
        ) from error
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ModelError(f"device {device!r} requested but CUDA is not available; use 'cpu'")
    if parsed.type == "cuda" and parsed.index is not None and parsed.index >= torch.cuda.device_count():
        raise ModelError(
            f"device {device!r} does not exist: this machine has {torch.cuda.device_count()} CUDA "
            f"device(s), cuda:0..cuda:{torch.cuda.device_count() - 1} (CUDA_VISIBLE_DEVICES may hide some)"
        )
    return parsed
