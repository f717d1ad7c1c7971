"""A synthetic ``intersectional`` suite group with a planted valence direction and attribute shifts.

Used by the intersectional / valence-subspace tests and the contract test (not a test module).

Geometry (``d`` features; feature ``VAL`` = 5 is valence): the 25 pleasant / 25 unpleasant training
words sit at ``±2·e_VAL`` plus N(0, 0.3²) noise on every feature; a lexicon word of rating ``v``
(1–9) at ``(v − 5)/2·e_VAL`` plus N(0, 0.5²) on ``VAL`` and N(0, 0.3²) elsewhere. "person" in a
phrase sits at a constant vector plus, on ``VAL``, ``g(layer)·Σ_k shift_k·(+½ for value A, −½ for
value B)`` plus N(0, σ²); its other features vary by N(0, 0.01²) only. ``g`` grows from 0.25 at
layer 0 to 1 at the top layer, so at the top layer ``mean_A − mean_B = shift_k`` on ``VAL``. The
top layer adds a rogue feature (N(0, 40²)) and a constant offset of 40 to every *word* vector, which
ruins cosine ValNorm but not the projection.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import xarray as xr

from emb.stimuli.suites import Item, Suite, build_suite
from tests.analyses._synthetic import lexicon_table

VAL = 5
SIGMA = 0.5
#: Planted A − B shift on the valence feature at the top layer, per pair ("young/old": none).
SHIFTS = {
    "young/old": 0.0, "tall/short": -0.3, "educated/ignorant": 0.6, "literate/illiterate": 0.2,
    "white/black": -0.2, "christian/muslim": 0.5, "male/female": 0.1, "thin/fat": 0.4,
    "smart/stupid": 0.8, "affluent/destitute": 1.0, "heterosexual/homosexual": 1.5,
    "cisgender/transgender": 1.2,
}


@functools.cache
def _suite(n_words: int) -> Suite:
    base = build_suite("intersectional")
    table = lexicon_table(n_words, name="toy")
    items = list(base.items)
    rated = [(r.word, float(r.valence)) for r in table.itertuples()]
    rated += [("love", 8.5), ("death", 1.5)]  # two training words the lexicon rates too
    for word, valence in rated:
        items.append(Item(context=word, word=word, char_start=0, char_end=len(word),
                          setting="alone", stimulus_set="lexicon",
                          labels={"lexicon": "toy", "valence": valence, "valence_raw": valence}))
    return Suite(name="intersectional", items=tuple(items), generator="intersectional",
                 parameters=base.parameters)


def gain(layer: int, n_layers: int) -> float:
    """The planted effects' scale at ``layer``: 0.25 at layer 0, 1 at the top layer."""
    return 0.25 + 0.75 * layer / max(n_layers - 1, 1)


def expected_d(layer: int, n_layers: int) -> dict[str, float]:
    """d each pair should show at ``layer`` (balanced design: std² = Σ (g·shift)²/4 + σ²)."""
    g = gain(layer, n_layers)
    total = sum((g * s) ** 2 for s in SHIFTS.values()) / 4 + SIGMA**2
    return {pair: g * s / np.sqrt(total) for pair, s in SHIFTS.items()}


def intersectional_dataset(
    *,
    n_layers: int = 3,
    d: int = 10,
    poolings: tuple[str, ...] = ("last", "mean"),
    n_words: int = 80,
    seed: int = 0,
    shifts: dict[str, float] | None = None,
) -> xr.Dataset:
    """The suite group in memory (numpy-backed, float32), shaped as a store hands it out."""
    shifts = SHIFTS if shifts is None else shifts
    suite = _suite(n_words)
    columns = suite.columns()
    n = len(suite)
    rng = np.random.default_rng(seed)
    stimulus = columns["stimulus_set"]
    phrase = np.isin(stimulus, ["experiment2", "experiment3"])
    words = ~phrase
    sign = np.where(stimulus == "pleasant", 1.0, np.where(stimulus == "unpleasant", -1.0, 0.0))
    valence = np.nan_to_num(columns["valence"])
    signal = np.zeros(n)
    for pair, shift in shifts.items():
        a, b = pair.split("/")
        category = next(c for c, v in suite.parameters["pairs"].items() if v == [a, b])
        values = columns[category]
        signal += shift * (0.5 * (values == a) - 0.5 * (values == b))
    emb = np.empty((n, n_layers, len(poolings), d))
    constant = rng.normal(0, 1, d)
    for layer in range(n_layers):
        g = gain(layer, n_layers)
        x = np.where(words[:, None], rng.normal(0, 0.3, (n, d)), constant + rng.normal(0, 0.01, (n, d)))
        x[:, VAL] += 2.0 * sign
        lexicon = stimulus == "lexicon"
        x[lexicon, VAL] += (valence[lexicon] - 5) / 2 + rng.normal(0, 0.5, lexicon.sum())
        x[phrase, VAL] = constant[VAL] + g * signal[phrase] + rng.normal(0, SIGMA, phrase.sum())
        if layer == n_layers - 1:
            x[words, 0] += 40 * rng.normal(0, 1, words.sum())
            x[words, 1] += 40
        for j in range(len(poolings)):
            emb[:, layer, j] = x + (0 if j == 0 else rng.normal(0, 0.001, (n, d)))
    coords: dict[str, Any] = {
        key: ("item", value.astype(object) if value.dtype.kind == "U" else value)
        for key, value in columns.items()
    }
    coords.update({
        "n_subtokens": ("item", np.ones(n, dtype=int)),
        "layer": np.arange(n_layers),
        "pooling": list(poolings),
    })
    ds = xr.Dataset({"embedding": (("item", "layer", "pooling", "feature"), emb.astype("float32"))},
                    coords=coords)
    ds.attrs = {
        "emb_schema_version": 1,
        "model": {"model_id": "synthetic/toy", "revision": "0", "fingerprint": "f00d",
                  "architecture": "Toy", "n_layers": n_layers - 1, "hidden_size": d,
                  "last_layer": n_layers - 1},
        "extraction": {"dtype": "float32", "storage_dtype": "float32", "poolings": list(poolings),
                       "bos": True},
        "suite": {"name": "intersectional", "generator": "intersectional",
                  "parameters": suite.parameters, "content_hash": f"hash-intersectional-{n}",
                  "n_items": n, "settings": ["phrase", "alone"]},
        "complete": True,
    }
    return ds


def training_vectors(ds: xr.Dataset, layer: int, pooling: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The 25 + 25 training words' vectors at one cell (pleasant first), labels and words."""
    stimulus = ds["stimulus_set"].values.astype(str)
    alone = ds["setting"].values.astype(str) == "alone"
    rows = np.concatenate([np.flatnonzero(alone & (stimulus == "pleasant")),
                           np.flatnonzero(alone & (stimulus == "unpleasant"))])
    X = ds["embedding"].sel(layer=layer, pooling=pooling).values[rows].astype(np.float64)
    y = np.array([1] * 25 + [0] * 25)
    return X, y, list(ds["word"].values[rows])
