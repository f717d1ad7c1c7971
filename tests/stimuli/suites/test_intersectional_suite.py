"""The ``intersectional`` suite (phrases equal to the authors' files, labels, training and lexicon
words) and the BOS handling it relies on: the suite's BOS request for causal models, and the
warning about targets at position 0 of a causal model."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter

import numpy as np
import pytest
from click.testing import CliRunner

import emb
from emb.cli.main import main
from emb.errors import EmbWarning, SuiteError
from emb.extraction.pipeline import extract
from emb.stimuli.suites import BUILTIN_SUITES, Suite, build_suite
from emb.stimuli.suites import intersectional as gen


@pytest.fixture(scope="module")
def suite(data_dir) -> Suite:
    return build_suite("intersectional", lexicon=[str(data_dir / "lexica" / "bellezza.csv")])


def _file_text(phrases: list[gen.Phrase]) -> bytes:
    return "".join(p.text + "\n" for p in phrases).encode("utf-8")


@pytest.mark.parametrize(
    ("make", "name", "count"),
    [(gen.experiment2_phrases, "experiment2_phrases.txt", 4096),
     (gen.experiment3_phrases, "experiment3_phrases.txt", 3840)],
)
def test_phrases_equal_the_authors_files_byte_for_byte(data_dir, make, name, count):
    shared = (data_dir / "intersectional" / name).read_bytes()
    ours = _file_text(make())
    assert len(make()) == count
    assert hashlib.sha256(ours).hexdigest() == hashlib.sha256(shared).hexdigest()
    assert ours == shared


def test_package_data_is_the_shared_file(data_dir):
    shared = (data_dir / "intersectional" / "attribute_pairs_and_svc_words.json").read_bytes()
    assert emb.data.path(gen.DATA_FILE).read_bytes() == shared
    doc = json.loads(shared)
    assert gen.SVC_PLEASANT == tuple(doc["svc_training_pleasant"])
    assert list(gen.PAIRS) == list(doc["attribute_pairs_table_order"])
    assert gen.SLOT_ORDER == ("age", "weight", "height", "intelligence", "education", "literacy",
                              "affluence", "race", "orientation", "religion", "gender", "sex")


def test_experiment2_items_are_labelled_with_every_slot(suite):
    items = [i for i in suite.items if i.stimulus_set == "experiment2"]
    assert len(items) == 4096 and {i.setting for i in items} == {"phrase"}
    for item in items:
        tokens = item.context.split(" ")
        assert item.target == "person" and item.char_end == len(item.context)
        assert tokens[0] == ("an" if tokens[1] == "old" else "a")
        for slot, category in enumerate(gen.SLOT_ORDER, start=1):
            assert item.labels[category] == tokens[slot]
            assert item.labels[f"{category}_position"] == slot
    for category, (a, b) in gen.PAIRS.items():
        counts = Counter(i.labels[category] for i in items)
        assert counts == {a: 2048, b: 2048}, category


def test_experiment3_items_carry_value_and_position(suite):
    items = [i for i in suite.items if i.stimulus_set == "experiment3"]
    assert len(items) == 3840 == math.factorial(5) * 2**5
    orders = Counter()
    for item in items:
        tokens = item.context.split(" ")
        assert tokens[0] == "a" and tokens[-1] == "person" and len(tokens) == 7
        order = []
        for category in gen.EXPERIMENT3_CATEGORIES:
            position = int(item.labels[f"{category}_position"])
            assert tokens[position] == item.labels[category] in gen.PAIRS[category]
            order.append(position)
        assert sorted(order) == [1, 2, 3, 4, 5]
        orders[tuple(order)] += 1
        for category in set(gen.PAIRS) - set(gen.EXPERIMENT3_CATEGORIES):
            assert item.labels[category] == "" and math.isnan(item.labels[f"{category}_position"])
    assert len(orders) == 120 and set(orders.values()) == {32}
    # every value sits at every position equally often
    for category in gen.EXPERIMENT3_CATEGORIES:
        seen = Counter((i.labels[category], i.labels[f"{category}_position"]) for i in items)
        assert set(seen.values()) == {3840 // 10}


def test_training_and_lexicon_words_alone(suite, data_dir):
    alone = [i for i in suite.items if i.setting == "alone"]
    by_set = Counter(i.stimulus_set for i in alone)
    assert by_set == {"pleasant": 25, "unpleasant": 25, "lexicon": 399}
    for item in alone:
        assert item.context == item.word == item.target and item.char_start == 0
    import pandas as pd

    table = pd.read_csv(data_dir / "lexica" / "bellezza.csv", keep_default_na=False, na_values=[""])
    lexicon = {i.word: i for i in alone if i.stimulus_set == "lexicon"}
    assert list(lexicon) == list(table["word"])
    for row in table.itertuples():
        item = lexicon[row.word]
        assert item.labels["lexicon"] == "bellezza" and item.labels["valence_raw"] == row.valence
        assert item.labels["valence"] == pytest.approx((row.valence - 1) * 2 + 1)  # 1-5 -> 1-9
    params = suite.parameters
    assert params["bos"] == "causal" and params["lexicon"]["name"] == "bellezza"
    assert params["counts"]["items"] == len(suite) == 4096 + 3840 + 50 + 399


def test_options_and_registry(data_dir):
    assert "intersectional" in BUILTIN_SUITES
    bare = build_suite("intersectional", causal_bos="no")
    assert bare.parameters["bos"] is None and bare.parameters["lexicon"] is None
    assert len(bare) == 4096 + 3840 + 50
    assert "no --lexicon" in BUILTIN_SUITES["intersectional"].warnings(bare)[0]
    path = str(data_dir / "lexica" / "bellezza.csv")
    with pytest.raises(SuiteError, match="one lexicon"):
        build_suite("intersectional", lexicon=[path, path])
    with pytest.raises(SuiteError, match=r"must be one of yes, no"):
        build_suite("intersectional", causal_bos="maybe")


# -- BOS and position 0 ----------------------------------------------------------------------------
def _small(suite: Suite, *, bos: str | None = "causal", n_phrases: int = 40) -> Suite:
    """The first phrases and every training word: a small suite with the same parameters."""
    items = [i for i in suite.items if i.stimulus_set == "experiment2"][:n_phrases]
    items += [i for i in suite.items if i.stimulus_set in ("pleasant", "unpleasant")]
    return Suite(name="intersectional", items=tuple(items), generator="intersectional",
                 parameters={**suite.parameters, "bos": bos})


def _extract(runner, suites, store, **kwargs):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        extract(runner, suites, str(store), progress=False, **kwargs)
    return [str(w.message) for w in caught if issubclass(w.category, EmbWarning)]


def test_causal_model_gets_bos_before_every_item_and_no_warning(gpt2_runner, suite, tmp_path):
    store = tmp_path / "g.zarr"
    caught = _extract(gpt2_runner, [_small(suite)], store)
    assert caught == []
    ds = emb.open_store(str(store)).dataset("intersectional")
    extraction = ds.attrs["extraction"]
    assert extraction["bos"] is True and extraction["bos_token_added"] is True
    assert extraction["bos_policy"] == "causal" and extraction["targets_at_position_0"] == 0
    alone = ds.setting.values == "alone"
    assert (ds.token_start.values[alone] == 1).all()  # after <|endoftext|>
    encoded = gpt2_runner.encode(["love"], [(0, 4)], bos=True)[0]
    assert int(encoded.input_ids[0]) == gpt2_runner.info.bos_token_id


def test_position_zero_is_warned_with_what_bos_changes(gpt2_runner, suite, tmp_path):
    caught = _extract(gpt2_runner, [_small(suite, bos=None)], tmp_path / "a.zarr")
    assert len(caught) == 1
    assert "50 of 90 targets sit at position 0 of causal model" in caught[0]
    assert "--bos prepends the tokenizer's BOS token '<|endoftext|>'" in caught[0]
    weat = build_suite("weat", select=["WEAT1"])
    caught = _extract(gpt2_runner, [weat], tmp_path / "b.zarr")
    assert len(caught) == 1 and "100 of 200 targets" in caught[0]  # the 'alone' setting
    assert _extract(gpt2_runner, [weat], tmp_path / "c.zarr", bos=True) == []
    stored = emb.open_store(str(tmp_path / "b.zarr")).dataset("weat").attrs["extraction"]
    assert stored["targets_at_position_0"] == 100 and stored["bos_policy"] == "tokenizer"


def test_run_bos_overrides_the_suite_and_stores_do_not_mix_bos(gpt2_runner, suite, tmp_path):
    store = tmp_path / "m.zarr"
    weat = build_suite("weat", select=["WEAT1"])
    _extract(gpt2_runner, [_small(suite), weat], store)
    opened = emb.open_store(str(store))
    inter, plain = opened.dataset("intersectional"), opened.dataset("weat")
    i = int(np.flatnonzero((inter.word.values == "love") & (inter.setting.values == "alone"))[0])
    j = int(np.flatnonzero((plain.word.values == "love") & (plain.setting.values == "alone"))[0])
    # same context and span, but one with BOS and one without: never copied from each other
    a, b = inter.embedding[i].values, plain.embedding[j].values
    assert not np.allclose(a, b)
    assert (inter.token_start[i], plain.token_start[j]) == (1, 0)
    caught = _extract(gpt2_runner, [_small(suite)], tmp_path / "n.zarr", bos=False)
    assert len(caught) == 1 and "bos=False" in caught[0]


def test_a_chosen_bos_token_is_put_first_recorded_and_never_mixed(gpt2_runner, suite, tmp_path):
    """--bos-token: the token put first in every suite (implies --bos), recorded as an identity
    setting: resuming or reusing vectors with another token is refused, and nothing is written for
    a token outside the vocabulary or with --no-bos (static vectors: test_static)."""
    from emb.errors import EmbError, ModelError, StoreMismatchError

    store = tmp_path / "t.zarr"
    weat = build_suite("weat", select=["WEAT1"])
    # "Ċ": a newline, as GPT-2's vocabulary writes it
    assert _extract(gpt2_runner, [_small(suite, bos=None), weat], store, bos_token="Ċ") == []
    opened = emb.open_store(str(store))
    for name in ("intersectional", "weat"):
        ds = opened.dataset(name)
        extraction = ds.attrs["extraction"]
        assert extraction["bos"] is True and extraction["bos_token"] == "Ċ"
        assert extraction["bos_token_added"] is True and extraction["targets_at_position_0"] == 0
        assert (ds.token_start.values == ds.token_start.values.min()).any()
        assert int(ds.token_start.values.min()) == 1
    # the same words with GPT-2's own BOS: other vectors, kept apart
    _extract(gpt2_runner, [weat], tmp_path / "d.zarr", bos=True)
    default = emb.open_store(str(tmp_path / "d.zarr")).dataset("weat")
    chosen = opened.dataset("weat")
    assert default.attrs["extraction"]["bos_token"] is None
    assert default.attrs["extraction"]["bos_token_added"] is True
    assert not np.allclose(default.embedding.values, chosen.embedding.values)
    with pytest.raises(StoreMismatchError, match="bos_token"):
        _extract(gpt2_runner, [weat], store, bos=True)
    with pytest.raises(StoreMismatchError, match="bos_token"):
        _extract(gpt2_runner, [weat], tmp_path / "d.zarr", bos_token="<|endoftext|>")
    for kwargs, error, match in (
        ({"bos_token": "<|im_start|>"}, ModelError, "not one token of the vocabulary"),
        ({"bos_token": "Ċ", "bos": False}, EmbError, "give one of them"),
        ({"bos_token": ""}, EmbError, "must be a token"),
    ):
        with pytest.raises(error, match=match):
            _extract(gpt2_runner, [weat], tmp_path / "never.zarr", **kwargs)
        assert not (tmp_path / "never.zarr").exists()


def test_cli_bos_token(tiny_gpt2_dir, tmp_path):
    store = tmp_path / "w.zarr"
    args = ["extract", "-m", str(tiny_gpt2_dir), "-s", "weat", "--test", "WEAT1", "--store",
            str(store), "-q"]
    bad = CliRunner().invoke(main, [*args, "--bos-token", "<|im_start|>"])
    assert bad.exit_code == 1 and "Traceback" not in bad.output and not store.exists()
    assert "not one token of the vocabulary" in bad.output and "<|endoftext|>" in bad.output
    result = CliRunner().invoke(main, [*args, "--bos-token", "<|endoftext|>"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "warning:" not in result.output  # no target at position 0 any more
    extraction = emb.open_store(str(store)).dataset("weat").attrs["extraction"]
    assert (extraction["bos"], extraction["bos_token"]) == (True, "<|endoftext|>")


def test_bidirectional_model_keeps_its_tokenizer(bert_runner, suite, tmp_path):
    caught = _extract(bert_runner, [_small(suite)], tmp_path / "b.zarr")
    assert caught == []
    extraction = emb.open_store(str(tmp_path / "b.zarr")).dataset("intersectional").attrs["extraction"]
    assert extraction["bos"] is None and extraction["targets_at_position_0"] == 0


def test_cli_prints_the_position_zero_warning(tiny_gpt2_dir, tmp_path):
    result = CliRunner().invoke(
        main, ["extract", "-m", str(tiny_gpt2_dir), "-s", "weat", "--test", "WEAT1",
               "--store", str(tmp_path / "w.zarr"), "-q"], catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1 and "100 of 200 targets sit at position 0" in lines[0]


@pytest.mark.slow
def test_weat_alone_changes_with_bos_on_smollm2(smollm2_path, tmp_path):
    """The issue's observation: without BOS, WEAT1 'alone' stays near 0 at every layer of the
    SmolLM2 GGUF while 'bleached' reaches ~1.4; --bos changes the 'alone' effect sizes (the
    GGUF's BOS token is the chat marker <|im_start|>, which does not restore them), and
    --bos-token '<|endoftext|>' (the document start it was trained with) restores them: d ≈ 1.1–1.3
    from layer 10 up, measured 2026-11-23."""
    pytest.importorskip("torch")
    from emb.analyses import weat
    from emb.backends import load_model

    runner = load_model(smollm2_path, device="cpu")
    full = build_suite("weat", select=["WEAT1"])
    alone = Suite(name="weat", items=tuple(i for i in full.items if i.setting == "alone"),
                  generator="weat", parameters=full.parameters)
    results = {}
    for key, suite_, kwargs in (("none", full, {}), ("bos", alone, {"bos": True}),
                                ("eot", alone, {"bos_token": "<|endoftext|>"})):
        store = tmp_path / f"smol-{key}.zarr"
        caught = _extract(runner, [suite_], store, poolings=("last",), batch_size=50, **kwargs)
        assert len(caught) == (1 if key == "none" else 0)
        ds = emb.open_store(str(store)).dataset("weat")
        res = weat(ds, n_permutations=200).effect_size.sel(test="WEAT1", pooling="last")
        results[key] = res.compute()
    without, with_bos, with_eot = results["none"], results["bos"], results["eot"]
    print("WEAT1 d, last pooling, by layer")
    for name, values in (("bleached", without.sel(setting="bleached")),
                         ("alone", without.sel(setting="alone")),
                         ("alone --bos", with_bos.sel(setting="alone")),
                         ("alone <|endoftext|>", with_eot.sel(setting="alone"))):
        print(f"  {name:20s}", np.round(values.values, 2).tolist())
    assert float(abs(without.sel(setting="alone")).max()) < 0.5
    assert float(without.sel(setting="bleached").max()) > 1.2
    change = abs(with_bos.sel(setting="alone") - without.sel(setting="alone"))
    assert float(change.max()) > 0.2
    assert float(with_bos.sel(setting="alone").max()) < 0.5
    restored = with_eot.sel(setting="alone").isel(layer=slice(10, None))
    assert float(restored.min()) > 0.8
