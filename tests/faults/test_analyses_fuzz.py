"""Hostile inputs to the analysis side (issue 20): only EmbErrors of a bounded length may escape
the readers of ``emb analyze weat --tests`` files (YAML and JSON), of results sidecars
(:func:`emb.results.read_run`, :mod:`emb.results._sidecar`) and ``emb report``'s page builder.

Hypothesis throws generated documents at them: test files laid out like the real ones with
random JSON values at random places, raw text, and real sidecars with random entries replaced.
The runs are bounded and derandomized (the same examples everywhere), so CI stays fast and stable.
The crash signatures found (each a raw traceback before) are kept as explicit examples.
"""

from __future__ import annotations

import copy
import hashlib
import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, example, given, settings
from hypothesis import strategies as st

from emb.analyses.wordsets.tests_file import TestSpec, load_tests, parse_tests, split_tests
from emb.errors import AnalysisError, EmbError
from emb.results.directory import ResultsError, read_run
from emb.results.report import build_report
from tests.analyses._synthetic import weat_dataset

FUZZ = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: The longest message a refusal may print (a quoted value is cut, never megabytes).
MAX_MESSAGE = 2_000

BILLION_LAUGHS = (
    "description: [&a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"
    + "".join(f", &{n} [{', '.join(['*' + p] * 9)}]" for p, n in zip("abcdef", "bcdefg", strict=True))
    + "]\ntests: {T: {X: *g, Y: [b], A: [c], B: [d]}}\n"
)

_DS = None


def _count(outcome: str) -> None:
    """Tally an outcome in hypothesis' statistics (pytest --hypothesis-show-statistics)."""
    if currently_in_test_context():
        event(outcome)


def _dataset() -> Any:
    global _DS
    if _DS is None:
        _DS = weat_dataset(n_layers=1, d=8, poolings=("last",))
    return _DS


# -- --tests files ---------------------------------------------------------------------------------
json_scalars = (st.none() | st.booleans() | st.integers(-10**30, 10**30)
                | st.floats(allow_nan=False, allow_infinity=False)
                | st.text(max_size=6) | st.sampled_from(["flower0", "insect1", "caress", "abuse",
                                                        "WEAT1", "X", "pleasant", "test"]))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5) | st.sampled_from(
                               ["words", "labels", "name", "X", "test", "role"]), inner, max_size=3),
                           max_leaves=8)
words = st.lists(st.sampled_from(["flower0", "flower1", "insect0", "insect1", "caress",
                                  "freedom", "abuse", "crash", "nowhere"]), min_size=1, max_size=3)
role = (words | st.fixed_dictionaries({}, optional={
    "words": words | json_values,
    "labels": st.dictionaries(st.sampled_from(["test", "role", "group", "stimulus_set", "nope"]),
                              st.sampled_from(["WEAT1", "X", "A", "flowers", "pleasant", "z"])
                              | st.lists(st.sampled_from(["WEAT1", "B", "insects"]), max_size=2),
                              max_size=2) | json_values,
    "name": st.sampled_from(["flowers", "insects"]) | json_values,
}) | json_values)
test_body = st.fixed_dictionaries({r: words | role for r in ("X", "Y", "A", "B")},
                                  optional={"x": role, "Q": json_values})
good_labels = st.sampled_from([{"test": "WEAT1", "role": "A"}, {"stimulus_set": "pleasant"},
                               {"group": ["flowers", "insects"]}, {"role": "B"}])
good_role = (words | st.fixed_dictionaries({"labels": good_labels}, optional={"name": st.text(max_size=4)})
             | st.fixed_dictionaries({"words": words}, optional={"labels": good_labels}))
good_documents = st.fixed_dictionaries(
    {"tests": st.dictionaries(st.text(min_size=1, max_size=6),
                              st.fixed_dictionaries({r: good_role for r in ("X", "Y", "A", "B")}),
                              min_size=1, max_size=2)},
    optional={"description": st.text(max_size=10)})
documents = good_documents | (st.fixed_dictionaries({"tests": st.dictionaries(st.text(min_size=1, max_size=6),
                                                             test_body, min_size=1, max_size=2)
                                    | json_values},
                                   optional={"description": json_values, "test": json_values})
                                | json_values)


def _yaml_text(doc: Any) -> str:
    import yaml

    # unshared (a JSON round trip): PyYAML writes an object met twice as an anchor and aliases
    return yaml.safe_dump(json.loads(json.dumps(doc)), allow_unicode=True, default_flow_style=None)


@st.composite
def weat_test_files(draw: st.DrawFn) -> tuple[str, str]:
    doc = draw(documents)
    kind = draw(st.sampled_from(["json", "yaml", "yml"]))
    text = json.dumps(doc) if kind == "json" else _yaml_text(doc)
    if draw(st.integers(0, 4)) == 0:  # a stray token somewhere: broken syntax, an alias, a tag
        at = draw(st.integers(0, len(text)))
        token = draw(st.sampled_from(["*a", "&a ", "!!set ", "[", "}", ": ", "\t", "2020-01-01",
                                      "\ud800", "- ", "'", "NaN", "1e999", "9" * 5000]))
        text = text[:at] + token + text[at:]
    return kind, text


def _check_tests_file(kind: str, text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"tests.{kind}"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            names, definitions = split_tests([str(path)])
            assert names == [] and len(definitions) == 1
            specs = parse_tests(definitions[0], _dataset())
        except EmbError as err:
            assert isinstance(err, AnalysisError), repr(err)
            assert len(str(err)) < MAX_MESSAGE, f"{len(str(err)):,} characters: {str(err)[:300]}"
            _count("refused")
            return
        _count("read")
        assert specs and all(isinstance(s, TestSpec) for s in specs)
        for spec in specs:
            assert set(spec.words) == {"X", "Y", "A", "B"}
            assert all(isinstance(w, str) for ws in spec.words.values() for w in ws)


@FUZZ
@given(case=weat_test_files())
@example(case=("yaml", BILLION_LAUGHS))
@example(case=("yaml", "tests: " + "[" * 5000 + "]" * 5000))
@example(case=("json", '{"tests": ' + "[" * 50_000 + "]" * 50_000 + "}"))
@example(case=("yaml", "tests:\n" + "".join(" " * i + "a:\n" for i in range(1, 400))))
@example(case=("yaml", "tests: {T: {X: [a], Y: [b], A: [c], B: {words: [[" + "x, " * 1_000 + "]]}}}"))
@example(case=("json", '{"tests": {"' + "T" * 5_000 + '": 1}}'))
@example(case=("yaml", "tests: {T: {X: [a], Y: [b], A: [c], B: [d]}}\nwhen: 2020-01-01\n"))
@example(case=("yaml", "tests: {T: {X: [.nan], Y: [b], A: [c], B: [d]}}"))
def test_only_analysis_errors_of_bounded_length_escape_a_tests_file(case: tuple[str, str]) -> None:
    _check_tests_file(*case)


@FUZZ
@given(text=st.text(st.sampled_from("tes:{}[],&*!X\n -'\"1.\\u"), max_size=60))
def test_raw_text_tests_files(text: str) -> None:
    for kind in ("yaml", "json"):
        _check_tests_file(kind, text)


def test_a_tests_file_over_its_size_limit_is_refused_unread(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from emb.analyses.wordsets import tests_file as _weat_tests

    monkeypatch.setattr(_weat_tests, "MAX_FILE_BYTES", 100)
    path = tmp_path / "big.yaml"
    path.write_text("tests: {T: {X: [a], Y: [b], A: [c], B: [d]}}\n" + "#" * 200)
    with pytest.raises(AnalysisError, match="more than the 100 a test file may have"):
        load_tests(path)


# -- results sidecars and emb report ---------------------------------------------------------------
_FILES = {"weat.nc": b"netcdf stand-in", "weat.csv": b"model,d\nx,1.0\n",
          "weat_heatmap_last.png": b"\x89PNG stand-in", "weat_heatmap_last.pdf": b"%PDF stand-in"}


def _sidecar() -> dict[str, Any]:
    """A sidecar as 'emb analyze weat' writes it (entries and their shapes)."""
    return {
        "emb_results": 1, "analysis": "weat", "suite": "weat",
        "stores": {"toy": "toy.zarr"},
        "provenance": {"toy": {"store_path": "toy.zarr", "model": {"model_id": "toy", "revision": "0"},
                               "suite": {"name": "weat", "content_hash": "abc", "n_items": 3},
                               "extraction": {"dtype": "float32", "versions": {"emb": "1"}}}},
        "options": {"n_permutations": 100}, "output": {"table_format": "auto"},
        "command": "emb analyze weat --store toy.zarr", "analysed_at": "2025-01-01T00:00:00",
        "versions": {"emb": "1", "numpy": "2"},
        "files": {n: hashlib.sha256(b).hexdigest() for n, b in _FILES.items()},
        "tables": {"weat": {"file": "weat.csv", "format": "csv", "rows": 1,
                            "columns": {"model": "dimension 'model'", "d": "Cohen's d"}}},
        "figures": {"heatmap_last": ["weat_heatmap_last.png", "weat_heatmap_last.pdf"]},
        "figure_titles": {"heatmap_last": "WEAT d"},
        "summary": {"title": "WEAT", "headline": ["declared cell"], "table": [{"test": "T", "d": 1.5}],
                    "notes": ["a note"]},
        "attrs": {"analysis": "weat", "n_permutations": 100, "parameters": {"x": 1}},
    }


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


_PLACES = [p for p in _paths(_sidecar()) if p]


@st.composite
def sidecars(draw: st.DrawFn) -> dict[str, Any]:
    meta = copy.deepcopy(_sidecar())
    for _ in range(draw(st.integers(1, 3))):
        place = draw(st.sampled_from(_PLACES))
        value = draw(json_values | st.sampled_from(list(_FILES)) | st.lists(
            st.sampled_from([*_FILES, "../x", "", {"a": 1}, 3]), max_size=3))
        target = meta
        try:
            for key in place[:-1]:
                target = target[key]
            target[place[-1]] = value
        except (KeyError, IndexError, TypeError):
            pass
    return meta


def _check_run(meta: Any, text: str | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        run.mkdir()
        for name, content in _FILES.items():
            (run / name).write_bytes(content)
        (run / "weat.json").write_text(text if text is not None else json.dumps(meta),
                                       encoding="utf-8", errors="surrogatepass")
        for fmt in ("html", "md"):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    page = build_report([str(run)], str(Path(tmp) / f"page.{fmt}"), format=fmt)
            except EmbError as err:
                assert isinstance(err, ResultsError), repr(err)
                assert len(str(err)) < MAX_MESSAGE, f"{len(str(err)):,} characters: {str(err)[:300]}"
                with pytest.raises(ResultsError):
                    read_run(run / "weat.json")
                _count("refused")
                continue
            _count("page written")
            assert page.is_file() and read_run(run / "weat.json")


def test_the_sidecar_fixture_makes_a_page() -> None:
    _check_run(_sidecar())


@FUZZ
@given(meta=sidecars())
@example(meta={**_sidecar(), "figures": {"heatmap_last": [{"a": 1}]}})  # TypeError: unhashable
@example(meta={**_sidecar(), "figures": {"heatmap_last": "weat_heatmap_last.png"}})
@example(meta={**_sidecar(), "emb_results": "9" * 100_000})
@example(meta={**_sidecar(), "files": ["x" * 100_000]})
def test_only_results_errors_of_bounded_length_escape_a_sidecar(meta: dict[str, Any]) -> None:
    _check_run(meta)


@FUZZ
@given(text=st.text(st.sampled_from('{}[]",:0123456789.-etruflanemb_rsI\\ud800'), max_size=40))
@example(text='{"emb_results": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}")  # RecursionError
@example(text=json.dumps(_sidecar())[:-1] + ', "x": ' + "[" * 500 + "]" * 500 + "}")  # 500 deep
@example(text='{"emb_results": NaN}')
@example(text='{"emb_results": 1}\n\x00')
def test_raw_text_sidecars(text: str) -> None:
    _check_run(None, text)
