"""Jain's fairness index (paper Eq. 2, fairness spec 2.1; docs/references.md#fairness-2-1) on hand-computed examples."""

import math

import numpy as np
import pytest

from fltrust.metrics import MetricInputError, jain_index


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # all equal: (3)^2 / (3 * 3) = 1
        ([1.0, 1.0, 1.0], 1.0),
        # one non-zero: (1)^2 / (3 * 1) = 1/3
        ([1.0, 0.0, 0.0], 1.0 / 3.0),
        # (2 + 4)^2 / (2 * (4 + 16)) = 36 / 40
        ([2.0, 4.0], 0.9),
        # mixed sign: (1 - 1 + 2)^2 / (3 * (1 + 1 + 4)) = 4 / 18
        ([1.0, -1.0, 2.0], 2.0 / 9.0),
        # mixed sign summing to zero: 0 / (2 * 2) = 0
        ([1.0, -1.0], 0.0),
        # single value: x^2 / (1 * x^2) = 1
        ([-7.0], 1.0),
    ],
)
def test_hand_examples(values, expected):
    # Execute
    result = jain_index(values)

    # Assert
    assert result == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("scale", [3.0, 0.01, -1.0, -2.5])
def test_scale_and_sign_invariance(scale):
    # Prepare: J(c x) = J(x) for any c != 0, in particular J(-x) = J(x)
    x = np.array([0.3, 1.2, -0.4, 2.0, 0.9])

    # Execute / Assert
    assert jain_index(scale * x) == pytest.approx(jain_index(x), rel=1e-12)


def test_all_negative_values_look_perfectly_fair():
    # (-2 - 2)^2 / (2 * 8) = 1: sign is not handled (spec 9 item 2; docs/references.md#fairness-9-item-2)
    assert jain_index([-2.0, -2.0]) == pytest.approx(1.0)


def test_all_zero_is_nan_by_default_and_configurable():
    # faithful: 0/0 undefined; corrected: J(all zero) = 1
    assert math.isnan(jain_index([0.0, 0.0, 0.0]))
    assert jain_index([0.0, 0.0, 0.0], all_zero=1.0) == 1.0


def test_empty_is_nan_by_default_and_configurable():
    assert math.isnan(jain_index([]))
    assert jain_index([], empty=0.5) == 0.5


@pytest.mark.parametrize("bad", [[1.0, math.inf], [math.nan, 1.0], [-math.inf, math.inf]])
def test_non_finite_values_give_nan(bad):
    # a gain x/s with s = 0 is infinite; inf/inf is undefined
    assert math.isnan(jain_index(bad))


def test_rejects_two_dimensional_input():
    with pytest.raises(MetricInputError, match="one-dimensional"):
        jain_index([[1.0, 2.0], [3.0, 4.0]])
