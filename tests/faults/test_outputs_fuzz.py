"""Hostile files where emb writes: only ResultsErrors (or a plain answer) may come out of the
readers of the output side: the journal of an interrupted swap, an earlier run's sidecar in
``--out``, a report's figure-directory manifest, an existing suite file, and the output-path rule.
The hypothesis runs are bounded and derandomized (the same examples on every run)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from emb.analyses import ANALYSES
from emb.errors import EmbError
from emb.files.outputs import claim, refuse_inside_store, zarr_store_around
from emb.results.directory import ResultsError, _recover, _swap, prepare_out

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)
NAMES = st.sampled_from(["weat.csv", "weat.json", "keep.txt", "../keep.txt", "", ".", "a/b", "x\\y"])
DIGESTS = st.one_of(st.text(max_size=8), st.integers(), st.none())


def _journal(stem: Any, files: Any, remove: Any, exports: Any, version: Any) -> dict[str, Any]:
    return {"emb_swap": version, "stem": stem, "files": files, "remove": remove, "exports": exports}


JOURNALS = st.builds(
    _journal,
    stem=st.sampled_from(["weat", "", "../weat", "a/b", 3]),
    files=st.one_of(JSON, st.dictionaries(NAMES, DIGESTS, max_size=4)),
    remove=st.one_of(JSON, st.dictionaries(NAMES, DIGESTS, max_size=4)),
    exports=st.one_of(JSON, st.dictionaries(
        st.sampled_from(["/tmp/x.json", "rel.json", ""]),
        st.fixed_dictionaries({"temp": st.sampled_from(["/tmp/.x.json.emb-partial-1", "/etc/passwd",
                                                        "rel"]),
                               "sha256": DIGESTS, "replaces": DIGESTS}), max_size=2)),
    version=st.sampled_from([1, 2, "1", None]),
)


@FUZZ
@given(content=st.one_of(JOURNALS.map(json.dumps), JSON.map(json.dumps),
                         st.binary(max_size=64).map(lambda b: b.decode("latin-1"))),
       moved=st.booleans())
@example(content='{"emb_swap": 1, "stem": "weat", "files": {"weat.json": "0"}, "remove": '
                 '{"keep.txt": "0"}, "exports": {}}', moved=True)
def test_a_damaged_swap_journal_never_escapes_or_touches_other_files(content: str, moved: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "res"
        out.mkdir()
        (out / "keep.txt").write_text("a user's file")
        (out / "weat.json").write_text("{}")
        swap = out / f".weat.emb-{'swap' if moved else 'partial'}-0000abcd"
        swap.mkdir()
        (swap / _swap.JOURNAL).write_text(content, encoding="utf-8", errors="replace")
        (swap / "weat.json").write_text("{}")
        with claim(out / "weat", what="--out", error=ResultsError) as held:
            try:
                notes = _recover(held, out)
            except ResultsError:
                notes = None
        assert (out / "keep.txt").read_text() == "a user's file"
        if notes is not None:
            assert not swap.exists()
        assert sorted(p.name for p in Path(tmp).iterdir()) == ["res"]


@FUZZ
@given(sidecar=st.one_of(JSON.map(json.dumps), st.text(max_size=40),
                         st.fixed_dictionaries({"emb_results": JSON, "analysis": st.just("weat"),
                                                "files": st.one_of(JSON, st.dictionaries(
                                                    NAMES, DIGESTS, max_size=3))}).map(json.dumps)),
       overwrite=st.booleans())
def test_an_earlier_sidecar_in_out_is_read_or_refused(sidecar: str, overwrite: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        (out / "weat.json").write_text(sidecar, encoding="utf-8")
        (out / "keep.txt").write_text("mine")
        try:
            plan = prepare_out(out, ANALYSES["weat"], overwrite=overwrite)
        except ResultsError:
            plan = None
        assert (out / "keep.txt").read_text() == "mine"  # prepare_out removes nothing
        if plan is not None:
            assert all(p.parent == out for p in plan.replaced)
            assert out / "keep.txt" not in plan.replaced


@FUZZ
@given(manifest=st.one_of(JSON.map(json.dumps), st.binary(max_size=40).map(bytes.hex)),
       extra=st.booleans())
def test_a_report_figure_directory_manifest_is_read_or_refused(manifest: str, extra: bool) -> None:
    from emb.results.report import _ASSETS_MANIFEST, _check_assets

    with tempfile.TemporaryDirectory() as tmp:
        assets = Path(tmp) / "r_files"
        assets.mkdir()
        (assets / _ASSETS_MANIFEST).write_text(manifest)
        (assets / "00_a.png").write_bytes(b"png")
        if extra:
            (assets / "mine.txt").write_text("mine")
        try:
            replace = _check_assets(assets)
        except ResultsError:
            replace = False
        assert replace in (True, False)
        if extra:
            assert not replace


@FUZZ
@given(head=st.binary(max_size=80))
@example(head=b'{\n "schema_version": 1,\n "name": "x"')
@example(head=b"schema_version: 1\nname: x\n")
def test_an_existing_suite_file_is_recognised_or_left_alone(head: bytes) -> None:
    from emb.stimuli.suites.core import _is_suite_file

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.json"
        path.write_bytes(head)
        assert _is_suite_file(path) in (True, False)


@FUZZ
@given(parts=st.lists(st.sampled_from(["s.zarr", "zarr.json", "weat", "..", ".", "x", "a b", "é",
                                       "\0", "~", "//"]), max_size=5))
def test_the_output_path_rule_answers_for_any_path(parts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.zarr"
        (store / "weat").mkdir(parents=True)
        (store / "zarr.json").write_text("{}")
        path = os.path.join(tmp, *parts) if parts else tmp
        try:
            refuse_inside_store(path, what="results", error=ResultsError, fix="give another")
        except ResultsError as err:
            assert "NUL byte" in str(err) if "\0" in path else zarr_store_around(path) is not None
        else:
            assert zarr_store_around(path) is None


def test_a_path_with_a_nul_byte_is_an_emb_error(tmp_path: Path) -> None:
    """A path the file system cannot hold (a NUL byte, from the Python API) is an EmbError."""
    with pytest.raises(EmbError):
        prepare_out(tmp_path / "a\0b", ANALYSES["weat"])
