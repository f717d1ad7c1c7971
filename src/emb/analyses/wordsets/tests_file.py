"""WEAT test definitions from a YAML/JSON file or a mapping: X/Y/A/B by word lists or by labels.

Layout (``emb analyze weat --suite occupations --test my_tests.yaml``)::

    tests:
      career-family:                    # the test's name in tables and figures
        X: {name: Male, words: [john, paul, mike, kevin]}
        Y: {name: Female, words: [amy, joan, lisa, sarah]}
        A: {name: Career, labels: {stimulus_set: career}}      # every word with that label
        B: {name: Family, labels: {stimulus_set: [family, home]}}
      flowers-insects:
        X: [aster, clover, hyacinth]    # a plain list: the words, group named "X"
        Y: [ant, flea, spider]
        A: [caress, freedom, health]
        B: [abuse, crash, filth]

A role is a list of words, or a mapping with ``words`` (a list), ``labels`` (label → value or
list of values; a word qualifies when its items carry them) or both (the listed words, each
looked up among the items with those labels), and an optional ``name`` (the group's name; default
the role). Every error names the file and the place in it, and suggests the closest key.

The same module reads the tests of the built-in ``weat`` suite from its ``test``/``role`` labels
(:func:`suite_tests`) and a custom test from four word lists (:func:`custom_test`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from emb.analyses._select import item_values, label_mask, truthy, unique_in_order
from emb.errors import AnalysisError
from emb.files.documents import check_json_data, control_character, parse_json, parse_yaml, show
from emb.text import cut, did_you_mean, names, natural_key, plain, unknown_names

__all__ = [
    "MAX_FILE_BYTES",
    "ROLES",
    "TestSpec",
    "custom_test",
    "is_test_file",
    "load_tests",
    "parse_tests",
    "split_tests",
    "suite_tests",
    "word_set_problems",
]

ROLES = ("X", "Y", "A", "B")
_ROLE_KEYS = ("name", "words", "labels")
_SUFFIXES = (".yaml", ".yml", ".json")
#: Largest test file read (bytes): the 10 WEATs of Caliskan et al. take 5 KB.
MAX_FILE_BYTES = 16 * 2**20


@dataclass(frozen=True, kw_only=True)
class TestSpec:
    """One WEAT: per role its words (resolved), its group name and the label filters used to
    pick each word's items."""

    __test__ = False  # not a pytest class

    name: str
    words: dict[str, list[str]]
    groups: dict[str, str]
    filters: dict[str, dict[str, Any]] = field(default_factory=dict)


def is_test_file(value: Any) -> bool:
    """Whether ``value`` names a test-definition file (an existing .yaml/.yml/.json path)."""
    if not isinstance(value, str | os.PathLike):
        return False
    path = Path(os.fspath(value))
    return path.suffix.lower() in _SUFFIXES and path.is_file()


def load_tests(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a test-definition file (YAML or JSON) into its ``tests`` mapping (not yet resolved).

    The file is read as every user document is (:mod:`emb.files.documents`): JSON's data model only,
    YAML without aliases, at most :data:`~emb.files.documents.MAX_DEPTH` levels deep, at most
    :data:`MAX_FILE_BYTES`.

    Raises
    ------
    AnalysisError
        Unreadable, too large, not YAML/JSON (or YAML with aliases, dates or tags), nested too
        deeply, or not laid out as ``tests: {name: {X: …, Y: …, A: …, B: …}}``.
    """
    path = Path(os.fspath(path))
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise AnalysisError(
                f"the WEAT test file {path} has {size:,} bytes, more than the {MAX_FILE_BYTES:,} "
                "a test file may have (a test is a few lists of words): give the file of your tests"
            )
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise AnalysisError(f"cannot read the WEAT test file {path}: {cut(str(err))}") from None
    where = f"the WEAT test file {path}"
    parse = parse_json if path.suffix.lower() == ".json" else parse_yaml
    doc = parse(text, where=where, error=AnalysisError)
    check_json_data(doc, where=where, error=AnalysisError, allow_nan=False)
    if not isinstance(doc, Mapping) or "tests" not in doc:
        keys = [str(k) for k in doc] if isinstance(doc, Mapping) else []
        typo = next((k for k in keys if did_you_mean(k, ["tests"])), None)
        found = names(keys) if keys else _kind(doc)
        raise AnalysisError(
            f"{path}: the file must be a mapping with a 'tests' key (tests: {{NAME: {{X: …, Y: …, "
            f"A: …, B: …}}}}); found {found}."
            + (f" Did you mean 'tests' (not {show(typo)})?" if typo else "")
        )
    extra = [k for k in doc if k not in ("tests", "description")]
    if extra:
        raise AnalysisError(
            f"{path}: unknown top-level key(s) {names(extra)}; a test file has 'tests' (and "
            f"optionally 'description').{did_you_mean(extra[0], ('tests', 'description'))}"
        )
    tests = doc["tests"]
    if not isinstance(tests, Mapping) or not tests:
        raise AnalysisError(
            f"{path}: 'tests' must map test names to their X/Y/A/B; it is "
            f"{'empty' if isinstance(tests, Mapping) else _kind(tests)}"
        )
    return {"source": str(path), "tests": dict(tests)}


def _kind(value: Any) -> str:
    """What a JSON value is, in words (for messages: never the value itself, which may be big)."""
    if isinstance(value, Mapping):
        return f"a mapping of {len(value):,} keys"
    if isinstance(value, list | tuple):
        return f"a list of {len(value):,} items"
    if value is None:
        return "empty (null)"
    return f"{type(value).__name__} {show(value)}"


def _role_spec(where: str, value: Any) -> dict[str, Any]:
    if isinstance(value, list | tuple):
        value = {"words": list(value)}
    if not isinstance(value, Mapping):
        raise AnalysisError(
            f"{where} must be a list of words or a mapping with words/labels/name; got "
            f"{_kind(value)}"
        )
    unknown = [k for k in value if k not in _ROLE_KEYS]
    if unknown:
        raise AnalysisError(
            f"{where}: unknown key {show(unknown[0])}; a role takes {names(_ROLE_KEYS)}."
            f"{did_you_mean(unknown[0], _ROLE_KEYS)}"
        )
    if "words" not in value and "labels" not in value:
        raise AnalysisError(f"{where} needs 'words' (a list) or 'labels' (label: value), or both")
    words = _role_words(where, value.get("words"))
    labels = _role_labels(where, value.get("labels"))
    name = value.get("name")
    if name is not None and not isinstance(name, str | int | float):
        raise AnalysisError(f"{where}.name must be a string; got {_kind(name)}")
    return {"words": words, "labels": labels, "name": None if name is None else str(name)}


def _role_words(where: str, words: Any) -> list[str] | None:
    """A role's ``words`` (None where it has none) as strings, checked."""
    if words is None:
        return None
    if isinstance(words, str) or not isinstance(words, list | tuple):
        raise AnalysisError(f"{where}.words must be a list of words; got {_kind(words)}")
    bad = [w for w in words if not isinstance(w, str | int | float) or isinstance(w, bool)]
    if bad:
        raise AnalysisError(f"{where}.words holds non-words {names(bad)}")
    words = [str(w) for w in words]
    if not words:
        raise AnalysisError(f"{where}.words is empty")
    return words


def _role_labels(where: str, labels: Any) -> dict[str, Any] | None:
    """A role's ``labels`` (None where it has none): label → a value or a list of values, as
    strings, checked."""
    if labels is None:
        return None
    if not isinstance(labels, Mapping) or not labels:
        raise AnalysisError(f"{where}.labels must map label names to a value or a list of values")
    return {
        str(k): [str(x) for x in v] if isinstance(v, list | tuple) else str(v)
        for k, v in labels.items()
    }


def _label_words(ds: xr.Dataset, where: str, labels: Mapping[str, Any]) -> list[str]:
    present_labels = [str(k) for k, v in ds.variables.items() if v.dims == ("item",)]
    for label, wanted in labels.items():
        if label not in present_labels:
            raise AnalysisError(
                f"{where}.labels: the suite has no label {show(label)}; it has "
                f"{names(sorted(present_labels), limit=40)}.{did_you_mean(label, present_labels)}"
            )
        values = unique_in_order(item_values(ds, label).astype(str))
        missing = [w for w in ([wanted] if isinstance(wanted, str) else wanted) if w not in values]
        if missing:
            raise AnalysisError(
                f"{where}.labels: no item has {cut(label, 40)} = {show(missing[0])}; its values are "
                f"{names(values, limit=30)}.{did_you_mean(missing[0], values)}"
            )
    mask = label_mask(ds, **labels)
    words = unique_in_order(item_values(ds, "word").astype(str)[mask])
    if not words:
        raise AnalysisError(f"{where}.labels {show(plain(dict(labels)), 200)} select no item together")
    return [str(w) for w in words]


def _refuse_control(where: str, value: Any) -> None:
    """AnalysisError naming the first test name, role, group, word or label value (a key or a
    string anywhere in ``value``) that holds a control character: a suite's words and labels
    hold none (suites refuse them), and one would be merged with its neighbour in a table
    (``'t\\x00'`` shows as ``'t'``)."""
    stack: list[tuple[str, Any]] = [(f"{where} is", value)]
    while stack:
        place, item = stack.pop()
        if isinstance(item, str):
            if (problem := control_character(item)) is not None:
                raise AnalysisError(
                    f"{place} {show(item)}, which {problem}; test names, groups, words and "
                    "label values are printable text: remove it or write the character meant"
                )
        elif isinstance(item, Mapping):
            base = place.removesuffix(" is")
            for key, inner in item.items():
                stack.append((f"{base} has the key", key))
                stack.append((f"{base}.{cut(str(key), 60)} is", inner))
        elif isinstance(item, list | tuple):
            base = place.removesuffix(" is")
            stack.extend((f"{base}[{i}] is", inner) for i, inner in enumerate(item))


def parse_tests(definition: Mapping[str, Any], ds: xr.Dataset) -> list[TestSpec]:
    """Resolve a test definition (``load_tests`` output, or ``{"tests": {...}}``) against a suite.

    Raises
    ------
    AnalysisError
        A malformed test, an unknown role key, label or label value (with "did you mean").
    """
    source = definition.get("source", "the test definition")
    tests = definition.get("tests", definition)
    if not isinstance(tests, Mapping) or not tests:
        raise AnalysisError(f"{source}: no tests defined")
    _refuse_control(f"{source}: tests", tests)
    out = []
    for test_name, roles in tests.items():
        where = f"{source}: tests.{cut(test_name, 60)}"
        if not isinstance(roles, Mapping):
            raise AnalysisError(f"{where} must map X, Y, A and B to word lists; got {_kind(roles)}")
        by_role = {str(k).upper(): v for k, v in roles.items()}
        extra = [k for k in roles if str(k).upper() not in ROLES]
        if extra:
            raise AnalysisError(
                f"{where}: unknown role {show(plain(extra[0]))}; the roles are X, Y (targets) and A, B "
                f"(attributes).{did_you_mean(str(extra[0]).upper(), ROLES)}"
            )
        absent = [r for r in ROLES if r not in by_role]
        if absent:
            raise AnalysisError(f"{where} lacks role(s) {names(absent)}; a WEAT needs X, Y, A and B")
        words: dict[str, list[str]] = {}
        groups: dict[str, str] = {}
        filters: dict[str, dict[str, Any]] = {}
        for role in ROLES:
            spec = _role_spec(f"{where}.{role}", by_role[role])
            labels = spec["labels"] or {}
            words[role] = spec["words"] or _label_words(ds, f"{where}.{role}", labels)
            if spec["words"] and labels:
                _label_words(ds, f"{where}.{role}", labels)  # validates the labels
            groups[role] = spec["name"] or role
            filters[role] = dict(labels)
        out.append(TestSpec(name=str(test_name), words=words, groups=groups, filters=filters))
    return out


def word_set_problems(test: TestSpec) -> list[str]:
    """What is wrong with a test's word sets: a word listed twice in one set, or one word in both
    target sets (X, Y) or both attribute sets (A, B). Either makes the statistic meaningless: a
    word in X and Y cancels out of ``S``, one in A and B out of ``s(w, A, B)``, and a duplicate
    counts a word twice."""
    problems = []
    for role in ROLES:
        words = test.words[role]
        twice = [w for w in dict.fromkeys(words) if words.count(w) > 1]
        if twice:
            problems.append(f"{role} lists {names(twice)} twice")
    for first, second in (("X", "Y"), ("A", "B")):
        shared = [w for w in dict.fromkeys(test.words[first]) if w in set(test.words[second])]
        if shared:
            problems.append(f"{first} and {second} share {names(shared)}")
    return problems


def split_tests(tests: Any) -> tuple[list[str] | None, list[dict[str, Any]]]:
    """``tests`` as given to :func:`emb.analyses.weat.weat` → (suite test names or None,
    definitions from files or mappings)."""
    if tests is None:
        return None, []
    if isinstance(tests, Mapping):
        return [], [dict(tests)]
    items: Sequence[Any] = [tests] if isinstance(tests, str | os.PathLike) else list(tests)
    names_: list[str] = []
    definitions: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Mapping):
            definitions.append(dict(item))
        elif is_test_file(item):
            definitions.append(load_tests(item))
        elif isinstance(item, os.PathLike) or (
            isinstance(item, str) and Path(item).suffix.lower() in _SUFFIXES
        ):
            raise AnalysisError(
                f"the WEAT test file {os.fspath(item)} does not exist; give an existing .yaml or "
                ".json file, or the name of a test of the suite"
            )
        else:
            names_.append(str(plain(item)) if not isinstance(item, np.generic) else str(item.item()))
    return names_, definitions


def custom_test(
    x: Sequence[str] | None,
    y: Sequence[str] | None,
    a: Sequence[str] | None,
    b: Sequence[str] | None,
    tests: object,
) -> TestSpec | None:
    given = {"x": x, "y": y, "a": a, "b": b}
    if all(v is None for v in given.values()):
        return None
    absent = [k for k, v in given.items() if v is None]
    if absent:
        raise AnalysisError(
            f"a custom WEAT needs all four word lists x, y, a and b; {absent} missing"
        )
    if tests is not None:
        raise AnalysisError("give either tests= (from the suite) or x/y/a/b word lists, not both")
    words: dict[str, list[str]] = {}
    for role, key in zip(ROLES, ("x", "y", "a", "b"), strict=True):
        value = given[key]
        if isinstance(value, str):
            raise AnalysisError(f"{key} must be a list of words, not the string {show(value)}")
        words[role] = [str(w) for w in value]  # type: ignore[union-attr]
        _refuse_control(f"word list {key}", words[role])
        if not words[role]:
            raise AnalysisError(f"word list {key} is empty")
    return TestSpec(name="custom", words=words, groups={r: r for r in ROLES},
                    filters={r: {} for r in ROLES})


def suite_tests(
    ds: xr.Dataset, tests: str | Sequence[str] | None, include_excluded: bool
) -> list[TestSpec]:
    for label in ("test", "role"):
        if label not in ds.variables:
            raise AnalysisError(
                f"this Dataset has no {label!r} label: it is not a 'weat' suite. Extract the "
                "built-in 'weat' suite, give a test file (--test my_tests.yaml: X/Y/A/B by words "
                "or labels), or your own x/y/a/b word lists"
            )
    test_col = item_values(ds, "test").astype(str)
    present = sorted({str(t) for t in test_col if t}, key=natural_key)
    if tests is None:
        names = present
    else:
        names = [tests] if isinstance(tests, str) else [str(t) for t in tests]
        unknown = [t for t in names if t not in present]
        if unknown:
            raise AnalysisError(
                unknown_names("tests", unknown, present, "this suite")
                + " (a test file is a path ending in .yaml, .yml or .json)"
            )
    if not names:
        raise AnalysisError("the suite defines no WEAT tests (its 'test' label is empty)")
    role_col = item_values(ds, "role").astype(str)
    words_col = item_values(ds, "word").astype(str)
    group_col = item_values(ds, "group").astype(str) if "group" in ds.variables else None
    excluded = (
        truthy(item_values(ds, "excluded"))
        if "excluded" in ds.variables and not include_excluded
        else np.zeros(test_col.shape, dtype=bool)
    )
    out = []
    for name in names:
        words: dict[str, list[str]] = {}
        groups: dict[str, str] = {}
        for role in ROLES:
            mask = (test_col == name) & (role_col == role) & ~excluded
            words[role] = [str(w) for w in unique_in_order(words_col[mask])]
            names_here = [g for g in (group_col[mask] if group_col is not None else []) if g]
            groups[role] = str(names_here[0]) if names_here else role
        out.append(TestSpec(name=name, words=words, groups=groups,
                            filters={r: {"test": name, "role": r} for r in ROLES}))
    return out
