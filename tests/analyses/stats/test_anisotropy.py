"""Anisotropy: the random-pair baseline against a loop, standardisation removing a planted common
direction, and every analysis reporting the baseline (table and summary) with --standardize
recorded."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner

from emb.analyses import ANALYSES, run_analysis
from emb.analyses.stats.anisotropy import pair_baseline, random_pairs, standardize
from emb.cli.main import main
from tests.analyses._synthetic import weat_dataset, write_store


def _emb(values: np.ndarray, words: list[str]) -> xr.DataArray:
    return xr.DataArray(values, dims=("item", "layer", "pooling", "feature"),
                        coords={"layer": np.arange(values.shape[1]), "pooling": ["last"],
                                "word": ("item", words)})


def test_random_pairs_are_distinct_words_and_the_baseline_is_their_mean_cosine() -> None:
    rng = np.random.default_rng(0)
    words = [f"w{i % 30}" for i in range(45)]  # 30 words, 15 of them twice
    values = rng.normal(size=(45, 2, 1, 6)) + 1.0
    pairs = random_pairs(np.array(words), n_pairs=200, seed=3)
    assert len(pairs) == 200 and all(words[i] != words[j] for i, j in pairs)
    assert len({tuple(sorted(p)) for p in pairs}) == 200
    got = pair_baseline(_emb(values, words), np.array(words), n_pairs=200, seed=3)
    for layer in range(2):
        cos = [values[i, layer, 0] @ values[j, layer, 0]
               / np.linalg.norm(values[i, layer, 0]) / np.linalg.norm(values[j, layer, 0]) for i, j in pairs]
        assert float(got.sel(layer=layer, pooling="last")) == pytest.approx(np.mean(cos), abs=1e-12)
    # fewer pairs than asked: all of them
    assert len(random_pairs(np.array(["a", "b", "c", "a"]), n_pairs=50)) == 3


def test_centring_removes_a_planted_common_direction() -> None:
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(200)]
    values = rng.normal(size=(200, 1, 1, 20)) + 10.0 * np.eye(20)[0]  # every word shares e0
    emb = _emb(values, words)
    before = float(pair_baseline(emb, np.array(words)).squeeze())
    after = float(pair_baseline(standardize(emb, "center"), np.array(words)).squeeze())
    assert before > 0.75 and abs(after) < 0.03
    z = standardize(emb, "zscore")
    np.testing.assert_allclose(z.mean("item"), 0, atol=1e-9)
    np.testing.assert_allclose(z.std("item"), 1, atol=1e-9)
    assert standardize(emb, "none") is emb


@pytest.mark.parametrize("name", sorted(ANALYSES))
def test_every_analysis_reports_the_baseline(name: str) -> None:
    analysis = ANALYSES[name]
    ds, options = analysis.example()
    datasets = {"m": ds}
    kwargs = {k: v for k, v in options.items() if not isinstance(v, xr.Dataset)}
    per_model = {"m": {k: v for k, v in options.items() if isinstance(v, xr.Dataset)}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_analysis(analysis, datasets, per_model=per_model, standardize="center",
                              **kwargs).compute()
    assert result.attrs["standardize"] == "center"
    assert np.isfinite(result["anisotropy"].values).any()
    tables = analysis.report_tables(result)
    name_ = f"{analysis.stem}_anisotropy"
    assert list(tables)[-1] == name_ and list(tables)[0] != name_
    assert {"layer", "anisotropy", "anisotropy_standardized", "n_pairs"} <= set(tables[name_])
    summary = analysis.report_summary(result, tables)
    assert any(n.startswith("Anisotropy: two random words have a mean cosine of") for n in summary.notes)


def test_standardize_through_the_cli_is_recorded_and_changes_the_cosines(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "s.zarr", {"weat": weat_dataset(n_layers=2)})
    tables = {}
    for how in ("none", "zscore"):
        out = tmp_path / how
        result = CliRunner().invoke(main, ["analyze", "weat", "--store", str(store), "--out", str(out),
                                           "--standardize", how, "--n-bootstrap", "0", "-q"])
        assert result.exit_code == 0, result.output
        assert "Anisotropy: two random words" in result.output
        tables[how] = pd.read_csv(out / "weat.csv")
        assert (pd.read_csv(out / "weat_anisotropy.csv")["standardize"] == how).all()
        sidecar = (out / "weat.json").read_text()
        assert ("--standardize" in sidecar) == (how != "none")
    assert not np.allclose(tables["none"]["effect_size"], tables["zscore"]["effect_size"])
    refused = CliRunner().invoke(main, ["analyze", "weat", "--store", str(store), "--standardize", "whiten"])
    assert refused.exit_code == 2 and "whiten" in refused.output
