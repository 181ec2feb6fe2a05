"""FederatedTrust statistics: label entropy, participation, accuracy and class-imbalance variation.

These are the numbers the FederatedTrust prototype collects during training (``statistics.json``)
and writes into the FactSheet (trust spec 3.3, 3.8, 3.9, 5,
docs/references.md#trust-3-3, #trust-3-8, #trust-3-9, #trust-5). Every function takes plain arrays, so it can be checked
by hand and used outside an FL run.

==========================  =============================  ================================
function                    FactSheet field                paper
==========================  =============================  ================================
:func:`label_entropies`     (per client, bits)             Alg. 1 steps 6-10
:func:`avg_entropy`         ``data/avg_entropy``           Eq. 1 (entropy), Table 2
:func:`selection_rates`     (per client)                   Alg. 1 steps 11-14
:func:`selection_cv`        ``fairness/selection_cv``      Eq. 6 (participation variation)
:func:`accuracy_cv`         ``fairness/test_acc_cv``       Sec. 3.3 (accuracy variation)
:func:`class_imbalance`     ``fairness/class_imbalance``   Sec. 3.3 (class imbalance)
==========================  =============================  ================================

Conventions: CV(x) = std(x) / mean(x) with the *population* standard deviation (ddof = 0), as in
the prototype; ``cap1(v) = min(v, 1)``. Where the authors' code (HEAD b67a59c) and the paper
differ, the prototype behaviour is available under a named switch next to the corrected one
(trust spec 9: B4, B11, B15; docs/references.md#trust-9, #trust-b4, #trust-b11, #trust-b15).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import entropy as _scipy_entropy

ENTROPY_METHODS = ("minmax_label", "normalized_label", "client_identification")
"""``data/avg_entropy`` variants: the prototype's min-max normalised label entropy (B4) and two
normalised entropies in [0, 1] (label entropy / log2 K, and the paper's Eq. 1 client-identification
entropy / log2 N)."""

CLASS_IMBALANCE_METHODS = ("present_classes", "all_classes")
"""``fairness/class_imbalance`` variants: the prototype's CV over the classes present in the data,
or the CV over all K classes with absent classes counted as 0 (B11)."""


class StatisticsError(ValueError):
    """Invalid input to a FederatedTrust statistic; the message names the argument and the fix."""


def _as_nonnegative(values: Sequence[float] | np.ndarray, name: str, *, ndim: int) -> np.ndarray:
    """Float array of ``ndim`` dimensions with finite, non-negative entries."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != ndim:
        raise StatisticsError(f"{name} must be a {ndim}-d array, got shape {arr.shape}")
    if arr.size == 0:
        raise StatisticsError(f"{name} is empty; pass at least one value")
    if not np.all(np.isfinite(arr)):
        raise StatisticsError(f"{name} contains NaN or infinite values")
    if np.any(arr < 0):
        raise StatisticsError(f"{name} contains negative values; counts, rates and accuracies are >= 0")
    return arr


def cap1(value: float) -> float:
    """Cap at 1: ``min(value, 1)``; NaN stays NaN (the prototype's cap on every CV, trust spec 3.3).

    Parameters
    ----------
    value : float
        A coefficient of variation (or any number).

    Returns
    -------
    float
        ``min(value, 1)``, or NaN for NaN.
    """
    return float(value) if math.isnan(value) else float(min(value, 1.0))


def coefficient_of_variation(values: Sequence[float] | np.ndarray, *, cap: bool = True) -> float:
    r"""Coefficient of variation of non-negative values, population std (paper Eq. 6).

    .. math:: CV(x) = \frac{\sigma(x)}{\mu(x)}, \qquad
              \sigma(x) = \sqrt{\tfrac{1}{n} \sum_i (x_i - \mu(x))^2}

    Parameters
    ----------
    values : array-like of float
        Non-negative values (rates, accuracies, counts), at least one.
    cap : bool
        Return ``min(CV, 1)`` as the prototype HEAD does (default). ``False`` gives the raw CV
        (what the 5796d0b-era prototype stored, trust spec 7.3; docs/references.md#trust-7-3).

    Returns
    -------
    float
        The CV (0 = all values equal), or NaN when the mean is 0 (undefined; B11 zero-mean guard).
    """
    arr = _as_nonnegative(values, "values", ndim=1)
    mean = float(np.mean(arr))
    if mean == 0.0:
        return float("nan")
    cv = float(np.std(arr) / mean)
    return cap1(cv) if cap else cv


# -- entropy ------------------------------------------------------------------------------------

def label_entropies(class_counts: np.ndarray) -> np.ndarray:
    r"""Shannon entropy in bits of each client's training label distribution (trust spec 3.8).

    .. math:: H_i = -\sum_k p_{ik} \log_2 p_{ik}, \qquad p_{ik} = c_{ik} / n_i

    computed with ``scipy.stats.entropy(counts, base=2)`` as the prototype does (Alg. 1 steps 6-10).

    Parameters
    ----------
    class_counts : np.ndarray
        ``(C, K)`` label counts per client.

    Returns
    -------
    np.ndarray
        ``(C,)`` entropies in bits, in [0, log2 K]; NaN for a client without samples.
    """
    counts = _as_nonnegative(class_counts, "class_counts", ndim=2)
    out = np.full(len(counts), np.nan)
    nonempty = counts.sum(axis=1) > 0
    if np.any(nonempty):
        out[nonempty] = _scipy_entropy(counts[nonempty], base=2, axis=1)
    return out


def minmax_mean_entropy(entropies: Sequence[float] | np.ndarray) -> float:
    r"""Compute the prototype's ``avg_entropy``: mean of min-max normalised client entropies (spec 3.8).

    .. math:: h_i = \frac{H_i - \min_j H_j}{\max_j H_j - \min_j H_j}, \qquad
              \text{avg\_entropy} = \frac{1}{C} \sum_i h_i

    Notes
    -----
    This is the HEAD prototype's statistic, not the paper's Eq. 1 (bug B4): it is relative to the
    other clients (always in [0, 1], whatever the absolute entropies) and it is NaN when all
    clients have the same entropy, including the single-client case. Clients without samples
    (NaN entropy) are ignored.

    Parameters
    ----------
    entropies : array-like of float
        Per-client entropies ``H_i`` (bits), as stored in the prototype's ``statistics.json``.

    Returns
    -------
    float
        Mean normalised entropy in [0, 1], or NaN when ``max H == min H``.
    """
    arr = np.asarray(entropies, dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        raise StatisticsError("entropies holds no finite value; every client is empty")
    spread = float(arr.max() - arr.min())
    if spread == 0.0:
        return float("nan")
    return float(np.mean((arr - arr.min()) / spread))


def avg_entropy(class_counts: np.ndarray, *, method: str = "minmax_label") -> float:
    r"""``data/avg_entropy`` from per-client label counts (trust spec 3.8; paper Eq. 1; B4).

    Parameters
    ----------
    class_counts : np.ndarray
        ``(C, K)`` training label counts per client.
    method : str
        One of :data:`ENTROPY_METHODS`.

    Returns
    -------
    float
        Value in [0, 1] (NaN only for ``"minmax_label"`` when all entropies are equal).

    Notes
    -----
    The methods:

    ``"minmax_label"`` (prototype HEAD)
        :func:`minmax_mean_entropy` of the client label entropies :func:`label_entropies`.
    ``"normalized_label"``
        Mean over clients of :math:`H_i / \log_2 K`, the label entropy relative to its maximum
        (K = number of columns of ``class_counts``); 1 = every client holds all classes equally.
    ``"client_identification"`` (paper Eq. 1)
        Entropy of "which client is the target", with :math:`p_i = n_i / \sum_j n_j`
        proportional to client data size, normalised by its maximum :math:`\log_2 N`:
        :math:`H(p) / \log_2 N`. With one client the target is certain and the value is 0.
    """
    counts = _as_nonnegative(class_counts, "class_counts", ndim=2)
    if method == "minmax_label":
        return minmax_mean_entropy(label_entropies(counts))
    if method == "normalized_label":
        k = counts.shape[1]
        if k < 2:
            raise StatisticsError(f"class_counts has {k} class column(s); normalised label entropy needs K >= 2")
        h = label_entropies(counts)
        h = h[np.isfinite(h)]
        if h.size == 0:
            raise StatisticsError("class_counts holds no samples")
        return float(np.mean(h / np.log2(k)))
    if method == "client_identification":
        sizes = counts.sum(axis=1)
        if sizes.sum() == 0:
            raise StatisticsError("class_counts holds no samples")
        n = len(sizes)
        if n == 1:
            return 0.0
        return float(_scipy_entropy(sizes, base=2) / np.log2(n))
    raise StatisticsError(f"entropy method={method!r} is not known; choose one of {list(ENTROPY_METHODS)}")


# -- participation --------------------------------------------------------------------------------

def selection_rates(selection_counts: Sequence[float] | np.ndarray, num_rounds: int) -> np.ndarray:
    r"""Participation rate of every registered client: times selected / training rounds run.

    .. math:: r_i = \frac{\#\{t \in 1..T : i \in D^{(t)}\}}{T}

    Notes
    -----
    The prototype adds ``1/T`` per selection while the paper's Algorithm 1 loops ``t = 0..T``
    (T + 1 rounds, bug B15). Dividing the counts by the number of rounds actually run fixes both;
    the CV (:func:`selection_cv`) does not depend on the scale anyway.

    Parameters
    ----------
    selection_counts : array-like of int
        Times each registered client was sampled, including zeros for never-selected clients.
    num_rounds : int
        Training rounds run (>= 1).

    Returns
    -------
    np.ndarray
        Rates in [0, 1].
    """
    counts = _as_nonnegative(selection_counts, "selection_counts", ndim=1)
    if int(num_rounds) != num_rounds or num_rounds < 1:
        raise StatisticsError(f"num_rounds={num_rounds!r} must be a positive integer (training rounds run)")
    if np.any(counts > num_rounds):
        raise StatisticsError(
            f"selection_counts exceed num_rounds={num_rounds}; a client is sampled at most once a round"
        )
    return counts / float(num_rounds)


def selection_cv(rates: Sequence[float] | np.ndarray, *, cap: bool = True) -> float:
    r"""``fairness/selection_cv``: participation variation (paper Eq. 6, trust spec 3.9).

    .. math:: \text{selection\_cv} = \text{cap1}\left(\frac{\sigma(r)}{\mu(r)}\right)

    over the rates (or counts: the CV is scale free) of *all* registered clients, never-selected
    clients included. 0 means every client participated equally often.

    Parameters
    ----------
    rates : array-like of float
        Participation rate (or count) per registered client.
    cap : bool
        Cap at 1 as the prototype HEAD (default).

    Returns
    -------
    float
        The CV, or NaN when no client was ever selected.
    """
    return coefficient_of_variation(rates, cap=cap)


def accuracy_cv(accuracies: Sequence[float] | np.ndarray, *, cap: bool = True) -> float:
    r"""``fairness/test_acc_cv``: accuracy variation across clients (paper Sec. 3.3, spec 3.3).

    .. math:: \text{test\_acc\_cv} = \text{cap1}\left(\frac{\sigma(a)}{\mu(a)}\right)

    with :math:`a_i` the global model's test accuracy on client i and the population std (ddof 0,
    the FederatedScope fairness report; nebula later used ddof 1). 0 means equal accuracy everywhere.

    Parameters
    ----------
    accuracies : array-like of float
        Per-client accuracies in [0, 1].
    cap : bool
        Cap at 1 as the prototype HEAD (default).

    Returns
    -------
    float
        The CV, or NaN when every accuracy is 0.
    """
    arr = _as_nonnegative(accuracies, "accuracies", ndim=1)
    if np.any(arr > 1):
        raise StatisticsError("accuracies must lie in [0, 1]")
    return coefficient_of_variation(arr, cap=cap)


def class_imbalance(
    class_counts: Sequence[float] | np.ndarray, *, method: str = "present_classes", cap: bool = True
) -> float:
    r"""``fairness/class_imbalance``: CV of the unified per-class sample counts (paper Sec. 3.3).

    .. math:: \text{class\_imbalance} = \text{cap1}\left(\frac{\sigma(c)}{\mu(c)}\right), \qquad
              c_k = \sum_i c_{ik}

    Parameters
    ----------
    class_counts : array-like
        ``(K,)`` unified counts, or ``(C, K)`` per-client counts (summed over clients first).
    method : str
        One of :data:`CLASS_IMBALANCE_METHODS`.
    cap : bool
        Cap at 1 as the prototype HEAD (default).

    Returns
    -------
    float
        The CV (0 = perfectly balanced classes), or NaN when there are no samples.

    Notes
    -----
    The methods:

    ``"present_classes"`` (prototype HEAD)
        Only classes with at least one sample enter ``c`` (the prototype's dictionary only holds
        labels it has seen), so a class missing from every client is not counted as imbalance.
    ``"all_classes"`` (B11 fix)
        All K classes, absent ones as 0.
    """
    arr = np.asarray(class_counts, dtype=float)
    if arr.ndim == 2:
        arr = _as_nonnegative(arr, "class_counts", ndim=2).sum(axis=0)
    arr = _as_nonnegative(arr, "class_counts", ndim=1)
    if method == "present_classes":
        arr = arr[arr > 0]
        if arr.size == 0:
            return float("nan")
    elif method != "all_classes":
        raise StatisticsError(
            f"class imbalance method={method!r} is not known; choose one of {list(CLASS_IMBALANCE_METHODS)}"
        )
    return coefficient_of_variation(arr, cap=cap)
