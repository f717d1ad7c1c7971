"""One-way imports: the store, the analyses, the stimuli, the backends' table and the extract
package import no torch; the analyses import none of the extract side."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


# -- the import graph, read from the source (no module is run) ------------------------------------
_SRC = Path(__file__).resolve().parents[1] / "src"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((_SRC / "emb").rglob("*.py")):
        name = ".".join(path.relative_to(_SRC).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(name: str, path: Path, modules: Mapping[str, Path]) -> list[tuple[int, str, list[str]]]:
    """Every import of module ``name`` (at its top or inside a function; not those only for type
    checkers) as (line, the emb module it reaches, the names it takes from it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(node) for block in ast.walk(tree)
                   if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                   for node in ast.walk(block)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.append((node.lineno, full, []) if full in modules else
                           (node.lineno, base, [alias.name]))
    return [(line, target, names) for line, target, names in out
            if target == "emb" or target.startswith("emb.")]


def _reached(target: str, modules: Mapping[str, Path]) -> str:
    while target not in modules:
        target = target.rpartition(".")[0]
    return target


def test_no_import_circle() -> None:
    """No module of emb imports one that imports it back, directly or around a circle (imports
    inside functions count: a circle there is one layer that knows the one above it)."""
    modules = _modules()
    graph = {name: {_reached(t, modules) for _, t, _ in _imports(name, path, modules)} - {name}
             for name, path in modules.items()}
    circles, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while (member := stack.pop()) != node:
                on_stack.discard(member)
                part.append(member)
            on_stack.discard(node)
            if part:
                circles.append(sorted([node, *part]))

    for name in graph:
        if name not in index:
            visit(name)
    assert not circles, circles


def _families() -> dict[str, list[str]]:
    """Each analysis family's module (``emb.analyses.weat``) and its public names."""
    import importlib

    from emb.analyses.registry import ANALYSES

    names = {".".join(a.function.__module__.split(".")[:3]) for a in ANALYSES.values()}
    return {n: list(importlib.import_module(n).__all__) for n in sorted(names)}


def _family_of(module: str, families: Mapping[str, Any]) -> str | None:
    return next((f for f in families if module == f or module.startswith(f + ".")), None)


def test_a_family_takes_only_another_familys_public_names() -> None:
    """A family (a module or package of ``emb.analyses`` with a record in the registry) reaches
    another family only through that family's package and its ``__all__`` (``from
    emb.analyses.similarity import word_similarity``), never its private modules or names; what
    several families share sits in a shared module below them (``emb.analyses.wordsets`` for the
    WEAT-style tests, ``emb.analyses.ratings`` for the human ratings, ``_figure``, ``stats``), and a
    shared module imports no family. A change to one family's insides then changes no other."""
    modules, families = _modules(), _families()
    assert {"emb.analyses.weat", "emb.analyses.peers", "emb.analyses.vast"} <= set(families)
    wrong = []
    for name, path in modules.items():
        if not name.startswith("emb.analyses.") or name == "emb.analyses.registry":
            continue
        own = _family_of(name, families)
        for line, target, taken in _imports(name, path, modules):
            other = _family_of(target, families)
            if other is None or other == own:
                continue
            where = f"{path.relative_to(_SRC)}:{line} imports {target}"
            if own is None:
                wrong.append(f"{where}: a shared module imports the family {other}")
            elif target != other:
                wrong.append(f"{where}: a module inside the family {other}")
            elif private := [n for n in (taken or ["*"]) if n not in families[other]]:
                wrong.append(f"{where}: {private}, not in {other}.__all__")
    assert not wrong, "\n".join(wrong)


def test_the_cli_reaches_no_private_module_or_name_of_another_room() -> None:
    """The CLI parses, calls the library's public names and prints (STYLE.md): it imports no
    private module (``emb.backends._backoff`` once) and no private name of a module outside
    ``emb.cli`` (``emb._version`` is the package's version, the one private module every tool
    reads)."""
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        if not name.startswith("emb.cli"):
            continue
        for line, target, taken in _imports(name, path, modules):
            if target.startswith("emb.cli") or target == "emb._version":
                continue
            private = [part for part in target.split(".") if part.startswith("_")]
            private += [n for n in taken if n.startswith("_") and n != "__version__"]
            if private:
                wrong.append(f"{path.relative_to(_SRC)}:{line} imports {target} {taken}")
    assert not wrong, "\n".join(wrong)


#: names of zarr's own private attributes that emb once reached for (a store's open state, a
#: zip store's file, a wrapper's store, a codec's numcodecs object): only the adapter may
_ZARR_PRIVATE_NAMES = frozenset({
    "_blosc_codec", "_tunable_attrs", "_ensure_open", "_is_open", "_zf", "_sync_open",
    "_with_store", "_get_many", "_set_many", "_check_writable", "_store_dict", "async_array",
})


def _zarr_internals(path: Path) -> list[tuple[int, str]]:
    """(line, what) of each use of zarr's internals in the module at ``path``: an import of
    ``zarr.core``, ``zarr.abc``, ``zarr.codecs`` or a private module or name of zarr's; an attribute
    chain ``zarr.core…``, ``zarr.codecs…``; a module name of those as a string; one of
    :data:`_ZARR_PRIVATE_NAMES`."""
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


def test_zarrs_internals_are_used_in_one_module_of_the_store() -> None:
    """zarr is floored, not capped: every use of its internals sits in ``emb.store._zarr``,
    whose tests pin them (``tests/store/test_zarr_adapter.py``); every other module uses zarr's
    public API and that module."""
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
