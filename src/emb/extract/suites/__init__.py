"""Stimulus suites: which target word, in which context, to embed (torch-free).

:mod:`~emb.extract.suites.core` holds the data model (:class:`Item`, :class:`Suite`) and file
loading, :mod:`~emb.extract.suites.generator` the generator interface; each built-in generator is a
module of its own (``vast``, ``weat``, ``similarity``), listed once in
:mod:`~emb.extract.suites._registry`.
"""

from __future__ import annotations

from emb.extract.suites._registry import BUILTIN_SUITES, build_suite
from emb.extract.suites.core import PLACEHOLDER, Item, Suite, load_suite, write_suite
from emb.extract.suites.generator import SuiteGenerator, SuiteOption

__all__ = [
    "BUILTIN_SUITES",
    "PLACEHOLDER",
    "Item",
    "Suite",
    "SuiteGenerator",
    "SuiteOption",
    "build_suite",
    "load_suite",
    "write_suite",
]
