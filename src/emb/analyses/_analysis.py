"""What an analysis declares: its function, the suites it reads, its options, tables, figures, summary.

Every analysis module ends with one :class:`Analysis` record beside its function (``ANALYSIS =
Analysis(...)``), and :mod:`emb.analyses.registry` lists the records, one line each. The CLI builds
``emb analyze NAME`` from the record alone: a subcommand whose options are the record's
:class:`Option` declarations (defaults are read from the function's signature, never repeated), the
suites to open, the tables and figures to write and the summary to print. No per-analysis code
lives anywhere else (running one over several stores is :mod:`emb.analyses._run`). Nothing here
imports torch.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.errors import AnalysisError
from emb.options import (
    MAX_BOOTSTRAP,
    MAX_COUNT,
    MAX_PERMUTATIONS,
    MAX_SEED,
    METHOD,
    SEED,
    SEED_32,
    Option,
    check_values,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "MAX_BOOTSTRAP",
    "MAX_COUNT",
    "MAX_PERMUTATIONS",
    "MAX_SEED",
    "SEED",
    "SEED_32",
    "Analysis",
    "Option",
    "check_options",
    "Summary",
    "add_log10_p",
    "format_p",
    "format_p_column",
    "p_below_range",
    "format_adjusted",
    "mc_floor",
    "tidy_frame",
    "small_n_notes",
    "small_n_of",
    "with_set_sizes",
]

def check_options(analysis: Analysis, /, **values: Any) -> None:
    """Refuse (:class:`~emb.errors.AnalysisError`) a value its declared option does not allow
    (:func:`emb.options.check_values`: its choices, its bounds; one message from Python and the CLI).

    ``analysis`` is the record whose ``options`` (and ``seed``) declare them; ``values`` maps
    keyword → value as the function got it. Undeclared keywords are not checked.
    """
    check_values((*analysis.options, analysis.seed, METHOD), values, owner=f"analysis {analysis.name!r}",
                 error=AnalysisError)


@dataclass(frozen=True, kw_only=True)
class Summary:
    """What an analysis prints on the terminal (and as JSON with ``--json``).

    Attributes
    ----------
    title : str
        One line: what was computed on what.
    headline : list of str
        The pre-declared cell(s) the analysis reports first (e.g. the top layer and the default
        pooling), never the best of many cells.
    table : pandas.DataFrame
        A short table (a few to a few dozen rows) printed below the headline.
    notes : list of str
        Further lines: the best cell *labelled as such*, the correction used, floors of p-values.
    """

    title: str
    headline: Sequence[str] = ()
    table: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: Sequence[str] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: the table as a list of records (NaN → null)."""
        table = self.table.astype(object).where(self.table.notna(), None)
        return {
            "title": self.title,
            "headline": list(self.headline),
            "table": [
                {str(k): _plain(v) for k, v in row.items()} for row in table.to_dict("records")
            ],
            "notes": list(self.notes),
        }

    def lines(self, *, max_rows: int = 40) -> list[str]:
        """The summary as terminal lines."""
        out = [self.title, *(f"  {line}" for line in self.headline)]
        if len(self.table):
            shown = self.table.head(max_rows)
            text = shown.to_string(index=False, na_rep="—", float_format=_float_format)
            out += ["", *text.splitlines()]
            if len(self.table) > max_rows:
                out.append(f"… {len(self.table) - max_rows} more rows in the table file")
        if self.notes:
            out += ["", *self.notes]
        return out


def _float_format(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3f}"


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def format_p(
    p: float,
    *,
    n_permutations: int | None = None,
    floor: bool = False,
    log10_p: float | None = None,
    mc_se: float | None = None,
) -> str:
    """A p-value as text: ``p ≤ 1/(N+1)`` at a Monte-Carlo floor, ``p ≈ 10^-2036.3`` below float
    range (given its ``log10_p``; else ``p < 1e-300``), ``± se`` for a Monte-Carlo p.

    Parameters
    ----------
    p : float
    n_permutations : int, optional
        Number of Monte-Carlo splits behind ``p`` (0 or None: exact or analytic).
    floor : bool
        Whether ``p`` sits at the Monte-Carlo floor ``1/(N+1)``.
    log10_p : float, optional
        The exact log10 of ``p`` (e.g. :func:`emb.analyses.stats.log10_pvalue`), used when ``p``
        is below float range.
    mc_se : float, optional
        Monte-Carlo standard error of ``p``, shown as ``± se``.

    Examples
    --------
    >>> format_p(1 / 100_001, n_permutations=100_000, floor=True)
    'p ≤ 1/100,001 (1e-05)'
    >>> format_p(2.2250738585072014e-308, log10_p=-2036.3029)
    'p ≈ 10^-2036.3'
    >>> format_p(float("nan"), log10_p=-641.8)  # a table's p left empty below float range
    'p ≈ 10^-641.8'
    >>> format_p(0.0123, mc_se=0.00035)
    'p = 0.0123 ± 0.00035'
    """
    from emb.analyses.stats import P_FLOOR

    if not np.isfinite(p):  # a table's p left empty below float range: its order is log10_p
        if log10_p is not None and np.isfinite(log10_p) and log10_p < np.log10(P_FLOOR):
            return f"p ≈ 10^{log10_p:.1f}"
        return "p = —"
    if floor and n_permutations:
        return f"p ≤ 1/{n_permutations + 1:,} ({1 / (n_permutations + 1):.2g})"
    if p <= P_FLOOR * (1 + 1e-9):
        if log10_p is not None and np.isfinite(log10_p):
            return f"p ≈ 10^{log10_p:.1f}"
        return "p < 1e-300" if p < 1 else f"p = {p:.3g}"
    se = f" ± {mc_se:.2g}" if mc_se is not None and np.isfinite(mc_se) and mc_se > 0 else ""
    return f"p = {p:.3g}{se}"


def format_adjusted(p_adjusted: float, *, from_floor: bool) -> str:
    """A corrected p as text: ``≤ x`` when it was computed from a Monte-Carlo p at its floor
    (the raw p is only bounded, and Holm and Benjamini–Hochberg grow with it: so is the result).

    Examples
    --------
    >>> format_adjusted(0.0349, from_floor=True), format_adjusted(0.44, from_floor=False)
    ('≤ 0.0349', '0.44')
    """
    if not np.isfinite(p_adjusted):
        return "—"
    return f"{'≤ ' if from_floor and p_adjusted < 1 else ''}{p_adjusted:.3g}"


def mc_floor(p: Any, n_permutations: Any) -> np.ndarray:
    """Whether a Monte-Carlo p sits at its floor ``1/(N+1)`` (no random split reached the
    observed statistic: the true p is at most that); False where ``N`` is 0 (exact p).

    Examples
    --------
    >>> mc_floor([1 / 1001, 0.5, 1 / 1001], [1000, 1000, 0]).tolist()
    [True, False, False]
    """
    p = np.asarray(p, dtype=np.float64)
    n = np.asarray(n_permutations, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (n > 0) & np.isclose(p, 1.0 / (n + 1.0), rtol=1e-12, atol=0.0)


def add_log10_p(
    frame: pd.DataFrame,
    *,
    r: str = "r",
    n: str = "n",
    p: str = "p",
    method: Literal["pearson", "spearman"] = "pearson",
    name: str | None = None,
) -> pd.DataFrame:
    """``frame`` with a ``log10_p`` column (after ``p``): the exact log10 of a correlation's p,
    finite where ``p`` itself is floored at the smallest normal double
    (:data:`emb.analyses.stats.P_FLOOR`); the log10 of ``p`` itself where few pairs made it an
    exact permutation p (:data:`emb.analyses.stats.EXACT_MAX_N`)."""
    from emb.analyses import stats

    if r not in frame or n not in frame or p not in frame:
        return frame
    out = frame.copy()
    values = stats.log10_pvalue(pd.to_numeric(out[r], errors="coerce").to_numpy(float),
                                pd.to_numeric(out[n], errors="coerce").to_numpy(float),
                                method=method,
                                pvalue=pd.to_numeric(out[p], errors="coerce").to_numpy(float))
    column = name or ("log10_p" if p == "p" else f"{p.removesuffix('_p')}_log10_p")
    out.insert(int(out.columns.get_loc(p)) + 1, column, np.asarray(values, dtype=np.float64))
    return out


def p_below_range(frame: pd.DataFrame, *, p: str = "p", log10_p: str = "log10_p") -> pd.DataFrame:
    """``frame`` with ``p`` left empty (NaN) where the true p is below the float range: there the
    computed p sits at the floor :data:`emb.analyses.stats.P_FLOOR` (≈ 2.2e-308) and its value
    is ``log10_p`` (e.g. -641.8), never a clipped float that reads as a number. The column's
    description (``frame.attrs["descriptions"]``) says so. Filter such tables on ``log10_p``.

    Examples
    --------
    >>> import pandas as pd
    >>> t = p_below_range(pd.DataFrame({"p": [0.03, 2.2250738585072014e-308],
    ...                                 "log10_p": [-1.52, -641.8]}))
    >>> t["p"].tolist()[0], bool(t["p"].isna().tolist()[1])
    (0.03, True)
    """
    from emb.analyses.stats import P_FLOOR

    if p not in frame or log10_p not in frame:
        return frame
    out = frame.copy()
    pv = pd.to_numeric(out[p], errors="coerce").to_numpy(float)
    lp = pd.to_numeric(out[log10_p], errors="coerce").to_numpy(float)
    with np.errstate(invalid="ignore"):
        under = (pv <= P_FLOOR * (1 + 1e-9)) & np.isfinite(lp) & (lp < np.log10(P_FLOOR))
    out[p] = np.where(under, np.nan, pv)
    out.attrs = {**frame.attrs, "descriptions": {
        **frame.attrs.get("descriptions", {}),
        p: f"the p-value; empty where it is below the float range (< 2.2e-308): its exact order "
           f"is then {log10_p} (the log10 of p)",
        log10_p: f"log10 of {p}, exact far below the float range (-641.8 is p = 10^-641.8)"}}
    return out


def format_p_column(table: pd.DataFrame, *, p: str = "p", log10_p: str = "log10_p") -> pd.DataFrame:
    """A summary table's ``p`` as text (``0.0123``, ``≈ 10^-641.8`` below float range, from
    ``log10_p``), and ``log10_p`` dropped: a p is never printed as a clipped 2.2e-308."""
    if p not in table:
        return table
    out = table.copy()
    logs = out[log10_p] if log10_p in out else pd.Series([None] * len(out), index=out.index)
    out[p] = [format_p(float(v), log10_p=None if lv is None or pd.isna(lv) else float(lv))
              .removeprefix("p ").removeprefix("= ")
              for v, lv in zip(out[p], logs, strict=True)]
    return out.drop(columns=[c for c in (log10_p,) if c in out])


@dataclass(frozen=True, kw_only=True)
class Analysis:
    """One registered analysis: everything the CLI and the report need to run and show it.

    Attributes
    ----------
    name : str
        The CLI name (``emb analyze NAME``).
    function : callable
        ``function(ds, **options) -> xr.Dataset``: pure and lazy; ``ds`` is the suite group
        named by ``suite``.
    suite : str
        The store group passed as ``ds`` (``--suite`` picks another one of the same kind).
    description : str
        One line for ``emb analyze --list``.
    options : tuple of Option
        The keyword options the CLI exposes (each a keyword of ``function``).
    optional_suites : mapping of str to str
        Keyword of ``function`` → store group passed to it when the store holds that group
        (``vast`` reads ``similarity`` when present).
    tables : callable
        ``tables(result) -> {name: DataFrame}``: tidy tables of a computed result, one row per
        reported number; the first is the analysis' main table (``<name>.csv``).
    figures : callable
        ``figures(result) -> {name: Figure}`` of a computed result.
    summary : callable
        ``summary(result, tables) -> Summary``: the terminal summary.
    extra_files : callable, optional
        ``extra_files(result) -> {name: bytes}``: files beyond the tables, netCDF and figures. A
        bare file name is written into the output directory with the rest (listed in the
        sidecar); an absolute path (a user's ``--export-tests FILE``, made absolute by the
        analysis function) is written there, atomically, before the sidecar (listed under
        ``exports``).
    seed : Option
        Bounds of the ``seed`` keyword, when the function takes one (the CLI's shared
        ``--seed``): :data:`SEED`, or :data:`SEED_32` where it reaches scikit-learn.
    word_tables : tuple of str
        Names of the tables with one row per word (large: written as Parquet by default).
    chunk_by : tuple of str
        Per-item labels whose runs the CLI makes the suite's dask chunks follow
        (:meth:`emb.store.Store.dataset`): an analysis that reads each run whole (``vast``: one
        lexicon's words in one setting) then reads it in one zarr call. Empty: one shard per
        chunk.
    outputs : mapping of str to tuple of str
        The result's documented variables and the dims of each (in any order): every one is in
        the result of the example, finite somewhere (the registry-wide contract test checks).
    example : callable
        ``example() -> (ds, options)``: a tiny seeded input shaped as a store hands it out (the
        embedding dask-backed; :mod:`emb.analyses._examples`) and the keyword options (other
        suites among them) that make the analysis produce every output. The contract test runs
        every record on its example; a user can try the analysis on it.
    api_only : tuple of str
        Keyword-only parameters of ``function`` the CLI does not expose (neither an option nor
        an optional suite): the Python API's alone, e.g. a layer subset.
    """

    name: str
    function: Callable[..., xr.Dataset]
    suite: str
    description: str
    options: tuple[Option, ...] = ()
    optional_suites: Mapping[str, str] = field(default_factory=dict)
    tables: Callable[[xr.Dataset], dict[str, pd.DataFrame]] = field(repr=False)
    figures: Callable[[xr.Dataset], dict[str, Figure]] = field(repr=False)
    summary: Callable[[xr.Dataset, Mapping[str, pd.DataFrame]], Summary] = field(repr=False)
    extra_files: Callable[[xr.Dataset], Mapping[str, bytes]] | None = field(default=None, repr=False)
    word_tables: tuple[str, ...] = ()
    chunk_by: tuple[str, ...] = ()
    seed: Option = field(default_factory=lambda: SEED)
    outputs: Mapping[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    example: Callable[[], tuple[xr.Dataset, dict[str, Any]]] | None = field(default=None, repr=False)
    api_only: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        params = self.parameters()
        bad = [o.name for o in self.options if o.name not in params]
        bad += [k for k in (*self.optional_suites, *self.api_only) if k not in params]
        if bad:
            raise TypeError(f"analysis {self.name!r} declares {bad}, which {self.function.__name__}() does not take")
        bind = getattr(self.function, "bind_record", None)
        if callable(bind):  # a function wearing run_by_record: checked and stamped by this record
            bind(self)

    def parameters(self) -> dict[str, inspect.Parameter]:
        """The function's keyword-only parameters by name."""
        return {
            name: p
            for name, p in inspect.signature(self.function).parameters.items()
            if p.kind == inspect.Parameter.KEYWORD_ONLY
        }

    def draw(self, result: xr.Dataset, **options: Any) -> dict[str, Figure]:
        """The figures of a computed result, passing only the figure options (e.g.
        ``relative_depth``) that the analysis' ``figures`` function takes; each fitted to its
        canvas (:func:`emb.analyses._figure.fit_to_canvas`); a figure that draws settings with
        identical numbers apart says so in its title
        (:func:`emb.analyses._settings.caption_identical_settings`)."""
        from emb.analyses._figure import fit_to_canvas
        from emb.analyses._settings import (
            caption_identical_settings,
            identical_settings,
            static_models,
        )

        accepted = inspect.signature(self.figures).parameters
        if not any(p.kind == inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
            options = {k: v for k, v in options.items() if k in accepted}
        same, static = identical_settings(result), static_models(result)
        models = [str(m) for m in coord_values(result, "model") if m is not None]
        return {key: fit_to_canvas(caption_identical_settings(fig, same, static=static,
                                                              models=models))
                for key, fig in self.figures(result, **options).items()}

    def default(self, name: str) -> Any:
        """The function's default for keyword ``name`` (``inspect.Parameter.empty`` if none)."""
        return self.parameters()[name].default

    def report_tables(self, result: xr.Dataset) -> dict[str, pd.DataFrame]:
        """The analysis' tables, and ``<stem>_anisotropy`` (each layer's mean cosine of random
        word pairs, the baseline every cosine is read against) when the run measured it (named
        after the analysis: two analyses may write into one directory)."""
        tables = dict(self.tables(result))
        if "anisotropy" in result.variables:
            tables[f"{self.stem}_anisotropy"] = anisotropy_table(result)
        return tables

    def report_summary(self, result: xr.Dataset, tables: Mapping[str, pd.DataFrame]) -> Summary:
        """The analysis' summary, with a note on the layers' anisotropy when it was measured, one
        per group of settings with identical numbers and one on samples of contexts that are all
        the same (static vectors), saying why."""
        from emb.analyses._settings import identical_samples_notes, identical_settings_notes

        summary = self.summary(result, tables)
        notes = [n for n in (anisotropy_note(result), *identical_settings_notes(result),
                             *identical_samples_notes(result)) if n and n not in summary.notes]
        return replace(summary, notes=[*summary.notes, *notes]) if notes else summary

    @property
    def stem(self) -> str:
        """File-name stem of its outputs (``sc_weat`` for ``sc-weat``)."""
        return self.name.replace("-", "_")

    def to_dict(self) -> dict[str, Any]:
        """Name, suites, description, options and the function's import path."""
        return {
            "name": self.name,
            "suite": self.suite,
            "optional_suites": dict(self.optional_suites),
            "description": self.description,
            "function": f"{self.function.__module__}.{self.function.__qualname__}",
            "options": [o.name for o in self.options],
        }


# -- tidy tables -----------------------------------------------------------------------------------
def tidy_frame(
    result: xr.Dataset,
    variables: Sequence[str],
    *,
    rename: Mapping[str, str] | None = None,
    drop_all_nan: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Long table of ``variables`` (all over the same dims): one row per coordinate combination.

    Rows where every variable of ``drop_all_nan`` (default: all float variables) is NaN are left
    out (e.g. layers that were not nullified).
    """
    variables = [v for v in variables if v in result]
    if not variables:
        return pd.DataFrame()
    sub = result[variables].reset_coords(drop=True)
    frame = sub.to_dataframe().reset_index()
    check = [v for v in (drop_all_nan or variables) if v in frame and frame[v].dtype.kind == "f"]
    if check:
        frame = frame[frame[check].notna().any(axis=1)]
    if rename:
        frame = frame.rename(columns=dict(rename))
    return frame.reset_index(drop=True)


def front(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """``frame`` with ``columns`` (those present) first, the others after in their order."""
    first = [c for c in columns if c in frame]
    return frame[first + [c for c in frame.columns if c not in first]]


def integer_columns(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """``columns`` (those present) as nullable integers."""
    for col in columns:
        if col in frame:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").round().astype("Int64")
    return frame


# -- running ---------------------------------------------------------------------------------------
def slug(value: Any) -> str:
    """``value`` as a file-name fragment."""
    text = "".join(c if c.isalnum() or c in "-_" else "-" for c in str(value))
    return text.strip("-") or "x"


def coord_values(result: xr.Dataset, dim: str) -> list[Any]:
    """Plain Python values of ``dim`` (``[None]`` when the result has no such dim)."""
    if dim not in result.dims:
        return [None]
    return [v.item() if hasattr(v, "item") else v for v in result[dim].values]


# -- summaries -------------------------------------------------------------------------------------
#: The pooling a summary reports when the result has several: the first of these present.
DEFAULT_POOLINGS = ("last", "mean", "first", "max", "static")
#: The setting a summary reports when the result has several: the first of these present.
DEFAULT_SETTINGS = ("bleached", "alone", "aligned", "random", "misaligned")


def default_of(values: Sequence[Any], preferred: Sequence[Any]) -> Any:
    """The first of ``preferred`` in ``values``, else the first value (None when empty)."""
    present = list(values)
    for value in preferred:
        if value in present:
            return value
    return present[0] if present else None


def own_pooling_rows(frame: pd.DataFrame, value: str | None,
                     preferred: Sequence[Any]) -> tuple[pd.DataFrame, str]:
    """The rows of ``frame`` at each model's declared pooling, and the headline's words for it.

    The declared pooling is the first of ``preferred`` the run has; a model with no ``value`` at
    it (a static store, whose one pooling is ``static``, beside a contextual one) is reported at
    its own first pooling with a value (a row, when ``value`` is None), and the words say so: ``"'last'"`` or ``"'last' (w2v:
    'static', the only one it has)"``. Without a ``model`` or ``pooling`` column, the rows at
    the declared pooling."""
    if "pooling" not in frame:
        return frame, ""
    pooling = default_of(list(frame["pooling"].unique()), preferred)
    if "model" not in frame:
        return frame[frame["pooling"] == pooling], repr(pooling)
    present = frame.dropna(subset=[value]) if value is not None else frame
    order = [p for p in preferred if p in set(frame["pooling"])]
    order += [p for p in frame["pooling"].unique() if p not in order]
    own: dict[Any, Any] = {}
    for model in frame["model"].unique():
        has = set(present.loc[present["model"] == model, "pooling"])
        own[model] = next((p for p in order if p in has), pooling)
    keep = frame["pooling"] == frame["model"].map(own)
    others = [f"{m}: {p!r}, " + ("the only one it has" if len(set(
        present.loc[present["model"] == m, "pooling"])) == 1 else f"it has no {pooling!r}")
        for m, p in own.items() if p != pooling]
    return frame[keep], repr(pooling) + (f" ({'; '.join(others)})" if others else "")


def layer_table(
    frame: pd.DataFrame,
    value: str,
    keys: Sequence[str],
    *,
    extra: Sequence[str] = (),
    best: Literal["max", "absmax"] = "max",
) -> pd.DataFrame:
    """Per group of ``keys``: ``value`` at the top layer (the declared cell) and, labelled as
    exploratory, the best layer and its value.

    The top layer is the highest layer with a finite ``value`` in the group (models with fewer
    layers keep their own top). ``extra`` columns are taken from the top-layer row. The best
    layer's relative depth (``best layer / top layer``) compares models of different depth.
    """
    keys = [k for k in keys if k in frame]
    rows = []
    data = frame[frame[value].notna()]
    groups = data.groupby(keys, sort=False, dropna=False) if keys else [((), data)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        top = group.loc[group["layer"].idxmax()]
        score = group[value].abs() if best == "absmax" else group[value]
        best_row = group.loc[score.idxmax()]
        row = dict(zip(keys, key, strict=True))
        row["top_layer"] = int(top["layer"])
        row[value] = top[value]
        for col in extra:
            if col in group:
                row[col] = top[col]
        row["best_layer"] = int(best_row["layer"])
        row[f"best_{value}"] = best_row[value]
        row["best_depth"] = round(int(best_row["layer"]) / int(top["layer"]), 3) if int(top["layer"]) else np.nan
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["descriptions"] = {
        "top_layer": "the declared cell: the highest layer with a value",
        "best_layer": f"exploratory: the layer of the {'largest |' + value + '|' if best == 'absmax' else 'highest ' + value}, "
                      "chosen after looking at every layer (report top_layer)",
        f"best_{value}": f"{value} at best_layer (exploratory)",
        "best_depth": "best_layer / top_layer (exploratory), to compare models of different depth",
    }
    return out


# -- small word sets -------------------------------------------------------------------------------
def with_set_sizes(frame: pd.DataFrame, result: xr.Dataset, *, unit: str = "test",
                   variables: Sequence[str] = ("n_x", "n_y", "n_a", "n_b", "small_n"),
                   rename: Mapping[str, str] | None = None) -> pd.DataFrame:
    """``frame`` with the per-``unit`` word-set sizes and ``small_n`` flag of ``result`` appended
    as its last columns (joined on ``unit`` and, in a run over several models, ``model``); the
    frame's other columns and rows are unchanged."""
    present = [v for v in variables if v in result and v not in frame]
    if not present or unit not in frame:
        return frame
    extra = result[present].reset_coords(drop=True).to_dataframe().reset_index()
    extra = extra.rename(columns=dict(rename or {}))
    keys = [c for c in extra.columns if c in frame.columns]
    out = frame.merge(extra, how="left", on=keys)
    out.index = frame.index
    for v in extra.columns:
        if v.startswith("n_") and v not in keys:
            out[v] = out[v].astype("Int64") if out[v].isna().any() else out[v].astype(np.int64)
    if frame.attrs:
        out.attrs = dict(frame.attrs)
    return out


def small_n_of(sizes: Mapping[str, int], min_words: int) -> bool:
    """Whether any word set of ``sizes`` (role → number of words) has fewer than ``min_words``."""
    return any(int(n) < int(min_words) for n in sizes.values())


def _counts(values: Any) -> str:
    """``5`` or ``5/7`` (the distinct counts of a set across models), plain ints."""
    flat = np.asarray(values, dtype=float).ravel()
    return "/".join(str(int(v)) for v in np.unique(flat[np.isfinite(flat)])) or "?"


def small_n_notes(result: xr.Dataset, *, unit: str = "test",
                  roles: Sequence[str] = ("x", "y", "a", "b")) -> list[str]:
    """The summary's lines on small and dropped word sets: the ``unit``s (``result[unit]``)
    flagged ``small_n`` with each set's n, and those dropped for an empty set
    (``result.attrs["dropped"]``, JSON ``{name: reason}``). Plain text: no numpy repr."""
    import json

    notes = []
    min_words = result.attrs.get("min_words")
    if "small_n" in result and unit in result.dims:
        flag = result["small_n"].fillna(False).astype(bool)
        flag = flag.any([d for d in flag.dims if d != unit])  # e.g. over the models of a run
        flagged = [str(t) for t, f in zip(result[unit].values.tolist(),
                                          np.asarray(flag.values).tolist(), strict=True) if f]
        if flagged:
            parts = []
            for t in flagged:
                ns = [f"{r.upper()} {_counts(result[f'n_{r}'].sel({unit: t}).values)}"
                      for r in roles if f"n_{r}" in result]
                parts.append(f"{t} ({', '.join(ns)})" if ns else t)
            notes.append(
                f"Warning: small word sets (fewer than {min_words} words in a set; column small_n): "
                f"{'; '.join(parts)}. Their effect sizes and p-values rest on few words: read them "
                "as indicative only (--min-words sets the threshold).")
    dropped = json.loads(str(result.attrs.get("dropped", "{}")) or "{}")
    if "dropped" not in result.attrs and "models" in result.attrs:  # models that differ
        per_model = json.loads(str(result.attrs["models"]))
        dropped = {f"{model}: {t}": why for model, attrs in per_model.items()
                   for t, why in json.loads(str(attrs.get("dropped", "{}")) or "{}").items()}
    if dropped:
        notes.append("Dropped (a word set is empty, or too small to compute, in this store): "
                     + "; ".join(f"{t}: {why}" for t, why in dropped.items()) + ".")
    return notes


# -- anisotropy --------------------------------------------------------------------------------------
def anisotropy_table(result: xr.Dataset) -> pd.DataFrame:
    """One row per (model, layer, pooling): the mean cosine of random pairs of different words
    (``anisotropy``; after the run's standardisation in ``anisotropy_standardized``) and the
    pairs behind it."""
    names = [v for v in ("anisotropy", "anisotropy_standardized") if v in result.variables]
    frame = result[names].reset_coords(drop=True).to_dataframe().reset_index()
    frame["n_pairs"] = int(result["anisotropy"].attrs.get("n_pairs", 0))
    frame["standardize"] = str(result.attrs.get("standardize", "none"))
    return integer_columns(frame.dropna(subset=["anisotropy"]), ("layer",))


def anisotropy_note(result: xr.Dataset) -> str | None:
    """``Anisotropy: two random words have a mean cosine of 0.31 at layer 0 … 0.62 at layer 12
    (…)``: the range over the layers of the reported pooling, per model when they differ."""
    if "anisotropy" not in result.variables:
        return None
    base = result["anisotropy"]
    parts, own = [], []
    for model in (base["model"].values.tolist() if "model" in base.dims else [None]):
        one = base.sel(model=model) if model is not None else base
        pooling = None
        if "pooling" in one.dims:  # the declared pooling, else this model's own (a static store)
            has = [str(p) for p in one["pooling"].values
                   if np.isfinite(np.asarray(one.sel(pooling=p).values, dtype=float)).any()]
            pooling = default_of(has or [str(p) for p in one["pooling"].values], DEFAULT_POOLINGS)
            one = one.sel(pooling=pooling)
        values = np.asarray(one.values, dtype=float)
        layers = np.asarray(one["layer"].values) if "layer" in one.dims else np.array([0])
        ok = np.isfinite(values)
        if not ok.any():
            continue
        own.append(pooling)
        values, layers = values[ok], layers[ok] if layers.size == values.size else layers
        lo, hi = int(np.argmin(values)), int(np.argmax(values))
        text = (f"{values[lo]:.2f} (layer {layers[lo]}) to {values[hi]:.2f} (layer {layers[hi]})"
                if values.size > 1 else f"{values[0]:.2f}")
        parts.append(f"{model}: {text}" if model is not None and base.sizes.get("model", 1) > 1 else text)
    if not parts:
        return None
    pooling = own[0] if len(set(own)) == 1 else None
    if len(set(own)) > 1:  # a contextual and a static store: each its own pooling
        parts = [f"{part} ({p} pooling)" for part, p in zip(parts, own, strict=True)]
    how = str(result.attrs.get("standardize", "none"))
    after = ""
    if "anisotropy_standardized" in result.variables:
        std = np.asarray(result["anisotropy_standardized"].values, dtype=float)
        after = f"; after --standardize {how}, at most {np.nanmax(np.abs(std)):.2f} in absolute value"
    return (f"Anisotropy: two random words have a mean cosine of {'; '.join(parts)}"
            + (f" ({pooling} pooling" if pooling else " (")
            + f"{', ' if pooling else ''}{int(result['anisotropy'].attrs.get('n_pairs', 0))} pairs; "
            "table <analysis>_anisotropy): read every cosine against it" + after + ".")
