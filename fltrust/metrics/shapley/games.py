r"""Cooperative games and their exact Shapley values (no models: a utility is a mapping or a callable).

A game is a utility ``U(T)`` of coalitions ``T`` (frozensets of players): a mapping
``{frozenset: float}`` (the empty coalition may be omitted, utility 0) or a callable. Fairness
spec 3 (docs/references.md#fairness-3): the exact value enumerates all ``2^m - 1`` non-empty coalitions.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence

import numpy as np

from fltrust.metrics.jain import MetricInputError

__all__ = ["EXACT_PLAYER_LIMIT", "Utility", "all_coalitions", "shapley_values"]

Utility = Mapping[frozenset, float] | Callable[[frozenset], float]
"""A cooperative game: coalition -> utility. A mapping may omit the empty coalition (utility 0)."""

EXACT_PLAYER_LIMIT = 20
"""Most players that :func:`all_coalitions` and :func:`shapley_values` enumerate (2^20 - 1 coalitions)."""


def _lookup(utility: Utility) -> Callable[[frozenset], float]:
    """Make a cached ``coalition -> float`` function for a mapping or a callable utility."""
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


def _check_enumerable(players: Sequence[Hashable]) -> list[Hashable]:
    players = _check_players(players)
    if len(players) > EXACT_PLAYER_LIMIT:
        raise MetricInputError(
            f"exact Shapley values of {len(players)} players need 2^{len(players)} - 1 = "
            f"{2 ** len(players) - 1:,} coalitions; enumeration stops at EXACT_PLAYER_LIMIT={EXACT_PLAYER_LIMIT} "
            "players: use permutation_shapley (or federated_shapley(method='auto'))"
        )
    return players


def all_coalitions(players: Sequence[Hashable]) -> list[frozenset]:
    """List every non-empty coalition of ``players``: ``2^m - 1`` sets, by size then player order.

    Parameters
    ----------
    players : sequence of hashable
        The m players, distinct.

    Returns
    -------
    list of frozenset
        The ``2^m - 1`` non-empty coalitions.

    Raises
    ------
    MetricInputError
        No players, repeated players, or more than :data:`EXACT_PLAYER_LIMIT` of them.
    """
    players = _check_enumerable(players)
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

    Raises
    ------
    MetricInputError
        Above :data:`EXACT_PLAYER_LIMIT` players (use :func:`permutation_shapley`).

    Examples
    --------
    Additive game U(T) = sum of a_i: each player gets its own a_i.

    >>> a = {"p": 1.0, "q": 2.0}
    >>> shapley_values(["p", "q"], lambda T: sum(a[i] for i in T)).tolist()
    [1.0, 2.0]
    """
    players = _check_enumerable(players)
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
