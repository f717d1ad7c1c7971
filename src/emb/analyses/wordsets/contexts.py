"""A suite of words in many contexts (a ``ceat`` suite) as one vector per word, for the families
over WEAT-style tests that read one vector per word and setting (peers, ml-eat, robustness).

A CEAT suite holds each stimulus in up to ``--contexts`` corpus sentences (items labelled
``stimulus``, its tests ``tests`` = ``"T1|T2"`` and its roles there ``roles`` = ``"X|A"``). CEAT
itself samples one context per stimulus many times (``emb analyze ceat``); a metric defined on one
vector per word reads each stimulus' vector as the mean of its contexts' vectors, per setting,
layer and pooling: the aggregated, decontextualised representation of Bommasani, Davis & Cardie
(ACL 2020), computed in float64 before any cosine. The tests are the suite's own: a stimulus in two
tests gets one item per test (and role), labelled ``test``, ``role`` and ``group`` as the ``weat``
suite's items are, so the suite's tests, a test file and ``--x … --b`` all apply unchanged.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._select import ITEM, item_text, item_values, text_column
from emb.errors import AnalysisError

__all__ = ["CONTEXT_LABELS", "contexts_record", "is_context_suite", "per_stimulus"]

#: The labels that make a suite one of words in many contexts (a ``ceat`` suite).
CONTEXT_LABELS = ("stimulus", "tests", "roles")

#: Labels of a per-stimulus item kept from the stimulus' first context (the same for all of them).
_KEPT = ("stimulus_set", "excluded", "frequency")


def is_context_suite(ds: xr.Dataset) -> bool:
    """Whether ``ds`` labels its items by stimulus, tests and roles (a ``ceat`` suite) rather
    than by one ``test``/``role`` per item (the ``weat`` suite)."""
    return all(label in ds.variables for label in CONTEXT_LABELS) and "test" not in ds.variables


def _segment_means(data: Any, codes: np.ndarray, counts: np.ndarray) -> Any:
    """Per group g, the mean over the items i with ``codes[i] == g`` of ``data[i]`` (float64;
    lazy when ``data`` is a dask array: each item chunk contributes its groups' sums through a
    one-hot matrix of its own rows, so no (groups × items) matrix is ever whole)."""
    n_groups = counts.size
    flat_shape = data.shape[1:]
    if not hasattr(data, "dask"):
        out = np.zeros((n_groups, *flat_shape), dtype=np.float64)
        np.add.at(out, codes, np.asarray(data, dtype=np.float64))
        return out / counts.reshape((-1,) + (1,) * len(flat_shape))
    import dask.array as da

    code_blocks = da.from_array(codes, chunks=(data.chunks[0],))
    weights = (1.0 / counts).astype(np.float64)

    def one_hot(c: np.ndarray) -> np.ndarray:
        return (np.arange(n_groups)[:, None] == c[None, :]) * weights[:, None]

    matrix = code_blocks.map_blocks(one_hot, new_axis=0, chunks=((n_groups,), data.chunks[0]),
                                    dtype=np.float64)
    return da.tensordot(matrix, data.astype(np.float64), axes=((1,), (0,)))


def per_stimulus(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` (a ``ceat`` suite) with one item per stimulus, setting and test membership: its
    ``embedding`` the mean of the stimulus' contexts in that setting (float64), labelled
    ``word`` (the stimulus), ``setting``, ``test``, ``role``, ``group``, ``n_contexts`` and
    ``context`` (``"mean of N contexts"``, the same for every membership of a stimulus, so a
    word chosen by a test file counts once). Lazy when ``ds`` is; attributes kept, plus
    ``contexts`` (:func:`contexts_record`).

    Raises
    ------
    AnalysisError
        If ``ds`` has no ``embedding`` or a stimulus lists a different number of tests and roles.

    Examples
    --------
    >>> from emb.analyses import ANALYSES
    >>> ds, _ = ANALYSES["ceat"].example()
    >>> words = per_stimulus(ds)
    >>> int(words.sizes["item"]), sorted(set(words["test"].values.tolist()))
    (36, ['T1', 'T2'])
    """
    if "embedding" not in ds.variables:
        raise AnalysisError("the Dataset has no 'embedding' variable: pass a store suite group")
    stimulus = item_text(ds, "stimulus")
    setting = (item_text(ds, "setting") if "setting" in ds.variables
               else np.full(stimulus.shape, "", dtype=object))
    keys = pd.MultiIndex.from_arrays([setting, stimulus])
    codes, groups = pd.factorize(keys)
    codes = np.asarray(codes, dtype=np.int64)
    counts = np.bincount(codes, minlength=len(groups)).astype(np.int64)
    first = np.unique(codes, return_index=True)[1]
    # read as text at each group's first item only (not a fixed-width copy of every item's)
    tests_col = text_column(item_values(ds, "tests")[first])
    roles_col = text_column(item_values(ds, "roles")[first])
    groups_col = (text_column(item_values(ds, "groups")[first]) if "groups" in ds.variables
                  else np.full(first.shape, "", dtype=object))
    rows: list[int] = []
    test, role, group = [], [], []
    for g in range(len(groups)):
        ts, rs = tests_col[g].split("|"), roles_col[g].split("|")
        gs = groups_col[g].split("|") if groups_col[g] else [""] * len(ts)
        if len(ts) != len(rs):
            raise AnalysisError(
                f"stimulus {str(groups[g][1])!r} lists {len(ts)} tests ({tests_col[g]!r}) but "
                f"{len(rs)} roles ({roles_col[g]!r}); the suite's labels are damaged: extract it again")
        for k, (t, r) in enumerate(zip(ts, rs, strict=True)):
            if not t:
                continue
            rows.append(g)
            test.append(t)
            role.append(r)
            group.append(gs[k] if k < len(gs) and gs[k] else r)
    emb = ds["embedding"]
    other = [d for d in emb.dims if d != ITEM]
    emb = emb.transpose(ITEM, *other)
    means = _segment_means(emb.data, codes, counts)
    rows_ix = np.asarray(rows, dtype=np.int64)
    labels: dict[str, Any] = {
        "word": (ITEM, np.asarray([groups[g][1] for g in rows], dtype=object)),
        "setting": (ITEM, np.asarray([groups[g][0] for g in rows], dtype=object)),
        "test": (ITEM, np.asarray(test, dtype=object)),
        "role": (ITEM, np.asarray(role, dtype=object)),
        "group": (ITEM, np.asarray(group, dtype=object)),
        "n_contexts": (ITEM, counts[rows_ix]),
        "context": (ITEM, np.asarray([f"mean of {int(counts[g])} contexts" for g in rows], dtype=object)),
    }
    for name in _KEPT:
        if name in ds.variables and ds[name].dims == (ITEM,):
            labels[name] = (ITEM, np.asarray(ds[name].values)[first][rows_ix])
    coords = {k: v for k, v in ds.coords.items() if ITEM not in v.dims}
    out = xr.Dataset({"embedding": ((ITEM, *other), means[rows_ix])},
                     coords={**coords, **labels}, attrs=dict(ds.attrs))
    out["embedding"].attrs = dict(ds["embedding"].attrs)
    out.attrs["contexts"] = contexts_record(counts)
    return out


def contexts_record(counts: np.ndarray) -> str:
    """The ``contexts`` attribute of a result computed on :func:`per_stimulus`: JSON with how a
    word's vector was made (``pooled``: the mean of its contexts), the number of stimuli and the
    fewest, median and most contexts behind one."""
    counts = np.asarray(counts, dtype=np.int64)
    return json.dumps({
        "pooled": "mean of each stimulus' contexts",
        "stimuli": int(counts.size),
        "min": int(counts.min()) if counts.size else 0,
        "median": float(np.median(counts)) if counts.size else 0.0,
        "max": int(counts.max()) if counts.size else 0,
    })
