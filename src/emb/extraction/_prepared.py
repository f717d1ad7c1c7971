"""What a suite's group is written from, computed before the store is touched: its coordinates,
its suite and extraction attributes (settings, versions, BOS, unknown-token targets)."""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from emb.extraction._plan import Plan, item_coords

if TYPE_CHECKING:  # pragma: no cover
    from emb.backends import Runner
    from emb.extraction.settings import ExtractionSettings
    from emb.stimuli.suites import Suite

__all__ = ["FLOAT16_NOTE", "Prepared", "bos_added", "first_position", "position_zero_fix",
           "position_zero_record", "suite_attrs", "unknown_targets"]

#: What storing in float16 costs, recorded in the store's attributes.
FLOAT16_NOTE = (
    "float16 storage keeps 11 significant bits: each value has relative error <= 2**-11 "
    "(4.9e-4); cosine similarities between stored vectors change by < 1e-3 and correlations "
    "built on them by far less. Values beyond ±65504 would overflow and are refused."
)


def _at_position_0(plan: Plan) -> np.ndarray:
    """Per item: whether its target starts at the context's first token."""
    at_zero = np.array([int(np.asarray(e.target)[0]) == 0 for e in plan.encodings], dtype=bool)
    return at_zero[plan.item_key] if at_zero.size else np.zeros(len(plan.item_key), dtype=bool)


def first_position(plan: Plan) -> int:
    """Items whose target starts at the context's first token."""
    return int(_at_position_0(plan).sum())


#: Words named per setting in the position-0 record (the item ranges name every item).
POSITION_0_WORDS = 20
#: Most ``[start, stop)`` item ranges the record lists (about 20 bytes each in the attributes).
POSITION_0_RANGES = 10_000


#: Pieces of BOS tokens that are chat-turn markers, not a document start (SmolLM2's GGUF).
_CHAT_MARKERS = ("im_start", "start_of_turn", "[INST]")


def position_zero_fix(info: Any) -> str:
    """What moves targets off position 0 of a causal model, for this model's tokenizer."""
    token = getattr(info, "bos_token", None)
    if isinstance(token, str) and any(m in token for m in _CHAT_MARKERS):
        return (f"the tokenizer's BOS token {token!r} is a chat marker, which does not give them "
                "a context a base model was trained with (on SmolLM2 --bos leaves WEAT 'alone' "
                "near 0): --bos-token TOKEN puts the document-start token first instead, e.g. "
                "--bos-token '<|endoftext|>'")
    if getattr(info, "bos_token_id", None) is not None:
        return (f"--bos prepends the tokenizer's BOS token {token!r}, which moves them to "
                "position 1 (--bos-token TOKEN puts another token of the vocabulary first)")
    return ("this tokenizer has no BOS token: --bos-token TOKEN puts a token of its vocabulary "
            "first (e.g. its end-of-text token), or put some context before the targets")


def position_zero_record(suite: Suite, plan: Plan, info: Any) -> dict[str, Any] | None:
    """What the store records of a causal model's targets at position 0 (None for a model that
    is not causal): the count, per setting the count of that setting's items and the first
    :data:`POSITION_0_WORDS` of their words, the items as ``[start, stop)`` ranges, and the fix.
    Every analysis of the suite warns from it (:func:`emb.analyses._provenance.extraction_notes`)."""
    if not getattr(info, "causal", False):
        return None
    hit = _at_position_0(plan)
    settings = np.array([it.setting for it in suite.items], dtype=object)
    by_setting: dict[str, Any] = {}
    for setting in dict.fromkeys(settings.tolist()):
        mine = np.flatnonzero(settings == setting)
        at = mine[hit[mine]]
        by_setting[str(setting)] = {
            "n": int(at.size), "of": int(mine.size),
            "words": list(dict.fromkeys(suite.items[i].word for i in at))[:POSITION_0_WORDS]}
    edges = np.flatnonzero(np.diff(np.concatenate([[0], hit.astype(np.int8), [0]])))
    ranges = [[int(a), int(b)] for a, b in zip(edges[::2], edges[1::2], strict=True)]
    return {"n": int(hit.sum()), "of": len(suite.items), "by_setting": by_setting,
            # scattered items (a corpus' contexts) would bloat the attributes: beyond the cap
            # the item coordinate token_start == 0 names them (None here)
            "items": ranges if len(ranges) <= POSITION_0_RANGES else None,
            "fix": position_zero_fix(info)}


def suite_attrs(suite: Suite) -> dict[str, Any]:
    settings = sorted({it.setting for it in suite.items})
    sets = sorted({it.stimulus_set for it in suite.items})
    return {
        "name": suite.name,
        "description": getattr(suite, "description", "") or "",
        "generator": suite.generator,
        "parameters": dict(suite.parameters or {}),
        "content_hash": suite.content_hash(),
        "n_items": len(suite.items),
        "settings": settings,
        "stimulus_sets": sets,
    }


@functools.cache
def _installed_versions() -> tuple[tuple[str, str], ...]:
    """Versions of the libraries that shape the vectors (looked up once per process: ~9 ms)."""
    out = []
    for pkg in ("emb", "torch", "transformers", "tokenizers", "zarr", "numcodecs", "xarray", "numpy", "dask"):
        try:
            out.append((pkg, importlib.metadata.version(pkg)))
        except importlib.metadata.PackageNotFoundError:
            out.append((pkg, "not installed"))
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """Everything a suite's group is written from.  What needs the whole suite tokenised (the
    item coordinates, the extraction attributes drawn from the encodings, the targets made of
    the unknown token) is computed when first asked for: a worker that resumes a group laid out
    by another (a shard worker, a resumed run) never needs it."""

    name: str
    shape: tuple[int, int, int, int]
    suite_attrs: dict[str, Any]
    identity: dict[str, Any]  # the extraction settings a stored group must match (no tokenising)
    window_blocks: int
    layers: list[int]  # the stored layers, 0..L
    subset: bool  # fewer than all: the forward pass stops after the highest
    source: tuple[Any, Any, Any, Any] = field(repr=False, compare=False)  # runner, suite, plan, settings

    @classmethod
    def of(
        cls, runner: Runner, suite: Suite, plan: Plan, settings: ExtractionSettings, *,
        name: str, layers: list[int],
    ) -> Prepared:
        n_layers = int(runner.info.n_layers) + 1
        subset = layers != list(range(n_layers))
        shape = (len(suite.items), len(layers), len(settings.poolings), int(runner.info.hidden_size))
        identity = {**settings.to_dict(), **({"layers": list(layers)} if subset else {})}
        return cls(
            name=name, shape=shape, suite_attrs=suite_attrs(suite), identity=identity,
            window_blocks=settings.window_blocks, layers=list(layers), subset=subset,
            source=(runner, suite, plan, settings),
        )

    @functools.cached_property
    def coords(self) -> xr.Dataset:
        _, suite, plan, settings = self.source
        return item_coords(suite, plan, self.layers, settings.poolings)

    @functools.cached_property
    def unknown(self) -> tuple[str, ...]:
        """Words of targets made of nothing but the unknown token."""
        runner, suite, plan, _ = self.source
        return unknown_targets(suite, plan, getattr(runner.info, "unk_token_id", None))

    @functools.cached_property
    def extraction(self) -> dict[str, Any]:
        """The extraction attributes a new group is written with."""
        runner, suite, plan, settings = self.source
        info, layers, unknown = runner.info, self.layers, self.unknown
        n_layers = int(info.n_layers) + 1
        bos_id = (
            runner.token_id(settings.bos_token) if settings.bos_token is not None  # type: ignore[attr-defined]
            else getattr(info, "bos_token_id", None)
        )
        return {
            **settings.to_dict(),
            "bos_token_added": bos_added(plan, bos_id),
            "layer_semantics": getattr(info, "layer_semantics", None) or (
                f"layer 0 = embedding output; layers 1..{n_layers - 1} = the {n_layers - 1} blocks' "
                f"hidden states as the model returns them; the last is {info.last_layer}"
            ),
            "precision_note": FLOAT16_NOTE if settings.storage_dtype == "float16" else "float32 storage",
            "window_blocks": self.window_blocks,
            # only a subset is recorded (an identity setting); the layer coordinate lists them always
            **({"layers": list(layers), "forward_stops_after_block": max(layers)} if self.subset else {}),
            "contexts_cut": sum(getattr(e, "window", None) is not None for e in plan.encodings),
            # a causal model's contexts are fed up to the target's last subtoken (see Runner.embed)
            "truncate_after_target": bool(getattr(info, "causal", False)),
            # targets at the first token of a causal model's context (see _warn_position_zero)
            "targets_at_position_0": first_position(plan) if getattr(info, "causal", False) else 0,
            **({"position_0": record}
               if (record := position_zero_record(suite, plan, info)) is not None else {}),
            "bos_policy": (suite.parameters or {}).get("bos") or "tokenizer",
            "unknown_targets": {"n_items": len(unknown), "words": sorted(set(unknown))[:50]},
            "versions": dict(_installed_versions()),
        }

    def unknown_message(self, runner: Runner, stored: Mapping[str, Any] | None = None) -> str | None:
        """The warning about targets made of the unknown token (None: there are none), from the
        suite's encodings or, for a group laid out before (``stored``: its extraction
        attributes), from what the group records."""
        if stored is None:
            n, words = len(self.unknown), sorted(set(self.unknown))
            distinct = f"{len(words)} distinct"
        else:
            record = stored.get("unknown_targets") or {}
            n, words = int(record.get("n_items") or 0), [str(w) for w in record.get("words") or ()]
            distinct = f"{len(words)}{'+' if len(words) >= 50 else ''} distinct"
        if not n:
            return None
        shown = ", ".join(repr(w if len(w) <= 30 else w[:29] + "…") for w in words[:10])
        return (
            f"suite {self.name!r}: {n} of {self.shape[0]} targets tokenize to "
            f"nothing but the unknown token with {getattr(runner.info, 'tokenizer', 'the tokenizer')} "
            f"({distinct} "
            f"words: {shown}{', …' if len(words) > 10 else ''}); they all get the vector of that "
            "token in context, not of the word. Recorded in the suite's extraction attributes "
            "(unknown_targets); drop these words or use a model whose vocabulary covers them"
        )


def unknown_targets(suite: Suite, plan: Plan, unk_id: int | None) -> tuple[str, ...]:
    """The words of items whose target subtokens are all the unknown token."""
    if unk_id is None:
        return ()
    unknown_keys = set()
    for k, enc in enumerate(plan.encodings):
        ids = np.asarray(enc.subtoken_ids)
        # the first subtoken decides for nearly every target (one comparison, not an array's)
        if len(ids) and int(ids[0]) == unk_id and bool(np.all(ids == unk_id)):
            unknown_keys.add(k)
    if not unknown_keys:
        return ()
    return tuple(
        str(item.word) for item, k in zip(suite.items, plan.item_key.tolist(), strict=True)
        if k in unknown_keys
    )


def bos_added(plan: Plan, bos_id: int | None) -> bool:
    """Whether the encoded contexts start with the BOS token ``bos_id`` (the tokenizer's, or the
    one chosen with ``--bos-token``)."""
    return bool(
        bos_id is not None
        and plan.encodings
        and all(len(e.input_ids) and int(e.input_ids[0]) == bos_id for e in plan.encodings)
    )
