"""The sample of the shared corpus is the one the sampler gave before its rewrite for speed
(digests pinned in tests/fixtures/ceat_sample_digests.json by the old implementation), with one
worker and with two."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.corpus._pinned_sample import CASES, PINNED, digests


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_sample_equals_the_pinned_one(case: tuple, data_dir: Path) -> None:
    pinned = json.loads(PINNED.read_text())[case[0]]
    got = digests(data_dir, case, workers=2 if case[1] > 1 else 1)
    differ = sorted(w for w in pinned if got.get(w) != pinned[w])
    assert set(got) == set(pinned)
    assert not differ, f"{len(differ)} of {len(pinned)} stimuli sampled differently: {differ[:10]}"
