"""Small seeded synthetic suites with planted effects, shaped like real store groups, and a writer
of them into an emb store.

The suites themselves are the analyses' example inputs (:mod:`emb.analyses._examples` and the
families' ``_example.py``, which the registry records' ``example`` builds on); this module hands
them on to the analyses, plots, CLI and store tests, and adds :func:`write_store` (not a test
module itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import xarray as xr

from emb.analyses._examples import (
    ARO,
    CONTEXT_SIGNAL,
    DOM,
    PLEASANT,
    POOLINGS,
    SETTINGS,
    UNPLEASANT,
    VAL,
    WORD_SIGNAL,
    lexicon_table,
    similarity_dataset,
    similarity_pairs,
    vast_dataset,
    weat_dataset,
)
from emb.analyses._examples import store_attrs as _attrs
from emb.analyses._examples import suite_dataset as _bleached_dataset
from emb.analyses.ceat._example import ceat_dataset
from emb.analyses.ibd._example import IBD_GENDERS, IBD_RACES, ibd_dataset
from emb.analyses.stereotype._example import STEREO_DIMENSIONS, stereotype_dataset

__all__ = [
    "ARO",
    "CONTEXT_SIGNAL",
    "DOM",
    "IBD_GENDERS",
    "IBD_RACES",
    "PLEASANT",
    "POOLINGS",
    "SETTINGS",
    "STEREO_DIMENSIONS",
    "UNPLEASANT",
    "VAL",
    "WORD_SIGNAL",
    "_attrs",
    "_bleached_dataset",
    "ceat_dataset",
    "ibd_dataset",
    "lexicon_table",
    "similarity_dataset",
    "similarity_pairs",
    "stereotype_dataset",
    "vast_dataset",
    "weat_dataset",
    "write_store",
]


def write_store(
    path: str | Path, groups: Mapping[str, xr.Dataset], *, model_id: str = "synthetic/toy"
) -> Path:
    """Write suite Datasets into an emb store with the store's own writer (sharded layout)."""
    from emb.store import SuiteWriter, open_for_writing

    first = next(iter(groups.values()))
    model = {**first.attrs["model"], "model_id": model_id}
    _, root = open_for_writing(str(path), model=model)
    for name, ds in groups.items():
        coords = ds.drop_vars("embedding")
        writer = SuiteWriter.open(
            str(path),
            root,
            name=name,
            coords=coords,
            shape=ds["embedding"].shape,
            storage_dtype=str(ds["embedding"].dtype),
            suite_attrs=ds.attrs["suite"],
            extraction_attrs=ds.attrs["extraction"],
        )
        values = ds["embedding"].values
        for index, (start, stop) in enumerate(writer.block_ranges()):
            writer.write_block(index, values[start:stop])
        writer.finish()
    return Path(path)
