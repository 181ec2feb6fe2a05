"""``privacy.secure_aggregation: secagg+``: Flower's SecAgg+ (SecAggPlusWorkflow + secaggplus_mod)
run by the Flower engine, checked against plain FedAvg of the very same client updates.

What SecAgg+ changes numerically (Flower 1.42, ``flwr.common.secure_aggregation``): client n sends
``dq_n * w_n`` with ``dq_n = round(b_n / max_weight * Q) / Q`` (b_n its FedAvg weight; the engine sets
``max_weight`` to the largest client weight), clipped to [-C, C] and stochastically rounded to the
grid of step ``2C / Q``; masks cancel exactly in the modular sum. The server divides the sum by
``sum_n dq_n``. Per coordinate, every client adds less than one grid step of rounding (plus the
float32 rounding of its pre-quantised value, < 0.5 step), so

    |secagg+ - FedAvg| <= 2 * m * (2C / Q) / sum_n dq_n        (C = 8, Q = 2**22: 2C/Q = 3.8e-6)

for m clients (the weight quantisation adds < 1e-7 relative). Equal weights (iid partition): the
bound is 7.6e-6; measured 3.2e-6 (LocalGrid, 2 rounds). Masks and stochastic rounding are random (os.urandom and
NumPy's global generator), so secagg+ runs are not bit-reproducible, only within this bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from flower_testing import tiny_config
from fltrust.core.observers import BaseObserver
from fltrust.config import ConfigError
from fltrust.experiment import run_experiment
from fltrust.algorithms.aggregation import weighted_average


class Capture(BaseObserver):
    name = "capture"

    def __init__(self):
        self.rounds = []

    def on_round_end(self, record):
        if record.round > 0:
            self.rounds.append((record.round, record.client_ids.copy(), record.global_params_before,
                                record.global_params_after, dict(record.server_metrics), record.client_params))


SECAGG = dict(privacy={"secure_aggregation": "secagg+"}, strategy={"clients_per_round": 4},
              training={"rounds": 2}, metrics={"fairness": {"enabled": False}})


def plain_fedavg_of_the_same_updates(cfg, round_, ids, theta):
    """Plain FedAvg of the updates these clients compute from theta (the in-process client code)."""
    from fltrust.experiment import build_engine, prepare_experiment
    from fltrust.engines.client import SimulatedClient

    plain = cfg.with_overrides({"privacy.secure_aggregation": None, "run.engine": "inprocess"})
    engine = build_engine(prepare_experiment(plain))
    clients = [SimulatedClient(engine, int(c), round_) for c in ids]
    updates = [engine.strategy.local_update(c, theta).params for c in clients]
    return weighted_average(updates, [c.num_samples for c in clients]), [c.num_samples for c in clients]


def bound(weights, cfg):
    p = cfg.privacy
    step = 2 * p.secagg_clipping_range / p.secagg_quantization_range
    q = p.secagg_quantization_range
    dq = [round(w / max(weights) * q) / q for w in weights]
    return 2 * len(weights) * step / sum(dq)


def check_rounds(cfg, capture):
    assert [r[0] for r in capture.rounds] == list(range(1, cfg.training.rounds + 1))
    worst = 0.0
    for round_, ids, theta, after, server, client_params in capture.rounds:
        assert server["secure_aggregation"] == 1.0
        expected, weights = plain_fedavg_of_the_same_updates(cfg, round_, ids, theta)
        diff = max(float(np.max(np.abs(a.astype(np.float64) - b))) for a, b in zip(after, expected))
        assert 0 < diff <= bound(weights, cfg), (round_, diff, bound(weights, cfg))
        worst = max(worst, diff)
        # the server never saw an individual update: every row holds the aggregate
        assert all(all(np.array_equal(p, a) for p, a in zip(params, after)) for params in client_params)
    return worst


def test_secagg_config_errors():
    with pytest.raises(ConfigError, match="run.engine=flower"):
        tiny_config("inprocess", privacy={"secure_aggregation": "secagg+"})
    from fltrust.experiment import check_experiment

    with pytest.raises(ConfigError, match="individual updates: use fedavg or fedprox"):
        check_experiment(tiny_config("flower", privacy={"secure_aggregation": "secagg+"}, strategy={"name": "krum"}))
    with pytest.raises(ConfigError, match="privacy.mode=local or none"):
        check_experiment(tiny_config("flower", privacy={"secure_aggregation": "secagg+", "mode": "server"}))


def test_secagg_on_local_grid_equals_fedavg_within_quantisation(tmp_path, local_flower):
    cfg = tiny_config("flower", **SECAGG)
    capture = Capture()
    record = run_experiment(cfg, out_dir=tmp_path, observers=[capture])
    assert record.summary["status"] == "complete"
    worst = check_rounds(cfg, capture)
    print(f"\nsecagg+ vs FedAvg of the same updates (LocalGrid): max |diff| {worst:.2e}")


def test_secagg_survives_injected_dropouts(tmp_path, local_flower):
    """SecAgg+ unmasks without the clients that left after the key exchange (dropped / timed out)."""
    cfg = tiny_config("flower", **{**SECAGG, "reliability": {"dropout_rate": 0.15, "timeout_rate": 0.1},
                                   "training": {"rounds": 3}})
    capture = Capture()
    run_experiment(cfg, out_dir=tmp_path, observers=[capture])
    from fltrust.faults import plan_round
    from fltrust.federation import sample_clients

    seen_loss = False
    for round_, ids, theta, after, server, _ in capture.rounds:
        seed = cfg.effective_seed()
        plan = plan_round(seed, round_, sample_clients(seed, round_, 6, 4), cfg.reliability)
        lost = server["num_dropped"] + server["num_timed_out"]
        assert lost == len(plan.dropped) + len(plan.timed_out) and server["num_failed"] == 0
        seen_loss |= lost > 0
        if server["secure_aggregation"] == 1:
            assert ids.tolist() == [c for c in plan.sampled.tolist() if plan.status[c] == "ok"]
            assert server["num_aggregated"] == len(ids) == server["num_sampled"] - lost
            expected, weights = plain_fedavg_of_the_same_updates(cfg, round_, ids, theta)
            diff = max(float(np.max(np.abs(a.astype(np.float64) - b))) for a, b in zip(after, expected))
            assert diff <= bound(weights, cfg)
        else:  # too few clients left for the reconstruction threshold: nothing aggregated, model kept
            assert server["model_kept"] == 1 and len(ids) == 0
    assert seen_loss


@pytest.mark.slow
def test_secagg_in_the_flower_simulation_equals_fedavg_within_quantisation(tmp_path):
    """Two rounds of SecAgg+ on Flower's Simulation Runtime (Ray)."""
    cfg = tiny_config("flower", **{**SECAGG, "flower": {"num_cpus": 1}})
    capture = Capture()
    record = run_experiment(cfg, out_dir=tmp_path, observers=[capture])
    assert record.summary["status"] == "complete" and record.summary["engine"] == "flower"
    worst = check_rounds(cfg, capture)
    print(f"\nsecagg+ vs FedAvg of the same updates (Ray simulation): max |diff| {worst:.2e}")
