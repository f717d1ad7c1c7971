"""The embedding store: one zarr v3 store per model, one xarray-readable group per suite."""

from __future__ import annotations

from emb.store._nodes import damage_reported
from emb.store._verify import check_unchanged
from emb.store._write_checks import open_for_writing
from emb.store.store import (
    Store,
    StoreInfo,
    SuiteInfo,
    ValidationReport,
    describe,
    open_store,
)
from emb.store.writer import SuiteWriter, block_size_for

__all__ = [
    "Store",
    "StoreInfo",
    "SuiteInfo",
    "SuiteWriter",
    "ValidationReport",
    "block_size_for",
    "check_unchanged",
    "damage_reported",
    "describe",
    "open_for_writing",
    "open_store",
]
