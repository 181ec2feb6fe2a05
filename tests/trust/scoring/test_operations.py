"""Operations and input resolution (trust spec 2.2-2.3, docs/references.md#trust-2-2, #trust-2-3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fltrust.trust.scoring.operations import (
    check_client_selector,
    check_properties,
    get_capped_value,
    get_global_privacy_risk,
    get_uniform_entropy,
    get_value,
    is_present,
    resolve_field,
)

FACTSHEET = {
    "participants": {"client_num": 100, "client_selector": "uniform"},
    "data": {"provenance": "femnist", "nested": {"a": 1}},
    "scalar": 7,
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("participants/client_num", 100),
        ("participants/missing", None),
        ("nosection/field", None),
        ("data/nested", None),  # a path that ends on a dict returns None
        ("data", None),
        ("data/nested/a", 1),
        ("scalar/anything/else", 7),  # a non-dict is returned even if segments remain
        ("participants/client_selector/extra", "uniform"),
    ],
)
def test_resolve_field_walks_like_the_prototype(path, expected):
    assert resolve_field(FACTSHEET, path) == expected


def test_get_value_is_identity():
    marker = object()
    assert get_value(marker) is marker


def test_check_properties_prototype_counts_nan_false_zero_and_empty_list_as_present():
    # Prepare: present = "x", NaN, False, 0, [], "  "  ; missing = "", None
    values = ("x", "", None, math.nan, False, 0, [], "  ")

    # Execute
    fraction = check_properties(*values)

    # Assert
    assert fraction == pytest.approx(6 / 8)


def test_check_properties_strict_treats_nan_and_blank_strings_as_missing():
    # Prepare: present = "x", False, 0, [] ; missing = "", None, NaN, np.nan (numpy), "  "
    values = ("x", "", None, math.nan, False, 0, [], "  ", np.float64("nan"))

    # Execute
    fraction = check_properties(*values, missing="strict")

    # Assert
    assert fraction == pytest.approx(4 / 9)


def test_check_properties_needs_an_input_and_a_known_policy():
    with pytest.raises(ValueError, match="at least one"):
        check_properties()
    with pytest.raises(ValueError, match="missing="):
        is_present(1, missing="lenient")


@pytest.mark.parametrize(
    ("clients", "epsilon", "risk"),
    [
        # By hand: 1 / (1 + 99 e^-6) = 1 / 1.2453965 = 0.802957. The spec's "0.8032" (score 0.1968)
        # is an arithmetic slip of 2.5e-4; it does not change the paper's rounded 0.20.
        (100, 6, 1 / (1 + 99 * 0.0024787521766663585)),
        (9, 4, 0.8722),  # spec 3.2 (docs/references.md#trust-3-2) reference
        (50, 20, 1 - 1.01e-7),  # score about 1e-7, i.e. 0
    ],
)
def test_global_privacy_risk_reference_values(clients, epsilon, risk):
    assert get_global_privacy_risk(True, epsilon, clients) == pytest.approx(risk, abs=5e-5)


def test_global_privacy_risk_exact_value_for_n100_eps6():
    assert get_global_privacy_risk(True, 6.0, 100) == pytest.approx(0.802957, abs=1e-6)
    assert 1 - get_global_privacy_risk(True, 4, 9) == pytest.approx(0.1278, abs=1e-4)


@pytest.mark.parametrize(("dp", "epsilon"), [(False, 6.0), (True, math.nan), (True, None), (True, "6"), (1, 6.0)])
def test_global_privacy_risk_without_a_dp_guarantee_is_one(dp, epsilon):
    assert get_global_privacy_risk(dp, epsilon, 100) == 1.0


def test_global_privacy_risk_numpy_bool_needs_coercion():
    assert get_global_privacy_risk(np.True_, 6.0, 100) == 1.0  # prototype: `dp is True` fails (B14, docs/references.md#trust-b14)
    assert get_global_privacy_risk(np.True_, 6.0, 100, coerce_types=True) == pytest.approx(0.802957, abs=1e-6)


def test_global_privacy_risk_missing_client_count_raises_type_error():
    with pytest.raises(TypeError, match="client_num"):
        get_global_privacy_risk(True, 6.0, None)


@pytest.mark.parametrize(("clients", "expected"), [(1, 0.0), (3, math.log(3)), (100, 4.605170185988092)])
def test_uniform_entropy_is_ln_n(clients, expected):
    assert get_uniform_entropy(clients) == pytest.approx(expected)


def test_uniform_entropy_bad_inputs():
    with pytest.raises(TypeError):
        get_uniform_entropy(None)
    with pytest.raises(ValueError, match="at least 1"):
        get_uniform_entropy(0)
    assert math.isnan(get_uniform_entropy(math.nan))


@pytest.mark.parametrize(("value", "expected"), [(0.4, 0.4), (1.0, 1.0), (1.444546, 1.0), (None, None)])
def test_capped_value(value, expected):
    assert get_capped_value(value) == expected


def test_capped_value_keeps_nan():
    assert math.isnan(get_capped_value(math.nan))


@pytest.mark.parametrize(
    ("selector", "expected"),
    [("uniform", 0.0), ("Random", 0.0), ("", 0.0), ("   ", 0.0), (None, 0.0), (math.nan, 0.0),
     ("oort", 1.0), ("power_of_choice", 1.0)],
)
def test_client_selector_fix_scores_random_sampling_zero(selector, expected):
    assert check_client_selector(selector) == expected
