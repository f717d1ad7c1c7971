"""The valence subspace, checked against independent computations: a scipy solution of
LinearSVC's primal problem, scikit-learn's column normalisation, scipy's Pearson r, and a
synthetic store with a planted valence direction (its projections of phrases are checked with the
intersectional analysis, tests/analyses/intersectional/)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
import scipy.stats
import xarray as xr
from sklearn.preprocessing import normalize
from sklearn.svm import LinearSVC

from emb.analyses.stats.subspace import MAX_ITER, ColumnNorm, fit_direction
from emb.analyses.valence_subspace import valence_subspace
from tests.analyses._synthetic_intersectional import VAL, intersectional_dataset, training_vectors

TOP = 2  # the synthetic store's top layer


@pytest.fixture(scope="module")
def ds() -> xr.Dataset:
    return intersectional_dataset()


@pytest.fixture(scope="module")
def subspace(ds: xr.Dataset) -> xr.Dataset:
    return valence_subspace(ds).compute()


def test_planted_direction_is_recovered(subspace):
    # the unit weight vector (in the classifier's column-normalised space) lies along the planted
    # valence feature, pleasant positive; in raw space the column norms tilt it (valence_axis)
    assert (subspace["direction"].values[..., VAL] > 0.98).all()
    axis = subspace["valence_axis"].values
    assert (np.argmax(np.abs(axis), axis=-1) == VAL).all() and (axis[..., VAL] > 0).all()
    assert (subspace["svc_accuracy"].values == 1.0).all() and subspace["svc_converged"].all()


def test_linear_svc_solves_its_primal_problem(ds):
    """Independent of liblinear: LinearSVC minimises ½(‖w‖² + b²) + C Σ max(0, 1 − y(w·x + b))²
    (squared hinge, intercept penalised); scipy finds the same direction."""
    X, y, _ = training_vectors(ds, TOP, "last")
    Z, s = normalize(X, axis=0), 2.0 * y - 1.0

    def objective(theta):
        w, b = theta[:-1], theta[-1]
        slack = np.maximum(0.0, 1.0 - s * (Z @ w + b))
        grad_w = w - 2 * 5.0 * (slack * s) @ Z
        grad_b = b - 2 * 5.0 * (slack * s).sum()
        return 0.5 * (w @ w + b * b) + 5.0 * (slack**2).sum(), np.append(grad_w, grad_b)

    found = scipy.optimize.minimize(objective, np.zeros(Z.shape[1] + 1), jac=True, method="L-BFGS-B",
                                    options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000})
    w = found.x[:-1] / np.linalg.norm(found.x[:-1])
    _, _, unit, _, converged = fit_direction(X, y, C=5.0)
    assert converged and float(unit @ w) > 0.9999


def test_column_norm_is_normalize_axis_0_applied_to_new_vectors(ds):
    X, _, _ = training_vectors(ds, 1, "last")
    np.testing.assert_allclose(ColumnNorm().fit_transform(X), normalize(X, axis=0))
    V = X[:7] * 3 + 1
    np.testing.assert_allclose(ColumnNorm().fit(X).transform(V), V / np.linalg.norm(X, axis=0))


def test_valnorm_by_projection_and_by_cosine_equal_scipy(ds, subspace):
    stimulus = ds["stimulus_set"].values.astype(str)
    words = ds["word"].values.astype(str)
    lex = np.flatnonzero((stimulus == "lexicon") & ~np.isin(words, ["love", "death"]))
    ratings = ds["valence"].values[lex]
    for layer in range(3):
        for pooling in ("last", "mean"):
            X, y, _ = training_vectors(ds, layer, pooling)
            svc = LinearSVC(C=5.0, dual=True, random_state=0, max_iter=MAX_ITER).fit(normalize(X, axis=0), y)
            u = svc.coef_[0] / np.linalg.norm(svc.coef_[0])
            W = ds["embedding"].sel(layer=layer, pooling=pooling).values[lex].astype(np.float64)
            expected = scipy.stats.pearsonr((W / np.linalg.norm(X, axis=0)) @ u, ratings)
            cell = subspace.sel(layer=layer, pooling=pooling)
            assert float(cell["r_projection"]) == pytest.approx(expected.statistic, rel=1e-9)
            ci = expected.confidence_interval()
            assert float(cell["ci_low_projection"]) == pytest.approx(ci.low, rel=1e-9)
            assert float(cell["ci_high_projection"]) == pytest.approx(ci.high, rel=1e-9)
            unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
            cos = unit(W) @ unit(X).T
            sc = (cos[:, :25].mean(1) - cos[:, 25:].mean(1)) / cos.std(axis=1, ddof=1)
            assert float(cell["r_cosine"]) == pytest.approx(scipy.stats.pearsonr(sc, ratings).statistic, rel=1e-9)
            assert int(cell["n"]) == len(lex) == 80
    top = subspace.sel(layer=TOP)
    assert (top["r_projection"] > 0.8).all() and (top["r_cosine"] < 0.3).all()  # the planted rogue
    ref = valence_subspace(ds, method="reference").compute()
    assert int(ref["n"].max()) == 82 and ref.attrs["training_words_in_valnorm"] == "true"
