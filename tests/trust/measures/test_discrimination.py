"""Discrimination index and fairlearn group gaps with a non-label attribute (fltrust.trust.measures.discrimination)."""

from __future__ import annotations

import numpy as np
import pytest

from fltrust.data.synthetic import synthetic_cifar10, synthetic_femnist, synthetic_n_baiot, synthetic_nsl_kdd
from fltrust.trust.measures.discrimination import (
    DiscriminationError,
    discrimination_index,
    group_fairness_report,
    sensitive_attribute,
)

Y = np.array([1, 1, 0, 0, 1, 1, 0, 0])
P = np.array([1, 1, 0, 0, 1, 0, 0, 1])
G = np.array(["a", "a", "a", "a", "b", "b", "b", "b"])


def test_discrimination_index_by_hand():
    # group a: perfect, F1 = 1; group b: TP 1, FP 1, FN 1 -> F1 = 0.5
    index, per_group = discrimination_index(Y, P, G)
    assert index == pytest.approx(0.5)
    assert per_group == pytest.approx({"a": 0.5, "b": -0.5})


def test_three_groups_each_against_the_rest():
    y = np.array([1, 0, 1, 0, 1, 0])
    p = np.array([1, 0, 0, 0, 1, 1])
    g = np.array(["tcp", "tcp", "udp", "udp", "icmp", "icmp"])
    # tcp: F1 1 vs rest (y 1,0,1,0 / p 0,0,1,1: TP1 FP1 FN1 -> 0.5) -> +0.5
    # udp: F1 0 (TP0 FN1) vs rest (y 1,0,1,0 / p 1,0,1,1: TP2 FP1 -> 0.8) -> -0.8
    # icmp: TP1 FP1 -> 2/3 vs rest (y 1,0,1,0 / p 1,0,0,0: TP1 FN1 -> 2/3) -> 0
    index, per_group = discrimination_index(y, p, g)
    assert per_group["tcp"] == pytest.approx(0.5)
    assert per_group["udp"] == pytest.approx(-0.8)
    assert per_group["icmp"] == pytest.approx(0.0)
    assert index == pytest.approx(0.8)


def test_fairlearn_gaps_by_hand():
    # selection rates a 2/4, b 2/4 -> DP 0; TPR a 1, b 0.5; FPR a 0, b 0.5 -> EO 0.5
    report = group_fairness_report(Y, P, G, attribute="g")
    assert report.demographic_parity_difference == pytest.approx(0.0)
    assert report.equalized_odds_difference == pytest.approx(0.5)
    assert report.index == pytest.approx(0.5)
    assert report.group_sizes == {"a": 4, "b": 4}


def test_multiclass_uses_macro_f1_and_no_binary_gaps():
    y = np.array([0, 1, 2, 0, 1, 2])
    p = np.array([0, 1, 2, 0, 2, 1])
    g = np.array(["x", "x", "x", "y", "y", "y"])
    report = group_fairness_report(y, p, g, binary=False)
    assert report.index == pytest.approx(1.0 - 1.0 / 3.0)  # x perfect; y macro F1 = (1 + 0 + 0)/3
    assert report.demographic_parity_difference is None and report.equalized_odds_difference is None


def test_errors_name_the_problem():
    with pytest.raises(DiscriminationError, match="two"):
        discrimination_index(Y, P, np.array(["a"] * 8))
    with pytest.raises(DiscriminationError, match="equally long"):
        discrimination_index(Y, P[:3], G)


def test_sensitive_attributes_are_never_the_label():
    nsl = sensitive_attribute(synthetic_nsl_kdd(200, seed=0))
    assert nsl.name == "protocol_type" and set(np.unique(nsl.values)) <= {"tcp", "udp", "icmp"}
    baiot_bundle = synthetic_n_baiot(300, seed=0)
    baiot = sensitive_attribute(baiot_bundle)
    assert baiot.name == "device" and len(baiot.values) == len(baiot_bundle.test)
    femnist = sensitive_attribute(synthetic_femnist(300, seed=0))
    assert femnist.name == "writer_parity" and set(np.unique(femnist.values)) == {"even_writer", "odd_writer"}
    assert sensitive_attribute(synthetic_cifar10(40, seed=0)) is None
    for attribute in (nsl, baiot, femnist):
        assert "demographic" in attribute.description or attribute.name == "device"
