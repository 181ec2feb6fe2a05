"""Server-side aggregation rules as pure functions on lists of numpy arrays.

Every function takes parameter sets in ``state_dict`` order (one list of arrays per client)
and returns a new list of arrays. Integer buffers (e.g. BatchNorm's ``num_batches_tracked``)
are aggregated in float and cast back to their dtype.
"""

from __future__ import annotations

import numpy as np

from fltrust.core.records import Params



def _check(param_sets: list[Params]) -> None:
    if not param_sets:
        raise ValueError("aggregation needs at least one client parameter set")
    n = len(param_sets[0])
    if any(len(p) != n for p in param_sets):
        raise ValueError("all clients must send the same number of arrays")


def _cast_like(value: np.ndarray, like: np.ndarray) -> np.ndarray:
    if np.issubdtype(like.dtype, np.integer):
        return np.rint(value).astype(like.dtype)
    return value.astype(like.dtype, copy=False)


def weighted_average(param_sets: list[Params], weights: list[float] | np.ndarray) -> Params:
    r"""FedAvg: :math:`\theta = \sum_n b_n w_n / \sum_n b_n` (McMahan et al. 2017, Alg. 1).

    ``weights`` are samples per client (the FedAvg paper) or mini-batches per client (what the
    fairness authors returned as ``num_examples``, fairness spec 1/2c). Equal weights give the
    plain mean used for Shapley coalition models.
    """
    _check(param_sets)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (len(param_sets),) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be {len(param_sets)} non-negative numbers with a positive sum, got {weights}")
    w = w / w.sum()
    return [
        _cast_like(sum(wi * p[i].astype(np.float64) for wi, p in zip(w, param_sets)), param_sets[0][i])
        for i in range(len(param_sets[0]))
    ]


def coordinate_median(param_sets: list[Params]) -> Params:
    """FedMedian: element-wise median of the client models (Yin et al. 2018)."""
    _check(param_sets)
    return [
        _cast_like(np.median(np.stack([p[i].astype(np.float64) for p in param_sets]), axis=0), param_sets[0][i])
        for i in range(len(param_sets[0]))
    ]


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
    authors ran, fairness spec 5.2). ``1e-10`` is added to every loss as Flower does. The norm runs
    over all arrays of the model, buffers included.
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
    return [_cast_like(t - d / h_sum, g) for t, d, g in zip(theta, delta_sum, global_params)]


def clip_update(update: Params, clipping_norm: float) -> tuple[Params, float]:
    """Scale an update so its global L2 norm is at most ``clipping_norm``; returns (update, norm)."""
    norm = float(np.sqrt(sum(np.sum(u.astype(np.float64) ** 2) for u in update)))
    factor = min(1.0, clipping_norm / norm) if norm > 0 else 1.0
    return [u * factor for u in update], norm
