"""Checking a suite document: JSON data only, and valid against ``suite.schema.json``, fast.

Validating tens of thousands of items with jsonschema takes seconds, so items first meet a
stricter-than-the-schema check (:func:`plainly_valid`); only a document with an item that fails it
goes item by item through the JSON-data walk and jsonschema, whose errors carry the JSON paths.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from emb.errors import SuiteError
from emb.files.documents import MAX_FLOAT_INT, check_json_data, text_is_unicode
from emb.schemas import load_schema, validate_document

__all__ = ["item_rules", "plainly_valid", "validate_suite_document"]


@functools.cache
def item_rules() -> tuple[
    frozenset[str], frozenset[str], re.Pattern[str], frozenset[str], re.Pattern[str]
]:
    """(allowed keys, required keys, label-name pattern, reserved label names, word pattern),
    read from suite.schema.json so that the fast check below cannot drift from it."""
    item = load_schema("suite")["$defs"]["item"]
    names = item["properties"]["labels"]["propertyNames"]
    return (
        frozenset(item["properties"]),
        frozenset(item["required"]),
        re.compile(names["pattern"]),
        frozenset(names["not"]["enum"]),
        re.compile(item["properties"]["word"]["pattern"]),
    )


def plainly_valid(entry: Any) -> bool:
    """A fast, stricter-than-the-schema check of one item (True implies schema-valid JSON data).

    Validating tens of thousands of items with jsonschema takes seconds; items that pass this
    check skip it (and :func:`~emb.files.documents.check_json_data`), and any item that fails it
    sends the whole document through jsonschema, whose errors carry the JSON paths.
    """
    allowed, required, label_name, reserved, word_pattern = item_rules()
    if type(entry) is not dict or not required <= entry.keys() or not entry.keys() <= allowed:
        return False
    return (
        _plain_text(entry["context"], entry["word"], word_pattern)
        and _plain_position(entry)
        and _plain_names(entry)
        and _plain_labels(entry.get("labels", {}), label_name, reserved)
    )


def _plain_text(context: Any, word: Any, word_pattern: re.Pattern[str]) -> bool:
    """The context and the word: non-empty Unicode strings, the word a word by the schema."""
    if type(context) is not str or not context or type(word) is not str:
        return False
    if not word or not word_pattern.search(word):
        return False
    return text_is_unicode(context) and text_is_unicode(word)


def _plain_position(entry: dict[str, Any]) -> bool:
    """A span (two ints, not with an occurrence) or an occurrence (an int from 1), if given."""
    if "span" in entry:
        span = entry["span"]
        if "occurrence" in entry or type(span) is not list or len(span) != 2:
            return False
        if type(span[0]) is not int or type(span[1]) is not int or span[0] < 0 or span[1] < 1:
            return False
    if "occurrence" in entry:
        occurrence = entry["occurrence"]
        if type(occurrence) is not int or occurrence < 1:
            return False
    return True


def _plain_names(entry: dict[str, Any]) -> bool:
    """The setting (a non-empty Unicode string) and the stimulus set (a Unicode string), if
    given."""
    if "setting" in entry:
        setting = entry["setting"]
        if type(setting) is not str or not setting or not text_is_unicode(setting):
            return False
    if "stimulus_set" in entry:
        stimulus_set = entry["stimulus_set"]
        if type(stimulus_set) is not str or not text_is_unicode(stimulus_set):
            return False
    return True


def _plain_labels(labels: Any, label_name: re.Pattern[str], reserved: frozenset[str]) -> bool:
    """A dict of labels: names by the schema's pattern and not reserved, values Unicode
    strings, finite floats, ints a float holds exactly, or None."""
    if type(labels) is not dict:
        return False
    for key, value in labels.items():
        if type(key) is not str or key in reserved or not label_name.fullmatch(key):
            return False
        kind = type(value)
        if kind is str:
            if not text_is_unicode(value):
                return False
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif kind is int:
            if not -MAX_FLOAT_INT < value < MAX_FLOAT_INT:
                return False
        elif value is not None:
            return False
    return True


def validate_suite_document(doc: Any, source: str | None) -> None:
    """Check that a suite document is JSON data and schema-valid.

    Items passing :func:`plainly_valid` skip both the JSON-data walk and jsonschema; the rest of
    the document is walked (:func:`~emb.files.documents.check_json_data`) before jsonschema
    sees it, so that jsonschema and the error messages only ever meet plain JSON data.
    """
    where = f"suite {source or 'document'}"
    entries = doc.get("items") if type(doc) is dict else None
    if type(entries) is not list:
        check_json_data(doc, where=where, error=SuiteError)
        validate_document(doc, "suite", source=source)
        return
    plain = [plainly_valid(entry) for entry in entries]
    check_json_data(  # NaN is a missing label; elsewhere (parameters) it is not JSON
        {k: v for k, v in doc.items() if k != "items"}, where=where, error=SuiteError, allow_nan=False
    )
    for index, entry in enumerate(entries):
        if not plain[index]:
            check_json_data(
                entry,
                where=where,
                error=SuiteError,
                root=("items", index),
            )
    if len(entries) > 1 and all(plain):
        validate_document({**doc, "items": entries[:1]}, "suite", source=source)
    else:
        validate_document(doc, "suite", source=source)
