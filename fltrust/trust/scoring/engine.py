r"""The FederatedTrust scoring engine: factsheet -> metric, notion, pillar and trust scores.

Paper: "FederatedTrust: A Solution for Trustworthy Federated Learning", Sections 4-5 (taxonomy,
Table 2 metrics, Table 3 normalisations); trust spec §2-3 (engine and metric catalogue), §7 (paper
reproduction), §8 (golden vectors) and §9 (bugs): docs/references.md#trust-2, #trust-3, #trust-7, #trust-8, #trust-9.

The engine knows nothing about federated learning. A definitions tree
(:mod:`fltrust.trust.scoring.definitions`) names, per metric, the factsheet fields it reads, the
*operation* (:mod:`fltrust.trust.scoring.operations`) and the score *type*
(:mod:`fltrust.trust.scoring.normalization`), both looked up by name in
:mod:`fltrust.trust.scoring.registry`; the fixes of :mod:`fltrust.trust.scoring.fixes` change
that tree or set the engine switches passed to the operations and types that take them. Scores are then aggregated bottom-up:

.. math::

    \text{notion} = \sum_m w_m s_m, \qquad \text{pillar} = \sum_n w_n\, \text{notion}_n,
    \qquad \text{trust} = \sum_p W_p\, \text{pillar}_p

with the definitions' weights when ``use_weights=True``, and plain means (w = 1/k) otherwise,
which is the paper's statement and the prototype's default. ``pillar_aggregation: flattened``
(paper mode) makes the pillar the plain mean of all its metrics instead.

Modes
-----
==============  ==================  ===============================================  ==========
mode            definitions         fixes (spec 9)                                   rounding
==============  ==================  ===============================================  ==========
``prototype``   prototype.yaml      none: HEAD b67a59c exactly (golden vectors)      prototype
``paper``       paper.yaml          nan_is_missing, unknown_key_zero, coerce_types   prototype
``fixed``       prototype.yaml      every fix of ``fixes.FIXES``                     final
``extended``    extended.yaml       nan_is_missing, unknown_key_zero, coerce_types   final
                                    (the other fixes are written into the file)
==============  ==================  ===============================================  ==========

``extended`` scores all 36 metrics of the paper's taxonomy (Sec. 3; trust spec 6; docs/references.md#trust-6) plus
nebula's sustainability pillar (spec 10, docs/references.md#trust-10), with the bug fixes built into ``extended.yaml``.
Its definitions set ``use_provenance: true``: every metric then reads its entry in the FactSheet's ``provenance``
section (``"measured"``, ``"declared"``, ``"missing"`` or ``"n/a"`` with a reason, filled by the
trust observer), the report shows it, and **n/a metrics are left out of the means** (weights
renormalised over the applicable metrics; a notion or pillar with no applicable metric is left
out too). :data:`fltrust.names.PAPER_TREE_TRUST_MODES` are the three modes that score the
paper's 20-metric tree; :data:`fltrust.names.TRUST_MODES` adds ``extended``.

Paper mode leaves off the fixes that contradict the paper's own numbers: B3 (its random
sampling scored 1, federation 0.92; docs/references.md#trust-b3), B6 (Table 3 CLEVER bins; docs/references.md#trust-b6)
and B11 (its fairness values need uncapped CVs; docs/references.md#trust-b11). Any mode accepts an explicit
``fixes=[...]`` and ``rounding=...``.

Prototype rounding (spec 2.5, docs/references.md#trust-2-5): metric scores are rounded to 2 decimals before aggregation,
notion scores are not rounded, pillar and trust scores are rounded to 2 decimals (trust from
the rounded pillars). Rounding is numpy's (``np.round``: half to even after scaling by 100),
as the prototype's ``round`` on numpy floats; sums start at 0.0 and add in definition order,
so ties such as (1 + 0.85)/2 = 0.925 round to 0.92 as in the paper. ``rounding="final"``
(fix B12; docs/references.md#trust-b12) keeps every value exact; round for display only.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fltrust.names import TRUST_MODES, TRUST_SCORING_DEFAULTS, TrustMode
from fltrust.trust.factsheet.schema import PROVENANCE_SECTION, PROVENANCE_STATUSES
from fltrust.trust.report import MetricResult, NotionResult, PillarResult, TrustReport
from fltrust.trust.scoring import normalization as norm
from fltrust.trust.scoring import operations as ops
from fltrust.trust.scoring.definitions import (
    Definitions,
    MetricDefinition,
    TrustScoringError,
    load_definitions,
)
from fltrust.trust.scoring.fixes import apply_fixes, engine_switches, resolve_fixes
from fltrust.trust.scoring.registry import OPERATIONS, SCORE_TYPES

logger = logging.getLogger("fltrust.trust.scoring")
"""The package's logger (not this module's): the name the trust observer and the reproduction silence."""

ROUNDINGS = ("prototype", "final")


def _round2(value: float) -> float:
    """Prototype rounding: numpy's half-to-even after scaling (``round`` on a numpy float)."""
    return float(np.round(np.float64(value), 2))


def _provenance_entry(factsheet: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Return the FactSheet's provenance entry of a metric (extended mode); ``status: "unknown"`` if absent."""
    section = factsheet.get(PROVENANCE_SECTION)
    entry = section.get(path) if isinstance(section, Mapping) else None
    if not isinstance(entry, Mapping):
        return {"status": "unknown", "reason": f"no FactSheet entry {PROVENANCE_SECTION}/{path}"}
    out = {str(k): v for k, v in entry.items()}
    if out.get("status") not in PROVENANCE_STATUSES:
        out["reason"] = f"status {out.get('status')!r} is not one of {list(PROVENANCE_STATUSES)}"
        out["status"] = "unknown"
    return out


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


def _evaluate(metric: MetricDefinition, path: str, inputs: dict[str, Any], switches: Mapping[str, Any],
              notes: list[str]) -> tuple[Any, float]:
    """Compute the metric's raw value (its registered operation) and score (its registered score type).

    Why a score is 0, NaN or above 1 is appended to ``notes`` and logged.
    """
    operation, kind = OPERATIONS[metric.operation], SCORE_TYPES[metric.type]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            raw = operation.function(*[inputs[p] for p in metric.inputs], **{n: switches[n] for n in operation.switches})
        except TypeError as exc:
            # The prototype turns a TypeError in the operation into a missing value (spec 2.2,
            # docs/references.md#trust-2-2).
            notes.append(f"operation {metric.operation} failed ({exc}); treated as missing")
            raw = None
        if raw is None:
            missing = [p for p, v in inputs.items() if v is None]
            notes.append(f"raw value is missing (fields {missing or list(inputs)}); score 0")
            normalized = 0.0
        else:
            try:
                normalized = kind.function(raw, metric, **{n: switches[n] for n in kind.switches})
            except norm.NormalizationError as exc:
                raise TrustScoringError(f"metric {path} (inputs {list(inputs)}): {exc}") from None
            if math.isnan(normalized):
                notes.append(
                    f"score is NaN ({raw!r} is not in the score map) and propagates to the notion, pillar and "
                    "trust scores (prototype bug B7; fix 'unknown_key_zero')"
                )
            elif ops._is_nan(raw):
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
    return raw, normalized


def _score_metric(
    metric: MetricDefinition, path: str, factsheet: Mapping[str, Any], switches: Mapping[str, Any], rounding: str,
    use_provenance: bool,
) -> MetricResult:
    """Score one metric; an n/a one (extended mode) is not computed: score NaN, left out of the means."""
    provenance = _provenance_entry(factsheet, path) if use_provenance else None
    inputs = {field_path: ops.resolve_field(factsheet, field_path) for field_path in metric.inputs}
    notes: list[str] = []
    applicable = provenance is None or provenance.get("status") != "n/a"
    raw, normalized = _evaluate(metric, path, inputs, switches, notes) if applicable else (None, math.nan)
    score = _round2(normalized) if rounding == "prototype" and not math.isnan(normalized) else normalized
    return MetricResult(
        name=metric.name, label=metric.label or metric.name, path=path, operation=metric.operation, type=metric.type,
        direction=metric.direction, weight=metric.weight, inputs=inputs, raw_value=raw, normalized=float(normalized),
        score=float(score), warnings=notes, provenance=provenance, applicable=applicable,
    )


def _weights(items: Iterable[Any], use_weights: bool, where: str) -> list[float]:
    """Return the weights used to aggregate ``items``: theirs (checked) or 1/k each."""
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
        Nested dict with the trust spec 4 (docs/references.md#trust-4) sections (``project``, ``data``,
        ``participants``, ``configuration``, ``performance``, ``fairness``, ``system``); NaN or missing values
        are allowed (they score 0, with a warning in the report).
    mode : {"prototype", "paper", "fixed", "extended"}
        Picks the default definitions, fixes and rounding (module docstring table).
        ``"prototype"`` reproduces the authors' code (spec 8 golden vectors; docs/references.md#trust-8), ``"paper"``
        the paper's Figures 4-5 as far as possible (spec 7.3, docs/references.md#trust-7-3), ``"fixed"`` applies every
        fix, ``"extended"`` scores the full 36-metric taxonomy plus sustainability.
    definitions : path, mapping, Definitions or None
        A user's own definitions (YAML or JSON); ``None`` = the packaged file of ``mode``.
    use_weights : bool
        Use the definitions' notion, metric and pillar weights (each group must sum to 1);
        ``False`` (the paper and the prototype default) uses plain means.
    rounding : {"prototype", "final"} or None
        ``"prototype"``: round metric scores to 2 decimals before aggregating, and pillar and
        trust scores to 2 decimals; ``"final"``: no rounding (fix B12). ``None`` = mode default.
    fixes : iterable of str or None
        Names from :data:`~fltrust.trust.scoring.fixes.FIXES`; ``None`` = mode default. ``[]`` = none.

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
    if mode not in TRUST_MODES:
        raise TrustScoringError(f"mode={mode!r} is not allowed; choose one of {list(TRUST_MODES)}")
    rounding = TRUST_SCORING_DEFAULTS[mode]["rounding"] if rounding is None else rounding
    if rounding not in ROUNDINGS:
        raise TrustScoringError(f"rounding={rounding!r} is not allowed; choose one of {list(ROUNDINGS)}")
    if not isinstance(factsheet, Mapping):
        raise TrustScoringError(f"factsheet must be a nested dict (mapping), got {type(factsheet).__name__}")
    fix_names = resolve_fixes(fixes, mode)
    switches = engine_switches(fix_names)
    tree, report_notes = apply_fixes(load_definitions(definitions, mode=mode), fix_names)
    prototype_rounding = rounding == "prototype"

    pillar_results = []
    for pillar in tree.pillars:
        notion_results, metric_weights = [], []
        for notion in pillar.notions:
            metric_results = [_score_metric(metric, f"{pillar.name}/{notion.name}/{metric.name}", factsheet, switches,
                                            rounding, tree.use_provenance) for metric in notion.metrics]
            weights = _weights(notion.metrics, use_weights, f"the metrics of notion {pillar.name}/{notion.name}")
            metric_weights.append(weights)
            notion_score, notion_applicable = _applicable_sum(weights, metric_results)
            notion_results.append(
                NotionResult(notion.name, notion.label or notion.name, notion.weight, notion_score, metric_results,
                             applicable=notion_applicable)
            )

        notion_weights = _weights(pillar.notions, use_weights, f"the notions of pillar {pillar.name}")
        if tree.pillar_aggregation == "notion_mean":
            pillar_score, pillar_applicable = _applicable_sum(notion_weights, notion_results)
        else:  # flattened: every metric of the pillar counts once (weighted: w_notion * w_metric)
            count = sum(len(n.metrics) for n in notion_results)
            flat = [(notion_weight * weight if use_weights else 1 / count, metric_result)
                    for notion_weight, weights, result in zip(notion_weights, metric_weights, notion_results)
                    for weight, metric_result in zip(weights, result.metrics)]
            pillar_score, pillar_applicable = _applicable_sum([w for w, _ in flat], [m for _, m in flat])
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
