"""The plan of a suite's extraction, a function of its items and the tokenizer alone.

Items are keyed by (context, char span): each distinct key is tokenised once (:class:`Plan`);
:class:`BlockSources` says, for a window of items, which keys are computed there and which rows
are copied (from an earlier row of the suite, from another finished suite, or from the key's
first use in the window); :func:`item_coords` lays out the suite's item coordinates.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from emb.errors import StoreError
from emb.schemas import datamodel as dm

if TYPE_CHECKING:  # pragma: no cover
    from emb.backends import Runner
    from emb.stimuli.suites import Suite

__all__ = ["BlockSources", "Key", "Plan", "item_coords"]

Key = tuple[str, int, int]

@dataclass(frozen=True)
class Plan:
    """A suite's unique keys, each item's key index, and the keys' encodings, tokenised when
    first asked for (:meth:`encoded`): a worker that resumes a suite, or computes one shard of
    it, tokenises only the contexts it computes."""

    keys: list[Key]
    item_key: np.ndarray  # (n_items,) index into keys
    first_item: np.ndarray  # (n_keys,) first item that uses each key
    tokenize: Callable[[Sequence[Key]], list[Any]] = field(repr=False, compare=False)
    _cache: dict[int | str, Any] = field(default_factory=dict, repr=False, compare=False)  # "all": every key

    @classmethod
    def build(
        cls, runner: Runner, suite: Suite, *, bos: bool | None, bos_token_id: int | None = None
    ) -> Plan:
        """The suite's keys; nothing is tokenised yet (see :attr:`encodings`, :meth:`encoded`)."""
        items = suite.items
        index: dict[Key, int] = {}  # key -> its number, in order of first use
        number = index.setdefault
        item_key = np.array(
            [number(key, len(index)) for key in zip(
                [item.context for item in items], [item.char_start for item in items],
                [item.char_end for item in items], strict=True)],
            dtype=np.int64,
        )
        keys: list[Key] = list(index)
        # keys are numbered in order of first use: the first item of key k is where it first occurs
        first_item = np.unique(item_key, return_index=True)[1].astype(np.int64)

        def tokenize(chosen: Sequence[Key]) -> list[Any]:
            return runner.encode(
                [k[0] for k in chosen], [(k[1], k[2]) for k in chosen], bos=bos,
                bos_token_id=bos_token_id,
            )

        return cls(keys, item_key, first_item, tokenize)

    @property
    def encodings(self) -> list[Any]:
        """Every key's encoding (the whole suite tokenised, once)."""
        whole = self._cache.get("all")
        if whole is None:
            whole = self._cache["all"] = self.encoded(range(len(self.keys)))
        return whole

    def encoded(self, chosen: Sequence[int]) -> list[Any]:
        """The encodings of keys ``chosen``, tokenising (in one call) those not tokenised yet.

        Raises
        ------
        TargetNotFoundError
            (from the runner) A target that overlaps no token of its context.
        """
        whole = self._cache.get("all")
        if whole is not None:
            return [whole[k] for k in chosen]
        missing = list(dict.fromkeys(k for k in chosen if k not in self._cache))
        if missing:
            self._cache.update(zip(missing, self.tokenize([self.keys[k] for k in missing]), strict=True))
        return [self._cache[k] for k in chosen]

    @property
    def tokenized(self) -> int:
        """Keys tokenised so far."""
        return len(self.keys) if "all" in self._cache else len(self._cache)

    def pack(self, chosen: Sequence[int], tag: str) -> bytes | None:
        """The encodings of keys ``chosen``, tokenised already, as bytes (an uncompressed
        ``.npz``: the keys, each key's token ids and target positions concatenated with their
        lengths, its window, and ``tag``), for :meth:`seed`; None where they are not plain
        :class:`~emb.backends.base.Encoding` (static vectors: nothing to save)."""
        from emb.backends.base import Encoding

        encodings = self.encoded(chosen)
        if any(type(e) is not Encoding for e in encodings):
            return None
        out = io.BytesIO()
        np.savez(
            out,
            tag=np.array(tag),
            keys=np.asarray(chosen, dtype=np.int64),
            n_ids=np.fromiter((e.input_ids.size for e in encodings), np.int64, len(encodings)),
            ids=np.concatenate([e.input_ids for e in encodings] or [np.zeros(0, np.int32)]),
            n_target=np.fromiter((e.target.size for e in encodings), np.int64, len(encodings)),
            target=np.concatenate([e.target for e in encodings] or [np.zeros(0, np.int64)]),
            window=np.array([e.window or (-1, -1) for e in encodings], dtype=np.int64).reshape(-1, 2),
        )
        return out.getvalue()

    def seed(self, data: bytes, tag: str) -> int:
        """Take the encodings :meth:`pack` made with the same ``tag`` as tokenised; the number of
        keys taken, 0 (nothing taken) when ``data`` is another tag's, damaged or inconsistent:
        those keys are then tokenised when asked for, as without it."""
        from emb.backends.base import Encoding

        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                if z["tag"].shape != () or str(z["tag"]) != tag:
                    return 0
                keys, n_ids, ids = z["keys"], z["n_ids"], z["ids"]
                n_target, target, window = z["n_target"], z["target"], z["window"]
        except Exception:  # noqa: BLE001 - any damage (zipfile and numpy raise NotImplementedError,
            return 0  # RuntimeError, SyntaxError ... on some): tokenised again, never a traceback
        n = keys.shape[0] if keys.ndim == 1 else -1  # -1: no shape below matches
        if not (
            keys.dtype == n_ids.dtype == n_target.dtype == target.dtype == window.dtype == np.int64
            and ids.dtype == np.int32
            and keys.ndim == n_ids.ndim == n_target.ndim == ids.ndim == target.ndim == 1
            and n_ids.shape == n_target.shape == (n,) and window.shape == (n, 2)
            and (n == 0 or (keys.min() >= 0 and keys.max() < len(self.keys)))
            and (n_ids >= 1).all() and (n_target >= 1).all()
            and int(n_ids.sum()) == ids.size and int(n_target.sum()) == target.size
        ):
            return 0
        # each target position inside its context, increasing within its key
        lengths = np.repeat(n_ids, n_target)
        same_key = np.repeat(np.arange(n), n_target)
        if target.size and (
            (target < 0).any() or (target >= lengths).any()
            or (np.diff(target)[same_key[1:] == same_key[:-1]] <= 0).any()
        ):
            return 0
        ids.setflags(write=False)
        target.setflags(write=False)
        id_ends, target_ends = np.cumsum(n_ids).tolist(), np.cumsum(n_target).tolist()
        taken = {
            k: Encoding(input_ids=ids[i1 - m1 : i1], target=target[t1 - m2 : t1],
                        window=None if a < 0 else (a, b))
            for k, i1, m1, t1, m2, (a, b) in zip(
                keys.tolist(), id_ends, n_ids.tolist(), target_ends, n_target.tolist(),
                window.tolist(), strict=True)
        }
        if "all" not in self._cache:
            self._cache.update(taken)
        return len(taken)


@dataclass(frozen=True)
class BlockSources:
    """Where each item of a block gets its vector: computed here (once per key), copied from an
    earlier row of this suite, from another finished suite, or from its key's first use here."""

    compute_keys: list[int]  # keys whose first use lies in this block, in first-use order
    first_position: dict[int, int]  # key -> its first position in the block
    self_rows: list[tuple[int, int]]  # (position, earlier row of this suite)
    other_rows: dict[str, list[tuple[int, int]]]  # group -> [(position, row there)]
    later: list[tuple[int, int]]  # (position, position of the key's first use in this block)

    @classmethod
    def of(cls, plan: Plan, start: int, stop: int, reuse: Mapping[Key, tuple[str, int]]) -> BlockSources:
        keys = plan.item_key[start:stop]
        firsts = plan.first_item[keys]
        out = cls([], {}, [], {}, [])
        for pos, (k, first) in enumerate(zip(keys.tolist(), firsts.tolist(), strict=True)):
            other = reuse.get(plan.keys[k])
            if other is not None:
                out.other_rows.setdefault(other[0], []).append((pos, other[1]))
            elif first < start:
                out.self_rows.append((pos, first))
            elif k in out.first_position:
                out.later.append((pos, out.first_position[k]))
            else:
                out.first_position[k] = pos
                out.compute_keys.append(k)
        return out


def item_coords(suite: Suite, plan: Plan, layers: Sequence[int], poolings: Sequence[str]) -> xr.Dataset:
    # per key (each tokenised once), then spread to the items: concatenated, not item by item
    per_key = plan.encodings
    n_ids = np.fromiter((len(e.input_ids) for e in per_key), np.int64, len(per_key))
    n_sub_key = np.fromiter((len(e.target) for e in per_key), np.int64, len(per_key))
    targets = (np.concatenate([np.asarray(e.target, dtype=np.int64) for e in per_key])
               if per_key else np.zeros(0, np.int64))
    subtokens = (np.concatenate([np.asarray(e.subtoken_ids, dtype=np.int32) for e in per_key])
                 if per_key else np.zeros(0, np.int32))
    sub_ends = np.cumsum(n_sub_key)
    sub_starts = sub_ends - n_sub_key
    # a target's positions increase (Encoding): its first and last are its least and greatest
    start_key = targets[sub_starts].astype(np.int32) if per_key else np.zeros(0, np.int32)
    end_key = (targets[sub_ends - 1] + 1).astype(np.int32) if per_key else np.zeros(0, np.int32)
    width = max(1, int(n_sub_key.max(initial=1)))
    sub_key = np.full((len(per_key), width), -1, dtype=np.int32)
    row = np.repeat(np.arange(len(per_key)), n_sub_key)
    sub_key[row, np.arange(targets.size) - np.repeat(sub_starts, n_sub_key)] = subtokens
    item_key = plan.item_key
    enc = [per_key[k] for k in item_key.tolist()]
    n_sub = n_sub_key[item_key].astype(np.int32)
    columns = suite.columns()
    item_coords: dict[str, Any] = {
        "word": ("item", columns.pop("word")),
        "context": ("item", columns.pop("context")),
        "setting": ("item", columns.pop("setting")),
        "stimulus_set": ("item", columns.pop("stimulus_set")),
        "char_start": ("item", columns.pop("char_start").astype(np.int32)),
        "char_end": ("item", columns.pop("char_end").astype(np.int32)),
        "n_subtokens": ("item", n_sub),
        "token_start": ("item", start_key[item_key]),
        "token_end": ("item", end_key[item_key]),
        "n_tokens": ("item", n_ids[item_key].astype(np.int32)),
        "subtoken_ids": (("item", dm.SUBTOKEN_DIM), sub_key[item_key]),
    }
    windows = [getattr(e, "window", None) for e in enc]
    if any(w is not None for w in windows):  # contexts cut to the model's positions
        lengths = [len(c) for c in item_coords["context"][1]]
        item_coords["cut_start"] = ("item", np.array(
            [w[0] if w else 0 for w in windows], dtype=np.int32))
        item_coords["cut_end"] = ("item", np.array(
            [w[1] if w else n for w, n in zip(windows, lengths, strict=True)], dtype=np.int32))
    for key, values in columns.items():  # suite labels: str or float64 columns
        if key in item_coords or key in ("item", "layer", "pooling", "feature"):
            raise StoreError(f"suite label {key!r} clashes with a store coordinate; rename it")
        item_coords[key] = ("item", values)
    coords = {
        "item": np.arange(len(enc), dtype=np.int64),
        "layer": np.asarray(layers, dtype=np.int64),
        "pooling": np.array(list(poolings), dtype=object),
        **item_coords,
    }
    return xr.Dataset(coords=coords)
