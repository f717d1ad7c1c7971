"""The time estimate: probe batches of the run's batch size across the length distribution, after
a warm-up, fitted as a fixed cost per batch plus a cost per padded token and summed over the run's
batches; printed with its range; against the actual time.  The runner's time is a clock the
tests advance (no test is timed)."""

from __future__ import annotations

import types

import numpy as np
import pytest

from emb.extraction import estimate as estimate_module
from emb.extraction.estimate import Estimate, estimate_extraction
from tests.fakes import FakeEncoding, FakeRunner


class Encoding(FakeEncoding):
    @property
    def n_tokens(self) -> int:
        return len(self.input_ids)


class TimedRunner(FakeRunner):
    """Takes ``fixed`` seconds per batch plus ``per_token`` per padded token (rows × the widest
    context) on ``clock``, and records the batches it was handed; ``slow``: the first timed
    batches take that much longer (a busy machine)."""

    fixed = 0.02
    per_token = 2e-5

    def __init__(self, clock, slow=()):
        super().__init__()
        self.clock = clock
        self.slow = list(slow)
        self.batches: list[tuple[int, int]] = []

    def encode(self, contexts, spans, **kwargs):
        return [Encoding(e.input_ids, e.target, e.subtoken_ids, e.context)
                for e in super().encode(contexts, spans, **kwargs)]

    def embed(self, encodings, *, batch_size=64, **kwargs):
        lengths = sorted(len(e.input_ids) for e in encodings)
        for i in range(0, len(lengths), batch_size):
            chunk = lengths[i : i + batch_size]
            self.batches.append((len(chunk), chunk[-1]))
            factor = self.slow.pop(0) if self.slow else 1.0
            self.clock.now += factor * (self.fixed + self.per_token * len(chunk) * chunk[-1])
        return super().embed(encodings, batch_size=batch_size, **kwargs)


def _encodings(runner, n):
    rng = np.random.default_rng(0)
    contexts = [" ".join(["w"] * int(k)) + " target ." for k in rng.integers(1, 60, n)]
    return runner.encode(contexts, [(len(c) - 8, len(c) - 2) for c in contexts])


@pytest.fixture
def clock(monkeypatch):
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(estimate_module, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))
    monkeypatch.setattr("emb.store.write_seconds", lambda values: 0.0)  # the model's time alone
    return clock


def _actual(runner, encodings, batch_size):
    """What the run takes: its length-sorted batches."""
    start = runner.clock.now
    runner.embed(encodings, batch_size=batch_size)
    return runner.clock.now - start


def test_the_estimate_follows_batches_and_tokens_within_its_range(clock):
    runner = TimedRunner(clock)
    encodings = _encodings(runner, 600)
    estimate = estimate_extraction(
        runner, [encodings], [600], layers=range(4), poolings=("first", "mean"),
        storage_dtype="float16", batch_size=32,
    )
    probed = runner.batches
    assert len(probed) == 7 and all(rows == 32 for rows, _ in probed)  # warm-up + 3 probes, twice
    widths = [w for _, w in probed[1:4]]
    assert widths[0] < widths[1] < widths[2]  # drawn across the lengths, not the median alone
    assert estimate.probed == 96
    actual = _actual(runner, encodings, 32)
    assert estimate.seconds_low < estimate.seconds < estimate.seconds_high
    assert abs(actual / estimate.seconds - 1) < 0.02, (actual, estimate)
    line = estimate.line()
    assert "–" in line and "tokens/s" in line
    assert "took" in estimate.versus(actual) and "× the estimate" in estimate.versus(actual)


def test_a_probe_slowed_once_is_timed_again(clock):
    runner = TimedRunner(clock, slow=[1.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # the first probe
    encodings = _encodings(runner, 600)
    estimate = estimate_extraction(
        runner, [encodings], [600], layers=range(4), poolings=("first",),
        storage_dtype="float16", batch_size=32,
    )
    assert abs(_actual(runner, encodings, 32) / estimate.seconds - 1) < 0.02


def test_a_tiny_suite_is_probed_with_what_it_has(clock):
    runner = TimedRunner(clock)
    encodings = _encodings(runner, 5)
    estimate = estimate_extraction(
        runner, [encodings], [5], layers=range(4), poolings=("first",),
        storage_dtype="float32", batch_size=64,
    )
    assert all(rows == 5 for rows, _ in runner.batches)
    assert estimate.seconds > 0 and estimate.seconds_low <= estimate.seconds <= estimate.seconds_high


def test_the_range_and_the_comparison_are_printed():
    estimate = Estimate(
        items=10, distinct=10, tokens=100, layers=2, poolings=1, hidden=8, bytes_raw=1, bytes_disk=1,
        seconds=100.0, tokens_per_second=1.0, contexts_cut=0, seconds_low=80.0, seconds_high=125.0,
    )
    assert "~100 s (80 s–2 min)" in estimate.line()
    assert estimate.versus(90.0) == "estimated ~100 s (80 s–2 min), took 90 s (0.90 × the estimate)"
    assert "outside its range" in estimate.versus(200.0)


@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
def test_the_write_path_adds_on_a_cpu_and_overlaps_on_a_gpu(clock, monkeypatch, device):
    import dataclasses

    from emb.extraction import settings

    runner = TimedRunner(clock)
    runner.info = dataclasses.replace(runner.info, device=device)
    encodings = _encodings(runner, 600)
    kwargs = dict(layers=range(4), poolings=("first",), storage_dtype="float16", batch_size=32)
    compute = estimate_extraction(runner, [encodings], [600], **kwargs).seconds
    monkeypatch.setattr(settings, "writer_threads", lambda: 2)
    for per_item in (compute / 600, 10 * compute / 600):  # writing half or five times the compute
        monkeypatch.setattr("emb.store.write_seconds", lambda values, p=per_item: p * len(values))
        estimate = estimate_extraction(runner, [encodings], [600], **kwargs)
        writing = 600 * per_item / 2
        assert estimate.seconds_writing == pytest.approx(writing)
        want = compute + writing if device == "cpu" else max(compute, writing)
        assert estimate.seconds == pytest.approx(want)
