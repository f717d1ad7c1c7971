"""Reading users' JSON and YAML documents into plain JSON data, or a clear error (torch-free).

Every document a user hands to emb (for ``emb extract``: a suite file, a polar-word, template or
WEAT-test file, a corpus JSONL line; for ``emb analyze``: a ``--test`` file) goes through
:func:`parse_json` or :func:`parse_yaml`, and the data through :func:`check_json_data`, so that
what reaches the rest of emb is JSON's data model and
nothing else: ``dict`` with ``str`` keys, ``list``, ``str``, ``int``, ``float``, ``bool``,
``None``; at most :data:`MAX_DEPTH` levels deep; finite numbers that fit a 64-bit float; no
circular references; valid Unicode. Anything else raises the caller's :class:`~emb.errors.EmbError`
subclass naming the file, the JSON path and what to write instead, never a traceback.

YAML is read with PyYAML's safe loader restricted to JSON's data model (YAML 1.2's JSON schema in
spirit): timestamps are not resolved (``2020-12-01`` stays the string ``"2020-12-01"``; YAML 1.2
dropped the timestamp type), the tags ``!!timestamp``, ``!!binary``, ``!!set``, ``!!omap`` and
``!!pairs`` are refused, and so are aliases (``*name``): a 519-byte file of nested aliases
otherwise expands to gigabytes ("billion laughs"), and an alias inside its own anchor makes a
circular document. Messages quote at most a few hundred characters of what they found.

This module sits at the package's top so that both ``emb.extraction`` and ``emb.analyses`` read
documents with it (neither imports the other).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator
from typing import Any

from emb.text import cut

__all__ = [
    "MAX_DEPTH",
    "MAX_FLOAT_INT",
    "check_json_data",
    "control_character",
    "parse_json",
    "parse_yaml",
    "show",
    "text_is_unicode",
]

#: Deepest nesting of lists and objects accepted in a document (a suite needs 6).
MAX_DEPTH = 100
#: Python refuses to convert longer decimal strings to ``int`` (``sys.get_int_max_str_digits``).
_MAX_DIGITS = 4300
_LOG10_2 = math.log10(2)
#: Integers of this magnitude or more cannot become a 64-bit float (``float()`` overflows).
MAX_FLOAT_INT = 2**1024 - 2**970


def text_is_unicode(text: str) -> bool:
    """Whether ``text`` is valid Unicode (no lone surrogate such as JSON's ``"\\ud800"``)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


#: Control characters (Unicode category Cc: C0, DEL, C1): never part of a word, a setting, a
#: stimulus set or a label value.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def control_character(text: str) -> str | None:
    """What is wrong when ``text`` holds a control character (Unicode category Cc: NUL, tab,
    newline, carriage return, escape, DEL, C1), else ``None``.

    Words, settings, stimulus sets and label values are names shown in tables, compared and
    grouped: a NUL, a tab or a line break in one is a paste or encoding accident, and some tools
    drop or rewrite it (numpy's fixed-width text drops trailing NULs, so ``"he\\x00"`` and
    ``"he"`` would become one word). Contexts may hold them (the model reads them as given).

    Examples
    --------
    >>> control_character("he" + chr(0))
    'holds the control character U+0000 at character 2'
    >>> control_character("café") is None
    True
    """
    found = _CONTROL.search(text)
    if found is None:
        return None
    return f"holds the control character U+{ord(found.group()):04X} at character {found.start()}"


def _digits(value: int) -> int:
    """Number of decimal digits of ``value`` (exact below Python's 4,300-digit str limit)."""
    if value.bit_length() < 14_000:
        return len(str(abs(value)))
    return int(value.bit_length() * _LOG10_2) + 1


def show(value: Any, limit: int = 60) -> str:
    """A short, plain rendering of a user's value for a message (no numpy reprs, no huge ints)."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        value = value.item()  # np.str_('WEAT1') → 'WEAT1', np.int64(5) → 5
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        digits = _digits(int(value))
        return str(int(value)) if digits <= 30 else f"an integer of {digits:,} digits"
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, str):
        text = repr(str(value))
    elif type(value) in (list, tuple) or (type(value).__module__ == "numpy"
                                          and getattr(value, "ndim", 0) >= 1):
        # a list of numpy scalars (or an array) as plain values: [nan, 0.5], never [np.float64(nan)]
        items = value.tolist() if hasattr(value, "tolist") else list(value)
        inner = ", ".join(show(v, limit) for v in items[:20]) + (", …" if len(items) > 20 else "")
        text = f"({inner}{',' if len(items) == 1 else ''})" if type(value) is tuple else f"[{inner}]"
    else:
        try:
            text = repr(value)
        except Exception:  # a user's object whose repr fails: name its type instead
            text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _path(parts: Any) -> str:
    parts = list(parts)
    if len(parts) > 12:  # a path into deep nesting: its start and its end
        return _path(parts[:6]) + "…" + _path(parts[-3:])[1:]
    out = "$"
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{cut(part, 40)}"
        elif isinstance(part, str):
            out += f"[{cut(json.dumps(part), 40)}]"
        else:
            out += f"[{show(part, 40)}]"
    return out


def _kind(value: Any) -> str:
    names = {
        "int": "an integer",
        "float": "a number",
        "date": "a date",
        "datetime": "a date and time",
        "bytes": "binary data",
        "set": "a set",
        "tuple": "a tuple",
        "NoneType": "null",
    }
    name = type(value).__name__
    return names.get(name, f"an object of type {name}")


def check_json_data(
    data: Any,
    *,
    where: str,
    error: type[Exception],
    allow_nan: bool = True,
    max_depth: int = MAX_DEPTH,
    root: tuple[Any, ...] = (),
) -> None:
    """Check that ``data`` is plain JSON data; raise ``error`` naming the first offending element.

    Parameters
    ----------
    data
        A parsed document (or any Python value meant to be one).
    where
        What the data is, for the message (``"suite my.yaml"``).
    error
        The :class:`~emb.errors.EmbError` subclass to raise.
    allow_nan
        Whether NaN is accepted (suite labels: NaN means missing, like ``null``).
    max_depth
        Deepest nesting of lists and objects accepted, counted from the document's top.
    root
        The JSON path of ``data`` in its document (keys and indices): names it in messages;
        its length counts towards the depth.

    Raises
    ------
    error
        A key that is not a string; a value that is not ``dict``/``list``/``tuple``/``str``/
        ``int``/``float``/``bool``/``None`` (a YAML date, binary data, a set, a Python object);
        an infinite number (or NaN without ``allow_nan``); an integer beyond a 64-bit float's
        range (about 1.8e308: a label could not hold it); a string that is not valid Unicode (a
        lone surrogate); nesting deeper than ``max_depth``; a circular reference.

    Notes
    -----
    Iterative (no recursion), linear in the number of distinct containers: a list or object met
    twice (shared Python objects) is checked once.
    """

    def fail(parts: Any, problem: str, fix: str) -> Exception:
        return error(f"{where}: {_path([*root, *parts])} {problem}; {fix}")

    def scalar(value: Any, parts: Any) -> None:
        if isinstance(value, str):
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise fail(
                        parts,
                        f"holds an unpaired surrogate {value[exc.start]!r} (at character "
                        f"{exc.start}), which is not Unicode text",
                        "write the character itself, or a valid \\u escape pair",
                    ) from None
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, int):
            try:
                float(value)
            except OverflowError:
                raise fail(
                    parts,
                    f"is an integer of {_digits(int(value)):,} digits, beyond the range of a "
                    "64-bit float (about ±1.8e308)",
                    "write a smaller number",
                ) from None
        elif isinstance(value, float):
            if math.isnan(value) and not allow_nan:
                raise fail(
                    parts,
                    "is NaN (a YAML .nan or a JSON NaN)",
                    "write a finite number, or null for a missing value",
                )
            if math.isinf(value):
                raise fail(
                    parts,
                    f"is {'-' if value < 0 else ''}infinity (a YAML .inf, a JSON Infinity, or a "
                    "number beyond ±1.8e308)",
                    "numbers must be finite: write a finite number, or null for a missing value",
                )
        else:
            raise fail(
                parts,
                f"is {_kind(value)} ({show(value)}), which JSON cannot hold",
                "write a string, a number, true/false, null, a list or an object (in YAML, "
                "quote a date: '2020-12-01')",
            )

    def children(container: Any) -> Iterator[tuple[Any, Any]]:
        return iter(container.items()) if isinstance(container, dict) else enumerate(container)

    if not isinstance(data, (dict, list, tuple)):
        scalar(data, ())
        return
    # each frame: (iterator over (key, value), the container, its key in the parent)
    stack: list[tuple[Iterator[tuple[Any, Any]], Any, Any]] = [(children(data), data, None)]
    open_ids = {id(data)}
    done: set[int] = set()
    while stack:
        iterator, container, _ = stack[-1]
        is_dict = isinstance(container, dict)
        for key, value in iterator:
            if is_dict and type(key) is not str:
                parts = [frame[2] for frame in stack[1:]]
                if not isinstance(key, str):
                    raise fail(
                        parts,
                        f"has the key {show(key)} ({_kind(key)}); keys must be strings",
                        "quote the key (in YAML: '1': …, '2020-12-01': …)",
                    )
                scalar(key, [*parts, key])
            kind = type(value)
            if kind is str:
                if not value.isascii():
                    scalar(value, [*(frame[2] for frame in stack[1:]), key])
                continue
            if kind is dict or kind is list or isinstance(value, (dict, list, tuple)):
                parts = [*(frame[2] for frame in stack[1:]), key]
                if id(value) in open_ids:
                    raise fail(
                        parts,
                        "contains itself (a circular reference)",
                        "write the data out as a tree",
                    )
                if id(value) in done:
                    continue
                if len(stack) + len(root) >= max_depth:
                    raise fail(
                        parts,
                        f"is nested deeper than {max_depth} levels of lists and objects",
                        "flatten the document",
                    )
                stack.append((children(value), value, key))
                open_ids.add(id(value))
                break
            scalar(value, [*(frame[2] for frame in stack[1:]), key])
        else:
            stack.pop()
            open_ids.discard(id(container))
            done.add(id(container))


def parse_json(text: str, *, where: str, error: type[Exception]) -> Any:
    """``json.loads(text)`` with every failure as ``error`` (line and column where known).

    Raises
    ------
    error
        Invalid JSON; an integer longer than 4,300 digits; nesting too deep for the parser.
        The result is not checked further: pass it to :func:`check_json_data`.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}; "
            "fix the file (a JSON checker shows the spot)"
        ) from None
    except RecursionError:
        raise error(
            f"{where} is nested deeper than the JSON parser allows (over {MAX_DEPTH} levels of "
            "lists and objects); flatten the document"
        ) from None
    except ValueError as exc:  # Python's int() limit: "… value has 5000 digits; …"
        found = re.search(r"has (\d+) digits", str(exc))
        number = f"an integer of {int(found[1]):,} digits" if found else "a number"
        raise error(
            f"{where} holds {number}, too long to read; numbers must fit a 64-bit float (about "
            "±1.8e308): write a smaller number"
        ) from None


_REFUSED_TAGS = {
    "tag:yaml.org,2002:timestamp": "a date",
    "tag:yaml.org,2002:binary": "binary data",
    "tag:yaml.org,2002:set": "a set",
    "tag:yaml.org,2002:omap": "an ordered map",
    "tag:yaml.org,2002:pairs": "a list of pairs",
}


@functools.cache
def _loader() -> type:
    """A safe YAML loader for JSON's data model: no aliases, no dates, bounded depth."""
    import yaml
    from yaml.composer import ComposerError
    from yaml.constructor import ConstructorError, SafeConstructor

    class Loader(yaml.SafeLoader):
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise ComposerError(
                    None,
                    None,
                    f"found the alias *{cut(event.anchor, 40)}: aliases are not allowed (a file of "
                    "nested aliases expands to gigabytes); write the value out in full",
                    event.start_mark,
                )
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    raise ComposerError(
                        None,
                        None,
                        f"nested deeper than {MAX_DEPTH} levels of lists and objects; flatten "
                        "the document",
                        self.peek_event().start_mark,
                    )
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    def refuse(loader: Any, node: Any) -> Any:
        raise ConstructorError(
            None,
            None,
            f"the tag {node.tag.replace('tag:yaml.org,2002:', '!!')} ({_REFUSED_TAGS[node.tag]}) "
            "is not allowed: emb reads JSON data (strings, numbers, true/false, null, lists, "
            "objects); quote the value to make it a string",
            node.start_mark,
        )

    def integer(loader: Any, node: Any) -> Any:
        try:
            return SafeConstructor.construct_yaml_int(loader, node)
        except ValueError:
            raise ConstructorError(
                None,
                None,
                f"an integer of {len(str(node.value)):,} characters is too long to read; numbers "
                "must fit a 64-bit float (about ±1.8e308)",
                node.start_mark,
            ) from None

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in _REFUSED_TAGS]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    for tag in _REFUSED_TAGS:
        Loader.add_constructor(tag, refuse)
    Loader.add_constructor("tag:yaml.org,2002:int", integer)
    return Loader


def parse_yaml(text: str, *, where: str, error: type[Exception]) -> Any:
    """Parse one YAML document restricted to JSON's data model (see the module docstring).

    Raises
    ------
    error
        Invalid YAML, an alias, a refused tag, an unreadably long integer, nesting deeper than
        :data:`MAX_DEPTH`, with line and column. The result is not checked further: pass it to
        :func:`check_json_data`.
    """
    import yaml

    try:
        return yaml.load(text, Loader=_loader())  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        problem = f"{context}, {problem}" if context else problem
        raise error(f"{where} is not valid YAML for emb: {cut(problem)}{at}") from None
    except RecursionError:
        raise error(
            f"{where} is nested too deeply for the YAML parser; flatten the document"
        ) from None
