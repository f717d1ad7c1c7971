"""The memory plan of a transformer, before any weight is read: where its weights go and what one
batch needs.

:func:`plan_memory` builds the model on torch's ``meta`` device from its config (accelerate's
``init_empty_weights``: no weights read, no memory taken), measures each module (transformers'
``compute_module_sizes``), places the modules on the devices with the same function
``from_pretrained(device_map=...)`` uses (``auto``/``balanced``: balanced over the GPUs;
``sequential``: filled in order; ``cpu``), and sums the weights per device.  The map it computes
is the one the loader passes on, so the plan and the load agree.  :func:`activation_bytes` is the
memory of one batch's forward pass at a given context length; :meth:`MemoryPlan.check` refuses a
plan that does not fit, with its numbers.

The option parsers (:func:`parse_max_memory`, :func:`check_device_map`,
:func:`check_quantization`) import nothing heavy; the planning functions import torch,
transformers and accelerate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

from emb.errors import ModelError, OptionError

__all__ = [
    "DEVICE_MAPS",
    "QUANTIZATIONS",
    "MemoryPlan",
    "activation_bytes",
    "check_device_map",
    "check_quantization",
    "format_bytes",
    "parse_max_memory",
    "plan_memory",
]

#: The ``--device-map`` choices: accelerate's placements through ``from_pretrained``.
DEVICE_MAPS = ("auto", "balanced", "sequential", "cpu")
#: The ``--quantize`` choices (bitsandbytes on CUDA).
QUANTIZATIONS = ("8bit", "4bit")
#: Bytes per weight of a quantised linear layer: int8 with a float32 scale per row (8bit,
#: LLM.int8), NF4 with one absmax byte per block of 64 after double quantisation (4bit).
_QUANT_BYTES = {"8bit": 1.0, "4bit": 0.5 + 1.0 / 64}
_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
_UNITS = {
    "": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
#: an amount of memory at or above this is no device's (and overflows int64 readers)
_MOST_BYTES = 2**63
#: ASCII digits only: ``\d`` would take "١" or "１" (and ``int`` fails on "²")
_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$", re.ASCII)


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units, e.g. ``"14.0 GiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"  # pragma: no cover


def check_device_map(spec: str | None) -> str | None:
    """The ``--device-map`` value, checked (None: the model loads whole onto ``--device``).

    Raises
    ------
    OptionError
        Not one of :data:`DEVICE_MAPS`.
    """
    if spec is None:
        return None
    text = str(spec).strip().lower()
    if text not in DEVICE_MAPS:
        raise OptionError(
            f"--device-map must be one of {', '.join(DEVICE_MAPS)}; got {spec!r} (auto and "
            "balanced spread the blocks evenly over the GPUs, sequential fills GPU 0 first, cpu "
            "keeps every weight in RAM; what fits nowhere goes to --offload-dir)"
        )
    return text


def check_quantization(spec: str | None) -> str | None:
    """The ``--quantize`` value, checked (None: weights in the compute dtype).

    Raises
    ------
    OptionError
        Not one of :data:`QUANTIZATIONS`.
    """
    if spec is None:
        return None
    text = str(spec).strip().lower()
    if text not in QUANTIZATIONS:
        raise OptionError(f"--quantize must be 8bit or 4bit; got {spec!r}")
    return text


def parse_max_memory(spec: str | Mapping[Any, Any] | None) -> dict[int | str, int] | None:
    """``"0=70GiB,1=70GiB,cpu=200GiB"`` as ``{0: bytes, 1: bytes, "cpu": bytes}``.

    Keys are GPU indices, ``cpu`` or ``mps``; amounts are a number with an optional unit (B, KB,
    MB, GB, TB in powers of 10; KiB, MiB, GiB, TiB in powers of 2; none: bytes).

    Raises
    ------
    OptionError
        A part that is not ``DEVICE=AMOUNT``, an unknown device or unit, a repeated device.
    """
    if spec is None:
        return None
    if isinstance(spec, Mapping):
        parts = [f"{k}={v}" for k, v in spec.items()]
    else:
        parts = [p for p in str(spec).split(",") if p.strip()]
    out: dict[int | str, int] = {}
    for part in parts:
        key, sep, amount = part.partition("=")
        key = key.strip().lower()
        match = _AMOUNT.match(amount)
        device: int | str
        if key.isascii() and key.isdigit():  # "²".isdigit() is true, int("²") fails
            device = int(key)
        elif key in ("cpu", "mps"):
            device = key
        else:
            device = ""
        if not sep or device == "" or match is None or match.group(2).lower() not in _UNITS:
            raise OptionError(
                f"--max-memory part {part.strip()!r} is not DEVICE=AMOUNT; write it like "
                "'0=70GiB,1=70GiB,cpu=200GiB' (DEVICE a GPU index, cpu or mps; AMOUNT a number "
                "with B, KB, MB, GB, KiB, MiB, GiB or TiB)"
            )
        if device in out:
            raise OptionError(f"--max-memory names device {key!r} twice in {spec!r}; name it once")
        amount_bytes = int(Decimal(match.group(1)) * _UNITS[match.group(2).lower()])  # exact
        if amount_bytes >= _MOST_BYTES:
            shown = part.strip() if len(part.strip()) <= 40 else part.strip()[:40] + "…"
            raise OptionError(
                f"--max-memory part {shown!r} is more than any device holds (2^63 bytes or "
                "more); give what the device may hold, e.g. cpu=200GiB"
            )
        out[device] = amount_bytes
    if not out:
        raise OptionError(f"--max-memory is empty ({spec!r}); write it like '0=70GiB,cpu=200GiB'")
    return out


def _device_name(device: Any) -> str:
    return f"cuda:{device}" if isinstance(device, int) else str(device)


@dataclass(frozen=True, kw_only=True)
class MemoryPlan:
    """Where a model's weights go, per device, before anything is loaded.

    Attributes
    ----------
    model_id : str
    dtype : str
        The compute dtype (the weights' dtype unless quantised).
    quantization : str or None
    device_map : str or None
        The ``--device-map`` given (None: whole onto one device).
    parameters : int
        Parameters loaded (the blocks after the highest stored layer are not).
    blocks, n_blocks : int
        Blocks loaded of the model's blocks.
    weights : dict of str to int
        Bytes of weights per device (``"cuda:0"``, ``"cpu"``, ``"disk"``).
    limits : dict of str to int
        Bytes each device may hold (``--max-memory``, else what is free); a device absent has no
        known limit.
    module_map : dict of str to (int or str)
        Module name -> device, as passed to ``from_pretrained(device_map=...)``; empty without a
        device map.
    """

    model_id: str
    dtype: str
    quantization: str | None
    device_map: str | None
    parameters: int
    blocks: int
    n_blocks: int
    weights: dict[str, int]
    limits: dict[str, int] = field(default_factory=dict)
    module_map: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Bytes of weights over every device."""
        return sum(self.weights.values())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the module map summarised as modules per device)."""
        out = asdict(self)
        out.pop("module_map")
        out["modules_per_device"] = self.modules_per_device()
        return out

    def modules_per_device(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for device in self.module_map.values():
            name = _device_name(device)
            counts[name] = counts.get(name, 0) + 1
        return counts

    def lines(self) -> list[str]:
        """The plan for the terminal: one line of weights per device."""
        how = f"{self.quantization} quantised, compute {self.dtype}" if self.quantization else self.dtype
        cut = f" (blocks 1..{self.blocks} of {self.n_blocks})" if self.blocks < self.n_blocks else ""
        per = ", ".join(
            f"{device} {format_bytes(n)}"
            + (f" of {format_bytes(self.limits[device])}" if device in self.limits else "")
            for device, n in self.weights.items()
        )
        return [
            f"memory plan: {self.model_id}: {_count(self.parameters)} parameters{cut} in "
            f"{how} = {format_bytes(self.total)} of weights: {per}"
        ]

    def check(self, *, offload_dir: str | None = None) -> None:
        """Refuse a plan whose weights do not fit.

        Raises
        ------
        ModelError
            Weights placed on disk without ``offload_dir``, or more weights on a device than its
            limit; the message gives the plan's numbers and what to change.
        """
        over = [
            f"{device} needs {format_bytes(n)} but has {format_bytes(self.limits[device])}"
            for device, n in self.weights.items()
            if device in self.limits and n > self.limits[device]
        ]
        disk = self.weights.get("disk", 0)
        if disk and offload_dir is None:
            over.append(f"{format_bytes(disk)} of weights fit on no device and would go to disk")
        if not over:
            return
        limits = ", ".join(f"{d} {format_bytes(n)}" for d, n in self.limits.items()) or "none known"
        raise ModelError(
            f"{self.model_id} does not fit: {'; '.join(over)} ({self.lines()[0]}; limits: "
            f"{limits}); give --device-map auto to spread it over the GPUs and the CPU, raise "
            "--max-memory, give --offload-dir DIR for what fits nowhere else, load fewer blocks "
            "with --layers, or --quantize 8bit/4bit"
        )


def _count(n: int) -> str:
    return f"{n / 1e9:,.2f}B" if n >= 10**9 else f"{n / 1e6:,.1f}M"


def _meta_model(config: Any, dtype: str, trust_remote_code: bool = False) -> Any:
    import torch
    from accelerate import init_empty_weights
    from transformers import AutoModel

    with init_empty_weights():
        return AutoModel.from_config(
            config, dtype=getattr(torch, dtype), trust_remote_code=trust_remote_code
        )


def _module_bytes(model: Any, dtype: str, quantization: str | None) -> dict[str, int]:
    """Bytes of every module (by name, ``""`` the whole model) in ``dtype``, linear layers'
    weights at the quantised size."""
    import torch

    size = _DTYPE_BYTES[dtype]
    quantized = _QUANT_BYTES.get(quantization or "")
    sizes: dict[str, int] = {}
    for name, module in model.named_modules():
        own = 0
        for pname, tensor in list(module.named_parameters(recurse=False)) + list(
            module.named_buffers(recurse=False)
        ):
            if quantized is not None and pname == "weight" and isinstance(module, torch.nn.Linear):
                own += int(tensor.numel() * quantized)
            elif tensor.is_floating_point():
                own += tensor.numel() * size
            else:
                own += tensor.numel() * tensor.element_size()
        parts = name.split(".") if name else []
        for depth in range(len(parts) + 1):
            key = ".".join(parts[:depth])
            sizes[key] = sizes.get(key, 0) + own
    return sizes


def _parameters(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def _device_modules(model: Any, spec: str, max_memory: dict[int | str, int] | None,
                    scale: float) -> dict[str, Any]:
    """Module name -> device as ``from_pretrained(device_map=spec, max_memory=...)`` places them
    (limits multiplied by ``scale``: a quantised model's modules are that much smaller)."""
    if spec == "cpu":
        return {"": "cpu"}
    import logging

    from transformers.integrations.accelerate import _get_device_map

    limits = None if max_memory is None else {k: int(v * scale) for k, v in max_memory.items()}
    quiet = logging.getLogger("accelerate.utils.modeling")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # "device 0 is not available" when planning for absent GPUs
    try:
        return dict(_get_device_map(model, spec, limits, None))
    finally:
        quiet.setLevel(level)


def _free_memory(devices: list[Any]) -> dict[str, int]:
    """What each device has free now (CUDA's ``mem_get_info``); CPU and disk unknown."""
    import torch

    out: dict[str, int] = {}
    for device in devices:
        if isinstance(device, int) and torch.cuda.is_available() and device < torch.cuda.device_count():
            out[_device_name(device)] = int(torch.cuda.mem_get_info(device)[0])
    return out


def plan_memory(
    config: Any,
    *,
    model_id: str,
    dtype: str,
    quantization: str | None = None,
    device_map: str | None = None,
    max_memory: dict[int | str, int] | None = None,
    device: str = "cpu",
    blocks: int | None = None,
    n_blocks: int | None = None,
    trust_remote_code: bool = False,
) -> MemoryPlan:
    """The memory plan of the model of ``config`` (see the module).

    Parameters
    ----------
    config : transformers.PretrainedConfig
        The model's config, already cut to ``blocks`` blocks when fewer are loaded.
    model_id : str
    dtype : {"float32", "float16", "bfloat16"}
    quantization : {None, "8bit", "4bit"}
    device_map : {None, "auto", "balanced", "sequential", "cpu"}
        None: every weight on ``device``.
    max_memory : dict, optional
        Device (GPU index, ``"cpu"``) -> bytes; default what the devices have free.
    device : str
        Where the model goes without a device map (``"cuda:0"``, ``"cpu"``).
    blocks, n_blocks : int, optional
        Blocks loaded and the model's blocks (default: the config's, all).
    trust_remote_code : bool
        Whether the model's own code may build it (as for loading).

    Returns
    -------
    MemoryPlan
    """
    model = _meta_model(config, dtype, trust_remote_code)
    sizes = _module_bytes(model, dtype, quantization)
    full = _module_bytes(model, dtype, None)[""]
    loaded = blocks if blocks is not None else int(getattr(config, "num_hidden_layers", 0) or 0)
    limits: dict[str, int] = {}
    if device_map is None:
        module_map: dict[str, Any] = {}
        weights = {device: sizes[""]}
        if max_memory is not None:
            key: int | str = device if device in ("cpu", "mps") else int(device.partition(":")[2] or 0)
            if key in max_memory:
                limits[device] = int(max_memory[key])
        if device not in limits and device.startswith("cuda"):
            limits.update(_free_memory([int(device.partition(":")[2] or 0)]))
    else:
        scale = full / max(sizes[""], 1)
        module_map = _device_modules(model, device_map, max_memory, scale)
        weights = {}
        for name, placed in module_map.items():
            where = _device_name(placed)
            weights[where] = weights.get(where, 0) + sizes.get(name, 0)
        weights = {d: n for d, n in sorted(weights.items(), key=lambda kv: _order(kv[0]))}
        if max_memory is not None:
            limits = {_device_name(k): int(v) for k, v in max_memory.items()}
        else:
            limits = _free_memory([int(d[5:]) for d in weights if d.startswith("cuda:")])
    return MemoryPlan(
        model_id=model_id, dtype=dtype, quantization=quantization, device_map=device_map,
        parameters=_parameters(model), blocks=loaded, n_blocks=n_blocks or loaded,
        weights=weights, limits=limits, module_map=module_map,
    )


def _order(device: str) -> tuple[int, int]:
    if device.startswith("cuda:"):
        return (0, int(device[5:]))
    return ({"cuda": 0, "mps": 1, "cpu": 2, "disk": 3}.get(device, 4), 0)


def activation_bytes(config: Any, *, batch: int, length: int, dtype: str, layers: int) -> int:
    """Memory of one batch's forward pass at ``length`` tokens (an estimate, upper side).

    The hidden states returned for ``layers`` layers (batch × length × hidden each, kept until
    pooled), plus the peak inside one block: its attention scores (batch × heads × length²,
    float32 for the softmax) and its MLP's intermediate activations (three of
    batch × length × intermediate).
    """
    size = _DTYPE_BYTES.get(dtype, 4)
    hidden = int(getattr(config, "hidden_size", 0) or 0)
    heads = int(getattr(config, "num_attention_heads", 0) or 1)
    inner = int(getattr(config, "intermediate_size", 0) or getattr(config, "n_inner", 0) or 4 * hidden)
    states = layers * batch * length * hidden * size
    attention = batch * heads * length * length * 4
    mlp = 3 * batch * length * inner * size
    return int(states + attention + mlp)


def batch_lines(
    plan: MemoryPlan | None, config: Any, *, batch: int, length: int, layers: int, dtype: str,
    device: str,
) -> list[str]:
    """The plan's lines and those of one batch at the longest context, checked.

    Raises
    ------
    ModelError
        One context of ``length`` tokens alone needs more than ``device`` has left after the
        weights (the OOM back-off cannot help: it ends at one context).
    """
    lines = plan.lines() if plan is not None else []
    if batch < 1 or length < 1:
        return lines
    need = activation_bytes(config, batch=batch, length=length, dtype=dtype, layers=layers)
    alone = activation_bytes(config, batch=1, length=length, dtype=dtype, layers=layers)
    free = None
    if plan is not None and device in plan.limits:
        free = plan.limits[device] - plan.weights.get(device, 0)
    lines.append(
        f"memory of one batch: {batch} contexts × {length} tokens (the longest) ≈ "
        f"{format_bytes(need)} on {device}"
        + (f" ({format_bytes(max(free, 0))} left there after the weights; a batch that runs out "
           "is halved)" if free is not None else "")
    )
    if free is not None and alone > free:
        raise ModelError(
            f"one context of {length} tokens needs ≈ {format_bytes(alone)} on {device}, which "
            f"has {format_bytes(max(free, 0))} left after {format_bytes(plan.weights.get(device, 0))} "  # type: ignore[union-attr]
            "of weights; shorten the contexts, store fewer layers (--layers), or move weights "
            "off it (--device-map auto, --max-memory, --quantize)"
        )
    return lines
