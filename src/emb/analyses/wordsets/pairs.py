"""The pairs of target words a paired metric (RIPA) relates: from a test's definition, or given.

How X and Y are paired is a choice, not a fact, for sets that are not pairs by nature (flowers
and insects): RIPA's relation vectors, and so its value, depend on it. The packaged tests pair by
position in Caliskan et al.'s lists; a pairs file (``--pairs FILE``) states the pairs a study
means (male/female names matched by frequency, say)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from emb.analyses.wordsets.tests_file import TestSpec

__all__ = ["given_pairs", "pair_words", "target_pairs"]


def _defined(test: TestSpec) -> tuple[list[str], list[str]] | None:
    """X's and Y's word lists as the packaged WEAT test ``test.name`` defines them (their order
    pairs them), when the test's words are drawn from them; None for other tests."""
    from emb import data

    for spec in data.read_json("weat_tests.json")["tests"]:
        if spec.get("id") == test.name:
            xs, ys = list(spec["target_x"]["words"]), list(spec["target_y"]["words"])
            if set(test.words["X"]) <= set(xs) and set(test.words["Y"]) <= set(ys):
                return xs, ys
    return None


def target_pairs(test: TestSpec, method: str = "default") -> np.ndarray:
    """RIPA's pairs (index in X, index in Y). Default: the i-th words of a packaged test's X and
    Y lists (Caliskan et al.'s order), a pair kept only when both of its words are in the store (a
    missing word drops its pair, never shifts the others); the lists of other tests (files, your
    own) are their definitions. ``reference`` (WEFE): the i-th of the words *found*, up to the
    shorter set."""
    found_x, found_y = test.words["X"], test.words["Y"]
    defined = None if method == "reference" else _defined(test)
    if defined is None:
        k = min(len(found_x), len(found_y))
        return np.stack([np.arange(k), np.arange(k)], axis=1).reshape(-1, 2)
    pos_x = {w: i for i, w in enumerate(found_x)}
    pos_y = {w: i for i, w in enumerate(found_y)}
    pairs = [(pos_x[wx], pos_y[wy]) for wx, wy in zip(*defined, strict=False)
             if wx in pos_x and wy in pos_y]
    return np.asarray(pairs, dtype=np.intp).reshape(-1, 2)


def given_pairs(test: TestSpec, pairs: Sequence[Any]) -> tuple[np.ndarray, list[str]]:
    """The pairs of a pairs file (:func:`emb._pair_files.read_target_pairs`) that belong to
    ``test`` (its name, or no name), as indices into X and Y, and the ones left out with why (a
    word not among the test's words in the store)."""
    pos_x = {w: i for i, w in enumerate(test.words["X"])}
    pos_y = {w: i for i, w in enumerate(test.words["Y"])}
    kept, left_out = [], []
    for pair in pairs:
        if pair.test not in (None, test.name):
            continue
        missing = [f"{word!r} is not among {role}'s words in the store"
                   for role, word, pos in (("X", pair.x, pos_x), ("Y", pair.y, pos_y))
                   if word not in pos]
        if missing:
            left_out.append(f"{pair.x}–{pair.y} (line {pair.line}: {'; '.join(missing)})")
        else:
            kept.append((pos_x[pair.x], pos_y[pair.y]))
    return np.asarray(kept, dtype=np.intp).reshape(-1, 2), left_out


def pair_words(test: TestSpec, pairs: np.ndarray) -> list[list[str]]:
    """The words of ``pairs`` (indices into X and Y), ``[[x, y], …]``."""
    return [[test.words["X"][int(i)], test.words["Y"][int(j)]] for i, j in np.asarray(pairs).reshape(-1, 2)]
