"""The example ``stereotype`` suite: dimension vectors and coordinates known exactly (the record's
``example``, the contract test, the stereotype tests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._examples import suite_dataset

__all__ = ["STEREO_DIMENSIONS", "stereotype_dataset"]

#: The planted stereotype suite's dimensions (the seven of Nicolas et al. 2021).
STEREO_DIMENSIONS = ("Sociability", "Morality", "Ability", "Agency", "Status", "Politics", "Religion")


def stereotype_dataset(
    *,
    n_layers: int = 3,
    d: int = 24,
    poolings: Sequence[str] = ("mean", "last"),
    senses_per_pole: int = 3,
    examples: int = 2,
    n_names: int = 12,
    shift: float = 1.0,
    heldout: bool = False,
    seed: int = 0,
    dtype: str = "float64",
) -> tuple[xr.Dataset, dict[str, Any]]:
    """A ``stereotype`` suite whose dimension vectors and coordinates are known exactly.

    Dimension ``k`` is ``u_k = R e_k`` (``R`` a random rotation). At layer ``l`` (scale ``s_l =
    1 + l``), a sense of dimension ``k`` with direction ±1 has vector ``m + ±s_l u_k / 2 + ε``
    where ``ε`` sums to zero over each pole, and its examples scatter around it with noise that
    sums to zero over the examples; so ``a_k = s_l u_k`` exactly. A population word has
    ``x = Σ_k c_k u_k + w`` (``w`` ⟂ every ``u_k``, varying over its 7 templates), so its 7D
    coordinates are ``c / s_l`` at layer ``l``. ``female_names`` sit ``shift`` higher than
    ``male_names`` on Sociability and Morality and lower on Ability and Agency. Returns the
    Dataset and the truth: ``U`` (7, d), ``c`` (member → 7 values), ``scales`` (per layer),
    ``members`` ((group, word) in order).
    """
    rng = np.random.default_rng(seed)
    rot, _ = np.linalg.qr(rng.normal(size=(d, d)))
    U = rot[:, :7].T  # (7, d) orthonormal rows
    complement = rot[:, 7:]  # (d, d-7) orthogonal to every u_k
    scales = 1.0 + np.arange(n_layers)
    rows: list[dict[str, Any]] = []
    vectors: list[np.ndarray] = []  # (n_layers, d) per item
    m = rng.normal(size=d)
    sense_id = 0
    for k, dim in enumerate(STEREO_DIMENSIONS):
        for direction, sign in (("high", 1.0), ("low", -1.0)):
            eps = rng.normal(0, 0.5, (senses_per_pole, d))
            eps -= eps.mean(axis=0)
            for j in range(senses_per_pole):
                noise = rng.normal(0, 0.3, (examples, d))
                noise -= noise.mean(axis=0)
                term = f"{dim.lower()}{direction}{j}"
                for e in range(examples):
                    per_layer = np.array([m + sign * s * U[k] / 2 + eps[j] + noise[e] for s in scales])
                    rows.append({"word": term, "setting": "dictionary", "stimulus_set": f"{dim}/{direction}",
                                 "role": "sense", "dimension": dim, "direction": direction,
                                 "synset": f"{term}.a.01", "sense": str(sense_id), "group": "",
                                 "kind": "", "template": ""})
                    vectors.append(per_layer)
                sense_id += 1
    groups = {"female_names": [f"Fname{i}" for i in range(n_names)],
              "male_names": [f"Mname{i}" for i in range(n_names)],
              "female_terms": ["woman", "girl", "she", "mother"],
              "male_terms": ["man", "boy", "he", "father"],
              "nonbinary_terms": ["enby", "nonbinary", "genderqueer"]}
    planted = {"female_names": np.array([shift, shift, -shift, -shift, 0, 0, 0]) / 2,
               "male_names": -np.array([shift, shift, -shift, -shift, 0, 0, 0]) / 2}
    truth_c: dict[tuple[str, str], np.ndarray] = {}
    members = []
    for group, words in groups.items():
        for word in words:
            c = planted.get(group, np.zeros(7)) + rng.normal(0, 0.5, 7)
            truth_c[(group, word)] = c
            members.append((group, word))
            for t in range(7):
                w = complement @ rng.normal(0, 1.0, d - 7)
                rows.append({"word": word, "setting": "templates", "stimulus_set": group,
                             "role": "population", "dimension": "", "direction": "", "synset": "",
                             "sense": "", "group": group,
                             "kind": "name" if group.endswith("names") else "noun",
                             "template": f"template {t}"})
                vectors.append(np.array([c @ U + w + 0.0 * s for s in scales]))
    if heldout:
        for k, dim in enumerate(STEREO_DIMENSIONS):
            for direction, sign in (("high", 1.0), ("low", -1.0)):
                for j in range(2):
                    term = f"ext{dim.lower()}{direction}{j}"
                    strength = sign * (0.4 if j == 0 else -0.1)  # the second one points the wrong way
                    rows.append({"word": term, "setting": "extended", "stimulus_set": f"{dim}/{direction}",
                                 "role": "heldout", "dimension": dim, "direction": direction,
                                 "synset": "", "sense": f"extended-{term}", "group": "", "kind": "",
                                 "template": ""})
                    vectors.append(np.array([m + strength * s * U[k] for s in scales]))
    items = pd.DataFrame(rows)
    base = np.stack(vectors)  # (n, layers, d)
    emb = np.repeat(base[:, :, None, :], len(poolings), axis=2)
    for j in range(1, len(poolings)):  # other poolings: the same geometry, scaled
        emb[:, :, j, :] *= 1.0 + 0.5 * j
    labels = {c: items[c].to_numpy().astype(str).astype(object) for c in items if c != "word"}
    ds = suite_dataset("stereotype", items["word"], np.ones(len(items), dtype=int), emb, labels,
                           poolings=poolings, settings=("dictionary", "templates"), dtype=dtype)
    return ds, {"U": U, "c": truth_c, "scales": scales, "members": members}
