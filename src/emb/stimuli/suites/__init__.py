"""Stimulus suites: which target word, in which context, to embed (torch-free).

:mod:`~emb.stimuli.suites.core` holds the data model (:class:`Item`, :class:`Suite`) and file
loading, :mod:`~emb.stimuli.suites.generator` the generator interface; each built-in generator is a
module of its own (``vast``, ``weat``, ``similarity``), listed once in
:mod:`~emb.stimuli.suites._registry`; :mod:`~emb.stimuli.suites.build` builds the suites a run
asks for (names with options, files).
"""

from __future__ import annotations

from emb.stimuli.suites._registry import BUILTIN_SUITES, build_suite
from emb.stimuli.suites.build import build_suites, suite_warnings
from emb.stimuli.suites.core import PLACEHOLDER, Item, Suite, load_suite, write_suite
from emb.stimuli.suites.generator import SuiteGenerator, SuiteOption

__all__ = [
    "BUILTIN_SUITES",
    "PLACEHOLDER",
    "Item",
    "Suite",
    "SuiteGenerator",
    "SuiteOption",
    "build_suite",
    "build_suites",
    "load_suite",
    "suite_warnings",
    "write_suite",
]
