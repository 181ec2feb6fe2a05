r"""Sampled Shapley values: plain Monte Carlo and the guided, control-variate permutation estimator.

:func:`monte_carlo_shapley` (Castro et al. 2009) averages marginal gains over uniform orders
(:func:`sample_permutations`); :func:`permutation_shapley` walks guided orders
(:func:`guided_permutations`) with the mean game (:func:`mean_game_shapley`) as control variate
and optional truncation. Both take the utilities of :mod:`fltrust.metrics.shapley.games`;
:func:`permutation_shapley` also a batched utility (:data:`BatchUtility`).
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fltrust.metrics.jain import MetricInputError
from fltrust.metrics.shapley.games import Utility, _check_players, _lookup

__all__ = [
    "BatchUtility",
    "MAX_ADAPTIVE_PERMUTATIONS_PER_PLAYER",
    "SAMPLER_PERMUTATIONS",
    "ShapleyEstimate",
    "guided_permutations",
    "mean_game_shapley",
    "monte_carlo_shapley",
    "permutation_coalitions",
    "permutation_shapley",
    "sample_permutations",
]

BatchUtility = Callable[[list[frozenset]], Sequence[float]]
"""A cooperative game evaluated many coalitions at a time: ``[T1, T2, ...] -> [U(T1), U(T2), ...]``
(non-empty coalitions only; ``U(empty) = 0``)."""

SAMPLER_PERMUTATIONS = 10
"""Default budget of ``method="permutation"``: permutations per round. At 10 participants at most
91 coalition models (82 in ``benchmarks/fedsv.py``, about 8 % of exact's time); largest error
over 20 seeds 3.5 % (CIFAR CNN) and 4.7 % (NSL-KDD MLP) of the value range on that benchmark's
synthetic rounds, but 41.5 % on a real CIFAR-10 round (``benchmarks/fedsv.py --real``; README,
Flower section): read the reported standard errors."""


MAX_ADAPTIVE_PERMUTATIONS_PER_PLAYER = 100
"""With a ``target_error``, :func:`permutation_shapley` walks at most this many orders per player."""


def _check_sizes(num_players: int, num_permutations: int, budget: str) -> None:
    if num_players < 1:
        raise MetricInputError(f"num_players={num_players} must be >= 1")
    if num_permutations < 1:
        raise MetricInputError(f"num_permutations={num_permutations} must be >= 1 (the {budget} budget)")


def sample_permutations(num_players: int, num_permutations: int, seed: int | Sequence[int]) -> np.ndarray:
    """Draw uniform random orderings of ``num_players`` players.

    Row ``p`` lists player *positions* in the order they join. The same ``seed`` (an int or a
    sequence of ints, e.g. ``[run_seed, round]``) always gives the same permutations.

    Parameters
    ----------
    num_players : int
        m >= 1.
    num_permutations : int
        How many orderings (the Monte Carlo budget), >= 1.
    seed : int or sequence of int
        Seed of :func:`numpy.random.default_rng`.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(num_permutations, num_players)``, each row a permutation of ``0..m-1``.

    Raises
    ------
    MetricInputError
        ``num_players`` or ``num_permutations`` below 1.
    """
    _check_sizes(num_players, num_permutations, "Monte Carlo")
    rng = np.random.default_rng(seed)
    return rng.permuted(np.tile(np.arange(num_players), (num_permutations, 1)), axis=1)


def permutation_coalitions(
    players: Sequence[Hashable], permutations: np.ndarray, *, with_singletons: bool = True
) -> list[frozenset]:
    """List the distinct non-empty coalitions that :func:`monte_carlo_shapley` needs.

    These are the prefixes of every permutation plus (``with_singletons``) every singleton,
    which the faithful (no empty coalition) estimate subtracts.

    Parameters
    ----------
    players : sequence of hashable
        The m players, distinct (at least one); a permutation's entries are positions in this sequence.
    permutations : numpy.ndarray
        ``(P, m)`` orderings, as :func:`sample_permutations` draws them.
    with_singletons : bool, default True
        Also list every singleton coalition.

    Returns
    -------
    list of frozenset
        Each needed coalition once, in the order first needed (singletons first).
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
    ``faithful = standard - (U({n}) - U(empty))/m`` holds for every game; fairness spec 3;
    docs/references.md#fairness-3). Unlike the exact faithful value, a single estimate still depends on
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


def guided_permutations(num_players: int, num_permutations: int, seed: int | Sequence[int]) -> np.ndarray:
    """Random orderings whose first player cycles through all players (GTG-Shapley's guided sampling).

    Row ``p`` starts with the player at position ``(offset + p) mod num_players`` (``offset``
    drawn once) and continues with the other players in uniformly random order; with a multiple
    of ``num_players`` rows every player comes first equally often. Averaged over the random
    offset, each player is first with probability ``1 / num_players``, as in uniform sampling, so
    permutation means stay unbiased. Same ``seed``, same orderings.

    Parameters
    ----------
    num_players, num_permutations : int
        Shape of the result.
    seed : int or sequence of int
        Seed of :func:`numpy.random.default_rng` (e.g. ``[run_seed, round]``).

    Returns
    -------
    np.ndarray
        Shape ``(num_permutations, num_players)``; row ``p`` lists player positions in joining order.

    Examples
    --------
    >>> perms = guided_permutations(3, 6, seed=0)
    >>> sorted(perms[:, 0].tolist())
    [0, 0, 1, 1, 2, 2]
    >>> all(sorted(row) == [0, 1, 2] for row in perms.tolist())
    True
    """
    _check_sizes(num_players, num_permutations, "sampling")
    rng = np.random.default_rng(seed)
    offset = int(rng.integers(num_players))
    keys = rng.random((num_permutations, num_players))
    first = (offset + np.arange(num_permutations)) % num_players
    keys[np.arange(num_permutations), first] = -1.0  # sorts first; the rest in random order
    return np.argsort(keys, axis=1, kind="stable")


def mean_game_shapley(values: Sequence[float] | np.ndarray) -> np.ndarray:
    r"""Exact Shapley values of the *mean game* :math:`V(T) = \frac{1}{|T|}\sum_{i \in T} a_i`, :math:`V(\emptyset) = 0`.

    A player n joining k >= 1 others T changes V by :math:`(a_n - \bar a_T)/(k+1)`, whose mean over
    the k-subsets of the others is :math:`(a_n - \bar a_{-n})/(k+1)`; joining first gives
    :math:`a_n`. Averaging over the m positions:

    .. math::

        \phi^V_n = \frac{1}{m}\Big[a_n + (a_n - \bar a_{-n}) \sum_{j=2}^{m} \frac{1}{j}\Big],
        \qquad \bar a_{-n} = \frac{1}{m-1}\sum_{i \ne n} a_i .

    The values sum to :math:`V(S) = \bar a`. :func:`permutation_shapley` uses this game, with
    :math:`a_i = U(\{i\})`, as its control variate.

    Parameters
    ----------
    values : sequence of float
        :math:`a_i`, one per player.

    Returns
    -------
    np.ndarray
        :math:`\phi^V`, aligned with ``values``.

    Examples
    --------
    >>> mean_game_shapley([1.0, 3.0]).tolist()  # (1 + (1 - 3)/2)/2, (3 + (3 - 1)/2)/2
    [0.0, 2.0]
    """
    a = np.asarray(values, dtype=float)
    m = a.size
    if m == 0:
        raise MetricInputError("mean_game_shapley needs at least one value")
    if m == 1:
        return a.copy()
    others = (a.sum() - a) / (m - 1)
    return (a + (a - others) * sum(1.0 / j for j in range(2, m + 1))) / m


@dataclass
class ShapleyEstimate:
    """Result of :func:`permutation_shapley`.

    Attributes
    ----------
    phi : np.ndarray
        Estimated Shapley values, aligned with the players.
    stderr : np.ndarray
        Standard error of each estimate (NaN with a single permutation).
    num_permutations : int
        Permutations walked.
    num_truncated : int
        Walks stopped early by the truncation tolerance.
    utilities : dict of frozenset to float
        Every evaluated non-empty coalition's utility (each evaluated once).
    stopped : {"target", "budget"} or None
        With a ``target_error``: whether the standard errors reached it or the budget ran out;
        ``None`` for a fixed number of permutations.
    target_error : float
        The target (0 = a fixed budget).
    """

    phi: np.ndarray
    stderr: np.ndarray
    num_permutations: int
    num_truncated: int
    utilities: dict[frozenset, float] = field(repr=False)
    stopped: str | None = None
    target_error: float = 0.0

    @property
    def error_ratio(self) -> float:
        """Largest standard error over the value range ``max(phi) - min(phi)`` (inf when undefined)."""
        return _error_ratio(np.asarray(self.phi), np.asarray(self.stderr))


def permutation_shapley(
    players: Sequence[Hashable],
    utility: Utility | None = None,
    *,
    batch_utility: BatchUtility | None = None,
    num_permutations: int = SAMPLER_PERMUTATIONS,
    seed: int | Sequence[int] = 0,
    include_empty: bool = True,
    truncation: float = 0.0,
    walks_per_batch: int | None = None,
    target_error: float = 0.0,
    max_coalitions: int | None = None,
) -> ShapleyEstimate:
    r"""Shapley values by guided permutation sampling with a control variate (optionally truncated).

    **Estimator.** Each of P orders :math:`\pi_1..\pi_P` (:func:`guided_permutations`: the first
    player cycles through all players, as GTG-Shapley's guided sampling does, the rest is uniform)
    is walked from the empty coalition to S; player n's sample is its marginal gain
    :math:`\Delta_n(\pi) = U(P^\pi_n \cup \{n\}) - U(P^\pi_n)`, :math:`P^\pi_n` the players before
    it. The plain estimate :math:`\frac{1}{P}\sum_p \Delta_n(\pi_p)` (:func:`monte_carlo_shapley`)
    is unbiased but noisy in federated rounds: a coalition model is a *mean* of client models, so
    a client's gain is large when it joins first and shrinks roughly like 1/k behind k others;
    which position it drew dominates the variance. The control variate removes most of that:
    the mean game :math:`V(T) = \text{mean}_{i \in T}\, U(\{i\})` (needs only the m singletons)
    has the same position pattern and exactly known Shapley values :math:`\phi^V`
    (:func:`mean_game_shapley`). The estimate is

    .. math::

        \hat\phi_n = \frac{U(\{n\})}{m}
            + \frac{m-1}{m}\,\frac{1}{|Q_n|}\sum_{p \in Q_n}
                \big[\Delta_n(\pi_p) - \beta\,\Delta^V_n(\pi_p)\big]
            + \beta\Big(\phi^V_n - \frac{U(\{n\})}{m}\Big),

    :math:`Q_n` the walks in which n does not come first. Joining first (probability 1/m) a player
    gains :math:`U(\{n\}) = V(\{n\})`, known exactly, so that part is exact and the walks sample
    only the later positions, where V's expected gain is :math:`(m\phi^V_n - U(\{n\}))/(m-1)`.
    :math:`\beta` is one pooled regression coefficient of the U-gains on the V-gains (within
    players, over all players, first positions excluded); :math:`\beta = 1` when the V-gains do
    not vary. The estimate is unbiased for a fixed :math:`\beta`; with guided sampling and P a
    multiple of m it is also efficient, :math:`\sum_n \hat\phi_n = U(S) - U(\emptyset)` (without
    truncation; otherwise close to it). Games the control variate explains are recovered exactly
    for any P: additive games give :math:`\beta = 0` (every gain is the player's own value), mean
    games :math:`\beta = 1` (exactly :math:`\phi^V`). Measured on FedSV rounds of the NSL-KDD
    MLP (``benchmarks/fedsv.py``), the control variate cuts the largest error about fourfold at
    the same cost.

    **Error.** ``stderr[n]`` is the standard error of the sampled part: (m-1)/m times the sample
    standard deviation of the bracket over :math:`Q_n`, divided by :math:`\sqrt{|Q_n|}`; the error
    shrinks like :math:`1/\sqrt P`. :math:`|\hat\phi_n - \phi_n| \le 2\,\text{stderr}_n` held
    for 90 % of the players at P = 10 and 95 % at P = 20-40 (FedSV rounds of the NSL-KDD MLP, 10
    clients, 100 seeds; the standard error itself is estimated from few walks). It treats :math:`\beta` as fixed:
    estimating :math:`\beta` from the same walks adds a bias of order 1/P, small against the
    standard error. NaN where a player came first in all but one walk.

    **Truncation** (``truncation`` = tol > 0; the within-permutation truncation of TMC-Shapley,
    Ghorbani and Zou 2019, and GTG-Shapley, Liu et al. 2022): a walk stops once
    :math:`|U(S) - U(P)| \le tol \cdot |U(S)|` for its current prefix P, and the gains of the
    players still outside count as 0. The gains dropped from one walk sum to
    :math:`U(S) - U(P)`, so the efficiency error is at most :math:`tol \cdot |U(S)|` (P a
    multiple of m), and in a
    monotone game (no negative gains) each player's bias is at most :math:`tol \cdot |U(S)|`;
    otherwise dropped gains of opposite signs may cancel and no per-player bound holds. FedSV gains
    shrink but do not vanish behind large coalitions, so truncation saves few evaluations there
    (benchmarks); it is off by default.

    **Cost and batching.** The walks of a batch (``walks_per_batch`` of them, default about 256
    coalitions' worth) are evaluated together: without truncation every prefix of the batch in one
    call of ``batch_utility``, with truncation one call per position for the walks still running.
    Coalitions are deduplicated and cached by bitmask, so the singletons and S (evaluated first)
    and any repeated prefix cost one evaluation. At most :math:`m + 1 + P(m - 2)` coalitions.

    ``include_empty=False`` returns the estimate minus :math:`(U(\{n\}) - U(\emptyset))/m`, the
    authors' FedSV without the empty coalition (the identity of :func:`shapley_values`). As for
    the exact value, a constant added to every non-empty coalition's utility (in FedSV a change of
    the reference loss) leaves the faithful estimate unchanged: it moves the singletons, the
    control variate and the walks alike.

    Parameters
    ----------
    players : sequence of hashable
        The players S, m = len(players).
    utility : mapping or callable, optional
        ``U(T)`` per coalition, as for :func:`shapley_values` (a callable is also asked for
        ``U(empty)``; a mapping may omit it, 0).
    batch_utility : callable, optional
        Instead of ``utility``: ``batch_utility([T1, T2, ...]) -> [U(T1), ...]`` for non-empty
        coalitions, ``U(empty) = 0`` (:func:`federated_shapley` evaluates the coalition models of
        one call in stacked forward passes).
    num_permutations : int, default 10
        P, the sampling budget.
    seed : int or sequence of int
        Seed of :func:`guided_permutations`.
    include_empty : bool, default True
        Standard Shapley (True) or the authors' faithful variant (False).
    truncation : float, default 0.0
        Truncation tolerance, a fraction of :math:`|U(S)|`; 0 walks every permutation to the end.
    walks_per_batch : int, optional
        Walks evaluated together (memory: a batch builds up to ``walks_per_batch * (m - 2)``
        coalition models at once).
    target_error : float, default 0.0
        0: walk exactly ``num_permutations`` orders. > 0: after those, keep walking m more orders
        at a time until the largest standard error is at most ``target_error`` times the value
        range ``max(phi) - min(phi)`` (``stopped="target"``), or until the next m walks would take
        the evaluated coalitions beyond ``max_coalitions`` or
        :data:`MAX_ADAPTIVE_PERMUTATIONS_PER_PLAYER` x m walks are done (``stopped="budget"``).
        The walks are the first rows of one seeded draw, so an estimate that stops after P walks
        equals the fixed-budget estimate with ``num_permutations=P``.
    max_coalitions : int, optional
        The budget of coalition models with ``target_error`` (default: all ``2^m - 1``); the
        first ``num_permutations`` walks always run.

    Returns
    -------
    ShapleyEstimate

    Examples
    --------
    Mean game with singleton values 1 and 3 (the control variate is the game itself):

    >>> game = {frozenset("p"): 1.0, frozenset("q"): 3.0, frozenset("pq"): 2.0}
    >>> permutation_shapley(["p", "q"], game, num_permutations=4, seed=0).phi.tolist()
    [0.0, 2.0]
    """
    players = _check_players(players)
    m = len(players)
    if (utility is None) == (batch_utility is None):
        raise MetricInputError("permutation_shapley needs exactly one of utility or batch_utility")
    if not (math.isfinite(truncation) and truncation >= 0):
        raise MetricInputError(f"truncation={truncation!r} must be a finite number >= 0 (0 = no truncation)")
    if walks_per_batch is not None and walks_per_batch < 1:
        raise MetricInputError(f"walks_per_batch={walks_per_batch} must be >= 1")
    if not (math.isfinite(target_error) and 0 <= target_error < 1):
        raise MetricInputError(f"target_error={target_error!r} must be a number in [0, 1) (0 = a fixed budget)")
    if max_coalitions is not None and max_coalitions < 1:
        raise MetricInputError(f"max_coalitions={max_coalitions} must be >= 1")
    if utility is not None:
        value = _lookup(utility)
        empty_value = value(frozenset())

        def evaluate(coalitions: list[frozenset]) -> list[float]:
            return [value(coalition) for coalition in coalitions]

    else:
        empty_value = 0.0
        evaluate = batch_utility  # type: ignore[assignment]

    def members(mask: int) -> frozenset:
        return frozenset(players[i] for i in range(m) if mask >> i & 1)

    cache: dict[int, float] = {}  # coalition bitmask -> U(T) - U(empty)

    def ensure(masks: Iterable[int]) -> None:
        missing = list(dict.fromkeys(mask for mask in masks if mask not in cache))
        if not missing:
            return
        values = list(evaluate([members(mask) for mask in missing]))
        if len(values) != len(missing):
            raise MetricInputError(f"the utility returned {len(values)} values for {len(missing)} coalitions")
        for mask, v in zip(missing, values):
            cache[mask] = float(v) - empty_value

    adaptive = target_error > 0
    pool = num_permutations
    if adaptive:  # the first rows of a longer draw are the rows of a shorter one: same walks either way
        pool = max(num_permutations, MAX_ADAPTIVE_PERMUTATIONS_PER_PLAYER * m)
    permutations = guided_permutations(m, pool, seed)
    prefixes = [list(itertools.accumulate((1 << int(i) for i in order), operator.or_)) for order in permutations]
    full = (1 << m) - 1
    initial = [1 << i for i in range(m)] + [full]  # control variate, faithful term, truncation reference
    if truncation > 0:
        ensure(initial)
    gains = np.zeros((pool, m))  # by position in the walk
    state = {"truncated": 0, "full": cache.get(full, 0.0)}
    batch = walks_per_batch or max(1, 256 // max(m - 2, 1))

    def walk(walks: range) -> None:
        """Walk ``walks`` (evaluated ``batch`` at a time) and store their gains."""
        for start in range(walks.start, walks.stop, batch):
            chunk = range(start, min(start + batch, walks.stop))
            if truncation == 0:  # every prefix is needed: one evaluation for the whole batch
                ensure(itertools.chain(initial, (mask for w in chunk for mask in prefixes[w])))
                for w in chunk:
                    gains[w] = np.diff([cache[mask] for mask in prefixes[w]], prepend=0.0)
                continue
            before = dict.fromkeys(chunk, 0.0)
            running = list(chunk)
            for position in range(m):
                ensure(prefixes[w][position] for w in running)
                still = []
                for w in running:
                    current = cache[prefixes[w][position]]
                    gains[w, position] = current - before[w]
                    before[w] = current
                    if position < m - 1 and abs(state["full"] - current) <= truncation * abs(state["full"]):
                        state["truncated"] += 1  # the players still outside keep a gain of 0
                    else:
                        still.append(w)
                running = still

    def estimate(walked: int) -> tuple[np.ndarray, np.ndarray]:
        phi, stderr = _control_variate_estimate(gains[:walked], permutations[:walked], cache, m)
        if not include_empty:  # an exact term: the standard errors are the same
            phi = phi - np.array([cache[1 << i] for i in range(m)]) / m
        return phi, stderr

    walked = num_permutations
    walk(range(walked))
    phi, stderr = estimate(walked)
    stopped = None
    if adaptive:  # the value range is that of the values returned (faithful or standard)
        budget = max_coalitions if max_coalitions is not None else full  # full == 2^m - 1, every coalition
        while True:
            if _error_ratio(phi, stderr) <= target_error:
                stopped = "target"
                break
            step = range(walked, min(walked + m, pool))
            new = {mask for w in step for mask in prefixes[w]} - cache.keys()
            if not step or len(cache) + len(new) > budget:
                stopped = "budget"
                break
            walk(step)
            walked = step.stop
            phi, stderr = estimate(walked)
    utilities = {members(mask): v + empty_value for mask, v in cache.items()}
    return ShapleyEstimate(
        phi=phi, stderr=stderr, num_permutations=walked, num_truncated=int(state["truncated"]), utilities=utilities,
        stopped=stopped, target_error=float(target_error),
    )


def _error_ratio(phi: np.ndarray, stderr: np.ndarray) -> float:
    """Largest standard error over the value range ``max(phi) - min(phi)`` (inf when undefined)."""
    spread = float(np.ptp(phi)) if phi.size else 0.0
    if not np.all(np.isfinite(stderr)):
        return float("inf")
    largest = float(stderr.max()) if stderr.size else 0.0
    if spread > 0:
        return largest / spread
    return 0.0 if largest == 0 else float("inf")


def _control_variate_estimate(gains: np.ndarray, permutations: np.ndarray, cache: dict[int, float],
                              m: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the standard (``include_empty``) estimate and its standard errors from the walks so far.

    :func:`permutation_shapley`'s formula; ``gains[p, j]``: the gain at position j of walk p.
    """
    num_permutations = len(permutations)
    singles = np.array([cache[1 << i] for i in range(m)])
    gain_u = np.zeros_like(gains)
    np.put_along_axis(gain_u, permutations, gains, axis=1)  # gain_u[p, n]: player n's gain in walk p
    mean_prefix = np.cumsum(singles[permutations], axis=1) / np.arange(1, m + 1)
    gain_v = np.zeros_like(gains)
    np.put_along_axis(gain_v, permutations, np.diff(mean_prefix, axis=1, prepend=0.0), axis=1)
    # Joining first, a player gains U({n}) = V({n}) exactly: no noise there. beta is fitted on the
    # other positions, whose gains do not move when a constant is added to every utility.
    later = np.ones_like(gains, dtype=bool)
    later[np.arange(num_permutations), permutations[:, 0]] = False
    samples = later.sum(axis=0)  # |Q_n|
    divisor = np.maximum(samples, 1)  # a player first in every walk: the control variate's value
    centred_u = np.where(later, gain_u - (gain_u * later).sum(axis=0) / divisor, 0.0)
    centred_v = np.where(later, gain_v - (gain_v * later).sum(axis=0) / divisor, 0.0)
    spread = float((centred_v * centred_v).sum())
    beta = float((centred_u * centred_v).sum()) / spread if spread > 0 else 1.0
    residual = np.where(later, gain_u - beta * gain_v, 0.0)
    mean_residual = residual.sum(axis=0) / divisor
    phi = singles / m + (m - 1) / m * mean_residual + beta * (mean_game_shapley(singles) - singles / m)
    squares = np.where(later, (residual - mean_residual) ** 2, 0.0).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        stderr = (m - 1) / m * np.sqrt(squares / (samples - 1) / samples)
    stderr = np.where(samples > 1, stderr, 0.0 if m == 1 else np.nan)
    return phi, stderr
