r"""Poisoning defence and empirical robustness under a poisoning attack, from several runs.

FederatedTrust's taxonomy (paper Sec. 3.2, "Resilience to attacks") names *poisoning defence*
(Byzantine-robust aggregation, outlier detection) and *empirical robustness* (the effect of a
poisoning attack, measured by running it) without implementing them: the prototype's
FederatedScope config did not document defences and attacks were "too attack-specific"
(paper Sec. 5.2; trust spec 6; docs/references.md#trust-6). Both need more than one run, so they are pure functions of
the accuracies of those runs; the experiments that run them (same configuration, with and without the
attack, with and without the defence) supply the numbers and call :func:`attack_outcome`.

Definitions (accuracies are the final global model's test accuracy; attack success rate is the
share of the attacker's target samples classified as the attacker wants, for a targeted or
backdoor attack, or the misclassification rate for an untargeted one):

.. math::

    \mathrm{drop} &= \mathrm{acc}_{clean} - \mathrm{acc}_{attacked}, \qquad
    \mathrm{retention} = \mathrm{clip}\!\left(\frac{\mathrm{acc}_{attacked}}{\mathrm{acc}_{clean}}, 0, 1\right),\\
    \mathrm{recovery} &= \mathrm{clip}\!\left(
        \frac{\mathrm{acc}_{defended} - \mathrm{acc}_{undefended}}{\mathrm{acc}_{clean} - \mathrm{acc}_{undefended}},
        0, 1\right)

where *attacked* / *undefended* is the run under attack with plain FedAvg, *defended* the run
under the same attack with the defence (e.g. Krum, trimmed mean, median aggregation), and
*clean* the run without the attack. Recovery 1 = the defence restores the clean accuracy, 0 = it
does not help (or hurts). When the attack costs nothing (``acc_clean <= acc_undefended``) there is
nothing to recover and the recovery is NaN (undefined; the metric then falls back to the declared
defence, see :data:`BYZANTINE_ROBUST_AGGREGATORS`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from fltrust.names import ROBUST_STRATEGIES

__all__ = [
    "BYZANTINE_ROBUST_AGGREGATORS",
    "AttackOutcome",
    "PoisoningError",
    "accuracy_drop",
    "attack_outcome",
    "attack_success_rate",
    "is_byzantine_robust",
    "poisoning_recovery",
    "record_attack_outcome",
]

BYZANTINE_ROBUST_AGGREGATORS = frozenset(ROBUST_STRATEGIES) | {"median", "fedtrimmedavg"}
"""Aggregators designed to bound the influence of poisoned updates (Blanchard et al. 2017 Krum and
Multi-Krum; Yin et al. 2018 coordinate-wise median and trimmed mean; El Mhamdi et al. 2018 Bulyan):
:data:`fltrust.names.ROBUST_STRATEGIES`, ``median`` (an app's name for FedMedian) and
``fedtrimmedavg`` (Flower's class name for the trimmed mean). Names are compared
case-insensitively without ``-`` or ``_``."""


class PoisoningError(ValueError):
    """Invalid attack numbers; the message names the argument."""


def _check_accuracy(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise PoisoningError(f"{name}={value!r} must be an accuracy in [0, 1]")
    return value


def is_byzantine_robust(aggregator: str | None) -> bool:
    """Whether an aggregation name is one of :data:`BYZANTINE_ROBUST_AGGREGATORS`.

    Parameters
    ----------
    aggregator : str or None
        An fltrust strategy name or a Flower strategy class name.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_byzantine_robust("FedMedian"), is_byzantine_robust("Trimmed_Mean"), is_byzantine_robust("FedAvg")
    (True, True, False)
    """
    if not isinstance(aggregator, str):
        return False
    return aggregator.lower().replace("-", "").replace("_", "").replace(" ", "") in BYZANTINE_ROBUST_AGGREGATORS


def accuracy_drop(clean_accuracy: float, attacked_accuracy: float) -> float:
    """``acc_clean - acc_attacked`` (positive = the attack hurt).

    Parameters
    ----------
    clean_accuracy, attacked_accuracy : float
        Test accuracies in [0, 1] of the run without and with the attack.

    Returns
    -------
    float

    Examples
    --------
    >>> round(accuracy_drop(0.9, 0.6), 6)
    0.3
    """
    return _check_accuracy("clean_accuracy", clean_accuracy) - _check_accuracy("attacked_accuracy", attacked_accuracy)


def attack_success_rate(num_successes: int, num_targets: int) -> float:
    """Share of the attacker's target samples on which the attack achieved its goal.

    Parameters
    ----------
    num_successes : int
        Target samples classified as the attacker wants (targeted / backdoor), or misclassified
        (untargeted).
    num_targets : int
        Target samples evaluated (> 0).

    Returns
    -------
    float
        ``num_successes / num_targets``, in [0, 1].

    Raises
    ------
    PoisoningError
        ``num_targets`` is not a positive integer, or ``num_successes`` is outside [0, num_targets].

    Examples
    --------
    >>> attack_success_rate(3, 12)
    0.25
    """
    if int(num_targets) != num_targets or num_targets < 1:
        raise PoisoningError(f"num_targets={num_targets!r} must be a positive integer")
    if not 0 <= num_successes <= num_targets:
        raise PoisoningError(f"num_successes={num_successes!r} must lie in [0, num_targets={num_targets}]")
    return float(num_successes) / float(num_targets)


def poisoning_recovery(clean_accuracy: float, undefended_accuracy: float, defended_accuracy: float) -> float:
    r"""Measured poisoning defence: the share of the attack's accuracy loss the defence wins back.

    .. math:: \mathrm{clip}\!\left(\frac{a_{def} - a_{undef}}{a_{clean} - a_{undef}}, 0, 1\right)

    Parameters
    ----------
    clean_accuracy : float
        No attack.
    undefended_accuracy : float
        Under attack, no defence.
    defended_accuracy : float
        Under the same attack, with the defence.

    Returns
    -------
    float
        In [0, 1]; NaN when the attack did not lower the accuracy (nothing to recover).

    Examples
    --------
    >>> round(poisoning_recovery(0.9, 0.5, 0.8), 6)
    0.75
    >>> poisoning_recovery(0.9, 0.5, 0.95), poisoning_recovery(0.9, 0.5, 0.4)
    (1.0, 0.0)
    """
    clean = _check_accuracy("clean_accuracy", clean_accuracy)
    undefended = _check_accuracy("undefended_accuracy", undefended_accuracy)
    defended = _check_accuracy("defended_accuracy", defended_accuracy)
    if clean <= undefended:
        return float("nan")
    return min(max((defended - undefended) / (clean - undefended), 0.0), 1.0)


@dataclass(frozen=True)
class AttackOutcome:
    """Numbers of a poisoning experiment, ready for the FactSheet ``robustness`` section.

    Attributes
    ----------
    attack : str
        What was run (e.g. ``"label_flip 30% of clients"``).
    defence : str
        The defended run's aggregator or mechanism.
    clean_accuracy, attacked_accuracy, defended_accuracy : float
        Final test accuracies (attacked = undefended); ``defended_accuracy`` may be NaN.
    accuracy_drop : float
        ``clean - attacked``.
    retention : float
        ``clip(attacked / clean, 0, 1)``.
    recovery : float
        :func:`poisoning_recovery`, NaN without a defended run or when the attack cost nothing.
    attack_success_rate : float
        NaN when not given.
    """

    attack: str
    defence: str
    clean_accuracy: float
    attacked_accuracy: float
    defended_accuracy: float
    accuracy_drop: float
    retention: float
    recovery: float
    attack_success_rate: float

    def to_dict(self) -> dict[str, float | str]:
        """Return the result as a plain dict.

        Returns
        -------
        dict
            The fields by name (:func:`dataclasses.asdict`).
        """
        return asdict(self)


def attack_outcome(
    *,
    clean_accuracy: float,
    attacked_accuracy: float,
    defended_accuracy: float | None = None,
    attack_success_rate: float | None = None,
    attack: str = "",
    defence: str = "",
) -> AttackOutcome:
    """Combine the accuracies of a clean, an attacked and (optionally) a defended run.

    Parameters
    ----------
    clean_accuracy, attacked_accuracy : float
        Test accuracies in [0, 1] without the attack, and with it under the undefended aggregator.
    defended_accuracy : float or None
        With the attack under the defence (``None``: no defended run; recovery is NaN).
    attack_success_rate : float or None
        The defended run's attack success rate, in [0, 1].
    attack, defence : str
        Descriptions (the attack, the defending aggregator).

    Returns
    -------
    AttackOutcome

    Examples
    --------
    >>> out = attack_outcome(clean_accuracy=0.9, attacked_accuracy=0.6, defended_accuracy=0.84)
    >>> round(out.accuracy_drop, 6), round(out.retention, 6), round(out.recovery, 6)
    (0.3, 0.666667, 0.8)
    """
    from fltrust.trust.measures.robustness import accuracy_retention

    clean = _check_accuracy("clean_accuracy", clean_accuracy)
    attacked = _check_accuracy("attacked_accuracy", attacked_accuracy)
    defended = float("nan") if defended_accuracy is None else _check_accuracy("defended_accuracy", defended_accuracy)
    asr = float("nan") if attack_success_rate is None else _check_accuracy("attack_success_rate", attack_success_rate)
    recovery = float("nan") if math.isnan(defended) else poisoning_recovery(clean, attacked, defended)
    return AttackOutcome(
        attack=attack, defence=defence, clean_accuracy=clean, attacked_accuracy=attacked,
        defended_accuracy=defended, accuracy_drop=clean - attacked,
        retention=accuracy_retention(clean, attacked), recovery=recovery, attack_success_rate=asr,
    )


def record_attack_outcome(factsheet: dict, outcome: AttackOutcome) -> dict:
    """Write an :class:`AttackOutcome` into an extended FactSheet (then score it again).

    Sets ``robustness/poisoning_recovery``, ``poisoning_retention``, ``poisoning_accuracy_drop``,
    ``attack_success_rate`` and ``attack``, and marks poisoning defence and empirical robustness
    as measured. Empirical robustness becomes the mean of the present retentions (evasion and
    poisoning), as the extended definitions compute it.

    Parameters
    ----------
    factsheet : dict
        A FactSheet written by the trust observer in extended mode (or :func:`new_factsheet`
        with ``extended=True``).
    outcome : AttackOutcome

    Returns
    -------
    dict
        ``factsheet`` (modified in place).
    """
    from fltrust.trust.factsheet import get_field, set_field, set_provenance

    for key in ("poisoning_recovery", "poisoning_retention", "poisoning_accuracy_drop", "attack_success_rate", "attack"):
        set_field(factsheet, f"robustness/{key}", getattr(outcome, key.removeprefix("poisoning_")))
    what = f"attack {outcome.attack or '(unnamed)'}, defence {outcome.defence or '(unnamed)'}"
    if math.isnan(outcome.recovery):
        robust = get_field(factsheet, "robustness/byzantine_robust")
        set_provenance(factsheet, "robustness/resilience_to_attacks/poisoning_defence", "declared",
                       f"Byzantine-robust aggregator in use -> {int(bool(robust))}",
                       f"recovery undefined ({what}: no defended run, or the attack did not lower the accuracy)")
    else:
        set_provenance(factsheet, "robustness/resilience_to_attacks/poisoning_defence", "measured",
                       f"recovery = clip((acc_def - acc_undef) / (acc_clean - acc_undef), 0, 1); {what}: "
                       f"{outcome.defended_accuracy:.4f}, {outcome.attacked_accuracy:.4f}, {outcome.clean_accuracy:.4f}")
    evasion = get_field(factsheet, "robustness/evasion_retention")
    parts = ["poisoning retention acc_attacked / acc_clean"]
    if isinstance(evasion, float) and math.isfinite(evasion):
        parts.insert(0, "PGD evasion retention acc_PGD / acc_clean (ART)")
    set_provenance(factsheet, "robustness/resilience_to_attacks/empirical_robustness", "measured",
                   "mean of: " + "; ".join(parts) + f" ({what})")
    return factsheet
