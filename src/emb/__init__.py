"""emb: semantics and social bias in the contextual word embeddings of language models.

Two stages share one Zarr store, each behind the front door (:mod:`emb.api`), the same for a
notebook and the CLI::

    emb.extract("gpt2", ["weat", ("vast", {"lexicon": "warriner"})], "gpt2.zarr")
    run = emb.analyze("weat", "gpt2.zarr", out="results/weat")

:func:`emb.extract` writes every layer's embedding of each target word; :func:`emb.analyze`
computes a test from one or several stores, lazily, without the model. ``import emb`` stays
light: nothing is imported before it is used, and torch only when a model is loaded.
"""

from __future__ import annotations

from typing import Any

from emb._version import __version__

__all__ = ["Store", "__version__", "analyze", "extract", "open_store"]


def __getattr__(name: str) -> Any:  # keep `import emb` light; the store pulls in zarr and xarray
    if name in ("Store", "open_store"):
        from emb import store

        return getattr(store, name)
    if name in ("analyze", "extract"):  # the front door's two plain functions
        from emb import api

        return getattr(api, name)
    raise AttributeError(f"module 'emb' has no attribute {name!r}")
