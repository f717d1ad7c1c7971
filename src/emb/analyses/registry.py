"""The registry of analyses: every family's record, by its CLI name.

Each family (a module, or a package of private modules) declares its
:class:`~emb.analyses._analysis.Analysis` record beside its function; adding a family adds its own
files and, here, the import of its record and its name in the tuple below.
"""

from __future__ import annotations

from emb.analyses._analysis import Analysis
from emb.analyses.ceat import ANALYSIS as CEAT
from emb.analyses.ibd import ANALYSIS as IBD
from emb.analyses.intersectional import ANALYSIS as INTERSECTIONAL
from emb.analyses.multilevel import ANALYSIS as ML_EAT
from emb.analyses.peers import ECT, MAC, RIPA, RNSB
from emb.analyses.robustness import EMPIRICAL_NULL, RELIABILITY, SEED_SENSITIVITY
from emb.analyses.sc_weat import ANALYSIS as SC_WEAT
from emb.analyses.similarity import ANALYSIS as SIMILARITY
from emb.analyses.stereotype import ANALYSIS as STEREOTYPE
from emb.analyses.valence_subspace import ANALYSIS as VALENCE_SUBSPACE
from emb.analyses.valnorm import ANALYSIS as VALNORM
from emb.analyses.vast import ANALYSIS as VAST
from emb.analyses.weat import ANALYSIS as WEAT
from emb.errors import AnalysisError

__all__ = ["ANALYSES", "get_analysis"]

#: CLI name -> analysis record (``emb analyze NAME``).
ANALYSES: dict[str, Analysis] = {
    a.name: a
    for a in (WEAT, SC_WEAT, VALNORM, VAST, SIMILARITY, STEREOTYPE, IBD, VALENCE_SUBSPACE,
              INTERSECTIONAL, CEAT, MAC, ECT, RIPA, RNSB, ML_EAT,
              SEED_SENSITIVITY, EMPIRICAL_NULL, RELIABILITY)
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
