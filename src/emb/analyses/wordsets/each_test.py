"""Running a kernel over every resolved WEAT-style test: the test's vectors, the per-test sizes
and flags, the result's attributes."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import xarray as xr

from emb.analyses._analysis import Option, small_n_of
from emb.analyses._select import provenance_attrs
from emb.analyses.wordsets.contexts import is_context_suite, per_stimulus
from emb.analyses.wordsets.resolve import TEST_OPTIONS, gather_test, resolve_tests
from emb.analyses.wordsets.tests_file import ROLES, TestSpec
from emb.options import MIN_WORDS, WORD_SET

__all__ = ["TEST_CHOICE", "per_test", "test_attrs", "vectors"]

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
    contexts (:func:`~emb.analyses.wordsets.contexts.per_stimulus`); the result's ``contexts``
    attribute says so (keep it: :func:`test_attrs` does)."""
    if is_context_suite(ds):
        ds = per_stimulus(ds)
    ds = _merged_chunks(ds)
    test_list, dropped, chosen = resolve_tests(ds, tests=tests, x=x, y=y, a=a, b=b,
                                               settings=settings, include_excluded=include_excluded)
    parts, sizes = [], []
    for test in test_list:
        n = {role: len(test.words[role]) for role in ROLES}
        parts.append(build(ds, test, chosen, n).expand_dims(test=[test.name]))
        sizes.append(n)
    out = xr.concat(parts, dim="test", data_vars="all", coords="minimal", compat="override",
                    join="outer")
    # the per-test sizes, flag and groups, set once on the concatenated result (not per part)
    for role in ROLES:
        out[f"n_{role.lower()}"] = ("test", [n[role] for n in sizes])
    out["small_n"] = ("test", [small_n_of(n, min_words) for n in sizes])
    out = out.assign_coords({f"{role.lower()}_group": ("test", [t.groups[role] for t in test_list])
                             for role in ROLES})
    out["small_n"].attrs["long_name"] = f"a word set has fewer than {int(min_words)} words"
    out.attrs = {k: ds.attrs[k] for k in ("contexts",) if k in ds.attrs}
    return out, test_list, dropped


#: Largest block (bytes, as stored) of one test's vectors handed to one kernel call, and of the
#: store's embedding after its layers and poolings are merged into one chunk.
_MAX_BLOCK_BYTES = 64 * 2**20


def _merged_chunks(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with its lazy embedding's layers and poolings (and any other non-item dim) in one
    chunk per block of items, while a block stays under :data:`_MAX_BLOCK_BYTES`: the tests'
    gathers then read a few blocks, not one task per stored (layer, pooling) chunk. Values
    unchanged."""
    emb = ds["embedding"] if "embedding" in ds.variables else None
    if emb is None or emb.chunks is None or "item" not in emb.dims:
        return ds
    sizes = {dim: max(emb.chunksizes[dim]) for dim in emb.dims}
    block = emb.dtype.itemsize * math.prod(sizes.values())
    merged = {}
    for dim in emb.dims:
        grow = emb.sizes[dim] / sizes[dim]
        if dim == "item" or grow == 1 or block * grow > _MAX_BLOCK_BYTES:
            continue
        merged[dim] = -1
        block *= grow
    return ds.assign(embedding=emb.chunk(merged)) if merged else ds


def vectors(ds: xr.Dataset, test: TestSpec, settings: list[str]) -> xr.DataArray:
    """The test's vectors with items and features in one chunk (lazy when ``ds`` is), and the
    other dims (setting, layer, pooling) merged into it while the block stays under
    :data:`_MAX_BLOCK_BYTES`: a test's kernel runs over its cells in a few calls, not one per
    stored chunk (a kernel is vectorised over the leading cells, its numbers are the same)."""
    emb = gather_test(ds, test, settings)
    if emb.chunks is None:
        return emb
    merged: dict[str, int] = {"item": -1, "feature": -1}
    block = emb.dtype.itemsize * emb.sizes["item"] * emb.sizes["feature"]
    for dim in ("pooling", "layer", "setting"):
        if dim in emb.dims and block * emb.sizes[dim] <= _MAX_BLOCK_BYTES:
            merged[dim] = -1
            block *= emb.sizes[dim]
    return emb.chunk(merged)


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
