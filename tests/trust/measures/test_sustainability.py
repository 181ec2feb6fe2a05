"""Energy and emissions with CodeCarbon offline (fltrust.trust.measures.sustainability)."""

from __future__ import annotations

import math

import pytest

from fltrust.trust.measures.sustainability import EnergyTracker, carbon_intensity, classify_power_source, known_country


def test_carbon_intensity_by_hand():
    assert carbon_intensity(0.5, 2.0) == 250.0  # kg / kWh -> g / kWh
    assert math.isnan(carbon_intensity(0.0, 0.0))


def test_power_source_labels():
    assert classify_power_source(["cpu_load"]) [0] == "estimate"
    assert classify_power_source(["constant"])[0] == "estimate"
    assert classify_power_source(["intel_rapl"])[0] == "meter"
    assert classify_power_source(["cpu_load"], gpu_metered=True)[0] == "partial"
    label, explanation = classify_power_source(["cpu_load"])
    assert "ESTIMATED" in explanation and "RAM estimated" in explanation


def test_offline_tracker_measures_a_span_and_states_the_method():
    # Prepare
    tracker = EnergyTracker("CHE", measure_power_secs=1)
    # Execute
    tracker.start()
    assert tracker.running
    sum(i * i for i in range(200_000))
    result = tracker.stop()
    # Assert: numbers, method and the estimate label
    assert not tracker.running
    assert result.error is None
    assert result.energy_kwh > 0 and result.emissions_kg > 0
    assert result.carbon_intensity_g_per_kwh == pytest.approx(1000 * result.emissions_kg / result.energy_kwh)
    assert "OfflineEmissionsTracker" in result.method and "CHE" in result.method and "no API call" in result.method
    assert result.power_source in ("meter", "partial", "estimate")
    if result.power_source == "estimate":
        assert "ESTIMATED" in result.method and result.is_estimate
    assert result.to_dict()["is_estimate"] == result.is_estimate


def test_unknown_country_is_said_and_a_stopped_tracker_never_raises():
    assert known_country("CHE") is True
    assert known_country("XXX") is False
    tracker = EnergyTracker("XXX", measure_power_secs=1)
    tracker.start()
    result = tracker.stop()
    assert "UNKNOWN" in result.method
    never_started = EnergyTracker("CHE").stop()
    assert never_started.power_source == "n/a" and math.isnan(never_started.energy_kwh)
