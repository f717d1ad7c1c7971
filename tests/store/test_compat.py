"""Stores stay readable across versions, and plain xarray reads ordinary strings.

``tests/fixtures/store_v1.zarr.zip`` was written by emb before store schema 2 (see the README
there); schema 2 stores text as UTF-8 bytes tagged ``_Encoding: utf-8``, which plain xarray
decodes to ``str`` objects.  ``tests/fixtures/store_v2.zarr.zip`` was written by the emb of
store schema 2 from the same suite and model, ``store_v3.zarr.zip`` by the emb of store schema 3
(a CRC-32C per inner chunk, a generation id per layout); every later emb must read them all (the
rule is in the README), and a store of a schema this emb does not know is refused in one line.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr
from click.testing import CliRunner

import emb
from emb.cli.main import main
from emb.errors import StoreError
from emb.extraction.pipeline import extract
from emb.schemas import datamodel as dm
from tests.fakes import FakeRunner
from tests.store.test_pipeline import words_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V1 = FIXTURES / "store_v1.zarr.zip"
V2 = FIXTURES / "store_v2.zarr.zip"
V3 = FIXTURES / "store_v3.zarr.zip"
V4 = FIXTURES / "store_v4.zarr.zip"
WORDS = ["love", "war", "café", "love", "unbelievably"]


def test_v1_store_reads_with_emb_as_ordinary_strings():
    store = emb.open_store(str(V1))
    assert store.suites == ("mini",) and store.root.attrs["emb_schema_version"] == 1
    report = store.validate(deep=True)
    assert report.status == "complete" and "without a manifest" in " ".join(report.notes)
    ds = store.dataset("mini")
    assert ds.embedding.shape == (5, 3, 4, 32) and np.isfinite(ds.embedding.values).all()
    assert list(ds.word.values) == WORDS and all(type(w) is str for w in ds.word.values)
    assert list(ds.word.values.astype(str)) == WORDS and list(ds.pooling.values) == list(dm.POOLINGS)
    assert ds.context.values[2] == "Un café naïve, s'il vous plaît"
    assert ds.valence.values[4] != ds.valence.values[4]  # null label → NaN
    assert store.info().complete


def test_v1_store_reads_with_plain_xarray():
    ds = xr.open_zarr(zarr.storage.ZipStore(V1, mode="r"), group="mini")
    assert ds.embedding.shape == (5, 3, 4, 32)
    # schema 1 text is zarr's `string` type, numpy 2 StringDType under plain xarray: comparisons
    # work, astype(str) does not (what schema 2 fixes)
    assert list(ds.word.values == "café") == [False, False, True, False, False]
    assert list(ds.word.values.astype(object)) == WORDS


def test_plain_xarray_reads_ordinary_strings_from_a_new_store(tmp_path):
    path = tmp_path / "s.zarr"
    suite = words_suite(4)
    extract(FakeRunner(), suite, str(path), progress=False)
    ds = xr.open_zarr(str(path), group="s")
    # schema 4: text is zarr's `string` type, numpy StringDType under plain xarray (xarray's own
    # zarr v3 strings; object arrays of str with numpy 2.0 and xarray 2025.8, the declared floors);
    # every element is a str, and a scalar selection is one too
    words = ds.word.values
    assert words.dtype.kind in "TO" and all(type(w) is str for w in words.tolist())
    assert list(words.astype(object)) == [it.word for it in suite.items]
    assert ds.isel(item=3).word.values.item() == "w3"
    assert int((ds.word == "w1").sum()) == 2
    assert list(ds.pooling.values) == list(dm.POOLINGS)
    assert ds.sel(pooling="mean").embedding.shape == (8, 4, 8)
    frame = ds[["word", "setting"]].reset_coords().to_dataframe()
    assert frame.word.tolist() == list(words) and pd.api.types.is_string_dtype(frame.setting)
    coords = ds.drop_vars("embedding").reset_coords()[["word", "context", "setting"]].load()
    coords.attrs = {}
    # netCDF: with xarray 2025.8 (the floor) the zarr encoding (dtype StringDType) must be dropped
    coords = coords.drop_encoding()
    coords.to_netcdf(tmp_path / "coords.nc")
    with xr.open_dataset(tmp_path / "coords.nc") as back:
        assert list(back.word.values) == list(words)
    # and zarr itself gives the strings, of the zarr v3 `string` data type
    arr = zarr.open_group(str(path), mode="r")["s/word"]
    assert arr.metadata.to_dict()["data_type"] == "string" and arr[0] == "w0"
    assert "_Encoding" not in arr.attrs


def test_v2_store_reads_and_holds_the_v1_vectors():
    store = emb.open_store(str(V2))
    assert store.suites == ("mini",) and store.root.attrs["emb_schema_version"] == 2
    report = store.validate(deep=True)
    assert report.status == "complete" and not report.notes  # schema 2 has its manifest
    ds = store.dataset("mini")
    assert ds.embedding.dtype == np.float16 and ds.embedding.shape == (5, 3, 4, 32)
    assert list(ds.word.values) == WORDS and all(type(w) is str for w in ds.word.values)
    assert ds.context.values[2] == "Un café naïve, s'il vous plaît"
    assert ds.valence.values[4] != ds.valence.values[4]  # null label → NaN
    # the same suite and the same seeded model as the v1 fixture: the same vectors, bit for bit
    np.testing.assert_array_equal(ds.embedding.values, emb.open_store(str(V1)).dataset("mini").embedding.values)
    # and plain xarray reads it with ordinary strings
    plain = xr.open_zarr(zarr.storage.ZipStore(V2, mode="r"), group="mini", consolidated=False)
    assert list(plain.word.values.astype(str)) == WORDS


def test_v3_store_reads_verified_and_holds_the_v1_vectors():
    store = emb.open_store(str(V3))
    assert store.suites == ("mini",) and store.root.attrs["emb_schema_version"] == 3
    assert store.validate(deep=True).status == "complete"
    ds = store.dataset("mini")
    assert ds.attrs["emb_schema_version"] == 3 and len(ds.attrs["generation"]) == 32
    np.testing.assert_array_equal(ds.embedding.values, emb.open_store(str(V1)).dataset("mini").embedding.values)
    assert list(ds.word.values) == WORDS
    # the inner chunks carry zarr's crc32c codec, which plain zarr/xarray check too
    zstore = zarr.storage.ZipStore(V3, mode="r")
    codecs = zarr.open_array(zstore, path="mini/embedding", mode="r").metadata.to_dict()["codecs"]
    inner = [c["name"] for c in codecs[0]["configuration"]["codecs"]]
    assert inner == ["bytes", "blosc", "crc32c"]
    plain = xr.open_zarr(zstore, group="mini")
    np.testing.assert_array_equal(plain.embedding.values, ds.embedding.values)


def test_v4_store_reads_as_the_older_ones_and_plain_xarray_selects_one_item():
    store = emb.open_store(str(V4))
    assert store.suites == ("mini",) and store.root.attrs["emb_schema_version"] == 4
    assert store.validate(deep=True).status == "complete"
    ds = store.dataset("mini")
    np.testing.assert_array_equal(ds.embedding.values, emb.open_store(str(V1)).dataset("mini").embedding.values)
    for old in (V1, V2, V3):  # every schema: the same coordinates, text as str
        before = emb.open_store(str(old)).dataset("mini")
        for name in ds.coords:
            xr.testing.assert_identical(before[name].variable, ds[name].variable)
    plain = xr.open_zarr(zarr.storage.ZipStore(V4, mode="r"), group="mini")
    assert plain.isel(item=2).context.values.item() == "Un café naïve, s'il vous plaît"
    assert plain.word.values.tolist() == WORDS


@pytest.mark.parametrize(("fixture", "version"), [(V1, 1), (V2, 2), (V3, 3), (V4, 4)])
def test_info_shows_the_schema_version(fixture, version):
    text = CliRunner().invoke(main, ["info", str(fixture)])
    assert text.exit_code == 0 and f"schema    {version} (store schema version" in text.output
    as_json = CliRunner().invoke(main, ["info", "--json", str(fixture)])
    assert json.loads(as_json.output)["schema_version"] == version


def test_a_newer_schema_is_refused_in_one_line(tmp_path):
    copy = tmp_path / "future.zarr"
    with zipfile.ZipFile(V2) as zf:
        zf.extractall(copy)
    newer = max(dm.READABLE_SCHEMA_VERSIONS) + 1
    meta = json.loads((copy / "zarr.json").read_text())
    meta["attributes"][dm.ATTR_SCHEMA_VERSION] = newer
    (copy / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(StoreError, match=f"store schema version {newer}.*upgrade emb"):
        emb.open_store(str(copy))
    for args in (["info", str(copy)], ["analyze", "vast", "--store", str(copy), "--suite", "mini",
                                       "--out", str(tmp_path / "out")]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1 and "upgrade emb" in result.output
        assert len(result.output.strip().splitlines()) == 1 and result.exception.__class__ is SystemExit
    result = CliRunner().invoke(main, ["validate", str(copy)])
    assert result.exit_code == 2 and "upgrade emb" in result.output


@pytest.mark.parametrize(("fixture", "version"), [(V1, 1), (V2, 2), (V3, 3), (V4, 4)])
def test_every_schema_is_presented_as_the_current_one(fixture, version):
    """The fixture of each schema (the same suite, the same seeded model) opens as the current
    schema's: the same coordinates (text as ``str``), the same vectors bit for bit; only the
    group's own record of its schema (and what a schema added: a generation id) tells them
    apart. The stored bytes are untouched (:mod:`emb.store._compat` presents them when opened)."""
    from emb.store import _compat

    store = emb.open_store(str(fixture))
    ds, current = store.dataset("mini"), emb.open_store(str(V4)).dataset("mini")
    assert ds.attrs[dm.ATTR_SCHEMA_VERSION] == version
    assert ds.embedding.dtype == current.embedding.dtype and ds.embedding.dims == current.embedding.dims
    assert ds.embedding.values.tobytes() == current.embedding.values.tobytes()  # bit for bit
    assert set(ds.coords) == set(current.coords)
    for name in current.coords:
        xr.testing.assert_identical(ds[name].variable, current[name].variable)
    attrs = dict(zarr.open_group(zarr.storage.ZipStore(fixture, mode="r"), path="mini", mode="r").attrs)
    assert _compat.coordinate_names(attrs) == tuple(attrs["coordinates"].split())
    assert _compat.manifest_written(attrs) == (version > 1)
    assert ds.attrs[dm.ATTR_SUITE] == current.attrs[dm.ATTR_SUITE]


def test_the_presentation_of_older_text_labels_and_coordinates():
    from emb.store import _compat

    words = ["love", "café", ""]
    for stored in (np.array([w.encode() for w in words], dtype=object),  # schemas 2, 3
                   np.array(words, dtype=np.dtypes.StringDType()),  # schemas 1, 4
                   np.array(words), np.array([w.encode() for w in words])):
        text = _compat.text(stored)
        assert text.dtype == object and text.tolist() == words and all(type(w) is str for w in text)
    assert _compat.is_text(np.dtype(object), {"_Encoding": "utf-8"})
    assert _compat.is_text(np.dtypes.StringDType(), {}) and not _compat.is_text(np.dtype(object), {})
    flags = xr.Variable(("item",), np.array(["true", "false", "true"], dtype=object), {"a": 1})
    assert _compat.label("excluded", flags).values.tolist() == [True, False, True]
    assert _compat.label("excluded", flags).attrs == {"a": 1}
    assert _compat.label("word", flags) is flags  # the data model's own names are never labels
    mixed = xr.Variable(("item",), np.array(["true", ""], dtype=object))
    assert _compat.label("note", mixed) is mixed
    assert _compat.coordinate_names({dm.ATTR_SCHEMA_VERSION: 1}) == dm.ITEM_COORDS
    assert _compat.coordinate_names({"coordinates": "word valence"}) == ("word", "valence")
    assert not _compat.manifest_written({dm.ATTR_SCHEMA_VERSION: 1})
    assert _compat.manifest_written({dm.ATTR_SCHEMA_VERSION: dm.STORE_SCHEMA_VERSION})


def test_no_module_but_the_compat_one_branches_on_the_schema_version():
    """A comparison of a schema version with a schema's number (``version != 1``) sits in
    :mod:`emb.store._compat` alone; elsewhere the version is only checked to be readable."""
    import ast

    src = Path(emb.__file__).parent
    numbers = set(dm.READABLE_SCHEMA_VERSIONS)
    found = []
    for path in sorted(src.rglob("*.py")):
        if path.name == "_compat.py" and path.parent.name == "store":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Compare):
                continue
            text = ast.unparse(node)
            constants = [c.value for c in ast.walk(node) if isinstance(c, ast.Constant)]
            if "schema" in text.lower() or "version" in text.lower():
                if any(type(c) is int and c in numbers for c in constants):
                    found.append(f"{path.relative_to(src)}:{node.lineno}: {text}")
    assert not found, found
