"""Model fixtures shared by the backends', stimuli's and extract tests (a plugin of
tests/conftest.py): tiny random local models (built once per session) and the real small models
shipped by packages (MiniLM-L6, SmolLM2 GGUF).

Directory fixtures (``tiny_gpt2_dir`` ...) return ``save_pretrained`` directories; runner
fixtures (``gpt2_runner`` ...) return loaded :class:`emb.backends._hf_runner.HFRunner` objects,
float32 on the CPU.  A missing model package skips the test, or fails it when ``CI=true``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import models


def _need(build, *args):
    try:
        return build(*args)
    except (FileNotFoundError, ImportError) as error:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"test model unavailable: {error}")
        pytest.skip(f"test model unavailable: {error}")


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory) -> Path:
    """A random 3-block GPT-2 (hidden 32) with GPT-2's real BPE tokenizer."""
    return _need(models.tiny_gpt2, tmp_path_factory.mktemp("tiny_gpt2"))


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A random 2-block BERT (hidden 32) with MiniLM's WordPiece vocab."""
    return _need(models.tiny_bert, tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def tiny_t5_dir(tmp_path_factory) -> Path:
    """A random T5 (2 encoder blocks, d_model 32); GPT-2 BPE tokenizer appending an EOS."""
    return _need(models.tiny_t5, tmp_path_factory.mktemp("tiny_t5"))


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    """A random 2-block Llama (hidden 32) with a SentencePiece-style BPE that prepends <s>."""
    return _need(models.tiny_llama, tmp_path_factory.mktemp("tiny_llama"))


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    """The real all-MiniLM-L6-v2 directory (6 layers, hidden 384)."""
    return _need(models.minilm_dir)


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """The real SmolLM2-135M-Instruct Q4_1 .gguf file (30 layers, hidden 576)."""
    return _need(models.smollm2_gguf)


def _runner(path: Path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from emb.backends import load_model

    return load_model(path, dtype="float32", device="cpu")


@pytest.fixture(scope="session")
def gpt2_runner(tiny_gpt2_dir):
    return _runner(tiny_gpt2_dir)


@pytest.fixture(scope="session")
def bert_runner(tiny_bert_dir):
    return _runner(tiny_bert_dir)


@pytest.fixture(scope="session")
def t5_runner(tiny_t5_dir):
    return _runner(tiny_t5_dir)


@pytest.fixture(scope="session")
def llama_runner(tiny_llama_dir):
    return _runner(tiny_llama_dir)


@pytest.fixture(scope="session")
def minilm_runner(minilm_path):
    return _runner(minilm_path)
