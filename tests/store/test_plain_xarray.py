"""A store written by emb opened with plain xarray: every label under every common operation.

The suite ``tests/fixtures/store_labels_suite.yaml`` has WEAT-like labels: text (``test``,
``role``, ``group``, ``note`` with "" for missing), a number (``frequency``, null → NaN) and a
boolean spelt "true"/"false" (``excluded``), as the suite data model spells booleans.  The
expected values are taken from the suite's items, never from the store.
``store_v3_labels.zarr.zip`` is the same suite written by the emb of store schema 3 (text as
UTF-8 bytes, ``excluded`` as the strings "true"/"false"; see the fixtures' README): emb must read
it exactly as it reads the suite written today.
"""

from __future__ import annotations

import math
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr

import emb
from emb.extraction.pipeline import extract
from emb.schemas import datamodel as dm
from emb.stimuli.suites import Suite, load_suite
from tests.fakes import FakeRunner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SUITE = FIXTURES / "store_labels_suite.yaml"
V3_LABELS = FIXTURES / "store_v3_labels.zarr.zip"
TEXT_LABELS = ("test", "role", "group", "note")
#: the item coordinates every suite has, with their types
ITEM_TEXT = ("word", "context", "setting", "stimulus_set")
ITEM_INTEGERS = ("char_start", "char_end", "n_subtokens", "token_start", "token_end", "n_tokens")


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(SUITE)


@pytest.fixture(scope="module")
def store_path(suite, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plain") / "gpt2.zarr"
    extract(FakeRunner(), suite, str(path), progress=False)
    return path


def expected(suite: Suite, name: str) -> list:
    """A column as the suite gives it: item fields, labels ("true"/"false" as booleans)."""
    if name in ("word", "context", "setting", "stimulus_set", "char_start", "char_end"):
        return [getattr(it, name) for it in suite.items]
    values = [it.labels[name] for it in suite.items]
    if name == "excluded":
        return [{"true": True, "false": False}[v] for v in values]
    return values


def same(a, b) -> bool:
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("consolidated", [None, False])
def test_every_label_has_its_type_and_scalar_and_slice_selection(suite, store_path, consolidated):
    ds = xr.open_zarr(store_path, group="weat", consolidated=consolidated)
    assert ds.excluded.dtype == bool and ds.frequency.dtype == np.float64
    for name in ITEM_INTEGERS:
        assert ds[name].dtype.kind == "i", name
    for name in (*ITEM_TEXT, *TEXT_LABELS):
        assert ds[name].dtype.kind in "OT", name  # str objects or numpy StringDType
    for name in (*ITEM_TEXT, *TEXT_LABELS, "excluded", "frequency", "char_start", "char_end"):
        want = expected(suite, name)
        for i, value in enumerate(want):
            got = ds.isel(item=i)[name].values.item()  # scalar selection (raised on schema 3)
            assert type(got) is type(value) and same(got, value), (name, i, got, value)
        part = ds.isel(item=slice(1, 4))[name].values.tolist()
        assert all(same(g, w) for g, w in zip(part, want[1:4], strict=True)), name
    assert ds.isel(item=3).context.values.item() == "Un café naïve, s'il vous plaît"


def test_where_drop_on_every_label_once_labels_are_in_memory(suite, store_path):
    ds = xr.open_zarr(store_path, group="weat")
    # a label opened by plain xarray is a dask array, and xarray refuses to index with one
    with pytest.raises(KeyError, match="boolean dask array"):
        ds.where(ds.setting == "bleached", drop=True)
    # the call the docs give: the labels into memory once (they are small), then as usual
    ds = ds.assign_coords({name: ds[name].compute() for name in ds.coords})
    for name in (*ITEM_TEXT, *TEXT_LABELS, "excluded", "frequency"):
        want = expected(suite, name)
        value = want[1]
        kept = ds.where(ds[name] == value, drop=True)
        rows = [i for i, v in enumerate(want) if same(v, value)]
        assert kept.sizes["item"] == len(rows), name
        assert kept.word.values.tolist() == [suite.items[i].word for i in rows], name
    kept = ds.where(~ds.excluded, drop=True)
    assert kept.word.values.tolist() == [it.word for it in suite.items if it.labels["excluded"] == "false"]
    kept = ds.where(ds.frequency > 5, drop=True)
    assert kept.word.values.tolist() == ["rose", "ant", "war"]
    # the embedding stays lazy and follows the selection
    sub = ds.sel(layer=1, pooling="mean").where(ds.setting == "bleached", drop=True)
    full = xr.open_zarr(store_path, group="weat").embedding.sel(layer=1, pooling="mean").values
    np.testing.assert_array_equal(sub.embedding.values, full[:3])


def test_sel_by_a_label_through_an_index(suite, store_path):
    ds = xr.open_zarr(store_path, group="weat")
    bleached = ds.set_xindex("setting").sel(setting="bleached")
    assert bleached.word.values.tolist() == ["rose", "tulip", "ant"]
    one = ds.set_xindex("word").sel(word="café")
    assert one.context.values.item() == suite.items[3].context and one.role.values.item() == "A"
    pairs = ds.set_xindex(["test", "role"], xr.indexes.PandasMultiIndex).sel(test="WEAT1", role="X")
    assert pairs.word.values.tolist() == ["rose", "tulip"]
    kept = ds.set_xindex("excluded").sel(excluded=False)
    assert kept.word.values.tolist() == ["rose", "ant", "café", "war"]


def test_to_dataframe_gives_strings_booleans_and_numbers(suite, store_path):
    ds = xr.open_zarr(store_path, group="weat")
    frame = ds.drop_dims(["layer", "pooling", "feature", "subtoken"]).reset_coords().to_dataframe()
    assert len(frame) == len(suite.items)
    assert frame.excluded.dtype == bool and frame.frequency.dtype == np.float64
    assert pd.api.types.is_integer_dtype(frame.char_start)
    for name in (*ITEM_TEXT, *TEXT_LABELS):
        assert pd.api.types.is_string_dtype(frame[name]), name
        assert frame[name].tolist() == expected(suite, name), name
    assert frame.excluded.tolist() == expected(suite, "excluded")
    assert frame.frequency.isna().tolist() == [False, False, False, True, False]


def test_a_boolean_label_is_stored_as_bool_and_nothing_else_is(store_path):
    group = zarr.open_group(str(store_path), mode="r", path="weat")
    types = {name: group[name].metadata.to_dict()["data_type"] for name in
             ("excluded", "note", "word", "frequency", "setting")}
    assert types == {"excluded": "bool", "note": "string", "word": "string",
                     "frequency": "float64", "setting": "string"}
    assert group.attrs[dm.ATTR_SCHEMA_VERSION] == dm.STORE_SCHEMA_VERSION == 4


def test_only_a_label_of_nothing_but_true_and_false_becomes_bool(tmp_path):
    from tests.store.test_pipeline import item, make_suite

    items = [
        item("This is true.", "true", flag="true", mixed="true", upper="True"),
        item("This is false.", "false", flag="false", mixed="", upper="False"),
    ]
    path = tmp_path / "s.zarr"
    extract(FakeRunner(), make_suite(items), str(path), progress=False)
    plain = xr.open_zarr(path, group="s")
    assert plain.flag.dtype == bool and plain.flag.values.tolist() == [True, False]
    # a missing value (""), another spelling and the item's own fields stay text
    for name in ("mixed", "upper", "word"):  # StringDType (object of str at the declared floors)
        assert plain[name].dtype.kind in "TO" and all(type(v) is str for v in plain[name].values.tolist()), name
    ds = emb.open_store(str(path)).dataset("s")
    assert ds.flag.dtype == bool and ds.mixed.values.tolist() == ["true", ""]
    assert ds.word.values.tolist() == ["true", "false"] and ds.upper.values.tolist() == ["True", "False"]


def test_an_old_store_reads_with_emb_as_the_new_one(suite, store_path):
    old_store, new_store = emb.open_store(str(V3_LABELS)), emb.open_store(str(store_path))
    assert old_store.validate(deep=True).status == "complete"
    assert new_store.validate(deep=True).status == "complete"
    old, new = old_store.dataset("weat"), new_store.dataset("weat")
    assert old.attrs[dm.ATTR_SCHEMA_VERSION] == 3 and new.attrs[dm.ATTR_SCHEMA_VERSION] == 4
    assert set(old.coords) == set(new.coords)
    for name in new.coords:
        xr.testing.assert_identical(old[name].variable, new[name].variable)
        assert old[name].dtype == new[name].dtype, name
        if old[name].dtype == object:
            assert all(type(v) is str for v in old[name].values.ravel()), name
    assert old.excluded.values.tolist() == expected(suite, "excluded")
    np.testing.assert_array_equal(old.embedding.values, new.embedding.values)
    # the old store itself is untouched: its label is still the text emb wrote then
    with zipfile.ZipFile(V3_LABELS) as zf:
        meta = zf.read("weat/excluded/zarr.json").decode()
    assert '"variable_length_bytes"' in meta and '"_Encoding": "utf-8"' in meta


def test_an_old_store_under_plain_xarray_selects_by_list(suite):
    # schema 2-3 text (UTF-8 bytes): plain xarray decodes slices and lists, not a scalar
    # selection (zarr's bug, which schema 4 avoids); the docs give isel(item=[i])
    ds = xr.open_zarr(zarr.storage.ZipStore(V3_LABELS, mode="r"), group="weat")
    assert ds.isel(item=[3]).context.values.tolist() == [suite.items[3].context]
    assert ds.isel(item=slice(0, 2)).excluded.values.tolist() == ["false", "true"]


def test_label_mask_matches_a_boolean_label_by_its_spelling_too(store_path):
    from emb.analyses._select import label_mask

    for ds in (emb.open_store(str(V3_LABELS)).dataset("weat"), emb.open_store(str(store_path)).dataset("weat")):
        assert label_mask(ds, excluded="true").tolist() == [False, True, False, False, False]
        assert label_mask(ds, excluded=["false"]).tolist() == label_mask(ds, excluded=False).tolist()
        assert label_mask(ds, excluded=False).sum() == 4


DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules" / "plain-xarray.md"


def test_the_docs_examples_run(store_path, monkeypatch):
    blocks = re.findall(r"^```python\n(.*?)^```", DOCS.read_text(encoding="utf-8"), flags=re.S | re.M)
    assert len(blocks) >= 6
    monkeypatch.chdir(store_path.parent)  # the docs open "gpt2.zarr", group "weat"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), namespace)  # noqa: S102 - our own docs
    # what the examples compute is what the suite holds
    assert namespace["x_words"] == ["rose", "tulip"]
    assert namespace["kept"].word.values.tolist() == ["rose", "ant", "café", "war"]
    assert namespace["frequent"].word.values.tolist() == ["rose", "ant", "war"]
    assert namespace["one"].context.values.item() == "Un café naïve, s'il vous plaît"
    assert namespace["items"].word.tolist() == ["rose", "tulip", "ant", "café", "war"]
    assert namespace["vectors"].shape == (5, 8)
