"""The ``metrics`` section (``fairness``, ``trust``) and ``project``: the papers' metrics that observe a run.

:func:`fairness_settings` and :func:`trust_settings` are the one place the YAML keys become the
observers' typed settings (:mod:`fltrust.settings`), whose checks are the only ones. ``project``
holds the user-supplied fields of the FederatedTrust FactSheet.

Spec and bug references ("fairness spec §N", "trust spec §N", "Bn") are defined in ``docs/references.md``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from fltrust.config.checks import ConfigError
from fltrust.names import FairnessMode, TrustMode

# the metrics' settings (built from metrics.fairness / metrics.trust below); fltrust.settings
# imports nothing heavy
from fltrust.settings import FairnessSettings, SettingsError, TrustSettings


@dataclass(frozen=True)
class FairnessConfig:
    """Federated Fairness Analytics metrics (see :mod:`fltrust.metrics.fairness`).

    ``mode`` picks the defaults of every switch; a switch set to a value overrides its mode default.

    Attributes
    ----------
    enabled : bool
        Attach the fairness observer.
    mode : str
        ``"faithful"`` (what produced the paper's Table 3) or ``"corrected"``.
    shapley : str
        ``"exact"`` (all coalitions), ``"monte_carlo"`` (plain permutation sampling),
        ``"permutation"`` (guided permutation sampling with a control variate: about 91 coalition
        models instead of 1,023 at 10 participants) or ``"auto"`` (exact up to
        ``shapley_auto_exact_players`` participants, else ``"permutation"``); see
        :func:`fltrust.metrics.shapley.federated_shapley`.
    shapley_permutations : int
        ``"monte_carlo"`` budget (permutations per round).
    exact_max_players : int
        With ``shapley="exact"``, rounds with more participants fall back to Monte Carlo (with a
        warning).
    shapley_auto_exact_players : int
        ``shapley="auto"``: exact up to this many participants.
    shapley_sampler_permutations : int
        ``"permutation"`` budget (permutations per round).
    shapley_truncation : float
        ``"permutation"``: truncation tolerance, a fraction of ``|U(S)|`` (0 = off).
    sensitive_attributes : list of int or None
        Attribute positions of the group-fairness notion (``None`` = per dataset/strategy as the
        authors coded, fairness spec 4).
    shapley_include_empty, coalition_weighting, nonpositive_policy, reward, group_metric
        Individual corrections; ``None`` = the mode's default.
    notion_weights : list of float
        Weights of (f_j, f_g, f_r, f_o) in F_T (paper Eqs. 12-13); equal by default.
    aux_batch_size : int or None
        Aux-set samples per forward pass of the FedSV coalition evaluation (all coalition models
        at once); ``None`` = automatic (about 32 MB of activations on CPU, 1 GB on CUDA). Speed
        and memory only: with
        ``training.loss_scaling: per_batch_sum`` the losses are still summed per mini-batch of
        ``training.batch_size``, as the authors did. Not part of the run id.
    """

    enabled: bool = False
    mode: FairnessMode = "faithful"
    shapley: str = "exact"
    shapley_permutations: int = 200
    exact_max_players: int = 10
    shapley_auto_exact_players: int = 6
    shapley_sampler_permutations: int = 10
    shapley_truncation: float = 0.0
    sensitive_attributes: list[int] | None = None
    shapley_include_empty: bool | None = None
    coalition_weighting: str | None = None
    nonpositive_policy: str | None = None
    reward: str | None = None
    group_metric: str | None = None
    notion_weights: list[float] = field(default_factory=lambda: [0.25, 0.25, 0.25, 0.25])
    aux_batch_size: int | None = None

    def __post_init__(self) -> None:
        fairness_settings(self)  # the settings' checks are the only ones (fltrust.settings)


@dataclass(frozen=True)
class TrustConfig:
    """FederatedTrust FactSheet and scoring (see :mod:`fltrust.trust`).

    Attributes
    ----------
    enabled : bool
        Attach the FactSheet observer and score the run at the end.
    mode : str
        ``"prototype"`` (the authors' released code), ``"paper"`` (normalisations that best
        reproduce the paper's Figures 4-5), ``"fixed"`` (every spec-9 fix) or ``"extended"``
        (all 36 taxonomy metrics plus nebula's sustainability pillar, measured where the kit can;
        see ``fltrust/trust/definitions/extended.yaml``).
    metrics_file : str or None
        A user's own pillar/notion/metric definition (YAML or JSON); ``None`` = the packaged one.
    clever_samples : int
        Test points for CLEVER (0 disables).
    clever_nb_batches, clever_batch_size, clever_radius, clever_norm, clever_pool_factor
        ART ``clever_u`` parameters (defaults as in the prototype, trust spec 3.10).
    shap_background, shap_samples : int
        SHAP DeepExplainer background and explained sample counts (prototype: 8 and 2).
    shap_nsamples : int
        Samples per explained input when SHAP falls back to GradientExplainer (models DeepExplainer
        cannot take, e.g. ConvNet2); 200 is SHAP's own default.
    client_selector : str
        Name written to ``participants/client_selector`` (the engine samples uniformly).
    evasion_eps, evasion_samples, evasion_pgd_steps
        Extended mode: L-infinity budget, test samples and PGD iterations of the ART FGSM/PGD
        evasion attacks (empirical robustness; 0 samples disables).
    mia_samples : int
        Extended mode: members and non-members each in the membership-inference attack (0 disables).
    reference_samples : int
        Extended mode: test rows on which the server judges each returned client model
        (client reputation).
    reputation_tolerance : float
        Extended mode: a client interaction is negative when its model's reference loss exceeds
        ``(1 + tolerance)`` times its peers' median.
    country_iso_code : str
        Extended mode: ISO 3166-1 alpha-3 code of where the run executes; CodeCarbon's offline
        grid intensity for it gives the run's emissions (no network access).
    declared : dict
        Extended mode: values only a person can state -- ``testing_coverage`` (0..1),
        ``anonymisation``, ``simplification``, ``model_replacement``, ``encryption`` (see
        ``fltrust.trust.measures.governance.DECLARATIONS``).
    """

    enabled: bool = False
    mode: TrustMode = "prototype"
    metrics_file: str | None = None
    clever_samples: int = 1
    clever_nb_batches: int = 10
    clever_batch_size: int = 5
    clever_radius: float = 2.0
    clever_norm: int = 2
    clever_pool_factor: int = 3
    shap_background: int = 8
    shap_samples: int = 2
    shap_nsamples: int = 200
    client_selector: str = "uniform"
    evasion_eps: float = 0.1
    evasion_samples: int = 200
    evasion_pgd_steps: int = 10
    mia_samples: int = 500
    reference_samples: int = 512
    reputation_tolerance: float = 0.5
    country_iso_code: str = "CHE"
    declared: dict[str, Any] = field(default_factory=dict)

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
    attributes = None if config.sensitive_attributes is None else tuple(config.sensitive_attributes)
    return _settings("metrics.fairness", lambda: FairnessSettings(
        mode=config.mode, shapley_include_empty=config.shapley_include_empty,
        coalition_weighting=config.coalition_weighting, nonpositive_policy=config.nonpositive_policy,
        reward=config.reward, group_metric=config.group_metric, shapley=config.shapley,
        shapley_permutations=config.shapley_permutations, exact_max_players=config.exact_max_players,
        shapley_auto_exact_players=config.shapley_auto_exact_players,
        shapley_sampler_permutations=config.shapley_sampler_permutations,
        shapley_truncation=config.shapley_truncation, notion_weights=tuple(config.notion_weights),
        sensitive_attributes=attributes, aux_batch_size=config.aux_batch_size,
    ))


def trust_settings(config: TrustConfig) -> TrustSettings:
    """The :class:`~fltrust.settings.TrustSettings` of a ``metrics.trust`` section.

    Every key but ``enabled`` carries over by name; the statistic switches take the mode's
    defaults.

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
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name != "enabled"}
    settings = _settings("metrics.trust", lambda: TrustSettings(**values))
    if config.declared:
        from fltrust.trust.measures.governance import DeclarationError, validate_declarations

        try:
            validate_declarations(config.declared)
        except DeclarationError as exc:
            raise ConfigError(str(exc)) from None
    return settings


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
