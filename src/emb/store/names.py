"""Group (suite) names, checked once with the suite-name rule of ``suite.schema.json``.

A group name is one path segment of the store: letters, digits, ``.``, ``_`` and ``-``, starting
with a letter or digit, at most 128 characters.  So it can never be empty (the root itself), hold
a ``/`` (a group nobody lists), climb out of the store (``..``), or name zarr's own keys
(``zarr.json``, temporary ``*.partial`` files) or emb's lock files (``.emb-lock*``).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from emb.errors import StoreError
from emb.schemas import load_schema

__all__ = ["check_group_name", "is_group_name"]

#: Names the rule lets through but that are zarr's own keys (compared ignoring case, for
#: case-insensitive file systems), and the suffix of the temporary files of zarr's local writes.
_RESERVED = frozenset({"zarr.json"})
_RESERVED_SUFFIX = ".partial"


@functools.cache
def _rule() -> tuple[re.Pattern[str], int]:
    spec = load_schema("suite")["properties"]["name"]
    return re.compile(spec["pattern"]), int(spec["maxLength"])


def is_group_name(name: Any) -> bool:
    """Whether ``name`` is a valid group name (no error raised)."""
    pattern, longest = _rule()
    return (
        isinstance(name, str)
        and len(name) <= longest
        and pattern.fullmatch(name) is not None
        and name.casefold() not in _RESERVED
        and not name.casefold().endswith(_RESERVED_SUFFIX)
    )


def check_group_name(name: Any, *, what: str = "group name") -> str:
    """Return ``name`` if it is a valid group name, else raise.

    Raises
    ------
    StoreError
        Naming the rule, the name found (shortened when long) and what to do.
    """
    if isinstance(name, str):
        name = str(name)  # a numpy str_ would show as np.str_('…') in messages and attributes
    if is_group_name(name):
        return name
    _, longest = _rule()
    shown = repr(name) if not isinstance(name, str) or len(name) <= 60 else repr(name[:60] + "…")
    if isinstance(name, str) and len(name) > longest:
        why = f"it has {len(name)} characters, more than {longest}"
    elif isinstance(name, str) and name.casefold() in _RESERVED:
        why = "it is zarr's own metadata key"
    elif isinstance(name, str) and name.casefold().endswith(_RESERVED_SUFFIX):
        why = f"names ending in {_RESERVED_SUFFIX!r} are zarr's temporary files"
    elif not isinstance(name, str):
        why = f"it is a {type(name).__name__}, not a string"
    else:
        why = "it must be one path segment of letters, digits, '.', '_' and '-', starting with a letter or digit"
    raise StoreError(
        f"{what} {shown} is not allowed: {why}; choose a name such as 'vast' or 'my-suite.v2' "
        "(--name)"
    )
