"""What every family over WEAT-style tests shares (peers, ml-eat, robustness): running a kernel over every resolved test, the
per-test sizes and flags, and the declared cell of a summary."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import (
    DEFAULT_POOLINGS,
    DEFAULT_SETTINGS,
    Option,
    default_of,
    own_pooling_rows,
    small_n_of,
)
from emb.analyses._select import provenance_attrs
from emb.analyses.weat._contexts import is_context_suite, per_stimulus
from emb.analyses.weat._resolve import TEST_OPTIONS, gather_test, resolve_tests
from emb.analyses.weat._tests_file import ROLES, TestSpec
from emb.options import MIN_WORDS, WORD_SET

__all__ = ["TEST_CHOICE", "declared_cell", "per_test", "test_attrs", "with_groups"]

#: The options that choose the tests (as ``weat``'s) and flag small sets.
TEST_CHOICE = (
    *TEST_OPTIONS,
    Option(name="include_excluded", type="bool", help="keep the names Caliskan et al. dropped (WEAT3-5)"),
    MIN_WORDS,
    WORD_SET,
)


def per_test(
    ds: xr.Dataset,
    build: Callable[[xr.Dataset, TestSpec, list[str], dict[str, int]], xr.Dataset],
    *,
    tests: Any,
    x: Any,
    y: Any,
    a: Any,
    b: Any,
    settings: Any,
    include_excluded: bool,
    min_words: int,
) -> tuple[xr.Dataset, list[TestSpec], dict[str, str]]:
    """``build(ds, test, settings, n)`` for every resolved test (its vectors via
    :func:`gather_test`), concatenated over ``test`` with ``n_x`` … ``n_b``, ``small_n`` and the
    groups as coordinates.

    A suite of words in many contexts (``ceat``) is read as one vector per word, the mean of its
    contexts (:func:`~emb.analyses.weat._contexts.per_stimulus`); the result's ``contexts``
    attribute says so (keep it: :func:`test_attrs` does)."""
    if is_context_suite(ds):
        ds = per_stimulus(ds)
    test_list, dropped, chosen = resolve_tests(ds, tests=tests, x=x, y=y, a=a, b=b,
                                               settings=settings, include_excluded=include_excluded)
    parts = []
    for test in test_list:
        n = {role: len(test.words[role]) for role in ROLES}
        part = build(ds, test, chosen, n).expand_dims(test=[test.name])
        for role in ROLES:
            part[f"n_{role.lower()}"] = ("test", [n[role]])
        part["small_n"] = ("test", [small_n_of(n, min_words)])
        parts.append(part.assign_coords(
            {f"{role.lower()}_group": ("test", [test.groups[role]]) for role in ROLES}))
    out = xr.concat(parts, dim="test", data_vars="all", coords="minimal", compat="override",
                    join="outer")
    out["small_n"].attrs["long_name"] = f"a word set has fewer than {int(min_words)} words"
    out.attrs = {k: ds.attrs[k] for k in ("contexts",) if k in ds.attrs}
    return out, test_list, dropped


def vectors(ds: xr.Dataset, test: TestSpec, settings: list[str]) -> xr.DataArray:
    """The test's vectors with items and features in one chunk (lazy when ``ds`` is)."""
    emb = gather_test(ds, test, settings)
    return emb.chunk({"item": -1, "feature": -1}) if emb.chunks is not None else emb


def test_attrs(name: str, test_list: list[TestSpec], dropped: Mapping[str, str], ds: xr.Dataset,
               **options: Any) -> dict[str, Any]:
    """The result's attributes: the options, the words of every test, what was dropped."""
    return {
        "analysis": name,
        **{k: (str(bool(v)).lower() if isinstance(v, bool) else v) for k, v in options.items()},
        "dropped": json.dumps(dict(dropped), ensure_ascii=False),
        "words": json.dumps({t.name: t.words for t in test_list}, ensure_ascii=False),
        **provenance_attrs(ds),
    }


def with_groups(frame: pd.DataFrame, result: xr.Dataset) -> pd.DataFrame:
    """``frame`` with the tests' group names (x_group … b_group) joined on ``test``."""
    cols = [c for c in ("x_group", "y_group", "a_group", "b_group") if c in result.coords]
    if not cols or "test" not in frame:
        return frame
    groups = pd.DataFrame({"test": [str(t) for t in result["test"].values],
                           **{c: [str(v) for v in np.asarray(result[c].values)] for c in cols}})
    return frame.merge(groups, how="left", on="test")


def declared_cell(frame: pd.DataFrame) -> tuple[pd.DataFrame, Any, str]:
    """The rows of the declared cell's setting and pooling (``bleached`` …, ``last`` …; a model
    without that pooling at its own, a static store's ``static``), the setting and the words
    for the pooling (every row counts as a value: the callers dropped their NaN rows; see :func:`emb.analyses._analysis.own_pooling_rows`)."""
    setting = default_of(frame["setting"].unique(), DEFAULT_SETTINGS)
    cell, pooling = own_pooling_rows(frame[frame["setting"] == setting], None, DEFAULT_POOLINGS)
    return cell, setting, pooling


def top_rows(cell: pd.DataFrame) -> list[tuple[dict[str, Any], pd.Series]]:
    """Per (model, test) the row of its top layer, with its keys."""
    keys = [k for k in ("model", "test") if k in cell]
    out = []
    for key, group in cell.groupby(keys, sort=False):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        out.append((row, group.loc[group["layer"].idxmax()]))
    return out
