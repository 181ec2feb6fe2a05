"""Differential privacy bookkeeping: noise calibration and the epsilon actually spent.

Two mechanisms (``privacy.mode``):

- ``"local"``: DP-SGD on every client with Opacus (Abadi et al. 2016). The noise multiplier is
  calibrated once so that a client selected in *every* round (``rounds * local_epochs`` epochs at
  sampling rate ``batch_size / n_client``) spends at most ``target_epsilon``; each client's
  accountant history is kept, and the record reports the largest epsilon any client spent.
- ``"server"``: each client update is clipped to ``clipping_norm``, the mean of the clipped updates
  gets Gaussian noise with standard deviation ``noise_multiplier * clipping_norm / m``
  (Flower's ``DifferentialPrivacyServerSideFixedClipping``, McMahan et al. 2018). Epsilon is the
  RDP bound of the subsampled Gaussian mechanism with sampling rate ``m / C`` over the rounds run.

All accounting uses Opacus's RDP accountant.
"""

from __future__ import annotations

import warnings

import numpy as np

from fltrust.config import PrivacyConfig
from fltrust.fl.aggregation import clip_update


def calibrate_noise(target_epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    """Smallest noise multiplier with RDP epsilon <= ``target_epsilon`` after ``steps`` steps."""
    from opacus.accountants.utils import get_noise_multiplier

    return float(
        get_noise_multiplier(
            target_epsilon=target_epsilon,
            target_delta=delta,
            sample_rate=min(1.0, sample_rate),
            steps=max(1, steps),
            accountant="rdp",
        )
    )


def epsilon_from_history(history: list[list[float]], delta: float) -> float:
    """Epsilon of an RDP accountant history ``[(noise_multiplier, sample_rate, steps), ...]``."""
    from opacus.accountants import RDPAccountant

    if not history:
        return 0.0
    accountant = RDPAccountant()
    accountant.history = [tuple(h) for h in history]
    with warnings.catch_warnings():
        # at very small epsilon the optimal RDP order is the largest one tried; the bound stays valid
        warnings.filterwarnings("ignore", message="Optimal order is the largest alpha")
        return float(accountant.get_epsilon(delta=delta))


def merge_history(history: list[list[float]], new: list[list[float]]) -> list[list[float]]:
    """Append accountant entries, merging steps of identical (noise, rate) pairs."""
    merged = [list(h) for h in history]
    for noise, rate, steps in new:
        if merged and merged[-1][0] == noise and merged[-1][1] == rate:
            merged[-1][2] += steps
        else:
            merged.append([noise, rate, steps])
    return merged


def server_dp_aggregate(
    global_params: list[np.ndarray],
    param_sets: list[list[np.ndarray]],
    *,
    clipping_norm: float,
    noise_multiplier: float,
    rng: np.random.Generator,
) -> tuple[list[np.ndarray], dict]:
    """Clip each client update, average, add Gaussian noise (central DP with fixed clipping).

    Returns the new global parameters and diagnostics (pre-clipping norms). Integer buffers are
    not perturbed.
    """
    updates, norms = [], []
    for params in param_sets:
        update = [p.astype(np.float64) - g.astype(np.float64) for p, g in zip(params, global_params)]
        clipped, norm = clip_update(update, clipping_norm)
        updates.append(clipped)
        norms.append(norm)
    m = len(updates)
    std = noise_multiplier * clipping_norm / m
    new = []
    for i, g in enumerate(global_params):
        mean_update = sum(u[i] for u in updates) / m
        if np.issubdtype(g.dtype, np.floating):
            mean_update = mean_update + rng.normal(0.0, std, size=g.shape)
            new.append((g.astype(np.float64) + mean_update).astype(g.dtype))
        else:
            new.append(g.copy())
    return new, {"update_norms": norms, "noise_std": std}


def describe(privacy: PrivacyConfig) -> str:
    """One-line description for logs and FactSheets."""
    if privacy.mode == "none":
        return "no differential privacy"
    if privacy.mode == "local":
        return (
            f"local DP-SGD (Opacus, RDP accountant), target epsilon {privacy.target_epsilon}, "
            f"delta {privacy.delta}, max grad norm {privacy.max_grad_norm}"
        )
    return (
        f"server-side fixed clipping (norm {privacy.clipping_norm}) + Gaussian noise, "
        f"target epsilon {privacy.target_epsilon}, delta {privacy.delta}"
    )
