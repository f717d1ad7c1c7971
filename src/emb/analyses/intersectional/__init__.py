"""Intersectional valence bias of "person" in 4,096 + 3,840 phrases (Omrani Sabbaghi, Wolfe &
Caliskan 2023): one family.

- ``_intersectional.py``: :func:`intersectional`, its kernels, tables, summary and
  :data:`ANALYSIS` record;
- ``_figures.py``: Table 2 as a heat table, Figure 3 (projections per value), Figure 4
  (experiment-3 shares).

It builds on :mod:`emb.analyses.valence_subspace` (the valence direction of each layer).
"""

from __future__ import annotations

from emb.analyses.intersectional._intersectional import ANALYSIS, REFERENCE_DROPPED, intersectional

__all__ = ["ANALYSIS", "REFERENCE_DROPPED", "intersectional"]
