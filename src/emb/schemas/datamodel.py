"""The store's data model, declared once: dimension names, item coordinates, attribute keys.

Every suite group of a store is one xarray Dataset::

    embedding(item, layer, pooling, feature)   float16 | float32
    item coordinates (item,): word, context, setting, stimulus_set, char_start, char_end,
        n_subtokens, token_start, token_end, n_tokens, <suite labels...>
    subtoken_ids(item, subtoken)               int32, -1 padded
    layer (layer,) int: 0 = embedding output, 1..L = blocks, as the model returns them
    pooling (pooling,) str: the requested subset of POOLINGS, in request order
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = [
    "ATTR_BACKOFFS",
    "ATTR_COMPLETE",
    "ATTR_CREATED",
    "ATTR_EXTRACTION",
    "ATTR_GENERATION",
    "ATTR_MODEL",
    "ATTR_SCHEMA_VERSION",
    "ATTR_SKELETON",
    "ATTR_SUITE",
    "DIMS",
    "EMBEDDING",
    "EMBEDDING_LONG_NAME",
    "FEATURE",
    "ITEM",
    "ITEM_COORDS",
    "LAYER",
    "POOLING",
    "POOLINGS",
    "PROGRESS_GROUP",
    "STORE_SCHEMA_VERSION",
    "READABLE_SCHEMA_VERSIONS",
    "schema_version_advice",
    "RESERVED_NAMES",
    "ATTR_MANIFEST",
    "LOCK_PREFIX",
    "Pooling",
    "StorageDType",
]

#: Version of the on-disk layout this emb writes; bumped on any incompatible change.
#: 1: text coordinates as zarr ``string`` arrays (numpy StringDType under plain xarray), no
#: manifest.  2: text as UTF-8 ``variable_length_bytes`` with ``_Encoding: utf-8`` (plain
#: xarray decodes them to ``str`` objects), and a manifest written when a suite completes.
#: 3: every inner chunk of ``embedding`` ends with its CRC-32C (zarr's ``crc32c`` codec after
#: Blosc), so each read of a chunk is verified, and each suite layout has a ``generation`` id
#: (a reader that finds another one knows the suite was rewritten while it read).
#: 4: text as zarr's ``string`` type again (plain xarray: numpy ``StringDType``; zarr hands a
#: scalar selection of ``variable_length_bytes`` back in a form xarray cannot decode), and a
#: label column of only "true"/"false" as ``bool`` (emb reads such a column of an older
#: store as ``bool`` too).
STORE_SCHEMA_VERSION: Final = 4
#: Versions this emb reads (and can resume or add suites to).
READABLE_SCHEMA_VERSIONS: Final[tuple[int, ...]] = (1, 2, 3, 4)


def schema_version_advice(version: object) -> str:
    """What to do about a store schema version this emb does not read: upgrade emb for a newer
    one (an integer above the last); anything else (text, a number below the first, a list) no
    emb wrote, and its metadata is damaged."""
    if isinstance(version, int) and not isinstance(version, bool) \
            and version > max(READABLE_SCHEMA_VERSIONS):
        return "upgrade emb"
    return (f"no emb writes that (its versions are the integers {min(READABLE_SCHEMA_VERSIONS)} "
            f"to {max(READABLE_SCHEMA_VERSIONS)}): the metadata is damaged; restore its "
            "zarr.json from a copy")

Pooling = Literal["first", "last", "mean", "max"]
POOLINGS: Final[tuple[str, ...]] = ("first", "last", "mean", "max")
StorageDType = Literal["float16", "float32"]

EMBEDDING: Final = "embedding"
#: The embedding array's ``long_name`` attribute: the store's description of its own array, never
#: of a variable an analysis computes from it (:func:`emb.analyses.run_analysis` hands analyses
#: their input without it).
EMBEDDING_LONG_NAME: Final = "contextual embedding of the target"
#: The embedding's dimensions, by name (code addresses data by these names, never by position).
ITEM: Final = "item"
LAYER: Final = "layer"
POOLING: Final = "pooling"
FEATURE: Final = "feature"
DIMS: Final[tuple[str, str, str, str]] = (ITEM, LAYER, POOLING, FEATURE)
SUBTOKEN_DIM: Final = "subtoken"

#: Item coordinates every suite group has (suite labels come on top).
ITEM_COORDS: Final[tuple[str, ...]] = (
    "word",
    "context",
    "setting",
    "stimulus_set",
    "char_start",
    "char_end",
    "n_subtokens",
    "token_start",
    "token_end",
    "n_tokens",
)

ATTR_SCHEMA_VERSION: Final = "emb_schema_version"
ATTR_MODEL: Final = "model"
ATTR_EXTRACTION: Final = "extraction"
ATTR_SUITE: Final = "suite"
ATTR_CREATED: Final = "created"
ATTR_COMPLETE: Final = "complete"
ATTR_SKELETON: Final = "skeleton_written"
#: A random id written with each layout of a suite group (store schema 3): a rewrite
#: (``--overwrite``) gives the group another one.
ATTR_GENERATION: Final = "generation"
#: The out-of-memory back-offs of the runs that wrote a suite (a list of run records, see
#: :mod:`emb.store._backoffs`); absent from a suite no run of which backed off.
ATTR_BACKOFFS: Final = "oom_backoffs"

#: Sub-group of a suite group holding one done-marker per block (hidden from xarray); its
#: attribute ATTR_MANIFEST lists what the complete suite holds (see emb.store.manifest).
PROGRESS_GROUP: Final = "_progress"
ATTR_MANIFEST: Final = "manifest"

#: Names a suite label can never take: the store's own dimensions, coordinates, arrays and
#: groups inside a suite group (a label becomes an array of that group), and ``model`` (the
#: dimension analyses stack stores along).  ``suite.schema.json`` lists the same names (a test
#: checks), so a suite file is refused when it is read, before anything is written.
RESERVED_NAMES: Final[frozenset[str]] = frozenset(
    {*DIMS, SUBTOKEN_DIM, *ITEM_COORDS, "subtoken_ids", "cut_start", "cut_end", EMBEDDING,
     PROGRESS_GROUP, "model"}
)

#: Writer lock files at the root of a local store (``.emb-lock`` for the root, ``.emb-lock.<suite>``
#: for a suite); their names can never be group names.
LOCK_PREFIX: Final = ".emb-lock"
