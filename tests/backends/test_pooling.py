"""pool() against hand-written numpy loops."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from emb.backends.pooling import POOLINGS, parse_poolings, pool  # noqa: E402


def reference(hidden: np.ndarray, mask: np.ndarray, poolings) -> np.ndarray:
    """Loop over items and layers; (layer, batch, seq, feature) -> (batch, layer, pooling, feature)."""
    n_layers, batch, _, features = hidden.shape
    out = np.empty((batch, n_layers, len(poolings), features), dtype=np.float64)
    for b in range(batch):
        where = [s for s in range(mask.shape[1]) if mask[b, s]]
        for layer in range(n_layers):
            vectors = [hidden[layer, b, s].astype(np.float64) for s in where]
            for p, name in enumerate(poolings):
                if name == "first":
                    out[b, layer, p] = vectors[0]
                elif name == "last":
                    out[b, layer, p] = vectors[-1]
                elif name == "mean":
                    out[b, layer, p] = sum(vectors) / len(vectors)
                else:
                    out[b, layer, p] = np.maximum.reduce(vectors)
    return out


@pytest.fixture
def batch():
    rng = np.random.default_rng(7)
    hidden = rng.normal(size=(4, 5, 9, 6)).astype(np.float32)  # 3 blocks + embeddings, 5 items
    mask = np.zeros((5, 9), dtype=bool)
    mask[0, 0] = True  # one token at the start
    mask[1, 8] = True  # one token at the end
    mask[2, 2:6] = True  # a run of four
    mask[3, [1, 4, 7]] = True  # non-contiguous
    mask[4, :] = True  # everything
    return hidden, mask


@pytest.mark.parametrize(
    "poolings", [POOLINGS, ("max", "first"), ("mean",), ("last", "mean", "max", "first")]
)
def test_pool_matches_loops(batch, poolings):
    hidden, mask = batch
    got = pool(torch.from_numpy(hidden), torch.from_numpy(mask), poolings=poolings)
    assert got.dtype == torch.float32
    assert tuple(got.shape) == (5, 4, len(poolings), 6)
    np.testing.assert_allclose(got.numpy(), reference(hidden, mask, poolings), rtol=1e-6, atol=1e-6)


def test_pool_accepts_a_tuple_of_layers(batch):
    hidden, mask = batch
    layers = tuple(torch.from_numpy(h) for h in hidden)
    got = pool(layers, torch.from_numpy(mask))
    np.testing.assert_allclose(got.numpy(), reference(hidden, mask, POOLINGS), rtol=1e-6, atol=1e-6)


def test_max_ignores_larger_values_outside_the_target():
    hidden = torch.tensor([[[[1.0], [9.0], [-5.0], [9.0]]]])  # 1 layer, 1 item, 4 tokens
    mask = torch.tensor([[False, False, True, False]])
    got = pool(hidden, mask, poolings=["max", "mean"])
    assert got[0, 0, :, 0].tolist() == [-5.0, -5.0]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_is_pooled_in_float32(dtype):
    # 20 tokens of 4000: their sum (80,000) overflows float16 (max 65,504)
    hidden = torch.full((2, 1, 20, 3), 4000.0, dtype=dtype)
    hidden[:, :, 0] = 1.0
    mask = torch.ones(1, 20, dtype=torch.bool)
    got = pool(hidden, mask)
    assert got.dtype == torch.float32
    expected = reference(hidden.float().numpy(), mask.numpy(), POOLINGS)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
    assert got[0, 0, 2, 0].item() == pytest.approx((19 * 4000.0 + 1.0) / 20)


def test_errors():
    hidden = torch.zeros(2, 2, 3, 4)
    with pytest.raises(ValueError, match="no target token"):
        pool(hidden, torch.tensor([[True, False, False], [False, False, False]]))
    with pytest.raises(ValueError, match="shape"):
        pool(hidden, torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="unknown pooling"):
        parse_poolings(["first", "median"])
    with pytest.raises(ValueError, match="repeat"):
        parse_poolings(["first", "first"])
    with pytest.raises(ValueError, match="no pooling"):
        parse_poolings([])
    assert parse_poolings("mean") == ("mean",)
