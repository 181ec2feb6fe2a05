r"""Federated Shapley values (FedSV): the contribution measure of Federated Fairness Analytics.

Two layers, kept apart so that the game theory can be tested without models:

1. **Pure game math** on a utility given as a mapping ``{frozenset coalition: utility}`` or a
   callable ``utility(frozenset) -> float``:
   :func:`shapley_values` (exact, all coalitions) and :func:`monte_carlo_shapley`
   (permutation sampling with a budget and a seed).
2. **Model evaluation** for one federated round: :func:`average_params` builds a coalition
   model, :func:`coalition_utilities` evaluates all needed coalition models with *one* call of
   :func:`fltrust.core.evaluation.evaluate_many`, and :func:`federated_shapley` ties both together.

The FedSV of round k (paper Eqs. 3-5, fairness spec 3), for a participant n of S_k,
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

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from fltrust.core.evaluation import evaluate_many
from fltrust.core.records import Params
from fltrust.metrics.jain import MetricInputError

__all__ = [
    "FedSVResult",
    "Utility",
    "all_coalitions",
    "average_params",
    "coalition_utilities",
    "federated_shapley",
    "monte_carlo_shapley",
    "permutation_coalitions",
    "sample_permutations",
    "shapley_values",
]

Coalition = frozenset
Utility = Mapping[frozenset, float] | Callable[[frozenset], float]
"""A cooperative game: coalition -> utility. A mapping may omit the empty coalition (utility 0)."""

SHAPLEY_METHODS = ("exact", "monte_carlo")


# --------------------------------------------------------------------------------------------
# Pure game math
# --------------------------------------------------------------------------------------------
def _lookup(utility: Utility) -> Callable[[frozenset], float]:
    """A cached ``coalition -> float`` function for a mapping or a callable utility."""
    if isinstance(utility, Mapping):

        def from_mapping(coalition: frozenset) -> float:
            if coalition in utility:
                return float(utility[coalition])
            if not coalition:
                return 0.0
            raise MetricInputError(
                f"utility has no value for coalition {sorted(coalition)}; "
                "give every non-empty coalition of the players (the empty one defaults to 0)"
            )

        return from_mapping
    if not callable(utility):
        raise MetricInputError(
            f"utility must be a mapping {{frozenset: float}} or a callable, got {type(utility).__name__}"
        )
    cache: dict[frozenset, float] = {}

    def from_callable(coalition: frozenset) -> float:
        if coalition not in cache:
            cache[coalition] = float(utility(coalition))
        return cache[coalition]

    return from_callable


def _check_players(players: Sequence[Hashable]) -> list[Hashable]:
    players = list(players)
    if not players:
        raise MetricInputError("players must name at least one player")
    if len(set(players)) != len(players):
        raise MetricInputError(f"players must be distinct, got {players}")
    return players


def all_coalitions(players: Sequence[Hashable]) -> list[frozenset]:
    """Every non-empty coalition of ``players``: ``2^m - 1`` sets, by size then player order."""
    players = _check_players(players)
    return [
        frozenset(members)
        for size in range(1, len(players) + 1)
        for members in itertools.combinations(players, size)
    ]


def shapley_values(
    players: Sequence[Hashable], utility: Utility, *, include_empty: bool = True
) -> np.ndarray:
    r"""Exact Shapley values of a cooperative game, with or without the empty-coalition term.

    .. math::

        \phi_n = \frac{1}{m} \sum_{T \subseteq S \setminus \{n\}}
            \frac{U(T \cup \{n\}) - U(T)}{\binom{m-1}{|T|}}

    Paper Eq. 3 (with the binomial weights of the authors' code); fairness spec 3.

    Parameters
    ----------
    players : sequence of hashable
        The players S (client ids), m = len(players).
    utility : mapping or callable
        ``U(T)`` for coalitions ``T`` (frozensets of players). A mapping may omit the empty
        coalition, whose utility is then 0; a callable is called with ``frozenset()`` when
        ``include_empty`` is true.
    include_empty : bool, default True
        ``True``: the standard Shapley value (efficiency: ``sum(phi) = U(S) - U(empty)``).
        ``False``: the authors' FedSV, which drops every ``T = empty`` term, i.e.
        ``phi_n = standard_n - (U({n}) - U(empty)) / m``; efficiency fails.

    Returns
    -------
    np.ndarray
        ``phi``, aligned with ``players``.

    Examples
    --------
    Additive game U(T) = sum of a_i: each player gets its own a_i.

    >>> a = {"p": 1.0, "q": 2.0}
    >>> shapley_values(["p", "q"], lambda T: sum(a[i] for i in T)).tolist()
    [1.0, 2.0]
    """
    players = _check_players(players)
    value = _lookup(utility)
    m = len(players)
    phi = np.zeros(m)
    for i, player in enumerate(players):
        others = players[:i] + players[i + 1 :]
        for size in range(0 if include_empty else 1, m):
            weight = 1.0 / (m * math.comb(m - 1, size))
            for members in itertools.combinations(others, size):
                coalition = frozenset(members)
                phi[i] += weight * (value(coalition | {player}) - value(coalition))
    return phi


def sample_permutations(num_players: int, num_permutations: int, seed: int | Sequence[int]) -> np.ndarray:
    """Uniform random orderings of ``num_players`` players, shape ``(num_permutations, num_players)``.

    Row ``p`` lists player *positions* in the order they join. The same ``seed`` (an int or a
    sequence of ints, e.g. ``[run_seed, round]``) always gives the same permutations.
    """
    if num_players < 1:
        raise MetricInputError(f"num_players={num_players} must be >= 1")
    if num_permutations < 1:
        raise MetricInputError(f"num_permutations={num_permutations} must be >= 1 (the Monte Carlo budget)")
    rng = np.random.default_rng(seed)
    return rng.permuted(np.tile(np.arange(num_players), (num_permutations, 1)), axis=1)


def permutation_coalitions(
    players: Sequence[Hashable], permutations: np.ndarray, *, with_singletons: bool = True
) -> list[frozenset]:
    """The distinct non-empty coalitions that :func:`monte_carlo_shapley` needs.

    These are the prefixes of every permutation plus (``with_singletons``) every singleton,
    which the faithful (no empty coalition) estimate subtracts.
    """
    players = _check_players(players)
    needed: dict[frozenset, None] = {}  # insertion-ordered set, deterministic
    if with_singletons:
        for player in players:
            needed[frozenset([player])] = None
    for order in np.asarray(permutations):
        members: set[Hashable] = set()
        for position in order:
            members.add(players[int(position)])
            needed[frozenset(members)] = None
    return list(needed)


def monte_carlo_shapley(
    players: Sequence[Hashable],
    utility: Utility,
    *,
    num_permutations: int,
    seed: int | Sequence[int],
    include_empty: bool = True,
) -> np.ndarray:
    r"""Permutation-sampling estimate of the Shapley values (Castro et al. 2009).

    For each of ``num_permutations`` uniformly random orders :math:`\pi`, player n receives its
    marginal contribution :math:`U(P^\pi_n \cup \{n\}) - U(P^\pi_n)`, where :math:`P^\pi_n` are
    the players before n; the estimate is the mean over the permutations. It is unbiased for
    the standard Shapley value (:func:`shapley_values` with ``include_empty=True``).

    ``include_empty=False`` returns the estimate minus :math:`(U(\{n\}) - U(\emptyset))/m`,
    which is, exactly, an unbiased estimate of the authors' FedSV (the identity
    ``faithful = standard - (U({n}) - U(empty))/m`` holds for every game; fairness spec 3).
    Unlike the exact faithful value, a single estimate still depends on
    :math:`U(\emptyset)` and :math:`\ell(\theta_k; D)`; only its expectation does not.

    Parameters
    ----------
    players : sequence of hashable
        The players, m = len(players).
    utility : mapping or callable
        As for :func:`shapley_values`; a mapping needs every coalition of
        :func:`permutation_coalitions` (the prefixes of the sampled orders and the singletons).
    num_permutations : int
        Monte Carlo budget (orders sampled).
    seed : int or sequence of int
        Seed of :func:`sample_permutations`.
    include_empty : bool, default True
        Standard (True) or the authors' faithful variant (False).

    Returns
    -------
    np.ndarray
        Estimated ``phi``, aligned with ``players``.
    """
    players = _check_players(players)
    value = _lookup(utility)
    permutations = sample_permutations(len(players), num_permutations, seed)
    total = np.zeros(len(players))
    for order in permutations:
        members: frozenset = frozenset()
        before = value(members)
        for position in order:
            members = members | {players[int(position)]}
            after = value(members)
            total[position] += after - before
            before = after
    phi = total / len(permutations)
    if not include_empty:
        empty_value = value(frozenset())
        phi -= np.array([value(frozenset([p])) - empty_value for p in players]) / len(players)
    return phi


# --------------------------------------------------------------------------------------------
# Coalition models of a federated round
# --------------------------------------------------------------------------------------------
def average_params(param_sets: Sequence[Params], weights: Sequence[float] | np.ndarray | None = None) -> Params:
    r"""Element-wise (weighted) mean of parameter sets: the coalition model :math:`\bar\theta_T`.

    Paper Eq. 4: :math:`\bar\theta_T = \frac{1}{|T|}\sum_{n \in T} \theta^n_{k+1}` (``weights``
    None, as the authors coded); with ``weights`` (e.g. samples or batches per client) the
    FedAvg mean :math:`\sum_n w_n \theta^n / \sum_n w_n`.

    Means are accumulated in float64 and cast back to each array's dtype; integer arrays
    (BatchNorm ``num_batches_tracked``) are rounded to the nearest integer first.

    Parameters
    ----------
    param_sets : sequence of Params
        Each a list of numpy arrays in ``state_dict`` order, all of the same structure.
    weights : sequence of float, optional
        Non-negative weights with a positive sum, one per parameter set.

    Returns
    -------
    Params
        The averaged arrays.
    """
    if len(param_sets) == 0:
        raise MetricInputError("average_params needs at least one parameter set")
    n = len(param_sets)
    if weights is None:
        w = np.full(n, 1.0 / n)
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (n,) or np.any(~np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise MetricInputError(
                f"weights must be {n} finite non-negative numbers with a positive sum, "
                f"got {np.asarray(weights).tolist()}"
            )
        w = w / w.sum()
    num_arrays = len(param_sets[0])
    if any(len(p) != num_arrays for p in param_sets):
        raise MetricInputError(
            f"parameter sets differ in length: {[len(p) for p in param_sets]}; all must follow one state_dict"
        )
    averaged: Params = []
    for index in range(num_arrays):
        reference = np.asarray(param_sets[0][index])
        total = np.zeros(reference.shape, dtype=np.float64)
        for weight, params in zip(w, param_sets):
            array = np.asarray(params[index])
            if array.shape != reference.shape:
                raise MetricInputError(
                    f"array {index} has shape {array.shape} in one parameter set and {reference.shape} in another"
                )
            total += weight * array
        if np.issubdtype(reference.dtype, np.integer) or reference.dtype == np.bool_:
            total = np.rint(total)
        averaged.append(total.astype(reference.dtype))
    return averaged


def coalition_utilities(
    model: nn.Module,
    member_params: Mapping[Hashable, Params],
    coalitions: Sequence[frozenset],
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    ref_loss: float,
    weights: Mapping[Hashable, float] | None = None,
    batch_size: int = 32,
    loss_scaling: str = "mean",
    chunk_size: int | None = None,
) -> dict[frozenset, float]:
    r"""Utilities :math:`U(T) = \ell_{ref} - \ell(\bar\theta_T; D)` of non-empty coalitions.

    Paper Eq. 5. All coalition models are built first and evaluated with a single call of
    :func:`fltrust.core.evaluation.evaluate_many`; nothing is evaluated twice.

    Parameters
    ----------
    model : nn.Module
        Architecture template (its ``state_dict`` order matches the parameter sets).
    member_params : mapping of player to Params
        Each participant's returned model.
    coalitions : sequence of frozenset
        Non-empty coalitions to evaluate (duplicates are evaluated once).
    x, y : torch.Tensor
        The auxiliary set D.
    ref_loss : float
        :math:`\ell_{ref} = \ell(\theta_k; D)`, the loss of the model the clients received.
    weights : mapping of player to float, optional
        FedAvg weights of the coalition mean; ``None`` = unweighted (the authors' choice).
    batch_size, loss_scaling, chunk_size
        Evaluation settings, as in :func:`fltrust.core.evaluation.evaluate_many` (``chunk_size``:
        aux samples per forward pass of all coalition models; speed and memory only).

    Returns
    -------
    dict of frozenset to float
        One utility per distinct coalition.
    """
    unique = list(dict.fromkeys(coalitions))
    order = list(member_params)
    param_sets = []
    for coalition in unique:
        if not coalition:
            raise MetricInputError("coalition_utilities evaluates non-empty coalitions only (U(empty) = 0)")
        missing = sorted(set(coalition) - set(order), key=str)
        if missing:
            raise MetricInputError(
                f"coalition {sorted(coalition, key=str)} names players without parameters: {missing}"
            )
        members = [p for p in order if p in coalition]
        member_weights = None if weights is None else [weights[p] for p in members]
        param_sets.append(average_params([member_params[p] for p in members], member_weights))
    losses, _ = evaluate_many(model, param_sets, x, y, batch_size=batch_size, loss_scaling=loss_scaling,
                              chunk_size=chunk_size)
    return {coalition: float(ref_loss) - float(loss) for coalition, loss in zip(unique, losses)}


@dataclass
class FedSVResult:
    """One round's federated Shapley values.

    Attributes
    ----------
    phi : np.ndarray
        Per-round FedSV, aligned with the round's client ids.
    utilities : dict of frozenset to float
        ``U(T)`` of every evaluated coalition (client ids).
    method : str
        ``"exact"`` or ``"monte_carlo"``.
    """

    phi: np.ndarray
    utilities: dict[frozenset, float] = field(repr=False)
    method: str


def federated_shapley(
    model: nn.Module,
    client_ids: Sequence[int] | np.ndarray,
    client_params: Sequence[Params],
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    ref_loss: float,
    include_empty: bool,
    weights: Sequence[float] | np.ndarray | None = None,
    method: str = "exact",
    num_permutations: int = 200,
    seed: int | Sequence[int] = 0,
    batch_size: int = 32,
    loss_scaling: str = "mean",
    chunk_size: int | None = None,
) -> FedSVResult:
    """Federated Shapley values of one round (paper Eqs. 3-5; fairness spec 3).

    Parameters
    ----------
    model : nn.Module
        Architecture template.
    client_ids : sequence of int
        The round's participants S_k.
    client_params : sequence of Params
        Their returned models, aligned with ``client_ids``.
    x, y : torch.Tensor
        Auxiliary set D.
    ref_loss : float
        ``l(theta_k; D)``; cancels when ``include_empty`` is false.
    include_empty : bool
        Standard Shapley (True) or the authors' variant without the empty coalition (False).
    weights : sequence of float, optional
        Coalition-mean weights aligned with ``client_ids`` (``None`` = unweighted mean).
    method : {"exact", "monte_carlo"}
        ``"exact"`` evaluates all ``2^m - 1`` coalitions; ``"monte_carlo"`` the coalitions of
        ``num_permutations`` sampled orders (seeded by ``seed``).
    num_permutations, seed
        Monte Carlo budget and seed.
    batch_size, loss_scaling, chunk_size
        Evaluation settings (``chunk_size``: aux samples per stacked forward pass).

    Returns
    -------
    FedSVResult
    """
    if method not in SHAPLEY_METHODS:
        raise MetricInputError(f"method={method!r}; choose one of {list(SHAPLEY_METHODS)}")
    players = [int(c) for c in client_ids]
    if len(client_params) != len(players):
        raise MetricInputError(
            f"got {len(client_params)} client parameter sets for {len(players)} client ids; they must align"
        )
    member_params = dict(zip(players, client_params))
    member_weights = None if weights is None else dict(zip(players, np.asarray(weights, dtype=float)))
    if method == "exact":
        coalitions = all_coalitions(players)
    else:
        permutations = sample_permutations(len(players), num_permutations, seed)
        coalitions = permutation_coalitions(players, permutations)
    utilities = coalition_utilities(
        model,
        member_params,
        coalitions,
        x,
        y,
        ref_loss=ref_loss,
        weights=member_weights,
        batch_size=batch_size,
        loss_scaling=loss_scaling,
        chunk_size=chunk_size,
    )
    if method == "exact":
        phi = shapley_values(players, utilities, include_empty=include_empty)
    else:
        phi = monte_carlo_shapley(
            players, utilities, num_permutations=num_permutations, seed=seed, include_empty=include_empty
        )
    return FedSVResult(phi=phi, utilities=utilities, method=method)
