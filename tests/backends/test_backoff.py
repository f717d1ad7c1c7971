"""The out-of-memory back-off (emb.backends.backoff): failures injected through the runner's
fault hook on chosen forward passes halve the batch; the store is byte-identical to a run without
failures; a context that fails alone ends the run with the clear message and a resumable store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from emb.backends import load_model  # noqa: E402
from emb.backends.backoff import (  # noqa: E402
    BackOff,
    InjectedOOM,
    describe,
    forward_with_backoff,
    is_oom,
)
from emb.errors import ModelError  # noqa: E402
from emb.extraction import extract  # noqa: E402
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
    """The tiny GPT-2 with the fault hook, its forward pass run one row at a time: a row's hidden
    states are then the same bits in a batch of 8 and in its halves on any machine (MKL's float32
    kernels on AVX-512 pick their blocking by the batch's rows, and round a value or two of 20,480
    differently at 4 rows than at 8), so the bytes compared below test the halving, the joining
    and the record, not the machine's matrix kernels."""
    runner = load_model(model_dir, device="cpu")
    runner.oom_fault = fault
    whole = runner._pass

    def row_by_row(input_ids, attention_mask):
        rows = [whole(input_ids[i : i + 1], attention_mask[i : i + 1])
                for i in range(len(input_ids))]
        return tuple(torch.cat(states) for states in zip(*rows, strict=True))

    runner._pass = row_by_row
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


# -- the back-offs recorded in the store's provenance ----------------------------------------------
def _normalised(store: Path) -> dict[str, object]:
    """Every file of the store (lock files aside): bytes, or for metadata its parsed JSON without
    what differs between any two runs (a layout's id and creation time)."""
    import json

    out: dict[str, object] = {}
    for path in sorted(store.rglob("*")):
        rel = str(path.relative_to(store))
        if not path.is_file() or path.name.startswith(".emb-lock"):
            continue
        if path.name == "zarr.json":
            out[rel] = json.loads(path.read_text(), object_hook=lambda d: {
                k: v for k, v in d.items() if k not in ("generation", "created")})
        else:
            out[rel] = path.read_bytes()
    return out


def _without_backoffs(doc):
    if isinstance(doc, dict):
        return {k: _without_backoffs(v) for k, v in doc.items() if k != "oom_backoffs"}
    return doc


def test_the_back_offs_are_recorded_in_the_suites_provenance(tiny_gpt2_dir, tmp_path):
    import zarr

    from emb.store import open_store
    from emb.store.store import describe

    clean, faulty = tmp_path / "clean.zarr", tmp_path / "faulty.zarr"
    _extract(_runner(tiny_gpt2_dir), clean)
    (report,) = _extract(_runner(tiny_gpt2_dir, InjectedOOM(calls={1, 3, 4, 7})), faulty)
    attrs = zarr.open_group(str(faulty), path="oom", mode="r").attrs.asdict()
    (run,) = attrs["oom_backoffs"]
    assert run["halvings"] == list(report.backoffs) and len(run["halvings"]) >= 3
    assert run["batch_size"] == 8 and run["device"] == "cpu" and run["shard"] is None
    assert run["stopped"] is None
    # the batch size that ran from each length on: the running minimum of the halvings' sizes
    # over the lengths, worked out here from the halvings alone
    sizes: dict[int, int] = {}
    for e in run["halvings"]:
        sizes[e["tokens"]] = min(e["to"], sizes.get(e["tokens"], 8))
    steps, current = [], 8
    for tokens in sorted(sizes):
        if sizes[tokens] < current:
            current = sizes[tokens]
            steps.append((tokens, current))
    assert [(b["tokens_from"], b["batch"]) for b in run["batches"]] == steps
    assert [b["tokens_to"] for b in run["batches"]] == [t - 1 for t, _ in steps[1:]] + [None]
    # the record's own objects were folded into the attribute
    assert not list((faulty / "oom" / "_progress").glob("backoffs.*.json"))
    # a run without back-offs records nothing; a run with them differs only by the record
    assert "oom_backoffs" not in zarr.open_group(str(clean), path="oom", mode="r").attrs
    got, expected = _normalised(faulty), _normalised(clean)
    assert got.keys() == expected.keys()
    for key in expected:
        assert _without_backoffs(got[key]) == expected[key], key
    assert got["oom/zarr.json"] != expected["oom/zarr.json"]
    # read back by the store's readers and by plain xarray
    (info,) = open_store(faulty).info().suites
    assert list(info.backoffs) == [run]
    assert open_store(faulty).dataset("oom").attrs["oom_backoffs"] == [run]
    assert open_store(clean).info().suites[0].backoffs == ()
    text = describe(open_store(faulty).info())
    assert f"out of memory, batch 8 halved {len(run['halvings'])} time(s)" in text


def test_a_resumed_run_appends_its_record_to_the_stopped_runs(tiny_gpt2_dir, tmp_path):
    from click.testing import CliRunner

    from emb.cli.main import main
    from emb.store import open_store

    runner = _runner(tiny_gpt2_dir)
    longest = max(e.token_end for e in runner.encode([LONG], [(LONG.index("bridge"),
                                                               LONG.index("bridge") + 6)]))
    store = tmp_path / "s.zarr"
    with pytest.raises(ModelError, match="alone"):
        _extract(_runner(tiny_gpt2_dir, InjectedOOM(calls={2}, min_tokens=longest - 2)), store)
    pending = list((store / "oom" / "_progress").glob("backoffs.*.json"))
    assert len(pending) == 1  # the stopped run's record, kept for the resumed one
    (first,) = open_store(store).info().suites[0].backoffs
    assert first["stopped"]["tokens"] >= longest - 2
    assert "ran out of memory on one context" in first["stopped"]["message"]
    assert first["halvings"][-1]["to"] == 1  # halved down to one context before it stopped
    (resumed,) = _extract(_runner(tiny_gpt2_dir, InjectedOOM(calls={1})), store)
    assert resumed.backoffs and 0 < resumed.blocks_written < resumed.blocks_total
    runs = open_store(store).info().suites[0].backoffs
    assert [r["run"] for r in runs][0] == first["run"] and len(runs) == 2
    assert runs[0] == first and runs[1]["stopped"] is None
    assert runs[1]["halvings"] == list(resumed.backoffs)
    assert not list((store / "oom" / "_progress").glob("backoffs.*.json"))
    clean = tmp_path / "clean.zarr"
    _extract(_runner(tiny_gpt2_dir), clean)
    assert _chunks(store) == _chunks(clean)
    shown = CliRunner().invoke(main, ["info", str(store)])
    assert shown.exit_code == 0, shown.output
    lines = [line for line in shown.output.splitlines() if "out of memory" in line]
    assert len(lines) == 2 and "stopped: one context of" in lines[0]
    assert "stopped" not in lines[1]
    as_json = CliRunner().invoke(main, ["info", "--json", str(store)])
    assert __import__("json").loads(as_json.output)["suites"][0]["backoffs"] == list(runs)


def test_each_shard_worker_records_its_own_back_offs(tiny_gpt2_dir, tmp_path):
    import zarr

    from emb.analyses._provenance import extraction_notes
    from emb.analyses._select import provenance_attrs
    from emb.store import open_store

    store = tmp_path / "s.zarr"
    (first,) = _extract(_runner(tiny_gpt2_dir, InjectedOOM(calls={1})), store, shard="1/2")
    (second,) = _extract(_runner(tiny_gpt2_dir, InjectedOOM(calls={2, 3})), store, shard="2/2")
    assert first.backoffs and second.backoffs
    runs = zarr.open_group(str(store), path="oom", mode="r").attrs["oom_backoffs"]
    assert [r["shard"] for r in runs] == ["shard-1-of-2", "shard-2-of-2"]
    assert [r["halvings"] for r in runs] == [list(first.backoffs), list(second.backoffs)]
    assert list(open_store(store).info().suites[0].backoffs) == runs  # each run once
    clean = tmp_path / "clean.zarr"
    _extract(_runner(tiny_gpt2_dir), clean)
    assert _chunks(store) == _chunks(clean)
    # every analysis of the vectors says so in its notes (the result carries the provenance)
    result = xr.Dataset(attrs=provenance_attrs(open_store(store).dataset("oom")))
    n = len(first.backoffs) + len(second.backoffs)
    (note,) = [line for line in extraction_notes(result) if "out of device memory" in line]
    assert note.startswith("note: 2 run(s) extracting suite 'oom' ran out of device memory and "
                           "cut their batches (batch 8 down to ")
    assert f", {n} halving(s) in all: those vectors come from smaller batches" in note
    assert open_store(store).validate().status == "complete"
    # and the written results' sidecar (its provenance per store)
    from emb.results._render import provenance

    assert provenance(result, {"s": str(store)})["s"]["oom_backoffs"] == runs
    plain = xr.Dataset(attrs=provenance_attrs(open_store(clean).dataset("oom")))
    assert "oom_backoffs" not in provenance(plain, {"c": str(clean)})["c"]
    assert not [line for line in extraction_notes(plain) if "memory" in line]


def test_a_later_suite_records_the_batch_sizes_an_earlier_one_learnt(tiny_gpt2_dir, tmp_path):
    import zarr

    from emb.store import open_store
    from emb.store.store import describe

    store = tmp_path / "s.zarr"
    second = make_suite([item(LONG.replace("bridge", f"arch{i}"), f"arch{i}", setting="random")
                         for i in range(12)], name="later")
    first_report, second_report = extract(
        _runner(tiny_gpt2_dir, InjectedOOM(calls={1})), [_suite(), second], store, batch_size=8,
        block_size=8, window_blocks=1, progress=False, bos=True)
    assert first_report.backoffs and not second_report.backoffs
    first = zarr.open_group(str(store), path="oom", mode="r").attrs["oom_backoffs"]
    (later,) = zarr.open_group(str(store), path="later", mode="r").attrs["oom_backoffs"]
    # no halving of its own, but its long batches ran at the size the first suite learnt
    assert later["halvings"] == [] and later["batches"] == first[0]["batches"]
    assert later["batches"][-1]["batch"] == 4
    assert ("batch 8 cut to the sizes learnt where an earlier suite on the same loaded model ran "
            "out of memory; batches that ran: 4 at ≥") in describe(open_store(store).info())
