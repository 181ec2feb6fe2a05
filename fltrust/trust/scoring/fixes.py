"""The named corrections of the FederatedTrust prototype's scoring bugs (trust spec §9, docs/references.md#trust-9).

Each :class:`Fix` either changes metric definitions (:attr:`Fix.metric_changes`, applied by
:func:`apply_fixes` to a copy of the tree) or sets an engine switch (:attr:`Fix.switch`: missing
values B2, unknown score-map keys B7, type coercion B14; :func:`engine_switches` collects them for
:mod:`fltrust.trust.scoring.engine`, which passes them to the operations and score types that take them;
docs/references.md#trust-b2, #trust-b7, #trust-b14). Fix B12 (round only the final outputs;
docs/references.md#trust-b12) is the engine's ``rounding`` argument. Which fixes a mode applies by default is
:data:`fltrust.names.TRUST_SCORING_DEFAULTS`. The fix of the scale direction, B5 (docs/references.md#trust-b5):

>>> FIXES["scale_ascending"].bug
'B5'
>>> from fltrust.trust.scoring import load_definitions
>>> tree, notes = apply_fixes(load_definitions(), ["scale_ascending"])
>>> tree.get_metric("robustness/client_reliability/scale").direction, notes
('asc', [])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fltrust.names import TRUST_SCORING_DEFAULTS, TrustFix, TrustMode
from fltrust.trust.scoring.definitions import Definitions, TrustScoringError
from fltrust.trust.scoring.registry import SWITCHES

PARAM_COUNT_FIELD = "configuration/trainable_param_count"
"""Factsheet field with the SCALAR number of trainable parameters (fix B9, paper mode; docs/references.md#trust-b9). The
prototype's ``configuration/trainable_param_num`` holds the number of parameter tensors."""

CLEVER_RADIUS = 2.0
"""CLEVER-u radius R_L2 of the prototype (spec 3.10); fix B6 scores min(CLEVER / radius, 1).

docs/references.md#trust-3-10, #trust-b6."""


@dataclass(frozen=True)
class Fix:
    """A named correction of one prototype bug (trust spec section 9).

    Attributes
    ----------
    name : TrustFix
        The switch name passed in ``fixes=[...]``.
    bug : str
        Spec 9 identifier (B2, B3, ...; docs/references.md#trust-b3).
    summary : str
        What the prototype does and what the fix does.
    metric_changes : mapping
        ``pillar/notion/metric`` -> changed :class:`MetricDefinition` fields. Empty for fixes
        that change the engine (missing values, unknown keys, type coercion).
    switch : (str, value) or None
        The engine switch (:data:`~fltrust.trust.scoring.registry.SWITCHES`) the fix sets, and
        its value; ``None`` for fixes that change metrics.
    """

    name: TrustFix
    bug: str
    summary: str
    metric_changes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    switch: tuple[str, Any] | None = None


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
            switch=("missing", "strict"),
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
            switch=("unknown", "zero"),
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
            switch=("coerce_types", True),
        ),
    )
}
"""All fixes by name (the names: :data:`fltrust.names.TRUST_FIXES`, same order). Fix B12 (round only
the final outputs) is the ``rounding`` argument."""


def resolve_fixes(fixes: Iterable[str] | None, mode: TrustMode) -> tuple[TrustFix, ...]:
    """Return the fix names to apply, checked and in their canonical order (that of :data:`FIXES`).

    Parameters
    ----------
    fixes : iterable of str or None
        Names from :data:`FIXES`; ``None`` = the default fixes of ``mode``.
    mode : {"prototype", "paper", "fixed", "extended"}
        A scoring mode (checked by the caller).

    Returns
    -------
    tuple of TrustFix

    Raises
    ------
    TrustScoringError
        A single string instead of a list, or an unknown name.

    Examples
    --------
    >>> resolve_fixes(["cap_cvs", "nan_is_missing"], "prototype")
    ('nan_is_missing', 'cap_cvs')
    """
    if fixes is None:
        return tuple(TRUST_SCORING_DEFAULTS[mode]["fixes"])
    if isinstance(fixes, str):
        raise TrustScoringError(f"fixes={fixes!r} must be a list of fix names, e.g. [{fixes!r}]")
    names = list(fixes)
    unknown = sorted(set(names) - set(FIXES))
    if unknown:
        raise TrustScoringError(f"unknown fix name(s) {unknown}; choose from {sorted(FIXES)}")
    return tuple(name for name in FIXES if name in names)  # canonical order


def engine_switches(fixes: Iterable[TrustFix]) -> dict[str, Any]:
    """Return the engine switches with the named fixes in force (:attr:`Fix.switch`).

    Parameters
    ----------
    fixes : iterable of TrustFix
        Names from :data:`FIXES` (checked by :func:`resolve_fixes`).

    Returns
    -------
    dict
        Every switch of :data:`~fltrust.trust.scoring.registry.SWITCHES`, with its value.

    Examples
    --------
    >>> engine_switches(["nan_is_missing", "cap_cvs"])
    {'missing': 'strict', 'coerce_types': False, 'unknown': 'prototype'}
    """
    switches = dict(SWITCHES)
    switches.update(switch for name in fixes if (switch := FIXES[name].switch) is not None)
    return switches


def apply_fixes(definitions: Definitions, fixes: Iterable[TrustFix]) -> tuple[Definitions, list[str]]:
    """Apply the metric changes of the named fixes to a definitions tree.

    Parameters
    ----------
    definitions : Definitions
        The tree to change (not modified).
    fixes : iterable of TrustFix
        Names from :data:`FIXES`, in the order to apply them.

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
