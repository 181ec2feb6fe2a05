"""Server-side aggregation rules as pure functions on lists of numpy arrays.

Every function takes parameter sets in ``state_dict`` order (one list of arrays per client)
and returns a new list of arrays. Integer buffers (e.g. BatchNorm's ``num_batches_tracked``)
are aggregated in float and cast back to their dtype.

Byzantine-robust rules (n updates, f assumed Byzantine; a client's update is its whole
``state_dict`` flattened into one vector):

=====================  =================================================================  =====================================
function               rule                                                               Flower 1.42
                                                                                          (``flwr.serverapp.strategy``)
=====================  =================================================================  =====================================
``krum``               the update with the smallest score, the sum of squared distances   ``Krum(num_malicious_nodes=f)``
                       to its n - f - 2 nearest other updates (Blanchard et al. 2017)
``multikrum``          weighted mean of the k lowest-scoring updates                      ``MultiKrum(num_nodes_to_select=k)``
``trimmed_mean``       per coordinate: drop the int(beta n) smallest and largest values,  ``FedTrimmedAvg(beta)``
                       average the rest (Yin et al. 2018)
``coordinate_median``  per coordinate median (Yin et al. 2018)                            ``FedMedian``
``bulyan``             theta = n - 2f updates chosen by Krum applied recursively, then    ``Bulyan(num_malicious_nodes=f,
                       per coordinate the mean of the beta = theta - 2f values closest    selection_rule=krum_selection_rule)``
                       to their median (El Mhamdi et al. 2018)
=====================  =================================================================  =====================================

Where ours and Flower's differ (``tests/algorithms/test_robust_aggregation.py`` checks each on toy updates):

- Krum scores: ours from exact float64 differences; Flower's from ``|x|^2 + |y|^2 - 2 x.y`` in the
  arrays' dtype (float32 for models). Same selection unless two scores tie within float32 rounding.
  Ties are broken by the lower index here (stable sort); Flower uses NumPy's default sort. The
  number of neighbours is ``max(1, n - f - 2)`` in both (the paper assumes n > 2f + 2).
- Bulyan's selection: the paper (and :func:`bulyan`) applies Krum recursively -- pick the best
  update, remove it, rescore the rest -- while Flower's default ``selection_rule`` is one-shot
  Multi-Krum (the theta lowest scores of the first scoring). fltrust's Flower engine passes
  :func:`krum_selection_rule` so both engines run the paper's rule; ``bulyan(...,
  selection="multikrum")`` reproduces Flower's default. Both skip a round with n < 4f + 3.
- Trimmed mean: same semantics (``int(beta * n)`` cut per side, scipy's ``trim_mean``); Flower
  averages in the arrays' dtype, we average in float64 (float32-rounding differences).
- Bulyan's second stage (mean of the beta values closest to the median) runs in the arrays' own
  dtype, exactly as Flower's: bit-identical results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from fltrust.core.records import Params



def _check(param_sets: list[Params]) -> None:
    if not param_sets:
        raise ValueError("aggregation needs at least one client parameter set")
    n = len(param_sets[0])
    if any(len(p) != n for p in param_sets):
        raise ValueError("all clients must send the same number of arrays")


def _per_array(param_sets: list[Params], combine: Callable[[list[np.ndarray]], np.ndarray]) -> Params:
    """``combine`` of the clients' arrays at each position, cast back to the first client's array."""
    return [cast_like(combine([p[i] for p in param_sets]), ref) for i, ref in enumerate(param_sets[0])]


def cast_like(value: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``value`` in ``like``'s dtype and shape, integers rounded (every aggregation's result; the arrays
    Flower returns).

    Parameters
    ----------
    value : array_like
        The values, with as many entries as ``like``.
    like : numpy.ndarray
        The reference array.

    Returns
    -------
    numpy.ndarray
        ``value`` itself (reshaped) when the dtype already matches, else a converted copy.

    Examples
    --------
    >>> cast_like(np.array([1.6, 2.4]), np.zeros(2, dtype=np.int64))
    array([2, 2])
    """
    value = np.asarray(value).reshape(like.shape)
    if value.dtype == like.dtype:
        return value
    if np.issubdtype(like.dtype, np.integer):
        return np.rint(value).astype(like.dtype)
    return value.astype(like.dtype)


def weighted_average(param_sets: list[Params], weights: list[float] | np.ndarray) -> Params:
    r"""FedAvg: :math:`\theta = \sum_n b_n w_n / \sum_n b_n` (McMahan et al. 2017, Alg. 1).

    ``weights`` are samples per client (the FedAvg paper) or mini-batches per client (what the
    fairness authors returned as ``num_examples``, fairness spec 1/2c; docs/references.md#fairness-1). Equal weights
    give the plain mean used for Shapley coalition models.

    Parameters
    ----------
    param_sets : list of Params
        One parameter set per client, all in the same ``state_dict`` order.
    weights : sequence of float
        One non-negative weight :math:`b_n` per client, with a positive sum; normalised here.

    Returns
    -------
    Params
        The weighted mean, each array in the dtype of the first client's (integers rounded).

    Raises
    ------
    ValueError
        If there are no clients, the clients' array counts differ, or ``weights`` has the wrong
        length, a negative entry or a zero sum.
    """
    _check(param_sets)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (len(param_sets),) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be {len(param_sets)} non-negative numbers with a positive sum, got {weights}")
    w = w / w.sum()
    return _per_array(param_sets, lambda arrays: sum(wi * a.astype(np.float64) for wi, a in zip(w, arrays)))


def coordinate_median(param_sets: list[Params]) -> Params:
    """FedMedian: element-wise median of the client models (Yin et al. 2018)."""
    _check(param_sets)
    return _per_array(param_sets, lambda arrays: np.median(np.stack([a.astype(np.float64) for a in arrays]), axis=0))


def qffl_aggregate(
    global_params: Params,
    param_sets: list[Params],
    losses: list[float] | np.ndarray,
    *,
    q: float,
    learning_rate: float,
) -> Params:
    r"""q-FedAvg update (Li et al. 2020, "Fair Resource Allocation in FL", Alg. 2).

    With :math:`g_n = (\theta - w_n)/\eta` and :math:`L_n` the loss attached to client n,

    .. math::
        \Delta_n = L_n^q g_n, \quad
        h_n = q L_n^{q-1} \lVert g_n \rVert^2 + L_n^q / \eta, \quad
        \theta' = \theta - \sum_n \Delta_n / \sum_n h_n .

    ``losses`` holds one value per client: the client's own loss of :math:`\theta` (the q-FFL
    paper), or the same central loss for everybody (Flower's legacy ``QFedAvg``, which the fairness
    authors ran, fairness spec 5.2; docs/references.md#fairness-5-2). ``1e-10`` is added to every loss as Flower does.
    The norm runs over all arrays of the model, buffers included.

    Parameters
    ----------
    global_params : Params
        The current global model :math:`\theta`, the one the clients started from.
    param_sets : list of Params
        The clients' trained models :math:`w_n`.
    losses : sequence of float
        One loss :math:`L_n` per client (see above).
    q : float
        The fairness exponent :math:`q` (``q = 0`` weighs every client's update alike).
    learning_rate : float
        The clients' learning rate :math:`\eta`, which turns model differences into gradients.

    Returns
    -------
    Params
        The new global model :math:`\theta'`, each array in the dtype of ``global_params``.

    Raises
    ------
    ValueError
        If there are no clients, the clients' array counts differ or ``losses`` does not hold one
        value per client.
    """
    _check(param_sets)
    if len(losses) != len(param_sets):
        raise ValueError(f"need one loss per client: {len(losses)} losses for {len(param_sets)} clients")
    theta = [g.astype(np.float64) for g in global_params]
    delta_sum = [np.zeros_like(t) for t in theta]
    h_sum = 0.0
    for params, loss in zip(param_sets, losses):
        loss = float(loss) + 1e-10
        grads = [(t - w.astype(np.float64)) / learning_rate for t, w in zip(theta, params)]
        norm_sq = float(sum(np.sum(g * g) for g in grads))
        scale = loss**q
        for acc, g in zip(delta_sum, grads):
            acc += scale * g
        h_sum += q * loss ** (q - 1) * norm_sq + scale / learning_rate
    return [cast_like(t - d / h_sum, g) for t, d, g in zip(theta, delta_sum, global_params)]


def clip_update(update: Params, clipping_norm: float) -> tuple[Params, float]:
    """Scale an update so its global L2 norm is at most ``clipping_norm``; returns (update, norm).

    Parameters
    ----------
    update : Params
        The arrays of one update (e.g. a client model minus the global model).
    clipping_norm : float
        The largest L2 norm kept, taken over all arrays together.

    Returns
    -------
    tuple of (Params, float)
        The update scaled by ``min(1, clipping_norm / norm)`` (unchanged when its norm is 0), and
        its norm before clipping.
    """
    norm = float(np.sqrt(sum(np.sum(u.astype(np.float64) ** 2) for u in update)))
    factor = min(1.0, clipping_norm / norm) if norm > 0 else 1.0
    return [u * factor for u in update], norm


# --------------------------------------------------------------------------------------------
# Byzantine-robust rules
# --------------------------------------------------------------------------------------------
def flatten(params: Params) -> np.ndarray:
    """One float64 vector of all arrays of a parameter set (``state_dict`` order)."""
    return np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in params]) if params else np.zeros(0)


def pairwise_sq_distances(vectors: np.ndarray) -> np.ndarray:
    """``D[i, j] = ||v_i - v_j||^2`` (exact differences, float64)."""
    n = len(vectors)
    out = np.zeros((n, n))
    for i in range(n):
        diff = vectors[i + 1:] - vectors[i]
        out[i, i + 1:] = out[i + 1:, i] = np.einsum("ij,ij->i", diff, diff)
    return out


def krum_scores(distances: np.ndarray, num_malicious: int) -> np.ndarray:
    r"""Krum score of every update: :math:`s(i) = \sum_{j \in N_i} \lVert v_i - v_j \rVert^2`,
    N_i the ``max(1, n - f - 2)`` nearest *other* updates (Blanchard et al. 2017, Sec. 4).

    Parameters
    ----------
    distances : numpy.ndarray
        The ``(n, n)`` squared distances between the updates (:func:`pairwise_sq_distances`).
    num_malicious : int
        f, the number of Byzantine updates assumed.

    Returns
    -------
    numpy.ndarray
        The n scores (float64); lower is more central. A single update scores 0.
    """
    n = len(distances)
    k = min(max(1, n - int(num_malicious) - 2), n - 1)
    return np.array([np.sort(np.delete(distances[i], i))[:k].sum() for i in range(n)], dtype=np.float64)


def multikrum_select(param_sets: list[Params], num_malicious: int, num_to_select: int) -> list[int]:
    """Indices of the ``num_to_select`` lowest Krum scores (ascending score; ties: lower index).

    Parameters
    ----------
    param_sets : list of Params
        The n client updates; each is flattened into one vector.
    num_malicious : int
        f, the number of Byzantine updates assumed.
    num_to_select : int
        How many indices to return (at least 1 is returned).

    Returns
    -------
    list of int
        Indices into ``param_sets``, lowest score first.
    """
    _check(param_sets)
    vectors = np.stack([flatten(p) for p in param_sets])
    scores = krum_scores(pairwise_sq_distances(vectors), num_malicious)
    return [int(i) for i in np.argsort(scores, kind="stable")[: max(1, int(num_to_select))]]


def krum(param_sets: list[Params], num_malicious: int) -> Params:
    """Krum (Blanchard et al. 2017): the single update with the lowest score.

    Parameters
    ----------
    param_sets : list of Params
        The n client updates.
    num_malicious : int
        f, the number of Byzantine updates assumed.

    Returns
    -------
    Params
        A copy of the chosen update.
    """
    chosen = multikrum_select(param_sets, num_malicious, 1)[0]
    return [np.array(p, copy=True) for p in param_sets[chosen]]


def multikrum(param_sets: list[Params], num_malicious: int, num_to_select: int,
              weights: list[float] | np.ndarray | None = None) -> Params:
    """Multi-Krum (Blanchard et al. 2017): the mean of the ``num_to_select`` lowest-scoring
    updates, weighted by ``weights`` (Flower's MultiKrum weighs by ``weighted_by_key``; equal
    weights give the paper's plain mean).

    Parameters
    ----------
    param_sets : list of Params
        The n client updates.
    num_malicious : int
        f, the number of Byzantine updates assumed.
    num_to_select : int
        k, how many of the lowest-scoring updates are averaged.
    weights : sequence of float, optional
        One weight per client in ``param_sets`` (only the selected ones are used); ``None``
        (default) weighs the selected updates equally.

    Returns
    -------
    Params
        The weighted mean of the selected updates (:func:`weighted_average`).
    """
    chosen = multikrum_select(param_sets, num_malicious, num_to_select)
    w = np.ones(len(param_sets)) if weights is None else np.asarray(weights, dtype=np.float64)
    return weighted_average([param_sets[i] for i in chosen], w[chosen])


def trimmed_mean(param_sets: list[Params], beta: float) -> Params:
    """Coordinate-wise beta-trimmed mean (Yin et al. 2018): per coordinate, sort the n values,
    drop ``int(beta * n)`` at each end and average the rest (Flower's ``FedTrimmedAvg(beta)``).

    Parameters
    ----------
    param_sets : list of Params
        The n client updates.
    beta : float
        The fraction cut at each end, in ``[0, 0.5)``.

    Returns
    -------
    Params
        The trimmed mean (computed in float64, cast back to each array's dtype).

    Raises
    ------
    ValueError
        If ``beta`` lies outside ``[0, 0.5)``, there are no clients or their array counts differ.
    """
    _check(param_sets)
    if not 0.0 <= beta < 0.5:
        raise ValueError(f"beta={beta!r} must lie in [0, 0.5)")
    n = len(param_sets)
    cut = int(beta * n)
    stacked = (np.sort(np.stack([p[i].astype(np.float64) for p in param_sets]), axis=0) for i in range(len(param_sets[0])))
    return [cast_like(s[cut:n - cut].mean(axis=0), ref) for s, ref in zip(stacked, param_sets[0])]


def krum_select_recursive(vectors: np.ndarray, num_malicious: int, num_to_select: int) -> list[int]:
    """Bulyan's selection (El Mhamdi et al. 2018, Alg. 1): apply Krum to the remaining updates,
    move the winner to the selection, repeat ``num_to_select`` times (same f throughout).

    Parameters
    ----------
    vectors : numpy.ndarray
        The ``(n, d)`` flattened updates, one row each.
    num_malicious : int
        f, the number of Byzantine updates assumed.
    num_to_select : int
        How many updates to select (fewer when fewer than that many rows exist).

    Returns
    -------
    list of int
        Row indices in the order they were selected.
    """
    distances = pairwise_sq_distances(np.asarray(vectors, dtype=np.float64))
    remaining = list(range(len(vectors)))
    chosen: list[int] = []
    while remaining and len(chosen) < num_to_select:
        sub = distances[np.ix_(remaining, remaining)]
        best = int(np.argsort(krum_scores(sub, num_malicious), kind="stable")[0])
        chosen.append(remaining.pop(best))
    return chosen


def _closest_to_median_mean(selected: list[np.ndarray], beta: int) -> np.ndarray:
    """Per coordinate: mean of the ``beta`` values closest to the coordinate's median -- the same
    NumPy operations, in the arrays' own dtype, as Flower's ``aggregate_n_closest_weights``
    (in float64 a float32 model's near-ties of |x - median| can resolve differently)."""
    stack = np.stack(selected)
    median = np.median(stack, axis=0)
    idx = np.argpartition(np.abs(stack - median), beta - 1, axis=0)[:beta]
    return np.mean(np.take_along_axis(stack, idx, axis=0), axis=0)


def bulyan(param_sets: list[Params], num_malicious: int, *, selection: Literal["recursive", "multikrum"] = "recursive") -> Params:
    """Bulyan (El Mhamdi et al. 2018) with Krum: select theta = n - 2f updates, then per
    coordinate average the beta = theta - 2f values closest to the median of the selection.

    ``selection="recursive"``: the paper's recursive Krum (:func:`krum_select_recursive`);
    ``"multikrum"``: the theta lowest scores of one Krum scoring (Flower's default selection rule).
    Needs n >= 4f + 3 (ValueError otherwise).

    Parameters
    ----------
    param_sets : list of Params
        The n client updates.
    num_malicious : int
        f, the number of Byzantine updates assumed.
    selection : {"recursive", "multikrum"}
        How the theta updates are selected (default ``"recursive"``).

    Returns
    -------
    Params
        The aggregate, each array in the dtype of the first client's.

    Raises
    ------
    ValueError
        If n < 4f + 3 or ``selection`` is neither choice.
    """
    _check(param_sets)
    n, f = len(param_sets), int(num_malicious)
    if n < 4 * f + 3:
        raise ValueError(f"Bulyan needs at least 4f + 3 = {4 * f + 3} updates, got {n}")
    theta, beta = n - 2 * f, n - 4 * f
    if selection == "recursive":
        chosen = krum_select_recursive(np.stack([flatten(p) for p in param_sets]), f, theta)
    elif selection == "multikrum":
        chosen = multikrum_select(param_sets, f, theta)
    else:
        raise ValueError(f"selection={selection!r}; choose 'recursive' or 'multikrum'")
    return _per_array([param_sets[c] for c in chosen],
                      lambda arrays: _closest_to_median_mean([np.asarray(a) for a in arrays], beta))


def krum_selection_rule(contents: list, num_malicious_nodes: int, num_nodes_to_select: int) -> list:
    """Flower ``Bulyan(selection_rule=...)``: the paper's recursive Krum on Flower RecordDicts
    (each reply's first ArrayRecord, flattened), so Flower's Bulyan computes :func:`bulyan`.

    Parameters
    ----------
    contents : list of flwr.app.RecordDict
        The clients' reply contents, as Flower's Bulyan passes them.
    num_malicious_nodes : int
        f, the number of Byzantine updates assumed.
    num_nodes_to_select : int
        theta, how many replies to select.

    Returns
    -------
    list of flwr.app.RecordDict
        The selected contents, in the order :func:`krum_select_recursive` picked them.
    """
    vectors = np.stack([flatten([a.numpy() for a in next(iter(c.array_records.values())).values()]) for c in contents])
    return [contents[i] for i in krum_select_recursive(vectors, num_malicious_nodes, num_nodes_to_select)]
