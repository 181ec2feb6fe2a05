"""Poisoning defence and robustness under a poisoning attack (fltrust.trust.measures.poisoning)."""

from __future__ import annotations

import math

import pytest

from fltrust.trust.factsheet import new_factsheet, set_field
from fltrust.trust.measures.poisoning import (
    PoisoningError,
    accuracy_drop,
    attack_outcome,
    attack_success_rate,
    is_byzantine_robust,
    poisoning_recovery,
    record_attack_outcome,
)
from fltrust.trust.scoring import score_factsheet


def test_recovery_by_hand_and_clipping():
    # (0.8 - 0.5) / (0.9 - 0.5) = 0.75
    assert poisoning_recovery(0.9, 0.5, 0.8) == pytest.approx(0.75)
    assert poisoning_recovery(0.9, 0.5, 0.95) == 1.0  # better than clean: clipped
    assert poisoning_recovery(0.9, 0.5, 0.4) == 0.0  # the defence hurts: clipped
    assert math.isnan(poisoning_recovery(0.9, 0.92, 0.9))  # the attack cost nothing: undefined


def test_drop_success_rate_and_validation():
    assert accuracy_drop(0.9, 0.6) == pytest.approx(0.3)
    assert attack_success_rate(3, 12) == 0.25
    with pytest.raises(PoisoningError, match="num_targets"):
        attack_success_rate(1, 0)
    with pytest.raises(PoisoningError, match="accuracy"):
        poisoning_recovery(1.2, 0.5, 0.5)


def test_robust_aggregator_names():
    for name in ("krum", "MultiKrum", "trimmed_mean", "TrimmedMean", "median", "FedMedian", "Bulyan"):
        assert is_byzantine_robust(name), name
    for name in ("fedavg", "FedProx", "ditto", "", None):
        assert not is_byzantine_robust(name)


def test_attack_outcome_by_hand():
    out = attack_outcome(clean_accuracy=0.9, attacked_accuracy=0.6, defended_accuracy=0.84, attack_success_rate=0.4,
                         attack="label_flip", defence="krum")
    assert out.accuracy_drop == pytest.approx(0.3)
    assert out.retention == pytest.approx(0.6 / 0.9)
    assert out.recovery == pytest.approx(0.8)  # (0.84 - 0.6) / (0.9 - 0.6)
    no_defence = attack_outcome(clean_accuracy=0.9, attacked_accuracy=0.6)
    assert math.isnan(no_defence.recovery) and math.isnan(no_defence.attack_success_rate)


def test_recorded_outcome_is_scored_as_measured_in_extended_mode():
    # Prepare: an extended FactSheet with an evasion retention of 0.5 and a declared FedAvg (not robust)
    fs = new_factsheet(extended=True)
    set_field(fs, "robustness/evasion_retention", 0.5)
    set_field(fs, "robustness/byzantine_robust", False)
    before = score_factsheet(fs, mode="extended")
    # Execute
    record_attack_outcome(fs, attack_outcome(clean_accuracy=0.9, attacked_accuracy=0.6, defended_accuracy=0.84))
    after = score_factsheet(fs, mode="extended")
    # Assert: declared 0 -> measured recovery 0.8; empirical robustness = mean(0.5, 0.6/0.9)
    assert before.metric("poisoning_defence").score == 0.0
    assert after.metric("poisoning_defence").score == pytest.approx(0.8)
    assert after.metric("poisoning_defence").status == "measured"
    assert after.metric("empirical_robustness").score == pytest.approx((0.5 + 0.6 / 0.9) / 2)
    assert after.metric("empirical_robustness").status == "measured"
