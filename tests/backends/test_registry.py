"""The backends' table: which backend opens a model spec, the options given checked against it,
and a third party's backend added through the ``emb.backends`` entry-point group (a fake
distribution's entry point, monkeypatched in) that the pipeline then runs like a built-in one."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import numpy as np
import pytest

import emb
from emb import backends
from emb.backends import Backend, Runner
from emb.backends.static import StaticBackend
from emb.cli.main import _backend_options  # imported before a test installs the toy backend
from emb.errors import EmbWarning, ModelError, OptionError
from emb.extraction.pipeline import extract
from emb.stimuli import Item, Suite, SuiteOption
from tests.fakes import FakeRunner


def _suite(name: str = "s", **parameters) -> Suite:
    items = (Item(context="I love you", word="love", char_start=2, char_end=6),
             Item(context="I hate you", word="hate", char_start=2, char_end=6))
    return Suite(name=name, items=items, parameters=parameters)


@pytest.fixture
def vectors(tmp_path: Path) -> Path:
    path = tmp_path / "v.txt"
    path.write_text("3 2\nlove 1 0\nhate 0 1\nLove 1 1\n")
    return path


def test_a_vectors_file_is_static_and_anything_else_hf(vectors: Path, tmp_path: Path) -> None:
    assert backends.resolve(vectors).name == "static"
    assert backends.resolve(str(vectors)).name == "static"
    assert backends.resolve("gpt2").name == "hf"
    assert backends.resolve(tmp_path / "missing.vec").name == "hf"  # no such file: a hub id
    odd = tmp_path / "vectors.data"
    odd.write_text("love 1 0\n")
    assert backends.resolve(odd).name == "hf"
    assert backends.resolve(odd, format="glove").name == "static"  # --format says so


def test_options_are_checked_against_the_backend_that_opens_the_model(vectors: Path) -> None:
    assert backends.check_options(vectors, {"lowercase_fallback": True}).name == "static"
    # a transformers option for a vectors file is ignored, as it always was
    assert backends.check_options(vectors, {"revision": "main"}).name == "static"
    with pytest.raises(OptionError, match="static vectors files only"):
        backends.check_options("gpt2", {"lowercase_fallback": True})
    with pytest.raises(OptionError, match="static vectors files only"):
        backends.check_options("gpt2", {"allow_missing": True}, suites=[_suite()])
    # ceat takes --allow-missing too: a suite built with it lets the flag through
    assert backends.check_options(
        "gpt2", {"allow_missing": True}, suites=[_suite(allow_missing=True)]
    ).name == "hf"
    with pytest.raises(OptionError, match="Did you mean 'lowercase_fallback'"):
        backends.check_options(vectors, {"lowercase_fallbak": True})


def test_load_hands_each_backend_its_own_options(vectors: Path) -> None:
    runner = backends.load(vectors, [_suite()], lowercase_fallback=True, revision="ignored")
    assert runner.lowercase_fallback is True and set(runner.vectors) >= {"love", "hate"}
    (covered,), pools = runner.prepare([_suite()], poolings=("first",), storage_dtype="float16",
                                       bos_token=None)
    assert pools == ("static",) and covered.parameters["vectors"]["n_missing"] == 0
    assert runner.notes([covered]) == ["s: 2 of 2 words have a vector in v.txt"]


def test_the_protocol_defaults_leave_suites_and_poolings_as_asked() -> None:
    runner = FakeRunner()
    suites, pools = runner.prepare([_suite()], poolings=("mean", "first"), storage_dtype="float16",
                                   bos_token="<s>")
    assert [s.name for s in suites] == ["s"] and pools == ("mean", "first")
    assert runner.notes(suites) == [] and runner.poolings == emb.backends.POOLINGS
    with pytest.raises(ModelError, match="no vocabulary of tokens"):
        runner.token_id("<s>")


# -- a backend of another distribution ---------------------------------------------------------------
class ToyRunner(FakeRunner):
    """The fake runner, its vectors multiplied by the toy backend's option."""

    gain: float = 1.0

    def embed(self, encodings, **kwargs):
        return super().embed(encodings, **kwargs) * np.float32(self.gain)


class ToyBackend(Backend):
    """Opens ``*.toy`` files: what a third party's one file declares."""

    name = "toy"
    description = "toy models (*.toy)"
    label = "toy"
    options = (SuiteOption(name="gain", type=float, default=1.0, help="Multiply the vectors."),)

    def guess_can_open(self, model, **options):
        return model.endswith(".toy")

    def load(self, model, *, suites, dtype, device, gain=1.0):
        runner = ToyRunner()
        runner.gain = gain
        return runner


@pytest.fixture
def toy_installed(monkeypatch: pytest.MonkeyPatch):
    """A distribution declaring ``toy = tests.backends.test_registry:ToyBackend`` in group
    ``emb.backends``, beside a broken entry point and one that takes a built-in's name."""
    entries = [
        importlib.metadata.EntryPoint("toy", f"{__name__}:ToyBackend", "emb.backends"),
        importlib.metadata.EntryPoint("broken", f"{__name__}:NoSuchBackend", "emb.backends"),
        importlib.metadata.EntryPoint("static", f"{__name__}:ToyBackend", "emb.backends"),
        importlib.metadata.EntryPoint("object", "pathlib:Path", "emb.backends"),
    ]
    real = importlib.metadata.entry_points

    def entry_points(**select):
        if select.get("group") == "emb.backends":
            return importlib.metadata.EntryPoints(entries)
        return real(**select)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    backends.available.cache_clear()
    yield
    backends.available.cache_clear()


def test_an_entry_point_adds_a_backend_the_pipeline_runs(toy_installed, tmp_path: Path) -> None:
    with pytest.warns(EmbWarning) as caught:
        found = backends.available()
    assert list(found) == ["static", "hf", "toy"]
    assert isinstance(found["static"], StaticBackend)  # a built-in's name is not taken over
    left_out = " ".join(str(w.message) for w in caught)
    assert "'broken'" in left_out and "'static'" in left_out and "not an emb.backends.Backend" in left_out
    assert backends.resolve(tmp_path / "m.toy").name == "toy"  # asked before the catch-all hf
    assert backends.resolve("gpt2").name == "hf"
    one, two = tmp_path / "one.zarr", tmp_path / "two.zarr"
    extract(str(tmp_path / "m.toy"), _suite(), one, progress=False)
    extract(str(tmp_path / "m.toy"), _suite(), two, progress=False, gain=2.0)
    a = emb.open_store(one).dataset("s")["embedding"].values.astype(np.float32)
    b = emb.open_store(two).dataset("s")["embedding"].values.astype(np.float32)
    np.testing.assert_allclose(b, 2 * a, rtol=1e-3)
    with pytest.raises(OptionError, match="gain"):
        backends.check_options("gpt2", {"gian": 2.0})


def test_the_cli_has_a_flag_for_each_backend_option(toy_installed) -> None:
    with pytest.warns(EmbWarning):
        flags = [decorator(lambda **kw: None).__click_params__[0] for decorator in _backend_options()]
    by_name = {param.name: param for param in flags}
    assert set(by_name) == {"format", "lowercase_fallback", "allow_missing", "revision",
                            "trust_remote_code", "device_map", "max_memory", "offload_dir",
                            "quantize", "gain"}
    assert list(by_name["device_map"].type.choices) == ["auto", "balanced", "sequential", "cpu"]
    assert by_name["allow_missing"].help.startswith("[static vectors, ceat] ")
    assert by_name["gain"].help == "[toy] Multiply the vectors."
    assert by_name["trust_remote_code"].is_flag and by_name["revision"].help.startswith("Hub")


def test_a_runner_subclasses_the_protocol() -> None:
    assert Runner in FakeRunner.__mro__ and Runner in backends.StaticRunner.__mro__
