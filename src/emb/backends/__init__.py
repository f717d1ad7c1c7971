"""The models emb extracts from, behind one protocol: transformers and GGUF models
(:mod:`~emb.backends.hf`), static word vectors (:mod:`~emb.backends.static`), and backends of
other distributions (the ``emb.backends`` entry-point group).

:func:`resolve` picks the backend of a model spec, :func:`load` loads its :class:`Runner`.
Importing this package does not import torch: the transformers runner
(:mod:`emb.backends._hf_runner`) and its loader (:func:`load_model`) are imported when a model is
loaded.
"""

from __future__ import annotations

from typing import Any

from emb.backends._registry import (
    BACKENDS,
    ENTRY_POINT_GROUP,
    available,
    check_options,
    load,
    resolve,
)
from emb.backends.base import Backend, Encoding, ModelInfo, Runner
from emb.backends.static import STATIC_POOLING, StaticRunner, load_vectors
from emb.schemas.datamodel import POOLINGS

__all__ = [
    "BACKENDS",
    "ENTRY_POINT_GROUP",
    "POOLINGS",
    "STATIC_POOLING",
    "Backend",
    "Encoding",
    "ModelInfo",
    "Runner",
    "StaticRunner",
    "available",
    "check_options",
    "load",
    "load_model",
    "load_vectors",
    "resolve",
]


def __getattr__(name: str) -> Any:
    if name == "load_model":  # imports torch and transformers
        from emb.backends._hf_loading import load_model

        return load_model
    raise AttributeError(f"module 'emb.backends' has no attribute {name!r}")
