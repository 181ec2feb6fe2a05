"""Attacks, robust aggregation and injected failures give the same run in both engines.

Fast: the Flower engine's ServerApp and ClientApp on :class:`conftest.LocalGrid` (same code as
Flower's Simulation Runtime, no Ray). Data-level attacks reach the ClientApps through the shared
federation; update-level attacks and the failures are applied by the ClientApp itself
(``fltrust.engines.flower.client_app._ClientRuntime.train``); the server counts the error replies.
Tolerances as in test_engine_local.py (float32 noise of Flower's aggregation sums).
"""

from __future__ import annotations

import pytest

from flower_testing import tiny_config
from fltrust.experiment import run_experiment

ATOL = 1e-6
# attacked runs: poisoned updates (e.g. s = 5) carry the float32 rounding of Flower's sums further
# (measured 1.6e-6 for scale s = 5, 1.4e-6 for the backdoor over 3 rounds)
ATTACK_ATOL = 5e-6
FAIRNESS = {"fairness": {"enabled": True, "sensitive_attributes": [1]}}  # robust rules have no paper default


def both(tmp_path, **sections):
    a = run_experiment(tiny_config("inprocess", **sections), out_dir=tmp_path / "inprocess")
    b = run_experiment(tiny_config("flower", **sections), out_dir=tmp_path / "flower")
    return a, b


def assert_same(diff, atol=ATOL):
    assert diff["params_beyond_rtol"] <= atol, diff
    assert diff["client_metrics"] <= 1e-5 and diff["server_metrics"] <= 1e-5 and diff["confusion"] <= 1, diff
    assert max(diff[k] for k in ("f_j", "f_g", "f_r", "f_o", "F_T")) <= 1e-4, diff


@pytest.mark.parametrize("attack", [
    {"kind": "sign_flip", "malicious_clients": [0, 3]},
    {"kind": "scale", "num_malicious": 2, "scale": 5.0},
    {"kind": "label_flip", "num_malicious": 2, "flip_fraction": 0.5},
    {"kind": "backdoor", "malicious_clients": [1], "poison_fraction": 0.5},
], ids=lambda a: a["kind"])
def test_attacks_are_the_same_in_both_engines(tmp_path, local_flower, compare, attack):
    a, b = both(tmp_path, attack=attack)
    assert_same(compare(a, b), ATTACK_ATOL)
    assert a.summary["attack"]["malicious_clients"] == b.summary["attack"]["malicious_clients"]
    assert a.summary["attack"]["clean_test_accuracy"] == pytest.approx(b.summary["attack"]["clean_test_accuracy"])
    for ra, rb in zip(a.rounds[1:], b.rounds[1:]):
        assert ra.client_metrics["malicious"].tolist() == rb.client_metrics["malicious"].tolist()
        assert ra.server_metrics["num_malicious"] == rb.server_metrics["num_malicious"]


@pytest.mark.parametrize("strategy", [
    {"name": "krum", "num_malicious_nodes": 1},
    {"name": "multikrum", "num_malicious_nodes": 1},
    {"name": "trimmedmean", "beta": 0.2},
    {"name": "bulyan", "num_malicious_nodes": 1},
], ids=lambda s: s["name"])
def test_robust_aggregation_is_the_same_in_both_engines(tmp_path, local_flower, compare, strategy):
    sections = dict(partition={"num_clients": 8}, strategy={"clients_per_round": 7, **strategy}, metrics=FAIRNESS,
                    attack={"kind": "scale", "malicious_clients": [2], "scale": 20.0})
    a, b = both(tmp_path, **sections)
    assert_same(compare(a, b), ATTACK_ATOL)


@pytest.mark.parametrize("strategy", [
    {"name": "fedavg"},
    {"name": "qfedavg", "qfedavg_variant": "qffl"},
    {"name": "ditto"},
], ids=lambda s: s["name"])
def test_injected_failures_are_the_same_in_both_engines(tmp_path, local_flower, compare, strategy):
    sections = dict(strategy={"clients_per_round": 5, **strategy}, training={"rounds": 4},
                    reliability={"dropout_rate": 0.2, "failure_rate": 0.2, "timeout_rate": 0.2},
                    # Ditto: a timed-out client keeps its new personal model on the node (as in-process)
                    flower={"ditto_personal_store": "client"},
                    # (rounds with one update leave fairness notions undefined (null), which
                    # conftest.compare_runs cannot compare; fairness under failures: test_reliability)
                    metrics={"fairness": {"enabled": False}})
    a, b = both(tmp_path, **sections)
    assert_same(compare(a, b))
    keys = ("num_sampled", "num_dropped", "num_failed", "num_timed_out", "num_aggregated", "model_kept")
    for ra, rb in zip(a.rounds[1:], b.rounds[1:]):
        assert [ra.server_metrics[k] for k in keys] == [rb.server_metrics[k] for k in keys]
    assert a.summary["reliability"] == b.summary["reliability"]
    assert sum(r.server_metrics["num_failed"] for r in b.rounds[1:]) > 0


def test_a_round_without_updates_keeps_the_model_in_both_engines(tmp_path, local_flower, compare):
    a, b = both(tmp_path, reliability={"dropout_rate": 0.5, "failure_rate": 0.3, "timeout_rate": 0.2},
                metrics={"fairness": {"enabled": False}})
    assert_same(compare(a, b))
    assert all(r.server_metrics["model_kept"] == 1 and len(r.client_ids) == 0 for r in b.rounds[1:])
    assert b.summary["reliability"]["rounds_completed"] == 0


@pytest.mark.slow
def test_attack_and_failures_in_the_flower_simulation(tmp_path, compare):
    """On Flower's Simulation Runtime (Ray) the injected failures are ClientApp exceptions that
    Flower turns into error replies; the server counts them the same way."""
    sections = dict(strategy={"clients_per_round": 5}, training={"rounds": 3}, flower={"num_cpus": 1},
                    attack={"kind": "sign_flip", "malicious_clients": [0, 3]},
                    reliability={"dropout_rate": 0.2, "failure_rate": 0.2, "timeout_rate": 0.2},
                    metrics={"fairness": {"enabled": False}})
    a, b = both(tmp_path, **sections)
    assert b.summary["engine"] == "flower"
    assert_same(compare(a, b), ATTACK_ATOL)
    assert a.summary["reliability"] == b.summary["reliability"]
    assert b.summary["reliability"]["num_failed"] + b.summary["reliability"]["num_dropped"] > 0
