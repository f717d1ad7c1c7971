"""The stimuli: which target word, in which context, to embed (torch-free).

Suites and their generators (:mod:`emb.stimuli.suites`) and rated lexica
(:mod:`~emb.stimuli.lexicon`); the contexts they draw from corpora come from the corpus engine
(:mod:`emb.corpus`, whose :class:`~emb.corpus.Corpus` and :func:`~emb.corpus.load_corpus` are
handed on here). Importing it never imports torch: a suite is built, saved and checked without a
model.
"""

from __future__ import annotations

from emb.corpus import Corpus, load_corpus
from emb.stimuli.lexicon import Lexicon, load_lexicon
from emb.stimuli.suites import (
    BUILTIN_SUITES,
    PLACEHOLDER,
    Item,
    Suite,
    SuiteGenerator,
    SuiteOption,
    build_suite,
    build_suites,
    load_suite,
    suite_warnings,
    write_suite,
)

__all__ = [
    "BUILTIN_SUITES",
    "PLACEHOLDER",
    "Corpus",
    "Item",
    "Lexicon",
    "Suite",
    "SuiteGenerator",
    "SuiteOption",
    "build_suite",
    "build_suites",
    "load_corpus",
    "load_lexicon",
    "load_suite",
    "suite_warnings",
    "write_suite",
]
