"""Targets at position 0 of a causal model: recorded per setting in the store at extraction, and
warned about by every analysis of those vectors, per suite and setting (issue 24)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from click.testing import CliRunner

import emb
from emb.cli.main import main
from emb.extraction.pipeline import extract
from emb.stimuli.suites import build_suite

QUICK = {"tests": ["WEAT1"], "n_permutations": 100, "exact_limit": 0, "n_bootstrap": 0}


@pytest.fixture(scope="module")
def weat_stores(gpt2_runner, tmp_path_factory):
    root = tmp_path_factory.mktemp("position0")
    suite = build_suite("weat", select=["WEAT1"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        extract(gpt2_runner, [suite], str(root / "plain.zarr"), progress=False)
        extract(gpt2_runner, [suite], str(root / "bos.zarr"), progress=False, bos=True)
    return root / "plain.zarr", root / "bos.zarr"


def test_the_store_records_position_0_per_setting_with_items_and_fix(weat_stores):
    ds = emb.open_store(str(weat_stores[0])).dataset("weat")
    record = ds.attrs["extraction"]["position_0"]
    at_zero = ds.token_start.values == 0  # independent of the record: the stored token spans
    setting = ds.setting.values.astype(str)
    assert record["n"] == int(at_zero.sum()) == 100 and record["of"] == ds.sizes["item"] == 200
    for name in ("alone", "bleached"):
        mine = setting == name
        assert record["by_setting"][name] == {
            "n": int(at_zero[mine].sum()), "of": int(mine.sum()),
            "words": list(dict.fromkeys(ds.word.values[mine & at_zero].astype(str)))[:20]}
    assert record["by_setting"]["alone"]["n"] == 100 and record["by_setting"]["bleached"]["n"] == 0
    flagged = np.zeros(ds.sizes["item"], dtype=bool)
    for start, stop in record["items"]:
        flagged[start:stop] = True
    np.testing.assert_array_equal(flagged, at_zero)
    assert record["fix"].startswith("--bos prepends the tokenizer's BOS token '<|endoftext|>'")
    # with a BOS token first: recorded as none
    ok = emb.open_store(str(weat_stores[1])).dataset("weat").attrs["extraction"]["position_0"]
    assert ok["n"] == 0 and ok["items"] == [] and ok["by_setting"]["alone"]["n"] == 0


def test_every_analysis_summary_warns_per_suite_and_setting(weat_stores):
    run = emb.analyze("weat", {"gpt2": str(weat_stores[0])}, **QUICK)
    notes = [n for n in run.summary.notes if "position 0" in n]
    assert len(notes) == 1
    assert ("100 of 100 targets of suite 'weat' (setting alone) sit at position 0 of causal "
            "model" in notes[0])
    assert "re-extract: --bos prepends the tokenizer's BOS token '<|endoftext|>'" in notes[0]
    assert "bleached" not in notes[0]
    # only the settings analysed: bleached alone has no target at position 0
    only = emb.analyze("weat", str(weat_stores[0]), settings=["bleached"], **QUICK)
    assert not [n for n in only.summary.notes if "position 0" in n]
    # the store extracted with --bos: nothing to say
    fixed = emb.analyze("weat", str(weat_stores[1]), **QUICK)
    assert not [n for n in fixed.summary.notes if "position 0" in n]
    # two models: each named
    both = emb.analyze("weat", {"plain": str(weat_stores[0]), "bos": str(weat_stores[1])}, **QUICK)
    lines = [n for n in both.summary.notes if "position 0" in n]
    assert len(lines) == 1 and lines[0].startswith("warning: plain: 100 of 100 targets")


def test_the_cli_prints_it_and_the_sidecar_keeps_it(weat_stores, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["analyze", "weat", "--store", str(weat_stores[0]), "--test", "WEAT1",
               "--n-permutations", "100", "--exact-limit", "0", "--n-bootstrap", "0",
               "--no-plots", "--quiet", "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "100 of 100 targets of suite 'weat' (setting alone) sit at position 0" in result.output
    meta = json.loads(next(out.glob("*.json")).read_text())
    assert any("(setting alone) sit at position 0" in n for n in meta["summary"]["notes"])


def test_the_fix_names_the_real_remedy_for_each_tokenizer():
    from types import SimpleNamespace

    from emb.extraction._prepared import position_zero_fix

    # SmolLM2's GGUF: the BOS token is a chat marker, --bos does not restore WEAT 'alone'
    chat = position_zero_fix(SimpleNamespace(bos_token="<|im_start|>", bos_token_id=1))
    assert "chat marker" in chat and "--bos-token '<|endoftext|>'" in chat
    plain = position_zero_fix(SimpleNamespace(bos_token="<s>", bos_token_id=1))
    assert plain.startswith("--bos prepends the tokenizer's BOS token '<s>'")
    none = position_zero_fix(SimpleNamespace(bos_token=None, bos_token_id=None))
    assert none.startswith("this tokenizer has no BOS token: --bos-token TOKEN")
