"""The ``metrics`` section (``fairness``, ``trust``) and ``project``: the papers' metrics that observe a run.

:func:`fairness_settings` and :func:`trust_settings` are the one place the YAML keys become the
observers' typed settings (:mod:`fltrust.settings`), whose checks are the only ones. The two
sections derive from the fields they share with the settings (:class:`~fltrust.settings.FairnessOptions`,
:class:`~fltrust.settings.TrustOptions`: each key and its doc is written there) and add ``enabled``.
``project`` holds the user-supplied fields of the FederatedTrust FactSheet.

Spec and bug references ("fairness spec §N", "trust spec §N", "Bn") are defined in ``docs/references.md``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from fltrust.config.checks import ConfigError

# the metrics' settings (built from metrics.fairness / metrics.trust below) and the fields the
# sections share with them; fltrust.settings imports nothing heavy
from fltrust.settings import (
    NOTION_WEIGHTS,
    FairnessOptions,
    FairnessSettings,
    SettingsError,
    TrustOptions,
    TrustSettings,
)


@dataclass(frozen=True)
class FairnessConfig(FairnessOptions):
    """The ``metrics.fairness`` section: Federated Fairness Analytics (see :mod:`fltrust.metrics.fairness`).

    Its keys are the fields of :class:`~fltrust.settings.FairnessOptions` (documented there; ``mode``
    picks the defaults of every switch, a switch set to a value overrides its mode default), with
    ``sensitive_attributes`` and ``notion_weights`` as lists, plus ``enabled``.

    Attributes
    ----------
    enabled : bool
        Attach the fairness observer.
    """

    enabled: bool = False
    # lists here (the settings hold tuples): the YAML loader checks each item, and the config
    # hash compares them with these defaults
    sensitive_attributes: list[int] | None = None
    notion_weights: list[float] = field(default_factory=lambda: list(NOTION_WEIGHTS))

    def __post_init__(self) -> None:
        fairness_settings(self)  # the settings' checks are the only ones (fltrust.settings)


@dataclass(frozen=True)
class TrustConfig(TrustOptions):
    """The ``metrics.trust`` section: FederatedTrust FactSheet and scoring (see :mod:`fltrust.trust`).

    Its keys are the fields of :class:`~fltrust.settings.TrustOptions` (documented there) plus
    ``enabled``; the statistic switches of :class:`~fltrust.settings.TrustSettings` take the
    mode's defaults.

    Attributes
    ----------
    enabled : bool
        Attach the FactSheet observer and score the run at the end.
    """

    enabled: bool = False

    def __post_init__(self) -> None:
        trust_settings(self)  # the settings' checks are the only ones (fltrust.settings)


def _settings(section: str, build):
    """Build a settings object; its :class:`~fltrust.settings.SettingsError` becomes a ConfigError
    naming the YAML key (``metrics.fairness.reward='lifetime' is not allowed; ...``)."""
    try:
        return build()
    except SettingsError as exc:
        raise ConfigError(f"{section}.{exc.field}{exc.detail}") from None


def fairness_settings(config: FairnessConfig) -> FairnessSettings:
    """The :class:`~fltrust.settings.FairnessSettings` of a ``metrics.fairness`` section.

    The one place the YAML keys become the fairness observer's settings (``enabled`` is the
    experiment's business; ``None`` switches stay "the mode's default").

    Parameters
    ----------
    config : FairnessConfig

    Returns
    -------
    FairnessSettings

    Examples
    --------
    >>> fairness_settings(FairnessConfig(mode="corrected", reward="instantaneous")).nonpositive_policy
    'exclude'
    """
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(FairnessOptions)}
    return _settings("metrics.fairness", lambda: FairnessSettings(**values))  # it makes the lists tuples


def trust_settings(config: TrustConfig) -> TrustSettings:
    """The :class:`~fltrust.settings.TrustSettings` of a ``metrics.trust`` section.

    Every key but ``enabled`` (the fields of :class:`~fltrust.settings.TrustOptions`) carries over
    by name; the statistic switches take the mode's defaults.

    Parameters
    ----------
    config : TrustConfig

    Returns
    -------
    TrustSettings

    Examples
    --------
    >>> trust_settings(TrustConfig(mode="fixed", clever_samples=0)).clever_samples
    0
    """
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(TrustOptions)}
    return _settings("metrics.trust", lambda: TrustSettings(**values))  # it checks the declared values too


@dataclass(frozen=True)
class MetricsConfig:
    """Which paper metrics observe the run."""

    fairness: FairnessConfig = field(default_factory=FairnessConfig)
    trust: TrustConfig = field(default_factory=TrustConfig)


@dataclass(frozen=True)
class ProjectConfig:
    """User-supplied FactSheet fields; missing ones are reported, never invented."""

    overview: str = ""
    purpose: str = ""
    background: str = ""
    organisations: list[str] = field(default_factory=list)
