"""The tables of an ``ibd`` result: the detection metrics per group, method and cell, each
attribute word's scores and detection, and the ROC candidates with the chosen point."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import front, integer_columns, tidy_frame, with_set_sizes
from emb.analyses.ibd._design import METHODS
from emb.analyses.ibd._export import DETECTOR

__all__ = ["tables"]

_METRICS = ("threshold", "tp", "fp", "tn", "fn", "tpr", "fpr", "accuracy", "balanced_accuracy",
            "precision", "recall", "f1")
_SIZE_TEXT = {"n_names": "the group's names with vectors in the store"}
_PER_GROUP = ("chance_rate", "majority_baseline", "n_positive", "n_negative")


def tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``ibd`` (one row per model × group × method × setting × layer × pooling), ``ibd_words``
    (× attribute word) and ``ibd_roc`` (× candidate threshold, repeats dropped)."""
    frame = tidy_frame(result, list(_METRICS), drop_all_nan=["tpr", "fpr", "threshold"],
                       rename={DETECTOR: "method"})
    per_group = (result[list(_PER_GROUP)].reset_coords(drop=True).to_dataframe().reset_index()
                 .rename(columns={DETECTOR: "method"}))
    frame = frame.merge(per_group, how="left")
    roles = pd.DataFrame({"group": [str(g) for g in result["group"].values.tolist()],
                          "group_role": [str(r) for r in result["group_role"].values.tolist()]})
    frame = frame.merge(roles, how="left")
    frame = _named(frame, result)
    if "small_n_compared" in result:  # the group's own names and whether a compared set is small
        sizes = result[["n_names"]].reset_coords(drop=True).to_dataframe().reset_index()
        sizes = sizes.rename(columns={"name_set": "group"})
        flags = (result[["small_n_compared"]].reset_coords(drop=True).to_dataframe().reset_index()
                 .rename(columns={"small_n_compared": "small_n"}))
        frame = frame.merge(sizes, how="left").merge(flags, how="left")
    frame = integer_columns(frame, ("layer", "tp", "fp", "tn", "fn", "n_positive", "n_negative",
                                    "n_names"))
    main = front(frame, ("model", "group", "group_name", "group_role", "method", "setting", "layer", "pooling",
                         *_METRICS[:-3], "chance_rate", "majority_baseline", "precision",
                         "recall", "f1", "n_positive", "n_negative"))

    method_index = pd.Index(list(METHODS), name=DETECTOR)
    score = xr.concat([result["ibd_score"], result["eibd_score"]], dim=method_index)
    score = score.broadcast_like(result["detected"])
    const = result["constituent_score"].broadcast_like(result["detected"])
    const = const.where(result[DETECTOR] == "eibd")
    words = xr.Dataset({"score": score, "constituent_score": const, "detected": result["detected"],
                        "label": result["label"].broadcast_like(result["detected"])})
    wf = words.reset_coords(drop=True).to_dataframe().reset_index()
    wf = wf[wf["score"].notna()].rename(columns={"attribute": "word", DETECTOR: "method"})
    wf["label"] = wf["label"].astype(bool)
    wf["detected"] = wf["detected"].astype(bool)
    wf = integer_columns(wf, ("layer",))
    words_frame = front(_named(wf, result), ("model", "group", "group_name", "method", "setting", "layer", "pooling", "word",
                             "score", "constituent_score", "label", "detected")).reset_index(drop=True)

    roc = xr.Dataset({"threshold": result["roc_threshold"], "tp": result["roc_tp"],
                      "fp": result["roc_fp"], "tpr": result["roc_tpr"], "fpr": result["roc_fpr"]})
    rf = roc.reset_coords(drop=True).to_dataframe().reset_index().rename(columns={DETECTOR: "method"})
    rf = rf[rf["tpr"].notna()]
    keys = [k for k in ("model", "group", "method", "setting", "layer", "pooling") if k in rf]
    rf = rf.drop(columns="candidate").drop_duplicates(subset=[*keys, "threshold"])
    rf["eligible"] = rf["threshold"] >= 0
    chosen = frame[[*keys, "threshold"]].rename(columns={"threshold": "chosen_t"})
    rf = rf.merge(chosen, how="left", on=keys)
    # the chosen operating point is the last candidate at or below the chosen t
    below = rf["threshold"] <= rf["chosen_t"]
    last = rf[below].groupby(keys, sort=False)["threshold"].transform("max")
    rf["chosen"] = False
    rf.loc[last.index, "chosen"] = (rf.loc[last.index, "threshold"] == last).to_numpy()
    rf = integer_columns(rf.drop(columns="chosen_t"), ("layer", "tp", "fp"))
    rf = _named(rf, result)
    at = keys.index("group") + 1
    roc_frame = front(rf, (*keys[:at], "group_name", *keys[at:], "threshold", "tp", "fp", "tpr", "fpr", "eligible", "chosen"))
    roc_frame = roc_frame.reset_index(drop=True)
    # its columns hold the roc_* variables, not the chosen cell's variables of the same name
    roc_frame.attrs["descriptions"] = {
        **{c: str(result[f"roc_{c}"].attrs.get("long_name", "")) for c in ("threshold", "tp", "fp",
                                                                            "tpr", "fpr")},
        "eligible": "candidate threshold t >= 0 (only these can be chosen)",
        "chosen": "the chosen operating point: the last candidate at or below the chosen t",
    }
    if "small_n_compared" in result:  # the column holds small_n_compared, not small_n
        main.attrs["descriptions"] = {**main.attrs.get("descriptions", {}), **_SIZE_TEXT,
                                      "small_n": str(result["small_n_compared"].attrs.get(
                                          "long_name", ""))}
    return {"ibd": main, "ibd_words": _sized(words_frame, result),
            "ibd_roc": _sized(roc_frame, result)}


def _named(frame: pd.DataFrame, result: xr.Dataset) -> pd.DataFrame:
    """``frame`` with each group's readable name (``group_name``) beside its id."""
    if "group_name" not in result.coords or "group" not in frame:
        return frame
    coord = result["group_name"]  # over (model, group) where the stores of a run name it differently
    names = xr.DataArray(np.asarray(coord.values, dtype=object).astype(str), dims=coord.dims,
                         coords={d: result[d].values for d in coord.dims})
    names = names.to_dataframe(name="group_name").reset_index()
    if "model" in names and "model" not in frame:
        names = names.drop(columns="model").drop_duplicates("group")
    out = frame.merge(names, how="left", on=[c for c in names.columns if c != "group_name"])
    out.index = frame.index
    out.attrs = {**frame.attrs, "descriptions": {
        **frame.attrs.get("descriptions", {}),
        "group_name": "the group's readable name (the groups file's _names)"}}
    return out


def _sized(frame: pd.DataFrame, result: xr.Dataset) -> pd.DataFrame:
    """``frame`` with its group's ``n_names`` and ``small_n`` as the last columns."""
    if "small_n_compared" not in result:
        return frame
    names = with_set_sizes(frame.rename(columns={"group": "name_set"}), result, unit="name_set",
                           variables=("n_names",)).rename(columns={"name_set": "group"})
    out = with_set_sizes(names, result, unit="group", variables=("small_n_compared",),
                         rename={"small_n_compared": "small_n"})
    out.attrs["descriptions"] = {**frame.attrs.get("descriptions", {}), **_SIZE_TEXT,
                                 "small_n": str(result["small_n_compared"].attrs.get("long_name", ""))}
    return out
