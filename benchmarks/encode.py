"""Tokenising a suite: the vectorised ``HFRunner.encode`` against the per-item encode it replaced
(tests/backends/_encode_reference.py), side by side in one process on the same items.

Two workloads: 20,000 bleached items "This is WORD." (Warriner words) and 20,000 natural
sentences of $EMB_TEST_DATA/corpus/sentences.jsonl.gz, each with one of its words as target;
three tokenizers: GPT-2's byte-level BPE, MiniLM's WordPiece and a SentencePiece-style BPE that
puts ``<s>`` first (the tiny models of tests/models.py; the model is never run).  Each encode is
timed best of ``--repeat``; the tokenizer call alone (transformers' fast tokenizer, which both
make) is timed too, so the Python side (encode minus that call) is reported as well:

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


def best(call, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    workloads = {"bleached": bleached(args.n), "natural": natural(args.n)}
    builders = {"gpt2 BPE": models.tiny_gpt2, "MiniLM WordPiece": models.tiny_bert,
                "SentencePiece <s>": models.tiny_llama}
    print(f"{'tokenizer':<18} {'workload':<9} {'items':>6} {'tokens':>8} {'old s':>7} {'new s':>7} "
          f"{'ratio':>6} {'tok s':>7} {'py old':>7} {'py new':>7} {'py ratio':>8}")
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
                t_old = best(lambda: reference_encode(runner, contexts, spans), args.repeat)  # noqa: B023
                t_new = best(lambda: runner.encode(contexts, spans), args.repeat)  # noqa: B023
                t_tok = best(lambda: runner.tokenizer(  # noqa: B023
                    contexts, add_special_tokens=True, return_offsets_mapping=True,  # noqa: B023
                    return_attention_mask=False, return_token_type_ids=False,
                ), args.repeat)
                py_old, py_new = t_old - t_tok, t_new - t_tok
                print(f"{label:<18} {name:<9} {len(contexts):>6} {tokens:>8} {t_old:>7.3f} "
                      f"{t_new:>7.3f} {t_old / t_new:>5.2f}x {t_tok:>7.3f} {py_old:>7.3f} "
                      f"{py_new:>7.3f} {py_old / max(py_new, 1e-9):>7.2f}x", flush=True)


if __name__ == "__main__":
    main()
