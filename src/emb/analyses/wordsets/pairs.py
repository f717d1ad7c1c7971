"""The pairs of target words a paired metric (RIPA) relates, from a test's definition."""

from __future__ import annotations

import numpy as np

from emb.analyses.wordsets.tests_file import TestSpec

__all__ = ["target_pairs"]


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
