"""The association metrics of the peer toolkits (WEFE, sweater): MAC, ECT, RIPA and RNSB.

Each kernel takes the vectors of one WEAT-style test, ``emb (..., item, feature)`` with the items
X, Y, A, B in that order (``n_x``, ``n_y``, ``n_a`` of them; B is the rest), and returns one value
per leading cell (layers, poolings, settings …), computed in float64. They follow the published
definitions as WEFE 1.0.1 applies them to a query with targets (X, Y) and attributes (A, B):

- MAC (Manzini et al. 2019): the mean, over every target word t ∈ X ∪ Y and each attribute set
  S ∈ {A, B}, of the mean cosine *distance* ``1 − cos(t, s)`` over s ∈ S (WEFE's ``MAC``);
- ECT (Dev & Phillips 2019): the Spearman correlation, over the attribute words a ∈ A ∪ B, of
  ``cos(mean X, a)`` and ``cos(mean Y, a)`` (the mean of the raw vectors), 1 = no bias;
- RIPA (Ethayarajh, Duvenaud & Hirst 2019): with the relation vectors
  ``b_i = (x_i − y_i) / ‖x_i − y_i‖`` of the pairs (X[i], Y[i]), a word's RIPA is the mean over
  the pairs of ``⟨w, b_i⟩`` (the raw word vector); WEFE's RIPA of a query is the mean over its
  one attribute set. A WEAT-style test has two: RIPA over A, over B, and the test's value, their
  difference ``RIPA_A − RIPA_B`` (pooled over A ∪ B, the two sets' associations cancel);
- RNSB (Sweeney & Najafian 2019): a logistic regression (scikit-learn, liblinear) trained on A
  (label +1) against B (label −1, the "negative" class); each target word's probability of B,
  normalised over X ∪ Y, against the uniform distribution by the Kullback–Leibler divergence.

References
----------
Manzini, T., Lim, Y. C., Tsvetkov, Y. & Black, A. W. (2019). Black is to criminal as Caucasian is to
police. NAACL, 615–621. Dev, S. & Phillips, J. (2019). Attenuating bias in word vectors. AISTATS,
879–887. Ethayarajh, K., Duvenaud, D. & Hirst, G. (2019). Understanding undesirable word embedding
associations. ACL, 1696–1705. Sweeney, C. & Najafian, M. (2019). A transparent framework for
evaluating unintended demographic bias in word embeddings. ACL, 1662–1667. Badilla, P.,
Bravo-Marquez, F. & Pérez, J. (2020). WEFE: the word embeddings fairness evaluation framework.
IJCAI, 430–436.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from emb.analyses.stats.association import target_attribute_cosines, unit

__all__ = ["mac", "ect", "ripa", "ripa_sets", "ripa_words", "rnsb", "rnsb_probabilities"]


def _float(emb: Any) -> np.ndarray:
    return np.asarray(emb, dtype=np.float64)


def mac(emb: Any, n_x: int, n_y: int, n_a: int) -> np.ndarray:
    """Mean average cosine distance of the targets X ∪ Y to A and to B (each set's mean counted
    once per target word), shape ``emb.shape[:-2]``."""
    distance = 1.0 - target_attribute_cosines(emb, n_x + n_y)
    per_set = np.stack([distance[..., :n_a].mean(-1), distance[..., n_a:].mean(-1)], axis=-1)
    return per_set.mean(axis=(-2, -1))


def _ranks(values: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(values, axis=-1)  # average ranks of ties, as scipy's spearmanr


def ect(emb: Any, n_x: int, n_y: int, n_a: int) -> np.ndarray:
    """Spearman correlation over A ∪ B of the cosines with the means of X and of Y (NaN where one
    side is constant), shape ``emb.shape[:-2]``."""
    v = _float(emb)
    n_t = n_x + n_y
    means = np.stack([v[..., :n_x, :].mean(-2), v[..., n_x:n_t, :].mean(-2)], axis=-2)
    sims = np.matmul(unit(means), np.swapaxes(unit(v[..., n_t:, :]), -1, -2))  # (..., 2, |A∪B|)
    r = _ranks(sims)
    r = r - r.mean(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (r[..., 0, :] * r[..., 1, :]).sum(-1) / np.sqrt(
            (r[..., 0, :] ** 2).sum(-1) * (r[..., 1, :] ** 2).sum(-1))


def ripa_words(emb: Any, pairs: np.ndarray, n_x: int, n_y: int) -> np.ndarray:
    """Each attribute word's RIPA (mean over the pairs of ⟨w, b_i⟩), shape
    ``emb.shape[:-2] + (|A ∪ B|,)``; ``pairs`` (k, 2) indexes X and Y (each in its own set)."""
    v = _float(emb)
    pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
    diff = v[..., pairs[:, 0], :] - v[..., n_x + pairs[:, 1], :]  # (..., k, feature)
    with np.errstate(invalid="ignore", divide="ignore"):
        b = diff / np.linalg.norm(diff, axis=-1, keepdims=True)
    return np.matmul(v[..., n_x + n_y:, :], np.swapaxes(b, -1, -2)).mean(-1)


def ripa_sets(emb: Any, pairs: np.ndarray, n_x: int, n_y: int, n_a: int) -> np.ndarray:
    """RIPA over A and over B (each the mean of its words' RIPA, WEFE's RIPA with that one
    attribute set), shape ``emb.shape[:-2] + (2,)``; NaN without a pair."""
    words = ripa_words(emb, pairs, n_x, n_y)
    if not len(np.asarray(pairs).reshape(-1, 2)):
        return np.full(words.shape[:-1] + (2,), np.nan)
    return np.stack([words[..., :n_a].mean(-1), words[..., n_a:].mean(-1)], axis=-1)


def ripa(emb: Any, pairs: np.ndarray, n_x: int, n_y: int, n_a: int) -> np.ndarray:
    """A WEAT-style test's RIPA: ``RIPA_A − RIPA_B`` (positive: A lies towards X more than B
    does), shape ``emb.shape[:-2]``."""
    sets = ripa_sets(emb, pairs, n_x, n_y, n_a)
    return sets[..., 0] - sets[..., 1]


def _classifier(seed: int) -> Any:
    from sklearn.linear_model import LogisticRegression

    # WEFE's defaults: liblinear, 10,000 iterations, the query's random_state
    return LogisticRegression(solver="liblinear", max_iter=10_000, random_state=seed)


def rnsb_probabilities(emb: Any, n_x: int, n_y: int, n_a: int, *, seed: int = 0,
                       holdout: bool = False) -> np.ndarray:
    """Each target word's probability of the negative class B, shape ``emb.shape[:-2] + (n_x +
    n_y,)``: one classifier per cell, trained on every attribute word (or, with ``holdout``, as
    WEFE's default: on a stratified, shuffled 80 % of them, ``random_state=seed``)."""
    from sklearn.model_selection import train_test_split

    from emb.analyses.stats._blas import single_threaded_blas

    v = _float(emb)
    n_t = n_x + n_y
    n_b = v.shape[-2] - n_t - n_a
    labels = np.concatenate([np.ones(n_a), -np.ones(n_b)])
    lead = v.shape[:-2]
    flat = v.reshape((-1,) + v.shape[-2:])
    out = np.full((flat.shape[0], n_t), np.nan)
    with single_threaded_blas():
        for i, cell in enumerate(flat):
            if not np.isfinite(cell).all():
                continue
            train, y = cell[n_t:], labels
            if holdout:
                train, _, y, _ = train_test_split(train, labels, shuffle=True, random_state=seed,
                                                  test_size=0.2, stratify=labels)
            model = _classifier(seed).fit(train, y)
            negative = int(np.flatnonzero(model.classes_ == -1)[0])
            out[i] = model.predict_proba(cell[:n_t])[:, negative]
    return out.reshape(lead + (n_t,))


def rnsb(emb: Any, n_x: int, n_y: int, n_a: int, *, seed: int = 0,
         holdout: bool = False) -> np.ndarray:
    """KL divergence of the targets' normalised negative-class probabilities from the uniform
    distribution (0: every target word equally negative), shape ``emb.shape[:-2]``."""
    p = rnsb_probabilities(emb, n_x, n_y, n_a, seed=seed, holdout=holdout)
    p = p / p.sum(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p * p.shape[-1]), 0.0)
    return terms.sum(-1)
