"""Analyses of stored embeddings: pure, lazy functions over xarray Datasets, and their registry.

``ANALYSES`` maps the CLI names (``emb analyze NAME``) to :class:`Analysis` records: the function,
the store group (suite) it reads, a tidy-table view and the figures of its result.
:func:`run_analysis` runs one analysis over several stores (models) and stacks the results along a
``model`` dimension. Nothing here imports torch.

Examples
--------
>>> import emb
>>> from emb.analyses import ANALYSES, run_analysis
>>> ds = emb.open_store("gpt2.zarr").dataset("vast")                  # doctest: +SKIP
>>> res = run_analysis("vast", {"gpt2": ds}, tokenization=False).compute()  # doctest: +SKIP
>>> ANALYSES["vast"].tidy(res).head()                                 # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses.similarity import load_pairs, word_similarity
from emb.analyses.valnorm import sc_weat, valnorm
from emb.analyses.vast import plain_strings, vast
from emb.analyses.weat import weat
from emb.errors import AnalysisError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "ANALYSES",
    "Analysis",
    "load_pairs",
    "run_analysis",
    "sc_weat",
    "sc_weat_lexicon",
    "tidy_frame",
    "valnorm",
    "vast",
    "weat",
    "word_similarity",
]


@dataclass(frozen=True, kw_only=True)
class Analysis:
    """One registered analysis.

    Attributes
    ----------
    name : str
        The CLI name (``emb analyze NAME``).
    function : callable
        ``function(ds, **options) -> xr.Dataset``, pure and lazy.
    suite : str
        The store group it reads (``vast``, ``weat``, ``similarity``).
    description : str
        One line for ``emb analyze --list``.
    tidy : callable
        ``tidy(result) -> pandas.DataFrame``: one row per reported number.
    plots : callable
        ``plots(result) -> dict[str, Figure]``: figure name → figure (of a computed result).
    """

    name: str
    function: Callable[..., xr.Dataset]
    suite: str
    description: str
    tidy: Callable[[xr.Dataset], pd.DataFrame]
    plots: Callable[[xr.Dataset], dict[str, Figure]] = field(repr=False)

    def to_dict(self) -> dict[str, str]:
        """Name, suite, description and the function's import path."""
        return {
            "name": self.name,
            "suite": self.suite,
            "description": self.description,
            "function": f"{self.function.__module__}.{self.function.__qualname__}",
        }


# -- tidy tables -----------------------------------------------------------------------------------
def tidy_frame(
    result: xr.Dataset, variables: Sequence[str], *, rename: Mapping[str, str] | None = None,
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


_VAST_COLUMNS = (
    "model", "experiment", "rating", "lexicon", "dataset", "setting", "token_set", "subset",
    "pooling", "layer", "k", "statistic", "n", "r", "p", "p_adjusted", "ci_low", "ci_high",
    "spearman_r", "spearman_p", "n_missing",
)
_STAT_NAMES = ("r", "p", "n", "ci_low", "ci_high", "spearman_r", "spearman_p")


def _tidy_vast(result: xr.Dataset) -> pd.DataFrame:
    """One row per (model, experiment, rating, lexicon, setting, pooling, layer[, k, subset])."""
    frames = []
    settings = tidy_frame(
        result, [*_STAT_NAMES, *(["p_adjusted"] if "p_adjusted" in result else [])]
    )
    if len(settings):
        frames.append(settings.assign(experiment="settings", statistic="pearson"))
    if "tokenization_r" in result:
        names = [f"tokenization_{s}" for s in _STAT_NAMES if s != "n"]
        tok = tidy_frame(result, names, rename={n: n.removeprefix("tokenization_") for n in names})
        sizes = result["tokenization_n"].to_dataframe().reset_index()
        tok = tok.merge(sizes.rename(columns={"tokenization_n": "n"}), how="left")
        frames.append(tok.assign(experiment="tokenization", rating="valence", statistic="pearson"))
    if "nullified_r" in result:
        names = [f"nullified_{s}" for s in _STAT_NAMES]
        null = tidy_frame(result, names, rename={n: n.removeprefix("nullified_") for n in names},
                          drop_all_nan=["nullified_r", "nullified_p"])
        frames.append(null.assign(experiment="nullification", statistic="pearson"))
    if "similarity_rho" in result:
        sim = tidy_frame(result, ["similarity_rho", "similarity_p"],
                         rename={"similarity_rho": "r", "similarity_p": "p"})
        counts = result[["similarity_n", "similarity_n_missing"]].reset_coords(drop=True)
        counts = counts.to_dataframe().reset_index().rename(
            columns={"similarity_n": "n", "similarity_n_missing": "n_missing"}
        )
        sim = sim.merge(counts, how="left")
        frames.append(sim.assign(experiment="similarity", setting="bleached", statistic="spearman"))
    if not frames:
        return pd.DataFrame(columns=list(_VAST_COLUMNS))
    out = pd.concat(frames, ignore_index=True)
    for col in _VAST_COLUMNS:
        if col not in out:
            out[col] = pd.NA
    for col in ("layer", "k", "n", "subset", "n_missing"):
        out[col] = pd.to_numeric(out[col], errors="coerce").round().astype("Int64")
    extra = [c for c in out.columns if c not in _VAST_COLUMNS]
    return out[list(_VAST_COLUMNS) + extra]


def _first(columns: Sequence[str], frame: pd.DataFrame) -> pd.DataFrame:
    front = [c for c in columns if c in frame]
    return frame[front + [c for c in frame.columns if c not in front]]


def _tidy_weat(result: xr.Dataset) -> pd.DataFrame:
    """One row per (model, test, setting, pooling, layer)."""
    frame = tidy_frame(result, ["effect_size", "statistic", "p", "p_adjusted"])
    per_test = [v for v in ("n_permutations", "n_x", "n_y", "n_a", "n_b") if v in result]
    groups = [c for c in ("x_group", "y_group", "a_group", "b_group") if c in result.coords]
    if per_test or groups:
        extra = result[per_test].reset_coords(drop=True)
        for g in groups:
            extra[g] = (result[g].dims, np.asarray(result[g].values))
        info = extra.to_dataframe().reset_index()
        frame = frame.merge(info, how="left")
    for col in ("layer", "n_permutations", "n_x", "n_y", "n_a", "n_b"):
        if col in frame:
            frame[col] = pd.to_numeric(frame[col]).round().astype("Int64")
    return _first(("model", "test", "setting", "pooling", "layer", "effect_size", "p",
                   "p_adjusted", "statistic", "n_permutations"), frame)


def _tidy_valnorm(result: xr.Dataset) -> pd.DataFrame:
    frame = tidy_frame(result, list(_STAT_NAMES))
    for col in ("layer", "n"):
        if col in frame:
            frame[col] = pd.to_numeric(frame[col]).round().astype("Int64")
    return _first(("model", "lexicon", "setting", "pooling", "layer", "n", "r", "p"), frame)


def _tidy_sc_weat(result: xr.Dataset) -> pd.DataFrame:
    frame = tidy_frame(result, [v for v in ("effect_size", "p") if v in result])
    return _first(("model", "lexicon", "setting", "word", "pooling", "layer", "effect_size", "p"),
                  frame)


def _tidy_similarity(result: xr.Dataset) -> pd.DataFrame:
    frame = tidy_frame(result, ["rho", "p"])
    counts = result[["n", "n_missing"]].reset_coords(drop=True).to_dataframe().reset_index()
    frame = frame.merge(counts, how="left")
    return _first(("model", "dataset", "pooling", "layer", "k", "n", "n_missing", "rho", "p"), frame)


# -- figures ---------------------------------------------------------------------------------------
def _coord_values(result: xr.Dataset, dim: str) -> list[Any]:
    return [v.item() if hasattr(v, "item") else v for v in result[dim].values] if dim in result.dims else [None]


def _slug(value: Any) -> str:
    text = "".join(c if c.isalnum() or c in "-_" else "-" for c in str(value))
    return text.strip("-") or "x"


def _plots_vast(result: xr.Dataset) -> dict[str, Figure]:
    from emb.analyses import plots

    figs: dict[str, Figure] = {}
    ratings = _coord_values(result, "rating")
    for lex in _coord_values(result, "lexicon"):
        for rating in ratings:
            if "r" in result and np.isfinite(
                np.asarray(plots._sel(result["r"], lexicon=lex, rating=rating).values, dtype=float)
            ).any():
                suffix = "" if rating in (None, "valence") else f"_{_slug(rating)}"
                figs[f"settings_{_slug(lex)}{suffix}"] = plots.layer_curves(
                    result, lexicon=lex, rating=rating
                )
        if "tokenization_r" in result:
            figs[f"tokenization_{_slug(lex)}"] = plots.tokenization_curves(result, lexicon=lex)
        if "nullified_r" in result:
            figs[f"nullification_{_slug(lex)}"] = plots.nullification_curves(result, lexicon=lex)
    if "similarity_rho" in result:
        figs["similarity"] = plots.similarity_curves(result)
    return figs


def _plots_valnorm(result: xr.Dataset) -> dict[str, Figure]:
    from emb.analyses import plots

    return {
        f"curves_{_slug(lex)}": plots.layer_curves(result, lexicon=lex, title=f"ValNorm by layer — {lex}")
        for lex in _coord_values(result, "lexicon")
    }


def _plots_weat(result: xr.Dataset) -> dict[str, Figure]:
    from emb.analyses import plots

    return {
        f"effect_sizes_{_slug(p)}": plots.weat_effect_sizes(result, pooling=p)
        for p in _coord_values(result, "pooling")
    }


def _plots_sc_weat(result: xr.Dataset) -> dict[str, Figure]:
    from emb.analyses import plots

    if "setting" not in result.dims or "word" not in result.dims:
        return {}
    curve = result["effect_size"].mean("word", skipna=True).rename("effect_size")
    summary = xr.Dataset({"r": curve})
    return {"mean_effect_size": plots.layer_curves(
        summary, variable="r", title="Mean SC-WEAT effect size of the words by layer")}


def _plots_similarity(result: xr.Dataset) -> dict[str, Figure]:
    from emb.analyses import plots

    return {"curves": plots.similarity_curves(result)}


# -- SC-WEAT over a vast suite ---------------------------------------------------------------------
def sc_weat_lexicon(
    ds: xr.Dataset,
    *,
    lexicon: str | None = None,
    settings: str | Sequence[str] | None = None,
    words: Sequence[str] | None = None,
    attribute_a: Sequence[str] | None = None,
    attribute_b: Sequence[str] | None = None,
    ddof: int = 1,
    n_permutations: int = 0,
    seed: int = 0,
    alternative: Literal["greater", "less", "two-sided"] = "greater",
) -> xr.Dataset:
    """SC-WEAT of a lexicon's words (default: all) against its polar words, per setting.

    A thin wrapper around :func:`emb.analyses.valnorm.sc_weat` for a ``vast`` suite: ``words``
    default to the lexicon words of ``lexicon`` (default: the first lexicon), ``attribute_a`` /
    ``attribute_b`` to the suite's pleasant / unpleasant words; one ``sc_weat`` per setting,
    stacked along ``setting``.

    Returns
    -------
    xr.Dataset
        ``effect_size(setting, word, layer, pooling)`` (and ``p`` when ``n_permutations > 0``).
    """
    from emb.analyses._select import item_values, label_mask, settings_present, unique_in_order

    if "lexicon" not in ds.variables:
        raise AnalysisError("sc-weat reads a 'vast' suite (labels lexicon, stimulus_set)")
    stim = item_values(ds, "stimulus_set").astype(str)
    lex_col = item_values(ds, "lexicon").astype(str)
    lexicons = unique_in_order(lex_col[stim == "lexicon"])
    lex = lexicon or (lexicons[0] if lexicons else None)
    if lex not in lexicons:
        raise AnalysisError(f"lexicon {lex!r} is not in this suite; it has {lexicons}")
    chosen = (
        settings_present(ds) if settings is None
        else [settings] if isinstance(settings, str) else list(settings)
    )
    words_col = item_values(ds, "word").astype(str)
    parts = []
    for setting in chosen:
        target_words = list(words) if words is not None else unique_in_order(
            words_col[label_mask(ds, setting=setting, stimulus_set="lexicon", lexicon=lex)]
        )
        polar = {}
        for pole, given in (("pleasant", attribute_a), ("unpleasant", attribute_b)):
            polar[pole] = list(given) if given is not None else unique_in_order(
                words_col[label_mask(ds, setting=setting, stimulus_set=pole, lexicon=lex)]
            )
        res = sc_weat(
            ds, words=target_words, setting=setting, attribute_a=polar["pleasant"],
            attribute_b=polar["unpleasant"], ddof=ddof, n_permutations=n_permutations, seed=seed,
            alternative=alternative,
            word_labels={"stimulus_set": "lexicon", "lexicon": lex},
            attribute_labels={"stimulus_set": ["pleasant", "unpleasant"], "lexicon": lex},
        )
        parts.append(res.expand_dims(setting=[setting]))
    out = xr.concat(parts, dim="setting", join="outer", combine_attrs="drop_conflicts")
    out.attrs.update({"analysis": "sc-weat", "lexicon": lex, "settings": json.dumps(chosen)})
    return out.transpose("setting", "word", ...)


# -- registry --------------------------------------------------------------------------------------
ANALYSES: dict[str, Analysis] = {
    a.name: a
    for a in (
        Analysis(
            name="weat",
            function=weat,
            suite="weat",
            description="WEAT effect sizes and permutation p-values per test, setting, layer, pooling",
            tidy=_tidy_weat,
            plots=_plots_weat,
        ),
        Analysis(
            name="sc-weat",
            function=sc_weat_lexicon,
            suite="vast",
            description="SC-WEAT effect size of each lexicon word against the polar words",
            tidy=_tidy_sc_weat,
            plots=_plots_sc_weat,
        ),
        Analysis(
            name="valnorm",
            function=valnorm,
            suite="vast",
            description="ValNorm: Pearson's r of SC-WEAT vs human valence per layer/setting/pooling",
            tidy=_tidy_valnorm,
            plots=_plots_valnorm,
        ),
        Analysis(
            name="vast",
            function=vast,
            suite="vast",
            description="VAST: settings curves, tokenization, PC nullification, word similarity",
            tidy=_tidy_vast,
            plots=_plots_vast,
        ),
        Analysis(
            name="similarity",
            function=word_similarity,
            suite="similarity",
            description="Word similarity (WS-353, SimLex-999, MEN, RW): Spearman's rho per layer",
            tidy=_tidy_similarity,
            plots=_plots_similarity,
        ),
    )
}


def _get(name: str) -> Analysis:
    if name not in ANALYSES:
        raise AnalysisError(f"unknown analysis {name!r}; choose from {sorted(ANALYSES)}")
    return ANALYSES[name]


def _jsonable_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if isinstance(value, str | int | float | np.integer | np.floating) and not isinstance(value, bool):
            out[key] = value
        else:
            out[key] = json.dumps(value, default=str, sort_keys=True)
    return out


def run_analysis(
    name: str,
    datasets: Mapping[str, xr.Dataset],
    *,
    per_model: Mapping[str, Mapping[str, Any]] | None = None,
    **options: Any,
) -> xr.Dataset:
    """Run analysis ``name`` on each store's Dataset and stack the results along ``model``.

    Parameters
    ----------
    name : str
        A key of :data:`ANALYSES`.
    datasets : mapping of str to xr.Dataset
        Model name → that store's suite group (``Analysis.suite``).
    per_model : mapping, optional
        Model name → extra keyword arguments for that model only (e.g. its ``similarity``
        suite for ``vast``).
    **options
        Keyword arguments of the analysis function, the same for every model.

    Returns
    -------
    xr.Dataset
        The results concatenated along a new ``model`` dimension (coordinate = the names); other
        dims are outer-joined (a model with fewer layers gets NaN for the others). Attributes:
        those equal for all models, plus ``models`` (JSON: per-model provenance).

    Raises
    ------
    AnalysisError
        Unknown analysis, no datasets, or an option the analysis does not take.
    """
    import inspect

    analysis = _get(name)
    if not datasets:
        raise AnalysisError("no datasets given: pass at least one store's suite group")
    params = inspect.signature(analysis.function).parameters
    unknown = [k for k in options if k not in params]
    if unknown:
        accepted = [p for p, v in params.items() if v.kind == inspect.Parameter.KEYWORD_ONLY]
        raise AnalysisError(
            f"analysis {name!r} does not take the option(s) {unknown}; it takes {accepted}"
        )
    results = []
    for model, ds in datasets.items():
        kwargs = {**options, **dict((per_model or {}).get(model, {}))}
        kwargs = {k: plain_strings(v) if isinstance(v, xr.Dataset) else v for k, v in kwargs.items()}
        results.append(analysis.function(plain_strings(ds), **kwargs))
    shared = dict(results[0].attrs)
    for res in results[1:]:
        shared = {k: v for k, v in shared.items() if k in res.attrs and res.attrs[k] == v}
    provenance = {
        model: {k: v for k, v in res.attrs.items() if k not in shared}
        for model, res in zip(datasets, results, strict=True)
    }
    index = pd.Index([str(m) for m in datasets], name="model")
    out = xr.concat(
        [r.drop_attrs(deep=False) for r in results],
        dim=index,
        join="outer",
        coords="different",
        compat="equals",
        combine_attrs="drop",
    )
    out.attrs = _jsonable_attrs({**shared, "models": provenance})
    return out
