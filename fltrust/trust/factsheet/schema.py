"""The FederatedTrust FactSheet schema: its fields, sections and template (trust spec 4, docs/references.md#trust-4).

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
them uncapped because the paper-mode definitions bin them (spec 7.3, docs/references.md#trust-7-3); the ``*_raw`` fields
are always uncapped.

Template defaults (:func:`new_factsheet`): strings ``""``, numbers NaN, booleans ``False``, lists
``[]``, as the prototype template. The system sizes are numbers here (NaN by default), where the
prototype template had ``""``.

Extended mode (``metrics.trust.mode: extended``) adds the fields that its measures declare
(:func:`extended_fields`; each measure is a function registered with
:func:`fltrust.trust.measures.registry.measure`, which names the field's path, type and source, so
a new metric's field is declared where it is computed, not here) in the sections
:func:`extended_sections` (``privacy``, ``robustness``, ``explainability``, ``accountability``,
``federation``, ``sustainability``; plus a few in ``fairness`` and ``participants``) and a
``provenance`` section (:data:`PROVENANCE_SECTION`): one entry per metric of the definitions,
``{"status": "measured" | "declared" | "missing" | "n/a", "method": ..., "reason": ...}``
(:func:`fltrust.trust.factsheet.io.set_provenance`). They are created only by
``new_factsheet(extended=True)``, so the prototype, paper and fixed FactSheets are unchanged.
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

PROVENANCE_SECTION = "provenance"
"""FactSheet section with one ``{"status", "method", "reason"}`` entry per metric path (extended mode)."""
PROVENANCE_STATUSES = ("measured", "declared", "missing", "n/a")
"""How a metric's raw value was obtained; the scoring engine leaves ``n/a`` metrics out of the means."""

KINDS = ("str", "text", "number", "bool", "list")
"""Field types (:attr:`FactsheetField.kind`)."""
PHASES = ("pre", "during", "post")
"""When in the run a field is known (:attr:`FactsheetField.phase`)."""

_DECLARED: dict[str, tuple[FactsheetField, str]] = {}  # path -> (field, declared by), in declaration order


def declare_fields(fields: Sequence[FactsheetField], *, by: str) -> None:
    """Add extended-mode fields to the schema (what :func:`fltrust.trust.measures.registry.measure` does).

    Parameters
    ----------
    fields : sequence of FactsheetField
        The fields, in the order the FactSheet lists them.
    by : str
        Who declares them (a measure's name); named when another declaration claims a path.

    Raises
    ------
    FactsheetError
        A path that is not ``section/field``, a template field, a field another declaration
        holds, an unknown kind or phase, or a section named ``provenance``.
    """
    for spec in fields:  # every field checked before any is declared
        parts = spec.path.split("/")
        if len(parts) != 2 or not all(p.isidentifier() for p in parts):
            raise FactsheetError(f"field path {spec.path!r} must look like 'section/field' (letters, digits, _)")
        if parts[0] == PROVENANCE_SECTION:
            raise FactsheetError(f"field {spec.path!r}: the {PROVENANCE_SECTION!r} section is the metrics' provenance")
        if spec.kind not in KINDS or spec.phase not in PHASES:
            raise FactsheetError(f"field {spec.path!r}: kind {spec.kind!r} / phase {spec.phase!r}; choose a kind of "
                                 f"{list(KINDS)} and a phase of {list(PHASES)}")
        if spec.path in FIELD_BY_PATH:
            raise FactsheetError(f"field {spec.path!r} is in the FactSheet template already; pick a new path")
        holder = _DECLARED.get(spec.path)
        if holder is not None and holder[1] != by:
            raise FactsheetError(f"field {spec.path!r} is already declared by {holder[1]!r}; pick a new path")
    _DECLARED.update((spec.path, (spec, by)) for spec in fields)


def undeclare_fields(*, by: str) -> None:
    """Remove the fields declared by ``by`` (:func:`fltrust.trust.measures.registry.unregister_measure`).

    Parameters
    ----------
    by : str
        The declaration's name.
    """
    for path in [p for p, (_, holder) in _DECLARED.items() if holder == by]:
        del _DECLARED[path]


def extended_fields() -> tuple[FactsheetField, ...]:
    """Return the extended-mode fields: those the registered measures declare, in declaration order.

    The packaged measures (:mod:`fltrust.trust.measures.taxonomy`) are registered when this package
    is imported (:mod:`fltrust.trust.factsheet` imports :mod:`fltrust.trust.measures`); a user's
    measure adds its own when its module is imported.

    Returns
    -------
    tuple of FactsheetField
    """
    return tuple(spec for spec, _ in _DECLARED.values())


def extended_sections() -> tuple[str, ...]:
    """Return the sections the extended fields add after :data:`SECTIONS`, in order of appearance.

    Returns
    -------
    tuple of str
    """
    sections = dict.fromkeys(spec.path.split("/")[0] for spec in extended_fields())
    return tuple(s for s in sections if s not in SECTIONS)


def field_spec(path: str) -> FactsheetField | None:
    """Return the schema entry of a template or extended field; ``None`` for an unknown path.

    Parameters
    ----------
    path : str
        ``"section/field"``.

    Returns
    -------
    FactsheetField or None
    """
    if path in FIELD_BY_PATH:
        return FIELD_BY_PATH[path]
    held = _DECLARED.get(path)
    return None if held is None else held[0]


USER_SUPPLIED_FIELDS = ("project/purpose", "project/background", "project/organisations")
"""Fields only a person can fill (paper: manual FactSheet entries); reported when empty."""


def new_factsheet(*, include_extras: bool = True, extended: bool = False) -> dict[str, dict[str, Any]]:
    """Make an empty FactSheet (the prototype template values, see the module docstring).

    Parameters
    ----------
    include_extras : bool
        Include the fields that are not in the prototype template (``extra`` in :data:`FIELDS`).
    extended : bool
        Also add the extended-mode fields (:func:`extended_fields`) and an empty ``provenance``
        section.

    Returns
    -------
    dict
        ``{section: {field: default}}`` in template order.
    """
    fs: dict[str, dict[str, Any]] = {section: {} for section in SECTIONS}
    specs = [spec for spec in FIELDS if include_extras or not spec.extra] + list(extended_fields() if extended else ())
    for spec in specs:  # the extended fields' own sections follow the template's, in declaration order
        section, name = spec.path.split("/")
        fs.setdefault(section, {})[name] = spec.default
    if extended:
        fs[PROVENANCE_SECTION] = {}
    return fs


def schema_table(fields: Sequence[FactsheetField] = FIELDS) -> str:
    """Render the schema as a reStructuredText table (the module docstring shows one).

    Parameters
    ----------
    fields : sequence of FactsheetField
        The rows, in order; default :data:`FIELDS` (:func:`extended_fields` for extended mode).

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
