"""The ``strategy``, ``training`` and ``privacy`` sections: how the clients learn and the server aggregates."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fltrust import registry
from fltrust.config.checks import ConfigError, check_fields, fraction, nonnegative, positive
from fltrust.names import (
    DITTO_ANCHORS,
    LOSS_SCALINGS,
    OPTIMIZERS,
    QFEDAVG_VARIANTS,
    SECURE_AGGREGATIONS,
    VECTORIZE,
    WEIGHTINGS,
    DittoAnchor,
    LossScaling,
    OptimizerName,
    QFedAvgVariant,
    SecureAggregation,
    Vectorize,
    Weighting,
)


@dataclass(frozen=True)
class StrategyConfig:
    """Aggregation strategy and client sampling.

    Attributes
    ----------
    name : str
        A registered strategy (:data:`fltrust.registry.STRATEGIES`): the built-ins of
        :data:`fltrust.registry.STRATEGIES`, or one registered at run time before the config is built.
    fraction_fit : float or None
        Share of clients sampled per round; Flower rounds ``int(C * fraction)`` down (min 1).
    clients_per_round : int or None
        Fixed number per round (overrides ``fraction_fit``).
    weighting : str
        FedAvg/FedProx/Ditto aggregation weights: ``"samples"`` or ``"batches"`` (the fairness
        authors returned the number of mini-batches as ``num_examples``).
    q, qffl_learning_rate : float
        q-FedAvg fairness exponent and step ``1/L``.
    qfedavg_variant : str
        ``"flower_legacy"``: one central loss L(theta_k; D) for all clients (what the fairness
        authors ran, fairness spec 5.2; docs/references.md#fairness-5-2); ``"qffl"``: each client's own loss of theta_k
        on its training data (Li et al. 2020, the q-FFL paper).
    ditto_lambda, ditto_lr, ditto_epochs : float, float, int
        Ditto personalisation strength, personal learning rate and personal epochs.
    ditto_anchor : str
        Proximal anchor of the personal update: ``"local"`` (the freshly trained w_n, as the
        fairness authors coded) or ``"global"`` (the received theta_k, as the Ditto paper).
    proximal_mu : float
        FedProx proximal coefficient.
    num_malicious_nodes : int
        Krum, MultiKrum, Bulyan: f, the number of Byzantine updates the rule assumes among the
        updates of a round (Flower's ``num_malicious_nodes``). Krum/MultiKrum need
        ``clients_per_round >= 2f + 3`` (Blanchard et al. 2017), Bulyan ``>= 4f + 3`` (El Mhamdi
        et al. 2018; a round with fewer updates keeps the global model, as Flower's Bulyan does).
    num_nodes_to_select : int or None
        MultiKrum: updates averaged (Flower's ``num_nodes_to_select``); ``None`` =
        ``clients_per_round - num_malicious_nodes`` (Blanchard et al.'s m = n - f).
    beta : float
        TrimmedMean: fraction cut at *each* end of every coordinate, ``int(beta * n)`` values per
        side (Flower's ``FedTrimmedAvg(beta)``, scipy's ``trim_mean``; Yin et al. 2018), in [0, 0.5).
    options : dict of str to Any
        Further keyword arguments of the strategy's constructor, for a strategy whose parameters
        have no field above (``{"norm_bound": 0.5}``); the strategy checks them when it is built
        (:func:`fltrust.algorithms.strategies.build_strategy`). Empty by default, so it enters no
        config hash.
    """

    name: str = "fedavg"  # an open registry, not a Literal: see fltrust.names
    fraction_fit: float | None = 0.5
    clients_per_round: int | None = None
    weighting: Weighting = "samples"
    q: float = 0.2
    qffl_learning_rate: float = 0.1
    qfedavg_variant: QFedAvgVariant = "flower_legacy"
    ditto_lambda: float = 0.8
    ditto_lr: float = 0.01
    ditto_epochs: int = 10
    ditto_anchor: DittoAnchor = "local"
    proximal_mu: float = 0.01
    num_malicious_nodes: int = 0
    num_nodes_to_select: int | None = None
    beta: float = 0.2
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_fields(self, "strategy", name=registry.STRATEGIES.names())
        if not isinstance(self.options, dict) or not all(isinstance(k, str) for k in self.options):
            raise ConfigError(f"strategy.options={self.options!r} must be a mapping of option names to values")
        check_fields(self, "strategy", num_malicious_nodes=nonnegative, num_nodes_to_select=positive)
        if not 0.0 <= self.beta < 0.5:
            raise ConfigError(f"strategy.beta={self.beta!r} must lie in [0, 0.5) (fraction cut at each end)")
        check_fields(self, "strategy", fraction_fit=fraction, clients_per_round=positive)
        if self.fraction_fit is None and self.clients_per_round is None:
            raise ConfigError("set strategy.fraction_fit or strategy.clients_per_round")
        check_fields(self, "strategy", weighting=WEIGHTINGS, q=nonnegative, qffl_learning_rate=positive,
                     qfedavg_variant=QFEDAVG_VARIANTS, ditto_lambda=nonnegative, ditto_lr=positive,
                     ditto_epochs=nonnegative, ditto_anchor=DITTO_ANCHORS, proximal_mu=nonnegative)


@dataclass(frozen=True)
class TrainingConfig:
    """Rounds and local training.

    Attributes
    ----------
    rounds : int
        Training rounds T.
    local_epochs : int
        Local epochs E per round.
    batch_size : int
        Local mini-batch size (also used for evaluation).
    optimizer : str
        ``"adam"`` (new optimiser every round, as the fairness authors) or ``"sgd"``.
    learning_rate, momentum, weight_decay : float
        Optimiser settings.
    grad_clip : float or None
        Clip the gradient norm to this value (FederatedScope's ``grad_clip``).
    loss_scaling : str
        ``"mean"`` or ``"per_batch_sum"`` (see :mod:`fltrust.core.evaluation`).
    vectorize : str
        Train a round's sampled clients side by side as one stacked model
        (:mod:`fltrust.engines.vectorized`) and batch the per-client evaluations: ``"auto"`` (where it
        applies: not with local DP-SGD, BatchNorm models or one client per round -- those train
        sequentially), ``"on"`` (an error where it does not apply) or ``"off"`` (one client after
        another). Same batch orders and optimiser math as the sequential path; results agree to
        float32 rounding. A speed switch: it is not part of the run id.
    """

    rounds: int = 5
    local_epochs: int = 1
    batch_size: int = 32
    optimizer: OptimizerName = "adam"
    learning_rate: float = 1e-3
    momentum: float = 0.0
    weight_decay: float = 0.0
    grad_clip: float | None = None
    loss_scaling: LossScaling = "mean"
    vectorize: Vectorize = "auto"

    def __post_init__(self) -> None:
        check_fields(self, "training", rounds=positive, local_epochs=positive, batch_size=positive, optimizer=OPTIMIZERS,
                     learning_rate=positive, momentum=nonnegative, weight_decay=nonnegative, grad_clip=positive,
                     loss_scaling=LOSS_SCALINGS, vectorize=VECTORIZE)


@dataclass(frozen=True)
class PrivacyConfig:
    """Differential privacy.

    Attributes
    ----------
    mode : str
        A registered privacy mechanism (:data:`fltrust.registry.PRIVACY_MECHANISMS`,
        :mod:`fltrust.algorithms.privacy`): ``"none"``; ``"local"`` = DP-SGD on every client with Opacus, noise calibrated so that
        a client that trains in every round spends at most ``target_epsilon``; ``"server"`` =
        server-side fixed clipping of client updates plus Gaussian noise on their mean;
        ``"nbafl"`` = NbAFL as FederatedScope implements it (:class:`fltrust.algorithms.privacy.NbAFL`):
        the server clips the broadcast weights and, when ``rounds > sqrt(N) * K``, adds noise; each
        client trains with a proximal term and adds Gaussian noise to the model it uploads.
    target_epsilon, delta : float
        Privacy budget. NbAFL: ``target_epsilon`` is FederatedScope's ``nbafl.epsilon`` (default
        100 there) and ``delta`` is unused.
    max_grad_norm : float
        Local DP: per-sample gradient clipping norm.
    clipping_norm : float
        Server DP: clipping norm of each client update.
    noise_multiplier : float or None
        Server DP: noise multiplier; ``None`` = calibrated to ``target_epsilon`` over the run.
    nbafl_mu, nbafl_w_clip, nbafl_constant : float
        NbAFL: FederatedScope's ``nbafl.mu`` (proximal factor, >= 0), ``nbafl.w_clip`` (weight
        clipping threshold) and ``nbafl.constant`` (the noise constant c), with its defaults 0, 1
        and 30. The FederatedTrust prototype's example configs use mu 0.01, w_clip 0.1, constant 1.
    secure_aggregation : str or None
        ``"secagg+"``: the server only learns the weighted sum of the clients' updates, through
        Flower's SecAgg+ protocol (``SecAggPlusWorkflow`` + ``secaggplus_mod``; Bell et al. 2020);
        needs ``run.engine: flower`` and a FedAvg-style mean (``fedavg``, ``fedprox``). Rounds
        that ran it report ``server_metrics["secure_aggregation"] = 1``. ``"none"``: no secure
        aggregation; ``None`` (default): not stated (the extended trust metrics then read
        ``metrics.trust.declared.encryption``).
    secagg_num_shares, secagg_reconstruction_threshold : float
        SecAgg+'s ``num_shares`` and ``reconstruction_threshold`` (a float = a fraction of the
        round's clients / of the shares, as Flower reads them).
    secagg_clipping_range : float
        Parameters are clipped to [-range, range] before quantisation (Flower's ``clipping_range``).
    secagg_quantization_range : int
        Quantisation levels over [-clipping_range, clipping_range] (Flower's
        ``quantization_range``); the aggregate differs from plain FedAvg by at most
        ``m * 2 * clipping_range / quantization_range`` per coordinate for m clients (stochastic
        rounding of each client's weighted update; see ``fltrust.engines.flower.engine``).
    """

    mode: str = "none"  # an open registry, not a Literal: see fltrust.names
    target_epsilon: float = 10.0
    delta: float = 1e-5
    max_grad_norm: float = 1.0
    clipping_norm: float = 1.0
    noise_multiplier: float | None = None
    nbafl_mu: float = 0.0
    nbafl_w_clip: float = 1.0
    nbafl_constant: float = 30.0
    secure_aggregation: SecureAggregation | None = None
    secagg_num_shares: float = 1.0
    secagg_reconstruction_threshold: float = 0.67
    secagg_clipping_range: float = 8.0
    secagg_quantization_range: int = 4194304

    def __post_init__(self) -> None:
        check_fields(self, "privacy", mode=registry.PRIVACY_MECHANISMS.names(),
                     secure_aggregation=(None, *SECURE_AGGREGATIONS), secagg_num_shares=fraction,
                     secagg_reconstruction_threshold=fraction, secagg_clipping_range=positive,
                     secagg_quantization_range=positive, target_epsilon=positive, delta=fraction,
                     max_grad_norm=positive, clipping_norm=positive, noise_multiplier=nonnegative,
                     nbafl_mu=nonnegative, nbafl_w_clip=positive, nbafl_constant=positive)
        if self.mode == "nbafl":
            self._check_nbafl_noise()

    def _check_nbafl_noise(self) -> None:
        """Reject NbAFL settings whose upload noise no float32 model can hold.

        The upload noise std is ``w_clip * T * c / (n_k * epsilon)`` (:class:`fltrust.fl.privacy.NbAFL`),
        at least ``w_clip * c / epsilon / 2**31`` for T >= 1 rounds and n_k < 2**31 rows. When that
        bound passes float32's largest value (3.4e38), every model is NaN/inf after the first upload.
        """
        scale = self.nbafl_w_clip * self.nbafl_constant / self.target_epsilon
        if not scale / 2**31 <= NBAFL_MAX_NOISE_STD:
            raise ConfigError(
                f"privacy.target_epsilon={self.target_epsilon:g} with privacy.nbafl_w_clip={self.nbafl_w_clip:g} and "
                f"privacy.nbafl_constant={self.nbafl_constant:g}: NbAFL's upload noise std w_clip*T*c/(n_k*epsilon) "
                f"would exceed {NBAFL_MAX_NOISE_STD:.3g} (float32's largest value) for any client of fewer than 2^31 "
                f"rows; raise privacy.target_epsilon or lower privacy.nbafl_constant / privacy.nbafl_w_clip"
            )


NBAFL_MAX_NOISE_STD = 3.4028234663852886e38
"""float32's largest value: an NbAFL noise std above it turns every weight into inf (:class:`PrivacyConfig`)."""
