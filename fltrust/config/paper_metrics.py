"""The ``metrics`` section (``fairness``, ``trust``) and ``project``: the papers' metrics that observe a run.

:func:`fairness_settings` and :func:`trust_settings` are the one place the YAML keys become the
observers' typed settings (:mod:`fltrust.settings`), whose checks are the only ones. The two
sections derive from the fields they share with the settings (:class:`~fltrust.settings.FairnessOptions`,
:class:`~fltrust.settings.TrustOptions`: each key and its doc is written there) and add ``enabled``.
``project`` holds the user-supplied fields of the FederatedTrust FactSheet.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from fltrust.config.checks import ConfigError

# the metrics' settings (built from metrics.fairness / metrics.trust below) and the fields the
# sections share with them; fltrust.settings imports nothing heavy
from fltrust.settings import (
    FairnessOptions,
    FairnessSettings,
    SettingsError,
    TrustOptions,
    TrustSettings,
    show,
)


@dataclass(frozen=True)
class FairnessConfig(FairnessOptions):
    """The ``metrics.fairness`` section: Federated Fairness Analytics (see :mod:`fltrust.metrics.fairness`).

    Its keys are the fields of :class:`~fltrust.settings.FairnessOptions` (documented there; ``mode``
    picks the defaults of every switch, a switch set to a value overrides its mode default), with
    ``sensitive_attributes`` as a list, plus ``enabled``.

    ``notion_weights`` takes a mapping notion name -> weight in F_T (``{f_o: 0, my_notion: 0.2}``;
    a notion it leaves out keeps its registered default weight) or the paper's four as a list
    ``[f_j, f_g, f_r, f_o]``. The section holds it as :func:`~fltrust.metrics.fairness.notions.weights_record`
    writes it: the paper's four as a list ``[0.25, 0.25, 0.25, 0.25]`` (default) when it names no
    other notion, so configs and run ids written before notions were registered keep their
    hashes, else a mapping. A notion the file names must be registered before the config is
    loaded (import the module that registers it).

    Attributes
    ----------
    enabled : bool
        Attach the fairness observer.
    """

    enabled: bool = False
    # a list here (the settings hold a tuple): the YAML loader checks each item, and the config
    # hash compares it with this default
    sensitive_attributes: list[int] | None = None
    notion_weights: list[float] | dict[str, float] = field(default_factory=lambda: _weights_record({}))

    def __post_init__(self) -> None:
        fairness_settings(self)  # the settings' checks are the only ones (fltrust.settings), names included
        object.__setattr__(self, "notion_weights", _weights_record(_weights_mapping(self.notion_weights)))


def _weights_record(weights: dict[str, float]) -> list[float] | dict[str, float]:
    from fltrust.metrics.fairness.notions import weights_record

    return weights_record(weights)


def _weights_mapping(value: object) -> dict[str, float]:
    """A ``metrics.fairness.notion_weights`` value as a mapping: the 4-list form names the paper's four."""
    from fltrust.metrics.fairness.notions import PAPER_NOTIONS

    key = "metrics.fairness.notion_weights"
    if isinstance(value, (list, tuple)):
        if len(value) != len(PAPER_NOTIONS):
            raise ConfigError(f"{key}={show(value)} must be a mapping notion -> weight (e.g. {{f_o: 0, my_notion: 0.2}}) "
                              f"or a list of {len(PAPER_NOTIONS)} weights {list(PAPER_NOTIONS)}")
        return dict(zip(PAPER_NOTIONS, value))
    if not isinstance(value, dict):
        raise ConfigError(f"{key}={show(value)} must be a mapping notion -> weight, e.g. {{f_o: 0, my_notion: 0.2}}")
    return dict(value)


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
    from fltrust.metrics.fairness.registry import NOTIONS, resolve_weights
    from fltrust.metrics.jain import MetricInputError

    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(FairnessOptions)}
    values["notion_weights"] = _weights_mapping(config.notion_weights)
    settings = _settings("metrics.fairness", lambda: FairnessSettings(**values))  # it makes the list a tuple
    try:
        resolve_weights(settings.notion_weights, where="metrics.fairness.notion_weights")
    except MetricInputError as exc:
        raise ConfigError(str(exc)) from None
    # the settings keep the weights that differ from the notions' defaults: the paper's
    # [0.25, 0.25, 0.25, 0.25] is FairnessSettings()'s empty mapping
    changed = {k: w for k, w in settings.notion_weights.items() if w != NOTIONS[k].default_weight}
    return dataclasses.replace(settings, notion_weights=changed)


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
