"""FederatedTrust statistics on hand-computed examples (trust spec 3.3, 3.8, 3.9; B4, B11, B15).

docs/references.md#trust-3-3, #trust-3-8, #trust-3-9, #trust-b4, #trust-b11, #trust-b15.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from fltrust.trust.measures.statistics import (
    StatisticsError,
    accuracy_cv,
    avg_entropy,
    cap1,
    class_imbalance,
    coefficient_of_variation,
    label_entropies,
    minmax_mean_entropy,
    selection_cv,
    selection_rates,
)


# -- entropy ------------------------------------------------------------------------------------

def test_label_entropy_in_bits() -> None:
    # [1, 1] is one fair coin = 1 bit; [2, 0] is certain = 0; [1, 1, 1, 1] = 2 bits; empty = NaN
    counts = np.array([[1, 1, 0, 0], [2, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]])
    h = label_entropies(counts)
    assert h[:3] == pytest.approx([1.0, 0.0, 2.0])
    assert math.isnan(h[3])


def test_prototype_avg_entropy_is_the_minmax_mean() -> None:
    # H = [0, 1, 2] bits -> normalised [0, 0.5, 1] -> mean 0.5
    counts = np.array([[4, 0, 0, 0], [2, 2, 0, 0], [1, 1, 1, 1]])
    assert avg_entropy(counts, method="minmax_label") == pytest.approx(0.5)
    assert minmax_mean_entropy([0.0, 1.0, 2.0]) == pytest.approx(0.5)


def test_prototype_avg_entropy_is_nan_when_all_clients_are_equal() -> None:
    # B4: a single client, or identical entropies, give 0/0
    assert math.isnan(avg_entropy(np.array([[3, 1]]), method="minmax_label"))
    assert math.isnan(minmax_mean_entropy([1.5, 1.5, 1.5]))


def test_normalized_label_entropy() -> None:
    # K = 4: H = [1, 0, 2] bits -> / log2(4) = [0.5, 0, 1] -> mean 0.5
    counts = np.array([[1, 1, 0, 0], [2, 0, 0, 0], [1, 1, 1, 1]])
    assert avg_entropy(counts, method="normalized_label") == pytest.approx(0.5)


def test_client_identification_entropy() -> None:
    # Equal client sizes: H = log2 N -> 1. Sizes [2, 1, 1]: p = [.5, .25, .25], H = 1.5 bits, / log2 3
    assert avg_entropy(np.array([[1, 1], [2, 0], [0, 2]]), method="client_identification") == pytest.approx(1.0)
    value = avg_entropy(np.array([[1, 1], [1, 0], [0, 1]]), method="client_identification")
    assert value == pytest.approx(1.5 / math.log2(3))
    assert avg_entropy(np.array([[5, 5]]), method="client_identification") == 0.0


def test_unknown_entropy_method_names_the_choices() -> None:
    with pytest.raises(StatisticsError, match="client_identification"):
        avg_entropy(np.ones((2, 2)), method="shannon")


def test_example_statistics_reproduce_vector_b_entropy(golden_dir: Path) -> None:
    path = golden_dir / "statistics.json"
    entropies = list(json.loads(path.read_text())["entropy_distribution"].values())
    assert min(entropies) == pytest.approx(4.264660, abs=1e-6)
    assert max(entropies) == pytest.approx(4.883037, abs=1e-6)
    assert minmax_mean_entropy(entropies) == 0.5847228374416231


# -- participation (B15) ------------------------------------------------------------------------------

def test_selection_rates_divide_by_the_rounds_run() -> None:
    assert selection_rates([1, 1, 0], 2) == pytest.approx([0.5, 0.5, 0.0])
    with pytest.raises(StatisticsError, match="num_rounds"):
        selection_rates([1, 0], 0)
    with pytest.raises(StatisticsError, match="at most once a round"):
        selection_rates([3, 0], 2)


def test_selection_cv_by_hand_including_never_selected_clients() -> None:
    # rates [0.5, 0.5, 0]: mean 1/3, population std sqrt(((1/6)^2 * 2 + (1/3)^2) / 3) = sqrt(2)/6
    # CV = (sqrt(2)/6) / (1/3) = sqrt(2)/2 = 0.7071...
    assert selection_cv([0.5, 0.5, 0.0]) == pytest.approx(math.sqrt(2) / 2)
    assert selection_cv([1, 1, 0]) == pytest.approx(math.sqrt(2) / 2)  # scale free: counts work too


def test_selection_cv_cap_and_raw() -> None:
    # rates [1, 0, 0, 0]: mean 0.25, std sqrt(3)/4 -> CV sqrt(3) = 1.732
    assert selection_cv([1, 0, 0, 0], cap=False) == pytest.approx(math.sqrt(3))
    assert selection_cv([1, 0, 0, 0]) == 1.0


def test_selection_cv_is_nan_when_nobody_was_selected() -> None:
    assert math.isnan(selection_cv([0, 0, 0]))


# -- accuracy variation ----------------------------------------------------------------------------------

def test_accuracy_cv_population_std() -> None:
    # [0.6, 0.8]: mean 0.7, population std 0.1 -> 1/7
    assert accuracy_cv([0.6, 0.8]) == pytest.approx(1 / 7)
    assert accuracy_cv([0.9, 0.9, 0.9]) == 0.0


def test_accuracy_cv_rejects_out_of_range_values() -> None:
    with pytest.raises(StatisticsError, match=r"\[0, 1\]"):
        accuracy_cv([0.5, 1.5])
    with pytest.raises(StatisticsError, match="negative"):
        accuracy_cv([0.5, -0.1])
    with pytest.raises(StatisticsError, match="NaN"):
        accuracy_cv([0.5, float("nan")])


# -- class imbalance (B11) -------------------------------------------------------------------------------

def test_class_imbalance_present_classes_vs_all_classes() -> None:
    # per-client counts summed: [3, 1, 0]
    counts = np.array([[2, 1, 0], [1, 0, 0]])
    # prototype: only [3, 1] -> mean 2, std 1 -> 0.5
    assert class_imbalance(counts, method="present_classes") == pytest.approx(0.5)
    # fixed: [3, 1, 0] -> mean 4/3, variance ((5/3)^2 + (1/3)^2 + (4/3)^2) / 3 = 14/9,
    # std sqrt(14)/3 -> CV sqrt(14)/4 = 0.935
    assert class_imbalance(counts, method="all_classes") == pytest.approx(math.sqrt(14) / 4)


def test_class_imbalance_cap_and_zero_mean_guard() -> None:
    assert class_imbalance([10, 0, 0, 0], method="all_classes") == 1.0
    assert class_imbalance([10, 0, 0, 0], method="all_classes", cap=False) == pytest.approx(math.sqrt(3))
    assert math.isnan(class_imbalance([0, 0, 0], method="all_classes"))
    assert math.isnan(class_imbalance([0, 0, 0], method="present_classes"))


def test_example_class_distribution_is_capped(golden_dir: Path) -> None:
    path = golden_dir / "statistics.json"
    counts = list(json.loads(path.read_text())["class_distribution"].values())
    assert len(counts) == 62 and sum(counts) == 9959
    assert class_imbalance(counts, cap=False) == pytest.approx(1.444546, abs=5e-7)
    assert class_imbalance(counts) == 1.0


# -- helpers -----------------------------------------------------------------------------------------------

def test_cap1_and_cv_helpers() -> None:
    assert cap1(1.7) == 1.0 and cap1(0.3) == 0.3 and math.isnan(cap1(float("nan")))
    assert coefficient_of_variation([2.0, 4.0], cap=False) == pytest.approx(1 / 3)
    with pytest.raises(StatisticsError, match="empty"):
        coefficient_of_variation([])
    with pytest.raises(StatisticsError, match="1-d"):
        coefficient_of_variation([[1.0, 2.0]])
