"""JSON Schemas of emb's documents, and the schema version.

``load_schema("suite")`` returns ``suite.schema.json`` (draft 2020-12) as a dict;
``validate_document(doc, "suite")`` checks a document against it and raises
:class:`emb.errors.SuiteError` naming the JSON path of every failing element
(``$.items[3].span``) and the reason.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterable
from importlib import resources
from typing import Any

from emb.errors import SuiteError

__all__ = ["SCHEMA_VERSION", "load_schema", "validate_document"]

#: Version of the document and store layouts this emb writes.
SCHEMA_VERSION = 1

_MAX_REPORTED = 20
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _schema_file(name: str) -> str:
    return name if name.endswith(".json") else f"{name}.schema.json"


@functools.cache
def _load(name: str) -> dict[str, Any]:
    file = resources.files(__name__).joinpath(_schema_file(name))
    if not file.is_file():
        known = sorted(
            p.name.removesuffix(".schema.json")
            for p in resources.files(__name__).iterdir()
            if p.name.endswith(".schema.json")
        )
        raise SuiteError(f"no JSON schema named {name!r}; known schemas: {known}")
    return json.loads(file.read_text(encoding="utf-8"))


def load_schema(name: str) -> dict[str, Any]:
    """Return the JSON Schema ``name`` (``"suite"`` or ``"suite.schema.json"``) as a new dict.

    Raises
    ------
    SuiteError
        If no schema of that name ships with emb.
    """
    return copy.deepcopy(_load(name))


@functools.cache
def _validator(name: str) -> Any:
    import jsonschema  # deferred: only validation needs it

    schema = _load(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _json_path(parts: Iterable[Any]) -> str:
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and _IDENTIFIER.match(part):
            out += f".{part}"
        elif isinstance(part, str):
            out += f"[{json.dumps(part)}]"
        else:  # a non-string key (YAML 1:, a Python object): never json.dumps it
            out += f"[{_short(part, 40)}]"
    return out


def _short(value: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr, allow_nan=True)
    except (ValueError, TypeError, RecursionError):  # circular, a 5,000-digit int, ...
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sort_key(error: Any) -> tuple[list[tuple[int, Any]], str]:
    parts = [(0, p) if isinstance(p, int) else (1, str(p)) for p in error.absolute_path]
    return parts, str(error.validator)


def _describe(error: Any) -> tuple[str, str]:
    """(JSON path, reason) of one jsonschema error, naming the property for required/extra keys."""
    path = list(error.absolute_path)
    kind = error.validator
    instance = error.instance
    if kind == "required" and isinstance(instance, dict):
        missing = [p for p in error.validator_value if p not in instance]
        return _json_path([*path, missing[0]]), "is required but missing"
    if kind == "additionalProperties" and isinstance(instance, dict):
        known = set(error.schema.get("properties", {}))
        extra = [k for k in instance if k not in known]
        if extra:
            allowed = sorted(known)
            return (
                _json_path([*path, extra[0]]),
                f"unexpected property {extra[0]!r}" + (f"; allowed: {allowed}" if allowed else ""),
            )
    if "propertyNames" in error.absolute_schema_path and isinstance(instance, str):
        reason = error.schema.get("description", error.message)
        return _json_path([*path, instance]), f"name {instance!r} is not allowed: {reason}"
    if kind in ("oneOf", "anyOf", "not", "allOf") and "description" in error.schema:
        return _json_path(path), f"{error.schema['description']} (found {_short(instance)})"
    message = error.message  # jsonschema quotes the whole instance: keep the line short
    return _json_path(path), message if len(message) <= 200 else message[:199] + "…"


def validate_document(
    doc: Any,
    schema_name: str,
    *,
    source: str | None = None,
    error: type[Exception] = SuiteError,
) -> None:
    """Check ``doc`` against the JSON Schema ``schema_name``.

    Parameters
    ----------
    doc
        The parsed JSON/YAML document.
    schema_name
        ``"suite"`` (or the file name ``"suite.schema.json"``).
    source
        Where the document came from (a path), named in the message.
    error
        Exception class to raise (default :class:`~emb.errors.SuiteError`).

    Raises
    ------
    SuiteError
        Listing, for each failing element (up to 20), its JSON path such as
        ``$.items[3].span`` and the reason.
    """
    validator = _validator(schema_name)
    errors = sorted(validator.iter_errors(doc), key=_sort_key)
    if not errors:
        return
    lines = []
    seen = set()
    for err in errors:
        path, reason = _describe(err)
        if (path, reason) in seen:
            continue
        seen.add((path, reason))
        lines.append(f"{path}: {' '.join(reason.split()).rstrip('. ')}")
    shown = lines[:_MAX_REPORTED]
    more = f"; … and {len(lines) - len(shown)} more" if len(lines) > len(shown) else ""
    where = f" {source}" if source else ""
    # one line (the CLI prints a refusal as one line): the problems joined by "; "
    raise error(
        f"{_schema_file(schema_name).removesuffix('.schema.json')} document{where} does not match "
        f"{_schema_file(schema_name)} ({len(lines)} problem{'s' if len(lines) != 1 else ''}): "
        + "; ".join(shown)
        + more
        + f"; fix {'these elements' if len(lines) != 1 else 'this element'} (the schema is "
        f"emb/schemas/{_schema_file(schema_name)})"
    )
