"""Tokenising a suite: the vectorised ``HFRunner.encode`` against the per-item encode it replaced
(tests/backends/_encode_reference.py), side by side in one process on the same items.

Two workloads: 20,000 bleached items "This is WORD." (Warriner words) and 20,000 natural
sentences of $EMB_TEST_DATA/corpus/sentences.jsonl.gz, each with one of its words as target;
three tokenizers: GPT-2's byte-level BPE, MiniLM's WordPiece and a SentencePiece-style BPE that
puts ``<s>`` first (the tiny models of tests/models.py; the model is never run).  Each encode is
timed best of ``--repeat``, in wall-clock seconds and in CPU seconds of the calling thread: the
Rust tokenizer encodes the batch on a thread pool, so the calling thread's time is the Python
side (with the little of the Rust work it does itself), the part that runs serially before the
first batch on a many-core GPU machine, whatever the cores:

    python benchmarks/encode.py                 # 20,000 items each
    python benchmarks/encode.py --n 2000 --repeat 1

Both encodes must return the same encodings (checked on every workload before timing).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.models (the tiny models), the reference encode

from tests import models  # noqa: E402
from tests.backends._encode_reference import reference_encode  # noqa: E402

from emb.backends import load_model  # noqa: E402


def bleached(n: int) -> tuple[list[str], list[tuple[int, int]]]:
    from emb.stimuli.lexicon import load_lexicon

    words = list(load_lexicon("warriner").words)
    words = [words[i % len(words)] for i in range(n)]
    return [f"This is {w}." for w in words], [(8, 8 + len(w)) for w in words]


def natural(n: int, seed: int = 0) -> tuple[list[str], list[tuple[int, int]]]:
    data = Path(os.environ.get("EMB_TEST_DATA", ROOT.parent / "shared" / "data"))
    rng = np.random.default_rng(seed)
    contexts, spans = [], []
    with gzip.open(data / "corpus" / "sentences.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            text = json.loads(line)["text"]
            words = list(re.finditer(r"\w+", text))
            if not words or len(text) > 400:  # contexts that fit every model's positions
                continue
            word = words[int(rng.integers(len(words)))]
            contexts.append(text)
            spans.append(word.span())
            if len(contexts) == n:
                break
    return contexts, spans


def best(call, repeat: int) -> tuple[float, float]:
    """The least wall-clock and calling-thread CPU seconds of ``repeat`` calls."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.thread_time()
        call()
        cpu.append(time.thread_time() - start_cpu)
        wall.append(time.perf_counter() - start)
    return min(wall), min(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    workloads = {"bleached": bleached(args.n), "natural": natural(args.n)}
    builders = {"gpt2 BPE": models.tiny_gpt2, "MiniLM WordPiece": models.tiny_bert,
                "SentencePiece <s>": models.tiny_llama}
    print(f"{'tokenizer':<18} {'workload':<9} {'items':>6} {'tokens':>8} {'wall old':>8} "
          f"{'new':>6} {'ratio':>6} {'cpu old':>8} {'new':>6} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, build in builders.items():
            runner = load_model(build(Path(tmp) / label.split()[0]), dtype="float32", device="cpu")
            for name, (contexts, spans) in workloads.items():
                new = runner.encode(contexts, spans)
                old = reference_encode(runner, contexts, spans)
                same = all(
                    np.array_equal(a.input_ids, b.input_ids) and np.array_equal(a.target, b.target)
                    and a.window == b.window for a, b in zip(new, old, strict=True)
                )
                if not same:
                    raise SystemExit(f"{label} {name}: the two encodes differ")
                tokens = sum(e.n_tokens for e in new)
                wall_old, cpu_old = best(lambda: reference_encode(runner, contexts, spans),  # noqa: B023
                                         args.repeat)
                wall_new, cpu_new = best(lambda: runner.encode(contexts, spans), args.repeat)  # noqa: B023
                print(f"{label:<18} {name:<9} {len(contexts):>6} {tokens:>8} {wall_old:>8.3f} "
                      f"{wall_new:>6.3f} {wall_old / wall_new:>5.2f}x {cpu_old:>8.3f} "
                      f"{cpu_new:>6.3f} {cpu_old / cpu_new:>5.2f}x", flush=True)


if __name__ == "__main__":
    main()
