"""No numpy repr in the refusals and warnings of weat, ceat and ibd (issue 24): every message is
built from plain Python values, whatever numpy scalars or arrays the caller (or the store's
labels) handed in. ``np.str_('WEAT10')`` in a message is a bug at its source."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from emb.analyses import ANALYSES
from emb.errors import EmbError
from emb.files.documents import show

#: What a numpy scalar's repr looks like (``np.str_('WEAT10')``, ``np.int64(3)``, ``np.float64(nan)``).
NUMPY_REPR = re.compile(r"np\.(str_|int\d*|float\d*|bool_?|uint\d*)\(|array\(")

S, N, F = np.str_, np.int64, np.float64

CASES = {
    "weat": [
        {"seed": N(-1)}, {"min_words": N(0)}, {"alternative": S("bigger")},
        {"confidence": F(2.0)}, {"tests": [S("WEAT9")]}, {"tests": np.array(["WEAT9"])},
        {"settings": [S("nope")]}, {"x": [S("a")], "y": [S("b")], "a": [S("c")], "b": [S("d")]},
        {"x": np.array(["a", "a2"]), "y": ["b", "b2"], "a": ["c"], "b": ["c"]},
        {"n_permutations": F(1.5)}, {"correction": S("bonferroni")},
    ],
    "ceat": [
        {"tests": [S("T9")]}, {"n_bootstrap": N(5)}, {"n_samples": N(1)}, {"min_words": N(0)},
        {"alternative": S("up")},
    ],
    "ibd": [
        {"groups": [S("martian")]}, {"settings": [S("x")]}, {"contrast": S("martian")},
        {"thresholds": [F("nan")]}, {"thresholds": np.array([-1.0, -0.5])},
        {"thresholds": S("1:2:0")}, {"min_words": N(-3)}, {"rule": S("some")},
        {"groups": np.array(["african_female", "european_male"]), "contrast": S("european_male")},
    ],
}


@pytest.mark.parametrize(("name", "options"),
                         [(n, o) for n, cases in CASES.items() for o in cases],
                         ids=[f"{n}-{i}" for n, cases in CASES.items() for i in range(len(cases))])
def test_refusals_and_warnings_are_plain(name, options):
    ds, _ = ANALYSES[name].example()
    with warnings.catch_warnings(record=True) as rec, pytest.raises(EmbError) as err:
        warnings.simplefilter("always")
        ANALYSES[name].function(ds, **options).compute()
    for text in [str(err.value), *(str(w.message) for w in rec)]:
        assert not NUMPY_REPR.search(text), text


@pytest.mark.parametrize(("value", "text"), [
    (S("WEAT10"), "'WEAT10'"), (N(3), "3"), ([S("a"), S("b")], "['a', 'b']"),
    ([F("nan")], "[nan]"), (np.array([1, 2]), "[1, 2]"), ((S("x"),), "('x',)"),
])
def test_show_is_plain(value, text):
    assert show(value) == text
