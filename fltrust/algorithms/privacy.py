"""Differential privacy bookkeeping: noise calibration and the epsilon actually spent.

Three mechanisms (``privacy.mode``):

- ``"local"``: DP-SGD on every client with Opacus (Abadi et al. 2016). The noise multiplier is
  calibrated once so that a client selected in *every* round (``rounds * local_epochs`` epochs at
  sampling rate ``batch_size / n_client``) spends at most ``target_epsilon``; each client's
  accountant history is kept, and the record reports the largest epsilon any client spent.
- ``"server"``: each client update is clipped to ``clipping_norm``, the mean of the clipped updates
  gets Gaussian noise with standard deviation ``noise_multiplier * clipping_norm / m``
  (Flower's ``DifferentialPrivacyServerSideFixedClipping``, McMahan et al. 2018). Epsilon is the
  RDP bound of the subsampled Gaussian mechanism with sampling rate ``m / C`` over the rounds run.
- ``"nbafl"``: noising before model aggregation (Wei et al. 2020) exactly as FederatedScope runs it,
  where the FederatedTrust prototype ran; see :class:`NbAFL`. No accounting: the record reports the
  nominal ``target_epsilon`` that the noise scales are derived from.

The accounting of ``local`` and ``server`` uses Opacus's RDP accountant.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

import numpy as np
from torch import nn

from fltrust.config import PrivacyConfig
from fltrust.core.records import Params
from fltrust.algorithms.aggregation import clip_update


def calibrate_noise(target_epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    """Smallest noise multiplier with RDP epsilon <= ``target_epsilon`` after ``steps`` steps.

    Parameters
    ----------
    target_epsilon : float
        The privacy budget to stay within.
    delta : float
        The target delta of (epsilon, delta)-DP.
    sample_rate : float
        The Poisson sampling rate of one step (capped at 1).
    steps : int
        The number of noisy steps (at least 1 is used).

    Returns
    -------
    float
        The noise multiplier (noise std / clipping norm), from Opacus's ``get_noise_multiplier``
        with its RDP accountant.
    """
    from opacus.accountants.utils import get_noise_multiplier

    try:
        return float(
            get_noise_multiplier(
                target_epsilon=target_epsilon,
                target_delta=delta,
                sample_rate=min(1.0, sample_rate),
                steps=max(1, steps),
                accountant="rdp",
            )
        )
    except ValueError as exc:  # Opacus: "The privacy budget is too low."
        raise ValueError(f"privacy.target_epsilon={target_epsilon:g} with privacy.delta={delta:g} over {max(1, steps)} "
                         f"noisy steps: no noise multiplier reaches it ({exc}); raise privacy.target_epsilon or "
                         f"privacy.delta") from None


def epsilon_from_history(history: list[list[float]], delta: float) -> float:
    """Epsilon of an RDP accountant history ``[(noise_multiplier, sample_rate, steps), ...]``.

    Parameters
    ----------
    history : list of [float, float, int]
        The accountant's entries (as :func:`merge_history` keeps them); empty spends nothing.
    delta : float
        The target delta.

    Returns
    -------
    float
        The epsilon Opacus's RDP accountant reports for ``delta``; 0.0 for an empty history.
        Remembered per history: the engine asks every round for every client's epsilon, and only
        the histories of the round's participants change (Opacus's RDP orders below 11 take about
        0.2 s per history).
    """
    if not history:
        return 0.0
    return _epsilon(tuple((float(n), float(r), int(k)) for n, r, k in history), float(delta))


@functools.lru_cache(maxsize=4096)
def _epsilon(history: tuple[tuple[float, float, int], ...], delta: float) -> float:
    from opacus.accountants import RDPAccountant

    accountant = RDPAccountant()
    accountant.history = list(history)
    with warnings.catch_warnings():
        # at very small epsilon the optimal RDP order is the largest one tried; the bound stays valid
        warnings.filterwarnings("ignore", message="Optimal order is the largest alpha")
        return float(accountant.get_epsilon(delta=delta))


def merge_history(history: list[list[float]], new: list[list[float]]) -> list[list[float]]:
    """Append accountant entries, merging steps of identical (noise, rate) pairs.

    Parameters
    ----------
    history : list of [float, float, int]
        The entries so far, ``[noise_multiplier, sample_rate, steps]``; not modified.
    new : list of [float, float, int]
        Entries to append; one with the same noise and rate as the last entry adds its steps
        to it.

    Returns
    -------
    list of [float, float, int]
        The merged history (a new list).

    Examples
    --------
    >>> merge_history([[1.1, 0.1, 10]], [[1.1, 0.1, 5], [0.9, 0.1, 5]])
    [[1.1, 0.1, 15], [0.9, 0.1, 5]]
    """
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

    Parameters
    ----------
    global_params : list of numpy.ndarray
        The current global model; the updates are the clients' models minus it.
    param_sets : list of list of numpy.ndarray
        The m client models.
    clipping_norm : float
        The largest L2 norm of one client's update (over all its arrays).
    noise_multiplier : float
        The noise std relative to ``clipping_norm``: the mean update gets noise with standard
        deviation ``noise_multiplier * clipping_norm / m`` on every floating-point entry.
    rng : numpy.random.Generator
        The source of the noise.

    Returns
    -------
    tuple of (list of numpy.ndarray, dict)
        The new global model (floating arrays: global + noisy mean clipped update, in their own
        dtype; other arrays: the global model's, unchanged), and ``{"update_norms": [...],
        "noise_std": ...}``.
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


@dataclass(frozen=True)
class NbAFL:
    r"""NbAFL (Wei et al. 2020) as FederatedScope implements it (``privacy.mode: nbafl``).

    Reference: FederatedScope ``federatedscope/core/trainers/trainer_nbafl.py`` (commit
    480b67de851df2fa02b7cc2189f1803d947998d7; v0.2.0 has the same formulas), with its ``nbafl``
    options in ``federatedscope/core/configs/cfg_differential_privacy.py`` and the broadcast hook
    in ``federatedscope/core/workers/server.py`` (``broadcast_model_para``). The FederatedTrust
    prototype's FEMNIST configs (ningxie1991/FederatedTrust) set mu 0.01, w_clip 0.1, constant 1.
    What it does, per round:

    1. **Broadcast** (the server, before the clients train): every entry of every trainable
       parameter tensor of the global model is clipped to ``[-w_clip, w_clip]``
       (``w / max(1, |w| / w_clip)``, element-wise, not a norm clip); then, only when
       ``T > sqrt(N) * K``, Gaussian noise with standard deviation

       .. math:: \sigma_D = \frac{2\, w_{clip}\, c\, \sqrt{T^2 - K^2 N}}{m\, N\, \varepsilon}

       is added to each of those entries. This is the model the clients receive.
    2. **Local training** (each sampled client k): the usual loss plus the proximal term
       :math:`\tfrac{\mu}{2} \lVert w - w_0 \rVert^2` around the received model :math:`w_0`
       (FederatedScope's ``proximal_regularizer``), so its gradient is :math:`\mu (w - w_0)`.
    3. **Upload**: Gaussian noise with standard deviation

       .. math:: \sigma_U = \frac{w_{clip}\, T\, c}{n_k\, \varepsilon}

       is added to every entry of the trainable parameters of the trained model, which is what
       the client sends (and what its performance is measured with). The server aggregates the
       noisy models with the configured strategy; that aggregate is the round's global model
       (the one evaluated), and the next round's broadcast clips and noises it again.

    Symbols: ``w_clip`` = ``nbafl_w_clip``, ``c`` = ``nbafl_constant``, ``mu`` = ``nbafl_mu``,
    epsilon = ``target_epsilon`` (FederatedScope's ``nbafl.epsilon``), T = ``training.rounds``
    (``federate.total_round_num``), N = clients, K = clients per round (FederatedScope's ``L``:
    ``sample_client_num``), n_k = the client's training samples, m = the smallest
    ``local_epochs * n_k`` over all clients (FederatedScope's ``min`` of the clients' join-in
    ``num_sample``, epoch mode). Buffers (BatchNorm running statistics) are neither clipped nor
    noised, as FederatedScope touches only ``model.parameters()``.

    FederatedScope's server noise also needs ``federate.join_in_info: ['num_sample']``; without it
    (as in the FederatedTrust example configs) only the clipping happens. Here the condition
    ``T > sqrt(N) K`` alone decides. For FederatedTrust's experiments 2 (N=50, K=30, T=25) and 3
    (N=100, K=40, T=50) it is false, so they get no server noise either way.

    Examples
    --------
    >>> nb = NbAFL(mu=0.0, w_clip=1.0, constant=30.0, epsilon=10.0, rounds=5, num_clients=4,
    ...            clients_per_round=2, min_samples=100)
    >>> round(nb.upload_std(100), 6)  # 1 * 5 * 30 / (100 * 10)
    0.15
    >>> nb.broadcast_std()  # T = 5 > sqrt(4) * 2 = 4
    0.045
    """

    mu: float
    w_clip: float
    constant: float
    epsilon: float
    rounds: int
    num_clients: int
    clients_per_round: int
    min_samples: int

    def upload_std(self, num_samples: int) -> float:
        """Client-side noise std ``w_clip * T * c / (n_k * epsilon)`` for a client with ``num_samples``."""
        return self.w_clip * self.rounds * self.constant / (num_samples * self.epsilon)

    def broadcast_std(self) -> float:
        """Server-side noise std; 0.0 unless ``T > sqrt(N) * K`` (FederatedScope's condition)."""
        t, n, k = self.rounds, self.num_clients, self.clients_per_round
        if not t > math.sqrt(n) * k:
            return 0.0
        return 2 * self.w_clip * self.constant * math.sqrt(t**2 - k**2 * n) / (self.min_samples * n * self.epsilon)

    def noise_norms(self, num_samples: list[int], trainable_entries: int) -> dict[str, float]:
        """Expected L2 norms of a round's upload noise: per upload (mean over the round's
        clients) and on their sample-weighted mean, ``sqrt(d * sum_k (n_k / n)^2 sigma_k^2)``
        over the ``d`` trainable entries (how much noise one FedAvg round adds to the model).

        Parameters
        ----------
        num_samples : list of int
            n_k, the training rows of each of the round's clients.
        trainable_entries : int
            d, the number of entries of the model's trainable parameters.

        Returns
        -------
        dict of str to float
            ``upload`` (the mean over the clients of ``sigma_k sqrt(d)``) and ``aggregate``.

        Examples
        --------
        >>> NbAFL(mu=0, w_clip=1, constant=30, epsilon=10, rounds=5, num_clients=4, clients_per_round=2,
        ...       min_samples=100).noise_norms([100, 100], 100)
        {'upload': 1.5, 'aggregate': 1.0606601717798212}
        """
        stds = np.array([self.upload_std(n) for n in num_samples])
        weights = np.asarray(num_samples, dtype=float) / float(sum(num_samples))
        return {"upload": float(stds.mean() * math.sqrt(trainable_entries)),
                "aggregate": float(math.sqrt(trainable_entries * float(np.sum((weights * stds) ** 2))))}

    def train_kwargs(self, received: Params) -> dict:
        """``LocalTrainer.train`` keywords of the proximal term around the received model."""
        return {"proximal_center": received, "proximal_mu": self.mu}

    def perturb_upload(self, params: Params, trainable: list[bool], num_samples: int,
                       rng: np.random.Generator) -> Params:
        """The trained model plus upload noise (:meth:`upload_std`) on its trainable entries.

        Parameters
        ----------
        params : Params
            The client's trained model (not modified).
        trainable : list of bool
            Per ``state_dict`` entry: is it a trainable parameter (:func:`trainable_mask`)?
        num_samples : int
            n_k, the client's training rows.
        rng : numpy.random.Generator
            The source of the noise.

        Returns
        -------
        Params
            Copies; trainable floating-point arrays with noise, the others unchanged.
        """
        return _add_noise(params, trainable, self.upload_std(num_samples), rng)

    def broadcast(self, params: Params, trainable: list[bool], rng: np.random.Generator) -> Params:
        """The model the clients receive: trainable entries clipped to ``[-w_clip, w_clip]``,
        plus broadcast noise (:meth:`broadcast_std`) when FederatedScope's condition holds.

        Parameters
        ----------
        params : Params
            The global model (not modified).
        trainable : list of bool
            Per ``state_dict`` entry: is it a trainable parameter (:func:`trainable_mask`)?
        rng : numpy.random.Generator
            The source of the noise (not drawn from when the noise std is 0).

        Returns
        -------
        Params
            Copies; buffers unchanged.
        """
        clipped = [np.clip(p, -self.w_clip, self.w_clip) if t else p.copy() for p, t in zip(params, trainable)]
        return _add_noise(clipped, trainable, self.broadcast_std(), rng)


def nbafl_from_config(privacy: PrivacyConfig, *, rounds: int, num_clients: int, clients_per_round: int,
                      local_epochs: int, client_sizes: list[int]) -> NbAFL:
    """The :class:`NbAFL` of a run (``m`` = ``local_epochs * min(client_sizes)``).

    Parameters
    ----------
    privacy : PrivacyConfig
        The run's ``privacy`` block (``nbafl_mu``, ``nbafl_w_clip``, ``nbafl_constant``,
        ``target_epsilon``).
    rounds : int
        T, ``training.rounds``.
    num_clients : int
        N, the number of clients.
    clients_per_round : int
        K, the clients sampled per round.
    local_epochs : int
        ``training.local_epochs``.
    client_sizes : list of int
        Every client's training rows.

    Returns
    -------
    NbAFL
    """
    return NbAFL(mu=privacy.nbafl_mu, w_clip=privacy.nbafl_w_clip, constant=privacy.nbafl_constant,
                 epsilon=privacy.target_epsilon, rounds=rounds, num_clients=num_clients,
                 clients_per_round=clients_per_round, min_samples=local_epochs * max(1, min(client_sizes)))


def trainable_mask(model: nn.Module) -> list[bool]:
    """For each ``state_dict`` entry of ``model``: is it a trainable parameter (not a buffer)?"""
    trainable = {name for name, _ in model.named_parameters()}
    return [name in trainable for name in model.state_dict()]


def _add_noise(params: Params, trainable: list[bool], std: float, rng: np.random.Generator) -> Params:
    """Gaussian noise N(0, std^2) on every entry of the trainable floating-point arrays (copies)."""
    out = []
    for p, t in zip(params, trainable):
        if t and std > 0 and np.issubdtype(p.dtype, np.floating):
            out.append((p.astype(np.float64) + rng.normal(0.0, std, size=p.shape)).astype(p.dtype))
        else:
            out.append(p.copy())
    return out


def describe(privacy: PrivacyConfig) -> str:
    """One-line description for logs and FactSheets."""
    if privacy.mode == "none":
        return "no differential privacy"
    if privacy.mode == "local":
        return (
            f"local DP-SGD (Opacus, RDP accountant), target epsilon {privacy.target_epsilon}, "
            f"delta {privacy.delta}, max grad norm {privacy.max_grad_norm}"
        )
    if privacy.mode == "nbafl":
        return (
            f"NbAFL as in FederatedScope (weights clipped to {privacy.nbafl_w_clip}, proximal mu "
            f"{privacy.nbafl_mu}, Gaussian noise with constant {privacy.nbafl_constant}), epsilon {privacy.target_epsilon}"
        )
    return (
        f"server-side fixed clipping (norm {privacy.clipping_norm}) + Gaussian noise, "
        f"target epsilon {privacy.target_epsilon}, delta {privacy.delta}"
    )
