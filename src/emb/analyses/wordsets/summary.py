"""The tables and summaries of the families over WEAT-style tests (``weat``'s metrics' peers,
``ml-eat``, the robustness checks): the tests' group names, the key columns first, the word-set
sizes last, the declared cell (the top layer at the declared setting and pooling) and the
summary's common lines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import (
    DEFAULT_POOLINGS,
    DEFAULT_SETTINGS,
    Summary,
    default_of,
    format_p,
    front,
    integer_columns,
    own_pooling_rows,
    small_n_notes,
    with_set_sizes,
)

__all__ = ["KEY_COLUMNS", "SET_SIZES", "cell_summary", "declared_cell", "p_text", "test_table",
           "top_rows", "with_groups"]

#: The key columns a per-test table starts with (those present), in this order.
KEY_COLUMNS = ("model", "test", "x_group", "y_group", "a_group", "b_group", "setting", "pooling",
               "layer")

#: The per-test word-set sizes and flag a table ends with.
SET_SIZES = ("n_x", "n_y", "n_a", "n_b", "small_n")


def with_groups(frame: pd.DataFrame, result: xr.Dataset) -> pd.DataFrame:
    """``frame`` with the tests' group names (x_group … b_group) joined on ``test``."""
    cols = [c for c in ("x_group", "y_group", "a_group", "b_group") if c in result.coords]
    if not cols or "test" not in frame:
        return frame
    groups = pd.DataFrame({"test": [str(t) for t in result["test"].values],
                           **{c: [str(v) for v in np.asarray(result[c].values)] for c in cols}})
    return frame.merge(groups, how="left", on="test")


def test_table(frame: pd.DataFrame, result: xr.Dataset, *, first: Sequence[str] = (),
               integers: Sequence[str] = ("layer",), sizes: Sequence[str] = SET_SIZES) -> pd.DataFrame:
    """A tidy per-test ``frame`` as every such table is laid out: the tests' groups joined,
    ``integers`` as nullable integers, :data:`KEY_COLUMNS` then ``first`` at the front, the
    word-set ``sizes`` (of ``result``) last."""
    frame = integer_columns(with_groups(frame, result), integers)
    return with_set_sizes(front(frame, (*KEY_COLUMNS, *first)), result, variables=sizes)


def declared_cell(frame: pd.DataFrame, value: str | None = None) -> tuple[pd.DataFrame, Any, str]:
    """The rows of the declared cell's setting and pooling (``bleached`` …, ``last`` …; a model
    without that pooling at its own, a static store's ``static``), the setting and the words
    for the pooling (a model's own pooling is its first with a ``value``; with None, every row
    counts as a value: the callers dropped their NaN rows; see
    :func:`emb.analyses._analysis.own_pooling_rows`)."""
    setting = default_of(frame["setting"].unique(), DEFAULT_SETTINGS)
    cell, pooling = own_pooling_rows(frame[frame["setting"] == setting], value, DEFAULT_POOLINGS)
    return cell, setting, pooling


def top_rows(cell: pd.DataFrame) -> list[tuple[dict[str, Any], pd.Series]]:
    """Per (model, test) the row of its top layer, with its keys."""
    keys = [k for k in ("model", "test") if k in cell]
    out = []
    for key, group in cell.groupby(keys, sort=False):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        out.append((row, group.loc[group["layer"].idxmax()]))
    return out


def p_text(row: pd.Series, column: str, n: str | int) -> str:
    """A table row's p as a summary cell: ``0.012``, ``≤ 0.0001`` at a Monte-Carlo floor (its
    ``<column>_at_floor`` flag; the draws behind it: ``n``, or the row's column ``n``)."""
    draws = int(row[n]) if isinstance(n, str) else int(n)
    return format_p(float(row[column]), n_permutations=draws,
                    floor=bool(row[f"{column}_at_floor"])).removeprefix("p ").removeprefix("= ")


def cell_summary(title: str, result: xr.Dataset, *, setting: Any, pooling: str,
                 rows: Sequence[dict[str, Any]], notes: Sequence[str]) -> Summary:
    """The summary of a declared cell: its headline, one row per (model, test) at the top layer,
    the family's ``notes`` and then the lines on small and dropped word sets."""
    return Summary(title=title,
                   headline=[f"declared cell: top layer, setting {setting!r}, pooling {pooling}"],
                   table=pd.DataFrame(rows), notes=[*notes, *small_n_notes(result)])
