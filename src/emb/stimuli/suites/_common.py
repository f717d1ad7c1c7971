"""Helpers the built-in suite generators share (torch-free)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from emb.errors import SuiteError
from emb.files.documents import check_json_data, control_character, parse_json, show
from emb.files.special import check_regular_file
from emb.stimuli.suites.core import Item

#: The bleached template's prefix: "This is WORD" (May et al. 2019; VAST).
BLEACHED = "This is "


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def span_item(
    prefix: str,
    word: str,
    *,
    setting: str,
    stimulus_set: str,
    labels: Mapping[str, Any],
    suffix: str = "",
) -> Item:
    """The item ``prefix + word + suffix`` whose target is ``word``."""
    return Item(
        context=prefix + word + suffix,
        word=word,
        char_start=len(prefix),
        char_end=len(prefix) + len(word),
        setting=setting,
        stimulus_set=stimulus_set,
        labels=labels,
    )


def listing(words: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(show(w) for w in words[:limit])
    return f"[{shown}{', …' if len(words) > limit else ''}]"


def read_json(path: Path, what: str) -> Any:
    """A user's JSON file as plain JSON data (see :mod:`emb.files.documents`), or SuiteError
    (also for a path that is not a regular file: a FIFO would block)."""
    check_regular_file(path, what=what, error=SuiteError, must_exist=True)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise SuiteError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{what} {path} is not UTF-8 text: {exc.reason}; save it as UTF-8") from exc
    data = parse_json(text, where=f"{what} {path}", error=SuiteError)
    check_json_data(data, where=f"{what} {path}", error=SuiteError, allow_nan=False)
    return data


def word_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise SuiteError(f"{where} must be a non-empty list of words, got {show(value)}")
    bad = [i for i, w in enumerate(value) if not isinstance(w, str) or not w.strip()]
    if bad:
        raise SuiteError(
            f"{where}[{bad[0]}] must be a non-blank string, got {show(value[bad[0]])}"
        )
    for i, w in enumerate(value):
        if (problem := control_character(w)) is not None:
            raise SuiteError(
                f"{where}[{i}] is {show(w)}, which {problem}; words are printable text: remove "
                "it or write the character meant"
            )
    return [w.strip() for w in value]


def unique(words: Iterable[str]) -> tuple[tuple[str, ...], list[str]]:
    seen: dict[str, None] = {}
    repeated = []
    for word in words:
        if word in seen:
            repeated.append(word)
        seen[word] = None
    return tuple(seen), repeated

