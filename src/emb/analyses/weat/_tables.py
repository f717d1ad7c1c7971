"""The tables of a ``weat`` result: one row per test and cell, and each test's top layer beside
its layer of the largest |d|."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import (
    front,
    integer_columns,
    layer_table,
    mc_floor,
    tidy_frame,
    with_set_sizes,
)

__all__ = ["tables"]


def tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``weat``: one row per (model, test, setting, pooling, layer); ``weat_best_layers``: per
    (model, test, setting, pooling) the top layer's d beside the layer of the largest |d|."""
    frame = tidy_frame(result, ["effect_size", "ci_low", "ci_high", "statistic", "p", "p_mc_se",
                                "p_adjusted"], drop_all_nan=["effect_size", "p"])
    per_test = [v for v in ("n_permutations", "n_x", "n_y", "n_a", "n_b", "small_n")
                if v in result]
    groups = [c for c in ("x_group", "y_group", "a_group", "b_group") if c in result.coords]
    if per_test or groups:
        extra = result[per_test].reset_coords(drop=True)
        for g in groups:
            extra[g] = (result[g].dims, np.asarray(result[g].values))
        frame = frame.merge(extra.to_dataframe().reset_index(), how="left")
    frame = integer_columns(frame, ("layer", "n_permutations", "n_x", "n_y", "n_a", "n_b"))
    if "n_permutations" in frame and "p" in frame:
        at_floor = mc_floor(frame["p"], frame["n_permutations"].fillna(0).astype(float))
        frame.insert(int(frame.columns.get_loc("p")) + 1, "p_at_floor", at_floor)
    main = front(frame, ("model", "test", "x_group", "y_group", "a_group", "b_group", "setting",
                         "pooling", "layer", "effect_size", "ci_low", "ci_high", "p", "p_at_floor",
                         "p_mc_se", "p_adjusted", "statistic", "n_permutations"))
    best = layer_table(main.dropna(subset=["effect_size"]), "effect_size",
                       ("model", "test", "setting", "pooling"), extra=("ci_low", "ci_high"),
                       best="absmax")
    return {"weat": main, "weat_best_layers": with_set_sizes(best, result)}
