"""An analysis' results on disk: written all or nothing (:mod:`~emb.results.directory`, with its
rendering, sidecar and journalled swap), read back, and gathered into ``emb report``'s page
(:mod:`~emb.results.report`)."""

from __future__ import annotations

from emb.results.directory import (
    FIGURE_FORMATS,
    TABLE_FORMATS,
    OutputPlan,
    ResultsError,
    Written,
    discard_out,
    find_runs,
    make_dirs,
    netcdf_ready,
    prepare_out,
    read_run,
    remove_empty_dirs,
    write_results,
)

__all__ = [
    "FIGURE_FORMATS",
    "TABLE_FORMATS",
    "OutputPlan",
    "ResultsError",
    "Written",
    "discard_out",
    "find_runs",
    "make_dirs",
    "netcdf_ready",
    "prepare_out",
    "read_run",
    "remove_empty_dirs",
    "write_results",
]
