r"""The fairness notions as a table: one registered entry per notion, keyed by its name.

Every fairness notion is one :class:`Notion`: its function of the round's participants
(:class:`NotionInput`, the same record for every notion), its label for plots, its default
weight in general fairness F_T and its equation reference. :func:`register_notion` adds one (as
a decorator or a call); :data:`NOTIONS` is the read-only table, in registration order. The four
notions of Federated Fairness Analytics are registered by :mod:`fltrust.metrics.fairness.notions`
(f_j, f_g, f_r, f_o, 0.25 each); a notion registered anywhere else is computed every round by
the :class:`~fltrust.metrics.fairness.FairnessObserver`, stored with the round, and shown by
every table, plot, report and Flower metric that lists the notions, because they all read
this table (:data:`FAIRNESS_KEYS`, :data:`NOTION_LABELS`, :class:`NotionKeys`).

>>> list(NOTIONS)[:4], NOTIONS["f_o"].default_weight
(['f_j', 'f_g', 'f_r', 'f_o'], 0.25)
>>> tuple(FAIRNESS_KEYS)[-1] == GENERAL_FAIRNESS == "F_T"
True

A notion's default weight 0 means it is reported but not part of F_T unless the settings weigh
it (``FairnessSettings(notion_weights={"my_notion": 0.2})``, YAML ``metrics.fairness.notion_weights``);
:func:`resolve_weights` gives the weights a round's F_T uses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fltrust.metrics.jain import MetricInputError
from fltrust.registry import Registry
from fltrust.settings import FairnessSettings

__all__ = [
    "FAIRNESS_KEYS",
    "GENERAL_FAIRNESS",
    "NOTIONS",
    "NOTION_LABELS",
    "NOTION_SYMBOLS",
    "Notion",
    "NotionInput",
    "NotionKeys",
    "register_notion",
    "resolve_weights",
    "unregister_notion",
]

GENERAL_FAIRNESS = "F_T"
"""The key of general fairness F_T (paper Eqs. 12-13) next to the notions in every record and table."""
_GENERAL_LABEL, _GENERAL_SYMBOL = "general $F_T$", "$F_T$"

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")


@dataclass(frozen=True)
class NotionInput:
    """What every notion's function receives: the participants of one round.

    Arrays are aligned: entry ``i`` of each is participant ``i`` of the round.

    Attributes
    ----------
    performance : np.ndarray, shape (m,)
        x_{n,k}: validation accuracy after local training (Ditto: of the personal model).
    rewards : np.ndarray, shape (m,)
        r_n: the received global model's validation accuracy before training, this round's
        or summed over the client's rounds (``settings.reward``, already applied).
    contribution : np.ndarray, shape (m,)
        s_n: cumulative federated Shapley value, this round included.
    confusion : np.ndarray, shape (m, K, K)
        Validation confusion matrices after training (rows true, columns predicted).
    sensitive_attributes : tuple of int
        The attribute list A (label values) the group notions compare.
    settings : FairnessSettings
        The resolved switches (mode, guards, policies).
    client_ids : np.ndarray of int or None
        The participants' client ids (``None`` when the caller has none).
    """

    performance: np.ndarray
    rewards: np.ndarray
    contribution: np.ndarray
    confusion: np.ndarray
    sensitive_attributes: tuple[int, ...]
    settings: FairnessSettings
    client_ids: np.ndarray | None = None


@dataclass(frozen=True)
class Notion:
    """One registered fairness notion (see :func:`register_notion` for the fields).

    Attributes
    ----------
    name : str
        Its key in round records, tables, frames and Flower metrics (``fltrust.<name>``).
    function : callable
        ``function(inputs: NotionInput)`` returns the value (a float) or an object with a
        float ``value`` attribute and per-client pieces (e.g.
        :class:`~fltrust.metrics.fairness.RatioFairness`).
    label : str
        Legend label of plots (matplotlib mathtext allowed), e.g. ``"individual $f_j$"``.
    symbol : str
        Short form for axis ticks, e.g. ``"$f_j$"``.
    default_weight : float
        Its weight in F_T when the settings do not set one (0: reported, not weighted).
    equation : str
        Where it is defined, in words (paper equation, spec section).
    details : callable or None
        ``details(result)`` -> the extra per-round fields stored with the round (JSON-ready),
        from what ``function`` returned; ``None``: the value only.
    """

    name: str
    function: Callable[[NotionInput], Any]
    label: str
    symbol: str
    default_weight: float
    equation: str
    details: Callable[[Any], Mapping[str, Any]] | None = None

    def compute(self, inputs: NotionInput) -> tuple[float, Any, dict[str, Any]]:
        """``(value, result, details)`` of this notion on one round.

        Parameters
        ----------
        inputs : NotionInput
            The round's participants.

        Returns
        -------
        value : float
            The notion's value (NaN allowed).
        result : object
            What :attr:`function` returned.
        details : dict
            The extra per-round fields (:attr:`details`; empty without).
        """
        result = self.function(inputs)
        raw = getattr(result, "value", result)
        if isinstance(raw, bool) or not isinstance(raw, (int, float, np.integer, np.floating)):
            raise MetricInputError(
                f"fairness notion {self.name!r} returned {type(raw).__name__}; its function must return a float "
                "(or an object with a float .value)"
            )
        extra = dict(self.details(result)) if self.details is not None else {}
        return float(raw), result, extra


NOTIONS: Registry[Notion] = Registry("fairness notion", error=MetricInputError)
"""Every registered notion by name, in registration order (read-only; :func:`register_notion` adds)."""


def register_notion(
    name: str,
    function: Callable[[NotionInput], Any] | None = None,
    *,
    label: str,
    equation: str,
    default_weight: float = 0.0,
    symbol: str | None = None,
    details: Callable[[Any], Mapping[str, Any]] | None = None,
    replace: bool = False,
) -> Any:
    """Register a fairness notion; usable as a decorator or as a call.

    Parameters
    ----------
    name : str
        Its key everywhere (a letter, then letters, digits or ``_``; not ``"F_T"``).
    function : callable, optional
        ``function(inputs: NotionInput) -> float`` (or an object with a float ``value``).
        Omitted: ``register_notion(...)`` returns a decorator.
    label : str
        Legend label of plots (matplotlib mathtext allowed).
    equation : str
        Where the notion is defined, in words (paper and equation, or spec section).
    default_weight : float, default 0.0
        Its weight in F_T unless the settings set one; 0 reports it without weighting it.
    symbol : str, optional
        Short tick label (default: ``name``).
    details : callable, optional
        ``details(result) -> dict`` of extra JSON-ready fields stored with each round.
    replace : bool, default False
        Replace a notion another function registered under ``name`` (the same function
        registered again, as by a notebook cell that reruns, replaces itself).

    Returns
    -------
    callable
        ``function`` unchanged (or, without ``function``, the decorator that registers it).

    Raises
    ------
    MetricInputError
        For an invalid or taken name or a negative or non-finite weight.

    Examples
    --------
    >>> @register_notion("min_accuracy", label="worst client accuracy", equation="min_n x_n")
    ... def min_accuracy(inputs):
    ...     return float(inputs.performance.min())
    >>> NOTIONS["min_accuracy"].default_weight
    0.0
    >>> unregister_notion("min_accuracy")
    """
    if not isinstance(name, str) or not _NAME.match(name) or name == GENERAL_FAIRNESS:
        raise MetricInputError(
            f"fairness notion name {name!r} must be a letter, then up to 63 letters, digits or '_', and not "
            f"{GENERAL_FAIRNESS!r} (general fairness)"
        )
    weight = float(default_weight)
    if not math.isfinite(weight) or weight < 0:
        raise MetricInputError(f"fairness notion {name!r}: default_weight={default_weight!r} must be a finite number >= 0")

    def add(fn: Callable[[NotionInput], Any]) -> Callable[[NotionInput], Any]:
        if not callable(fn):
            raise MetricInputError(f"fairness notion {name!r}: {fn!r} is not callable")
        NOTIONS.register(Notion(name=name, function=fn, label=str(label), symbol=str(symbol or name),
                                default_weight=weight, equation=str(equation), details=details), replace=replace)
        return fn

    return add if function is None else add(function)


def unregister_notion(name: str) -> None:
    """Remove a registered notion (tests, notebooks).

    Parameters
    ----------
    name : str
        A registered notion's name.

    Raises
    ------
    MetricInputError
        If no notion of that name is registered.
    """
    if name not in NOTIONS:
        raise MetricInputError(f"no fairness notion {name!r} is registered; registered: {list(NOTIONS)}")
    NOTIONS.unregister(name)


def resolve_weights(overrides: Mapping[str, float] | None = None, *, where: str = "notion_weights") -> dict[str, float]:
    """Return the weight of every registered notion in F_T: its default weight unless ``overrides`` sets it.

    Parameters
    ----------
    overrides : mapping of str to float, optional
        ``FairnessSettings.notion_weights``: weights replacing the defaults ({} or None: none).
    where : str
        The setting's name in error messages (e.g. ``"metrics.fairness.notion_weights"``).

    Returns
    -------
    dict of str to float
        Every registered notion, in registration order, with its weight (not normalised).

    Raises
    ------
    MetricInputError
        If ``overrides`` names an unregistered notion or every weight is 0.

    Examples
    --------
    >>> resolve_weights({"f_o": 0.0})
    {'f_j': 0.25, 'f_g': 0.25, 'f_r': 0.25, 'f_o': 0.0}
    """
    overrides = dict(overrides or {})
    unknown = [k for k in overrides if k not in NOTIONS]
    if unknown:
        raise MetricInputError(
            f"{where} names {unknown}, which {'is' if len(unknown) == 1 else 'are'} not a registered fairness notion; "
            f"registered: {list(NOTIONS)}; import the module that registers it first (docs/extending.md)"
        )
    weights = {name: float(overrides.get(name, notion.default_weight)) for name, notion in NOTIONS.items()}
    if not any(w > 0 for w in weights.values()):
        raise MetricInputError(f"{where} gives every notion weight 0 ({weights}); F_T needs a positive weight")
    return weights


class NotionKeys(Sequence[str]):
    """A live, read-only sequence of column names: ``before``, the registered notions, F_T, ``after``.

    It reads :data:`NOTIONS` whenever it is used, so a notion registered after a module defined
    its columns appears in them.

    Parameters
    ----------
    before, after : sequence of str
        Fixed names around the notions.
    general : bool, default True
        Put :data:`GENERAL_FAIRNESS` after the notions.

    Examples
    --------
    >>> list(NotionKeys(before=("round",), general=False))
    ['round', 'f_j', 'f_g', 'f_r', 'f_o']
    """

    def __init__(self, before: Sequence[str] = (), after: Sequence[str] = (), *, general: bool = True) -> None:
        self._before, self._after, self._general = tuple(before), tuple(after), general

    def _keys(self) -> tuple[str, ...]:
        general = (GENERAL_FAIRNESS,) if self._general else ()
        return (*self._before, *NOTIONS, *general, *self._after)

    def __getitem__(self, index):
        """Return the key at ``index``."""
        return self._keys()[index]

    def __len__(self) -> int:
        """Count the keys."""
        return len(self._keys())

    def __eq__(self, other: object) -> bool:
        """Compare the keys, in order, with another key sequence."""
        if isinstance(other, (NotionKeys, tuple, list)):
            return self._keys() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        """Show the keys as a tuple."""
        return repr(self._keys())


FAIRNESS_KEYS = NotionKeys()
"""The registered notions, then ``F_T``: the fairness values of a round record and the columns of a notions frame."""


class _Describe(Mapping[str, str]):
    """A live mapping of :data:`FAIRNESS_KEYS` to one attribute of each notion (F_T's own for F_T)."""

    def __init__(self, attribute: str, general: str) -> None:
        self._attribute, self._general = attribute, general

    def __getitem__(self, key: str) -> str:
        if key == GENERAL_FAIRNESS:
            return self._general
        return getattr(NOTIONS[key], self._attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(FAIRNESS_KEYS)

    def __len__(self) -> int:
        return len(FAIRNESS_KEYS)

    def __repr__(self) -> str:
        return repr(dict(self))


NOTION_LABELS: Mapping[str, str] = _Describe("label", _GENERAL_LABEL)
"""Legend label of every key of :data:`FAIRNESS_KEYS` (live)."""
NOTION_SYMBOLS: Mapping[str, str] = _Describe("symbol", _GENERAL_SYMBOL)
"""Tick label of every key of :data:`FAIRNESS_KEYS` (live)."""
