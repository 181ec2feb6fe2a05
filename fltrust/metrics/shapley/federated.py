r"""FedSV of one federated round: coalition models, their utilities on the aux set, and the dispatcher.

:func:`average_params` builds a coalition model, :func:`coalition_utilities` evaluates every
needed coalition model with one call of :func:`fltrust.core.evaluation.evaluate_many`, and
:func:`federated_shapley` picks the method (:func:`resolve_method`) and hands the utilities to
:mod:`~fltrust.metrics.shapley.games` or :mod:`~fltrust.metrics.shapley.sampling`
(paper Eqs. 3-5, fairness spec 3; the methods' cost: :mod:`fltrust.metrics.shapley`; docs/references.md#fairness-3).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import torch
from torch import nn

from fltrust.core.evaluation import evaluate_many
from fltrust.core.records import Params
from fltrust.metrics.jain import MetricInputError
from fltrust.names import SHAPLEY_METHODS, LossScaling, ShapleyMethod
from fltrust.metrics.shapley.games import all_coalitions, shapley_values
from fltrust.metrics.shapley.sampling import (
    SAMPLER_PERMUTATIONS,
    monte_carlo_shapley,
    permutation_coalitions,
    permutation_shapley,
    sample_permutations,
)

__all__ = [
    "AUTO_EXACT_PLAYERS",
    "FedSVResult",
    "average_params",
    "coalition_utilities",
    "federated_shapley",
    "resolve_method",
]

PlayerT = TypeVar("PlayerT", bound=Hashable)
"""A player's id (a client id)."""

AUTO_EXACT_PLAYERS = 6
"""``method="auto"``: exact up to this many participants (63 coalition models: about 2.5 s per
round for the CIFAR CNN on 2,000 aux images at the 40 ms per model measured on 2 CPU cores),
:func:`permutation_shapley` above."""


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
    member_params: Mapping[PlayerT, Params],
    coalitions: Sequence[frozenset],
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    ref_loss: float,
    weights: Mapping[PlayerT, float] | None = None,
    batch_size: int = 32,
    loss_scaling: LossScaling = "mean",
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
        ``U(T)`` of every evaluated coalition (client ids); ``len(utilities)`` coalition models
        were evaluated.
    method : str
        The method that ran: ``"exact"``, ``"monte_carlo"`` or ``"permutation"`` (``"auto"``
        resolves to one of the first and the last).
    num_permutations : int or None
        Permutations sampled (``None`` for ``"exact"``).
    stderr : np.ndarray or None
        ``"permutation"``: standard error of each value (see :func:`permutation_shapley`).
    num_truncated : int
        ``"permutation"``: walks stopped by the truncation tolerance.
    stopped : {"target", "budget"} or None
        ``"permutation"`` with a ``target_error``: whether the standard errors reached the target
        or the coalition budget ran out (``None`` otherwise).
    target_error : float
        The target fraction of the value range (0 = none).
    error_ratio : float or None
        ``"permutation"``: the largest standard error over the value range ``max(phi) - min(phi)``.
    """

    phi: np.ndarray
    utilities: dict[frozenset, float] = field(repr=False)
    method: ShapleyMethod
    num_permutations: int | None = None
    stderr: np.ndarray | None = None
    num_truncated: int = 0
    stopped: str | None = None
    target_error: float = 0.0
    error_ratio: float | None = None


def resolve_method(method: ShapleyMethod, num_players: int, *, auto_exact_players: int = AUTO_EXACT_PLAYERS) -> ShapleyMethod:
    """Return the method :func:`federated_shapley` runs for ``method`` and m participants.

    ``"auto"`` is ``"exact"`` up to ``auto_exact_players`` participants and ``"permutation"``
    above; the other methods are returned unchanged.

    Parameters
    ----------
    method : {"exact", "monte_carlo", "permutation", "auto"}
        The configured method (``metrics.fairness.shapley``).
    num_players : int
        m, the round's participants.
    auto_exact_players : int, default AUTO_EXACT_PLAYERS
        The largest m that ``"auto"`` computes exactly.

    Returns
    -------
    str
        ``"exact"``, ``"monte_carlo"`` or ``"permutation"``.

    Raises
    ------
    MetricInputError
        An unknown method, or ``auto_exact_players < 1``.

    Examples
    --------
    >>> resolve_method("auto", 6), resolve_method("auto", 7), resolve_method("exact", 30)
    ('exact', 'permutation', 'exact')
    """
    if method not in SHAPLEY_METHODS:
        raise MetricInputError(f"method={method!r}; choose one of {list(SHAPLEY_METHODS)}")
    if auto_exact_players < 1:
        raise MetricInputError(f"auto_exact_players={auto_exact_players} must be >= 1")
    if method == "auto":
        return "exact" if num_players <= auto_exact_players else "permutation"
    return method


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
    method: ShapleyMethod = "exact",
    num_permutations: int | None = None,
    seed: int | Sequence[int] = 0,
    batch_size: int = 32,
    loss_scaling: LossScaling = "mean",
    chunk_size: int | None = None,
    exact_max_players: int = 10,
    auto_exact_players: int = AUTO_EXACT_PLAYERS,
    truncation: float = 0.0,
    target_error: float = 0.0,
    max_coalitions: int | None = None,
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
    method : {"exact", "monte_carlo", "permutation", "auto"}
        ``"exact"`` evaluates all ``2^m - 1`` coalitions (refused above ``exact_max_players``);
        ``"monte_carlo"`` every prefix of ``num_permutations`` uniform orders
        (:func:`monte_carlo_shapley`); ``"permutation"`` the guided, control-variate estimator
        :func:`permutation_shapley`; ``"auto"`` exact up to ``auto_exact_players``
        participants, ``"permutation"`` above. Sampling is seeded by ``seed``.
    num_permutations : int, optional
        Sampling budget; ``None`` = 200 for ``"monte_carlo"``, :data:`SAMPLER_PERMUTATIONS`
        (10) for ``"permutation"``.
    seed : int or sequence of int
        Seed of the sampled permutations.
    batch_size, loss_scaling, chunk_size
        Evaluation settings (``chunk_size``: aux samples per stacked forward pass).
    exact_max_players : int, default 10
        Most participants ``"exact"`` accepts (1,023 coalition models at 10).
    auto_exact_players : int, default 6
        ``"auto"``: exact up to this many participants.
    truncation : float, default 0.0
        ``"permutation"``: truncation tolerance (fraction of ``|U(S)|``; see
        :func:`permutation_shapley`).
    target_error : float, default 0.0
        ``"permutation"``: > 0 keeps sampling after ``num_permutations`` orders until the
        largest standard error is at most this fraction of the round's value range, or
        ``max_coalitions`` is spent (:func:`permutation_shapley`).
    max_coalitions : int, optional
        The coalition-model budget with ``target_error`` (default ``2^m - 1``).

    Returns
    -------
    FedSVResult

    Raises
    ------
    MetricInputError
        ``method="exact"`` with more than ``exact_max_players`` participants (the message names
        the setting and the alternatives), or misaligned inputs.
    """
    method = resolve_method(method, len(client_ids), auto_exact_players=auto_exact_players)
    players = [int(c) for c in client_ids]
    if len(client_params) != len(players):
        raise MetricInputError(
            f"got {len(client_params)} client parameter sets for {len(players)} client ids; they must align"
        )
    m = len(players)
    if method == "exact" and m > exact_max_players:
        raise MetricInputError(
            f"exact FedSV of {m} participants needs 2^{m} - 1 = {2 ** m - 1:,} coalition models; "
            f"method='exact' is limited to exact_max_players={exact_max_players} "
            "(metrics.fairness.exact_max_players): use method='auto' or 'permutation' "
            "(metrics.fairness.shapley), or raise the limit"
        )
    member_params = dict(zip(players, client_params))
    member_weights = None if weights is None else dict(zip(players, np.asarray(weights, dtype=float)))

    def evaluate(coalitions: Sequence[frozenset]) -> dict[frozenset, float]:
        return coalition_utilities(
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

    if method == "permutation":
        estimate = permutation_shapley(
            players,
            batch_utility=lambda coalitions: list(evaluate(coalitions).values()),
            num_permutations=SAMPLER_PERMUTATIONS if num_permutations is None else num_permutations,
            seed=seed,
            include_empty=include_empty,
            truncation=truncation,
            target_error=target_error,
            max_coalitions=max_coalitions,
        )
        return FedSVResult(**vars(estimate), method=method, error_ratio=estimate.error_ratio)  # the estimate's fields
    if method == "exact":
        utilities = evaluate(all_coalitions(players))
        phi = shapley_values(players, utilities, include_empty=include_empty)
        return FedSVResult(phi=phi, utilities=utilities, method=method)
    budget = 200 if num_permutations is None else num_permutations
    permutations = sample_permutations(len(players), budget, seed)
    utilities = evaluate(permutation_coalitions(players, permutations))
    phi = monte_carlo_shapley(players, utilities, num_permutations=budget, seed=seed, include_empty=include_empty)
    return FedSVResult(phi=phi, utilities=utilities, method=method, num_permutations=budget)
