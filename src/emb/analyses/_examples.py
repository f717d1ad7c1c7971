"""Small seeded example suites with planted effects, shaped like real store groups.

Each analysis record's ``example`` (:class:`~emb.analyses._analysis.Analysis`) builds its tiny
input from these: the registry-wide contract test runs every record on its example, the docstring
examples run on them, and a user can try an analysis without a model or a store
(``ds, options = ANALYSES["weat"].example()``). The analyses' own tests build variants of the
same suites (``tests/analyses/_synthetic.py``). The suites several families read are here
(``vast``, ``weat``, ``similarity``, ``intersectional``, and :func:`suite_dataset`, the shape of
every suite group); a family with a suite of its own builds it in its ``_example.py`` (``ibd``,
``ceat``, ``stereotype``). Nothing here is imported by an analysis at import time, nor touches
torch.

Geometry: ``d``-dimensional vectors; feature 5 is the valence direction, 6 arousal, 7 dominance,
features 0-1 are "rogue" high-variance directions planted in the top layer (as in GPT-2's top layer),
feature 2 a constant offset (anisotropy); everything else is unit Gaussian noise.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from emb import data
from emb.schemas.datamodel import EMBEDDING, FEATURE, ITEM, LAYER, POOLING

_POLAR = data.read_json("polar_words.json")
PLEASANT = list(_POLAR["pleasant"])  # the 25 + 25 WEAT polar words the vast suite uses
UNPLEASANT = list(_POLAR["unpleasant"])
POOLINGS = ("first", "last", "mean", "max")
SETTINGS = ("bleached", "aligned", "misaligned", "random")
VAL, ARO, DOM = 5, 6, 7

#: Valence signal of a lexicon word's own meaning, per setting, at each layer fraction (0..1).
WORD_SIGNAL = {"bleached": 1.0, "aligned": 1.0, "misaligned": 1.0, "random": 0.6}
#: Valence carried by the context (sign: +1 agrees with the word's rating, -1 mirrored).
CONTEXT_SIGNAL = {"bleached": 0.0, "aligned": 0.8, "misaligned": -2.5, "random": 0.0}


def _band(v: float) -> str:
    if v < 2.5:
        return "very unpleasant"
    if v < 4.0:
        return "unpleasant"
    if v < 6.0:
        return "neither pleasant nor unpleasant"
    if v < 7.5:
        return "pleasant"
    return "very pleasant"


_MIRROR = {
    "very unpleasant": "very pleasant",
    "unpleasant": "pleasant",
    "neither pleasant nor unpleasant": "neither pleasant nor unpleasant",
    "pleasant": "unpleasant",
    "very pleasant": "very unpleasant",
}


def lexicon_table(n_words: int = 120, *, name: str = "toy", seed: int = 0) -> pd.DataFrame:
    """Words w000.. with uniform valence/arousal/dominance on 1-9 and a subtoken count."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    words = [f"{name}{i:04d}" for i in range(n_words)]
    return pd.DataFrame(
        {
            "word": words,
            "valence": rng.uniform(1, 9, n_words).round(2),
            "arousal": rng.uniform(1, 9, n_words).round(2),
            "dominance": rng.uniform(1, 9, n_words).round(2),
            "n_subtokens": np.where(rng.random(n_words) < 0.55, 1, rng.integers(2, 4, n_words)),
        }
    )


def vast_dataset(
    *,
    n_words: int = 120,
    n_layers: int = 4,
    d: int = 16,
    lexicons: Sequence[str] = ("toy",),
    settings: Sequence[str] = SETTINGS,
    poolings: Sequence[str] = POOLINGS,
    rogue: float = 40.0,
    noise: float = 1.0,
    seed: int = 0,
    dtype: str = "float32",
    with_arousal: bool = True,
    drop_words: Sequence[str] = (),
) -> xr.Dataset:
    """A ``vast`` suite group in memory (numpy-backed), with planted valence effects.

    Per item, at layer ``l`` of ``L``: ``x = a·(v−5)/4·e_VAL + b·(a−5)/4·e_ARO + c·(dom−5)/4·e_DOM
    + noise`` where ``a`` = word signal (zero below the middle layer for multiply tokenized words)
    + context signal (growing with the layer, mirrored in the misaligned setting); polar words
    sit at ``±2·e_VAL``; the top layer adds ``rogue·N(0,1)`` on features 0 and 1 and a constant
    offset on feature 2.
    """
    rng = np.random.default_rng(seed)
    L = n_layers - 1
    rows: list[dict[str, Any]] = []
    for lex in lexicons:
        table = lexicon_table(n_words, name=lex, seed=seed)
        for setting in settings:
            for rec in table.itertuples():
                band = _band(rec.valence)
                if setting == "misaligned":
                    band = _MIRROR[band]
                rows.append(
                    {
                        "word": rec.word,
                        "setting": setting,
                        "stimulus_set": "lexicon",
                        "lexicon": lex,
                        "valence": rec.valence,
                        "arousal": rec.arousal if with_arousal else np.nan,
                        "dominance": rec.dominance if with_arousal else np.nan,
                        "valence_raw": rec.valence,
                        "band": band if setting in ("aligned", "misaligned") else "",
                        "in_lexicon": "",
                        "n_subtokens": int(rec.n_subtokens),
                    }
                )
            for polar, words, rating in (("pleasant", PLEASANT, 8.0), ("unpleasant", UNPLEASANT, 2.0)):
                for i, w in enumerate(words):
                    band = _band(rating) if setting in ("aligned", "misaligned") else ""
                    rows.append(
                        {
                            "word": w,
                            "setting": setting,
                            "stimulus_set": polar,
                            "lexicon": lex,
                            "valence": np.nan,
                            "arousal": np.nan,
                            "dominance": np.nan,
                            "valence_raw": np.nan,
                            "band": band,
                            "in_lexicon": "false",
                            "n_subtokens": 2 if i in (3, 17) else 1,
                        }
                    )
    items = pd.DataFrame(rows)
    if drop_words:
        items = items[~items["word"].isin(list(drop_words))].reset_index(drop=True)
    n = len(items)
    emb = np.empty((n, n_layers, len(poolings), d), dtype=np.float64)
    val = ((items["valence"].to_numpy(float) - 5) / 4)
    aro = ((items["arousal"].to_numpy(float) - 5) / 4)
    dom = ((items["dominance"].to_numpy(float) - 5) / 4)
    is_lex = (items["stimulus_set"] == "lexicon").to_numpy()
    multi = items["n_subtokens"].to_numpy() > 1
    word_sig = items["setting"].map(WORD_SIGNAL).to_numpy(float)
    ctx_sig = items["setting"].map(CONTEXT_SIGNAL).to_numpy(float)
    polar_sign = np.where(items["stimulus_set"] == "pleasant", 1.0, -1.0)
    for layer in range(n_layers):
        frac = layer / max(L, 1)
        base = rng.normal(0, noise, (n, d))
        word = word_sig * 2.0 * np.where(multi & (frac < 0.5), 0.0, 1.0)
        ctx = ctx_sig * 2.0 * frac
        lex_val = (word + ctx) * val
        base[:, VAL] += np.where(is_lex, np.nan_to_num(lex_val), 2.0 * polar_sign)
        base[:, ARO] += np.where(is_lex, 1.5 * np.nan_to_num(aro), 0.0)
        base[:, DOM] += np.where(is_lex, 1.8 * np.nan_to_num(dom), 0.0)
        if layer == L:
            base[:, 0] += rogue * rng.normal(0, 1, n)
            base[:, 1] += rogue * 0.7 * rng.normal(0, 1, n)
            base[:, 2] += rogue
        for j, pooling in enumerate(poolings):
            extra = rng.normal(0, 0.3, (n, d))
            if pooling == "first":
                extra[multi, VAL] -= 0.5 * np.nan_to_num(lex_val)[multi]
            emb[:, layer, j, :] = base + extra
    text = ("setting", "stimulus_set", "lexicon", "band", "in_lexicon")
    labels = {c: items[c].to_numpy().astype(str).astype(object) if c in text else items[c].to_numpy()
              for c in items.columns if c not in ("word", "n_subtokens")}
    return suite_dataset("vast", items["word"], items["n_subtokens"].to_numpy(), emb, labels,
                             poolings=poolings, settings=settings, dtype=dtype)


def weat_dataset(
    *, n_layers: int = 4, d: int = 16, poolings: Sequence[str] = ("last", "mean"), seed: int = 0,
    effect: float = 1.5,
) -> xr.Dataset:
    """A ``weat`` suite: test WEAT1 (8 flowers/8 insects vs 8 pleasant/8 unpleasant) with an effect
    growing with the layer, and WEAT2 with no effect."""
    rng = np.random.default_rng(seed)
    rows = []
    groups = {
        "WEAT1": {"X": ("flowers", [f"flower{i}" for i in range(8)]),
                  "Y": ("insects", [f"insect{i}" for i in range(8)]),
                  "A": ("pleasant", PLEASANT[:8]), "B": ("unpleasant", UNPLEASANT[:8])},
        "WEAT2": {"X": ("instruments", [f"instr{i}" for i in range(8)]),
                  "Y": ("weapons", [f"weapon{i}" for i in range(8)]),
                  "A": ("pleasant", PLEASANT[:8]), "B": ("unpleasant", UNPLEASANT[:8])},
    }
    for setting in ("bleached", "alone"):
        for test, roles in groups.items():
            for role, (group, words) in roles.items():
                for w in words:
                    rows.append({"word": w, "setting": setting, "stimulus_set": group,
                                 "test": test, "role": role, "group": group})
    items = pd.DataFrame(rows)
    n = len(items)
    sign = items["role"].map({"X": 1.0, "Y": -1.0, "A": 1.0, "B": -1.0}).to_numpy()
    is_target = items["role"].isin(["X", "Y"]).to_numpy()
    active = (items["test"] == "WEAT1").to_numpy()
    emb = np.empty((n, n_layers, len(poolings), d))
    for layer in range(n_layers):
        base = rng.normal(0, 1, (n, d))
        strength = np.where(is_target, effect * layer / max(n_layers - 1, 1) * active, 2.0)
        base[:, VAL] += sign * strength
        for j in range(len(poolings)):
            emb[:, layer, j] = base + rng.normal(0, 0.2, (n, d))
    labels = {c: items[c].to_numpy().astype(str).astype(object) for c in items if c != "word"}
    return suite_dataset("weat", items["word"], np.ones(n, dtype=int), emb, labels,
                             poolings=poolings, settings=("bleached", "alone"))


def similarity_pairs(n_words: int = 60, n_pairs: int = 150, *, seed: int = 0) -> pd.DataFrame:
    """Two benchmarks over words sim000..: random pairs, scores filled in by :func:`similarity_dataset`."""
    rng = np.random.default_rng(seed)
    rows = []
    for name, n_p in (("ws353", n_pairs), ("simlex999", n_pairs // 2)):
        for _ in range(n_p):
            a, b = rng.choice(n_words, 2, replace=False)
            rows.append({"dataset": name, "word1": f"sim{a:03d}", "word2": f"sim{b:03d}"})
    return pd.DataFrame(rows)


def similarity_dataset(
    pairs: pd.DataFrame, *, n_layers: int = 4, d: int = 16, poolings: Sequence[str] = ("last", "mean"),
    seed: int = 0, rogue: float = 30.0,
) -> tuple[xr.Dataset, pd.DataFrame]:
    """A ``similarity`` suite for the words of ``pairs``; scores = clean cosine (features 4..) + noise.

    Returns the Dataset and ``pairs`` with a ``score`` column.
    """
    rng = np.random.default_rng(seed)
    words = sorted(set(pairs["word1"]) | set(pairs["word2"]))
    n = len(words)
    clean = rng.normal(0, 1, (n, d))
    clean[:, :3] = 0
    index = {w: i for i, w in enumerate(words)}
    i1 = pairs["word1"].map(index).to_numpy()
    i2 = pairs["word2"].map(index).to_numpy()
    cn = clean / np.linalg.norm(clean, axis=1, keepdims=True)
    score = 5 + 5 * np.einsum("ij,ij->i", cn[i1], cn[i2]) + rng.normal(0, 0.5, len(pairs))
    emb = np.empty((n, n_layers, len(poolings), d))
    for layer in range(n_layers):
        base = clean + rng.normal(0, 0.6, (n, d))
        if layer == n_layers - 1:
            base[:, 0] += rogue * rng.normal(0, 1, n)
            base[:, 1] += rogue * 0.6 * rng.normal(0, 1, n)
        for j in range(len(poolings)):
            emb[:, layer, j] = base + rng.normal(0, 0.1, (n, d))
    labels = {
        "setting": np.array(["bleached"] * n, dtype=object),
        "stimulus_set": np.array(["similarity"] * n, dtype=object),
        "datasets": np.array(["ws353|simlex999"] * n, dtype=object),
    }
    ds = suite_dataset("similarity", words, np.ones(n, dtype=int), emb, labels,
                           poolings=poolings, settings=("bleached",))
    return ds, pairs.assign(score=score.round(3))


def suite_dataset(
    name: str,
    words: Sequence[str],
    n_subtokens: np.ndarray,
    emb: np.ndarray,
    labels: dict[str, np.ndarray],
    *,
    poolings: Sequence[str],
    settings: Sequence[str],
    dtype: str = "float32",
) -> xr.Dataset:
    """A suite group of items "This is WORD." (WORD = n subtokens after [CLS] this is), with the
    store's item coordinates, the given label columns and the store's attributes."""
    words = np.asarray(list(words), dtype=object)
    n, n_layers, _, d = emb.shape
    coords: dict[str, Any] = {c: ("item", v) for c, v in labels.items()}
    coords.update(
        {
            "word": ("item", words),
            "context": ("item", np.array([f"This is {w}." for w in words], dtype=object)),
            "char_start": ("item", np.full(n, 8)),
            "char_end": ("item", 8 + np.array([len(w) for w in words], dtype=int)),
            "n_subtokens": ("item", n_subtokens),
            "token_start": ("item", np.full(n, 2)),
            "token_end": ("item", 2 + n_subtokens),
            "n_tokens": ("item", 2 + n_subtokens + 1),
            "layer": np.arange(n_layers),
            "pooling": list(poolings),
        }
    )
    ds = xr.Dataset(
        {"embedding": (("item", "layer", "pooling", "feature"), emb.astype(dtype))}, coords=coords
    )
    ds.attrs = store_attrs(name, n, n_layers, d, poolings, settings)
    return ds


def store_attrs(name: str, n: int, n_layers: int, d: int, poolings: Sequence[str], settings: Sequence[str]) -> dict:
    """The attributes a store gives a suite group ``name`` of ``n`` items (model, extraction, suite)."""
    return {
        "emb_schema_version": 1,
        "model": {"model_id": "synthetic/toy", "revision": "0", "fingerprint": "f00d",
                  "architecture": "Toy", "n_layers": n_layers - 1, "hidden_size": d,
                  "last_layer": n_layers - 1},
        "extraction": {"dtype": "float32", "storage_dtype": "float32", "poolings": list(poolings),
                       "bos": False},
        "suite": {"name": name, "generator": name, "content_hash": f"hash-{name}-{n}",
                  "n_items": n, "settings": list(settings)},
        "complete": True,
    }


def lazy(ds: xr.Dataset, item_chunk: int = 64) -> xr.Dataset:
    """``ds`` as a store hands it out: coordinates in memory, the embedding dask-backed in the
    store's chunks (``item_chunk`` items, one layer, one pooling)."""
    return ds.assign({EMBEDDING: ds[EMBEDDING].chunk({ITEM: item_chunk, LAYER: 1, POOLING: 1})})


#: The example ``intersectional`` suite's attribute pairs (four of the paper's twelve) and the
#: categories its experiment-3 phrases permute.
EXAMPLE_PAIRS: dict[str, tuple[str, str]] = {
    "age": ("young", "old"), "race": ("white", "black"), "religion": ("christian", "muslim"),
    "sex": ("male", "female"),
}
EXAMPLE_EXPERIMENT3 = ("race", "religion", "sex")


def intersectional_example(
    *, n_layers: int = 2, d: int = 10, poolings: Sequence[str] = ("last", "mean"), n_words: int = 40,
    seed: int = 0,
) -> xr.Dataset:
    """A small ``intersectional`` suite: "person" in the 16 phrases of four attribute pairs
    (experiment 2) and the 48 orders of three of them (experiment 3), the 25 + 25 polar words and
    ``n_words`` rated lexicon words alone.

    Feature :data:`VAL` carries valence: ``±2`` for the polar words, ``(v − 5)/2`` for a lexicon
    word rated ``v``, and for a phrase a shift per attribute value (A above B) growing with the
    layer; every other feature is noise (N(0, 0.3²) for words, N(0, 0.01²) around a constant for
    "person").
    """
    import itertools

    rng = np.random.default_rng(seed)
    shifts = dict(zip(EXAMPLE_PAIRS, (0.2, -0.4, 0.6, 0.3), strict=True))
    rows: list[dict[str, Any]] = []

    def phrase(stimulus_set: str, words: Sequence[tuple[str, str]]) -> None:
        text = " ".join(["a", *(value for _, value in words), "person"])
        row: dict[str, Any] = {"word": "person", "context": text, "setting": "phrase",
                               "stimulus_set": stimulus_set, "char_start": len(text) - 6}
        values = dict(words)
        order = [c for c, _ in words]
        for category in EXAMPLE_PAIRS:
            row[category] = values.get(category, "")
            row[f"{category}_position"] = float(order.index(category) + 1) if category in values else np.nan
        signal = sum(shifts[c] * (0.5 if v == EXAMPLE_PAIRS[c][0] else -0.5) for c, v in words)
        rows.append({**row, "signal": signal, "valence": np.nan, "lexicon": ""})

    for combo in itertools.product(*EXAMPLE_PAIRS.values()):
        phrase("experiment2", list(zip(EXAMPLE_PAIRS, combo, strict=True)))
    for combo in itertools.product(*(EXAMPLE_PAIRS[c] for c in EXAMPLE_EXPERIMENT3)):
        for order in itertools.permutations(zip(EXAMPLE_EXPERIMENT3, combo, strict=True)):
            phrase("experiment3", list(order))
    alone = {c: "" for c in EXAMPLE_PAIRS} | {f"{c}_position": np.nan for c in EXAMPLE_PAIRS}
    for pole, words in (("pleasant", PLEASANT), ("unpleasant", UNPLEASANT)):
        rows += [{**alone, "word": w, "context": w, "setting": "alone", "stimulus_set": pole,
                  "char_start": 0, "signal": np.nan, "valence": np.nan, "lexicon": ""}
                 for w in words]
    for rec in lexicon_table(n_words, name="toy", seed=seed).itertuples():
        rows.append({**alone, "word": rec.word, "context": rec.word, "setting": "alone",
                     "stimulus_set": "lexicon", "char_start": 0, "signal": np.nan,
                     "valence": float(rec.valence), "lexicon": "toy"})
    items = pd.DataFrame(rows)
    n = len(items)
    is_phrase = (items["setting"] == "phrase").to_numpy()
    pole = np.where(items["stimulus_set"] == "pleasant", 2.0,
                    np.where(items["stimulus_set"] == "unpleasant", -2.0, 0.0))
    lexicon = np.nan_to_num((items["valence"].to_numpy(float) - 5) / 2)
    signal = np.nan_to_num(items["signal"].to_numpy(float))
    constant = rng.normal(0, 1, d)
    emb = np.empty((n, n_layers, len(poolings), d))
    for layer in range(n_layers):
        gain = 0.5 + 0.5 * layer / max(n_layers - 1, 1)
        x = np.where(is_phrase[:, None], constant + rng.normal(0, 0.01, (n, d)),
                     rng.normal(0, 0.3, (n, d)))
        x[:, VAL] += np.where(is_phrase, gain * signal + rng.normal(0, 0.3, n),
                              pole + lexicon + rng.normal(0, 0.3, n))
        for j in range(len(poolings)):
            emb[:, layer, j] = x + (0 if j == 0 else rng.normal(0, 0.001, (n, d)))
    ends = items["char_start"].to_numpy() + items["word"].str.len().to_numpy()
    coords: dict[str, Any] = {
        "word": (ITEM, items["word"].to_numpy(dtype=object)),
        "context": (ITEM, items["context"].to_numpy(dtype=object)),
        "setting": (ITEM, items["setting"].to_numpy(dtype=object)),
        "stimulus_set": (ITEM, items["stimulus_set"].to_numpy(dtype=object)),
        "char_start": (ITEM, items["char_start"].to_numpy(dtype=int)),
        "char_end": (ITEM, ends.astype(int)),
        "n_subtokens": (ITEM, np.ones(n, dtype=int)),
        "lexicon": (ITEM, items["lexicon"].to_numpy(dtype=object)),
        "valence": (ITEM, items["valence"].to_numpy(dtype=float)),
        LAYER: np.arange(n_layers),
        POOLING: list(poolings),
    }
    for category in EXAMPLE_PAIRS:
        coords[category] = (ITEM, items[category].to_numpy(dtype=object))
        coords[f"{category}_position"] = (ITEM, items[f"{category}_position"].to_numpy(dtype=float))
    ds = xr.Dataset({EMBEDDING: ((ITEM, LAYER, POOLING, FEATURE), emb.astype("float32"))},
                    coords=coords)
    ds.attrs = store_attrs("intersectional", n, n_layers, d, poolings, ("phrase", "alone"))
    ds.attrs["suite"]["parameters"] = {
        "pairs": {c: list(v) for c, v in EXAMPLE_PAIRS.items()},
        "experiment3_categories": list(EXAMPLE_EXPERIMENT3),
        "target": "person",
    }
    return ds
