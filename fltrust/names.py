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
:data:`StrategyName` (``strategy.name``, :mod:`fltrust.algorithms.strategies`, :mod:`fltrust.engines.flower.strategies`)
    ``fedavg`` (McMahan et al. 2017), ``qfedavg`` (q-FFL, Li et al. 2020), ``ditto`` (Li et al.
    2021), ``fedprox`` (Li et al. 2020) and the Byzantine-robust rules :data:`RobustStrategy`:
    ``fedmedian`` (coordinate-wise median), ``krum``, ``multikrum`` (Blanchard et al. 2017),
    ``trimmedmean`` (Yin et al. 2018), ``bulyan`` (El Mhamdi et al. 2018).
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
:data:`PrivacyMode` (``privacy.mode``, :mod:`fltrust.algorithms.privacy`)
    ``none``; ``local``: DP-SGD on every client (Opacus); ``server``: server-side clipping of the
    updates plus Gaussian noise on their mean; ``nbafl``: NbAFL as FederatedScope implements it.
:data:`ClientMetricKey` (``RoundRecord.client_metrics``, :mod:`fltrust.core.records`)
    The per-client values every engine records, in the in-process engine's order (``malicious``
    only in runs with an ``attack``).
:data:`TrustFix` (``fixes=[...]`` of :func:`fltrust.trust.scoring.score_factsheet`)
    The corrections of the prototype's scoring bugs, by name (:data:`fltrust.trust.scoring.FIXES`).

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
    "CLIENT_METRIC_KEYS",
    "DATASETS",
    "ENGINES",
    "EXTENDED_TRUST_MODE",
    "FAIRNESS_MODES",
    "FAIRNESS_MODE_DEFAULTS",
    "MODEL_NAMES",
    "PAPER_TREE_TRUST_MODES",
    "PRIVACY_MODES",
    "REAL_DATASETS",
    "REFERENCE_DATA",
    "ROBUST_STRATEGIES",
    "STRATEGIES",
    "SYNTHETIC_DATASETS",
    "TRUST_FIXES",
    "TRUST_MODES",
    "TRUST_MODE_DEFAULTS",
    "TRUST_SCORING_DEFAULTS",
    "ClientMetricKey",
    "DatasetName",
    "EngineName",
    "FairnessMode",
    "ModelName",
    "PrivacyMode",
    "RealDataset",
    "ReferenceData",
    "RobustStrategy",
    "StrategyName",
    "SyntheticDataset",
    "TrustFix",
    "TrustMode",
]

# -- FederatedTrust ----------------------------------------------------------------------------
TrustMode = Literal["prototype", "paper", "fixed", "extended"]
TRUST_MODES: tuple[TrustMode, ...] = get_args(TrustMode)
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
    "paper": {
        "entropy_method": "client_identification",
        "class_imbalance_method": "present_classes",
        "feature_importance_method": "class_sums",
        "cap_cvs": False,
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
ROBUST_STRATEGIES: tuple[RobustStrategy, ...] = get_args(RobustStrategy)
"""Byzantine-robust aggregation rules (:mod:`fltrust.algorithms.aggregation`; Flower's FedMedian, Krum,
MultiKrum, FedTrimmedAvg and Bulyan under ``run.engine: flower``)."""

RealDataset = Literal["cifar10", "femnist", "nsl_kdd", "n_baiot"]
SyntheticDataset = Literal["synthetic_cifar10", "synthetic_femnist", "synthetic_nsl_kdd", "synthetic_n_baiot"]
DatasetName = Literal[RealDataset, SyntheticDataset]
REAL_DATASETS: tuple[RealDataset, ...] = get_args(RealDataset)
SYNTHETIC_DATASETS: tuple[SyntheticDataset, ...] = get_args(SyntheticDataset)
"""``synthetic_<name>`` for each real dataset, in the same order."""
DATASETS: tuple[DatasetName, ...] = get_args(DatasetName)

ReferenceData = Literal["ffa-results"]
REFERENCE_DATA: tuple[ReferenceData, ...] = get_args(ReferenceData)
"""Published result files that ``fltrust data fetch`` gets and ``fltrust data info`` lists, to compare
with (never a training set)."""

EngineName = Literal["inprocess", "flower"]
ENGINES: tuple[EngineName, ...] = get_args(EngineName)

ModelName = Literal["cifar_cnn", "femnist_cnn", "nsl_kdd_mlp", "convnet2", "nbaiot_mlp_50_50", "nbaiot_mlp_100_80_70_50"]
MODEL_NAMES: tuple[ModelName, ...] = get_args(ModelName)
"""The registered architectures (``model.name``; the keys of :data:`fltrust.models.MODELS`)."""

PrivacyMode = Literal["none", "local", "server", "nbafl"]
PRIVACY_MODES: tuple[PrivacyMode, ...] = get_args(PrivacyMode)

ClientMetricKey = Literal[
    "num_samples", "num_batches", "val_samples", "reward_accuracy", "reward_loss", "accuracy", "loss",
    "train_loss", "train_time_s", "bytes_received", "bytes_sent", "malicious",
]
CLIENT_METRIC_KEYS: tuple[ClientMetricKey, ...] = get_args(ClientMetricKey)
"""``RoundRecord.client_metrics`` keys, in the in-process engine's order (``malicious``, 1 for a
malicious client, only in runs with an ``attack``); their meanings: :mod:`fltrust.core.records`."""
