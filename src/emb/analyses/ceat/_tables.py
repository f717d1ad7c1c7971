"""The tables of a ``ceat`` result: the meta-analysis per cell, the contexts per stimulus, and the
convergence in the number of samples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._analysis import front, integer_columns, p_below_range, tidy_frame, with_set_sizes
from emb.analyses.ceat._kernels import _META
from emb.analyses.stats import meta_log10_pvalue

__all__ = ["tables"]


def _re_text(result: xr.Dataset) -> dict[str, str]:
    """The columns' descriptions that label the paper's random-effects numbers as such."""
    tail = ("; read boot_ci_low/boot_ci_high for an uncertainty that does not"
            if "boot_ci_low" in result else "")
    text = ("the paper's random-effects (DerSimonian-Laird) {} over the N samples; N resamples of "
            "one pool of contexts are not independent studies, so it shrinks like 1/sqrt(N) for "
            "any N chosen" + tail)
    return {
        "se": text.format("standard error of the CES"),
        "ci_low": text.format("95% CI of the CES, lower bound"),
        "ci_high": text.format("95% CI of the CES, upper bound"),
        "z": text.format("z = CES/SE"),
        "p": text.format("p of z") + "; empty below the float range (< 2.2e-308): see log10_p",
        "test_name": "the test's readable name (its definition's name)",
    }


def tables(result: xr.Dataset) -> dict[str, pd.DataFrame]:
    """``ceat`` (model × test × layer × pooling), ``ceat_contexts`` (per stimulus),
    ``ceat_convergence`` (the meta-analysis on the first N samples)."""
    main = tidy_frame(result, [*_META, "boot_ci_low", "boot_ci_high"])
    main["n_samples"] = int(result.attrs.get("n_samples", 0))
    per_test = [v for v in ("n_x", "n_y", "n_a", "n_b", "small_n") if v in result]
    extra = result[per_test].reset_coords(drop=True)
    for g in ("test_name", "x_group", "y_group", "a_group", "b_group"):
        if g in result.coords:
            extra[g] = (result[g].dims, np.asarray(result[g].values))
    main = main.merge(extra.to_dataframe().reset_index(), how="left")
    main = integer_columns(main, ("layer", "n_samples", "n_x", "n_y", "n_a", "n_b"))
    # the uncertainty that does not shrink with N first, then the paper's random-effects numbers
    main = front(main, ("model", "test", "test_name", "layer", "pooling", "ces", "boot_ci_low",
                        "boot_ci_high", "se", "ci_low", "ci_high", "z", "p", "log10_p", "tau2",
                        "q", "i2", "n_samples"))
    main = p_below_range(main)
    main.attrs["descriptions"] = {**main.attrs["descriptions"], **_re_text(result)}
    contexts = result[["n_contexts", "n_seen", "with_replacement"]].to_dataframe().reset_index()
    contexts = integer_columns(contexts, ("n_contexts", "n_seen"))
    conv = tidy_frame(result, ["conv_p", "conv_ci_low", "conv_ci_high", "conv_z"]).rename(
        columns={"n_grid": "n", "conv_p": "p", "conv_ci_low": "ci_low", "conv_ci_high": "ci_high"})
    if "conv_z" in conv:  # p from z without underflow, as in the main table
        conv.insert(int(conv.columns.get_loc("p")) + 1, "log10_p", meta_log10_pvalue(
            conv.pop("conv_z").to_numpy(float), str(result.attrs.get("alternative", "two-sided"))))
        conv = p_below_range(conv)
        conv.attrs["descriptions"] = {**conv.attrs["descriptions"], **_re_text(result),
                                      "n": "N: the first n samples combined"}
    tables = {"ceat": main, "ceat_contexts": contexts,
              "ceat_convergence": with_set_sizes(conv, result)}
    if "conv_boot_ci_low" in result:
        boot = tidy_frame(result, ["conv_boot_ci_low", "conv_boot_ci_high"]).rename(
            columns={"n_boot_grid": "samples_per_replicate", "conv_boot_ci_low": "boot_ci_low",
                     "conv_boot_ci_high": "boot_ci_high"})
        tables["ceat_bootstrap_convergence"] = with_set_sizes(boot, result)
    return tables
