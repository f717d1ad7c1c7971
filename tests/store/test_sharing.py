"""Stores shared through real servers on 127.0.0.1 (see ``tests/_servers.py``).

- S3 (moto's server mode): a store written at an ``s3://`` URL reads back bitwise, ``emb info``
  reports its size (the ``fs.du`` of an asynchronous filesystem used to end in "Loop is not
  running"), ``emb validate --deep`` and ``emb analyze vast`` work on it.
- HTTP, read-only: a directory store and its ``emb zip`` file served by a server that answers
  Range requests (aiohttp's static files) give ``emb info``, ``emb validate`` and ``emb analyze
  vast`` the same results as the local store; served by Python's ``http.server`` (no Range) they
  end in one line saying why.
- Bad URLs (unreachable host, 404, a URL that is not a store, an unknown protocol, no credentials,
  a missing bucket): a clear one-line error, a non-zero exit, no traceback.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import emb
from emb.cli.main import main
from emb.errors import StoreError
from emb.extraction.pipeline import extract
from emb.schemas import datamodel as dm
from tests._servers import http_server
from tests.analyses._synthetic import vast_dataset, write_store
from tests.fakes import FakeRunner
from tests.store.test_pipeline import words_suite


def _cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


def _clean_failure(result, *needles: str) -> str:
    """A failed command: non-zero exit, no exception but click's exit, one line saying why."""
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    text = result.output.strip()
    assert "Traceback" not in text
    for needle in needles:
        assert needle in text, text
    return text


def _analyze(store: str, out: Path):
    return _cli("analyze", "vast", "--store", store, "--out", str(out), "--no-plots", "-q")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A served directory: ``toy.zarr`` (a synthetic vast suite), its zip, a non-store directory,
    a directory whose ``zarr.json`` is not JSON; and the local analysis' table to compare with."""
    root = tmp_path_factory.mktemp("site")
    store = write_store(root / "toy.zarr", {"vast": vast_dataset(n_words=40, n_layers=3)})
    emb.open_store(str(store)).to_zip(root / "toy.zarr.zip")
    (root / "notastore").mkdir()
    (root / "notastore" / "readme.txt").write_text("not a store\n")
    (root / "garbled").mkdir()
    (root / "garbled" / "zarr.json").write_text("<html>a web page</html>\n")
    local = tmp_path_factory.mktemp("local")
    assert _analyze(str(store), local).exit_code == 0
    return root, pd.read_csv(local / "vast.csv")


# -- S3 ---------------------------------------------------------------------------------------------
def test_s3_store_written_read_and_reported(s3_bucket, tmp_path):
    s3fs = pytest.importorskip("s3fs")
    url = f"{s3_bucket}/words.zarr"
    extract(FakeRunner(), words_suite(24), url, progress=False, block_size=8)
    local = tmp_path / "words.zarr"
    extract(FakeRunner(), words_suite(24), str(local), progress=False, block_size=8)
    np.testing.assert_array_equal(
        emb.open_store(url).dataset("s").embedding.values,
        emb.open_store(str(local)).dataset("s").embedding.values,
    )
    text = _cli("info", url)
    assert text.exit_code == 0, text.output
    assert "status    complete" in text.output and "size      unknown" not in text.output
    assert f"schema    {dm.STORE_SCHEMA_VERSION}" in text.output
    info = json.loads(_cli("info", "--json", url).output)
    # the size is what the bucket holds under the store's prefix, counted by s3fs itself
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    listed = fs.find(url, detail=True)
    assert info["size_bytes"] == sum(entry["size"] for entry in listed.values()) > 0
    assert info["schema_version"] == dm.STORE_SCHEMA_VERSION and info["complete"]
    deep = _cli("validate", "--deep", url)
    assert deep.exit_code == 0 and "complete" in deep.output


def test_s3_store_analyzed_like_the_local_one(s3_bucket, site, tmp_path):
    _, reference = site
    url = f"{s3_bucket}/toy.zarr"
    write_store(url, {"vast": vast_dataset(n_words=40, n_layers=3)})
    result = _analyze(url, tmp_path)
    assert result.exit_code == 0, result.output
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "vast.csv"), reference)


# -- HTTP -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["toy.zarr", "toy.zarr.zip"])
def test_http_with_range_requests_reads_directory_and_zip(site, tmp_path, name):
    pytest.importorskip("aiohttp")
    root, reference = site
    with http_server(root, range_capable=True) as base:
        url = f"{base}/{name}"
        info = _cli("info", "--json", url)
        assert info.exit_code == 0, info.output
        summary = json.loads(info.output)
        assert summary["complete"] and summary["schema_version"] == dm.STORE_SCHEMA_VERSION
        assert summary["suites"][0]["n_items"] == vast_dataset(n_words=40, n_layers=3).sizes["item"]
        validate = _cli("validate", "--deep", url)
        assert validate.exit_code == 0 and f"{url}: complete" in validate.output
        result = _analyze(url, tmp_path)
        assert result.exit_code == 0, result.output
        np.testing.assert_array_equal(
            emb.open_store(url).dataset("vast").embedding.values,
            emb.open_store(str(root / "toy.zarr")).dataset("vast").embedding.values,
        )
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "vast.csv"), reference)


@pytest.mark.parametrize("name", ["toy.zarr", "toy.zarr.zip"])
def test_http_without_range_requests_is_refused_saying_why(site, tmp_path, name):
    pytest.importorskip("aiohttp")
    root, _ = site
    with http_server(root, range_capable=False) as base:
        url = f"{base}/{name}"
        for result in (_cli("info", url), _cli("validate", url), _analyze(url, tmp_path)):
            text = _clean_failure(result, "ignores HTTP Range requests")
            assert len(text.splitlines()) == 1
        assert not (tmp_path / "vast.csv").exists()


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again: nothing listens there


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        (None, "cannot reach"),
        ("missing.zarr", "404 Not Found"),
        ("missing.zip", "404 Not Found"),
        ("notastore", "404 Not Found"),
        ("notastore/readme.txt", "404 Not Found"),
        ("garbled", "damaged"),
    ],
)
def test_bad_http_urls_are_one_line_errors(site, tmp_path, path, needle):
    pytest.importorskip("aiohttp")
    root, _ = site
    with http_server(root, range_capable=True) as base:
        url = f"http://127.0.0.1:{_dead_port()}/toy.zarr" if path is None else f"{base}/{path}"
        for result in (_cli("info", url), _cli("validate", url), _analyze(url, tmp_path)):
            _clean_failure(result, needle, url)
        with pytest.raises(StoreError, match="read-only"):  # and nothing is written over HTTP
            extract(FakeRunner(), words_suite(2), url, progress=False)


def test_unknown_protocol_is_a_one_line_error(tmp_path):
    url = "nosuchprotocol://host/toy.zarr"
    for result in (_cli("info", url), _cli("validate", url), _analyze(url, tmp_path)):
        _clean_failure(result, "Protocol not known: nosuchprotocol")
    with pytest.raises(StoreError, match="Protocol not known"):
        extract(FakeRunner(), words_suite(2), url, progress=False)


def test_s3_without_credentials_unreachable_or_missing_bucket(s3_bucket, monkeypatch, tmp_path):
    url = f"{s3_bucket}/toy.zarr"
    missing = "s3://no-such-bucket-here/toy.zarr"
    result = _cli("info", missing)
    _clean_failure(result, "no store at s3://no-such-bucket-here/toy.zarr: the bucket "
                   "'no-such-bucket-here' does not exist")
    with pytest.raises(StoreError, match="bucket 'no-such-bucket-here' does not exist"):
        extract(FakeRunner(), words_suite(2), missing, progress=False)
    _clean_failure(_cli("info", f"{s3_bucket}/toy.zarr.zip"), "no zip file at")

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_dead_port()}")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{_dead_port()}")
    monkeypatch.setenv("EMB_RETRIES", "0")  # one try: the endpoint refuses at once
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    for result in (_cli("info", url), _cli("validate", url), _analyze(url, tmp_path)):
        _clean_failure(result, "cannot reach", "EndpointConnectionError")
    with pytest.raises(StoreError, match="cannot reach"):
        extract(FakeRunner(), words_suite(2), url, progress=False)

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3fs.S3FileSystem.clear_instance_cache()
    _clean_failure(_cli("info", url), "cannot reach", "NoCredentialsError")
    s3fs.S3FileSystem.clear_instance_cache()


def test_http_without_its_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # as if not installed: import fails
    with pytest.raises(StoreError, match=r"pip install 'emb\[http\]'"):
        emb.open_store("http://127.0.0.1:9/toy.zarr")


def test_http_without_directory_listing_refuses_the_directory_and_reads_the_zip(site, tmp_path):
    pytest.importorskip("aiohttp")
    root, reference = site
    with http_server(root, range_capable=True, listing=False) as base:
        for result in (_cli("info", f"{base}/toy.zarr"), _analyze(f"{base}/toy.zarr", tmp_path)):
            _clean_failure(result, "does not list its directories", "'emb zip'")
        result = _analyze(f"{base}/toy.zarr.zip", tmp_path)
        assert result.exit_code == 0, result.output
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "vast.csv"), reference)
