"""The adapter for anyone's Flower app: Message-API and legacy strategies, ClientReport, sinks.

Everything runs on the in-process :class:`conftest.LocalGrid` (no Ray): a user-style ClientApp
(its own training loop + ClientReport) and Flower's own strategies, observed by fltrust.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from flwr.app import Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp.strategy import FedAvg, FedMedian

from flower_testing import LocalGrid, tiny_config
from fltrust.core.evaluation import get_params
from fltrust.core.observers import BaseObserver
from fltrust.experiment import prepare_experiment
from fltrust.federation import sample_clients
from fltrust.flower import (
    ClientReport,
    ObservedLegacyStrategy,
    ObservedStrategy,
    ObserverSink,
    aux_evaluate_fn,
    params_to_arrays,
)
from fltrust.flower.adapter import partition_query_reply
from fltrust.engines.training import LocalTrainer

CFG = tiny_config(strategy={"clients_per_round": 3}, metrics={"trust": {"enabled": True}})


@pytest.fixture(scope="module")
def experiment():
    return prepare_experiment(CFG, device=torch.device("cpu"))


class Seen(BaseObserver):
    """Keeps what the observers were handed (the fairness observer runs before it)."""

    name = "seen"

    def __init__(self):
        self.records = []

    def on_round_end(self, record):
        self.records.append(record)
        return None


def user_client_app(experiment, *, legacy: bool = False) -> ClientApp:
    """A 'researcher's' ClientApp: own training loop, fltrust's ClientReport for the metrics."""
    fed = experiment.federation
    trainer = LocalTrainer(experiment.model, CFG.training, fed.bundle.num_classes, torch.device("cpu"))
    names = list(experiment.model.state_dict().keys())
    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        pid = int(context.node_config["partition-id"])
        x, y, x_val, y_val = fed.client_tensors(pid)
        received = msg.content["arrays"]
        report = ClientReport.for_model(experiment.model, x_val, y_val, partition_id=pid,
                                        num_classes=fed.bundle.num_classes)
        report.reward(received)
        params, loss = trainer.train(received.to_numpy_ndarrays(), x, y, epochs=1, seed=pid)
        metrics = report.finish(params, num_examples=len(y), num_batches=math.ceil(len(y) / 32), train_loss=loss)
        return Message(RecordDict({"arrays": params_to_arrays(params, names), "metrics": metrics}), reply_to=msg)

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        return partition_query_reply(msg, context)

    return app


def aux_fn(experiment):
    fed = experiment.federation
    trainer = LocalTrainer(experiment.model, CFG.training, fed.bundle.num_classes, torch.device("cpu"))

    def evaluate(params):
        result = trainer.evaluate(params, fed.x_aux, fed.y_aux)
        return result.loss, result.accuracy

    return evaluate


def test_any_message_api_strategy_gets_both_papers_metrics(experiment):
    seen = Seen()
    sink = ObserverSink(list(experiment.observers.observers) + [seen], experiment.run_info("adapter"))
    grid = LocalGrid(user_client_app(experiment), experiment.federation.num_clients)
    strategy = ObservedStrategy(FedAvg(fraction_train=0.5, fraction_evaluate=0.0, min_available_nodes=6,
                                       weighted_by_key="num-batches"), sink)
    initial = get_params(experiment.model)
    strategy.start(grid, params_to_arrays(initial, list(experiment.model.state_dict())), num_rounds=3,
                   evaluate_fn=aux_evaluate_fn(aux_fn(experiment)))
    assert [r.round for r in sink.records] == [0, 1, 2, 3]
    for before, record in zip(seen.records, seen.records[1:]):
        ids = record.client_ids.tolist()
        assert len(ids) == 3 and ids == sorted(ids)  # Flower sampled them; the adapter orders them
        assert record.client_confusion.shape == (3, 2, 2)
        assert record.client_metrics["num_batches"].tolist() == [math.ceil(n / 32) for n in record.client_metrics["num_samples"]]
        np.testing.assert_allclose(np.trace(record.client_confusion, axis1=1, axis2=2) / record.client_confusion.sum((1, 2)),
                                   record.client_metrics["accuracy"])
        assert record.server_metrics["aux_loss_before"] == before.server_metrics["aux_loss"]
        assert len(record.client_params) == 3 and record.global_params_before is not None
        fairness = record.observations["fairness"]
        assert 0 <= fairness["F_T"] <= 1 and fairness["client_ids"] == ids
    assert "selection_cv" in sink.records[-1].observations["trust"]
    summary = sink.finish(seen.records[-1].global_params_after, wall_time_s=1.0)
    assert summary["trust"]["trust_score"] is not None and 0 <= summary["trust"]["trust_score"] <= 1


def test_a_sampler_decides_who_trains(experiment):
    sink = ObserverSink([Seen()], experiment.run_info("sampler"))
    grid = LocalGrid(user_client_app(experiment), 6)
    strategy = ObservedStrategy(FedAvg(fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=1,
                                       min_available_nodes=1), sink,
                                sampler=lambda rnd: sample_clients(7, rnd, 6, 2))
    strategy.start(grid, params_to_arrays(get_params(experiment.model)), num_rounds=2,
                   evaluate_fn=aux_evaluate_fn(aux_fn(experiment)))
    for record in sink.records[1:]:
        assert record.client_ids.tolist() == sample_clients(7, record.round, 6, 2).tolist()
    queries = [m for m in grid.sent if m.metadata.message_type == "query"]
    assert len(queries) == 6  # the node -> partition map was discovered once
    with pytest.raises(ValueError, match="fraction_train=1.0"):
        ObservedStrategy(FedAvg(fraction_train=0.5), sink, sampler=lambda rnd: [0])


def test_integer_buffers_keep_their_dtype():
    """Flower's FedAvg/FedMedian return float64 for int64 buffers; the adapter casts them back."""

    class Sink:
        records = []

        def record_round(self, record):
            self.records.append(record)

    app = ClientApp()

    @app.train()
    def train(msg, context):
        pid = int(context.node_config["partition-id"])
        w, steps = msg.content["arrays"].to_numpy_ndarrays()
        metrics = MetricRecord({"partition-id": pid, "num-examples": 1 + pid})
        return Message(RecordDict({"arrays": params_to_arrays([w + pid, steps + 2 * pid + 1]), "metrics": metrics}),
                       reply_to=msg)

    for inner in (FedAvg(fraction_evaluate=0.0, min_available_nodes=3), FedMedian(fraction_evaluate=0.0, min_available_nodes=3)):
        sink = Sink()
        result = ObservedStrategy(inner, sink).start(
            LocalGrid(app, 3), params_to_arrays([np.zeros(2, np.float32), np.array(5, np.int64)]), num_rounds=1,
            evaluate_fn=lambda rnd, arrays: MetricRecord({"aux_loss": 1.0, "aux_accuracy": 0.5}))
        w, steps = sink.records[-1].global_params_after
        assert w.dtype == np.float32 and steps.dtype == np.int64
        assert result.arrays.to_numpy_ndarrays()[1].dtype == np.int64
        assert [s.dtype for s in sink.records[1].client_params[0]] == [np.float32, np.int64]


def test_client_errors_are_logged_or_raised(experiment, caplog):
    app = ClientApp()

    @app.train()
    def train(msg, context):
        raise RuntimeError("no data here")

    sink = ObserverSink([], experiment.run_info("errors"))
    strict = ObservedStrategy(FedAvg(fraction_evaluate=0.0, min_available_nodes=2), sink, strict=True)
    with pytest.raises(RuntimeError, match="no data here"):
        strict.start(LocalGrid(app, 2), params_to_arrays(get_params(experiment.model)), num_rounds=1)
    lenient = ObservedStrategy(FedAvg(fraction_evaluate=0.0, min_available_nodes=2), ObserverSink([], experiment.run_info("e")))
    lenient.start(LocalGrid(app, 2), params_to_arrays(get_params(experiment.model)), num_rounds=1)
    assert "2 client(s) failed" in caplog.text
    assert lenient.records[1].client_ids.size == 0


def test_client_report_values():
    model = torch.nn.Linear(3, 1)
    x = torch.tensor([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [1.0, 1.0, 1.0]])
    y = torch.tensor([0, 1, 1, 0])
    report = ClientReport.for_model(model, x, y, partition_id=4, num_classes=2)
    with pytest.raises(RuntimeError, match="reward"):
        report.finish(model.state_dict(), num_examples=10, num_batches=1, train_loss=0.5)
    zero = [np.zeros((1, 3), np.float32), np.zeros(1, np.float32)]  # logit 0 -> predicts class 0
    reward = report.reward(zero)
    assert reward.accuracy == 0.5 and report.bytes_received == 16
    ones = [np.ones((1, 3), np.float32), np.zeros(1, np.float32)]  # logit > 0 -> class 1 everywhere
    metrics = report.finish(ones, num_examples=10, num_batches=1, train_loss=0.25, extra={"qffl_loss": 0.7})
    assert isinstance(metrics, MetricRecord)
    assert metrics["partition-id"] == 4 and metrics["num-examples"] == 10 and metrics["num-batches"] == 1
    assert metrics["reward_accuracy"] == 0.5 and metrics["accuracy"] == 0.5 and metrics["qffl_loss"] == 0.7
    assert metrics["confusion"] == [0, 2, 0, 2] and metrics["val_samples"] == 4
    legacy = report.finish_legacy(ones, num_examples=10, num_batches=1, train_loss=0.25)
    assert json.loads(legacy["confusion"]) == [0, 2, 0, 2]


def test_legacy_strategy_api(experiment):
    """A legacy ServerApp (server_fn + flwr.server.strategy.FedAvg) and NumPyClient, observed."""
    from flwr.client import NumPyClient
    from flwr.server import ServerAppComponents, ServerConfig
    from flwr.server.strategy import FedAvg as LegacyFedAvg
    from flwr.serverapp import ServerApp

    fed = experiment.federation
    trainer = LocalTrainer(experiment.model, CFG.training, fed.bundle.num_classes, torch.device("cpu"))
    evaluate = aux_fn(experiment)

    class Client(NumPyClient):
        def __init__(self, pid):
            self.pid = pid

        def fit(self, parameters, config):
            x, y, x_val, y_val = fed.client_tensors(self.pid)
            report = ClientReport.for_model(experiment.model, x_val, y_val, partition_id=self.pid,
                                            num_classes=fed.bundle.num_classes)
            report.reward(parameters)
            params, loss = trainer.train(parameters, x, y, epochs=1, seed=self.pid)
            return params, len(y), report.finish_legacy(params, num_examples=len(y), num_batches=math.ceil(len(y) / 32),
                                                         train_loss=loss)

    client_app = ClientApp(client_fn=lambda context: Client(int(context.node_config["partition-id"])).to_client())
    sink = ObserverSink(list(experiment.observers.observers), experiment.run_info("legacy"))

    def server_fn(context):
        inner = LegacyFedAvg(fraction_fit=0.5, fraction_evaluate=0.0, min_available_clients=6,
                             initial_parameters=__import__("flwr").common.ndarrays_to_parameters(get_params(experiment.model)),
                             evaluate_fn=lambda rnd, params, config: (evaluate(params)[0], {"accuracy": evaluate(params)[1]}))
        return ServerAppComponents(strategy=ObservedLegacyStrategy(inner, sink), config=ServerConfig(num_rounds=2))

    ServerApp(server_fn=server_fn)(grid=LocalGrid(client_app, 6),
                                   context=Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={}))
    assert [r.round for r in sink.records] == [0, 1, 2]
    last = sink.records[-1]
    assert last.client_ids.tolist() == sorted(last.client_ids.tolist()) and len(last.client_ids) == 3
    assert last.client_confusion.shape == (3, 2, 2)
    assert {"aux_loss", "aux_accuracy", "aux_loss_before", "aux_accuracy_before"} <= set(last.server_metrics)
    assert 0 <= last.observations["fairness"]["F_T"] <= 1


def test_version_check(monkeypatch):
    import flwr

    from fltrust.flower import FlowerVersionError, require_flower

    assert require_flower().startswith("1.42.")
    monkeypatch.setattr(flwr, "__version__", "1.7.0")
    with pytest.raises(FlowerVersionError) as info:
        require_flower()
    message = str(info.value)
    assert "\n" not in message and "1.42" in message and "1.7.0" in message and info.value.exit_code == 2


def test_a_test_set_loss_taken_for_the_aux_loss_is_a_warning(caplog):
    """An evaluate_fn that returns Flower's usual 'loss' (not 'aux_loss') still feeds FedSV, but says so once."""

    class Sink:
        records = []

        def record_round(self, record):
            self.records.append(record)

    app = ClientApp()

    @app.train()
    def train(msg, context):
        metrics = MetricRecord({"partition-id": int(context.node_config["partition-id"]), "num-examples": 1})
        return Message(RecordDict({"arrays": msg.content["arrays"], "metrics": metrics}), reply_to=msg)

    sink = Sink()
    ObservedStrategy(FedAvg(fraction_evaluate=0.0, min_available_nodes=2), sink).start(
        LocalGrid(app, 2), params_to_arrays([np.zeros(2, np.float32)]), num_rounds=2,
        evaluate_fn=lambda rnd, arrays: MetricRecord({"loss": 0.5 + rnd, "accuracy": 0.25}))
    assert [r.server_metrics["aux_loss"] for r in sink.records] == [0.5, 1.5, 2.5]
    assert sink.records[2].server_metrics["aux_loss_before"] == 1.5
    assert caplog.text.count("taking it as the loss on the server's auxiliary set") == 1
