"""Injected drop-outs, failures and time-outs (fltrust.faults) and how the in-process engine runs them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fltrust.config import ConfigError, ExperimentConfig, ReliabilityConfig
from fltrust.faults import (
    DROPPED,
    FAILED,
    OK,
    TIMED_OUT,
    InjectedDropout,
    InjectedFailure,
    InjectedTimeout,
    classify_error,
    client_fault,
    plan_round,
)


def config(**sections) -> ExperimentConfig:
    base = {"strategy": {"clients_per_round": 5}, "run": {"name": "rel"}}
    for key, value in sections.items():
        base.setdefault(key, {}).update(value)
    return ExperimentConfig.tiny(**base)


def test_config_validation():
    with pytest.raises(ConfigError, match="must not exceed 1"):
        ReliabilityConfig(dropout_rate=0.5, failure_rate=0.4, timeout_rate=0.2)
    with pytest.raises(ConfigError, match="reliability.dropout_rate"):
        ReliabilityConfig(dropout_rate=1.5)
    assert not ReliabilityConfig().active and ReliabilityConfig(timeout_rate=0.1).active


def test_categories_are_seeded_per_seed_round_and_client():
    rel = ReliabilityConfig(dropout_rate=0.3, failure_rate=0.2, timeout_rate=0.2)
    a = [client_fault(0, r, c, rel) for r in range(1, 30) for c in range(10)]
    assert a == [client_fault(0, r, c, rel) for r in range(1, 30) for c in range(10)]  # reproducible
    assert a != [client_fault(1, r, c, rel) for r in range(1, 30) for c in range(10)]  # another seed
    # a client's category does not depend on who else was sampled
    plan = plan_round(0, 7, [9, 2, 4], rel)
    assert plan.sampled.tolist() == [2, 4, 9]
    assert plan.status == {c: client_fault(0, 7, c, rel) for c in (2, 4, 9)}
    assert client_fault(0, 1, 0, ReliabilityConfig()) == OK


@pytest.mark.parametrize("rates", [(0.2, 0.1, 0.15), (0.05, 0.0, 0.3), (0.5, 0.25, 0.25)])
def test_observed_rates_stay_within_binomial_bounds(rates):
    rel = ReliabilityConfig(dropout_rate=rates[0], failure_rate=rates[1], timeout_rate=rates[2])
    n = 400 * 25  # 400 rounds x 25 sampled clients
    categories = [client_fault(3, r, c, rel) for r in range(1, 401) for c in range(25)]
    for category, p in zip((DROPPED, FAILED, TIMED_OUT), rates):
        count = categories.count(category)
        sigma = np.sqrt(n * p * (1 - p))
        assert abs(count - n * p) <= 4.5 * sigma + 1e-9, (category, count, n * p)  # P(fail) < 1e-5
    assert categories.count(OK) == n - sum(categories.count(c) for c in (DROPPED, FAILED, TIMED_OUT))


def test_error_texts_are_classified():
    assert classify_error(str(InjectedDropout(1, 2))) == DROPPED
    assert classify_error("<class 'ClientAppException'>:<'... " + str(InjectedFailure(1, 2)) + "'>") == FAILED
    assert classify_error(str(InjectedTimeout(1, 2))) == TIMED_OUT
    assert classify_error("RuntimeError: CUDA out of memory") is None


# -- the in-process engine -------------------------------------------------------------------------
def engine_for(cfg):
    from fltrust.experiment import build_engine, prepare_experiment

    return build_engine(prepare_experiment(cfg))


def test_engine_round_trains_only_the_clients_that_should(monkeypatch):
    """Dropped clients never train, failed ones raise inside their training (caught), timed-out
    ones train but are not aggregated; the record lists the clients whose update arrived."""
    cfg = config(strategy={"name": "ditto", "ditto_epochs": 1, "clients_per_round": 6},
                 reliability={"dropout_rate": 0.25, "failure_rate": 0.25, "timeout_rate": 0.25})
    engine = engine_for(cfg)
    round_ = next(r for r in range(1, 50) if len({s for s in plan_round(engine.seed, r, range(6), cfg.reliability)
                                                  .status.values()}) == 4)  # a round with all four categories
    plan = plan_round(engine.seed, round_, engine.sample_clients(round_), cfg.reliability)
    raised = []
    original = InjectedFailure.__init__

    def spy(self, client_id, round_):
        raised.append(client_id)
        original(self, client_id, round_)

    monkeypatch.setattr(InjectedFailure, "__init__", spy)
    from fltrust.core.evaluation import get_params

    theta = get_params(engine.model)
    record = engine.run_round(round_, theta, engine.evaluate_aux(theta))
    assert raised == plan.failed.tolist()
    assert sorted(engine.strategy.personal) == plan.trained.tolist()          # ok + timed out trained
    assert record.client_ids.tolist() == [c for c in plan.sampled.tolist() if plan.status[c] == OK]
    assert all(len(v) == len(record.client_ids) for v in record.client_metrics.values())
    assert len(record.client_params) == len(record.client_confusion) == len(record.client_ids)
    s = record.server_metrics
    assert (s["num_sampled"], s["num_dropped"], s["num_failed"], s["num_timed_out"]) == (
        6, len(plan.dropped), len(plan.failed), len(plan.timed_out))
    assert s["num_aggregated"] == len(record.client_ids) and s["model_kept"] == 0


def test_no_update_keeps_the_global_model():
    engine = engine_for(config(reliability={"dropout_rate": 0.5, "timeout_rate": 0.5}))
    from fltrust.core.evaluation import get_params

    theta = get_params(engine.model)
    record = engine.run_round(1, theta, engine.evaluate_aux(theta))
    assert len(record.client_ids) == 0 and record.server_metrics["model_kept"] == 1
    assert record.server_metrics["num_dropped"] + record.server_metrics["num_timed_out"] == 5
    assert all(np.array_equal(a, b) for a, b in zip(record.global_params_after, theta))
    assert record.server_metrics["aux_loss"] == record.server_metrics["aux_loss_before"]


def test_run_summary_and_trust_metric(tmp_path):
    from fltrust.experiment import run_experiment
    from fltrust.trust.measures.reliability import system_reliability

    cfg = config(reliability={"dropout_rate": 0.2, "failure_rate": 0.2, "timeout_rate": 0.2}, training={"rounds": 4})
    a = run_experiment(cfg, out_dir=tmp_path / "a")
    b = run_experiment(cfg, out_dir=tmp_path / "b")
    assert [r.client_ids.tolist() for r in a.rounds] == [r.client_ids.tolist() for r in b.rounds]  # seeded
    assert a.summary["final_aux_loss"] == b.summary["final_aux_loss"]
    block = a.summary["reliability"]
    trained = [r for r in a.rounds if r.round >= 1]
    measured = system_reliability((len(r.client_ids), r.server_metrics) for r in trained)
    assert measured.counters_reported and measured.num_sampled == block["num_sampled"] == 20
    assert measured.dropout_rate == block["dropout_rate"] and measured.error_rate == block["failure_rate"]
    assert measured.timeout_rate == block["timeout_rate"]
    assert block["num_aggregated"] == sum(len(r.client_ids) for r in trained)
    assert block["rounds_completed"] + block["rounds_model_kept"] == 4
    # without injection: no counters at all (the trust metric then says "declared / none injected")
    clean = run_experiment(config(), out_dir=tmp_path / "c")
    assert "reliability" not in clean.summary
    assert not any("num_sampled" in r.server_metrics for r in clean.rounds)


@pytest.mark.parametrize("vectorize", ["off", "auto"])
def test_both_training_paths_inject_the_same_failures(tmp_path, vectorize):
    from fltrust.experiment import run_experiment

    cfg = config(reliability={"dropout_rate": 0.3, "failure_rate": 0.2}, training={"vectorize": vectorize})
    record = run_experiment(cfg, out_dir=tmp_path)
    seed = cfg.effective_seed()
    from fltrust.federation import sample_clients

    for r in record.rounds[1:]:
        plan = plan_round(seed, r.round, sample_clients(seed, r.round, 6, 5), cfg.reliability)
        assert r.client_ids.tolist() == [c for c in plan.sampled.tolist() if plan.status[c] == OK]
        assert torch.isfinite(torch.tensor(r.server_metrics["aux_loss"]))


def test_observers_run_through_partial_and_empty_rounds(tmp_path):
    """Fairness analytics and FederatedTrust see rounds with fewer clients and rounds without any."""
    from fltrust.experiment import run_experiment

    cfg = config(reliability={"dropout_rate": 0.6, "timeout_rate": 0.3}, training={"rounds": 4},
                 metrics={"fairness": {"enabled": True}, "trust": {"enabled": True, "clever_samples": 0}})
    record = run_experiment(cfg, out_dir=tmp_path)
    sizes = [len(r.client_ids) for r in record.rounds[1:]]
    assert record.summary["status"] == "complete" and 0 in sizes and max(sizes) >= 1
    assert all("fairness" in r.observations for r in record.rounds[1:] if len(r.client_ids))
