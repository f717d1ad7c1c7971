"""Which device extraction runs on: ``auto``, ``cpu``, ``cuda`` or ``cuda:K`` (GPU K, 0-based).

The value is checked here, without torch, before anything is loaded; whether CUDA is there and
GPU K exists is checked when the model loads (:func:`emb.backends.load_model`), which
refuses with the number of GPUs it found.  One process per GPU: ``--device cuda:K`` (or
``CUDA_VISIBLE_DEVICES=K`` with ``--device cuda``) with ``--shard K+1/N`` runs N GPUs of one node
on one store (see the README).
"""

from __future__ import annotations

import re

from emb.errors import EmbError

__all__ = ["check_device"]

_DEVICE = re.compile(r"^(auto|cpu|mps|cuda)(?::(\d+))?$")


def check_device(device: str) -> str:
    """The device spec, normalised (``"CUDA:1"`` -> ``"cuda:1"``).

    Raises
    ------
    EmbError
        Not one of ``auto``, ``cpu``, ``mps``, ``cuda``, ``cuda:K``.
    """
    text = str(device).strip().lower()
    match = _DEVICE.match(text)
    if match is None or (match.group(2) is not None and match.group(1) in ("auto", "cpu")):
        raise EmbError(
            f"unknown device {device!r}: use auto, cpu, cuda, or cuda:K for GPU K (0-based; "
            "'nvidia-smi -L' lists them)"
        )
    return text
