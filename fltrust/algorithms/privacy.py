"""Differential privacy: the mechanisms an engine runs, their noise calibration and the epsilon spent.

A mechanism is one :class:`PrivacyMechanism` object that the engine holds for the whole run. It
prepares the model (:meth:`~PrivacyMechanism.prepare_model`), may change what the clients receive
(:meth:`~PrivacyMechanism.broadcast`), wraps a client's local training
(:meth:`~PrivacyMechanism.train`), may replace the server's aggregation
(:meth:`~PrivacyMechanism.aggregate`), reports the epsilon spent and its round metrics, describes
itself for the run summary, says whether the round's clients may train side by side
(:meth:`~PrivacyMechanism.sequential_reason`) and checks the strategy and the engine it is asked
to run with (:meth:`~PrivacyMechanism.check`). The mechanisms register under their
``privacy.mode`` name in :data:`fltrust.registry.PRIVACY_MECHANISMS` (as Opacus keeps its
accountants in a registry by name); :func:`build_privacy` is the one place a mode name is read.

The four built-ins (``privacy.mode``): ``"none"`` (:class:`NoPrivacy`) and

- ``"local"`` (:class:`LocalDPSGD`): DP-SGD on every client with Opacus (Abadi et al. 2016). The noise multiplier is
  calibrated once so that a client selected in *every* round (``rounds * local_epochs`` epochs at
  sampling rate ``batch_size / n_client``) spends at most ``target_epsilon``; each client's
  accountant history is kept, and the record reports the largest epsilon any client spent.
- ``"server"`` (:class:`ServerSideDP`): each client update is clipped to ``clipping_norm``, the mean of the clipped updates
  gets Gaussian noise with standard deviation ``noise_multiplier * clipping_norm / m``
  (Flower's ``DifferentialPrivacyServerSideFixedClipping``, McMahan et al. 2018). Epsilon is the
  RDP bound of the subsampled Gaussian mechanism with sampling rate ``m / C`` over the rounds run.
- ``"nbafl"`` (:class:`NbAFLMechanism`): noising before model aggregation (Wei et al. 2020) exactly as FederatedScope runs it,
  where the FederatedTrust prototype ran; see :class:`NbAFL`. No accounting: the record reports the
  nominal ``target_epsilon`` that the noise scales are derived from.

The accounting of ``local`` and ``server`` uses Opacus's RDP accountant.
"""

from __future__ import annotations

import functools
import logging
import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
from torch import nn

from fltrust import registry
from fltrust.algorithms.aggregation import clip_update
from fltrust.config import ConfigError, PrivacyConfig
from fltrust.core.records import Params

log = logging.getLogger("fltrust")

NBAFL_NOISE_OFFSET = 1000
"""Seed offset of a client's NbAFL upload noise (training streams use offsets 0 and 1)."""


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
    diffs = ([p.astype(np.float64) - g.astype(np.float64) for p, g in zip(params, global_params)] for params in param_sets)
    updates, norms = zip(*(clip_update(d, clipping_norm) for d in diffs))
    m = len(updates)
    std = noise_multiplier * clipping_norm / m
    new = []
    for i, g in enumerate(global_params):
        if np.issubdtype(g.dtype, np.floating):  # the clipped mean update plus noise, in float64
            mean_update = sum(u[i] for u in updates) / m + rng.normal(0.0, std, size=g.shape)
            new.append((g.astype(np.float64) + mean_update).astype(g.dtype))
        else:
            new.append(g.copy())
    return new, {"update_norms": list(norms), "noise_std": std}


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
    return [(p.astype(np.float64) + rng.normal(0.0, std, size=p.shape)).astype(p.dtype)
            if t and std > 0 and np.issubdtype(p.dtype, np.floating) else p.copy() for p, t in zip(params, trainable)]


# --------------------------------------------------------------------------------------------
# The mechanisms
# --------------------------------------------------------------------------------------------
@dataclass
class LocalDP:
    """Opacus DP-SGD settings for one client run (noise fixed for the whole run)."""

    noise_multiplier: float
    max_grad_norm: float


@dataclass(frozen=True)
class PrivacyRun:
    """The facts of a run a mechanism calibrates its noise from (built by :mod:`fltrust.experiment`).

    Attributes
    ----------
    rounds : int
        T, ``training.rounds``.
    local_epochs, batch_size : int
        ``training.local_epochs`` and ``training.batch_size``.
    num_clients : int
        N, the federation's clients.
    clients_per_round : int
        K (or m), the clients sampled per round.
    client_sizes : tuple of int
        Every client's training rows.
    seed : int
        The run seed (``ExperimentConfig.effective_seed()``); the server-side noise derives from it.
    """

    rounds: int
    local_epochs: int
    batch_size: int
    num_clients: int
    clients_per_round: int
    client_sizes: tuple[int, ...]
    seed: int


@dataclass(frozen=True)
class CentralNoise:
    """Server-side fixed clipping plus Gaussian noise on the mean (McMahan et al. 2018), as an engine
    implements it: each update clipped to ``clipping_norm``, equal client weights, noise std
    ``noise_multiplier * clipping_norm / m`` (the Flower engine wraps its strategy in Flower's
    ``DifferentialPrivacyServerSideFixedClipping``)."""

    clipping_norm: float
    noise_multiplier: float


class StrategyTraits(Protocol):
    """What a mechanism's :meth:`~PrivacyMechanism.check` reads of a strategy class
    (:class:`fltrust.algorithms.strategies.Strategy`)."""

    name: str
    local_proximal_term: bool

    @classmethod
    def aggregates_by_mean(cls) -> bool: ...


class TrainingClient(Protocol):
    """What a mechanism's :meth:`~PrivacyMechanism.train` uses of a client
    (:class:`fltrust.engines.client.SimulatedClient`)."""

    client_id: int
    num_samples: int
    x: Any
    y: Any
    trainer: Any  # fltrust.engines.training.LocalTrainer

    def seed(self, offset: int = 0) -> int: ...

    def fit(self, params: Params, *, seed_offset: int = 0, **kwargs: Any) -> tuple[Params, float]:
        """Plain local training on the client's data (no privacy).

        Parameters
        ----------
        params : Params
            The model training starts from.
        seed_offset : int
            The client's random stream this round.
        **kwargs
            :meth:`fltrust.engines.training.LocalTrainer.train` keywords.

        Returns
        -------
        tuple of (Params, float)
        """


class PrivacyMechanism:
    """Base class of the privacy mechanisms; on its own it changes nothing (``privacy.mode: none``).

    A subclass sets :attr:`name` (its ``privacy.mode``), registers with
    ``@registry.PRIVACY_MECHANISMS.register`` and overrides the hooks it needs. The engine calls
    them in this order in every round: :meth:`broadcast` (the model the clients receive),
    :meth:`train` (each client's local training, where the strategy asks for private training),
    :meth:`aggregate` (the new global model), :meth:`epsilon` and :meth:`round_metrics` (the round's
    server metrics).

    Attributes
    ----------
    name : str
        The ``privacy.mode`` it registers under.
    engines : tuple of str
        The ``run.engine`` values it runs on (a mechanism that changes the broadcast or the
        aggregation runs in-process only unless an engine implements it).
    sequential : str or None
        Why the round's clients must train one after another, for a mechanism that overrides
        :meth:`train` (see :meth:`sequential_reason`).
    differential_privacy : bool
        Whether the mechanism is differentially private (the FactSheet's
        ``configuration/differential_privacy``; then ``target_epsilon`` is its budget).
    """

    name: ClassVar[str] = "none"
    engines: ClassVar[tuple[str, ...]] = ("inprocess",)
    sequential: ClassVar[str | None] = None
    differential_privacy: ClassVar[bool] = False

    # -- construction and checks ----------------------------------------------------------------
    @classmethod
    def from_settings(cls, settings: PrivacyConfig, run: PrivacyRun, model: nn.Module) -> PrivacyMechanism:
        """The mechanism of a run, calibrated from its ``privacy`` section and the run's facts.

        Parameters
        ----------
        settings : PrivacyConfig
            The ``privacy`` section.
        run : PrivacyRun
            Rounds, clients, client sizes, seed.
        model : torch.nn.Module
            The (prepared, :meth:`prepare_model`) model the run trains.

        Returns
        -------
        PrivacyMechanism
        """
        return cls()

    @classmethod
    def check(cls, settings: PrivacyConfig, *, strategy: StrategyTraits, engine: str) -> None:
        """Raise :class:`~fltrust.config.ConfigError` when the mechanism cannot run with this
        strategy or engine (the base class: only the engines of :attr:`engines`).

        Parameters
        ----------
        settings : PrivacyConfig
            The ``privacy`` section.
        strategy : type
            The strategy class (its ``name``, ``local_proximal_term`` and ``aggregates_by_mean()``).
        engine : str
            ``run.engine``.
        """
        if engine not in cls.engines:
            raise ConfigError(f"privacy.mode={cls.name!r} runs on run.engine {list(cls.engines)} only; "
                              f"set run.engine={cls.engines[0]}")

    @classmethod
    def prepare_model(cls, model: nn.Module) -> nn.Module:
        """The model the run trains, adapted to the mechanism (the base class: ``model`` itself).

        Parameters
        ----------
        model : torch.nn.Module
            The architecture as built.

        Returns
        -------
        torch.nn.Module
        """
        return model

    # -- what it tells the engine -------------------------------------------------------------
    def sequential_reason(self) -> str | None:
        """Why the round's clients must train one after another (``None``: they may train side by
        side, :mod:`fltrust.engines.vectorized`). A mechanism that wraps a client's training
        (overrides :meth:`train`) trains clients one by one: the stacked path does not run it.

        Returns
        -------
        str or None
        """
        if type(self).train is PrivacyMechanism.train:
            return None
        return self.sequential or f"{type(self).__name__} wraps each client's training (sequential path)"

    @property
    def central_noise(self) -> CentralNoise | None:
        """Server-side clipping and noise an engine applies around its aggregation (``None``: none)."""
        return None

    def describe(self) -> str:
        """One line for logs and the run summary (``summary.json``'s ``privacy``)."""
        return "no differential privacy"

    # -- one round ------------------------------------------------------------------------------
    def broadcast(self, params: Params, round_: int) -> Params:
        """The model the round's clients receive (the base class: ``params`` itself, not copied).

        Parameters
        ----------
        params : Params
            The global model.
        round_ : int
            The round (seeds any noise, with the run seed).

        Returns
        -------
        Params
        """
        return params

    def train(self, client: TrainingClient, params: Params, *, seed_offset: int = 0,
              **kwargs: Any) -> tuple[Params, float]:
        """A client's private local training (the base class: plain training, ``client.fit``).

        Parameters
        ----------
        client : TrainingClient
            The client (its data, seeds and trainer).
        params : Params
            The model training starts from (not modified).
        seed_offset : int
            Selects the client's random stream this round.
        **kwargs
            :meth:`fltrust.engines.training.LocalTrainer.train` keywords (``epochs`` required).

        Returns
        -------
        tuple of (Params, float)
            The model the client sends and its last-epoch mean training loss.
        """
        return client.fit(params, seed_offset=seed_offset, **kwargs)

    def aggregate(self, strategy: Any, global_params: Params, results: list, server_loss: float,
                  round_: int) -> Params:
        """The round's new global model (the base class: the strategy's aggregation).

        Parameters
        ----------
        strategy : fltrust.algorithms.strategies.Strategy
            The run's strategy.
        global_params : Params
            The model the clients received.
        results : list of ClientResult
            The updates that arrived.
        server_loss : float
            The loss of ``global_params`` on the server's auxiliary set.
        round_ : int
            The round (seeds any noise, with the run seed).

        Returns
        -------
        Params
        """
        return strategy.aggregate(global_params, results, server_loss)

    def epsilon(self, rounds_done: int) -> float | None:
        """The privacy budget spent after ``rounds_done`` rounds (``None``: no differential privacy).

        Parameters
        ----------
        rounds_done : int

        Returns
        -------
        float or None
        """
        return None

    def round_metrics(self, received: Params, new: Params, num_samples: list[int]) -> dict[str, float]:
        """The mechanism's server metrics of a round (the base class: none).

        Parameters
        ----------
        received : Params
            The model the clients received (:meth:`broadcast`'s result).
        new : Params
            The aggregated model.
        num_samples : list of int
            The training rows of each of the round's clients.

        Returns
        -------
        dict of str to float
        """
        return {}

    # -- accounting state (local DP: each client's accountant history) ---------------------------
    def accounting(self, client_id: int) -> list[list[float]]:
        """One client's accounting entries (``[noise, rate, steps]``; the base class keeps none)."""
        return []

    def add_accounting(self, client_id: int, entries: list[list[float]]) -> None:
        """Merge a client's accounting entries (its own training, or a Flower client's reply).

        Parameters
        ----------
        client_id : int
        entries : list of [float, float, int]
            Accountant entries ``[noise_multiplier, sample_rate, steps]``.
        """
        return None

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps (the base class: ``{}``)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (``{}`` clears the accounting)."""
        return None


@registry.PRIVACY_MECHANISMS.register
class NoPrivacy(PrivacyMechanism):
    """No differential privacy (``privacy.mode: none``)."""

    name = "none"
    engines = ("inprocess", "flower")


@registry.PRIVACY_MECHANISMS.register
class LocalDPSGD(PrivacyMechanism):
    """DP-SGD on every client with Opacus (``privacy.mode: local``; Abadi et al. 2016).

    :meth:`from_settings` calibrates the noise so that a client selected in every round
    (``rounds * local_epochs`` epochs at sampling rate ``batch_size / n_min``, n_min the smallest
    client) spends at most ``target_epsilon``. :meth:`train` runs Opacus for ``epochs`` epochs on
    the client's stream 0 (proximal terms are not supported) and merges the accountant's entries
    into the client's history; :meth:`epsilon` is the largest epsilon any client spent.

    Parameters
    ----------
    noise_multiplier : float
        The calibrated noise multiplier (:meth:`from_settings`).
    max_grad_norm : float
        Per-sample gradient clipping norm.
    delta : float
        The target delta of the accounting.
    target_epsilon : float
        The budget the noise was calibrated to (for :meth:`describe`).
    """

    name = "local"
    differential_privacy = True
    engines = ("inprocess", "flower")
    sequential = "local DP-SGD (Opacus) trains one client at a time"

    def __init__(self, *, noise_multiplier: float, max_grad_norm: float, delta: float, target_epsilon: float) -> None:
        self.dp = LocalDP(noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm)
        self.delta = float(delta)
        self.target_epsilon = float(target_epsilon)
        self.histories: dict[str, list[list[float]]] = {}

    @classmethod
    def from_settings(cls, settings: PrivacyConfig, run: PrivacyRun, model: nn.Module) -> LocalDPSGD:
        rate = min(1.0, run.batch_size / max(1, min(run.client_sizes)))
        steps = int(np.ceil(1 / rate)) * run.local_epochs * run.rounds
        noise = calibrate_noise(settings.target_epsilon, settings.delta, rate, steps)
        log.info("local DP: noise multiplier %.4f for epsilon %.3g", noise, settings.target_epsilon)
        return cls(noise_multiplier=noise, max_grad_norm=settings.max_grad_norm, delta=settings.delta,
                   target_epsilon=settings.target_epsilon)

    @classmethod
    def check(cls, settings: PrivacyConfig, *, strategy: StrategyTraits, engine: str) -> None:
        if strategy.local_proximal_term:  # Opacus's private training has no proximal term
            raise ConfigError(f"privacy.mode='local' is not supported with strategy.name={strategy.name!r}; "
                              "use fedavg or fedmedian")
        super().check(settings, strategy=strategy, engine=engine)

    @classmethod
    def prepare_model(cls, model: nn.Module) -> nn.Module:
        """``opacus.validators.ModuleValidator.fix``: BatchNorm -> GroupNorm for DP-SGD."""
        from opacus.validators import ModuleValidator

        return ModuleValidator.fix(model)

    def describe(self) -> str:
        return (f"local DP-SGD (Opacus, RDP accountant), target epsilon {self.target_epsilon}, "
                f"delta {self.delta}, max grad norm {self.dp.max_grad_norm}")

    def train(self, client: TrainingClient, params: Params, *, seed_offset: int = 0,
              **kwargs: Any) -> tuple[Params, float]:
        new, loss, history = client.trainer.train_private(params, client.x, client.y, epochs=kwargs["epochs"],
                                                          seed=client.seed(), dp=self.dp)
        self.add_accounting(client.client_id, history)
        return new, loss

    def epsilon(self, rounds_done: int) -> float | None:
        return max((epsilon_from_history(h, self.delta) for h in self.histories.values()), default=0.0)

    def accounting(self, client_id: int) -> list[list[float]]:
        return self.histories.get(str(client_id), [])

    def add_accounting(self, client_id: int, entries: list[list[float]]) -> None:
        key = str(client_id)
        self.histories[key] = merge_history(self.histories.get(key, []), entries)

    def state_dict(self) -> dict[str, Any]:
        """Every client's accountant history, ``{str(client_id): [[noise, rate, steps], ...]}``."""
        return dict(self.histories)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.histories = dict(state)


@registry.PRIVACY_MECHANISMS.register
class ServerSideDP(PrivacyMechanism):
    """Server-side fixed clipping plus Gaussian noise on the mean (``privacy.mode: server``;
    :func:`server_dp_aggregate`, McMahan et al. 2018).

    :meth:`from_settings` takes ``privacy.noise_multiplier``, else calibrates it to
    ``target_epsilon`` over the run's rounds at sampling rate m / C. :meth:`aggregate` replaces the
    strategy's rule: each update clipped, equal weights, noise drawn from ``(seed, round, 13)``.
    :meth:`epsilon` is the RDP bound of the subsampled Gaussian mechanism over the rounds done.

    Parameters
    ----------
    clipping_norm : float
        Each update's clipping norm.
    noise_multiplier : float
        Noise std relative to ``clipping_norm`` (given, or calibrated by :meth:`from_settings`).
    delta, target_epsilon : float
        The accounting's delta and the budget (for :meth:`describe`).
    sample_rate : float
        m / C, the subsampling rate of the accounting.
    seed : int
        The run seed (the noise of round k is drawn from ``(seed, k, 13)``).
    """

    name = "server"
    differential_privacy = True
    engines = ("inprocess", "flower")

    def __init__(self, *, clipping_norm: float, noise_multiplier: float, delta: float, target_epsilon: float,
                 sample_rate: float, seed: int) -> None:
        self.clipping_norm = float(clipping_norm)
        self.noise_multiplier = float(noise_multiplier)
        self.delta = float(delta)
        self.target_epsilon = float(target_epsilon)
        self.sample_rate = float(sample_rate)
        self.seed = int(seed)

    @classmethod
    def from_settings(cls, settings: PrivacyConfig, run: PrivacyRun, model: nn.Module) -> ServerSideDP:
        rate = run.clients_per_round / run.num_clients
        noise = settings.noise_multiplier
        if noise is None:
            noise = calibrate_noise(settings.target_epsilon, settings.delta, rate, run.rounds)
        return cls(clipping_norm=settings.clipping_norm, noise_multiplier=noise, delta=settings.delta,
                   target_epsilon=settings.target_epsilon, sample_rate=rate, seed=run.seed)

    @classmethod
    def check(cls, settings: PrivacyConfig, *, strategy: StrategyTraits, engine: str) -> None:
        if not strategy.aggregates_by_mean():
            raise ConfigError(f"privacy.mode='server' clips and averages updates (FedAvg); it cannot wrap "
                              f"strategy.name={strategy.name!r}")
        if settings.secure_aggregation == "secagg+":
            raise ConfigError("privacy.secure_aggregation='secagg+' hides the individual updates that "
                              "privacy.mode='server' clips; use privacy.mode=local or none")
        super().check(settings, strategy=strategy, engine=engine)

    @property
    def central_noise(self) -> CentralNoise:
        return CentralNoise(self.clipping_norm, self.noise_multiplier)

    def describe(self) -> str:
        return (f"server-side fixed clipping (norm {self.clipping_norm}) + Gaussian noise, "
                f"target epsilon {self.target_epsilon}, delta {self.delta}")

    def aggregate(self, strategy: Any, global_params: Params, results: list, server_loss: float,
                  round_: int) -> Params:
        new, _ = server_dp_aggregate(global_params, [r.params for r in results], clipping_norm=self.clipping_norm,
                                     noise_multiplier=self.noise_multiplier,
                                     rng=np.random.default_rng([self.seed, round_, 13]))
        return new

    def epsilon(self, rounds_done: int) -> float | None:
        return epsilon_from_history([[self.noise_multiplier, self.sample_rate, rounds_done]], self.delta)


@registry.PRIVACY_MECHANISMS.register
class NbAFLMechanism(PrivacyMechanism):
    """NbAFL as FederatedScope runs it (``privacy.mode: nbafl``; the noise scales: :class:`NbAFL`).

    :meth:`broadcast` clips the global model (and, when ``T > sqrt(N) K``, noises it; noise from
    ``(seed, round, 14)``); :meth:`train` adds NbAFL's proximal term to the client's training, then
    upload noise (the client's stream ``1000 + seed_offset``); :meth:`round_metrics` reports the
    expected upload and aggregate noise norms against the norms of the model and of its change;
    :meth:`epsilon` is the configured epsilon the noise scales derive from (no accounting).

    Parameters
    ----------
    nbafl : NbAFL
        The noise scales of the run.
    trainable : list of bool
        Per ``state_dict`` entry of the model: is it a trainable parameter (:func:`trainable_mask`)?
    seed : int
        The run seed (the broadcast noise of round k is drawn from ``(seed, k, 14)``).
    """

    name = "nbafl"
    differential_privacy = True
    engines = ("inprocess",)
    sequential = "NbAFL's proximal term and upload noise are added client by client (sequential path)"

    def __init__(self, *, nbafl: NbAFL, trainable: list[bool], seed: int) -> None:
        self.nbafl = nbafl
        self.trainable = list(trainable)
        self.seed = int(seed)

    @classmethod
    def from_settings(cls, settings: PrivacyConfig, run: PrivacyRun, model: nn.Module) -> NbAFLMechanism:
        nbafl = nbafl_from_config(settings, rounds=run.rounds, num_clients=run.num_clients,
                                  clients_per_round=run.clients_per_round, local_epochs=run.local_epochs,
                                  client_sizes=list(run.client_sizes))
        return cls(nbafl=nbafl, trainable=trainable_mask(model), seed=run.seed)

    @classmethod
    def check(cls, settings: PrivacyConfig, *, strategy: StrategyTraits, engine: str) -> None:
        if strategy.local_proximal_term:
            raise ConfigError("privacy.mode='nbafl' has its own proximal term (privacy.nbafl_mu); "
                              f"use strategy.name=fedavg instead of {strategy.name}")
        if engine not in cls.engines:
            raise ConfigError("privacy.mode='nbafl' runs in the in-process engine only; set run.engine=inprocess")

    def describe(self) -> str:
        nb = self.nbafl
        return (f"NbAFL as in FederatedScope (weights clipped to {nb.w_clip}, proximal mu {nb.mu}, Gaussian "
                f"noise with constant {nb.constant}), epsilon {nb.epsilon}")

    def broadcast(self, params: Params, round_: int) -> Params:
        return self.nbafl.broadcast(params, self.trainable, np.random.default_rng([self.seed, round_, 14]))

    def train(self, client: TrainingClient, params: Params, *, seed_offset: int = 0,
              **kwargs: Any) -> tuple[Params, float]:
        new, loss = client.fit(params, seed_offset=seed_offset, **kwargs, **self.nbafl.train_kwargs(params))
        rng = np.random.default_rng(client.seed(NBAFL_NOISE_OFFSET + seed_offset))
        return self.nbafl.perturb_upload(new, self.trainable, client.num_samples, rng), loss

    def epsilon(self, rounds_done: int) -> float | None:
        return self.nbafl.epsilon

    def round_metrics(self, received: Params, new: Params, num_samples: list[int]) -> dict[str, float]:
        pairs = [(r, n) for r, n, t in zip(received, new, self.trainable) if t]
        entries = int(sum(n.size for _, n in pairs))
        norms = self.nbafl.noise_norms(num_samples, entries)
        return {"nbafl_upload_noise_norm": norms["upload"], "nbafl_aggregate_noise_norm": norms["aggregate"],
                "weight_norm": float(math.sqrt(sum(float(np.sum(np.square(n, dtype=np.float64))) for _, n in pairs))),
                "update_norm": float(math.sqrt(sum(float(np.sum(np.square(n - r, dtype=np.float64)))
                                                   for r, n in pairs)))}


def privacy_mechanism(mode: str) -> type[PrivacyMechanism]:
    """The mechanism class registered under ``privacy.mode`` -- the one place a mode name is read.

    Parameters
    ----------
    mode : str
        A registered ``privacy.mode``.

    Returns
    -------
    type of PrivacyMechanism

    Raises
    ------
    ConfigError
        If no mechanism is registered under ``mode``.

    Examples
    --------
    >>> privacy_mechanism("nbafl").__name__
    'NbAFLMechanism'
    """
    try:
        return registry.PRIVACY_MECHANISMS[mode]
    except KeyError as exc:
        raise ConfigError(exc.args[0]) from None


def build_privacy(settings: PrivacyConfig, run: PrivacyRun, model: nn.Module) -> PrivacyMechanism:
    """The calibrated mechanism of ``settings.mode`` for a run.

    Parameters
    ----------
    settings : PrivacyConfig
        The ``privacy`` section.
    run : PrivacyRun
        The run's facts.
    model : torch.nn.Module
        The model the run trains (already :meth:`~PrivacyMechanism.prepare_model`-ed).

    Returns
    -------
    PrivacyMechanism
    """
    return privacy_mechanism(settings.mode).from_settings(settings, run, model)

