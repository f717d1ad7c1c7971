"""``emb info``: each suite's size per item from its own written blocks (issue 24: one store-wide
average was printed for every suite, even one with 0 of 29 blocks written)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import emb
from emb.store import SuiteWriter, open_for_writing
from emb.store.store import describe
from tests.analyses._synthetic import vast_dataset, weat_dataset, write_store


def _shard_bytes(store: Path, suite: str) -> int:
    return sum(p.stat().st_size for p in (store / suite / "embedding" / "c").rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete ``weat`` and ``vast`` (sizes that differ per item), and a ``late`` suite
    opened but with no block written (an extraction stopped at once)."""
    path = tmp_path_factory.mktemp("info") / "toy.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_store(path, {"weat": weat_dataset(), "vast": vast_dataset(n_words=60)}, model_id="toy")
        ds = weat_dataset(n_layers=2)
        _, root = open_for_writing(str(path), model={**ds.attrs["model"], "model_id": "toy"})
        SuiteWriter.open(str(path), root, name="late", coords=ds.drop_vars("embedding"),
                         shape=ds["embedding"].shape, storage_dtype="float32",
                         suite_attrs={**ds.attrs["suite"], "name": "late"},
                         extraction_attrs=ds.attrs["extraction"])
    return path


def test_each_suite_has_its_own_size_per_item(store: Path) -> None:
    info = emb.open_store(str(store)).info()
    suites = {s.name: s for s in info.suites}
    for name in ("weat", "vast"):
        s = suites[name]
        assert s.items_written == s.n_items
        assert s.bytes_written == _shard_bytes(store, name)  # counted by hand from the files
        assert s.bytes_per_item == pytest.approx(_shard_bytes(store, name) / s.n_items)
    assert suites["vast"].bytes_per_item > 1.5 * suites["weat"].bytes_per_item  # 16 vs 8 vectors
    late = suites["late"]
    assert late.items_written == 0 and late.bytes_per_item is None
    text = describe(info)
    lines = {line.split(":")[0].split()[-1]: line for line in text.splitlines() if line.startswith("suite")}
    weat_kib = suites["weat"].bytes_per_item
    assert f"{int(weat_kib)} B per item" in lines["weat"]
    assert f"{suites['vast'].bytes_per_item / 1024:.1f} KiB per item" in lines["vast"]
    assert "no blocks written" in lines["late"] and "per item" not in lines["late"]
    as_json = {d["name"]: d for d in info.to_dict()["suites"]}
    assert as_json["weat"]["bytes_per_item"] == pytest.approx(suites["weat"].bytes_per_item)
    assert as_json["late"]["bytes_per_item"] is None and as_json["late"]["items_written"] == 0
