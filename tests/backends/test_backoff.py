"""The out-of-memory back-off (emb.backends._backoff): failures injected through the runner's
fault hook on chosen forward passes halve the batch; the store is byte-identical to a run without
failures; a context that fails alone ends the run with the clear message and a resumable store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from emb.backends import load_model  # noqa: E402
from emb.backends._backoff import (  # noqa: E402
    BackOff,
    InjectedOOM,
    describe,
    forward_with_backoff,
    is_oom,
)
from emb.errors import ModelError  # noqa: E402
from emb.extract import extract  # noqa: E402
from tests.store.test_pipeline import item, make_suite  # noqa: E402

LONG = "The committee that met on Tuesday postponed its decision about the old bridge until spring"


def _suite():
    items = [item(f"They said {w} twice.", w, setting="random")
             for w in ("love", "war", "peace", "hate", "joy", "fear", "hope", "rage")]
    items += [item(f"This is word{i} here.", f"word{i}", setting="random") for i in range(24)]
    items += [item(LONG.replace("bridge", f"bridge{i}"), f"bridge{i}", setting="random")
              for i in range(8)]
    return make_suite(items, name="oom")


def _runner(model_dir, fault=None):
    runner = load_model(model_dir, device="cpu")
    runner.oom_fault = fault
    return runner


def _chunks(store: Path) -> dict[str, bytes]:
    """Every chunk file of the store's arrays (the bytes of the vectors and coordinates)."""
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*"))
            if p.is_file() and "c" in p.relative_to(store).parts}


def _extract(runner, store, **kwargs):
    return extract(runner, _suite(), store, batch_size=8, block_size=8, window_blocks=1,
                   progress=False, bos=True, **kwargs)


def test_halving_gives_the_whole_batchs_states_and_is_remembered():
    calls = []

    def forward(ids, mask):
        calls.append(tuple(ids.shape))
        return (ids.float() * 2, ids.float() + mask)

    ids = torch.arange(8 * 5).reshape(8, 5)
    mask = torch.ones_like(ids)
    state = BackOff()
    out = forward_with_backoff(forward, ids, mask, state=state, fault=InjectedOOM(calls={1, 2}))
    torch.testing.assert_close(out[0], ids.float() * 2)
    torch.testing.assert_close(out[1], ids.float() + 1)
    # pass 1 (8 rows) and pass 2 (its first half, 4 rows) failed: 2 + 2 + 4 rows ran
    assert calls == [(2, 5), (2, 5), (4, 5)]
    assert state.events == [{"tokens": 5, "batch": 8, "to": 4}, {"tokens": 5, "batch": 4, "to": 2}]
    calls.clear()
    forward_with_backoff(forward, torch.ones(6, 7, dtype=torch.long), torch.ones(6, 7),
                         state=state)  # longer: starts at the size that fitted
    assert calls == [(2, 7)] * 3
    calls.clear()
    forward_with_backoff(forward, torch.ones(6, 3, dtype=torch.long), torch.ones(6, 3),
                         state=state)  # shorter: whole
    assert calls == [(6, 3)]
    assert describe(state.events).startswith("out of memory 2 time(s); batches halved: 8→4 at 5")


def test_other_errors_pass_through():
    def forward(ids, mask):
        raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):
        forward_with_backoff(forward, torch.ones(4, 2), torch.ones(4, 2), state=BackOff())
    assert is_oom(RuntimeError("MPS backend out of memory (MPS allocated: 1 GB)"))
    assert not is_oom(RuntimeError("shape mismatch"))


def test_the_fault_hook_from_the_environment():
    hook = InjectedOOM.from_env("calls=2,5; tokens>=30")
    assert hook.calls == {2, 5} and hook.min_tokens == 30
    assert InjectedOOM.from_env("") is None
    with pytest.raises(ModelError, match="EMB_INJECT_OOM='batches=2' is not 'calls=2,5'"):
        InjectedOOM.from_env("batches=2")


def test_a_loaded_runner_reads_the_hook_from_the_environment(tiny_gpt2_dir, monkeypatch):
    monkeypatch.setenv("EMB_INJECT_OOM", "calls=1")
    runner = load_model(tiny_gpt2_dir, device="cpu")
    assert isinstance(runner.oom_fault, InjectedOOM) and runner.oom_fault.calls == {1}


def test_the_store_is_byte_identical_to_a_run_without_failures(tiny_gpt2_dir, tmp_path):
    clean = tmp_path / "clean.zarr"
    (plain,) = _extract(_runner(tiny_gpt2_dir), clean)
    assert plain.backoffs == ()
    faulty = tmp_path / "faulty.zarr"
    (report,) = _extract(_runner(tiny_gpt2_dir, InjectedOOM(calls={1, 3, 4, 7})), faulty)
    assert len(report.backoffs) >= 3 and report.backoffs[0]["batch"] == 8
    expected, got = _chunks(clean), _chunks(faulty)
    assert len(expected) > 5 and got == expected


def test_a_context_that_fails_alone_stops_with_a_resumable_store(tiny_gpt2_dir, tmp_path):
    runner = _runner(tiny_gpt2_dir)
    longest = max(e.token_end for e in runner.encode([LONG], [(LONG.index("bridge"),
                                                               LONG.index("bridge") + 6)]))
    store = tmp_path / "s.zarr"
    with pytest.raises(ModelError, match=r"ran out of memory on one context of \d+ tokens alone "
                                         r"\(it asked for [\d.]+ GiB more\).*--layers.*--quantize"
                                         r".*run the same command again to resume"):
        _extract(_runner(tiny_gpt2_dir, InjectedOOM(min_tokens=longest - 2)), store)
    assert store.exists()
    (resumed,) = _extract(_runner(tiny_gpt2_dir), store)
    assert 0 < resumed.blocks_written < resumed.blocks_total  # the earlier blocks were kept
    clean = tmp_path / "clean.zarr"
    _extract(_runner(tiny_gpt2_dir), clean)
    assert _chunks(store) == _chunks(clean)
    np.testing.assert_array_equal(  # the vectors, read as the store's readers read them
        *(__import__("zarr").open_group(str(s), mode="r")["oom"]["embedding"][:]
          for s in (store, clean))
    )
