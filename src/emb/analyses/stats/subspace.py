"""A learned valence subspace: a linear max-margin direction between two word sets, and scalar
projections onto it (Omrani Sabbaghi, Wolfe & Caliskan 2023).

The direction of a layer is the weight vector of a linear support-vector classifier
(:class:`sklearn.svm.LinearSVC`) trained to tell pleasant from unpleasant word vectors, made unit
length; a vector's valence is its scalar projection ``v·u / (u·u)`` onto it. The classifier sees
scaled vectors (by default each feature divided by its L2 norm over the training vectors, the
authors' ``normalize(X, axis=0)``), and so does every vector projected: the scaler is fitted once,
inside a :class:`sklearn.pipeline.Pipeline`, and applied to both. The authors' code trained on
scaled vectors but projected raw ones; ``mismatch=True`` reproduces that.

Every projection is linear in the raw vector, ``proj(v) = v·axis + offset``, so a fitted direction
is returned as that ``axis`` (and ``offset``): projecting a store's vectors is one dot product.

References
----------
Omrani Sabbaghi, S., Wolfe, R. & Caliskan, A. (2023). Evaluating biased attitude associations of
language models in an intersectional context. *AIES 2023*, §4.1 and §4.3.
"""

from __future__ import annotations

import threading
import warnings
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from emb.analyses.stats._blas import single_threaded_blas
from emb.errors import AnalysisError

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline
    from sklearn.svm import LinearSVC

__all__ = [
    "SCALINGS",
    "ColumnNorm",  # noqa: F822 - defined when first asked for (__getattr__ below)
    "Scaling",
    "direction_pipeline",
    "fit_direction",
    "valence_direction_kernel",
]

#: Serialises liblinear fits in this process (see valence_direction_kernel).
_LIBLINEAR = threading.Lock()

Scaling = Literal["column-norm", "standard", "none"]
SCALINGS: tuple[str, ...] = ("column-norm", "standard", "none")
#: liblinear iterations before giving up (scikit-learn's default, 1,000, is short for raw vectors
#: with a few huge features, as in the top layers of GPT-style models).
MAX_ITER = 20_000


# scikit-learn (half a second to import, scipy.stats with it) is imported when a direction is
# fitted, not with this module: every ``emb analyze`` run imports the registry, hence this module.
# ColumnNorm is built then and is this module's attribute from then on (PEP 562), so that it
# pickles and imports (``from emb.analyses.stats.subspace import ColumnNorm``) like any class.
def __getattr__(name: str) -> Any:
    if name == "ColumnNorm":
        return _column_norm()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_DEFINING = threading.Lock()


def _column_norm() -> type:
    """The ColumnNorm class, defined once (under a lock: two threads must not each define one,
    or ``isinstance`` would tell one's scalers from the other's)."""
    with _DEFINING:
        built = globals().get("ColumnNorm")
        return built if built is not None else _define_column_norm()


def _define_column_norm() -> type:
    from sklearn.base import BaseEstimator, TransformerMixin

    class ColumnNorm(TransformerMixin, BaseEstimator):
        """Divide each feature by its L2 norm over the vectors seen in ``fit``.

        ``ColumnNorm().fit_transform(X)`` equals :func:`sklearn.preprocessing.normalize(X,
        axis=0) <sklearn.preprocessing.normalize>` (a zero column stays zero); unlike that
        function, the fitted norms are then applied unchanged to new vectors.
        """

        def fit(self, X: Any, y: Any = None) -> ColumnNorm:
            X = np.asarray(X, dtype=np.float64)
            norms = np.sqrt(np.einsum("ij,ij->j", X, X))
            self.scale_ = np.where(norms > 0, norms, 1.0)
            self.n_features_in_ = X.shape[1]
            return self

        def transform(self, X: Any) -> np.ndarray:
            return np.asarray(X, dtype=np.float64) / self.scale_

    ColumnNorm.__module__ = __name__
    ColumnNorm.__qualname__ = "ColumnNorm"
    globals()["ColumnNorm"] = ColumnNorm
    return ColumnNorm


def _scaler(scaling: str) -> Any:
    if scaling == "column-norm":
        return _column_norm()()
    if scaling == "standard":
        from sklearn.preprocessing import StandardScaler

        return StandardScaler()
    if scaling == "none":
        return "passthrough"
    raise AnalysisError(f"scaling must be one of {list(SCALINGS)}; got {scaling!r}")


def _svc(C: float, seed: int) -> LinearSVC:
    """liblinear's dual coordinate descent (LinearSVC's classic default, the authors'), seeded."""
    from sklearn.svm import LinearSVC

    return LinearSVC(C=float(C), dual=True, random_state=int(seed), max_iter=MAX_ITER)


def direction_pipeline(*, C: float = 5.0, scaling: Scaling = "column-norm", seed: int = 0) -> Pipeline:
    """The classifier: ``Pipeline([("scale", scaler), ("svc", LinearSVC(C=C, random_state=seed))])``.

    LinearSVC keeps scikit-learn's defaults otherwise (squared hinge loss, L2 penalty, an
    intercept), as the authors did, solved in the dual (``dual=True``, scikit-learn's default
    before 1.5 and what "auto" picks when there are fewer words than features), with up to
    :data:`MAX_ITER` iterations.
    """
    if not C > 0:
        raise AnalysisError(f"C must be positive; got {C!r}")
    from sklearn.pipeline import Pipeline

    return Pipeline([("scale", _scaler(scaling)), ("svc", _svc(C, seed))])


def _linear_map(scaler: Any, d: int) -> tuple[np.ndarray, np.ndarray]:
    """(per-feature factor, per-feature shift) of a fitted scaler: ``x' = x·factor − shift``."""
    from sklearn.preprocessing import StandardScaler

    if isinstance(scaler, _column_norm()):
        return 1.0 / scaler.scale_, np.zeros(d)
    if isinstance(scaler, StandardScaler):
        return 1.0 / scaler.scale_, scaler.mean_ / scaler.scale_
    return np.ones(d), np.zeros(d)


def fit_direction(
    X: Any,
    y: Any,
    *,
    C: float = 5.0,
    scaling: Scaling = "column-norm",
    seed: int = 0,
    mismatch: bool = False,
) -> tuple[np.ndarray, float, np.ndarray, float, bool]:
    """Fit the valence direction on training vectors ``X`` with labels ``y`` (1 = pleasant).

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like of 0/1, shape (n,)
    C, scaling, seed
        See :func:`direction_pipeline`.
    mismatch : bool, default False
        The authors' code: the classifier is fitted on ``normalize(X, axis=0)`` (this training
        set's column norms), but the projected vectors are used raw.

    Returns
    -------
    axis : numpy.ndarray, shape (d,)
        ``proj(v) = v·axis + offset`` is the scalar projection of (the scaled) ``v`` onto the unit
        weight vector.
    offset : float
        Non-zero only for ``scaling="standard"`` (the centring).
    unit : numpy.ndarray, shape (d,)
        The classifier's weight vector made unit length (in the space it was trained in).
    intercept : float
        The classifier's intercept (not part of a projection), divided by the weight norm.
    converged : bool
        Whether liblinear converged within :data:`MAX_ITER` iterations.

    Notes
    -----
    ``u = w / ‖w‖``; ``proj(v) = s(v)·u / (u·u) = s(v)·u`` with ``s`` the fitted scaler, so
    ``axis = u ⊙ factor`` and ``offset = −shift·u`` (``s(v) = v ⊙ factor − shift``); with
    ``mismatch``, ``axis = u`` and ``offset = 0``. ``proj(v) + intercept`` is the classifier's
    decision function divided by ``‖w‖``: its sign is the predicted class.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y).astype(int)
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise AnalysisError(f"X must be (n, d) with one label per row; got {X.shape} and {y.shape}")
    if set(np.unique(y).tolist()) != {0, 1}:
        raise AnalysisError("the training vectors need both classes (pleasant = 1, unpleasant = 0)")
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.preprocessing import normalize

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if mismatch:
            svc = _svc(C, seed).fit(normalize(X, axis=0), y)
            factor, shift = np.ones(X.shape[1]), np.zeros(X.shape[1])
        else:
            pipe = direction_pipeline(C=C, scaling=scaling, seed=seed).fit(X, y)
            svc = pipe.named_steps["svc"]
            factor, shift = _linear_map(pipe.named_steps["scale"], X.shape[1])
    w = svc.coef_.reshape(-1).astype(np.float64)
    norm = float(np.linalg.norm(w))
    if not norm > 0:
        raise AnalysisError("the classifier's weight vector is zero: the two word sets coincide")
    unit = w / norm
    converged = bool(np.max(svc.n_iter_) < MAX_ITER)
    return unit * factor, float(-(shift @ unit)), unit, float(svc.intercept_[0]) / norm, converged


def _cv_accuracy(
    X: np.ndarray, y: np.ndarray, *, C: float, scaling: Scaling, seed: int, mismatch: bool, folds: int
) -> float:
    """Stratified k-fold accuracy of ``sign(proj(v) + intercept)`` as :func:`fit_direction` fits it
    on the other folds (the scaler fitted within the folds)."""
    if folds < 2:
        return float("nan")
    from sklearn.model_selection import StratifiedKFold

    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=int(seed))
    correct = 0
    for train, test in splitter.split(X, y):
        axis, offset, _, intercept, _ = fit_direction(
            X[train], y[train], C=C, scaling=scaling, seed=seed, mismatch=mismatch
        )
        predicted = (X[test] @ axis + offset + intercept) > 0
        correct += int(np.count_nonzero(predicted == (y[test] == 1)))
    return correct / len(y)


def valence_direction_kernel(
    X: np.ndarray,
    *,
    y: np.ndarray,
    C: float,
    scaling: Scaling,
    seed: int,
    mismatch: bool,
    folds: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`fit_direction` over leading batch axes: ``X`` (..., n, d) →
    ``axis`` (..., d), ``offset`` (...), ``unit`` (..., d), ``accuracy`` (...), ``converged`` (...)."""
    X = np.asarray(X, dtype=np.float64)
    batch, (n, d) = X.shape[:-2], X.shape[-2:]
    flat = X.reshape(-1, n, d)
    axis = np.empty((flat.shape[0], d))
    unit = np.empty((flat.shape[0], d))
    offset = np.empty(flat.shape[0])
    accuracy = np.empty(flat.shape[0])
    converged = np.empty(flat.shape[0], dtype=bool)
    # One fit at a time per process: liblinear draws its coordinate order from one global
    # generator (reseeded per fit, used with the GIL released), so two fits in two dask threads
    # would interleave their draws and give different directions from run to run; and one BLAS
    # thread, so that no other task's change of BLAS' thread count moves the last bits.
    with _LIBLINEAR, single_threaded_blas():
        for i, x in enumerate(flat):
            axis[i], offset[i], unit[i], _, converged[i] = fit_direction(
                x, y, C=C, scaling=scaling, seed=seed, mismatch=mismatch
            )
            accuracy[i] = _cv_accuracy(
                x, y, C=C, scaling=scaling, seed=seed, mismatch=mismatch, folds=folds
            )
    return (
        axis.reshape(*batch, d),
        offset.reshape(batch),
        unit.reshape(*batch, d),
        accuracy.reshape(batch),
        converged.reshape(batch),
    )
