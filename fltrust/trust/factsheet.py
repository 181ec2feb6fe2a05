"""The FederatedTrust FactSheet: schema, template, completeness, population and JSON I/O.

A FactSheet is a plain nested dict ``{section: {field: value}}`` with the 7 sections of the
prototype's ``configs/factsheet_template.json`` (trust spec 4; paper Sec. 5 and Table 2). The
scoring engine (:mod:`fltrust.trust.scoring`) reads it by field path ``"section/field"``.

Schema
------
``who`` is the federation actor that produces the value (paper Table 2), ``phase`` when it is known
(pre-, during- or post-training). ``extra`` fields are not in the prototype template.

=====================================  ======  ======  ===================  =========================================
field path                             type    phase   who                  fltrust source (prototype source)
=====================================  ======  ======  ===================  =========================================
project/overview                       str     pre     server               ``project.overview``, else ``run.name``
                                                                            (``cfg.expname``)
project/purpose                        str     pre     project owner        ``project.purpose`` (manual, never filled)
project/background                     str     pre     project owner        ``project.background`` (manual)
project/organisations (extra)          list    pre     project owner        ``project.organisations`` (paper Table 2:
                                                                            participants' organisations)
data/provenance                        str     pre     server               dataset name, files, synthetic flag
                                                                            (``cfg.data.type``)
data/preprocessing                     str     pre     server               description of scaling / encoding
                                                                            (``cfg.data.transform``, a list)
data/avg_entropy                       number  pre     clients -> server    :func:`~fltrust.trust.statistics.avg_entropy`
                                                                            (spec 3.8)
participants/client_num                number  pre     server               number of registered clients C
participants/sample_client_rate        number  pre     server               clients per round / C
participants/client_selector           str     pre     server               ``metrics.trust.client_selector``
                                                                            (``federate.sampler``)
configuration/optimization_algorithm   str     pre     server               :data:`STRATEGY_NAMES` (``federate.method``)
configuration/training_model           str     pre     server               :data:`TRAINING_MODEL_MAP` (``model_map.json``)
configuration/personalization          bool    pre     server               strategy is Ditto
configuration/differential_privacy     bool    pre     server               ``privacy.mode != "none"`` (``nbafl.use``)
configuration/dp_epsilon               number  pre     server               ``privacy.target_epsilon`` or NaN
configuration/trainable_param_num      number  pre     server               trainable parameter TENSORS (B9)
configuration/trainable_param_count    number  pre     server               extra: trainable scalar parameters
                                                                            (the paper's "number of parameters")
configuration/total_round_num          number  pre     server               ``training.rounds``
configuration/learning_rate            number  pre     server               ``training.learning_rate``
configuration/local_update_steps       number  pre     server               ``training.local_epochs``
performance/test_loss_avg              number  post    clients -> server    mean per-client loss of the global model
                                                                            (prototype: summed ``test_loss``, B12)
performance/test_acc_avg               number  post    clients -> server    mean per-client accuracy of the global model
performance/test_feature_importance_cv number  post    server               :mod:`fltrust.trust.explainability`
                                                                            (never written by HEAD, B1)
performance/test_clever                number  post    server               :mod:`fltrust.trust.robustness` (B1)
fairness/test_acc_cv                   number  post    server               :func:`~fltrust.trust.statistics.accuracy_cv`
fairness/selection_cv                  number  post    server               :func:`~fltrust.trust.statistics.selection_cv`
fairness/class_imbalance               number  pre     clients -> server    :func:`~fltrust.trust.statistics.class_imbalance`
fairness/test_acc_cv_raw (extra)       number  post    server               the same CVs without the cap at 1 (the
fairness/selection_cv_raw (extra)      number  post    server               5796d0b-era prototype stored these, and
fairness/class_imbalance_raw (extra)   number  pre     clients -> server    the paper's Figures 4-5 need them, spec 7.3)
system/avg_time_minutes                number  post    server               run wall time / 60
system/avg_model_size                  number  post    server               scalar parameter count (prototype: a
                                                                            human-readable string such as ``"6.24M"``)
system/avg_upload_bytes                number  post    server               mean bytes sent per client over the run
                                                                            (prototype: string such as ``"366.9K"``)
system/avg_download_bytes              number  post    server               mean bytes received per client (string)
=====================================  ======  ======  ===================  =========================================

The fairness CVs are capped at 1 as in HEAD, except in the observer's paper mode, which stores
them uncapped because the paper-mode definitions bin them (spec 7.3); the ``*_raw`` fields are
always uncapped.

Template defaults (:func:`new_factsheet`): strings ``""``, numbers NaN, booleans ``False``, lists
``[]``, as the prototype template. The system sizes are numbers here (NaN by default), where the
prototype template had ``""``.

Extended mode (``metrics.trust.mode: extended``) adds the fields of :data:`EXTENDED_FIELDS` in
the sections :data:`EXTENDED_SECTIONS` (``privacy``, ``robustness``, ``explainability``,
``accountability``, ``federation``, ``sustainability``; plus a few in ``fairness`` and
``participants``) and a ``provenance`` section: one entry per metric of ``extended.yaml``,
``{"status": "measured" | "declared" | "missing" | "n/a", "method": ..., "reason": ...}``
(:func:`set_provenance`). They are created only by ``new_factsheet(extended=True)``, so the
prototype, paper and fixed FactSheets are unchanged.

Missing values (:func:`missing_fields`): the prototype counts a field as present unless it is
``None`` or ``""`` (NaN, ``False``, ``0`` and ``[]`` are present, bug B2). Outside prototype mode
``None``, NaN, empty or whitespace-only strings and empty lists are missing.

Spec and bug references ("fairness spec §N", "trust spec §N", "Bn") are defined in ``docs/references.md``.
"""

from __future__ import annotations

import ast
import json
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml

from fltrust.trust.statistics import (
    cap1,
    class_imbalance,
    minmax_mean_entropy,
    selection_cv,
)

if TYPE_CHECKING:
    from torch import nn

    from fltrust.config import ExperimentConfig

log = logging.getLogger("fltrust")


class FactsheetError(ValueError):
    """A FactSheet or one of its input files is invalid; the message names it and the fix."""


@dataclass(frozen=True)
class FactsheetField:
    """One FactSheet field (see the module docstring for the full table).

    Attributes
    ----------
    path : str
        ``"section/field"``.
    kind : str
        ``"str"``, ``"number"``, ``"bool"``, ``"list"`` or ``"text"`` (a string, or the
        prototype's list of transforms).
    phase : str
        ``"pre"``, ``"during"`` or ``"post"`` training.
    who : str
        Actor that produces the value (paper Table 2).
    source : str
        Where fltrust takes it from.
    extra : bool
        Not in the prototype template.
    """

    path: str
    kind: str
    phase: str
    who: str
    source: str
    extra: bool = False

    @property
    def default(self) -> Any:
        """Template value: ``""``, NaN, ``False`` or ``[]``."""
        return {"str": "", "text": "", "number": float("nan"), "bool": False, "list": []}[self.kind]


_F = FactsheetField
FIELDS: tuple[FactsheetField, ...] = (
    _F("project/overview", "str", "pre", "server", "project.overview, else run.name"),
    _F("project/purpose", "str", "pre", "project owner", "project.purpose"),
    _F("project/background", "str", "pre", "project owner", "project.background"),
    _F("project/organisations", "list", "pre", "project owner", "project.organisations", extra=True),
    _F("data/provenance", "str", "pre", "server", "dataset name, files, synthetic flag"),
    _F("data/preprocessing", "text", "pre", "server", "scaling and encoding of the features"),
    _F("data/avg_entropy", "number", "pre", "clients -> server", "statistics.avg_entropy"),
    _F("participants/client_num", "number", "pre", "server", "registered clients C"),
    _F("participants/sample_client_rate", "number", "pre", "server", "clients per round / C"),
    _F("participants/client_selector", "str", "pre", "server", "metrics.trust.client_selector"),
    _F("configuration/optimization_algorithm", "str", "pre", "server", "STRATEGY_NAMES[strategy.name]"),
    _F("configuration/training_model", "str", "pre", "server", "TRAINING_MODEL_MAP[model.name]"),
    _F("configuration/personalization", "bool", "pre", "server", "strategy.name == 'ditto'"),
    _F("configuration/differential_privacy", "bool", "pre", "server", "privacy.mode != 'none'"),
    _F("configuration/dp_epsilon", "number", "pre", "server", "privacy.target_epsilon or NaN"),
    _F("configuration/trainable_param_num", "number", "pre", "server", "trainable parameter tensors (B9)"),
    _F("configuration/trainable_param_count", "number", "pre", "server", "trainable scalar parameters", extra=True),
    _F("configuration/total_round_num", "number", "pre", "server", "training.rounds"),
    _F("configuration/learning_rate", "number", "pre", "server", "training.learning_rate"),
    _F("configuration/local_update_steps", "number", "pre", "server", "training.local_epochs"),
    _F("performance/test_loss_avg", "number", "post", "clients -> server", "mean per-client loss"),
    _F("performance/test_acc_avg", "number", "post", "clients -> server", "mean per-client accuracy"),
    _F("performance/test_feature_importance_cv", "number", "post", "server", "explainability"),
    _F("performance/test_clever", "number", "post", "server", "robustness.clever_score"),
    _F("fairness/test_acc_cv", "number", "post", "server", "statistics.accuracy_cv"),
    _F("fairness/selection_cv", "number", "post", "server", "statistics.selection_cv"),
    _F("fairness/class_imbalance", "number", "pre", "clients -> server", "statistics.class_imbalance"),
    _F("fairness/test_acc_cv_raw", "number", "post", "server", "accuracy CV, uncapped", extra=True),
    _F("fairness/selection_cv_raw", "number", "post", "server", "selection CV, uncapped", extra=True),
    _F("fairness/class_imbalance_raw", "number", "pre", "clients -> server", "class CV, uncapped", extra=True),
    _F("system/avg_time_minutes", "number", "post", "server", "wall time / 60"),
    _F("system/avg_model_size", "number", "post", "server", "scalar parameter count"),
    _F("system/avg_upload_bytes", "number", "post", "server", "mean bytes sent per client"),
    _F("system/avg_download_bytes", "number", "post", "server", "mean bytes received per client"),
)
"""The FactSheet schema, in template order."""

SECTIONS = ("project", "data", "participants", "configuration", "performance", "fairness", "system")
"""Section order of the prototype template."""

FIELD_BY_PATH: dict[str, FactsheetField] = {f.path: f for f in FIELDS}

EXTENDED_FIELDS: tuple[FactsheetField, ...] = (
    # privacy (paper Sec. 3.1)
    _F("privacy/secure_aggregation", "str", "pre", "server", "privacy.secure_aggregation or declared.encryption", True),
    _F("privacy/anonymisation", "str", "pre", "project owner", "metrics.trust.declared.anonymisation", True),
    _F("privacy/mia_auc", "number", "post", "server", "leakage.membership_inference: attack AUC", True),
    _F("privacy/mia_risk", "number", "post", "server", "2 |AUC - 0.5|", True),
    _F("privacy/mia_rule_based_advantage", "number", "post", "server", "ART rule-based attack TPR - FPR", True),
    _F("privacy/mia_samples", "number", "post", "server", "members (= non-members) in the attack sample", True),
    # robustness (paper Sec. 3.2)
    _F("robustness/poisoning_recovery", "number", "post", "server", "poisoning.poisoning_recovery (attack runs)", True),
    _F("robustness/poisoning_retention", "number", "post", "server", "acc under attack / clean acc (attack runs)", True),
    _F("robustness/poisoning_accuracy_drop", "number", "post", "server", "clean acc - acc under attack", True),
    _F("robustness/attack_success_rate", "number", "post", "server", "attack runs", True),
    _F("robustness/attack", "str", "post", "server", "description of the attack runs", True),
    _F("robustness/byzantine_robust", "bool", "pre", "server", "aggregator in poisoning.BYZANTINE_ROBUST_AGGREGATORS", True),
    _F("robustness/evasion_clean_accuracy", "number", "post", "server", "robustness.evasion_accuracy", True),
    _F("robustness/evasion_fgsm_accuracy", "number", "post", "server", "ART FastGradientMethod", True),
    _F("robustness/evasion_pgd_accuracy", "number", "post", "server", "ART ProjectedGradientDescent", True),
    _F("robustness/evasion_eps", "number", "post", "server", "metrics.trust.evasion_eps (L-inf)", True),
    _F("robustness/evasion_retention", "number", "post", "server", "PGD acc / clean acc", True),
    _F("robustness/testing_coverage", "number", "pre", "project owner", "metrics.trust.declared.testing_coverage", True),
    _F("robustness/system_reliability", "number", "post", "server", "reliability.system_reliability", True),
    _F("robustness/dropout_rate", "number", "post", "server", "num_dropped / num_sampled", True),
    _F("robustness/error_rate", "number", "post", "server", "num_failed / num_sampled", True),
    _F("robustness/timeout_rate", "number", "post", "server", "num_timed_out / num_sampled", True),
    _F("robustness/client_reputation", "number", "post", "server", "reputation.client_reputation (mean)", True),
    _F("robustness/client_reputations", "list", "post", "server", "per-client reputation (null = never took part)", True),
    _F("robustness/data_quality", "number", "post", "server", "reputation.data_quality (mean)", True),
    _F("robustness/client_data_quality", "list", "post", "server", "per-client data quality", True),
    _F("robustness/low_quality_clients", "list", "post", "server", "clients with data quality < 0.8", True),
    # fairness (paper Sec. 3.3)
    _F("fairness/sensitive_attribute", "str", "pre", "server", "discrimination.sensitive_attribute", True),
    _F("fairness/discrimination_index", "number", "post", "server", "max |F1(group) - F1(rest)|", True),
    _F("fairness/demographic_parity_difference", "number", "post", "server", "fairlearn", True),
    _F("fairness/equalized_odds_difference", "number", "post", "server", "fairlearn", True),
    # explainability (paper Sec. 3.4)
    _F("explainability/simplification", "str", "pre", "project owner", "metrics.trust.declared.simplification", True),
    _F("explainability/visualisation", "number", "post", "server", "governance.coverage(VISUALISATION_ITEMS)", True),
    # accountability (paper Sec. 3.5)
    _F("accountability/audit_chain_verified", "bool", "post", "server", "governance.verify_model_chain", True),
    _F("accountability/audit_rounds", "number", "post", "server", "links of the model hash chain", True),
    _F("accountability/audit_head", "str", "post", "server", "last chain hash", True),
    # federation (paper Sec. 3.6)
    _F("federation/client_registry", "number", "post", "server", "governance.coverage(REGISTRY_ITEMS)", True),
    _F("federation/co_versioning", "number", "post", "server", "governance.co_versioning_coverage", True),
    _F("federation/model_replacement", "str", "pre", "project owner", "metrics.trust.declared.model_replacement", True),
    # sustainability (nebula, trust spec 10)
    _F("participants/avg_dataset_size", "number", "pre", "clients -> server", "mean training samples per client", True),
    _F("sustainability/energy_kwh", "number", "post", "server", "CodeCarbon offline", True),
    _F("sustainability/emissions_kg", "number", "post", "server", "CodeCarbon offline", True),
    _F("sustainability/carbon_intensity", "number", "post", "server", "g CO2eq / kWh = emissions / energy", True),
    _F("sustainability/power_source", "str", "post", "server", "meter / partial / estimate", True),
    _F("sustainability/method", "text", "post", "server", "how energy and emissions were obtained", True),
    _F("sustainability/country_iso_code", "str", "pre", "server", "metrics.trust.country_iso_code", True),
)
"""FactSheet fields of the extended mode (not in :data:`FIELDS`, so the prototype, paper and fixed
FactSheets are unchanged). The ``provenance`` section (one entry per metric, see
:func:`set_provenance`) is written beside them."""

EXTENDED_SECTIONS = ("privacy", "robustness", "explainability", "accountability", "federation", "sustainability")
"""Sections the extended fields add after :data:`SECTIONS`."""

PROVENANCE_SECTION = "provenance"
PROVENANCE_STATUSES = ("measured", "declared", "missing", "n/a")

ALL_FIELD_BY_PATH: dict[str, FactsheetField] = {**FIELD_BY_PATH, **{f.path: f for f in EXTENDED_FIELDS}}

USER_SUPPLIED_FIELDS = ("project/purpose", "project/background", "project/organisations")
"""Fields only a person can fill (paper: manual FactSheet entries); reported when empty."""

STRATEGY_NAMES = {
    "fedavg": "FedAvg",
    "fedprox": "FedProx",
    "ditto": "Ditto",
    "qfedavg": "q-FedAvg",
    "fedmedian": "FedMedian",
    "median": "Median",
    "krum": "Krum",
    "multikrum": "MultiKrum",
    "trimmedmean": "TrimmedMean",
    "bulyan": "Bulyan",
}
"""``strategy.name`` -> the aggregation-algorithm vocabulary of the papers (trust spec 3.6).
q-FedAvg and FedMedian are not in the prototype's benchmark map; the scoring reports them. The
robust aggregators are in the extended definitions' map (nebula's values, spec 10). A strategy
not listed here is written under its own name."""

TRAINING_MODEL_MAP = {
    "convnet2": "CNN",
    "femnist_cnn": "CNN",
    "cifar_cnn": "CNN",
    "nsl_kdd_mlp": "MLPClassifier",
    "nbaiot_mlp_50_50": "MLPClassifier",
    "nbaiot_mlp_100_80_70_50": "MLPClassifier",
}
"""``model.name`` -> the algorithmic-transparency vocabulary (trust spec 3.4).

The prototype's ``model_map.json`` only knows ``{"convnet2": "CNN"}``. The fully connected models
are mapped to ``"MLPClassifier"``, scikit-learn's name for a multilayer perceptron in the same
map; it has the same transparency value (1) as ``"CNN"`` and ``"Sequential"``."""

PROTOTYPE_MODEL_MAP = {"convnet2": "CNN"}
"""The prototype's ``configs/model_map.json``."""

_PREPROCESSING = {
    "cifar10": "pixels ToTensor + Normalize(mean 0.5, std 0.5 per channel), values in [-1, 1]",
    "femnist": "LEAF pixels 28x28 scaled to [0, 1], no further normalisation",
    "nsl_kdd": (
        "38 continuous features min-max scaled; one-hot encoding of protocol_type, service and flag; "
        "label normal -> 0, attack -> 1"
    ),
    "n_baiot": (
        "115 numeric traffic features standardised (z-score) with the training split's column mean and std; "
        "label benign -> 0, attack -> 1"
    ),
}


# -- access ---------------------------------------------------------------------------------------

def new_factsheet(*, include_extras: bool = True, extended: bool = False) -> dict[str, dict[str, Any]]:
    """An empty FactSheet (the prototype template values, see the module docstring).

    Parameters
    ----------
    include_extras : bool
        Include the fields that are not in the prototype template (``extra`` in :data:`FIELDS`).
    extended : bool
        Also add the extended-mode fields (:data:`EXTENDED_FIELDS`) and an empty ``provenance``
        section.

    Returns
    -------
    dict
        ``{section: {field: default}}`` in template order.
    """
    fs: dict[str, dict[str, Any]] = {section: {} for section in SECTIONS}
    for spec in FIELDS:
        if spec.extra and not include_extras:
            continue
        section, name = spec.path.split("/")
        fs[section][name] = spec.default
    if extended:
        for section in EXTENDED_SECTIONS:
            fs[section] = {}
        for spec in EXTENDED_FIELDS:
            section, name = spec.path.split("/")
            fs.setdefault(section, {})[name] = spec.default
        fs[PROVENANCE_SECTION] = {}
    return fs


def set_provenance(
    fs: dict[str, Any], metric_path: str, status: str, method: str, reason: str | None = None, **details: Any
) -> None:
    """Record how a metric's raw value was obtained (extended mode).

    Parameters
    ----------
    fs : dict
        The FactSheet (its ``provenance`` section is created if needed).
    metric_path : str
        ``pillar/notion/metric`` of the extended definitions.
    status : {"measured", "declared", "missing", "n/a"}
        ``measured`` = computed by the kit from the model, data or run record; ``declared`` =
        configuration or a person's statement; ``missing`` = a measured value that was not
        computed (scores 0); ``n/a`` = not applicable (left out of the means; give ``reason``).
    method : str
        How (formula, source, library).
    reason : str or None
        Why it is n/a, missing or declared rather than measured.
    **details
        Extra JSON-ready facts (e.g. ``estimate=True``).
    """
    if status not in PROVENANCE_STATUSES:
        raise FactsheetError(f"provenance status {status!r} is not one of {list(PROVENANCE_STATUSES)}")
    if status == "n/a" and not reason:
        raise FactsheetError(f"{metric_path}: an n/a metric needs a reason")
    entry: dict[str, Any] = {"status": status, "method": method}
    if reason:
        entry["reason"] = reason
    entry.update(details)
    fs.setdefault(PROVENANCE_SECTION, {})[metric_path] = entry


def _split_path(path: str) -> tuple[str, str]:
    parts = path.split("/")
    if len(parts) != 2 or not all(parts):
        raise FactsheetError(f"field path {path!r} must look like 'section/field'")
    return parts[0], parts[1]


def get_field(fs: dict[str, Any], path: str) -> Any:
    """Value at ``"section/field"``, or ``None`` when the section or the field is absent."""
    section, name = _split_path(path)
    node = fs.get(section)
    return node.get(name) if isinstance(node, dict) else None


def set_field(fs: dict[str, Any], path: str, value: Any) -> None:
    """Set a schema field (unknown paths raise, so that typos cannot create new fields)."""
    if path not in ALL_FIELD_BY_PATH:
        raise FactsheetError(f"{path!r} is not a FactSheet field; known fields: {sorted(ALL_FIELD_BY_PATH)}")
    section, name = _split_path(path)
    fs.setdefault(section, {})[name] = value


def is_missing(value: Any, *, nan_is_missing: bool = True) -> bool:
    """Whether a FactSheet value counts as missing (trust spec 2.3 ``check_properties``, B2).

    Parameters
    ----------
    value : Any
        The value (``None`` for an absent field).
    nan_is_missing : bool
        ``False`` reproduces the prototype: only ``None`` and ``""`` are missing. ``True``: also
        NaN, whitespace-only strings and empty lists.

    Returns
    -------
    bool
    """
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() == "" if nan_is_missing else value == ""
    if not nan_is_missing:
        return False
    if isinstance(value, (float, np.floating)):
        return math.isnan(float(value))
    if isinstance(value, (list, tuple)):
        return len(value) == 0
    return False


def missing_fields(
    fs: dict[str, Any], *, nan_is_missing: bool = True, paths: Iterable[str] | None = None
) -> list[str]:
    """Field paths whose value is missing (see :func:`is_missing`).

    Parameters
    ----------
    fs : dict
        A FactSheet.
    nan_is_missing : bool
        ``False`` = the prototype's rule (NaN present, B2); ``True`` = NaN, None, blank missing.
    paths : iterable of str or None
        Fields to check; ``None`` = every schema field (:data:`FIELDS`), in schema order.

    Returns
    -------
    list of str
        The missing paths, in the order checked.
    """
    check = [f.path for f in FIELDS] if paths is None else list(paths)
    return [p for p in check if is_missing(get_field(fs, p), nan_is_missing=nan_is_missing)]


# -- pre-training population ------------------------------------------------------------------------

def _source_files(source: dict[str, Any]) -> list[str]:
    """File names recorded by a loader in ``DatasetBundle.source`` (keys ending in ``files``)."""
    names: list[str] = []
    for key, value in source.items():
        if not key.endswith("files") or not isinstance(value, (list, tuple)):
            continue
        for item in value:
            if isinstance(item, dict):
                item = item.get("path") or item.get("name") or item.get("file")
            if item:
                names.append(Path(str(item)).name)
    return names


def describe_provenance(cfg: ExperimentConfig, dataset_summary: dict[str, Any] | None = None) -> str:
    """``data/provenance``: dataset name, the files read and whether the samples are synthetic.

    Parameters
    ----------
    cfg : ExperimentConfig
        The run's configuration (``data`` section).
    dataset_summary : dict or None
        ``DatasetBundle.summary()`` of the loaded data; ``None`` = describe from the config only.

    Returns
    -------
    str
        For example ``"nsl_kdd (real data; files: KDDTrain+.txt, KDDTest+.txt)"``.
    """
    summary = dataset_summary or {}
    name = summary.get("name") or cfg.data.name
    synthetic = bool(summary.get("synthetic", str(name).startswith("synthetic_")))
    files = _source_files(summary.get("source") or {})
    if not files:
        files = [Path(f).name for f in (cfg.data.train_files or []) + (cfg.data.test_files or [])]
    kind = "SYNTHETIC stand-in, generated samples" if synthetic else "real data"
    return f"{name} ({kind}" + (f"; files: {', '.join(files)})" if files else ")")


def describe_preprocessing(cfg: ExperimentConfig, dataset_summary: dict[str, Any] | None = None) -> str:
    """``data/preprocessing``: how the features were scaled and encoded.

    A loader may record its own description under ``source["preprocessing"]``; otherwise the
    description of the dataset family is used, completed with the loader options recorded in
    ``source`` (``scaling``, ``onehot_order``, ``balance``). Synthetic data had no preprocessing:
    the description names the generator instead.

    Parameters
    ----------
    cfg : ExperimentConfig
        The run's configuration.
    dataset_summary : dict or None
        ``DatasetBundle.summary()``.

    Returns
    -------
    str
    """
    summary = dataset_summary or {}
    source = summary.get("source") or {}
    if isinstance(source.get("preprocessing"), str) and source["preprocessing"].strip():
        return source["preprocessing"]
    name = str(summary.get("name") or cfg.data.name)
    family = name.removeprefix("synthetic_")
    if name.startswith("synthetic_") or summary.get("synthetic"):
        generator = source.get("generator", name)
        seed = f", seed {source['seed']}" if "seed" in source else ""
        return f"none: samples generated by {generator}{seed} in the {family} feature layout"
    text = _PREPROCESSING.get(family, f"features as produced by the {family} loader")
    if family == "nsl_kdd":
        options = {"scaling": source.get("scaling"), "onehot_order": source.get("onehot_order", cfg.data.onehot_order)}
        text += "; " + ", ".join(f"{k}={v}" for k, v in options.items() if v is not None)
    if family == "n_baiot":
        balance = source.get("balance", cfg.data.balance)
        text += f"; per-client 50/50 benign/attack balancing: {'yes' if balance else 'no'}"
    return text


def populate_pre_training(
    fs: dict[str, Any], cfg: ExperimentConfig, model: nn.Module, dataset_summary: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Fill the fields known before training from the configuration and the model (Alg. 1 steps 3-5).

    User-supplied fields (``project/purpose``, ``project/background``, ``project/organisations``)
    are copied from ``cfg.project`` when given and otherwise left empty, so that
    :func:`missing_fields` reports them; nothing is invented.

    Parameters
    ----------
    fs : dict
        FactSheet to fill (modified in place and returned).
    cfg : ExperimentConfig
        The run's configuration.
    model : torch.nn.Module
        The model template (its trainable parameters are counted).
    dataset_summary : dict or None
        ``DatasetBundle.summary()`` of the data (provenance and preprocessing).

    Returns
    -------
    dict
        ``fs``.
    """
    from fltrust.models import count_parameters

    project = cfg.project
    set_field(fs, "project/overview", project.overview.strip() or cfg.run.name)
    set_field(fs, "project/purpose", project.purpose)
    set_field(fs, "project/background", project.background)
    set_field(fs, "project/organisations", list(project.organisations))

    set_field(fs, "data/provenance", describe_provenance(cfg, dataset_summary))
    set_field(fs, "data/preprocessing", describe_preprocessing(cfg, dataset_summary))

    num_clients = cfg.partition.num_clients
    set_field(fs, "participants/client_num", num_clients)
    set_field(fs, "participants/sample_client_rate", cfg.clients_per_round() / num_clients)
    set_field(fs, "participants/client_selector", cfg.metrics.trust.client_selector)

    set_field(fs, "configuration/optimization_algorithm", STRATEGY_NAMES.get(cfg.strategy.name, cfg.strategy.name))
    model_type = TRAINING_MODEL_MAP.get(cfg.model.name)
    if model_type is None:
        log.warning("model %r is not in TRAINING_MODEL_MAP; writing its registry name", cfg.model.name)
        model_type = cfg.model.name
    set_field(fs, "configuration/training_model", model_type)
    set_field(fs, "configuration/personalization", cfg.strategy.name == "ditto")
    dp = cfg.privacy.mode != "none"
    set_field(fs, "configuration/differential_privacy", dp)
    set_field(fs, "configuration/dp_epsilon", float(cfg.privacy.target_epsilon) if dp else float("nan"))
    n_params, n_tensors = count_parameters(model)
    set_field(fs, "configuration/trainable_param_num", n_tensors)
    set_field(fs, "configuration/trainable_param_count", n_params)
    set_field(fs, "configuration/total_round_num", cfg.training.rounds)
    set_field(fs, "configuration/learning_rate", cfg.training.learning_rate)
    set_field(fs, "configuration/local_update_steps", cfg.training.local_epochs)
    return fs


# -- the prototype's populate_factsheet on its example files ------------------------------------------

def read_eval_results_final(path: str | Path) -> dict[str, Any]:
    """``Results_raw`` of the server's ``'Round': 'Final'`` line of a FederatedScope eval log.

    Each line of ``eval_results.log`` is a Python dict literal (parsed with
    :func:`ast.literal_eval`); the last server line with ``Round == 'Final'`` wins, as in the
    prototype's ``read_eval_results_log``.

    Parameters
    ----------
    path : str or Path
        The log file.

    Returns
    -------
    dict
        ``{"client_summarized_avg": {...}, "client_summarized_fairness": {...}, ...}``.
    """
    path = Path(path)
    if not path.is_file():
        raise FactsheetError(f"evaluation log {str(path)!r} does not exist")
    final = None
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = ast.literal_eval(line)
        except (ValueError, SyntaxError) as exc:
            raise FactsheetError(f"{path}: line {number} is not a Python dict literal ({exc})") from exc
        if isinstance(entry, dict) and "Server" in str(entry.get("Role", "")) and entry.get("Round") == "Final":
            final = entry.get("Results_raw")
    if not isinstance(final, dict):
        raise FactsheetError(f"{path}: no server line with 'Round': 'Final' and a 'Results_raw' dict")
    return final


def read_system_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The JSON lines of a FederatedScope ``system_metrics.log`` (clients, ``sys_avg``, ``sys_std``)."""
    path = Path(path)
    if not path.is_file():
        raise FactsheetError(f"system metrics log {str(path)!r} does not exist")
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise FactsheetError(f"{path}: line {number} is not JSON ({exc})") from exc
    return rows


def _read_json(path: str | Path, what: str) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FactsheetError(f"{what} {str(path)!r} does not exist")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise FactsheetError(f"{what} {path} is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise FactsheetError(f"{what} {path} must hold a JSON object")
    return data


def _require(mapping: dict[str, Any], keys: Sequence[str], where: str) -> Any:
    node: Any = mapping
    for depth, key in enumerate(keys):
        if not isinstance(node, dict) or key not in node:
            raise FactsheetError(f"{where}: missing key {'.'.join(keys[: depth + 1])!r}")
        node = node[key]
    return node


def populate_from_prototype_logs(
    fs: dict[str, Any],
    config_yaml: str | Path,
    eval_results_log: str | Path,
    system_metrics_log: str | Path,
    statistics_json: str | Path,
    trainable_param_names: int | Sequence[str] = 12,
    *,
    fix_b1: bool = False,
    model_map: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The prototype's ``populate_factsheet`` on FederatedScope output files (trust spec 4, 8.1).

    Reproduces HEAD b67a59c field by field (golden vector B of trust spec 8.1); with
    ``fix_b1=True`` CLEVER and feature importance are also taken from the Final
    ``client_summarized_avg`` (vector Bfix).

    Parameters
    ----------
    fs : dict
        FactSheet to fill (modified in place and returned), normally :func:`new_factsheet`.
    config_yaml : str or Path
        FederatedScope run configuration (``config.yaml``).
    eval_results_log : str or Path
        FederatedScope evaluation log (Python dict literal per line).
    system_metrics_log : str or Path
        FederatedScope system metrics (JSON per line).
    statistics_json : str or Path
        The prototype's ``statistics.json`` (class_distribution, entropy_distribution,
        client_selection).
    trainable_param_names : int or sequence of str
        The trainer context's ``trainable_para_names`` (or their number); 12 for ConvNet2.
    fix_b1 : bool
        ``False`` = HEAD: ``test_clever`` and ``test_feature_importance_cv`` stay as they are
        (NaN in the template, bug B1). ``True`` = read them from the Final summary.
    model_map : dict or None
        ``model.type`` -> transparency vocabulary; ``None`` = :data:`PROTOTYPE_MODEL_MAP`.

    Returns
    -------
    dict
        ``fs``.

    Notes
    -----
    As in HEAD: ``test_loss_avg`` is the summed ``test_loss`` (not ``test_avg_loss``, B12);
    ``test_acc_cv = cap1(test_acc_std / test_acc)`` from the Final fairness and avg summaries;
    ``selection_cv`` and ``class_imbalance`` are capped CVs of ``statistics.json``
    (the uncapped values go to the ``*_raw`` extra fields); ``avg_entropy`` is the min-max mean of
    the stored client entropies (B4); the system sizes are the ``sys_avg`` human-readable strings.
    The extra ``configuration/trainable_param_count`` is the clients' ``total_model_size``.
    """
    cfg_path = Path(config_yaml)
    if not cfg_path.is_file():
        raise FactsheetError(f"FederatedScope config {str(cfg_path)!r} does not exist")
    cfg = yaml.safe_load(cfg_path.read_text())
    if not isinstance(cfg, dict):
        raise FactsheetError(f"{cfg_path} must hold a YAML mapping")
    final = read_eval_results_final(eval_results_log)
    system = read_system_metrics(system_metrics_log)
    stats = _read_json(statistics_json, "statistics file")
    where = str(cfg_path)

    set_field(fs, "project/overview", _require(cfg, ["expname"], where))
    set_field(fs, "data/provenance", _require(cfg, ["data", "type"], where))
    set_field(fs, "data/preprocessing", _require(cfg, ["data", "transform"], where))
    entropies = list(_require(stats, ["entropy_distribution"], str(statistics_json)).values())
    set_field(fs, "data/avg_entropy", minmax_mean_entropy(entropies))

    set_field(fs, "participants/client_num", _require(cfg, ["federate", "client_num"], where))
    set_field(fs, "participants/sample_client_rate", _require(cfg, ["federate", "sample_client_rate"], where))
    set_field(fs, "participants/client_selector", _require(cfg, ["federate", "sampler"], where))

    set_field(fs, "configuration/optimization_algorithm", _require(cfg, ["federate", "method"], where))
    model_type = _require(cfg, ["model", "type"], where)
    mapping = PROTOTYPE_MODEL_MAP if model_map is None else model_map
    if model_type not in mapping:
        raise FactsheetError(f"model type {model_type!r} of {where} is not in the model map {mapping}; pass model_map")
    set_field(fs, "configuration/training_model", mapping[model_type])
    personalization = cfg.get("personalization") or {}
    personalized = bool(personalization) and personalization.get("local_param", []) != []
    set_field(fs, "configuration/personalization", personalized)
    nbafl = cfg.get("nbafl") or {}
    set_field(fs, "configuration/differential_privacy", bool(nbafl.get("use", False)))
    set_field(fs, "configuration/dp_epsilon", float(nbafl["epsilon"]) if "epsilon" in nbafl else float("nan"))
    n_tensors = trainable_param_names if isinstance(trainable_param_names, int) else len(trainable_param_names)
    set_field(fs, "configuration/trainable_param_num", n_tensors)
    sizes = [row["total_model_size"] for row in system if isinstance(row.get("total_model_size"), (int, float))]
    set_field(fs, "configuration/trainable_param_count", max(sizes) if sizes else float("nan"))
    set_field(fs, "configuration/total_round_num", _require(cfg, ["federate", "total_round_num"], where))
    set_field(fs, "configuration/learning_rate", _require(cfg, ["train", "optimizer", "lr"], where))
    set_field(fs, "configuration/local_update_steps", _require(cfg, ["train", "local_update_steps"], where))

    avg = _require(final, ["client_summarized_avg"], str(eval_results_log))
    fairness = _require(final, ["client_summarized_fairness"], str(eval_results_log))
    set_field(fs, "performance/test_loss_avg", avg["test_loss"])
    set_field(fs, "performance/test_acc_avg", avg["test_acc"])
    if fix_b1:
        set_field(fs, "performance/test_clever", avg["test_clever"])
        set_field(fs, "performance/test_feature_importance_cv", avg["test_feature_importance_cv"])

    acc_cv = fairness["test_acc_std"] / avg["test_acc"]
    set_field(fs, "fairness/test_acc_cv", cap1(acc_cv))
    set_field(fs, "fairness/test_acc_cv_raw", acc_cv)
    rates = list(_require(stats, ["client_selection"], str(statistics_json)).values())
    set_field(fs, "fairness/selection_cv", selection_cv(rates))
    set_field(fs, "fairness/selection_cv_raw", selection_cv(rates, cap=False))
    classes = list(_require(stats, ["class_distribution"], str(statistics_json)).values())
    set_field(fs, "fairness/class_imbalance", class_imbalance(classes, method="present_classes"))
    set_field(fs, "fairness/class_imbalance_raw", class_imbalance(classes, method="present_classes", cap=False))

    sys_avg = next((row for row in system if row.get("id") == "sys_avg"), None)
    if sys_avg is None:
        raise FactsheetError(f"{system_metrics_log}: no line with id 'sys_avg'")
    for field, key in (
        ("avg_time_minutes", "fl_end_time_minutes"),
        ("avg_model_size", "total_model_size"),
        ("avg_upload_bytes", "total_upload_bytes"),
        ("avg_download_bytes", "total_download_bytes"),
    ):
        set_field(fs, f"system/{field}", _require(sys_avg, [f"sys_avg/{key}"], str(system_metrics_log)))
    return fs


# -- JSON I/O -------------------------------------------------------------------------------------

def _json_ready(value: Any, *, nan_as_null: bool) -> Any:
    """Plain JSON types; NaN/inf become ``None`` when ``nan_as_null``."""
    if isinstance(value, dict):
        return {str(k): _json_ready(v, nan_as_null=nan_as_null) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_json_ready(v, nan_as_null=nan_as_null) for v in list(value)]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return None if nan_as_null and not math.isfinite(f) else f
    return value


def save_factsheet(fs: dict[str, Any], path: str | Path, *, nan_as_null: bool = True) -> Path:
    """Write a FactSheet as JSON atomically (temporary file + rename).

    Parameters
    ----------
    fs : dict
        The FactSheet.
    path : str or Path
        Target file (folders are created).
    nan_as_null : bool
        Write NaN as ``null`` (valid JSON, B13; default). ``False`` writes the prototype's
        non-standard ``NaN`` token (prototype mode).

    Returns
    -------
    Path
        The written file.
    """
    from fltrust.core.io import atomic_write_text

    path = Path(path)
    text = json.dumps(_json_ready(fs, nan_as_null=nan_as_null), indent=2, allow_nan=not nan_as_null)
    atomic_write_text(path, text + "\n")
    return path


def load_factsheet(path: str | Path) -> dict[str, Any]:
    """Read a FactSheet JSON file (``NaN`` tokens or ``null``).

    ``null`` in a numeric schema field becomes NaN again, so that ``save_factsheet`` followed by
    ``load_factsheet`` returns the same FactSheet in either NaN convention.

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    dict
        The FactSheet.
    """
    fs = _read_json(path, "FactSheet")
    for spec in (*FIELDS, *EXTENDED_FIELDS):
        section, name = spec.path.split("/")
        node = fs.get(section)
        if spec.kind == "number" and isinstance(node, dict) and name in node and node[name] is None:
            node[name] = float("nan")
    return fs
