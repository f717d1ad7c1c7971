"""The ``vast`` suite: lexicon words and polar words in VAST's four contextual settings (torch-free).

Wolfe & Caliskan (2022), VAST: The Valence-Assessing Semantics Test for Contextualizing Language
Models. The 25 pleasant and 25 unpleasant polar words are package data (``emb/data/polar_words.json``).

Templates in other languages (``--templates FILE``, ``templates=`` in Python). VAST in its seven
languages used templates translated into each language; a template file gives them, one entry
per language code (the layout of ``polar_words_multilingual.json``), or one entry at the top
level::

    {"_source": "who translated them (keys starting with '_' are comments)",
     "languages": {
       "es": {"language": "Spanish",
              "bleached": "Esto es {word}",
              "bands": {"very unpleasant": "Es muy desagradable pensar en {word}",
                        "unpleasant": "Es desagradable pensar en {word}",
                        "neither pleasant nor unpleasant": "No es ni agradable ni desagradable pensar en {word}",
                        "pleasant": "Es agradable pensar en {word}",
                        "very pleasant": "Es muy agradable pensar en {word}"}}}}

``bleached`` and each of the five band sentences hold ``{word}`` exactly once, anywhere in the
sentence (word order differs between languages); the band keys are the English band phrases,
which stay the items' ``band`` labels. The file's path, sha256 and the sentences used are recorded
in the suite parameters. A non-English ``--language`` without templates is refused unless
``--allow-english-templates`` is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from emb import data
from emb.corpus.in_memory import Corpus, load_corpus
from emb.errors import SuiteError
from emb.files.documents import show
from emb.options import SEED, Option
from emb.stimuli.lexicon import Lexicon, load_lexicon
from emb.stimuli.suites._common import (
    BLEACHED,
    listing,
    read_json,
    sha256,
    unique,
    word_list,
)
from emb.stimuli.suites._vast_contexts import (
    BAND_EDGES,
    BANDS,
    WORD,
    Templates,
    english_templates,
    load_templates,
    mirror_band,
    valence_band,
)
from emb.stimuli.suites.core import Item, Suite
from emb.stimuli.suites.generator import SuiteGenerator

__all__ = [
    "POLAR_DEFAULT_RATINGS",
    "POLAR_PLEASANT",
    "POLAR_UNPLEASANT",
    "VastGenerator",
]

_POLAR = data.read_json("polar_words.json")
#: The 25 pleasant polar words (VAST appendix; Caliskan et al. 2017 WEAT1 attribute A).
POLAR_PLEASANT: tuple[str, ...] = tuple(_POLAR["pleasant"])
#: The 25 unpleasant polar words (VAST appendix; Caliskan et al. 2017 WEAT1 attribute B).
POLAR_UNPLEASANT: tuple[str, ...] = tuple(_POLAR["unpleasant"])
#: 1–9 ratings that pick the aligned band of a polar word the lexicon does not rate (VAST code).
POLAR_DEFAULT_RATINGS: dict[str, float] = {"pleasant": 8.0, "unpleasant": 2.0}

def _load_polar(
    path: Path | None, language: str | None
) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, Any]]:
    if path is None:
        info = {"source": "builtin", "reference": "Wolfe & Caliskan 2022, appendix (WEAT1 A/B)"}
        return POLAR_PLEASANT, POLAR_UNPLEASANT, info
    doc = read_json(path, "polar-word file")
    where = "$"
    if isinstance(doc, dict) and "languages" in doc:
        code = language or "en"
        languages = doc["languages"]
        if not isinstance(languages, dict) or code not in languages:
            available = sorted(languages) if isinstance(languages, dict) else []
            raise SuiteError(
                f"polar-word file {path} has no language {code!r}; available: {available}; "
                "give --language one of them, or another --polar FILE"
            )
        doc, where = languages[code], f"$.languages.{code}"
    if not isinstance(doc, dict):
        raise SuiteError(
            f"polar-word file {path}: {where} must be an object with 'pleasant' and 'unpleasant'"
        )
    pleasant, rep_p = unique(word_list(doc.get("pleasant"), f"{path}: {where}.pleasant"))
    unpleasant, rep_u = unique(word_list(doc.get("unpleasant"), f"{path}: {where}.unpleasant"))
    both = [w for w in pleasant if w in set(unpleasant)]
    if both:
        raise SuiteError(
            f"polar-word file {path}: {listing(both)} are in both {where}.pleasant and "
            f"{where}.unpleasant; a polar word marks one pole: keep each in one list"
        )
    info = {
        "source": str(path),
        "sha256": sha256(path),
        "language": language or "en",
        "repeated_words_removed": {"pleasant": rep_p, "unpleasant": rep_u},
    }
    return pleasant, unpleasant, info


def _extremes(lexicon: Lexicon, rating: str) -> np.ndarray:
    """'high' for the 25 highest rated words, 'low' for the 25 lowest, '' otherwise."""
    marks = np.full(len(lexicon), "", dtype=object)
    if rating not in lexicon.ratings:
        return marks
    values = lexicon.values(rating)
    k = min(25, len(values) // 2)
    marks[np.argsort(values, kind="stable")[:k]] = "low"
    marks[np.argsort(-values, kind="stable")[:k]] = "high"
    return marks


@dataclass(frozen=True)
class _Entry:
    word: str
    stimulus_set: str
    labels: dict[str, Any]
    rating: float  # 1–9, picks the aligned band
    polar: bool


def _entries(lexicon: Lexicon, pleasant: Sequence[str], unpleasant: Sequence[str]) -> list[_Entry]:
    nan = float("nan")
    rescaled = {r: lexicon.rescaled(r) for r in lexicon.ratings}
    marks = {r: _extremes(lexicon, r) for r in ("arousal", "dominance")}

    def labels(i: int | None) -> dict[str, Any]:
        def value(rating: str) -> float:
            return float(rescaled[rating][i]) if i is not None and rating in rescaled else nan

        return {
            "lexicon": lexicon.name,
            "valence": value("valence"),
            "arousal": value("arousal"),
            "dominance": value("dominance"),
            "valence_raw": float(lexicon.valence[i]) if i is not None else nan,
            "band": "",
            "in_lexicon": "true" if i is not None else "false",
            "polar_arousal": "",
            "polar_dominance": "",
        }

    out = []
    for i, word in enumerate(lexicon.words):
        base = labels(i)
        base["polar_arousal"] = marks["arousal"][i]
        base["polar_dominance"] = marks["dominance"][i]
        out.append(_Entry(word, "lexicon", base, float(rescaled["valence"][i]), False))
    for stimulus_set, words in (("pleasant", pleasant), ("unpleasant", unpleasant)):
        for word in words:
            i = lexicon.index(word) if word in lexicon else None
            rating = (
                float(rescaled["valence"][i])
                if i is not None
                else POLAR_DEFAULT_RATINGS[stimulus_set]
            )
            out.append(_Entry(word, stimulus_set, labels(i), rating, True))
    return out


class VastGenerator(SuiteGenerator):
    """VAST stimuli: every lexicon word and the 25+25 polar words in four contextual settings.

    Settings (Wolfe & Caliskan 2022): ``bleached`` "This is WORD"; ``aligned`` "It is <band> to
    think of WORD", the band from the word's valence rescaled to 1–9 (``valence_band`` in
    :mod:`emb.stimuli.suites._vast_contexts`); ``misaligned`` the band mirrored (``mirror_band``)
    for the lexicon words, while the polar words keep their aligned contexts; ``random`` (only
    with a corpus) one seeded corpus sentence holding the word
    (:meth:`~emb.corpus.in_memory.Corpus.sample`). Polar words the lexicon does not rate take the
    ratings 8 (pleasant) / 2 (unpleasant) for their band; their ``valence`` labels are NaN and
    ``in_lexicon`` is "false". With several lexica, items repeat per lexicon.
    ``wording="reference"`` reproduces the authors' code: "think about" and band edges closed at
    the top (``BAND_EDGES``). Other languages take their own templates (``templates``, see the
    module docstring) and polar words (``polar``).

    Labels: ``lexicon``, ``valence``/``arousal``/``dominance`` (1–9, NaN where not rated),
    ``valence_raw`` (the lexicon's scale), ``band`` (aligned/misaligned phrase, else ""),
    ``in_lexicon``, ``polar_arousal``/``polar_dominance`` ("high"/"low" for the 25 highest/lowest
    rated lexicon words on that rating, else ""). ``stimulus_set`` ∈ {lexicon, pleasant,
    unpleasant}. Words without a corpus sentence get no random item and are listed in
    ``parameters["missing_random"]`` and in :meth:`warnings`.

    References
    ----------
    Wolfe, R. & Caliskan, A. (2022). VAST: The Valence-Assessing Semantics Test for
    Contextualizing Language Models. AAAI 36(10), 11477–11485.
    """

    name = "vast"
    description = (
        "VAST/ValNorm: lexicon words and 25+25 polar words in bleached, aligned, misaligned "
        "(and, with a corpus, random) contexts"
    )
    options = (
        Option(
            name="lexicon",
            type=str,
            multiple=True,
            required=True,
            help="lexicon CSV path, or a name (warriner, anew, vader); repeat for several",
        ),
        Option(
            name="corpus",
            type=Path,
            help="sentence corpus (text or JSONL, .gz/.zst) for the 'random' setting",
        ),
        SEED.but(default=0, help="seed of the random-context draw"),
        Option(
            name="language",
            type=str,
            help="language code (es, pt, …) of a multilingual lexicon file; other languages "
            "need --polar and --templates",
        ),
        Option(
            name="scale",
            type=str,
            help="rating scale 'LO,HI' of the lexica (default: known for the name, else inferred)",
        ),
        Option(
            name="wording",
            type=str,
            default="paper",
            choices=("paper", "reference"),
            help="'paper': 'It is <band> to think of WORD', bands [2.5, 4) …; 'reference': the "
            "authors' code, 'think about' and bands closed at the top (<= 2.5, <= 4, <= 6, <= 7.5)",
        ),
        Option(
            name="polar",
            type=Path,
            help="JSON with 'pleasant'/'unpleasant' lists (or polar_words_multilingual.json); "
            "default: the 25+25 English words",
        ),
        Option(
            name="templates",
            type=Path,
            help="JSON of the bleached template and the five band sentences per language "
            "({\"languages\": {\"es\": {\"bleached\": \"Esto es {word}\", \"bands\": {…}}}}); "
            "default: the English templates",
        ),
        Option(
            name="allow_english_templates",
            type=bool,
            default=False,
            help="with a non-English --language and no --templates, use the English templates "
            "anyway (recorded)",
        ),
        Option(
            name="duplicates",
            type=str,
            choices=("error", "first", "last", "mean"),
            help="how to treat a word listed twice in a lexicon (default: error)",
        ),
        Option(
            name="text_field",
            type=str,
            default="text",
            help="key of the sentence in each line of a JSONL corpus",
        ),
    )

    def _check_language(self, opts: dict[str, Any]) -> None:
        """Refuse a non-English language without its own polar words and templates."""
        language = opts["language"]
        if language in (None, "en"):
            return
        needs = []
        if opts["polar"] is None:
            needs.append(
                f"the built-in polar words are English, but --language {language}: give --polar "
                "FILE (polar= in Python), a JSON file with 'pleasant' and 'unpleasant' lists in "
                "that language (or the polar_words_multilingual.json layout with a 'languages' key)"
            )
        if opts["templates"] is None and not opts["allow_english_templates"]:
            example = english_templates(opts["wording"], None).bands["very pleasant"]
            needs.append(
                f"the built-in templates are English ({BLEACHED}WORD, "
                f"{example.replace(WORD, 'WORD')}), and --language {language} would put "
                f"{language} words into them: give --templates FILE (templates= in Python) with "
                f"the bleached template and the five band sentences in that language, or "
                "--allow-english-templates (allow_english_templates=True) to use the English ones "
                "knowingly"
            )
        if needs:
            raise SuiteError("; and ".join(needs))

    def build(self, **options: Any) -> Suite:
        """Build the VAST suite; see the class docstring for items and labels."""
        if isinstance(options.get("scale"), (tuple, list)):
            options["scale"] = ",".join(str(v) for v in options["scale"])
        opts = self.parse_options(options)
        if opts["seed"] < 0:  # numpy's seeding would fail late, with a traceback
            raise SuiteError(
                f"option 'seed' (--seed) must be a non-negative integer; got {opts['seed']}"
            )
        self._check_language(opts)
        sources = _Sources.read(opts)
        items, missing, not_rated = _items(sources, edges=opts["wording"], seed=opts["seed"])
        return Suite(
            name=self.name,
            items=tuple(items),
            generator=self.name,
            parameters=_parameters(opts, sources, items, missing, not_rated),
            description=self.description,
        )

    @staticmethod
    def missing_random(suite: Suite) -> tuple[str, ...]:
        """Words that got no ``random`` item because no corpus sentence contains them."""
        return _strings(suite.parameters.get("missing_random"))

    def warnings(self, suite: Suite) -> tuple[str, ...]:
        """The words without a random context, English templates used for another language, and
        lexicon notes (inferred scales, duplicates). Parameters of a loaded suite file that do not
        have the shapes this generator writes are ignored."""
        lines = []
        missing = self.missing_random(suite)
        if missing:
            lines.append(
                f"{len(missing)} word(s) occur in no corpus sentence and have no 'random' item: "
                f"{listing(missing, 50)} (all in parameters['missing_random'])"
            )
        templates = suite.parameters.get("templates")
        if isinstance(templates, dict) and isinstance(templates.get("note"), str):
            lines.append(templates["note"])
        lexica = suite.parameters.get("lexica")
        for lex in lexica if isinstance(lexica, list) else ():
            if isinstance(lex, dict):
                name = show(lex.get("name"))
                lines.extend(f"lexicon {name}: {note}" for note in _strings(lex.get("notes")))
        return tuple(lines)


@dataclass(frozen=True)
class _Sources:
    """What a VAST suite is built from: the polar words, the templates, the lexica and the
    corpus of the ``random`` setting (None: no such setting)."""

    pleasant: Sequence[str]
    unpleasant: Sequence[str]
    polar_info: dict[str, Any]
    templates: Templates
    lexica: list[Lexicon]
    corpus: Corpus | None

    @classmethod
    def read(cls, opts: dict[str, Any]) -> _Sources:
        """Read them, in this order; lexica with the same name are refused."""
        pleasant, unpleasant, polar_info = _load_polar(opts["polar"], opts["language"])
        templates = (
            load_templates(opts["templates"], opts["language"])
            if opts["templates"] is not None
            else english_templates(opts["wording"], opts["language"])
        )
        lexica = [
            load_lexicon(
                source,
                scale=opts["scale"],
                language=opts["language"],
                duplicates=opts["duplicates"],
            )
            for source in opts["lexicon"]
        ]
        names = [lex.name for lex in lexica]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise SuiteError(
                f"several lexica are named {repeated}; give files with different names"
            )
        corpus: Corpus | None = (
            load_corpus(opts["corpus"], text_field=opts["text_field"]) if opts["corpus"] else None
        )
        return cls(pleasant, unpleasant, polar_info, templates, lexica, corpus)


def _items(
    sources: _Sources, *, edges: str, seed: int,
) -> tuple[list[Item], dict[str, None], dict[str, list[str]]]:
    """The items, lexicon by lexicon (bleached, aligned, misaligned, then random); the words
    without a corpus sentence; per lexicon, the polar words it does not rate."""
    items: list[Item] = []
    samples: dict[str, tuple[str, int, int] | None] = {}
    missing: dict[str, None] = {}
    not_rated: dict[str, list[str]] = {}
    for lexicon in sources.lexica:
        entries = _entries(lexicon, sources.pleasant, sources.unpleasant)
        not_rated[lexicon.name] = [
            e.word for e in entries if e.polar and e.labels["in_lexicon"] == "false"
        ]
        items += _template_items(sources.templates, entries, edges)
        if sources.corpus is None:
            continue
        items += _random_items(sources.corpus, entries, seed, samples, missing)
    return items, missing, not_rated


def _template_items(templates: Templates, entries: list[_Entry], edges: str) -> list[Item]:
    """The bleached, aligned and misaligned items of one lexicon's entries (a polar word's
    misaligned context is its aligned one)."""
    items = [
        templates.item(
            templates.bleached,
            e.word,
            setting="bleached",
            stimulus_set=e.stimulus_set,
            labels=e.labels,
        )
        for e in entries
    ]
    for setting in ("aligned", "misaligned"):
        for e in entries:
            band = valence_band(e.rating, edges=edges)
            if setting == "misaligned" and not e.polar:
                band = mirror_band(band)
            items.append(
                templates.item(
                    templates.bands[band],
                    e.word,
                    setting=setting,
                    stimulus_set=e.stimulus_set,
                    labels={**e.labels, "band": band},
                )
            )
    return items


def _random_items(
    corpus: Corpus, entries: list[_Entry], seed: int,
    samples: dict[str, tuple[str, int, int] | None], missing: dict[str, None],
) -> list[Item]:
    """One item per entry in a seeded corpus sentence holding its word (drawn once per word,
    kept in ``samples``); a word no sentence holds is added to ``missing``."""
    items = []
    for e in entries:
        if e.word not in samples:
            samples[e.word] = corpus.sample(e.word, seed=seed)
        drawn = samples[e.word]
        if drawn is None:
            missing[e.word] = None
            continue
        sentence, start, end = drawn
        items.append(
            Item(
                context=sentence,
                word=e.word,
                char_start=start,
                char_end=end,
                setting="random",
                stimulus_set=e.stimulus_set,
                labels=e.labels,
            )
        )
    return items


def _parameters(
    opts: dict[str, Any], sources: _Sources, items: list[Item], missing: dict[str, None],
    not_rated: dict[str, list[str]],
) -> dict[str, Any]:
    """The suite's parameters: its whole definition, the counts per setting, and the words
    without a random item."""
    edges = opts["wording"]
    by_setting: dict[str, int] = {}
    for item in items:
        by_setting[item.setting] = by_setting.get(item.setting, 0) + 1
    parameters = {
        "lexica": [lex.to_dict() for lex in sources.lexica],
        "corpus": sources.corpus.to_dict() if sources.corpus is not None else None,
        "seed": opts["seed"],
        "wording": opts["wording"],
        "templates": sources.templates.info,
        "bands": [[lower, phrase] for lower, phrase in BANDS],
        "band_edges": {"name": edges, "rule": BAND_EDGES[edges]},
        "polar": {
            **sources.polar_info,
            "pleasant": list(sources.pleasant),
            "unpleasant": list(sources.unpleasant),
            "default_ratings": POLAR_DEFAULT_RATINGS,
            "not_in_lexicon": not_rated,
        },
        "language": opts["language"],
        "settings": list(by_setting),
        "counts": {"items": len(items), "by_setting": by_setting},
        "missing_random": list(missing),
    }
    if opts["corpus"] is not None and opts["text_field"] != "text":
        parameters["text_field"] = opts["text_field"]
    return parameters


def _strings(value: Any) -> tuple[str, ...]:
    """The strings of a parameters list (a crafted suite file may hold anything there)."""
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()
