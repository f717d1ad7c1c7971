"""The hostile user's campaign on ``emb extract``'s newer inputs (issue 23's large-model options
and the options around them): each case runs the real command in a child process
(:func:`tests._hostile.run_emb`) on a tiny random Llama or GPT-2 saved to a temporary directory,
and ends as the product promises: refused (exit 1 or 2, one ``Error:`` line, no traceback, no
"internal error", no store written or the store left byte for byte as it was) or accepted (exit
0, the store checked).

Attacked: ``--device-map``, ``--max-memory`` (malformed specs, units, huge and non-ASCII numbers,
devices this machine does not have), ``--offload-dir`` (a file, a path under a file, empty),
``--quantize`` on the CPU (bitsandbytes' CPU backend), ``--dtype auto``, their combinations; ``--bos-token``, ``--layers``,
``--pooling``, ``--batch-size``, ``--shard`` (N changed between workers too), ``--dry-run`` with
each, ``--name`` clashes; a store re-run with other large-model settings (refused, never mixed).

The defects this campaign found have a test of their own each (``test_defect_*``), fast; the
whole table of cases, a child process each (~5 s), is marked slow.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
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


@pytest.mark.parametrize("offload", ["/proc/sys/offload", "/sys/offload", "/proc/offload"])
def test_defect_offload_dir_that_cannot_be_made(llama, suite, tmp_path, offload):
    """Places no one may make a directory in on Linux, root included (whom permission bits do
    not stop). Was: the same error blaming the model ("could not load the directory '<model>':
    PermissionError …")."""
    store = tmp_path / "s.zarr"
    message = _refused(_extract(llama, suite, store, "--device-map", "sequential", "--max-memory",
                                "cpu=1MiB", "--offload-dir", offload), store,
                       mentions=("--offload-dir", offload))
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
    # a complete suite has no shard left to claim: another N finds it complete, as before
    completed = _digest(store)
    again = _extract(vectors, big, store, "--shard", "1/3")
    assert again.code == 0 and "already complete" in again.stdout, again
    assert _digest(store) == completed


# -- the campaign: every case, a child process each ------------------------------------------------
#: (id, model, arguments, expected): expected is "refused" with the words the error names, or
#: "accepted" with the store's (layers, poolings) and the model attributes it records
REFUSED, ACCEPTED = "refused", "accepted"
ALL_POOLINGS = ("first", "last", "mean", "max")
OFFLOAD = "{tmp}/offload"  # replaced by a directory of the case's own
CASES = [
    # --device-map
    ("map-auto", "llama", ("--device-map", "auto"), (ACCEPTED, [0, 1, 2], ALL_POOLINGS,
                                                     {"device_map": "auto"})),
    ("map-balanced", "llama", ("--device-map", "balanced"), (ACCEPTED, [0, 1, 2], ALL_POOLINGS,
                                                             {"device_map": "balanced"})),
    ("map-sequential", "llama", ("--device-map", "sequential"),
     (ACCEPTED, [0, 1, 2], ALL_POOLINGS, {"device_map": "sequential"})),
    ("map-cpu", "llama", ("--device-map", "cpu"), (ACCEPTED, [0, 1, 2], ALL_POOLINGS,
                                                   {"device_map": "cpu"})),
    ("map-garbage", "llama", ("--device-map", "garbage"), (REFUSED, "--device-map", "garbage")),
    ("map-empty", "llama", ("--device-map", ""), (REFUSED, "--device-map")),
    ("map-upper", "llama", ("--device-map", "AUTO"), (REFUSED, "--device-map", "AUTO")),
    # --max-memory, malformed
    ("mem-no-amount", "llama", ("--max-memory", "0="), (REFUSED, "--max-memory", "'0='")),
    ("mem-no-device", "llama", ("--max-memory", "=5GiB"), (REFUSED, "--max-memory", "'=5GiB'")),
    ("mem-negative", "llama", ("--max-memory", "cpu=-1GiB"), (REFUSED, "--max-memory", "-1GiB")),
    ("mem-twice", "llama", ("--max-memory", "0=70GiB,0=1GiB"), (REFUSED, "--max-memory", "twice")),
    ("mem-twice-case", "llama", ("--device-map", "cpu", "--max-memory", "cpu=1GiB,CPU=2GiB"),
     (REFUSED, "--max-memory", "twice")),
    ("mem-exponent", "llama", ("--device-map", "cpu", "--max-memory", "cpu=1e3MiB"),
     (REFUSED, "--max-memory", "1e3MiB")),
    ("mem-nan", "llama", ("--device-map", "cpu", "--max-memory", "cpu=nanGiB"),
     (REFUSED, "--max-memory", "nanGiB")),
    ("mem-unit", "llama", ("--device-map", "cpu", "--max-memory", "cpu=5 parsecs"),
     (REFUSED, "--max-memory", "parsecs")),
    ("mem-cuda-name", "llama", ("--device-map", "auto", "--max-memory", "cuda:0=1GiB"),
     (REFUSED, "--max-memory", "cuda:0=1GiB")),
    ("mem-disk", "llama", ("--device-map", "auto", "--max-memory", "disk=1GiB"),
     (REFUSED, "--max-memory", "disk=1GiB")),
    ("mem-minus-index", "llama", ("--device-map", "auto", "--max-memory", "-1=1GiB"),
     (REFUSED, "--max-memory", "-1=1GiB")),
    ("mem-two-equals", "llama", ("--device-map", "cpu", "--max-memory", "cpu=1GiB=2"),
     (REFUSED, "--max-memory", "cpu=1GiB=2")),
    ("mem-empty", "llama", ("--device-map", "auto", "--max-memory", ""), (REFUSED, "--max-memory",
                                                                          "empty")),
    ("mem-comma", "llama", ("--device-map", "auto", "--max-memory", ","), (REFUSED, "--max-memory",
                                                                           "empty")),
    ("mem-unicode-digit", "llama", ("--device-map", "cpu", "--max-memory", "cpu=１GiB"),
     (REFUSED, "--max-memory", "１GiB")),
    ("mem-superscript", "llama", ("--device-map", "cpu", "--max-memory", "²=1GiB"),
     (REFUSED, "--max-memory", "²=1GiB")),
    ("mem-huge", "llama", ("--device-map", "cpu", "--max-memory", "cpu=" + "9" * 400),
     (REFUSED, "--max-memory", "more than any device")),
    ("mem-absent-gpu", "llama", ("--device-map", "auto", "--max-memory", "7=1GiB"),
     (REFUSED, "--max-memory", "GPU 7", "does not exist")),
    ("mem-absent-mps", "llama", ("--device-map", "auto", "--max-memory", "mps=1GiB"),
     (REFUSED, "--max-memory", "mps", "does not exist")),
    ("mem-too-small", "llama", ("--device-map", "auto", "--max-memory", "cpu=1KiB"),
     (REFUSED, "does not fit", "--offload-dir")),
    ("mem-too-small-whole", "llama", ("--max-memory", "cpu=1KiB"), (REFUSED, "does not fit",
                                                                    "cpu needs")),
    # --max-memory, accepted
    ("mem-space-gb", "llama", ("--device-map", "cpu", "--max-memory", "cpu=5 GB"),
     (ACCEPTED, [0, 1, 2], ALL_POOLINGS, {"device_map": "cpu"})),
    ("mem-lower-unit", "llama", ("--device-map", "cpu", "--max-memory", "CPU=5gib"),
     (ACCEPTED, [0, 1, 2], ALL_POOLINGS, {"device_map": "cpu"})),
    ("mem-decimal", "llama", ("--device-map", "balanced", "--max-memory", "cpu=1.5GiB,"),
     (ACCEPTED, [0, 1, 2], ALL_POOLINGS, {"device_map": "balanced"})),
    ("mem-no-map", "llama", ("--max-memory", "cpu=1GiB"), (ACCEPTED, [0, 1, 2], ALL_POOLINGS,
                                                           {"device_map": None})),
    # --offload-dir
    ("offload-no-map", "llama", ("--offload-dir", OFFLOAD), (REFUSED, "--offload-dir",
                                                             "--device-map")),
    ("offload-file", "llama", ("--device-map", "sequential", "--max-memory", "cpu=1MiB",
                               "--offload-dir", "{tmp}/file.txt"),
     (REFUSED, "--offload-dir", "is a file")),
    ("offload-under-file", "llama", ("--device-map", "sequential", "--max-memory", "cpu=1MiB",
                                     "--offload-dir", "{tmp}/file.txt/sub"),
     (REFUSED, "--offload-dir", "under the file")),
    ("offload-empty", "llama", ("--device-map", "sequential", "--max-memory", "cpu=1MiB",
                                "--offload-dir", ""), (REFUSED, "--offload-dir", "empty")),
    ("offload-disk", "llama", ("--device-map", "sequential", "--max-memory", "cpu=1MiB",
                               "--offload-dir", OFFLOAD),
     (ACCEPTED, [0, 1, 2], ALL_POOLINGS, {"device_map": "sequential"})),
    ("offload-disk-layers", "llama", ("--device-map", "sequential", "--max-memory", "cpu=1MiB",
                                      "--offload-dir", OFFLOAD, "--layers", "0,1"),
     (ACCEPTED, [0, 1], ALL_POOLINGS, {"device_map": "sequential", "loaded_blocks": 1})),
    # --quantize, --dtype
    # (bitsandbytes 0.46 and later runs on the CPU: the quantize extra, which the tests install)
    ("quantize-8bit-cpu", "llama", ("--quantize", "8bit"),
     (ACCEPTED, [0, 1, 2], ALL_POOLINGS, {"quantization": "8bit"})),
    ("quantize-map-cpu", "llama", ("--quantize", "8bit", "--device-map", "cpu"),
     (ACCEPTED, [0, 1, 2], ALL_POOLINGS, {"quantization": "8bit", "device_map": "cpu"})),
    ("quantize-dry-run-too-small", "llama", ("--quantize", "4bit", "--dry-run", "--max-memory",
                                             "cpu=1KiB"), (REFUSED, "does not fit", "4bit")),
    # (4-bit stores: tests/backends/test_quantize.py, on layers >= 64 features wide, as
    # bitsandbytes' CPU 4-bit kernels need on CPUs with AVX-512 BF16)
    ("quantize-garbage", "llama", ("--quantize", "2bit"), (REFUSED, "--quantize", "2bit")),
    ("dtype-auto", "llama", ("--dtype", "auto"), (ACCEPTED, [0, 1, 2], ALL_POOLINGS,
                                                  {"dtype": "float32"})),
    ("dtype-garbage", "llama", ("--dtype", "float8"), (REFUSED, "--dtype", "float8")),
    ("map-cpu-bf16", "llama", ("--device-map", "cpu", "--dtype", "bfloat16"),
     (ACCEPTED, [0, 1, 2], ALL_POOLINGS, {"device_map": "cpu", "dtype": "bfloat16"})),
    ("map-layers", "llama", ("--device-map", "auto", "--layers", "1"),
     (ACCEPTED, [1], ALL_POOLINGS, {"device_map": "auto", "loaded_blocks": 1})),
    ("map-device-cuda", "llama", ("--device", "cuda", "--device-map", "auto"),
     (REFUSED, "cuda", "not available")),
    ("map-gguf-like-vectors", "vectors", ("--device-map", "cpu"), (REFUSED, "--device-map",
                                                                   "static")),
    ("quantize-vectors", "vectors", ("--quantize", "8bit"), (REFUSED, "--quantize", "static")),
    # --bos-token
    ("bos-not-in-vocab", "llama", ("--bos-token", "notatoken"), (REFUSED, "--bos-token",
                                                                 "notatoken")),
    ("bos-two-tokens", "llama", ("--bos-token", "<s></s>"), (REFUSED, "--bos-token", "<s></s>")),
    ("bos-empty", "llama", ("--bos-token", ""), (REFUSED, "--bos-token")),
    ("bos-space", "llama", ("--bos-token", " "), (REFUSED, "--bos-token")),
    ("bos-other-model", "llama", ("--bos-token", "<|im_start|>"), (REFUSED, "--bos-token",
                                                                   "<|im_start|>")),
    ("bos-and-no-bos", "llama", ("--bos-token", "<|endoftext|>", "--no-bos"),
     (REFUSED, "--bos-token", "--no-bos")),
    ("bos-eot", "llama", ("--bos-token", "<|endoftext|>"), (ACCEPTED, [0, 1, 2], ALL_POOLINGS,
                                                           {})),
    ("bos-gpt2-s", "gpt2", ("--bos-token", "<s>"), (REFUSED, "--bos-token", "<s>")),
    ("bos-minilm-sep", "minilm", ("--bos-token", "[SEP]"), (REFUSED, "--bos-token")),
    ("bos-minilm-cls", "minilm", ("--bos-token", "[CLS]", "--layers", "-1", "--pooling", "mean"),
     (ACCEPTED, [6], ("mean",), {})),
    ("bos-minilm-eot", "minilm", ("--bos-token", "<|endoftext|>"), (REFUSED, "--bos-token",
                                                                    "[CLS]")),
    ("bos-vectors", "vectors", ("--bos-token", "love"), (REFUSED, "--bos-token", "static")),
    # --layers
    ("layers-above", "llama", ("--layers", "5"), (REFUSED, "layer 5", "0..2")),
    ("layers-below", "llama", ("--layers", "-4"), (REFUSED, "layer -4")),
    ("layers-empty-part", "llama", ("--layers", "0,,1"), (REFUSED, "layers")),
    ("layers-huge", "llama", ("--layers", "9" * 30), (REFUSED, "does not exist")),
    ("layers-unicode-minus", "llama", ("--layers", "−1"), (REFUSED, "layers", "−1")),
    ("layers-float", "llama", ("--layers", "0.5"), (REFUSED, "layers", "0.5")),
    ("layers-duplicate", "llama", ("--layers", "0,0,-3"), (ACCEPTED, [0], ALL_POOLINGS, {})),
    ("layers-minus-zero", "llama", ("--layers", "-0"), (ACCEPTED, [0], ALL_POOLINGS, {})),
    ("layers-top", "llama", ("--layers", "ALL"), (ACCEPTED, [0, 1, 2], ALL_POOLINGS, {})),
    # --pooling
    ("pooling-repeat", "llama", ("--pooling", "mean", "--pooling", "mean"), (REFUSED, "poolings",
                                                                           "distinct")),
    ("pooling-unknown", "llama", ("--pooling", "median"), (REFUSED, "poolings", "median")),
    ("pooling-commas", "llama", ("--pooling", ","), (REFUSED, "poolings")),
    ("pooling-spaces", "llama", ("--pooling", " mean , max "), (ACCEPTED, [0, 1, 2],
                                                               ("mean", "max"), {})),
    # --batch-size
    ("batch-zero", "llama", ("--batch-size", "0"), (REFUSED, "--batch-size", "got 0")),
    ("batch-negative", "llama", ("--batch-size", "-1"), (REFUSED, "--batch-size", "-1")),
    ("batch-float", "llama", ("--batch-size", "1.5"), (REFUSED, "--batch-size", "1.5")),
    ("batch-huge", "llama", ("--batch-size", "9" * 20), (ACCEPTED, [0, 1, 2], ALL_POOLINGS, {})),
    ("batch-one-map", "llama", ("--batch-size", "1", "--device-map", "cpu"),
     (ACCEPTED, [0, 1, 2], ALL_POOLINGS, {"device_map": "cpu"})),
    # --shard
    ("shard-zero", "llama", ("--shard", "0/4"), (REFUSED, "--shard", "1 <= I <= N", "0/4")),
    ("shard-above", "llama", ("--shard", "5/4"), (REFUSED, "--shard", "1 <= I <= N", "5/4")),
    ("shard-of-zero", "llama", ("--shard", "1/0"), (REFUSED, "--shard", "1 <= I <= N", "1/0")),
    ("shard-three-parts", "llama", ("--shard", "1/4/2"), (REFUSED, "--shard", "1/4/2")),
    ("shard-empty", "llama", ("--shard", ""), (REFUSED, "--shard")),
    ("shard-huge", "llama", ("--shard", "1/" + "9" * 20), (REFUSED, "--shard", "N <= 100,000")),
    ("shard-more-than-windows", "llama", ("--shard", " 1/4"), (REFUSED, "--shard 1/4",
                                                               "1 compute window")),
    ("shard-one", "llama", ("--shard", "1/1"), (ACCEPTED, [0, 1, 2], ALL_POOLINGS, {})),
    # --dry-run with the above
    ("dry-absent-gpu", "llama", ("--dry-run", "--device-map", "auto", "--max-memory", "7=1GiB"),
     (REFUSED, "GPU 7")),
    ("dry-offload-file", "llama", ("--dry-run", "--device-map", "sequential", "--max-memory",
                                   "cpu=1MiB", "--offload-dir", "{tmp}/file.txt"),
     (REFUSED, "--offload-dir")),
    ("dry-no-offload", "llama", ("--dry-run", "--device-map", "sequential", "--max-memory",
                                 "cpu=1MiB"), (REFUSED, "does not fit", "--offload-dir")),
    ("dry-bos", "llama", ("--dry-run", "--bos-token", "nope"), (REFUSED, "--bos-token")),
    ("dry-layers", "llama", ("--dry-run", "--layers", "9"), (REFUSED, "layer 9")),
    ("dry-pooling", "llama", ("--dry-run", "--pooling", "x"), (REFUSED, "poolings")),
    ("dry-batch", "llama", ("--dry-run", "--batch-size", "0"), (REFUSED, "--batch-size")),
    ("dry-shard", "llama", ("--dry-run", "--shard", "1/2"), (REFUSED, "--shard 1/2")),
    ("dry-name", "llama", ("--dry-run", "--name", "a/b"), (REFUSED, "group name", "a/b")),
    # --name
    ("name-two-for-one", "llama", ("--name", "a", "--name", "b"), (REFUSED, "group name",
                                                                   "1 suites")),
    ("name-dotdot", "llama", ("--name", ".."), (REFUSED, "group name", "'..'")),
    ("name-progress", "llama", ("--name", "_progress"), (REFUSED, "group name")),
    ("name-zarr-json", "llama", ("--name", "zarr.json"), (REFUSED, "zarr.json")),
    ("name-newline", "llama", ("--name", "a\nb"), (REFUSED, "group name")),
    ("name-long", "llama", ("--name", "x" * 300), (REFUSED, "300 characters")),
]


def _model(kind: str, llama: Path, tmp_path: Path) -> Path:
    if kind == "llama":
        return llama
    if kind == "gpt2":
        return models.tiny_gpt2(tmp_path / "gpt2")
    if kind == "minilm":
        return models.minilm_dir()
    return _vectors(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_campaign(llama, suite, tmp_path, case):
    _, kind, args, expected = case
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    args = tuple(a.replace("{tmp}", str(tmp_path)) for a in args)
    store = tmp_path / "s.zarr"
    outcome = _extract(_model(kind, llama, tmp_path), suite, store, *args)
    if expected[0] == REFUSED:
        _refused(outcome, store, mentions=expected[1:])
        return
    _, layers, poolings, recorded = expected
    assert outcome.code == 0 and "status    complete" in outcome.stdout, outcome
    import emb

    opened = emb.open_store(str(store))
    ds = opened.dataset("small")
    assert ds.layer.values.tolist() == layers and tuple(ds.pooling.values) == poolings
    model = opened.model
    for key, value in recorded.items():
        assert model.get(key) == value, (key, model)


# -- a store re-run with other large-model settings: refused, never mixed --------------------------
#: (arguments of the re-run, words of the refusal); the store was written with no options
CHANGED = [
    (("--dtype", "float16"), ("dtype", "'float32'", "'float16'")),
    (("--dtype", "bfloat16"), ("dtype", "'bfloat16'")),
    (("--layers", "0"), ("layers", "[0]")),
    (("--device-map", "cpu"), ("another model", "device_map")),
    (("--device-map", "sequential", "--max-memory", "cpu=1MiB", "--offload-dir", "{tmp}/off"),
     ("another model", "device_map")),
    (("--device-map", "cpu", "--overwrite"), ("another model", "device_map")),
    (("--quantize", "8bit"), ("quantization", "'8bit'")),
    (("--pooling", "mean"), ("poolings",)),
    (("--storage-dtype", "float32"), ("storage_dtype",)),
    (("--bos-token", "<|endoftext|>"), ("bos_token",)),
]


@pytest.mark.slow
def test_a_store_rerun_with_other_large_model_settings(llama, suite, tmp_path):
    store = tmp_path / "s.zarr"
    assert _extract(llama, suite, store).code == 0
    before = _digest(store)
    for args, words in CHANGED:
        args = tuple(a.replace("{tmp}", str(tmp_path)) for a in args)
        assert_refused(_extract(llama, suite, store, *args), codes=(1,), mentions=words)
        assert _digest(store) == before, args
    # --dtype auto is float32 on the CPU: the same run, accepted
    again = _extract(llama, suite, store, "--dtype", "auto")
    assert again.code == 0 and "status    complete" in again.stdout, again
    # --overwrite replaces the suite with the other layers: never a mix of both
    replaced = _extract(llama, suite, store, "--layers", "0", "--overwrite")
    assert replaced.code == 0, replaced
    import emb

    assert emb.open_store(str(store)).dataset("small").layer.values.tolist() == [0]
    assert_refused(_extract(llama, suite, store, "--layers", "all"), codes=(1,),
                   mentions=("layers", "[0]"))


@pytest.mark.slow
def test_a_mapped_store_rerun_without_the_map_or_with_another_dtype(llama, suite, tmp_path):
    store = tmp_path / "s.zarr"
    assert _extract(llama, suite, store, "--device-map", "cpu", "--dtype", "auto").code == 0
    before = _digest(store)
    for args, words in [((), ("another model", "device_map")),
                        (("--device-map", "auto"), ("another model", "'auto'")),
                        (("--device-map", "cpu", "--dtype", "float16"), ("dtype",))]:
        assert_refused(_extract(llama, suite, store, *args), codes=(1,), mentions=words)
        assert _digest(store) == before, args
    again = _extract(llama, suite, store, "--device-map", "cpu", "--name", "small2",
                     "--layers", "0")
    assert again.code == 0, again


def test_accepted_placements_store_the_whole_models_vectors(llama, suite, tmp_path):
    """What the accepted large-model options store: the vectors of the model loaded whole (to
    1e-6 in float32), with the blocks on disk and --layers cutting the model too."""
    import emb

    def vectors(name: str, *extra: str):
        store = tmp_path / f"{name}.zarr"
        done = _extract(llama, suite, store, "--storage-dtype", "float32", *extra)
        assert done.code == 0, done
        return emb.open_store(str(store)).dataset("small").embedding

    whole = vectors("whole")
    offloaded = vectors("disk", "--device-map", "sequential", "--max-memory", "cpu=1MiB",
                        "--offload-dir", str(tmp_path / "offload"), "--layers", "0,1",
                        "--dtype", "auto", "--batch-size", "1")
    assert offloaded.layer.values.tolist() == [0, 1]
    np.testing.assert_allclose(offloaded.values, whole.sel(layer=[0, 1]).values, rtol=0,
                               atol=1e-6)
    assert not np.allclose(whole.sel(layer=0).values, whole.sel(layer=1).values)
