"""Stimulus data that ships with emb: word lists and test definitions, read with importlib.resources.

Each file's source and licence are in ``README.md`` beside them. Only what may be redistributed is
here (word lists, yes; dictionary quotations and ANEW, no).
"""

from __future__ import annotations

import json
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

__all__ = ["files", "path", "read_json"]


def files() -> list[str]:
    """Names of the data files shipped with emb."""
    return sorted(p.name for p in resources.files(__name__).iterdir() if p.name.endswith(".json"))


def path(name: str) -> Traversable:
    """The packaged file ``name`` (e.g. ``"weat_tests.json"``)."""
    found = resources.files(__name__) / name
    if not found.is_file():
        raise FileNotFoundError(f"emb ships no data file {name!r}; it has {files()}")
    return found


def read_json(name: str) -> Any:
    """The packaged JSON file ``name``, parsed."""
    return json.loads(path(name).read_text(encoding="utf-8"))
