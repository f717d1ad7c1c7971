"""``--suite NAME`` and ``--suite LABEL=NAME`` (issue 24): two models' differently named suites
compared in one run, the choice validated and recorded in the results."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from emb.api import analyze as run_analyze
from emb.api import suite_groups
from emb.cli.analyze import analyze
from emb.errors import OptionError, StoreError
from tests.analyses._synthetic import weat_dataset, write_store


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("suites")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on fixed-width string dtypes
        return {
            "a": write_store(root / "a.zarr", {"weat": weat_dataset(seed=1)}, model_id="toy-a"),
            "b": write_store(root / "b.zarr", {"weat_eot": weat_dataset(seed=2, effect=0.5)},
                             model_id="toy-b"),
        }


def _invoke(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(analyze, [*map(str, args), "--quiet"])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_suite_groups_rules() -> None:
    names = ["a", "b"]
    assert suite_groups(None, names, "weat") == {"a": "weat", "b": "weat"}
    assert suite_groups("x", names, "weat") == {"a": "x", "b": "x"}
    assert suite_groups("b=x", names, "weat") == {"a": "weat", "b": "x"}
    assert suite_groups(["y", "b=x"], names, "weat") == {"a": "y", "b": "x"}
    assert suite_groups({"a": "z"}, names, "weat") == {"a": "z", "b": "weat"}
    with pytest.raises(OptionError, match=r"no store is labelled 'c'.*'a' and 'b'|no store is labelled 'c'.*a.*b"):
        suite_groups("c=x", names, "weat")
    with pytest.raises(OptionError, match="two groups"):
        suite_groups(["a=x", "a=y"], names, "weat")
    with pytest.raises(OptionError, match="for every store twice"):
        suite_groups(["x", "y"], names, "weat")
    with pytest.raises(OptionError, match="empty"):
        suite_groups("a=", names, "weat")


def test_two_models_with_differently_named_suites_in_one_run(stores: dict[str, Path],
                                                             tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, output = _invoke("weat", "--store", f"a={stores['a']}", "--store", f"b={stores['b']}",
                           "--suite", "b=weat_eot", "--test", "WEAT1", "--n-permutations", "200",
                           "--exact-limit", "0", "--n-bootstrap", "0",
                           "--no-plots", "--out", out)
    assert code == 0, output
    meta = json.loads(next(out.glob("*.json")).read_text())
    assert meta["suite"] == {"a": "weat", "b": "weat_eot"}
    assert "--suite b=weat_eot" in meta["command"]
    # the same numbers as each store analysed alone
    both = run_analyze("weat", {"a": stores["a"], "b": stores["b"]}, suite={"b": "weat_eot"},
                       tests=["WEAT1"], n_permutations=200, exact_limit=0, n_bootstrap=0)
    alone = run_analyze("weat", {"b": stores["b"]}, suite="weat_eot", tests=["WEAT1"],
                        n_permutations=200, exact_limit=0, n_bootstrap=0)
    d = both.dataset["effect_size"]
    np.testing.assert_allclose(d.sel(model="b").values,
                               alone.dataset["effect_size"].sel(model="b").values)
    assert not np.allclose(d.sel(model="a").values, d.sel(model="b").values)


def test_unknown_label_is_a_usage_error_listing_the_labels(stores: dict[str, Path]) -> None:
    code, output = _invoke("weat", "--store", f"a={stores['a']}", "--store", f"b={stores['b']}",
                           "--suite", "smol=weat_eot", "--no-plots")
    assert code == 2
    assert "no store is labelled 'smol'" in output and "'a'" in output and "'b'" in output
    assert "Traceback" not in output


def test_unknown_suite_in_that_store_lists_what_it_has(stores: dict[str, Path]) -> None:
    code, output = _invoke("weat", "--store", f"a={stores['a']}", "--store", f"b={stores['b']}",
                           "--no-plots")
    assert code == 1
    assert "has no suite 'weat'" in output and "weat_eot" in output and "label 'b'" in output
    assert "--suite b=NAME" in output
    with pytest.raises(StoreError, match="has no suite 'nope'"):
        run_analyze("weat", {"a": stores["a"]}, suite={"a": "nope"})
