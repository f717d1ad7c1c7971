"""Stereotype-content profiles (Nicolas, Bai & Fiske 2021; Schuster et al. 2024): one family.

- ``_stereotype.py``: :func:`stereotype`, its tables, summary and :data:`ANALYSIS` record;
- ``_figures.py``: the 7D profile, the warmth × competence scatter, Cohen's d by layer.
"""

from __future__ import annotations

from emb.analyses.stereotype._stereotype import ANALYSIS, DIMENSIONS, HIGHER_ORDER, stereotype

__all__ = ["ANALYSIS", "DIMENSIONS", "HIGHER_ORDER", "stereotype"]
