"""The ``intersectional`` suite: "person" in intersectional phrases, and the valence training words.

Omrani Sabbaghi, Wolfe & Caliskan (2023), *Evaluating biased attitude associations of language
models in an intersectional context* (AIES). The attribute pairs, their slot order and the 25 + 25
training words are package data (``emb/data/attribute_pairs_and_svc_words.json``, transcribed from
the authors' code); the phrases are generated here and equal the authors' files byte for byte.

Parts (told apart by ``setting`` and ``stimulus_set``):

- ``phrase`` / ``experiment2``: the 4,096 phrases "a|an" + one value of each of the 12 pairs in
  slot order + "person" (first values vary slowest; "an" before "old"), target = "person".
- ``phrase`` / ``experiment3``: the 3,840 phrases "a" + every order (5!) of one value each of race,
  religion, gender identity, sex and orientation (2⁵) + "person", in sorted order (the authors'
  file is sorted).
- ``alone`` / ``pleasant``, ``unpleasant``: the 25 + 25 training words of the valence direction,
  each word by itself.
- ``alone`` / ``lexicon`` (with ``--lexicon``): the words of a rated lexicon (Bellezza in the
  paper), each by itself, for ValNorm by projection.

Every item is labelled with the value of each category (``age``, ``weight`` … ``sex``; "" where the
phrase has none) and its 1-based position among the phrase's attribute words (``age_position`` …;
NaN where absent), plus ``lexicon``, ``valence`` (1–9) and ``valence_raw`` for lexicon words.

BOS: a decontextualised word is the first token of its context; in a causal model whose tokenizer
adds no BOS token it then sees nothing but itself. The suite asks the extraction for the model's BOS
token when the model is causal (``parameters["bos"] = "causal"``, option ``causal_bos``; the
authors prepended it for GPT-Neo), applied to every item of the suite; ``--bos/--no-bos`` override.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from typing import Any

from emb import data
from emb.errors import SuiteError
from emb.options import Option
from emb.stimuli.lexicon import load_lexicon
from emb.stimuli.suites._common import word_list
from emb.stimuli.suites.core import Item, Suite
from emb.stimuli.suites.generator import SuiteGenerator

__all__ = [
    "EXPERIMENT3_CATEGORIES",
    "PAIRS",
    "SLOT_ORDER",
    "SVC_PLEASANT",
    "SVC_UNPLEASANT",
    "IntersectionalGenerator",
    "Phrase",
    "experiment2_phrases",
    "experiment3_phrases",
]

DATA_FILE = "attribute_pairs_and_svc_words.json"
_DATA = data.read_json(DATA_FILE)

#: category -> (first value A, second value B), in the order of the authors' table script's dict
#: (the data file's ``attribute_pairs_table_order``); the paper's Table 2 lists them in their slot
#: order (:data:`SLOT_ORDER`), as the intersectional analysis does.
PAIRS: dict[str, tuple[str, str]] = {
    category: (values[0], values[1])
    for category, values in _DATA["attribute_pairs_table_order"].items()
}
SVC_PLEASANT: tuple[str, ...] = tuple(word_list(_DATA["svc_training_pleasant"], DATA_FILE))
SVC_UNPLEASANT: tuple[str, ...] = tuple(word_list(_DATA["svc_training_unpleasant"], DATA_FILE))


def _slot_order() -> tuple[str, ...]:
    """The experiment-2 slots as category keys ("age(young/old)" → "age", found by its values)."""
    by_values = {values: category for category, values in PAIRS.items()}
    out = []
    for slot in _DATA["experiment2_phrase_slot_order"]:
        inner = slot[slot.index("(") + 1 : slot.rindex(")")]
        values = tuple(inner.split("/"))
        if values not in by_values:
            raise SuiteError(f"{DATA_FILE}: slot {slot!r} names no attribute pair")
        out.append(by_values[values])
    return tuple(out)


#: The 12 categories in the order of their slots in the experiment-2 phrases.
SLOT_ORDER: tuple[str, ...] = _slot_order()
#: The five categories permuted in experiment 3 (paper §5.3: race, religion, gender identity, sex,
#: sexual orientation).
EXPERIMENT3_CATEGORIES: tuple[str, ...] = ("race", "religion", "gender", "sex", "orientation")
TARGET = "person"


@dataclass(frozen=True)
class Phrase:
    """One generated phrase: its text and each present category's value and 1-based position."""

    text: str
    values: dict[str, str]
    positions: dict[str, int]


def _phrase(article: str, words: list[tuple[str, str]]) -> Phrase:
    text = " ".join([article, *(value for _, value in words), TARGET])
    return Phrase(
        text=text,
        values={category: value for category, value in words},
        positions={category: i + 1 for i, (category, _) in enumerate(words)},
    )


def experiment2_phrases() -> list[Phrase]:
    """The 4,096 phrases of experiment 2, in the authors' order.

    Every combination of one value per pair, slots in :data:`SLOT_ORDER`, the first value of each
    pair varying slowest; the article is "an" before "old", else "a".
    """
    out = []
    for combo in itertools.product(*(PAIRS[c] for c in SLOT_ORDER)):
        article = "an" if combo[0][0] in "aeiou" else "a"
        out.append(_phrase(article, list(zip(SLOT_ORDER, combo, strict=True))))
    return out


def experiment3_phrases() -> list[Phrase]:
    """The 3,840 phrases of experiment 3 (5! orders × 2⁵ values), sorted as the authors' file."""
    out = []
    for combo in itertools.product(*(PAIRS[c] for c in EXPERIMENT3_CATEGORIES)):
        pairs = list(zip(EXPERIMENT3_CATEGORIES, combo, strict=True))
        out.extend(_phrase("a", list(order)) for order in itertools.permutations(pairs))
    return sorted(out, key=lambda p: p.text.encode("utf-8"))


def _digest(phrases: list[Phrase]) -> str:
    """sha256 of the phrases as a text file (one per line, LF, final newline)."""
    return hashlib.sha256("".join(p.text + "\n" for p in phrases).encode("utf-8")).hexdigest()


def _labels(
    values: dict[str, str] | None = None,
    positions: dict[str, int] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    values, positions = values or {}, positions or {}
    out: dict[str, Any] = {c: values.get(c, "") for c in PAIRS}
    out.update({f"{c}_position": float(positions[c]) if c in positions else None for c in PAIRS})
    out.update({"lexicon": "", "valence": None, "valence_raw": None})
    out.update(extra)
    return out


def _word_item(word: str, stimulus_set: str, labels: dict[str, Any]) -> Item:
    return Item(
        context=word,
        word=word,
        char_start=0,
        char_end=len(word),
        setting="alone",
        stimulus_set=stimulus_set,
        labels=labels,
    )


class IntersectionalGenerator(SuiteGenerator):
    """"person" in the 4,096 + 3,840 intersectional phrases, and the valence training words alone.

    See the module docstring for the parts, settings, stimulus sets and labels.

    References
    ----------
    Omrani Sabbaghi, S., Wolfe, R. & Caliskan, A. (2023). Evaluating biased attitude associations
    of language models in an intersectional context. *AIES 2023*.
    """

    name = "intersectional"
    description = (
        "'person' in 4,096 + 3,840 intersectional phrases (Omrani Sabbaghi et al. 2023), the "
        "25 + 25 valence training words alone, and a lexicon's words alone for ValNorm"
    )
    options = (
        Option(
            name="lexicon",
            type=str,
            multiple=True,
            help="one rated lexicon (CSV path or name; Bellezza in the paper) for ValNorm by "
            "projection; its words are embedded alone",
        ),
        Option(
            name="scale",
            type=str,
            help="rating scale 'LO,HI' of the lexicon (default: known for the name, else inferred)",
        ),
        Option(
            name="duplicates",
            type=str,
            choices=("error", "first", "last", "mean"),
            help="how to treat a word listed twice in a lexicon (default: error)",
        ),
        Option(
            name="causal_bos",
            type=str,
            default="yes",
            choices=("yes", "no"),
            help="'yes': ask for the model's BOS token before every item when the model is "
            "causal (a word alone would otherwise sit at position 0); 'no': the tokenizer's own "
            "behaviour. --bos/--no-bos override both",
        ),
    )

    def build(self, **options: Any) -> Suite:
        """Build the intersectional suite; see the module docstring for items and labels."""
        if isinstance(options.get("scale"), (tuple, list)):
            options["scale"] = ",".join(str(v) for v in options["scale"])
        opts = self.parse_options(options)
        opts["lexicon"] = opts["lexicon"] or ()
        if len(opts["lexicon"]) > 1:
            raise SuiteError(
                f"the intersectional suite takes one lexicon for ValNorm; got "
                f"{list(opts['lexicon'])}: give one --lexicon"
            )
        lexicon = (
            load_lexicon(opts["lexicon"][0], scale=opts["scale"], duplicates=opts["duplicates"])
            if opts["lexicon"]
            else None
        )
        exp2, exp3 = experiment2_phrases(), experiment3_phrases()
        items: list[Item] = []
        for stimulus_set, phrases in (("experiment2", exp2), ("experiment3", exp3)):
            for p in phrases:
                start = len(p.text) - len(TARGET)
                items.append(
                    Item(
                        context=p.text,
                        word=TARGET,
                        char_start=start,
                        char_end=len(p.text),
                        setting="phrase",
                        stimulus_set=stimulus_set,
                        labels=_labels(p.values, p.positions),
                    )
                )
        for stimulus_set, words in (("pleasant", SVC_PLEASANT), ("unpleasant", SVC_UNPLEASANT)):
            items.extend(_word_item(w, stimulus_set, _labels()) for w in words)
        if lexicon is not None:
            rescaled = lexicon.rescaled("valence")
            for i, word in enumerate(lexicon.words):
                labels = _labels(
                    lexicon=lexicon.name,
                    valence=float(rescaled[i]),
                    valence_raw=float(lexicon.valence[i]),
                )
                items.append(_word_item(word, "lexicon", labels))
        parameters = {
            "source": {
                "file": f"emb/data/{DATA_FILE}",
                "reference": "shivaomrani/LLM-Bias@087a0956 src/*.py (Omrani Sabbaghi et al. 2023)",
            },
            "pairs": {c: list(v) for c, v in PAIRS.items()},
            "slot_order": list(SLOT_ORDER),
            "experiment3_categories": list(EXPERIMENT3_CATEGORIES),
            "target": TARGET,
            "svc_words": {"pleasant": list(SVC_PLEASANT), "unpleasant": list(SVC_UNPLEASANT)},
            "phrases_sha256": {"experiment2": _digest(exp2), "experiment3": _digest(exp3)},
            "lexicon": lexicon.to_dict() if lexicon is not None else None,
            # read by emb.extraction.pipeline: a BOS token before every item for causal models
            "bos": "causal" if opts["causal_bos"] == "yes" else None,
            "settings": ["phrase", "alone"],
            "counts": {
                "items": len(items),
                "experiment2": len(exp2),
                "experiment3": len(exp3),
                "pleasant": len(SVC_PLEASANT),
                "unpleasant": len(SVC_UNPLEASANT),
                "lexicon": len(lexicon) if lexicon is not None else 0,
            },
        }
        return Suite(
            name=self.name,
            items=tuple(items),
            generator=self.name,
            parameters=parameters,
            description=self.description,
        )

    def warnings(self, suite: Suite) -> tuple[str, ...]:
        """A note when no lexicon was given (no ValNorm by projection), and lexicon notes."""
        lexicon = suite.parameters.get("lexicon")
        if not lexicon:
            return (
                "no --lexicon given: the suite has no rated words, so 'emb analyze "
                "valence-subspace' cannot compute ValNorm by projection (the paper uses "
                "Bellezza: --lexicon bellezza.csv)",
            )
        return tuple(f"lexicon {lexicon['name']!r}: {note}" for note in lexicon.get("notes", []))
