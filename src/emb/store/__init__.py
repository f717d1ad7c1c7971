"""The embedding store: one zarr v3 store per model, one xarray-readable group per suite."""

from __future__ import annotations

from emb.store._nodes import damage_reported
from emb.store._shard_bytes import layer_major, write_seconds
from emb.store._verify import check_unchanged
from emb.store._write_checks import open_for_writing
from emb.store._zarr import io_loop
from emb.store.names import check_group_name
from emb.store.shards import COPIES_PENDING, DONE, ShardRecord
from emb.store.store import (
    Store,
    StoreInfo,
    SuiteInfo,
    ValidationReport,
    describe,
    open_store,
)
from emb.store.store_writer import StoreWriter
from emb.store.suite_writer import SuiteWriter, block_size_for

__all__ = [
    "COPIES_PENDING",
    "DONE",
    "ShardRecord",
    "Store",
    "StoreInfo",
    "StoreWriter",
    "SuiteInfo",
    "SuiteWriter",
    "ValidationReport",
    "block_size_for",
    "check_group_name",
    "check_unchanged",
    "damage_reported",
    "describe",
    "io_loop",
    "layer_major",
    "open_for_writing",
    "open_store",
    "write_seconds",
]
