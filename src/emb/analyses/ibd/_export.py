"""An IBD result's declared cell, and the words detected there exported as CEAT/WEAT tests.

The cell (default setting and pooling, per model the top layer with a threshold) is where the
summary reads its headline and where :func:`ceat_tests` takes the detected words from; the
analysis writes them as ``ibd_tests.json`` (and to ``--export-tests FILE``), a test file that
``emb extract --suite ceat --test FILE`` reads.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import xarray as xr

from emb.analyses._analysis import DEFAULT_POOLINGS, DEFAULT_SETTINGS, default_of
from emb.analyses.ibd._design import METHODS

__all__ = ["DETECTOR", "ceat_tests", "declared_cell", "extra_files", "models", "one_model", "top_layer"]

#: The result's dimension of the two methods (the tables' column ``method``; not "method",
#: which ``xarray.Dataset.sel`` takes as its own keyword).
DETECTOR = "detector"

# -- the declared cell -----------------------------------------------------------------------------
def declared_cell(result: xr.Dataset) -> dict[str, Any]:
    """The pre-declared cell: the default setting (bleached, else alone) and pooling (last, …,
    static), and per model the top layer with a threshold."""
    setting = default_of([str(s) for s in result["setting"].values], DEFAULT_SETTINGS)
    poolings = [str(p) for p in result["pooling"].values]
    if "threshold" in result:  # the poolings with a threshold (one model of a static store: static)
        t = result["threshold"].transpose("pooling", ...)
        has = np.isfinite(np.asarray(t.values, dtype=np.float64)).reshape(len(poolings), -1).any(1)
        poolings = [p for p, ok in zip(poolings, has, strict=True) if ok] or poolings
    return {"setting": setting, "pooling": default_of(poolings, DEFAULT_POOLINGS)}


def models(result: xr.Dataset) -> list[Any]:
    return [str(m) for m in result["model"].values] if "model" in result.dims else [None]


def one_model(result: xr.Dataset, model: Any) -> xr.Dataset:
    return result.sel(model=model) if model is not None else result


def top_layer(res: xr.Dataset, setting: str, pooling: str) -> int | None:
    t = res["threshold"].sel(setting=setting, pooling=pooling).transpose(..., "layer")
    ok = np.isfinite(np.asarray(t.values, dtype=np.float64)).reshape(-1, t.sizes["layer"]).any(0)
    layers = np.asarray(res["layer"].values)[ok]
    return int(layers.max()) if layers.size else None


# -- CEAT tests from the detected words ------------------------------------------------------------
def ceat_tests(result: xr.Dataset) -> dict[str, Any]:
    """The detected words at the declared cell as CEAT/WEAT tests (``ceat_weat_groups.json``
    layout): per target group and method, X = the group's names, Y = the contrast's names (the
    suite's full lists), A = the words detected for the group, B = the words detected for the
    contrast by the same method; words detected for both are left out of both (as the paper's
    I1 did with *assertive*). Tests with an empty A or B are left out (listed in ``_note``). Each
    test's ``name`` is its readable name ("African-American females vs European-American males
    names × the words IBD detected for each").
    """
    from emb._version import __version__

    contrast = str(result.attrs.get("contrast", ""))
    names = json.loads(result.attrs.get("names", "{}"))
    titles = json.loads(result.attrs.get("titles", "{}"))

    def title(key: str) -> str:
        return str(titles.get(key) or key.replace("_", " "))

    roles = dict(zip(result["group"].values.tolist(), result["group_role"].values.tolist(),
                     strict=True))
    tests: dict[str, Any] = {}
    skipped, cells = [], []
    for model in models(result):
        res = one_model(result, model)
        cell = declared_cell(res)  # this model's own pooling (a static store: static)
        layer = top_layer(res, cell["setting"], cell["pooling"])
        if layer is None or roles.get(contrast) is None:
            skipped.append(f"{model or 'the store'}: no contrast group or no threshold")
            continue
        cells.append(f"{model + ': ' if model else ''}layer {layer}")
        det = res["detected"].sel(setting=cell["setting"], pooling=cell["pooling"], layer=layer)
        words = np.array([str(w) for w in res["attribute"].values.tolist()], dtype=object)
        for method in METHODS:
            b_words = words[np.asarray(det.sel({"group": contrast, DETECTOR: method}).values, dtype=bool)]
            for group, role in roles.items():
                if role != "target":
                    continue
                a_words = words[np.asarray(det.sel({"group": group, DETECTOR: method}).values, dtype=bool)]
                a = [w for w in a_words if w not in set(b_words)]
                b = [w for w in b_words if w not in set(a_words)]
                name = f"{group}_{method}" if len(models(result)) == 1 else f"{model}/{group}_{method}"
                if not a or not b:
                    skipped.append(f"{name} (A {len(a)} words, B {len(b)})")
                    continue
                tests[name] = {
                    "name": f"{title(group)} vs {title(contrast)} names × the words "
                            f"{method.upper()} detected for each",
                    "X_name": group, "Y_name": contrast,
                    "A_name": f"{group}_{method}", "B_name": f"{contrast}_{method}_for_{group}",
                    "X": names.get(group, []), "Y": names.get(contrast, []), "A": a, "B": b,
                }
    source = (
        f"emb {__version__} ibd analysis ({result.attrs.get('method', 'default')}): words detected "
        f"in setting {cell['setting']!r}, pooling {cell['pooling']!r}, {', '.join(cells) or '-'}; "
        f"threshold {result.attrs.get('thresholds', 'exact')} (max TPR - FPR, t >= 0), EIBD rule "
        f"{result.attrs.get('rule')!r}, EIBD threshold {result.attrs.get('eibd_threshold')!r}; "
        f"store {result.attrs.get('store', '?')}"
    )
    note = (
        "A = words detected for X's group, B = words detected for the contrast group Y by the same "
        "method at the same cell; words detected for both are left out of both. X and Y are the "
        "groups' full name lists. Words keep the suite's spelling (hyphens kept)."
        + (f" Left out: {'; '.join(skipped)}." if skipped else "")
    )
    return {"_source": source, "_note": note, "tests": tests}


def extra_files(result: xr.Dataset) -> dict[str, bytes]:
    """``ibd_tests.json`` in the output directory, and the same at ``export_tests`` if given."""
    content = (json.dumps(ceat_tests(result), indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    out = {"ibd_tests.json": content}
    if result.attrs.get("export_tests"):
        out[str(result.attrs["export_tests"])] = content
    return out
