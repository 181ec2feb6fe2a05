"""The Message-API strategies: q-FedAvg (both variants) against fltrust's and Flower 1.7's legacy
formula, Ditto's personal-model store, and the config -> Flower strategy mapping."""

from __future__ import annotations

import numpy as np
import pytest
from flwr.app import ConfigRecord, Message, MetricRecord, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.supercore.task_identity import TaskIdentity

from flower_testing import LocalGrid, tiny_config
from fltrust.algorithms.aggregation import qffl_aggregate
from fltrust.algorithms.privacy import CentralNoise
from fltrust.algorithms.strategies import Ditto as Ditto_
from fltrust.algorithms.strategies import FedAvg, build_strategy
from fltrust.config import ConfigError
from fltrust.engines.flower.strategies import Ditto, QFedAvg, build_flower_strategy
from fltrust.flower import params_to_arrays
from fltrust.flower.records import arrays_to_params
from fltrust.models import build_model

TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, SUPERLINK_NODE_ID


def replies(param_sets, losses, key="qffl_loss"):
    out = []
    for node, (params, loss) in enumerate(zip(param_sets, losses)):
        instruction = Message(RecordDict(), dst_node_id=100 + node, message_type="train")
        metrics = MetricRecord({"partition-id": node, "num-examples": 10 + node, key: float(loss)})
        out.append(Message(RecordDict({"arrays": params_to_arrays(params), "metrics": metrics}), reply_to=instruction))
    return out


@pytest.fixture(scope="module")
def models():
    rng = np.random.default_rng(0)
    model = build_model("nsl_kdd_mlp", (122,), 2)
    global_params = [v.detach().numpy().copy() for v in model.state_dict().values()]
    clients = [[(p + rng.normal(0, 0.01, p.shape)).astype(np.float32) for p in global_params] for _ in range(5)]
    return global_params, clients, rng.uniform(0.001, 0.05, 5)


@pytest.mark.parametrize("q", [0.1, 1.0, 5.0])
def test_flowers_message_api_qfedavg_is_qffl(models, q):
    """Flower 1.42's QFedAvg with each client's own loss == fltrust's qffl_aggregate (float32 rounding)."""
    global_params, clients, losses = models
    strategy = QFedAvg(0.05, q, variant="qffl")
    strategy.current_arrays = params_to_arrays(global_params)
    arrays, _ = strategy.aggregate_train(1, replies(clients, losses))
    ours = qffl_aggregate(global_params, clients, losses, q=q, learning_rate=0.05)
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(arrays_to_params(arrays), ours))
    assert diff < 1e-7  # measured 3.7e-9 on this model


@pytest.mark.parametrize("q", [0.1, 1.0])
def test_flower_legacy_variant_is_flower_17s_qfedavg(models, q):
    """variant='flower_legacy' == flwr.server.strategy.QFedAvg (the fairness authors' Flower 1.7
    strategy), whose aggregate_fit uses ONE central loss from the server's evaluate function."""
    from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
    from flwr.server.strategy import QFedAvg as LegacyQFedAvg

    global_params, clients, _ = models
    central = 0.0321
    legacy = LegacyQFedAvg(q_param=q, qffl_learning_rate=0.05, evaluate_fn=lambda rnd, params, config: (central, {}))
    legacy.pre_weights = global_params
    results = [(None, FitRes(Status(Code.OK, ""), ndarrays_to_parameters(c), 10, {})) for c in clients]
    expected, _ = legacy.aggregate_fit(1, results, [])
    strategy = QFedAvg(0.05, q, variant="flower_legacy", central_loss=lambda rnd, arrays: central)
    strategy.current_arrays = params_to_arrays(global_params)
    arrays, _ = strategy.aggregate_train(1, replies(clients, [9.9] * 5))  # the clients' losses are ignored
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(arrays_to_params(arrays), parameters_to_ndarrays(expected)))
    assert diff < 1e-6  # Flower 1.7 returned float64 models; fltrust keeps float32


def test_qfedavg_handles_integer_buffers(models):
    global_params, clients, losses = models
    with_int = [global_params + [np.array(7, np.int64)], [c + [np.array(9, np.int64)] for c in clients]]
    strategy = QFedAvg(0.05, 1.0, variant="qffl")
    strategy.current_arrays = params_to_arrays(with_int[0])
    arrays, _ = strategy.aggregate_train(1, replies(with_int[1], losses))
    expected = qffl_aggregate(with_int[0], with_int[1], losses, q=1.0, learning_rate=0.05)
    got = arrays_to_params(arrays)
    assert got[-1].dtype == np.int64 and got[-1] == expected[-1]
    np.testing.assert_allclose(got[0], expected[0], atol=1e-7)


def test_qfedavg_variant_checks():
    with pytest.raises(ValueError, match="central_loss"):
        QFedAvg(0.1, variant="flower_legacy")
    with pytest.raises(ValueError, match="variant"):
        QFedAvg(0.1, variant="paper")


def test_ditto_keeps_personal_models_on_the_server():
    from flwr.clientapp import ClientApp

    app = ClientApp()
    seen = {}

    @app.train()
    def train(msg, context):
        pid = int(context.node_config["partition-id"])
        seen[pid] = "personal" in msg.content.array_records
        w = msg.content["arrays"].to_numpy_ndarrays()[0]
        content = RecordDict({"arrays": params_to_arrays([w + 1]), "personal": params_to_arrays([w + 100 + pid]),
                              "metrics": MetricRecord({"partition-id": pid, "num-examples": 1})})
        return Message(content, reply_to=msg)

    grid = LocalGrid(app, 2)
    ditto = Ditto(fraction_evaluate=0.0, min_available_nodes=2)
    arrays = params_to_arrays([np.zeros(1, np.float32)])
    for rnd in (1, 2):
        messages = ditto.configure_train(rnd, arrays, ConfigRecord(), grid)
        assert all(m.content["config"]["ditto-personal"] == "server" for m in messages)
        arrays, _ = ditto.aggregate_train(rnd, grid.send_and_receive(messages))
        assert seen == {0: rnd > 1, 1: rnd > 1}
    assert arrays_to_params(arrays)[0].tolist() == [2.0]  # FedAvg of the global track only
    assert {n: arrays_to_params(p)[0].tolist() for n, p in ditto.personal.items()} == {1000: [101.0], 1001: [102.0]}
    client_side = Ditto(fraction_evaluate=0.0, min_available_nodes=2, personal_store="client")
    messages = client_side.configure_train(1, arrays, ConfigRecord(), grid)
    assert all("personal" not in m.content.array_records for m in messages)


@pytest.mark.parametrize("strategy,expected", [
    ({"name": "fedavg"}, "FedAvg"), ({"name": "fedprox", "proximal_mu": 0.1}, "FedProx"),
    ({"name": "fedmedian"}, "FedMedian"), ({"name": "qfedavg"}, "QFedAvg"), ({"name": "ditto"}, "Ditto"),
])
def test_config_to_flower_strategy(strategy, expected):
    def flower(settings):
        cfg = tiny_config(strategy=settings)
        built = build_strategy(cfg.strategy, local_epochs=1, clients_per_round=cfg.clients_per_round())
        return build_flower_strategy(built, clients_per_round=3, seed=0, central_loss=lambda r, a: 0.1)

    built = flower(strategy)
    assert type(built).__name__ == expected
    assert built.fraction_train == 1.0 and built.fraction_evaluate == 0.0 and built.min_train_nodes == 3
    assert built.weighted_by_key == "num-examples"
    assert flower({**strategy, "weighting": "batches"}).weighted_by_key == "num-batches"


def test_a_strategy_without_a_flower_counterpart_is_one_line():
    class Mine(FedAvg):  # a subclass may change the rule: it needs its own entry
        name = "mine"

    with pytest.raises(ConfigError, match=r"strategy.name='mine' has no Flower counterpart .*set run.engine=inprocess"):
        build_flower_strategy(Mine(), clients_per_round=3, seed=0)


def test_server_dp_wraps_flowers_fixed_clipping():
    from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping

    built = build_flower_strategy(Ditto_(), clients_per_round=3, seed=0, central_noise=CentralNoise(2.0, 0.3))
    assert isinstance(built, DifferentialPrivacyServerSideFixedClipping)
    assert built.clipping_norm == 2.0 and built.noise_multiplier == 0.3 and built.num_sampled_clients == 3
    assert built.strategy.weighted_by_key == "unit-weight"  # clipped updates averaged with equal weights
    assert built.strategy.personal_store == "client"  # Flower's wrapper clips every ArrayRecord of a reply
