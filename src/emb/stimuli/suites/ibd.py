"""The ``ibd`` suite: intersectional group names and attribute words for IBD and EIBD (torch-free).

The six 12-name groups and the attribute words of Guo & Caliskan (2021) are package data
(``emb/data/ibd_eibd_names_and_attributes.json``); a user's own file in the same layout is read
with ``--ibd-groups FILE``.

The layout (a JSON object):

- groups: keys ``<race>_<gender>`` (e.g. ``african_female``) with a list of names; together they
  must form a full grid of at least two races × two genders (EIBD compares each constituent
  category with the others);
- ``paper_lst_union``: the attribute words (the validation universe);
- ``<group>_bias`` (optional): the group's intersectional biases, the IBD positives;
- ``<group>_intersectional_bias`` (optional): its emergent biases, the EIBD positives;
- any other key (``_source``, ``*_common_bias``, ``insect``) is kept out of the suite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emb import data
from emb.errors import SuiteError
from emb.files.documents import show
from emb.options import Option
from emb.stimuli.suites._common import BLEACHED, listing, read_json, sha256, span_item, word_list
from emb.stimuli.suites.core import Suite
from emb.stimuli.suites.generator import SuiteGenerator

__all__ = ["IBD_DATA", "IbdData", "IbdGenerator", "parse_ibd_data"]

_GROUP = re.compile(r"^([A-Za-z]+)_([A-Za-z]+)$")
ATTRIBUTES_KEY = "paper_lst_union"
#: Readable names of the groups, races and genders (optional).
NAMES_KEY = "_names"
IBD_SUFFIX = "_bias"
EIBD_SUFFIX = "_intersectional_bias"
SETTINGS = (("alone", ""), ("bleached", BLEACHED))


@dataclass(frozen=True, kw_only=True)
class IbdData:
    """Groups, attribute words and validation labels of IBD/EIBD.

    Attributes
    ----------
    groups : dict of str to tuple of str
        Intersectional group (``<race>_<gender>``) → its names, in file order.
    races, genders : tuple of str
        The constituent categories, in order of first appearance.
    attributes : tuple of str
        The attribute words (validation universe).
    ibd : dict of str to tuple of str
        Group → its IBD positives (``<group>_bias``), for the groups that have a list.
    eibd : dict of str to tuple of str
        Group → its EIBD positives (``<group>_intersectional_bias``).
    titles : dict of str to str
        Group, race or gender → its readable name (``_names``: "African-American females"), for
        tables and figures; those without one are shown by their key.
    """

    groups: dict[str, tuple[str, ...]]
    races: tuple[str, ...]
    genders: tuple[str, ...]
    attributes: tuple[str, ...]
    ibd: dict[str, tuple[str, ...]]
    eibd: dict[str, tuple[str, ...]]
    titles: dict[str, str] = field(default_factory=dict)

    def race_gender(self, group: str) -> tuple[str, str]:
        """``(race, gender)`` of an intersectional group."""
        race, gender = _GROUP.match(group).groups()  # type: ignore[union-attr]
        return race, gender


def parse_ibd_data(doc: Any, path: str | Path) -> IbdData:
    """Groups, attributes and validation lists from a document in the layout of
    ``ibd_eibd_names_and_attributes.json`` (``path`` names it in errors).

    Raises
    ------
    SuiteError
        Not an object; no groups or an incomplete race × gender grid; an empty or repeated name;
        a name in two groups or among the attributes; no ``paper_lst_union``; a validation word
        that is not an attribute.
    """
    if not isinstance(doc, dict):
        raise SuiteError(f"IBD groups file {path}: the document must be a JSON object")
    groups = _groups(doc, path)
    races, genders = _grid(groups, path)
    owner = _name_owners(groups, path)
    attributes = _attributes(doc, path, owner)
    labels = _validation_lists(doc, path, groups, attributes)
    titles = _titles(doc, path)
    return IbdData(
        groups=groups, races=races, genders=genders, attributes=tuple(attributes),
        ibd=labels["ibd"], eibd=labels["eibd"],
        titles={str(k): v.strip() for k, v in titles.items()},
    )


def _groups(doc: dict[str, Any], path: str | Path) -> dict[str, tuple[str, ...]]:
    """The groups (keys ``<race>_<gender>``), each with its names, none repeated."""
    groups: dict[str, tuple[str, ...]] = {}
    for key, value in doc.items():
        match = _GROUP.match(key)
        if not match or match.group(2) == "bias":
            continue
        names = word_list(value, f"{path}: $.{key}")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise SuiteError(f"{path}: $.{key} lists names twice: {listing(repeated)}")
        groups[key] = tuple(names)
    return groups


def _grid(
    groups: dict[str, tuple[str, ...]], path: str | Path,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The races and genders, refused unless the groups form a full grid of at least 2 × 2."""
    races = tuple(dict.fromkeys(_GROUP.match(g).group(1) for g in groups))  # type: ignore[union-attr]
    genders = tuple(dict.fromkeys(_GROUP.match(g).group(2) for g in groups))  # type: ignore[union-attr]
    if len(races) < 2 or len(genders) < 2:
        raise SuiteError(
            f"IBD groups file {path} defines the groups {listing(sorted(groups))}: IBD and EIBD need at "
            "least two races × two genders, each a key '<race>_<gender>' with a list of names"
        )
    absent = [f"{r}_{s}" for r in races for s in genders if f"{r}_{s}" not in groups]
    if absent:
        raise SuiteError(
            f"IBD groups file {path}: the groups must form a full race × gender grid "
            f"({list(races)} × {list(genders)}); missing {absent}"
        )
    return races, genders


def _name_owners(groups: dict[str, tuple[str, ...]], path: str | Path) -> dict[str, str]:
    """Name → its group, refused when a name is in two groups."""
    owner: dict[str, str] = {}
    for group, names in groups.items():
        for name in names:
            if name in owner:
                raise SuiteError(f"{path}: the name {show(name)} is in both {owner[name]} and {group}")
            owner[name] = group
    return owner


def _attributes(doc: dict[str, Any], path: str | Path, owner: dict[str, str]) -> list[str]:
    """The attribute words (``paper_lst_union``), none repeated and none a name."""
    if ATTRIBUTES_KEY not in doc:
        raise SuiteError(
            f"IBD groups file {path} has no {ATTRIBUTES_KEY!r}: the list of attribute words "
            "(the validation universe)"
        )
    attributes = word_list(doc[ATTRIBUTES_KEY], f"{path}: $.{ATTRIBUTES_KEY}")
    repeated = sorted({w for w in attributes if attributes.count(w) > 1})
    if repeated:
        raise SuiteError(f"{path}: $.{ATTRIBUTES_KEY} lists words twice: {listing(repeated)}")
    clash = [w for w in attributes if w in owner]
    if clash:
        raise SuiteError(f"{path}: {listing(clash)} are both names and attribute words; keep them apart")
    return attributes


def _validation_lists(
    doc: dict[str, Any], path: str | Path, groups: dict[str, tuple[str, ...]],
    attributes: list[str],
) -> dict[str, dict[str, tuple[str, ...]]]:
    """Per method (``ibd``, ``eibd``), group → its validation words, each an attribute word."""
    universe = set(attributes)
    labels: dict[str, dict[str, tuple[str, ...]]] = {"ibd": {}, "eibd": {}}
    for method, suffix in (("ibd", IBD_SUFFIX), ("eibd", EIBD_SUFFIX)):
        for group in groups:
            key = group + suffix
            if key not in doc:
                continue
            words = word_list(doc[key], f"{path}: $.{key}")
            stray = [w for w in words if w not in universe]
            if stray:
                raise SuiteError(
                    f"{path}: $.{key} lists {listing(stray)}, which are not in $.{ATTRIBUTES_KEY}; a "
                    "validation word must be one of the attribute words"
                )
            labels[method][group] = tuple(dict.fromkeys(words))
    return labels


def _titles(doc: dict[str, Any], path: str | Path) -> dict[Any, Any]:
    """The readable names (``_names``), refused unless each is a non-empty string."""
    titles = doc.get(NAMES_KEY, {})
    if not isinstance(titles, dict) or not all(
        isinstance(v, str) and v.strip() for v in titles.values()
    ):
        raise SuiteError(f"{path}: $.{NAMES_KEY} must map groups, races and genders to readable "
                         "names (non-empty strings)")
    return titles


#: The groups and validation words of Guo & Caliskan (2021) (CEAT ``code/ibd.py``).
IBD_DATA: IbdData = parse_ibd_data(
    data.read_json("ibd_eibd_names_and_attributes.json"), "emb/data/ibd_eibd_names_and_attributes.json"
)


class IbdGenerator(SuiteGenerator):
    """Names of intersectional groups and attribute words, in the ``alone`` and ``bleached`` settings.

    ``alone`` is the word by itself (the paper's IBD ran on static vectors: the closest contextual
    analogue); ``bleached`` is "This is WORD". Labels: ``role`` (``name`` | ``attribute``),
    ``group``, ``race``, ``gender`` (names; "" for attributes), ``ibd_of`` and ``eibd_of``
    (attributes: the groups whose IBD / EIBD validation list holds the word, ``|``-separated).
    ``stimulus_set`` is the group of a name, ``attribute`` for an attribute word. The suite's
    parameters hold the whole definition (groups, attributes, validation lists), so an analysis
    knows what a store with missing words lacks.

    References
    ----------
    Guo, W. & Caliskan, A. (2021). Detecting Emergent Intersectional Biases: Contextualized Word
    Embeddings Contain a Distribution of Human-like Biases. AIES '21, 122–133.
    Ghavami, N. & Peplau, L. A. (2013). An intersectional analysis of gender and ethnic
    stereotypes. Psychology of Women Quarterly 37(1), 113–127.
    """

    name = "ibd"
    description = (
        "IBD/EIBD: six intersectional groups' names and 98 attribute words (Guo & Caliskan 2021), "
        "alone and bleached"
    )
    options = (
        Option(
            name="ibd_groups",
            type=Path,
            help="JSON file of groups and attributes in the layout of "
            "ibd_eibd_names_and_attributes.json (default: Guo & Caliskan's)",
        ),
    )

    def build(self, **options: Any) -> Suite:
        """Build the IBD suite; see the class docstring for items and labels."""
        opts = self.parse_options(options)
        path: Path | None = opts["ibd_groups"]
        spec = parse_ibd_data(read_json(path, "IBD groups file"), path) if path else IBD_DATA
        items = []
        for setting, prefix in SETTINGS:
            for group, names in spec.groups.items():
                race, gender = spec.race_gender(group)
                for name in names:
                    items.append(span_item(
                        prefix, name, setting=setting, stimulus_set=group,
                        labels={"role": "name", "group": group, "race": race, "gender": gender,
                                "ibd_of": "", "eibd_of": ""},
                    ))
            for word in spec.attributes:
                items.append(span_item(
                    prefix, word, setting=setting, stimulus_set="attribute",
                    labels={
                        "role": "attribute", "group": "", "race": "", "gender": "",
                        "ibd_of": "|".join(g for g, ws in spec.ibd.items() if word in ws),
                        "eibd_of": "|".join(g for g, ws in spec.eibd.items() if word in ws),
                    },
                ))
        parameters = {
            "groups_file": (
                {"source": "builtin", "reference": "Guo & Caliskan 2021 (CEAT code/ibd.py)"}
                if path is None else {"source": str(path), "sha256": sha256(path)}
            ),
            "groups": {g: list(n) for g, n in spec.groups.items()},
            "races": list(spec.races),
            "genders": list(spec.genders),
            "titles": dict(spec.titles),
            "attributes": list(spec.attributes),
            "validation": {"ibd": {g: list(w) for g, w in spec.ibd.items()},
                           "eibd": {g: list(w) for g, w in spec.eibd.items()}},
            "settings": [s for s, _ in SETTINGS],
            "counts": {"items": len(items), "groups": len(spec.groups),
                       "attributes": len(spec.attributes)},
        }
        return Suite(
            name=self.name, items=tuple(items), generator=self.name, parameters=parameters,
            description=self.description,
        )

    def warnings(self, suite: Suite) -> tuple[str, ...]:
        """Groups without validation lists (IBD/EIBD cannot be scored for them)."""
        validation = suite.parameters.get("validation", {})
        groups = list(suite.parameters.get("groups", {}))
        lines = []
        for method in ("ibd", "eibd"):
            without = [g for g in groups if g not in validation.get(method, {})]
            if without:
                lines.append(f"no {method.upper()} validation list for {listing(without)}")
        return tuple(lines)
