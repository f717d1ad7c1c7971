"""WEAT, the Word Embedding Association Test (Caliskan, Bryson & Narayanan 2017): one family.

- ``_weat.py``: :func:`weat`, its kernel, tables, summary and :data:`ANALYSIS` record;
- ``_summary.py``, ``_tables.py``: its summary and tables;
- ``_figures.py``: effect size by layer per test, and the tests × layers heat map.

The tests' definitions (X/Y/A/B from the suite, a YAML/JSON ``--test`` file or a mapping) and
their resolution are shared with the other families over WEAT-style tests:
:mod:`emb.analyses.wordsets`.
"""

from __future__ import annotations

from emb.analyses.weat._weat import ANALYSIS, MIN_TARGET_WORDS, weat

__all__ = ["ANALYSIS", "MIN_TARGET_WORDS", "weat"]
