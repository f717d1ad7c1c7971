"""The position-0 warning from a store's provenance (issue 24): per model, suite and setting from
the ``position_0`` record; suite-wide from an older store's ``targets_at_position_0`` count;
nothing (and no error) from a store with neither."""

from __future__ import annotations

import copy
import warnings

import pytest

import emb
from emb.analyses import ANALYSES, run_analysis
from emb.analyses._provenance import extraction_notes
from tests.analyses._synthetic import weat_dataset, write_store

QUICK = {"tests": ["WEAT1"], "n_permutations": 100, "exact_limit": 0, "n_bootstrap": 0}


def _store(path, extraction_extra, *, drop=()):
    ds = weat_dataset()
    ds.attrs = copy.deepcopy(ds.attrs)
    ds.attrs["extraction"].update(extraction_extra)
    for key in drop:
        ds.attrs["extraction"].pop(key, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return str(write_store(path, {"weat": ds}, model_id="toy-causal"))


RECORD = {"n": 64, "of": 128,
          "by_setting": {"bleached": {"n": 0, "of": 64, "words": []},
                         "alone": {"n": 64, "of": 64, "words": ["flower0", "flower1"]}},
          "items": [[64, 128]], "fix": "--bos prepends the tokenizer's BOS token '<s>'"}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("notes")
    return {
        "new": _store(root / "new.zarr", {"targets_at_position_0": 64, "position_0": RECORD}),
        "old": _store(root / "old.zarr", {"targets_at_position_0": 64}),
        "none": _store(root / "none.zarr", {}, drop=("targets_at_position_0", "position_0")),
        "unk": _store(root / "unk.zarr", {"unknown_targets": {"n_items": 3, "words": ["flower0"]}}),
    }


def test_per_setting_from_the_record(stores):
    run = emb.analyze("weat", stores["new"], **QUICK)
    lines = extraction_notes(run.dataset)
    assert lines == [
        "warning: 64 of 64 targets of suite 'weat' (setting alone) sit at position 0 of causal "
        "model toy-causal (flower0, flower1, …): their states see no context and are degenerate, "
        "and so are the results of setting alone; re-extract: --bos prepends the tokenizer's "
        "BOS token '<s>'"]
    assert lines[0] in run.summary.notes
    assert not extraction_notes(emb.analyze("weat", stores["new"], settings=["bleached"],
                                            **QUICK).dataset)


def test_an_older_store_warns_suite_wide_and_a_store_without_record_not_at_all(stores):
    old = emb.analyze("weat", {"old": stores["old"], "none": stores["none"]}, **QUICK)
    lines = extraction_notes(old.dataset)
    assert len(lines) == 1
    assert lines[0].startswith("warning: old: 64 of 128 targets of suite 'weat' sit at position 0")
    assert "re-extract with --bos" in lines[0]
    none = emb.analyze("weat", stores["none"], **QUICK)
    assert extraction_notes(none.dataset) == []
    assert not [n for n in none.summary.notes if "position 0" in n]


def test_targets_made_of_the_unknown_token_are_repeated(stores):
    run = emb.analyze("weat", stores["unk"], **QUICK)
    assert ("warning: 3 of 128 targets of suite 'weat' tokenize to nothing but the unknown token "
            "(flower0): each gets that token's vector in context") in "\n".join(run.summary.notes)
    assert not [n for n in emb.analyze("weat", stores["none"], **QUICK).summary.notes
                if "unknown token" in n]


@pytest.mark.parametrize("name", sorted(ANALYSES))
def test_every_analysis_warns_from_its_result(name):
    """Every registered analysis keeps the store's extraction record in its result, so its
    summary warns: each example input's settings all flagged at position 0."""
    ds, options = ANALYSES[name].example()
    ds = ds.copy()
    settings = [str(s) for s in dict.fromkeys(ds["setting"].values.tolist())]
    n_of = {s: int((ds["setting"].values == s).sum()) for s in settings}
    record = {"n": ds.sizes["item"], "of": ds.sizes["item"], "items": [[0, ds.sizes["item"]]],
              "by_setting": {s: {"n": n, "of": n, "words": []} for s, n in n_of.items()},
              "fix": "FIX"}
    ds.attrs = {**copy.deepcopy(ds.attrs),
                "extraction": {**dict(ds.attrs.get("extraction", {})), "position_0": record}}
    result = run_analysis(name, {"toy": ds}, **options).compute()
    lines = extraction_notes(result)
    assert lines, f"{name}: its result lost the store's extraction record"
    assert all("sit at position 0" in line and line.endswith("re-extract: FIX") for line in lines)
