"""A shard worker does its shard's work only: once the suite is laid out (by another worker, or
by an earlier run), it tokenises the contexts of its own windows and nothing else, and its
estimate covers those windows, the time spent before it and the run's fixed costs."""

from __future__ import annotations

from emb.extraction.pipeline import extract
from emb.store._location import open_zarr_store
from emb.store.shards import read_record
from tests.store.test_shards import BLOCK, WINDOW, BatchRunner, one_process, repeat_suite, snapshot


class CountingRunner(BatchRunner):
    """Records every context it was asked to tokenise."""

    def __init__(self) -> None:
        super().__init__()
        self.encoded: list[str] = []

    def encode(self, contexts, spans, **kwargs):
        self.encoded += list(contexts)
        return super().encode(contexts, spans, **kwargs)


def _shard_items(path: str, index: int) -> range:
    record = read_record(open_zarr_store(path), "s")
    first, stop = record.blocks[index - 1]
    return range(first * BLOCK, min(200, stop * BLOCK))


def test_a_worker_finding_the_suite_laid_out_tokenises_only_its_windows(tmp_path):
    suite = repeat_suite(n=200, distinct=200)  # every item its own context
    want = one_process(tmp_path, suite)
    path = str(tmp_path / "sharded.zarr")
    first = CountingRunner()
    extract(first, suite, path, progress=False, block_size=BLOCK, window_blocks=WINDOW, shard="1/3")
    # the worker that lays the suite out tokenises it whole (its coordinates), each context once
    assert sorted(first.encoded) == sorted(it.context for it in suite.items)
    for index in (3, 2):
        worker = CountingRunner()
        (report,) = extract(worker, suite, path, progress=False, block_size=BLOCK,
                            window_blocks=WINDOW, shard=f"{index}/3")
        mine = [suite.items[i].context for i in _shard_items(path, index)]
        assert 0 < len(mine) < 200
        assert sorted(worker.encoded) == sorted(mine)  # its own contexts, each once
        assert report.blocks_assigned == report.blocks_written == -(-len(mine) // BLOCK)
    assert snapshot(path) == want  # bitwise what one process writes


def test_a_shards_estimate_covers_its_windows_and_what_was_spent_before(tmp_path):
    suite = repeat_suite(n=200, distinct=200)
    path = str(tmp_path / "sharded.zarr")
    extract(BatchRunner(), suite, path, progress=False, block_size=BLOCK, window_blocks=WINDOW,
            shard="1/3")
    got = []
    extract(BatchRunner(), suite, path, progress=False, block_size=BLOCK, window_blocks=WINDOW,
            shard="2/3", dry_run=True, on_estimate=got.append)
    (estimate,) = got
    assert estimate.items == estimate.distinct == len(_shard_items(path, 2))
    assert estimate.seconds_before > 0 and estimate.seconds_fixed >= 0
    assert estimate.seconds > estimate.seconds_before + estimate.seconds_fixed
    assert estimate.seconds_low <= estimate.seconds <= estimate.seconds_high
    assert estimate.seconds_low >= estimate.seconds_before  # what was spent is known
    # a dry run writes nothing: the shard's blocks are still to be written
    (report,) = extract(BatchRunner(), suite, path, progress=False, block_size=BLOCK,
                        window_blocks=WINDOW, shard="2/3")
    assert report.blocks_written == report.blocks_assigned > 0


def test_the_estimate_of_one_run_covers_every_item(tmp_path):
    suite = repeat_suite(n=200, distinct=37)
    got = []
    extract(BatchRunner(), suite, str(tmp_path / "s.zarr"), progress=False, block_size=BLOCK,
            window_blocks=WINDOW, dry_run=True, on_estimate=got.append)
    (estimate,) = got
    assert estimate.items == 200 and estimate.distinct == len({it.context for it in suite.items})
    assert estimate.seconds > estimate.seconds_before > 0
