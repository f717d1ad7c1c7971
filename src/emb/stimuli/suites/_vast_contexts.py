"""VAST's sentences: the valence bands, their edges and mirror, and the templates per language.

The aligned context of a word is the sentence of its valence band (:func:`valence_band`), the
misaligned one that of the mirrored band (:func:`mirror_band`); the sentences are English
(:func:`english_templates`) or read from a template file (:func:`load_templates`, layout in
:mod:`emb.stimuli.suites.vast`).  Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emb.errors import SuiteError
from emb.files.documents import show
from emb.stimuli.suites._common import BLEACHED, read_json, sha256, span_item
from emb.stimuli.suites.core import Item

__all__ = [
    "BANDS",
    "BAND_EDGES",
    "WORD",
    "WORDING",
    "Templates",
    "english_templates",
    "load_templates",
    "mirror_band",
    "valence_band",
]

#: VAST's aligned-context bands on the 1–9 scale: (lower bound, phrase). The paper's edges are
#: half-open, [lower, next lower); the authors' code closes them at the top (see BAND_EDGES).
BANDS: tuple[tuple[float, str], ...] = (
    (1.0, "very unpleasant"),
    (2.5, "unpleasant"),
    (4.0, "neither pleasant nor unpleasant"),
    (6.0, "pleasant"),
    (7.5, "very pleasant"),
)
_MIRROR = {
    "very unpleasant": "very pleasant",
    "unpleasant": "pleasant",
    "neither pleasant nor unpleasant": "neither pleasant nor unpleasant",
    "pleasant": "unpleasant",
    "very pleasant": "very unpleasant",
}
WORDING = {"paper": "think of", "reference": "think about"}
#: Which side of a band edge a rating exactly on it belongs to, per ``wording``: the paper's
#: bands 1.00–2.49, 2.50–3.99, … (an edge starts the band above it), or the authors' code's
#: ``<= 2.5``, ``<= 4.0``, ``<= 6.0``, ``<= 7.5`` (an edge ends the band below it; 321 Warriner
#: words sit exactly on an edge).
BAND_EDGES: dict[str, str] = {
    "paper": "lower <= rating < upper: [1, 2.5) very unpleasant, [2.5, 4) unpleasant, [4, 6) "
    "neither pleasant nor unpleasant, [6, 7.5) pleasant, [7.5, 9] very pleasant (the paper)",
    "reference": "lower < rating <= upper: [1, 2.5] very unpleasant, (2.5, 4] unpleasant, "
    "(4, 6] neither pleasant nor unpleasant, (6, 7.5] pleasant, (7.5, 9] very pleasant (the "
    "authors' code)",
}
#: The placeholder of a template sentence.
WORD = "{word}"
_TEMPLATE_KEYS = ("language", "bleached", "bands")


def valence_band(rating: float, *, edges: str = "paper") -> str:
    """VAST's aligned band phrase for a 1–9 valence rating.

    Parameters
    ----------
    rating
        Valence on the 1–9 scale.
    edges
        ``"paper"`` (default) or ``"reference"`` (the authors' code): which band a rating
        exactly on an edge (2.5, 4, 6, 7.5) belongs to; see :data:`BAND_EDGES`.

    Notes
    -----
    Paper: [1, 2.5) "very unpleasant", [2.5, 4) "unpleasant", [4, 6) "neither pleasant nor
    unpleasant", [6, 7.5) "pleasant", [7.5, 9] "very pleasant" (the paper's 1.00–2.49,
    2.50–3.99, 4.00–5.99, 6.00–7.49, 7.50–9.00, closed between two-decimal ratings). Reference:
    ``rating <= 2.5`` "very unpleasant", ``<= 4.0`` "unpleasant", ``<= 6.0`` "neither …",
    ``<= 7.5`` "pleasant", above "very pleasant". The rating is rounded to 9 decimals first, so
    a rescaled 2.4999999999 counts as 2.5.

    References
    ----------
    Wolfe, R. & Caliskan, A. (2022). VAST: The Valence-Assessing Semantics Test for
    Contextualizing Language Models. AAAI 36(10), 11477–11485.
    """
    if edges not in BAND_EDGES:
        raise SuiteError(f"band edges must be one of {list(BAND_EDGES)}, got {show(edges)}")
    value = round(float(rating), 9)
    if not 1.0 <= value <= 9.0:
        raise SuiteError(f"valence {show(rating)} is outside the 1–9 scale of VAST's bands")
    phrase = BANDS[0][1]
    for lower, name in BANDS[1:]:
        if value > lower or (value == lower and edges == "paper"):
            phrase = name
    return phrase


def mirror_band(band: str) -> str:
    """The misaligned band: very unpleasant ↔ very pleasant, unpleasant ↔ pleasant."""
    try:
        return _MIRROR[band]
    except KeyError:
        raise SuiteError(f"unknown band {show(band)}; bands are {list(_MIRROR)}") from None


@dataclass(frozen=True)
class Templates:
    """The bleached sentence and one sentence per band, each holding ``{word}`` once."""

    bleached: str
    bands: dict[str, str]
    info: dict[str, Any]

    def item(
        self, template: str, word: str, *, setting: str, stimulus_set: str, labels: dict[str, Any]
    ) -> Item:
        prefix, suffix = template.split(WORD)
        return span_item(
            prefix, word, suffix=suffix, setting=setting, stimulus_set=stimulus_set, labels=labels
        )


def english_templates(wording: str, language: str | None) -> Templates:
    think = WORDING[wording]
    bands = {phrase: f"It is {phrase} to {think} {WORD}" for _, phrase in BANDS}
    info: dict[str, Any] = {
        "source": "builtin",
        "language": "en",
        "bleached": BLEACHED + WORD,
        "aligned": f"It is {{band}} to {think} {WORD}",
        "misaligned": f"It is {{mirrored band}} to {think} {WORD} (polar words: aligned)",
    }
    if language not in (None, "en"):
        info["used_for_language"] = language
        info["note"] = (
            f"English templates used for language {language!r} (--allow-english-templates)"
        )
    return Templates(BLEACHED + WORD, bands, info)


def template_sentence(value: Any, where: str, fix: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SuiteError(f"{where} must be a sentence holding {WORD}, got {show(value)}; {fix}")
    if value.count(WORD) != 1:
        raise SuiteError(
            f"{where} holds {WORD} {value.count(WORD)} times ({show(value)}); write it exactly "
            f"once, where the word goes; {fix}"
        )
    return value


def load_templates(path: Path, language: str | None) -> Templates:
    """Read and check a template file (layout in the module docstring)."""
    fix = "see the layout in 'emb suites' or the emb.stimuli.suites.vast docstring"
    doc = read_json(path, "template file")
    code = language or "en"
    doc, where = _language_doc(doc, path, code, fix)
    bleached = template_sentence(doc.get("bleached"), f"template file {path}: {where}.bleached", fix)
    bands = _band_sentences(doc.get("bands"), path, where, fix)
    info = {
        "source": str(path),
        "sha256": sha256(path),
        "language": code,
        "bleached": bleached,
        "bands": bands,
        "aligned": "the sentence of the word's band",
        "misaligned": "the sentence of the mirrored band (polar words: aligned)",
    }
    return Templates(bleached, bands, info)


def _language_doc(doc: Any, path: Path, code: str, fix: str) -> tuple[dict[str, Any], str]:
    """The templates of language ``code`` (a file with ``languages``: that language's entry)
    and where they are in the file, refused unless an object with the known keys."""
    where = "$"
    if isinstance(doc, dict) and "languages" in doc:
        languages = doc["languages"]
        if not isinstance(languages, dict) or code not in languages:
            available = sorted(languages) if isinstance(languages, dict) else []
            raise SuiteError(
                f"template file {path} has no language {code!r} under $.languages; available: "
                f"{available}; add it, or give --language one of them"
            )
        doc, where = languages[code], f"$.languages.{code}"
    if not isinstance(doc, dict):
        raise SuiteError(
            f"template file {path}: {where} must be an object with 'bleached' and 'bands', got "
            f"{show(doc)}; {fix}"
        )
    unknown = sorted(k for k in doc if k not in _TEMPLATE_KEYS and not k.startswith("_"))
    if unknown:
        raise SuiteError(
            f"template file {path}: {where} has unknown key(s) {unknown}; the keys are "
            f"{list(_TEMPLATE_KEYS)} (and comments starting with '_'); {fix}"
        )
    return doc, where


def _band_sentences(bands_doc: Any, path: Path, where: str, fix: str) -> dict[str, str]:
    """One sentence per band (keys: the English band names), each its own."""
    phrases = [phrase for _, phrase in BANDS]
    if not isinstance(bands_doc, dict):
        raise SuiteError(
            f"template file {path}: {where}.bands must be an object with one sentence per band "
            f"{phrases}, got {show(bands_doc)}; {fix}"
        )
    missing = [p for p in phrases if p not in bands_doc]
    extra = sorted(k for k in bands_doc if k not in phrases)
    if missing or extra:
        raise SuiteError(
            f"template file {path}: {where}.bands must have exactly the keys {phrases}; "
            + (f"missing {missing}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unknown {extra}" if extra else "")
            + " (the keys are the English band names; the sentences are in the language)"
        )
    bands = {
        p: template_sentence(bands_doc[p], f"template file {path}: {where}.bands[{p!r}]", fix)
        for p in phrases
    }
    repeated = sorted({s for s in bands.values() if list(bands.values()).count(s) > 1})
    if repeated:
        raise SuiteError(
            f"template file {path}: {where}.bands gives the same sentence to several bands "
            f"({show(repeated[0])}); each band needs its own sentence (the aligned and misaligned "
            "settings differ only by them)"
        )
    return bands
