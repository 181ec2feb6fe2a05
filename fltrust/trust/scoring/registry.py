"""The scoring engine's registries: operation names and score-type names, each -> one callable.

A metric of a definitions file names an *operation* (its raw value from its FactSheet fields) and
a score *type* (the raw value onto [0, 1]). Both names are keys of a registry here (a
:class:`fltrust.registry.Registry`), filled by the decorators :func:`operation` and
:func:`score_type`: the packaged ones in :mod:`fltrust.trust.scoring.operations` and
:mod:`fltrust.trust.scoring.normalization`, a user's in their own module. The same registries
validate a definitions file (:mod:`fltrust.trust.scoring.definitions`: an unknown name fails naming
the file, the metric and the registered names) and dispatch in the engine
(:mod:`fltrust.trust.scoring.engine`).

>>> @operation("ratio_of_two", arity=2)
... def ratio_of_two(a, b):
...     return a / b
>>> OPERATIONS["ratio_of_two"].function(1, 4), OPERATIONS["ratio_of_two"].arity
(0.25, 2)
>>> OPERATIONS.unregister("ratio_of_two")

**Engine switches.** Some fixes of the prototype's bugs change how an operation or a type treats
its input (:data:`SWITCHES`: ``missing`` for fix B2, ``coerce_types`` for B14, ``unknown`` for
B7; docs/references.md#trust-b2, #trust-b14, #trust-b7). An entry names the switches it takes; the engine passes them as
keyword arguments, with the values :func:`fltrust.trust.scoring.fixes.engine_switches` derives from the fixes in force
(each such fix names the switch it sets, ``switch`` of :class:`fltrust.trust.scoring.fixes.Fix`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fltrust.registry import Registry

__all__ = [
    "METRIC_KEYS",
    "OPERATIONS",
    "SCORE_TYPES",
    "SWITCHES",
    "Operation",
    "RegistryError",
    "ScoreType",
    "operation",
    "score_type",
]

SWITCHES: dict[str, Any] = {"missing": "prototype", "coerce_types": False, "unknown": "prototype"}
"""Engine switches an operation or a score type may take as keyword arguments, with their values
when no fix changes them: ``missing`` ("prototype" or "strict", fix B2), ``coerce_types`` (bool,
fix B14) and ``unknown`` ("prototype" or "zero", fix B7)."""

METRIC_KEYS = ("direction", "ranges", "scale", "score_map", "map_normalization")
"""The metric keys of a definitions file that a score type may require or accept (the fields of
:class:`~fltrust.trust.scoring.definitions.MetricDefinition` besides inputs, operation and type)."""


class RegistryError(ValueError):
    """A registration is invalid (duplicate name, unknown switch or key); the message names it."""


@dataclass(frozen=True)
class Operation:
    """A registered operation: a metric's raw value from its FactSheet field values.

    Attributes
    ----------
    name : str
        The name a definitions file writes under ``operation:``.
    function : callable
        ``function(*values, **switches) -> raw value``; the values are the metric's inputs, in
        order. A ``TypeError`` it raises makes the raw value missing (scored 0), as the prototype does.
    arity : int or None
        Number of inputs; ``None`` = one or more.
    switches : tuple of str
        Names from :data:`SWITCHES` passed as keyword arguments.
    """

    name: str
    function: Callable[..., Any]
    arity: int | None
    switches: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScoreType:
    """A registered score type: a raw value onto a score.

    Attributes
    ----------
    name : str
        The name a definitions file writes under ``type:``.
    function : callable
        ``function(raw, metric, **switches) -> float``; ``metric`` is the
        :class:`~fltrust.trust.scoring.definitions.MetricDefinition` (its ``direction``,
        ``ranges``, ``scale``, ``score_map``, ``map_normalization``). Never called with ``None``.
    required, optional : frozenset of str
        Metric keys (from :data:`METRIC_KEYS`) the type needs / accepts; any other key is an
        error in the definitions file.
    switches : tuple of str
        Names from :data:`SWITCHES` passed as keyword arguments.
    check : callable or None
        ``check(metric) -> str | None``: a problem of the metric's keys for this type (the
        definitions file then fails with it), or ``None``.
    """

    name: str
    function: Callable[..., float]
    required: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    switches: tuple[str, ...] = ()
    check: Callable[[Any], str | None] | None = None


OPERATIONS: Registry[Operation] = Registry("operation", error=RegistryError)
"""Every operation a definitions file may name (:func:`operation` registers one)."""
SCORE_TYPES: Registry[ScoreType] = Registry("score type", error=RegistryError)
"""Every score type a definitions file may name (:func:`score_type` registers one)."""


def _check_switches(name: str, switches: Sequence[str]) -> tuple[str, ...]:
    unknown = sorted(set(switches) - set(SWITCHES))  # the keys
    if unknown:
        raise RegistryError(f"{name!r}: unknown switch(es) {unknown}; choose from {list(SWITCHES)}")
    return tuple(switches)


def operation(
    name: str, *, arity: int | None, switches: Sequence[str] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the operation ``name``.

    Parameters
    ----------
    name : str
        The name a definitions file writes under ``operation:``.
    arity : int or None
        Number of inputs the function takes (``None`` = one or more).
    switches : sequence of str
        Engine switches (:data:`SWITCHES`) it takes as keyword arguments.

    Returns
    -------
    callable
        A decorator that registers the function and returns it unchanged.

    Raises
    ------
    RegistryError
        The name is taken, the arity is not a positive integer or ``None``, or a switch is unknown.
    """
    if arity is not None and (isinstance(arity, bool) or not isinstance(arity, int) or arity < 1):
        raise RegistryError(f"operation {name!r}: arity={arity!r} must be a positive integer or None")
    chosen = _check_switches(name, switches)

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        OPERATIONS.register(Operation(name, function, arity, chosen))
        return function

    return register


def score_type(
    name: str, *, required: Sequence[str] = (), optional: Sequence[str] = (), switches: Sequence[str] = (),
    check: Callable[[Any], str | None] | None = None,
) -> Callable[[Callable[..., float]], Callable[..., float]]:
    """Register the decorated function as the score type ``name``.

    Parameters
    ----------
    name : str
        The name a definitions file writes under ``type:``.
    required, optional : sequence of str
        Metric keys (:data:`METRIC_KEYS`) the type needs / accepts.
    switches : sequence of str
        Engine switches (:data:`SWITCHES`) it takes as keyword arguments.
    check : callable or None
        ``check(metric) -> str | None``, a further check of the metric's keys (see :class:`ScoreType`).

    Returns
    -------
    callable
        A decorator that registers ``function(raw, metric, **switches) -> float`` and returns it.

    Raises
    ------
    RegistryError
        The name is taken, or a key or switch is unknown.

    Examples
    --------
    >>> @score_type("halved", optional=("direction",))
    ... def halved(raw, metric):
    ...     return raw / 2 if metric.direction == "asc" else 1 - raw / 2
    >>> SCORE_TYPES["halved"].optional
    frozenset({'direction'})
    >>> SCORE_TYPES.unregister("halved")
    """
    keys = set(required) | set(optional)
    unknown = sorted(keys - set(METRIC_KEYS))
    if unknown:
        raise RegistryError(f"score type {name!r}: unknown metric key(s) {unknown}; choose from {list(METRIC_KEYS)}")
    chosen = _check_switches(name, switches)

    def register(function: Callable[..., float]) -> Callable[..., float]:
        SCORE_TYPES.register(ScoreType(name, function, frozenset(required), frozenset(optional), chosen, check))
        return function

    return register
