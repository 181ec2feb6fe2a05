"""The FederatedTrust FactSheet schema: its fields, sections and template (trust spec 4).

A FactSheet is a plain nested dict ``{section: {field: value}}`` with the 7 sections of the
prototype's ``configs/factsheet_template.json`` (trust spec 4; paper Sec. 5 and Table 2). The
scoring engine (:mod:`fltrust.trust.scoring`) reads it by field path ``"section/field"``.

The schema is :data:`FIELDS`, in template order, one :class:`FactsheetField` per field: its type,
``phase`` (pre-, during- or post-training), ``who`` (the federation actor that produces the value,
paper Table 2), where fltrust takes it from and, where it differs, where the prototype took it
from. ``extra`` fields are not in the prototype template. :func:`schema_table` prints the table:

>>> print(schema_table(FIELDS[:2]))
================  ====  =====  =============  =======================================================
field path        type  phase  who            source
================  ====  =====  =============  =======================================================
project/overview  str   pre    server         project.overview, else run.name; prototype: cfg.expname
project/purpose   str   pre    project owner  project.purpose; prototype: manual, never filled
================  ====  =====  =============  =======================================================

The fairness CVs are capped at 1 as in HEAD, except in the observer's paper mode, which stores
them uncapped because the paper-mode definitions bin them (spec 7.3); the ``*_raw`` fields are
always uncapped.

Template defaults (:func:`new_factsheet`): strings ``""``, numbers NaN, booleans ``False``, lists
``[]``, as the prototype template. The system sizes are numbers here (NaN by default), where the
prototype template had ``""``.

Extended mode (``metrics.trust.mode: extended``) adds the fields of :data:`EXTENDED_FIELDS` in
the sections :data:`EXTENDED_SECTIONS` (``privacy``, ``robustness``, ``explainability``,
``accountability``, ``federation``, ``sustainability``; plus a few in ``fairness`` and
``participants``) and a ``provenance`` section (:data:`PROVENANCE_SECTION`): one entry per metric
of ``extended.yaml``, ``{"status": "measured" | "declared" | "missing" | "n/a", "method": ...,
"reason": ...}`` (:func:`fltrust.trust.factsheet.io.set_provenance`). They are created only by
``new_factsheet(extended=True)``, so the prototype, paper and fixed FactSheets are unchanged.

Spec and bug references ("fairness spec §N", "trust spec §N", "Bn") are defined in ``docs/references.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class FactsheetError(ValueError):
    """A FactSheet or one of its input files is invalid; the message names it and the fix."""


@dataclass(frozen=True)
class FactsheetField:
    """One FactSheet field (:func:`schema_table` prints them all).

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
    prototype : str
        Where the prototype took it from, when that differs (``""`` = the same).
    """

    path: str
    kind: str
    phase: str
    who: str
    source: str
    extra: bool = False
    prototype: str = ""

    @property
    def default(self) -> Any:
        """Template value: ``""``, NaN, ``False`` or ``[]``."""
        return {"str": "", "text": "", "number": float("nan"), "bool": False, "list": []}[self.kind]


_RAW_CV = "the 5796d0b-era prototype stored it; the paper's Figures 4-5 need it, spec 7.3"
_F = FactsheetField
FIELDS: tuple[FactsheetField, ...] = (
    _F("project/overview", "str", "pre", "server", "project.overview, else run.name", prototype="cfg.expname"),
    _F("project/purpose", "str", "pre", "project owner", "project.purpose", prototype="manual, never filled"),
    _F("project/background", "str", "pre", "project owner", "project.background", prototype="manual"),
    _F("project/organisations", "list", "pre", "project owner",
       "project.organisations (paper Table 2: the participants' organisations)", extra=True),
    _F("data/provenance", "str", "pre", "server", "dataset name, files, synthetic flag", prototype="cfg.data.type"),
    _F("data/preprocessing", "text", "pre", "server", "scaling and encoding of the features",
       prototype="cfg.data.transform, a list"),
    _F("data/avg_entropy", "number", "pre", "clients -> server", "statistics.avg_entropy (spec 3.8)"),
    _F("participants/client_num", "number", "pre", "server", "registered clients C"),
    _F("participants/sample_client_rate", "number", "pre", "server", "clients per round / C"),
    _F("participants/client_selector", "str", "pre", "server", "metrics.trust.client_selector",
       prototype="federate.sampler"),
    _F("configuration/optimization_algorithm", "str", "pre", "server", "STRATEGY_NAMES[strategy.name]",
       prototype="federate.method"),
    _F("configuration/training_model", "str", "pre", "server", "TRAINING_MODEL_MAP[model.name]",
       prototype="model_map.json"),
    _F("configuration/personalization", "bool", "pre", "server", "strategy.name == 'ditto'"),
    _F("configuration/differential_privacy", "bool", "pre", "server", "privacy.mode != 'none'", prototype="nbafl.use"),
    _F("configuration/dp_epsilon", "number", "pre", "server", "privacy.target_epsilon or NaN"),
    _F("configuration/trainable_param_num", "number", "pre", "server", "trainable parameter tensors (B9)"),
    _F("configuration/trainable_param_count", "number", "pre", "server",
       "trainable scalar parameters (the paper's 'number of parameters')", extra=True),
    _F("configuration/total_round_num", "number", "pre", "server", "training.rounds"),
    _F("configuration/learning_rate", "number", "pre", "server", "training.learning_rate"),
    _F("configuration/local_update_steps", "number", "pre", "server", "training.local_epochs"),
    _F("performance/test_loss_avg", "number", "post", "clients -> server", "mean per-client loss of the global model",
       prototype="summed test_loss, B12"),
    _F("performance/test_acc_avg", "number", "post", "clients -> server", "mean per-client accuracy of the global model"),
    _F("performance/test_feature_importance_cv", "number", "post", "server", "explainability",
       prototype="never written by HEAD, B1"),
    _F("performance/test_clever", "number", "post", "server", "robustness.clever_score",
       prototype="never written by HEAD, B1"),
    _F("fairness/test_acc_cv", "number", "post", "server", "statistics.accuracy_cv"),
    _F("fairness/selection_cv", "number", "post", "server", "statistics.selection_cv"),
    _F("fairness/class_imbalance", "number", "pre", "clients -> server", "statistics.class_imbalance"),
    _F("fairness/test_acc_cv_raw", "number", "post", "server", "accuracy CV, uncapped", extra=True,
       prototype=_RAW_CV),
    _F("fairness/selection_cv_raw", "number", "post", "server", "selection CV, uncapped", extra=True,
       prototype=_RAW_CV),
    _F("fairness/class_imbalance_raw", "number", "pre", "clients -> server", "class CV, uncapped", extra=True,
       prototype=_RAW_CV),
    _F("system/avg_time_minutes", "number", "post", "server", "run wall time / 60"),
    _F("system/avg_model_size", "number", "post", "server", "scalar parameter count",
       prototype="a human-readable string such as '6.24M'"),
    _F("system/avg_upload_bytes", "number", "post", "server", "mean bytes sent per client over the run",
       prototype="a string such as '366.9K'"),
    _F("system/avg_download_bytes", "number", "post", "server", "mean bytes received per client",
       prototype="a string"),
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
:func:`fltrust.trust.factsheet.io.set_provenance`) is written beside them."""

EXTENDED_SECTIONS = ("privacy", "robustness", "explainability", "accountability", "federation", "sustainability")
"""Sections the extended fields add after :data:`SECTIONS`."""

PROVENANCE_SECTION = "provenance"
"""FactSheet section with one ``{"status", "method", "reason"}`` entry per metric path (extended mode)."""
PROVENANCE_STATUSES = ("measured", "declared", "missing", "n/a")
"""How a metric's raw value was obtained; the scoring engine leaves ``n/a`` metrics out of the means."""

ALL_FIELD_BY_PATH: dict[str, FactsheetField] = {**FIELD_BY_PATH, **{f.path: f for f in EXTENDED_FIELDS}}

USER_SUPPLIED_FIELDS = ("project/purpose", "project/background", "project/organisations")
"""Fields only a person can fill (paper: manual FactSheet entries); reported when empty."""


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


def schema_table(fields: Sequence[FactsheetField] = FIELDS) -> str:
    """The schema as a reStructuredText table (the module docstring shows one).

    Parameters
    ----------
    fields : sequence of FactsheetField
        The rows, in order; default :data:`FIELDS` (:data:`EXTENDED_FIELDS` for extended mode).

    Returns
    -------
    str
        Columns: field path (``(extra)`` for a field not in the prototype template), type, phase,
        who, and fltrust's source (then the prototype's, where it differs).
    """
    header = ("field path", "type", "phase", "who", "source")
    rows = [
        (f.path + (" (extra)" if f.extra else ""), f.kind, f.phase, f.who,
         f.source + (f"; prototype: {f.prototype}" if f.prototype else ""))
        for f in fields
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    rule = "  ".join("=" * width for width in widths)
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in (header, *rows)]
    return "\n".join([rule, lines[0], rule, *lines[1:], rule])
