"""Paper metrics that observe plain per-round records (never an FL engine).

Index of the public names, grouped by family. Naming: ``*_index`` / ``*_fairness`` are in
``[0, 1]`` with higher = fairer; ``*_gap`` would be >= 0 with lower = better.

- Uniformity (:mod:`fltrust.metrics.jain`): Jain's fairness index (fairness paper Eq. 2).
- Contribution (:mod:`fltrust.metrics.shapley`): federated Shapley values of cooperative games
  (``games``: exact), their estimators (``sampling``: Monte Carlo, permutation) and the
  batched evaluation of a round's coalition models (``federated``), paper Eqs. 3-6.
- Fairness notions (:mod:`fltrust.metrics.fairness`): f_j, f_g, f_r, f_o and F_T of
  Federated Fairness Analytics (``notions``, paper Eqs. 7-13), the notion table every notion is
  registered in (``registry``: :func:`register_notion`), their ``settings`` and the
  ``observer``. The Table 3 averaging protocol is reproduction:
  :func:`fltrust.repro.fairness.run.table3_window_mean`.
"""

from fltrust.metrics.fairness import (
    NOTIONS,
    FairnessObserver,
    FairnessSettings,
    GroupFairness,
    Notion,
    NotionInput,
    RatioFairness,
    RoundFairness,
    authors_group_fairness,
    authors_group_values,
    default_sensitive_attributes,
    equalized_odds_group_fairness,
    general_fairness,
    group_fairness,
    incentive_fairness,
    individual_fairness,
    label_group_arrays,
    orchestrator_fairness,
    register_notion,
    round_fairness,
    unregister_notion,
)
from fltrust.metrics.jain import MetricInputError, jain_index
from fltrust.metrics.shapley import (
    FedSVResult,
    all_coalitions,
    average_params,
    coalition_utilities,
    federated_shapley,
    monte_carlo_shapley,
    permutation_coalitions,
    sample_permutations,
    shapley_values,
)

__all__ = [
    # errors
    "MetricInputError",
    # uniformity
    "jain_index",
    # contribution
    "FedSVResult",
    "all_coalitions",
    "average_params",
    "coalition_utilities",
    "federated_shapley",
    "monte_carlo_shapley",
    "permutation_coalitions",
    "sample_permutations",
    "shapley_values",
    # fairness notions
    "NOTIONS",
    "Notion",
    "NotionInput",
    "register_notion",
    "unregister_notion",
    "individual_fairness",
    "group_fairness",
    "authors_group_fairness",
    "authors_group_values",
    "equalized_odds_group_fairness",
    "label_group_arrays",
    "incentive_fairness",
    "orchestrator_fairness",
    "general_fairness",
    "round_fairness",
    "RatioFairness",
    "GroupFairness",
    "RoundFairness",
    # fairness runs
    "FairnessSettings",
    "default_sensitive_attributes",
    "FairnessObserver",
]
