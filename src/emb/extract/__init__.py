"""The extract stage: stimulus suites, lexicon and corpus readers, the model runner, the pipeline.

Importing this package does not import torch: the runner (:mod:`emb.extract.model`) is imported
when a model is loaded.
"""

from __future__ import annotations

from typing import Any

from emb.extract.corpus import Corpus, load_corpus
from emb.extract.lexicon import Lexicon, load_lexicon
from emb.extract.pipeline import extract
from emb.extract.settings import ExtractionSettings, SuiteReport
from emb.extract.suites import (
    BUILTIN_SUITES,
    Item,
    Suite,
    SuiteOption,
    build_suite,
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
        from emb.extract.loading import load_model

        return load_model
    raise AttributeError(f"module 'emb.extract' has no attribute {name!r}")
