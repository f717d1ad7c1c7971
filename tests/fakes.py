"""A torch-free :class:`emb.backends.Runner`, for store and pipeline tests.

Tokens are regex words/punctuation; each token's vector at each layer is a fixed function of the
token text, its position and the whole context, so pooled results are known in closed form.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from emb.backends import Runner
from emb.errors import ModelError, TargetNotFoundError

_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True, kw_only=True)
class FakeInfo:
    model_id: str = "fake-model"
    revision: str | None = "r1"
    fingerprint: str = "fake-fingerprint"
    architecture: str = "FakeModel"
    n_layers: int = 3
    hidden_size: int = 8
    last_layer: str = "output of the last block"
    device: str = "cpu"

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class FakeEncoding:
    input_ids: np.ndarray
    target: np.ndarray
    subtoken_ids: np.ndarray
    context: str
    bos_added: bool = False

    @property
    def n_subtokens(self) -> int:
        return int(self.target.size)


def token_vectors(context: str, n_layers: int, hidden: int) -> np.ndarray:
    """(n_tokens, n_layers + 1, hidden) deterministic 'hidden states'."""
    toks = [m.group() for m in _TOKEN.finditer(context)]
    out = np.empty((len(toks), n_layers + 1, hidden))
    ctx_seed = int.from_bytes(hashlib.sha256(context.encode()).digest()[:4], "little")
    for t, tok in enumerate(toks):
        seed = int.from_bytes(hashlib.sha256(tok.lower().encode()).digest()[:4], "little")
        base = np.random.default_rng(seed).standard_normal(hidden)
        for layer in range(n_layers + 1):
            noise = np.random.default_rng([ctx_seed, t, layer]).standard_normal(hidden)
            out[t, layer] = base + 0.1 * layer * noise
    return out


@dataclass
class FakeRunner(Runner):
    info: FakeInfo = field(default_factory=FakeInfo)
    calls: list[int] = field(default_factory=list)

    def encode(self, contexts, spans, *, bos=None, bos_token_id=None):
        out, bad = [], []
        for i, (ctx, (s, e)) in enumerate(zip(contexts, spans, strict=True)):
            toks = list(_TOKEN.finditer(ctx))
            target = [j for j, m in enumerate(toks) if m.start() < e and m.end() > s]
            if not target:
                bad.append((i, ctx, (s, e)))
                continue
            ids = np.array([int(hashlib.sha256(m.group().encode()).hexdigest()[:6], 16) for m in toks])
            out.append(FakeEncoding(ids, np.array(target), ids[target], ctx))
        if bad:
            raise TargetNotFoundError(f"{len(bad)} targets not found: {bad}")
        return out

    def embed(self, encodings, *, poolings=("first", "last", "mean", "max"), batch_size=64,
              progress=None, out_dtype="float32", truncate=None):
        self.calls.append(len(encodings))
        res = np.empty((len(encodings), self.info.n_layers + 1, len(poolings), self.info.hidden_size), np.float32)
        for i, enc in enumerate(encodings):
            vec = token_vectors(enc.context, self.info.n_layers, self.info.hidden_size)[enc.target]
            pooled = {"first": vec[0], "last": vec[-1], "mean": vec.mean(0), "max": vec.max(0)}
            res[i] = np.stack([pooled[p] for p in poolings], axis=1)
            if progress is not None:
                progress(1)
        if not np.isfinite(res).all():
            raise ModelError("fake model returned NaN or infinite hidden states")
        with np.errstate(over="ignore"):
            return res.astype(out_dtype)
