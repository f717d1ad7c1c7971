"""How a suite's arrays are laid out: items per shard, the codec, the coordinates' encoding, and
reading rows back in any order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import zarr

from emb.errors import CorruptStoreError
from emb.store._nodes import damage_text, is_damage
from emb.store._zarr import Codec, blosc_codec, crc32c_codec

__all__ = ["BOOLEAN_TEXT", "block_size_for", "boolean_label", "chunk_codecs", "coord_layout", "compressor", "read_rows"]

_TARGET_SHARD_BYTES = 16 * 2**20


def block_size_for(n_layers: int, n_poolings: int, n_features: int, itemsize: int) -> int:
    """Items per shard: a power of two in [16, 512] keeping a shard at most 16 MiB.

    Small enough that writing the last block (which nothing overlaps) is quick and a block of
    float32 activations stays small in memory; large enough that an analysis reading one layer
    of 50,000 items touches only ~100 inner chunks.
    """
    per_item = n_layers * n_poolings * n_features * itemsize
    size = 512
    while size > 16 and size * per_item > _TARGET_SHARD_BYTES:
        size //= 2
    return size


def compressor() -> Codec:
    # Blosc-LZ4, no shuffle, clevel 1.  Most of what compresses is repetition: a word of one
    # subtoken has first = last = mean = max, and an inner chunk holds a layer's four poolings
    # side by side, so LZ4 stores three of them as back-references.  Measured on MiniLM-L6 VAST
    # vectors (Warriner + corpus, 39% multi-subtoken words): ratio 1.82 at 6.3 GB/s encode and
    # 15 GB/s decode.  Bit-shuffle scatters those repeats: 1.57 at 1.8 / 3.7 GB/s (it gains 9%
    # only on vectors with nothing repeated); zstd 2.0-2.3 at 0.2-0.7 GB/s encode.
    return blosc_codec(cname="lz4", clevel=1, shuffle="noshuffle")


def chunk_codecs() -> tuple[Codec, Codec]:
    """The bytes-to-bytes codecs of each inner chunk of ``embedding`` (store schema 3): Blosc
    (:func:`compressor`), then a CRC-32C of the compressed bytes appended (zarr's ``crc32c``
    codec), which zarr checks whenever it reads the chunk.

    Why a checksum per inner chunk and not only the manifest's CRC-32 per shard: a Blosc-LZ4
    chunk has no checksum of its own, and a flipped bit in its payload decodes to other numbers
    without an error (the sharding codec checksums its index only).  The manifest can vouch for
    a shard only when the whole shard is read, while an analysis reads one layer of a shard (one
    inner chunk, by byte range: what keeps remote reads small).  A CRC-32C per chunk is checked
    on exactly the bytes read, by any zarr reader (plain xarray too), at the speed of
    ``google_crc32c`` (several GB/s, over compressed bytes); 4 bytes per chunk.  Stores written
    before schema 3 are verified against their manifest instead (see
    :mod:`emb.store._verify`).
    """
    return compressor(), crc32c_codec()


#: How a boolean label is spelt in a suite (``stimuli.suites.core``: a label is a string or a
#: number, a boolean given as "true"/"false"); a label column of only these is stored as ``bool``.
BOOLEAN_TEXT: tuple[str, str] = ("false", "true")


def boolean_label(values: np.ndarray) -> np.ndarray | None:
    """A text label column as booleans when every value is ``"true"`` or ``"false"`` (and there
    is at least one), else None.  The same rule decides how a store of schema 4 writes a label
    and how emb reads one of an older store, which holds the strings (so both read alike)."""
    values = np.asarray(values)
    if values.dtype.kind not in "OUT" or not values.size or values.flat[0] not in BOOLEAN_TEXT:
        return None  # most labels are told by their first value, without a pass over the column
    text = values.astype(object)
    is_true = text == BOOLEAN_TEXT[1]
    if not (is_true | (text == BOOLEAN_TEXT[0])).all():
        return None
    return np.asarray(is_true, dtype=bool)


def coord_layout(values: np.ndarray, *, label: bool = False) -> tuple[Any, np.ndarray, dict[str, Any]]:
    """(zarr dtype, values to write, attributes) of one coordinate (store schema 4).

    Text is stored as zarr v3's ``string`` type (variable-length UTF-8, in the zarr-extensions
    specifications): plain ``xr.open_zarr`` gives numpy's ``StringDType`` (xarray's own zarr v3
    strings), which scalar and slice selection, ``==``, ``.sel``, pandas and netCDF take.  Schema
    2 and 3 stored UTF-8 bytes (``variable_length_bytes``, ``_Encoding: utf-8``): zarr hands a
    scalar selection of those back as a 0-d array inside an object array, which xarray's
    decoder cannot decode (``ds.isel(item=3).context.values`` raised).  A label (``label``)
    of only ``"true"``/``"false"`` is stored as ``bool`` (:func:`boolean_label`); fixed-width
    ``<U`` would pad every context to the longest one (4 bytes a character).
    """
    values = np.asarray(values)
    if values.dtype.kind in "OUT":
        flags = boolean_label(values) if label else None
        if flags is not None:
            return flags.dtype, flags, {}
        text = np.array(
            [v if isinstance(v, str) else str(v) for v in values.ravel()],
            dtype=np.dtypes.StringDType(),
        ).reshape(values.shape)
        return zarr.dtype.VariableLengthUTF8(), text, {}  # type: ignore[attr-defined]
    return values.dtype, values, {}


def read_rows(array: zarr.Array, rows: Sequence[int]) -> np.ndarray:
    """``array[rows]`` along the first axis for any row order (zarr wants sorted indices).

    Read shard by shard: each shard (along the first axis) that holds a wanted row is read whole,
    as a slice, and its rows taken in numpy; one shard in memory at a time.  zarr's own
    orthogonal selection of scattered rows decodes per index (2,236 rows of 9 shards took 5.3 s
    on a 2-core CPU, about 50 times what reading the 9 shards takes)."""
    idx = np.asarray(rows, dtype=np.int64)
    if idx.size == 0:
        return np.empty((0, *array.shape[1:]), dtype=array.dtype)
    step = int((array.shards or array.chunks)[0]) if array.ndim else 1
    out = np.empty((idx.size, *array.shape[1:]), dtype=array.dtype)
    part = idx // max(1, step)
    order = np.argsort(part, kind="stable")
    bounds = np.flatnonzero(np.diff(part[order])) + 1
    try:
        for group in np.split(order, bounds):
            first = int(part[group[0]]) * step
            block = np.asarray(array[first : min(int(array.shape[0]), first + step)])
            out[group] = block[idx[group] - first]
    except Exception as err:
        if not is_damage(err):
            raise
        raise CorruptStoreError(
            f"the stored vectors {array.path!r} cannot be read back ({damage_text(err)}): a "
            "shard is damaged; 'emb validate --deep' names it; re-extract that suite "
            "with --overwrite"
        ) from err
    return out
