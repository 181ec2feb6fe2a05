r"""The four fairness notions and general fairness F_T of one round, as pure functions of arrays.

Paper: Federated Fairness Analytics (Eqs. 2 and 7-13); spec 2. Each function takes the
participants' per-round values and returns the notion with its per-client pieces:

=========================================  =================================================
function                                   notion
=========================================  =================================================
:func:`individual_fairness`                f_j = J(x_n / s_n) (Eq. 7)
:func:`group_fairness`                     f_g (Eqs. 8-9): :func:`authors_group_fairness`
                                           (as coded) or :func:`equalized_odds_group_fairness`
:func:`incentive_fairness`                 f_r = J(r_n / s_n) (Eq. 10)
:func:`orchestrator_fairness`              f_o = mean_n x_n (Eq. 11)
:func:`general_fairness`                   F_T, weighted mean of the four (Eqs. 12-13)
:func:`round_fairness`                     all of them, by :class:`FairnessSettings`
=========================================  =================================================

J is Jain's index (:func:`fltrust.metrics.jain.jain_index`, Eq. 2); s_n the participant's
cumulative FedSV (:mod:`fltrust.metrics.shapley`), which these functions receive, never compute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fltrust.metrics.jain import MetricInputError, jain_index
from fltrust.settings import (
    GROUP_METRICS,
    JAIN_ZERO_GUARDS,
    NONPOSITIVE_POLICIES,
    FairnessSettings,
)

__all__ = [
    "GroupFairness",
    "RatioFairness",
    "RoundFairness",
    "authors_group_fairness",
    "authors_group_values",
    "equalized_odds_group_fairness",
    "general_fairness",
    "group_fairness",
    "incentive_fairness",
    "individual_fairness",
    "label_group_arrays",
    "orchestrator_fairness",
    "round_fairness",
]


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
