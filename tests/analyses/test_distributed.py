"""Out-of-core analyses on Dask distributed: a store of a few GB, workers with a quarter of it.

``emb analyze vast`` and ``ceat`` run on a ``LocalCluster`` whose two worker processes may each
use a quarter of the store's decompressed size; no worker may be killed, restarted or removed,
each worker's peak RSS stays under its limit, and the results are bit for bit those of the local
threaded scheduler computing with one BLAS thread (as the CLI does, and as Dask's nanny starts
its workers).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import emb
from emb.analyses import ANALYSES
from emb.analyses.ceat import ceat
from emb.analyses.stats import single_threaded_blas
from emb.analyses.vast import vast
from tests.analyses._synthetic import ceat_dataset, vast_dataset

distributed = pytest.importorskip("distributed")

N_LAYERS, D = 13, 768  # GPT-2 small's shapes
VAST_POOLINGS = ("first", "last", "mean", "max")
CEAT_POOLINGS = ("last", "mean")


def _write(path: Path, name: str, labels: xr.Dataset, poolings: tuple[str, ...], seed: int) -> int:
    """Write a suite of ``labels``' items with GPT-2-shaped random float16 vectors, block by
    block (never the whole array in memory); a weak valence direction (feature 5) is planted
    from the ``valence`` label where there is one. Returns the decompressed bytes."""
    from emb.store import SuiteWriter, open_for_writing

    coords = labels.drop_vars("embedding").assign_coords(
        layer=np.arange(N_LAYERS), pooling=np.array(poolings, dtype=object))
    n = coords.sizes["item"]
    model = {**labels.attrs["model"], "n_layers": N_LAYERS - 1, "hidden_size": D,
             "last_layer": N_LAYERS - 1}
    _, root = open_for_writing(str(path), model=model)
    writer = SuiteWriter.open(
        str(path), root, name=name, coords=coords, shape=(n, N_LAYERS, len(poolings), D),
        storage_dtype="float16", suite_attrs=labels.attrs["suite"],
        extraction_attrs={**labels.attrs["extraction"], "storage_dtype": "float16",
                          "poolings": list(poolings)},
    )
    rng = np.random.default_rng(seed)
    signal = np.zeros(n)
    if "valence" in coords:
        signal = np.nan_to_num((np.asarray(coords["valence"].values, float) - 5) / 4)
    stim = np.asarray(coords["stimulus_set"].values).astype(str)
    signal += np.where(stim == "pleasant", 2.0, np.where(stim == "unpleasant", -2.0, 0.0))
    for index, (start, stop) in enumerate(writer.block_ranges()):
        block = rng.random((stop - start, N_LAYERS, len(poolings), D), dtype=np.float32) - 0.5
        block[..., 5] += 0.3 * signal[start:stop, None, None]
        writer.write_block(index, block.astype(np.float16))
    writer.finish()
    return n * N_LAYERS * len(poolings) * D * 2


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """~2.0 GB decompressed: a vast suite (5,000 words × 4 settings) and a ceat suite."""
    path = tmp_path_factory.mktemp("big") / "big.zarr"
    labels = vast_dataset(n_words=5_000, n_layers=1, d=8, poolings=("last",))
    size = _write(path, "vast", labels, VAST_POOLINGS, seed=1)
    labels = ceat_dataset(n_stim=(8, 8, 8, 8), contexts=200, n_layers=1, d=8, poolings=("last",))
    size += _write(path, "ceat", labels, CEAT_POOLINGS, seed=2)
    return path, size


def _peak_rss(dask_worker) -> int:  # noqa: ANN001 - the worker, given by client.run
    """The worker's largest RSS sampled by its system monitor (every 500 ms); ``ru_maxrss`` is
    no measure here: a spawned worker inherits its parent's through ``execve``."""
    return int(max(dask_worker.monitor.quantities["memory"]))


def _memory_events(client: distributed.Client) -> tuple[list[tuple[str, dict]], int]:
    """Events of the scheduler's log that a worker was restarted, removed or closed, and the
    number of times a worker paused (dask's back-pressure at 80 % of the limit, not a failure:
    the ~225 MB of libraries a worker imports are half of its 476 MiB here)."""

    def restarted(topic: str, msg: object) -> bool:
        if topic == "worker-restart-memory":
            return True
        return isinstance(msg, dict) and msg.get("action") in {"remove-worker", "close-worker"}

    events = [(topic, msg) for topic, log in client.get_events().items() for _, msg in log]
    pauses = sum(1 for _, msg in events if isinstance(msg, dict)
                 and msg.get("action") == "worker-status-change" and msg.get("status") == "paused")
    return [(t, m) for t, m in events if restarted(t, m)], pauses


@pytest.mark.slow
def test_vast_and_ceat_on_workers_with_a_quarter_of_the_store(big_store) -> None:
    path, size = big_store
    limit = size // 4
    assert size > 1.9e9  # 2.0 GB
    store = emb.open_store(path)
    by = ANALYSES["vast"].chunk_by  # opened as the CLI opens it
    lazy_vast = vast(store.dataset("vast", chunk_by=by), tokenization=False, nullification=False)
    lazy_ceat = ceat(store.dataset("ceat"), n_samples=200, n_bootstrap=20, n_permutations=50)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit=limit, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        pids = client.run(lambda: __import__("os").getpid())
        on_workers = client.compute([lazy_vast, lazy_ceat], sync=True)
        assert client.run(lambda: __import__("os").getpid()) == pids  # nobody restarted
        peaks = client.run(_peak_rss)
        events, pauses = _memory_events(client)
        statuses = client.run(lambda dask_worker: str(dask_worker.status))
    assert len(pids) == 2 and not events, events
    print(f"store {size / 1e9:.2f} GB, worker limit {limit / 2**20:.0f} MiB, peak RSS "
          f"{sorted(p / 2**20 for p in peaks.values())} MiB, {pauses} pauses")
    assert all(p < limit for p in peaks.values()), (peaks, limit)
    assert set(statuses.values()) == {"Status.running"}
    # the same bits as the local threads (one pooling of vast: the tasks of each are independent)
    # with one BLAS thread, as the CLI computes and as Dask's nanny starts its workers
    with single_threaded_blas():
        local_vast = vast(store.dataset("vast", chunk_by=by), tokenization=False, nullification=False,
                          poolings="last").compute(scheduler="threads")
        local_ceat = lazy_ceat.compute(scheduler="threads")
    xr.testing.assert_equal(on_workers[0].sel(pooling=["last"]), local_vast)  # values, bit for bit
    xr.testing.assert_identical(on_workers[1], local_ceat)
    assert np.isfinite(local_vast["r"].values).all()
