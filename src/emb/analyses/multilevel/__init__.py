"""ML-EAT, the multilevel embedding association test (``emb analyze ml-eat``); its statistics are
:mod:`emb.analyses.stats.multilevel`."""

from __future__ import annotations

from emb.analyses.multilevel._multilevel import ANALYSIS, ml_eat

__all__ = ["ANALYSIS", "ml_eat"]
