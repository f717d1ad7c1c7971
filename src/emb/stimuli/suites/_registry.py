"""The registry of built-in suite generators: one line per family.

A family's generator lives in its own module of this package (``vast.py``, ``weat.py``, …) and
imports only :mod:`emb.stimuli.suites.core`, ``generator`` and ``_common``; this module imports the generators, so
there is no import circle.
"""

from __future__ import annotations

from typing import Any

from emb.errors import SuiteError
from emb.stimuli.suites.ceat import CeatGenerator
from emb.stimuli.suites.core import Suite
from emb.stimuli.suites.generator import SuiteGenerator
from emb.stimuli.suites.ibd import IbdGenerator
from emb.stimuli.suites.intersectional import IntersectionalGenerator
from emb.stimuli.suites.similarity import SimilarityGenerator
from emb.stimuli.suites.stereotype import StereotypeGenerator
from emb.stimuli.suites.vast import VastGenerator
from emb.stimuli.suites.weat import WeatGenerator

__all__ = ["BUILTIN_SUITES", "build_suite"]

#: name -> generator of the built-in suites.
BUILTIN_SUITES: dict[str, SuiteGenerator] = {
    generator.name: generator
    for generator in (
        VastGenerator(),
        WeatGenerator(),
        SimilarityGenerator(),
        StereotypeGenerator(),
        IbdGenerator(),
        IntersectionalGenerator(),
        CeatGenerator(),
    )
}


def build_suite(name: str, **options: Any) -> Suite:
    """Build a suite with the built-in generator ``name`` (a key of :data:`BUILTIN_SUITES`).

    Parameters
    ----------
    name
        A key of :data:`BUILTIN_SUITES`.
    **options
        The generator's options (see ``BUILTIN_SUITES[name].options``).

    Raises
    ------
    SuiteError
        Unknown generator or option, bad option value, missing inputs.

    Examples
    --------
    >>> suite = build_suite("vast", lexicon=["bellezza.csv"])    # doctest: +SKIP
    >>> len(suite), suite.settings                               # doctest: +SKIP
    (1347, ('bleached', 'aligned', 'misaligned'))
    """
    if name not in BUILTIN_SUITES:
        raise SuiteError(f"no built-in suite {name!r}; choose one of {sorted(BUILTIN_SUITES)}")
    return BUILTIN_SUITES[name].build(**options)

