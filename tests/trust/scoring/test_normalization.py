"""Score types at their boundary values (trust spec 2.4, paper Table 3; docs/references.md#trust-2-4)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from fltrust.trust.scoring.normalization import (
    NormalizationError,
    TrustScoreWarning,
    breakpoint_score,
    map_value_score,
    mapped_score,
    property_score,
    range_score,
    ranked_score,
    scaled_score,
    true_score,
)

HEAD_SCALE = [10, 100, 1000, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10]
HEAD_MODEL_SIZE = [10, 25, 50, 100]
PAPER_CLEVER = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.2, 2.4, 2.6, 2.8, 3.2, 3.4, 3.6, 3.8, 4.0]
TENTHS = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
TABLE3_SCALE = [10, 100, 1000, 1e4, 1e5, 1e6]
TABLE3_MODEL_SIZE = [1, 10, 50, 100, 500, 1e3, 5e3, 1e4, 5e4, 1e5, 5e5]
TRANSPARENCY = {
    "RandomForestClassifier": 4, "KNeighborsClassifier": 3, "SVC": 2, "GaussianProcessClassifier": 3,
    "DecisionTreeClassifier": 5, "MLPClassifier": 1, "AdaBoostClassifier": 3, "GaussianNB": 3.5,
    "QuadraticDiscriminantAnalysis": 3, "LogisticRegression": 4, "LinearRegression": 3.5, "Sequential": 1, "CNN": 1,
}
ALGORITHMS = {
    "FedAvg": 0.8493, "FedOpt": 0.8492, "FedProx": 0.8477, "FedBN": 0.8548, "pFedMe": 0.8765, "Ditto": 0.8661, "FedEM": 0.8479,
}


# -- true_score ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "direction", "expected"),
    [
        (True, "asc", 1.0),
        (True, "desc", 1.0),  # booleans ignore the direction (identity test)
        (False, "asc", 0.0),
        (False, "desc", 0.0),
        (math.nan, "asc", 0.0),
        (math.nan, "desc", 0.0),
        (0, "asc", 0.0),
        (1, "desc", 0.0),
        (0.3, "asc", 0.3),
        (0.3, "desc", 0.7),
        (1.44, "desc", 1 - 1.44),  # no clipping in the prototype: -0.44
        (2.0, "asc", 2.0),
    ],
)
def test_true_score_prototype_semantics(value, direction, expected):
    # Execute
    score = true_score(value, direction)

    # Assert
    assert score == pytest.approx(expected, abs=1e-12)


def test_true_score_numpy_bool_falls_through_identity_test_unless_coerced():
    # Execute: B14 (docs/references.md#trust-b14), np.True_ is not `True`, so the prototype scores 1 - 1 with desc
    prototype_desc = true_score(np.True_, "desc")
    prototype_asc = true_score(np.True_, "asc")
    coerced_desc = true_score(np.True_, "desc", coerce_types=True)
    coerced_false = true_score(np.False_, "desc", coerce_types=True)

    # Assert
    assert prototype_desc == 0.0
    assert prototype_asc == 1.0
    assert coerced_desc == 1.0
    assert coerced_false == 0.0


def test_true_score_rejects_text_and_bad_direction():
    with pytest.raises(NormalizationError, match="needs a number"):
        true_score("high")
    with pytest.raises(NormalizationError, match="direction"):
        true_score(0.5, "up")


# -- ranges -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("clients", "expected"),
    [
        (1, 1.0),
        (10, 1.0),  # a value on a boundary belongs to the lower bin (digitize right=True)
        (11, 1 - 1 / 11),
        (100, 1 - 1 / 11),
        (101, 1 - 2 / 11),
        (1000, 1 - 2 / 11),
        (1e10, 1 - 9 / 11),
        (1e10 + 1, 1 - 10 / 11),  # desc never reaches 0
    ],
)
def test_range_score_head_scale_desc(clients, expected):
    assert range_score(clients, HEAD_SCALE, "desc") == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("tensors", "expected"),
    [(10, 1.0), (11, 0.8), (12, 0.8), (25, 0.8), (26, 0.6), (50, 0.6), (51, 0.4), (100, 0.4), (101, 0.2)],
)
def test_range_score_head_model_size_desc(tensors, expected):
    assert range_score(tensors, HEAD_MODEL_SIZE, "desc") == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("clever", "bin_"),
    [
        (0.0, 0),
        (0.1, 1),
        (0.8754049303929511, 5),  # vector A in paper mode: 5/21 = 0.2381
        (1.8, 9),
        (1.8000001, 10),
        (2.0, 10),  # the radius cap: 10/21 = 0.48, paper Exp 1
        (2.9, 15),
        (3.0, 15),  # 3.0 is missing from the breakpoints: (2.8, 3.2] is one bin
        (3.2, 15),
        (4.0, 19),
        (4.5, 20),  # asc never reaches 1
    ],
)
def test_range_score_paper_clever_bins(clever, bin_):
    assert range_score(clever, PAPER_CLEVER, "asc") == pytest.approx(bin_ / 21, abs=1e-12)


@pytest.mark.parametrize(
    ("cv", "expected"),
    [(0.0, 1.0), (0.05, 1 - 1 / 12), (0.1, 1 - 1 / 12), (0.15, 1 - 2 / 12), (0.45, 1 - 5 / 12), (1.0, 1 - 10 / 12),
     (1.44, 1 / 12)],
)
def test_range_score_twelve_bins_desc(cv, expected):
    assert range_score(cv, TENTHS, "desc") == pytest.approx(expected, abs=1e-12)


def test_range_score_nan_and_text():
    assert range_score(math.nan, HEAD_SCALE, "desc") == 0.0
    assert range_score(math.nan, HEAD_SCALE, "asc") == 0.0
    with pytest.raises(NormalizationError, match="ranges needs a number"):
        range_score("100", HEAD_SCALE)


# -- breakpoints (paper Table 3) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("clients", "expected"),
    [(5, 0.0), (10, 0.0), (11, 0.2), (50, 0.2), (100, 0.2), (101, 0.4), (1e5, 0.8), (1e6, 1.0), (1e9, 1.0)],
)
def test_breakpoint_score_table3_scale_asc(clients, expected):
    assert breakpoint_score(clients, TABLE3_SCALE, "asc") == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("params", "expected"),
    [(0.5, 1.0), (1, 1.0), (2, 0.9), (10, 0.9), (8452, 0.3), (29002, 0.2), (5e5, 0.0), (6603902, 0.0)],
)
def test_breakpoint_score_table3_model_size_desc(params, expected):
    assert breakpoint_score(params, TABLE3_MODEL_SIZE, "desc") == pytest.approx(expected, abs=1e-12)


def test_breakpoint_score_needs_two_values_and_scores_nan_zero():
    assert breakpoint_score(math.nan, TABLE3_SCALE, "desc") == 0.0
    with pytest.raises(NormalizationError, match="at least two"):
        breakpoint_score(3, [1])


# -- scaled_score -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "direction", "expected"),
    [(-1.0, "asc", 0.0), (0.0, "asc", 0.0), (0.8754, "asc", 0.4377), (2.0, "asc", 1.0), (3.0, "asc", 1.0),
     (0.5, "desc", 0.75), (3.0, "desc", 0.0), (math.nan, "asc", 0.0), (math.nan, "desc", 0.0)],
)
def test_scaled_score_clips_to_the_bounds(value, direction, expected):
    assert scaled_score(value, 0.0, 2.0, direction) == pytest.approx(expected, abs=1e-12)


def test_scaled_score_rejects_empty_interval():
    with pytest.raises(NormalizationError, match="low < high"):
        scaled_score(1.0, 2.0, 2.0)


# -- score_mapping ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [("CNN", 0.0), ("MLPClassifier", 0.0), ("SVC", 0.25), ("KNeighborsClassifier", 0.5), ("GaussianNB", 0.625),
     ("RandomForestClassifier", 0.75), ("DecisionTreeClassifier", 1.0)],
)
def test_mapped_score_minmax(model, expected):
    assert mapped_score(model, TRANSPARENCY) == pytest.approx(expected, abs=1e-12)


def test_mapped_score_l2_matches_paper_era_values():
    # Prepare: ||v||^2 = 124.5 (spec 3.4, docs/references.md#trust-3-4)
    norm = math.sqrt(124.5)

    # Execute / Assert
    assert mapped_score("CNN", TRANSPARENCY, normalization="l2") == pytest.approx(1 / norm, abs=1e-12)
    assert mapped_score("CNN", TRANSPARENCY, normalization="l2") == pytest.approx(0.0896, abs=1e-4)
    assert mapped_score("DecisionTreeClassifier", TRANSPARENCY, normalization="l2") == pytest.approx(0.4481, abs=1e-4)


def test_mapped_score_unknown_key_nan_in_prototype_zero_with_warning_when_fixed():
    # Execute / Assert
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(mapped_score("ResNet", TRANSPARENCY))
        assert math.isnan(mapped_score(math.nan, TRANSPARENCY))
    with pytest.warns(TrustScoreWarning, match="ResNet"):
        assert mapped_score("ResNet", TRANSPARENCY, unknown="zero") == 0.0


def test_mapped_score_rejects_flat_map():
    with pytest.raises(NormalizationError, match="two different"):
        mapped_score("a", {"a": 1, "b": 1})


# -- score_ranking ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("algorithm", "asc", "desc"),
    [("FedProx", 1, 7), ("FedEM", 2, 6), ("FedOpt", 3, 5), ("FedAvg", 4, 4), ("FedBN", 5, 3), ("Ditto", 6, 2), ("pFedMe", 7, 1)],
)
def test_ranked_score_positions(algorithm, asc, desc):
    assert ranked_score(algorithm, ALGORITHMS, "asc") == pytest.approx(asc / 7, abs=1e-12)
    assert ranked_score(algorithm, ALGORITHMS, "desc") == pytest.approx(desc / 7, abs=1e-12)


def test_ranked_score_ties_keep_map_order_in_both_directions():
    # Prepare
    tied = {"a": 1.0, "b": 1.0, "c": 2.0}

    # Execute / Assert (stable sort; reverse=True keeps equal items in their original order)
    assert [ranked_score(k, tied, "asc") for k in "abc"] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert [ranked_score(k, tied, "desc") for k in "abc"] == pytest.approx([2 / 3, 1.0, 1 / 3])


def test_ranked_score_unknown_key_scores_zero_and_warns_only_when_fixed():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ranked_score("Median", ALGORITHMS) == 0.0
    with pytest.warns(TrustScoreWarning, match="Median"):
        assert ranked_score("Median", ALGORITHMS, unknown="zero") == 0.0


# -- score_map_value and property_check ---------------------------------------------------------


def test_map_value_score_is_the_raw_value():
    assert map_value_score("FedAvg", ALGORITHMS) == 0.8493
    assert math.isnan(map_value_score("Median", ALGORITHMS))
    with pytest.warns(TrustScoreWarning):
        assert map_value_score("Median", ALGORITHMS, unknown="zero") == 0.0


@pytest.mark.parametrize(("value", "expected"), [(0.0, 0.0), (1 / 3, 1 / 3), (1.0, 1.0), (math.nan, 0.0)])
def test_property_score_passes_fractions_through(value, expected):
    assert property_score(value) == pytest.approx(expected)


def test_property_score_rejects_values_outside_unit_interval():
    with pytest.raises(NormalizationError, match=r"\[0, 1\]"):
        property_score(1.5)
