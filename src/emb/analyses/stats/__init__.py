"""Shared statistics, one module per family: association and effect sizes, permutation tests,
correlation, multiple testing, two-sample tests, polar projection, detection by threshold (ROC),
the bootstrap over stimuli, random-effects meta-analysis (CEAT); and, as submodules, the pole
bases of :mod:`~emb.analyses.stats.polar`, the valence direction of
:mod:`~emb.analyses.stats.subspace` and the removal of dominant directions of
:mod:`~emb.analyses.stats.nullify` (vast, similarity).

Every numpy kernel works on float64 internally and is vectorised over leading batch dimensions
(layers, poolings, words …). The xarray wrappers (:func:`normalize`, :func:`cosine`,
:func:`correlation`, :func:`adjust`) stay lazy on dask-backed data.
"""

from __future__ import annotations

from emb.analyses.stats import detection
from emb.analyses.stats._blas import single_threaded_blas
from emb.analyses.stats.association import (
    association,
    cosine,
    cosine_matrix,
    normalize,
    rating_residuals,
    sc_weat_effect_size,
    sc_weat_effect_sizes,
    target_attribute_cosines,
    unit,
    weat_effect_size,
    weat_statistic,
)
from emb.analyses.stats.bootstrap import (
    bca_interval,
    bootstrap_counts,
    percentile_interval,
    weat_bootstrap,
)
from emb.analyses.stats.correlation import (
    EXACT_MAX_N,
    P_FLOOR,
    Correlation,
    CorrelationMethod,
    average_ranks,
    correlation,
    correlation_ci,
    log10_pvalue,
    pearson,
    spearman,
)
from emb.analyses.stats.meta import (
    MetaResult,
    cohens_d_variance,
    dersimonian_laird,
    meta_log10_pvalue,
    meta_pvalue,
)
from emb.analyses.stats.multitest import (
    CorrectionMethod,
    adjust,
    adjust_pvalues,
    benjamini_hochberg,
    holm,
)
from emb.analyses.stats.permutation import (
    Alternative,
    PermutationMethod,
    PermutationResult,
    permutation_test,
    planned_splits,
)
from emb.analyses.stats.twosample import TTest, TTestKind, cohens_d, t_test

__all__ = [
    "EXACT_MAX_N",
    "P_FLOOR",
    "Alternative",
    "Correlation",
    "CorrelationMethod",
    "CorrectionMethod",
    "MetaResult",
    "PermutationMethod",
    "PermutationResult",
    "TTest",
    "TTestKind",
    "adjust",
    "adjust_pvalues",
    "association",
    "average_ranks",
    "benjamini_hochberg",
    "bca_interval",
    "bootstrap_counts",
    "cohens_d",
    "cohens_d_variance",
    "cosine",
    "cosine_matrix",
    "correlation",
    "correlation_ci",
    "detection",
    "dersimonian_laird",
    "holm",
    "log10_pvalue",
    "meta_log10_pvalue",
    "meta_pvalue",
    "normalize",
    "pearson",
    "permutation_test",
    "planned_splits",
    "rating_residuals",
    "sc_weat_effect_size",
    "sc_weat_effect_sizes",
    "target_attribute_cosines",
    "t_test",
    "single_threaded_blas",
    "spearman",
    "unit",
    "percentile_interval",
    "weat_bootstrap",
    "weat_effect_size",
    "weat_statistic",
]
