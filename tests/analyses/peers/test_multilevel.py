"""ML-EAT: every level against a loop written from the paper's definitions, its p-values against
scipy's permutation test, and the patterns recovered from planted associations."""

from __future__ import annotations

import itertools
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from click.testing import CliRunner
from scipy import stats as sps

from emb.analyses import ANALYSES
from emb.analyses.multilevel import ml_eat
from emb.analyses.stats.multilevel import PATTERNS, multilevel
from emb.cli.main import main
from tests.analyses._synthetic import weat_dataset, write_store


def _cos(u: np.ndarray, v: np.ndarray) -> float:
    return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))


def _loop(X, Y, A, B) -> dict[str, float]:
    """ML-EAT by loops, from the definitions (Wolfe, Hiniker & Howe 2024)."""
    def d(first: list[float], second: list[float]) -> float:
        return (np.mean(first) - np.mean(second)) / np.std(first + second, ddof=1)

    s = {i: [np.mean([_cos(t, a) for a in A]) - np.mean([_cos(t, b) for b in B])] for i, t in
         enumerate([*X, *Y])}
    out = {"d1": d([s[i][0] for i in range(len(X))], [s[i][0] for i in range(len(X), len(X) + len(Y))])}
    for name, T in (("X", X), ("Y", Y)):
        out[f"d2_{name}"] = d([np.mean([_cos(t, a) for t in T]) for a in A],
                              [np.mean([_cos(t, b) for t in T]) for b in B])
    for name, (T, S) in {"X-A": (X, A), "X-B": (X, B), "Y-A": (Y, A), "Y-B": (Y, B)}.items():
        cosines = [_cos(t, v) for t in T for v in S]
        out[f"mean_{name}"], out[f"std_{name}"] = np.mean(cosines), np.std(cosines, ddof=1)
    return out


def _exact_p(values: np.ndarray, k: int) -> float:
    """Two-sided exact permutation p of the difference of the two groups' means, by enumerating
    every split."""
    def diff(first: list[int]) -> float:
        rest = [i for i in range(values.size) if i not in first]
        return values[first].mean() - values[rest].mean()

    observed = diff(list(range(k)))
    stats_ = [diff(list(c)) for c in itertools.combinations(range(values.size), k)]
    return float(np.mean(np.abs(stats_) >= abs(observed) - 1e-12))


def test_levels_equal_loops_and_exact_enumeration() -> None:
    rng = np.random.default_rng(7)
    X, Y, A, B = (rng.normal(size=(n, 9)) + rng.normal(size=9) for n in (5, 4, 6, 5))
    emb_ = np.concatenate([X, Y, A, B])
    d1, p1, d2, p2, mean3, std3, pattern = multilevel(emb_, 5, 4, 6)
    want = _loop(list(X), list(Y), list(A), list(B))
    assert float(d1) == pytest.approx(want["d1"], abs=1e-12)
    assert d2.tolist() == pytest.approx([want["d2_X"], want["d2_Y"]], abs=1e-12)
    assert mean3.tolist() == pytest.approx([want[f"mean_{b}"] for b in ("X-A", "X-B", "Y-A", "Y-B")], abs=1e-12)
    assert std3.tolist() == pytest.approx([want[f"std_{b}"] for b in ("X-A", "X-B", "Y-A", "Y-B")], abs=1e-12)
    # p: exact enumeration (C(9,5) = 126 and C(11,6) = 462 splits), against a brute-force loop and scipy
    u = emb_ / np.linalg.norm(emb_, axis=1, keepdims=True)
    cos = u[:9] @ u[9:].T
    s = cos[:, :6].mean(1) - cos[:, 6:].mean(1)
    assert float(p1) == pytest.approx(_exact_p(s, 5), abs=1e-12)
    # one-sided, against scipy (its two-sided p is twice the smaller tail, emb's the centred |S|)
    p1_greater = multilevel(emb_, 5, 4, 6, alternative="greater")[1]
    scipy_p = sps.permutation_test((s[:5], s[5:]), lambda a, b, axis: a.mean(axis) - b.mean(axis),
                                   permutation_type="independent", alternative="greater",
                                   n_resamples=math.inf, vectorized=True).pvalue
    assert float(p1_greater) == pytest.approx(scipy_p, abs=1e-12)
    m_x = np.concatenate([cos[:5, :6].mean(0), cos[:5, 6:].mean(0)])
    assert float(p2[0]) == pytest.approx(_exact_p(m_x, 6), abs=1e-12)
    assert 1 <= int(pattern) <= 9


def _planted(x_to: float, y_to: float, n: int = 10, d: int = 24, seed: int = 0) -> np.ndarray:
    """A near +e0, B near −e0; X's and Y's words shifted towards A (+) or B (−) by ``x_to``,
    ``y_to``; a shared offset on e1 (cosines all positive, as in real models). Each set's noise
    is centred, so that a set planted at 0 has no association of its own."""
    rng = np.random.default_rng(seed)
    e0, e1 = np.eye(d)[0], np.eye(d)[1]
    sets = [x_to * e0, y_to * e0, e0, -e0]
    noise = [rng.normal(scale=0.35, size=(n, d)) for _ in sets]
    return np.concatenate([z - z.mean(0) + c + 1.5 * e1 for z, c in zip(noise, sets, strict=True)])


@pytest.mark.parametrize(("x_to", "y_to", "code"), [(1, -1, 3), (1, 1, 1), (-1, -1, 9), (0, -1, 6),
                                                    (0, 0, 5), (-1, 1, 7)])
def test_planted_patterns_are_recovered(x_to: float, y_to: float, code: int) -> None:
    *_, pattern = multilevel(_planted(x_to, y_to), 10, 10, 10, n_permutations=2000, seed=1)
    assert int(pattern) == code, PATTERNS[int(pattern)] if int(pattern) else "NaN"


def test_both_with_a_gives_a_d_that_level_2_explains() -> None:
    # X strongly and Y weakly drawn to A: WEAT's d is large and positive, yet no target is with B
    d1, _, d2, p2, *_, pattern = multilevel(_planted(1.0, 0.4), 10, 10, 10, n_permutations=2000)
    assert float(d1) > 1 and (d2 > 0).all() and (p2 < 0.05).all() and int(pattern) == 1


def test_the_analysis_through_the_cli(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(tmp_path / "s.zarr", {"weat": weat_dataset(n_layers=3)})
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["analyze", "ml-eat", "--store", str(store), "--out", str(out),
                                       "--n-permutations", "500", "--exact-limit", "1000"])
    assert result.exit_code == 0, result.output
    assert "ML-EAT" in result.output and "≤ 1/501" in result.output  # the Monte-Carlo floor
    table = pd.read_csv(out / "ml_eat.csv")
    for column in ("effect_size", "p", "d_X", "d_Y", "p_X", "p_Y", "pattern", "pattern_name",
                   "mean_cos_X_A", "std_cos_Y_B", "n_x", "n_b", "small_n", "n_permutations"):
        assert column in table
    assert set(table["pattern"]) <= set(PATTERNS)
    assert (out / "ml_eat_eat_map.png").is_file() and (out / "ml_eat_levels.png").is_file()


def test_level_1_equals_weat() -> None:
    ds, opts = ANALYSES["ml-eat"].example()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ml_eat(ds, **opts).compute()
        weat = ANALYSES["weat"].function(ds, n_bootstrap=0, alternative="two-sided",
                                         n_permutations=500, exact_limit=1000).compute()
    xr.testing.assert_allclose(res.effect_size, weat.effect_size.transpose(*res.effect_size.dims))
    xr.testing.assert_allclose(res.p, weat.p.transpose(*res.p.dims))


def test_the_eat_map_marks_a_monte_carlo_floor() -> None:
    from emb.analyses.multilevel._figures import eat_map

    ds, opts = ANALYSES["ml-eat"].example()  # 8+8 words, 500 random splits: WEAT1 at its floor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ml_eat(ds, **opts).compute()
    fig = eat_map(res)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts] + [ax.get_title() for ax in fig.axes]
    assert any("p ≤ .002" in t for t in texts), texts
