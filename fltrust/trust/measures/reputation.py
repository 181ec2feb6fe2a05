r"""Client reputation and data quality from a run's per-round contribution history.

FederatedTrust's "client & data reliability" notion (paper Sec. 3.2) lists *client reputation*
and *data quality* besides the federation scale; the prototype implemented neither ("no data
available", "compute cost", trust spec 6; docs/references.md#trust-6). Both are computed here from what every engine
already records per round (:class:`~fltrust.core.records.RoundRecord`), so no client data leaves a client:

**Data quality** (label agreement; after Pejó et al., "Quality inference in federated learning
with secure aggregation", arXiv:2007.06236, who rate a client by how its data agree with the
federation). For participant :math:`k` of round :math:`t` with peers :math:`P_t = S_t \setminus \{k\}`:

.. math::

    A_{k,t} &= \min\!\left(1, \frac{r_{k,t}}{\operatorname{median}_{j \in P_t} r_{j,t}}\right),
    \qquad r = \text{accuracy of the received global model on the client's own rows}
    \ (\texttt{reward\_accuracy}),\\
    F_{k,t} &= \min\!\left(1, \frac{\operatorname{median}_{j \in P_t} L_{j,t}}{L_{k,t}}\right),
    \qquad L = \text{the client's last-epoch training loss}\ (\texttt{train\_loss}),\\
    \mathrm{DQ}_k &= \tfrac12\left(\overline{A_{k,\cdot}} + \overline{F_{k,\cdot}}\right)

(means over the rounds the client took part in; a component that is not recorded is left out).
:math:`A` is the agreement between the client's labels and the global model's predictions,
relative to its peers: a client whose labels are flipped disagrees with a model the rest of the
federation taught. :math:`F` catches the same from the other side: noisy labels cannot be fitted,
so the client's training loss stays high. Both are 1 for a client as good as its median peer.
The federation's score is the mean over the clients that took part; clients below
``flag_below`` (0.8) are listed.

**Client reputation** (Kang et al., "Reliable federated learning for mobile networks",
IEEE Wireless Communications 27(2), 2020, arXiv:1910.06837; beta reputation of Jøsang & Ismail
2002): each participation is an *interaction*; the server judges it positive when the client's
returned model is not an outlier on the server's reference data (a RONI-style poisoning check,
"reject on negative influence"):

.. math::

    \text{positive} \iff \ell(w_{k,t}; D_{ref}) \le (1 + \tau)\,
        \operatorname{median}_{j \in P_t} \ell(w_{j,t}; D_{ref})

(with no peers, against the global model :math:`w_t` it received). With :math:`p_k` positive and
:math:`n_k` negative interactions, the reputation is the expected subjective-logic opinion

.. math:: R_k = b + a\,u = \frac{\alpha p_k + a W}{\alpha p_k + \beta n_k + W}

with base rate :math:`a = 0.5`, prior weight :math:`W = 2` (Jøsang's uniform prior),
:math:`\alpha = 1`, :math:`\beta = 2` (negative interactions weigh double, in the spirit of Kang
et al., who weight negative evidence more; the values are ours) and :math:`\tau = 0.5`. A client
never seen has :math:`R = 0.5`; reputation grows with consistent good behaviour
(5 positive interactions: 6/7 = 0.857) and falls fast with bad behaviour (5 negative: 1/12).
The federation's score is the mean over the clients that took part. When the fairness observer
ran, the consistency of each client's per-round FedSV (mean and CV) is reported beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fltrust.core.io import to_plain

__all__ = [
    "ContributionRound",
    "DataQualityResult",
    "ReputationResult",
    "ReputationError",
    "beta_reputation",
    "client_reputation",
    "data_quality",
    "fedsv_consistency",
    "peer_median",
    "reference_interactions",
]


class ReputationError(ValueError):
    """Inconsistent contribution history; the message names the round and the field."""


@dataclass(frozen=True)
class ContributionRound:
    """What one round says about its participants (arrays aligned with ``client_ids``).

    Attributes
    ----------
    round : int
    client_ids : np.ndarray
    reward_accuracy, train_loss : np.ndarray or None
        Record ``client_metrics`` (data quality).
    reference_loss : np.ndarray or None
        Loss of each returned client model on the server's reference set (reputation).
    global_reference_loss : float
        Loss of the global model the clients received, on the same set (no-peer fallback).
    fedsv : np.ndarray or None
        Per-round FedSV of each participant (fairness observer), when it ran.
    """

    round: int
    client_ids: np.ndarray
    reward_accuracy: np.ndarray | None = None
    train_loss: np.ndarray | None = None
    reference_loss: np.ndarray | None = None
    global_reference_loss: float = float("nan")
    fedsv: np.ndarray | None = None

    def __post_init__(self) -> None:
        """Check the per-client arrays against ``client_ids``."""
        ids = np.asarray(self.client_ids, dtype=np.int64)
        object.__setattr__(self, "client_ids", ids)
        for name in ("reward_accuracy", "train_loss", "reference_loss", "fedsv"):
            value = getattr(self, name)
            if value is None:
                continue
            arr = np.asarray(value, dtype=float).ravel()
            if arr.size != ids.size:
                raise ReputationError(f"round {self.round}: {name} has {arr.size} values for {ids.size} participants")
            object.__setattr__(self, name, arr)


def peer_median(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Return, for each entry, the median of the *other* finite entries.

    Parameters
    ----------
    values : sequence of float or numpy.ndarray
        One value per client (flattened); non-finite values are left out of the medians.

    Returns
    -------
    numpy.ndarray
        float array of the same length; NaN where no other entry is finite.

    Examples
    --------
    >>> peer_median([1.0, 2.0, 4.0]).tolist()
    [3.0, 2.5, 1.5]
    """
    arr = np.asarray(values, dtype=float).ravel()
    out = np.full(arr.size, np.nan)
    for i in range(arr.size):
        others = np.delete(arr, i)
        others = others[np.isfinite(others)]
        if others.size:
            out[i] = float(np.median(others))
    return out


def _ratio_capped(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``min(1, num / den)`` with 1 for ``num >= den`` (incl. 0/0) and NaN where undefined."""
    num, den = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    out = np.full(num.shape, np.nan)
    ok = np.isfinite(num) & np.isfinite(den)
    ge = ok & (num >= den)
    out[ge] = 1.0
    rest = ok & ~ge & (den > 0)
    out[rest] = np.clip(num[rest] / den[rest], 0.0, 1.0)
    return out


@dataclass
class DataQualityResult:
    """Per-client and federation data quality (module docstring).

    Attributes
    ----------
    per_client : np.ndarray
        ``DQ_k``, length C (NaN = never took part with a peer).
    agreement, fit : np.ndarray
        The two components, length C (NaN where not recorded).
    score : float
        Mean of ``per_client`` over the clients with a value.
    flagged : list of int
        Clients with ``DQ_k < flag_below``.
    flag_below : float
    components : list of str
        Components that were recorded (``"agreement"``, ``"fit"``).
    """

    per_client: np.ndarray
    agreement: np.ndarray
    fit: np.ndarray
    score: float
    flagged: list[int]
    flag_below: float
    components: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Return the result as a plain dict.

        Returns
        -------
        dict
            The fields by name, JSON-ready: arrays as lists, NaN as ``None``.
        """
        return to_plain({"score": self.score, "per_client": self.per_client, "agreement": self.agreement,
                         "fit": self.fit, "flagged": self.flagged, "flag_below": self.flag_below,
                         "components": self.components})


def _mean_per_client(sums: np.ndarray, counts: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """Return ``sums / counts`` where ``seen``, NaN elsewhere."""
    return np.divide(sums, counts, out=np.full(sums.shape, np.nan), where=seen)


def data_quality(rounds: Iterable[ContributionRound], num_clients: int, *, flag_below: float = 0.8) -> DataQualityResult:
    """Label-agreement data quality of every client (module docstring).

    Parameters
    ----------
    rounds : iterable of ContributionRound
        Training rounds (round 0 and empty rounds are skipped).
    num_clients : int
        C.
    flag_below : float
        Clients whose quality is below this value are listed in ``flagged``.

    Returns
    -------
    DataQualityResult

    Examples
    --------
    Client 2's labels agree with the global model on 60 % of its rows where its peers reach 90 %:

    >>> r = ContributionRound(1, [0, 1, 2], reward_accuracy=[0.9, 0.9, 0.6], train_loss=[0.2, 0.2, 0.8])
    >>> result = data_quality([r], 3)
    >>> result.per_client.round(4).tolist(), result.flagged
    ([1.0, 1.0, 0.4583], [2])
    """
    sums = {"agreement": np.zeros(num_clients), "fit": np.zeros(num_clients)}
    counts = {"agreement": np.zeros(num_clients), "fit": np.zeros(num_clients)}
    for r in rounds:
        if r.round < 1 or r.client_ids.size == 0:
            continue
        if r.client_ids.min() < 0 or r.client_ids.max() >= num_clients:
            raise ReputationError(f"round {r.round}: client ids {r.client_ids.tolist()} outside 0..{num_clients - 1}")
        parts = {}
        if r.reward_accuracy is not None:
            parts["agreement"] = _ratio_capped(r.reward_accuracy, peer_median(r.reward_accuracy))
        if r.train_loss is not None:
            parts["fit"] = _ratio_capped(peer_median(r.train_loss), r.train_loss)
        for key, values in parts.items():
            ok = np.isfinite(values)
            np.add.at(sums[key], r.client_ids[ok], values[ok])
            np.add.at(counts[key], r.client_ids[ok], 1)
    agreement, fit = (_mean_per_client(sums[k], counts[k], counts[k] > 0) for k in ("agreement", "fit"))
    stacked = np.vstack([agreement, fit])
    have = np.isfinite(stacked)
    per_client = _mean_per_client(np.where(have, stacked, 0.0).sum(axis=0), have.sum(axis=0), have.any(axis=0))
    finite = per_client[np.isfinite(per_client)]
    score = float(finite.mean()) if finite.size else float("nan")
    flagged = [int(i) for i in np.flatnonzero(np.isfinite(per_client) & (per_client < flag_below))]
    components = [k for k in ("agreement", "fit") if counts[k].sum() > 0]
    return DataQualityResult(per_client, agreement, fit, score, flagged, float(flag_below), components)


def beta_reputation(
    positive: Sequence[float] | np.ndarray,
    negative: Sequence[float] | np.ndarray,
    *,
    alpha: float = 1.0,
    beta: float = 2.0,
    prior_weight: float = 2.0,
    base_rate: float = 0.5,
) -> np.ndarray:
    r"""Compute the expected subjective-logic opinion :math:`(\alpha p + a W)/(\alpha p + \beta n + W)`.

    Parameters
    ----------
    positive, negative : array-like of float
        Positive and negative interaction counts per client (non-negative).
    alpha, beta : float
        Weights of a positive and of a negative interaction (> 0; defaults 1 and 2).
    prior_weight : float
        ``W``, the weight of the prior (> 0).
    base_rate : float
        ``a``, the prior reputation in [0, 1].

    Returns
    -------
    np.ndarray
        Reputation per client, in [0, 1].

    Examples
    --------
    >>> beta_reputation([0, 5, 0, 3], [0, 0, 5, 1]).round(4).tolist()
    [0.5, 0.8571, 0.0833, 0.5714]
    """
    p = np.asarray(positive, dtype=float)
    n = np.asarray(negative, dtype=float)
    if np.any(p < 0) or np.any(n < 0):
        raise ReputationError("interaction counts must be non-negative")
    if alpha <= 0 or beta <= 0 or prior_weight <= 0 or not 0 <= base_rate <= 1:
        raise ReputationError("alpha, beta and prior_weight must be > 0 and base_rate in [0, 1]")
    return (alpha * p + base_rate * prior_weight) / (alpha * p + beta * n + prior_weight)


def reference_interactions(reference_loss: np.ndarray, global_reference_loss: float, *, tolerance: float = 0.5) -> np.ndarray:
    """Positive (True) / negative (False) judgement of each participant of one round.

    Positive when the client's returned model has a reference loss at most ``(1 + tolerance)``
    times the median of its peers' (with no peer: the received global model's loss).

    Parameters
    ----------
    reference_loss : np.ndarray
        Each participant's returned model's loss on the server's reference sample.
    global_reference_loss : float
        The received global model's loss there (the reference of a lone participant).
    tolerance : float
        Allowed excess over the peers' median (0.5 = 50 %).

    Returns
    -------
    np.ndarray of bool

    Examples
    --------
    >>> reference_interactions(np.array([0.2, 0.25, 0.9]), 0.3).tolist()
    [True, True, False]
    >>> reference_interactions(np.array([0.5]), 0.3).tolist()
    [False]
    """
    losses = np.asarray(reference_loss, dtype=float)
    reference = peer_median(losses)
    reference = np.where(np.isfinite(reference), reference, float(global_reference_loss))
    ok = np.isfinite(losses) & np.isfinite(reference)
    return ok & (losses <= (1.0 + tolerance) * reference)


@dataclass
class ReputationResult:
    """Per-client and federation reputation (module docstring).

    Attributes
    ----------
    per_client : np.ndarray
        ``R_k``, length C; NaN for clients that never took part.
    positive, negative : np.ndarray
        Interaction counts per client.
    score : float
        Mean of ``per_client`` over the clients that took part.
    tolerance : float
    fedsv_mean, fedsv_cv : np.ndarray or None
        Per-client mean and CV of the per-round FedSV (when recorded).
    """

    per_client: np.ndarray
    positive: np.ndarray
    negative: np.ndarray
    score: float
    tolerance: float
    fedsv_mean: np.ndarray | None = None
    fedsv_cv: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the result as a plain dict.

        Returns
        -------
        dict
            The fields by name, JSON-ready: arrays as lists, NaN as ``None``.
        """
        return to_plain({"score": self.score, "per_client": self.per_client, "positive": self.positive.astype(int),
                         "negative": self.negative.astype(int), "tolerance": self.tolerance,
                         "fedsv_mean": self.fedsv_mean, "fedsv_cv": self.fedsv_cv})


def fedsv_consistency(rounds: Iterable[ContributionRound], num_clients: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-client mean and coefficient of variation (std / |mean|) of the per-round FedSV.

    Parameters
    ----------
    rounds : iterable of ContributionRound
        The training rounds (those without ``fedsv`` are skipped).
    num_clients : int
        Registered clients C.

    Returns
    -------
    (np.ndarray, np.ndarray) or None
        Mean and CV per client (NaN for a client never valued); ``None`` when no round carries
        FedSV values.

    Examples
    --------
    >>> rs = [ContributionRound(1, [0, 1], fedsv=[0.1, -0.2]), ContributionRound(2, [0, 1], fedsv=[0.3, -0.2])]
    >>> mean, cv = fedsv_consistency(rs, 2)
    >>> mean.round(3).tolist(), cv.round(3).tolist()
    ([0.2, -0.2], [0.5, 0.0])
    """
    values: list[list[float]] = [[] for _ in range(num_clients)]
    seen = False
    for r in rounds:
        if r.fedsv is None:
            continue
        seen = True
        for cid, v in zip(r.client_ids, r.fedsv):
            if np.isfinite(v):
                values[int(cid)].append(float(v))
    if not seen:
        return None
    mean = np.array([np.mean(v) if v else np.nan for v in values])
    cv = np.array([np.std(v) / abs(np.mean(v)) if v and np.mean(v) != 0 else np.nan for v in values])
    return mean, cv


def client_reputation(
    rounds: Iterable[ContributionRound],
    num_clients: int,
    *,
    tolerance: float = 0.5,
    alpha: float = 1.0,
    beta: float = 2.0,
) -> ReputationResult:
    """Beta reputation of every client from reference-loss interactions (module docstring).

    Parameters
    ----------
    rounds : iterable of ContributionRound
        Rounds with ``reference_loss`` (rounds without it are skipped).
    num_clients : int
        C.
    tolerance : float
        tau: how much worse than its peers' median a client's reference loss may be.
    alpha, beta : float
        Weights of positive and negative interactions.

    Returns
    -------
    ReputationResult

    Examples
    --------
    >>> rs = [ContributionRound(t, [0, 1, 2], reference_loss=[0.2, 0.22, 0.7], global_reference_loss=0.3)
    ...       for t in (1, 2, 3)]
    >>> client_reputation(rs, 3).per_client.round(4).tolist()
    [0.8, 0.8, 0.125]
    """
    rounds = list(rounds)
    positive, negative = np.zeros(num_clients), np.zeros(num_clients)
    for r in rounds:
        if r.round < 1 or r.client_ids.size == 0 or r.reference_loss is None:
            continue
        if r.client_ids.min() < 0 or r.client_ids.max() >= num_clients:
            raise ReputationError(f"round {r.round}: client ids {r.client_ids.tolist()} outside 0..{num_clients - 1}")
        good = reference_interactions(r.reference_loss, r.global_reference_loss, tolerance=tolerance)
        np.add.at(positive, r.client_ids[good], 1)
        np.add.at(negative, r.client_ids[~good], 1)
    reputation = beta_reputation(positive, negative, alpha=alpha, beta=beta)
    took_part = (positive + negative) > 0
    per_client = np.where(took_part, reputation, np.nan)
    score = float(per_client[took_part].mean()) if took_part.any() else float("nan")
    consistency = fedsv_consistency(rounds, num_clients)
    mean, cv = consistency if consistency is not None else (None, None)
    return ReputationResult(per_client, positive, negative, score, float(tolerance), mean, cv)
