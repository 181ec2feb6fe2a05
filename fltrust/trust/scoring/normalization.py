r"""Score types: functions that map a metric's raw value onto a score in [0, 1].

Every FederatedTrust metric is "operation, then type": the operation (:mod:`.operations`)
turns factsheet fields into a raw value, the type (this module) normalises it (trust spec 2.4,
paper Table 3; docs/references.md#trust-2-4). The score types of the authors' prototype (HEAD b67a59c) keep their exact
semantics, bugs included, so that the golden vectors of spec 8 (docs/references.md#trust-8) are reproduced; the switches
that fix those bugs (spec 9, docs/references.md#trust-9) are keyword arguments, off by default.

===================  ============================================  ==========================
type                 score                                         prototype function
===================  ============================================  ==========================
``true_score``       v (asc) or 1 - v (desc); True 1, False 0      ``get_true_score``
``ranges``           bin / (len(ranges) + 1) (asc), 1 - that       ``get_range_score``
``breakpoints``      i / (n - 1): Table 3's "list -> {0..1}"       (ours; fixes B5, B9)
``scaled_score``     clip((v - lo) / (hi - lo), 0, 1)              nebula ``get_scaled_score``
``score_mapping``    min-max (or L2) normalised map value          ``get_mapped_score``
``score_ranking``    1-based rank / number of items                ``get_ranked_score``
``score_map_value``  the raw map value                             nebula ``score_map_value``
``property_check``   the fraction from ``check_properties``        ``get_true_score`` path
===================  ============================================  ==========================

Each type is registered under its name (the table's first column) with
:func:`~fltrust.trust.scoring.registry.score_type`, as a small function ``(raw, metric, **switches)``
at the end of this module that reads the metric's keys and calls the function above; the engine
dispatches through :data:`~fltrust.trust.scoring.registry.SCORE_TYPES`, and a user's own type is
one more decorated function in their module.

A ``None`` input never reaches these functions: the scorer gives it 0 with a warning (spec 2.4).
NaN inputs score 0 in every numeric type (prototype behaviour). Problems that the prototype
silently turned into a number (unknown map keys with ``unknown="zero"``) are reported with a
:class:`TrustScoreWarning`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from fltrust.trust.scoring.registry import score_type

DIRECTIONS = ("asc", "desc")
MAP_NORMALIZATIONS = ("minmax", "l2")
UNKNOWN_KEY_POLICIES = ("prototype", "zero")


class NormalizationError(ValueError):
    """A raw value cannot be normalised; the message names the value and the fix."""


class TrustScoreWarning(UserWarning):
    """A metric was scored from a missing, NaN or unknown value (the score says 0 or NaN)."""


# -- helpers ------------------------------------------------------------------------------------


def _check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise NormalizationError(f"direction={direction!r} is not allowed; choose 'asc' or 'desc'")


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _as_number(value: Any, *, type_name: str) -> float:
    """Return ``value`` as a float; bools are not numbers here (callers decide about them)."""
    if _is_bool(value) or isinstance(value, numbers.Real):
        return float(value)
    raise NormalizationError(
        f"{type_name} needs a number, got {value!r} ({type(value).__name__}); "
        "fix the factsheet field or choose a score type that accepts this value"
    )


def _directed(value: Any, direction: str, type_name: str, fraction: Callable[[float], float]) -> float:
    """Score a numeric raw value v: ``fraction(v)`` (asc) or 1 minus it (desc); NaN scores 0."""
    number = _as_number(value, type_name=type_name)
    if math.isnan(number):
        return 0.0
    share = fraction(number)
    return share if direction == "asc" else 1.0 - share


# -- score types --------------------------------------------------------------------------------


def true_score(value: Any, direction: str = "asc", *, coerce_types: bool = False) -> float:
    r"""Use the raw value as the score (prototype ``get_true_score``, spec 2.4).

    .. math:: s = v \ \text{(asc)}, \qquad s = 1 - v \ \text{(desc)}

    Parameters
    ----------
    value : bool, int or float
        Raw value; expected in [0, 1] but, as in the prototype, not clipped.
    direction : {"asc", "desc"}
        ``"desc"`` for "lower is better" values (CVs, privacy risk).
    coerce_types : bool
        Fix B14 (docs/references.md#trust-b14). The prototype tests ``value is True`` / ``value is False``, so a numpy
        bool falls through to the numeric branch: ``np.True_`` with ``desc`` scores 1 - 1 = 0 where
        ``True`` scores 1. With ``coerce_types`` every bool-like value scores 1/0.

    Returns
    -------
    float
        ``True`` -> 1 and ``False`` -> 0 whatever the direction; NaN -> 0; otherwise v or 1 - v.
        Values outside [0, 1] give scores outside [0, 1] (for example a CV of 1.44 with desc
        gives -0.44); cap the raw value (fix B11; docs/references.md#trust-b11) to avoid that.

    Raises
    ------
    NormalizationError
        For a non-numeric value (the prototype crashed later, in ``round``).
    """
    _check_direction(direction)
    if coerce_types and _is_bool(value):
        value = bool(value)
    if value is True:
        return 1.0
    if value is False:
        return 0.0
    return _directed(value, direction, "true_score", lambda v: v)


def _count_below(value: float, boundaries: Sequence[float]) -> int:
    """Count the boundaries strictly below ``value`` (``np.digitize(..., right=True)``)."""
    return int(np.digitize(value, np.asarray(boundaries, dtype=float), right=True))


def range_score(value: Any, ranges: Sequence[float], direction: str = "asc") -> float:
    r"""Bin the raw value (prototype ``get_range_score``, spec 2.4).

    .. math:: b = \#\{r_i < v\}, \qquad s = b / B \ \text{(asc)}, \quad s = 1 - b / B
              \ \text{(desc)}, \qquad B = \mathrm{len}(ranges) + 1

    ``b`` is ``np.digitize(v, ranges, right=True)``: a value equal to a boundary belongs to the
    lower bin. With ranges [10, 100] and desc: v <= 10 gives 1, 10 < v <= 100 gives 2/3,
    v > 100 gives 1/3. So asc never reaches 1 and desc never reaches 0.

    Parameters
    ----------
    value : int or float
        Raw value (bools count as 0/1). NaN scores 0.
    ranges : sequence of float
        Ascending boundaries.
    direction : {"asc", "desc"}

    Returns
    -------
    float
        The bin score; NaN -> 0.
    """
    _check_direction(direction)
    return _directed(value, direction, "ranges", lambda v: _count_below(v, ranges) / (len(ranges) + 1))


def breakpoint_score(value: Any, breakpoints: Sequence[float], direction: str = "asc") -> float:
    r"""Step score of paper Table 3: the i-th of n listed values maps to i / (n - 1).

    .. math:: i = \min(\#\{p_j < v\},\ n - 1), \qquad s = i / (n - 1) \ \text{(asc)},
              \quad s = 1 - i / (n - 1) \ \text{(desc)}

    Table 3 lists, for example, the federation scale [10, 1e2, ..., 1e6] -> {0, 0.2, ..., 1}:
    v <= 10 gives 0, 10 < v <= 100 gives 0.2, ..., v > 1e5 gives 1 (values above the last
    breakpoint are capped at 1). Unlike :func:`range_score` both ends are reached. Not in the
    prototype; used by fixes B5 (scale; docs/references.md#trust-b5) and B9 (model size; docs/references.md#trust-b9).

    Parameters
    ----------
    value : int or float
        Raw value. NaN scores 0.
    breakpoints : sequence of float
        At least two ascending values.
    direction : {"asc", "desc"}

    Returns
    -------
    float
    """
    _check_direction(direction)
    if len(breakpoints) < 2:
        raise NormalizationError("breakpoints needs at least two values")
    steps = len(breakpoints) - 1
    return _directed(value, direction, "breakpoints", lambda v: min(_count_below(v, breakpoints), steps) / steps)


def scaled_score(value: Any, low: float, high: float, direction: str = "asc") -> float:
    r"""Linear min-max score between two bounds, clipped (nebula ``get_scaled_score``).

    .. math:: s = \mathrm{clip}\!\left(\frac{v - lo}{hi - lo}, 0, 1\right) \ \text{(asc)},
              \qquad 1 - s \ \text{(desc)}

    v <= lo gives 0 and v >= hi gives 1 (asc). Fix B6 (docs/references.md#trust-b6) uses it with lo = 0 and hi = the
    CLEVER radius, i.e. min(CLEVER / radius, 1).

    Parameters
    ----------
    value : int or float
        Raw value. NaN scores 0 (in both directions).
    low, high : float
        Bounds, ``low < high``.
    direction : {"asc", "desc"}

    Returns
    -------
    float
    """
    _check_direction(direction)
    if not high > low:
        raise NormalizationError(f"scaled_score needs low < high, got low={low!r}, high={high!r}")
    return _directed(value, direction, "scaled_score", lambda v: min(max((v - low) / (high - low), 0.0), 1.0))


def _unknown_key(key: Any, score_map: Mapping[str, float], type_name: str, unknown: str, prototype: float) -> float:
    if unknown not in UNKNOWN_KEY_POLICIES:
        raise NormalizationError(f"unknown={unknown!r} is not allowed; choose one of {list(UNKNOWN_KEY_POLICIES)}")
    if unknown == "zero":
        warnings.warn(
            f"{type_name}: {key!r} is not in the score map {sorted(score_map)}; it scores 0 "
            "(add it to the metric's score_map in your definitions file to score it)",
            TrustScoreWarning,
            stacklevel=3,
        )
        return 0.0
    return prototype


def mapped_score(
    key: Any, score_map: Mapping[str, float], *, normalization: str = "minmax", unknown: str = "prototype"
) -> float:
    r"""Look the key up in a map of ratings and normalise the ratings (``get_mapped_score``).

    .. math:: s = \frac{m_k - \min_j m_j}{\max_j m_j - \min_j m_j} \ \text{(minmax, HEAD)},
              \qquad s = \frac{m_k}{\lVert m \rVert_2} \ \text{(l2, commits up to 3d441a1)}

    With the algorithmic-transparency map (ratings 1..5) minmax gives (m - 1)/4: CNN 0,
    DecisionTreeClassifier 1; l2 gives CNN 1/sqrt(124.5) = 0.0896 (paper-era value).

    Parameters
    ----------
    key : str
        Raw value (model class name).
    score_map : mapping of str to float
        Ratings; minmax needs two different values.
    normalization : {"minmax", "l2"}
    unknown : {"prototype", "zero"}
        Key not in the map: ``"prototype"`` returns NaN, which propagates to the pillar and the
        trust score (bug B7; docs/references.md#trust-b7); ``"zero"`` (fix B7) returns 0 with a
        :class:`TrustScoreWarning`.

    Returns
    -------
    float
    """
    if normalization not in MAP_NORMALIZATIONS:
        raise NormalizationError(f"normalization={normalization!r} is not allowed; choose one of {list(MAP_NORMALIZATIONS)}")
    if not isinstance(key, str) or key not in score_map:
        return _unknown_key(key, score_map, "score_mapping", unknown, prototype=math.nan)
    values = np.asarray(list(score_map.values()), dtype=float)
    if normalization == "l2":
        return float(score_map[key] / np.linalg.norm(values))
    low, high = float(values.min()), float(values.max())
    if high == low:
        raise NormalizationError("score_mapping with minmax needs at least two different map values")
    return (float(score_map[key]) - low) / (high - low)


def ranked_score(key: Any, score_map: Mapping[str, float], direction: str = "asc", *, unknown: str = "prototype") -> float:
    r"""Rank the key among the map's items (prototype ``get_ranked_score``).

    .. math:: s = \mathrm{pos}(k) / n

    Items are sorted by value, ascending (asc) or descending (desc), with a stable sort, and
    ``pos`` is 1-based. With the aggregation map (7 algorithms, asc): FedProx 1/7, FedAvg 4/7,
    pFedMe 1. Differences of 1e-4 between ratings become steps of 1/7 (see fix B8; docs/references.md#trust-b8).

    Parameters
    ----------
    key : str
        Raw value (algorithm name).
    score_map : mapping of str to float
    direction : {"asc", "desc"}
    unknown : {"prototype", "zero"}
        Key not in the map: 0 in both cases; ``"zero"`` also warns (fix B7).

    Returns
    -------
    float
    """
    _check_direction(direction)
    if not isinstance(key, str) or key not in score_map:
        return _unknown_key(key, score_map, "score_ranking", unknown, prototype=0.0)
    order = [name for name, _ in sorted(score_map.items(), key=lambda item: item[1], reverse=direction == "desc")]
    return (order.index(key) + 1) / len(order)


def map_value_score(key: Any, score_map: Mapping[str, float], *, unknown: str = "prototype") -> float:
    r"""Use the map's raw value as the score (nebula ``score_map_value``; paper Table 3).

    .. math:: s = m_k

    Table 3 scores the aggregation algorithm by its benchmark value (FedAvg 0.8493), which
    reproduces the paper's federation pillar 0.92 = (1 + 0.8493)/2 (fix B8).

    Parameters
    ----------
    key : str
    score_map : mapping of str to float
        Values in [0, 1].
    unknown : {"prototype", "zero"}
        Key not in the map: NaN as in ``score_mapping`` (``"prototype"``), or 0 with a warning.

    Returns
    -------
    float
    """
    if not isinstance(key, str) or key not in score_map:
        return _unknown_key(key, score_map, "score_map_value", unknown, prototype=math.nan)
    return float(score_map[key])


def property_score(value: Any) -> float:
    r"""Score of a ``property_check`` metric: the fraction of present fields, unchanged.

    .. math:: s = \frac{1}{n}\sum_i [\text{field}_i \text{ present}]

    Parameters
    ----------
    value : float
        Output of :func:`fltrust.trust.scoring.operations.check_properties` (or of another 0..1
        operation such as ``check_client_selector``), in [0, 1].

    Returns
    -------
    float
    """
    number = _as_number(value, type_name="property_check")
    if math.isnan(number):
        return 0.0
    if not 0.0 <= number <= 1.0:
        raise NormalizationError(f"property_check expects a fraction in [0, 1], got {number!r}")
    return number


# -- the registered score types: a metric's keys -> the functions above ---------------------------


@score_type("true_score", optional=("direction",), switches=("coerce_types",))
def _true_score_type(raw: Any, metric: Any, *, coerce_types: bool) -> float:
    return true_score(raw, metric.direction, coerce_types=coerce_types)


@score_type("ranges", required=("ranges",), optional=("direction",))
def _ranges_type(raw: Any, metric: Any) -> float:
    return range_score(raw, metric.ranges, metric.direction)


def _two_breakpoints(metric: Any) -> str | None:
    return "'ranges' is too short for type 'breakpoints'" if len(metric.ranges) < 2 else None


@score_type("breakpoints", required=("ranges",), optional=("direction",), check=_two_breakpoints)
def _breakpoints_type(raw: Any, metric: Any) -> float:
    return breakpoint_score(raw, metric.ranges, metric.direction)


@score_type("scaled_score", required=("scale",), optional=("direction",))
def _scaled_type(raw: Any, metric: Any) -> float:
    return scaled_score(raw, metric.scale[0], metric.scale[1], metric.direction)


def _two_map_values(metric: Any) -> str | None:
    if metric.map_normalization == "minmax" and len(set(metric.score_map.values())) < 2:
        return "a min-max 'score_map' needs two different values"
    return None


@score_type("score_mapping", required=("score_map",), optional=("map_normalization",), switches=("unknown",),
            check=_two_map_values)
def _mapping_type(raw: Any, metric: Any, *, unknown: str) -> float:
    return mapped_score(raw, metric.score_map, normalization=metric.map_normalization, unknown=unknown)


@score_type("score_ranking", required=("score_map",), optional=("direction",), switches=("unknown",))
def _ranking_type(raw: Any, metric: Any, *, unknown: str) -> float:
    return ranked_score(raw, metric.score_map, metric.direction, unknown=unknown)


@score_type("score_map_value", required=("score_map",), switches=("unknown",))
def _map_value_type(raw: Any, metric: Any, *, unknown: str) -> float:
    return map_value_score(raw, metric.score_map, unknown=unknown)


@score_type("property_check")
def _property_check_type(raw: Any, metric: Any) -> float:
    return property_score(raw)
