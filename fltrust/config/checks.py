""":class:`ConfigError` and the value checks every config section uses.

Each check raises one :class:`ConfigError` line naming ``section.name``, the bad value and the
allowed values or bound (``data.name='x' is not allowed; choose one of [...]``). They are internal
to :mod:`fltrust.config`: the other modules of the package import them, users see only the error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fltrust.settings import show


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field and the fix."""


def choice(section: str, name: str, value: Any, allowed: tuple[Any, ...]) -> None:
    """Raise :class:`ConfigError` unless ``value`` is one of ``allowed``.

    Parameters
    ----------
    section, name : str
        The key's section (``"data"``, ``"metrics.fairness"``) and name, for the message.
    value : object
        The configured value.
    allowed : tuple
        The allowed values, listed in the message.

    Examples
    --------
    >>> try:
    ...     choice("run", "device", "tpu", ("cpu", "cuda", "auto"))
    ... except ConfigError as exc:
    ...     print(exc)
    run.device='tpu' is not allowed; choose one of ['cpu', 'cuda', 'auto']
    """
    if value not in allowed:
        raise ConfigError(f"{section}.{name}={show(value)} is not allowed; choose one of {list(allowed)}")


def positive(section: str, name: str, value: Any, *, allow_zero: bool = False) -> None:
    """Raise :class:`ConfigError` unless ``value`` is ``> 0`` (``>= 0`` with ``allow_zero``); ``None`` passes.

    Parameters
    ----------
    section, name : str
        The key's section and name, for the message.
    value : int, float or None
        The configured value (``None`` = unset).
    allow_zero : bool
        Accept 0.
    """
    if value is None:
        return
    if (value < 0) if allow_zero else (value <= 0):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{section}.{name}={show(value)} must be {bound}")


def at_most(section: str, name: str, value: Any, limit: int, why: str) -> None:
    """Raise :class:`ConfigError` when ``value`` exceeds ``limit``; ``None`` passes.

    Parameters
    ----------
    section, name : str
        The key's section and name, for the message.
    value : int or None
        The configured value (``None`` = unset).
    limit : int
        The largest allowed value.
    why : str
        What the limit protects, in the message (``"CPU threads of one process"``).
    """
    if value is not None and value > limit:
        raise ConfigError(f"{section}.{name}={show(value)} is too large: at most {limit:,} ({why})")


def fraction(section: str, name: str, value: Any, *, allow_zero: bool = False) -> None:
    """Raise :class:`ConfigError` unless ``value`` lies in ``(0, 1]`` (``[0, 1]`` with ``allow_zero``); ``None`` passes.

    Parameters
    ----------
    section, name : str
        The key's section and name, for the message.
    value : float or None
        The configured value (``None`` = unset).
    allow_zero : bool
        Accept 0.
    """
    if value is None:
        return
    low_ok = value >= 0 if allow_zero else value > 0
    if not (low_ok and value <= 1):
        raise ConfigError(f"{section}.{name}={show(value)} must lie in {'[0' if allow_zero else '(0'}, 1]")


def nonnegative(section: str, name: str, value: Any) -> None:
    """:func:`positive` with ``allow_zero``: ``value >= 0``; ``None`` passes."""
    positive(section, name, value, allow_zero=True)


def share(section: str, name: str, value: Any) -> None:
    """:func:`fraction` with ``allow_zero``: ``value`` in ``[0, 1]``; ``None`` passes."""
    fraction(section, name, value, allow_zero=True)


def check_fields(section_obj: Any, section: str, **rules: tuple[Any, ...] | Callable[[str, str, Any], None]) -> None:
    """Check the named fields of a section, in the order given.

    Parameters
    ----------
    section_obj : dataclass
        The section whose fields are read.
    section : str
        Its name, for the messages.
    **rules
        Per field: a tuple of its allowed values (:func:`choice`), or a check called as
        ``rule(section, name, value)`` (:func:`positive`, :func:`nonnegative`, :func:`fraction`, :func:`share`).
    """
    for name, rule in rules.items():
        value = getattr(section_obj, name)
        if isinstance(rule, tuple):
            choice(section, name, value, rule)
        else:
            rule(section, name, value)
