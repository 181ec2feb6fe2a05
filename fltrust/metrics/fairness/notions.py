r"""The four fairness notions and general fairness F_T of one round, as pure functions of arrays.

Paper: Federated Fairness Analytics (Eqs. 2 and 7-13); spec 2 (docs/references.md#fairness-2). Each function takes the
participants' per-round values and returns the notion with its per-client pieces:

=========================================  =================================================
function                                   notion
=========================================  =================================================
:func:`individual_fairness`                f_j = J(x_n / s_n) (Eq. 7)
:func:`group_fairness`                     f_g (Eqs. 8-9): :func:`authors_group_fairness`
                                           (as coded) or :func:`equalized_odds_group_fairness`
:func:`incentive_fairness`                 f_r = J(r_n / s_n) (Eq. 10)
:func:`orchestrator_fairness`              f_o = mean_n x_n (Eq. 11)
:func:`general_fairness`                   F_T, weighted mean of the notions (Eqs. 12-13)
:func:`round_fairness`                     every registered notion and F_T, by :class:`FairnessSettings`
=========================================  =================================================

J is Jain's index (:func:`fltrust.metrics.jain.jain_index`, Eq. 2); s_n the participant's
cumulative FedSV (:mod:`fltrust.metrics.shapley`), which these functions receive, never compute.

The four are registered here as the notions ``f_j``, ``f_g``, ``f_r``, ``f_o`` of the notion table
(:mod:`fltrust.metrics.fairness.registry`, weight 0.25 each in F_T); :func:`round_fairness`
computes every registered notion, these four and any a user registers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fltrust.metrics.fairness.registry import (
    GENERAL_FAIRNESS,
    NOTIONS,
    NotionInput,
    register_notion,
    resolve_weights,
)
from fltrust.metrics.jain import MetricInputError, jain_index
from fltrust.names import GROUP_METRICS, JAIN_ZERO_GUARDS, NONPOSITIVE_POLICIES, GroupMetric, JainZeroGuard, NonpositivePolicy
from fltrust.settings import FairnessSettings

__all__ = [
    "PAPER_NOTIONS",
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
    "weights_record",
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
    name: str,
    values: Sequence[float] | np.ndarray,
    contribution: Sequence[float] | np.ndarray,
    *,
    nonpositive_policy: NonpositivePolicy,
    jain_zero_guard: JainZeroGuard,
    zero_sum_is_one: bool,
) -> RatioFairness:
    """J of ``values / contribution`` (f_j, f_r); ``name`` names ``values`` in errors."""
    values = _per_client(name, values)
    s = _per_client("contribution", contribution, values.size)
    if nonpositive_policy not in NONPOSITIVE_POLICIES:
        raise MetricInputError(f"nonpositive_policy={nonpositive_policy!r}; choose one of {list(NONPOSITIVE_POLICIES)}")
    if jain_zero_guard not in JAIN_ZERO_GUARDS:
        raise MetricInputError(f"jain_zero_guard={jain_zero_guard!r}; choose one of {list(JAIN_ZERO_GUARDS)}")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = values / s
    included = s > 0 if nonpositive_policy == "exclude" else np.ones(values.size, dtype=bool)
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
    nonpositive_policy: NonpositivePolicy = "raw",
    jain_zero_guard: JainZeroGuard = "authors",
) -> RatioFairness:
    r"""Compute individual fairness f_j: whether clients perform in proportion to their contribution.

    .. math::

        f_{j,k} = J(G), \qquad G = \{x_{n,k} / s_n : n \in S_k\}

    Paper Eq. 7; spec 2.3 (docs/references.md#fairness-2-3). ``G`` are the *gains*.

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
    return _ratio_fairness("performance", performance, contribution, nonpositive_policy=nonpositive_policy,
                           jain_zero_guard=jain_zero_guard, zero_sum_is_one=False)


def incentive_fairness(
    rewards: Sequence[float] | np.ndarray,
    contribution: Sequence[float] | np.ndarray,
    *,
    nonpositive_policy: NonpositivePolicy = "raw",
    jain_zero_guard: JainZeroGuard = "authors",
) -> RatioFairness:
    r"""Compute incentive fairness f_r: whether clients are rewarded in proportion to their contribution.

    .. math::

        f_{r,k} = J(R), \qquad R = \{r_n / s_n : n \in S_k\}

    Paper Eq. 10 (which mistakenly writes x instead of r); spec 2.5 (docs/references.md#fairness-2-5).

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
    return _ratio_fairness("rewards", rewards, contribution, nonpositive_policy=nonpositive_policy,
                           jain_zero_guard=jain_zero_guard, zero_sum_is_one=True)


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
    r"""Compute the authors' values ``v_{n,a}`` per attribute (``avg_eop``), spec 2.4 (docs/references.md#fairness-2-4).

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
    total = counts.sum(axis=(1, 2)).astype(float)
    correct_per_label = np.einsum("nkk->nk", counts).astype(float)
    wrong_per_label = counts.sum(axis=2) - correct_per_label
    correct, wrong = correct_per_label.sum(axis=1), wrong_per_label.sum(axis=1)
    pad = ((0, 0), (0, max(0, num_attributes - counts.shape[1])))  # no label equals a position >= K: c_a = w_a = 0
    c_a, w_a = (np.pad(per_label, pad)[:, :num_attributes] for per_label in (correct_per_label, wrong_per_label))
    with np.errstate(divide="ignore", invalid="ignore"):
        return (2.0 * (c_a - w_a) - (correct - wrong)[:, None]) / total[:, None]


def authors_group_fairness(confusion: np.ndarray, sensitive_attributes: Sequence[int]) -> GroupFairness:
    r"""Group fairness f_g exactly as the authors coded it (spec 2.4; not paper Eqs. 8-9).

    .. math::

        m_n = \frac{1}{|A|} \sum_{a} v_{n,a}, \qquad
        f_g = 1 - \operatorname{median}_{n \in S_k} |m_n|

    with ``v_{n,a}`` from :func:`authors_group_values` (signed values averaged, abs after).

    Parameters
    ----------
    confusion : np.ndarray, shape (m, K, K) or (K, K)
        The participants' validation confusion matrices (rows true, columns predicted).
    sensitive_attributes : sequence of int
        The attribute list A; only its length matters to the values, as in the authors' code
        (the details name each value by its attribute).

    Returns
    -------
    GroupFairness
        ``value`` is f_g, ``client_scores`` the signed means ``m_n``, ``details`` the
        ``{str(attribute): v_{n,a}}`` of each client, ``metric`` ``"authors"``.

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
    groups = [(str(a), [a]) for a in attributes] + [("rest", rest)]  # an empty "rest" has no members: skipped below
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

    Parameters
    ----------
    confusion : np.ndarray, shape (m, K, K) or (K, K)
        The participants' validation confusion matrices (rows true, columns predicted).
    sensitive_attributes : sequence of int
        Attribute values (labels) whose groups are compared, plus ``"rest"``.

    Returns
    -------
    GroupFairness
        ``value`` is f_g, ``client_scores`` the gaps ``E_n`` (NaN where undefined),
        ``details`` each client's ``{group: {"tpr": ..., "fpr": ...}}``, ``metric``
        ``"equalized_odds"``.
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
    confusion: np.ndarray, sensitive_attributes: Sequence[int], *, group_metric: GroupMetric = "authors"
) -> GroupFairness:
    """Protected-group fairness f_g (paper Eqs. 8-9) by ``group_metric``.

    ``"authors"``: :func:`authors_group_fairness` (faithful); ``"equalized_odds"``:
    :func:`equalized_odds_group_fairness` (corrected).

    Parameters
    ----------
    confusion : np.ndarray, shape (m, K, K) or (K, K)
        The participants' validation confusion matrices (rows true, columns predicted).
    sensitive_attributes : sequence of int
        The attribute list A.
    group_metric : {"authors", "equalized_odds"}, default "authors"
        Which f_g (``FairnessSettings.group_metric``).

    Returns
    -------
    GroupFairness
        f_g with its per-client scores and details.

    Raises
    ------
    MetricInputError
        For an unknown ``group_metric``.

    Examples
    --------
    >>> confusion = np.array([[[4, 1], [1, 4]], [[5, 3], [1, 1]]])
    >>> group_fairness(confusion, [1]).value  # m = [0, 0.2]: 1 - median |m|
    0.9
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

    Paper Eq. 11; spec 2.6 (docs/references.md#fairness-2-6). Accuracy is used directly as the normalised performance;
    as coded it is the accuracy of the *locally trained* (Ditto: personalised) models, not of the
    global model.

    Parameters
    ----------
    performance : array-like, shape (m,)
        x_{n,k}: the participants' validation accuracy after local training.

    Returns
    -------
    float
        f_o.

    Raises
    ------
    MetricInputError
        If ``performance`` is empty or not one value per client.

    Examples
    --------
    >>> orchestrator_fairness([0.5, 0.75, 1.0])
    0.75
    """
    x = _per_client("performance", performance)
    if x.size == 0:
        raise MetricInputError("performance is empty; f_o needs at least one participating client")
    return float(np.mean(x))


def general_fairness(values: Mapping[str, float], weights: Mapping[str, float]) -> float:
    r"""General fairness F_T: the weighted mean of the notions.

    .. math::

        F_T = \frac{\sum_n \omega_n f_n}{\sum_n \omega_n}

    over the notions n that ``weights`` names; with the paper's four notions this is Eq. 12
    (``F_T = w_j f_j + w_g f_g + w_r f_r + w_o f_o``, weights summing to 1), and equal weights
    give Eq. 13 (spec 2.7; the authors computed it at plotting time; docs/references.md#fairness-2-7). A notion with
    weight 0 is ignored (even when NaN); any other NaN notion makes F_T NaN.

    Parameters
    ----------
    values : mapping of str to float
        Each notion's value by name (e.g. ``RoundFairness.values``); notions ``weights`` does
        not name are not weighted.
    weights : mapping of str to float
        Each weighted notion's weight (non-negative, positive sum; normalised here), e.g.
        :func:`~fltrust.metrics.fairness.registry.resolve_weights` of the settings.

    Returns
    -------
    float
        F_T.

    Raises
    ------
    MetricInputError
        If a weight is negative or not finite, they sum to 0, or a weighted notion has no value.

    Examples
    --------
    >>> four = {"f_j": 0.2, "f_g": 0.4, "f_r": 0.6, "f_o": 0.8}
    >>> general_fairness(four, {"f_j": 0.25, "f_g": 0.25, "f_r": 0.25, "f_o": 0.25})
    0.5
    >>> general_fairness({**four, "f_o": float("nan")}, {"f_j": 2, "f_g": 1, "f_r": 1, "f_o": 0})
    0.35
    """
    missing = [name for name in weights if name not in values]
    if missing:
        raise MetricInputError(f"weights name {missing}, which have no value; values: {list(values)}")
    names = [name for name in values if name in weights]
    try:
        w = np.array([float(weights[name]) for name in names])
    except (TypeError, ValueError):
        raise MetricInputError(f"weights must be numbers, got {dict(weights)}") from None
    if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise MetricInputError(f"weights must be finite non-negative numbers with a positive sum, got {dict(weights)}")
    notions = np.array([values[name] for name in names], dtype=float)
    used = w > 0
    return float(np.sum(w[used] * notions[used]) / w.sum())


# --------------------------------------------------------------------------------------------
# The paper's four notions in the notion table (fltrust.metrics.fairness.registry)
# --------------------------------------------------------------------------------------------
def _ratio_options(settings: FairnessSettings) -> dict[str, Any]:
    policy, guard = settings.nonpositive_policy, settings.jain_zero_guard
    assert policy is not None and guard is not None, "FairnessSettings resolves every switch"
    return {"nonpositive_policy": policy, "jain_zero_guard": guard}


@register_notion(
    "f_j", label="individual $f_j$", symbol="$f_j$", default_weight=0.25,
    equation="Federated Fairness Analytics Eq. 7, spec 2.3: J(x_n / s_n), performance over cumulative FedSV",
    details=lambda r: {"gains": r.ratios.tolist(), "ratio_included": r.included.tolist(),
                       "num_dropped_gains": r.num_dropped},
)
def _individual(inputs: NotionInput) -> RatioFairness:
    return individual_fairness(inputs.performance, inputs.contribution, **_ratio_options(inputs.settings))


@register_notion(
    "f_g", label="group $f_g$", symbol="$f_g$", default_weight=0.25,
    equation="Federated Fairness Analytics Eqs. 8-9, spec 2.4: 1 - median over clients of a group gap",
    details=lambda g: {"group_metric": g.metric, "group_scores": g.client_scores.tolist(), "group_values": g.details},
)
def _group(inputs: NotionInput) -> GroupFairness:
    metric = inputs.settings.group_metric
    assert metric is not None, "FairnessSettings resolves every switch"
    return group_fairness(inputs.confusion, inputs.sensitive_attributes, group_metric=metric)


@register_notion(
    "f_r", label="incentive $f_r$", symbol="$f_r$", default_weight=0.25,
    equation="Federated Fairness Analytics Eq. 10, spec 2.5: J(r_n / s_n), reward over cumulative FedSV",
    details=lambda r: {"reward_ratios": r.ratios.tolist(), "num_dropped_rewards": r.num_dropped},
)
def _incentive(inputs: NotionInput) -> RatioFairness:
    return incentive_fairness(inputs.rewards, inputs.contribution, **_ratio_options(inputs.settings))


@register_notion(
    "f_o", label="orchestrator $f_o$", symbol="$f_o$", default_weight=0.25,
    equation="Federated Fairness Analytics Eq. 11, spec 2.6: mean_n x_n, the mean client accuracy",
)
def _orchestrator(inputs: NotionInput) -> float:
    return orchestrator_fairness(inputs.performance)


PAPER_NOTIONS = tuple(NOTIONS)
"""The paper's four notions, in its order (those registered above): the names behind the 4-list form
of the weights (:func:`weights_record`)."""

RECORD_ORDER = ("gains", "reward_ratios", "ratio_included", "num_dropped_gains", "num_dropped_rewards",
                "group_metric", "group_scores", "group_values")
"""Order of the paper notions' per-client fields in a round record, as written since the first release
(``rounds.jsonl`` lines stay byte-identical); other notions' fields follow in notion order."""


def weights_record(weights: Mapping[str, float]) -> list[float] | dict[str, float]:
    """How F_T weights are written in a config and a run record.

    The paper's four weights ``[w_j, w_g, w_r, w_o]`` as a list when ``weights`` names no other
    notion (the form of every config and record written before notions were registered, so
    their config hashes stay), else a mapping of the four and the others. A paper notion
    ``weights`` leaves out has its registered default weight.

    Parameters
    ----------
    weights : mapping of str to float
        Weights by notion name (e.g. a ``metrics.fairness.notion_weights`` mapping).

    Returns
    -------
    list of float or dict of str to float

    Examples
    --------
    >>> weights_record({"f_j": 1})
    [1.0, 0.25, 0.25, 0.25]
    >>> weights_record({"my_notion": 0.5})
    {'f_j': 0.25, 'f_g': 0.25, 'f_r': 0.25, 'f_o': 0.25, 'my_notion': 0.5}
    """
    paper = {name: float(weights.get(name, NOTIONS[name].default_weight)) for name in PAPER_NOTIONS}
    others = {name: float(w) for name, w in weights.items() if name not in paper}
    return {**paper, **others} if others else list(paper.values())


# --------------------------------------------------------------------------------------------
# One round, all notions
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RoundFairness:
    """Every registered notion of one round with its per-client pieces (see :func:`round_fairness`).

    ``result["f_j"]`` is a notion's value (``result["F_T"]`` general fairness).

    Attributes
    ----------
    values : dict of str to float
        Each notion's value, in registration order.
    F_T : float
        General fairness (:func:`general_fairness` with :attr:`weights`).
    weights : dict of str to float
        The weights F_T used (:func:`~fltrust.metrics.fairness.registry.resolve_weights`).
    results : dict of str to object
        What each notion's function returned (:class:`RatioFairness` for f_j and f_r,
        :class:`GroupFairness` for f_g, a float for f_o).
    details : dict of str to dict
        Each notion's extra per-round fields (stored with the round).
    """

    values: dict[str, float]
    F_T: float
    weights: dict[str, float]
    results: dict[str, Any] = field(default_factory=dict)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __getitem__(self, name: str) -> float:
        """Return notion ``name``'s value (``F_T`` included)."""
        if name == GENERAL_FAIRNESS:
            return self.F_T
        return self.values[name]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (NaN stays a float NaN): the values, F_T, then every notion's fields.

        Returns
        -------
        dict
            For the paper's four notions exactly the keys and order written since the first
            release (``f_j``, ``f_g``, ``f_r``, ``f_o``, ``F_T``, ``gains``, ..., ``group_values``).
        """
        out: dict[str, Any] = {**self.values, GENERAL_FAIRNESS: self.F_T}
        fields_ = {key: value for extra in self.details.values() for key, value in extra.items()}
        out.update((key, fields_.pop(key)) for key in RECORD_ORDER if key in fields_)
        out.update(fields_)
        return out


def round_fairness(
    performance: Sequence[float] | np.ndarray,
    rewards: Sequence[float] | np.ndarray,
    contribution: Sequence[float] | np.ndarray,
    confusion: np.ndarray,
    sensitive_attributes: Sequence[int],
    settings: FairnessSettings | None = None,
    *,
    client_ids: Sequence[int] | np.ndarray | None = None,
) -> RoundFairness:
    """Every registered notion and F_T of one round from per-client arrays.

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
        Default: faithful. Its ``notion_weights`` replace the notions' default weights in F_T.
    client_ids : array-like of int, optional
        The participants' ids, handed to the notions (:class:`NotionInput`).

    Returns
    -------
    RoundFairness

    Raises
    ------
    MetricInputError
        For misaligned inputs, a notion's bad value, unknown weights, or two notions writing one
        field.
    """
    settings = settings or FairnessSettings()
    x = _per_client("performance", performance)
    r = _per_client("rewards", rewards, x.size)
    s = _per_client("contribution", contribution, x.size)
    counts = _confusions(confusion)
    if counts.shape[0] != x.size:
        raise MetricInputError(f"confusion has {counts.shape[0]} matrices but there are {x.size} participating clients")
    ids = None if client_ids is None else np.asarray(client_ids, dtype=np.int64)
    inputs = NotionInput(performance=x, rewards=r, contribution=s, confusion=counts,
                         sensitive_attributes=tuple(_attributes(sensitive_attributes)), settings=settings,
                         client_ids=ids)
    weights = resolve_weights(settings.notion_weights, where="FairnessSettings.notion_weights")
    values, results, details = {}, {}, {}
    seen = {GENERAL_FAIRNESS: GENERAL_FAIRNESS, **{name: name for name in NOTIONS}}  # field -> who writes it
    for name, notion in NOTIONS.items():
        values[name], results[name], details[name] = notion.compute(inputs)
        for key in details[name]:
            if key in seen:
                raise MetricInputError(f"fairness notion {name!r} writes the field {key!r}, which {seen[key]!r} "
                                       "already writes; rename one of them")
            seen[key] = name
    return RoundFairness(values=values, F_T=general_fairness(values, weights), weights=weights,
                         results=results, details=details)
