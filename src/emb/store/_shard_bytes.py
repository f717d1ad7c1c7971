"""One shard of ``embedding`` assembled as bytes in memory, exactly as zarr's sharding codec
writes it, so that a block reaches the store in one write (one PUT) and its size and CRC-32 for
the manifest come from those bytes, never from reading the shard back.

The bytes (zarr v3 sharding codec, ``index_location: end``): each inner chunk in Morton order,
encoded by the array's own codec chain (``bytes`` little-endian, then the configured Blosc of
numcodecs, then zarr's ``crc32c``: the CRC-32C of the compressed bytes appended, little-endian),
then the index: one ``(offset, nbytes)`` pair of little-endian uint64 per inner chunk (2**64 - 1
twice for a chunk not written; emb writes every chunk), followed by its own CRC-32C.  A block
shorter than the shard (the suite's last) is padded with the array's fill value, as zarr pads an
edge chunk.  The same codec objects zarr would use encode the chunks (the numcodecs ``Blosc`` of
the array's ``BloscCodec``, ``google_crc32c`` as zarr's ``Crc32cCodec``), read from the array's
codecs by :func:`emb.store._zarr.shard_chain`; only the framing is written here, and the tests of
that adapter (``tests/store/test_zarr_adapter.py``) keep its bytes equal to zarr's own writer's.

An array whose codecs are not that chain (a store of schema 1 or 2 being resumed) has no
encoder: its blocks are written by zarr (:meth:`ShardEncoder.of` returns None).

Blosc releases the GIL while it compresses, so several blocks encode at once on a thread pool.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np
import zarr

from emb.store._nodes import crc32_update, write_parts
from emb.store._zarr import shard_chain

__all__ = ["EncodedShard", "ShardEncoder", "all_finite", "layer_major", "write_parts", "write_seconds"]

_EMPTY = np.uint64(2**64 - 1)


@dataclass(frozen=True)
class EncodedShard:
    """A shard's bytes (``parts``, written in this order), their size and CRC-32 (the
    manifest's, :func:`emb.store._nodes.digest`), and whether every value of the block was
    finite; ``parts`` None: a block zarr writes (an array without an encoder), only checked."""

    parts: tuple[Any, ...] | None
    size: int
    crc32: str
    finite: bool

    @property
    def data(self) -> bytes | None:
        """The shard's bytes in one buffer (None: a block zarr writes)."""
        return None if self.parts is None else b"".join(self.parts)


def all_finite(block: np.ndarray, scratch: np.ndarray | None = None) -> bool:
    """Whether every value of a float16/float32 block is finite, from the exponent bits alone.

    An IEEE value is NaN or infinite exactly when its exponent bits are all ones, i.e. when its
    bits without the sign are at least those of +inf.  One integer max over the block is ~15x
    faster than ``np.isfinite(block).all()`` on float16, which numpy converts value by value.
    ``scratch``: an array of the block's shape and unsigned type to hold the bits (no temporary).
    """
    if block.size == 0:
        return True
    if block.dtype == np.float16:
        bits, no_sign, inf = block.view(np.uint16), 0x7FFF, 0x7C00
    elif block.dtype == np.float32:
        bits, no_sign, inf = block.view(np.uint32), 0x7FFFFFFF, 0x7F800000
    else:
        return bool(np.isfinite(block).all())
    masked = np.bitwise_and(bits, no_sign, out=scratch)
    return int(masked.max()) < inf


class ShardEncoder:
    """Encodes a block of an emb ``embedding`` array (shards of (block, L, P, F), inner chunks
    of (block, 1, P, F)) into its shard's bytes.  Made by :meth:`of`; stateless, so one encoder
    serves several threads at once."""

    def __init__(
        self, *, shard_shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
        blosc: Any, order: tuple[tuple[int, ...], ...],
    ) -> None:
        self.shard_shape = shard_shape
        self.dtype = dtype
        self.fill_value = fill_value
        self.blosc = blosc
        self.order = order

    @classmethod
    def of(cls, array: zarr.Array) -> ShardEncoder | None:
        """The encoder of ``array``'s shards, or None when its codecs are not the chain this
        module writes (then zarr writes its blocks)."""
        chain = shard_chain(array)
        if chain is None:
            return None
        shard_shape, chunk_shape = chain.shard_shape, chain.chunk_shape
        if (
            len(shard_shape) != 4
            or chunk_shape != (shard_shape[0], 1, *shard_shape[2:])
            or tuple(array.shape[1:]) != shard_shape[1:]
        ):
            return None
        return cls(
            shard_shape=shard_shape, dtype=chain.dtype, fill_value=chain.fill_value,
            blosc=chain.blosc, order=chain.order,
        )

    def encode(self, values: np.ndarray) -> EncodedShard:
        """The shard bytes of one block (``values``: (rows ≤ block, L, P, F)).

        An inner chunk that is contiguous in ``values`` (a full block of a layer-major array,
        as runners hand out: see :func:`layer_major`) is compressed where it lies; any other is
        copied first (and a short block padded with the fill value)."""
        block, n_layers, n_poolings, n_features = self.shard_shape
        rows = values.shape[0]
        if values.ndim != 4 or rows > block or values.shape[1:] != self.shard_shape[1:]:
            raise ValueError(f"a block of shape {values.shape} does not fit shards of {self.shard_shape}")
        chunk: np.ndarray | None = None
        scratch = (np.empty((block, n_poolings, n_features), dtype=f"u{self.dtype.itemsize}")
                   if self.dtype.kind == "f" else None)
        finite = True
        parts: list[Any] = []
        offsets = np.full((1, n_layers, 1, 1, 2), _EMPTY, dtype="<u8")
        position = crc = 0
        for coords in self.order:
            layer = values[:, coords[1]]
            if rows == block and layer.flags.c_contiguous and layer.dtype == self.dtype:
                data = layer
            else:
                if chunk is None:
                    chunk = np.empty((block, n_poolings, n_features), dtype=self.dtype)
                    chunk[rows:] = self.fill_value
                chunk[:rows] = layer  # C order of a (block, 1, P, F) chunk
                data = chunk
            if finite:
                finite = all_finite(data[:rows], None if scratch is None else scratch[:rows])
            # the chunk's bytes as zarr hands them to Blosc (a uint8 array, after its bytes
            # codec): numcodecs < 0.16 takes Blosc's typesize from the array it is given
            compressed = self.blosc.encode(data.reshape(-1).view(np.uint8))
            checksum = struct.pack("<I", google_crc32c.value(compressed))
            parts += (compressed, checksum)
            crc = crc32_update(checksum, crc32_update(compressed, crc))
            size = len(compressed) + 4
            offsets[coords] = (position, size)
            position += size
        index = offsets.tobytes()
        index += struct.pack("<I", google_crc32c.value(index))
        parts.append(index)
        crc = crc32_update(index, crc)
        return EncodedShard(parts=tuple(parts), size=position + len(index), crc32=f"{crc:08x}",
                            finite=finite)


def layer_major(shape: tuple[int, ...], dtype: Any, *, zeros: bool = False) -> np.ndarray:
    """A new (item, layer, pooling, feature) array stored layer by layer (a transposed view of
    a C-ordered (layer, item, ...) array), so that each block's inner chunks (one layer, all its
    items) lie contiguous and are compressed without a copy."""
    n, n_layers, *rest = shape
    make = np.zeros if zeros else np.empty
    return make((n_layers, n, *rest), dtype=dtype).transpose(1, 0, *range(2, len(shape)))


def write_seconds(values: np.ndarray, directory: str | os.PathLike[str] | None = None) -> float:
    """Seconds one writer thread takes to encode ``values`` ((items, L, P, F), as a runner
    returns them) as emb's shards and write them once, synced to the disk as the writer does
    (into a temporary file of ``directory``, default the system's): what the write path costs
    per item on this machine, for the estimate."""
    import tempfile
    import time

    from zarr.storage import MemoryStore

    from emb.store._layout import block_size_for, chunk_codecs

    n, n_layers, n_poolings, n_features = values.shape
    if n == 0:
        return 0.0
    block = min(n, block_size_for(n_layers, n_poolings, n_features, values.dtype.itemsize))
    array = zarr.create_array(
        MemoryStore(), shape=values.shape, dtype=values.dtype, chunks=(block, 1, n_poolings, n_features),
        shards=(block, n_layers, n_poolings, n_features), compressors=chunk_codecs(), fill_value=np.nan,
    )
    encoder = ShardEncoder.of(array)
    assert encoder is not None  # the layout this module frames
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        t0 = time.perf_counter()
        for i, start in enumerate(range(0, n - block + 1, block)):
            write_parts(Path(tmp) / str(i), encoder.encode(values[start : start + block]).parts or (),
                        durable=True)  # as the writer does: on the disk before the block's marker
        return (time.perf_counter() - t0) * n / max(block, (n // block) * block)
