"""One-way imports: the store, the analyses, the stimuli, the backends' table and the extract
package import no torch; the analyses import none of the extract side."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    ["emb", "emb.store", "emb.analyses", "emb.extraction", "emb.stimuli", "emb.stimuli.suites",
     "emb.backends", "emb.backends.hf", "emb.backends.static", "emb.cli.main", "emb.options",
     "emb.api"],
)
def test_import_does_not_pull_torch(module):
    code = f"import sys, {module}; assert 'torch' not in sys.modules, 'torch'; " \
           f"assert 'transformers' not in sys.modules, 'transformers'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_analyses_do_not_import_extract():
    code = ("import sys, emb.analyses; bad = [m for m in sys.modules if m.startswith("
            "('emb.extraction', 'emb.stimuli', 'emb.backends'))]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_cli_and_the_analyses_import_without_sklearn_scipy_stats_or_matplotlib():
    """Every ``emb`` command imports the CLI and the analyses' registry: scikit-learn (with
    scipy.stats, half a second) is imported when a valence direction is fitted, matplotlib when
    a figure is drawn, scipy.stats never by the analyses' own statistics."""
    code = ("import sys, emb.cli.main, emb.analyses; "
            "heavy = [m for m in ('sklearn', 'scipy.stats', 'matplotlib') if m in sys.modules]; "
            "assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_stimuli_import_no_backend_and_no_pipeline():
    """The stimuli sit below the backends and the pipeline: a suite is built without them."""
    code = ("import sys, emb.stimuli; bad = [m for m in sys.modules if m.startswith("
            "('emb.extraction', 'emb.backends'))]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_module_of_the_analyses_imports_neither_torch_nor_the_extraction():
    """Each family's private modules too (``emb.analyses.weat._figures`` …): the analyses import
    the store and the data model, never torch, the extraction or the CLI."""
    code = ("import importlib, pkgutil, sys, emb.analyses; "
            "names = [m.name for m in pkgutil.walk_packages(emb.analyses.__path__, 'emb.analyses.')]; "
            "[importlib.import_module(n) for n in names]; "
            "assert 'emb.analyses.weat._figures' in sys.modules, names; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers') "
            "or m.startswith(('emb.extraction', 'emb.stimuli', 'emb.backends', 'emb.cli'))]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_options_sit_on_the_ground_floor():
    """``emb.options`` is imported by the stimuli, the backends and the analyses, which may not
    import each other: it imports none of them (nor the store, nor the CLI)."""
    code = ("import sys, emb.options; bad = [m for m in sys.modules if m.startswith("
            "('emb.stimuli', 'emb.backends', 'emb.analyses', 'emb.extraction', 'emb.store', 'emb.cli'))]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
