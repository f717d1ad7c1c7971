"""A p below the float range (issue 24): the similarity table never shows the clipped 2.23e-308;
its p is left empty and log10_p holds the exact order (checked against mpmath's incomplete beta),
and the summary prints it as ≈ 10^-700.0. The same for valnorm's, vast's and valence-subspace's
correlation tables (one helper: :func:`emb.analyses._analysis.p_below_range`)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pandas as pd
import pytest

from emb.analyses import ANALYSES
from emb.analyses._analysis import format_p, format_p_column, p_below_range
from emb.analyses.stats import P_FLOOR

N_PAIRS = 4_000


def _log10_p_t(r: float, n: int) -> float:
    """Two-sided p of the t approximation, t = r sqrt((n-2)/(1-r²)), in mpmath's precision:
    p = I_{df/(df+t²)}(df/2, 1/2), the regularised incomplete beta."""
    mpmath.mp.dps = 50
    r_ = mpmath.mpf(r)
    df = n - 2
    t2 = r_ ** 2 * df / (1 - r_ ** 2)
    p = mpmath.betainc(mpmath.mpf(df) / 2, mpmath.mpf(1) / 2, 0, df / (df + t2), regularized=True)
    return float(mpmath.log10(p))


def _rho_for(log10_p: float, n: int) -> float:
    """The rho whose p is 10^log10_p (bisection: log10 p falls as rho grows)."""
    low, high = 0.0, 0.999
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if _log10_p_t(mid, n) > log10_p else (low, mid)
    return (low + high) / 2


def test_a_p_of_ten_to_minus_700_in_the_similarity_table_and_summary():
    analysis = ANALYSES["similarity"]
    ds, options = analysis.example()
    res = analysis.function(ds, **options).compute()
    rho = _rho_for(-700.0, N_PAIRS)
    cell = {"dataset": "ws353", "pooling": "last", "layer": 3, "k": 0}
    res["n"].loc[{"dataset": "ws353"}] = N_PAIRS
    res["rho"].loc[cell] = rho
    res["p"].loc[cell] = P_FLOOR  # what the analysis stores for a p below float range
    tables = analysis.tables(res)
    table = tables["similarity"].set_index(["dataset", "pooling", "layer", "k"])
    row = table.loc[("ws353", "last", 3, 0)]
    assert pd.isna(row["p"]) and tables["similarity"]["p"].dtype == np.float64  # never 2.23e-308
    assert row["log10_p"] == pytest.approx(-700.0, abs=0.05)
    assert "2.2" not in tables["similarity"]["p"].dropna().map("{:.3g}".format).str.cat(sep=" ")
    others = table.drop(index=("ws353", "last", 3, 0))
    assert others["p"].notna().all() and (others["p"] > P_FLOOR).all()  # the rest unchanged
    assert "log10_p" in tables["similarity"].attrs["descriptions"]["p"]
    summary = analysis.summary(res, tables)
    shown = "\n".join([*summary.headline, summary.table.to_string()])
    assert "p ≈ 10^-700.0 at layer 3" in shown and "e-308" not in shown
    top = summary.table[(summary.table["dataset"] == "ws353") & (summary.table["pooling"] == "last")]
    assert top["p"].tolist() == ["≈ 10^-700.0"]


def test_p_below_range_leaves_representable_ps_and_formats_the_rest():
    frame = pd.DataFrame({"p": [0.04, P_FLOOR, P_FLOOR, 0.0],
                          "log10_p": [math.log10(0.04), -641.8, float("nan"), -np.inf]})
    out = p_below_range(frame)
    assert out["p"].iloc[0] == 0.04 and math.isnan(out["p"].iloc[1])
    assert out["p"].iloc[2] == P_FLOOR  # no exact order known: kept (and printed as a bound)
    assert out["p"].iloc[3] == 0.0  # an exact 0 (r = ±1) stays
    assert frame["p"].iloc[1] == P_FLOOR  # input untouched
    shown = format_p_column(out)
    assert shown["p"].tolist()[:2] == ["0.04", "≈ 10^-641.8"] and "log10_p" not in shown
    assert format_p(float("nan"), log10_p=-641.8) == "p ≈ 10^-641.8"
    assert format_p(float("nan"), log10_p=-3.0) == "p = —"  # a missing p is not invented


def test_column_names_are_identifiers_and_best_layer_is_described_as_exploratory():
    import re

    for name in ("similarity", "valnorm"):
        analysis = ANALYSES[name]
        ds, options = analysis.example()
        res = analysis.function(ds, **options).compute()
        tables = analysis.tables(res)
        for table_name, table in tables.items():
            odd = [c for c in table.columns if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(c))]
            assert not odd, (table_name, odd)
        best = tables[f"{name}_best_layers"]
        assert "best_layer" in best and "exploratory" in best.attrs["descriptions"]["best_layer"]
        summary = analysis.summary(res, tables).table
        assert "best_layer" in summary and "best_layer (exploratory)" not in summary
