"""One-way imports: the store, the analyses, the stimuli, the backends' table and the extract
package import no torch; the analyses import none of the extract side."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    ["emb", "emb.store", "emb.analyses", "emb.extract", "emb.stimuli", "emb.stimuli.suites",
     "emb.backends", "emb.backends.hf", "emb.backends.static", "emb.cli.main", "emb.options",
     "emb.api"],
)
def test_import_does_not_pull_torch(module):
    code = f"import sys, {module}; assert 'torch' not in sys.modules, 'torch'; " \
           f"assert 'transformers' not in sys.modules, 'transformers'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_analyses_do_not_import_extract():
    code = ("import sys, emb.analyses; bad = [m for m in sys.modules if m.startswith("
            "('emb.extract', 'emb.stimuli', 'emb.backends'))]; assert not bad, bad")
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
            "('emb.extract', 'emb.backends'))]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_module_of_the_analyses_imports_neither_torch_nor_the_extraction():
    """Each family's private modules too (``emb.analyses.weat._figures`` …): the analyses import
    the store and the data model, never torch, the extraction or the CLI."""
    code = ("import importlib, pkgutil, sys, emb.analyses; "
            "names = [m.name for m in pkgutil.walk_packages(emb.analyses.__path__, 'emb.analyses.')]; "
            "[importlib.import_module(n) for n in names]; "
            "assert 'emb.analyses.weat._figures' in sys.modules, names; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers') "
            "or m.startswith(('emb.extract', 'emb.stimuli', 'emb.backends', 'emb.cli'))]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_options_sit_on_the_ground_floor():
    """``emb.options`` is imported by the stimuli, the backends and the analyses, which may not
    import each other: it imports none of them (nor the store, nor the CLI)."""
    code = ("import sys, emb.options; bad = [m for m in sys.modules if m.startswith("
            "('emb.stimuli', 'emb.backends', 'emb.analyses', 'emb.extract', 'emb.store', 'emb.cli'))]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


#: names of zarr's own private attributes that emb once reached for (a store's open state, a
#: zip store's file, a wrapper's store, a codec's numcodecs object): only the adapter may
_ZARR_PRIVATE_NAMES = frozenset({
    "_blosc_codec", "_tunable_attrs", "_ensure_open", "_is_open", "_zf", "_sync_open",
    "_with_store", "_get_many", "_set_many", "_check_writable", "_store_dict", "async_array",
})


def _zarr_internals(path):
    """(line, what) of each use of zarr's internals in the module at ``path``: an import of
    ``zarr.core``, ``zarr.abc``, ``zarr.codecs`` or a private module or name of zarr's; an attribute
    chain ``zarr.core…``, ``zarr.codecs…``; a module name of those as a string; one of
    :data:`_ZARR_PRIVATE_NAMES`."""
    import ast
    import re

    internal = re.compile(r"zarr\.(core|abc|codecs)(\.\w+)*|zarr(\.\w+)*\._\w+(\.\w+)*")
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if internal.fullmatch(a.name)]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "zarr":
            names = [f"{node.module}.{a.name}" for a in node.names]
            found += [(node.lineno, n) for n in names if internal.fullmatch(n)]
        elif isinstance(node, ast.Attribute):
            if node.attr in _ZARR_PRIVATE_NAMES:
                found.append((node.lineno, node.attr))
            chain, part = [node.attr], node.value
            while isinstance(part, ast.Attribute):
                chain.append(part.attr)
                part = part.value
            dotted = ".".join([getattr(part, "id", "?"), *reversed(chain)])
            if internal.fullmatch(dotted):
                found.append((node.lineno, dotted))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and internal.fullmatch(node.value):
            found.append((node.lineno, node.value))
    return found


def test_zarrs_internals_are_used_in_one_module_of_the_store():
    """zarr is floored, not capped: every use of its internals sits in ``emb.store._zarr``,
    whose tests pin them (``tests/store/test_zarr_adapter.py``); every other module uses zarr's
    public API and that module."""
    from pathlib import Path

    import emb

    src = Path(emb.__file__).parent
    adapter = src / "store" / "_zarr.py"
    assert _zarr_internals(adapter), "the check finds nothing even in the adapter"
    found = {
        f"{path.relative_to(src)}:{line}": what
        for path in sorted(src.rglob("*.py")) if path != adapter
        for line, what in _zarr_internals(path)
    }
    assert not found, found
