r"""Federated Fairness Analytics: the four fairness notions, general fairness F_T, and the observer.

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
F_T (Eqs. 12-13)   general fairness: weighted mean of the four (equal weights by default)
=================  =====================================================================

x_n is the client's validation accuracy after local training, r_n the accuracy of the
received global model before training, s_n the cumulative federated Shapley value
(:mod:`fltrust.metrics.shapley`) including the current round.

Two modes (:class:`FairnessSettings`): ``"faithful"`` reproduces exactly what produced the
paper's Table 3 (spec 2, 3 and 9); ``"corrected"`` turns on every correction of spec 9. Each
correction is also a named switch, so it can be studied alone.

The pure functions (:func:`individual_fairness`, :func:`group_fairness`,
:func:`incentive_fairness`, :func:`orchestrator_fairness`, :func:`general_fairness`,
:func:`round_fairness`) work on per-round arrays. :class:`FairnessObserver` computes them
from :class:`fltrust.core.records.RoundRecord` objects of any FL engine.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from fltrust.core.observers import BaseObserver
from fltrust.core.records import RoundRecord, RunInfo, RunSummary
from fltrust.metrics.jain import MetricInputError, jain_index
from fltrust.metrics.shapley import federated_shapley
from fltrust.names import FAIRNESS_MODE_DEFAULTS, STRATEGIES
from fltrust.settings import (
    GROUP_METRICS,
    JAIN_ZERO_GUARDS,
    NONPOSITIVE_POLICIES,
    FairnessSettings,
)

__all__ = [
    "FairnessObserver",
    "FairnessSettings",
    "GroupFairness",
    "MODE_DEFAULTS",
    "RatioFairness",
    "RoundFairness",
    "WindowMean",
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
    "table3_window_mean",
]

MODE_DEFAULTS = FAIRNESS_MODE_DEFAULTS
"""Value of every switch in each mode (spec 9); defined with the other modes' defaults in
:mod:`fltrust.names`."""


_ALL_TEN = list(range(10))
_AUTHORS_ATTRIBUTES: dict[str, Any] = {
    "cifar10": _ALL_TEN,  # "all classes"
    "femnist": _ALL_TEN,  # "digits" 0-9 of 62 classes
    "nsl_kdd": {"fedavg": [1], "ditto": [0], "qfedavg": _ALL_TEN},  # any other strategy: FedAvg's
}


def default_sensitive_attributes(dataset_name: str, strategy_name: str) -> list[int]:
    """The authors' sensitive-attribute list for a dataset and strategy (spec 2.4 and 4).

    CIFAR-10 and FEMNIST: ``[0..9]`` (all classes / the digits). NSL-KDD: FedAvg ``[1]``, Ditto
    ``[0]``, q-FedAvg ``[0..9]`` (a copy-paste bug of the authors' scripts, kept for
    faithfulness); FedMedian, FedProx and the robust rules (Krum, Multi-Krum, trimmed mean,
    Bulyan), which the paper did not run, use FedAvg's ``[1]``.
    ``synthetic_*`` datasets use the list of the dataset they stand in for.

    Raises
    ------
    MetricInputError
        For datasets the fairness paper did not use (N-BaIoT): set
        ``metrics.fairness.sensitive_attributes`` explicitly.
    """
    base = dataset_name.removeprefix("synthetic_")
    if base not in _AUTHORS_ATTRIBUTES:
        raise MetricInputError(
            f"no default sensitive attributes for dataset {dataset_name!r} (the fairness paper used "
            f"{sorted(_AUTHORS_ATTRIBUTES)}); set metrics.fairness.sensitive_attributes to a list of labels"
        )
    choice = _AUTHORS_ATTRIBUTES[base]
    if isinstance(choice, dict):
        if strategy_name not in STRATEGIES:
            raise MetricInputError(
                f"no default sensitive attributes for strategy {strategy_name!r} on {dataset_name!r}; "
                f"known: {sorted(STRATEGIES)}; set metrics.fairness.sensitive_attributes"
            )
        choice = choice.get(strategy_name, choice["fedavg"])
    return list(choice)


# --------------------------------------------------------------------------------------------
# Input helpers
# --------------------------------------------------------------------------------------------
def _per_client(name: str, values: Sequence[float] | np.ndarray, length: int | None = None) -> np.ndarray:
    """Float array of one value per participating client; checks shape and length."""
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise MetricInputError(f"{name} must be one value per client (1-D), got shape {array.shape}")
    if length is not None and array.size != length:
        raise MetricInputError(f"{name} has {array.size} values but there are {length} participating clients")
    return array


def _confusions(confusion: np.ndarray) -> np.ndarray:
    """``(m, K, K)`` non-negative integer confusion matrices (a single ``(K, K)`` is promoted)."""
    array = np.asarray(confusion)
    if array.ndim == 2:
        array = array[None]
    if array.ndim != 3 or array.shape[1] != array.shape[2]:
        raise MetricInputError(f"confusion must have shape (clients, K, K), got {array.shape}")
    if np.any(array < 0) or not np.all(np.equal(np.mod(array, 1), 0)):
        raise MetricInputError("confusion must hold non-negative integer counts (rows true, columns predicted)")
    return array.astype(np.int64)


def _attributes(sensitive_attributes: Sequence[int]) -> list[int]:
    attributes = [int(a) for a in sensitive_attributes]
    if not attributes:
        raise MetricInputError("sensitive_attributes must name at least one attribute (label value)")
    return attributes


# --------------------------------------------------------------------------------------------
# f_j and f_r: uniformity of value / contribution
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RatioFairness:
    """A JFI of per-client ratios (f_j or f_r) with its inputs.

    Attributes
    ----------
    value : float
        The notion's value (NaN when undefined).
    ratios : np.ndarray
        ``values / s`` for every participant (signed; inf/NaN where ``s = 0``).
    included : np.ndarray of bool
        Participants whose ratio entered J.
    num_dropped : int
        Participants dropped by ``nonpositive_policy="exclude"``.
    """

    value: float
    ratios: np.ndarray
    included: np.ndarray
    num_dropped: int


def _ratio_fairness(
    values: np.ndarray,
    contribution: Sequence[float] | np.ndarray,
    *,
    nonpositive_policy: str,
    jain_zero_guard: str,
    zero_sum_is_one: bool,
) -> RatioFairness:
    s = _per_client("contribution", contribution, values.size)
    if nonpositive_policy not in NONPOSITIVE_POLICIES:
        raise MetricInputError(f"nonpositive_policy={nonpositive_policy!r}; choose one of {list(NONPOSITIVE_POLICIES)}")
    if jain_zero_guard not in JAIN_ZERO_GUARDS:
        raise MetricInputError(f"jain_zero_guard={jain_zero_guard!r}; choose one of {list(JAIN_ZERO_GUARDS)}")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = values / s
    if nonpositive_policy == "exclude":
        included = s > 0
    else:
        included = np.ones(values.size, dtype=bool)
    num_dropped = int(values.size - included.sum())
    kept = ratios[included]
    if nonpositive_policy == "exclude" and kept.size < 2:
        value = math.nan
    elif jain_zero_guard == "all_zero_is_one":
        value = jain_index(kept, all_zero=1.0)
    elif zero_sum_is_one and kept.size > 0 and float(np.sum(kept)) == 0.0:
        value = 1.0
    else:
        value = jain_index(kept)
    return RatioFairness(value=value, ratios=ratios, included=included, num_dropped=num_dropped)


def individual_fairness(
    performance: Sequence[float] | np.ndarray,
    contribution: Sequence[float] | np.ndarray,
    *,
    nonpositive_policy: str = "raw",
    jain_zero_guard: str = "authors",
) -> RatioFairness:
    r"""Individual fairness f_j: do clients perform in proportion to their contribution?

    .. math::

        f_{j,k} = J(G), \qquad G = \{x_{n,k} / s_n : n \in S_k\}

    Paper Eq. 7; spec 2.3. ``G`` are the *gains*.

    Parameters
    ----------
    performance : array-like, shape (m,)
        x_{n,k}: validation accuracy after local training.
    contribution : array-like, shape (m,)
        s_n: cumulative FedSV including this round.
    nonpositive_policy : {"raw", "exclude"}
        See :class:`FairnessSettings`.
    jain_zero_guard : {"authors", "all_zero_is_one"}
        ``"authors"``: no guard (all-zero gains give NaN), as coded.

    Returns
    -------
    RatioFairness
        ``value`` is f_j; ``ratios`` are the gains.

    Notes
    -----
    As coded, signed ``s_n`` are used (a negative ``s_n`` gives a negative gain; J ignores a
    common sign), and ``s_n = 0`` is not guarded (infinite gain, NaN index).
    """
    x = _per_client("performance", performance)
    return _ratio_fairness(
        x, contribution, nonpositive_policy=nonpositive_policy, jain_zero_guard=jain_zero_guard, zero_sum_is_one=False
    )


def incentive_fairness(
    rewards: Sequence[float] | np.ndarray,
    contribution: Sequence[float] | np.ndarray,
    *,
    nonpositive_policy: str = "raw",
    jain_zero_guard: str = "authors",
) -> RatioFairness:
    r"""Incentive fairness f_r: are clients rewarded in proportion to their contribution?

    .. math::

        f_{r,k} = J(R), \qquad R = \{r_n / s_n : n \in S_k\}

    Paper Eq. 10 (which mistakenly writes x instead of r); spec 2.5.

    Parameters
    ----------
    rewards : array-like, shape (m,)
        r_n: the received global model's accuracy before local training, this round's
        (``reward="instantaneous"``, as coded) or summed over the client's rounds so far
        (``"cumulative"``, as the paper text says).
    contribution : array-like, shape (m,)
        s_n: cumulative FedSV including this round.
    nonpositive_policy : {"raw", "exclude"}
        See :class:`FairnessSettings`.
    jain_zero_guard : {"authors", "all_zero_is_one"}
        ``"authors"``: ``f_r = 1`` when the ratios sum to exactly 0 (the code's only guard),
        otherwise ``J(R)``. ``"all_zero_is_one"``: ``J`` with ``J(all zero) = 1``.

    Returns
    -------
    RatioFairness
        ``value`` is f_r; ``ratios`` are R.
    """
    r = _per_client("rewards", rewards)
    return _ratio_fairness(
        r, contribution, nonpositive_policy=nonpositive_policy, jain_zero_guard=jain_zero_guard, zero_sum_is_one=True
    )


# --------------------------------------------------------------------------------------------
# f_g: protected-group fairness
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GroupFairness:
    """Group fairness f_g with its per-client pieces.

    Attributes
    ----------
    value : float
        f_g.
    client_scores : np.ndarray
        Per-client score whose median defines f_g: the signed mean ``m_n`` (authors) or the
        equalised-odds gap (corrected).
    details : list of dict
        Per client: ``{str(attribute): v_{n,a}}`` (authors) or
        ``{group: {"tpr": ..., "fpr": ...}}`` (equalised odds).
    metric : str
        ``"authors"`` or ``"equalized_odds"``.
    """

    value: float
    client_scores: np.ndarray
    details: list[dict[str, Any]]
    metric: str


def authors_group_values(confusion: np.ndarray, sensitive_attributes: Sequence[int]) -> np.ndarray:
    r"""The authors' per-attribute values ``v_{n,a}`` (stored as ``avg_eop``), spec 2.4.

    For attribute *position* ``a = 0..|A|-1`` (the code compares labels with the position,
    not with the attribute value ``A[a]``):

    .. math::

        P_a = \#\{\text{correct}, y = a\} + \#\{\text{wrong}, y \ne a\}, \quad
        Q_a = N - P_a, \quad v_{n,a} = (P_a - Q_a)/N
            = \frac{2(c_a - w_a) - (C - W)}{N},

    with c_a / w_a the correct / wrong samples of label a and C / W all correct / wrong ones.

    Parameters
    ----------
    confusion : np.ndarray, shape (m, K, K) or (K, K)
        Validation confusion matrices (rows true, columns predicted).
    sensitive_attributes : sequence of int
        The attribute list A; only its *length* matters here, as in the authors' code.

    Returns
    -------
    np.ndarray, shape (m, |A|)
        ``v_{n,a}`` in ``[-1, 1]``; NaN for a client with no validation samples.
    """
    counts = _confusions(confusion)
    num_attributes = len(_attributes(sensitive_attributes))
    num_classes = counts.shape[1]
    total = counts.sum(axis=(1, 2)).astype(float)
    correct_per_label = np.einsum("nkk->nk", counts).astype(float)
    wrong_per_label = counts.sum(axis=2) - correct_per_label
    correct, wrong = correct_per_label.sum(axis=1), wrong_per_label.sum(axis=1)
    values = np.empty((counts.shape[0], num_attributes))
    for position in range(num_attributes):
        if position < num_classes:
            c_a, w_a = correct_per_label[:, position], wrong_per_label[:, position]
        else:  # no label equals this position: c_a = w_a = 0
            c_a = w_a = np.zeros(counts.shape[0])
        with np.errstate(divide="ignore", invalid="ignore"):
            values[:, position] = (2.0 * (c_a - w_a) - (correct - wrong)) / total
    return values


def authors_group_fairness(confusion: np.ndarray, sensitive_attributes: Sequence[int]) -> GroupFairness:
    r"""Group fairness f_g exactly as the authors coded it (spec 2.4; not paper Eqs. 8-9).

    .. math::

        m_n = \frac{1}{|A|} \sum_{a} v_{n,a}, \qquad
        f_g = 1 - \operatorname{median}_{n \in S_k} |m_n|

    with ``v_{n,a}`` from :func:`authors_group_values` (signed values averaged, abs after).

    Notes
    -----
    This is not equalised odds. Closed forms (spec 2.4), acc = client accuracy:
    all 10 CIFAR-10 classes: ``f_g = 1 - 0.8 median|2 acc - 1|`` (accuracy only);
    binary NSL-KDD with ``A = [1]`` or ``[0]``: ``f_g = 1 - median|1 - 2 p|``, p = share
    predicted anomalous; NSL-KDD with ``A = [0..9]``: as CIFAR-10; FEMNIST digits:
    ``m_n = 0.2 (C_d - W_d)/N - (2 acc - 1)``. Paper Eq. 8 is ill-posed here because the
    "sensitive attribute" is the label itself.
    """
    attributes = _attributes(sensitive_attributes)
    values = authors_group_values(confusion, attributes)
    scores = values.mean(axis=1)
    value = 1.0 - float(np.median(np.abs(scores)))
    details = [{str(a): float(v) for a, v in zip(attributes, row)} for row in values]
    return GroupFairness(value=value, client_scores=scores, details=details, metric="authors")


def label_group_arrays(
    confusion: np.ndarray, sensitive_attributes: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stacked one-vs-rest arrays of one client for label groups (input of fairlearn).

    Groups: each attribute value ``a`` of ``sensitive_attributes`` (samples with label ``a``)
    and ``"rest"`` (labels not in the list), keeping only groups that have both members and
    non-members in the client's validation set. For group g, every validation sample appears
    once with ``y_true = [y in g]``, ``y_pred = [y_hat in g]`` and ``group = g``. Within group g
    the true-positive rate is ``P(y_hat in g | y in g)`` and the false-positive rate
    ``P(y_hat in g | y not in g)``: each group is judged on recognising its own members.

    Parameters
    ----------
    confusion : np.ndarray, shape (K, K)
        One client's validation confusion matrix.
    sensitive_attributes : sequence of int
        Attribute *values* (labels); values outside ``0..K-1`` match no sample.

    Returns
    -------
    y_true, y_pred : np.ndarray of int
        Binary arrays.
    groups : np.ndarray of str
        Group name of each row.
    """
    counts = _confusions(confusion)[0]
    num_classes = counts.shape[0]
    labels = np.arange(num_classes)
    attributes = [a for a in dict.fromkeys(_attributes(sensitive_attributes)) if 0 <= a < num_classes]
    rest = [int(k) for k in labels if k not in attributes]
    groups: list[tuple[str, list[int]]] = [(str(a), [a]) for a in attributes]
    if rest:
        groups.append(("rest", rest))
    cell_true, cell_pred = np.divmod(np.arange(num_classes * num_classes), num_classes)
    y = np.repeat(cell_true, counts.ravel())
    y_hat = np.repeat(cell_pred, counts.ravel())
    parts_true, parts_pred, parts_group = [], [], []
    for name, members in groups:
        is_member = np.isin(y, members)
        if is_member.all() or not is_member.any():
            continue  # TPR or FPR undefined for this group on this client
        parts_true.append(is_member.astype(int))
        parts_pred.append(np.isin(y_hat, members).astype(int))
        parts_group.append(np.full(y.size, name))
    if not parts_true:
        return np.zeros(0, int), np.zeros(0, int), np.zeros(0, str)
    return np.concatenate(parts_true), np.concatenate(parts_pred), np.concatenate(parts_group)


def equalized_odds_group_fairness(confusion: np.ndarray, sensitive_attributes: Sequence[int]) -> GroupFairness:
    r"""Corrected group fairness: 1 - median over clients of an equalised-odds difference.

    For each client, :func:`label_group_arrays` builds one-vs-rest arrays for the label
    groups (each attribute value and the rest), and fairlearn's ``MetricFrame`` with
    ``true_positive_rate`` / ``false_positive_rate`` gives per-group rates; the client's gap
    is fairlearn's equalised-odds difference (worst case, between groups)

    .. math::

        E_n = \max\Bigl(\max_g TPR_g - \min_g TPR_g,\; \max_g FPR_g - \min_g FPR_g\Bigr),
        \qquad f_g = 1 - \operatorname{median}_{n} E_n,

    which equals ``fairlearn.metrics.equalized_odds_difference`` on those arrays. 0 = every
    label group is recognised equally well (same recall and false-alarm rate). For a binary
    task with ``A = [1]`` (or ``[0]``): ``E_n = |sensitivity - specificity|``.

    Notes
    -----
    Honest scope: paper Eq. 8 needs a sensitive attribute that is *not* the label; none of the
    paper's datasets has one (spec 2.4). Equalised odds with the label as the group is vacuous
    (given the label the group is fixed), so this metric instead compares label groups, each on
    its own one-vs-rest task. Attribute values (not positions, unlike the authors) are used;
    labels absent from K are ignored, so NSL-KDD q-FedAvg's ``[0..9]`` becomes groups 0 and 1.
    A client with fewer than two groups having both members and non-members has gap NaN and is
    left out of the median (f_g is NaN when no client has a gap).
    """
    from fairlearn.metrics import MetricFrame, false_positive_rate, true_positive_rate

    counts = _confusions(confusion)
    gaps = np.full(counts.shape[0], math.nan)
    details: list[dict[str, Any]] = []
    for n, matrix in enumerate(counts):
        y_true, y_pred, groups = label_group_arrays(matrix, sensitive_attributes)
        if np.unique(groups).size < 2:
            details.append({})
            continue
        frame = MetricFrame(
            metrics={"tpr": true_positive_rate, "fpr": false_positive_rate},
            y_true=y_true,
            y_pred=y_pred,
            sensitive_features=groups,
        )
        gaps[n] = float(frame.difference(method="between_groups").max())
        rates = frame.by_group
        details.append({str(g): {"tpr": float(row["tpr"]), "fpr": float(row["fpr"])} for g, row in rates.iterrows()})
    defined = gaps[np.isfinite(gaps)]
    value = 1.0 - float(np.median(defined)) if defined.size else math.nan
    return GroupFairness(value=value, client_scores=gaps, details=details, metric="equalized_odds")


def group_fairness(
    confusion: np.ndarray, sensitive_attributes: Sequence[int], *, group_metric: str = "authors"
) -> GroupFairness:
    """Protected-group fairness f_g (paper Eqs. 8-9) by ``group_metric``.

    ``"authors"``: :func:`authors_group_fairness` (faithful); ``"equalized_odds"``:
    :func:`equalized_odds_group_fairness` (corrected).
    """
    if group_metric == "authors":
        return authors_group_fairness(confusion, sensitive_attributes)
    if group_metric == "equalized_odds":
        return equalized_odds_group_fairness(confusion, sensitive_attributes)
    raise MetricInputError(f"group_metric={group_metric!r}; choose one of {list(GROUP_METRICS)}")


# --------------------------------------------------------------------------------------------
# f_o and F_T
# --------------------------------------------------------------------------------------------
def orchestrator_fairness(performance: Sequence[float] | np.ndarray) -> float:
    r"""Orchestrator fairness f_o: the mean client performance.

    .. math::

        f_{o,k} = \frac{1}{|S_k|} \sum_{n \in S_k} \hat x_{n,k}

    Paper Eq. 11; spec 2.6. Accuracy is used directly as the normalised performance; as coded
    it is the accuracy of the *locally trained* (Ditto: personalised) models, not of the
    global model.
    """
    x = _per_client("performance", performance)
    if x.size == 0:
        raise MetricInputError("performance is empty; f_o needs at least one participating client")
    return float(np.mean(x))


def general_fairness(
    f_j: float, f_g: float, f_r: float, f_o: float, *, weights: Sequence[float] = (0.25, 0.25, 0.25, 0.25)
) -> float:
    r"""General fairness F_T: weighted mean of the four notions.

    .. math::

        F_T = \omega_j f_j + \omega_g f_g + \omega_r f_r + \omega_o f_o,
        \qquad \sum \omega = 1

    Paper Eq. 12; equal weights give Eq. 13 (spec 2.7; the authors computed it at plotting
    time). ``weights`` are normalised to sum 1; a notion with weight 0 is ignored (even NaN),
    any other NaN notion makes F_T NaN.
    """
    w = np.asarray(weights, dtype=float)
    if w.shape != (4,) or np.any(w < 0) or w.sum() <= 0:
        raise MetricInputError(f"weights must be 4 non-negative numbers with a positive sum, got {list(weights)}")
    notions = np.array([f_j, f_g, f_r, f_o], dtype=float)
    used = w > 0
    return float(np.sum(w[used] * notions[used]) / w.sum())


# --------------------------------------------------------------------------------------------
# One round, all notions
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RoundFairness:
    """Every notion of one round with its per-client pieces (see :func:`round_fairness`)."""

    f_j: float
    f_g: float
    f_r: float
    f_o: float
    F_T: float
    individual: RatioFairness
    incentive: RatioFairness
    group: GroupFairness

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (NaN stays a float NaN)."""
        return {
            "f_j": self.f_j,
            "f_g": self.f_g,
            "f_r": self.f_r,
            "f_o": self.f_o,
            "F_T": self.F_T,
            "gains": self.individual.ratios.tolist(),
            "reward_ratios": self.incentive.ratios.tolist(),
            "ratio_included": self.individual.included.tolist(),
            "num_dropped_gains": self.individual.num_dropped,
            "num_dropped_rewards": self.incentive.num_dropped,
            "group_metric": self.group.metric,
            "group_scores": self.group.client_scores.tolist(),
            "group_values": self.group.details,
        }


def round_fairness(
    performance: Sequence[float] | np.ndarray,
    rewards: Sequence[float] | np.ndarray,
    contribution: Sequence[float] | np.ndarray,
    confusion: np.ndarray,
    sensitive_attributes: Sequence[int],
    settings: FairnessSettings | None = None,
) -> RoundFairness:
    """All four notions and F_T of one round from per-client arrays.

    Parameters
    ----------
    performance : array-like, shape (m,)
        x_{n,k} (accuracy after local training).
    rewards : array-like, shape (m,)
        The reward values to use (instantaneous or already cumulated, per ``settings.reward``).
    contribution : array-like, shape (m,)
        Cumulative FedSV s_n of the participants, including this round.
    confusion : np.ndarray, shape (m, K, K)
        The participants' validation confusion matrices.
    sensitive_attributes : sequence of int
        Attribute list A.
    settings : FairnessSettings, optional
        Default: faithful.

    Returns
    -------
    RoundFairness
    """
    settings = settings or FairnessSettings()
    x = _per_client("performance", performance)
    r = _per_client("rewards", rewards, x.size)
    s = _per_client("contribution", contribution, x.size)
    counts = _confusions(confusion)
    if counts.shape[0] != x.size:
        raise MetricInputError(f"confusion has {counts.shape[0]} matrices but there are {x.size} participating clients")
    ratio_options = {"nonpositive_policy": settings.nonpositive_policy, "jain_zero_guard": settings.jain_zero_guard}
    individual = individual_fairness(x, s, **ratio_options)
    incentive = incentive_fairness(r, s, **ratio_options)
    group = group_fairness(counts, sensitive_attributes, group_metric=settings.group_metric)
    f_o = orchestrator_fairness(x)
    f_t = general_fairness(individual.value, group.value, incentive.value, f_o, weights=settings.notion_weights)
    return RoundFairness(
        f_j=individual.value,
        f_g=group.value,
        f_r=incentive.value,
        f_o=f_o,
        F_T=f_t,
        individual=individual,
        incentive=incentive,
        group=group,
    )


# --------------------------------------------------------------------------------------------
# Table 3 protocol
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WindowMean:
    """Mean of a round window (``float(result)`` gives ``value``).

    Attributes
    ----------
    value : float
        The mean.
    num_values : int
        Entries (repeats x rounds) in the window.
    num_skipped : int
        NaN entries left out (only with ``skip_nan=True``).
    """

    value: float
    num_values: int
    num_skipped: int

    def __float__(self) -> float:
        return self.value


def table3_window_mean(
    per_round_values: Sequence[float] | Sequence[Sequence[float]] | np.ndarray,
    first_round: int = 15,
    last_round: int = 30,
    *,
    skip_nan: bool = False,
) -> WindowMean:
    """The paper's Table 3 averaging protocol (spec 8).

    Values are indexed by list *position*: position ``p`` holds server round ``p + 1`` (the
    observer reports rounds 1..T). The window is server rounds ``first_round..last_round``
    inclusive, i.e. positions 14..29 by default (16 entries). Each position is averaged across
    repeats, then the positions are averaged (the authors' plotter; the published values
    reproduce only with this window).

    Parameters
    ----------
    per_round_values : array-like, shape (rounds,) or (repeats, rounds)
        One notion (or F_T) per round, one row per repeat.
    first_round, last_round : int
        Server rounds (1-based, inclusive).
    skip_nan : bool, default False
        ``False``: a NaN anywhere in the window makes the mean NaN (the authors had none).
        ``True``: NaN entries (e.g. f_j with fewer than 2 positive contributions under
        ``nonpositive_policy="exclude"``) are left out and counted in ``num_skipped``.

    Returns
    -------
    WindowMean
    """
    values = np.asarray(per_round_values, dtype=float)
    if values.ndim == 1:
        values = values[None]
    if values.ndim != 2:
        raise MetricInputError(f"per_round_values must be (rounds,) or (repeats, rounds), got shape {values.shape}")
    if not 1 <= first_round <= last_round:
        raise MetricInputError(f"need 1 <= first_round <= last_round, got {first_round}..{last_round}")
    if values.shape[1] < last_round:
        raise MetricInputError(
            f"per_round_values has {values.shape[1]} rounds; the window needs rounds up to {last_round}"
        )
    window = values[:, first_round - 1 : last_round]
    if not skip_nan:
        return WindowMean(value=float(np.mean(window.mean(axis=0))), num_values=int(window.size), num_skipped=0)
    present = ~np.isnan(window)
    per_repeat_count = present.sum(axis=0)
    positions = per_repeat_count > 0  # positions with at least one defined repeat
    per_position = np.nansum(window, axis=0)[positions] / per_repeat_count[positions]
    value = float(np.mean(per_position)) if per_position.size else math.nan
    return WindowMean(value=value, num_values=int(window.size), num_skipped=int((~present).sum()))


# --------------------------------------------------------------------------------------------
# Observer
# --------------------------------------------------------------------------------------------
class FairnessObserver(BaseObserver):
    """Computes the Federated Fairness Analytics notions after every round of any FL engine.

    Per round k >= 1 it evaluates the round's coalition models on the auxiliary set (one
    :func:`fltrust.core.evaluation.evaluate_many` call), updates the cumulative FedSV ``s``
    (length C, never reset; non-participants keep their value), and returns f_j, f_g, f_r,
    f_o, F_T with every per-client piece and the full vector ``s``, so that figures can be
    redrawn without rerunning. Round 0 (initial model, no clients) returns ``None``.

    Reads from each :class:`~fltrust.core.records.RoundRecord`: ``client_ids``,
    ``client_params``, ``client_metrics["accuracy"]`` (x), ``["reward_accuracy"]`` (r),
    the coalition weight key (``fedavg`` weighting), ``client_confusion`` and
    ``server_metrics["aux_loss_before"]`` = l(theta_k; D), the reference loss at callback time
    (spec 1, consequence ii).

    Parameters
    ----------
    settings : FairnessSettings
        Resolved switches, the attribute list A (``settings.sensitive_attributes``; ``None`` =
        every label of the model's classes, read from the first round's confusion matrices) and
        the aux chunk size.
    model : nn.Module
        Architecture template of the clients' parameter sets.
    x_aux, y_aux : torch.Tensor
        The server's auxiliary set D (on the evaluation device).
    batch_size : int
        Evaluation batch size.
    loss_scaling : str, default "mean"
        ``"mean"`` or ``"per_batch_sum"`` (the authors', spec 6.4), as the run's evaluation.
    num_clients : int or None
        Number of registered clients C; ``None`` = ``RunInfo.num_clients`` at the run's start.
    coalition_weight_key : str, default "num_samples"
        ``client_metrics`` key of the FedAvg coalition weights (``"num_batches"`` when the run
        aggregates by batches, as the authors did).
    seed : int, default 0
        Monte Carlo seed; round k uses ``[seed, k]``.
    sensitive_attributes : sequence of int or None
        Replaces ``settings.sensitive_attributes`` when given (code written before the settings
        held the list passes it here).
    aux_batch_size : int or None
        Replaces ``settings.aux_batch_size`` when given: aux samples per forward pass of the
        coalition evaluation (speed/memory only). ``batch_size`` still groups the
        ``per_batch_sum`` loss.

    Examples
    --------
    The experiment builds it from its config (:func:`fltrust.experiment.fairness_observer`); on
    its own it needs only the settings, a model and the aux set:

    >>> import torch
    >>> observer = FairnessObserver(FairnessSettings(mode="corrected"), torch.nn.Linear(3, 2),
    ...                             torch.zeros(4, 3), torch.tensor([0, 1, 0, 1]), batch_size=32)
    >>> observer.settings.reward
    'cumulative'
    """

    name = "fairness"

    def __init__(
        self,
        settings: FairnessSettings,
        model: nn.Module,
        x_aux: torch.Tensor,
        y_aux: torch.Tensor,
        *,
        batch_size: int,
        loss_scaling: str = "mean",
        num_clients: int | None = None,
        coalition_weight_key: str = "num_samples",
        seed: int = 0,
        sensitive_attributes: Sequence[int] | None = None,
        aux_batch_size: int | None = None,
    ) -> None:
        if num_clients is not None and num_clients < 1:
            raise MetricInputError(f"num_clients={num_clients} must be >= 1")
        if len(x_aux) != len(y_aux) or len(y_aux) == 0:
            raise MetricInputError(
                f"the auxiliary set needs as many labels as samples and at least one sample; "
                f"got x_aux {len(x_aux)} and y_aux {len(y_aux)}"
            )
        self.settings = settings
        self.model = model
        self.x_aux, self.y_aux = x_aux, y_aux
        self.batch_size = int(batch_size)
        self.loss_scaling = loss_scaling
        attributes = settings.sensitive_attributes if sensitive_attributes is None else sensitive_attributes
        self.sensitive_attributes = None if attributes is None else _attributes(attributes)
        self.coalition_weight_key = coalition_weight_key
        self.seed = int(seed)
        self.aux_batch_size = settings.aux_batch_size if aux_batch_size is None else aux_batch_size
        self.num_clients = 0
        if num_clients is not None:
            self._size(int(num_clients))

    def _size(self, num_clients: int) -> None:
        self.num_clients = num_clients
        self.cumulative_shapley = np.zeros(num_clients)
        self.cumulative_rewards = np.zeros(num_clients)

    # -- observer hooks --------------------------------------------------------------------
    def on_run_start(self, info: RunInfo) -> None:
        """Take the number of clients from ``info`` (or check it against the constructor's)."""
        super().on_run_start(info)
        if self.num_clients == 0:
            self._size(int(info.num_clients))
        if info.num_clients != self.num_clients:
            raise MetricInputError(
                f"FairnessObserver was built for num_clients={self.num_clients} but the run has {info.num_clients}"
            )

    def _client_metric(self, record: RoundRecord, key: str, length: int) -> np.ndarray:
        if key not in record.client_metrics:
            raise MetricInputError(
                f"round {record.round}: record.client_metrics has no {key!r} (keys: {sorted(record.client_metrics)}); "
                "the engine must report it for the fairness metrics"
            )
        return _per_client(f"client_metrics[{key!r}]", record.client_metrics[key], length)

    def on_round_end(self, record: RoundRecord) -> dict[str, Any] | None:
        """Fairness of round ``record.round`` (``None`` for round 0 or a round without clients)."""
        ids = np.asarray(record.client_ids, dtype=np.int64)
        if record.round == 0 or ids.size == 0:
            return None
        if ids.ndim != 1 or np.any(ids < 0) or np.any(ids >= self.num_clients) or np.unique(ids).size != ids.size:
            raise MetricInputError(
                f"round {record.round}: client_ids {ids.tolist()} must be distinct ids in [0, {self.num_clients})"
            )
        m = ids.size
        performance = self._client_metric(record, "accuracy", m)
        rewards = self._client_metric(record, "reward_accuracy", m)
        if "aux_loss_before" not in record.server_metrics:
            raise MetricInputError(
                f"round {record.round}: record.server_metrics has no 'aux_loss_before' (the loss of the received "
                "global model on the auxiliary set, the FedSV reference loss); on Flower pass "
                "evaluate_fn=fltrust.flower.aux_evaluate_fn(...) to start(), or use fltrust.flower.instrument"
            )
        if record.client_confusion is None:
            raise MetricInputError(f"round {record.round}: record.client_confusion is None; f_g needs it")
        if self.sensitive_attributes is None:  # every label of the model's classes
            self.sensitive_attributes = list(range(np.asarray(record.client_confusion).shape[-1]))
        weights = None
        if self.settings.coalition_weighting == "fedavg":
            weights = self._client_metric(record, self.coalition_weight_key, m)
        method = self.settings.shapley
        if method == "exact" and m > self.settings.exact_max_players:
            warnings.warn(
                f"FedSV of {m} participants: more than metrics.fairness.exact_max_players="
                f"{self.settings.exact_max_players}, so shapley='exact' runs 'monte_carlo' "
                f"({self.settings.shapley_permutations} permutations, up to "
                f"{1 + self.settings.shapley_permutations * (m - 1):,} coalition models per round); "
                "set metrics.fairness.shapley: auto for the faster 'permutation' estimator",
                stacklevel=2,
            )
            method = "monte_carlo"
        ref_loss = float(record.server_metrics["aux_loss_before"])

        fedsv = federated_shapley(
            self.model,
            ids,
            record.client_params,
            self.x_aux,
            self.y_aux,
            ref_loss=ref_loss,
            include_empty=self.settings.shapley_include_empty,
            weights=weights,
            method=method,
            num_permutations=(
                self.settings.shapley_permutations if method == "monte_carlo"
                else self.settings.shapley_sampler_permutations
            ),
            seed=[self.seed, int(record.round)],
            batch_size=self.batch_size,
            loss_scaling=self.loss_scaling,
            chunk_size=self.aux_batch_size,
            exact_max_players=self.settings.exact_max_players,
            auto_exact_players=self.settings.shapley_auto_exact_players,
            truncation=self.settings.shapley_truncation,
        )
        shapley = self.cumulative_shapley.copy()
        shapley[ids] += fedsv.phi
        summed_rewards = self.cumulative_rewards.copy()
        summed_rewards[ids] += rewards
        reward_values = rewards if self.settings.reward == "instantaneous" else summed_rewards[ids]
        result = round_fairness(
            performance,
            reward_values,
            shapley[ids],
            record.client_confusion,
            self.sensitive_attributes,
            self.settings,
        )
        self.cumulative_shapley, self.cumulative_rewards = shapley, summed_rewards

        out = {"round": int(record.round), **result.to_dict()}
        out.update(
            client_ids=ids.tolist(),
            phi=fedsv.phi.tolist(),
            s=shapley[ids].tolist(),
            performance=performance.tolist(),
            rewards=np.asarray(reward_values, dtype=float).tolist(),
            shapley_method=fedsv.method,
            num_coalitions=len(fedsv.utilities),
            ref_loss=ref_loss,
            cumulative_shapley=shapley.tolist(),
        )
        if fedsv.num_permutations is not None:  # sampled rounds only: exact rounds keep their keys
            out["shapley_permutations"] = fedsv.num_permutations
        if fedsv.stderr is not None:
            out.update(shapley_stderr=fedsv.stderr.tolist(), shapley_truncated=fedsv.num_truncated)
        return out

    def on_run_end(self, summary: RunSummary) -> dict[str, Any]:
        """The resolved settings, the attribute list and the final cumulative FedSV."""
        return {
            "settings": self.settings.to_dict(),
            "sensitive_attributes": None if self.sensitive_attributes is None else list(self.sensitive_attributes),
            "cumulative_shapley": self.cumulative_shapley.tolist(),
            "cumulative_rewards": self.cumulative_rewards.tolist(),
        }

    # -- resume ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Cumulative FedSV and cumulative rewards (length C each)."""
        return {
            "cumulative_shapley": self.cumulative_shapley.tolist(),
            "cumulative_rewards": self.cumulative_rewards.tolist(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        for key in ("cumulative_shapley", "cumulative_rewards"):
            if key not in state:
                raise MetricInputError(f"fairness observer state has no {key!r}; was it saved by state_dict()?")
            values = np.asarray(state[key], dtype=float)
            if values.shape != (self.num_clients,):
                raise MetricInputError(
                    f"fairness observer state {key!r} has shape {values.shape}; expected ({self.num_clients},)"
                )
            setattr(self, key, values.copy())
