"""A stored suite back as a :class:`Suite`, to extract the same items into other models' stores.

``emb suites export STORE --suite ceat FILE`` writes it as a suite file; ``emb extract --suite FILE``
with another model then embeds exactly the same contexts (the CEAT paper's "same sentences for
every model", Table 1's second rows). The exported suite has the same content hash as the stored
one.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from emb.errors import StoreError
from emb.stimuli.suites.core import Item, Suite

__all__ = ["suite_from_store"]

#: Item coordinates the extraction adds (how the target was tokenised), not part of a suite.
TECHNICAL = frozenset(
    {"item", "n_subtokens", "token_start", "token_end", "n_tokens", "subtoken_ids", "cut_start",
     "cut_end"}
)
_ITEM_FIELDS = ("word", "context", "setting", "stimulus_set", "char_start", "char_end")


def _plain(values: Any) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind in "OUT" or isinstance(array.dtype, np.dtypes.StringDType):
        return array.astype(object)
    return array


def suite_from_store(store: str, group: str) -> Suite:
    """The suite stored as ``group`` of ``store``, with its generator's parameters.

    Raises
    ------
    StoreError
        No such group, or a group whose items lack the suite coordinates.
    """
    from emb.store import open_store

    opened = open_store(store)
    if group not in opened.suites:
        raise StoreError(f"store {store} has no suite {group!r}; it has {list(opened.suites)}")
    ds = opened.dataset(group)
    missing = [f for f in _ITEM_FIELDS if f not in ds.variables]
    if missing:
        raise StoreError(f"suite {group!r} of {store} lacks the item coordinates {missing}")
    columns = {f: _plain(ds[f].values) for f in _ITEM_FIELDS}
    labels = {
        name: _plain(var.values)
        for name, var in ds.variables.items()
        if var.dims == ("item",) and name not in TECHNICAL and name not in _ITEM_FIELDS
    }
    attrs = ds.attrs.get("suite") or {}
    if isinstance(attrs, str):
        attrs = json.loads(attrs)
    items = []
    for i in range(ds.sizes["item"]):
        items.append(Item(
            context=str(columns["context"][i]), word=str(columns["word"][i]),
            char_start=int(columns["char_start"][i]), char_end=int(columns["char_end"][i]),
            setting=str(columns["setting"][i]), stimulus_set=str(columns["stimulus_set"][i]),
            labels={k: (str(v[i]) if v.dtype == object else float(v[i])) for k, v in labels.items()},
        ))
    return Suite(
        name=str(attrs.get("name") or group),
        items=tuple(items),
        generator=attrs.get("generator"),
        parameters=attrs.get("parameters") or {},
        description=str(attrs.get("description") or ""),
    )
