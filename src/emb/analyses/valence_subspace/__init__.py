"""The valence subspace: a linear SVM direction per layer, validated by ValNorm by projection
(Omrani Sabbaghi, Wolfe & Caliskan 2023): one family.

- ``_valence_subspace.py``: :func:`valence_subspace`, :func:`valence_direction`,
  :func:`project`, its tables, summary and :data:`ANALYSIS` record;
- ``_figures.py``: ValNorm by projection vs by cosine by layer (Figure 2), and the helpers the
  intersectional figures share.
"""

from __future__ import annotations

from emb.analyses.valence_subspace._valence_subspace import (
    ANALYSIS,
    project,
    training_items,
    valence_direction,
    valence_subspace,
)

__all__ = ["ANALYSIS", "project", "training_items", "valence_direction", "valence_subspace"]
