"""The store's integrity on read (issue 20): hostile metadata, bit rot, a writer racing a reader,
a full disk at the last step, reserved names, absurd shard counts.

Each case is run the way a user meets it (the real ``emb`` in a child process, through
``tests/_hostile.py``) where the command line is the point, and through the library where the
state to reach is precise (a reader between two reads).
"""

from __future__ import annotations

import errno
import json
import re
import shutil
import struct
import textwrap
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr
from click.testing import CliRunner

import emb
from emb.cli.main import main
from emb.errors import CorruptStoreError, StoreError
from emb.extraction.pipeline import extract
from tests._hostile import assert_refused, run_emb
from tests.analyses._synthetic import weat_dataset, write_store
from tests.fakes import FakeRunner
from tests.store.test_pipeline import words_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHARD = "weat/embedding/c/0/0/0/0"


@pytest.fixture(scope="module")
def intact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return write_store(tmp_path_factory.mktemp("intact") / "w.zarr", {"weat": weat_dataset()})


@pytest.fixture()
def store(intact: Path, tmp_path: Path) -> Path:
    path = tmp_path / "w.zarr"
    shutil.copytree(intact, path)
    return path


def _analyze(store: Path | str, out: Path, **kwargs) -> object:
    return run_emb("analyze", "weat", "--store", store, "--out", out, "--no-plots", "--quiet",
                   **kwargs)


def _no_results(out: Path) -> bool:
    return not out.exists() or not any(out.rglob("*"))


def _chunks(shard: bytes, n_chunks: int) -> list[tuple[int, int]]:
    """(offset, size) of each inner chunk, from the shard index at the shard's end."""
    index = shard[-(16 * n_chunks + 4) : -4]
    return [struct.unpack_from("<QQ", index, 16 * i) for i in range(n_chunks)]


def _flip_bits(path: Path, positions: list[int]) -> None:
    """Flip one bit at each byte position: same size, other bytes (a bad disk)."""
    data = bytearray(path.read_bytes())
    for k, at in enumerate(positions):
        data[at] ^= 1 << (k % 8)
    path.write_bytes(bytes(data))


def _payload_positions(shard: Path, n_chunks: int, chunk: int = 0) -> list[int]:
    """Three bytes inside one inner chunk's compressed payload (past Blosc's 16-byte header,
    before the chunk's own 4-byte checksum)."""
    offset, size = _chunks(shard.read_bytes(), n_chunks)[chunk]
    return [offset + 16 + (size - 24) * k // 3 for k in range(3)]


def _silent_positions(shard: Path, n_chunks: int, chunk: int = 0) -> list[int]:
    """Three bytes of one inner chunk's Blosc payload whose flipped bits still decode, to other
    numbers: the damage Blosc cannot see (found by decoding, so the case does not depend on
    where LZ4 happens to put its literals)."""
    from numcodecs import Blosc

    data = shard.read_bytes()
    offset, size = _chunks(data, n_chunks)[chunk]
    raw = bytearray(data[offset : offset + size])
    codec = Blosc()
    try:
        want = codec.decode(bytes(raw))
        payload = size
    except (RuntimeError, ValueError):  # store schema 3: the chunk ends with its CRC-32C
        payload = size - 4
        want = codec.decode(bytes(raw[:payload]))
    chosen: list[int] = []
    for at in range(16, payload):  # past Blosc's header
        trial = bytearray(raw[:payload])
        for k, pos in enumerate([*chosen, at]):
            trial[pos] ^= 1 << (k % 8)
        try:
            got = codec.decode(bytes(trial))
        except (RuntimeError, ValueError):
            continue
        if len(got) == len(want) and got != want:
            chosen.append(at)
            if len(chosen) == 3:
                return [offset + p for p in chosen]
    raise AssertionError("no silent flips found")


def _n_layers(store: Path, suite: str = "weat") -> int:
    return zarr.open_array(str(store / suite / "embedding"), mode="r").shape[1]


# -- metadata emptied or garbled ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("member", "needle"),
    [
        ("weat/zarr.json", "weat/zarr.json) is not a zarr v3 group's"),
        ("zarr.json", "root metadata (zarr.json) is not a zarr v3 group's"),
        ("weat/embedding/zarr.json", "'embedding' (weat/embedding/zarr.json) is not a zarr v3 array's"),
        ("weat/word/zarr.json", "'word' (weat/word/zarr.json) is not a zarr v3 array's"),
        ("weat/_progress/zarr.json", "weat/_progress/zarr.json) is not a zarr v3 group's"),
        ("weat/_progress/done/zarr.json", "'_progress/done'"),
    ],
    ids=["suite", "root", "embedding", "coordinate", "progress-group", "markers"],
)
def test_metadata_replaced_by_an_empty_object_is_corrupt_never_complete(
    store: Path, tmp_path: Path, member: str, needle: str
) -> None:
    (store / member).write_text("{}")
    outcome = run_emb("validate", "--deep", store)
    assert outcome.code == 2 and "corrupt" in outcome.stdout and needle in outcome.stdout, outcome
    assert_refused(_analyze(store, tmp_path / "out"), codes=(1,), mentions=["CorruptStoreError"])
    assert _no_results(tmp_path / "out")


@pytest.mark.parametrize(
    ("member", "where"),
    [("_progress/done", "grid"), ("embedding", "grid"), ("embedding", "inner"), ("word", "grid")],
)
def test_an_empty_chunk_shape_is_corrupt_and_refused_by_a_resuming_worker(
    tmp_path: Path, member: str, where: str
) -> None:
    """zarr opens an array whose chunk (or shard) shape holds a 0 and divides by it when
    indexing: validate calls the suite corrupt, naming the array, and a shard worker resuming
    it is refused with that (was: a ZeroDivisionError traceback from reading the markers)."""
    from tests.store.test_shards import BLOCK, WINDOW, repeat_suite

    path = tmp_path / "s.zarr"

    def worker(index: int) -> None:
        extract(FakeRunner(), repeat_suite(), str(path), progress=False, block_size=BLOCK,
                window_blocks=WINDOW, shard=f"{index}/3")

    worker(1)
    meta = path / "s" / member / "zarr.json"
    doc = json.loads(meta.read_text())
    if where == "grid":
        doc["chunk_grid"]["configuration"]["chunk_shape"] = [0] * len(doc["shape"])
    else:  # the sharding codec's inner chunks
        doc["codecs"][0]["configuration"]["chunk_shape"] = [0, 1, 4, 8]
    meta.write_text(json.dumps(doc))
    report = emb.open_store(str(path)).validate()
    assert report.status == "corrupt" and f"'{member}'" in report.problems[0], report.problems
    with pytest.raises(CorruptStoreError, match=f"'{member}'"):
        worker(2)


@pytest.mark.parametrize("edit", ["deleted", "emptied", "shard-left-out"])
def test_a_manifest_removed_or_edited_is_corrupt(store: Path, edit: str) -> None:
    """The manifest vouches for the suite; without it (or with one that lists less than the
    suite holds) a complete suite of schema >= 2 cannot be checked: corrupt, not complete."""
    meta = store / "weat" / "_progress" / "zarr.json"
    doc = json.loads(meta.read_text())
    if edit == "deleted":
        del doc["attributes"]["manifest"]
    elif edit == "emptied":
        doc["attributes"]["manifest"]["objects"] = {}
    else:
        del doc["attributes"]["manifest"]["objects"][SHARD.removeprefix("weat/")]
    meta.write_text(json.dumps(doc))
    outcome = run_emb("validate", "--deep", store)
    assert outcome.code == 2 and "manifest" in outcome.stdout, outcome
    assert "checked the old way" not in outcome.stdout


@pytest.mark.parametrize("edit", ["suite-left-out", "array-changed", "ghost-suite"])
def test_consolidated_metadata_that_disagrees_is_not_complete(store: Path, edit: str) -> None:
    root = store / "zarr.json"
    doc = json.loads(root.read_text())
    copy = doc["consolidated_metadata"]["metadata"]
    if edit == "suite-left-out":
        for key in [k for k in copy if k.split("/")[0] == "weat"]:
            del copy[key]
    elif edit == "array-changed":
        copy["weat/embedding"]["shape"][0] += 1  # plain xarray would read past the data
    else:
        copy["gone"] = copy["weat"]
    root.write_text(json.dumps(doc))
    outcome = run_emb("validate", store)
    assert outcome.code == 1 and "consolidated metadata" in outcome.stdout, outcome
    assert "the suites' data is not affected" in outcome.stdout
    info = run_emb("info", store)
    assert info.code == 0 and "problem   the consolidated metadata" in info.stdout, info


def test_a_rerun_refreshes_consolidated_metadata_that_disagrees(tmp_path: Path) -> None:
    path = str(tmp_path / "s.zarr")
    extract(FakeRunner(), words_suite(20), path, progress=False, block_size=16)
    root = tmp_path / "s.zarr" / "zarr.json"
    doc = json.loads(root.read_text())
    doc["consolidated_metadata"]["metadata"]["s"]["attributes"]["complete"] = False
    root.write_text(json.dumps(doc))
    assert emb.open_store(path).validate().status == "incomplete"
    (report,) = extract(FakeRunner(), words_suite(20), path, progress=False, block_size=16)
    assert report.already_complete and report.blocks_written == 0
    assert emb.open_store(path).validate().status == "complete"
    assert xr.open_zarr(path, group="s").attrs["complete"] is True  # what plain xarray reads


# -- a full disk during the last step -------------------------------------------------------------
def test_a_full_disk_while_refreshing_consolidated_metadata_says_the_suite_is_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from emb.store import suite_writer as writer

    real, calls = writer.consolidate, {"n": 0}

    def full_at_the_end(root, location=None):
        calls["n"] += 1
        if calls["n"] > 1:  # the layout's refresh passes; the one after 'complete' fails
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(root, location)

    monkeypatch.setattr(writer, "consolidate", full_at_the_end)
    path = str(tmp_path / "s.zarr")
    with pytest.raises(StoreError) as caught:
        extract(FakeRunner(), words_suite(20), path, progress=False, block_size=16)
    message = str(caught.value)
    assert "is complete" in message and "No space left on device" in message
    assert "consolidated metadata" in message and "to resume" not in message
    monkeypatch.undo()
    report = emb.open_store(path).validate(deep=True)
    assert report.status == "incomplete" and "consolidated metadata" in report.problems[0]
    assert emb.open_store(path).dataset("s").sizes["item"] == 40  # emb reads it as it is
    (again,) = extract(FakeRunner(), words_suite(20), path, progress=False, block_size=16)
    assert again.already_complete and again.blocks_written == 0
    assert emb.open_store(path).validate().status == "complete"
    assert xr.open_zarr(path, group="s").attrs["complete"] is True


def test_a_full_disk_at_the_last_step_is_one_line_from_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from emb.store import suite_writer as writer

    real, calls = writer.consolidate, {"n": 0}

    def full_at_the_end(root, location=None):
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(root, location)

    monkeypatch.setattr(writer, "consolidate", full_at_the_end)
    vectors, suite = _vectors(tmp_path), _suite_file(tmp_path, labels={})
    result = CliRunner().invoke(
        main, ["extract", "-m", str(vectors), "-s", str(suite), "--store", str(tmp_path / "v.zarr"),
               "--quiet"])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "is complete" in errors[0] and "re-run the same command" in errors[0]


# -- bit rot ----------------------------------------------------------------------------------------
def test_flipped_bits_in_a_chunk_payload_are_refused_naming_the_object(
    store: Path, tmp_path: Path
) -> None:
    """Three flipped bits, same size: a plain validate cannot see them (sizes agree), and the
    analysis used to compute other numbers from them without a word."""
    shard = store / SHARD
    _flip_bits(shard, _silent_positions(shard, _n_layers(store)))
    assert run_emb("validate", store).code == 0  # sizes only: what --deep is for
    message = assert_refused(
        _analyze(store, tmp_path / "out"), codes=(1,),
        mentions=["CorruptStoreError", str(store), SHARD, "layer 0", f"emb validate --deep {store}"])
    assert "CRC-32C" in message
    assert _no_results(tmp_path / "out")
    deep = run_emb("validate", "--deep", store)
    assert deep.code == 2 and SHARD in deep.stdout


def test_flipped_bits_in_a_shard_index_are_refused_naming_the_index(
    store: Path, tmp_path: Path
) -> None:
    shard = store / SHARD
    size = shard.stat().st_size
    _flip_bits(shard, [size - 20, size - 12, size - 9])  # the last chunk's entry in the index
    assert_refused(_analyze(store, tmp_path / "out"), codes=(1,),
                   mentions=["CorruptStoreError", "the index of the embedding shard of block 0",
                             SHARD, "emb validate --deep"])


def test_flipped_bits_in_a_coordinate_are_refused_naming_it(store: Path, tmp_path: Path) -> None:
    word = store / "weat" / "word" / "c" / "0"
    size = word.stat().st_size
    _flip_bits(word, [size // 3, size // 2, 2 * size // 3])
    assert_refused(_analyze(store, tmp_path / "out"), codes=(1,),
                   mentions=["CorruptStoreError", "weat/word/c/0", "manifest"])


def test_flipped_bits_in_a_zip_member_are_refused_naming_it(store: Path, tmp_path: Path) -> None:
    zipped = emb.open_store(str(store)).to_zip(tmp_path / "w.zip")
    with zipfile.ZipFile(zipped) as zf:
        info = zf.getinfo(SHARD)
    with zipped.open("r+b") as f:
        f.seek(info.header_offset + 26)
        name_len, extra_len = struct.unpack("<HH", f.read(4))
        start = info.header_offset + 30 + name_len + extra_len
    inside = _payload_positions(store / SHARD, _n_layers(store))
    _flip_bits(zipped, [start + p for p in inside])
    assert_refused(_analyze(zipped, tmp_path / "out"), codes=(1,),
                   mentions=["CorruptStoreError", SHARD, str(zipped)])


def test_an_old_store_is_verified_against_its_manifest(tmp_path: Path) -> None:
    """A store of schema 2 has no checksum per chunk: its shards are checked against the
    manifest's CRC-32 when first read."""
    path = tmp_path / "v2.zarr"
    with zipfile.ZipFile(FIXTURES / "store_v2.zarr.zip") as zf:
        zf.extractall(path)
    want = emb.open_store(str(path)).dataset("mini").embedding.values
    shard = path / "mini" / "embedding" / "c" / "0" / "0" / "0" / "0"
    n_layers = _n_layers(path, "mini")
    _flip_bits(shard, _payload_positions(shard, n_layers, chunk=n_layers - 1)[:1])
    ds = emb.open_store(str(path)).dataset("mini")
    with pytest.raises(CorruptStoreError, match=r"mini/embedding/c/0/0/0/0 has other bytes.*"
                                                r"manifest.*emb validate --deep"):
        ds.embedding.isel(layer=0).load()  # any read of the shard checks it whole, once
    unchecked = emb.open_store(str(path)).dataset("mini", verify=False).embedding
    np.testing.assert_array_equal(unchecked.isel(layer=0).values, want[:, 0])  # others intact


# -- a writer racing a reader ---------------------------------------------------------------------
def test_a_suite_overwritten_between_reads_is_refused(tmp_path: Path) -> None:
    """The reader opened, read half, the suite was replaced, the reader read the rest: the
    values mix two suites, and the end check refuses them."""
    path = str(tmp_path / "s.zarr")
    extract(FakeRunner(), words_suite(40), path, progress=False, block_size=16)
    ds = emb.open_store(path).dataset("s")
    emb.store.check_unchanged([ds])  # nothing changed yet
    first = ds.embedding[:16].values
    extract(FakeRunner(), words_suite(45, settings=("alone", "bleached")), path, progress=False,
            block_size=16, overwrite=True)
    rest = ds.embedding[16:].values  # the new suite's blocks, read as if they were the old's
    assert first.shape[0] + rest.shape[0] == 80
    with pytest.raises(StoreError, match=r"suite 's' in .* changed while it was read: it was "
                                         r"rewritten since \(generation"):
        emb.store.check_unchanged([ds])


def test_a_read_during_a_rewrite_is_refused_not_nan(tmp_path: Path, monkeypatch) -> None:
    """The rewrite deleted the old blocks and stopped (killed) before writing new ones: a
    reader opened before used to read them as NaN."""
    from emb.store import suite_writer as writer

    path = tmp_path / "s.zarr"
    extract(FakeRunner(), words_suite(40), str(path), progress=False, block_size=16)
    ds = emb.open_store(str(path)).dataset("s")
    real = writer.zarr_sync

    def killed_after_deleting(coro):
        result = real(coro)
        if not (path / "s" / "embedding" / "c").exists():
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(writer, "zarr_sync", killed_after_deleting)
    with pytest.raises(KeyboardInterrupt):
        extract(FakeRunner(), words_suite(40), str(path), progress=False, block_size=16,
                overwrite=True)
    monkeypatch.undo()
    with pytest.raises(StoreError, match="changed while it was read") as caught:
        ds.embedding.load()
    assert not isinstance(caught.value, CorruptStoreError)  # a rewrite, not damage


_RACE_HOOK = textwrap.dedent(
    """
    import os

    if os.environ.get("EMB_TEST_REWRITE_AT_COMPUTE"):
        import emb.api as api

        real = api.compute

        def compute(result, **kwargs):
            # the analysis opened the store; now another process replaces the suite, and
            # only then are the vectors read
            from emb.store import SuiteWriter, open_for_writing
            from tests.analyses._synthetic import weat_dataset

            path = os.environ["EMB_TEST_REWRITE_AT_COMPUTE"]
            ds = weat_dataset(seed=7)
            _, root = open_for_writing(path, model={**ds.attrs["model"], "model_id": "synthetic/toy"})
            writer = SuiteWriter.open(
                path, root, name="weat", coords=ds.drop_vars("embedding"),
                shape=ds["embedding"].shape, storage_dtype=str(ds["embedding"].dtype),
                suite_attrs=ds.attrs["suite"], extraction_attrs=ds.attrs["extraction"],
                overwrite=True)
            for index, (start, stop) in enumerate(writer.block_ranges()):
                writer.write_block(index, ds["embedding"].values[start:stop])
            writer.finish()
            return real(result, **kwargs)

        api.compute = compute
    """
)


def test_emb_analyze_refuses_a_suite_overwritten_while_it_reads(store: Path, tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_RACE_HOOK)
    repo = Path(__file__).resolve().parents[2]
    env = {"PYTHONPATH": f"{repo / 'src'}:{repo}:{hooks}", "EMB_TEST_REWRITE_AT_COMPUTE": str(store)}
    out = tmp_path / "out"
    message = assert_refused(_analyze(store, out, env=env), codes=(1,),
                             mentions=["suite 'weat'", str(store), "changed while it was read"])
    assert "rewritten" in message and _no_results(out)
    assert run_emb("validate", store).code == 0  # the new suite itself is whole
    assert _analyze(store, tmp_path / "again").code == 0  # and is read once it stands still


# -- reserved names, shard counts -----------------------------------------------------------------
def _vectors(tmp_path: Path) -> Path:
    """A tiny word2vec text file (a static 'model': no torch, no download)."""
    rng = np.random.default_rng(0)
    words = ["love", "hate", "peace", "war", "joy", "pain"]
    lines = [f"{len(words)} 8"] + [
        w + " " + " ".join(f"{v:.4f}" for v in rng.standard_normal(8)) for w in words]
    path = tmp_path / "tiny.vec"
    path.write_text("\n".join(lines) + "\n")
    return path


def _suite_file(tmp_path: Path, *, labels: dict, n: int = 6) -> Path:
    words = ["love", "hate", "peace", "war", "joy", "pain"][:n]
    items = [{"context": f"This is {w}.", "word": w, "labels": labels} for w in words]
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"name": "words", "items": items}))
    return path


@pytest.mark.parametrize("label", ["_progress", "n_tokens", "cut_start"])
def test_a_label_named_like_the_stores_own_nodes_is_refused_before_writing(
    tmp_path: Path, label: str
) -> None:
    vectors, suite = _vectors(tmp_path), _suite_file(tmp_path, labels={label: 1})
    target = tmp_path / "v.zarr"
    for _ in range(2):  # and again: a re-run meets the same refusal, nothing half-written
        outcome = run_emb("extract", "-m", vectors, "-s", suite, "--store", target, "--quiet")
        assert_refused(outcome, codes=(1,), mentions=[label, "SuiteError", "rename the label"])
        assert not target.exists()


def test_a_shard_count_beyond_the_suites_windows_is_refused_before_writing(tmp_path: Path) -> None:
    vectors, suite = _vectors(tmp_path), _suite_file(tmp_path, labels={})
    target = tmp_path / "v.zarr"
    outcome = run_emb("extract", "-m", vectors, "-s", suite, "--store", target, "--quiet",
                      "--shard", "1/100000")
    assert_refused(outcome, codes=(1,), mentions=["--shard 1/100000", "1 compute window",
                                                  "N <= 1"])
    assert not target.exists()


def test_emb_info_summarises_many_unfinished_shards(tmp_path: Path) -> None:
    path = str(tmp_path / "s.zarr")
    extract(FakeRunner(), words_suite(200), path, progress=False, block_size=16, window_blocks=1,
            shard="3/20")
    result = CliRunner().invoke(main, ["info", path])
    shard_lines = [line for line in result.output.splitlines() if "shard" in line]
    assert len(shard_lines) == 9, result.output  # 8 named, then one summary
    assert re.search(r"… and \d+ more unfinished shards .*; \d+ of 20 shards done", shard_lines[-1])
    validate = CliRunner().invoke(main, ["validate", path])
    assert validate.exit_code == 1 and "more unfinished shards" in validate.output
    assert validate.output.count("shard ") <= 10, validate.output



def test_the_suite_schema_reserves_every_name_of_the_data_model() -> None:
    """A label becomes an array of the suite group: the schema refuses the store's own names
    when the suite is read (``_progress`` and ``n_tokens`` were missing), declared once in
    ``datamodel.RESERVED_NAMES``."""
    from emb.schemas import datamodel as dm
    from emb.schemas import load_schema

    names = load_schema("suite")["$defs"]["item"]["properties"]["labels"]["propertyNames"]
    assert set(names["not"]["enum"]) == dm.RESERVED_NAMES
    assert {dm.PROGRESS_GROUP, dm.EMBEDDING, *dm.DIMS, *dm.ITEM_COORDS} <= dm.RESERVED_NAMES
