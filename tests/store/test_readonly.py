"""Reading never needs write access, and a store opened for reading is never modified.

The store directory (or zip file) and everything in it are made read-only (chmod), and every
file's SHA-256, size, mode and mtime, and every directory's listing and mtime, are recorded
before and compared after ``emb info``, ``emb validate --deep``, ``emb analyze vast`` and
``Store.dataset(...)`` with its values read: as root (CI) chmod does not stop a write, the
checksums and mtimes still catch one.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import emb
from emb.cli.main import main
from tests.analyses._synthetic import vast_dataset, write_store

WRITE = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


def _snapshot(path: Path) -> dict[str, tuple]:
    """Every file and directory under ``path`` (or ``path`` itself): content hash, size, mode,
    mtime; directories their sorted listing, mode and mtime."""
    paths = [path, *sorted(path.rglob("*"))] if path.is_dir() else [path]
    out = {}
    for p in paths:
        st = p.stat()
        key = p.relative_to(path).as_posix() if path.is_dir() else p.name
        if p.is_dir():
            out[key] = ("dir", tuple(sorted(c.name for c in p.iterdir())), st.st_mode, st.st_mtime_ns)
        else:
            digest = hashlib.sha256(p.read_bytes()).hexdigest()
            out[key] = ("file", digest, st.st_size, st.st_mode, st.st_mtime_ns)
    return out


def _set_writable(path: Path, writable: bool) -> None:
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        mode = p.stat().st_mode
        p.chmod(mode | stat.S_IWUSR if writable else mode & ~WRITE)


@pytest.fixture
def readonly_stores(tmp_path):
    """A directory store and its zip, in a read-only directory, themselves read-only."""
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    store = write_store(shelf / "toy.zarr", {"vast": vast_dataset(n_words=30, n_layers=3)})
    emb.open_store(str(store)).to_zip(shelf / "toy.zarr.zip")
    _set_writable(shelf, False)
    yield shelf
    _set_writable(shelf, True)  # let pytest clean up


@pytest.mark.parametrize("name", ["toy.zarr", "toy.zarr.zip"])
def test_reading_a_readonly_store_changes_nothing(readonly_stores, tmp_path, name):
    shelf = readonly_stores
    path = shelf / name
    assert not os.stat(path).st_mode & WRITE and not os.stat(shelf).st_mode & WRITE
    before, shelf_before = _snapshot(path), _snapshot(shelf)
    runner = CliRunner()
    for args in (["info", str(path)], ["info", "--json", str(path)], ["validate", "--deep", str(path)],
                 ["analyze", "vast", "--store", str(path), "--out", str(tmp_path / "out"), "-q",
                  "--no-plots"]):
        result = runner.invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, (args, result.output)
    store = emb.open_store(str(path))
    ds = store.dataset("vast")
    values = ds.embedding.values
    assert np.isfinite(values).all() and values.shape[0] == ds.sizes["item"]
    assert store.info().complete and store.validate(deep=True).status == "complete"
    assert (tmp_path / "out" / "vast.csv").is_file()
    assert _snapshot(path) == before
    assert _snapshot(shelf) == shelf_before  # nothing beside it either (no lock, no temp file)
