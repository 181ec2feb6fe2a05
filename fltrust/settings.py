"""The typed settings of both papers' metrics: what the observers take, with or without a config.

:class:`FairnessSettings` (Federated Fairness Analytics, :class:`fltrust.metrics.fairness.FairnessObserver`)
and :class:`TrustSettings` (FederatedTrust, :class:`fltrust.trust.observer.TrustObserver`) are
frozen dataclasses with defaults and validation. Build them directly in your own code (a Flower
app: :func:`fltrust.flower.instrument`), or let an experiment configuration build them: the
``metrics.fairness`` / ``metrics.trust`` sections of the YAML are read by
:func:`fltrust.config.fairness_settings` / :func:`fltrust.config.trust_settings`, which construct
these same objects, so the checks below are the only ones and run once.

Each field the YAML can set is written once, in :class:`FairnessOptions` / :class:`TrustOptions`:
the settings derive from them (adding the mode-level switches that have no YAML key), and so do
the YAML sections (:class:`fltrust.config.FairnessConfig` / :class:`fltrust.config.TrustConfig`,
adding ``enabled``).

A ``None`` switch means "the mode's default"; after construction every switch holds a concrete
value (:data:`fltrust.names.FAIRNESS_MODE_DEFAULTS`, :data:`fltrust.names.TRUST_MODE_DEFAULTS`:
the modes and their defaults are defined in :mod:`fltrust.names`).

This module imports nothing heavy (no torch), so that loading a configuration stays cheap.

>>> FairnessSettings(mode="corrected", reward="instantaneous").reward
'instantaneous'
>>> TrustSettings(mode="fixed").cap_fi
True
>>> FairnessSettings(reward="lifetime")
Traceback (most recent call last):
...
fltrust.settings.SettingsError: FairnessSettings.reward='lifetime' is not allowed; choose one of ['instantaneous', 'cumulative']
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

# the mode names, the defaults of each mode and the values of each option are spelled once, in fltrust.names
from fltrust.names import (
    CLASS_IMBALANCE_METHODS,
    CLEVER_NORMS,
    COALITION_WEIGHTINGS,
    ENTROPY_METHODS,
    FAIRNESS_MODE_DEFAULTS,
    FAIRNESS_MODES,
    FEATURE_IMPORTANCE_METHODS,
    GROUP_METRICS,
    JAIN_ZERO_GUARDS,
    NONPOSITIVE_POLICIES,
    REWARDS,
    SHAPLEY_METHODS,
    TRUST_MODE_DEFAULTS,
    TRUST_MODES,
    ClassImbalanceMethod,
    CleverNorm,
    CoalitionWeighting,
    EntropyMethod,
    FairnessMode,
    FeatureImportanceMethod,
    GroupMetric,
    JainZeroGuard,
    NonpositivePolicy,
    Reward,
    ShapleyMethod,
    TrustMode,
)

__all__ = [
    "APP_FAIRNESS_DEFAULTS",
    "DECLARATIONS",
    "DeclarationError",
    "FairnessOptions",
    "FairnessSettings",
    "SettingsError",
    "TrustOptions",
    "TrustSettings",
    "show",
    "validate_declarations",
]

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 2, 60, 60, 40
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6
SHOW_MAX_CHARS = 120


def show(value: Any) -> str:
    """``repr(value)`` for an error message, bounded in time and length, whatever ``value`` is.

    Every settings and config error quotes the offending value through this helper, so a value
    blown up by YAML aliases (a "billion laughs" list) or a huge string cannot turn into a huge
    message.

    Examples
    --------
    >>> show("fedavg"), show(0.5)
    ("'fedavg'", '0.5')
    >>> len(show(["x" * 1000] * 1000)) <= SHOW_MAX_CHARS
    True
    """
    text = _REPR.repr(value)
    return text if len(text) <= SHOW_MAX_CHARS else text[:SHOW_MAX_CHARS - 3] + "..."


class SettingsError(ValueError):
    """A settings value is invalid.

    ``field`` names the setting and ``detail`` says what is wrong, so that the configuration can
    report the same problem under its own key (``metrics.fairness.reward='lifetime' ...``).
    """

    def __init__(self, owner: str, field_name: str, detail: str) -> None:
        super().__init__(f"{owner}.{field_name}{detail}")
        self.field = field_name
        self.detail = detail


def _choice(owner: str, name: str, value: Any, allowed: tuple[Any, ...]) -> None:
    if value not in allowed:
        raise SettingsError(owner, name, f"={show(value)} is not allowed; choose one of {list(allowed)}")


def _positive(owner: str, name: str, value: Any, *, allow_zero: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SettingsError(owner, name, f"={show(value)} must be a finite number")
    if (value < 0) if allow_zero else (value <= 0):
        raise SettingsError(owner, name, f"={show(value)} must be {'>= 0' if allow_zero else '> 0'}")


def _nonnegative(owner: str, name: str, value: Any) -> None:
    _positive(owner, name, value, allow_zero=True)


_BOOL = (True, False)


def _check_fields(settings: Any, owner: str, **rules: tuple[Any, ...] | Callable[[str, str, Any], None]) -> None:
    """Check the named fields, in the order given: a tuple lists the allowed values (:func:`_choice`),
    else the rule is a check ``rule(owner, name, value)`` (:func:`_positive`, :func:`_nonnegative`)."""
    for name, rule in rules.items():
        value = getattr(settings, name)
        if isinstance(rule, tuple):
            _choice(owner, name, value, rule)
        else:
            rule(owner, name, value)


def _resolve(settings: Any, owner: str, modes: tuple[str, ...], defaults: Mapping[Any, dict[str, Any]]) -> None:
    """Check ``settings.mode`` against ``modes``, then replace ``None`` switches by the mode's
    ``defaults`` (the dataclass is frozen)."""
    _choice(owner, "mode", settings.mode, modes)
    for name, default in defaults[settings.mode].items():
        if getattr(settings, name) is None:
            object.__setattr__(settings, name, default)


# --------------------------------------------------------------------------------------------
# Federated Fairness Analytics
# --------------------------------------------------------------------------------------------
AUTO_EXACT_PLAYERS = 6
SAMPLER_PERMUTATIONS = 10
"""The defaults of ``shapley_auto_exact_players`` and ``shapley_sampler_permutations``: those of
:mod:`fltrust.metrics.shapley` (a test pins them equal; this module imports nothing heavy)."""


APP_FAIRNESS_DEFAULTS: dict[str, Any] = {
    "mode": "corrected", "shapley": "auto", "shapley_target_error": 0.05, "shapley_max_coalitions": 300,
}
""":meth:`FairnessSettings.for_app`: the defaults for a user's own app (:func:`fltrust.flower.instrument`).
The corrected notions (a fairness judgement, not the authors' computation); FedSV exact up to
``AUTO_EXACT_PLAYERS`` (6) participants, above it the guided sampler until every standard error
is within 5 % of the round's value range or 300 coalition models are spent (exact needs 1,023
at 10 participants; the measured errors: README, Flower section)."""


@dataclass(frozen=True)
class FairnessOptions:
    """The Federated Fairness Analytics settings an experiment config can set: each field once.

    The fields that :class:`FairnessSettings` (the observer's settings) and the YAML section
    ``metrics.fairness`` (:class:`fltrust.config.FairnessConfig`, these fields plus ``enabled``)
    share, with their defaults. Not validated on its own: build a :class:`FairnessSettings`. A
    ``None`` switch means "the mode's default" (:data:`fltrust.names.FAIRNESS_MODE_DEFAULTS`).

    Attributes
    ----------
    mode : {"faithful", "corrected"}
        ``"faithful"`` (default): exactly the authors' computation behind Table 3.
        ``"corrected"``: every correction of spec 9 (docs/references.md#fairness-9) below.
    shapley_include_empty : bool
        FedSV with the empty-coalition term (standard Shapley, ``U(empty) = 0``, efficiency
        holds) -- corrected ``True``. Faithful ``False``: the authors' power set drops the empty
        coalition, so ``phi = standard - U({n})/m`` and ``l(theta_k; D)`` cancels (spec 3,
        docs/references.md#fairness-3).
    coalition_weighting : {"uniform", "fedavg"}
        Coalition model = plain mean of the members' models (faithful, paper Eq. 4 and code)
        or the FedAvg mean weighted by the clients' samples or batches (corrected; the weight
        key is chosen by :class:`~fltrust.metrics.fairness.FairnessObserver`).
    nonpositive_policy : {"raw", "exclude"}
        What to do with participants whose cumulative FedSV ``s_n <= 0`` in the ratios
        ``x/s`` and ``r/s`` of f_j and f_r. ``"raw"`` (faithful): use the signed value (a
        negative or near-zero ``s_n`` dominates J; ``s_n = 0`` gives an infinite ratio and a
        NaN index). ``"exclude"`` (corrected): drop them and record how many were dropped; with
        fewer than 2 remaining the round's f_j / f_r is NaN. Never clip to a tiny epsilon: that
        manufactures huge ratios that dominate J (spec 9).
    reward : {"instantaneous", "cumulative"}
        Reward in f_r: this round's pre-training accuracy r_{n,k} (faithful, as coded) or the
        sum of the client's rewards over all its rounds so far (corrected, as the paper text
        says, matching the cumulative s_n).
    group_metric : {"authors", "equalized_odds"}
        f_g as coded (faithful; :func:`~fltrust.metrics.fairness.authors_group_fairness`, not
        equalised odds) or the equalised-odds difference between label groups computed with
        fairlearn (corrected; :func:`~fltrust.metrics.fairness.equalized_odds_group_fairness`).
    shapley : {"exact", "monte_carlo", "permutation", "auto"}
        How FedSV is computed (:func:`fltrust.metrics.shapley.federated_shapley`). ``"exact"``
        (default): all ``2^m - 1`` coalitions (1,023 coalition models at 10 participants).
        ``"monte_carlo"``: every prefix of ``shapley_permutations`` uniform orders.
        ``"permutation"``: guided permutation sampling with a control variate,
        ``shapley_sampler_permutations`` orders (at most ``m + 1 + P (m - 2)`` models: 91 at 10
        participants), standard errors recorded. ``"auto"``: exact up to
        ``shapley_auto_exact_players`` participants, ``"permutation"`` above.
    shapley_permutations : int
        ``"monte_carlo"`` budget per round.
    exact_max_players : int
        ``shapley="exact"``: rounds with more participants switch to ``"monte_carlo"``, with a
        warning naming this setting.
    shapley_auto_exact_players : int
        ``shapley="auto"``: exact up to this many participants (default 6: 63 models).
    shapley_sampler_permutations : int
        ``"permutation"`` budget per round (default 10).
    shapley_truncation : float
        ``"permutation"``: a walk stops when the remaining gain ``|U(S) - U(prefix)|`` is at
        most this fraction of ``|U(S)|`` (0, default: never).
    shapley_target_error : float
        ``"permutation"``: 0 (default) walks exactly ``shapley_sampler_permutations`` orders; a
        fraction in (0, 1) keeps walking m more orders at a time until every standard error is at
        most this fraction of the round's value range ``max(phi) - min(phi)``, or the budget
        ``shapley_max_coalitions`` is spent; the round's record says which
        (``shapley_stopped``: ``"target"`` / ``"budget"``, ``shapley_error_ratio``).
    shapley_max_coalitions : int or None
        The coalition-model budget per round with ``shapley_target_error`` (``None``, default:
        ``2^m - 1``, exact's count).
    notion_weights : dict of str to float
        Weights in F_T (paper Eqs. 12-13) by notion name, replacing the notions' registered
        default weights (:data:`fltrust.metrics.fairness.registry.NOTIONS`: the paper's f_j, f_g,
        f_r, f_o 0.25 each; a notion registered with weight 0 is reported, not weighted); F_T
        normalises them to sum 1. Empty (default): every notion at its default. The YAML also
        takes the paper's four as a list ``[f_j, f_g, f_r, f_o]`` (the form older run folders'
        ``config.yaml`` hold). The names are checked where the notions are known (the config,
        the observer).
    sensitive_attributes : sequence of int or None
        Label values whose groups f_g compares (a list in the YAML; the settings hold a tuple). ``None``: an experiment
        config uses the authors' list for its dataset and strategy (fairness spec 4,
        :func:`~fltrust.metrics.fairness.default_sensitive_attributes`; docs/references.md#fairness-4); the observer on
        its own (a Flower app) uses every label of the model's classes.
    aux_batch_size : int or None
        Aux-set samples per forward pass of the FedSV coalition evaluation (all coalition models
        at once); ``None`` = automatic (about 32 MB of activations on CPU, 1 GB on CUDA). Speed
        and memory only: with ``training.loss_scaling: per_batch_sum`` the losses are still
        summed per mini-batch of ``training.batch_size``, as the authors did. Not part of the
        run id.
    """

    mode: FairnessMode = "faithful"
    shapley_include_empty: bool | None = None
    coalition_weighting: CoalitionWeighting | None = None
    nonpositive_policy: NonpositivePolicy | None = None
    reward: Reward | None = None
    group_metric: GroupMetric | None = None
    shapley: ShapleyMethod = "exact"
    shapley_permutations: int = 200
    exact_max_players: int = 10
    shapley_auto_exact_players: int = AUTO_EXACT_PLAYERS
    shapley_sampler_permutations: int = SAMPLER_PERMUTATIONS
    shapley_truncation: float = 0.0
    shapley_target_error: float = 0.0
    shapley_max_coalitions: int | None = None
    notion_weights: dict[str, float] = field(default_factory=dict)
    sensitive_attributes: Sequence[int] | None = None  # a tuple once the settings are built
    aux_batch_size: int | None = None


@dataclass(frozen=True)
class FairnessSettings(FairnessOptions):
    """Settings of the Federated Fairness Analytics metrics; ``None`` means "the mode's default".

    Build it with ``FairnessSettings(mode="corrected", reward="instantaneous")``; an experiment
    config builds the same object (:func:`fltrust.config.fairness_settings`). After
    construction every switch holds a concrete value (see :data:`fltrust.names.FAIRNESS_MODE_DEFAULTS`).

    Attributes
    ----------
    mode, shapley_include_empty, coalition_weighting, nonpositive_policy, reward, group_metric
        See :class:`FairnessOptions`, like every field the YAML can set (``shapley``,
        ``notion_weights``, ...).
    jain_zero_guard : {"authors", "all_zero_is_one"}
        Degenerate cases of J. ``"authors"`` (faithful): f_j has no guard (all-zero gains give
        NaN), f_r is 1 when the reward ratios sum to exactly 0. ``"all_zero_is_one"``
        (corrected): ``J(all zero) = 1`` for both, ``J(empty) = NaN``. A mode-level item of
        spec 9; the YAML configuration has no key for it.
    """

    jain_zero_guard: JainZeroGuard | None = None

    def __post_init__(self) -> None:
        owner = "FairnessSettings"
        _resolve(self, owner, FAIRNESS_MODES, FAIRNESS_MODE_DEFAULTS)
        _check_fields(self, owner, shapley_include_empty=_BOOL, coalition_weighting=COALITION_WEIGHTINGS,
                      nonpositive_policy=NONPOSITIVE_POLICIES, reward=REWARDS, group_metric=GROUP_METRICS,
                      jain_zero_guard=JAIN_ZERO_GUARDS, shapley=SHAPLEY_METHODS, shapley_permutations=_positive,
                      exact_max_players=_positive, shapley_auto_exact_players=_positive,
                      shapley_sampler_permutations=_positive, shapley_truncation=_nonnegative,
                      shapley_target_error=_nonnegative)
        if self.shapley_target_error >= 1:
            raise SettingsError(owner, "shapley_target_error", f"={show(self.shapley_target_error)} must be a fraction "
                                "of the value range in [0, 1) (0 = a fixed number of permutations)")
        _check_fields(self, owner, shapley_max_coalitions=_positive, aux_batch_size=_positive)
        if not isinstance(self.notion_weights, Mapping):
            raise SettingsError(owner, "notion_weights", f"={show(self.notion_weights)} must be a mapping notion name "
                                "-> weight, e.g. {'f_j': 0.5, 'my_notion': 0.1}")
        weights = {}
        for name, weight in self.notion_weights.items():
            label = name if isinstance(name, str) and len(name) <= 64 else show(name)
            if not isinstance(name, str):
                raise SettingsError(owner, f"notion_weights.{label}", " must be named by a string (a notion's name)")
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
                raise SettingsError(owner, f"notion_weights.{label}", f"={show(weight)} must be a finite number >= 0")
            weights[name] = float(weight)
        object.__setattr__(self, "notion_weights", weights)
        if self.sensitive_attributes is not None:
            values = tuple(self.sensitive_attributes)
            if not values or not all(isinstance(a, int) and not isinstance(a, bool) for a in values):
                raise SettingsError(owner, "sensitive_attributes", f"={show(list(values))} must be a non-empty list "
                                    "of label values (integers), or None")
            object.__setattr__(self, "sensitive_attributes", values)

    @classmethod
    def for_app(cls, **changes: Any) -> FairnessSettings:
        """The settings for a user's own app: :data:`APP_FAIRNESS_DEFAULTS` with ``changes`` on top.

        What :func:`fltrust.flower.instrument` uses by default: the corrected notions, FedSV
        exact up to 6 participants and sampled above, until the standard errors are within 5 % of
        the round's value range or 300 coalition models are spent. The papers' reproductions set
        their settings in their configs (``mode: faithful``) and never use this.

        Parameters
        ----------
        **changes
            Any field (``mode="faithful"``, ``reward="instantaneous"``, ...).

        Returns
        -------
        FairnessSettings

        Examples
        --------
        >>> s = FairnessSettings.for_app()
        >>> s.mode, s.shapley, s.shapley_target_error, s.shapley_max_coalitions
        ('corrected', 'auto', 0.05, 300)
        >>> FairnessSettings.for_app(mode="faithful").nonpositive_policy
        'raw'
        """
        return cls(**{**APP_FAIRNESS_DEFAULTS, **changes})

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every resolved switch (JSON-ready)."""
        data = asdict(self)
        if self.sensitive_attributes is not None:
            data["sensitive_attributes"] = list(self.sensitive_attributes)
        return data


# --------------------------------------------------------------------------------------------
# FederatedTrust
# --------------------------------------------------------------------------------------------
DECLARATIONS: dict[str, tuple[str, ...] | str] = {
    "testing_coverage": "fraction",
    "anonymisation": ("none", "pseudonymisation", "k_anonymity", "l_diversity"),
    "simplification": ("none", "pruning", "quantisation", "distillation"),
    "model_replacement": ("none", "manual", "automatic"),
    "encryption": ("none", "secagg+", "smc", "he"),
}
"""Keys of ``TrustSettings.declared`` (``metrics.trust.declared``) and their allowed values
(``"fraction"`` = a number in [0, 1]): what only a person can state, for extended mode.

Scores (extended definitions): anonymisation none 0, pseudonymisation 1/3, k-anonymity 2/3,
l-diversity 1 (each extends the previous, paper Sec. 3.1); simplification 1 for any technique
(paper Sec. 3.4 names knowledge distillation, pruning and quantisation are the other common
ones), 0 for none; model replacement none 0, manual 0.5 (a person can roll back to a registered
version), automatic 1 (the paper's design: replace when degradation is global and persistent);
encryption none 0, SecAgg+ / SMC / HE 1."""


class DeclarationError(SettingsError):
    """A declared value (``TrustSettings.declared``) is not allowed; names the key and the allowed values."""


def validate_declarations(declared: Any, *, owner: str = "TrustSettings") -> dict[str, Any]:
    """Check declared values against :data:`DECLARATIONS` and normalise them.

    :class:`TrustSettings` runs it on its ``declared`` field; extended mode reads the normalised
    values (:mod:`fltrust.trust.measures.governance`).

    Parameters
    ----------
    declared : mapping or None
        Key -> value, e.g. ``{"testing_coverage": 0.8, "encryption": "SecAgg+"}``.
    owner : str
        Named in the error (``TrustSettings``; a configuration reports it under ``metrics.trust``).

    Returns
    -------
    dict
        The declarations, strings lower-cased (``-`` as ``_``; ``secagg``/``secaggplus`` as
        ``secagg+``), the fraction as float.

    Raises
    ------
    DeclarationError
        Unknown key or value.

    Examples
    --------
    >>> validate_declarations({"testing_coverage": 0.8, "anonymisation": "K_Anonymity"})
    {'testing_coverage': 0.8, 'anonymisation': 'k_anonymity'}
    """
    out: dict[str, Any] = {}
    for key, value in (declared or {}).items():
        if key not in DECLARATIONS:
            raise DeclarationError(owner, "declared", f": unknown key {show(key)}; allowed keys are {sorted(DECLARATIONS)}")
        allowed = DECLARATIONS[key]
        if allowed == "fraction":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
                raise DeclarationError(owner, f"declared.{key}", f"={show(value)} must be a number in [0, 1]")
            out[key] = float(value)
            continue
        text = str(value).strip().lower().replace("-", "_")
        text = "secagg+" if text in ("secagg+", "secaggplus", "secagg") else text
        if text not in allowed:
            raise DeclarationError(owner, f"declared.{key}", f"={show(value)}; choose one of {list(allowed)}")
        out[key] = text
    return out


@dataclass(frozen=True)
class TrustOptions:
    """The FederatedTrust settings an experiment config can set: each field once.

    The fields that :class:`TrustSettings` (the observer's settings) and the YAML section
    ``metrics.trust`` (:class:`fltrust.config.TrustConfig`, these fields plus ``enabled``) share,
    with their defaults. Not validated on its own: build a :class:`TrustSettings`.

    Attributes
    ----------
    mode : {"prototype", "paper", "fixed", "extended"}
        ``"prototype"`` (default): the authors' released code. ``"paper"``: the normalisations
        that best reproduce the paper's Figures 4-5. ``"fixed"``: every spec-9 (docs/references.md#trust-9) fix.
        ``"extended"``: all 36 taxonomy metrics plus nebula's sustainability pillar, measured
        where the kit can (see ``fltrust/trust/definitions/extended.yaml``), for an experiment
        (:func:`fltrust.experiment.trust_observer`) or a Flower app (:func:`fltrust.flower.instrument`).
    metrics_file : str or None
        A user's own pillar/notion/metric definitions (YAML or JSON); ``None`` = the packaged ones.
    clever_samples : int
        Test points for CLEVER (0 disables).
    clever_nb_batches, clever_batch_size, clever_radius, clever_norm, clever_pool_factor
        ART ``clever_u`` parameters (defaults as in the prototype, trust spec 3.10; docs/references.md#trust-3-10).
    shap_background, shap_samples : int
        SHAP DeepExplainer background and explained sample counts (prototype: 8 and 2; 0 samples
        disables).
    shap_nsamples : int
        Samples per explained input when SHAP falls back to GradientExplainer (models DeepExplainer
        cannot take, e.g. :class:`fltrust.models.CifarCNN` with its functional ReLUs and one pooling
        module applied twice); 200 is SHAP's own default.
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
        ``anonymisation``, ``simplification``, ``model_replacement``, ``encryption``; the keys
        and allowed values are :data:`DECLARATIONS`, checked by :func:`validate_declarations`
        when the settings are built.
    """

    mode: TrustMode = "prototype"
    metrics_file: str | None = None
    clever_samples: int = 1
    clever_nb_batches: int = 10
    clever_batch_size: int = 5
    clever_radius: float = 2.0
    clever_norm: CleverNorm = 2
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


@dataclass(frozen=True)
class TrustSettings(TrustOptions):
    """Settings of the FederatedTrust FactSheet and score; ``None`` switches = the mode's default.

    Build it with ``TrustSettings(mode="fixed")``; an experiment config builds the same object
    (:func:`fltrust.config.trust_settings`).

    Attributes
    ----------
    mode, metrics_file, clever_samples, ..., declared
        See :class:`TrustOptions`: every field the YAML can set.
    entropy_method, class_imbalance_method, feature_importance_method : str
        Statistic variants (:mod:`fltrust.trust.measures.statistics`, :mod:`fltrust.trust.measures.explainability`).
    cap_cvs, cap_fi : bool
        Cap the fairness CVs / the feature-importance CV at 1.
    nan_is_missing : bool
        A NaN FactSheet value counts as missing (the prototype counts only ``None`` and ``""``).
    score_every_round : bool
        Score the FactSheet so far after every round (``trust_score`` in the round's trust
        observation); cheap: no model is evaluated (see next).
    model_metrics_every_round : bool
        Also measure CLEVER and the SHAP feature importance of every round's global model for
        that score (about 1 s and 3 s per round for a small CNN on one core). Off (default): they
        are measured once, at run end, and the per-round score holds them as missing.
    """

    entropy_method: EntropyMethod | None = None
    class_imbalance_method: ClassImbalanceMethod | None = None
    feature_importance_method: FeatureImportanceMethod | None = None
    cap_cvs: bool | None = None
    cap_fi: bool | None = None
    nan_is_missing: bool | None = None
    score_every_round: bool = True
    model_metrics_every_round: bool = False

    def __post_init__(self) -> None:
        owner = "TrustSettings"
        _resolve(self, owner, TRUST_MODES, TRUST_MODE_DEFAULTS)
        _check_fields(self, owner, entropy_method=ENTROPY_METHODS, class_imbalance_method=CLASS_IMBALANCE_METHODS,
                      feature_importance_method=FEATURE_IMPORTANCE_METHODS, cap_cvs=_BOOL, cap_fi=_BOOL,
                      nan_is_missing=_BOOL, score_every_round=_BOOL, model_metrics_every_round=_BOOL,
                      evasion_eps=_positive, evasion_samples=_nonnegative, evasion_pgd_steps=_positive,
                      mia_samples=_nonnegative, reference_samples=_positive, reputation_tolerance=_nonnegative)
        if not isinstance(self.declared, dict):
            raise SettingsError(owner, "declared", f"={show(self.declared)} must be a mapping")
        for key, value in self.declared.items():  # scalars only: a YAML alias bomb never reaches str()/repr()
            scalar = value is None or isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= 64)
            if not (isinstance(key, str) and scalar):
                name = key if isinstance(key, str) and len(key) <= 64 else show(key)
                raise SettingsError(owner, f"declared.{name}", f"={show(value)} must be a number or a word (at most "
                                    "64 characters), e.g. testing_coverage: 0.8 or encryption: none")
        validate_declarations(self.declared, owner=owner)
        _check_fields(self, owner, clever_samples=_nonnegative, clever_nb_batches=_positive, clever_batch_size=_positive,
                      clever_radius=_positive, clever_norm=CLEVER_NORMS, shap_background=_positive,
                      shap_samples=_nonnegative, shap_nsamples=_positive)

    @property
    def switches(self) -> dict[str, Any]:
        """The resolved statistic switches (the keys of :data:`fltrust.names.TRUST_MODE_DEFAULTS`)."""
        return {name: getattr(self, name) for name in TRUST_MODE_DEFAULTS[self.mode]}

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every resolved setting (JSON-ready)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
