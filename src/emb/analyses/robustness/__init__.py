"""How far a WEAT-style result can be trusted: which words drive it (``seed-sensitivity``), whether random attribute sets do as much (``empirical-null``); its
statistics are :mod:`emb.analyses.stats.robustness`."""

from __future__ import annotations

from emb.analyses.robustness._influence import ANALYSIS as SEED_SENSITIVITY
from emb.analyses.robustness._influence import seed_sensitivity
from emb.analyses.robustness._null import ANALYSIS as EMPIRICAL_NULL
from emb.analyses.robustness._null import empirical_null

__all__ = ["EMPIRICAL_NULL", "SEED_SENSITIVITY", "empirical_null", "seed_sensitivity"]
