"""Stimulus suites: which target word, in which context, to embed (torch-free).

:mod:`~emb.extract.suites.core` holds the data model (:class:`Item`, :class:`Suite`) and file
loading; each built-in generator is a module of its own (``vast``, ``weat``, ``similarity``), listed
once in :mod:`~emb.extract.suites._registry`.
"""

from __future__ import annotations

from emb.extract.suites._registry import BUILTIN_SUITES, build_suite
from emb.extract.suites.core import (
    PLACEHOLDER,
    Item,
    Suite,
    SuiteGenerator,
    SuiteOption,
    load_suite,
    write_suite,
)

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
