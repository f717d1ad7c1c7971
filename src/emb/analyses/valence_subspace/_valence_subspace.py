"""The valence subspace: a linear SVM direction per layer, validated by ValNorm by projection.

Omrani Sabbaghi, Wolfe & Caliskan (2023) learn, in every layer, the direction that separates the
25 pleasant from the 25 unpleasant WEAT words embedded alone (decontextualised) with a linear
support-vector classifier, and measure a vector's valence as its scalar projection onto it. ValNorm
by projection (their Figure 2) correlates the projections of a rated lexicon's words (Bellezza)
with the human ratings, beside the cosine SC-WEAT ValNorm of the same words.

:func:`valence_direction` fits the direction (and is shared with
:mod:`emb.analyses.intersectional`); :func:`valence_subspace` is the analysis. The statistics
live in :mod:`emb.analyses.stats.subspace`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses import stats
from emb.analyses._analysis import (
    DEFAULT_POOLINGS,
    SEED_32,
    Analysis,
    Option,
    Summary,
    add_log10_p,
    check_options,
    front,
    integer_columns,
    own_pooling_rows,
    p_below_range,
    tidy_frame,
)
from emb.analyses._decorators import own_descriptions, public_in_package
from emb.analyses._select import item_values, label_mask, provenance_attrs, unique_in_order
from emb.analyses.stats.association import sc_weat_effect_sizes
from emb.analyses.stats.subspace import SCALINGS, Scaling, valence_direction_kernel
from emb.errors import AnalysisError, MissingStimuliError
from emb.options import C_SVC, CV_FOLDS, DDOF
from emb.schemas.datamodel import FEATURE, ITEM

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "project", "training_items", "valence_direction", "valence_subspace"]

ALONE = "alone"
_HINT = "run 'emb extract --model MODEL --suite intersectional --store STORE'"


def _parse(C: float, scaling: str, cv_folds: int, method: str, seed: int) -> None:
    # the bounds declared on ANALYSIS.options: C finite and > 0 (LinearSVC refuses inf), 0..25 folds
    check_options(ANALYSIS, C=C, cv_folds=cv_folds, seed=seed)
    if scaling not in SCALINGS:
        raise AnalysisError(f"scaling must be one of {list(SCALINGS)}; got {scaling!r}")
    if cv_folds == 1:  # type and 0..25 checked above: one fold cannot cross-validate
        raise AnalysisError(f"cv_folds must be 0 (none) or 2..25; got {cv_folds!r}")
    if method not in ("default", "reference"):
        raise AnalysisError(f"method must be 'default' or 'reference'; got {method!r}")


def training_items(ds: xr.Dataset) -> tuple[xr.Dataset, np.ndarray, dict[str, list[str]]]:
    """The decontextualised training words: the ``alone`` items of stimulus sets ``pleasant`` and
    ``unpleasant`` (each distinct word once), their labels (1 = pleasant) and the word lists.

    Raises
    ------
    MissingStimuliError
        When the suite has no such items (it is not an ``intersectional`` suite).
    """
    for name in ("setting", "stimulus_set", "word"):
        item_values(ds, name)  # AnalysisError naming the labels when absent
    words = item_values(ds, "word").astype(str)
    lists: dict[str, list[str]] = {}
    positions = []
    for pole in ("pleasant", "unpleasant"):
        mask = label_mask(ds, setting=ALONE, stimulus_set=pole)
        lists[pole] = unique_in_order(words[mask])
        if not lists[pole]:
            raise MissingStimuliError(
                f"the suite has no {pole!r} words alone (setting={ALONE!r}, stimulus_set={pole!r}), "
                f"which train the valence direction; {_HINT}"
            )
        first = {w: int(i) for i, w in reversed(list(zip(np.flatnonzero(mask), words[mask], strict=True)))}
        positions.extend(first[w] for w in lists[pole])
    y = np.array([1] * len(lists["pleasant"]) + [0] * len(lists["unpleasant"]))
    return ds.isel({ITEM: positions}), y, lists


def valence_direction(
    ds: xr.Dataset,
    *,
    C: float = 5.0,
    scaling: Scaling = "column-norm",
    cv_folds: int = 5,
    seed: int = 0,
    method: Literal["default", "reference"] = "default",
) -> xr.Dataset:
    """The valence direction of every layer and pooling, lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        A suite group with the pleasant and unpleasant words alone (:func:`training_items`).
    C : float, default 5
        LinearSVC's regularisation (the authors' value).
    scaling : {"column-norm", "standard", "none"}, default "column-norm"
        How vectors are scaled before the classifier, fitted on the training words and applied to
        every projected vector (column-norm: each feature divided by its L2 norm over the
        training words, the authors' ``normalize(X, axis=0)``).
    cv_folds : int, default 5
        Stratified folds of the cross-validated accuracy (0: none).
    seed : int, default 0
        LinearSVC's ``random_state`` and the folds' shuffle.
    method : {"default", "reference"}
        ``reference``: the authors' scaling mismatch (classifier trained on column-normalised
        training vectors, raw vectors projected); ``scaling`` is then ignored.

    Returns
    -------
    xarray.Dataset
        ``valence_axis(layer, pooling, feature)`` and ``offset(layer, pooling)`` with
        ``projection = v·valence_axis + offset`` for a raw stored vector ``v``;
        ``direction(layer, pooling, feature)`` (the unit weight vector, in the classifier's
        space); ``svc_accuracy`` (cross-validated), ``svc_converged``; ``n_train``.
    """
    _parse(C, scaling, cv_folds, method, seed)
    train, y, lists = training_items(ds)
    emb = train["embedding"].reset_coords(drop=True).drop_vars(ITEM, errors="ignore")
    if emb.chunks is not None:
        emb = emb.chunk({ITEM: -1, FEATURE: -1})
    axis, offset, unit, accuracy, converged = xr.apply_ufunc(
        valence_direction_kernel,
        emb,
        input_core_dims=[[ITEM, FEATURE]],
        output_core_dims=[[FEATURE], [], [FEATURE], [], []],
        kwargs={
            "y": y, "C": float(C), "scaling": scaling, "seed": int(seed),
            "mismatch": method == "reference", "folds": int(cv_folds),
        },
        dask="parallelized",
        output_dtypes=[np.float64, np.float64, np.float64, np.float64, bool],
    )
    out = xr.Dataset(
        {
            "valence_axis": axis,
            "offset": offset,
            "direction": unit,
            "svc_accuracy": accuracy,
            "svc_converged": converged,
        }
    )
    # an index on feature: models of different widths stack along `model` (padded with NaN)
    out = out.assign_coords({FEATURE: np.arange(emb.sizes[FEATURE])})
    out["n_train"] = len(y)
    out["valence_axis"].attrs["long_name"] = "projection = v·valence_axis + offset (raw vector v)"
    out["direction"].attrs["long_name"] = "unit LinearSVC weight vector (pleasant > 0)"
    out["svc_accuracy"].attrs["long_name"] = f"{cv_folds}-fold cross-validated accuracy"
    out.attrs = {
        "C": float(C),
        "scaling": "column-norm on training, raw projected (reference)" if method == "reference"
        else scaling,
        "cv_folds": int(cv_folds),
        "seed": int(seed),
        "method": method,
        "training_words": json.dumps(lists, ensure_ascii=False),
    }
    return out


def _project_kernel(vectors: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """(..., feature) · (..., feature) → (...), in float64 with one BLAS thread: other tasks of
    the same graph set the process-wide BLAS thread count, and a product run while it changes
    would vary in its last bits from run to run."""
    with stats.single_threaded_blas():
        return np.einsum("...f,...f->...", vectors.astype(np.float64), axis, optimize=False)


def project(embedding: xr.DataArray, direction: xr.Dataset) -> xr.DataArray:
    """Scalar projections ``v·valence_axis + offset`` of stored vectors, lazily (float64)."""
    dot = xr.apply_ufunc(
        _project_kernel,
        embedding,
        direction["valence_axis"],
        input_core_dims=[[FEATURE], [FEATURE]],
        dask="parallelized",
        output_dtypes=[np.float64],
    )
    return dot + direction["offset"]


def _lexicon_items(ds: xr.Dataset, lexicon: str | None, exclude: list[str]) -> tuple[np.ndarray, str]:
    if "lexicon" not in ds.variables or "valence" not in ds.variables:
        raise MissingStimuliError(
            f"the suite has no rated lexicon words ('lexicon' and 'valence' labels); "
            f"{_HINT} --lexicon bellezza.csv"
        )
    mask = label_mask(ds, setting=ALONE, stimulus_set="lexicon")
    names = unique_in_order(item_values(ds, "lexicon").astype(str)[mask])
    if not names:
        raise MissingStimuliError(
            f"the suite has no lexicon words alone, so ValNorm by projection cannot be computed; "
            f"{_HINT} --lexicon bellezza.csv (or pass --no-valnorm)"
        )
    name = lexicon if lexicon is not None else names[0]
    if name not in names:
        raise AnalysisError(f"lexicon {name!r} is not in this suite; it has {names}")
    mask &= item_values(ds, "lexicon").astype(str) == name
    mask &= np.isfinite(item_values(ds, "valence").astype(np.float64))
    mask &= ~np.isin(item_values(ds, "word").astype(str), exclude)
    # each word once
    words = item_values(ds, "word").astype(str)
    keep = np.zeros_like(mask)
    seen: set[str] = set()
    for i in np.flatnonzero(mask):
        if words[i] not in seen:
            seen.add(words[i])
            keep[i] = True
    if keep.sum() < 4:
        raise AnalysisError(f"lexicon {name!r} has {int(keep.sum())} words left; ValNorm needs at least 4")
    return np.flatnonzero(keep), name


@public_in_package
@own_descriptions
def valence_subspace(
    ds: xr.Dataset,
    *,
    C: float = 5.0,
    scaling: Scaling = "column-norm",
    cv_folds: int = 5,
    valnorm: bool = True,
    lexicon: str | None = None,
    ddof: int = 1,
    seed: int = 0,
    method: Literal["default", "reference"] = "default",
) -> xr.Dataset:
    """Valence direction per layer and pooling, and ValNorm by projection beside cosine ValNorm.

    Parameters
    ----------
    ds : xarray.Dataset
        An ``intersectional`` suite group: the 25 + 25 training words and a rated lexicon's words,
        all ``alone``.
    C, scaling, cv_folds, seed
        See :func:`valence_direction`.
    valnorm : bool, default True
        Compute ValNorm (needs the lexicon words; ``False`` gives the classifier only).
    lexicon : str, optional
        The lexicon (label ``lexicon``; default: the suite's one).
    ddof : int, default 1
        Delta degrees of freedom of the SC-WEAT standard deviation (cosine ValNorm).
    method : {"default", "reference"}
        ``default`` applies the training words' scaling to the projected words and leaves the
        training words out of the ValNorm words; ``reference`` reproduces the authors' code:
        raw vectors projected onto a direction trained on column-normalised ones, every lexicon
        word kept.

    Returns
    -------
    xarray.Dataset
        Dims ``(layer, pooling)``: ``svc_accuracy``, ``svc_converged``, ``r_projection``,
        ``p_projection``, ``ci_low_projection``, ``ci_high_projection`` (Pearson's r of the
        projections with the ratings, two-sided p, Fisher-z 95 % CI), the same ``*_cosine``
        for the cosine SC-WEAT, and ``n`` (words correlated) and ``n_train``; also
        ``valence_axis``/``direction(layer, pooling, feature)`` and ``offset``. Attributes:
        options, word lists, store provenance.

    Raises
    ------
    MissingStimuliError
        No training words, or (with ``valnorm``) no lexicon words in the suite.

    Notes
    -----
    Direction: ``u = w/‖w‖`` of ``LinearSVC(C).fit(s(X), y)``, ``s`` the scaler fitted on the
    training vectors ``X``; projection ``proj(v) = s(v)·u / (u·u)`` (reference: ``v·u``).
    ValNorm by projection = Pearson's r of ``proj(w)`` with the rating of every lexicon word
    ``w``; cosine ValNorm = Pearson's r of the SC-WEAT ``d(w)`` against the same training words.

    References
    ----------
    Omrani Sabbaghi, S., Wolfe, R. & Caliskan, A. (2023). Evaluating biased attitude associations
    of language models in an intersectional context. *AIES 2023*, §5.1 and Figure 2.
    Toney-Wails, A. & Caliskan, A. (2021). ValNorm. *EMNLP 2021*.

    Examples
    --------
    On a store, ``ds = emb.open_store("gpt2.zarr").dataset("intersectional")``; here the
    record's example suite (its polar words and 40 rated words alone):

    >>> from emb.analyses import ANALYSES
    >>> ds, _ = ANALYSES["valence-subspace"].example()
    >>> res = valence_subspace(ds).compute()
    >>> res.r_projection.sel(pooling="last").round(2).values
    array([0.89, 0.88])
    """
    check_options(ANALYSIS, ddof=ddof)
    if cv_folds == 0 and not valnorm:
        raise AnalysisError("cv_folds=0 (no cross-validated accuracy) with valnorm=False leaves "
                            "nothing to report; give --cv-folds 2..25 or keep --valnorm")
    direction = valence_direction(ds, C=C, scaling=scaling, cv_folds=cv_folds, seed=seed, method=method)
    train, y, lists = training_items(ds)
    out = direction.copy()
    attrs = dict(direction.attrs)
    if valnorm:
        exclude = [] if method == "reference" else lists["pleasant"] + lists["unpleasant"]
        positions, name = _lexicon_items(ds, lexicon, exclude)
        words = ds.isel({ITEM: positions})
        rating = xr.DataArray(item_values(words, "valence").astype(np.float64), dims=ITEM)
        emb = words["embedding"].reset_coords(drop=True).drop_vars(ITEM, errors="ignore")
        proj = project(emb, direction)
        t_emb = train["embedding"].reset_coords(drop=True).drop_vars(ITEM, errors="ignore")
        n_p = int(y.sum())
        cos_d = sc_weat_effect_sizes(
            emb, t_emb.isel({ITEM: slice(0, n_p)}), t_emb.isel({ITEM: slice(n_p, None)}), ddof=int(ddof)
        )
        for kind, score in (("projection", proj), ("cosine", cos_d)):
            corr = stats.correlation(score, rating, dim=ITEM, method="pearson")
            for stat in ("r", "p", "ci_low", "ci_high"):
                out[f"{stat}_{kind}"] = corr[stat]
            if kind == "projection":  # the words behind the r by projection (the cosine's are
                out["n"] = corr["n"]  # the same words, unless its SC-WEAT is 0/0: r undefined)
        out["r_projection"].attrs["long_name"] = "Pearson's r of projections with the ratings"
        out["r_cosine"].attrs["long_name"] = "Pearson's r of cosine SC-WEAT with the ratings"
        attrs.update(
            lexicon=name,
            ddof=int(ddof),
            training_words_in_valnorm=str(method == "reference").lower(),
            valnorm_words=int(len(positions)),
        )
    out = out.transpose("layer", "pooling", ...)
    out.attrs = {"analysis": "valence-subspace", **attrs, "valnorm": str(bool(valnorm)).lower(),
                 **provenance_attrs(ds)}
    return out


# -- tables, figures, summary ----------------------------------------------------------------------
_COLUMNS = ("model", "layer", "pooling", "svc_accuracy", "r_projection", "r_cosine", "n")
_MORE = ("ci_low_projection", "ci_high_projection", "p_projection", "ci_low_cosine",
         "ci_high_cosine", "p_cosine", "n_train", "svc_converged")


def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``valence_subspace``: one row per (model, layer, pooling)."""
    names = [v for v in (*_COLUMNS, *_MORE) if v in result and v not in ("model", "layer", "pooling")]
    per_cell = [v for v in names if set(result[v].dims) >= {"layer", "pooling"}]
    # a cell is computed when it has an accuracy or a ValNorm (cv_folds=0: no accuracy at all)
    frame = tidy_frame(result, per_cell, drop_all_nan=["svc_accuracy", "r_projection"])
    if "n_train" in result and "n_train" not in frame:
        frame["n_train"] = int(result["n_train"].max())
    frame = integer_columns(frame, ("layer", "n", "n_train"))
    for kind in ("projection", "cosine"):  # a p below float range only as its log10
        frame = add_log10_p(frame, r=f"r_{kind}", n="n", p=f"p_{kind}", name=f"log10_p_{kind}")
        frame = p_below_range(frame, p=f"p_{kind}", log10_p=f"log10_p_{kind}")
    return {"valence_subspace": front(frame, _COLUMNS)}


def _figures(result: xr.Dataset) -> dict[str, Figure]:
    from emb.analyses.valence_subspace._figures import valnorm_curves

    return {"valnorm_curves": valnorm_curves(result)}


def _summary(result: xr.Dataset, tables: dict[str, pd.DataFrame]) -> Summary:
    """Declared cell: the top layer, the ``last`` pooling (else the first)."""
    value = "svc_accuracy" if tables["valence_subspace"]["svc_accuracy"].notna().any() \
        else "r_projection"  # cv_folds=0: no accuracy, the ValNorm alone
    frame = tables["valence_subspace"].dropna(subset=[value])
    # each model at the declared pooling, or its own without it (a static store: static)
    cell, pooling = own_pooling_rows(frame, value, DEFAULT_POOLINGS)
    keys = [k for k in ("model",) if k in cell]
    headline = [f"declared cell: top layer, pooling {pooling}"]
    rows = []
    for key, group in cell.groupby(keys, sort=False) if keys else [((), cell)]:
        top = group.loc[group["layer"].idxmax()]
        label = str(key[0] if isinstance(key, tuple) and key else key) if keys else "model"
        row = {"model": label, "layer": int(top["layer"]), "svc_accuracy": top["svc_accuracy"]}
        accuracy = (f"SVC accuracy {top['svc_accuracy']:.2f}" if pd.notna(top["svc_accuracy"])
                    else "SVC accuracy not cross-validated (cv_folds=0)")
        text = f"{label}: layer {int(top['layer'])}, {accuracy}"
        if "r_projection" in top:
            row.update(r_projection=top["r_projection"], r_cosine=top["r_cosine"], n=int(top["n"]))
            def r_text(kind: str, top: Any = top) -> str:
                if pd.isna(top[f"r_{kind}"]):
                    return "undefined"  # a constant score (identical vectors)
                return (f"{top[f'r_{kind}']:.3f} [{top[f'ci_low_{kind}']:.3f}, "
                        f"{top[f'ci_high_{kind}']:.3f}]")

            text += (f"; ValNorm r = {r_text('projection')} by projection vs {r_text('cosine')} "
                     f"by cosine (n = {int(top['n'])})")
        headline.append(text)
        rows.append(row)
    notes = [
        f"direction: LinearSVC(C={result.attrs.get('C')}) on the training words alone, "
        f"scaling {result.attrs.get('scaling')}; accuracy: "
        + (f"{result.attrs.get('cv_folds')}-fold cross-validated." if result.attrs.get("cv_folds")
           else "not cross-validated (cv_folds=0)."),
    ]
    if "svc_converged" in frame and not frame["svc_converged"].astype(bool).all():
        notes.append(f"{int((~frame['svc_converged'].astype(bool)).sum())} fits did not converge.")
    if "r_projection" in frame and frame["r_projection"].notna().any():
        best = frame.loc[frame["r_projection"].idxmax()]
        notes.append(
            f"highest projection r (exploratory, chosen after looking): {best['r_projection']:.3f} "
            f"at layer {int(best['layer'])}, {best['pooling']} pooling"
            + (f", {best['model']}" if "model" in best else "")
        )
    return Summary(
        title="Valence subspace: LinearSVC direction per layer; ValNorm by projection vs cosine",
        headline=headline,
        table=pd.DataFrame(rows),
        notes=notes,
    )


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    """A small ``intersectional`` suite (its polar and rated words alone)."""
    from emb.analyses._examples import intersectional_example, lazy

    return lazy(intersectional_example(), item_chunk=512), {"seed": 3}


ANALYSIS = Analysis(
    name="valence-subspace",
    seed=SEED_32,  # LinearSVC and StratifiedKFold take a random_state below 2**32
    function=valence_subspace,
    suite="intersectional",
    description="valence direction (LinearSVC) per layer: CV accuracy, ValNorm by projection vs cosine",
    options=(
        C_SVC,
        Option(name="scaling", choices=SCALINGS, help="feature scaling fitted on the training words"),
        CV_FOLDS.but(help="folds of the cross-validated accuracy (0: none)"),
        Option(name="valnorm", type="bool", help="ValNorm by projection on the suite's lexicon"),
        Option(name="lexicon", help="lexicon of the suite (default: its only one)"),
        DDOF.but(help="delta degrees of freedom of the SC-WEAT std"),
    ),
    tables=_tables,
    figures=_figures,
    summary=_summary,
    outputs={
        **{name: ("layer", "pooling") for name in (
            "svc_accuracy", "svc_converged", "offset", "n", "r_projection", "p_projection",
            "ci_low_projection", "ci_high_projection", "r_cosine", "p_cosine", "ci_low_cosine",
            "ci_high_cosine")},
        "valence_axis": ("layer", "pooling", "feature"),
        "direction": ("layer", "pooling", "feature"),
        "n_train": (),
    },
    example=_example,
)
