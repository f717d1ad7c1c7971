"""Names in messages: plain Python values and a difflib "did you mean"."""

from __future__ import annotations

import numpy as np

from emb.text import did_you_mean, names, plain, unknown_names


def test_plain_turns_numpy_into_python() -> None:
    value = plain({"a": [np.str_("x"), np.int64(2), np.float64(0.5)], "b": np.array([1, 2])})
    assert value == {"a": ["x", 2, 0.5], "b": [1, 2]}
    assert type(value["a"][0]) is str and type(value["a"][1]) is int
    assert names([np.str_("warriner"), np.str_("anew")]) == "['warriner', 'anew']"
    assert "np." not in names(np.array(["a", "b"]))


def test_did_you_mean() -> None:
    assert did_you_mean("bleachd", ["bleached", "aligned"]) == " Did you mean 'bleached'?"
    assert did_you_mean("WEAT", ["weat", "vast"]) == " Did you mean 'weat'?"  # case only
    assert did_you_mean("zzz", ["bleached"]) == ""
    assert did_you_mean(np.str_("lats"), np.array(["first", "last"])) == " Did you mean 'last'?"


def test_unknown_names() -> None:
    msg = unknown_names("settings", ["bleachd", "algned"], ["bleached", "aligned"], "suite 'vast'")
    assert msg == ("settings ['bleachd', 'algned'] not in suite 'vast', which has ['bleached', "
                   "'aligned']. Did you mean 'bleached' for 'bleachd', 'aligned' for 'algned'?")
    assert unknown_names("x", ["q"], ["abc"], "here").endswith("which has ['abc'].")
