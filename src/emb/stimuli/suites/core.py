"""Stimulus suites: which target word, in which context, to embed (torch-free).

A suite is declarative data (JSON or YAML, validated by ``emb/schemas/suite.schema.json``)::

    {"name": "my-suite",
     "items": [
       {"context": "This is {target}.", "word": "love", "setting": "bleached",
        "stimulus_set": "pleasant", "labels": {"valence": 8.0}},
       {"context": "I love love songs", "word": "love", "occurrence": 2},
       {"context": "Love is all", "word": "love", "span": [0, 4]}]}

Each item says in exactly one way where its target is: a ``{target}`` placeholder in the context
(replaced by ``word``; used only when the item has neither ``span`` nor ``occurrence``), an
explicit ``span`` ``[char_start, char_end)`` whose text equals ``word`` ignoring case, or
``occurrence``: the n-th (1-based) case-insensitive whole-word match of ``word`` (default 1;
whole-word as in :func:`emb.corpus.in_memory.whole_word_pattern`). :func:`load_suite` and
:meth:`Suite.from_dict` *materialise* items into :class:`Item` with explicit character offsets.

Built-in generators build suites from lexica, word lists and corpora: each is a module of
:mod:`emb.stimuli.suites` implementing :class:`~emb.stimuli.suites.generator.SuiteGenerator`,
registered in :mod:`emb.stimuli.suites._registry`.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import re
import unicodedata
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring as json_string
from os import PathLike
from pathlib import Path
from typing import Any, Literal

import numpy as np

from emb.corpus.in_memory import whole_word_pattern
from emb.errors import EmbWarning, SuiteError
from emb.files.documents import (
    check_json_data,
    control_character,
    parse_json,
    parse_yaml,
    show,
)
from emb.files.outputs import (
    check_space,
    claim,
    disk_full_message,
    is_disk_full,
    refuse_inside_store,
    write_file,
)
from emb.schemas import SCHEMA_VERSION
from emb.stimuli.suites._validation import item_rules, validate_suite_document

__all__ = [
    "PLACEHOLDER",
    "Item",
    "Suite",
    "load_suite",
    "write_suite",
]

#: Marks the target's place in a context when an item has neither ``span`` nor ``occurrence``.
PLACEHOLDER = "{target}"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_MAX_LISTED = 50

LabelValue = str | float


def _same_text(found: str, word: str) -> bool:
    """Whether a span's text is the word: equal ignoring case and the length of whitespace runs."""
    return " ".join(found.split()).lower() == " ".join(word.split()).lower()


#: What a word, setting, stimulus set or label value with a control character is told to do.
_NO_CONTROL = ("words, settings, stimulus sets and label values are printable text (a context may "
               "hold control characters): remove it or write the character meant")


def _refuse_control(what: str, value: str) -> None:
    """SuiteError when ``value`` (a word, setting, stimulus set or label value) holds a control
    character (:func:`~emb.files.documents.control_character`)."""
    problem = control_character(value)
    if problem is not None:
        raise SuiteError(f"{what} is {show(value)}, which {problem}; {_NO_CONTROL}")


#: A control character, or whitespace at either end: what a word, setting or stimulus set
#: must not hold (one search per name; :func:`_refuse_name` says which).
_ODD_NAME = re.compile(r"[\x00-\x1f\x7f-\x9f]|\A\s|\s\Z")


def _refuse_name(name: str, value: str) -> None:
    """SuiteError for a word, setting or stimulus set that :data:`_ODD_NAME` matched."""
    _refuse_control(name, value)
    raise SuiteError(
        f"{name} is {show(value)}, which begins or ends with whitespace: 'he ' and 'he' would be "
        "two names that print alike (and the command line trims what it is given); remove the "
        "outer whitespace"
    )


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _json_label(value: LabelValue) -> str | float | None:
    return None if _is_missing(value) else value


def _json_label_text(value: LabelValue) -> str:
    """A label value as ``json.dumps(_json_label(value), ensure_ascii=False, allow_nan=False)``
    writes it."""
    if isinstance(value, str):
        return json_string(value)
    if _is_missing(value):
        return "null"
    if not math.isfinite(value):
        raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
    return float.__repr__(float(value))


#: The largest integer every smaller one of which a float64 holds exactly (2⁵³).
EXACT_INTEGERS = 2**53


def _label_value(key: Any, value: Any, word: str) -> LabelValue:
    """A label value as stored: str, or float (NaN for missing); SuiteError for anything else.

    Numbers are stored as float64: an integer float64 cannot hold exactly (beyond 2⁵³, e.g. an id
    of 17 digits) is refused rather than rounded, ``-0.0`` is stored as ``0.0`` (the same number:
    the same content hash), numpy numbers are taken as Python's, and a boolean is refused (say
    ``"true"``/``"false"`` or 1/0).
    """
    # the common cases, nothing to check or convert (no message made for them: one per label of
    # every item was 30% of materialising a corpus suite); an ASCII text is printable exactly
    # when it holds no control character (refused below)
    if type(value) is str and value.isascii() and value.isprintable():
        return value
    if type(value) is float and math.isfinite(value):
        return value + 0.0  # -0.0 is 0.0
    where = f"label {show(key)} of item {word!r}"
    if value is None:
        return float("nan")
    if isinstance(value, str):
        if not value.isascii():
            check_json_data(value, where=where, error=SuiteError)
        _refuse_control(where, value)
        return str(value)
    if isinstance(value, (bool, np.bool_)):
        raise SuiteError(
            f"{where} is the boolean {bool(value)}, but must be a string or a number: give "
            "\"true\"/\"false\" or 1/0"
        )
    if isinstance(value, numbers.Integral):
        integer = int(value)
        try:
            number = float(integer)
        except OverflowError:
            number = math.inf
        if math.isinf(number):
            raise SuiteError(
                f"{where} is {show(value)}, beyond the range of a float64 label (±1.8e308); "
                "give it as a string to keep it"
            )
        if int(number) != integer:
            raise SuiteError(
                f"{where} is the integer {integer}, which a float64 label cannot hold exactly "
                f"(integers beyond 2^53 = {EXACT_INTEGERS:,} are rounded, here to {int(number)}); "
                "give it as a string to keep every digit"
            )
        return number + 0.0
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isinf(number):
            raise SuiteError(
                f"{where} is {show(value)}, not a finite number; labels must be finite (NaN or "
                "None for a missing value)"
            )
        return number + 0.0  # -0.0 is 0.0
    raise SuiteError(f"{where} must be a string or a number, got {show(value)}")


@dataclass(frozen=True, kw_only=True, eq=False)
class Item:
    """One materialised stimulus: a context and the target's character span in it.

    Attributes
    ----------
    context
        The text given to the model.
    word
        The target word or phrase (as listed; the span's text may differ in case).
    char_start, char_end
        Python string offsets of the target in ``context``: ``context[char_start:char_end]``
        equals ``word`` ignoring case (and, in a phrase, the length of whitespace runs).
    setting
        Contextual setting (``bleached``, ``aligned``, ``random`` …).
    stimulus_set
        Word set the item belongs to (``lexicon``, ``pleasant``, a WEAT group …).
    labels
        Free label columns, ``str`` or ``float`` (NaN = missing).

    Items compare and hash by value (NaN labels compare equal). Two items with the same
    :attr:`target_key` have the same embedding.
    """

    context: str
    word: str
    char_start: int
    char_end: int
    setting: str = "default"
    stimulus_set: str = ""
    labels: Mapping[str, LabelValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("context", "word", "setting", "stimulus_set"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise SuiteError(f"Item.{name} must be a string, got {show(value)}")
            if type(value) is not str:  # numpy's str_ and other subclasses: plain str
                object.__setattr__(self, name, str(value))
            if not value.isascii():
                check_json_data(value, where=f"Item.{name}", error=SuiteError)
            if name != "context" and _ODD_NAME.search(value) is not None:
                _refuse_name(name, value)
        if not self.setting:
            raise SuiteError(
                f"setting is empty (context {show(self.context)}); name the setting, or leave it "
                "out for 'default'"
            )
        if not self.word.strip():
            raise SuiteError(f"Item.word must not be blank (context {self.context!r})")
        start, end = self.char_start, self.char_end
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
            raise SuiteError(
                f"Item span must be whole numbers, got ({show(start)}, {show(end)}); give "
                "char_start and char_end as int"
            )
        start, end = int(start), int(end)
        object.__setattr__(self, "char_start", start)
        object.__setattr__(self, "char_end", end)
        if not 0 <= start < end <= len(self.context):
            raise SuiteError(
                f"Item span [{start}, {end}) lies outside the context {self.context!r} "
                f"(length {len(self.context)}) for word {self.word!r}"
            )
        found = self.context[start:end]
        if not _same_text(found, self.word):
            raise SuiteError(
                f"Item span [{start}, {end}) of {self.context!r} holds {found!r}, not the word "
                f"{self.word!r}"
            )
        if not isinstance(self.labels, Mapping):
            raise SuiteError(
                f"labels of item {self.word!r} must be a mapping of names to values, got "
                f"{show(self.labels)}"
            )
        labels: dict[str, LabelValue] = {}
        for key, value in self.labels.items():
            labels[str(key)] = _label_value(key, value, self.word)
        object.__setattr__(self, "labels", labels)

    @property
    def target(self) -> str:
        """The target as written in the context: ``context[char_start:char_end]``."""
        return self.context[self.char_start : self.char_end]

    @property
    def target_key(self) -> tuple[str, int, int]:
        """``(context, char_start, char_end)``: what determines the item's embedding."""
        return (self.context, self.char_start, self.char_end)

    def to_dict(self) -> dict[str, Any]:
        """The item as a suite-document entry with an explicit ``span`` (NaN labels → null)."""
        return {
            "context": self.context,
            "word": self.word,
            "span": [self.char_start, self.char_end],
            "setting": self.setting,
            "stimulus_set": self.stimulus_set,
            "labels": {k: _json_label(v) for k, v in self.labels.items()},
        }

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> Item:
        """Materialise one suite-document entry (placeholder, ``span`` or ``occurrence``).

        Raises
        ------
        SuiteError
            If the target cannot be located (see :func:`load_suite`).
        """
        return Suite.from_dict({"name": "item", "items": [entry]}, source="item").items[0]

    def _key(self) -> tuple[Any, ...]:
        labels = tuple(sorted((k, _json_label(v)) for k, v in self.labels.items()))
        return (*self.target_key, self.word, self.setting, self.stimulus_set, labels)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Item):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def _materialise(entry: Mapping[str, Any]) -> tuple[Item | None, str]:
    """(item, "") or (None, reason) for one schema-valid suite entry."""
    context: str = entry["context"]
    word: str = entry["word"]
    common = {
        "word": word,
        "setting": entry.get("setting", "default"),
        "stimulus_set": entry.get("stimulus_set", ""),
        "labels": entry.get("labels", {}),
    }
    if "span" in entry:
        start, end = entry["span"]
        if type(start) is not int or type(end) is not int:
            return None, (
                f"span [{show(start)}, {show(end)}] must hold whole numbers written without a "
                "decimal point (4, not 4.0)"
            )
        if not 0 <= start < end <= len(context):
            return None, (
                f"span [{start}, {end}) is outside the context (length {len(context)}) or empty"
            )
        if not _same_text(context[start:end], word):
            return None, f"span [{start}, {end}) holds {context[start:end]!r}, not {word!r}"
        return Item(context=context, char_start=start, char_end=end, **common), ""
    if "occurrence" not in entry and PLACEHOLDER in context:
        if context.count(PLACEHOLDER) > 1:
            return None, (
                f"{context.count(PLACEHOLDER)} {PLACEHOLDER} placeholders; use exactly one, or a "
                "span/occurrence"
            )
        start = context.index(PLACEHOLDER)
        filled = context.replace(PLACEHOLDER, word)
        return Item(context=filled, char_start=start, char_end=start + len(word), **common), ""
    occurrence = entry.get("occurrence", 1)
    if type(occurrence) is not int:
        return None, (
            f"occurrence {show(occurrence)} must be a whole number written without a decimal "
            "point (2, not 2.0)"
        )
    matches = list(whole_word_pattern(word).finditer(context))
    if not matches:
        return None, "the word does not occur in the context as a whole word"
    if occurrence > len(matches):
        return None, (f"occurrence {occurrence} asked but the word occurs {len(matches)} time(s)")
    match = matches[occurrence - 1]
    return Item(context=context, char_start=match.start(), char_end=match.end(), **common), ""


def _label_types(items: Sequence[Item]) -> dict[str, Literal["str", "float"]]:
    """Column type of every label key: 'str' if any value is a string, else 'float'."""
    kinds: dict[str, set[str]] = {}
    examples: dict[tuple[str, str], int] = {}
    for i, item in enumerate(items):
        for key, value in item.labels.items():
            kind = (
                "missing" if _is_missing(value) else ("str" if isinstance(value, str) else "float")
            )
            kinds.setdefault(key, set()).add(kind)
            examples.setdefault((key, kind), i)
    out: dict[str, Literal["str", "float"]] = {}
    mixed = []
    for key, found in kinds.items():
        if {"str", "float"} <= found:
            mixed.append(
                f"{key!r} (string at item {examples[(key, 'str')]}, number at item "
                f"{examples[(key, 'float')]})"
            )
        out[key] = "str" if "str" in found else "float"
    if mixed:
        raise SuiteError(
            f"label column(s) mix strings and numbers: {', '.join(mixed)}; give each label one "
            "type in every item"
        )
    return out


def _complete_labels(item: Item, types: Mapping[str, str]) -> Item:
    """The item with every label column ('' / NaN where missing), in the suite's column order."""
    labels = {
        key: (
            ("" if kind == "str" else float("nan"))
            if _is_missing(value := item.labels.get(key))
            else value
        )
        for key, kind in types.items()
    }
    if list(labels) == list(item.labels) and all(
        labels[k] is item.labels[k] or (_is_missing(labels[k]) and _is_missing(item.labels[k]))
        for k in labels
    ):
        return item
    return Item(
        context=item.context,
        word=item.word,
        char_start=item.char_start,
        char_end=item.char_end,
        setting=item.setting,
        stimulus_set=item.stimulus_set,
        labels=labels,
    )


def _unicode_forms(items: Sequence[Item]) -> list[str]:
    """One line per word, setting or stimulus set written in two Unicode forms in ``items``
    (``'café'`` composed, U+00E9, and decomposed, ``e`` + U+0301): canonically equivalent texts
    that print alike but are different strings, kept apart by every analysis and tokenizer."""
    lines = []
    for column in ("word", "setting", "stimulus_set"):
        forms: dict[str, list[str]] = {}
        for value in dict.fromkeys(getattr(item, column) for item in items):
            if not value.isascii():
                forms.setdefault(unicodedata.normalize("NFC", value), []).append(value)
        for variants in forms.values():
            if len(variants) > 1:
                lines.append(f"{column} {' and '.join(ascii(v) for v in variants[:4])}")
    return lines


@dataclass(frozen=True, kw_only=True)
class Suite:
    """A named, materialised stimulus suite.

    Every item gets every label key of the suite (missing → ``""`` in string columns, NaN in
    numeric ones).

    Attributes
    ----------
    name
        Suite name; also its group name in a store (letters, digits, ``._-``).
    items
        The materialised items (duplicates allowed).
    generator
        Name of the generator that built it, or ``None``.
    parameters
        JSON-able provenance from the generator (input sha256s, seed, counts, missing words).
    description
        Free text.
    """

    name: str
    items: tuple[Item, ...]
    generator: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    #: the label columns' types, found once (:attr:`label_types`)
    _types: dict[str, Literal["str", "float"]] = field(
        init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise SuiteError(
                f"suite name {show(self.name)} is not allowed: use letters, digits, '.', '_' and "
                "'-', starting with a letter or digit"
            )
        items = tuple(self.items)
        if not items:
            raise SuiteError(f"suite {self.name!r} has no items")
        if not all(isinstance(item, Item) for item in items):
            raise SuiteError(
                f"suite {self.name!r}: items must be Item objects (read a suite document with "
                "Suite.from_dict or load_suite)"
            )
        if self.generator is not None and not isinstance(self.generator, str):
            raise SuiteError(
                f"generator of suite {self.name!r} must be a name (str), got {show(self.generator)}"
            )
        if not isinstance(self.description, str):
            raise SuiteError(
                f"description of suite {self.name!r} must be text, got {show(self.description)}"
            )
        if not isinstance(self.parameters, Mapping):
            raise SuiteError(
                f"parameters of suite {self.name!r} must be a JSON object, got {show(self.parameters)}"
            )
        check_json_data(
            dict(self.parameters),
            where=f"parameters of suite {self.name!r}",
            error=SuiteError,
            allow_nan=False,
        )
        types = _label_types(items)
        _, _, label_name, reserved, _ = item_rules()
        bad = [key for key in types if key in reserved or not label_name.fullmatch(key)]
        if bad:
            raise SuiteError(
                f"suite {self.name!r}: label name(s) {bad} are not allowed; use identifiers that "
                f"are not store variables ({sorted(reserved)})"
            )
        items = tuple(_complete_labels(item, types) for item in items)
        object.__setattr__(self, "items", items)
        object.__setattr__(self, "_types", types)  # completing the labels keeps their types
        object.__setattr__(self, "parameters", dict(self.parameters))

    def __len__(self) -> int:
        return len(self.items)

    @property
    def label_types(self) -> dict[str, Literal["str", "float"]]:
        """``{label: "str" | "float"}`` for every label column, in first-seen order."""
        return dict(self._types)

    @property
    def settings(self) -> tuple[str, ...]:
        """The distinct settings, in first-seen order."""
        return tuple(dict.fromkeys(item.setting for item in self.items))

    def columns(self) -> dict[str, np.ndarray]:
        """One array per item variable: word, context, setting, stimulus_set, char_start,
        char_end (int64) and each label (str or float64), in item order.

        Text columns are object arrays of the items' own strings: numpy's fixed-width ``<U``
        would hold every value at the width of the longest (4 bytes a character: one 10,000
        character context among 4 million items asks for 160 GB) and drops trailing NUL
        characters."""
        items = self.items

        def text(values: list[Any]) -> np.ndarray:
            out = np.empty(len(values), dtype=object)
            out[:] = values
            return out

        out: dict[str, np.ndarray] = {
            "word": text([item.word for item in items]),
            "context": text([item.context for item in items]),
            "setting": text([item.setting for item in items]),
            "stimulus_set": text([item.stimulus_set for item in items]),
            "char_start": np.fromiter((item.char_start for item in items), np.int64, len(items)),
            "char_end": np.fromiter((item.char_end for item in items), np.int64, len(items)),
        }
        for key, kind in self.label_types.items():
            values = [item.labels[key] for item in items]
            out[key] = text(values) if kind == "str" else np.array(values, dtype=np.float64)
        return out

    def content_hash(self) -> str:
        """SHA-256 (hex) of the canonical JSON of the name and the materialised items.

        Canonical JSON: ``{"name": …, "items": [item.to_dict() …]}`` with sorted keys, no
        whitespace, UTF-8, NaN labels as null. The generator, parameters and description do not
        enter the hash; item order does.
        """
        # The text json.dumps(document, sort_keys=True, ensure_ascii=False,
        # separators=(",", ":"), allow_nan=False) makes, written out item by item: the same
        # string escaping (json's own encoder), the keys in sorted order, floats as json writes
        # them (repr), NaN labels as null; 2-3x faster than building and dumping every
        # to_dict() (50 ms for 20,000 items, paid by every shard worker). A test pins it to the
        # dumped document (tests/stimuli/suites/test_content_hash.py).
        enc = json_string
        items = self.items
        # the strings as columns (json's C encoder mapped over each), settings and stimulus sets
        # encoded once each: 13 ms for 20,000 items against 18 ms item by item
        contexts = list(map(enc, [item.context for item in items]))
        words = list(map(enc, [item.word for item in items]))
        kinds: dict[str, str] = {}  # a setting or stimulus set -> its JSON string
        labelled: dict[frozenset[str], list[tuple[str, str]]] = {}
        parts = []
        for item, context, word in zip(items, contexts, words, strict=True):
            labels = item.labels
            if labels:
                names = labelled.get(keys := frozenset(labels))
                if names is None:  # every item of a suite has the same label keys: sorted once
                    names = labelled[keys] = [(k, enc(k) + ":") for k in sorted(keys)]
                listed = ",".join([name + _json_label_text(labels[k]) for k, name in names])
            else:
                listed = ""
            setting = kinds.get(item.setting) or kinds.setdefault(item.setting, enc(item.setting))
            stimulus_set = (kinds.get(item.stimulus_set)
                            or kinds.setdefault(item.stimulus_set, enc(item.stimulus_set)))
            parts.append(
                f'{{"context":{context},"labels":{{{listed}}},"setting":{setting},'
                f'"span":[{item.char_start},{item.char_end}],"stimulus_set":{stimulus_set},'
                f'"word":{word}}}'
            )
        text = '{"items":[' + ",".join(parts) + '],"name":' + enc(self.name) + "}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        """The suite as a schema-valid document, every item with an explicit ``span``."""
        doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "name": self.name}
        if self.description:
            doc["description"] = self.description
        if self.generator is not None:
            doc["generator"] = {"name": self.generator, "parameters": dict(self.parameters)}
        doc["items"] = [item.to_dict() for item in self.items]
        return doc

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], *, source: str | None = None) -> Suite:
        """Validate a suite document against the JSON schema and materialise its items.

        Raises
        ------
        SuiteError
            Schema violations, with the JSON path of each failing element; or the items whose
            target cannot be placed, all of them, each with its index, word and context.
        """
        validate_suite_document(doc, source)
        items: list[Item] = []
        problems: list[str] = []
        for index, entry in enumerate(doc["items"]):
            try:
                item, problem = _materialise(entry)
            except SuiteError as err:  # a label value the suite cannot hold
                where = f" {source}" if source else ""
                raise SuiteError(f"suite{where}: $.items[{index}]: {err}") from None
            if item is None:
                problems.append(
                    f"  $.items[{index}] word {show(entry['word'])} in {show(entry['context'])}: "
                    f"{problem}"
                )
            else:
                items.append(item)
        if problems:
            where = f" {source}" if source else ""
            raise SuiteError(
                f"suite{where}: the target of {len(problems)} of {len(doc['items'])} item(s) cannot "
                "be placed in its context:\n"
                + "\n".join(problems)
                + "\nFix each context, word, span or occurrence."
            )
        forms = _unicode_forms(items)
        if forms:
            where = f" {source}" if source else ""
            warnings.warn(
                f"suite{where} writes {len(forms)} name(s) in two Unicode forms, kept as distinct "
                f"names (and tokens): {'; '.join(forms[:5])}{' …' if len(forms) > 5 else ''}; "
                "if each is meant as one, write every one the same way (e.g. NFC: "
                "unicodedata.normalize('NFC', text))",
                EmbWarning,
                stacklevel=2,
            )
        generator = doc.get("generator") or {}
        return cls(
            name=doc["name"],
            items=tuple(items),
            generator=generator.get("name"),
            parameters=generator.get("parameters", {}),
            description=doc.get("description", ""),
        )


def _read_document(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise SuiteError(f"cannot read suite {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SuiteError(f"suite {path} is not UTF-8 text: {exc.reason}; save it as UTF-8") from exc
    where = f"suite {path}"
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return parse_yaml(text, where=where, error=SuiteError)
    if suffix == ".json":
        return parse_json(text, where=where, error=SuiteError)
    try:
        return parse_json(text, where=where, error=SuiteError)
    except SuiteError:
        return parse_yaml(text, where=where, error=SuiteError)


def load_suite(path: str | PathLike[str]) -> Suite:
    """Read a suite from a JSON or YAML file (by suffix; otherwise JSON, then YAML).

    Parameters
    ----------
    path
        ``.json``, ``.yaml`` or ``.yml`` file holding a suite document.

    Returns
    -------
    Suite
        With materialised items.

    Raises
    ------
    SuiteError
        Unreadable or unparsable file (with line and column); schema violations, naming the JSON
        path (``$.items[3].span``) and the reason; items whose target is not in the context, whose
        span text differs from the word, or whose occurrence exceeds the word's count, all listed
        with index, word and context.

    Examples
    --------
    >>> suite = load_suite("my-suite.yaml")          # doctest: +SKIP
    >>> suite.items[0].target                        # doctest: +SKIP
    'love'
    """
    path = Path(path)
    return Suite.from_dict(_read_document(path), source=str(path))


#: The first lines of a suite file as :func:`write_suite` writes it (JSON or YAML): the only kind
#: of existing file it replaces, and only with ``overwrite``.
_SUITE_HEAD = re.compile(rb'\A(\{\s*"schema_version"\s*:\s*\d+\s*,\s*"name"\s*:|schema_version:\s*\d+\s*\nname:)')


def _is_suite_file(path: Path) -> bool:
    """Whether ``path`` is a regular file that starts as a suite file emb writes."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(256)
    except OSError:
        return False
    return _SUITE_HEAD.match(head) is not None


def write_suite(suite: Suite, path: str | PathLike[str], *, overwrite: bool = False) -> Path:
    """Write ``suite.to_dict()`` as YAML (``.yaml``/``.yml``) or JSON (anything else).

    The file is written under a unique temporary name beside its target (claimed: one export
    to a path at a time) and renamed into place: ``path`` holds the whole suite or what it held
    before, never part of one.

    Parameters
    ----------
    suite : Suite
    path : path
        The file to write; its directory must exist, and must not be inside a zarr store.
    overwrite : bool
        Replace an existing suite file (refused otherwise). A file that is not a suite file
        (one that does not start as this function writes one) is never replaced.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    SuiteError
        ``path`` exists (and ``overwrite`` is not set, or it is not a suite file) or is a
        directory, its directory is missing or read-only, it lies inside a zarr store (which the
        file would corrupt), another export writes it, or the disk has no room for it.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        raise SuiteError(f"cannot write the suite to {path}: it is a directory; give a file name")
    if not path.parent.is_dir():
        raise SuiteError(
            f"cannot write the suite to {path}: its directory {path.parent} does not exist; "
            "create it first or choose another path"
        )
    refuse_inside_store(path, what="the suite", error=SuiteError,
                        fix="choose a path outside the store")
    _check_replaceable(path, overwrite=overwrite)
    doc = suite.to_dict()
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    else:
        text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
    data = text.encode("utf-8")
    fix = "choose another path (nothing was written)"
    check_space(path.parent, len(data), what="the suite", error=SuiteError, fix=fix)
    with claim(path, what="FILE", error=SuiteError) as held:
        held.remove_leftovers()  # a killed export's temporary
        _check_replaceable(path, overwrite=overwrite)  # again, now that no other export writes it
        check_space(path.parent, len(data), what="the suite", error=SuiteError, fix=fix)
        partial = held.temporary_name()
        try:
            write_file(partial, data)
            os.replace(partial, path)
        except OSError as err:
            if is_disk_full(err):
                raise SuiteError(disk_full_message(path.parent, len(data), what="the suite",
                                                   fix=fix)) from None
            raise SuiteError(f"cannot write the suite to {path}: {err.strerror or err}; choose a "
                             "writable path") from None
        finally:
            partial.unlink(missing_ok=True)
    return path


def _check_replaceable(path: Path, *, overwrite: bool) -> None:
    """Refuse an existing ``path``: always when it is not a suite file emb writes (a user's
    other file), else unless ``overwrite``."""
    if not os.path.lexists(path):
        return
    if not _is_suite_file(path):
        raise SuiteError(
            f"{path} exists and is not a suite file (it does not start as 'emb suites export' "
            "writes one); emb never replaces such a file, --overwrite or not: move it away or "
            "choose another name"
        )
    if not overwrite:
        raise SuiteError(f"{path} exists; remove it, choose another name, or pass --overwrite "
                         "(overwrite=True) to replace it")
