"""Validation that sees damage: the manifest, and ``emb validate``'s exit codes (0 complete,
1 incomplete and resumable, 2 corrupt), each with a clear message and never a traceback."""

from __future__ import annotations

import re
import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest
import zarr
from click.testing import CliRunner

import emb
from emb.cli.main import main
from emb.errors import CorruptStoreError, StoreError
from emb.extraction.pipeline import extract
from tests.fakes import FakeRunner
from tests.store.test_pipeline import words_suite


@pytest.fixture(scope="module")
def intact(tmp_path_factory) -> Path:
    """A complete store: suite 's' (100 items in 4 shards of 32) and suite 't'."""
    path = tmp_path_factory.mktemp("intact") / "s.zarr"
    extract(FakeRunner(), [words_suite(50), words_suite(5, name="t")], str(path), progress=False,
            block_size=32)
    return path


@pytest.fixture()
def store(intact, tmp_path) -> Path:
    path = tmp_path / "s.zarr"
    shutil.copytree(intact, path)
    return path


def validate(path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["validate", str(path), *args], catch_exceptions=False)
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def test_manifest_lists_every_object_with_size_and_checksum(store):
    manifest = zarr.open_group(str(store / "s" / "_progress"), mode="r").attrs["manifest"]
    assert manifest["version"] == 1 and manifest["algorithm"] == "crc32"
    assert (manifest["n_items"], manifest["n_blocks"], manifest["block_size"]) == (100, 4, 32)
    objects = manifest["objects"]
    shards = sorted(k for k in objects if k.startswith("embedding/c/"))
    assert shards == [f"embedding/c/{b}/0/0/0" for b in range(4)]
    for rel in ("embedding/zarr.json", "word/zarr.json", "word/c/0", "context/c/0"):
        assert rel in objects, rel
    assert "zarr.json" not in objects and not any(k.startswith("_progress") for k in objects)
    for rel, (size, crc) in objects.items():  # zlib.crc32 of the file on disk
        data = (store / "s" / rel).read_bytes()
        assert (len(data), f"{zlib.crc32(data):08x}") == (size, crc), rel


def test_complete_store_exits_0(store):
    assert validate(store) == (0, f"{store}: complete\n")
    code, out = validate(store, "--deep")
    assert code == 0 and "complete" in out


@pytest.mark.parametrize(
    "damage, needle",
    [
        (lambda p: (p / "s" / "zarr.json").unlink(), "s/zarr.json) is missing"),
        (lambda p: (p / "s" / "embedding" / "zarr.json").write_text("garbage{"),
         "metadata of 'embedding' is damaged"),
        (lambda p: (p / "s" / "embedding" / "zarr.json").write_text("{}"),
         "'embedding' (s/embedding/zarr.json) is not a zarr v3 array's"),
        (lambda p: (p / "zarr.json").unlink(), "root metadata (zarr.json) is missing"),
        (lambda p: (p / "zarr.json").write_text("\x00\x01"), "root metadata is damaged"),
        (lambda p: (p / "s" / "embedding" / "c" / "2" / "0" / "0" / "0").unlink(),
         "the embedding shard of block 2 (items 64–95"),
        (lambda p: (p / "s" / "embedding" / "c" / "3" / "0" / "0" / "0").write_bytes(b"\x00" * 10),
         "has 10 bytes, the manifest"),
        (lambda p: (p / "s" / "word" / "c" / "0").unlink(), "the data of word"),
        (lambda p: shutil.rmtree(p / "s" / "context"), "the array 'context' is missing"),
    ],
    ids=["suite-zarr.json", "garbage-embedding-meta", "empty-embedding-meta", "root-zarr.json",
         "garbage-root", "deleted-shard", "truncated-shard", "deleted-coordinate-chunk",
         "deleted-coordinate"],
)
def test_damage_is_found_by_a_plain_validate_and_exits_2(store, damage, needle):
    damage(store)
    code, out = validate(store)
    assert code == 2 and "corrupt" in out and needle in out, out
    # readers refuse the damaged suite with the same diagnosis, never a traceback or NaNs
    if (store / "zarr.json").is_file() and b"\x00" not in (store / "zarr.json").read_bytes():
        opened = emb.open_store(str(store))
        assert opened.info().status == "corrupt"
        with pytest.raises(StoreError):
            opened.dataset("s")
        assert opened.dataset("t").sizes["item"] == 10  # the intact suite stays readable
    else:
        with pytest.raises(CorruptStoreError, match="emb validate"):
            emb.open_store(str(store))


def test_changed_bytes_are_found_by_deep_only(store):
    shard = store / "s" / "embedding" / "c" / "1" / "0" / "0" / "0"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    assert validate(store)[0] == 0  # sizes agree
    code, out = validate(store, "--deep")
    assert code == 2 and "other bytes than when the suite was completed" in out and "block 1" in out


def test_incomplete_exits_1_and_a_marked_block_without_shard_exits_2(tmp_path):
    path = tmp_path / "s.zarr"

    class Boom(FakeRunner):
        def embed(self, encodings, **kw):
            if len(self.calls) == 2:
                raise RuntimeError("interrupted")
            return super().embed(encodings, **kw)

    with pytest.raises(RuntimeError):
        extract(Boom(), words_suite(100), str(path), progress=False, block_size=32, window_blocks=1)
    code, out = validate(path)
    assert code == 1 and "2 of 7 blocks written" in out and "re-run" in out
    (path / "s" / "embedding" / "c" / "1" / "0" / "0" / "0").unlink()
    code, out = validate(path)
    assert code == 2 and "block 1" in out and "done-marker is set" in out


def test_nothing_to_validate_exits_2_and_empty_store_exits_1(tmp_path):
    code, out = validate(tmp_path / "missing.zarr")
    assert code == 2 and "does not exist" in out
    (tmp_path / "empty.zarr").mkdir()
    code, out = validate(tmp_path / "empty.zarr")
    assert code == 1 and "nothing extracted yet" in out
    (tmp_path / "x.zip").write_bytes(b"")
    code, out = validate(tmp_path / "x.zip")
    assert code == 2 and "not a readable zip file" in out
    foreign = tmp_path / "foreign.zarr"
    zarr.open_group(str(foreign), mode="w", zarr_format=3).attrs["x"] = 1
    code, out = validate(foreign)
    assert code == 2 and "not an emb store" in out


def test_store_without_manifest_is_checked_the_old_way_and_says_so(store):
    manifest_group = zarr.open_group(str(store / "s" / "_progress"), mode="a")
    del manifest_group.attrs["manifest"]  # what a store of schema 1 looks like
    zarr.open_group(str(store / "s"), mode="a").attrs["emb_schema_version"] = 1
    zarr.consolidate_metadata(str(store))  # the copy plain xarray reads agrees again
    code, out = validate(store)
    assert code == 0 and "without a manifest" in out and "checked the old way" in out
    (store / "s" / "embedding" / "c" / "0" / "0" / "0" / "0").unlink()
    code, out = validate(store)
    assert code == 2 and "block 0" in out and "missing" in out


def test_resuming_a_damaged_suite_is_refused(store):
    (store / "s" / "embedding" / "c" / "0" / "0" / "0" / "0").unlink()
    with pytest.raises(CorruptStoreError, match="--overwrite"):
        extract(FakeRunner(), words_suite(50), str(store), progress=False, block_size=32)
    extract(FakeRunner(), words_suite(50), str(store), progress=False, block_size=32,
            overwrite=True)
    assert validate(store, "--deep")[0] == 0


def test_interrupted_overwrite_reads_as_an_interrupted_layout(store, monkeypatch):
    """Deleting a group clears its flags first and its zarr.json last: cut short, it is a
    layout to rewrite (exit 1), never a corrupt suite."""
    from emb.store import suite_writer as writer

    calls = {"n": 0}
    real = writer.zarr_sync

    def cut(coro):  # the deletion is the first sync call after the flags were cleared
        calls["n"] += 1
        if calls["n"] == 1:
            coro.close()
            keys = sorted(p for p in (store / "s").rglob("*") if p.is_file())
            for p in keys[: len(keys) // 2]:
                if p.name != "zarr.json" or p.parent != store / "s":
                    p.unlink()
            raise KeyboardInterrupt
        return real(coro)

    monkeypatch.setattr(writer, "zarr_sync", cut)
    with pytest.raises(KeyboardInterrupt):
        extract(FakeRunner(), words_suite(50), str(store), progress=False, block_size=32,
                overwrite=True)
    monkeypatch.undo()
    code, out = validate(store)
    assert code == 1 and "layout write was interrupted" in out
    extract(FakeRunner(), words_suite(50), str(store), progress=False, block_size=32)
    assert validate(store, "--deep")[0] == 0
    np.testing.assert_array_equal(
        emb.open_store(str(store)).dataset("s").embedding.values.shape, (100, 4, 4, 8)
    )


def _flip_zip_member(path: Path, member: str, offset: int) -> None:
    """Invert one byte of a stored (uncompressed) zip member in place, as a bad disk would."""
    import struct
    import zipfile

    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
        assert info.compress_type == zipfile.ZIP_STORED
    with path.open("r+b") as f:
        f.seek(info.header_offset + 26)
        name_len, extra_len = struct.unpack("<HH", f.read(4))
        at = info.header_offset + 30 + name_len + extra_len + offset
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0xFF]))


def test_a_zip_member_with_changed_bytes_is_corrupt_for_a_deep_validate(store, tmp_path):
    """zipfile refuses to read a member whose CRC-32 fails (BadZipFile): a deep check reports
    that object (exit 2, not a traceback), and so does a deep check without a manifest."""
    zipped = emb.open_store(str(store)).to_zip(tmp_path / "s.zip")
    _flip_zip_member(zipped, "s/embedding/c/1/0/0/0", 100)
    assert validate(zipped)[0] == 0  # sizes agree
    code, out = validate(zipped, "--deep")
    assert code == 2 and "corrupt" in out, out
    assert "block 1" in out and "cannot be read back" in out and "Bad CRC-32" in out, out


def test_a_damaged_zip_metadata_member_is_corrupt(store, tmp_path):
    zipped = emb.open_store(str(store)).to_zip(tmp_path / "s.zip")
    _flip_zip_member(zipped, "s/zarr.json", 5)
    code, out = validate(zipped)
    assert code == 2 and "s: the suite's metadata is damaged" in out and "Bad CRC-32" in out, out


def _set_attribute(path: Path, key: str, value) -> None:
    import json

    doc = json.loads(path.read_text())
    if value is None:
        del doc["attributes"][key]
    else:
        doc["attributes"][key] = value
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    "where, key, value, needle",
    [
        ("s", "extraction", 5, "'extraction' attribute holds a number (5), not an object"),
        ("s", "suite", "garbage", "'suite' attribute holds a string ('garbage'), not an object"),
        ("s", "model", [1], "'model' attribute holds a list ([1]), not an object"),
        ("s", "extraction", {"block_size": "x"}, "'extraction.block_size' attribute holds a "
         "string ('x'), not a positive whole number"),
        ("s", "suite", {"settings": 3}, "'suite.settings' attribute holds a number (3), not a list"),
        ("s", "suite", None, "lost its 'suite' attribute, though the suite is there"),
        ("s", "model", {"n_layers": "x"}, "'model.n_layers' attribute holds a string ('x'), "
         "not a whole number ≥ 0"),
    ],
    ids=["extraction-int", "suite-str", "model-list", "block-size-str", "settings-int",
         "suite-deleted", "model-layers-str"],
)
def test_a_suite_attribute_of_the_wrong_type_is_corrupt(store, where, key, value, needle):
    """Mistyped attributes were 'complete' to validate, and tracebacks (AttributeError, ValueError)
    or 'suite none yet' to info and dataset(): now corrupt (exit 2), named, and refused."""
    _set_attribute(store / where / "zarr.json", key, value)
    code, out = validate(store)
    assert code == 2 and "corrupt" in out and needle in out, out
    opened = emb.open_store(str(store))
    info = opened.info()
    assert info.status == "corrupt" and any(needle in p for p in info.problems)
    with pytest.raises(CorruptStoreError, match="emb validate"):
        opened.dataset("s")
    assert opened.dataset("t").sizes["item"] == 10  # the intact suite stays readable


def test_a_root_model_attribute_that_is_not_an_object_is_corrupt(store):
    _set_attribute(store / "zarr.json", "model", "oops")
    code, out = validate(store)
    assert code == 2 and "root attribute 'model' holds a string ('oops')" in out, out
    with pytest.raises(CorruptStoreError, match="'model' holds a string.*emb validate"):
        emb.open_store(str(store))
    with pytest.raises(CorruptStoreError, match="'model' holds a string.*a new store"):
        extract(FakeRunner(), words_suite(5, name="u"), str(store), progress=False)


@pytest.mark.parametrize("field, value, needle", [
    ("n_layers", "x", "'model.n_layers' holds a string ('x'), not a whole number ≥ 0"),
    ("hidden_size", -3, "'model.hidden_size' holds a number (-3), not a positive whole number"),
    ("model_id", [1, 2], "'model.model_id' holds a list ([1, 2]), not a string"),
    ("revision", 7, "'model.revision' holds a number (7), not a string or null"),
    ("causal", "yes", "'model.causal' holds a string ('yes'), not true or false"),
])
def test_a_root_model_field_of_the_wrong_type_is_corrupt(store, field, value, needle):
    """The fields of the model's provenance were not checked: a store edited by hand was
    'complete', and 'emb info' showed "x layers + embeddings", "-3-d", a model named "[1, 2]"."""
    import json

    doc = json.loads((store / "zarr.json").read_text())
    assert field in doc["attributes"]["model"] or field in ("n_layers", "hidden_size", "causal")
    doc["attributes"]["model"][field] = value
    (store / "zarr.json").write_text(json.dumps(doc))
    code, out = validate(store)
    assert code == 2 and "corrupt" in out and needle in out, out
    with pytest.raises(CorruptStoreError, match=re.escape(needle) + ".*emb validate"):
        emb.open_store(str(store))


def test_a_suite_whose_metadata_was_deleted_is_reported_damaged_not_absent(store):
    (store / "s" / "zarr.json").unlink()
    opened = emb.open_store(str(store))
    assert "s" not in opened.suites
    with pytest.raises(CorruptStoreError, match=r"suite 's' .* is damaged.*s/zarr.json\) is missing"):
        opened.dataset("s")
    assert opened.damaged("t") is None and opened.damaged("nowhere") is None
    with pytest.raises(StoreError, match="Add it with 'emb extract"):
        opened.dataset("nowhere")


def test_only_errors_of_reading_stored_bytes_are_called_damage():
    """damage_reported turns what damaged bytes raise into a CorruptStoreError naming the store
    and 'emb validate --deep', and lets everything else (an analysis' own bug) pass unchanged."""
    import zipfile

    from emb.store import damage_reported

    with pytest.raises(CorruptStoreError, match=r"x\.zarr is damaged.*emb validate --deep x\.zarr"):
        with damage_reported(["x.zarr"]):
            raise zipfile.BadZipFile("Bad CRC-32 for file 's/embedding/c/0/0/0/0'")
    with pytest.raises(CorruptStoreError, match="its CRC-32C checksum does not match: the stored bytes changed") as raised:
        with damage_reported(["x.zarr"]):
            raise ValueError("Stored and computed checksum do not match. Stored: "
                             "b'\\xba\\x01\\x7f'. Computed: b'\\x00\\x11\\x22'.")
    assert "\\x" not in str(raised.value) and "b'" not in str(raised.value)  # no raw bytes shown
    with pytest.raises(CorruptStoreError, match=r"RuntimeError: blosc decompression: … is no header, … either"):
        with damage_reported(["x.zarr"]):
            raise RuntimeError("blosc decompression: b'\\x00\\x01' is no header, b\"\\x02\" either")
    for error in (ValueError("operands could not be broadcast"), KeyError("layer"),
                  RuntimeError("boom"), StoreError("an emb error stays itself")):
        with pytest.raises(type(error)) as raised:
            with damage_reported(["x.zarr"]):
                raise error
        assert raised.value is error
