r"""Group-level fairness of the global model with a sensitive attribute that is not the label.

FederatedTrust's *discrimination index* (paper Sec. 3.3, "Group-level", Eq. 7, after FairFL) is
the F1 difference between a protected group :math:`\sigma` and the rest of the population:

.. math:: \Phi_\sigma = F1\big(w(X^+_\sigma)\big) - F1\big(w(X^-_\sigma)\big) \in [-1, 1]

(0 is ideal). The prototype left it out because it "needs sensitive attributes" (trust spec 6,
docs/references.md#trust-6). We compute it on the final global model's **test** predictions, for every value of a
sensitive attribute in turn (that value = protected group, all others = rest), and report the worst case
:math:`\Phi = \max_\sigma |\Phi_\sigma|`; the metric scores :math:`1 - \Phi`. F1 is the F1 of the
positive class for binary labels and the macro F1 over the classes present otherwise
(:func:`sklearn.metrics.f1_score`).

Beside it, for binary labels, the two standard group-fairness gaps of fairlearn
(:func:`fairlearn.metrics.demographic_parity_difference` and
:func:`fairlearn.metrics.equalized_odds_difference`, ``between_groups``, worst case):

.. math::

    \Delta_{DP} = \max_{a,b} \big|P(\hat y = 1 \mid A = a) - P(\hat y = 1 \mid A = b)\big|, \qquad
    \Delta_{EO} = \max\big(\Delta_{TPR}, \Delta_{FPR}\big)

(0 = parity). They are reported, not scored; for more than two classes they are not defined and
are ``None``.

This is the **paper-literal** group fairness that the fairness spec (§9, item 3; docs/references.md#fairness-9-item-3)
says the authors' :math:`f_g` of Federated Fairness Analytics is not: their :math:`f_g` groups samples by *label*
(so it is a function of accuracy alone when all classes are "attributes"); here the groups come
from an attribute that is not the label. The datasets have no demographic attribute, so we use the
closest non-label attribute each provides (:func:`sensitive_attribute`) and say so; none of them
is a protected characteristic of a person:

==========  =====================================  ==============================================
dataset     attribute                              why
==========  =====================================  ==============================================
NSL-KDD     ``protocol_type`` (tcp / udp / icmp)   a raw categorical column of every record
                                                   (``bundle.test.extras``), not the label; the
                                                   model sees it one-hot encoded
N-BaIoT     device (9 natural groups)              the natural client of each record
FEMNIST     writer-id parity (even / odd writer)   writers are the natural groups; one writer's
                                                   test samples are too few for a per-group F1,
                                                   so the writers are split into two halves by id
                                                   parity (arbitrary but label-independent)
CIFAR-10    none                                   n/a: no attribute besides the label
==========  =====================================  ==============================================
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = [
    "DiscriminationError",
    "DiscriminationResult",
    "SensitiveAttribute",
    "discrimination_index",
    "group_fairness_report",
    "sensitive_attribute",
]


class DiscriminationError(ValueError):
    """Invalid group-fairness input; the message names the argument."""


@dataclass(frozen=True)
class SensitiveAttribute:
    """A per-sample group label of the test split and how it was chosen.

    Attributes
    ----------
    name : str
        E.g. ``"protocol_type"``.
    values : np.ndarray
        One group label (str) per test sample.
    description : str
        Where it comes from and why it is not a demographic attribute.
    """

    name: str
    values: np.ndarray
    description: str


def sensitive_attribute(bundle: Any) -> SensitiveAttribute | None:
    """Return the sensitive attribute of a dataset's test split (table in the module docstring).

    Parameters
    ----------
    bundle : DatasetBundle
        The loaded dataset (real or synthetic stand-in).

    Returns
    -------
    SensitiveAttribute or None
        ``None`` when the dataset has no non-label attribute (CIFAR-10): the metric is n/a.
    """
    name = str(getattr(bundle, "name", "")).removeprefix("synthetic_")
    test = bundle.test
    if name == "nsl_kdd" and "protocol_type" in getattr(test, "extras", {}):
        return SensitiveAttribute(
            "protocol_type", np.asarray(test.extras["protocol_type"]).astype(str),
            "NSL-KDD protocol_type (tcp/udp/icmp), a raw feature of each record, used as the group; not a "
            "demographic attribute",
        )
    if name == "n_baiot" and test.groups is not None:
        names = getattr(bundle, "group_names", None)
        groups = np.asarray(test.groups)
        values = np.asarray([names[g] for g in groups]) if names else groups.astype(str)
        return SensitiveAttribute("device", values.astype(str), "N-BaIoT device (natural client) of each record")
    if name == "femnist" and test.groups is not None:
        parity = np.where(np.asarray(test.groups) % 2 == 0, "even_writer", "odd_writer")
        return SensitiveAttribute(
            "writer_parity", parity,
            "FEMNIST writer id parity: the natural writer groups split into two halves (even / odd id), "
            "an arbitrary label-independent split; not a demographic attribute",
        )
    return None


def _f1(y_true: np.ndarray, y_pred: np.ndarray, binary: bool) -> float:
    from sklearn.metrics import f1_score

    if binary:
        return float(f1_score(y_true, y_pred, average="binary", pos_label=1, zero_division=0))
    labels = np.unique(y_true)
    return float(f1_score(y_true, y_pred, labels=labels, average="macro", zero_division=0))


def discrimination_index(
    y_true: np.ndarray, y_pred: np.ndarray, sensitive: np.ndarray, *, binary: bool | None = None
) -> tuple[float, dict[str, float]]:
    r"""Worst-case F1 gap :math:`\max_\sigma |F1(\sigma) - F1(\text{rest})|` (paper Eq. 7).

    Parameters
    ----------
    y_true, y_pred : array-like of int
        Test labels and the model's predictions.
    sensitive : array-like
        Group of each sample (at least two groups).
    binary : bool or None
        Positive-class F1 (``True``) or macro F1 (``False``); ``None`` = binary when the labels
        are a subset of {0, 1}.

    Returns
    -------
    index : float
        In [0, 1]; 0 = every group is served as well as the rest.
    per_group : dict
        Signed :math:`\Phi_\sigma` per group (paper sign: positive = the group is better served).

    Examples
    --------
    >>> y = np.array([1, 1, 0, 0, 1, 1, 0, 0])
    >>> p = np.array([1, 1, 0, 0, 1, 0, 0, 1])
    >>> g = np.array(["a", "a", "a", "a", "b", "b", "b", "b"])
    >>> index, per_group = discrimination_index(y, p, g)
    >>> round(index, 4), {k: round(v, 4) for k, v in per_group.items()}
    (0.5, {'a': 0.5, 'b': -0.5})
    """
    y_true, y_pred, groups = np.asarray(y_true), np.asarray(y_pred), np.asarray(sensitive)
    if not (len(y_true) == len(y_pred) == len(groups)) or len(y_true) == 0:
        raise DiscriminationError(
            f"y_true, y_pred and sensitive must be non-empty and equally long, got {len(y_true)}, {len(y_pred)}, {len(groups)}"
        )
    values = np.unique(groups)
    if values.size < 2:
        raise DiscriminationError(f"the sensitive attribute has {values.size} group; at least two are needed")
    if binary is None:
        binary = bool(np.all(np.isin(np.unique(np.concatenate([y_true, y_pred])), (0, 1))))
    per_group = {}
    for value in values:
        inside = groups == value
        per_group[str(value)] = _f1(y_true[inside], y_pred[inside], binary) - _f1(y_true[~inside], y_pred[~inside], binary)
    return float(max(abs(v) for v in per_group.values())), per_group


@dataclass(frozen=True)
class DiscriminationResult:
    """Group fairness of a model's test predictions.

    Attributes
    ----------
    attribute : str
    index : float
        Discrimination index (worst |Phi_sigma|).
    per_group : dict
        Signed Phi per group.
    demographic_parity_difference, equalized_odds_difference : float or None
        fairlearn's worst-case gaps (binary labels only).
    group_sizes : dict
        Samples per group.
    """

    attribute: str
    index: float
    per_group: dict[str, float]
    demographic_parity_difference: float | None
    equalized_odds_difference: float | None
    group_sizes: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        """Return the result as a plain dict.

        Returns
        -------
        dict
            The fields by name; ``per_group`` and ``group_sizes`` as plain dicts.
        """
        return asdict(self)


def group_fairness_report(
    y_true: np.ndarray, y_pred: np.ndarray, sensitive: np.ndarray, *, attribute: str = "group",
    binary: bool | None = None,
) -> DiscriminationResult:
    """Discrimination index plus fairlearn's demographic-parity and equalised-odds differences.

    Parameters
    ----------
    y_true, y_pred : array-like of int
        Test labels and the model's predictions.
    sensitive : array-like
        Group of each sample (at least two groups).
    attribute : str
        The attribute's name (kept in the result).
    binary : bool or None
        As in :func:`discrimination_index`; the fairlearn gaps are computed for binary labels only.

    Returns
    -------
    DiscriminationResult

    Examples
    --------
    >>> y = np.array([1, 1, 0, 0, 1, 1, 0, 0])
    >>> p = np.array([1, 1, 0, 0, 1, 0, 0, 1])
    >>> g = np.array(["a", "a", "a", "a", "b", "b", "b", "b"])
    >>> r = group_fairness_report(y, p, g)
    >>> r.demographic_parity_difference, r.equalized_odds_difference
    (0.0, 0.5)
    """
    from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference

    y_true, y_pred, groups = np.asarray(y_true), np.asarray(y_pred), np.asarray(sensitive).astype(str)
    if binary is None:
        binary = bool(np.all(np.isin(np.unique(np.concatenate([y_true, y_pred])), (0, 1))))
    index, per_group = discrimination_index(y_true, y_pred, groups, binary=binary)
    dp = eo = None
    if binary:
        dp = float(demographic_parity_difference(y_true, y_pred, sensitive_features=groups))
        eo = float(equalized_odds_difference(y_true, y_pred, sensitive_features=groups))
    sizes = {str(v): int(np.sum(groups == v)) for v in np.unique(groups)}
    return DiscriminationResult(attribute, index, per_group, dp, eo, sizes)
