r"""FederatedTrust scoring engine: factsheet -> metric, notion, pillar and trust scores.

Paper: "FederatedTrust: A Solution for Trustworthy Federated Learning", Sections 4-5 (taxonomy,
Table 2 metrics, Table 3 normalisations); trust spec sections 2-3 (engine and metric catalogue),
7 (paper reproduction), 8 (golden vectors) and 9 (bugs), defined in ``docs/references.md``.

The engine knows nothing about federated learning. A *definitions* file (YAML or JSON, see
``fltrust/trust/definitions/``) describes the tree pillar -> notion -> metric; each metric reads
factsheet fields, applies an *operation* (:mod:`.operations`) and a score *type*
(:mod:`.normalization`). Scores are then aggregated bottom-up:

.. math::

    \text{notion} = \sum_m w_m s_m, \qquad \text{pillar} = \sum_n w_n\, \text{notion}_n,
    \qquad \text{trust} = \sum_p W_p\, \text{pillar}_p

with the definitions' weights when ``use_weights=True``, and plain means (w = 1/k) otherwise,
which is the paper's statement and the prototype's default. ``pillar_aggregation: flattened``
(paper mode) makes the pillar the plain mean of all its metrics instead.

Modes
-----
==============  ==================  =============================================  ==========
mode            definitions         fixes (spec 9)                                 rounding
==============  ==================  =============================================  ==========
``prototype``   prototype.yaml      none: HEAD b67a59c exactly (golden vectors)    prototype
``paper``       paper.yaml          nan_is_missing, unknown_key_zero, coerce_types prototype
``fixed``       prototype.yaml      all of :data:`FIXES`                           final
``extended``    extended.yaml       nan_is_missing, unknown_key_zero, coerce_types final
                                    (the other fixes are written into the file)
==============  ==================  =============================================  ==========

``extended`` scores all 36 metrics of the paper's taxonomy (Sec. 3; trust spec 6) plus nebula's
sustainability pillar (spec 10), with the bug fixes built into ``extended.yaml``. Its definitions
set ``use_provenance: true``: every metric then reads its entry in the FactSheet's ``provenance``
section (``"measured"``, ``"declared"``, ``"missing"`` or ``"n/a"`` with a reason, filled by the
trust observer), the report shows it, and **n/a metrics are left out of the means** (weights
renormalised over the applicable metrics; a notion or pillar with no applicable metric is left
out too). :data:`MODES` keeps the three modes that score the paper's 20-metric tree;
:data:`ALL_MODES` adds ``extended``.

Paper mode leaves off the fixes that contradict the paper's own numbers: B3 (its random
sampling scored 1, federation 0.92), B6 (Table 3 CLEVER bins) and B11 (its fairness values need
uncapped CVs). Any mode accepts an explicit ``fixes=[...]`` and ``rounding=...``.

Prototype rounding (spec 2.5): metric scores are rounded to 2 decimals before aggregation,
notion scores are not rounded, pillar and trust scores are rounded to 2 decimals (trust from
the rounded pillars). Rounding is numpy's (``np.round``: half to even after scaling by 100),
as the prototype's ``round`` on numpy floats; sums start at 0.0 and add in definition order,
so ties such as (1 + 0.85)/2 = 0.925 round to 0.92 as in the paper. ``rounding="final"``
(fix B12) keeps every value exact; round for display only.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import json
import logging
import math
import types
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from fltrust.names import (
    EXTENDED_TRUST_MODE,
    PAPER_TREE_TRUST_MODES,
    TRUST_MODES,
    TRUST_SCORING_DEFAULTS,
    TrustFix,
    TrustMode,
)
from fltrust.trust import normalization as norm
from fltrust.trust import operations as ops
from fltrust.trust.report import MetricResult, NotionResult, PillarResult, TrustReport

logger = logging.getLogger(__name__)

MODES = PAPER_TREE_TRUST_MODES
"""The modes that score the paper's implemented 20-metric tree (6 pillars)."""
EXTENDED_MODE = EXTENDED_TRUST_MODE
ALL_MODES = TRUST_MODES
"""Every scoring mode: :data:`MODES` plus ``extended`` (36 metrics + sustainability)."""
MODE_DEFAULTS = TRUST_SCORING_DEFAULTS
"""Per mode: packaged definitions file, default fixes and default rounding (defined with the
other modes' defaults in :mod:`fltrust.names`)."""
PROVENANCE_SECTION = "provenance"
"""FactSheet section with one ``{"status", "method", "reason"}`` entry per metric path."""
PROVENANCE_STATUSES = ("measured", "declared", "missing", "n/a")
ROUNDINGS = ("prototype", "final")
PILLAR_AGGREGATIONS = ("notion_mean", "flattened")

PROTOTYPE_PILLAR_WEIGHTS = {
    "robustness": 0.2,
    "privacy": 0.2,
    "fairness": 0.2,
    "explainability": 0.2,
    "accountability": 0.1,
    "architectural_soundness": 0.1,
}
"""Pillar weights hard-coded in the prototype's metric.py (spec 2.5); applied only when a file in
the prototype's own JSON format (no pillar weights in it) is loaded."""

PARAM_COUNT_FIELD = "configuration/trainable_param_count"
"""Factsheet field with the SCALAR number of trainable parameters (fix B9, paper mode). The
prototype's ``configuration/trainable_param_num`` holds the number of parameter tensors."""

CLEVER_RADIUS = 2.0
"""CLEVER-u radius R_L2 of the prototype (spec 3.10); fix B6 scores min(CLEVER / radius, 1)."""

OPERATION_ARITY: dict[str, int | None] = {
    "get_value": 1,
    "check_properties": None,  # one or more
    "get_global_privacy_risk": 3,
    "get_uniform_entropy": 1,
    "get_capped_value": 1,
    "check_client_selector": 1,
    "first_present": None,
    "mean_of_present": None,
}
"""Operations a metric may name, with their number of inputs (None = any number >= 1)."""

TYPE_PARAMETERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # type: (required keys, optional keys)
    "true_score": (frozenset(), frozenset({"direction"})),
    "ranges": (frozenset({"ranges"}), frozenset({"direction"})),
    "breakpoints": (frozenset({"ranges"}), frozenset({"direction"})),
    "scaled_score": (frozenset({"scale"}), frozenset({"direction"})),
    "score_mapping": (frozenset({"score_map"}), frozenset({"map_normalization"})),
    "score_ranking": (frozenset({"score_map"}), frozenset({"direction"})),
    "score_map_value": (frozenset({"score_map"}), frozenset()),
    "property_check": (frozenset(), frozenset()),
}
"""Score types (see :mod:`fltrust.trust.normalization`) and the metric keys each one uses."""

_TOP_KEYS = frozenset({"name", "description", "pillar_aggregation", "use_provenance", "pillars"})
_PILLAR_KEYS = frozenset({"weight", "label", "description", "notions"})
_NOTION_KEYS = frozenset({"weight", "label", "description", "metrics"})
_METRIC_COMMON_KEYS = frozenset({"inputs", "operation", "type", "weight", "label", "description", "score_function"})
_TYPE_KEYS = frozenset().union(*(req | opt for req, opt in TYPE_PARAMETERS.values()))


class DefinitionsError(ValueError):
    """A metric definitions file is invalid; the message names the file, the key and the fix."""


class TrustScoringError(ValueError):
    """A factsheet cannot be scored as asked; the message names the metric or argument."""


# ---------------------------------------------------------------------------------------------
# Definitions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricDefinition:
    """One metric: which factsheet fields, which operation, which score type.

    Attributes
    ----------
    name : str
    inputs : tuple of str
        Factsheet field paths, passed to the operation as positional arguments.
    operation : str
        A key of :data:`OPERATION_ARITY`.
    type : str
        A key of :data:`TYPE_PARAMETERS`.
    direction : {"asc", "desc"}
    weight : float or None
        Weight within the notion (``use_weights=True`` only).
    ranges : tuple of float or None
        Ascending boundaries (types ``ranges`` and ``breakpoints``).
    score_map : mapping of str to float or None
        Ratings (types ``score_mapping``, ``score_ranking``, ``score_map_value``).
    map_normalization : {"minmax", "l2"}
        ``score_mapping`` only.
    scale : tuple (low, high) or None
        ``scaled_score`` only.
    label, description : str
    """

    name: str
    inputs: tuple[str, ...]
    operation: str
    type: str
    direction: str = "asc"
    weight: float | None = None
    ranges: tuple[float, ...] | None = None
    score_map: Mapping[str, float] | None = None
    map_normalization: str = "minmax"
    scale: tuple[float, float] | None = None
    label: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        where = f"metric {self.name!r}"
        if self.operation not in OPERATION_ARITY:
            raise DefinitionsError(f"{where}: unknown operation {self.operation!r}; choose one of {sorted(OPERATION_ARITY)}")
        if self.type not in TYPE_PARAMETERS:
            raise DefinitionsError(f"{where}: unknown type {self.type!r}; choose one of {sorted(TYPE_PARAMETERS)}")
        arity = OPERATION_ARITY[self.operation]
        if not self.inputs or (arity is not None and len(self.inputs) != arity):
            wanted = "at least 1" if arity is None else str(arity)
            raise DefinitionsError(f"{where}: operation {self.operation!r} takes {wanted} input(s), got {len(self.inputs)}")
        if self.direction not in norm.DIRECTIONS:
            raise DefinitionsError(f"{where}: direction={self.direction!r}; choose 'asc' or 'desc'")
        if self.map_normalization not in norm.MAP_NORMALIZATIONS:
            raise DefinitionsError(
                f"{where}: map_normalization={self.map_normalization!r}; choose one of {list(norm.MAP_NORMALIZATIONS)}"
            )
        required, _ = TYPE_PARAMETERS[self.type]
        for key in required:
            if getattr(self, key) is None:
                raise DefinitionsError(f"{where}: type {self.type!r} needs the key {key!r}")
        if self.ranges is not None:
            if len(self.ranges) < (2 if self.type == "breakpoints" else 1):
                raise DefinitionsError(f"{where}: 'ranges' is too short for type {self.type!r}")
            if any(b <= a for a, b in zip(self.ranges, self.ranges[1:])):
                raise DefinitionsError(f"{where}: 'ranges' must be strictly ascending, got {list(self.ranges)}")
        if self.scale is not None and (len(self.scale) != 2 or not self.scale[0] < self.scale[1]):
            raise DefinitionsError(f"{where}: 'scale' must be [low, high] with low < high, got {self.scale!r}")
        if self.score_map is not None:
            if not self.score_map:
                raise DefinitionsError(f"{where}: 'score_map' is empty")
            if self.type == "score_mapping" and self.map_normalization == "minmax" and len(set(self.score_map.values())) < 2:
                raise DefinitionsError(f"{where}: a min-max 'score_map' needs two different values")


@dataclass(frozen=True)
class NotionDefinition:
    """A notion: a group of metrics with a weight within its pillar."""

    name: str
    metrics: tuple[MetricDefinition, ...]
    weight: float | None = None
    label: str = ""
    description: str = ""


@dataclass(frozen=True)
class PillarDefinition:
    """A pillar: a group of notions with a weight in the trust score (fix B13: from the file)."""

    name: str
    notions: tuple[NotionDefinition, ...]
    weight: float | None = None
    label: str = ""
    description: str = ""


@dataclass(frozen=True)
class Definitions:
    """A complete metric tree, as loaded by :func:`load_definitions`."""

    name: str
    pillars: tuple[PillarDefinition, ...]
    pillar_aggregation: str = "notion_mean"
    description: str = ""
    source: str = "<dict>"
    use_provenance: bool = False

    def metric_paths(self) -> list[str]:
        """``pillar/notion/metric`` of every metric, in order."""
        return [f"{p.name}/{n.name}/{m.name}" for p in self.pillars for n in p.notions for m in n.metrics]

    def get_metric(self, path: str) -> MetricDefinition:
        """The metric at ``pillar/notion/metric``."""
        for pillar in self.pillars:
            for notion in pillar.notions:
                for metric in notion.metrics:
                    if f"{pillar.name}/{notion.name}/{metric.name}" == path:
                        return metric
        raise KeyError(f"no metric {path!r} in definitions {self.name!r}")

    def replace_metric(self, path: str, **changes: Any) -> Definitions:
        """A copy with the metric at ``path`` changed (fields as in :class:`MetricDefinition`)."""
        found = False
        pillars = []
        for pillar in self.pillars:
            notions = []
            for notion in pillar.notions:
                metrics = []
                for metric in notion.metrics:
                    if f"{pillar.name}/{notion.name}/{metric.name}" == path:
                        metric = dataclasses.replace(metric, **changes)
                        found = True
                    metrics.append(metric)
                notions.append(dataclasses.replace(notion, metrics=tuple(metrics)))
            pillars.append(dataclasses.replace(pillar, notions=tuple(notions)))
        if not found:
            raise KeyError(f"no metric {path!r} in definitions {self.name!r}")
        return dataclasses.replace(self, pillars=tuple(pillars))


def _check_keys(data: Any, allowed: frozenset[str], where: str, source: str) -> None:
    if not isinstance(data, Mapping):
        raise DefinitionsError(f"{source}: {where} must be a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise DefinitionsError(f"{source}: unknown key(s) {unknown} in {where}; allowed keys are {sorted(allowed)}")


def _number(value: Any, where: str, source: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise DefinitionsError(
            f"{source}: {where} must be a number, got {value!r} (in YAML write 1000 or 1.0e+3, not 1e3)"
        )
    return float(value)


def _weight(data: Mapping[str, Any], where: str, source: str) -> float | None:
    if data.get("weight") is None:
        return None
    weight = _number(data["weight"], f"{where}.weight", source)
    if weight < 0:
        raise DefinitionsError(f"{source}: {where}.weight={weight} must be >= 0")
    return weight


def _parse_input(entry: Any, where: str, source: str) -> str:
    if isinstance(entry, str):
        path = entry
    else:
        _check_keys(entry, frozenset({"source", "field_path"}), f"{where}.inputs entry", source)
        if entry.get("source", "factsheet") != "factsheet":
            raise DefinitionsError(f"{source}: {where}: input source {entry['source']!r} is not supported; use 'factsheet'")
        path = entry.get("field_path")
    if not isinstance(path, str) or not path.strip("/"):
        raise DefinitionsError(f"{source}: {where}: input {entry!r} must be a 'section/field' path")
    return path


def _parse_metric(name: str, data: Any, where: str, source: str) -> MetricDefinition:
    _check_keys(data, _METRIC_COMMON_KEYS | _TYPE_KEYS, where, source)
    for key in ("inputs", "operation", "type"):
        if key not in data:
            raise DefinitionsError(f"{source}: {where} needs the key {key!r}")
    kind = data["type"]
    if kind in TYPE_PARAMETERS:
        required, optional = TYPE_PARAMETERS[kind]
        unused = sorted((set(data) & _TYPE_KEYS) - required - optional)
        if unused:
            raise DefinitionsError(f"{source}: {where}: key(s) {unused} are not used by type {kind!r}; remove them")
    inputs = data["inputs"]
    if not isinstance(inputs, list):
        raise DefinitionsError(f"{source}: {where}.inputs must be a list of field paths")
    ranges = data.get("ranges")
    if ranges is not None:
        if not isinstance(ranges, list):
            raise DefinitionsError(f"{source}: {where}.ranges must be a list of numbers")
        ranges = tuple(_number(v, f"{where}.ranges", source) for v in ranges)
    score_map = data.get("score_map")
    if score_map is not None:
        if not isinstance(score_map, Mapping):
            raise DefinitionsError(f"{source}: {where}.score_map must be a mapping name -> number")
        score_map = types.MappingProxyType(
            {str(k): _number(v, f"{where}.score_map[{k!r}]", source) for k, v in score_map.items()}
        )
    scale = data.get("scale")
    if scale is not None:
        if not isinstance(scale, list):
            raise DefinitionsError(f"{source}: {where}.scale must be [low, high]")
        scale = tuple(_number(v, f"{where}.scale", source) for v in scale)
    try:
        return MetricDefinition(
            name=name,
            inputs=tuple(_parse_input(entry, where, source) for entry in inputs),
            operation=data["operation"],
            type=kind,
            direction=data.get("direction", "asc"),
            weight=_weight(data, where, source),
            ranges=ranges,
            score_map=score_map,
            map_normalization=data.get("map_normalization", "minmax"),
            scale=scale,
            label=str(data.get("label", "")),
            description=str(data.get("description", "")),
        )
    except DefinitionsError as exc:
        raise DefinitionsError(f"{source}: {where}: {exc}") from None


def _is_prototype_json_layout(data: Mapping[str, Any]) -> bool:
    """The prototype's eval_metrics JSON: pillars at the top level, no 'pillars' key."""
    return "pillars" not in data and all(
        isinstance(notions, Mapping) and all(isinstance(n, Mapping) and "metrics" in n for n in notions.values())
        for notions in data.values()
    ) and bool(data)


def definitions_from_dict(data: Mapping[str, Any], *, source: str = "<dict>", name: str | None = None) -> Definitions:
    """Build :class:`Definitions` from a parsed YAML/JSON document.

    Two layouts are accepted:

    - fltrust's (``prototype.yaml``): top-level ``name``, ``description``,
      ``pillar_aggregation`` and ``pillars`` -> pillar {weight, label, notions -> notion
      {weight, label, metrics -> metric}};
    - the prototype's ``eval_metrics_v1.json``: pillars at the top level, notions with
      ``weight`` and ``metrics``, inputs as ``{"source": "factsheet", "field_path": ...}``.
      Its pillar weights were hard-coded in code, so :data:`PROTOTYPE_PILLAR_WEIGHTS` is used.
      Its ``score_function`` key is accepted and ignored, as the prototype did.

    Unknown keys, operations and types raise :class:`DefinitionsError` naming the key.
    """
    if not isinstance(data, Mapping) or not data:
        raise DefinitionsError(f"{source}: a definitions document must be a non-empty mapping")
    if _is_prototype_json_layout(data):
        data = {
            "name": name or Path(source).stem,
            "description": "prototype eval_metrics JSON layout (pillar weights from the prototype's metric.py)",
            "pillars": {
                pillar: {"weight": PROTOTYPE_PILLAR_WEIGHTS.get(pillar), "notions": notions}
                for pillar, notions in data.items()
            },
        }
    _check_keys(data, _TOP_KEYS, "the top level", source)
    if "pillars" not in data or not isinstance(data["pillars"], Mapping) or not data["pillars"]:
        raise DefinitionsError(f"{source}: needs a non-empty 'pillars' mapping")
    aggregation = data.get("pillar_aggregation", "notion_mean")
    if aggregation not in PILLAR_AGGREGATIONS:
        raise DefinitionsError(f"{source}: pillar_aggregation={aggregation!r}; choose one of {list(PILLAR_AGGREGATIONS)}")
    pillars = []
    for pillar_name, pillar in data["pillars"].items():
        where = f"pillars.{pillar_name}"
        _check_keys(pillar, _PILLAR_KEYS, where, source)
        if not isinstance(pillar.get("notions"), Mapping) or not pillar["notions"]:
            raise DefinitionsError(f"{source}: {where} needs a non-empty 'notions' mapping")
        notions = []
        for notion_name, notion in pillar["notions"].items():
            nwhere = f"{where}.notions.{notion_name}"
            _check_keys(notion, _NOTION_KEYS, nwhere, source)
            if not isinstance(notion.get("metrics"), Mapping) or not notion["metrics"]:
                raise DefinitionsError(f"{source}: {nwhere} needs a non-empty 'metrics' mapping")
            metrics = tuple(
                _parse_metric(metric_name, metric, f"{nwhere}.metrics.{metric_name}", source)
                for metric_name, metric in notion["metrics"].items()
            )
            notions.append(
                NotionDefinition(
                    name=notion_name,
                    metrics=metrics,
                    weight=_weight(notion, nwhere, source),
                    label=str(notion.get("label", "")),
                    description=str(notion.get("description", "")),
                )
            )
        pillars.append(
            PillarDefinition(
                name=pillar_name,
                notions=tuple(notions),
                weight=_weight(pillar, where, source),
                label=str(pillar.get("label", "")),
                description=str(pillar.get("description", "")),
            )
        )
    use_provenance = data.get("use_provenance", False)
    if not isinstance(use_provenance, bool):
        raise DefinitionsError(f"{source}: use_provenance must be true or false, got {use_provenance!r}")
    return Definitions(
        name=str(data.get("name") or name or Path(source).stem),
        pillars=tuple(pillars),
        pillar_aggregation=aggregation,
        description=str(data.get("description", "")),
        source=source,
        use_provenance=use_provenance,
    )


@functools.cache
def _packaged_definitions(filename: str) -> Definitions:
    resource = importlib.resources.files("fltrust.trust").joinpath("definitions", filename)
    data = yaml.safe_load(resource.read_text(encoding="utf-8"))
    return definitions_from_dict(data, source=f"fltrust/trust/definitions/{filename}")


def load_definitions(
    source: str | Path | Mapping[str, Any] | Definitions | None = None, *, mode: TrustMode = "prototype"
) -> Definitions:
    """Load metric definitions.

    Parameters
    ----------
    source : path, mapping, Definitions or None
        ``None``: the packaged file of ``mode`` (``prototype.yaml``, or ``paper.yaml`` for
        paper mode). A path to a YAML (``.yaml``/``.yml``) or JSON (``.json``) file in either
        layout of :func:`definitions_from_dict`. A parsed mapping. A :class:`Definitions`
        (returned unchanged).
    mode : {"prototype", "paper", "fixed", "extended"}

    Returns
    -------
    Definitions

    Raises
    ------
    DefinitionsError
        Missing or unreadable file, unknown keys, operations or types.
    """
    if mode not in ALL_MODES:
        raise TrustScoringError(f"mode={mode!r} is not allowed; choose one of {list(ALL_MODES)}")
    if source is None:
        return _packaged_definitions(MODE_DEFAULTS[mode]["definitions"])
    if isinstance(source, Definitions):
        return source
    if isinstance(source, Mapping):
        return definitions_from_dict(source)
    path = Path(source)
    if not path.is_file():
        raise DefinitionsError(f"definitions file {str(path)!r} does not exist; pass an existing YAML or JSON file")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        elif path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            raise DefinitionsError(f"definitions file {str(path)!r}: use a .yaml, .yml or .json file")
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise DefinitionsError(f"definitions file {str(path)!r} cannot be parsed: {exc}") from exc
    return definitions_from_dict(data, source=str(path))


# ---------------------------------------------------------------------------------------------
# Bug fixes (spec 9)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fix:
    """A named correction of one prototype bug (trust spec section 9).

    Attributes
    ----------
    name : str
        The switch name passed in ``fixes=[...]``.
    bug : str
        Spec 9 identifier (B2, B3, ...).
    summary : str
        What the prototype does and what the fix does.
    metric_changes : mapping
        ``pillar/notion/metric`` -> changed :class:`MetricDefinition` fields. Empty for fixes
        that change the engine (missing values, unknown keys, type coercion).
    """

    name: str
    bug: str
    summary: str
    metric_changes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


_CV_METRICS = (
    "fairness/selection_fairness/selection_variation",
    "fairness/performance_fairness/accuracy_variation",
    "fairness/class_distribution/class_imbalance",
    "explainability/post_hoc_methods/feature_importance",
)

FIXES: dict[TrustFix, Fix] = {
    fix.name: fix
    for fix in (
        Fix(
            "nan_is_missing",
            "B2",
            "check_properties counts None, NaN, '' and whitespace-only strings as missing; the prototype "
            "counts only None and '', so the template's NaN defaults (e.g. dp_epsilon) look filled in.",
        ),
        Fix(
            "selector_not_random",
            "B3",
            "client_selector scores 0 for random/uniform sampling and 1 for another selector (paper Table 2: "
            "'a client selector rather than random selection'); the prototype scores any non-empty name 1.",
            {"architectural_soundness/client_management/client_selector": {"operation": "check_client_selector"}},
        ),
        Fix(
            "scale_ascending",
            "B5",
            "Federation scale scores more clients HIGHER with paper Table 3's decade steps "
            "[10, 1e2, ..., 1e6] -> {0, 0.2, ..., 1}; the prototype uses desc ranges (N <= 10 scores 1).",
            {
                "robustness/client_reliability/scale": {
                    "type": "breakpoints",
                    "direction": "asc",
                    "ranges": (10.0, 1e2, 1e3, 1e4, 1e5, 1e6),
                }
            },
        ),
        Fix(
            "clever_ratio",
            "B6",
            f"certified_robustness = min(CLEVER / radius, 1) with radius {CLEVER_RADIUS} (R_L2, spec 3.10); the "
            "prototype uses the raw CLEVER value, which can exceed 1.",
            {
                "robustness/resilience_to_attacks/certified_robustness": {
                    "type": "scaled_score",
                    "scale": (0.0, CLEVER_RADIUS),
                    "direction": "asc",
                }
            },
        ),
        Fix(
            "unknown_key_zero",
            "B7",
            "A model or algorithm name missing from a score map scores 0 with a warning; in the prototype an "
            "unknown model gives NaN, which makes the explainability and trust scores NaN.",
        ),
        Fix(
            "raw_algorithm_value",
            "B8",
            "The aggregation algorithm scores its raw benchmark value (paper Table 3, FedAvg 0.8493); the "
            "prototype scores its rank among 7 (FedAvg 4/7), which turns 1e-4 differences into 1/7 steps.",
            {"architectural_soundness/optimization/algorithm": {"type": "score_map_value", "direction": "asc"}},
        ),
        Fix(
            "parameter_count",
            "B9",
            f"model_size reads the scalar parameter count ({PARAM_COUNT_FIELD}) with paper Table 3's breakpoints "
            "{1, 10, 50, ..., 5e5} descending; the prototype counts parameter tensors with bins [10, 25, 50, 100].",
            {
                "explainability/interpretability/model_size": {
                    "inputs": (PARAM_COUNT_FIELD,),
                    "type": "breakpoints",
                    "direction": "desc",
                    "ranges": (1.0, 10.0, 50.0, 100.0, 500.0, 1e3, 5e3, 1e4, 5e4, 1e5, 5e5),
                }
            },
        ),
        Fix(
            "cap_cvs",
            "B11",
            "The selection, accuracy, class-imbalance and feature-importance CVs are capped at 1 before scoring; "
            "uncapped, a CV above 1 scored with true_score gives a score outside [0, 1].",
            {path: {"operation": "get_capped_value"} for path in _CV_METRICS},
        ),
        Fix(
            "coerce_types",
            "B14",
            "numpy bools count as booleans (the prototype's 'is True' test fails for them, so np.True_ with "
            "direction desc scores 0 instead of 1).",
        ),
    )
}
"""All fixes by name (the names: :data:`fltrust.names.TRUST_FIXES`, same order). Fix B12 (round only
the final outputs) is the ``rounding`` argument."""


def _resolve_fixes(fixes: Iterable[str] | None, mode: str) -> tuple[str, ...]:
    if fixes is None:
        return tuple(MODE_DEFAULTS[mode]["fixes"])
    if isinstance(fixes, str):
        raise TrustScoringError(f"fixes={fixes!r} must be a list of fix names, e.g. [{fixes!r}]")
    names = list(fixes)
    unknown = sorted(set(names) - set(FIXES))
    if unknown:
        raise TrustScoringError(f"unknown fix name(s) {unknown}; choose from {sorted(FIXES)}")
    return tuple(name for name in FIXES if name in names)  # canonical order


def apply_fixes(definitions: Definitions, fixes: Iterable[str]) -> tuple[Definitions, list[str]]:
    """Apply the metric changes of the named fixes to a definitions tree.

    Returns
    -------
    definitions : Definitions
        A changed copy.
    notes : list of str
        One note per fix whose target metric is not in the definitions (that part is skipped).
    """
    notes = []
    for name in fixes:
        for path, changes in FIXES[name].metric_changes.items():
            try:
                definitions = definitions.replace_metric(path, **changes)
            except KeyError:
                notes.append(
                    f"fix {name!r} ({FIXES[name].bug}): metric {path!r} is not in definitions {definitions.name!r}; skipped"
                )
    return definitions, notes


# ---------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------


def _round2(value: float) -> float:
    """Prototype rounding: numpy's half-to-even after scaling (``round`` on a numpy float)."""
    return float(np.round(np.float64(value), 2))


def _run_operation(metric: MetricDefinition, values: list[Any], fixes: tuple[str, ...]) -> Any:
    if metric.operation == "get_value":
        return ops.get_value(*values)
    if metric.operation == "check_properties":
        return ops.check_properties(*values, missing="strict" if "nan_is_missing" in fixes else "prototype")
    if metric.operation == "get_global_privacy_risk":
        return ops.get_global_privacy_risk(*values, coerce_types="coerce_types" in fixes)
    if metric.operation == "get_uniform_entropy":
        return ops.get_uniform_entropy(*values)
    if metric.operation == "get_capped_value":
        return ops.get_capped_value(*values)
    if metric.operation == "check_client_selector":
        return ops.check_client_selector(*values)
    if metric.operation == "first_present":
        return ops.first_present(*values)
    if metric.operation == "mean_of_present":
        return ops.mean_of_present(*values)
    raise AssertionError(metric.operation)  # pragma: no cover - validated by MetricDefinition


def _normalize(metric: MetricDefinition, raw: Any, fixes: tuple[str, ...]) -> float:
    unknown = "zero" if "unknown_key_zero" in fixes else "prototype"
    if metric.type == "true_score":
        return norm.true_score(raw, metric.direction, coerce_types="coerce_types" in fixes)
    if metric.type == "ranges":
        return norm.range_score(raw, metric.ranges, metric.direction)
    if metric.type == "breakpoints":
        return norm.breakpoint_score(raw, metric.ranges, metric.direction)
    if metric.type == "scaled_score":
        return norm.scaled_score(raw, metric.scale[0], metric.scale[1], metric.direction)
    if metric.type == "score_mapping":
        return norm.mapped_score(raw, metric.score_map, normalization=metric.map_normalization, unknown=unknown)
    if metric.type == "score_ranking":
        return norm.ranked_score(raw, metric.score_map, metric.direction, unknown=unknown)
    if metric.type == "score_map_value":
        return norm.map_value_score(raw, metric.score_map, unknown=unknown)
    if metric.type == "property_check":
        return norm.property_score(raw)
    raise AssertionError(metric.type)  # pragma: no cover - validated by MetricDefinition


def _is_nan(value: Any) -> bool:
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def _provenance_entry(factsheet: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The FactSheet's provenance entry of a metric (extended mode); ``status: "unknown"`` if absent."""
    section = factsheet.get(PROVENANCE_SECTION)
    entry = section.get(path) if isinstance(section, Mapping) else None
    if not isinstance(entry, Mapping):
        return {"status": "unknown", "reason": f"no FactSheet entry {PROVENANCE_SECTION}/{path}"}
    out = {str(k): v for k, v in entry.items()}
    if out.get("status") not in PROVENANCE_STATUSES:
        out["reason"] = f"status {out.get('status')!r} is not one of {list(PROVENANCE_STATUSES)}"
        out["status"] = "unknown"
    return out


def _not_applicable(metric: MetricDefinition, path: str, factsheet: Mapping[str, Any],
                    provenance: dict[str, Any]) -> MetricResult:
    inputs = {field_path: ops.resolve_field(factsheet, field_path) for field_path in metric.inputs}
    return MetricResult(
        name=metric.name, label=metric.label or metric.name, path=path, operation=metric.operation, type=metric.type,
        direction=metric.direction, weight=metric.weight, inputs=inputs, raw_value=None, normalized=math.nan,
        score=math.nan, warnings=[], provenance=provenance, applicable=False,
    )


def _applicable_sum(weights: list[float], items: list[Any]) -> tuple[float, bool]:
    """Weighted sum over the applicable items, weights renormalised over them (extended mode).

    With every item applicable this is exactly :func:`_weighted_sum` (prototype accumulation).
    Returns ``(NaN, False)`` when no item is applicable.
    """
    if all(getattr(item, "applicable", True) for item in items):
        return _weighted_sum(weights, [item.score for item in items]), True
    kept = [(w, item.score) for w, item in zip(weights, items) if getattr(item, "applicable", True)]
    total = sum(w for w, _ in kept)
    if not kept or total <= 0:
        return math.nan, False
    return _weighted_sum([w / total for w, _ in kept], [score for _, score in kept]), True


def _score_metric(
    metric: MetricDefinition, path: str, factsheet: Mapping[str, Any], fixes: tuple[str, ...], rounding: str,
    provenance: dict[str, Any] | None = None,
) -> MetricResult:
    if provenance is not None and provenance.get("status") == "n/a":
        return _not_applicable(metric, path, factsheet, provenance)
    inputs = {field_path: ops.resolve_field(factsheet, field_path) for field_path in metric.inputs}
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            raw = _run_operation(metric, [inputs[p] for p in metric.inputs], fixes)
        except TypeError as exc:
            # The prototype turns a TypeError in the operation into a missing value (spec 2.2).
            notes.append(f"operation {metric.operation} failed ({exc}); treated as missing")
            raw = None
        if raw is None:
            missing = [p for p, v in inputs.items() if v is None]
            notes.append(f"raw value is missing (fields {missing or list(inputs)}); score 0")
            normalized = 0.0
        else:
            try:
                normalized = _normalize(metric, raw, fixes)
            except norm.NormalizationError as exc:
                raise TrustScoringError(f"metric {path} (inputs {list(inputs)}): {exc}") from None
            if math.isnan(normalized):
                notes.append(
                    f"score is NaN ({raw!r} is not in the score map) and propagates to the notion, pillar and "
                    "trust scores (prototype bug B7; fix 'unknown_key_zero')"
                )
            elif _is_nan(raw):
                notes.append("raw value is NaN; score 0")
            elif normalized > 1:
                notes.append(f"score {normalized:.4g} is above 1: the raw value is scored as it is"
                             + (" (prototype bug B6; fix 'clever_ratio' scores min(CLEVER / radius, 1))"
                                if "performance/test_clever" in inputs else ""))
    for item in caught:
        if issubclass(item.category, norm.TrustScoreWarning):
            notes.append(str(item.message))
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
    for note in notes:
        logger.warning("%s: %s", path, note)
    score = _round2(normalized) if rounding == "prototype" and not math.isnan(normalized) else normalized
    return MetricResult(
        name=metric.name,
        label=metric.label or metric.name,
        path=path,
        operation=metric.operation,
        type=metric.type,
        direction=metric.direction,
        weight=metric.weight,
        inputs=inputs,
        raw_value=raw,
        normalized=float(normalized),
        score=float(score),
        warnings=notes,
        provenance=provenance,
    )


def _weights(items: Iterable[Any], use_weights: bool, where: str) -> list[float]:
    """The weights used to aggregate ``items``: theirs (checked) or 1/k each."""
    items = list(items)
    if not use_weights:
        return [1 / len(items)] * len(items)
    missing = [item.name for item in items if item.weight is None]
    if missing:
        raise TrustScoringError(f"use_weights=True but {where}: {missing} have no 'weight' in the definitions file")
    total = sum(item.weight for item in items)
    if abs(total - 1.0) > 1e-6:
        raise TrustScoringError(
            f"use_weights=True but the weights of {where} sum to {total:.6g}; make them sum to 1 in the definitions file"
        )
    return [item.weight for item in items]


def _weighted_sum(weights: list[float], scores: list[float]) -> float:
    """Sum starting at 0.0, adding ``w * s`` in definition order (the prototype's accumulation)."""
    total = 0.0
    for weight, score in zip(weights, scores):
        total += weight * score
    return total


def score_factsheet(
    factsheet: Mapping[str, Any],
    *,
    mode: TrustMode = "prototype",
    definitions: str | Path | Mapping[str, Any] | Definitions | None = None,
    use_weights: bool = False,
    rounding: str | None = None,
    fixes: Iterable[str] | None = None,
) -> TrustReport:
    """Score a FactSheet: every metric, notion and pillar, and the trust score.

    Parameters
    ----------
    factsheet : mapping
        Nested dict with the trust spec 4 sections (``project``, ``data``, ``participants``,
        ``configuration``, ``performance``, ``fairness``, ``system``); NaN or missing values
        are allowed (they score 0, with a warning in the report).
    mode : {"prototype", "paper", "fixed", "extended"}
        Picks the default definitions, fixes and rounding (module docstring table).
        ``"prototype"`` reproduces the authors' code (spec 8 golden vectors), ``"paper"`` the
        paper's Figures 4-5 as far as possible (spec 7.3), ``"fixed"`` applies every fix,
        ``"extended"`` scores the full 36-metric taxonomy plus sustainability.
    definitions : path, mapping, Definitions or None
        A user's own definitions (YAML or JSON); ``None`` = the packaged file of ``mode``.
    use_weights : bool
        Use the definitions' notion, metric and pillar weights (each group must sum to 1);
        ``False`` (the paper and the prototype default) uses plain means.
    rounding : {"prototype", "final"} or None
        ``"prototype"``: round metric scores to 2 decimals before aggregating, and pillar and
        trust scores to 2 decimals; ``"final"``: no rounding (fix B12). ``None`` = mode default.
    fixes : iterable of str or None
        Names from :data:`FIXES`; ``None`` = mode default. ``[]`` = none.

    Returns
    -------
    TrustReport

    Raises
    ------
    TrustScoringError
        Bad mode, rounding or fix names, a non-numeric value where a number is needed, or
        weights that do not sum to 1 with ``use_weights``.
    DefinitionsError
        Invalid definitions.

    Examples
    --------
    >>> report = score_factsheet({"participants": {"client_num": 10}})
    >>> report.metric("scale").score
    1.0
    """
    if mode not in ALL_MODES:
        raise TrustScoringError(f"mode={mode!r} is not allowed; choose one of {list(ALL_MODES)}")
    rounding = MODE_DEFAULTS[mode]["rounding"] if rounding is None else rounding
    if rounding not in ROUNDINGS:
        raise TrustScoringError(f"rounding={rounding!r} is not allowed; choose one of {list(ROUNDINGS)}")
    if not isinstance(factsheet, Mapping):
        raise TrustScoringError(f"factsheet must be a nested dict (mapping), got {type(factsheet).__name__}")
    fix_names = _resolve_fixes(fixes, mode)
    tree, report_notes = apply_fixes(load_definitions(definitions, mode=mode), fix_names)
    prototype_rounding = rounding == "prototype"

    pillar_results = []
    for pillar in tree.pillars:
        notion_results = []
        for notion in pillar.notions:
            metric_results = []
            for metric in notion.metrics:
                path = f"{pillar.name}/{notion.name}/{metric.name}"
                provenance = _provenance_entry(factsheet, path) if tree.use_provenance else None
                metric_results.append(_score_metric(metric, path, factsheet, fix_names, rounding, provenance))
            weights = _weights(notion.metrics, use_weights, f"the metrics of notion {pillar.name}/{notion.name}")
            notion_score, notion_applicable = _applicable_sum(weights, metric_results)
            notion_results.append(
                NotionResult(notion.name, notion.label or notion.name, notion.weight, notion_score, metric_results,
                             applicable=notion_applicable)
            )

        notion_weights = _weights(pillar.notions, use_weights, f"the notions of pillar {pillar.name}")
        if tree.pillar_aggregation == "notion_mean":
            pillar_score, pillar_applicable = _applicable_sum(notion_weights, notion_results)
        else:  # flattened: every metric of the pillar counts once (weighted: w_notion * w_metric)
            flat_weights, flat_items = [], []
            metric_count = sum(len(n.metrics) for n in notion_results)
            for notion_weight, notion, result in zip(notion_weights, pillar.notions, notion_results):
                metric_weights = _weights(notion.metrics, use_weights, f"the metrics of notion {pillar.name}/{notion.name}")
                for metric_weight, metric in zip(metric_weights, result.metrics):
                    flat_weights.append(notion_weight * metric_weight if use_weights else 1 / metric_count)
                    flat_items.append(metric)
            pillar_score, pillar_applicable = _applicable_sum(flat_weights, flat_items)
        if prototype_rounding and pillar_applicable:
            pillar_score = _round2(pillar_score)
        pillar_results.append(
            PillarResult(pillar.name, pillar.label or pillar.name, pillar.weight, pillar_score, notion_results,
                         applicable=pillar_applicable)
        )

    pillar_weights = _weights(tree.pillars, use_weights, "the pillars")
    trust, _ = _applicable_sum(pillar_weights, pillar_results)
    if prototype_rounding:
        trust = _round2(trust)

    all_notes = list(report_notes) + [f"{m.path}: {w}" for p in pillar_results for m in p.metrics() for w in m.warnings]
    return TrustReport(
        trust_score=float(trust),
        pillars=pillar_results,
        mode=mode,
        definitions=tree.name,
        definitions_source=tree.source,
        pillar_aggregation=tree.pillar_aggregation,
        use_weights=use_weights,
        rounding=rounding,
        fixes=list(fix_names),
        warnings=all_notes,
    )
