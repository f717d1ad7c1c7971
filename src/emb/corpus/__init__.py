"""The corpus engine: natural contexts of the target words, read from sentence corpora (torch-free).

Two readers of one word definition: a small corpus held in memory with an inverted index, for the
``random`` contextual setting (:mod:`~emb.corpus.in_memory`), and corpora at Reddit scale read as a
stream in bounded memory (:mod:`~emb.corpus.files`: paths, globs, formats and compressions;
:mod:`~emb.corpus.stream`: blocks of records), from which :func:`~emb.corpus.contexts.sample_contexts`
draws every stimulus' contexts in one pass (:mod:`~emb.corpus.matching`: one Aho–Corasick pass a
block; :mod:`~emb.corpus.sentences`: sentence units; :mod:`~emb.corpus.reservoir`: seeded bottom-n
reservoirs), on a Dask scheduler where one is given. The suites of :mod:`emb.stimuli` call it; it
calls nothing of theirs.
"""

from __future__ import annotations

from emb.corpus.files import CorpusFile, corpus_files
from emb.corpus.in_memory import Corpus, load_corpus

# the sampler (emb.corpus.contexts) is imported where it is used: it brings numpy's hashing, the
# matcher and the scheduler's client code, which a suite that reads no corpus does not need
__all__ = ["Corpus", "CorpusFile", "corpus_files", "load_corpus"]
