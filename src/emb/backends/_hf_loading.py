"""Loading a transformer for extraction: what it is, whether to trust it, and its provenance.

:func:`load_model` reads a local directory, a ``.gguf`` file or a hub id; refuses a model's own
code without ``trust_remote_code``; reads pickled weights only through torch's safe unpickler;
fingerprints the weights (sha256) or pins the hub commit; and probes what the model is (layers,
hidden size, causal or not, BOS behaviour) into :class:`emb.backends.ModelInfo`.  The runner
it returns is :class:`emb.backends._hf_runner.HFRunner`.  Imports torch and transformers; the
backend :mod:`emb.backends.hf` imports it only when a model is loaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import pickle
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
import transformers
from transformers import AutoConfig, AutoModel, AutoTokenizer

from emb.backends._hf_placement import (
    block_count,
    blocks_to_load,
    check_limit_devices,
    check_offload_dir,
    check_quantization_backend,
    cut_config,
    drop_final_norm,
    input_device,
    make_plan,
    placement,
    quiet_unexpected,
    resolve_dtype,
)
from emb.backends._hf_runner import (
    FINAL_NORMS,
    DType,
    HFRunner,
    hidden_states,
    padding_id,
    parse_device,
    parse_dtype,
)
from emb.backends._memory import (
    MemoryPlan,
    check_device_map,
    check_quantization,
    parse_max_memory,
)
from emb.backends.backoff import InjectedOOM
from emb.backends.base import ModelInfo
from emb.errors import ModelError
from emb.options import DEVICE, DTYPE

__all__ = ["load_model"]

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".gguf")
_HASH_BLOCK = 8 * 2**20
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _sha256(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            while block := handle.read(_HASH_BLOCK):
                digest.update(block)
    return digest.hexdigest()


#: Files a tokenizer is read from (transformers' names for them), fingerprinted apart from the
#: weights: a tokenizer edited in place (another vocabulary, another BOS rule) changes the
#: vectors of every context without changing a weight.
_TOKENIZER_FILES = frozenset({
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "vocab.json", "vocab.txt", "merges.txt", "tokenizer.model", "spiece.model",
    "sentencepiece.bpe.model", "sentencepiece.model", "vocab.model", "bpe.codes",
})


def _tokenizer_fingerprint(directory: Path) -> str | None:
    """sha256 (hex) over the names and bytes of the directory's tokenizer files
    (:data:`_TOKENIZER_FILES`, sorted by name); None when it has none."""
    files = sorted(p for p in directory.iterdir() if p.is_file() and p.name in _TOKENIZER_FILES)
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode("utf-8") + b"\0")
        digest.update(_sha256([path]).encode("ascii"))
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
        if name in FINAL_NORMS and "norm" in type(module).__name__.lower():
            return f"after the final layer norm ({name})"
    return "output of the last block"


def _describe_tokenizer(tokenizer: Any) -> str:
    return f"{type(tokenizer).__name__} ({tokenizer.name_or_path})"


@dataclass(frozen=True)
class _Options:
    """:func:`load_model`'s placement options, parsed and checked before anything is read."""

    dtype: str
    torch_dtype: torch.dtype
    device: torch.device
    device_map: str | None
    quantize: str | None
    limits: dict[int | str, int] | None


def _parse_options(
    *, dtype: Any, device: Any, trust_remote_code: Any, device_map: Any, max_memory: Any,
    offload_dir: str | os.PathLike[str] | None, quantize: Any,
) -> _Options:
    """Stage 1 of :func:`load_model`: every option checked, the dtype ``auto`` resolved."""
    if not isinstance(trust_remote_code, bool):
        raise ModelError(f"trust_remote_code must be True or False; got {trust_remote_code!r}")
    dtype = DTYPE.parse(dtype, error=ModelError)  # the declarations' one message
    device = DEVICE.parse(device, error=ModelError)
    device_map = check_device_map(device_map)
    quantize = check_quantization(quantize)
    limits = parse_max_memory(max_memory)
    target_device = parse_device(device)
    check_limit_devices(limits)
    if quantize is not None:
        check_quantization_backend(quantize, target_device)
    dtype = resolve_dtype(dtype, target_device)
    torch_dtype = parse_dtype(dtype)
    if offload_dir is not None and device_map is None:
        raise ModelError(
            f"--offload-dir {os.fspath(offload_dir)!r} keeps weights that fit on no device, which "
            "needs --device-map (auto, balanced, sequential or cpu); add --device-map auto"
        )
    if offload_dir is not None:
        check_offload_dir(offload_dir)
    return _Options(dtype, torch_dtype, target_device, device_map, quantize, limits)


@dataclass(frozen=True)
class _Source:
    """Where a model is read from, the keywords transformers reads it with, and what identifies
    its weights (a hub model's commit is known only once its config is read)."""

    given: str
    source: Literal["hub", "local", "gguf"]
    location: str
    gguf_file: str | None
    load_kwargs: dict[str, Any]
    weights_format: str
    fingerprint: str
    tokenizer_fingerprint: str | None = None  # local directories (a gguf file holds its own)
    hub_commit: str | None = None


def _locate(
    model: str | os.PathLike[str], *, revision: str | None, gguf_file: str | None,
    trust_remote_code: bool, options: _Options,
) -> _Source:
    """Stage 2 of :func:`load_model`: a gguf file, a local directory or a hub id, checked and
    fingerprinted before transformers reads it."""
    given = os.fspath(model)
    path = Path(given).expanduser()
    if revision is not None and (gguf_file is not None or path.suffix == ".gguf" or path.is_dir()):
        raise ModelError(
            f"revision {revision!r} (--revision) names a version of a hub model, but {given!r} is "
            "a local model, which has one version: drop --revision (the store records the "
            "weights' fingerprint instead)"
        )
    if gguf_file is None and path.suffix == ".gguf":
        if not path.is_file():
            raise ModelError(f"gguf file {given!r} does not exist; give the path of a .gguf file")
        path, gguf_file = path.parent, path.name
    if gguf_file is not None:
        return _locate_gguf(given, path, gguf_file, trust_remote_code, options)
    if path.is_dir():
        return _locate_directory(given, path, trust_remote_code)
    if path.exists() or _looks_like_path(given):
        raise ModelError(
            f"model path {given!r} does not exist or is not a model; give a local directory "
            "with config.json, a path to a .gguf file, or a hub id (with network access)"
        )
    hub_commit = _resolve_hub_revision(given, revision)
    return _Source(
        given, "hub", given, None,
        {"revision": hub_commit or revision, "trust_remote_code": trust_remote_code},
        "hub", "", hub_commit=hub_commit,
    )


def _locate_gguf(
    given: str, path: Path, gguf_file: str, trust_remote_code: bool, options: _Options,
) -> _Source:
    """A ``.gguf`` file in ``path``: refused with a device map or quantisation, or when the
    file or one of the packages that read it is missing."""
    if options.device_map is not None or options.quantize is not None:
        raise ModelError(
            f"--device-map and --quantize place or quantise the weights of a transformers "
            f"checkpoint; {gguf_file!r} is a GGUF file, which transformers dequantises whole "
            "onto one device: drop them (or load the model's safetensors checkpoint)"
        )
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
    return _Source(
        given, "gguf", str(path), gguf_file,
        {"gguf_file": gguf_file, "trust_remote_code": trust_remote_code},
        "gguf", _sha256([weights]),
    )


def _locate_directory(given: str, path: Path, trust_remote_code: bool) -> _Source:
    """A ``save_pretrained`` directory: its config, its own code (refused unless trusted), its
    weight files (safetensors before any pickle) and their fingerprints."""
    if not (path / "config.json").is_file():
        raise ModelError(
            f"directory {given!r} has no config.json, so it is not a saved transformers "
            f"model (found: {sorted(p.name for p in path.iterdir())[:10]}); give a directory "
            "written by save_pretrained, a .gguf file, or a hub id"
        )
    if not trust_remote_code:
        _refuse_own_code(path, given)
    weight_files = _weight_files(path)
    if not weight_files:
        raise ModelError(
            f"directory {given!r} has a config.json but no weight files "
            f"({', '.join('*' + s for s in _WEIGHT_SUFFIXES[:3])}); save the model with "
            "save_pretrained"
        )
    load_kwargs: dict[str, Any] = {}
    if weight_files[0].name.endswith(".safetensors"):
        load_kwargs["use_safetensors"] = True  # never fall back to a pickle beside them
        weights_format = "safetensors"
    else:
        weights_format = "pickle (torch.load weights_only=True)"
    fingerprint = _sha256(weight_files)
    load_kwargs["trust_remote_code"] = trust_remote_code
    return _Source(
        given, "local", str(path), None, load_kwargs, weights_format, fingerprint,
        tokenizer_fingerprint=_tokenizer_fingerprint(path),
    )


@dataclass(frozen=True)
class _Loaded:
    """What transformers read: the config (cut to the blocks loaded), the tokenizer, the memory
    plan and the model."""

    config: Any
    tokenizer: Any
    plan: MemoryPlan | None
    full: Any
    n_blocks: int | None
    loaded_blocks: int | None


def _read(
    found: _Source, options: _Options, *, trust_remote_code: bool, layers: Any, on_plan: Any,
    offload_dir: str | os.PathLike[str] | None,
) -> _Loaded:
    """Stage 3 of :func:`load_model`: the config, tokenizer, plan and weights read, each failure
    said as a :class:`ModelError`."""
    try:
        return _read_unguarded(
            found, options, trust_remote_code=trust_remote_code, layers=layers, on_plan=on_plan,
            offload_dir=offload_dir,
        )
    except pickle.UnpicklingError as error:
        raise _refused_pickle(found.given, error) from error
    except ModelError:
        raise
    except (OSError, ValueError, KeyError, ImportError) as error:
        raise _load_failed(found, error) from error


def _read_unguarded(
    found: _Source, options: _Options, *, trust_remote_code: bool, layers: Any, on_plan: Any,
    offload_dir: str | os.PathLike[str] | None,
) -> _Loaded:
    location, load_kwargs = found.location, found.load_kwargs
    device_map, quantize = options.device_map, options.quantize
    config = AutoConfig.from_pretrained(location, **load_kwargs)
    if not trust_remote_code and getattr(config, "auto_map", None):
        _refuse_auto_map(found.given, "config.json", config.auto_map)
    tokenizer = AutoTokenizer.from_pretrained(location, **load_kwargs)
    n_blocks = block_count(config)
    loaded_blocks = None
    if device_map is not None or quantize is not None:
        loaded_blocks = blocks_to_load(config, layers, n_blocks)
        if loaded_blocks is not None:
            config = cut_config(config, loaded_blocks)
    plan = make_plan(
        config, given=found.given, dtype=options.dtype, quantize=quantize, device_map=device_map,
        limits=options.limits, device=options.device, n_blocks=n_blocks,
        loaded_blocks=loaded_blocks, trust_remote_code=trust_remote_code,
    ) if found.source != "gguf" else None
    if plan is not None:
        if on_plan is not None:
            on_plan(plan)
        plan.check(offload_dir=None if offload_dir is None else os.fspath(offload_dir))
    with quiet_unexpected(loaded_blocks is not None):  # the blocks left out, on purpose
        full = AutoModel.from_pretrained(  # the config read above (a GGUF's: ~5 s a parse)
            location, config=config, dtype=options.torch_dtype, weights_only=True,
            **placement(plan, device_map, offload_dir, quantize, options.torch_dtype,
                        options.device),
            **load_kwargs,
        )
    return _Loaded(config, tokenizer, plan, full, n_blocks, loaded_blocks)


def _refused_pickle(given: str, error: pickle.UnpicklingError) -> ModelError:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    reason = next(
        (line for line in lines if line.startswith(("Trying to load", "Unsupported"))),
        lines[0] if lines else type(error).__name__,
    ).rstrip(".")
    return ModelError(
        f"the weights of {given!r} are a pickle that torch's safe loader "
        f"(torch.load weights_only=True) refuses: {reason}. emb never unpickles arbitrary "
        "objects, which can run code; get the model's weights as .safetensors, or convert "
        "them with a tool you trust"
    )


def _load_failed(found: _Source, error: Exception) -> ModelError:
    given, location = found.given, found.location
    if "trust_remote_code" in str(error):
        return ModelError(
            f"{given!r} needs Python code of its own to load; emb runs a model's own code only "
            "with --trust-remote-code (trust_remote_code=True), after you have read that code"
        )
    tried = {"hub": f"the hub id {given!r}", "local": f"the directory {location!r}"}.get(
        found.source, f"the gguf file {found.gguf_file!r} in {location!r}"
    )
    return ModelError(
        f"could not load {tried}: {type(error).__name__}: {error}; give a local directory "
        "with config.json, a path to a .gguf file, or a hub id with network access "
        "(check the spelling and the revision)"
    )


def _identity(found: _Source, config: Any, revision: str | None) -> tuple[str | None, str]:
    """Stage 4 of :func:`load_model`: the hub commit (None for a local model) and the weights'
    fingerprint (a hub model's is its commit, known once its config is read)."""
    if found.source != "hub":
        return found.hub_commit, found.fingerprint
    hub_commit = (
        found.hub_commit
        or getattr(config, "_commit_hash", None)
        or _cached_commit(found.given, revision)
    )
    return hub_commit, hub_commit or (revision or "unresolved")


@dataclass(frozen=True)
class _Network:
    """The module that is run (an encoder–decoder's encoder), where its inputs go, and what its
    last hidden state is."""

    module: Any
    device: torch.device
    last_layer: str
    is_encoder_decoder: bool


def _ready(loaded: _Loaded, options: _Options) -> _Network:
    """Stage 5 of :func:`load_model`: the network in eval mode, without gradients or a cache, on
    its device (or dispatched by accelerate), its final norm dropped when blocks were cut."""
    full, target_device, device_map = loaded.full, options.device, options.device_map
    is_encoder_decoder = bool(getattr(loaded.config, "is_encoder_decoder", False))
    network = full.get_encoder() if is_encoder_decoder else full
    network.eval()
    network.requires_grad_(False)
    if hasattr(network.config, "use_cache"):
        network.config.use_cache = False
    last_layer = _last_layer(network)
    if device_map is None and options.quantize is None:
        network.to(target_device)
    elif device_map is not None:  # dispatched by accelerate: inputs go to its first GPU or the CPU
        target_device = input_device(loaded.plan)
        # accelerate brings a split model's outputs back to the inputs' device, every layer's
        # hidden states with them; left where each block ran, they are pooled there (pool_where)
        hook = getattr(full, "_hf_hook", None)
        if hook is not None and hasattr(hook, "io_same_device"):
            hook.io_same_device = False
    if loaded.loaded_blocks is not None:  # hidden state `loaded_blocks` is that block's raw output
        drop_final_norm(network)
    return _Network(network, target_device, last_layer, is_encoder_decoder)


def _probe(
    network: Any, tokenizer: Any, device: torch.device, quantize: str | None, given: str,
) -> tuple[bool, Any]:
    """Stage 6 of :func:`load_model`: whether the tokenizer adds a BOS token, and the hidden
    states of one test input (refused when the model does not run or returns none)."""
    probe_ids = tokenizer("a", add_special_tokens=True)
    first_id = probe_ids["input_ids"][0] if probe_ids["input_ids"] else None
    adds_bos = tokenizer.bos_token_id is not None and first_id == tokenizer.bos_token_id
    with torch.inference_mode():
        ids = torch.tensor([probe_ids["input_ids"] or [padding_id(tokenizer)]], device=device)
        try:
            hidden = hidden_states(network, ids)
        except (TypeError, ValueError, RuntimeError) as error:
            if quantize is not None:  # the quantised layers, not the model: say so
                narrow = (" (its CPU 4-bit kernels pack the weights in blocks of 64 input "
                          "features: a layer narrower than that fails)"
                          if quantize == "4bit" and device.type == "cpu" else "")
                raise ModelError(
                    f"with --quantize {quantize}, bitsandbytes could not run the {quantize} layers "
                    f"of {given!r} on {device}{narrow}: {type(error).__name__}: "
                    f"{str(error).rstrip('. ')}; drop --quantize"
                    + (" or use --quantize 8bit" if quantize == "4bit" else "")
                ) from error
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
    return bool(adds_bos), hidden


def load_model(
    model: str | os.PathLike[str],
    *,
    dtype: DType | Literal["auto"] = DTYPE.default,
    device: str = DEVICE.default,
    revision: str | None = None,
    gguf_file: str | None = None,
    trust_remote_code: bool = False,
    device_map: str | None = None,
    max_memory: str | Mapping[Any, Any] | None = None,
    offload_dir: str | os.PathLike[str] | None = None,
    quantize: str | None = None,
    layers: str | Sequence[int] | None = None,
    on_plan: Any = None,
) -> HFRunner:
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
    dtype : {"float32", "float16", "bfloat16", "auto"}
        Weights' dtype (the compute dtype of a quantised model); ``auto``: bfloat16 on a GPU
        that supports it, else float16 on a GPU, else float32 (:func:`resolve_dtype`, recorded
        in ``info.dtype``).  Pooling is done in float32 whatever this is.
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
    device_map : {None, "auto", "balanced", "sequential", "cpu"}
        Spread the weights over the GPUs, the CPU and ``offload_dir`` (accelerate's big-model
        inference through ``from_pretrained(device_map=...)``); None: whole onto ``device``.
        The map is computed before any weight is read (:mod:`emb.backends._memory`) and
        recorded in ``info.memory``.
    max_memory : str or dict, optional
        ``"0=70GiB,1=70GiB,cpu=200GiB"``: what each device may hold (devices not named get
        nothing with a device map); default what is free.
    offload_dir : path, optional
        Where weights that fit nowhere else are kept (disk offload); without it such a plan is
        refused.
    quantize : {None, "8bit", "4bit"}
        bitsandbytes quantisation of the linear layers (CUDA only; compute in ``dtype``).
    layers : str or sequence of int, optional
        The layers the run stores (``--layers``).  With ``device_map`` or ``quantize``, the
        blocks after the highest are not loaded at all (``info.loaded_blocks``).
    on_plan : callable, optional
        Called with the :class:`~emb.backends._memory.MemoryPlan` before any weight is read.

    Returns
    -------
    HFRunner
        With the base model (``AutoModel``; for encoder–decoder models its encoder) in eval mode
        on ``device``, and ``info`` (:class:`ModelInfo`).

    Raises
    ------
    ModelError
        Unknown path or id, a directory without config.json, a tokenizer without offsets (not a
        fast tokenizer), a missing optional package, a bad dtype/device, a model with code of
        its own (without ``trust_remote_code``), or pickled weights torch's safe loader refuses.
    """
    options = _parse_options(
        dtype=dtype, device=device, trust_remote_code=trust_remote_code, device_map=device_map,
        max_memory=max_memory, offload_dir=offload_dir, quantize=quantize,
    )
    found = _locate(
        model, revision=revision, gguf_file=gguf_file, trust_remote_code=trust_remote_code,
        options=options,
    )
    loaded = _read(
        found, options, trust_remote_code=trust_remote_code, layers=layers, on_plan=on_plan,
        offload_dir=offload_dir,
    )
    given, config, tokenizer, plan = found.given, loaded.config, loaded.tokenizer, loaded.plan
    if not getattr(tokenizer, "is_fast", False):
        raise ModelError(
            f"the tokenizer of {given!r} is {type(tokenizer).__name__}, which is not a fast "
            "tokenizer and cannot report character offsets; save a tokenizer.json with the model "
            "(e.g. AutoTokenizer.from_pretrained(..., use_fast=True).save_pretrained(dir))"
        )
    hub_commit, fingerprint = _identity(found, config, revision)
    network = _ready(loaded, options)
    adds_bos, hidden = _probe(network.module, tokenizer, network.device, options.quantize, given)
    architectures = getattr(config, "architectures", None) or [type(loaded.full).__name__]
    causal = _is_causal(network.module, tokenizer, network.device, options.dtype)
    info = ModelInfo(
        model_id=given,
        source=found.source,
        revision=hub_commit if found.source == "hub" else None,
        fingerprint=fingerprint,
        tokenizer_fingerprint=found.tokenizer_fingerprint,
        architecture=str(architectures[0]),
        model_type=str(getattr(config, "model_type", "")),
        n_layers=loaded.n_blocks if loaded.loaded_blocks is not None else len(hidden) - 1,
        hidden_size=int(hidden[-1].shape[-1]),
        is_encoder_decoder=network.is_encoder_decoder,
        tokenizer=_describe_tokenizer(tokenizer),
        padding_side=str(getattr(tokenizer, "padding_side", "right")),
        bos_token=tokenizer.bos_token,
        bos_token_id=tokenizer.bos_token_id,
        adds_bos=adds_bos,
        last_layer=network.last_layer,
        dtype=options.dtype,
        device=str(network.device),
        transformers_version=transformers.__version__,
        torch_version=torch.__version__,
        causal=causal,
        unk_token_id=getattr(tokenizer, "unk_token_id", None),
        trust_remote_code=trust_remote_code,
        weights_format=found.weights_format,
        quantization=options.quantize,
        device_map=options.device_map,
        loaded_blocks=loaded.loaded_blocks,
        memory=(plan.to_dict() if plan is not None and (options.device_map or options.quantize)
                else None),
    )
    runner = HFRunner(network.module, tokenizer, network.device, info)
    runner.memory_plan = plan
    runner.oom_fault = InjectedOOM.from_env()  # a test's fault hook; None unless EMB_INJECT_OOM
    return runner


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
            hidden = hidden_states(network, torch.tensor([chunk], device=device))
            states.append(torch.stack([h[0, :half].float().to(device) for h in hidden]))
    full, prefix = states
    scale = float(full.abs().max())
    if not math.isfinite(scale) or scale == 0.0:
        return False
    tolerance = 1e-4 if dtype == "float32" else 2e-2
    return float((full - prefix).abs().max()) <= tolerance * scale

