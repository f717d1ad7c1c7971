"""Transformers models (a hub id, a ``save_pretrained`` directory, a ``.gguf`` file) as a backend.

:class:`HFBackend` opens every model spec no other backend claims (a hub id is any text) and
declares the options ``revision``, ``trust_remote_code`` and those of large models
(``device_map``, ``max_memory``, ``offload_dir``, ``quantize``: README "Large models"). This module does not import torch:
:meth:`HFBackend.load` imports the loader (:mod:`emb.backends._hf_loading`, which checks trust,
fingerprints the weights and probes what the model is) and with it the runner
(:mod:`emb.backends._hf_runner`), both of which import torch and transformers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from emb.backends._memory import DEVICE_MAPS, QUANTIZATIONS
from emb.backends.base import Backend
from emb.errors import OptionError
from emb.options import Option

if TYPE_CHECKING:  # pragma: no cover
    from emb.backends._hf_runner import HFRunner
    from emb.stimuli.suites import Suite

__all__ = ["PLACEMENT_OPTIONS", "HFBackend"]

#: The options that place or quantise a transformers model's weights (README "Large models").
PLACEMENT_OPTIONS = ("device_map", "max_memory", "offload_dir", "quantize")


class HFBackend(Backend):
    """Transformers and GGUF models, loaded by :func:`emb.backends.load_model`."""

    name = "hf"
    description = "Hugging Face model id, local model directory (save_pretrained) or .gguf file"
    label = ""
    catch_all = True
    takes_layers = True
    options = (
        Option(name="revision", type=str, help="Hub revision (branch, tag or commit)."),
        Option(
            name="trust_remote_code", type=bool, default=False,
            help="Let a model that ships its own Python code run it (read that code first; "
                 "recorded in the store). Without it such a model is refused.",
        ),
        Option(
            name="device_map", type=str, choices=DEVICE_MAPS,
            help="Spread the weights over the GPUs, the CPU and --offload-dir (accelerate): auto "
                 "and balanced evenly over the GPUs, sequential GPU 0 first, cpu all in RAM "
                 "(recorded; part of the model's identity).",
        ),
        Option(
            name="max_memory", type=str,
            help="What each device may hold, e.g. 0=70GiB,1=70GiB,cpu=200GiB (with --device-map "
                 "devices not named get nothing; default: what is free); a plan beyond it is "
                 "refused before loading.",
        ),
        Option(
            name="offload_dir", type=str,
            help="Directory for the weights that fit on no device with --device-map (disk "
                 "offload; slow).",
        ),
        Option(
            name="quantize", type=str, choices=QUANTIZATIONS,
            help="Load the linear layers in 8bit or 4bit (bitsandbytes, CUDA only; recorded; part "
                 "of the model's identity).",
        ),
    )

    def guess_can_open(self, model: str, **options: Any) -> bool:
        return True

    def refuse_unused(self, options: Mapping[str, Any], suites: Sequence[Suite]) -> None:
        """The large-model options (:data:`PLACEMENT_OPTIONS`) given for a model another backend
        opens (static vectors) are refused: they would be ignored without a word. ``revision``
        and ``trust_remote_code`` are ignored, as they always were (a loop over models)."""
        given = [o for o in self.options
                 if o.name in PLACEMENT_OPTIONS and options.get(o.name) not in (None, False)]
        if given:
            flags = ", ".join(o.cli_flag for o in given)
            raise OptionError(
                f"{flags} {'applies' if len(given) == 1 else 'apply'} to transformers models only "
                "(a hub id, a save_pretrained directory, a .gguf file), not to this model "
                f"(static vectors, or another backend's); drop {'it' if len(given) == 1 else 'them'}"
            )

    def load(
        self,
        model: str,
        *,
        suites: Sequence[Suite],
        dtype: str,
        device: str,
        revision: str | None = None,
        trust_remote_code: bool = False,
        device_map: str | None = None,
        max_memory: str | None = None,
        offload_dir: str | None = None,
        quantize: str | None = None,
        layers: Any = None,
    ) -> HFRunner:
        """:func:`emb.backends.load_model` (torch is imported only here); ``suites`` are not
        read."""
        from emb.backends._hf_loading import load_model

        return load_model(
            model, dtype=dtype, device=device, revision=revision,  # type: ignore[arg-type]
            trust_remote_code=trust_remote_code, device_map=device_map, max_memory=max_memory,
            offload_dir=offload_dir, quantize=quantize, layers=layers,
        )

    def quiet(self) -> None:
        """Turn transformers' weight-loading bars off (the CLI's own bar reports the work)."""
        try:
            from transformers.utils import logging as hf_logging
        except ImportError:  # the extract extra is missing: load_model says what to install
            return
        hf_logging.disable_progress_bar()
