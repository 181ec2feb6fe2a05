"""System reliability: drop-out, error and time-out rates (fltrust.trust.measures.reliability)."""

from __future__ import annotations

import pytest

from fltrust.trust.measures.reliability import system_reliability


def test_rates_by_hand():
    # 3 rounds, 10 sampled each: 2 dropped, 1 failed, 1 timed out -> 4 / 30 lost
    rounds = [
        (8, {"num_sampled": 10, "num_dropped": 2}),
        (9, {"num_sampled": 10, "num_failed": 1}),
        (9, {"num_sampled": 10, "num_timed_out": 1}),
    ]
    result = system_reliability(rounds)
    assert result.num_sampled == 30
    assert result.dropout_rate == pytest.approx(2 / 30)
    assert result.error_rate == pytest.approx(1 / 30)
    assert result.timeout_rate == pytest.approx(1 / 30)
    assert result.reliability == pytest.approx(26 / 30)
    assert result.counters_reported


def test_missing_counters_mean_no_failure_declared():
    result = system_reliability([(5, {"aux_accuracy": 0.9}), (5, {})])
    assert result.reliability == 1.0
    assert result.num_sampled == 10
    assert not result.counters_reported


def test_sampled_is_inferred_from_participants_and_failures():
    result = system_reliability([(3, {"num_dropped": 1})])  # 3 aggregated + 1 dropped
    assert result.num_sampled == 4 and result.dropout_rate == 0.25


def test_inconsistent_counters_raise():
    with pytest.raises(ValueError, match="exceed"):
        system_reliability([(1, {"num_sampled": 2, "num_dropped": 3})])
