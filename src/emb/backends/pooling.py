"""Pool the hidden states of a target word's subtokens, all layers and items of a batch at once.

A word that the tokenizer splits into several subtokens has one vector per subtoken and layer; a
pooling reduces them to one vector per layer (METHODS.md, "pooling of a multiply-tokenized word"):

- ``first``: the first subtoken's vector, ``h[t_1]``
- ``last``: the last subtoken's vector, ``h[t_k]``
- ``mean``: ``(1/k) * sum_j h[t_j]``
- ``max``: the element-wise maximum ``max_j h[t_j]``

References
----------
Toney-Wails, A., & Caliskan, A. (2021). VAST: The Valence-Assessing Semantics Test for
Contextualizing Language Models. AAAI 2022 (subword pooling of multiply-tokenized words).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from emb.schemas.datamodel import POOLINGS, Pooling

__all__ = ["POOLINGS", "Pooling", "parse_poolings", "pool"]


def parse_poolings(poolings: Sequence[str] | str) -> tuple[Pooling, ...]:
    """Check a list of pooling names: known, unique, at least one; order kept.

    Raises
    ------
    ValueError
        For an unknown or repeated name, or an empty list.
    """
    names = (poolings,) if isinstance(poolings, str) else tuple(poolings)
    unknown = [name for name in names if name not in POOLINGS]
    if unknown:
        raise ValueError(f"unknown pooling(s) {unknown}; choose from {list(POOLINGS)}")
    if not names:
        raise ValueError(f"no pooling requested; choose one or more of {list(POOLINGS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"pooling names repeat in {list(names)}; give each once")
    return names  # type: ignore[return-value]


def pool(
    hidden_states: torch.Tensor | Sequence[torch.Tensor],
    mask: torch.Tensor,
    *,
    poolings: Sequence[str] = POOLINGS,
) -> torch.Tensor:
    """Pool every layer's hidden states over each item's target tokens.

    Parameters
    ----------
    hidden_states : torch.Tensor (layer, batch, seq, feature), or a sequence of (batch, seq, feature)
        All hidden states of a batch (layer 0 = embeddings output), any floating dtype.
    mask : torch.Tensor of bool, (batch, seq)
        True at each item's target tokens; every item needs at least one.
    poolings : sequence of {"first", "last", "mean", "max"}
        The poolings to compute, in the order wanted.

    Returns
    -------
    torch.Tensor float32, (batch, layer, pooling, feature)
        On the device of ``hidden_states``.  ``first``/``last`` take the first/last True position of
        each row of ``mask``; ``mean`` and ``max`` reduce over the True positions only (``max``
        fills the others with -inf).  Reductions run in float32 whatever the model's dtype.

    Raises
    ------
    ValueError
        Unknown pooling, shapes that disagree, or an item without target tokens.

    Examples
    --------
    >>> h = torch.arange(12.0).reshape(1, 1, 3, 4)       # 1 layer, 1 item, 3 tokens, 4 features
    >>> pool(h, torch.tensor([[False, True, True]]), poolings=["first", "mean"])[0, 0, :, 0]
    tensor([4., 6.])
    """
    names = parse_poolings(poolings)
    if not isinstance(hidden_states, torch.Tensor):
        hidden_states = torch.stack(tuple(hidden_states))
    if hidden_states.ndim != 4:
        raise ValueError(
            "hidden_states must have 4 dims (layer, batch, seq, feature); "
            f"got shape {tuple(hidden_states.shape)}"
        )
    _, batch, seq, _ = hidden_states.shape
    mask = mask.to(dtype=torch.bool)
    if tuple(mask.shape) != (batch, seq):
        raise ValueError(
            f"mask must have shape (batch, seq) = {(batch, seq)}; got {tuple(mask.shape)}"
        )
    # checked where the mask is: a mask on the host (pinned, from a runner on a GPU) is checked
    # there and sent without waiting for the device
    counts = mask.sum(dim=1)
    if batch and bool((counts == 0).any()):
        empty = torch.nonzero(counts == 0).flatten().tolist()
        raise ValueError(f"items {empty} of the batch have no target token in the mask")
    if mask.device != hidden_states.device:
        mask = mask.to(device=hidden_states.device, non_blocking=mask.is_pinned())
        counts = mask.sum(dim=1)

    # work on a (batch, layer, seq, feature) view: the stacked poolings then come out in the
    # result's layout, (batch, layer, pooling, feature), with one copy and no transpose
    states = hidden_states.transpose(0, 1)
    rows = torch.arange(batch, device=states.device)
    as_int = mask.to(torch.int8)
    pooled: list[torch.Tensor] = []  # each (batch, layer, feature)
    states32: torch.Tensor | None = None
    for name in names:
        if name == "first":
            first = as_int.argmax(dim=1)  # the first maximum: the first True
            pooled.append(states[rows, :, first].float())
        elif name == "last":
            last = seq - 1 - as_int.flip(dims=(1,)).argmax(dim=1)
            pooled.append(states[rows, :, last].float())
        else:
            if states32 is None:
                states32 = states.float()
            if name == "mean":
                weights = mask.to(torch.float32) / counts.to(torch.float32)[:, None]
                # (batch, 1, 1, seq) @ (batch, layer, seq, feature): a batched matrix product,
                # 10x faster than the equivalent einsum on CPU
                pooled.append((weights[:, None, None, :] @ states32).squeeze(2))
            else:
                hidden = ~mask[:, None, :, None]
                pooled.append(states32.masked_fill(hidden, float("-inf")).amax(dim=2))
    return torch.stack(pooled, dim=2)
