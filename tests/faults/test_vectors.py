"""Hostile static vectors files (issue 20): bad values, damaged compression, special files.

Every case runs the real ``emb extract --model FILE`` in a child process (tests/_hostile.py) with a
tiny vectors file, and ends in exit 1 with one line naming the file, before the store is touched;
a few library-level cases pin what the CLI cannot reach (the dimension and line-length bounds).
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import socket
import zipfile
from pathlib import Path

import numpy as np
import pytest

import emb
from emb.backends import vectors
from emb.backends.static import load_vectors, read_vectors
from emb.errors import ModelError
from tests._hostile import assert_refused, run_emb

TEXT = b"3 3\nlove 1 2 3\nhate 3 2 1\nsad 0.5 0.25 1\n"


def _suite(tmp_path: Path, words=("love", "hate", "sad")) -> Path:
    path = tmp_path / "s.json"
    items = [{"context": f"I {w}", "word": w} for w in words]
    path.write_text(json.dumps({"name": "s", "items": items}), encoding="utf-8")
    return path


def _binary(words, rows) -> bytes:
    rows = np.asarray(rows, dtype="<f4")
    out = f"{len(words)} {rows.shape[1]}\n".encode()
    for word, row in zip(words, rows, strict=True):
        out += word.encode() + b" " + row.tobytes() + b"\n"
    return out


def _extract(tmp_path: Path, model: Path | str, *extra: str):
    store = tmp_path / "out.zarr"
    outcome = run_emb("extract", "--model", model, "--suite", _suite(tmp_path), "--store", store,
                      "-q", *extra, cwd=tmp_path, timeout=60)
    return outcome, store


# -- values ------------------------------------------------------------------------------------


VALUES = [
    ("nan.txt", b"3 3\nlove 1 2 3\nhate nan 2 1\nsad 1 1 1\n", ["'hate'", "line 3", "NaN"]),
    ("inf.vec", b"3 3\nlove 1 2 3\nhate 3 2 1\nsad -inf 1 1\n", ["'sad'", "line 4", "infinite"]),
    ("nan.txt.gz", gzip.compress(b"love nan 1\nhate 1 1\nsad 1 1\n", mtime=0), ["'love'", "line 1"]),
    ("beyond-float32.txt", b"3 3\nlove 1e39 2 3\nhate 3 2 1\nsad 1 1 1\n",
     ["'love'", "line 2", "float32"]),
    ("below-float32.txt", b"3 3\nlove 1e-50 1e-50 0\nhate 3 2 1\nsad 1 1 1\n",
     ["'love'", "line 2", "float32"]),
    ("nan.bin", _binary(["love", "hate", "sad"], [[1, 2, 3], [np.nan, 1, 1], [1, 1, 1]]),
     ["'hate'", "record 2", "NaN"]),
    ("inf.bin", _binary(["love", "hate", "sad"], [[1, 2, np.inf], [1, 1, 1], [1, 1, 1]]),
     ["'love'", "record 1", "infinite"]),
]


@pytest.mark.parametrize(("name", "data", "mentions"), VALUES, ids=[v[0] for v in VALUES])
def test_non_finite_vectors_are_refused_when_read(tmp_path, name, data, mentions):
    path = tmp_path / name
    path.write_bytes(data)
    outcome, store = _extract(tmp_path, path)
    assert_refused(outcome, codes=(1,), mentions=[name, *mentions])
    assert not store.exists()  # refused before the store was touched: a re-run is not poisoned


@pytest.mark.parametrize(
    ("row", "mentions"),
    [
        ("love 70000 1 1", ["'love'", "70000", "overflows", "--storage-dtype float32"]),
        ("love 1e-9 1e-9 1e-9", ["'love'", "all zeros", "--storage-dtype float32"]),
        ("love 1e-7 3e-7 2e-7", ["'love'", "of its length", "--storage-dtype float32"]),
    ],
)
def test_vectors_float16_cannot_hold_are_refused_before_writing(tmp_path, row, mentions):
    path = tmp_path / "v.txt"
    path.write_bytes(b"3 3\n" + row.encode() + b"\nhate 3 2 1\nsad 1 1 1\n")
    outcome, store = _extract(tmp_path, path)
    assert_refused(outcome, codes=(1,), mentions=mentions)
    assert not store.exists()
    done, _ = _extract(tmp_path, path, "--storage-dtype", "float32")
    assert done.code == 0, done
    ds = emb.open_store(str(store)).dataset("s")
    stored = dict(zip(ds.word.values.tolist(), ds.embedding.values[:, 0, 0], strict=True))
    expected = np.array([float(x) for x in row.split()[1:]], dtype=np.float32)
    np.testing.assert_array_equal(stored["love"], expected)  # float32 keeps the file's vector


def test_float16_rounding_within_its_range_is_accepted(tmp_path):
    path = tmp_path / "v.txt"  # 1e-4 lies in float16's normal range: ordinary rounding only
    path.write_bytes(b"3 3\nlove 1e-4 -2e-4 3e-4\nhate 3 2 1\nsad 60000 1 1\n")
    outcome, store = _extract(tmp_path, path)
    assert outcome.code == 0, outcome
    ds = emb.open_store(str(store)).dataset("s")
    assert np.isfinite(ds.embedding.values).all()


# -- damaged or unreadable compression -----------------------------------------------------------


def _zip(data: bytes, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("v.txt", data)
    return buffer.getvalue()


def _patched_zip(flag: int = 0, method: int | None = None) -> bytes:
    """A zip whose one member claims encryption (``flag``) or an unknown ``method``."""
    raw = bytearray(_zip(TEXT))
    central = raw.find(b"PK\x01\x02")
    raw[6] |= flag
    raw[central + 8] |= flag
    if method is not None:
        raw[8:10] = method.to_bytes(2, "little")
        raw[central + 10 : central + 12] = method.to_bytes(2, "little")
    return bytes(raw)


def _corrupt_deflate() -> bytes:
    raw = bytearray(_zip(TEXT * 20))
    for i in range(40, 50):  # inside the member's deflate data, after its 30+5-byte header
        raw[i] ^= 0xFF
    return bytes(raw)


def _bad_crc() -> bytes:
    raw = bytearray(_zip(TEXT, zipfile.ZIP_STORED))
    raw[40] ^= 0x01
    return bytes(raw)


DAMAGED = [
    ("corrupt.txt.gz", b"\x1f\x8b\x08\x00" + b"garbage" * 5),
    ("truncated.txt.gz", gzip.compress(TEXT * 50, mtime=0)[:40]),
    ("truncated-trailer.txt.gz", gzip.compress(TEXT, mtime=0)[:-6]),
    ("truncated.bin.gz", gzip.compress(_binary(["love"], [[1, 2, 3]]), mtime=0)[:-10]),
    ("corrupt.txt.bz2", b"BZh91AY&SY" + b"garbage" * 5),
    ("truncated.txt.bz2", bz2.compress(TEXT)[:-10]),
    ("corrupt.txt.xz", b"\xfd7zXZ\x00" + b"garbage" * 5),
    ("truncated.txt.xz", lzma.compress(TEXT)[:-10]),
    ("not-a-zip.txt.zip", b"this is not a zip"),
    ("not-a-zip.zip", b"this is not a zip"),
    ("empty.zip", b""),
    ("truncated.zip", _zip(TEXT)[:60]),
    ("corrupt-deflate.zip", _corrupt_deflate()),
    ("bad-crc.zip", _bad_crc()),
    ("encrypted.zip", _patched_zip(flag=0x1)),
    ("unknown-method.zip", _patched_zip(method=99)),
    ("deflate64.txt.zip", _patched_zip(method=9)),
]


@pytest.mark.parametrize(("name", "data"), DAMAGED, ids=[d[0] for d in DAMAGED])
def test_damaged_compressed_files_are_one_line_refusals(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    outcome, store = _extract(tmp_path, path)
    message = assert_refused(outcome, codes=(1,), mentions=[name])
    assert not store.exists()
    if "encrypted" in name:
        assert "password" in message
    if "method" in name or "deflate64" in name:
        assert "method" in message


# -- special files -------------------------------------------------------------------------------


def test_a_fifo_named_like_a_vectors_file_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "vectors.txt"
    os.mkfifo(fifo)  # no writer: opening it would block forever
    outcome, store = _extract(tmp_path, fifo)
    assert_refused(outcome, codes=(1,), mentions=["vectors.txt", "is a named pipe (FIFO)"])
    assert not store.exists()


@pytest.mark.parametrize("how", ["format", "symlink"])
def test_dev_zero_as_a_vectors_file_is_refused(tmp_path, how):
    if how == "format":
        outcome, _ = _extract(tmp_path, "/dev/zero", "--vectors-format", "glove")
        mention = "/dev/zero"
    else:
        link = tmp_path / "endless.bin"
        link.symlink_to("/dev/zero")
        outcome, _ = _extract(tmp_path, link)
        mention = "endless.bin"
    assert_refused(outcome, codes=(1,), mentions=[mention, "is a character device"])


def test_a_socket_as_a_vectors_file_is_refused(tmp_path):
    path = tmp_path / "v.vec"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        outcome, _ = _extract(tmp_path, path)
    finally:
        server.close()
    assert_refused(outcome, codes=(1,), mentions=["v.vec", "is a socket, not a regular file"])


def test_special_files_are_refused_by_the_library_too(tmp_path):
    fifo = tmp_path / "v.txt"
    os.mkfifo(fifo)
    for call in (lambda: read_vectors(fifo, ["a"]), lambda: vectors.detect_format(fifo),
                 lambda: read_vectors("/dev/zero", ["a"], format="glove")):
        with pytest.raises(ModelError, match="not a regular file"):
            call()


# -- headers, records and lines that would cost unbounded memory or crash ----------------------


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("digits.vec", b"9" * 5000 + b" 3\nlove 1 2 3\n", "header"),
        ("digits.bin", b"1 " + b"9" * 5000 + b"\n", "header"),
        ("huge-dim.bin", b"1 4000000000\nlove " + b"\0" * 64, "dimension 4,000,000,000"),
        ("zero-dim.vec", b"1 0\nlove\n", "dimension 0"),
    ],
)
def test_absurd_headers_are_refused(tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ModelError, match=message):
        read_vectors(path, ["love"])
    outcome, _ = _extract(tmp_path, path)
    assert_refused(outcome, codes=(1,), mentions=[name])


def test_a_line_longer_than_the_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(vectors, "MAX_LINE", 1000)
    path = tmp_path / "v.txt"
    path.write_bytes(b"love 1 2\n" + b"x" * 5000 + b"\nhate 1 2\n")
    with pytest.raises(ModelError, match="line 2 is longer than"):
        read_vectors(path, ["hate"])
    binary = tmp_path / "v.bin"
    binary.write_bytes(b"2 2\n" + b"x" * 5000)
    with pytest.raises(ModelError, match="record 1 has no space"):
        read_vectors(binary, ["hate"])


def test_a_word_utf8_cannot_encode_is_missing_not_a_crash(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"love 1 2\n")
    read = read_vectors(path, ["love", "\ud800"])
    assert list(read.vectors) == ["love"]
    assert list(load_vectors(path, ["\ud800", "love"]).vectors) == ["love"]


def test_rounding_loss():
    assert vectors.rounding_loss(np.array([1.0, 2.0]), np.float16) == 0.0
    assert vectors.rounding_loss(np.zeros(3), np.float16) == 0.0
    assert vectors.rounding_loss(np.array([1e-9, -1e-9]), np.float16) == 1.0
    assert vectors.rounding_loss(np.array([1.0, 7e4]), np.float16) == float("inf")
    # within the normal range: at most 2**-11 of the length, far below the limit
    rng = np.random.default_rng(0)
    worst = max(vectors.rounding_loss(rng.normal(size=300), np.float16) for _ in range(200))
    assert worst <= 2.0**-11 < vectors.LOSS_LIMIT
    assert 0.0 < vectors.rounding_loss(np.array([1e-200, 1e-200]), np.float32) == 1.0


@pytest.mark.parametrize(("name", "data"), [("v.txt", b"love 1 2\nhate 2 1\n"),
                                            ("v.vec", b"2 2\nlove 1 2\nhate 2 1\n"),
                                            ("v.txt.gz", gzip.compress(b"love 1 2\nhate 2 1\n", mtime=0))])
def test_a_utf8_byte_order_mark_does_not_hide_the_first_word(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(gzip.compress(b"\xef\xbb\xbf" + gzip.decompress(data)) if name.endswith(".gz")
                     else b"\xef\xbb\xbf" + data)
    read = read_vectors(path, ["love", "hate"])
    assert read.vectors["love"][1].tolist() == [1.0, 2.0] and read.vocab_size == 2
