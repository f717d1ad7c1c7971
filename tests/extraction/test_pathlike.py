"""The public extraction API takes ``os.PathLike`` wherever it takes a path (issue 9)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import emb
from emb.extraction import extract
from emb.stimuli.suites import load_suite


def test_extract_takes_pathlib_model_suite_and_store(tiny_bert_dir: Path, tmp_path: Path) -> None:
    suite_file = tmp_path / "tiny.yaml"
    suite_file.write_text(
        "name: tiny\nitems:\n"
        "  - {context: 'This is {target}.', word: love}\n"
        "  - {context: 'A rose is red.', word: rose}\n",
        encoding="utf-8",
    )
    store = tmp_path / "tiny.zarr"
    assert isinstance(tiny_bert_dir, Path)
    reports = extract(tiny_bert_dir, load_suite(suite_file), store, progress=False)
    assert reports[0].n_items == 2
    ds = emb.open_store(store).dataset("tiny")
    assert list(np.asarray(ds["word"].values).astype(str)) == ["love", "rose"]
    # the same call with plain strings writes the same vectors
    again = tmp_path / "again.zarr"
    extract(str(tiny_bert_dir), load_suite(str(suite_file)), str(again), progress=False)
    other = emb.open_store(str(again)).dataset("tiny")
    np.testing.assert_array_equal(ds["embedding"].values, other["embedding"].values)


def test_pathlike_that_is_not_a_model_is_a_model_error(tmp_path: Path) -> None:
    from emb.errors import ModelError

    (tmp_path / "s.yaml").write_text("name: s\nitems:\n  - {context: 'x {target}', word: y}\n")
    with pytest.raises(ModelError, match="nowhere"):
        extract(tmp_path / "nowhere", load_suite(tmp_path / "s.yaml"), tmp_path / "s.zarr",
                progress=False)
