"""VAST, the Valence-Assessing Semantics Test (Wolfe & Caliskan 2022): one family.

- ``_vast.py``: :func:`vast`, its tables, figures list, summary and :data:`ANALYSIS` record;
- ``_blocks.py``: the item blocks (one lexicon × setting), their plans and the lazy plumbing;
- ``_kernels.py``: the numpy kernels, one block in, statistics out.

It builds on :mod:`emb.analyses.valnorm` (the statistic and its polar words) and
:mod:`emb.analyses.similarity` (the word-similarity benchmarks).
"""

from __future__ import annotations

from emb.analyses.vast._vast import ANALYSIS, MAX_SUBSETS, RATINGS, SETTINGS, vast

__all__ = ["ANALYSIS", "MAX_SUBSETS", "RATINGS", "SETTINGS", "vast"]
