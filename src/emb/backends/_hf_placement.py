"""Placing a large transformer: the blocks to load, the memory plan, where the weights go, how
they are quantised, and the compute dtype ``auto`` (README "Large models").

Helpers of :func:`emb.backends._hf_loading.load_model`, which calls them in this order: the
quantisation backend is checked (:func:`check_quantization_backend`) and the dtype resolved
(:func:`resolve_dtype`) before anything is read; the config is cut to the blocks the stored
layers need (:func:`blocks_to_load`, :func:`cut_config`); the memory plan is made and checked
(:func:`make_plan`) before any weight is read; ``from_pretrained`` gets the plan's map
(:func:`placement`); a cut model's final norm is dropped (:func:`drop_final_norm`) and its inputs
go to the map's first GPU (:func:`input_device`).  Imports torch and transformers.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import logging
import os
from collections.abc import Iterator
from typing import Any

import torch

from emb.backends._hf_runner import FINAL_NORMS
from emb.backends._memory import MemoryPlan, plan_memory
from emb.errors import ModelError

__all__ = [
    "block_count",
    "blocks_to_load",
    "check_limit_devices",
    "check_offload_dir",
    "check_quantization_backend",
    "cut_config",
    "drop_final_norm",
    "input_device",
    "make_plan",
    "placement",
    "quiet_unexpected",
    "resolve_dtype",
]


@contextlib.contextmanager
def quiet_unexpected(quiet: bool) -> Iterator[None]:
    """Keep transformers' load report (its warning listing the checkpoint's weights the model
    has no place for: here, those of the blocks not loaded) off the terminal."""
    if not quiet:
        yield
        return
    logger = logging.getLogger("transformers.modeling_utils")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def make_plan(
    config: Any, *, given: str, dtype: str, quantize: str | None, device_map: str | None,
    limits: dict[int | str, int] | None, device: torch.device, n_blocks: int | None,
    loaded_blocks: int | None, trust_remote_code: bool,
) -> MemoryPlan | None:
    """The memory plan (:func:`~emb.backends._memory.plan_memory`); None where a model cannot be
    built on the meta device and none of the options that need the plan was given."""
    try:
        return plan_memory(
            config, model_id=given, dtype=dtype, quantization=quantize, device_map=device_map,
            max_memory=limits, device=str(device),
            blocks=loaded_blocks if loaded_blocks is not None else n_blocks, n_blocks=n_blocks,
            trust_remote_code=trust_remote_code,
        )
    except ModelError:
        raise
    except Exception as error:  # noqa: BLE001 - a model meta init cannot build
        if device_map is None and quantize is None and limits is None:
            return None
        raise ModelError(
            f"cannot plan the memory of {given!r} ({type(error).__name__}: {error}), which "
            "--device-map, --max-memory and --quantize need; load it without them"
        ) from error


def resolve_dtype(dtype: str, device: torch.device) -> str:
    """``"auto"``: bfloat16 on a GPU that supports it, else float16 on a GPU, else float32 (the
    CPU's half-precision matmuls are slow and, for float16, inexact); other values unchanged."""
    if dtype != "auto":
        return dtype
    if device.type == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    if device.type == "mps":
        return "float16"
    return "float32"


def check_limit_devices(limits: dict[int | str, int] | None) -> None:
    """Refuse a ``--max-memory`` that names a device this machine does not have (accelerate
    would place weights on it and fail as they load)."""
    if not limits:
        return
    count = torch.cuda.device_count()
    for device in limits:
        if isinstance(device, int) and device >= count:
            have = (f"{count} GPU(s), 0..{count - 1} (CUDA_VISIBLE_DEVICES may hide some)"
                    if count else "no CUDA GPU")
            raise ModelError(
                f"--max-memory names GPU {device}, which does not exist: this machine has {have}; "
                "name only the devices it has (GPU indices, cpu)"
            )
        if device == "mps" and not torch.backends.mps.is_available():
            raise ModelError(
                "--max-memory names mps, which does not exist: this machine has no MPS device; "
                "name only the devices it has (GPU indices, cpu)"
            )


def check_offload_dir(offload_dir: str | os.PathLike[str]) -> None:
    """Refuse an ``--offload-dir`` that cannot be a directory emb writes into (empty, a file, a
    path under a file, an unwritable place), naming it, before anything loads; a missing one is
    made here (``from_pretrained`` would make it as the weights load)."""
    given = os.fspath(offload_dir)
    if not given.strip():
        raise ModelError(
            f"--offload-dir is empty ({given!r}); give the directory for the weights that fit on "
            "no device, e.g. --offload-dir offload"
        )
    path = os.path.abspath(os.path.expanduser(given))
    existing = path
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        where = "is a file" if existing == path else f"lies under the file {existing!r}"
        raise ModelError(
            f"--offload-dir {given!r} {where}, not a directory; give a directory (it is created "
            "when missing)"
        )
    try:  # as from_pretrained would, now, so that a failure names the option, not the model
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise ModelError(
            f"--offload-dir {given!r} cannot be made a directory ({error.strerror or error}); give "
            "a directory you may write"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ModelError(
            f"--offload-dir {given!r} cannot be written (no write permission); give a directory "
            "you may write"
        )


def check_quantization_backend(quantize: str, device: torch.device) -> None:
    """Refuse ``--quantize`` where bitsandbytes cannot run it, naming what is missing: on a CUDA
    GPU any bitsandbytes; on the CPU a release with a CPU backend (0.46 and later)."""
    missing = []
    if importlib.util.find_spec("bitsandbytes") is None:
        missing.append("the bitsandbytes package (pip install 'emb[quantize]')")
    elif device.type == "cpu" and (why := _bitsandbytes_cpu()) is not None:
        missing.append(f"a bitsandbytes with a CPU backend (0.46 or later; {why}: "
                       "pip install -U bitsandbytes)")
    if device.type not in ("cuda", "cpu"):
        missing.append(f"a CUDA GPU or the CPU (this run's device is {device})")
    if missing:
        raise ModelError(
            f"--quantize {quantize} loads the weights through bitsandbytes, which needs "
            f"{' and '.join(missing)}; without them drop --quantize (and use --dtype bfloat16 "
            "or --device-map auto --offload-dir DIR for a model too large for one device)"
        )


def _bitsandbytes_cpu() -> str | None:
    """None where the installed bitsandbytes runs 8- and 4-bit layers on the CPU, else why not.
    Imports it with its CPU backend's hint about a kernel fetched from the hub kept quiet (emb
    reads no hub)."""
    from importlib.metadata import version

    ops = logging.getLogger("bitsandbytes.backends.cpu.ops")
    level = ops.level
    ops.setLevel(logging.ERROR)
    try:
        if importlib.util.find_spec("bitsandbytes.backends.cpu") is None:
            return f"this one is {version('bitsandbytes')}"
    except Exception as error:  # noqa: BLE001 - a broken install: say what it raised
        return f"this one ({version('bitsandbytes')}) fails to import: {type(error).__name__}: {error}"
    finally:
        ops.setLevel(level)
    return None


def block_count(config: Any) -> int | None:
    value = getattr(config, "num_hidden_layers", None)
    return value if isinstance(value, int) and value > 0 else None


def blocks_to_load(config: Any, layers: Any, n_blocks: int | None) -> int | None:
    """The blocks to load for the stored ``layers`` (the highest, at least 1), or None to load
    all (every layer stored, an encoder–decoder model, an unreadable spec: the pipeline says
    what is wrong with it)."""
    if n_blocks is None or layers is None or getattr(config, "is_encoder_decoder", False):
        return None
    raw = layers.split(",") if isinstance(layers, str) else list(layers)
    if isinstance(layers, str) and layers.strip().lower() in ("", "all"):
        return None
    try:
        chosen = [int(str(v).strip()) % (n_blocks + 1) for v in raw]
    except ValueError:
        return None
    if not chosen or any(not -(n_blocks + 1) <= int(str(v).strip()) <= n_blocks for v in raw):
        return None
    top = max(max(chosen), 1)
    return top if top < n_blocks else None


def cut_config(config: Any, blocks: int) -> Any:
    """A copy of ``config`` with its first ``blocks`` blocks (per-layer lists cut to match)."""
    cut = copy.deepcopy(config)
    n = cut.num_hidden_layers
    cut.num_hidden_layers = blocks
    for key in ("layer_types", "sliding_window_pattern_list"):
        value = getattr(cut, key, None)
        if isinstance(value, list) and len(value) == n:
            setattr(cut, key, value[:blocks])
    return cut


def drop_final_norm(network: Any) -> None:
    """Replace the final norm by the identity: hidden state ``top`` of a model cut after block
    ``top`` is then that block's output, as :func:`~emb.backends._hf_runner.stop_after` gives."""
    for name, module in list(network.named_children()):
        if name in FINAL_NORMS and "norm" in type(module).__name__.lower():
            setattr(network, name, torch.nn.Identity())


def placement(
    plan: MemoryPlan | None, device_map: str | None, offload_dir: Any, quantize: str | None,
    torch_dtype: torch.dtype, device: torch.device,
) -> dict[str, Any]:
    """``from_pretrained``'s keywords that place the weights: the plan's module map, the offload
    folder, the quantisation config."""
    out: dict[str, Any] = {}
    if device_map is not None and plan is not None:
        out["device_map"] = dict(plan.module_map)
        if offload_dir is not None:
            out["offload_folder"] = os.fspath(offload_dir)
    if quantize is not None:
        from transformers import BitsAndBytesConfig

        if quantize == "8bit":  # said once in the docs, not at every layer of every batch
            logging.getLogger("bitsandbytes.autograd._functions").addFilter(_said_in_the_docs)

        out["quantization_config"] = (
            BitsAndBytesConfig(load_in_8bit=True) if quantize == "8bit"
            else BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                    bnb_4bit_use_double_quant=True,
                                    bnb_4bit_compute_dtype=torch_dtype)
        )
        out.setdefault("device_map", {"": str(device)})
    return out


def _said_in_the_docs(record: logging.LogRecord) -> bool:
    """Drop bitsandbytes' note that LLM.int8 layers cast their inputs to float16 (logged at each
    call; docs/large-models.md says it once)."""
    return not str(record.msg).startswith("MatMul8bitLt: inputs will be cast from")


def input_device(plan: MemoryPlan | None) -> torch.device:
    """Where a dispatched model's inputs go: the first GPU of its map, else the CPU (accelerate
    moves them on to the first block and brings the outputs back there)."""
    gpus = sorted(
        device for device in (plan.module_map.values() if plan is not None else ())
        if isinstance(device, int)
    )
    return torch.device(f"cuda:{gpus[0]}") if gpus else torch.device("cpu")
