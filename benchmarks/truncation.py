"""What cutting a causal model's contexts after the target saves, side by side in one run.

Natural sentences (the VAST suite's random setting: one corpus sentence per lexicon word, the
word anywhere in it) through a causal model, embedded with and without the cut (alternating,
medians); the vectors agree to float32 rounding:

    python benchmarks/truncation.py                      # GPT-2 small shapes, random weights, CPU
    python benchmarks/truncation.py --model path/to/model --device cuda --batch-size 256
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from emb.backends import load_model
from emb.stimuli.suites import build_suite

sys.path.insert(0, str(Path(__file__).parent))
from extract import _model  # noqa: E402  (the benchmark models)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="gpt2-random", help="gpt2-random, or a causal model id/path")
    parser.add_argument("--n", type=int, default=400, help="items of the random setting")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data"),
                        help="directory with lexica/warriner.csv and corpus/sentences.jsonl.gz")
    args = parser.parse_args()
    suite = build_suite("vast", lexicon=[f"{args.data}/lexica/warriner.csv"],
                        corpus=f"{args.data}/corpus/sentences.jsonl.gz")
    items = [it for it in suite.items if it.setting == "random"][: args.n]
    with tempfile.TemporaryDirectory() as tmp:
        runner = load_model(_model(args.model, Path(tmp)), device=args.device)
        if not runner.info.causal:
            raise SystemExit(f"{runner.info.model_id} is not causal: nothing is cut")
        encodings = runner.encode([it.context for it in items], [(it.char_start, it.char_end) for it in items])
        sync = torch.cuda.synchronize if runner.device.type == "cuda" else (lambda: None)
        runner.embed(encodings[:64], batch_size=args.batch_size)  # warm-up
        times: dict[bool, list[float]] = {True: [], False: []}
        out = {}
        for _ in range(args.repeat):
            for cut in (False, True):
                sync()
                t0 = time.perf_counter()
                out[cut] = runner.embed(encodings, batch_size=args.batch_size, truncate=cut)
                sync()
                times[cut].append(time.perf_counter() - t0)
    whole, cut = np.median(times[False]), np.median(times[True])
    n_whole = sum(e.n_tokens for e in encodings)
    n_cut = sum(e.token_end for e in encodings)
    scale = float(np.abs(out[False]).max())
    print(f"model {runner.info.model_id} ({runner.info.architecture}, {runner.info.n_layers} layers) "
          f"on {runner.device}, {len(items)} corpus sentences, batch {args.batch_size}")
    print(f"whole contexts   {whole:7.2f} s  {n_whole:7d} tokens")
    print(f"cut after target {cut:7.2f} s  {n_cut:7d} tokens ({n_cut / n_whole:.0%})")
    print(f"speed-up {whole / cut:.2f}x; largest difference {np.abs(out[True] - out[False]).max() / scale:.1e}"
          " of the largest value")


if __name__ == "__main__":
    main()
