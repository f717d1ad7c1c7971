"""Small seeded synthetic suites with planted effects, shaped like real store groups.

Used by the analyses, plots and CLI tests (not a test module itself).

Geometry: ``d``-dimensional vectors; feature 5 is the valence direction, 6 arousal, 7 dominance,
features 0-1 are "rogue" high-variance directions planted in the top layer (as in GPT-2's top layer),
feature 2 a constant offset (anisotropy); everything else is unit Gaussian noise.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from emb.stimuli.suites.vast import POLAR_PLEASANT, POLAR_UNPLEASANT

PLEASANT = list(POLAR_PLEASANT)  # the 25 + 25 WEAT polar words the vast suite uses
UNPLEASANT = list(POLAR_UNPLEASANT)
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
    return _bleached_dataset("vast", items["word"], items["n_subtokens"].to_numpy(), emb, labels,
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
    return _bleached_dataset("weat", items["word"], np.ones(n, dtype=int), emb, labels,
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
    ds = _bleached_dataset("similarity", words, np.ones(n, dtype=int), emb, labels,
                           poolings=poolings, settings=("bleached",))
    return ds, pairs.assign(score=score.round(3))


def _bleached_dataset(
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
    ds.attrs = _attrs(name, n, n_layers, d, poolings, settings)
    return ds


def _attrs(name: str, n: int, n_layers: int, d: int, poolings: Sequence[str], settings: Sequence[str]) -> dict:
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


def write_store(
    path: str | Path, groups: Mapping[str, xr.Dataset], *, model_id: str = "synthetic/toy"
) -> Path:
    """Write suite Datasets into an emb store with the store's own writer (sharded layout)."""
    from emb.store import SuiteWriter, open_for_writing

    first = next(iter(groups.values()))
    model = {**first.attrs["model"], "model_id": model_id}
    _, root = open_for_writing(str(path), model=model)
    for name, ds in groups.items():
        coords = ds.drop_vars("embedding")
        writer = SuiteWriter.open(
            str(path),
            root,
            name=name,
            coords=coords,
            shape=ds["embedding"].shape,
            storage_dtype=str(ds["embedding"].dtype),
            suite_attrs=ds.attrs["suite"],
            extraction_attrs=ds.attrs["extraction"],
        )
        values = ds["embedding"].values
        for index, (start, stop) in enumerate(writer.block_ranges()):
            writer.write_block(index, values[start:stop])
        writer.finish()
    return Path(path)


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
    ds = _bleached_dataset("stereotype", items["word"], np.ones(len(items), dtype=int), emb, labels,
                           poolings=poolings, settings=("dictionary", "templates"), dtype=dtype)
    return ds, {"U": U, "c": truth_c, "scales": scales, "members": members}


IBD_RACES = ("african", "european", "mexican")
IBD_GENDERS = ("female", "male")


def ibd_dataset(
    *, n_names: int = 6, n_layers: int = 3, d: int = 24, poolings: Sequence[str] = ("last", "mean"),
    seed: int = 0, noise: float = 0.1, drop_groups: Sequence[str] = (),
) -> xr.Dataset:
    """An ``ibd`` suite: 6 groups (3 races × 2 genders) of ``n_names`` names and 24 attribute words.

    Name vector = race direction + gender direction + its own intersection direction + noise.
    Attribute words, for the targets african_female (af), mexican_female (mf) and european_male
    (em): ``<g>_emergent{0,1}`` on g's intersection direction (EIBD and IBD positives of g),
    ``<g>_race`` on g's race direction and ``<g>_gender`` on its gender direction (IBD positives
    of every group of that race / gender: single-category biases), and ``neutral`` words (noise).
    The planted signal grows with the layer (layer 0: a third of the top layer's). ``drop_groups``
    leaves groups' names out (as a static store without their vectors).
    """
    rng = np.random.default_rng(seed)
    groups = [f"{r}_{g}" for r in IBD_RACES for g in IBD_GENDERS]
    axis = {name: i for i, name in enumerate([*IBD_RACES, *IBD_GENDERS, *groups])}
    short = {"african_female": "af", "mexican_female": "mf", "european_male": "em"}
    attributes: list[tuple[str, list[str], str, str]] = []  # (word, directions, ibd_of, eibd_of)
    for group, s in short.items():
        race, gender = group.split("_")
        attributes += [(f"{s}_emergent{i}", [group], group, group) for i in range(2)]
        attributes += [
            (f"{s}_race", [race], "|".join(g for g in groups if g.startswith(race + "_")), ""),
            (f"{s}_gender", [gender], "|".join(g for g in groups if g.endswith("_" + gender)), ""),
        ]
    attributes += [(f"neutral{i}", [], "", "") for i in range(24 - len(attributes))]
    names = {g: [f"{short.get(g, g[:1] + g.split('_')[1][:1])}name{i}" for i in range(n_names)]
             for g in groups}
    rows = []
    for setting in ("alone", "bleached"):
        for g in groups:
            if g in drop_groups:
                continue
            race, gender = g.split("_")
            for n in names[g]:
                rows.append({"word": n, "setting": setting, "stimulus_set": g, "role": "name",
                             "group": g, "race": race, "gender": gender, "ibd_of": "",
                             "eibd_of": "", "dirs": [race, gender, g]})
        for word, dirs, ibd_of, eibd_of in attributes:
            rows.append({"word": word, "setting": setting, "stimulus_set": "attribute",
                         "role": "attribute", "group": "", "race": "", "gender": "",
                         "ibd_of": ibd_of, "eibd_of": eibd_of, "dirs": dirs})
    items = pd.DataFrame(rows)
    n = len(items)
    emb = np.empty((n, n_layers, len(poolings), d))
    for layer in range(n_layers):
        strength = (1 + 2 * layer / max(n_layers - 1, 1)) / 3
        base = rng.normal(0, noise, (n, d))
        for i, dirs in enumerate(items["dirs"]):
            for name in dirs:
                base[i, axis[name]] += strength * (2.0 if items["role"].iat[i] == "attribute" else 1.0)
        for j in range(len(poolings)):
            emb[:, layer, j] = base + rng.normal(0, 0.05, (n, d))
    labels = {c: items[c].to_numpy().astype(str).astype(object)
              for c in ("setting", "stimulus_set", "role", "group", "race", "gender", "ibd_of", "eibd_of")}
    ds = _bleached_dataset("ibd", items["word"], np.ones(n, dtype=int), emb, labels,
                           poolings=poolings, settings=("alone", "bleached"))
    ds.attrs["suite"]["parameters"] = {
        "groups": names,
        "races": list(IBD_RACES),
        "genders": list(IBD_GENDERS),
        "attributes": [a[0] for a in attributes],
        "validation": {
            "ibd": {g: [a[0] for a in attributes if g in a[2].split("|")] for g in groups},
            "eibd": {g: [a[0] for a in attributes if g in a[3].split("|")] for g in groups},
        },
    }
    return ds


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
    return _bleached_dataset("ceat", items["word"], np.ones(n, dtype=int), emb, labels,
                             poolings=poolings, settings=("sentence",))
