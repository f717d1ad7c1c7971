"""How far a WEAT-style result can be trusted: which words drive it (``seed-sensitivity``); its
statistics are :mod:`emb.analyses.stats.robustness`."""

from __future__ import annotations

from emb.analyses.robustness._influence import ANALYSIS as SEED_SENSITIVITY
from emb.analyses.robustness._influence import seed_sensitivity

__all__ = ["SEED_SENSITIVITY", "seed_sensitivity"]
