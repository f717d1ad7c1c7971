"""The tables of a ``ceat`` result: the meta-analysis per cell, the contexts per stimulus, and the
convergence in the number of samples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import front, integer_columns, tidy_frame, with_set_sizes
from emb.analyses.ceat._kernels import _META

__all__ = ["tables"]


def tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``ceat`` (model × test × layer × pooling), ``ceat_contexts`` (per stimulus),
    ``ceat_convergence`` (the meta-analysis on the first N samples)."""
    main = tidy_frame(result, [*_META, "boot_ci_low", "boot_ci_high"])
    main["n_samples"] = int(result.attrs.get("n_samples", 0))
    per_test = [v for v in ("n_x", "n_y", "n_a", "n_b", "small_n") if v in result]
    extra = result[per_test].reset_coords(drop=True)
    for g in ("x_group", "y_group", "a_group", "b_group"):
        if g in result.coords:
            extra[g] = (result[g].dims, np.asarray(result[g].values))
    main = main.merge(extra.to_dataframe().reset_index(), how="left")
    main = integer_columns(main, ("layer", "n_samples", "n_x", "n_y", "n_a", "n_b"))
    main = front(main, ("model", "test", "layer", "pooling", "ces", "se", "ci_low", "ci_high",
                        "z", "p", "log10_p", "tau2", "q", "i2", "n_samples", "boot_ci_low",
                        "boot_ci_high"))
    contexts = result[["n_contexts", "n_seen", "with_replacement"]].to_dataframe().reset_index()
    contexts = integer_columns(contexts, ("n_contexts", "n_seen"))
    conv = tidy_frame(result, ["conv_p", "conv_ci_low", "conv_ci_high"]).rename(
        columns={"n_grid": "n", "conv_p": "p", "conv_ci_low": "ci_low", "conv_ci_high": "ci_high"})
    tables = {"ceat": main, "ceat_contexts": contexts,
              "ceat_convergence": with_set_sizes(conv, result)}
    if "conv_boot_ci_low" in result:
        boot = tidy_frame(result, ["conv_boot_ci_low", "conv_boot_ci_high"]).rename(
            columns={"n_boot_grid": "samples_per_replicate", "conv_boot_ci_low": "boot_ci_low",
                     "conv_boot_ci_high": "boot_ci_high"})
        tables["ceat_bootstrap_convergence"] = with_set_sizes(boot, result)
    return tables
