"""``run.engine: flower`` against the in-process engine, on an in-process Grid (fast, no Ray).

The Flower engine's ServerApp and ClientApp run unchanged; only Flower's Simulation Runtime is
replaced by :class:`conftest.LocalGrid`. The slow twin on the real runtime is test_equivalence.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from flower_testing import tiny_config
from fltrust.experiment import run_experiment

# float32 noise only: Flower's FedAvg sums float32 arrays, fltrust's in float64 (measured <= 1e-6)
ATOL = 1e-6  # with rtol 1e-5 (conftest.compare_runs)


def both(tmp_path, **sections):
    a = run_experiment(tiny_config("inprocess", **sections), out_dir=tmp_path / "inprocess")
    b = run_experiment(tiny_config("flower", **sections), out_dir=tmp_path / "flower")
    return a, b


@pytest.mark.parametrize("strategy", [
    {"name": "fedavg"},
    {"name": "fedprox", "proximal_mu": 0.1},
    {"name": "fedmedian"},
    {"name": "qfedavg", "qfedavg_variant": "flower_legacy"},
    {"name": "qfedavg", "qfedavg_variant": "qffl"},
    {"name": "ditto"},
])
def test_flower_engine_matches_inprocess(tmp_path, local_flower, compare, strategy):
    a, b = both(tmp_path, strategy=strategy)
    assert b.summary["status"] == "complete" and b.summary["engine"] == "flower"
    diff = compare(a, b)
    assert diff["params_beyond_rtol"] <= ATOL, diff  # np.allclose(rtol=1e-5, atol=ATOL)
    assert diff["client_metrics"] <= 1e-5 and diff["server_metrics"] <= 1e-5 and diff["confusion"] <= 1, diff
    assert max(diff[k] for k in ("f_j", "f_g", "f_r", "f_o", "F_T")) <= 1e-4, diff


def test_ditto_personal_models_on_clients_give_the_same_run(tmp_path, local_flower, compare):
    a = run_experiment(tiny_config("flower", strategy={"name": "ditto"}), out_dir=tmp_path / "server")
    b = run_experiment(tiny_config("flower", strategy={"name": "ditto"}, flower={"ditto_personal_store": "client"}),
                       out_dir=tmp_path / "client")
    diff = compare(a, b)
    assert diff["params"] == 0 and diff["client_metrics"] == 0 and diff["F_T"] == 0, diff


def test_server_side_dp_runs_through_flowers_wrapper(tmp_path, local_flower):
    cfg = dict(privacy={"mode": "server", "clipping_norm": 1.0, "noise_multiplier": 0.5})
    a = run_experiment(tiny_config("flower", **cfg), out_dir=tmp_path / "a")
    b = run_experiment(tiny_config("flower", **cfg), out_dir=tmp_path / "b", force=True)
    eps = [r.server_metrics["epsilon"] for r in a.rounds[1:]]
    assert all(np.isfinite(eps)) and eps == sorted(eps) and a.summary["epsilon"] == pytest.approx(eps[-1])
    # the noise is Flower's draw, seeded per round: the run is reproducible
    assert [r.server_metrics["aux_loss"] for r in a.rounds] == [r.server_metrics["aux_loss"] for r in b.rounds]
    inproc = run_experiment(tiny_config("inprocess", **cfg), out_dir=tmp_path / "c")
    assert inproc.rounds[1].client_ids.tolist() == a.rounds[1].client_ids.tolist()
    assert inproc.summary["epsilon"] == pytest.approx(a.summary["epsilon"])


def test_local_dp_epsilon_is_accounted_like_inprocess(tmp_path, local_flower, compare):
    a, b = both(tmp_path, privacy={"mode": "local", "target_epsilon": 5.0}, training={"rounds": 2})
    assert b.summary["epsilon"] == pytest.approx(a.summary["epsilon"])
    diff = compare(a, b)
    assert diff["client_metrics"] <= 1e-5, diff


def test_the_clientapp_sends_its_report_beside_the_aggregated_metrics(tmp_path, local_flower, monkeypatch):
    """Flower's strategy aggregates only the weights and losses of the MetricRecord; the
    per-client report (rewards, confusion, partition id) is the ConfigRecord "fltrust"."""
    from fltrust.engines.flower import client_app
    from fltrust.flower.records import FLTRUST_KEY

    replies = []
    train = client_app._ClientRuntime.train

    def spy(self, message, context):
        reply = train(self, message, context)
        replies.append((dict(next(iter(reply.content.metric_records.values()))),
                        dict(reply.content[FLTRUST_KEY])))
        return reply

    monkeypatch.setattr(client_app._ClientRuntime, "train", spy)
    run = run_experiment(tiny_config("flower", strategy={"name": "qfedavg", "qfedavg_variant": "qffl"}),
                         out_dir=tmp_path)
    assert len(replies) == 3 * 3  # 3 rounds of 3 clients
    for metrics, report in replies:
        assert set(metrics) == {"num-examples", "num-batches", "train_loss", "unit-weight", "qffl_loss"}
        assert {"partition-id", "confusion", "reward_accuracy", "accuracy"} <= set(report)
        assert all(report[k] == metrics[k] for k in metrics)
    first = sorted((r["partition-id"], r["reward_accuracy"]) for _, r in replies[:3])
    assert [c for c, _ in first] == run.rounds[1].client_ids.tolist()
    assert [a for _, a in first] == pytest.approx(run.rounds[1].client_metrics["reward_accuracy"].tolist())


def test_a_failing_client_stops_the_run_with_its_reason(tmp_path, local_flower, monkeypatch):
    from fltrust.engines.flower import client_app

    def broken(self, message, context):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(client_app._ClientRuntime, "train", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        run_experiment(tiny_config("flower"), out_dir=tmp_path)


def test_wrong_supernode_count_is_a_config_error(tmp_path):
    with pytest.raises(ValueError, match="num_supernodes"):
        run_experiment(tiny_config("flower", flower={"num_supernodes": 4}), out_dir=tmp_path)


def test_client_runtime_cache_keeps_its_payload_so_its_id_cannot_be_reused(monkeypatch):
    """In-process grids key the client runtime on id(payload). Were the payload freed, the next
    run's payload could get the same id and be handed the previous run's runtime (seen once: a
    q-FedAvg ``qffl`` run trained by a cached ``flower_legacy`` runtime, so ``qffl_loss`` was missing)."""
    import gc
    import weakref
    from types import SimpleNamespace

    from fltrust.engines.flower import client_app

    # like the real runtime, the stand-in keeps what it built from the payload, not the payload
    monkeypatch.setattr(client_app, "_ClientRuntime", lambda payload: SimpleNamespace(run=payload.run))
    monkeypatch.setattr(client_app, "_RUNTIMES", {})

    def payload(run):
        return client_app.ClientPayload(federation=None, model=None, device="cpu", strategy=None, privacy=None,
                                        training=None, clients_per_round=1, run=run, attack=None, reliability=None)

    first = payload("first")
    alive = weakref.ref(first)
    assert client_app._runtime(first).run == "first"
    del first
    gc.collect()
    assert alive() is not None  # held by the cache while its runtime is the current one
    second = payload("second")
    assert client_app._runtime(second).run == "second"
    gc.collect()
    assert alive() is None  # one run per process: the first is released once replaced
