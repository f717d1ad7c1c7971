"""Storing a subset of layers (the forward pass stops after the highest), and long contexts cut
around their target instead of refused."""

from __future__ import annotations

import numpy as np
import pytest

CONTEXTS = ["The old bridge over the river was closed", "I love my family very much indeed."]
SPANS = [(4, 7), (2, 6)]


@pytest.mark.parametrize("runner_name", ["gpt2_runner", "bert_runner", "llama_runner", "t5_runner"])
def test_stopping_early_gives_the_same_layers(runner_name: str, request: pytest.FixtureRequest) -> None:
    runner = request.getfixturevalue(runner_name)
    enc = runner.encode(CONTEXTS, SPANS)
    full = runner.embed(enc, poolings=("mean", "last"))
    L = runner.info.n_layers
    for layers in ([0], [0, 1], [1], list(range(L + 1)), [0, L]):
        part = runner.embed(enc, poolings=("mean", "last"), layers=layers)
        assert part.shape == (2, len(layers), 2, runner.info.hidden_size)
        np.testing.assert_allclose(part, full[:, layers], rtol=1e-5, atol=1e-6)
    # the model is whole again afterwards
    np.testing.assert_array_equal(runner.embed(enc, poolings=("mean", "last")), full)


def test_stop_after_runs_fewer_blocks(gpt2_runner) -> None:
    from emb.backends._hf_runner import stop_after

    calls = []
    hooks = [b.register_forward_hook(lambda *a, i=i: calls.append(i))
             for i, b in enumerate(gpt2_runner.model.h)]
    try:
        enc = gpt2_runner.encode(CONTEXTS[:1], SPANS[:1])
        gpt2_runner.embed(enc, layers=[0, 1])
        assert calls == [0]
        calls.clear()
        gpt2_runner.embed(enc)
        assert calls == [0, 1, 2]
        with stop_after(gpt2_runner.model, 2, 3):
            assert len(gpt2_runner.model.h) == 2
        assert len(gpt2_runner.model.h) == 3
    finally:
        for h in hooks:
            h.remove()


@pytest.mark.parametrize("runner_name", ["gpt2_runner", "bert_runner"])
def test_long_contexts_are_cut_around_the_target(runner_name: str, request: pytest.FixtureRequest) -> None:
    runner = request.getfixturevalue(runner_name)
    filler = " ".join(["word"] * 300)
    for where in ("start", "middle", "end"):
        context = {"start": f"love {filler}", "middle": f"{filler} love {filler}",
                   "end": f"{filler} love"}[where]
        start = context.index("love")
        (enc,) = runner.encode([context], [(start, start + 4)])
        assert enc.window is not None, where
        a, b = enc.window
        assert a <= start and start + 4 <= b
        assert enc.n_tokens <= 128  # the tiny models' positions
        assert enc.n_tokens >= 120  # the window is as long as fits
        ids = enc.input_ids[enc.target]
        assert runner.tokenizer.decode(ids).strip().lower() == "love"
    (short,) = runner.encode(["I love it"], [(2, 6)])
    assert short.window is None


def test_layers_are_ascii_integers() -> None:
    """``--layers``: ASCII digits with an optional sign, as ``--max-memory`` and ``--shard``
    read numbers; int() alone would take "１" as 1 and "1_0" as 10 without a word."""
    from emb.errors import EmbError
    from emb.extraction.settings import parse_layers

    assert parse_layers("0, 6,-1", 12) == [0, 6, 12] and parse_layers("+1", 12) == [1]
    assert parse_layers([0, -1], 12) == [0, 12] and parse_layers("all", 12) == list(range(13))
    for bad in ("１", "1_0", "−1", "0,,1", "1.0", "0x1", "٢"):
        with pytest.raises(EmbError, match="integers like"):
            parse_layers(bad, 12)
    with pytest.raises(EmbError, match="integers like"):
        parse_layers([True], 12)


def test_a_bos_token_is_shown_short_in_its_error(gpt2_runner) -> None:
    from emb.errors import ModelError

    with pytest.raises(ModelError) as caught:
        gpt2_runner.token_id("x" * 5000)
    assert len(str(caught.value)) < 600 and "…" in str(caught.value)
