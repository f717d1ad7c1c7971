"""The whole product on a real model: MiniLM-L6 → ``emb extract`` → ``emb analyze`` (vast, weat).

A Bellezza subset (60 words, rated 1–5) with a corpus for the random setting, the WEAT suite and the
WS-353 words, extracted with MiniLM-L6; then every VAST row (lexicon × setting × pooling × layer)
exists and is finite, and WEAT rows exist for every test × setting × pooling × layer.
"""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import emb
from emb.cli.main import main
from tests import models


def _run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def minilm_store(tmp_path_factory, data_dir):
    tmp = tmp_path_factory.mktemp("e2e")
    lines = (data_dir / "lexica" / "bellezza.csv").read_text().splitlines()
    lexicon = tmp / "bellezza60.csv"
    lexicon.write_text("\n".join([lines[0], *lines[1:400:6][:60]]) + "\n")
    from emb.stimuli.suites.vast import POLAR_PLEASANT, POLAR_UNPLEASANT

    words = [line.split(",")[0] for line in lines[1:400:6][:60]]
    words += [*POLAR_PLEASANT, *POLAR_UNPLEASANT]
    pattern = re.compile(r"\b(" + "|".join(words) + r")\b", re.IGNORECASE)
    per_word = dict.fromkeys((w.lower() for w in words), 0)
    keep = []
    with gzip.open(data_dir / "corpus" / "sentences.jsonl.gz", "rt") as fh:
        for line in fh:  # up to 3 sentences per word, so every word gets a random context
            found = {m.lower() for m in pattern.findall(json.loads(line)["text"])}
            if any(per_word[w] < 3 for w in found):
                keep.append(line)
                for w in found:
                    per_word[w] += 1
    corpus = tmp / "corpus.jsonl.gz"
    with gzip.open(corpus, "wt") as fh:
        fh.writelines(keep)
    store = tmp / "minilm.zarr"
    model = models.minilm_dir()
    _run("extract", "--model", model, "--suite", "vast", "--lexicon", lexicon, "--corpus", corpus,
         "--store", store, "-q")
    _run("extract", "--model", model, "--suite", "weat", "--store", store, "-q")
    _run("extract", "--model", model, "--suite", "similarity", "--pairs", data_dir / "similarity",
         "--dataset", "ws353", "--store", store, "-q")
    return store


def test_vast_rows_for_every_layer_and_setting_are_finite(minilm_store, data_dir, tmp_path):
    out = tmp_path / "vast"
    _run("analyze", "vast", "--store", minilm_store, "--out", out, "--pairs",
         data_dir / "similarity" / "ws353.csv", "--k-max", "3", "-q")
    table = pd.read_csv(out / "vast.csv")
    for column in ("lexicon", "setting", "pooling", "layer", "k", "n", "r", "p"):
        assert column in table.columns
    valence = table[(table.experiment == "settings") & (table.rating == "valence")]
    got = {(s, p, int(layer)) for s, p, layer in zip(valence.setting, valence.pooling, valence.layer, strict=True)}
    want = {(s, p, layer) for s in ("bleached", "aligned", "misaligned", "random")
            for p in ("first", "last", "mean", "max") for layer in range(7)}
    assert want <= got
    assert np.isfinite(valence.r).all() and (valence.n >= 50).all()
    # Bellezza valence is visible in MiniLM: a clearly positive r in the bleached setting
    bleached = valence[(valence.setting == "bleached") & (valence.pooling == "mean")]
    assert bleached.r.max() > 0.3
    rho = table[table.experiment == "similarity"]
    assert set(rho.dataset) == {"ws353"} and np.isfinite(rho.r).all() and (rho.n_missing == 0).all()
    assert (out / "vast.nc").is_file() and any(out.glob("vast_*.png"))
    assert emb.open_store(str(minilm_store)).info().complete


def test_weat_rows_for_every_test_setting_pooling_layer(minilm_store, tmp_path):
    out = tmp_path / "weat"
    _run("analyze", "weat", "--store", minilm_store, "--out", out, "--n-permutations", "2000", "-q")
    table = pd.read_csv(out / "weat.csv")
    assert len(table) == 10 * 2 * 4 * 7
    assert set(table.test) == {f"WEAT{i}" for i in range(1, 11)}
    assert np.isfinite(table.effect_size).all()
    assert ((table.p >= 0) & (table.p <= 1)).all()
    assert (out / "weat.nc").is_file() and any(out.glob("weat*.png"))
