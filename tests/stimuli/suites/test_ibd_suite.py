"""The ``ibd`` suite: Guo & Caliskan's groups and attributes, and a user's own file, validated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emb import data
from emb.errors import SuiteError
from emb.stimuli.suites import BUILTIN_SUITES, build_suite
from emb.stimuli.suites.ibd import IBD_DATA, parse_ibd_data


def test_the_packaged_file_is_the_shared_one(data_dir: Path) -> None:
    """The shared file's every key verbatim and in order; emb adds only ``_names`` (the readable
    names of the groups, races and genders) and says so at the end of ``_note``."""
    import json

    shipped = json.loads(data.path("ibd_eibd_names_and_attributes.json").read_text("utf-8"))
    shared = json.loads((data_dir / "weat" / "ibd_eibd_names_and_attributes.json").read_text("utf-8"))
    names = shipped.pop("_names")
    assert shipped["_note"].startswith(shared["_note"]) and "_names" in shipped["_note"]
    shipped["_note"] = shared["_note"]
    assert list(shipped.items()) == list(shared.items())
    assert set(names) == {*IBD_DATA.groups, *IBD_DATA.races, *IBD_DATA.genders}


def test_builtin_suite_items_labels_and_parameters() -> None:
    suite = build_suite("ibd")
    assert len(IBD_DATA.groups) == 6 and all(len(n) == 12 for n in IBD_DATA.groups.values())
    assert len(IBD_DATA.attributes) == 98
    assert len(suite.items) == 2 * (72 + 98)
    assert suite.settings == ("alone", "bleached")
    by = {(it.setting, it.word): it for it in suite.items}
    keisha = by[("bleached", "Keisha")]
    assert keisha.context == "This is Keisha" and keisha.target == "Keisha"
    assert keisha.labels["group"] == "african_female"
    assert (keisha.labels["race"], keisha.labels["gender"], keisha.labels["role"]) == (
        "african", "female", "name")
    loud = by[("alone", "loud")]
    assert loud.context == "loud" and loud.stimulus_set == "attribute"
    # 'loud' is an IBD positive of AF, AM and MF, and no group's emergent bias
    assert set(loud.labels["ibd_of"].split("|")) == {"african_female", "african_male",
                                                     "mexican_female"}
    assert loud.labels["eibd_of"] == ""
    assert by[("alone", "bigbutt")].labels["eibd_of"] == "african_female"
    assert set(by[("alone", "promiscuous")].labels["eibd_of"].split("|")) == {
        "african_female", "mexican_female", "mexican_male"}
    params = suite.parameters
    assert len(params["validation"]["ibd"]["african_female"]) == 14
    assert len(params["validation"]["eibd"]["mexican_female"]) == 6
    assert params["groups"]["mexican_male"][0] == "Jesús"
    assert BUILTIN_SUITES["ibd"].warnings(suite) == ()


def _doc(**changes):
    doc = json.loads(data.path("ibd_eibd_names_and_attributes.json").read_text())
    for key, value in changes.items():
        if value is None:
            doc.pop(key)
        else:
            doc[key] = value
    return doc


@pytest.mark.parametrize(("changes", "message"), [
    ({"paper_lst_union": None}, "paper_lst_union"),
    ({"mexican_male": None}, r"full race × gender grid.*mexican_male"),
    ({"african_male": ["Lionel", "Lionel"]}, "names twice"),
    ({"african_male": ["Keisha"]}, "both african_female and african_male"),
    ({"african_male": []}, "non-empty list"),
    ({"african_male": ["ok", 3]}, "non-blank string"),
    ({"african_female_bias": ["loud", "purple"]}, r"\['purple'\].*not in"),
    ({"paper_lst_union": ["loud", "Keisha"]}, "both names and attribute"),
])
def test_malformed_files_are_clear_errors(changes, message) -> None:
    with pytest.raises(SuiteError, match=message):
        parse_ibd_data(_doc(**changes), "groups.json")


def test_too_few_categories_are_refused() -> None:
    doc = {"a_f": ["x"], "a_m": ["y"], "paper_lst_union": ["w"]}
    with pytest.raises(SuiteError, match="two races × two genders"):
        parse_ibd_data(doc, "g.json")
    with pytest.raises(SuiteError, match="JSON object"):
        parse_ibd_data([], "g.json")


def test_a_users_own_groups_file(tmp_path: Path) -> None:
    doc = {
        "_source": "mine",
        "north_young": ["Ada", "Bo"], "north_old": ["Cy", "Di"],
        "south_young": ["Ed", "Flo"], "south_old": ["Gus", "Hal"],
        "north_young_bias": ["brisk", "calm"], "north_young_intersectional_bias": ["calm"],
        "paper_lst_union": ["brisk", "calm", "dull", "eager"],
    }
    path = tmp_path / "groups.json"
    path.write_text(json.dumps(doc))
    suite = build_suite("ibd", ibd_groups=str(path))
    assert len(suite.items) == 2 * (8 + 4)
    assert suite.parameters["groups_file"]["source"] == str(path)
    assert suite.parameters["races"] == ["north", "south"]
    warnings = BUILTIN_SUITES["ibd"].warnings(suite)
    assert any("no IBD validation list" in w and "south_old" in w for w in warnings)
    path.write_text("{not json")
    with pytest.raises(SuiteError, match="not valid JSON"):
        build_suite("ibd", ibd_groups=str(path))
