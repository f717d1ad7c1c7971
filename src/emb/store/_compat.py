"""Older store schemas presented as the current one, in one place.

Each suite group keeps the store schema it was written with (its ``emb_schema_version``): emb
reads, resumes and adds suites to a store of any readable schema (``READABLE_SCHEMA_VERSIONS``)
without rewriting what is there.  What the schemas store otherwise:

====== ====================== ========================== ==================== ========= =========
schema text                   a "true"/"false" label     ``coordinates`` attr manifest  chunk CRC
====== ====================== ========================== ==================== ========= =========
1      zarr ``string``        its text                   (the first writes:   none      no
                                                         none)
2      UTF-8 bytes            its text                   yes                  yes       no
3      UTF-8 bytes            its text                   yes                  yes       yes
4      zarr ``string``        ``bool``                   yes                  yes       yes
====== ====================== ========================== ==================== ========= =========

(schema 3 also gave each layout of a suite a ``generation`` id).  What an older schema spells
otherwise is presented here as the current schema spells it, when a suite is opened:

- its coordinates (:func:`coordinate_names`): a schema-1 group written before the ``coordinates``
  attribute holds the data model's item coordinates;
- its text (:func:`is_text`, :func:`text`): Python ``str`` objects, whether stored as zarr's
  ``string`` or as UTF-8 bytes;
- its labels (:func:`label`): a label of only "true"/"false" text is the ``bool`` the current
  schema stores (:func:`emb.store._layout.boolean_label`, the rule the writer applies).

What an older schema never wrote cannot be presented, only said here: a complete suite of schema 1
has no manifest (:func:`manifest_written`: validation then checks its layout, markers and shards
the old way); the inner chunks of a suite before schema 3 carry no CRC-32C (the reader verifies
its shards against the manifest instead, as the array's codecs say: :mod:`emb.store._verify`),
nor does its layout carry a ``generation`` id (a rewrite is told by its ``created`` time).  Blocks
added to an older suite are written as its array's codecs say (zarr writes them where emb's
framing does not apply: :mod:`emb.store._shard_bytes`).

No other module asks which schema a suite was written with; the schema version is read elsewhere
only to refuse one this emb does not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from emb.schemas import datamodel as dm
from emb.store._layout import boolean_label

__all__ = ["coordinate_names", "is_text", "label", "manifest_written", "text"]

#: the schema that wrote no manifest and, in its first writes, no ``coordinates`` attribute
_BEFORE_MANIFESTS = 1


def coordinate_names(attrs: Mapping[str, Any]) -> tuple[str, ...]:
    """The coordinates a suite group holds, as its ``coordinates`` attribute lists them; a
    schema-1 group written before the attribute (or any without it): the data model's item
    coordinates (``datamodel.ITEM_COORDS``)."""
    declared = attrs.get("coordinates")
    return tuple(str(declared).split()) if isinstance(declared, str) else dm.ITEM_COORDS


def manifest_written(attrs: Mapping[str, Any]) -> bool:
    """Whether a complete suite of the group's schema was written with a manifest (every schema
    but 1): one that has none then lost it."""
    return attrs.get(dm.ATTR_SCHEMA_VERSION) != _BEFORE_MANIFESTS


def is_text(dtype: np.dtype[Any], encoding: Mapping[str, Any]) -> bool:
    """Whether a coordinate that xarray opened with ``dtype`` and ``encoding`` holds text as a
    store of any schema stores it: zarr's ``string`` (schemas 1 and 4: numpy ``StringDType``) or
    UTF-8 bytes tagged ``_Encoding: utf-8`` (schemas 2 and 3: an object array)."""
    return (encoding.get("_Encoding") == "utf-8" and dtype.kind == "O") or dtype.kind == "T"


def text(values: Any) -> np.ndarray:
    """Text read back from a store as an object array of ``str``, whatever its stored type:
    UTF-8 bytes (schemas 2 and 3), numpy ``StringDType`` or ``<U`` (schemas 1 and 4, and plain
    zarr reads)."""
    array = np.asarray(values)
    if array.dtype.kind == "O" and array.size and isinstance(array.flat[0], bytes):
        return np.array([v.decode("utf-8") for v in array.ravel()], dtype=object).reshape(array.shape)
    if array.dtype.kind == "S":
        return np.char.decode(array, "utf-8").astype(object)
    return array.astype(object)


def label(name: str, variable: xr.Variable) -> xr.Variable:
    """A coordinate as the current schema holds it: a label (any name but the data model's own)
    of only "true"/"false" text, as schemas 1 to 3 stored a boolean label, as ``bool``; any other
    coordinate as it is."""
    if name in dm.RESERVED_NAMES:
        return variable
    flags = boolean_label(variable.values)
    return variable if flags is None else xr.Variable(variable.dims, flags, variable.attrs)
