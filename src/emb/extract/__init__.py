"""The extract stage: the pipeline that feeds suites (:mod:`emb.stimuli`) through a model's runner
(:mod:`emb.backends`) into a store.

The stimuli's and the backends' public names are handed on here too (``from emb.extract import
build_suite, load_model``). Importing this package does not import torch: the transformers runner
is imported when a model is loaded.
"""

from __future__ import annotations

from typing import Any

from emb.extract.pipeline import extract
from emb.extract.settings import ExtractionSettings, SuiteReport
from emb.stimuli import (
    BUILTIN_SUITES,
    Corpus,
    Item,
    Lexicon,
    Suite,
    SuiteOption,
    build_suite,
    load_corpus,
    load_lexicon,
    load_suite,
    write_suite,
)

__all__ = [
    "BUILTIN_SUITES",
    "Corpus",
    "ExtractionSettings",
    "Item",
    "Lexicon",
    "Suite",
    "SuiteOption",
    "SuiteReport",
    "build_suite",
    "extract",
    "load_corpus",
    "load_lexicon",
    "load_model",
    "load_suite",
    "write_suite",
]


def __getattr__(name: str) -> Any:
    if name == "load_model":  # imports torch and transformers
        from emb.backends import load_model

        return load_model
    raise AttributeError(f"module 'emb.extract' has no attribute {name!r}")
