"""The suites a run asks for (:func:`emb.stimuli.build_suites`): names with the options given,
files, and the usage errors ``emb extract`` shows for options no requested suite takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from emb.errors import OptionError
from emb.stimuli import (
    BUILTIN_SUITES,
    Item,
    Suite,
    build_suite,
    build_suites,
    suite_warnings,
    write_suite,
)


def test_names_and_files_are_built_in_order(tmp_path: Path) -> None:
    mine = Suite(name="mine", items=(Item(context="I love you", word="love", char_start=2,
                                          char_end=6),))
    path = write_suite(mine, tmp_path / "mine.json")
    weat, loaded = build_suites(["weat", str(path)], {"select": ("WEAT5",), "seed": None})
    assert weat.content_hash() == build_suite("weat", select=["WEAT5"]).content_hash()
    assert loaded.content_hash() == mine.content_hash()


def test_an_option_no_requested_suite_takes_is_a_usage_error() -> None:
    with pytest.raises(OptionError, match="--corpus belongs to suite vast") as err:
        build_suites(["weat"], {"corpus": ("c.txt",)})
    assert err.value.option is None
    # an option a backend takes too (static vectors' --allow-missing) is not refused
    assert len(build_suites(["weat"], {"allow_missing": True}, shared={"allow_missing"})) == 1


def test_one_value_for_an_option_taken_once_and_unknown_specs_name_their_flag() -> None:
    with pytest.raises(OptionError, match="takes one --wording; got 2") as err:
        build_suites(["vast"], {"wording": ("paper", "reference")})
    assert err.value.option == "--wording"
    with pytest.raises(OptionError, match="neither a built-in suite") as err:
        build_suites(["no-such-suite"], {})
    assert err.value.option == "--suite"


def test_warnings_name_their_suite() -> None:
    suite = build_suite("intersectional")
    lines = suite_warnings([suite, Suite(name="plain", items=suite.items[:1])])
    assert lines == [f"intersectional: {line}" for line in
                     BUILTIN_SUITES["intersectional"].warnings(suite)]
    assert len(lines) == 1 and "no --lexicon given" in lines[0]
