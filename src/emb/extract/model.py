"""The model runner: load a transformer, tokenize contexts, embed target words in every layer.

This module imports torch and transformers at module level; :mod:`emb.extract` imports it only
when a model is loaded (``import emb.extract`` stays light).

Example
-------
>>> runner = load_model("path/to/gpt2")                            # doctest: +SKIP
>>> encodings = runner.encode(["I love you."], [(2, 6)])            # doctest: +SKIP
>>> vectors = runner.embed(encodings, poolings=("first", "mean"))   # doctest: +SKIP
>>> vectors.shape          # (item, layer = L + 1, pooling, feature)  # doctest: +SKIP
(1, 13, 2, 768)
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import math
import os
import pickle
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import transformers
from transformers import AutoConfig, AutoModel, AutoTokenizer

from emb.errors import ModelError, TargetNotFoundError
from emb.extract.pooling import POOLINGS, parse_poolings, pool
from emb.extract.tokens import apply_bos, locate_subtokens

__all__ = ["Encoding", "ModelInfo", "Runner", "load_model", "stop_after"]

DType = Literal["float32", "float16", "bfloat16"]
_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}
_FINAL_NORMS = ("ln_f", "norm", "final_layer_norm", "final_layernorm", "LayerNorm")
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".gguf")
_HASH_BLOCK = 8 * 2**20
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True, kw_only=True)
class ModelInfo:
    """Provenance of a loaded model, written to the store's ``model`` attribute.

    Attributes
    ----------
    model_id : str
        The model as given to :func:`load_model` (hub id, directory or .gguf path).
    source : {"hub", "local", "gguf"}
    revision : str or None
        The hub commit hash when known, else None (local directories and gguf files).
    fingerprint : str
        sha256 (hex) over the bytes of the weight files, in the order of their sorted relative
        paths (for a single file: its ``sha256sum``); for hub models, the commit hash (or the
        requested revision when it could not be resolved).
    architecture : str
        ``config.architectures[0]``, else the model's class name.
    model_type : str
        ``config.model_type``.
    n_layers : int
        Number of blocks L of the (encoder) stack; the model returns L + 1 hidden states.
    hidden_size : int
        Feature size of the hidden states.
    is_encoder_decoder : bool
        True when only the encoder of an encoder–decoder model is run.
    tokenizer : str
        ``"<TokenizerClass> (<name_or_path>)"``.
    padding_side : str
        The tokenizer's padding side (the runner itself always pads on the right).
    bos_token, bos_token_id : str or None, int or None
        The tokenizer's BOS token.
    adds_bos : bool
        Whether the tokenizer puts the BOS token first by itself (``add_special_tokens=True``).
    last_layer : str
        What hidden state L is, e.g. "after the final layer norm (ln_f)" or "output of the last
        block".
    causal : bool
        Whether a token's hidden states depend on earlier tokens only, found by running the model
        on a sentence and on its first half (:func:`_is_causal`).  A causal model's contexts are
        cut after the target's last subtoken: the tokens after it cannot change its vectors.
    dtype, device : str
        Weights' dtype and the device the model runs on.
    transformers_version, torch_version : str
    unk_token_id : int or None
        The tokenizer's unknown token (targets made of nothing else are reported).
    trust_remote_code : bool
        Whether the model was allowed to run Python code of its own (``--trust-remote-code``).
    weights_format : str
        ``"safetensors"``, ``"pickle (torch.load weights_only=True)"``, ``"gguf"``, or
        ``"hub"`` (the format transformers chose: safetensors when the repository has them).
    """

    model_id: str
    source: Literal["hub", "local", "gguf"]
    revision: str | None
    fingerprint: str
    architecture: str
    model_type: str
    n_layers: int
    hidden_size: int
    is_encoder_decoder: bool
    tokenizer: str
    padding_side: str
    bos_token: str | None
    bos_token_id: int | None
    adds_bos: bool
    last_layer: str
    dtype: str
    device: str
    transformers_version: str
    torch_version: str
    causal: bool = False
    unk_token_id: int | None = None
    trust_remote_code: bool = False
    weights_format: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelInfo:
        """Rebuild from :meth:`to_dict`'s output; unknown keys are ignored."""
        names = {field.name for field in fields(cls)}
        required = {field.name for field in fields(cls) if field.default is MISSING}
        missing = sorted(required - set(data))
        if missing:
            raise ModelError(f"model info lacks the keys {missing}; got keys {sorted(data)}")
        return cls(**{key: data[key] for key in names if key in data})


@dataclass(frozen=True, kw_only=True, eq=False)
class Encoding:
    """One tokenized context with its target's token positions.

    Attributes
    ----------
    input_ids : numpy.ndarray of int32, (n_tokens,)
        The token ids fed to the model (after the BOS policy).
    target : numpy.ndarray of int64, (n_subtokens,)
        Increasing indices into ``input_ids`` of the target word's subtokens.
    window : (int, int) or None
        When the context was longer than the model's positions: the character range of the context
        that was tokenized instead (cut around the target); None when the whole context fits.
    """

    input_ids: np.ndarray
    target: np.ndarray
    window: tuple[int, int] | None = None

    @property
    def n_tokens(self) -> int:
        """Length of the whole tokenized context."""
        return int(self.input_ids.shape[0])

    @property
    def n_subtokens(self) -> int:
        """Number of subtokens of the target."""
        return int(self.target.shape[0])

    @property
    def subtoken_ids(self) -> np.ndarray:
        """Token ids of the target's subtokens, int32 (n_subtokens,)."""
        return self.input_ids[self.target]

    @property
    def token_start(self) -> int:
        """Index of the target's first subtoken."""
        return int(self.target[0])

    @property
    def token_end(self) -> int:
        """One past the index of the target's last subtoken."""
        return int(self.target[-1]) + 1


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


class Runner:
    """A loaded model with its tokenizer; built by :func:`load_model`.

    Parameters
    ----------
    model : torch.nn.Module
        The base model (for encoder–decoder models: its encoder), in eval mode on ``device``.
    tokenizer : transformers fast tokenizer
    device : torch.device
    info : ModelInfo
    """

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
            added.  See :func:`emb.extract.tokens.apply_bos`.

        Returns
        -------
        list of Encoding, in input order.

        Raises
        ------
        TargetNotFoundError
            Listing every item whose span overlaps no token: ``(index, context, span)``; the
            same tuples are in the exception's ``failures`` attribute.
        ModelError
            ``bos=True`` with a tokenizer that has no BOS token.

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
            encodings[i] = self._cut(contexts[i], spans[i], encodings[i], int(limit), bos=bos)
        return encodings

    def _cut(
        self, context: str, span: tuple[int, int], enc: Encoding, limit: int, *, bos: bool | None
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
            (cut,) = self.encode([context[a:b]], [(span[0] - a, span[1] - a)], bos=bos)
            if cut.n_tokens <= limit:
                return Encoding(input_ids=cut.input_ids, target=cut.target, window=(a, b))
        raise ModelError(
            f"cannot fit the target {context[span[0]:span[1]]!r} with its context into the "
            f"{limit} positions of {self.info.model_id} ({enc.n_tokens} tokens)"
        )

    def embed(
        self,
        encodings: Sequence[Encoding],
        *,
        poolings: Sequence[str] = POOLINGS,
        batch_size: int = 64,
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
        Pooling happens on the device in float32 (:func:`emb.extract.pooling.pool`); only the
        token window holding the batch's targets is pooled, and each batch makes one copy to the
        host.
        """
        names = parse_poolings(poolings)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer; got {batch_size!r}")
        n = len(encodings)
        if out_dtype not in ("float32", "float16"):
            raise ValueError(f"out_dtype must be 'float32' or 'float16'; got {out_dtype!r}")
        torch_out = torch.float16 if out_dtype == "float16" else torch.float32
        chosen_layers = list(range(self.info.n_layers + 1)) if layers is None else list(layers)
        out = np.empty((n, len(chosen_layers), len(names), self.info.hidden_size), dtype=out_dtype)
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
        pad_id = _pad_id(self.tokenizer)
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
                        torch.from_numpy(ids).to(self.device),
                        torch.from_numpy(attention).to(self.device),
                    )
                # (layer, batch, seq, feature) as a view of a batch-major copy (see pool)
                window = torch.stack(
                    [hidden[j][:, lo:hi] for j in chosen_layers], dim=1
                ).transpose(0, 1)
                pooled = pool(window, torch.from_numpy(target).to(self.device), poolings=names)
                # a float64 sum of float32 values is finite iff every value is (it cannot
                # overflow); the exact test, 5x dearer, runs only to confirm a non-finite sum
                if not math.isfinite(float(pooled.sum(dtype=torch.float64))) and not bool(
                    torch.isfinite(pooled).all()
                ):
                    raise ModelError(
                        f"{self.info.model_id} returned NaN or infinite hidden states for the "
                        f"contexts {[int(i) for i in chosen[:10]]}; with --dtype float16/bfloat16 "
                        "try float32 (half precision can overflow inside the model)"
                    )
                out[chosen] = pooled.to(torch_out).cpu().numpy()
                if progress is not None:
                    progress(len(batch))
        return out

    def _forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple:
        return _hidden_states(self.model, input_ids, attention_mask)


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
        if name in _FINAL_NORMS and "norm" in type(module).__name__.lower()
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


def _hidden_states(
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


def _pad_id(tokenizer: Any) -> int:
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


def _parse_dtype(dtype: str) -> torch.dtype:
    if dtype not in _DTYPES:
        raise ModelError(f"unknown dtype {dtype!r}; choose one of {sorted(_DTYPES)}")
    return _DTYPES[dtype]


def _parse_device(device: str) -> torch.device:
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
    return parsed


def _sha256(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            while block := handle.read(_HASH_BLOCK):
                digest.update(block)
    return digest.hexdigest()


def _weight_files(directory: Path) -> list[Path]:
    """The weight files transformers would load from a directory (safetensors first)."""
    files = sorted(p for p in directory.iterdir() if p.is_file())
    for suffix in _WEIGHT_SUFFIXES:
        chosen = [p for p in files if p.name.endswith(suffix) and not p.name.startswith("training_")]
        if chosen:
            return chosen
    return []


def _refuse_own_code(directory: Path, given: str) -> None:
    """Refuse a model directory that ships Python code (``auto_map``), before transformers reads it."""
    for name in ("config.json", "tokenizer_config.json"):
        file = directory / name
        if not file.is_file():
            continue
        try:
            doc = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise ModelError(
                f"{file} of model {given!r} is not readable JSON ({error}); save the model again "
                "with save_pretrained"
            ) from error
        auto_map = doc.get("auto_map") if isinstance(doc, dict) else None
        if auto_map:
            _refuse_auto_map(given, name, auto_map)


def _refuse_auto_map(given: str, where: str, auto_map: Any) -> None:
    entries = (
        ", ".join(f"{k} → {v}" for k, v in list(auto_map.items())[:4])
        if isinstance(auto_map, Mapping)
        else str(auto_map)[:200]
    )
    raise ModelError(
        f"{given!r} ships Python code of its own (auto_map in its {where}: {entries}); emb runs a "
        "model's own code only with --trust-remote-code (trust_remote_code=True), after you have "
        "read that code"
    )


def _looks_like_path(model: str) -> bool:
    return (
        model.startswith((".", "/", "~"))
        or model.endswith(".gguf")
        or "\\" in model
        or model.count("/") > 1
        or os.path.isabs(model)
    )


def _resolve_hub_revision(model: str, revision: str | None) -> str | None:
    """The commit hash a hub revision points to, or None when it cannot be resolved."""
    if revision is not None and _COMMIT.match(revision):
        return revision
    try:
        from transformers.utils.hub import resolve_revision
    except ImportError:  # older transformers: the config carries the hash instead
        return None
    resolved = resolve_revision(model, revision)
    commit = getattr(resolved, "resolved", None)
    return str(commit) if commit else None


def _cached_commit(model: str, revision: str | None) -> str | None:
    """The commit of the hub-cache snapshot that holds the model's config.json, if any."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    path = try_to_load_from_cache(model, "config.json", revision=revision)
    if not isinstance(path, str):
        return None
    match = re.search(r"[/\\]snapshots[/\\]([0-9a-f]{40})[/\\]", path)
    return match.group(1) if match else None


def _last_layer(model: Any) -> str:
    """Say what the last hidden state is, from the base model's top-level modules."""
    for name, module in model.named_children():
        if name in _FINAL_NORMS and "norm" in type(module).__name__.lower():
            return f"after the final layer norm ({name})"
    return "output of the last block"


def _describe_tokenizer(tokenizer: Any) -> str:
    return f"{type(tokenizer).__name__} ({tokenizer.name_or_path})"


def load_model(
    model: str | os.PathLike[str],
    *,
    dtype: DType = "float32",
    device: str = "auto",
    revision: str | None = None,
    gguf_file: str | None = None,
    trust_remote_code: bool = False,
) -> Runner:
    """Load a transformer and its fast tokenizer for embedding extraction.

    Nothing of the model's own runs unless asked: ``trust_remote_code`` is passed to
    transformers explicitly (so it never asks on stdin), and a model that ships Python code
    (``auto_map`` in its config or tokenizer config) is refused without it.  Weights are read
    from safetensors when the model has them; ``.bin`` pickles only through torch's safe
    unpickler (``torch.load(weights_only=True)``, which admits tensors and plain containers and
    refuses any other object); torch >= 2.6 is required, the first version where that is the
    default and where CVE-2025-32434 (code execution through ``weights_only=True``) is fixed.

    Parameters
    ----------
    model : str or path
        A local directory with ``config.json`` (``save_pretrained`` output), a path to a ``.gguf``
        file, a directory together with ``gguf_file``, or a hub id (needs network or the local
        hub cache).
    dtype : {"float32", "float16", "bfloat16"}
        Weights' dtype.  Pooling is done in float32 whatever this is.
    device : str
        "auto" (CUDA when available, else CPU), "cpu", "cuda", "cuda:N".
    revision : str, optional
        Hub branch, tag or commit (hub ids only).
    gguf_file : str, optional
        Name of a .gguf file inside the directory ``model``; needs the ``gguf`` and
        ``accelerate`` packages.  The tokenizer is read from the same file.
    trust_remote_code : bool
        Let a model that ships its own Python code run it (recorded in ``info``).  Read that
        code first: it runs with your permissions.

    Returns
    -------
    Runner
        With the base model (``AutoModel``; for encoder–decoder models its encoder) in eval mode
        on ``device``, and ``info`` (:class:`ModelInfo`).

    Raises
    ------
    ModelError
        Unknown path or id, a directory without config.json, a tokenizer without offsets (not a
        fast tokenizer), a missing optional package, a bad dtype/device, a model with code of
        its own (without ``trust_remote_code``), or pickled weights torch's safe loader refuses.
    """
    if not isinstance(trust_remote_code, bool):
        raise ModelError(f"trust_remote_code must be True or False; got {trust_remote_code!r}")
    torch_dtype = _parse_dtype(dtype)
    target_device = _parse_device(device)
    given = os.fspath(model)
    path = Path(given).expanduser()
    hub_commit: str | None = None
    load_kwargs: dict[str, Any] = {}
    if gguf_file is None and path.suffix == ".gguf":
        if not path.is_file():
            raise ModelError(f"gguf file {given!r} does not exist; give the path of a .gguf file")
        path, gguf_file = path.parent, path.name
    if gguf_file is not None:
        source: Literal["hub", "local", "gguf"] = "gguf"
        weights = path / gguf_file
        if not weights.is_file():
            raise ModelError(
                f"gguf file {gguf_file!r} not found in {str(path)!r}; give the path of an "
                "existing .gguf file"
            )
        for package in ("gguf", "accelerate"):
            if importlib.util.find_spec(package) is None:
                raise ModelError(
                    f"loading {weights} needs the {package!r} package, which is not installed; "
                    f"run 'pip install {package}' (or 'pip install emb[extract]')"
                )
        load_kwargs["gguf_file"] = gguf_file
        location: str = str(path)
        weights_format = "gguf"
        fingerprint = _sha256([weights])
    elif path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelError(
                f"directory {given!r} has no config.json, so it is not a saved transformers "
                f"model (found: {sorted(p.name for p in path.iterdir())[:10]}); give a directory "
                "written by save_pretrained, a .gguf file, or a hub id"
            )
        source = "local"
        location = str(path)
        if not trust_remote_code:
            _refuse_own_code(path, given)
        weight_files = _weight_files(path)
        if not weight_files:
            raise ModelError(
                f"directory {given!r} has a config.json but no weight files "
                f"({', '.join('*' + s for s in _WEIGHT_SUFFIXES[:3])}); save the model with "
                "save_pretrained"
            )
        if weight_files[0].name.endswith(".safetensors"):
            load_kwargs["use_safetensors"] = True  # never fall back to a pickle beside them
            weights_format = "safetensors"
        else:
            weights_format = "pickle (torch.load weights_only=True)"
        fingerprint = _sha256(weight_files)
    elif path.exists() or _looks_like_path(given):
        raise ModelError(
            f"model path {given!r} does not exist or is not a model; give a local directory "
            "with config.json, a path to a .gguf file, or a hub id (with network access)"
        )
    else:
        source = "hub"
        location = given
        hub_commit = _resolve_hub_revision(given, revision)
        load_kwargs["revision"] = hub_commit or revision
        weights_format = "hub"
        fingerprint = ""
    load_kwargs["trust_remote_code"] = trust_remote_code
    try:
        config = AutoConfig.from_pretrained(location, **load_kwargs)
        if not trust_remote_code and getattr(config, "auto_map", None):
            _refuse_auto_map(given, "config.json", config.auto_map)
        tokenizer = AutoTokenizer.from_pretrained(location, **load_kwargs)
        full = AutoModel.from_pretrained(
            location, dtype=torch_dtype, weights_only=True, **load_kwargs
        )
    except pickle.UnpicklingError as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        reason = next(
            (line for line in lines if line.startswith(("Trying to load", "Unsupported"))),
            lines[0] if lines else type(error).__name__,
        ).rstrip(".")
        raise ModelError(
            f"the weights of {given!r} are a pickle that torch's safe loader "
            f"(torch.load weights_only=True) refuses: {reason}. emb never unpickles arbitrary "
            "objects, which can run code; get the model's weights as .safetensors, or convert "
            "them with a tool you trust"
        ) from error
    except ModelError:
        raise
    except (OSError, ValueError, KeyError, ImportError) as error:
        if "trust_remote_code" in str(error):
            raise ModelError(
                f"{given!r} needs Python code of its own to load; emb runs a model's own code only "
                "with --trust-remote-code (trust_remote_code=True), after you have read that code"
            ) from error
        tried = {"hub": f"the hub id {given!r}", "local": f"the directory {location!r}"}.get(
            source, f"the gguf file {gguf_file!r} in {location!r}"
        )
        raise ModelError(
            f"could not load {tried}: {type(error).__name__}: {error}; give a local directory "
            "with config.json, a path to a .gguf file, or a hub id with network access "
            "(check the spelling and the revision)"
        ) from error
    if not getattr(tokenizer, "is_fast", False):
        raise ModelError(
            f"the tokenizer of {given!r} is {type(tokenizer).__name__}, which is not a fast "
            "tokenizer and cannot report character offsets; save a tokenizer.json with the model "
            "(e.g. AutoTokenizer.from_pretrained(..., use_fast=True).save_pretrained(dir))"
        )
    if source == "hub":
        hub_commit = (
            hub_commit
            or getattr(config, "_commit_hash", None)
            or _cached_commit(given, revision)
        )
        fingerprint = hub_commit or (revision or "unresolved")
    is_encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
    network = full.get_encoder() if is_encoder_decoder else full
    network.eval()
    network.requires_grad_(False)
    if hasattr(network.config, "use_cache"):
        network.config.use_cache = False
    network.to(target_device)

    probe_ids = tokenizer("a", add_special_tokens=True)
    first_id = probe_ids["input_ids"][0] if probe_ids["input_ids"] else None
    adds_bos = tokenizer.bos_token_id is not None and first_id == tokenizer.bos_token_id
    with torch.inference_mode():
        ids = torch.tensor([probe_ids["input_ids"] or [_pad_id(tokenizer)]], device=target_device)
        try:
            hidden = _hidden_states(network, ids)
        except (TypeError, ValueError, RuntimeError) as error:
            raise ModelError(
                f"{type(network).__name__} of {given!r} did not run on a test input "
                f"({type(error).__name__}: {error}); emb needs a text model that returns hidden "
                "states"
            ) from error
    if not hidden:
        raise ModelError(
            f"{type(network).__name__} of {given!r} returns no hidden states; emb needs a model "
            "that supports output_hidden_states=True"
        )
    architectures = getattr(config, "architectures", None) or [type(full).__name__]
    causal = _is_causal(network, tokenizer, target_device, dtype)
    info = ModelInfo(
        model_id=given,
        source=source,
        revision=hub_commit if source == "hub" else None,
        fingerprint=fingerprint,
        architecture=str(architectures[0]),
        model_type=str(getattr(config, "model_type", "")),
        n_layers=len(hidden) - 1,
        hidden_size=int(hidden[-1].shape[-1]),
        is_encoder_decoder=is_encoder_decoder,
        tokenizer=_describe_tokenizer(tokenizer),
        padding_side=str(getattr(tokenizer, "padding_side", "right")),
        bos_token=tokenizer.bos_token,
        bos_token_id=tokenizer.bos_token_id,
        adds_bos=bool(adds_bos),
        last_layer=_last_layer(network),
        dtype=dtype,
        device=str(target_device),
        transformers_version=transformers.__version__,
        torch_version=torch.__version__,
        causal=causal,
        unk_token_id=getattr(tokenizer, "unk_token_id", None),
        trust_remote_code=trust_remote_code,
        weights_format=weights_format,
    )
    return Runner(network, tokenizer, target_device, info)


#: A sentence long enough that its second half would move the first half's hidden states in
#: any model that attends forward.
_PROBE = "The old bridge over the river was closed for repairs until the end of spring"


def _is_causal(network: Any, tokenizer: Any, device: torch.device, dtype: str) -> bool:
    """Whether the first tokens' hidden states ignore the tokens after them.

    Runs the sentence :data:`_PROBE` whole and cut in half and compares every layer's states at
    the shared positions.  A causal model gives the same states up to rounding (relative
    difference ~1e-7 in float32); a bidirectional one (BERT, a T5 encoder) changes them by
    tens of percent.  The tolerance (1e-4 in float32, 2e-2 in half precision) errs towards "not
    causal", which only costs speed.
    """
    ids = tokenizer(_PROBE, add_special_tokens=True)["input_ids"]
    if len(ids) < 8:
        return False
    half = len(ids) // 2
    with torch.inference_mode():
        states = []
        for chunk in (ids, ids[:half]):
            hidden = _hidden_states(network, torch.tensor([chunk], device=device))
            states.append(torch.stack([h[0, :half].float() for h in hidden]))
    full, prefix = states
    scale = float(full.abs().max())
    if not math.isfinite(scale) or scale == 0.0:
        return False
    tolerance = 1e-4 if dtype == "float32" else 2e-2
    return float((full - prefix).abs().max()) <= tolerance * scale

