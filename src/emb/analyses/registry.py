"""The registry of analyses: one line per family.

Each analysis module declares its :class:`~emb.analyses._analysis.Analysis` record beside its
function; adding a family adds its module and one line here.
"""

from __future__ import annotations

from emb.analyses import (
    ibd,
    intersectional,
    sc_weat,
    similarity,
    stereotype,
    valence_subspace,
    valnorm,
    vast,
    weat,
)
from emb.analyses._analysis import Analysis
from emb.analyses.ceat import ANALYSIS as CEAT  # the package's name 'ceat' is the function
from emb.errors import AnalysisError

__all__ = ["ANALYSES", "get_analysis"]

#: CLI name -> analysis record (``emb analyze NAME``).
ANALYSES: dict[str, Analysis] = {
    a.name: a
    for a in (
        weat.ANALYSIS,
        sc_weat.ANALYSIS,
        valnorm.ANALYSIS,
        vast.ANALYSIS,
        similarity.ANALYSIS,
        stereotype.ANALYSIS,
        ibd.ANALYSIS,
        valence_subspace.ANALYSIS,
        intersectional.ANALYSIS,
        CEAT,
    )
}


def get_analysis(name: str) -> Analysis:
    """The record of analysis ``name``; an unknown name gets a "did you mean".

    Raises
    ------
    AnalysisError
        ``name`` is not registered.
    """
    if name in ANALYSES:
        return ANALYSES[name]
    import difflib

    close = difflib.get_close_matches(name, list(ANALYSES), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise AnalysisError(f"unknown analysis {name!r}{hint} The analyses are {sorted(ANALYSES)}")
