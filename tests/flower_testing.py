"""Flower test helpers shared by tests/flower (anyone's app) and tests/engines/flower (the Flower engine).

:class:`LocalGrid` (:mod:`fltrust.flower.local`) calls a ClientApp directly for each message, like
Flower's runtimes do (one ``Context`` per node, kept across rounds, node config ``partition-id`` /
``num-partitions``). The fast tests run the adapter and the Flower engine's ServerApp/ClientApp on
it; the ``slow`` tests use the real Simulation Runtime (Ray) and a real SuperLink deployment.
The two folders' ``conftest.py`` import these names (tests import them from ``conftest``).
"""

from __future__ import annotations

import pytest

from fltrust.config import ExperimentConfig, TrainingConfig
from fltrust.flower.local import LocalGrid as LocalGrid  # the tests import it from here
from fltrust.flower.local import run_local

SEQUENTIAL = "vectorize" in TrainingConfig.__dataclass_fields__


def tiny_config(engine: str = "inprocess", **sections) -> ExperimentConfig:
    """Small synthetic NSL-KDD experiment with fairness metrics, deterministic on CPU."""
    base = {
        "data": {"name": "synthetic_nsl_kdd", "synthetic_samples": 600},
        "partition": {"num_clients": 6, "scheme": "iid"},
        "model": {"name": "nsl_kdd_mlp"},
        "strategy": {"name": "fedavg", "clients_per_round": 3, "ditto_epochs": 1},
        "training": {"rounds": 3, "local_epochs": 1, "batch_size": 32},
        "metrics": {"fairness": {"enabled": True}},
        "run": {"name": "t", "progress": False, "torch_threads": 1, "engine": engine, "device": "cpu"},
    }
    if SEQUENTIAL:
        base["training"]["vectorize"] = "off"  # the sequential client path, which a ClientApp runs
    for key, value in sections.items():
        base.setdefault(key, {}).update(value)
    return ExperimentConfig.from_dict(base)


def local_flower(monkeypatch):
    """Make ``run.engine: flower`` run on a :class:`LocalGrid` instead of Ray (fast, same code)."""
    from fltrust.engines.flower import engine as flower_engine

    def simulate(self, server_app, payload):
        self.local_grid = run_local(server_app, flower_engine.build_client_app(payload), self.fed.num_clients)

    monkeypatch.setattr(flower_engine.FlowerEngine, "_simulate", simulate)
    return flower_engine


FAIRNESS_KEYS = ("f_j", "f_g", "f_r", "f_o", "F_T")


def compare_runs(a, b) -> dict[str, float]:
    """Largest absolute differences between two reloaded runs (RunRecord) of one config.

    Checks the structure first: same rounds, same sampled clients, same metric keys. Timing
    (``train_time_s``) and the model hashes are not compared.
    """
    import numpy as np
    import torch

    assert [r.round for r in a.rounds] == [r.round for r in b.rounds]
    out = {"params": 0.0, "params_rel": 0.0, "client_metrics": 0.0, "server_metrics": 0.0, "confusion": 0.0,
           **{k: 0.0 for k in FAIRNESS_KEYS}}
    for ra, rb in zip(a.rounds, b.rounds):
        assert ra.client_ids.tolist() == rb.client_ids.tolist(), ra.round
        assert set(ra.client_metrics) == set(rb.client_metrics), (ra.round, sorted(ra.client_metrics), sorted(rb.client_metrics))
        assert set(ra.server_metrics) == set(rb.server_metrics), (ra.round, sorted(ra.server_metrics), sorted(rb.server_metrics))
        for key, value in ra.client_metrics.items():
            if key != "train_time_s" and value.size:
                out["client_metrics"] = max(out["client_metrics"], float(np.max(np.abs(value - rb.client_metrics[key]))))
        for key, value in ra.server_metrics.items():
            if key not in ("model_hash", "chain_hash"):
                out["server_metrics"] = max(out["server_metrics"], abs(float(value) - float(rb.server_metrics[key])))
        if ra.client_confusion is not None:
            out["confusion"] = max(out["confusion"], float(np.max(np.abs(ra.client_confusion - rb.client_confusion))))
        fa, fb = ra.observations.get("fairness"), rb.observations.get("fairness")
        assert (fa is None) == (fb is None), ra.round
        for key in FAIRNESS_KEYS if fa else ():
            out[key] = max(out[key], abs(float(fa[key]) - float(fb[key])))
    final_a = torch.load(a.path / "final_model.pt")
    final_b = torch.load(b.path / "final_model.pt")
    for key, value in final_a.items():
        diff = (value.double() - final_b[key].double()).abs()
        out["params"] = max(out["params"], float(diff.max()))
        out["params_rel"] = max(out["params_rel"], float((diff / value.double().abs().clamp_min(1e-3)).max()))
        # np.allclose(a, b, rtol=1e-5, atol=ATOL) holds iff this is <= ATOL
        out["params_beyond_rtol"] = max(out.get("params_beyond_rtol", 0.0),
                                        float((diff - 1e-5 * final_b[key].double().abs()).max()))
    return out


@pytest.fixture(name="local_flower")
def local_flower_fixture(monkeypatch):
    """Make ``run.engine: flower`` run on a :class:`LocalGrid` instead of Ray (fast, same code)."""
    return local_flower(monkeypatch)


@pytest.fixture(name="compare")
def compare_fixture():
    """:func:`compare_runs`."""
    return compare_runs
