"""The extraction's options, declared once (:mod:`emb.extraction.options`): each default in its
record alone, one validator and one message from Python and the CLI, ``emb extract``'s flags
generated from the records, and the settings parsed once into one frozen object."""

from __future__ import annotations

import dataclasses
import inspect
import re

import click
import pytest
from click.testing import CliRunner

import emb
from emb.backends import base
from emb.backends.static import StaticRunner
from emb.cli.main import main
from emb.errors import EmbError, OptionError
from emb.extraction.options import OPTIONS
from emb.extraction.settings import RECORDED, ExtractionSettings, parse_settings
from emb.extraction.shards import Shard
from emb.options import BATCH_SIZE, DEVICE, DTYPE


def test_every_setting_is_a_record_and_its_default_the_records() -> None:
    fields = {f.name: f.default for f in dataclasses.fields(ExtractionSettings)}
    assert list(fields) == [o.name for o in OPTIONS]
    for option in OPTIONS:
        assert fields[option.name] == option.default, option.name
    assert ExtractionSettings() == parse_settings()
    # the runners and the backends' loader read theirs from the same records
    for embed in (base.Runner.embed, StaticRunner.embed):
        assert inspect.signature(embed).parameters["batch_size"].default == BATCH_SIZE.default
    from emb.backends import load

    params = inspect.signature(load).parameters
    assert (params["dtype"].default, params["device"].default) == (DTYPE.default, DEVICE.default)


def test_what_a_suite_records_is_unchanged() -> None:
    settings = parse_settings(poolings="mean, last", batch_size=8, bos_token="<s>", layers="0,-1",
                              shard="1/2", block_size=4)
    assert list(settings.to_dict()) == list(RECORDED) == [
        "poolings", "dtype", "storage_dtype", "batch_size", "device", "bos", "bos_token"]
    assert settings.to_dict() == {"poolings": ["mean", "last"], "dtype": "float32",
                                  "storage_dtype": "float16", "batch_size": 8, "device": "auto",
                                  "bos": True, "bos_token": "<s>"}
    assert ExtractionSettings.from_dict(settings.to_dict()) == ExtractionSettings(
        poolings=("mean", "last"), batch_size=8, bos=True, bos_token="<s>")
    assert settings.layers == (0, -1) and settings.shard == Shard(1, 2)
    assert settings.shard_label == "shard-1-of-2"


@pytest.mark.parametrize(("name", "value"), [
    ("group_names", ["a", "b"]), ("poolings", " mean , max "), ("poolings", ["last", "first"]),
    ("dtype", "bfloat16"), ("storage_dtype", "float32"), ("batch_size", "16"),
    ("device", " CUDA:1 "), ("shard", " 2 / 8 "), ("shard", (1, 3)), ("bos", "no"),
    ("bos_token", "<|endoftext|>"), ("overwrite", True), ("layers", "0, 6,-1"), ("layers", "ALL"),
    ("layers", [0, -1]), ("dry_run", False), ("block_size", 4), ("window_blocks", 2),
])
def test_a_parsed_value_parses_to_itself(name: str, value: object) -> None:
    """The CLI's types parse a value as click reads it and the front door parses it again."""
    option = {o.name: o for o in OPTIONS}[name]
    once = option.parse(value)
    assert option.parse(once) == once
    assert getattr(parse_settings({name: once}), name) == getattr(parse_settings({name: value}), name)


@pytest.mark.parametrize(("name", "value", "message"), [
    ("batch_size", 0, "--batch-size (batch_size= in Python) must be an integer >= 1; got 0"),
    ("batch_size", 1.5, "--batch-size (batch_size= in Python) must be an integer >= 1; got 1.5"),
    ("dtype", "float8", "--dtype (dtype= in Python) must be one of float32, float16, bfloat16, "
                        "auto; got 'float8'"),
    ("storage_dtype", "int8", "--storage-dtype (storage_dtype= in Python) must be one of "
                              "float16, float32; got 'int8'"),
    ("device", "gpu1", "--device (device= in Python) must be auto, cpu, mps, cuda, or cuda:K for "
                       "GPU K (0-based; 'nvidia-smi -L' lists them); got 'gpu1'"),
    ("poolings", "mean,mean", "--pooling (poolings= in Python) must be distinct names among "
                              "first, last, mean, max; got 'mean,mean'"),
    ("poolings", "median", "must be distinct names among first, last, mean, max; got 'median'"),
    ("layers", "0.5", "--layers (layers= in Python) must be 'all' or integers like '0,6,-1' "
                      "(negative: from the top); got '0.5'"),
    ("layers", [True], "must be 'all' or integers like"),
    ("shard", "0/4", "--shard (shard= in Python) must be I/N with whole numbers 1 <= I <= N <= "
                     "100,000"),
    ("bos_token", "", "--bos-token (bos_token= in Python) must be a token of the model's "
                      "vocabulary, as its tokenizer writes it; got ''"),
    ("window_blocks", 0, "window_blocks= must be an integer >= 1; got 0"),
    ("block_size", -1, "block_size= must be an integer >= 1; got -1"),
])
def test_one_validator_one_message(name: str, value: object, message: str) -> None:
    with pytest.raises(OptionError, match=re.escape(message)) as caught:
        parse_settings({name: value})
    assert isinstance(caught.value, EmbError) and isinstance(caught.value, ValueError)


def test_the_cli_gives_the_message_python_gives(tmp_path) -> None:
    """``--batch-size 0`` is refused by click (a usage error, exit 2, before anything is built
    or loaded) with the record's message; ``emb.extract`` raises it."""
    store = tmp_path / "s.zarr"
    for flag, value, name, python in (("--batch-size", "0", "batch_size", 0),
                                      ("--device", "gpu1", "device", "gpu1"),
                                      ("--pooling", "mean,mean", "poolings", ("mean,mean",)),
                                      ("--layers", "0.5", "layers", "0.5")):
        with pytest.raises(OptionError) as caught:
            emb.extract("none", "weat", store, **{name: python})
        result = CliRunner().invoke(main, ["extract", "-m", "none", "-s", "weat", "--store",
                                           str(store), flag, value])
        assert result.exit_code == 2, result.output
        assert str(caught.value) in " ".join(result.output.split()), (result.output, caught.value)
        assert not store.exists()


def test_the_cli_flags_are_generated_from_the_records() -> None:
    command = main.commands["extract"]
    params = {p.name: p for p in command.params if isinstance(p, click.Option)}
    for option in OPTIONS:
        if not option.cli:
            assert option.name not in params
            continue
        param = params[option.name]
        assert param.opts == [option.cli_flag] and param.help.startswith(option.help)
    assert params["bos"].secondary_opts == ["--no-bos"] and params["overwrite"].is_flag


def test_two_options_that_contradict_each_other_are_refused() -> None:
    assert parse_settings(bos_token="<s>").bos is True
    with pytest.raises(OptionError, match="give one of them"):
        parse_settings(bos_token="<s>", bos=False)
    with pytest.raises(OptionError, match="--overwrite cannot be combined with --shard"):
        parse_settings(shard="1/2", overwrite=True)
    with pytest.raises(OptionError, match=r"option \['batchsize'\] not in the extraction's options.*"
                                          r"Did you mean 'batch_size'"):
        parse_settings(batchsize=2)


def test_the_front_door_names_every_option_it_takes() -> None:
    with pytest.raises(OptionError, match=r"option \['revison'\] not in the options of emb.extract.*"
                                          r"'revision'"):
        emb.extract("none", "weat", "none.zarr", revison="main")


def test_the_pipeline_takes_the_settings_or_their_keywords(tmp_path) -> None:
    from emb.extraction.pipeline import extract
    from tests.fakes import FakeRunner
    from tests.store.test_pipeline import words_suite

    with pytest.raises(TypeError, match="not both"):
        extract(FakeRunner(), words_suite(3), str(tmp_path / "s.zarr"), ExtractionSettings(),
                batch_size=2)
    assert not (tmp_path / "s.zarr").exists()
