"""The worker that lays a sharded suite out tokenises it whole (its coordinates need every
target's subtokens) and keeps, for each other worker, the encodings of the contexts that worker
computes (``<suite>/_progress/tokens.<shard>.npz``): the others read them instead of tokenising
again, and a worker that finds none, or finds them damaged, tokenises its contexts itself.
Whatever happens, the store's bytes are those of one process, and the kept encodings are gone
once the suite is complete.  With a real (tiny, random) GPT-2 and GPT-2's BPE, contexts longer
than its 128 positions (cut around the target) included."""

from __future__ import annotations

import io

import numpy as np
import pytest

from emb.extraction._plan import Plan
from emb.extraction.pipeline import extract
from emb.store._location import open_zarr_store
from emb.store._nodes import child_names
from emb.store.shards import read_record
from tests.store.test_pipeline import item, make_suite
from tests.store.test_shards import snapshot

pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:.*sit at position 0")

BLOCK, WINDOW = 8, 1  # 8 items a block, a window a block: 12 windows for 3 workers


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    from emb.backends import load_model
    from tests import models

    return load_model(str(models.tiny_gpt2(tmp_path_factory.mktemp("gpt2"))), device="cpu")


def _suite():
    """90 items: short contexts, repeated ones (copied rows) and long ones (cut to 128 tokens)."""
    items = []
    for i in range(90):
        w = f"word{i % 31}"
        if i % 11 == 5:  # far longer than the model's 128 positions, the target in the middle
            ctx = " ".join(["filler"] * 150) + f" {w} " + " ".join(["more"] * 150)
            start = ctx.index(f" {w} ") + 1
        else:
            ctx = f"This is {w}." if i % 3 else f"{w} again and {w}"
            start = ctx.index(w)
        items.append(item(ctx, w, start=start, setting="bleached", valence=1.0, lexicon="toy"))
    return make_suite(items, name="s")


class Counting:
    """The runner's encode, counting the contexts it is asked to tokenise."""

    def __init__(self, runner, monkeypatch):
        self.contexts: list[str] = []
        original = runner.encode

        def encode(contexts, spans, **kwargs):
            self.contexts += list(contexts)
            return original(contexts, spans, **kwargs)

        monkeypatch.setattr(runner, "encode", encode)


def _run(runner, suite, path, shard=None, **options):
    return extract(runner, suite, path, progress=False, block_size=BLOCK, window_blocks=WINDOW,
                   shard=shard, dtype="float32", **options)


def _kept(path: str) -> list[str]:
    return [n for n in child_names(open_zarr_store(path), "s/_progress") if n.startswith("tokens.")]


def _same(a, b) -> bool:
    return (a.input_ids.dtype == b.input_ids.dtype and np.array_equal(a.input_ids, b.input_ids)
            and a.target.dtype == b.target.dtype and np.array_equal(a.target, b.target)
            and a.window == b.window)


def _file(path: str, index: int) -> dict[str, np.ndarray]:
    from emb.store.shards import recorded_tokens

    data = recorded_tokens(open_zarr_store(path), "s", f"shard-{index}-of-3")
    assert data is not None
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def test_the_other_workers_read_the_encodings_the_first_kept(runner, tmp_path, monkeypatch):
    suite = _suite()
    contexts = {it.context for it in suite.items}
    one = str(tmp_path / "one.zarr")
    _run(runner, suite, one)
    path = str(tmp_path / "sharded.zarr")
    first = Counting(runner, monkeypatch)
    _run(runner, suite, path, "1/3")
    assert contexts <= set(first.contexts)  # the suite tokenised whole, for its coordinates
    assert _kept(path) == ["tokens.shard-2-of-3.npz", "tokens.shard-3-of-3.npz"]
    # what was kept for each worker: the contexts first computed in its windows, each with the
    # encoding tokenising it gives (a long context: cut around its target, its window kept)
    record = read_record(open_zarr_store(path), "s")
    plan = Plan.build(runner, suite, bos=None)
    windows = 0
    for index in (2, 3):
        first_block, stop_block = record.blocks[index - 1]
        rows = range(first_block * BLOCK, min(90, stop_block * BLOCK))
        want = list(dict.fromkeys(int(plan.item_key[i]) for i in rows
                                  if plan.first_item[plan.item_key[i]] == i))
        kept = _file(path, index)
        assert kept["keys"].tolist() == want and len(want) > 0
        seeded = Plan.build(runner, suite, bos=None)
        assert seeded.seed(_bytes(kept), str(kept["tag"])) == len(want) == seeded.tokenized
        for got, fresh in zip(seeded.encoded(want), plan.encoded(want), strict=True):
            assert _same(got, fresh)
            windows += fresh.window is not None
    assert windows > 0  # cut contexts were among them
    for index in (3, 2):  # the last one finishes the suite
        worker = Counting(runner, monkeypatch)
        _run(runner, suite, path, f"{index}/3")
        assert worker.contexts == []  # nothing tokenised again
    assert _kept(path) == []  # gone once the suite is complete
    assert snapshot(path) == snapshot(one)  # bitwise what one process writes


def _bytes(arrays: dict[str, np.ndarray]) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _zip_damaged(data: bytes, how: str) -> bytes:
    """A kept-encodings file whose zip or .npy structure is damaged in a way that zipfile or
    numpy reports with an error other than BadZipFile/ValueError."""
    import zipfile

    if how == "unknown compression":  # the central directory names compression method 99
        b = bytearray(data)
        at = b.index(b"PK\x01\x02") + 10
        b[at : at + 2] = (99).to_bytes(2, "little")
        return bytes(b)
    out = io.BytesIO()  # a member whose .npy header is cut inside its dict (CRC intact)
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            raw = src.read(info)
            if info.filename == "keys.npy":
                raw = b"\x93NUMPY\x01\x00" + (22).to_bytes(2, "little") + b"{'descr': '<i8', 'shap\n"
            dst.writestr(info.filename, raw)
    return out.getvalue()


@pytest.mark.parametrize("damage", ["missing", "truncated", "garbage", "another tag", "bad target",
                                    "unknown compression", "unparsable header"])
def test_a_worker_without_usable_kept_encodings_tokenises_its_own(runner, tmp_path, monkeypatch, damage):
    suite = _suite()
    one = str(tmp_path / "one.zarr")
    _run(runner, suite, one)
    path = str(tmp_path / "sharded.zarr")
    _run(runner, suite, path, "1/3")
    key = tmp_path / "sharded.zarr" / "s" / "_progress" / "tokens.shard-2-of-3.npz"
    kept = _file(path, 2)
    if damage == "missing":
        key.unlink()
    elif damage == "truncated":
        key.write_bytes(key.read_bytes()[:-200])
    elif damage == "garbage":
        key.write_bytes(b"not an npz at all")
    elif damage == "another tag":
        key.write_bytes(_bytes({**kept, "tag": np.array("another suite")}))
    elif damage in ("unknown compression", "unparsable header"):
        key.write_bytes(_zip_damaged(key.read_bytes(), damage))
    else:  # a target position beyond its context
        kept["target"] = kept["target"].copy()
        kept["target"][0] = 10_000
        key.write_bytes(_bytes(kept))
    record = read_record(open_zarr_store(path), "s")
    first_block, stop_block = record.blocks[1]
    plan = Plan.build(runner, suite, bos=None)
    mine = {suite.items[i].context for i in range(first_block * BLOCK, min(90, stop_block * BLOCK))
            if plan.first_item[plan.item_key[i]] == i}
    worker = Counting(runner, monkeypatch)
    _run(runner, suite, path, "2/3")
    # the contexts first computed in its windows, tokenised now, and no others (the pieces of
    # a long context cut to fit are tokenised too)
    assert set(worker.contexts) & {it.context for it in suite.items} == mine
    _run(runner, suite, path, "3/3")
    assert _kept(path) == []
    assert snapshot(path) == snapshot(one)


def test_seed_takes_only_what_pack_made_for_the_same_tag(runner):
    suite = _suite()
    plan = Plan.build(runner, suite, bos=None)
    keys = list(range(len(plan.keys)))
    data = plan.pack(keys, "tag-a")
    assert data is not None
    other = Plan.build(runner, suite, bos=None)
    assert other.seed(data, "tag-b") == 0 and other.tokenized == 0
    assert other.seed(data[: len(data) // 2], "tag-a") == 0
    assert other.seed(data, "tag-a") == len(keys)
    for got, fresh in zip(other.encoded(keys), plan.encoded(keys), strict=True):
        assert _same(got, fresh)
        assert not got.input_ids.flags.writeable and not got.target.flags.writeable
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    for name, bad in (("ids", arrays["ids"].astype(np.int64)),            # another dtype
                      ("keys", arrays["keys"] + len(keys)),                  # keys of no item
                      ("n_ids", arrays["n_ids"] + 1),                        # lengths that do not add up
                      ("target", arrays["target"][::-1].copy()),             # not increasing
                      ("n_target", arrays["n_target"].astype(np.float64)),   # lengths not integers
                      ("n_ids", arrays["n_ids"].astype(np.float64)),
                      ("window", arrays["window"].astype(np.float64)),
                      ("window", arrays["window"].astype(str)),
                      ("keys", np.array(3, dtype=np.int64))):                # not a list
        assert Plan.build(runner, suite, bos=None).seed(_bytes({**arrays, name: bad}), "tag-a") == 0, name


def test_a_worker_with_another_batch_size_or_device_reads_the_kept_encodings(runner, tmp_path, monkeypatch):
    """Neither the batch size nor the device changes an encoding, and workers may differ on
    both (one per GPU: --device cuda:K): they read what the first worker kept."""
    from dataclasses import replace

    suite = _suite()
    one = str(tmp_path / "one.zarr")
    _run(runner, suite, one)
    path = str(tmp_path / "sharded.zarr")
    _run(runner, suite, path, "1/3", batch_size=16)
    worker = Counting(runner, monkeypatch)
    _run(runner, suite, path, "2/3", batch_size=4)
    assert worker.contexts == []
    monkeypatch.setattr(runner, "info", replace(runner.info, device="cuda:1"))
    _run(runner, suite, path, "3/3", batch_size=16)
    assert worker.contexts == []
    assert _kept(path) == []
    assert snapshot(path) == snapshot(one)


def test_encodings_kept_after_the_suite_completed_are_dropped_by_the_next_run(runner, tmp_path):
    """The first worker writes the kept encodings on a writer thread while it computes; the
    others may complete the suite meanwhile, and that worker, killed before its own last step
    (which deletes them again), leaves them in the complete store: any later run of the suite
    deletes them."""
    from emb.store.shards import record_tokens

    suite = _suite()
    path = str(tmp_path / "sharded.zarr")
    for index in (1, 2, 3):
        _run(runner, suite, path, f"{index}/3")
    record_tokens(open_zarr_store(path, mode="a"), "s", "shard-3-of-3", b"kept after completion")
    before = snapshot(path)
    (report,) = _run(runner, suite, path, "1/3")
    assert report.already_complete
    assert _kept(path) == []
    assert snapshot(path) == before
