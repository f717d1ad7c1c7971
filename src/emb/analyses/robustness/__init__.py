"""How far a WEAT-style result can be trusted: which words drive it (``seed-sensitivity``), whether random attribute sets do as much (``empirical-null``), how
reliable its scores are and whether the metrics agree (``reliability``); its
statistics are :mod:`emb.analyses.stats.robustness`."""

from __future__ import annotations

from emb.analyses.robustness._influence import ANALYSIS as SEED_SENSITIVITY
from emb.analyses.robustness._influence import seed_sensitivity
from emb.analyses.robustness._null import ANALYSIS as EMPIRICAL_NULL
from emb.analyses.robustness._null import empirical_null
from emb.analyses.robustness._reliability import ANALYSIS as RELIABILITY
from emb.analyses.robustness._reliability import reliability

__all__ = ["EMPIRICAL_NULL", "RELIABILITY", "SEED_SENSITIVITY", "empirical_null", "reliability",
           "seed_sensitivity"]
