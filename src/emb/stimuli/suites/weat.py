"""The ``weat`` suite: WEAT target and attribute words, bleached and alone (torch-free).

The ten tests of Caliskan, Bryson & Narayanan (2017) are package data (``emb/data/weat_tests.json``);
a user's own tests in the same layout are read with ``--test FILE``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emb import data
from emb.errors import SuiteError
from emb.files.documents import show
from emb.options import Option
from emb.stimuli.suites._common import (
    BLEACHED,
    listing,
    read_json,
    sha256,
    span_item,
    word_list,
)
from emb.stimuli.suites.core import Item, Suite
from emb.stimuli.suites.generator import SuiteGenerator

__all__ = ["WEAT_TESTS", "WeatGenerator", "WeatGroup", "WeatTest", "parse_weat_tests"]



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


_ROLE_KEYS = {"X": "target_x", "Y": "target_y", "A": "attribute_a", "B": "attribute_b"}


def parse_weat_tests(doc: Any, path: str | Path) -> tuple[WeatTest, ...]:
    """Tests from a parsed document in the ``weat_tests.json`` layout (``path`` names it in errors).

    Raises
    ------
    SuiteError
        A missing or malformed test, group or word list; repeated test ids.
    """
    tests = doc.get("tests") if isinstance(doc, dict) else None
    if not isinstance(tests, list) or not tests:
        raise SuiteError(
            f"WEAT test file {path}: $.tests must be a non-empty list of tests "
            "(the layout of weat_tests.json)"
        )
    out = [_parse_test(test, f"{path}: $.tests[{t}]") for t, test in enumerate(tests)]
    ids = [test.id for test in out]
    if len(set(ids)) != len(ids):
        raise SuiteError(
            f"WEAT test file {path} repeats test ids: {sorted({i for i in ids if ids.count(i) > 1})}"
        )
    return tuple(out)


def _parse_test(test: Any, where: str) -> WeatTest:
    """One test: its id, its four word sets (the two targets apart, the two attributes apart)
    and its name."""
    if not isinstance(test, dict) or not isinstance(test.get("id"), str) or not test["id"]:
        raise SuiteError(f"{where}.id must be a non-empty string")
    groups = [_parse_group(test.get(key), role, key, where) for role, key in _ROLE_KEYS.items()]
    for first, second in ((groups[0], groups[1]), (groups[2], groups[3])):
        both = [w for w in first.words if w in set(second.words)]
        if both:
            raise SuiteError(
                f"{where}: {listing(both)} are in both {_ROLE_KEYS[first.role]} and "
                f"{_ROLE_KEYS[second.role]}; the two sets a WEAT compares must not share "
                "words: keep each word in one of them"
            )
    if not isinstance(test.get("name", ""), str):
        raise SuiteError(f"{where}.name must be a string, got {show(test['name'])}")
    return WeatTest(id=test["id"], name=test.get("name") or test["id"], groups=tuple(groups))


def _parse_group(group: Any, role: str, key: str, where: str) -> WeatGroup:
    """One word set (``key`` of the test at ``where``): its name, words and excluded words."""
    if not isinstance(group, dict):
        raise SuiteError(f"{where}.{key} must be an object with 'name' and 'words'")
    if not isinstance(group.get("name", ""), str):
        raise SuiteError(f"{where}.{key}.name must be a string, got {show(group['name'])}")
    words = word_list(group.get("words"), f"{where}.{key}.words")
    excluded = (
        word_list(group["excluded"], f"{where}.{key}.excluded")
        if group.get("excluded")
        else []
    )
    stray = [w for w in excluded if w not in words]
    if stray:
        raise SuiteError(f"{where}.{key}.excluded lists words not in its 'words': {stray}")
    return WeatGroup(
        role=role,
        name=str(group.get("name") or key),
        words=tuple(words),
        excluded=tuple(excluded),
    )



#: The ten WEAT tests of Caliskan, Bryson & Narayanan (2017, supplementary material), words in
#: the published order; ``excluded`` lists the names they dropped in the GloVe replication
#: (WEAT3–5). WEAT3/4 use the Greenwald et al. (1998) unpleasant list with *bomb* and *evil*.
WEAT_TESTS: tuple[WeatTest, ...] = parse_weat_tests(
    data.read_json("weat_tests.json"), "emb/data/weat_tests.json"
)


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
        Option(
            name="tests",
            type=str,
            flag="--test",
            deprecated=("--tests", "--select"),
            help="test ids 'WEAT1,WEAT7' or a JSON file of tests in the weat_tests.json layout "
                 "(default: the 10 WEAT tests)",
        ),
        Option(
            name="select",
            type=str,
            multiple=True,
            flag="--select",
            help="ids of the tests to include, e.g. WEAT1 (default: all; the CLI's --test WEAT1)",
        ),
    )

    def build(self, **options: Any) -> Suite:
        """Build the WEAT suite; see the class docstring for items and labels."""
        opts = self.parse_options(options)
        tests, path = _chosen_tests(opts["tests"], list(opts["select"] or ()))
        items = _items(tests)
        parameters = {
            "tests": (
                {"source": "builtin", "reference": "Caliskan, Bryson & Narayanan 2017, supplement"}
                if path is None
                else {"source": str(path), "sha256": sha256(path)}
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


def _chosen_tests(spec: str | None, wanted: list[str]) -> tuple[tuple[WeatTest, ...], Path | None]:
    """The tests asked for (``spec``: a test file, or ids added to ``wanted``; none: the ten
    built-in ones), only those ``wanted`` when any is; and the test file, if one."""
    path: Path | None = None
    if spec is not None and (spec.lower().endswith((".json", ".yaml", ".yml"))
                             or "/" in spec or os.sep in spec or Path(spec).exists()):
        path = Path(spec)
    elif spec is not None:  # ids, as ceat's --test and emb analyze weat --test take them
        wanted += [t.strip() for t in spec.split(",") if t.strip()]
    tests = (
        parse_weat_tests(read_json(path, "WEAT test file"), path)
        if path is not None
        else WEAT_TESTS
    )
    if wanted:
        known = [t.id for t in tests]
        unknown = [s for s in wanted if s not in known]
        if unknown:
            raise SuiteError(
                f"no WEAT test(s) {', '.join(map(str, unknown))}; give --test one of "
                f"{', '.join(known)} (select= or tests= in Python)"
            )
        tests = tuple(t for t in tests if t.id in wanted)
    return tests, path


def _items(tests: Sequence[WeatTest]) -> list[Item]:
    """Every word of every test's sets, bleached then alone, test by test."""
    items = []
    for setting, prefix in (("bleached", BLEACHED), ("alone", "")):
        for test in tests:
            for group in test.groups:
                for word in group.words:
                    items.append(
                        span_item(
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
    return items
