"""The intersectional pairs in the paper's Table 2 order (issue 24): young/old, thin/fat, … male/
female (the phrases' slot order), not the order of the authors' table script's dict (age, height,
education, …), which the package data keeps as transcribed."""

from __future__ import annotations

import json

import xarray as xr

from emb import data
from emb.analyses.intersectional._intersectional import _suite_design

# Omrani Sabbaghi, Wolfe & Caliskan (2023), Table 2, its rows top to bottom (../shared/papers)
TABLE_2 = ["young/old", "thin/fat", "tall/short", "smart/stupid", "educated/ignorant",
           "literate/illiterate", "affluent/destitute", "white/black", "heterosexual/homosexual",
           "christian/muslim", "cisgender/transgender", "male/female"]


def _rows(ds: xr.Dataset) -> list[str]:
    pairs, _ = _suite_design(ds)
    return [f"{a}/{b}" for a, b in pairs.values()]


def test_pairs_follow_table_2_whatever_order_the_suite_recorded():
    code_order = data.read_json("attribute_pairs_and_svc_words.json")["attribute_pairs_table_order"]
    assert [f"{a}/{b}" for a, b in code_order.values()] != TABLE_2  # the data keeps the code's order
    assert _rows(xr.Dataset()) == TABLE_2  # no parameters: the package data
    params = {"pairs": code_order}  # a store that recorded no slot order
    assert _rows(xr.Dataset(attrs={"suite": json.dumps({"parameters": params})})) == TABLE_2
    slots = ["age", "weight", "height", "intelligence", "education", "literacy", "affluence",
             "race", "orientation", "religion", "gender", "sex"]
    params = {"pairs": code_order, "slot_order": slots}
    assert _rows(xr.Dataset(attrs={"suite": json.dumps({"parameters": params})})) == TABLE_2


def test_a_suite_with_fewer_pairs_keeps_their_table_2_order_and_extra_pairs_last():
    pairs = {"sex": ["male", "female"], "age": ["young", "old"], "mood": ["calm", "angry"]}
    ds = xr.Dataset(attrs={"suite": json.dumps({"parameters": {"pairs": pairs}})})
    assert _rows(ds) == ["young/old", "male/female", "calm/angry"]
