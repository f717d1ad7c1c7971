"""Names in messages: plain Python values (never ``np.str_('x')``) and a "did you mean" hint.

Every message that shows a value a user typed or a list of names the data holds goes through
:func:`plain` / :func:`names`; every lookup of a name (tests, lexicons, settings, poolings, groups,
suites, analyses) that fails says what exists and, when one is close, :func:`did_you_mean`.
Names are listed in natural order (:func:`natural_key`: WEAT2 before WEAT10).
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["cut", "did_you_mean", "names", "natural_key", "plain", "unknown_names"]

#: The most characters of one name (its repr) a message shows.
_NAME_LIMIT = 80


def plain(value: Any) -> Any:
    """``value`` with numpy scalars and arrays turned into plain Python (recursively).

    Examples
    --------
    >>> import numpy as np
    >>> plain([np.str_("a"), np.int64(2), np.array([1.5])])
    ['a', 2, [1.5]]
    """
    if hasattr(value, "tolist") and type(value).__module__ == "numpy":
        return plain(value.tolist())
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    return value


def cut(text: str, limit: int = 300) -> str:
    """``text`` shortened to ``limit`` characters (an ellipsis and the count of the rest), for
    quoting a parser's or a user's text in a message: never megabytes on a terminal.

    Examples
    --------
    >>> cut("abcdef", 4)
    'abc… (3 more characters)'
    """
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[: limit - 1]}… ({len(text) - limit + 1:,} more characters)"


def names(values: Iterable[Any], *, limit: int = 20) -> str:
    """A list of names as ``['a', 'b', …]``, plain Python, at most ``limit`` shown.

    Examples
    --------
    >>> names(["x", "y"])
    "['x', 'y']"
    >>> names(range(30), limit=3)
    '[0, 1, 2, … (27 more)]'
    """
    items = [plain(v) for v in values]
    shown = ", ".join(cut(repr(v), _NAME_LIMIT) for v in items[:limit])
    more = f", … ({len(items) - limit} more)" if len(items) > limit else ""
    return f"[{shown}{more}]"


def _closest(name: Any, choices: Iterable[Any]) -> Any:
    options = {str(plain(c)): plain(c) for c in choices}
    key = str(plain(name))
    if not key.isascii() or not all(k.isascii() for k in options):
        alike = [k for k in options if _look_alike(key, k)]  # prints as asked: the one meant
        if alike:
            return options[alike[0]]
    close = difflib.get_close_matches(key, list(options), n=1, cutoff=0.6)
    if not close:
        lower = {k.lower(): k for k in options}
        close = [lower[key.lower()]] if key.lower() in lower else []
    return options[close[0]] if close else None


def _look_alike(name: Any, choice: Any) -> bool:
    """Whether two different strings print alike: equal once composed (NFC) and stripped of
    invisible format characters (zero-width spaces and joiners, direction marks, BOM)."""
    if not (isinstance(name, str) and isinstance(choice, str)) or name == choice:
        return False

    def seen(text: str) -> str:
        return "".join(c for c in unicodedata.normalize("NFC", text)
                       if unicodedata.category(c) != "Cf")

    return seen(name) == seen(choice)


def _suggest(name: Any, close: Any) -> str:
    """``'x'``, or for a name that prints like the one asked for, its code points spelled out."""
    if _look_alike(name, close):
        return (f"{cut(ascii(close), _NAME_LIMIT)} (it prints like {cut(ascii(name), _NAME_LIMIT)} "
                "but is written with other code points: another Unicode form or invisible "
                "characters; give it exactly as the data writes it)")
    return cut(repr(close), _NAME_LIMIT)


def did_you_mean(name: Any, choices: Iterable[Any]) -> str:
    """``" Did you mean 'x'?"`` when a choice is close to ``name`` (stdlib difflib), else ``""``.

    Examples
    --------
    >>> did_you_mean("bleachd", ["bleached", "aligned"])
    " Did you mean 'bleached'?"
    >>> did_you_mean("zzz", ["bleached"])
    ''
    """
    close = _closest(plain(name), choices)
    return "" if close is None else f" Did you mean {_suggest(plain(name), close)}?"


def unknown_names(kind: str, wanted: Iterable[Any], present: Iterable[Any], where: str) -> str:
    """The message for names that are not there: what was asked, what exists, the closest ones.

    Examples
    --------
    >>> unknown_names("setting", ["bleachd"], ["bleached", "aligned"], "suite 'vast'")
    "setting ['bleachd'] not in suite 'vast', which has ['bleached', 'aligned']. Did you mean 'bleached'?"
    """
    wanted = [plain(w) for w in wanted]
    present = [plain(p) for p in present]
    pairs = [(w, c) for w in wanted if (c := _closest(w, present)) is not None]
    if len(wanted) == 1 and pairs:
        hint = f" Did you mean {_suggest(*pairs[0])}?"
    elif pairs:
        hint = " Did you mean " + ", ".join(
            f"{_suggest(w, c)} for {cut(repr(w), _NAME_LIMIT)}" for w, c in pairs[:10]
        ) + "?"
    else:
        hint = ""
    return f"{kind} {names(wanted)} not in {where}, which has {names(present)}.{hint}"


def natural_key(name: str) -> tuple[str, int, str]:
    """Sort key putting ``C2`` before ``C10``: (text before the first number, the number, the rest);
    a name without a number sorts as (name, -1, "")."""
    m = re.match(r"^(.*?)(\d+)(.*)$", name)
    return (m.group(1), int(m.group(2)), m.group(3)) if m else (name, -1, "")
