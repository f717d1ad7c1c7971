"""Declared dependencies that are true: what the code imports is what pyproject.toml declares.

The floors themselves are proven by ``.ci/lowest.sh``, which installs the lowest versions that
pyproject.toml allows and runs the store and analyses tests; these tests check the declarations
around it (every import declared in the right group, nothing declared that nothing uses, and a
lowest-versions selection that needs no torch).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "emb"

#: Import name -> distribution name, where they differ.
DISTRIBUTION = {"yaml": "pyyaml", "sklearn": "scikit-learn", "huggingface_hub": "transformers",
                "botocore": "s3fs"}  # botocore: s3fs' own (through aiobotocore), at its pinned version
#: Imports that only the extract extra provides (the model runner; imported lazily).
EXTRACT_ONLY = {"torch", "transformers", "gguf", "safetensors", "accelerate"}
#: Imports that only the corpus extra provides (compressed and Parquet corpora, the CEAT scan).
CORPUS_ONLY = {"zstandard", "sentencex", "ahocorasick_rs", "isal", "msgspec"}
#: Imports that only the http extra provides (stores at http(s):// URLs; imported lazily).
HTTP_ONLY = {"aiohttp"}
#: Imports that only the distributed extra provides (--scheduler; imported lazily).
DISTRIBUTED_ONLY = {"distributed"}
#: Imports that only the s3 extra provides (stores at s3:// URLs; imported lazily).
S3_ONLY = {"s3fs", "botocore"}
#: Base dependencies that emb never imports by name, and why they are needed all the same.
USED_WITHOUT_IMPORT = {
    "numcodecs": "zarr's Blosc codec of the store's shards; its version is recorded in the store",
    "fsspec": "stores at fsspec URLs (s3://, memory://) through zarr's FsspecStore",
    "h5netcdf": "the netCDF engine of the analyses' result files (xarray.to_netcdf)",
    "h5py": "h5netcdf's HDF5 layer",
    "jinja2": "pandas' DataFrame.to_latex (its Styler): emb analyze --format latex",
}


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower()


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names and name != "emb"}


def test_every_import_is_declared_in_its_group():
    project = _project()
    base = {_name(r) for r in project["dependencies"]}
    extras = {k: {_name(r) for r in v} for k, v in project["optional-dependencies"].items()}
    for path in sorted(SRC.rglob("*.py")):
        for module in _imports(path):
            distribution = DISTRIBUTION.get(module, module).replace("_", "-")
            if module in EXTRACT_ONLY or module == "huggingface_hub":
                assert distribution in extras["extract"], (path, module)
            elif module in CORPUS_ONLY:
                assert distribution in extras["corpus"], (path, module)
            elif module in DISTRIBUTED_ONLY:
                assert distribution in extras["distributed"] and distribution in extras["test"], (
                    path, module)
            elif module in S3_ONLY:
                assert distribution in extras["s3"] and distribution in extras["test"], (path, module)
            elif module in HTTP_ONLY:
                assert distribution in extras["http"] and distribution in extras["test"], (path, module)
            else:
                assert distribution in base, f"{path.relative_to(REPO)} imports {module}"


def test_every_base_dependency_is_used():
    used = set()
    for path in SRC.rglob("*.py"):
        used |= {DISTRIBUTION.get(m, m).replace("_", "-") for m in _imports(path)}
    unused = {_name(r) for r in _project()["dependencies"]} - used - set(USED_WITHOUT_IMPORT)
    assert not unused, f"declared but never imported: {sorted(unused)}"


def test_floors_are_declared_for_every_dependency():
    project = _project()
    for requirement in project["dependencies"] + project["optional-dependencies"]["test"]:
        assert ">=" in requirement, f"{requirement}: give the lowest version that works"
    numpy = next(r for r in project["dependencies"] if _name(r) == "numpy")
    assert tuple(map(int, numpy.split(">=")[1].split(".")[:1])) >= (2,), "StringDType needs 2.0"


def test_the_lowest_versions_selection_needs_no_torch():
    script = (REPO / ".ci" / "lowest.sh").read_text(encoding="utf-8")
    assert "--resolution lowest-direct" in script and '-e ".[test]"' in script
    selection = re.search(r"pytest .*? (tests/\S+(?: tests/\S+)*)", script)
    assert selection, "the script runs pytest on a selection of tests"
    paths = [REPO / p for p in selection[1].split()]
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*.py")))]
    files += [REPO / "tests" / "fakes.py", REPO / "tests" / "conftest.py"]
    assert len(files) > 5
    for path in files:
        assert not _imports(path) & (EXTRACT_ONLY | {"huggingface_hub"}), path
