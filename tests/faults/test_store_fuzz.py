"""Fuzzing the store's readers (hypothesis): bit flips anywhere in a shard, and any JSON put in
place of any part of any metadata document.

The promises checked: a read gives the stored numbers or a CorruptStoreError, never other
numbers; validation always answers (never a traceback) and never calls an edited store complete;
opening a suite gives the stored numbers or an EmbError.  Crash signatures the fuzzer found are
kept as explicit cases at the end.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import emb
from emb.errors import CorruptStoreError, EmbError
from emb.extraction.pipeline import extract
from emb.store.validate import validate_store
from tests.fakes import FakeRunner
from tests.store.test_pipeline import words_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FUZZ = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str, np.ndarray]]:
    """A store of this emb (schema 3) and the schema-2 fixture: (path, suite, its vectors)."""
    base = tmp_path_factory.mktemp("fuzz")
    new = base / "new.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        extract(FakeRunner(), words_suite(20), str(new), progress=False, block_size=16)
    old = base / "old.zarr"
    with zipfile.ZipFile(FIXTURES / "store_v2.zarr.zip") as zf:
        zf.extractall(old)
    return {
        "new": (new, "s", emb.open_store(str(new)).dataset("s").embedding.values),
        "old": (old, "mini", emb.open_store(str(old)).dataset("mini").embedding.values),
    }


class _Copy:
    """A fresh copy of a store for one example (hypothesis runs many in one test)."""

    def __init__(self, source: Path) -> None:
        self.source = source

    def __enter__(self) -> Path:
        self.dir = Path(tempfile.mkdtemp())
        path = self.dir / self.source.name
        shutil.copytree(self.source, path)
        return path

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _read(path: Path, suite: str) -> np.ndarray:
    return emb.open_store(str(path)).dataset(suite).embedding.values


# -- bit rot ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["new", "old"])
@FUZZ
@given(data=st.data())
def test_a_flipped_shard_reads_as_stored_or_is_refused(stores, which: str, data: Any) -> None:
    source, suite, want = stores[which]
    shards = sorted(p.relative_to(source).as_posix()
                    for p in (source / suite / "embedding" / "c").rglob("*") if p.is_file())
    member = data.draw(st.sampled_from(shards), label="shard")
    size = (source / member).stat().st_size
    flips = data.draw(st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, 7)),
                               min_size=1, max_size=3, unique_by=lambda f: f[0]), label="flips")
    with _Copy(source) as path:
        raw = bytearray((path / member).read_bytes())
        for at, bit in flips:
            raw[at] ^= 1 << bit
        (path / member).write_bytes(bytes(raw))
        try:
            got = _read(path, suite)
        except CorruptStoreError as err:
            assert member in str(err) and "emb validate --deep" in str(err)
            return
        np.testing.assert_array_equal(got, want)  # never other numbers


# -- metadata --------------------------------------------------------------------------------------
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=6,
)
DOCUMENTS = ["zarr.json", "{s}/zarr.json", "{s}/embedding/zarr.json", "{s}/word/zarr.json",
             "{s}/_progress/zarr.json", "{s}/_progress/done/zarr.json"]


def _paths(doc: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every key path of a JSON document, the document itself first."""
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc[:4]):
            yield from _paths(value, (*prefix, i))


def _edited(doc: Any, path: tuple, value: Any, delete: bool) -> Any:
    if not path:
        return value
    doc = json.loads(json.dumps(doc))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


@pytest.mark.parametrize("which", ["new", "old"])
@FUZZ
@given(data=st.data())
def test_edited_metadata_is_never_complete_and_never_other_numbers(
    stores, which: str, data: Any
) -> None:
    source, suite, want = stores[which]
    member = data.draw(st.sampled_from(DOCUMENTS), label="document").format(s=suite)
    original = json.loads((source / member).read_text())
    where = data.draw(st.sampled_from(list(_paths(original))), label="path")
    delete = data.draw(st.booleans(), label="delete")
    doc = _edited(original, where, data.draw(JSON, label="value"), delete)
    if doc == original:
        return
    with _Copy(source) as path:
        (path / member).write_text(json.dumps(doc))
        report = validate_store(str(path))  # answers, whatever the document holds
        if member != "zarr.json" and not (which == "old" and member.endswith("done/zarr.json")):
            assert report.status != "complete", (member, where, doc)
        try:
            got = _read(path, suite)
        except EmbError:
            return
        np.testing.assert_array_equal(got, want)


# -- crash signatures the fuzzer found, kept as cases ---------------------------------------------
@pytest.mark.parametrize(
    ("member", "where", "value"),
    [
        # a manifest entry's size that is not a number: int('') / int(inf) / int(None) when the
        # reader built its list of objects to verify
        ("{s}/_progress/zarr.json", ("attributes", "manifest", "objects", "context/c/0", 0), ""),
        ("{s}/_progress/zarr.json", ("attributes", "manifest", "objects", "context/c/0", 0),
         float("inf")),
        ("{s}/_progress/zarr.json", ("attributes", "manifest", "objects", "context/c/0", 0), None),
        # the bookkeeping group's attributes not an object: 'int' object has no attribute 'get'
        ("{s}/_progress/zarr.json", ("attributes",), 1),
        # the suite group's attributes not an object: "argument of type 'int' is not iterable"
        # while listing the store's suites
        ("{s}/zarr.json", ("attributes",), 1),
    ],
    ids=["size-empty-text", "size-infinite", "size-null", "progress-attributes", "suite-attributes"],
)
@pytest.mark.parametrize("which", ["new", "old"])
def test_fuzzer_findings_are_corrupt_store_errors(stores, which, member, where, value) -> None:
    source, suite, _ = stores[which]
    member = member.format(s=suite)
    where = tuple(k.replace("context/c/0", "word/zarr.json") if isinstance(k, str) else k
                  for k in where)
    with _Copy(source) as path:
        doc = json.loads((path / member).read_text())
        (path / member).write_text(json.dumps(_edited(doc, where, value, False)))
        assert validate_store(str(path)).status == "corrupt"
        with pytest.raises(CorruptStoreError, match="emb validate"):
            _read(path, suite)
