"""Analyses of stored embeddings: pure, lazy functions over xarray Datasets, and their registry.

Each family is one module (``sc_weat``, ``valnorm``, ``similarity``) or one package whose private
modules hold its kernels and figures (``weat``, ``ceat``, ``ibd``, ``vast``, ``stereotype``,
``valence_subspace``, ``intersectional``): its function, tidy tables, figures, terminal summary
and :class:`Analysis` record; ``ANALYSES``
(:mod:`emb.analyses.registry`) maps the CLI names (``emb analyze NAME``) to the records, and
:func:`run_analysis` runs one over several stores (models), stacked along ``model``. Shared
statistics live in :mod:`emb.analyses.stats`. Nothing here imports torch.

Examples
--------
On a store, ``ds = emb.open_store("gpt2.zarr").dataset("vast")``; here the record's example
suite, as two "models":

>>> from emb.analyses import ANALYSES, run_analysis
>>> ds, _ = ANALYSES["vast"].example()
>>> res = run_analysis("vast", {"a": ds, "b": ds}, tokenization=False,
...                    nullification=False).compute()
>>> table = ANALYSES["vast"].tables(res)["vast"]
>>> sorted(table["model"].unique()), int(table["layer"].max())
(['a', 'b'], 3)
"""

from __future__ import annotations

from emb.analyses._analysis import Analysis, Option, Summary, tidy_frame
from emb.analyses._run import run_analysis
from emb.analyses.ceat import ceat
from emb.analyses.ibd import ibd
from emb.analyses.registry import ANALYSES, get_analysis
from emb.analyses.sc_weat import sc_weat, sc_weat_lexicon
from emb.analyses.similarity import load_pairs, word_similarity
from emb.analyses.valence_subspace import valence_subspace
from emb.analyses.valnorm import valnorm
from emb.analyses.vast import vast
from emb.analyses.weat import weat

__all__ = [
    "ANALYSES",
    "Analysis",
    "Option",
    "Summary",
    "ceat",
    "get_analysis",
    "ibd",
    "load_pairs",
    "run_analysis",
    "sc_weat",
    "sc_weat_lexicon",
    "tidy_frame",
    "valence_subspace",
    "valnorm",
    "vast",
    "weat",
    "word_similarity",
]
