"""``emb extract --store s3://…`` against a real S3-protocol server (moto on 127.0.0.1): it ends
with the store's summary, not a traceback (the summary's size used to call a synchronous ``du`` on
zarr's asynchronous filesystem: "Loop is not running"); bad store URLs end in one line."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import emb
from emb.cli.main import main
from emb.schemas import datamodel as dm
from tests import models

SUITE = "tests/fixtures/store_v1_suite.yaml"


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> str:
    return str(models.tiny_bert(tmp_path_factory.mktemp("bert")))


def test_extract_into_s3_ends_with_its_summary(s3_bucket, bert_dir, tmp_path):
    url = f"{s3_bucket}/bert.zarr"
    result = CliRunner().invoke(main, ["extract", "-m", bert_dir, "-s", SUITE, "--store", url, "-q"])
    assert result.exit_code == 0, result.output
    assert f"store     {url}" in result.output and "status    complete" in result.output
    assert "size      unknown" not in result.output and f"schema    {dm.STORE_SCHEMA_VERSION}" in result.output
    local = tmp_path / "bert.zarr"
    assert CliRunner().invoke(main, ["extract", "-m", bert_dir, "-s", SUITE, "--store", str(local),
                                     "-q"]).exit_code == 0
    np.testing.assert_array_equal(emb.open_store(url).dataset("mini").embedding.values,
                                  emb.open_store(str(local)).dataset("mini").embedding.values)
    again = CliRunner().invoke(main, ["extract", "-m", bert_dir, "-s", SUITE, "--store", url, "-q"])
    assert again.exit_code == 0 and "mini: already complete (5 items)" in again.output


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("http://127.0.0.1:9/bert.zarr", "an HTTP server is read-only"),
        ("nosuchprotocol://x/bert.zarr", "Protocol not known"),
        ("s3://no-such-bucket-anywhere/bert.zarr", "does not exist"),
    ],
)
def test_extract_to_a_bad_url_is_one_line(s3_bucket, bert_dir, url, needle):
    result = CliRunner().invoke(main, ["extract", "-m", bert_dir, "-s", SUITE, "--store", url, "-q"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in result.output
