"""The common LLM families (Llama, Mistral, Qwen2/3, Gemma 2/3, Phi-3, OLMo 1/2, GPT-NeoX/Pythia) as tiny
random models with GPT-2's BPE: their targets' subtokens and BOS convention, their vectors
against direct transformers calls, and the same vectors through a device map with the layer cut."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")
transformers = pytest.importorskip("transformers")

from emb.backends import load_model  # noqa: E402
from tests import models  # noqa: E402
from tests.backends.test_hf import SENTENCES, contexts, direct, pool_by_hand, spans  # noqa: E402

#: The families the installed transformers knows (Qwen3, Gemma 3 and OLMo 2 came with 4.50-4.51;
#: at emb's floor, 4.46, the others run); from 4.51 on, every one.
KNOWN = [name for name, (config, _, _) in models.FAMILIES.items() if hasattr(transformers, config)]


def test_every_family_runs_on_a_recent_transformers():
    from packaging.version import Version

    if Version(transformers.__version__) >= Version("4.51"):
        assert KNOWN == list(models.FAMILIES)


@pytest.fixture(scope="module", params=KNOWN)
def family(request, tmp_path_factory):
    name = request.param
    directory = models.tiny_family(tmp_path_factory.mktemp(name), name)
    return name, directory, load_model(directory, device="cpu")


def test_subtokens_bos_and_vectors_equal_direct_calls(family):
    name, directory, runner = family
    adds_bos = models.FAMILIES[name][1]
    assert runner.info.adds_bos is adds_bos
    assert runner.info.causal and runner.info.n_layers == 2
    assert runner.info.model_type == transformers.AutoConfig.from_pretrained(directory).model_type
    expected = direct(directory)
    encodings = runner.encode(contexts(), spans())
    for encoding, (ids, target, _), (context, word) in zip(encodings, expected, SENTENCES,
                                                            strict=True):
        assert encoding.input_ids.tolist() == ids
        assert (ids[0] == runner.info.bos_token_id) is adds_bos
        assert encoding.target.tolist() == target
        assert runner.tokenizer.decode(encoding.subtoken_ids).strip() == word, context
    got = runner.embed(encodings, batch_size=5, truncate=False)
    for index, (_, target, states) in enumerate(expected):
        np.testing.assert_allclose(got[index], pool_by_hand(states, target), rtol=1e-5,
                                   atol=1e-5, err_msg=f"{name} item {index}")
    # --bos: the family's BOS first exactly once, whether its tokenizer adds it or not
    with_bos = runner.encode(contexts()[:1], spans()[:1], bos=True)[0]
    assert with_bos.input_ids[0] == runner.info.bos_token_id
    assert with_bos.input_ids[1] != runner.info.bos_token_id


def test_a_device_map_with_the_layer_cut_gives_the_same_vectors(family):
    name, directory, whole = family
    mapped = load_model(directory, device="cpu", device_map="cpu", layers=[0, 1])
    assert mapped.info.loaded_blocks == 1 and mapped.info.n_layers == 2
    encodings = whole.encode(contexts(), spans())
    np.testing.assert_allclose(mapped.embed(mapped.encode(contexts(), spans()), layers=[0, 1]),
                               whole.embed(encodings, layers=[0, 1]), rtol=0, atol=1e-6,
                               err_msg=name)
