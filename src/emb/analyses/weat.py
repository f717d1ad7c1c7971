"""WEAT: the Word Embedding Association Test, per test, setting, layer and pooling, lazily.

The cosines between every target word (X ∪ Y) and every attribute word (A ∪ B) are computed once
per (layer, pooling); the permutation test then re-splits only the per-word association scores
``s(w, A, B)`` (exactly when the number of splits is small, by seeded Monte Carlo otherwise).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses import stats
from emb.analyses._analysis import (
    DEFAULT_POOLINGS,
    DEFAULT_SETTINGS,
    Analysis,
    Option,
    Summary,
    coord_values,
    default_of,
    format_p,
    front,
    integer_columns,
    slug,
    tidy_frame,
)
from emb.analyses._select import (
    item_values,
    label_mask,
    provenance_attrs,
    select_words,
    settings_present,
    truthy,
    unique_in_order,
)
from emb.errors import AnalysisError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "weat"]

ROLES = ("X", "Y", "A", "B")
#: Largest embedding block (bytes, as stored) handed to one kernel call.
_MAX_BLOCK_BYTES = 128 * 2**20
_DEFAULT_SETTINGS = ("bleached", "alone")


@dataclass(frozen=True, kw_only=True)
class _Test:
    name: str
    words: dict[str, list[str]]  # role -> words
    groups: dict[str, str]  # role -> group name
    labelled: bool  # True: items selected by the test/role labels


def _natural_key(name: str) -> tuple[str, int, str]:
    m = re.match(r"^(.*?)(\d+)(.*)$", name)
    return (m.group(1), int(m.group(2)), m.group(3)) if m else (name, -1, "")


def _parse_choice(name: str, value: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise AnalysisError(f"{name} must be one of {list(allowed)}; got {value!r}")
    return value


def _parse_custom(
    x: Sequence[str] | None,
    y: Sequence[str] | None,
    a: Sequence[str] | None,
    b: Sequence[str] | None,
    tests: object,
) -> _Test | None:
    given = {"x": x, "y": y, "a": a, "b": b}
    if all(v is None for v in given.values()):
        return None
    absent = [k for k, v in given.items() if v is None]
    if absent:
        raise AnalysisError(
            f"a custom WEAT needs all four word lists x, y, a and b; {absent} missing"
        )
    if tests is not None:
        raise AnalysisError("give either tests= (from the suite) or x/y/a/b word lists, not both")
    words: dict[str, list[str]] = {}
    for role, key in zip(ROLES, ("x", "y", "a", "b"), strict=True):
        value = given[key]
        if isinstance(value, str):
            raise AnalysisError(f"{key} must be a list of words, not the string {value!r}")
        words[role] = [str(w) for w in value]  # type: ignore[union-attr]
        if not words[role]:
            raise AnalysisError(f"word list {key} is empty")
    return _Test(name="custom", words=words, groups={r: r for r in ROLES}, labelled=False)


def _suite_tests(
    ds: xr.Dataset, tests: str | Sequence[str] | None, include_excluded: bool
) -> list[_Test]:
    for label in ("test", "role"):
        if label not in ds.variables:
            raise AnalysisError(
                f"this Dataset has no {label!r} label: it is not a 'weat' suite. "
                "Extract the built-in 'weat' suite, or give your own x/y/a/b word lists"
            )
    test_col = item_values(ds, "test").astype(str)
    present = sorted({t for t in test_col if t}, key=_natural_key)
    if tests is None:
        names = present
    else:
        names = [tests] if isinstance(tests, str) else [str(t) for t in tests]
        unknown = [t for t in names if t not in present]
        if unknown:
            raise AnalysisError(f"tests {unknown} are not in this suite; it has {present}")
    if not names:
        raise AnalysisError("the suite defines no WEAT tests (its 'test' label is empty)")
    role_col = item_values(ds, "role").astype(str)
    words_col = item_values(ds, "word").astype(str)
    group_col = item_values(ds, "group").astype(str) if "group" in ds.variables else None
    excluded = (
        truthy(item_values(ds, "excluded"))
        if "excluded" in ds.variables and not include_excluded
        else np.zeros(test_col.shape, dtype=bool)
    )
    out = []
    for name in names:
        words: dict[str, list[str]] = {}
        groups: dict[str, str] = {}
        for role in ROLES:
            mask = (test_col == name) & (role_col == role) & ~excluded
            words[role] = unique_in_order(words_col[mask])
            if not words[role]:
                raise AnalysisError(
                    f"test {name!r} has no {role} words in this suite"
                    + (" after removing the excluded ones" if excluded.any() else "")
                )
            names_here = [g for g in (group_col[mask] if group_col is not None else []) if g]
            groups[role] = names_here[0] if names_here else role
        out.append(_Test(name=name, words=words, groups=groups, labelled=True))
    return out


def _weat_kernel(
    emb: np.ndarray,
    *,
    n_x: int,
    n_y: int,
    n_a: int,
    ddof: int,
    alternative: str,
    n_permutations: int,
    exact_limit: int,
    seed: int,
    method: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """emb (..., item, feature) with items X, Y, A, B in that order -> (es, S, p) of shape (...)."""
    with stats.single_threaded_blas():
        u = stats.unit(emb)
        n_t = n_x + n_y
        cos = np.matmul(u[..., :n_t, :], np.swapaxes(u[..., n_t:, :], -1, -2))  # (..., n_t, |A∪B|)
        s = stats.association(cos[..., :n_a], cos[..., n_a:])  # (..., n_t): computed once
        es = stats.weat_effect_size(s[..., :n_x], s[..., n_x:], ddof=ddof)
        res = stats.permutation_test(
            s,
            n_x,
            alternative=alternative,  # type: ignore[arg-type]
            n_permutations=n_permutations,
            exact_limit=exact_limit,
            seed=seed,
            method=method,  # type: ignore[arg-type]
        )
    return (
        np.asarray(es, dtype=np.float64),
        np.asarray(res.statistic, dtype=np.float64),
        np.asarray(res.pvalue, dtype=np.float64),
    )


def _one_test(
    ds: xr.Dataset,
    test: _Test,
    settings: list[str],
    *,
    ddof: int,
    alternative: str,
    n_permutations: int,
    exact_limit: int,
    seed: int,
    perm_method: str,
) -> xr.Dataset:
    per_setting = []
    for setting in settings:
        parts = []
        for role in ROLES:
            labels = {"test": test.name, "role": role} if test.labelled else {}
            sel = select_words(ds, test.words[role], setting=setting, **labels)
            parts.append(sel.embedding.reset_coords(drop=True).drop_vars("item", errors="ignore"))
        per_setting.append(xr.concat(parts, dim="item"))
    emb = xr.concat(per_setting, dim="setting").assign_coords(setting=settings)
    if emb.chunks is not None:
        # one kernel call (one set of random splits) per setting and as many layers/poolings as
        # fit in a block: the store's chunks are often one layer and pooling each
        merged: dict[str, int] = {"item": -1, "feature": -1}
        block = emb.sizes["item"] * emb.sizes["feature"] * emb.dtype.itemsize
        for d in (d for d in emb.dims if d not in ("item", "feature", "setting")):
            if block * emb.sizes[d] <= _MAX_BLOCK_BYTES:
                merged[d] = -1
                block *= emb.sizes[d]
        emb = emb.chunk(merged)
    n = {role: len(test.words[role]) for role in ROLES}
    if n["X"] + n["Y"] - ddof <= 0:
        raise AnalysisError(
            f"test {test.name!r}: {n['X'] + n['Y']} target words cannot give a standard deviation "
            f"with ddof={ddof}"
        )
    es, stat, p = xr.apply_ufunc(
        _weat_kernel,
        emb,
        input_core_dims=[["item", "feature"]],
        output_core_dims=[[], [], []],
        kwargs={
            "n_x": n["X"],
            "n_y": n["Y"],
            "n_a": n["A"],
            "ddof": ddof,
            "alternative": alternative,
            "n_permutations": n_permutations,
            "exact_limit": exact_limit,
            "seed": seed,
            "method": perm_method,
        },
        dask="parallelized",
        output_dtypes=[np.float64, np.float64, np.float64],
        dask_gufunc_kwargs={"allow_rechunk": True},
    )
    exact = perm_method != "reference" and math.comb(n["X"] + n["Y"], n["X"]) <= exact_limit
    out = xr.Dataset({"effect_size": es, "statistic": stat, "p": p})
    out = out.expand_dims(test=[test.name])
    out["n_permutations"] = ("test", [0 if exact else int(n_permutations)])
    for role in ROLES:
        out[f"n_{role.lower()}"] = ("test", [n[role]])
    return out.assign_coords(
        {f"{role.lower()}_group": ("test", [test.groups[role]]) for role in ROLES}
    )


def weat(
    ds: xr.Dataset,
    *,
    tests: str | Sequence[str] | None = None,
    x: Sequence[str] | None = None,
    y: Sequence[str] | None = None,
    a: Sequence[str] | None = None,
    b: Sequence[str] | None = None,
    settings: str | Sequence[str] | None = None,
    ddof: int = 1,
    alternative: stats.Alternative = "greater",
    n_permutations: int = 100_000,
    exact_limit: int = 1_000_000,
    seed: int = 0,
    include_excluded: bool = False,
    method: Literal["default", "reference"] = "default",
    correction: stats.CorrectionMethod = "none",
    correction_over: Literal["test", "layer", "test+layer"] = "test",
) -> xr.Dataset:
    """Word Embedding Association Test effect sizes and permutation p-values, lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        A store suite group: ``embedding(item, layer, pooling, feature)`` with item labels
        ``word`` and ``setting`` (and, for the built-in ``weat`` suite, ``test``, ``role``
        (X/Y/A/B), ``group`` and ``excluded``).
    tests : str or sequence of str, optional
        Tests of the suite to run (default: every test in it, e.g. WEAT1–WEAT10).
    x, y, a, b : sequence of str, optional
        Your own target (X, Y) and attribute (A, B) word lists, instead of ``tests``; the test
        is then called ``"custom"`` and words are looked up by word only.
    settings : str or sequence of str, optional
        Contextual settings (default: those of ``bleached``, ``alone`` present in ``ds``,
        otherwise every setting present).
    ddof : int, default 1
        Delta degrees of freedom of the effect size's standard deviation (1 in the authors'
        code; WEFE uses 0).
    alternative : {"greater", "less", "two-sided"}, default "greater"
    n_permutations : int, default 100_000
        Random splits for a Monte-Carlo p-value when exact enumeration is too big.
    exact_limit : int, default 1_000_000
        Enumerate all ``C(|X|+|Y|, |X|)`` splits when there are at most this many.
    seed : int, default 0
        Seed of the random splits (recorded in the attributes).
    include_excluded : bool, default False
        Keep the target names Caliskan et al. dropped (label ``excluded``, WEAT3–5).
    method : {"default", "reference"}, default "default"
        ``reference`` computes the p-value as the authors' code does: ``n_permutations`` random
        splits, a normal distribution fitted to them, its upper tail.
    correction : {"none", "holm", "bh"}, default "none"
        Multiple-comparison correction, stored in ``p_adjusted`` beside the raw ``p``.
    correction_over : {"test", "layer", "test+layer"}, default "test"
        The family: the tests (separately for every setting, layer and pooling), the layers
        (for every test, setting and pooling), or all tests × layers together.

    Returns
    -------
    xarray.Dataset
        Dims ``(test, setting, layer, pooling)``:

        - ``effect_size``: Caliskan's d;
        - ``statistic``: ``S = Σ_X s − Σ_Y s``;
        - ``p``, ``p_adjusted``: permutation p-values (one-sided ``greater`` by default);

        and per ``test``: ``n_permutations`` (0 = exact), ``n_x``, ``n_y``, ``n_a``, ``n_b``,
        with coordinates ``x_group`` … ``b_group``.  Attributes: every option, the word lists
        (JSON) and the store provenance.  Lazy when the embedding is dask-backed.

    Raises
    ------
    MissingStimuliError
        If a test's word is not in a setting; the message names the words.
    AnalysisError
        For invalid options.

    Notes
    -----
    ``s(w,A,B) = mean_a cos(w,a) − mean_b cos(w,b)``;
    ``d = (mean_{x∈X} s(x) − mean_{y∈Y} s(y)) / std_{w∈X∪Y} s(w)``;
    p = share of re-splits of ``X ∪ Y`` into sets of the original sizes whose statistic is at
    least the observed one (see :func:`emb.analyses.stats.permutation_test`).

    References
    ----------
    Caliskan, A., Bryson, J. J. & Narayanan, A. (2017). Semantics derived automatically from
    language corpora contain human-like biases. *Science* 356(6334), 183–186.

    Examples
    --------
    >>> ds = emb.open_store("gpt2.zarr").dataset("weat")  # doctest: +SKIP
    >>> res = weat(ds, tests=["WEAT1", "WEAT2"], correction="holm").compute()  # doctest: +SKIP
    >>> res.effect_size.sel(setting="bleached", pooling="last")  # doctest: +SKIP
    """
    alternative = _parse_choice("alternative", alternative, ("greater", "less", "two-sided"))  # type: ignore[assignment]
    method = _parse_choice("method", method, ("default", "reference"))  # type: ignore[assignment]
    correction = _parse_choice("correction", correction, ("none", "holm", "bh"))  # type: ignore[assignment]
    correction_over = _parse_choice(  # type: ignore[assignment]
        "correction_over", correction_over, ("test", "layer", "test+layer")
    )
    if not isinstance(ddof, int | np.integer) or ddof < 0:
        raise AnalysisError(f"ddof must be a non-negative integer; got {ddof!r}")
    if int(n_permutations) < 2:
        raise AnalysisError(f"n_permutations must be at least 2; got {n_permutations}")
    if "embedding" not in ds.variables:
        raise AnalysisError("the Dataset has no 'embedding' variable: pass a store suite group")

    custom = _parse_custom(x, y, a, b, tests)
    test_list = [custom] if custom is not None else _suite_tests(ds, tests, include_excluded)

    present = settings_present(ds)
    if settings is None:
        chosen = [s for s in _DEFAULT_SETTINGS if s in present] or present
    else:
        chosen = [settings] if isinstance(settings, str) else [str(s) for s in settings]
        for s in chosen:
            if not label_mask(ds, setting=s).any():
                raise AnalysisError(f"setting {s!r} is not in this suite; it has {present}")

    perm_method = "reference" if method == "reference" else "exact-or-monte-carlo"
    parts = [
        _one_test(
            ds,
            test,
            chosen,
            ddof=int(ddof),
            alternative=alternative,
            n_permutations=int(n_permutations),
            exact_limit=int(exact_limit),
            seed=int(seed),
            perm_method=perm_method,
        )
        for test in test_list
    ]
    out = xr.concat(parts, dim="test", data_vars="all", coords="minimal", compat="override", join="exact")
    out = out.transpose("test", "setting", "layer", "pooling", ...)
    family = {"test": ("test",), "layer": ("layer",), "test+layer": ("test", "layer")}[correction_over]
    if correction == "none":
        out["p_adjusted"] = out["p"].copy()
    else:
        out["p_adjusted"] = stats.adjust(out["p"], method=correction, dims=family)
    out["effect_size"].attrs["long_name"] = "WEAT effect size (Cohen's d)"
    out["statistic"].attrs["long_name"] = "sum_X s(x,A,B) - sum_Y s(y,A,B)"
    out["p"].attrs["long_name"] = f"permutation p-value ({alternative})"
    out["p_adjusted"].attrs["long_name"] = f"p-value adjusted over {correction_over} ({correction})"
    out["n_permutations"].attrs["long_name"] = "random splits used (0 = exact enumeration)"
    out.attrs = {
        "analysis": "weat",
        "ddof": int(ddof),
        "alternative": alternative,
        "n_permutations": int(n_permutations),
        "exact_limit": int(exact_limit),
        "seed": int(seed),
        "include_excluded": str(bool(include_excluded)).lower(),
        "method": method,
        "correction": correction,
        "correction_over": correction_over,
        "words": json.dumps({t.name: t.words for t in test_list}, ensure_ascii=False),
        **provenance_attrs(ds),
    }
    return out


# -- tables, figures, summary ----------------------------------------------------------------------
def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``weat``: one row per (model, test, setting, pooling, layer)."""
    frame = tidy_frame(result, ["effect_size", "statistic", "p", "p_adjusted"])
    per_test = [v for v in ("n_permutations", "n_x", "n_y", "n_a", "n_b") if v in result]
    groups = [c for c in ("x_group", "y_group", "a_group", "b_group") if c in result.coords]
    if per_test or groups:
        extra = result[per_test].reset_coords(drop=True)
        for g in groups:
            extra[g] = (result[g].dims, np.asarray(result[g].values))
        frame = frame.merge(extra.to_dataframe().reset_index(), how="left")
    frame = integer_columns(frame, ("layer", "n_permutations", "n_x", "n_y", "n_a", "n_b"))
    return {"weat": front(frame, ("model", "test", "setting", "pooling", "layer", "effect_size",
                                  "p", "p_adjusted", "statistic", "n_permutations"))}


def _figures(result: xr.Dataset) -> dict[str, Figure]:
    from emb.analyses import plots

    return {
        f"effect_sizes_{slug(p)}": plots.weat_effect_sizes(result, pooling=p)
        for p in coord_values(result, "pooling")
    }


def _summary(result: xr.Dataset, tables: dict[str, pd.DataFrame]) -> Summary:
    """Declared cell: the top layer, the ``bleached`` setting (else ``alone``, else the first) and
    the ``last`` pooling (else the first); the largest |d| anywhere is a note, labelled as such."""
    frame = tables["weat"].dropna(subset=["effect_size"])
    if frame.empty:
        return Summary(title="WEAT: no effect sizes (every cell is NaN)")
    setting = default_of(frame["setting"].unique(), DEFAULT_SETTINGS)
    pooling = default_of(frame["pooling"].unique(), DEFAULT_POOLINGS)
    correction = str(result.attrs.get("correction", "none"))
    use_adjusted = correction != "none" and "p_adjusted" in frame
    cell = frame[(frame["setting"] == setting) & (frame["pooling"] == pooling)]
    rows = []
    keys = [k for k in ("model", "test") if k in cell]
    for key, group in cell.groupby(keys, sort=False):
        top = group.loc[group["layer"].idxmax()]
        n_perm = int(top.get("n_permutations", 0) or 0)
        p = float(top["p"])
        at_floor = n_perm > 0 and abs(p - 1 / (n_perm + 1)) < 1e-15
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        groups = [str(top[g]) for g in ("x_group", "y_group", "a_group", "b_group") if g in top]
        if len(groups) == 4:
            row["groups"] = f"{groups[0]} vs {groups[1]} / {groups[2]} vs {groups[3]}"
        row.update({"layer": int(top["layer"]), "d": float(top["effect_size"]),
                    "p": format_p(p, n_permutations=n_perm, floor=at_floor).removeprefix("p ")})
        if use_adjusted:
            row[f"p_{correction}"] = f"{float(top['p_adjusted']):.3g}"
        rows.append(row)
    alternative = result.attrs.get("alternative", "greater")
    notes = [
        f"p: permutation test ({alternative}); exact enumeration where n_permutations = 0 in the "
        "table, else seeded Monte Carlo (a p at its floor is shown as p ≤ 1/(N+1))."
    ]
    if use_adjusted:
        notes.append(f"p_{correction}: {correction} correction over {result.attrs.get('correction_over', 'test')}.")
    else:
        notes.append("No multiple-comparison correction (ask with --correction holm|bh).")
    best = frame.loc[frame["effect_size"].abs().idxmax()]
    notes.append(
        f"Largest |d| over all {len(frame)} cells (exploratory, not a test): "
        f"{best['test']} d = {best['effect_size']:.2f} at layer {best['layer']}, "
        f"{best['setting']}, {best['pooling']} pooling."
    )
    return Summary(
        title=f"WEAT effect sizes (Cohen's d, ddof {result.attrs.get('ddof', 1)})",
        headline=[f"declared cell: top layer, setting {setting!r}, pooling {pooling!r}"],
        table=pd.DataFrame(rows),
        notes=notes,
    )


ANALYSIS = Analysis(
    name="weat",
    function=weat,
    suite="weat",
    description="WEAT effect sizes and permutation p-values per test, setting, layer, pooling",
    options=(
        Option(name="tests", multiple=True, help="test of the suite, e.g. WEAT1 (default: all)"),
        Option(name="x", multiple=True, flag="--x", help="your own target words X (with --y --a --b)"),
        Option(name="y", multiple=True, flag="--y", help="your own target words Y"),
        Option(name="a", multiple=True, flag="--a", help="your own attribute words A"),
        Option(name="b", multiple=True, flag="--b", help="your own attribute words B"),
        Option(name="settings", multiple=True, help="contextual setting (default: bleached and alone)"),
        Option(name="ddof", type="int", help="delta degrees of freedom of d's standard deviation"),
        Option(name="alternative", choices=("greater", "less", "two-sided"), help="alternative hypothesis"),
        Option(name="n_permutations", type="int", help="Monte-Carlo splits when exact enumeration is too big"),
        Option(name="exact_limit", type="int", help="enumerate every split up to this many"),
        Option(name="include_excluded", type="bool", help="keep the names Caliskan et al. dropped (WEAT3-5)"),
        Option(name="correction", choices=("none", "holm", "bh"), help="multiple-comparison correction"),
        Option(name="correction_over", choices=("test", "layer", "test+layer"), help="the correction's family"),
    ),
    tables=_tables,
    figures=_figures,
    summary=_summary,
)
