"""Sharded extraction with a real (tiny, random) torch model, and the --device check against the
devices torch finds: the torch half of tests/store/test_shards.py (the lowest-versions run of the
store tests installs no torch)."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from emb.cli.main import main
from tests.store.test_shards import snapshot


@pytest.fixture
def s3_env(s3_bucket):
    """The session's moto server (tests/conftest.py) and a fresh bucket's name."""
    return dict(os.environ), s3_bucket.removeprefix("s3://")


def test_cuda_index_is_checked_against_the_devices_found(monkeypatch):
    torch = pytest.importorskip("torch")
    from emb.backends._hf_runner import parse_device
    from emb.errors import ModelError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ModelError, match="CUDA is not available"):
        parse_device("cuda:0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(ModelError, match=r"cuda:7' does not exist: this machine has 2 CUDA device\(s\), cuda:0..cuda:1"):
        parse_device("cuda:7")
    assert str(parse_device("cuda:1")) == "cuda:1"


# -- cooperating workers ----------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_shards_of_a_real_model_on_s3_equal_a_local_run(tmp_path, s3_env, monkeypatch):
    """``emb extract --shard`` with a (tiny, random) GPT-2 into S3, two workers one after the
    other, against ``emb extract`` into a local directory: the same bytes."""
    from tests import models

    # 64 items a block: WEAT's 1284 items are 21 blocks in 3 windows, so both shards work
    monkeypatch.setattr("emb.store.suite_writer.block_size_for", lambda *args: 64)
    env, bucket = s3_env
    model = str(models.tiny_gpt2(tmp_path / "gpt2"))
    local = str(tmp_path / "local.zarr")
    remote = f"s3://{bucket}/gpt2.zarr"
    common = ["extract", "--model", model, "--suite", "weat", "--quiet", "--batch-size", "16"]

    def cli(*args: str, code: int = 0) -> str:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result.output

    cli(*common, "--store", local)
    out = cli(*common, "--store", remote, "--shard", "2/2")
    # WEAT repeats words across tests: shard 2's blocks copy rows shard 1 has not written yet
    # (3 windows of 8, 8 and 5 blocks: 8 for shard 1, 13 for shard 2)
    assert "shard 1/2: 0/8 blocks" in out and "status    incomplete" in out
    assert "shard 2/2: 10/13 blocks (+3 waiting for rows of other shards)" in out
    assert "shard 1/2: 0/8 blocks" in cli("validate", remote, code=1)
    out = cli(*common, "--store", remote, "--shard", "1/2", "--device", "cpu")
    assert "status    complete" in out
    assert cli("validate", remote, "--deep").startswith(f"{remote}: complete")
    assert snapshot(remote, "weat") == snapshot(local, "weat")
