"""IBD and EIBD, intersectional and emergent intersectional bias detection (Guo & Caliskan 2021):
one family.

- ``_ibd.py``: :func:`ibd`, its kernels, tables, summary and :data:`ANALYSIS` record;
- ``_design.py``: which names and pairs are compared, from the suite's labels and parameters;
- ``_export.py``: the declared cell, and the detected words exported as CEAT/WEAT tests;
- ``_figures.py``: ROC curves with the chosen point, and detection accuracy by layer.
"""

from __future__ import annotations

from emb.analyses.ibd._ibd import ANALYSIS, ibd

__all__ = ["ANALYSIS", "ibd"]
