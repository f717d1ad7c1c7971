"""The example ``ceat`` suite: a test with a planted effect and one without, over sampled contexts
(the record's ``example``, the contract test, the ceat tests)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._examples import VAL, suite_dataset

__all__ = ["ceat_dataset"]

def ceat_dataset(
    *, n_stim: tuple[int, int, int, int] = (5, 5, 4, 4), contexts: int | Sequence[int] = 30,
    n_layers: int = 3, d: int = 16, poolings: Sequence[str] = ("last", "mean"), effect: float = 1.0,
    spread: float = 0.6, seed: int = 0, second_test: bool = True,
) -> xr.Dataset:
    """A ``ceat`` suite: test T1 with X/A stimuli at ``+effect·e_VAL``, Y/B at ``−effect·e_VAL``
    (plus a per-stimulus offset and per-context noise of SD ``spread``) growing with the layer, and
    T2 (same attributes, other targets, no effect). ``contexts``: per stimulus (an int or a list
    over the stimuli X, Y, A, B in order)."""
    rng = np.random.default_rng(seed)
    roles = [("X", "x"), ("Y", "y"), ("A", "pleasant"), ("B", "unpleasant")]
    stimuli = []
    for (role, prefix), n in zip(roles, n_stim, strict=True):
        stimuli += [(f"{prefix}{i}", role) for i in range(n)]
    counts = [contexts] * len(stimuli) if isinstance(contexts, int) else list(contexts)
    rows = []
    for (word, role), n in zip(stimuli, counts, strict=True):
        tests, roles_ = ["T1"], [role]
        if second_test and role in ("A", "B"):
            tests, roles_ = ["T1", "T2"], [role, role]
        for k in range(n):
            rows.append({"word": word, "stimulus": word, "tests": "|".join(tests),
                         "roles": "|".join(roles_), "groups": "|".join(r.lower() for r in roles_),
                         "ctx": k})
    if second_test:
        for i in range(n_stim[0]):
            for role, prefix in (("X", "n"), ("Y", "m")):
                for k in range(counts[0]):
                    rows.append({"word": f"{prefix}{i}", "stimulus": f"{prefix}{i}", "tests": "T2",
                                 "roles": role, "groups": role.lower(), "ctx": k})
    items = pd.DataFrame(rows)
    n = len(items)
    sign = items["roles"].str[0].map({"X": 1.0, "Y": -1.0, "A": 1.0, "B": -1.0}).to_numpy()
    sign = np.where(items["tests"] == "T2", 0.0, sign)
    sign = np.where(items["roles"].str.startswith(("A", "B")),
                    items["roles"].str[0].map({"A": 1.0, "B": -1.0}).to_numpy(), sign)
    offsets = {w: rng.normal(0, 0.5, d) for w in items["stimulus"].unique()}
    base = np.stack([offsets[w] for w in items["stimulus"]])
    emb = np.empty((n, n_layers, len(poolings), d))
    for layer in range(n_layers):
        strength = effect * (layer + 1) / n_layers
        x = base + rng.normal(0, spread, (n, d))
        x[:, VAL] += 2.0 * sign * strength
        x[:, 0] += 3.0  # anisotropy: a shared direction
        for j in range(len(poolings)):
            emb[:, layer, j] = x + rng.normal(0, 0.05, (n, d))
    labels = {c: items[c].to_numpy().astype(str).astype(object)
              for c in ("stimulus", "tests", "roles", "groups")}
    labels["setting"] = np.array(["sentence"] * n, dtype=object)
    labels["stimulus_set"] = labels["groups"].copy()
    labels["line"] = items["ctx"].to_numpy(dtype=float)
    return suite_dataset("ceat", items["word"], np.ones(n, dtype=int), emb, labels,
                             poolings=poolings, settings=("sentence",))
