"""Which names and pairs an ``ibd`` analysis compares: read from the suite's labels and parameters.

The store's ``ibd`` suite says which names belong to which group (labels ``role``, ``group``,
``race``, ``gender``), which attribute words are each group's validated biases (``ibd_of``,
``eibd_of``) and, in its parameters, the whole definition (so that names a static store lacks are
known and reported). :func:`design` turns that into the name sets (intersectional groups, races,
genders), the comparisons of each target group and the validation labels.
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from emb import data
from emb.analyses._select import item_values, refuse_repeats, settings_present, unique_in_order
from emb.errors import AnalysisError, EmbWarning
from emb.text import names as name_list

__all__ = ["DEFAULT_GROUPS", "Design", "METHODS", "design", "readable_names", "title_of"]

METHODS = ("ibd", "eibd")
#: The paper's targets (the validation data covers every group; these are the ones it reports).
DEFAULT_GROUPS = ("african_female", "mexican_female")
LABELS = ("role", "group", "race", "gender", "ibd_of", "eibd_of")


@dataclass(frozen=True, kw_only=True)
class Design:
    settings: list[str]
    groups: dict[str, list[str]]  # every group of the suite -> its names present in the store
    total: dict[str, list[str]]  # every group -> its names in the suite's definition
    race: dict[str, str]
    gender: dict[str, str]
    attributes: list[str]  # present
    attributes_total: list[str]
    targets: list[str]  # evaluated groups (targets, then the contrast)
    roles: list[str]
    sets: dict[str, list[str]]  # name set (group, race or gender) -> names present
    pairs: list[tuple[str, str, str]]  # (first set, second set, kind)
    ibd_pairs: dict[str, list[int]]  # the intersectional comparisons of IBD
    eibd_pairs: dict[str, list[int]]  # those of EIBD (the same, but in reference mode)
    constituent_pairs: dict[str, list[int]]
    labels: np.ndarray  # (group, method, attribute) bool
    notes: list[str]


def _parameters(ds: xr.Dataset) -> dict[str, Any]:
    suite = ds.attrs.get("suite", {})
    if isinstance(suite, str):
        try:
            suite = json.loads(suite)
        except json.JSONDecodeError:
            suite = {}
    params = suite.get("parameters", {}) if isinstance(suite, Mapping) else {}
    return dict(params) if isinstance(params, Mapping) else {}


def readable_names(ds: xr.Dataset) -> dict[str, str]:
    """Each group's, race's and gender's readable name ("African-American females"), from one
    source: the suite's definition (``_names`` of the groups file, carried in the store's suite
    parameters as ``titles``); for a store extracted before the definitions had names, the
    built-in file's when the suite used it (or says nothing of its file)."""
    params = _parameters(ds)
    own = params.get("titles")
    if isinstance(own, Mapping) and own:
        return {str(k): str(v) for k, v in own.items()}
    source = params.get("groups_file")
    if isinstance(source, Mapping) and source.get("source") not in (None, "builtin"):
        return {}
    builtin = data.read_json("ibd_eibd_names_and_attributes.json").get("_names") or {}
    return {str(k): str(v) for k, v in builtin.items()}


def title_of(titles: Mapping[str, str], key: str) -> str:
    """``key``'s readable name, else the key with spaces (``latina_female`` → "latina female").

    Examples
    --------
    >>> title_of({"african_female": "African-American females"}, "african_female")
    'African-American females'
    >>> title_of({}, "latina_female")
    'latina female'
    """
    return str(titles.get(key) or str(key).replace("_", " "))


def design(
    ds: xr.Dataset,
    *,
    groups: Sequence[str] | None,
    contrast: str | None,
    settings: Sequence[str] | None,
    reference: bool,
) -> Design:
    """The name sets, comparisons and validation labels of an ``ibd`` analysis, in named stages:
    the settings compared, the suite's groups and their names, the attribute words, the target
    groups (and the contrast), the comparisons, the validation labels.

    Raises
    ------
    AnalysisError
        Not an ``ibd`` suite; unknown settings, groups or contrast; no target with names; a
        target with nothing to compare with.
    """
    missing_labels = [k for k in LABELS if k not in ds.variables]
    if missing_labels:
        raise AnalysisError(
            f"this Dataset lacks the labels {missing_labels}: it is not an 'ibd' suite; extract "
            "it with 'emb extract --model M --suite ibd --store S'"
        )
    chosen = _settings(settings_present(ds), settings)
    col = {k: item_values(ds, k).astype(str) for k in ("word", "setting", *LABELS)}
    params = _parameters(ds)
    notes: list[str] = []
    words_where = functools.partial(_words_in_every_setting, col, chosen, notes)
    is_name, is_attr = col["role"] == "name", col["role"] == "attribute"
    total, race, gender = _groups(col, params, is_name)
    names = {g: words_where(is_name & (col["group"] == g)) for g in total}
    attributes = words_where(is_attr)
    attributes_total = list(params.get("attributes", [])) or attributes
    if len(attributes) < 2:
        raise AnalysisError(
            f"{len(attributes)} attribute words have vectors in this store; IBD needs the "
            "attribute words of the 'ibd' suite"
        )
    empty = [g for g in total if not names[g]]
    if empty:
        message = (
            f"groups with no name in the store are left out of every comparison: {empty} "
            f"(names missing: {sum(len(total[g]) for g in empty)})"
        )
        warnings.warn(message, EmbWarning, stacklevel=3)
        notes.append(message)
    live = [g for g in total if names[g]]
    validation = params.get("validation") or {}
    validated = {
        m: set(validation.get(m, {})) or {v for x in col[f"{m}_of"][is_attr] for v in x.split("|") if v}
        for m in METHODS
    }
    targets, roles = _targets(total, live, validated, groups=groups, contrast=contrast, notes=notes)
    sets, pairs, ibd_pairs, eibd_pairs, constituent_pairs = _comparisons(
        targets, live, names, race, gender, reference=reference, notes=notes)
    return Design(
        settings=chosen, groups=names, total=total, race=race, gender=gender,
        attributes=attributes, attributes_total=attributes_total, targets=targets, roles=roles,
        sets=sets, pairs=pairs, ibd_pairs=ibd_pairs, eibd_pairs=eibd_pairs,
        constituent_pairs=constituent_pairs,
        labels=_labels(col, chosen[0], is_attr, targets, attributes), notes=notes,
    )


def _settings(present: list[str], settings: Sequence[str] | None) -> list[str]:
    """The settings compared: ``settings`` checked against those ``present``, by default
    ``alone`` and ``bleached`` where the suite has them (else all)."""
    if settings is None:
        return [s for s in present if s in ("alone", "bleached")] or present
    chosen = [settings] if isinstance(settings, str) else [str(s) for s in settings]
    if not chosen:
        raise AnalysisError("settings is empty; give at least one or leave it out")
    refuse_repeats("settings", chosen)
    unknown = [s for s in chosen if s not in present]
    if unknown:
        raise AnalysisError(f"settings {unknown} are not in this suite; it has {present}")
    return chosen


def _words_in_every_setting(col: Mapping[str, np.ndarray], chosen: list[str], notes: list[str],
                            mask: np.ndarray) -> list[str]:
    """The words of ``mask`` that every chosen setting has, in order; a note names the others."""
    per = [set(col["word"][mask & (col["setting"] == s)]) for s in chosen]
    common = set.intersection(*per)
    uneven = set.union(*per) - common
    if uneven:
        notes.append(f"words not in every setting, left out: {sorted(uneven)[:10]}")
    return [w for w in unique_in_order(col["word"][mask]) if w in common]


def _groups(col: Mapping[str, np.ndarray], params: Mapping[str, Any], is_name: np.ndarray,
            ) -> tuple[dict[str, list[str]], dict[str, str], dict[str, str]]:
    """Every group of the suite with its names as defined (the suite's parameters, else its
    items), and each group's race and gender (its items' labels, else its key's two parts)."""
    total = {g: list(v) for g, v in params.get("groups", {}).items()} or {}
    for g in unique_in_order(col["group"][is_name]):
        total.setdefault(g, unique_in_order(col["word"][is_name & (col["group"] == g)]))
    race, gender = {}, {}
    for g in total:
        mask = is_name & (col["group"] == g)
        if mask.any():
            race[g], gender[g] = str(col["race"][mask][0]), str(col["gender"][mask][0])
        else:
            race[g], gender[g] = g.split("_", 1) if "_" in g else (g, "")
    return total, race, gender


def _targets(total: Mapping[str, list[str]], live: list[str], validated: Mapping[str, set[str]], *,
             groups: Sequence[str] | None, contrast: str | None, notes: list[str],
             ) -> tuple[list[str], list[str]]:
    """The target groups (those asked for, or the defaults, with names and a validation list)
    and each one's role (``target``, or ``contrast`` for the contrast group appended)."""
    wanted = _wanted(total, validated, groups=groups, contrast=contrast)
    explicit = groups is not None
    unvalidated = [g for g in wanted if not all(g in validated[m] for m in METHODS)]
    if unvalidated and explicit:
        raise AnalysisError(
            f"groups {unvalidated} have no IBD/EIBD validation list in this suite; the ROC "
            "threshold needs one (<group>_bias and <group>_intersectional_bias)"
        )
    targets = [g for g in wanted if g in live and g not in unvalidated]
    dropped = [g for g in wanted if g not in targets]
    if dropped:
        notes.append(f"target groups left out (no names with vectors, or no validation list): "
                     f"{dropped}")
    if not targets:
        raise AnalysisError(
            f"none of the groups {wanted} has a name in this store (and a validation list); "
            f"the groups with names are {live}"
        )
    roles = ["target"] * len(targets)
    if contrast is None:
        return targets, roles
    return _with_contrast(contrast, total, live, validated, wanted, targets, roles, notes)


def _wanted(total: Mapping[str, list[str]], validated: Mapping[str, set[str]], *,
            groups: Sequence[str] | None, contrast: str | None) -> list[str]:
    """The groups asked for (checked), or by default the paper's (else every validated one)
    but the contrast."""
    if groups is None:
        wanted = [g for g in DEFAULT_GROUPS if g in total] or sorted(validated["ibd"])
        return [g for g in wanted if g != contrast]  # the contrast is evaluated as such
    wanted = [groups] if isinstance(groups, str) else [str(g) for g in groups]
    unknown = [g for g in wanted if g not in total]
    if unknown:
        raise AnalysisError(f"groups {unknown} are not in this suite; it has {list(total)}")
    refuse_repeats("groups", wanted)
    return wanted


def _with_contrast(contrast: str, total: Mapping[str, list[str]], live: list[str],
                   validated: Mapping[str, set[str]], wanted: list[str], targets: list[str],
                   roles: list[str], notes: list[str]) -> tuple[list[str], list[str]]:
    """The targets and roles with the contrast group appended (checked; a note where it has no
    names or no validation list)."""
    if contrast not in total:
        raise AnalysisError(f"contrast {contrast!r} is not a group of this suite: {list(total)}")
    if contrast in wanted:
        raise AnalysisError(
            f"the contrast group {contrast!r} is also a target group ({name_list(wanted)}): the "
            "exported CEAT tests would compare it with itself (X = Y, and no words in A or B, "
            "as words detected for both groups are left out of both); give another "
            "--contrast (the default is european_male), leave that group out of --group, or "
            "--contrast none"
        )
    if contrast not in targets:
        if contrast in live and all(contrast in validated[m] for m in METHODS):
            targets.append(contrast)
            roles.append("contrast")
        else:
            notes.append(f"contrast {contrast!r} has no names (or no validation list): "
                         "no CEAT tests can be exported")
    return targets, roles


def _comparisons(targets: list[str], live: list[str], names: Mapping[str, list[str]],
                 race: Mapping[str, str], gender: Mapping[str, str], *, reference: bool,
                 notes: list[str]) -> tuple[dict[str, list[str]], list[tuple[str, str, str]],
                                            dict[str, list[int]], dict[str, list[int]],
                                            dict[str, list[int]]]:
    """The name sets (each group, race and gender), the pairs of sets compared, and per target
    the indices of its IBD, EIBD (intersectional) and constituent (race, gender) pairs."""
    races = unique_in_order([race[g] for g in live])
    genders = unique_in_order([gender[g] for g in live])
    sets = _name_sets(live, names, race, gender, races, genders)
    pairs: list[tuple[str, str, str]] = []

    def pair(first: str, second: str, kind: str) -> int:
        key = (first, second, kind)
        if key not in pairs:
            pairs.append(key)
        return pairs.index(key)

    ibd_pairs, eibd_pairs, constituent_pairs = {}, {}, {}
    for g in targets:
        others = [o for o in live if o != g]
        eibd_pairs[g] = [pair(g, o, "intersectional") for o in others]
        ibd_pairs[g] = eibd_pairs[g]
        if reference and g == "mexican_female" and "african_male" in others:
            # the authors' IBD block compared Latina females with European males twice and never
            # with African-American males (its fifth column, 'aflm', reads 'lfem'); their EIBD
            # block reads all five columns
            ibd_pairs[g] = [p for p, o in zip(eibd_pairs[g], others, strict=True)
                            if o != "african_male"]
            notes.append("reference: mexican_female's IBD leaves out african_male (the authors' "
                         "IBD code used its european_male column twice; their EIBD uses all)")
        constituent_pairs[g] = [pair(race[g], r, "race") for r in races if r != race[g]] + [
            pair(gender[g], s, "gender") for s in genders if s != gender[g]
        ]
        if not ibd_pairs[g] or not constituent_pairs[g]:
            raise AnalysisError(
                f"group {g!r} has nothing to be compared with in this store (groups with names: "
                f"{live}); IBD and EIBD need at least two races and two genders with names"
            )
    return sets, pairs, ibd_pairs, eibd_pairs, constituent_pairs


def _name_sets(live: list[str], names: Mapping[str, list[str]], race: Mapping[str, str],
               gender: Mapping[str, str], races: list[str], genders: list[str]) -> dict[str, list[str]]:
    """Each group's names, then each race's and each gender's (its groups' names together)."""
    sets: dict[str, list[str]] = {g: names[g] for g in live}
    for r in races:
        sets[r] = [n for g in live if race[g] == r for n in names[g]]
    for s in genders:
        sets[s] = [n for g in live if gender[g] == s for n in names[g]]
    return sets


def _labels(col: Mapping[str, np.ndarray], setting: str, is_attr: np.ndarray, targets: list[str],
            attributes: list[str]) -> np.ndarray:
    """(target, method, attribute): whether the suite's validation lists give the attribute word
    to the target group, for each method (read from the items of one ``setting``)."""
    labels = np.zeros((len(targets), len(METHODS), len(attributes)), dtype=bool)
    attr_index = {w: i for i, w in enumerate(attributes)}
    first_setting = col["setting"] == setting
    for method_i, m in enumerate(METHODS):
        for word, of in zip(col["word"][is_attr & first_setting], col[f"{m}_of"][is_attr & first_setting],
                            strict=True):
            if word not in attr_index:
                continue
            owners = set(of.split("|"))
            for group_i, g in enumerate(targets):
                labels[group_i, method_i, attr_index[word]] = g in owners
    return labels
