"""WEAT-style tests: four word sets, targets X and Y and attributes A and B, and what every family
over them shares (``weat``; the peers' metrics ``mac``, ``ect``, ``ripa``, ``rnsb``; ``ml-eat``;
``seed-sensitivity``, ``empirical-null``, ``reliability``). A family imports this package, never
another family's modules: a change here is a change to all of them, and their tests say so.

- :mod:`~emb.analyses.wordsets.tests_file`: the tests' definitions, from the suite's labels, a
  YAML/JSON test file or a mapping, and four word lists;
- :mod:`~emb.analyses.wordsets.resolve`: which tests an analysis runs (its ``tests``, ``x`` …
  ``b`` and ``settings`` options), the sets checked, each test's vectors gathered;
- :mod:`~emb.analyses.wordsets.contexts`: a suite of words in many contexts (``ceat``) as one
  vector per word;
- :mod:`~emb.analyses.wordsets.each_test`: a kernel run over every resolved test, with the per-test
  sizes, flags and attributes;
- :mod:`~emb.analyses.wordsets.pairs`: the target pairs of a paired metric (RIPA);
- :mod:`~emb.analyses.wordsets.summary`: the tables' layout and the summaries' declared cell.
"""

from __future__ import annotations

from emb.analyses.wordsets.contexts import (
    CONTEXT_LABELS,
    contexts_record,
    is_context_suite,
    per_stimulus,
)
from emb.analyses.wordsets.each_test import TEST_CHOICE, per_test, test_attrs, vectors
from emb.analyses.wordsets.pairs import given_pairs, pair_words, target_pairs
from emb.analyses.wordsets.resolve import (
    MIN_TARGET_WORDS,
    TEST_OPTIONS,
    dropped_text,
    gather_test,
    resolve_tests,
)
from emb.analyses.wordsets.summary import (
    KEY_COLUMNS,
    SET_SIZES,
    cell_summary,
    declared_cell,
    p_text,
    test_table,
    top_rows,
    with_groups,
)
from emb.analyses.wordsets.tests_file import (
    MAX_FILE_BYTES,
    ROLES,
    TestSpec,
    custom_test,
    is_test_file,
    load_tests,
    parse_tests,
    split_tests,
    suite_tests,
    word_set_problems,
)

__all__ = [
    "CONTEXT_LABELS",
    "KEY_COLUMNS",
    "MAX_FILE_BYTES",
    "MIN_TARGET_WORDS",
    "ROLES",
    "SET_SIZES",
    "TEST_CHOICE",
    "TEST_OPTIONS",
    "TestSpec",
    "cell_summary",
    "contexts_record",
    "custom_test",
    "declared_cell",
    "dropped_text",
    "gather_test",
    "given_pairs",
    "is_context_suite",
    "is_test_file",
    "load_tests",
    "p_text",
    "pair_words",
    "parse_tests",
    "per_stimulus",
    "per_test",
    "resolve_tests",
    "split_tests",
    "suite_tests",
    "target_pairs",
    "test_attrs",
    "test_table",
    "top_rows",
    "vectors",
    "with_groups",
    "word_set_problems",
]
