"""The hostile user's campaign on ``emb extract``'s newer inputs (issue 23's large-model options
and the options around them): each case runs the real command in a child process
(:func:`tests._hostile.run_emb`) on a tiny random Llama or GPT-2 saved to a temporary directory,
and ends as the product promises: refused (exit 1 or 2, one ``Error:`` line, no traceback, no
"internal error", no store written or the store left byte for byte as it was) or accepted (exit
0, the store checked).

Attacked: ``--device-map``, ``--max-memory`` (malformed specs, units, huge and non-ASCII numbers,
devices this machine does not have), ``--offload-dir`` (a file, a path under a file, empty),
``--quantize`` on the CPU, ``--dtype auto``, their combinations; ``--bos-token``, ``--layers``,
``--pooling``, ``--batch-size``, ``--shard`` (N changed between workers too), ``--dry-run`` with
each, ``--name`` clashes; a store re-run with other large-model settings (refused, never mixed).

The defects this campaign found have a test of their own each (``test_defect_*``), fast; the
whole table of cases, a child process each (~5 s), is marked slow.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests import models
from tests._hostile import Outcome, assert_refused, run_emb

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")


@pytest.fixture(scope="module")
def llama(tmp_path_factory) -> Path:
    """A random 2-block Llama (GPT-2's BPE, ``<s>`` put first)."""
    return models.tiny_family(tmp_path_factory.mktemp("llama"), "llama")


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("suite") / "small.yaml"
    path.write_text("name: small\nitems:\n  - {context: 'This is {target}.', word: love}\n"
                    "  - {context: 'This is {target}.', word: war}\n", encoding="utf-8")
    return path


def _extract(model: Path, suite: Path, store: Path, *extra: str) -> Outcome:
    return run_emb("extract", "--model", model, "--suite", suite, "--store", store, "-q", *extra,
                   timeout=120)


def _refused(outcome: Outcome, store: Path, *, mentions: tuple[str, ...] = ()) -> str:
    message = assert_refused(outcome, mentions=mentions)
    assert not store.exists(), f"a refused run wrote {store}:\n{outcome}"
    return message


# -- the defects found, one test each ---------------------------------------------------------------
@pytest.mark.parametrize("spec", ["7=1GiB", "0=1GiB,cpu=1GiB", "mps=1GiB"])
def test_defect_max_memory_naming_a_device_this_machine_lacks(llama, suite, tmp_path, spec):
    """Was: "internal error: RuntimeError: Cannot access accelerator device when none is
    available" (accelerate placed weights on the absent GPU), with --dry-run too."""
    import torch

    if torch.cuda.device_count() > 7 or torch.backends.mps.is_available():  # pragma: no cover
        pytest.fail("this test needs a machine with fewer than 8 GPUs and no MPS")
    store = tmp_path / "s.zarr"
    for extra in ((), ("--dry-run",)):
        message = _refused(_extract(llama, suite, store, "--device-map", "auto",
                                    "--max-memory", spec, *extra), store,
                           mentions=("--max-memory",))
        assert "does not exist" in message or "has no" in message, message


@pytest.mark.parametrize("spec", ["²=1GiB", "١=1GiB", "cpu=١GiB", "cpu=１GiB", "０=1GiB"])
def test_defect_max_memory_with_non_ascii_digits(llama, suite, tmp_path, spec):
    """Was: '²=1GiB' an "internal error: ValueError: invalid literal for int()"; '١=1GiB' taken
    as GPU 1 and 'cpu=１GiB' as 1 GiB without a word."""
    store = tmp_path / "s.zarr"
    _refused(_extract(llama, suite, store, "--device-map", "cpu", "--max-memory", spec), store,
             mentions=("--max-memory", spec))


def test_defect_offload_dir_that_is_not_a_directory(llama, suite, tmp_path):
    """Was: "could not load the directory '<model>': FileExistsError …; give a local directory
    with config.json": the error blamed the model for a bad --offload-dir."""
    file = tmp_path / "file.txt"
    file.write_text("x", encoding="utf-8")
    store = tmp_path / "s.zarr"
    common = ("--device-map", "sequential", "--max-memory", "cpu=1MiB")
    for offload in (file, file / "sub"):
        message = _refused(_extract(llama, suite, store, *common, "--offload-dir", str(offload)),
                           store, mentions=("--offload-dir", str(offload)))
        assert "config.json" not in message, message
    message = _refused(_extract(llama, suite, store, *common, "--offload-dir", ""), store,
                       mentions=("--offload-dir",))
    assert "config.json" not in message, message


@pytest.mark.parametrize("spec", ["cpu=" + "9" * 400, "cpu=" + "9" * 400 + "TiB",
                                  "cpu=99999999999999999999TiB"])
def test_defect_max_memory_beyond_any_machine(llama, suite, tmp_path, spec):
    """Was: "internal error: OverflowError: cannot convert float infinity to integer" for an
    amount beyond a float (and any amount was taken, even beyond 2^63 bytes)."""
    store = tmp_path / "s.zarr"
    _refused(_extract(llama, suite, store, "--device-map", "cpu", "--max-memory", spec), store,
             mentions=("--max-memory",))


@pytest.mark.parametrize("extra", [("--device-map", "cpu"), ("--max-memory", "cpu=1GiB"),
                                   ("--quantize", "8bit"), ("--offload-dir", "offload")],
                         ids=lambda e: e[0])
def test_defect_a_transformers_option_for_static_vectors(suite, tmp_path, extra):
    """Was: accepted and ignored without a word (--bos-token, by contrast, is refused for static
    vectors, and --lowercase-fallback for a transformers model). --revision and
    --trust-remote-code stay ignored for vectors, as tests/backends/test_registry.py wants."""
    vectors = tmp_path / "v.txt"
    vectors.write_text("2 3\nlove 1 0 0\nwar 0 1 0\n", encoding="utf-8")
    store = tmp_path / "s.zarr"
    _refused(_extract(vectors, suite, store, *extra), store, mentions=(extra[0], "static"))


def _two_window_suite(directory: Path) -> Path:
    """A suite of 4,200 items: two compute windows (8 blocks of 512 items each) of static
    vectors, so that --shard 1/2 and 2/2 both have work."""
    path = directory / "big.yaml"
    lines = ["name: big", "items:"] + [
        f"  - {{context: 'Sentence {i} is {{target}}.', word: love}}" for i in range(4200)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _vectors(directory: Path) -> Path:
    path = directory / "v.txt"
    path.write_text("2 3\nlove 1 0 0\nwar 0 1 0\n", encoding="utf-8")
    return path


def _digest(store: Path) -> str:
    """Every file of ``store`` (path and bytes) in one hash: a refused run must leave it so."""
    h = hashlib.sha256()
    for path in sorted(p for p in store.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(store)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def test_defect_dry_run_of_a_shard_with_another_n(tmp_path):
    """Was: a --dry-run with --shard 2/3 on a suite being extracted in 2 shards printed an
    estimate (of 4,096 items), where the real run is refused."""
    vectors, big = _vectors(tmp_path), _two_window_suite(tmp_path)
    store = tmp_path / "s.zarr"
    assert _extract(vectors, big, store, "--shard", "1/2").code == 0
    before = _digest(store)
    for extra in (("--dry-run",), ()):
        assert_refused(_extract(vectors, big, store, "--shard", "2/3", *extra), codes=(1,),
                       mentions=("2 shards", "asks for 3", "--shard I/2"))
        assert _digest(store) == before
    done = _extract(vectors, big, store, "--shard", "2/2")
    assert done.code == 0 and "status    complete" in done.stdout, done
