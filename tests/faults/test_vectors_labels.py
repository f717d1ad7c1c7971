"""Label values at their edges (issue 20): item labels are stored as str or float64.

An integer a float64 cannot hold exactly (beyond 2^53) was rounded without a word; it is refused,
naming the file, the item and the fix (write it as a string). ``-0.0`` is ``0.0`` (same content
hash), numpy numbers are numbers, booleans are refused with the fix, huge values name the range.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import emb
from emb.errors import SuiteError
from emb.stimuli.suites import Item, Suite, load_suite
from tests._hostile import assert_refused, run_emb


def _item(**labels) -> Item:
    return Item(context="love", word="love", char_start=0, char_end=4, labels=labels)


def _suite_file(tmp_path: Path, labels_json: str, name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text('{"name": "s", "items": [{"context": "I love", "word": "love", "labels": '
                    + labels_json + "}]}", encoding="utf-8")
    return path


def test_an_inexact_integer_label_is_refused_on_the_command_line(tmp_path):
    vectors = tmp_path / "v.txt"
    vectors.write_text("1 2\nlove 1 0\n", encoding="utf-8")
    suite = _suite_file(tmp_path, '{"id": 9007199254740993}')
    store = tmp_path / "s.zarr"
    outcome = run_emb("extract", "--model", vectors, "--suite", suite, "--store", store, "-q",
                      "--storage-dtype", "float32", timeout=60)
    assert_refused(outcome, codes=(1,), mentions=["s.json", "$.items[0]", "'id'",
                                                  "9007199254740993", "as a string"])
    assert not store.exists()
    # written as a string it is kept digit for digit
    suite = _suite_file(tmp_path, '{"id": "9007199254740993"}')
    done = run_emb("extract", "--model", vectors, "--suite", suite, "--store", store, "-q",
                   "--storage-dtype", "float32", timeout=60)
    assert done.code == 0, done
    assert emb.open_store(str(store)).dataset("s")["id"].values.tolist() == ["9007199254740993"]


@pytest.mark.parametrize("value", [2**53 + 1, -(2**53) - 1, 2**63 - 1, np.int64(2**62 + 1),
                                   np.uint64(2**64 - 1), 10**300])
def test_integers_a_float64_cannot_hold_are_refused(value):
    with pytest.raises(SuiteError, match=r"cannot hold exactly .* give it as a string"):
        _item(x=value)


@pytest.mark.parametrize("value", [2**53, -(2**53), 2**60, 2**1000, 10**22, 0, -7],
                         ids=["2^53", "-2^53", "2^60", "2^1000", "10^22", "0", "-7"])
def test_integers_a_float64_holds_are_kept_exactly(value):
    assert int(_item(x=value).labels["x"]) == value


@pytest.mark.parametrize("value", [10**400, -(10**309)], ids=["10^400", "-10^309"])
def test_integers_beyond_the_float64_range_name_it(value):
    with pytest.raises(SuiteError, match=r"beyond the range of a float64 label"):
        _item(x=value)


def test_minus_zero_is_zero_and_hashes_as_zero(tmp_path):
    for value in (-0.0, np.float64(-0.0), np.float16(-0.0)):
        stored = _item(x=value).labels["x"]
        assert stored == 0.0 and math.copysign(1.0, stored) == 1.0
    minus = load_suite(_suite_file(tmp_path, '{"x": -0.0}', "minus.json"))
    plus = load_suite(_suite_file(tmp_path, '{"x": 0}', "plus.json"))
    assert minus.content_hash() == plus.content_hash()
    assert json.dumps(minus.to_dict()) == json.dumps(plus.to_dict())


def test_numpy_numbers_are_numbers():
    labels = _item(a=np.int64(5), b=np.float32(1.5), c=np.uint8(7), d=np.float64(2.25)).labels
    assert labels == {"a": 5.0, "b": 1.5, "c": 7.0, "d": 2.25}
    assert all(type(v) is float for v in labels.values())


@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_booleans_are_refused_with_the_fix(value):
    with pytest.raises(SuiteError, match=r"is the boolean (True|False), but must be a string or a "
                                         r"number: give \"true\"/\"false\" or 1/0"):
        _item(x=value)


def test_huge_and_tiny_floats_are_kept(tmp_path):
    suite = Suite(name="s", items=(_item(x=1.7976931348623157e308), _item(x=5e-324)))
    assert [i.labels["x"] for i in suite.items] == [1.7976931348623157e308, 5e-324]
    assert suite.columns()["x"].tolist() == [1.7976931348623157e308, 5e-324]
    again = Suite.from_dict(json.loads(json.dumps(suite.to_dict())))
    assert again.content_hash() == suite.content_hash()
