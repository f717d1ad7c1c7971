"""The example ``ibd`` suite: six groups of names and attribute words with planted biases (the
record's ``example``, the contract test, the ibd tests)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from emb.analyses._examples import suite_dataset

__all__ = ["IBD_GENDERS", "IBD_RACES", "ibd_dataset"]

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
    groups = [f"{r}_{g}" for r in IBD_RACES for g in IBD_GENDERS]
    short = {"african_female": "af", "mexican_female": "mf", "european_male": "em"}
    attributes = _attributes(groups, short)
    names = {g: [f"{short.get(g, g[:1] + g.split('_')[1][:1])}name{i}" for i in range(n_names)]
             for g in groups}
    items = _items(groups, names, attributes, drop_groups=drop_groups)
    axis = {name: i for i, name in enumerate([*IBD_RACES, *IBD_GENDERS, *groups])}
    emb = _planted(items, axis, n_layers=n_layers, n_poolings=len(poolings), d=d, noise=noise,
                   rng=np.random.default_rng(seed))
    n = len(items)
    labels = {c: items[c].to_numpy().astype(str).astype(object)
              for c in ("setting", "stimulus_set", "role", "group", "race", "gender", "ibd_of", "eibd_of")}
    ds = suite_dataset("ibd", items["word"], np.ones(n, dtype=int), emb, labels,
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


def _attributes(groups: list[str], short: dict[str, str]) -> list[tuple[str, list[str], str, str]]:
    """The 24 attribute words, each (word, directions, ibd_of, eibd_of): two emergent words, a
    race word and a gender word per target group (``short``), then neutral ones."""
    attributes: list[tuple[str, list[str], str, str]] = []
    for group, s in short.items():
        race, gender = group.split("_")
        attributes += [(f"{s}_emergent{i}", [group], group, group) for i in range(2)]
        attributes += [
            (f"{s}_race", [race], "|".join(g for g in groups if g.startswith(race + "_")), ""),
            (f"{s}_gender", [gender], "|".join(g for g in groups if g.endswith("_" + gender)), ""),
        ]
    attributes += [(f"neutral{i}", [], "", "") for i in range(24 - len(attributes))]
    return attributes


def _items(groups: list[str], names: dict[str, list[str]],
           attributes: list[tuple[str, list[str], str, str]], *,
           drop_groups: Sequence[str]) -> pd.DataFrame:
    """One row per item, in each setting the groups' names (but ``drop_groups``') then the
    attribute words, with its labels and the directions (``dirs``) its vector holds."""
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
    return pd.DataFrame(rows)


def _planted(items: pd.DataFrame, axis: dict[str, int], *, n_layers: int, n_poolings: int, d: int,
             noise: float, rng: np.random.Generator) -> np.ndarray:
    """The embedding (item, layer, pooling, feature): each item's directions (an attribute word's
    twice as strong), growing with the layer, plus noise."""
    n = len(items)
    emb = np.empty((n, n_layers, n_poolings, d))
    for layer in range(n_layers):
        strength = (1 + 2 * layer / max(n_layers - 1, 1)) / 3
        base = rng.normal(0, noise, (n, d))
        for i, dirs in enumerate(items["dirs"]):
            for name in dirs:
                base[i, axis[name]] += strength * (2.0 if items["role"].iat[i] == "attribute" else 1.0)
        for j in range(n_poolings):
            emb[:, layer, j] = base + rng.normal(0, 0.05, (n, d))
    return emb
