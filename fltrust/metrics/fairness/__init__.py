r"""Federated Fairness Analytics: the fairness notions (a table), general fairness F_T, and the observer.

Paper: Federated Fairness Analytics (Eqs. 2-13); facts about the authors' code:
``docs/references.md`` ("spec" below). All notions are *indices*: in
``[0, 1]`` for well-behaved input, higher = fairer.

=================  =====================================================================
name               meaning (round k, participants S_k, m = |S_k|)
=================  =====================================================================
f_j (Eq. 7)        individual fairness: J(x_n / s_n), performance over cumulative FedSV
f_g (Eqs. 8-9)     protected-group fairness: 1 - median over clients of a group gap
f_r (Eq. 10)       incentive fairness: J(r_n / s_n), reward over cumulative FedSV
f_o (Eq. 11)       orchestrator fairness: mean_n x_n
F_T (Eqs. 12-13)   general fairness: weighted mean of the notions (the four at 0.25 by default)
=================  =====================================================================

The notions are a table (:mod:`~fltrust.metrics.fairness.registry`): each is one registered
:class:`Notion` (its function of a :class:`NotionInput`, label, default weight in F_T, equation).
:func:`register_notion` adds one, and it is computed every round, stored with the round and shown
by every table, plot, report and Flower metric that lists the notions (``docs/extending.md``).

x_n is the client's validation accuracy after local training, r_n the accuracy of the
received global model before training, s_n the cumulative federated Shapley value
(:mod:`fltrust.metrics.shapley`) including the current round.

Two modes (:class:`FairnessSettings`): ``"faithful"`` reproduces exactly what produced the
paper's Table 3 (spec 2, 3 and 9, docs/references.md#fairness-2, #fairness-3, #fairness-9); ``"corrected"`` turns on
every correction of spec 9. Each correction is also a named switch, so it can be studied alone.

One module per concept; every public name is importable from here:

- :mod:`~fltrust.metrics.fairness.settings`: :class:`FairnessSettings` (defined in
  :mod:`fltrust.settings`), the switches of each mode (:data:`MODE_DEFAULTS`) and the authors'
  sensitive-attribute lists (:func:`default_sensitive_attributes`).
- :mod:`~fltrust.metrics.fairness.registry`: the notion table (:data:`NOTIONS`,
  :func:`register_notion`, :class:`NotionInput`, :func:`resolve_weights`).
- :mod:`~fltrust.metrics.fairness.notions`: the pure functions (:func:`individual_fairness`,
  :func:`group_fairness`, :func:`incentive_fairness`, :func:`orchestrator_fairness`,
  :func:`general_fairness`, :func:`round_fairness`) on per-round arrays.
- :mod:`~fltrust.metrics.fairness.observer`: :class:`FairnessObserver` computes them from
  :class:`fltrust.core.records.RoundRecord` objects of any FL engine.

The Table 3 averaging protocol (rounds 15-30) is reproduction, not a metric:
:func:`fltrust.repro.fairness.run.table3_window_mean`.
"""

from fltrust.metrics.fairness.notions import (
    GroupFairness,
    RatioFairness,
    RoundFairness,
    authors_group_fairness,
    authors_group_values,
    equalized_odds_group_fairness,
    general_fairness,
    group_fairness,
    incentive_fairness,
    individual_fairness,
    label_group_arrays,
    orchestrator_fairness,
    round_fairness,
)
from fltrust.metrics.fairness.registry import (
    FAIRNESS_KEYS,
    GENERAL_FAIRNESS,
    NOTIONS,
    Notion,
    NotionInput,
    register_notion,
    resolve_weights,
    unregister_notion,
)
from fltrust.metrics.fairness.observer import FairnessObserver
from fltrust.metrics.fairness.settings import MODE_DEFAULTS, FairnessSettings, default_sensitive_attributes
from fltrust.metrics.jain import MetricInputError

__all__ = [
    "FAIRNESS_KEYS",
    "GENERAL_FAIRNESS",
    "NOTIONS",
    "Notion",
    "NotionInput",
    "register_notion",
    "resolve_weights",
    "unregister_notion",
    "FairnessObserver",
    "FairnessSettings",
    "GroupFairness",
    "MODE_DEFAULTS",
    "MetricInputError",
    "RatioFairness",
    "RoundFairness",
    "authors_group_fairness",
    "authors_group_values",
    "default_sensitive_attributes",
    "equalized_odds_group_fairness",
    "general_fairness",
    "group_fairness",
    "incentive_fairness",
    "individual_fairness",
    "label_group_arrays",
    "orchestrator_fairness",
    "round_fairness",
]
