"""The docstrings' examples of every module of emb.analyses run and print what they show; none is
skipped (an example that cannot run here is written as prose or a literal block)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import emb.analyses

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(emb.analyses.__path__, prefix="emb.analyses.")
)


@pytest.mark.parametrize("name", ["emb.analyses", *MODULES])
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder().find(module, name)
    skipped = [f"{t.name}: {e.source.strip()}" for t in tests for e in t.examples
               if e.options.get(doctest.SKIP)]
    assert not skipped, f"examples that never run (run them, or write them as prose): {skipped}"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    assert runner.failures == 0, f"{runner.failures} failing example(s) in {name} (see stdout)"
