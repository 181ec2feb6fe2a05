"""Experiment configuration: nested frozen dataclasses loaded from YAML.

One :class:`ExperimentConfig` describes a run completely. It is loaded with
:func:`load_config` (a YAML file plus ``key.path=value`` overrides), validated on
construction, and saved verbatim (``to_dict``) with every run.

Rules
-----
- Unknown keys are errors, never ignored (the message names the key and lists the allowed ones).
- Every choice-valued field names its allowed values when it is wrong.
- ``None`` in a fairness/trust switch means "the mode's default" (see those modules).
- Every float must be finite (NaN and infinities are rejected for every float field, in one place:
  the coercion layer). Strings such as ``"1e-3"`` are accepted for float fields because PyYAML
  (YAML 1.1) reads ``1e-3`` -- an exponent without a decimal point -- as a string.
- YAML syntax errors name ``file:line:column``; a ``--set`` value that is not valid YAML names the
  override.
- The model must accept the dataset's input (checked before any run folder exists): the message
  names the model/dataset pair and the models that fit the dataset.

Example
-------
>>> cfg = ExperimentConfig.from_dict({"data": {"name": "synthetic_nsl_kdd"},
...                                    "partition": {"num_clients": 4}})
>>> cfg.partition.num_clients
4

Spec and bug references ("fairness spec §N", "trust spec §N", "Bn") are defined in ``docs/references.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import re
import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

# the names the sections choose from (modes, strategies, datasets, engines: spelled once, there)
from fltrust.names import (
    DATASETS,
    ENGINES,
    PRIVACY_MODES,
    ROBUST_STRATEGIES,
    STRATEGIES,
    DatasetName,
    EngineName,
    FairnessMode,
    PrivacyMode,
    StrategyName,
    TrustMode,
)

# the metrics' settings (built from metrics.fairness / metrics.trust below) and the one bounded
# repr of error messages; fltrust.settings imports nothing heavy
from fltrust.settings import FairnessSettings, SettingsError, TrustSettings, show


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field and the fix."""


def _choice(section: str, name: str, value: Any, allowed: tuple[Any, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{section}.{name}={show(value)} is not allowed; choose one of {list(allowed)}")


def _positive(section: str, name: str, value: Any, *, allow_zero: bool = False) -> None:
    if value is None:
        return
    if (value < 0) if allow_zero else (value <= 0):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{section}.{name}={show(value)} must be {bound}")


def _at_most(section: str, name: str, value: Any, limit: int, why: str) -> None:
    if value is not None and value > limit:
        raise ConfigError(f"{section}.{name}={show(value)} is too large: at most {limit:,} ({why})")


def _fraction(section: str, name: str, value: Any, *, allow_zero: bool = False) -> None:
    if value is None:
        return
    low_ok = value >= 0 if allow_zero else value > 0
    if not (low_ok and value <= 1):
        raise ConfigError(f"{section}.{name}={show(value)} must lie in {'[0' if allow_zero else '(0'}, 1]")


AUX_SOURCES = ("test", "client_pool")
"""Where the server's auxiliary set D is drawn from (``partition.aux_source``)."""

@dataclass(frozen=True)
class DataConfig:
    """Which dataset, where, and loader options.

    Attributes
    ----------
    name : str
        One of ``DATASETS``. ``synthetic_*`` generate stand-ins of the same shape.
    root : str or None
        Data root; ``None`` means ``$FLTRUST_DATA``, else ``./data``.
    train_files, test_files : list of str or None
        Files (relative to the dataset folder, no ``..``) to read; ``None`` = the loader's default.
        NSL-KDD default: ``KDDTrain+.txt`` / ``KDDTest+.txt``; the fairness paper used the union
        with ``KDDTrain+_20Percent.txt`` / ``KDDTest-21.txt``.
    onehot_order : str
        NSL-KDD categorical columns: ``"global"`` (one fixed order, the correct default),
        ``"per_split"`` (what the fairness authors ran: each client's train split, each client's
        validation split and the auxiliary set one-hot encoded on its own, fairness spec 6.7) or
        ``"per_partition"`` (a client's train and validation rows encoded together; an earlier
        reading of the authors' code, kept for comparison).
    scaling : str
        NSL-KDD continuous columns: ``"fit_train"`` (min-max fitted on the training data, the
        default) or ``"fixed"`` (the fairness authors' fixed maxima table, fairness spec 6.7).
    balance : bool
        N-BaIoT: balance benign/attack 50/50 per client (trust experiment 5).
    synthetic_samples : int
        Training samples of a synthetic dataset (test gets a quarter); at most 2 GiB of float32
        features (e.g. 139,810 CIFAR-10-shaped or 3,520,464 NSL-KDD-shaped samples).
    max_train_samples, max_test_samples : int or None
        Seeded subsample for quick runs (``None`` = all).
    pooled_train_samples : int or None
        Pool the loaded train and test splits and draw a new train split of this many samples
        (seeded); the rest becomes the test split (from which the server's auxiliary set is drawn).
        For data whose own split is not the authors': the CIFAR-10 mirror is a federated
        partition's per-client shares (59,799 images), so 50,000 are drawn for the clients, as the
        authors gave the official 50,000 training images to theirs, and the other 9,799 play the
        10,000-image test batch; FEMNIST iid pools the writers' samples as the authors' builder did.
        ``None`` (default) keeps the loader's split.
    allow_synthetic_fallback : bool
        If the real files are missing, use the synthetic stand-in (and say so) instead of failing.
    standin_calibration : str
        Synthetic N-BaIoT only: ``"none"`` (the default stand-in) or ``"real_partial"`` (each class
        gets the per-feature mean and std of the real ``real_partial/`` rows,
        :func:`fltrust.data.synthetic.synthetic_n_baiot`).
    """

    name: DatasetName = "synthetic_nsl_kdd"
    root: str | None = None
    train_files: list[str] | None = None
    test_files: list[str] | None = None
    onehot_order: str = "global"
    scaling: str = "fit_train"
    balance: bool = False
    synthetic_samples: int = 2000
    max_train_samples: int | None = None
    max_test_samples: int | None = None
    pooled_train_samples: int | None = None
    allow_synthetic_fallback: bool = False
    standin_calibration: str = "none"

    def __post_init__(self) -> None:
        _choice("data", "name", self.name, DATASETS)
        _choice("data", "standin_calibration", self.standin_calibration, ("none", "real_partial"))
        _choice("data", "onehot_order", self.onehot_order, ("global", "per_split", "per_partition"))
        _choice("data", "scaling", self.scaling, ("fit_train", "fixed"))
        _positive("data", "synthetic_samples", self.synthetic_samples)
        _check_synthetic_size(self.name, self.synthetic_samples)
        for name in ("train_files", "test_files"):
            _check_relative_files(name, getattr(self, name))
        _positive("data", "max_train_samples", self.max_train_samples)
        _positive("data", "max_test_samples", self.max_test_samples)
        _positive("data", "pooled_train_samples", self.pooled_train_samples)


SYNTHETIC_MAX_BYTES = 2 * 1024**3
"""Largest synthetic stand-in (float32 features of the train split plus its test quarter)."""


def _check_synthetic_size(dataset: str, samples: int) -> None:
    """``data.synthetic_samples`` within :data:`SYNTHETIC_MAX_BYTES` for the dataset's input shape."""
    from fltrust.data.specs import input_spec

    shape, _ = input_spec(dataset)
    limit = SYNTHETIC_MAX_BYTES // (5 * math.prod(shape))  # 4 bytes per value, 1.25 x for the test quarter
    _at_most("data", "synthetic_samples", samples, limit,
             f"{SYNTHETIC_MAX_BYTES // 1024**3} GiB of float32 features for {dataset.removeprefix('synthetic_')} inputs")


def _check_relative_files(name: str, files: list[str] | None) -> None:
    """``data.train_files`` / ``data.test_files`` name files inside the dataset folder."""
    for i, file in enumerate(files or []):
        parts = Path(file).parts
        if not file or Path(file).is_absolute() or ".." in parts or file.startswith("~"):
            raise ConfigError(f"data.{name}[{i}]={show(file)} must be a path relative to the dataset folder "
                              f"(e.g. 'KDDTrain+.txt'), without '..'; use data.root to read another folder")


@dataclass(frozen=True)
class PartitionConfig:
    """How samples become clients.

    Attributes
    ----------
    num_clients : int
        Number of clients C.
    scheme : str
        ``"iid"`` (shuffled equal shards), ``"dirichlet"`` (label skew, Dirichlet(alpha)),
        ``"natural"`` (one client per writer/device; C must not exceed the natural clients).
    alpha : float
        Dirichlet concentration; smaller = more skew.
    min_partition_size : int
        Dirichlet: redraw until every client has at least this many samples.
    self_balancing : bool
        Dirichlet: stop giving a class to clients that already hold more than the average
        (flwr-datasets' ``self_balancing``, used by the fairness authors).
    val_fraction : float
        Share of each client's data held out as its local validation set (rounded up).
    aux_fraction : float
        Share of the test split used as the server's auxiliary set D (seeded draw).
    aux_max_samples : int or None
        Cap on |D|.
    aux_source : {"test", "client_pool"}
        Where D is drawn from. ``"test"`` (default): the test split, disjoint from every client's
        data (fairness spec 9). ``"client_pool"``: the clients' own data (training and
        validation rows of all clients; ``aux_fraction`` is then a share of that pool), the
        overlap of the authors' FEMNIST iid builder (fairness spec 6.6: ~60 % of client samples
        also lie in D). A switch for experiments on that leakage; no Table 3 config uses it.
    seed : int or None
        Partition seed; ``None`` = ``run.seed``.
    """

    num_clients: int = 10
    scheme: str = "iid"
    alpha: float = 0.5
    min_partition_size: int = 10
    self_balancing: bool = True
    val_fraction: float = 0.1
    aux_fraction: float = 1.0
    aux_max_samples: int | None = None
    aux_source: str = "test"
    client_splits: list[float] | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        _positive("partition", "num_clients", self.num_clients)
        _choice("partition", "aux_source", self.aux_source, AUX_SOURCES)
        _choice("partition", "scheme", self.scheme, ("iid", "dirichlet", "natural"))
        _positive("partition", "alpha", self.alpha)
        _positive("partition", "min_partition_size", self.min_partition_size, allow_zero=True)
        _fraction("partition", "val_fraction", self.val_fraction, allow_zero=True)
        if self.val_fraction >= 1:
            raise ConfigError("partition.val_fraction must be < 1 so that clients keep training data")
        _fraction("partition", "aux_fraction", self.aux_fraction)
        _positive("partition", "aux_max_samples", self.aux_max_samples)
        if self.client_splits is not None:
            shares = list(self.client_splits)
            if len(shares) != 3 or any(not isinstance(v, (int, float)) or v < 0 for v in shares) \
                    or abs(sum(shares) - 1) > 1e-9 or shares[0] <= 0 or shares[2] <= 0:
                raise ConfigError(
                    f"partition.client_splits={self.client_splits!r} must be three shares [train, val, test] that are "
                    "non-negative and sum to 1, with train and test above 0 (FederatedScope: [0.6, 0.2, 0.2])"
                )


@dataclass(frozen=True)
class ModelConfig:
    """Model architecture, by registry name (see :mod:`fltrust.models`)."""

    name: str = "nsl_kdd_mlp"

    def __post_init__(self) -> None:
        from fltrust.models import MODELS

        _choice("model", "name", self.name, tuple(sorted(MODELS)))


@dataclass(frozen=True)
class StrategyConfig:
    """Aggregation strategy and client sampling.

    Attributes
    ----------
    name : str
        One of ``STRATEGIES``.
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
        authors ran, fairness spec 5.2); ``"qffl"``: each client's own loss of theta_k on its
        training data (Li et al. 2020, the q-FFL paper).
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
    """

    name: StrategyName = "fedavg"
    fraction_fit: float | None = 0.5
    clients_per_round: int | None = None
    weighting: str = "samples"
    q: float = 0.2
    qffl_learning_rate: float = 0.1
    qfedavg_variant: str = "flower_legacy"
    ditto_lambda: float = 0.8
    ditto_lr: float = 0.01
    ditto_epochs: int = 10
    ditto_anchor: str = "local"
    proximal_mu: float = 0.01
    num_malicious_nodes: int = 0
    num_nodes_to_select: int | None = None
    beta: float = 0.2

    def __post_init__(self) -> None:
        _choice("strategy", "name", self.name, STRATEGIES)
        _positive("strategy", "num_malicious_nodes", self.num_malicious_nodes, allow_zero=True)
        _positive("strategy", "num_nodes_to_select", self.num_nodes_to_select)
        if not 0.0 <= self.beta < 0.5:
            raise ConfigError(f"strategy.beta={self.beta!r} must lie in [0, 0.5) (fraction cut at each end)")
        _fraction("strategy", "fraction_fit", self.fraction_fit)
        _positive("strategy", "clients_per_round", self.clients_per_round)
        if self.fraction_fit is None and self.clients_per_round is None:
            raise ConfigError("set strategy.fraction_fit or strategy.clients_per_round")
        _choice("strategy", "weighting", self.weighting, ("samples", "batches"))
        _positive("strategy", "q", self.q, allow_zero=True)
        _positive("strategy", "qffl_learning_rate", self.qffl_learning_rate)
        _choice("strategy", "qfedavg_variant", self.qfedavg_variant, ("flower_legacy", "qffl"))
        _positive("strategy", "ditto_lambda", self.ditto_lambda, allow_zero=True)
        _positive("strategy", "ditto_lr", self.ditto_lr)
        _positive("strategy", "ditto_epochs", self.ditto_epochs, allow_zero=True)
        _choice("strategy", "ditto_anchor", self.ditto_anchor, ("local", "global"))
        _positive("strategy", "proximal_mu", self.proximal_mu, allow_zero=True)


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
        (:mod:`fltrust.fl.vectorized`) and batch the per-client evaluations: ``"auto"`` (where it
        applies: not with local DP-SGD, BatchNorm models or one client per round -- those train
        sequentially), ``"on"`` (an error where it does not apply) or ``"off"`` (one client after
        another). Same batch orders and optimiser math as the sequential path; results agree to
        float32 rounding. A speed switch: it is not part of the run id.
    """

    rounds: int = 5
    local_epochs: int = 1
    batch_size: int = 32
    optimizer: str = "adam"
    learning_rate: float = 1e-3
    momentum: float = 0.0
    weight_decay: float = 0.0
    grad_clip: float | None = None
    loss_scaling: str = "mean"
    vectorize: str = "auto"

    def __post_init__(self) -> None:
        _positive("training", "rounds", self.rounds)
        _positive("training", "local_epochs", self.local_epochs)
        _positive("training", "batch_size", self.batch_size)
        _choice("training", "optimizer", self.optimizer, ("adam", "sgd"))
        _positive("training", "learning_rate", self.learning_rate)
        _positive("training", "momentum", self.momentum, allow_zero=True)
        _positive("training", "weight_decay", self.weight_decay, allow_zero=True)
        _positive("training", "grad_clip", self.grad_clip)
        _choice("training", "loss_scaling", self.loss_scaling, ("mean", "per_batch_sum"))
        _choice("training", "vectorize", self.vectorize, ("auto", "on", "off"))


@dataclass(frozen=True)
class PrivacyConfig:
    """Differential privacy.

    Attributes
    ----------
    mode : str
        ``"none"``; ``"local"`` = DP-SGD on every client with Opacus, noise calibrated so that
        a client that trains in every round spends at most ``target_epsilon``; ``"server"`` =
        server-side fixed clipping of client updates plus Gaussian noise on their mean;
        ``"nbafl"`` = NbAFL as FederatedScope implements it (:class:`fltrust.fl.privacy.NbAFL`):
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
        rounding of each client's weighted update; see ``fltrust.flower.engine``).
    """

    mode: PrivacyMode = "none"
    target_epsilon: float = 10.0
    delta: float = 1e-5
    max_grad_norm: float = 1.0
    clipping_norm: float = 1.0
    noise_multiplier: float | None = None
    nbafl_mu: float = 0.0
    nbafl_w_clip: float = 1.0
    nbafl_constant: float = 30.0
    secure_aggregation: str | None = None
    secagg_num_shares: float = 1.0
    secagg_reconstruction_threshold: float = 0.67
    secagg_clipping_range: float = 8.0
    secagg_quantization_range: int = 4194304

    def __post_init__(self) -> None:
        _choice("privacy", "mode", self.mode, PRIVACY_MODES)
        _choice("privacy", "secure_aggregation", self.secure_aggregation, (None, "none", "secagg+"))
        _fraction("privacy", "secagg_num_shares", self.secagg_num_shares)
        _fraction("privacy", "secagg_reconstruction_threshold", self.secagg_reconstruction_threshold)
        _positive("privacy", "secagg_clipping_range", self.secagg_clipping_range)
        _positive("privacy", "secagg_quantization_range", self.secagg_quantization_range)
        _positive("privacy", "target_epsilon", self.target_epsilon)
        _fraction("privacy", "delta", self.delta)
        _positive("privacy", "max_grad_norm", self.max_grad_norm)
        _positive("privacy", "clipping_norm", self.clipping_norm)
        _positive("privacy", "noise_multiplier", self.noise_multiplier, allow_zero=True)
        _positive("privacy", "nbafl_mu", self.nbafl_mu, allow_zero=True)
        _positive("privacy", "nbafl_w_clip", self.nbafl_w_clip)
        _positive("privacy", "nbafl_constant", self.nbafl_constant)


@dataclass(frozen=True)
class FairnessConfig:
    """Federated Fairness Analytics metrics (see :mod:`fltrust.metrics.fairness`).

    ``mode`` picks the defaults of every switch; a switch set to a value overrides its mode default.

    Attributes
    ----------
    enabled : bool
        Attach the fairness observer.
    mode : str
        ``"faithful"`` (what produced the paper's Table 3) or ``"corrected"``.
    shapley : str
        ``"exact"`` (all coalitions), ``"monte_carlo"`` (plain permutation sampling),
        ``"permutation"`` (guided permutation sampling with a control variate: about 91 coalition
        models instead of 1,023 at 10 participants) or ``"auto"`` (exact up to
        ``shapley_auto_exact_players`` participants, else ``"permutation"``); see
        :func:`fltrust.metrics.shapley.federated_shapley`.
    shapley_permutations : int
        ``"monte_carlo"`` budget (permutations per round).
    exact_max_players : int
        With ``shapley="exact"``, rounds with more participants fall back to Monte Carlo (with a
        warning).
    shapley_auto_exact_players : int
        ``shapley="auto"``: exact up to this many participants.
    shapley_sampler_permutations : int
        ``"permutation"`` budget (permutations per round).
    shapley_truncation : float
        ``"permutation"``: truncation tolerance, a fraction of ``|U(S)|`` (0 = off).
    sensitive_attributes : list of int or None
        Attribute positions of the group-fairness notion (``None`` = per dataset/strategy as the
        authors coded, fairness spec 4).
    shapley_include_empty, coalition_weighting, nonpositive_policy, reward, group_metric
        Individual corrections; ``None`` = the mode's default.
    notion_weights : list of float
        Weights of (f_j, f_g, f_r, f_o) in F_T (paper Eqs. 12-13); equal by default.
    aux_batch_size : int or None
        Aux-set samples per forward pass of the FedSV coalition evaluation (all coalition models
        at once); ``None`` = automatic (about 32 MB of activations on CPU, 1 GB on CUDA). Speed
        and memory only: with
        ``training.loss_scaling: per_batch_sum`` the losses are still summed per mini-batch of
        ``training.batch_size``, as the authors did. Not part of the run id.
    """

    enabled: bool = False
    mode: FairnessMode = "faithful"
    shapley: str = "exact"
    shapley_permutations: int = 200
    exact_max_players: int = 10
    shapley_auto_exact_players: int = 6
    shapley_sampler_permutations: int = 10
    shapley_truncation: float = 0.0
    sensitive_attributes: list[int] | None = None
    shapley_include_empty: bool | None = None
    coalition_weighting: str | None = None
    nonpositive_policy: str | None = None
    reward: str | None = None
    group_metric: str | None = None
    notion_weights: list[float] = field(default_factory=lambda: [0.25, 0.25, 0.25, 0.25])
    aux_batch_size: int | None = None

    def __post_init__(self) -> None:
        fairness_settings(self)  # the settings' checks are the only ones (fltrust.settings)


@dataclass(frozen=True)
class TrustConfig:
    """FederatedTrust FactSheet and scoring (see :mod:`fltrust.trust`).

    Attributes
    ----------
    enabled : bool
        Attach the FactSheet observer and score the run at the end.
    mode : str
        ``"prototype"`` (the authors' released code), ``"paper"`` (normalisations that best
        reproduce the paper's Figures 4-5), ``"fixed"`` (every spec-9 fix) or ``"extended"``
        (all 36 taxonomy metrics plus nebula's sustainability pillar, measured where the kit can;
        see ``fltrust/trust/definitions/extended.yaml``).
    metrics_file : str or None
        A user's own pillar/notion/metric definition (YAML or JSON); ``None`` = the packaged one.
    clever_samples : int
        Test points for CLEVER (0 disables).
    clever_nb_batches, clever_batch_size, clever_radius, clever_norm, clever_pool_factor
        ART ``clever_u`` parameters (defaults as in the prototype, trust spec 3.10).
    shap_background, shap_samples : int
        SHAP DeepExplainer background and explained sample counts (prototype: 8 and 2).
    shap_nsamples : int
        Samples per explained input when SHAP falls back to GradientExplainer (models DeepExplainer
        cannot take, e.g. ConvNet2); 200 is SHAP's own default.
    client_selector : str
        Name written to ``participants/client_selector`` (the engine samples uniformly).
    evasion_eps, evasion_samples, evasion_pgd_steps
        Extended mode: L-infinity budget, test samples and PGD iterations of the ART FGSM/PGD
        evasion attacks (empirical robustness; 0 samples disables).
    mia_samples : int
        Extended mode: members and non-members each in the membership-inference attack (0 disables).
    reference_samples : int
        Extended mode: test rows on which the server judges each returned client model
        (client reputation).
    reputation_tolerance : float
        Extended mode: a client interaction is negative when its model's reference loss exceeds
        ``(1 + tolerance)`` times its peers' median.
    country_iso_code : str
        Extended mode: ISO 3166-1 alpha-3 code of where the run executes; CodeCarbon's offline
        grid intensity for it gives the run's emissions (no network access).
    declared : dict
        Extended mode: values only a person can state -- ``testing_coverage`` (0..1),
        ``anonymisation``, ``simplification``, ``model_replacement``, ``encryption`` (see
        ``fltrust.trust.governance.DECLARATIONS``).
    """

    enabled: bool = False
    mode: TrustMode = "prototype"
    metrics_file: str | None = None
    clever_samples: int = 1
    clever_nb_batches: int = 10
    clever_batch_size: int = 5
    clever_radius: float = 2.0
    clever_norm: int = 2
    clever_pool_factor: int = 3
    shap_background: int = 8
    shap_samples: int = 2
    shap_nsamples: int = 200
    client_selector: str = "uniform"
    evasion_eps: float = 0.1
    evasion_samples: int = 200
    evasion_pgd_steps: int = 10
    mia_samples: int = 500
    reference_samples: int = 512
    reputation_tolerance: float = 0.5
    country_iso_code: str = "CHE"
    declared: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        trust_settings(self)  # the settings' checks are the only ones (fltrust.settings)


def _settings(section: str, build):
    """Build a settings object; its :class:`~fltrust.settings.SettingsError` becomes a ConfigError
    naming the YAML key (``metrics.fairness.reward='lifetime' is not allowed; ...``)."""
    try:
        return build()
    except SettingsError as exc:
        raise ConfigError(f"{section}.{exc.field}{exc.detail}") from None


def fairness_settings(config: FairnessConfig) -> FairnessSettings:
    """The :class:`~fltrust.settings.FairnessSettings` of a ``metrics.fairness`` section.

    The one place the YAML keys become the fairness observer's settings (``enabled`` is the
    experiment's business; ``None`` switches stay "the mode's default").

    Parameters
    ----------
    config : FairnessConfig

    Returns
    -------
    FairnessSettings

    Examples
    --------
    >>> fairness_settings(FairnessConfig(mode="corrected", reward="instantaneous")).nonpositive_policy
    'exclude'
    """
    attributes = None if config.sensitive_attributes is None else tuple(config.sensitive_attributes)
    return _settings("metrics.fairness", lambda: FairnessSettings(
        mode=config.mode, shapley_include_empty=config.shapley_include_empty,
        coalition_weighting=config.coalition_weighting, nonpositive_policy=config.nonpositive_policy,
        reward=config.reward, group_metric=config.group_metric, shapley=config.shapley,
        shapley_permutations=config.shapley_permutations, exact_max_players=config.exact_max_players,
        shapley_auto_exact_players=config.shapley_auto_exact_players,
        shapley_sampler_permutations=config.shapley_sampler_permutations,
        shapley_truncation=config.shapley_truncation, notion_weights=tuple(config.notion_weights),
        sensitive_attributes=attributes, aux_batch_size=config.aux_batch_size,
    ))


def trust_settings(config: TrustConfig) -> TrustSettings:
    """The :class:`~fltrust.settings.TrustSettings` of a ``metrics.trust`` section.

    Every key but ``enabled`` carries over by name; the statistic switches take the mode's
    defaults.

    Parameters
    ----------
    config : TrustConfig

    Returns
    -------
    TrustSettings

    Examples
    --------
    >>> trust_settings(TrustConfig(mode="fixed", clever_samples=0)).clever_samples
    0
    """
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name != "enabled"}
    settings = _settings("metrics.trust", lambda: TrustSettings(**values))
    if config.declared:
        from fltrust.trust.governance import DeclarationError, validate_declarations

        try:
            validate_declarations(config.declared)
        except DeclarationError as exc:
            raise ConfigError(str(exc)) from None
    return settings


@dataclass(frozen=True)
class MetricsConfig:
    """Which paper metrics observe the run."""

    fairness: FairnessConfig = field(default_factory=FairnessConfig)
    trust: TrustConfig = field(default_factory=TrustConfig)


@dataclass(frozen=True)
class ProjectConfig:
    """User-supplied FactSheet fields; missing ones are reported, never invented."""

    overview: str = ""
    purpose: str = ""
    background: str = ""
    organisations: list[str] = field(default_factory=list)


ATTACK_KINDS = ("none", "label_flip", "sign_flip", "scale", "backdoor")
DATA_ATTACKS = ("label_flip", "backdoor")
UPDATE_ATTACKS = ("sign_flip", "scale")


@dataclass(frozen=True)
class AttackConfig:
    """Poisoning attack run by malicious clients inside the FL loop (see :mod:`fltrust.attacks`).

    Data-level attacks (``label_flip``, ``backdoor``) rewrite copies of the malicious clients'
    training rows when the federation is built, so every engine trains on them; update-level
    attacks (``sign_flip``, ``scale``) change what a malicious client sends after its local
    training: ``w_sent = theta + s * (w - theta)`` with ``s = -1`` or ``s = scale``.

    Attributes
    ----------
    kind : str
        ``"none"``, ``"label_flip"``, ``"sign_flip"``, ``"scale"`` or ``"backdoor"``.
    malicious_clients : list of int or None
        Ids of the malicious clients; ``None`` = ``num_malicious`` clients drawn with the run seed.
    num_malicious : int
        Number of malicious clients when ``malicious_clients`` is not given.
    scale : float
        ``kind: scale``: the factor s of the update (model-replacement boosting).
    flip_fraction : float
        ``kind: label_flip``: share of each malicious client's training rows whose label is flipped.
    target_label : int or None
        ``backdoor``: the label triggered rows get (default 0). ``label_flip``: ``None`` maps
        y -> K - 1 - y, an int sends every flipped row to that label.
    poison_fraction : float
        ``backdoor``: share of each malicious client's training rows that get the trigger and
        the target label.
    trigger_size : int
        ``backdoor``: tabular data: the first ``trigger_size`` features; images: a
        ``trigger_size`` x ``trigger_size`` patch in the bottom-right corner of every channel.
    trigger_value : float or None
        Value written into the trigger (``None`` = the largest value of the training data).
    """

    kind: str = "none"
    malicious_clients: list[int] | None = None
    num_malicious: int = 0
    scale: float = 10.0
    flip_fraction: float = 1.0
    target_label: int | None = None
    poison_fraction: float = 0.5
    trigger_size: int = 3
    trigger_value: float | None = None

    def __post_init__(self) -> None:
        _choice("attack", "kind", self.kind, ATTACK_KINDS)
        _positive("attack", "num_malicious", self.num_malicious, allow_zero=True)
        _fraction("attack", "flip_fraction", self.flip_fraction)
        _fraction("attack", "poison_fraction", self.poison_fraction)
        _positive("attack", "trigger_size", self.trigger_size)
        _positive("attack", "target_label", self.target_label, allow_zero=True)
        if self.malicious_clients is not None:
            if any(c < 0 for c in self.malicious_clients) or len(set(self.malicious_clients)) != len(self.malicious_clients):
                raise ConfigError(f"attack.malicious_clients={show(self.malicious_clients)} must be distinct client ids >= 0")
        if self.kind != "none" and not (self.malicious_clients or self.num_malicious):
            raise ConfigError(f"attack.kind={self.kind!r} needs attack.num_malicious > 0 or attack.malicious_clients")


@dataclass(frozen=True)
class ReliabilityConfig:
    """Injected system failures of the sampled clients (see :mod:`fltrust.faults`).

    Each sampled client of a round falls in at most one category, drawn from a generator seeded
    by (run seed, round, client id), so both engines inject the same failures.

    Attributes
    ----------
    dropout_rate : float
        Probability that a sampled client drops out: it never trains, nothing arrives.
    failure_rate : float
        Probability that a sampled client's training raises an error (the engine catches it,
        counts it and aggregates the others).
    timeout_rate : float
        Probability that a sampled client trains but its update arrives after the round's
        deadline and is discarded.
    """

    dropout_rate: float = 0.0
    failure_rate: float = 0.0
    timeout_rate: float = 0.0

    def __post_init__(self) -> None:
        for name in ("dropout_rate", "failure_rate", "timeout_rate"):
            _fraction("reliability", name, getattr(self, name), allow_zero=True)
        if self.dropout_rate + self.failure_rate + self.timeout_rate > 1.0:
            raise ConfigError("reliability.dropout_rate + failure_rate + timeout_rate must not exceed 1")

    @property
    def active(self) -> bool:
        """Whether any failure is injected."""
        return self.dropout_rate + self.failure_rate + self.timeout_rate > 0


@dataclass(frozen=True)
class FlowerConfig:
    """Settings of the Flower engine (``run.engine: flower``); names follow Flower's.

    Attributes
    ----------
    num_cpus, num_gpus : float
        Resources of one ClientApp (Flower's ``client_resources``); a fractional ``num_gpus``
        (e.g. 0.25) lets several clients share one GPU.
    num_supernodes : int or None
        Virtual SuperNodes of the simulation (``None`` = ``partition.num_clients``).
    ray_address : str or None
        Address of an existing Ray cluster: ``"auto"``, ``"host:port"`` or ``"ray://host:10001"``;
        ``None`` starts a local Ray instance for the run.
    ditto_personal_store : str
        Where Ditto's personal models live between rounds: ``"server"`` (sent with each training
        message, as the fairness authors stored them) or ``"client"`` (Flower's per-node
        ``context.state``). Both give the same results.
    """

    num_cpus: float = 1.0
    num_gpus: float = 0.0
    num_supernodes: int | None = None
    ray_address: str | None = None
    ditto_personal_store: str = "server"

    def __post_init__(self) -> None:
        _positive("flower", "num_cpus", self.num_cpus)
        _positive("flower", "num_gpus", self.num_gpus, allow_zero=True)
        _positive("flower", "num_supernodes", self.num_supernodes)
        _check_ray_address(self.ray_address)
        _choice("flower", "ditto_personal_store", self.ditto_personal_store, ("server", "client"))


RAY_ADDRESS = re.compile(r"(ray://)?(?P<host>[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):(?P<port>[0-9]{1,5})")
"""``flower.ray_address`` besides ``auto``: ``host:port`` or ``ray://host:port`` (a local Ray is the
unset address, started on loopback by the Flower engine)."""


def _check_ray_address(address: str | None) -> None:
    if address is None or address == "auto":
        return
    match = RAY_ADDRESS.fullmatch(address)
    if match is None or not 1 <= int(match["port"]) <= 65535:
        raise ConfigError(f"flower.ray_address={show(address)} is not a Ray address; use 'auto', "
                          f"'host:port' (e.g. '10.0.0.5:6379') or 'ray://host:port' (Ray Client, e.g. port 10001), "
                          f"or leave it unset to start a local Ray")


RUN_NAME_MAX = 100
RUN_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{RUN_NAME_MAX - 1}}}")
"""Allowed ``run.name``: it starts every run folder's name, so no separators, spaces, control characters."""
TORCH_THREADS_MAX = 1024
"""Largest ``run.torch_threads`` (far more threads make torch's thread pool crash)."""


@dataclass(frozen=True)
class RunConfig:
    """Identity, seeds, device and output of a run.

    Attributes
    ----------
    name : str
        Human-readable experiment name (first part of the run id and of the run folder's name):
        1 to 100 letters, digits, ``.``, ``_`` or ``-``, starting with a letter or digit.
    seed : int
        Master seed (model init, sampling, splits); a repeat r uses ``seed + r``.
    repeat : int
        Repeat index (0-based).
    out_dir : str
        Folder that holds run folders.
    device : str
        ``"auto"`` (CUDA when available, else CPU), ``"cpu"`` or ``"cuda"``.
    engine : str
        ``"inprocess"`` (fltrust's own round loop, the fast single-device path) or ``"flower"``
        (Flower's simulation runtime with the Ray backend; settings in the ``flower`` section).
        Both give the same run folder and metrics.
    progress : bool
        Show a tqdm progress bar.
    checkpoint : bool
        Write a checkpoint after every round so an interrupted run resumes.
    torch_threads : int or None
        CPU threads for torch, 1 to 1024 (``None`` = torch's default). Small models on few cores
        run fastest with 1 thread per process.
    deviations : list of str
        Where this configuration departs from the paper it reproduces (stored with the run and
        printed under every table that uses it).
    """

    name: str = "experiment"
    seed: int = 0
    repeat: int = 0
    out_dir: str = "runs"
    device: str = "auto"
    engine: EngineName = "inprocess"
    progress: bool = True
    checkpoint: bool = True
    torch_threads: int | None = None
    deviations: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        _choice("run", "device", self.device, ("cpu", "cuda", "auto"))
        _choice("run", "engine", self.engine, ENGINES)
        _positive("run", "repeat", self.repeat, allow_zero=True)
        _positive("run", "torch_threads", self.torch_threads)
        _at_most("run", "torch_threads", self.torch_threads, TORCH_THREADS_MAX, "CPU threads of one process")
        if not RUN_NAME.fullmatch(self.name):
            raise ConfigError(
                f"run.name={show(self.name)} must be 1 to {RUN_NAME_MAX} characters: letters, digits, '.', '_' and "
                f"'-', starting with a letter or digit (it becomes the run folder's name)")


@dataclass(frozen=True)
class ExperimentConfig:
    """A complete, validated experiment description."""

    data: DataConfig = field(default_factory=DataConfig)
    partition: PartitionConfig = field(default_factory=PartitionConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    strategy: StrategyConfig = field(default_factory=StrategyConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    attack: AttackConfig = field(default_factory=AttackConfig)
    reliability: ReliabilityConfig = field(default_factory=ReliabilityConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    project: ProjectConfig = field(default_factory=ProjectConfig)
    run: RunConfig = field(default_factory=RunConfig)
    flower: FlowerConfig = field(default_factory=FlowerConfig)

    def __post_init__(self) -> None:
        _check_finite(self, "")
        _check_model_fits_dataset(self.model.name, self.data.name)
        per_round = self.clients_per_round()
        if per_round > self.partition.num_clients:
            raise ConfigError(
                f"strategy.clients_per_round={per_round} exceeds partition.num_clients={self.partition.num_clients}"
            )

        if self.privacy.mode == "local" and self.strategy.name == "fedprox":
            raise ConfigError("privacy.mode='local' is not supported with strategy.name='fedprox'; use fedavg or fedmedian")
        if self.privacy.mode == "server" and self.strategy.name in ("qfedavg", *ROBUST_STRATEGIES):
            raise ConfigError(
                f"privacy.mode='server' clips and averages updates (FedAvg); it cannot wrap strategy.name={self.strategy.name!r}"
            )
        if self.privacy.mode == "nbafl" and self.strategy.name == "fedprox":
            raise ConfigError("privacy.mode='nbafl' has its own proximal term (privacy.nbafl_mu); "
                              "use strategy.name=fedavg instead of fedprox")
        if self.privacy.mode == "nbafl" and self.run.engine == "flower":
            raise ConfigError("privacy.mode='nbafl' runs in the in-process engine only; set run.engine=inprocess")
        self._check_robust(per_round)
        self._check_attack()
        self._check_secure_aggregation()

    def _check_robust(self, per_round: int) -> None:
        s = self.strategy
        f = s.num_malicious_nodes
        if s.name in ("krum", "multikrum") and per_round < 2 * f + 3:
            raise ConfigError(f"strategy.name={s.name!r} with num_malicious_nodes={f} needs clients_per_round >= 2f + 3 = "
                              f"{2 * f + 3} (Blanchard et al. 2017), got {per_round}")
        if s.name == "bulyan" and per_round < 4 * f + 3:
            raise ConfigError(f"strategy.name='bulyan' with num_malicious_nodes={f} needs clients_per_round >= 4f + 3 = "
                              f"{4 * f + 3} (El Mhamdi et al. 2018), got {per_round}")
        if s.name == "multikrum" and s.num_nodes_to_select is not None and s.num_nodes_to_select > per_round:
            raise ConfigError(f"strategy.num_nodes_to_select={s.num_nodes_to_select} exceeds clients_per_round={per_round}")

    def _check_attack(self) -> None:
        a = self.attack
        if a.kind == "none":
            return
        clients = self.partition.num_clients
        bad = [c for c in (a.malicious_clients or []) if c >= clients]
        if bad:
            raise ConfigError(f"attack.malicious_clients {bad} are not client ids (partition.num_clients={clients})")
        if a.malicious_clients is None and a.num_malicious > clients:
            raise ConfigError(f"attack.num_malicious={a.num_malicious} exceeds partition.num_clients={clients}")
        if a.target_label is not None:
            from fltrust.data.specs import input_spec

            num_classes = input_spec(self.data.name)[1]
            if a.target_label >= num_classes:
                raise ConfigError(f"attack.target_label={a.target_label} is not a label of {self.data.name!r} "
                                  f"(labels 0..{num_classes - 1})")

    def _check_secure_aggregation(self) -> None:
        if self.privacy.secure_aggregation != "secagg+":
            return
        if self.run.engine != "flower":
            raise ConfigError("privacy.secure_aggregation='secagg+' runs Flower's SecAgg+ protocol, which the in-process "
                              "engine does not have: set run.engine=flower")
        if self.strategy.name not in ("fedavg", "fedprox"):
            raise ConfigError(f"privacy.secure_aggregation='secagg+' reveals only the weighted sum of the updates; "
                              f"strategy.name={self.strategy.name!r} needs the individual updates: use fedavg or fedprox")
        if self.privacy.mode == "server":
            raise ConfigError("privacy.secure_aggregation='secagg+' hides the individual updates that privacy.mode='server' "
                              "clips; use privacy.mode=local or none")

    # -- derived values -------------------------------------------------------------------
    def clients_per_round(self) -> int:
        """Clients sampled per round (Flower: ``int(C * fraction_fit)``, at least 1)."""
        if self.strategy.clients_per_round is not None:
            return self.strategy.clients_per_round
        assert self.strategy.fraction_fit is not None
        return max(1, int(self.partition.num_clients * self.strategy.fraction_fit))

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (what is saved with every run)."""
        return dataclasses.asdict(self)

    def config_hash(self) -> str:
        """Hash of the settings that differ from the defaults, without run identity.

        Only non-default values enter the hash, so adding a new option (with a default) to the
        kit does not change the ids of existing runs. Seed, repeat, output folder, device,
        threads, progress and checkpoint settings are excluded.
        """
        data = _non_default(self.to_dict(), ExperimentConfig().to_dict())
        for key in ("seed", "repeat", "out_dir", "progress", "device", "checkpoint", "torch_threads"):
            data.get("run", {}).pop(key, None)
        data.pop("flower", None)  # where clients run changes nothing in the results
        data.get("training", {}).pop("vectorize", None)  # speed switches: same results to float rounding
        data.get("metrics", {}).get("fairness", {}).pop("aux_batch_size", None)
        data = {k: v for k, v in data.items() if v != {}}
        blob = json.dumps(data, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:10]

    def run_id(self) -> str:
        """``<name>-<config hash>-s<seed>-r<repeat>``."""
        return f"{self.run.name}-{self.config_hash()}-s{self.run.seed}-r{self.run.repeat}"

    def effective_seed(self) -> int:
        """Seed of this repeat."""
        return self.run.seed + self.run.repeat

    def with_overrides(self, overrides: dict[str, Any]) -> ExperimentConfig:
        """A new config with dotted-path overrides applied (``{"training.rounds": 3}``)."""
        data = self.to_dict()
        apply_overrides(data, overrides)
        return ExperimentConfig.from_dict(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ExperimentConfig:
        """Build and validate from a nested dict; unknown keys raise :class:`ConfigError`."""
        return _build(cls, data or {}, "")

    @classmethod
    def tiny(cls, **sections: dict[str, Any]) -> ExperimentConfig:
        """A seconds-long experiment for tests, docs and trying things out: synthetic NSL-KDD
        (600 rows), 6 iid clients, 3 per round, 3 rounds of 1 local epoch, on the CPU.

        ``sections`` update the matching sections key by key (nested dicts merge), e.g.
        ``ExperimentConfig.tiny(strategy={"name": "ditto"}, metrics={"fairness": {"enabled": True}})``.
        """
        data: dict[str, Any] = {
            "data": {"name": "synthetic_nsl_kdd", "synthetic_samples": 600},
            "partition": {"num_clients": 6, "scheme": "iid"},
            "model": {"name": "nsl_kdd_mlp"},
            "strategy": {"name": "fedavg", "clients_per_round": 3},
            "training": {"rounds": 3, "local_epochs": 1, "batch_size": 32},
            "run": {"name": "tiny", "progress": False, "torch_threads": 1, "device": "cpu"},
        }

        def merge(into: dict[str, Any], new: dict[str, Any]) -> None:
            for key, value in new.items():
                if isinstance(value, dict) and isinstance(into.get(key), dict):
                    merge(into[key], value)
                else:
                    into[key] = value

        merge(data, sections)
        return cls.from_dict(data)

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
        """Load a YAML file and apply dotted-path overrides."""
        return load_config(path, overrides)


def _non_default(data: dict[str, Any], default: dict[str, Any]) -> dict[str, Any]:
    """The entries of nested ``data`` that differ from ``default``."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            sub = _non_default(value, default.get(key, {}))
            if sub:
                out[key] = sub
        elif default.get(key, object()) != value:
            out[key] = value
    return out


def _build(cls: type, data: Any, prefix: str) -> Any:
    """Recursively build dataclass ``cls`` from ``data``, checking keys and types."""
    where = prefix.rstrip(".") or "config"
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"unknown key(s) {[prefix + k for k in unknown]} in {where}; allowed: {sorted(known)}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, value in data.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            kwargs[name] = _build(hint, value, f"{prefix}{name}.")
        else:
            kwargs[name] = _coerce(value, hint, f"{prefix}{name}")
    try:
        return cls(**kwargs)
    except TypeError as exc:  # pragma: no cover - defensive
        raise ConfigError(f"{where}: {exc}") from exc


def _coerce(value: Any, hint: Any, path: str) -> Any:
    """Check ``value`` against a simple type hint; ints are accepted where floats are expected."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:  # a name of fltrust.names: a string here; its section checks the value
        return _coerce(value, type(args[0]), path)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, path)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if errors else f"{path}: invalid value {show(value)}")
    if origin is list:
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list):
            raise ConfigError(f"{path}={show(value)} must be a list")
        return [_coerce(v, args[0], f"{path}[{i}]") for i, v in enumerate(value)] if args else value
    if hint is float:
        if isinstance(value, str):  # YAML 1.1 reads 1e-3 (no decimal point) as a string
            try:
                value = float(value.strip())
            except ValueError:
                raise ConfigError(f"{path}={show(value)} must be a number") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path}={show(value)} must be a number")
        if not math.isfinite(value):
            raise ConfigError(f"{path}={show(value)} must be a finite number (NaN and infinity are not allowed)")
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}={show(value)} must be an integer")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}={show(value)} must be true or false")
        return value
    if hint is str:
        if isinstance(value, bool):  # YAML 1.1: unquoted on/off/yes/no/true/false are booleans
            raise ConfigError(f"{path}={show(value)} must be a string; YAML reads an unquoted on, off, yes, no, "
                              f"true or false as a boolean: quote it, e.g. {path}: 'on' (--set \"{path}='on'\")")
        if not isinstance(value, str):
            hint = "; quote it: YAML read it as a number" if isinstance(value, (int, float)) else ""
            raise ConfigError(f"{path}={show(value)} must be a string{hint}")
        return value
    return value


def _check_finite(obj: Any, prefix: str) -> None:
    """Reject NaN/infinity anywhere in a config built without :func:`_coerce` (direct construction)."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        path = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value):
            _check_finite(value, path + ".")
            continue
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, float) and not math.isfinite(item):
                raise ConfigError(f"{path}={show(value)} must be a finite number (NaN and infinity are not allowed)")


@functools.cache
def model_fits(model: str, input_shape: tuple[int, ...], num_classes: int) -> bool:
    """Whether registered ``model`` runs on inputs of ``input_shape`` (one forward pass of zeros).

    The probe builds the model on the CPU inside ``torch.random.fork_rng`` so that the global
    random state (and hence every seeded run) is unchanged; results are cached per process.
    """
    import torch

    from fltrust.models import MODELS

    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            net = MODELS[model](tuple(input_shape), num_classes).eval()
            out = net(torch.zeros((1, *input_shape)))
    except Exception:  # noqa: BLE001 - any failure means "does not fit"
        return False
    return out.ndim == 2 and out.shape[0] == 1


def _check_model_fits_dataset(model: str, dataset: str) -> None:
    """ConfigError naming the pair and the models that fit, when ``model`` cannot take ``dataset``."""
    from fltrust.data.specs import input_spec
    from fltrust.models import MODELS

    shape, num_classes = input_spec(dataset)
    if model not in MODELS or model_fits(model, shape, num_classes):
        return
    fitting = [name for name in sorted(MODELS) if model_fits(name, shape, num_classes)]
    kind = "images " + "x".join(map(str, shape)) if len(shape) > 1 else f"{shape[0]} tabular features"
    raise ConfigError(
        f"model.name={model!r} does not fit data.name={dataset!r} (inputs are {kind}); "
        f"choose one of {fitting}"
    )


class ConfigLoader(yaml.SafeLoader):
    r"""``yaml.SafeLoader`` that rejects a key given twice in one mapping (PyYAML keeps the last).

    Every config load uses it (:func:`load_config`, ``--set`` values). Keys brought in by a merge
    key (``<<: *defaults``) may be overridden, as YAML intends.

    Examples
    --------
    >>> yaml.load("a: 1\nb: 2", Loader=ConfigLoader)
    {'a': 1, 'b': 2}
    >>> try:
    ...     yaml.load("a: 1\na: 2", Loader=ConfigLoader)
    ... except yaml.YAMLError as exc:
    ...     print(exc.problem)
    duplicate key 'a' (lines 1 and 2): keep one of them
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in first_line:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"duplicate key {show(key)} (lines {first_line[key]} and {line}): keep one of them",
                        key_node.start_mark)
                first_line[key] = line
            except TypeError:  # an unhashable key: SafeLoader's own error follows
                continue
        return super().construct_mapping(node, deep=deep)


def parse_overrides(items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Parse ``["training.rounds=3", "data.name=cifar10"]`` into a dict (values as YAML)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like section.key=value")
        key, raw = item.split("=", 1)
        try:
            out[key.strip()] = yaml.load(raw, Loader=ConfigLoader) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(
                f"--set {item!r}: the value {raw!r} is not valid YAML ({_yaml_problem(exc)}); "
                f"close brackets and quotes, or quote a plain string"
            ) from None
    return out


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """The short reason of a YAML error, without PyYAML's multi-line context."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    return str(problem or exc).strip().splitlines()[0]


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> None:
    """Apply dotted-path overrides to a nested dict in place (unknown paths are caught later)."""
    for dotted, value in overrides.items():
        node = data
        parts = dotted.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override {dotted!r}: {part!r} is not a section")
            node = child
        node[parts[-1]] = value


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
    """Load an :class:`ExperimentConfig` from YAML with optional dotted-path overrides."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config file {str(path)!r} is a folder; pass an experiment YAML file")
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        data = yaml.load(path.read_text(), Loader=ConfigLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: invalid YAML: {_yaml_problem(exc)}; fix the syntax at that line") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"config file {str(path)!r} cannot be read ({why}); check its permissions and encoding") from None
    if data is None:
        raise ConfigError(f"config file {str(path)!r} is empty; write the experiment's sections into it "
                          f"(see fltrust/configs/demo/*.yaml), or '{{}}' for all defaults")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    apply_overrides(data, overrides or {})
    return ExperimentConfig.from_dict(data)


def config_yaml(cfg: ExperimentConfig) -> str:
    """The resolved config as YAML text (what every run folder's ``config.yaml`` holds)."""
    return yaml.safe_dump(cfg.to_dict(), sort_keys=False)


def save_config(cfg: ExperimentConfig, path: str | Path) -> None:
    """Write the resolved config as YAML (atomically)."""
    from fltrust.core.io import atomic_write_text

    atomic_write_text(Path(path), config_yaml(cfg))
