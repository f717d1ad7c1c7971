"""``emb analyze`` on damaged stores, and the CLI's last resort: one line and a clear exit status
for every failure, never a traceback."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import emb
from emb.cli._errors import INTERNAL_ERROR, EmbCommand
from emb.cli.analyze import analyze
from emb.cli.main import main
from tests.analyses._synthetic import weat_dataset, write_store
from tests.store.test_validate import _flip_zip_member


@pytest.fixture(scope="module")
def intact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on fixed-width string dtypes
        return write_store(tmp_path_factory.mktemp("intact") / "w.zarr", {"weat": weat_dataset()})


@pytest.fixture()
def store(intact: Path, tmp_path: Path) -> Path:
    path = tmp_path / "w.zarr"
    shutil.copytree(intact, path)
    return path


def _analyze(store: Path, out: Path) -> tuple[int, str]:
    result = CliRunner().invoke(
        analyze, ["weat", "--store", str(store), "--out", str(out), "--no-plots", "--quiet"]
    )
    assert "Traceback" not in result.output, result.output
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def _shard(store: Path) -> Path:
    return store / "weat" / "embedding" / "c" / "0" / "0" / "0" / "0"


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_the_intact_store_is_analyzed(store: Path, tmp_path: Path) -> None:
    code, out = _analyze(store, tmp_path / "out")
    assert code == 0, out


@pytest.mark.parametrize(
    "offset, named",
    [(-10, "the index of the embedding shard of block 0"),  # the shard index's CRC-32C
     (0, "the embedding shard of block 0 (items 0–127) at weat/embedding/c/0/0/0/0, layer")],
    ids=["index", "chunk"],  # the first inner chunk's CRC-32C (store schema 3)
)
def test_a_shard_that_does_not_decode_is_a_corrupt_store_error(
    store: Path, tmp_path: Path, offset: int, named: str
) -> None:
    """Same size, other bytes: the plain check passes, decoding fails while computing."""
    shard = _shard(store)
    _flip(shard, offset % shard.stat().st_size)
    code, out = _analyze(store, tmp_path / "out")
    assert code == 1 and "CorruptStoreError" in out and named in out, out
    assert f"the stored data of suite 'weat' in {store} is damaged" in out
    assert "CRC-32C checksum does not match" in out
    assert f"emb validate --deep {store}" in out


def test_a_zip_member_that_fails_its_crc_is_a_corrupt_store_error(store: Path, tmp_path: Path) -> None:
    zipped = emb.open_store(str(store)).to_zip(tmp_path / "w.zip")
    _flip_zip_member(zipped, "weat/embedding/c/0/0/0/0", 100)
    code, out = _analyze(zipped, tmp_path / "out")
    assert code == 1 and "CorruptStoreError" in out and "BadZipFile: Bad CRC-32" in out, out
    assert f"emb validate --deep {zipped}" in out


def test_a_suite_whose_metadata_was_deleted_is_damaged_not_missing(store: Path, tmp_path: Path) -> None:
    """It used to say "has no suite 'weat' … add it with emb extract", which refuses it."""
    (store / "weat" / "zarr.json").unlink()
    code, out = _analyze(store, tmp_path / "out")
    assert code == 1 and "CorruptStoreError" in out and "suite 'weat'" in out, out
    assert "is missing" in out and f"emb validate {store}" in out and "emb extract" not in out


@pytest.mark.parametrize("key, value", [("model", "oops"), ("extraction", 5), ("suite", "garbage")])
def test_mistyped_metadata_is_one_line(store: Path, tmp_path: Path, key: str, value) -> None:
    meta = store / ("zarr.json" if key == "model" else "weat/zarr.json")
    doc = json.loads(meta.read_text())
    doc["attributes"][key] = value
    meta.write_text(json.dumps(doc))
    needle = f"'{key}' holds a string" if key == "model" else f"'{key}' attribute holds"
    code, out = _analyze(store, tmp_path / "out")
    assert code == 1 and "CorruptStoreError" in out and needle in out, out
    result = CliRunner().invoke(main, ["info", str(store)])  # refused, or the problem listed
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output and needle in result.output, result.output


# -- the last resort ---------------------------------------------------------------------------------
def _command(exc: BaseException) -> click.Command:
    @click.command(cls=EmbCommand)
    def boom() -> None:
        raise exc

    return boom


def test_an_unexpected_exception_is_one_line_with_its_own_exit_status(monkeypatch) -> None:
    monkeypatch.delenv("EMB_DEBUG", raising=False)
    result = CliRunner().invoke(_command(ZeroDivisionError("division by zero")), [])
    assert result.exit_code == INTERNAL_ERROR == 3
    assert "Traceback" not in result.output
    assert "internal error: ZeroDivisionError: division by zero" in result.output
    assert "please report this" in result.output and "EMB_DEBUG=1" in result.output


def test_emb_debug_shows_the_traceback(monkeypatch) -> None:
    monkeypatch.setenv("EMB_DEBUG", "1")
    result = CliRunner().invoke(_command(ZeroDivisionError("division by zero")), [])
    assert result.exit_code == INTERNAL_ERROR
    assert "Traceback" in result.output and "raise exc" in result.output
    assert "internal error: ZeroDivisionError" in result.output


def test_running_out_of_memory_says_what_to_do(monkeypatch) -> None:
    monkeypatch.delenv("EMB_DEBUG", raising=False)
    result = CliRunner().invoke(_command(MemoryError("Unable to allocate 9 GiB")), [])
    assert result.exit_code == INTERNAL_ERROR and "Traceback" not in result.output
    assert "ran out of memory" in result.output and "Unable to allocate 9 GiB" in result.output
    assert "--scheduler" in result.output


def test_emb_errors_usage_errors_and_interrupts_keep_their_behaviour(monkeypatch) -> None:
    monkeypatch.delenv("EMB_DEBUG", raising=False)
    result = CliRunner().invoke(_command(emb.errors.StoreError("no such store")), [])
    assert result.exit_code == 1 and "Error: StoreError: no such store" in result.output
    result = CliRunner().invoke(_command(click.UsageError("bad option")), [])
    assert result.exit_code == 2 and "bad option" in result.output
    result = CliRunner().invoke(_command(KeyboardInterrupt()), [])
    assert result.exit_code == 1 and "Aborted!" in result.output
