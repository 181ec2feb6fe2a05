r"""Federated Shapley values (FedSV): the contribution measure of Federated Fairness Analytics.

Two layers in three modules, kept apart so that the game theory can be tested without models:

1. **Pure game math** on a utility given as a mapping ``{frozenset coalition: utility}`` or a
   callable ``utility(frozenset) -> float``: :mod:`~fltrust.metrics.shapley.games` holds
   :func:`shapley_values` (exact, all coalitions), :mod:`~fltrust.metrics.shapley.sampling` the
   estimators :func:`monte_carlo_shapley` (plain
   permutation sampling with a budget and a seed) and :func:`permutation_shapley` (the
   estimator that scales: guided permutation sampling with a control variate and optional
   truncation; it also takes a *batched* utility that evaluates many coalitions at once).
2. **Model evaluation** for one federated round (:mod:`~fltrust.metrics.shapley.federated`):
   :func:`average_params` builds a coalition model, :func:`coalition_utilities` evaluates all
   needed coalition models with *one* call of :func:`fltrust.core.evaluation.evaluate_many`, and
   :func:`federated_shapley` ties both together.

Methods of :func:`federated_shapley`, by the coalition models a round of m participants evaluates
on the aux set (times and errors: ``benchmarks/fedsv.py``):

- ``"exact"``: all ``2^m - 1`` (31 at 5, 1,023 at 10); no error; refused above
  ``exact_max_players``.
- ``"monte_carlo"``: every prefix of P uniform orders, up to ``1 + P (m - 1)`` (P = 200 by
  default); error ~ 1/sqrt(P), large in FedSV rounds.
- ``"permutation"``: :func:`permutation_shapley`, at most ``m + 1 + P (m - 2)`` (P = 10 by
  default: 91 at 10 participants); error ~ 1/sqrt(P), a standard error per participant.
- ``"auto"``: ``"exact"`` up to ``auto_exact_players`` participants (6: 63 models), else
  ``"permutation"``.

The FedSV of round k (paper Eqs. 3-5, fairness spec 3; docs/references.md#fairness-3), for a participant n of S_k,
m = |S_k|:

.. math::

    \phi_{n,k} = \frac{1}{m} \sum_{T \subseteq S_k \setminus \{n\}}
        \frac{U_k(T \cup \{n\}) - U_k(T)}{\binom{m-1}{|T|}},
    \qquad U_k(T) = \ell(\theta_k; D) - \ell(\bar\theta_T; D),

where :math:`\bar\theta_T` is the coalition model (the mean of the members' returned models)
and :math:`\ell(\cdot; D)` the loss on the server's auxiliary set D. The cumulative FedSV is
:math:`s_n = \sum_k \phi_{n,k}` (paper Eq. 6).

Switches (``include_empty``, coalition weights) and where the authors' code differs:

- ``include_empty=False`` (faithful): the authors' power set excludes the empty coalition, so
  the term :math:`[U(\{n\}) - U(\emptyset)]/m` is missing. With :math:`U(\emptyset) = 0`
  (the empty coalition "is" :math:`\theta_k`, whose utility is exactly 0):
  :math:`\phi^{faithful}_n = \phi^{standard}_n - U(\{n\})/m`. Efficiency fails and
  :math:`\ell(\theta_k; D)` cancels completely (every remaining term is a difference of two
  non-empty coalitions).
- ``include_empty=True`` (corrected): the standard Shapley value with :math:`U(\emptyset)=0`;
  efficiency :math:`\sum_n \phi_n = U(S_k)` holds.
- Paper Eq. 3 omits the binomial weights; the code (and this module) has them.
- Coalition model: unweighted mean (paper Eq. 4 and the code), or FedAvg-weighted
  (``weights`` = the clients' numbers of samples or batches), the corrected option.
"""

from fltrust.metrics.shapley.federated import (
    AUTO_EXACT_PLAYERS,
    SHAPLEY_METHODS,
    FedSVResult,
    average_params,
    coalition_utilities,
    federated_shapley,
    resolve_method,
)
from fltrust.metrics.shapley.games import EXACT_PLAYER_LIMIT, Utility, all_coalitions, shapley_values
from fltrust.metrics.shapley.sampling import (
    SAMPLER_PERMUTATIONS,
    BatchUtility,
    ShapleyEstimate,
    guided_permutations,
    mean_game_shapley,
    monte_carlo_shapley,
    permutation_coalitions,
    permutation_shapley,
    sample_permutations,
)

__all__ = [
    "AUTO_EXACT_PLAYERS",
    "BatchUtility",
    "EXACT_PLAYER_LIMIT",
    "FedSVResult",
    "SAMPLER_PERMUTATIONS",
    "SHAPLEY_METHODS",
    "ShapleyEstimate",
    "Utility",
    "all_coalitions",
    "average_params",
    "coalition_utilities",
    "federated_shapley",
    "guided_permutations",
    "mean_game_shapley",
    "monte_carlo_shapley",
    "permutation_coalitions",
    "permutation_shapley",
    "resolve_method",
    "sample_permutations",
    "shapley_values",
]
