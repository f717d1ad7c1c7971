"""One-way imports: the store, the analyses and the extract package import no torch."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module", ["emb", "emb.store", "emb.analyses", "emb.extract", "emb.extract.suites", "emb.cli.main"]
)
def test_import_does_not_pull_torch(module):
    code = f"import sys, {module}; assert 'torch' not in sys.modules, 'torch'; " \
           f"assert 'transformers' not in sys.modules, 'transformers'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_analyses_do_not_import_extract():
    code = ("import sys, emb.analyses; bad = [m for m in sys.modules if m.startswith('emb.extract')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
