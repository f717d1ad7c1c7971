"""Out-of-memory back-off around one batch's forward pass.

:func:`forward_with_backoff` runs a padded batch through the model; when the accelerator runs
out of memory (CUDA's ``OutOfMemoryError``, MPS' "out of memory"), it frees what the failed
pass held, halves the batch and runs the halves, down to one context, and returns the hidden
states of the whole batch as one pass would (the rows are independent: padding on the right
under an attention mask).  The batch size that ran is remembered for that length and every
longer one (:class:`BackOff`): contexts come sorted by length, so the next batches start at the
size that fits.  A context that runs out of memory alone ends the run with a
:class:`~emb.errors.ModelError` saying its length, the memory asked and what to lower.

The fault hook :class:`InjectedOOM` (``EMB_INJECT_OOM``, or a runner's ``oom_fault``) raises the
same error as CUDA on chosen passes, so the back-off is tested on a CPU.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from emb.errors import ModelError

__all__ = ["ENV_FAULT", "BackOff", "InjectedOOM", "forward_with_backoff", "is_oom"]

#: The environment variable of the fault hook: ``calls=2,5`` (the 2nd and 5th forward passes,
#: counting every try), ``tokens>=N`` (every pass of N tokens or more), both with ``;``.
ENV_FAULT = "EMB_INJECT_OOM"
_ASKED = re.compile(r"Tried to allocate ([\d.]+ [KMGT]?i?B)")


def is_oom(error: BaseException) -> bool:
    """Whether ``error`` is an accelerator's out-of-memory error."""
    if isinstance(error, torch.OutOfMemoryError):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()


@dataclass
class InjectedOOM:
    """Fail chosen forward passes with CUDA's out-of-memory error (a test's fault hook).

    Attributes
    ----------
    calls : set of int
        Forward passes (1-based, every try counted) that fail.
    min_tokens : int or None
        Every pass of at least this many tokens fails (so a context fails alone too).
    """

    calls: set[int] = field(default_factory=set)
    min_tokens: int | None = None
    count: int = 0

    @classmethod
    def from_env(cls, text: str | None = None) -> InjectedOOM | None:
        """The hook ``EMB_INJECT_OOM`` describes, or None when it is unset or empty."""
        text = os.environ.get(ENV_FAULT, "") if text is None else text
        if not text.strip():
            return None
        hook = cls()
        for part in text.split(";"):
            key, _, value = part.strip().partition("=")
            try:
                if key == "calls":
                    hook.calls = {int(v) for v in value.split(",") if v.strip()}
                elif key == "tokens>":
                    hook.min_tokens = int(value)
                else:
                    raise ValueError(part)
            except ValueError:
                raise ModelError(
                    f"{ENV_FAULT}={text!r} is not 'calls=2,5' and/or 'tokens>=N' joined by ';'; "
                    f"fix or unset {ENV_FAULT} (a test's fault hook)"
                ) from None
        return hook

    def __call__(self, rows: int, tokens: int) -> None:
        self.count += 1
        if self.count in self.calls or (self.min_tokens is not None and tokens >= self.min_tokens):
            raise torch.OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {rows * tokens / 1024:.2f} GiB "
                f"(injected by {ENV_FAULT} into pass {self.count}: {rows} contexts × {tokens} tokens)"
            )


@dataclass
class BackOff:
    """What the back-off has learnt in a run: the batch size that fits from each length on,
    every halving (``events``: dicts of ``tokens``, ``batch``, ``to``) and each context that ran
    out of memory alone (``failures``: dicts of ``tokens`` and ``asked``, the memory it asked
    for, or None)."""

    limits: dict[int, int] = field(default_factory=dict)
    events: list[dict[str, int]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def rows_for(self, tokens: int) -> int | None:
        """The largest batch known to fit at ``tokens`` (that of the nearest shorter failure)."""
        fits = [rows for length, rows in self.limits.items() if length <= tokens]
        return min(fits) if fits else None

    def record(self, tokens: int, rows: int, half: int) -> None:
        self.events.append({"tokens": tokens, "batch": rows, "to": half})
        self.limits[tokens] = min(half, self.limits.get(tokens, half))


def _free() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    mps = getattr(torch, "mps", None)
    if mps is not None and torch.backends.mps.is_available():
        mps.empty_cache()


def forward_with_backoff(
    forward: Callable[[torch.Tensor, torch.Tensor], tuple],
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    *,
    state: BackOff,
    fault: Callable[[int, int], None] | None = None,
    model_id: str = "the model",
) -> tuple:
    """``forward(input_ids, attention_mask)`` (every hidden state of a padded batch), halving the
    batch on out-of-memory errors (see the module).

    Raises
    ------
    ModelError
        One context alone runs out of memory.
    """
    rows, tokens = (int(n) for n in input_ids.shape)
    limit = state.rows_for(tokens)
    if limit is not None and rows > limit:  # start at the size that fitted before
        parts = [
            _attempt(forward, input_ids[i : i + limit], attention_mask[i : i + limit],
                     state=state, fault=fault, model_id=model_id)
            for i in range(0, rows, limit)
        ]
        return _join(parts)
    return _attempt(forward, input_ids, attention_mask, state=state, fault=fault,
                    model_id=model_id)


def _attempt(
    forward: Callable[[torch.Tensor, torch.Tensor], tuple], input_ids: torch.Tensor,
    attention_mask: torch.Tensor, *, state: BackOff, fault: Callable[[int, int], None] | None,
    model_id: str,
) -> tuple:
    rows, tokens = (int(n) for n in input_ids.shape)
    try:
        if fault is not None:
            fault(rows, tokens)
        return forward(input_ids, attention_mask)
    except (torch.OutOfMemoryError, RuntimeError) as error:
        if not is_oom(error):
            raise
        message = str(error)
    _free()  # outside the handler: the traceback no longer holds the failed pass' tensors
    if rows == 1:
        asked = _ASKED.search(message)
        state.failures.append({"tokens": tokens, "asked": asked.group(1) if asked else None})
        raise ModelError(
            f"{model_id} ran out of memory on one context of {tokens} tokens alone"
            + (f" (it asked for {asked.group(1)} more)" if asked else "")
            + f": {message.splitlines()[0][:200]}; store fewer layers (--layers), use shorter "
            "contexts, or give the model more room: --device-map auto (with --max-memory), "
            "--quantize 8bit/4bit, --dtype bfloat16. The blocks written so far are kept: run the "
            "same command again to resume"
        )
    half = (rows + 1) // 2
    state.record(tokens, rows, half)
    first = _attempt(forward, input_ids[:half], attention_mask[:half], state=state, fault=fault,
                     model_id=model_id)
    second = _attempt(forward, input_ids[half:], attention_mask[half:], state=state, fault=fault,
                      model_id=model_id)
    return _join([first, second])


def _join(parts: list[tuple]) -> tuple:
    """The hidden states of row blocks as those of one batch (concatenated along the rows)."""
    if len(parts) == 1:
        return parts[0]
    return tuple(torch.cat(states, dim=0) for states in zip(*parts, strict=True))


def describe(events: list[dict[str, Any]]) -> str:
    """One line of a run's back-offs, for the summary."""
    shown = ", ".join(f"{e['batch']}→{e['to']} at {e['tokens']} tokens" for e in events[:5])
    more = f", … ({len(events)} in all)" if len(events) > 5 else ""
    return f"out of memory {len(events)} time(s); batches halved: {shown}{more}"
