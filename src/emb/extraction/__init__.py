"""The extract stage: the pipeline that feeds suites (:mod:`emb.stimuli`) through a model's runner
(:mod:`emb.backends`) into a store.

The stimuli's and the backends' public names are handed on here too (``from emb.extraction import
build_suite, load_model``). Importing this package does not import torch: the transformers runner
is imported when a model is loaded.

The front door, ``emb.extract(model, suites, store, **options)`` (suites by name with their
options, the backend chosen: what ``emb extract`` does), is the plain function
:func:`emb.api.extract`; this package's :func:`extract` is the pipeline it runs
(:func:`emb.extraction.pipeline.extract`: built suites, a model spec or a loaded runner).
"""

from __future__ import annotations

from typing import Any

from emb.extraction.pipeline import extract
from emb.extraction.settings import ExtractionSettings, SuiteReport
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
    raise AttributeError(f"module 'emb.extraction' has no attribute {name!r}")

