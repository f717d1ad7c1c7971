"""A schema-1 store (``tests/fixtures/store_v1.zarr.zip``) holds what its model gives, and a suite
added to it by this emb (schema 2) lives beside the old one (needs torch: the fixture's model is
rebuilt; the torch-free reading tests are in ``tests/store/test_compat.py``)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
import zarr

pytest.importorskip("torch")

import emb  # noqa: E402
from emb.extraction.pipeline import extract  # noqa: E402
from emb.schemas import datamodel as dm  # noqa: E402
from emb.stimuli.suites import load_suite  # noqa: E402
from tests import models  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V1 = FIXTURES / "store_v1.zarr.zip"
V2 = FIXTURES / "store_v2.zarr.zip"


def test_v1_vectors_are_what_the_model_gives(tmp_path):
    model = models.tiny_bert(tmp_path / "bert")
    suite = load_suite(FIXTURES / "store_v1_suite.yaml")
    fresh = tmp_path / "fresh.zarr"
    extract(str(model), suite, str(fresh), progress=False)
    old = emb.open_store(str(V1)).dataset("mini").embedding.values.astype(np.float32)
    new = emb.open_store(str(fresh)).dataset("mini").embedding.values.astype(np.float32)
    np.testing.assert_allclose(new, old, rtol=2**-9, atol=1e-3)

    # a suite added to the v1 store (same model) is written as schema 2; both read
    copy = tmp_path / "v1.zarr"
    with zipfile.ZipFile(V1) as zf:
        zf.extractall(copy)
    root = zarr.open_group(str(copy), mode="a", use_consolidated=False)
    fingerprint = emb.open_store(str(fresh)).model["fingerprint"]
    assert root.attrs["model"]["fingerprint"] == fingerprint  # seeded weights: the same model
    (r,) = extract(str(model), suite.__class__(name="mini2", items=suite.items), str(copy),
                   progress=False)
    assert r.n_copied == 5 and r.n_computed == 0  # reused from the v1 suite (its text decoded)
    store = emb.open_store(str(copy))
    assert store.suites == ("mini", "mini2") and store.validate(deep=True).status == "complete"
    groups = {n: zarr.open_group(str(copy / n), mode="r").attrs["emb_schema_version"] for n in store.suites}
    assert groups == {"mini": 1, "mini2": dm.STORE_SCHEMA_VERSION}
    np.testing.assert_array_equal(store.dataset("mini2").embedding.values,
                                  store.dataset("mini").embedding.values)


def test_v2_vectors_are_what_the_model_gives(tmp_path):
    """The schema-2 fixture holds what its model gives today (float16 storage: within its rounding,
    so a later torch with other last-bit numerics still passes, a changed pooling does not)."""
    model = models.tiny_bert(tmp_path / "bert")
    suite = load_suite(FIXTURES / "store_v1_suite.yaml")
    fresh = tmp_path / "fresh.zarr"
    extract(str(model), suite, str(fresh), progress=False)
    stored = emb.open_store(str(V2))
    new = emb.open_store(str(fresh))
    assert stored.model["fingerprint"] == new.model["fingerprint"]
    old = stored.dataset("mini").embedding.values.astype(np.float32)
    np.testing.assert_allclose(new.dataset("mini").embedding.values.astype(np.float32), old,
                               rtol=2**-9, atol=1e-3)
    for coord in ("word", "context", "setting", "char_start", "token_start", "n_tokens"):
        assert list(stored.dataset("mini")[coord].values) == list(new.dataset("mini")[coord].values)
