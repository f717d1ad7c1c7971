"""Seed sensitivity, the empirical null and split-half reliability: against brute-force loops and
planted effects (one word carrying the whole effect; random attribute sets centred on 0)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from emb.analyses import ANALYSES
from emb.analyses.robustness import seed_sensitivity
from emb.analyses.stats import robustness as rb
from emb.cli.main import main
from tests.analyses._synthetic import weat_dataset, write_store


def _weat_d(X, Y, A, B, ddof=1) -> float:
    def cos(u, v):
        return u @ v / np.linalg.norm(u) / np.linalg.norm(v)

    s = [np.mean([cos(t, a) for a in A]) - np.mean([cos(t, b) for b in B]) for t in [*X, *Y]]
    return (np.mean(s[:len(X)]) - np.mean(s[len(X):])) / np.std(s, ddof=ddof)


def test_leave_one_out_equals_recomputing_d_without_each_word() -> None:
    rng = np.random.default_rng(2)
    sets = [rng.normal(size=(n, 7)) + rng.normal(size=7) for n in (5, 4, 6, 3)]
    d, without = rb.leave_one_out(np.concatenate(sets), 5, 4, 6)
    assert float(d) == pytest.approx(_weat_d(*sets), abs=1e-12)
    k = 0
    for role, words in enumerate(sets):
        for i in range(len(words)):
            reduced = [np.delete(w, i, axis=0) if r == role else w for r, w in enumerate(sets)]
            assert float(without[k]) == pytest.approx(_weat_d(*reduced), abs=1e-12), (role, i)
            k += 1
    assert k == without.shape[-1] == 18


def test_subsets_of_every_word_are_d_itself_and_differ_below() -> None:
    rng = np.random.default_rng(3)
    emb_ = np.concatenate([rng.normal(size=(n, 6)) + rng.normal(size=6) for n in (6, 6, 5, 5)])
    full = rb.subset_effect_sizes(emb_, 6, 6, 5, fraction=1.0, n_subsets=5)
    assert np.allclose(full, rb.leave_one_out(emb_, 6, 6, 5)[0], atol=1e-12)
    part = rb.subset_effect_sizes(emb_, 6, 6, 5, fraction=0.6, n_subsets=400, seed=1)
    assert np.unique(np.round(part, 12)).size > 100
    # one subset by hand: the same seeded masks
    rng2 = np.random.default_rng(1)
    masks = [rb._masks(rng2, n, k, 400) for n, k in ((6, 4), (6, 4), (5, 3), (5, 3))]
    sets = np.split(emb_, np.cumsum([6, 6, 5]))
    chosen = [s[m[17].astype(bool)] for s, m in zip(sets, masks, strict=True)]
    assert float(part[17]) == pytest.approx(_weat_d(*chosen), abs=1e-12)


def _one_word_carries_it(seed: int = 0, n: int = 10, d: int = 30) -> np.ndarray:
    """Y's words are X's other words again (and one of them twice), so without X's first word
    the two target sets hardly differ; X's first word lies along A's direction: it alone makes d."""
    rng = np.random.default_rng(seed)
    e0 = np.eye(d)[0]
    others = rng.normal(size=(n - 1, d))
    x = np.concatenate([(6.0 * e0 + rng.normal(scale=0.1, size=d))[None], others])
    y = np.concatenate([others, others[:1]])
    a, b = rng.normal(size=(n, d)) + 2.0 * e0, rng.normal(size=(n, d)) - 2.0 * e0
    return np.concatenate([x, y, a, b])


def test_the_word_that_carries_the_effect_has_the_largest_influence() -> None:
    for seed in range(10):
        d, without = rb.leave_one_out(_one_word_carries_it(seed), 10, 10, 10)
        influence = d - without
        assert int(np.nanargmax(np.abs(influence))) == 0, seed
        assert influence[0] > 0.5 * float(d) > 0, seed
        assert abs(float(without[0])) < 0.25, seed  # without it, next to no effect is left


def test_the_analysis_table_words_and_cli(tmp_path: Path) -> None:
    ds, opts = ANALYSES["seed-sensitivity"].example()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = seed_sensitivity(ds, **opts).compute()
    rec = ANALYSES["seed-sensitivity"]
    tables = rec.tables(res)
    words = tables["seed_sensitivity_words"]
    one = words[(words.test == "WEAT1") & (words.setting == "bleached") & (words.pooling == "last")
                & (words.layer == 3)]
    assert len(one) == 32 and one["rank"].tolist() == list(range(1, 33))
    assert set(one["role"]) == {"X", "Y", "A", "B"}
    assert (one["influence"].abs().diff().dropna() <= 1e-12).all()
    main_ = tables["seed_sensitivity"]
    row = main_[(main_.test == "WEAT1") & (main_.setting == "bleached") & (main_.pooling == "last")
                & (main_.layer == 3)].iloc[0]
    assert row["top_word"] == one.iloc[0]["word"]
    # the jackknife SE from its definition
    d_i = one["d_without"].to_numpy()
    assert row["jackknife_se"] == pytest.approx(np.sqrt(31 / 32 * ((d_i - d_i.mean()) ** 2).sum()), abs=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "s.zarr", {"weat": weat_dataset(n_layers=2)})
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["analyze", "seed-sensitivity", "--store", str(store),
                                       "--out", str(out), "--n-subsets", "100"])
    assert result.exit_code == 0, result.output
    assert "most influential" in result.output
    assert pd.read_csv(out / "seed_sensitivity.csv")["subset_low"].notna().all()
    assert (out / "seed_sensitivity_words.parquet").is_file()
    assert (out / "seed_sensitivity_influence.png").is_file()


# -- the empirical null ----------------------------------------------------------------------------
def test_random_attribute_sets_are_matched_and_distinct() -> None:
    from emb.analyses.robustness._null import draw_matched

    want = np.array([3, 3, 5, 7, 7, 4])
    have = np.array([3, 3, 3, 3, 5, 5, 5, 7, 7, 7, 7, 4, 4, 4, 9])
    draws = draw_matched(want, have, 300, seed=2)
    assert all(len(set(row)) == want.size for row in draws)
    assert (have[draws] == want).all()  # every band has at least 3 candidates: exact matches
    assert len({tuple(r) for r in draws}) > 100
    # a band with too few words widens to its neighbours
    wide = draw_matched(np.array([9, 9]), have, 50, seed=0)
    assert (np.abs(have[wide] - 9) <= 2).all()


def test_null_effect_sizes_equal_d_of_the_drawn_sets() -> None:
    rng = np.random.default_rng(5)
    targets = rng.normal(size=(9, 8)) + 1
    pool = rng.normal(size=(20, 8)) + 1
    draws_a = np.array([[0, 1, 2], [5, 6, 7]])
    draws_b = np.array([[3, 4, 8], [9, 10, 11]])
    null = rb.null_effect_sizes(targets, pool, 5, 4, draws_a, draws_b)
    for r in range(2):
        want = _weat_d(targets[:5], targets[5:], pool[draws_a[r]], pool[draws_b[r]])
        assert float(null[r]) == pytest.approx(want, abs=1e-12)


def test_random_attribute_sets_give_a_null_centred_on_zero_and_the_planted_d_outside_it() -> None:
    from emb.analyses.robustness import empirical_null
    from tests.analyses._synthetic import weat_dataset as synthetic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = synthetic(n_layers=2, effect=3.0)
        res = empirical_null(ds, tests=["WEAT1"], n_null=400, n_permutations=2000).compute()
    cell = res.sel(test="WEAT1", layer=1)
    # the pool is WEAT2's words: random with respect to flowers and insects
    assert np.all(np.abs(cell.null_mean.values) < 0.35)
    assert np.all(cell.effect_size.values > cell.null_high.values)
    assert np.all(cell.empirical_p.values <= 1 / 401 + 1e-12)


def test_frequency_matching_needs_a_frequency_label() -> None:
    from emb.analyses.robustness import empirical_null
    from emb.errors import AnalysisError

    ds, _ = ANALYSES["empirical-null"].example()
    with pytest.raises(AnalysisError, match="frequency label"):
        empirical_null(ds, match="frequency")


def test_empirical_null_through_the_cli(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "s.zarr", {"weat": weat_dataset(n_layers=2)})
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["analyze", "empirical-null", "--store", str(store), "--out",
                                       str(out), "--n-null", "100", "--n-permutations", "200"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "empirical_null.csv")
    for column in ("effect_size", "null_low", "null_high", "empirical_p", "permutation_p",
                   "pool_size", "n_permutations", "n_x", "small_n"):
        assert column in table
    assert "1/101" in result.output or table["empirical_p"].min() > 1 / 101


# -- reliability -----------------------------------------------------------------------------------
def test_split_half_equals_a_loop_over_the_same_halves() -> None:
    rng = np.random.default_rng(8)
    sets = [rng.normal(size=(n, 6)) + rng.normal(size=6) for n in (5, 5, 6, 7)]
    r_half, sb = rb.split_half(np.concatenate(sets), 5, 5, 6, n_splits=30, seed=4)
    rng2 = np.random.default_rng(4)
    ha, hb = rb._masks(rng2, 6, 3, 30).astype(bool), rb._masks(rng2, 7, 3, 30).astype(bool)
    targets = np.concatenate(sets[:2])

    def scores(a, b):
        return [_weat_s(t, a, b) for t in targets]

    rs = [np.corrcoef(scores(sets[2][ha[k]], sets[3][hb[k]]),
                      scores(sets[2][~ha[k]], sets[3][~hb[k]]))[0, 1] for k in range(30)]
    assert float(r_half) == pytest.approx(np.mean(rs), abs=1e-12)
    assert float(sb) == pytest.approx(2 * np.mean(rs) / (1 + np.mean(rs)), abs=1e-12)


def _weat_s(t, a, b) -> float:
    def cos(u, v):
        return u @ v / np.linalg.norm(u) / np.linalg.norm(v)

    return np.mean([cos(t, x) for x in a]) - np.mean([cos(t, x) for x in b])


def test_reliability_is_high_for_a_real_attribute_and_near_zero_for_noise() -> None:
    rng = np.random.default_rng(0)
    d, n = 40, 20
    e0 = np.eye(d)[0]
    targets = rng.normal(size=(2 * n, d))
    targets[:, 0] *= 4  # the targets differ a lot along e0
    real = [rng.normal(size=(n, d)) + 3 * e0, rng.normal(size=(n, d)) - 3 * e0]
    noise = [rng.normal(size=(n, d)), rng.normal(size=(n, d))]
    high = rb.split_half(np.concatenate([targets, *real]), n, n, n, n_splits=100)[1]
    low = rb.split_half(np.concatenate([targets, *noise]), n, n, n, n_splits=100)[1]
    assert float(high) > 0.95 and abs(float(low)) < 0.3


def test_agreement_is_spearman_over_the_tests_of_the_table() -> None:
    from scipy.stats import spearmanr

    from emb.analyses.robustness import reliability

    ds, opts = ANALYSES["reliability"].example()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = reliability(ds, **opts).compute()
    tables = ANALYSES["reliability"].tables(res)
    main_ = tables["reliability"]
    cell = main_[(main_.setting == "alone") & (main_.pooling == "mean") & (main_.layer == 2)]
    agree = tables["metric_agreement"]
    row = agree[(agree.setting == "alone") & (agree.pooling == "mean") & (agree.layer == 2)
                & (agree.pair == "abs_d~ect_bias")].iloc[0]
    assert len(cell) == 4 and int(row["n_tests"]) == 4
    assert row["agreement"] == pytest.approx(spearmanr(cell["abs_d"], cell["ect_bias"]).statistic, abs=1e-12)


def test_the_reliability_legend_lists_a_test_drawn_only_in_a_later_panel() -> None:
    """A test without a value for the first model (NaN at every layer) is drawn in the second
    model's panel: the legend names it (it used to read the first panel's lines only)."""
    import xarray as xr

    from emb.analyses.robustness._figures import reliability_by_layer

    values = np.array([[[0.8, 0.7, 0.6], [np.nan] * 3], [[0.5, 0.4, 0.3], [0.2, 0.1, 0.0]]])
    result = xr.Dataset(
        {"reliability": (("model", "test", "layer"), values)},
        coords={"model": ["m1", "m2"], "test": ["flowers", "careers"], "layer": [0, 1, 2]},
    ).expand_dims(setting=["bleached"], pooling=["mean"])
    fig = reliability_by_layer(result)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["flowers", "careers"]
    # each panel: its tests' lines and the line at 0
    assert [len(ax.get_lines()) for ax in fig.axes if ax.get_visible()][:2] == [2, 3]
