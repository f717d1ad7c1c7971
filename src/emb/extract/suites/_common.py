"""Helpers the built-in suite generators share (torch-free)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from emb.errors import SuiteError
from emb.extract.suites.core import Item

#: The bleached template's prefix: "This is WORD" (May et al. 2019; VAST).
BLEACHED = "This is "


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def span_item(
    prefix: str, word: str, *, setting: str, stimulus_set: str, labels: Mapping[str, Any]
) -> Item:
    return Item(
        context=prefix + word,
        word=word,
        char_start=len(prefix),
        char_end=len(prefix) + len(word),
        setting=setting,
        stimulus_set=stimulus_set,
        labels=labels,
    )


def listing(words: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(repr(w) for w in words[:limit])
    return f"[{shown}{', …' if len(words) > limit else ''}]"


def read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise SuiteError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{what} {path} is not valid JSON: {exc}") from exc


def word_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise SuiteError(f"{where} must be a non-empty list of words, got {value!r}")
    bad = [i for i, w in enumerate(value) if not isinstance(w, str) or not w.strip()]
    if bad:
        raise SuiteError(f"{where}[{bad[0]}] must be a non-blank string, got {value[bad[0]]!r}")
    return [w.strip() for w in value]


def unique(words: Iterable[str]) -> tuple[tuple[str, ...], list[str]]:
    seen: dict[str, None] = {}
    repeated = []
    for word in words:
        if word in seen:
            repeated.append(word)
        seen[word] = None
    return tuple(seen), repeated

