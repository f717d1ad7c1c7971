"""The extract stage: the pipeline that feeds suites (:mod:`emb.stimuli`) through a model's runner
(:mod:`emb.backends`) into a store.

The stimuli's and the backends' public names are handed on here too (``from emb.extract import
build_suite, load_model``). Importing this package does not import torch: the transformers runner
is imported when a model is loaded.

The package is also the front door's ``emb.extract(model, suites, store, **options)``: calling
it calls :func:`emb.extract.front.extract` (:func:`emb.api.extract`: suites by name with their
options, the backend chosen, what ``emb extract`` does), so that ``emb.extract`` names both the
room and its door without one hiding the other (``emb.extract.pipeline`` stays importable and
patchable).
"""

from __future__ import annotations

import sys
import types
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


class _FrontDoor(types.ModuleType):
    """This package's module type: calling it is :func:`emb.extract.front.extract`."""

    def __call__(self, model: Any, suites: Any, store: Any, **options: Any) -> Any:
        from emb.extract.front import extract as front_door

        return front_door(model, suites, store, **options)


sys.modules[__name__].__class__ = _FrontDoor
