"""Which tests a WEAT-style analysis runs: the store suite's own tests, test files and the user's
own sets, resolved once for every family that reads (X, Y, A, B) tests (``weat`` and the metrics of
:mod:`emb.analyses.peers`): empty suite tests dropped with a warning, one-word target sets and
ill-formed sets refused, settings checked."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from emb.analyses._analysis import Option
from emb.analyses._select import label_mask, refuse_repeats, select_positions, settings_present
from emb.analyses.wordsets.tests_file import (
    ROLES,
    TestSpec,
    custom_test,
    parse_tests,
    split_tests,
    suite_tests,
    word_set_problems,
)
from emb.errors import AnalysisError, EmbWarning
from emb.text import cut, names, unknown_names

__all__ = ["MIN_TARGET_WORDS", "TEST_OPTIONS", "dropped_text", "gather_test", "resolve_tests"]


#: Fewest words a target set (X, Y) may have: d measures the distance between the sets' mean
#: associations in units of the standard deviation of all their words' associations, and with
#: one word per set that deviation is fixed by the two words' own difference, so |d| = sqrt(2)
#: (ddof 1; 2 with ddof 0) whatever the vectors, and its bootstrap CI has zero width.
MIN_TARGET_WORDS = 2


def _check_target_sizes(test: TestSpec) -> None:
    """Refuse a test with fewer than :data:`MIN_TARGET_WORDS` words in X or Y."""
    small = [r for r in ("X", "Y") if len(test.words[r]) < MIN_TARGET_WORDS]
    if small:
        found = " and ".join(f"{r} has {len(test.words[r])} ({names(test.words[r])})" for r in small)
        raise AnalysisError(
            f"WEAT test {cut(repr(test.name), 80)}: {found}; a WEAT needs at least "
            f"{MIN_TARGET_WORDS} words in each target set X and Y: d divides the difference of "
            "the sets' mean associations by the standard deviation over X ∪ Y, which one word per "
            "set fixes (|d| = sqrt(2) whatever the vectors, a zero-width CI). Add target words"
        )


def dropped_text(dropped: Mapping[str, str]) -> str:
    """``'WEAT10' (no A words in this suite); …`` (plain names, never a numpy repr)."""
    return "; ".join(f"{name!r} ({why})" for name, why in dropped.items())


def resolve_tests(
    ds: xr.Dataset,
    *,
    tests: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Mapping[str, Any] | None,
    x: Sequence[str] | None,
    y: Sequence[str] | None,
    a: Sequence[str] | None,
    b: Sequence[str] | None,
    settings: str | Sequence[str] | None,
    include_excluded: bool,
) -> tuple[list[TestSpec], dict[str, str], list[str]]:
    """The tests to run, the suite tests dropped (name → why) and the settings chosen.

    Raises
    ------
    AnalysisError
        Every test is empty, a name is defined twice, a user's set is ill-formed or has one
        target word, or a setting is not in ``ds``.
    """
    test_list, built_in = _listed_tests(ds, tests=tests, x=x, y=y, a=a, b=b,
                                        include_excluded=include_excluded)
    # a test file's or custom test's sets are the user's: refused below
    dropped = _too_small(ds, built_in, include_excluded=include_excluded)
    if dropped:
        if len(dropped) == len(test_list):
            raise AnalysisError(
                f"every WEAT test has an empty (or one-word target) set in this suite "
                f"({dropped_text(dropped)}); "
                "nothing to compute: extract a suite whose store has these words, or give a test "
                "file (--test FILE) with words the store has")
        warnings.warn(f"WEAT tests dropped, the others go on: {dropped_text(dropped)}",
                      EmbWarning, stacklevel=3)
        test_list = [t for t in test_list if str(t.name) not in dropped]
        built_in = [t for t in built_in if str(t.name) not in dropped]
    for test in test_list:
        problems = word_set_problems(test)
        if not problems:
            continue
        text = (f"WEAT test {test.name!r}: {'; '.join(problems)} (a word in both sets of a pair "
                "cancels out of the statistic, a word listed twice counts twice)")
        if any(test is t for t in built_in):
            warnings.warn(f"{text}; the suite defines it so", EmbWarning, stacklevel=3)
        else:
            raise AnalysisError(f"{text}; list each word once, in one set of each pair")

    for test in test_list:
        _check_target_sizes(test)

    return test_list, dropped, _chosen_settings(ds, settings)


def _listed_tests(ds: xr.Dataset, *, tests: Any, x: Sequence[str] | None, y: Sequence[str] | None,
                  a: Sequence[str] | None, b: Sequence[str] | None, include_excluded: bool,
                  ) -> tuple[list[TestSpec], list[TestSpec]]:
    """Every test asked for (the user's four sets; or the suite's tests by name, test files and
    mappings), and those of them that are the store suite's own (their overlaps are warned
    about, not refused)."""
    custom = custom_test(x, y, a, b, tests)
    if custom is not None:
        return [custom], []
    built_in: list[TestSpec] = []
    suite_names, definitions = split_tests(tests)
    test_list = [t for d in definitions for t in parse_tests(d, ds)]
    if suite_names or not definitions:
        built_in = suite_tests(ds, suite_names or None, include_excluded)
        test_list = built_in + test_list
    seen = [t.name for t in test_list]
    twice = sorted({n for n in seen if seen.count(n) > 1})
    if twice:
        raise AnalysisError(f"test name(s) {names(twice)} are defined twice; give each test its own name")
    return test_list, built_in


def _too_small(ds: xr.Dataset, built_in: list[TestSpec], *, include_excluded: bool) -> dict[str, str]:
    """The suite's own tests with an empty set or a one-word target set in this store, and why."""
    dropped: dict[str, str] = {}
    for test in built_in:
        empty = [r for r in ROLES if not test.words[r]]
        few = [r for r in ("X", "Y") if 0 < len(test.words[r]) < MIN_TARGET_WORDS]
        if empty:
            dropped[str(test.name)] = (
                f"no {', '.join(empty)} words in this suite"
                + (" after removing the excluded ones" if not include_excluded
                   and "excluded" in ds.variables else ""))
        elif few:
            dropped[str(test.name)] = (
                " and ".join(f"{len(test.words[r])} {r} word ({cut(', '.join(test.words[r]), 60)})"
                            for r in few)
                + f" in this suite, and d needs at least {MIN_TARGET_WORDS} per target set")
    return dropped


def _chosen_settings(ds: xr.Dataset, settings: str | Sequence[str] | None) -> list[str]:
    """The settings asked for (checked against the suite's), by default every one it has."""
    present = settings_present(ds)
    if settings is None:
        return present
    chosen = [settings] if isinstance(settings, str) else [str(s) for s in settings]
    if not chosen:
        raise AnalysisError("settings is empty; give at least one or leave it out")
    refuse_repeats("settings", chosen)
    unknown = [s for s in chosen if not label_mask(ds, setting=s).any()]
    if unknown:
        raise AnalysisError(unknown_names("setting", unknown, present, "this suite"))
    return chosen


def gather_test(ds: xr.Dataset, test: TestSpec, settings: list[str]) -> xr.DataArray:
    """The test's vectors, its items X, Y, A, B in that order, per setting: ``embedding``
    (setting, item, layer, pooling, feature), lazy when ``ds`` is.

    The items of every role and setting are found first (:func:`select_positions`, with its
    checks) and gathered by one indexing of the embedding: one small task graph per test, not
    one selection and two concatenations per role and setting."""
    positions = np.stack([
        np.concatenate([select_positions(ds, test.words[role], setting=setting,
                                         **test.filters.get(role, {})) for role in ROLES])
        for setting in settings])
    emb = ds.embedding.reset_coords(drop=True).drop_vars("item", errors="ignore")
    out = emb.isel(item=xr.DataArray(positions, dims=("setting", "item")))
    return out.transpose("setting", "item", ...).assign_coords(setting=settings)


#: The options that pick a WEAT-style run's tests, declared once for every family that reads them.
TEST_OPTIONS = (
    Option(name="tests", multiple=True, deprecated=("--tests",), metavar="NAME|FILE",
           help="a test of the suite (e.g. WEAT1), or a YAML/JSON file defining tests by "
                "X/Y/A/B word lists or labels (default: every test of the suite)"),
    Option(name="x", multiple=True, flag="--x", help="your own target words X (with --y --a --b)"),
    Option(name="y", multiple=True, flag="--y", help="your own target words Y"),
    Option(name="a", multiple=True, flag="--a", help="your own attribute words A"),
    Option(name="b", multiple=True, flag="--b", help="your own attribute words B"),
    Option(name="settings", multiple=True, help="contextual setting (default: every setting)"),
)
