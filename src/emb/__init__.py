"""emb: semantics and social bias in the contextual word embeddings of language models.

Two stages share one Zarr store: :func:`emb.extract.extract` writes every layer's embedding of each
target word; :mod:`emb.analyses` computes the tests from the store, lazily, without the model.
"""

from __future__ import annotations

from typing import Any

from emb._version import __version__

__all__ = ["Store", "__version__", "open_store"]


def __getattr__(name: str) -> Any:  # keep `import emb` light; the store pulls in zarr and xarray
    if name in ("Store", "open_store"):
        from emb import store

        return getattr(store, name)
    raise AttributeError(f"module 'emb' has no attribute {name!r}")
