"""The kit's one registry type, and the registries of the components a config names.

A :class:`Registry` maps a name (the value of a config field such as ``strategy.name``) to the
object that implements it. The object registers itself where it is defined, with
:meth:`Registry.register` as a class decorator; nothing else in the tree lists it. The registries
live here, below :mod:`fltrust.config`, so that the config can check a name against every
registered one without importing the packages that define them: the names :mod:`fltrust.names`
declares for the built-ins are known from the start (their classes register when
:mod:`fltrust.algorithms` is imported), and a name registered at run time -- a strategy of your
own, before its config is loaded -- passes the config's check as well.

- :data:`STRATEGIES` -- ``strategy.name`` -> a :class:`fltrust.algorithms.strategies.Strategy`
  subclass;
- :data:`PRIVACY_MECHANISMS` -- ``privacy.mode`` -> a
  :class:`fltrust.algorithms.privacy.PrivacyMechanism` subclass.

Every other registry of the kit is one of this type too: the fairness notions
(:data:`fltrust.metrics.fairness.NOTIONS`), the trust measures
(:data:`fltrust.trust.measures.registry.MEASURES`) and the scoring engine's operations and score
types (:mod:`fltrust.trust.scoring.registry`).

This module imports only :mod:`fltrust.names`.

Examples
--------
>>> registry = Registry("example.name", builtin=("a",))
>>> @registry.register
... class B:
...     name = "b"
>>> registry.names()
('a', 'b')
>>> registry["b"] is B, "a" in registry   # "a" is declared, but nothing registered it here
(True, False)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

from fltrust import names

__all__ = ["PRIVACY_MECHANISMS", "STRATEGIES", "Registry", "qualname"]

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Names of one config field -> the registered objects that implement them.

    A name is registered once. The same definition registered again (a reloaded module, a notebook
    cell that reruns: the same :func:`qualname`) replaces itself; any other object needs
    ``replace=True``.

    Parameters
    ----------
    field : str
        The config field the names are values of (``"strategy.name"``), for messages.
    builtin : tuple of str
        The names declared in :mod:`fltrust.names` (valid in a config before their module is imported).
    error : type of Exception
        What a refused registration raises (default ``ValueError``).
    """

    def __init__(self, field: str, builtin: tuple[str, ...] = (), error: type[Exception] = ValueError) -> None:
        self.field = field
        self.builtin = tuple(builtin)
        self.error = error
        self._entries: dict[str, T] = {}

    def register(self, obj: T | None = None, *, name: str | None = None, replace: bool = False) -> Any:
        """Register ``obj`` under ``name`` (default: its ``name`` attribute); usable as a decorator.

        Parameters
        ----------
        obj : object, optional
            What to register; omitted, a decorator is returned (``@registry.register(name="x")``).
        name : str, optional
            The name (default ``obj.name``).
        replace : bool
            Allow replacing another object already registered under ``name`` (default False: two
            components cannot silently share one name).

        Returns
        -------
        object
            ``obj`` itself (so the decorated class is unchanged), or the decorator.

        Raises
        ------
        Exception
            ``error`` (default ``ValueError``), if the name is empty, not a string, or taken by
            another definition (without ``replace``).
        """
        if obj is None:
            return lambda o: self.register(o, name=name, replace=replace)
        key = name if name is not None else getattr(obj, "name", None)
        if not isinstance(key, str) or not key:
            raise self.error(f"{self.field}: {obj!r} has no name; give it a `name` attribute or register(name=...)")
        old = self._entries.get(key)
        if old is not None and qualname(old) != qualname(obj) and not replace:
            raise self.error(f"{self.field} {key!r} is already registered by {qualname(old)}; "
                             "choose another name or pass replace=True")
        self._entries[key] = obj
        return obj

    def unregister(self, name: str) -> None:
        """Remove a name registered at run time (a test's clean-up); built-in names stay declared.

        Parameters
        ----------
        name : str
            A registered name.
        """
        self._entries.pop(name, None)

    def names(self) -> tuple[str, ...]:
        """Every name a config may use: the declared built-ins, then the names registered at run time.

        Returns
        -------
        tuple of str
        """
        return self.builtin + tuple(k for k in self._entries if k not in self.builtin)

    def __getitem__(self, name: str) -> T:
        """The object registered under ``name``.

        Parameters
        ----------
        name : str

        Returns
        -------
        object

        Raises
        ------
        KeyError
            Naming the field and the registered names.
        """
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"{self.field}={name!r} is not registered; registered: {sorted(self._entries)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.field!r}, {sorted(self._entries)})"


def qualname(obj: Any) -> str:
    """``module.qualified_name`` of a class or function, or of the ``function`` an entry wraps.

    Parameters
    ----------
    obj : object

    Returns
    -------
    str

    Examples
    --------
    >>> qualname(Registry)
    'fltrust.registry.Registry'
    """
    target = getattr(obj, "function", obj)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"


# The entries are classes of fltrust.algorithms, which this module sits below (it cannot name them): the
# typed look-ups are fltrust.algorithms.strategies.strategy_class and fltrust.algorithms.privacy.privacy_mechanism.
STRATEGIES: Registry[Any] = Registry("strategy.name", builtin=names.STRATEGIES)
"""``strategy.name`` -> strategy class (filled by :mod:`fltrust.algorithms.strategies`)."""

PRIVACY_MECHANISMS: Registry[Any] = Registry("privacy.mode", builtin=names.PRIVACY_MODES)
"""``privacy.mode`` -> privacy mechanism class (filled by :mod:`fltrust.algorithms.privacy`)."""
