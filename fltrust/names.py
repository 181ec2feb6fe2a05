"""The names fltrust dispatches on, each spelled once, and the defaults of each metrics mode.

Every module that checks, lists or dispatches on one of these names imports it from here: the
configuration (its choice checks and error messages), the settings, the engines, the observers,
the scoring engine, the reproduction scripts and the command line. A family is a ``Literal`` type
(for signatures and type checkers, which then also check a comparison such as
``mode == "extended"``) and the tuple of its values in their canonical order
(``typing.get_args``), which validation and error messages use.

A table that maps a name to the thing it selects (a strategy class, a dataset loader, a Flower
strategy, a FactSheet label) lives next to that thing; ``tests/test_names.py`` checks its keys
against the tuples here, so that adding a name means one edit here plus one entry in each table
that must know it, and a forgotten entry fails a test.

Families
--------
:data:`TrustMode` (``metrics.trust.mode``, :class:`fltrust.settings.TrustSettings`, the scoring engine)
    ``prototype``: the FederatedTrust authors' released code (HEAD b67a59c, the golden vectors);
    ``paper``: the normalisations and statistics that best reproduce the paper's Figures 4-5;
    ``fixed``: every bug fix of trust spec 9 (docs/references.md#trust-9); ``extended``: all 36 taxonomy metrics plus
    the sustainability pillar, measured from the run (:mod:`fltrust.trust.extended`).
    :data:`PAPER_TREE_TRUST_MODES` are the first three: they score the paper's 20-metric tree and
    are compared with its figures.
:data:`FairnessMode` (``metrics.fairness.mode``, :class:`fltrust.settings.FairnessSettings`)
    ``faithful``: exactly the Federated Fairness Analytics authors' computation behind Table 3;
    ``corrected``: every correction of fairness spec 9 (docs/references.md#fairness-9).
:data:`StrategyName` (the built-in names of ``strategy.name``, :mod:`fltrust.algorithms.strategies`)
    ``fedavg`` (McMahan et al. 2017), ``qfedavg`` (q-FFL, Li et al. 2020), ``ditto`` (Li et al.
    2021), ``fedprox`` (Li et al. 2020) and the Byzantine-robust rules :data:`RobustStrategy`:
    ``fedmedian`` (coordinate-wise median), ``krum``, ``multikrum`` (Blanchard et al. 2017),
    ``trimmedmean`` (Yin et al. 2018), ``bulyan`` (El Mhamdi et al. 2018). ``strategy.name`` itself
    is a ``str``: any name of the open registry :data:`fltrust.registry.STRATEGIES`, which starts
    with these and takes a user's own strategy at run time.
:data:`DatasetName` (``data.name``, :mod:`fltrust.data.registry`)
    The real datasets :data:`RealDataset` (``cifar10``, ``femnist``, ``nsl_kdd``, ``n_baiot``)
    and their seeded stand-ins of the same shape :data:`SyntheticDataset` (``synthetic_<name>``).
:data:`ReferenceData` (``fltrust data fetch NAME``, :data:`fltrust.data.registry.REFERENCE_SPECS`)
    Published result files fetched to compare with, never trained on: ``ffa-results``, the
    Federated Fairness Analytics authors' 72 raw result files.
:data:`ModelName` (``model.name``, :data:`fltrust.models.MODELS`)
    The papers' architectures: ``cifar_cnn`` (Flower's LeNet), ``femnist_cnn``, ``nsl_kdd_mlp``,
    ``convnet2`` (the FederatedTrust prototype's FEMNIST CNN) and the N-BaIoT MLPs.
:data:`EngineName` (``run.engine``, :func:`fltrust.experiment.build_engine`)
    ``inprocess``: fltrust's own round loop (:mod:`fltrust.engines.inprocess`); ``flower``: Flower's
    simulation runtime with the Ray backend (:mod:`fltrust.engines.flower.engine`).
:data:`PrivacyMode` (the built-in names of ``privacy.mode``, :mod:`fltrust.algorithms.privacy`)
    ``none``; ``local``: DP-SGD on every client (Opacus); ``server``: server-side clipping of the
    updates plus Gaussian noise on their mean; ``nbafl``: NbAFL as FederatedScope implements it.
    Like ``strategy.name``, ``privacy.mode`` is a ``str`` of an open registry
    (:data:`fltrust.registry.PRIVACY_MECHANISMS`).
:data:`ClientMetricKey` (``RoundRecord.client_metrics``, :mod:`fltrust.core.records`)
    The per-client values every engine records, in the in-process engine's order (``malicious``
    only in runs with an ``attack``).
:data:`TrustFix` (``fixes=[...]`` of :func:`fltrust.trust.scoring.score_factsheet`)
    The corrections of the prototype's scoring bugs, by name (:data:`fltrust.trust.scoring.FIXES`).

Options
-------
The fields of the config sections and of the settings that take one of a few words have a family
each, in the section "Options" below (``training.optimizer``: :data:`OptimizerName` /
:data:`OPTIMIZERS`, ``metrics.fairness.reward``: :data:`Reward` / :data:`REWARDS`, ...): the field
is typed with the ``Literal`` and checked against its tuple, and the code that branches on the
value compares it with a value of that ``Literal``, which the type checker checks
(``make lint``: a misspelt value is an error).

Mode defaults
-------------
:data:`TRUST_MODE_DEFAULTS` (the trust observer's statistic switches), :data:`TRUST_SCORING_DEFAULTS`
(the scoring engine's definitions file, fixes and rounding) and :data:`FAIRNESS_MODE_DEFAULTS` (the
fairness switches): the value a ``None`` switch takes in each mode. Whether a NaN FactSheet value
counts as missing is one fact, fix B2 (docs/references.md#trust-b2): the observer's ``nan_is_missing`` switch is derived
from the scoring fixes.

This module imports nothing but :mod:`typing`.

Examples
--------
>>> TRUST_MODES
('prototype', 'paper', 'fixed', 'extended')
>>> PAPER_TREE_TRUST_MODES
('prototype', 'paper', 'fixed')
>>> REAL_DATASETS
('cifar10', 'femnist', 'nsl_kdd', 'n_baiot')
>>> DATASETS == REAL_DATASETS + SYNTHETIC_DATASETS
True
>>> TRUST_MODE_DEFAULTS["paper"]["nan_is_missing"], TRUST_SCORING_DEFAULTS["paper"]["rounding"]
(True, 'prototype')
"""

from __future__ import annotations

from typing import Any, Literal, get_args

__all__ = [
    "ATTACK_KINDS",
    "AUX_SOURCES",
    "CLASS_IMBALANCE_METHODS",
    "CLEVER_NORMS",
    "CLIENT_METRIC_KEYS",
    "COALITION_WEIGHTINGS",
    "DATASETS",
    "DATA_ATTACKS",
    "DEVICES",
    "DITTO_ANCHORS",
    "ENGINES",
    "ENTROPY_METHODS",
    "EXTENDED_TRUST_MODE",
    "FAIRNESS_MODES",
    "FAIRNESS_MODE_DEFAULTS",
    "FEATURE_IMPORTANCE_METHODS",
    "FEATURE_SCALINGS",
    "GROUP_METRICS",
    "JAIN_ZERO_GUARDS",
    "LOSS_SCALINGS",
    "MODEL_NAMES",
    "NONPOSITIVE_POLICIES",
    "ONEHOT_ORDERS",
    "OPTIMIZERS",
    "PAPER_TREE_TRUST_MODES",
    "PARTITION_SCHEMES",
    "PERSONAL_STORES",
    "PRIVACY_MODES",
    "QFEDAVG_VARIANTS",
    "REAL_DATASETS",
    "REFERENCE_DATA",
    "REWARDS",
    "ROBUST_STRATEGIES",
    "SECURE_AGGREGATIONS",
    "SHAPLEY_METHODS",
    "STANDIN_CALIBRATIONS",
    "STRATEGIES",
    "SYNTHETIC_DATASETS",
    "TRUST_FIXES",
    "TRUST_MODES",
    "TRUST_MODE_DEFAULTS",
    "TRUST_SCORING_DEFAULTS",
    "UPDATE_ATTACKS",
    "VECTORIZE",
    "WEIGHTINGS",
    "AttackKind",
    "AuxSource",
    "ClassImbalanceMethod",
    "CleverNorm",
    "ClientMetricKey",
    "CoalitionWeighting",
    "DataAttack",
    "DatasetName",
    "Device",
    "DittoAnchor",
    "EngineName",
    "EntropyMethod",
    "FairnessMode",
    "FeatureImportanceMethod",
    "FeatureScaling",
    "GroupMetric",
    "JainZeroGuard",
    "LossScaling",
    "ModelName",
    "NonpositivePolicy",
    "OnehotOrder",
    "OptimizerName",
    "PartitionScheme",
    "PersonalStore",
    "PrivacyMode",
    "QFedAvgVariant",
    "RealDataset",
    "ReferenceData",
    "Reward",
    "RobustStrategy",
    "SecureAggregation",
    "ShapleyMethod",
    "StandinCalibration",
    "StrategyName",
    "SyntheticDataset",
    "TrustFix",
    "TrustMode",
    "UpdateAttack",
    "Vectorize",
    "Weighting",
]

# -- FederatedTrust ----------------------------------------------------------------------------
TrustMode = Literal["prototype", "paper", "fixed", "extended"]
TRUST_MODES: tuple[TrustMode, ...] = get_args(TrustMode)
"""The trust modes (:data:`TrustMode`), in their canonical order."""
EXTENDED_TRUST_MODE: TrustMode = "extended"
"""The mode that scores the 36-metric taxonomy (``extended.yaml``); it cannot be replayed from
another mode's run."""
PAPER_TREE_TRUST_MODES: tuple[TrustMode, ...] = tuple(m for m in TRUST_MODES if m != EXTENDED_TRUST_MODE)
"""The modes that score the paper's implemented 20-metric tree (6 pillars) and are compared with
its figures."""

TrustFix = Literal[
    "nan_is_missing", "selector_not_random", "scale_ascending", "clever_ratio", "unknown_key_zero",
    "raw_algorithm_value", "parameter_count", "cap_cvs", "coerce_types",
]
TRUST_FIXES: tuple[TrustFix, ...] = get_args(TrustFix)
"""Fix names in their canonical order (the keys of :data:`fltrust.trust.scoring.FIXES`)."""

TRUST_SCORING_DEFAULTS: dict[TrustMode, dict[str, Any]] = {
    "prototype": {"definitions": "prototype.yaml", "fixes": (), "rounding": "prototype"},
    "paper": {
        "definitions": "paper.yaml",
        "fixes": ("nan_is_missing", "unknown_key_zero", "coerce_types"),
        "rounding": "prototype",
    },
    "fixed": {"definitions": "prototype.yaml", "fixes": TRUST_FIXES, "rounding": "final"},
    "extended": {
        "definitions": "extended.yaml",
        "fixes": ("nan_is_missing", "unknown_key_zero", "coerce_types"),
        "rounding": "final",
    },
}
"""Per trust mode: packaged definitions file, default fixes and default rounding of the scoring
engine (:func:`fltrust.trust.scoring.score_factsheet`)."""

_STATISTICS: dict[TrustMode, dict[str, Any]] = {
    "prototype": {
        "entropy_method": "minmax_label",
        "class_imbalance_method": "present_classes",
        "feature_importance_method": "class_sums",
        "cap_cvs": True,
        "cap_fi": False,
    },
    "fixed": {
        "entropy_method": "client_identification",
        "class_imbalance_method": "all_classes",
        "feature_importance_method": "feature_mean_abs",
        "cap_cvs": True,
        "cap_fi": True,
    },
}
# the paper's statistics: the prototype's, with the client-identification entropy and uncapped CVs
_STATISTICS["paper"] = {**_STATISTICS["prototype"], "entropy_method": "client_identification", "cap_cvs": False}
_STATISTICS["extended"] = _STATISTICS["fixed"]
TRUST_MODE_DEFAULTS: dict[TrustMode, dict[str, Any]] = {
    mode: {**_STATISTICS[mode], "nan_is_missing": "nan_is_missing" in TRUST_SCORING_DEFAULTS[mode]["fixes"]}
    for mode in TRUST_MODES
}
"""FactSheet statistic switches per trust mode (:mod:`fltrust.trust.observer`, whose docstring
tabulates them): ``extended`` uses the fixed statistics, and ``nan_is_missing`` (a NaN value is
missing in the report of missing fields) follows the mode's scoring fix B2."""

# -- Federated Fairness Analytics --------------------------------------------------------------
FairnessMode = Literal["faithful", "corrected"]
FAIRNESS_MODES: tuple[FairnessMode, ...] = get_args(FairnessMode)
"""The fairness modes (:data:`FairnessMode`)."""

FAIRNESS_MODE_DEFAULTS: dict[FairnessMode, dict[str, Any]] = {
    "faithful": {
        "shapley_include_empty": False,
        "coalition_weighting": "uniform",
        "nonpositive_policy": "raw",
        "reward": "instantaneous",
        "group_metric": "authors",
        "jain_zero_guard": "authors",
    },
    "corrected": {
        "shapley_include_empty": True,
        "coalition_weighting": "fedavg",
        "nonpositive_policy": "exclude",
        "reward": "cumulative",
        "group_metric": "equalized_odds",
        "jain_zero_guard": "all_zero_is_one",
    },
}
"""Value of every fairness switch in each mode (fairness spec 9; :class:`fltrust.settings.FairnessSettings`)."""

# -- Federated learning ------------------------------------------------------------------------
RobustStrategy = Literal["fedmedian", "krum", "multikrum", "trimmedmean", "bulyan"]
StrategyName = Literal["fedavg", "qfedavg", "ditto", "fedmedian", "fedprox", "krum", "multikrum", "trimmedmean",
                       "bulyan"]
STRATEGIES: tuple[StrategyName, ...] = get_args(StrategyName)
"""The built-in strategy names (:data:`StrategyName`); users register more (:data:`fltrust.registry.STRATEGIES`)."""
ROBUST_STRATEGIES: tuple[RobustStrategy, ...] = get_args(RobustStrategy)
"""Byzantine-robust aggregation rules (:mod:`fltrust.algorithms.aggregation`; Flower's FedMedian, Krum,
MultiKrum, FedTrimmedAvg and Bulyan under ``run.engine: flower``)."""

RealDataset = Literal["cifar10", "femnist", "nsl_kdd", "n_baiot"]
SyntheticDataset = Literal["synthetic_cifar10", "synthetic_femnist", "synthetic_nsl_kdd", "synthetic_n_baiot"]
DatasetName = Literal[RealDataset, SyntheticDataset]
REAL_DATASETS: tuple[RealDataset, ...] = get_args(RealDataset)
"""The papers' datasets (:data:`RealDataset`)."""
SYNTHETIC_DATASETS: tuple[SyntheticDataset, ...] = get_args(SyntheticDataset)
"""``synthetic_<name>`` for each real dataset, in the same order."""
DATASETS: tuple[DatasetName, ...] = get_args(DatasetName)
"""Every dataset name: the real ones, then their synthetic stand-ins (:data:`DatasetName`)."""

ReferenceData = Literal["ffa-results"]
REFERENCE_DATA: tuple[ReferenceData, ...] = get_args(ReferenceData)
"""Published result files that ``fltrust data fetch`` gets and ``fltrust data info`` lists, to compare
with (never a training set)."""

EngineName = Literal["inprocess", "flower"]
ENGINES: tuple[EngineName, ...] = get_args(EngineName)
"""The engines (:data:`EngineName`)."""

ModelName = Literal["cifar_cnn", "femnist_cnn", "nsl_kdd_mlp", "convnet2", "nbaiot_mlp_50_50", "nbaiot_mlp_100_80_70_50"]
MODEL_NAMES: tuple[ModelName, ...] = get_args(ModelName)
"""The registered architectures (``model.name``; the keys of :data:`fltrust.models.MODELS`)."""

PrivacyMode = Literal["none", "local", "server", "nbafl"]
PRIVACY_MODES: tuple[PrivacyMode, ...] = get_args(PrivacyMode)
"""The built-in privacy mechanisms (:data:`PrivacyMode`); users register more (:data:`fltrust.registry.PRIVACY_MECHANISMS`)."""

ClientMetricKey = Literal[
    "num_samples", "num_batches", "val_samples", "reward_accuracy", "reward_loss", "accuracy", "loss",
    "train_loss", "train_time_s", "bytes_received", "bytes_sent", "malicious",
]
CLIENT_METRIC_KEYS: tuple[ClientMetricKey, ...] = get_args(ClientMetricKey)
"""``RoundRecord.client_metrics`` keys, in the in-process engine's order (``malicious``, 1 for a
malicious client, only in runs with an ``attack``); their meanings: :mod:`fltrust.core.records`."""

# -- Options: the values of a config or settings field that takes one of a few words ----------
# Each field is typed with its Literal and checked against the tuple (config: fltrust.config.checks.choice,
# settings: fltrust.settings); the tuple's order is the order of the error message.
# Not here: strategy.name and privacy.mode are open registries (fltrust.registry: a user's own strategy
# or privacy mechanism registers a new name at run time), so those fields are `str`, checked against the
# registry's names; StrategyName and PrivacyMode above are the built-in names only.

# the ``strategy`` section (fltrust.config.StrategyConfig)
Weighting = Literal["samples", "batches"]
WEIGHTINGS: tuple[Weighting, ...] = get_args(Weighting)
"""``strategy.weighting``: FedAvg-style aggregation weights, the clients' samples or mini-batches."""
QFedAvgVariant = Literal["flower_legacy", "qffl"]
QFEDAVG_VARIANTS: tuple[QFedAvgVariant, ...] = get_args(QFedAvgVariant)
"""``strategy.qfedavg_variant``: one central loss for all clients (Flower's legacy QFedAvg) or each
client's own (q-FFL)."""
DittoAnchor = Literal["local", "global"]
DITTO_ANCHORS: tuple[DittoAnchor, ...] = get_args(DittoAnchor)
"""``strategy.ditto_anchor``: the proximal anchor of Ditto's personal update."""

# the ``training`` section (fltrust.config.TrainingConfig)
OptimizerName = Literal["adam", "sgd"]
OPTIMIZERS: tuple[OptimizerName, ...] = get_args(OptimizerName)
"""``training.optimizer``."""
LossScaling = Literal["mean", "per_batch_sum"]
LOSS_SCALINGS: tuple[LossScaling, ...] = get_args(LossScaling)
"""``training.loss_scaling`` (:mod:`fltrust.core.evaluation`)."""
Vectorize = Literal["auto", "on", "off"]
VECTORIZE: tuple[Vectorize, ...] = get_args(Vectorize)
"""``training.vectorize``: train a round's clients as one stacked model (:mod:`fltrust.engines.vectorized`)."""

# the ``data`` and ``partition`` sections (fltrust.config.DataConfig, PartitionConfig)
OnehotOrder = Literal["global", "per_split", "per_partition"]
ONEHOT_ORDERS: tuple[OnehotOrder, ...] = get_args(OnehotOrder)
"""``data.onehot_order``: how NSL-KDD's categorical columns are one-hot encoded."""
FeatureScaling = Literal["fit_train", "fixed"]
FEATURE_SCALINGS: tuple[FeatureScaling, ...] = get_args(FeatureScaling)
"""``data.scaling``: NSL-KDD's continuous columns, min-max fitted on the training data or the
fairness authors' fixed maxima."""
StandinCalibration = Literal["none", "real_partial"]
STANDIN_CALIBRATIONS: tuple[StandinCalibration, ...] = get_args(StandinCalibration)
"""``data.standin_calibration``: the synthetic N-BaIoT stand-in as generated, or fitted to the real
partial rows."""
PartitionScheme = Literal["iid", "dirichlet", "natural"]
PARTITION_SCHEMES: tuple[PartitionScheme, ...] = get_args(PartitionScheme)
"""``partition.scheme`` (:mod:`fltrust.partition`)."""
AuxSource = Literal["test", "client_pool"]
AUX_SOURCES: tuple[AuxSource, ...] = get_args(AuxSource)
"""``partition.aux_source``: where the server's auxiliary set D is drawn from."""

# the ``privacy``, ``attack``, ``flower`` and ``run`` sections
SecureAggregation = Literal["none", "secagg+"]
SECURE_AGGREGATIONS: tuple[SecureAggregation, ...] = get_args(SecureAggregation)
"""``privacy.secure_aggregation`` when stated (``None``: not stated)."""
DataAttack = Literal["label_flip", "backdoor"]
UpdateAttack = Literal["sign_flip", "scale"]
AttackKind = Literal["none", "label_flip", "sign_flip", "scale", "backdoor"]
ATTACK_KINDS: tuple[AttackKind, ...] = get_args(AttackKind)
"""``attack.kind`` (:mod:`fltrust.attacks`): no attack, or one of :data:`DATA_ATTACKS` and
:data:`UPDATE_ATTACKS`."""
DATA_ATTACKS: tuple[DataAttack, ...] = get_args(DataAttack)
"""Attacks that rewrite the malicious clients' training rows when the federation is built."""
UPDATE_ATTACKS: tuple[UpdateAttack, ...] = get_args(UpdateAttack)
"""Attacks that change what a malicious client sends after its local training."""
PersonalStore = Literal["server", "client"]
PERSONAL_STORES: tuple[PersonalStore, ...] = get_args(PersonalStore)
"""``flower.ditto_personal_store``: where Ditto's personal models live between rounds."""
Device = Literal["cpu", "cuda", "auto"]
DEVICES: tuple[Device, ...] = get_args(Device)
"""``run.device``."""

# the fairness settings (fltrust.settings.FairnessSettings, fltrust.metrics.fairness, fltrust.metrics.shapley)
CoalitionWeighting = Literal["uniform", "fedavg"]
COALITION_WEIGHTINGS: tuple[CoalitionWeighting, ...] = get_args(CoalitionWeighting)
"""``metrics.fairness.coalition_weighting`` values (fairness spec 3, docs/references.md#fairness-3)."""
NonpositivePolicy = Literal["raw", "exclude"]
NONPOSITIVE_POLICIES: tuple[NonpositivePolicy, ...] = get_args(NonpositivePolicy)
"""``metrics.fairness.nonpositive_policy`` values: use signed FedSV (the authors) or leave out s <= 0."""
Reward = Literal["instantaneous", "cumulative"]
REWARDS: tuple[Reward, ...] = get_args(Reward)
"""``metrics.fairness.reward`` values: this round's reward (the authors) or the sum over rounds (the paper)."""
GroupMetric = Literal["authors", "equalized_odds"]
GROUP_METRICS: tuple[GroupMetric, ...] = get_args(GroupMetric)
"""``metrics.fairness.group_metric`` values: the authors' f_g or equalised odds over label groups."""
JainZeroGuard = Literal["authors", "all_zero_is_one"]
JAIN_ZERO_GUARDS: tuple[JainZeroGuard, ...] = get_args(JainZeroGuard)
"""``metrics.fairness.jain_zero_guard`` values: the authors' guards or J(all zero) = 1."""
ShapleyMethod = Literal["exact", "monte_carlo", "permutation", "auto"]
SHAPLEY_METHODS: tuple[ShapleyMethod, ...] = get_args(ShapleyMethod)
"""FedSV methods of :func:`fltrust.metrics.shapley.federated_shapley` (their cost: :mod:`fltrust.metrics.shapley`)."""

# the trust settings (fltrust.settings.TrustSettings, fltrust.trust.measures)
EntropyMethod = Literal["minmax_label", "normalized_label", "client_identification"]
ENTROPY_METHODS: tuple[EntropyMethod, ...] = get_args(EntropyMethod)
"""``data/avg_entropy`` variants (:func:`fltrust.trust.measures.statistics.avg_entropy`): the
prototype's min-max normalised label entropy (B4, docs/references.md#trust-b4) and two normalised entropies in [0, 1] (label
entropy / log2 K, and the paper's Eq. 1 client-identification entropy / log2 N)."""
ClassImbalanceMethod = Literal["present_classes", "all_classes"]
CLASS_IMBALANCE_METHODS: tuple[ClassImbalanceMethod, ...] = get_args(ClassImbalanceMethod)
"""``fairness/class_imbalance`` variants: the prototype's CV over the classes present in the data,
or the CV over all K classes with absent classes counted as 0 (B11, docs/references.md#trust-b11)."""
FeatureImportanceMethod = Literal["class_sums", "feature_mean_abs"]
FEATURE_IMPORTANCE_METHODS: tuple[FeatureImportanceMethod, ...] = get_args(FeatureImportanceMethod)
"""Feature-importance variants of :mod:`fltrust.trust.measures.explainability`."""
CleverNorm = Literal[1, 2]
CLEVER_NORMS: tuple[CleverNorm, ...] = get_args(CleverNorm)
"""``metrics.trust.clever_norm``: the L-p norm of ART's CLEVER score."""
