"""CEAT, WEAT over sampled natural contexts combined by a random-effects model (Guo & Caliskan
2021): one family.

- ``_ceat.py``: :func:`ceat`, its tables, figures list, summary and :data:`ANALYSIS` record;
- ``_kernels.py``: the kernels on plain arrays (sample indices, each sample's ES and V, the
  bootstrap's indices, the meta-analysis per cell);
- ``_figures.py``: ES histograms, CES by layer, the CES heat table, convergence in N.
"""

from __future__ import annotations

from emb.analyses.ceat._ceat import (
    ANALYSIS,
    MAX_CEAT_SAMPLES,
    MAX_SAMPLE_PERMUTATIONS,
    ceat,
    ceat_kernel,
    sample_indices,
)

__all__ = ["ANALYSIS", "MAX_CEAT_SAMPLES", "MAX_SAMPLE_PERMUTATIONS", "ceat", "ceat_kernel", "sample_indices"]
