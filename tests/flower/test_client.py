"""ClientReport (fltrust.flower.client): what a client sends, where it travels, on which device it is measured.

An evaluation stand-in makes every reported value known in advance: the accuracy of a model is the
first entry of its first array, its loss 1 - accuracy, its confusion matrix a fixed one.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from flwr.app import ArrayRecord, ConfigRecord, MetricRecord, RecordDict
from torch import nn

from fltrust.core.evaluation import EvalResult
from fltrust.flower import ClientReport, params_to_arrays
from fltrust.flower.records import client_values

CONFUSION = np.array([[1, 0], [1, 2]])  # 4 validation samples, 3 correct


def by_first_entry(params) -> EvalResult:
    accuracy = float(np.asarray(params[0]).ravel()[0])
    return EvalResult(loss=1.0 - accuracy, accuracy=accuracy, confusion=CONFUSION, num_samples=4)


def model_of(value: float, dtype=np.float32) -> list[np.ndarray]:
    """A (2, 3) weight filled with ``value`` and a zero bias of 3: 6 + 3 entries."""
    return [np.full((2, 3), value, dtype=dtype), np.zeros(3, dtype=dtype)]


def test_finish_reports_reward_before_and_accuracy_after_training():
    # Prepare
    report = ClientReport(by_first_entry, partition_id=3)

    # Execute: received model "accuracy 0.25", trained model "accuracy 0.75" sent in float64
    report.reward(model_of(0.25))
    metrics = report.finish(model_of(0.75, np.float64), num_examples=40, num_batches=2, train_loss=0.125,
                            extra={"qffl_loss": np.float32(0.5)})

    # Assert
    assert isinstance(metrics, MetricRecord)
    values = dict(metrics)
    assert values.pop("train_time_s") >= 0.0
    assert values == {
        "partition-id": 3, "num-examples": 40, "num-batches": 2, "val_samples": 4,
        "reward_accuracy": 0.25, "reward_loss": 0.75,   # the received model, before training
        "accuracy": 0.75, "loss": 0.25,                  # the trained model
        "train_loss": 0.125,
        "bytes_received": 36,                            # 9 float32 entries
        "bytes_sent": 72,                                # 9 float64 entries
        "qffl_loss": 0.5,
        "confusion": [1, 0, 1, 2],                       # row-major K x K
    }


def test_the_performance_model_is_measured_but_the_sent_model_is_counted():
    # Ditto: the personal model (0.9) is the client's performance; the global track (0.6) is sent
    report = ClientReport(by_first_entry, partition_id=0)
    report.reward(model_of(0.1))
    values = dict(report.finish(model_of(0.6), num_examples=1, num_batches=1, train_loss=0.0,
                                performance=model_of(0.9, np.float64)))
    assert values["accuracy"] == pytest.approx(0.9) and values["loss"] == pytest.approx(0.1)
    assert values["bytes_sent"] == 36  # the float32 global-track model, not the float64 personal one


def test_without_a_partition_id_the_server_numbers_the_clients():
    report = ClientReport(by_first_entry, partition_id=None)
    report.reward(model_of(0.5))
    assert "partition-id" not in report.finish(model_of(0.5), num_examples=1, num_batches=1, train_loss=0.0)


def test_finish_before_reward_is_an_error_naming_the_order():
    with pytest.raises(RuntimeError, match=r"call ClientReport\.reward\(received\) before training"):
        ClientReport(by_first_entry, partition_id=0).finish(model_of(0.5), num_examples=1, num_batches=1,
                                                            train_loss=0.0)


def test_legacy_report_is_scalars_only():
    # Prepare
    report = ClientReport(by_first_entry, partition_id=2)
    report.reward(model_of(0.5))

    # Execute: the legacy NumPyClient.fit metrics (no batch count known)
    values = report.finish_legacy(model_of(0.75), num_examples=8, num_batches=None, train_loss=0.5)

    # Assert: every value a scalar (the legacy API's rule), the confusion matrix as JSON text
    assert all(isinstance(v, (int, float, str)) for v in values.values())
    assert json.loads(values["confusion"]) == [1, 0, 1, 2]
    assert "num-batches" not in values and values["num-examples"] == 8 and values["accuracy"] == 0.75


@pytest.mark.parametrize("form", ["list", "state_dict", "array_record"])
def test_the_received_model_may_come_in_any_form(form):
    # Prepare
    params = model_of(0.25)
    received = {
        "list": params,
        "state_dict": {"weight": torch.from_numpy(params[0]), "bias": torch.from_numpy(params[1])},
        "array_record": params_to_arrays(params),
    }[form]
    seen = []
    report = ClientReport(lambda p: (seen.append(p), by_first_entry(p))[1], partition_id=0)

    # Execute
    result = report.reward(received)

    # Assert: the evaluation got numpy arrays; 9 float32 entries = 36 bytes
    assert result.accuracy == 0.25 and report.bytes_received == 36
    assert all(isinstance(p, np.ndarray) for p in seen[0]) and [p.shape for p in seen[0]] == [(2, 3), (3,)]


# -- attach: fltrust's report travels beside the app's own metrics ------------------------------------------
def attached_report(train_facts: dict) -> ClientReport:
    report = ClientReport(by_first_entry, partition_id=1)
    report.model = nn.Linear(3, 2)
    with torch.no_grad():
        report.model.weight.fill_(0.75)
        report.model.bias.zero_()
    report.train_facts = train_facts
    report.reward(model_of(0.25))
    return report


def test_attach_puts_the_report_and_the_label_counts_beside_the_apps_metrics():
    # Prepare: the app's own reply
    report = attached_report({"num_examples": 6, "num_batches": 2, "label_counts": [1, 0, 5], "num_partitions": 4})
    app_metrics = MetricRecord({"train_loss": 0.4, "my_metric": 1.0})
    content = RecordDict({"arrays": ArrayRecord(report.model.state_dict()), "metrics": app_metrics})

    # Execute
    out = report.attach(content)

    # Assert: the same content, one ConfigRecord added
    assert out is content and set(content.keys()) == {"arrays", "metrics", "fltrust"}
    assert isinstance(content["fltrust"], ConfigRecord)
    values = dict(content["fltrust"])
    assert values["label_counts"] == [1, 0, 5] and values["num-partitions"] == 4 and values["partition-id"] == 1
    assert values["num-examples"] == 6 and values["num-batches"] == 2
    assert values["accuracy"] == 0.75 and values["reward_accuracy"] == 0.25
    assert values["train_loss"] == 0.4  # read from the app's MetricRecord
    assert values["bytes_sent"] == 4 * (6 + 2)  # the trained Linear(3, 2) in float32
    # the app's MetricRecord -- what its strategy aggregates -- holds none of fltrust's per-client keys
    assert dict(content["metrics"]) == {"train_loss": 0.4, "my_metric": 1.0}


def test_attach_without_a_training_loss_reports_nan():
    report = attached_report({"num_examples": 3, "num_batches": None, "label_counts": [3]})
    content = report.attach(RecordDict({"arrays": ArrayRecord(report.model.state_dict())}))
    values = dict(content["fltrust"])
    assert math.isnan(values["train_loss"]) and "num-batches" not in values and "num-partitions" not in values


def test_attach_needs_a_report_made_by_client_report():
    report = ClientReport(by_first_entry, partition_id=0)
    report.reward(model_of(0.5))
    message = r"ClientReport\.attach is for reports made by fltrust\.flower\.client_report"
    with pytest.raises(RuntimeError, match=message):
        report.attach(RecordDict({}))


def test_label_counts_are_bookkeeping_not_client_metrics():
    # what the server's strategy keeps of the report as per-round client metrics (scalars, renamed)
    report = attached_report({"num_examples": 6, "num_batches": 2, "label_counts": [1, 0, 5]})
    values = dict(report.attach(RecordDict({"arrays": ArrayRecord(report.model.state_dict())}))["fltrust"])
    kept = client_values(values)
    assert "label_counts" not in kept and "confusion" not in kept and "partition-id" not in kept
    assert kept["num_samples"] == 6 and kept["num_batches"] == 2


# -- for_model: evaluation on the model's device ---------------------------------------------------------------
def test_for_model_evaluates_a_parameterless_model_on_the_cpu():
    """nn.Flatten on 2 features: the logits are the inputs. Rows (2, 1), (0, 3), (5, 4) predict 0, 1, 0;
    labels 0, 1, 1 -> 2 of 3 correct, confusion [[1, 0], [1, 1]]; the loss is the mean cross-entropy
    log(1 + e^(1 - 2)) + log(1 + e^(0 - 3)) + log(1 + e^(5 - 4)) = 0.3132617 + 0.0485874 + 1.3132617,
    divided by 3 = 0.5583703."""
    x = torch.tensor([[2.0, 1.0], [0.0, 3.0], [5.0, 4.0]])
    y = torch.tensor([0, 1, 1])
    report = ClientReport.for_model(nn.Flatten(), x, y, partition_id=0, num_classes=2)

    result = report.reward([])

    assert result.accuracy == pytest.approx(2 / 3) and report.bytes_received == 0
    np.testing.assert_array_equal(result.confusion, [[1, 0], [1, 1]])
    expected = (math.log1p(math.exp(-1)) + math.log1p(math.exp(-3)) + math.log1p(math.exp(1))) / 3
    assert result.loss == pytest.approx(expected, abs=1e-6) and expected == pytest.approx(0.5583703, abs=1e-6)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_for_model_follows_the_model_to_the_gpu_and_back():
    # Prepare: CPU validation tensors, a model that starts on the GPU
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = torch.randn(16, 3), torch.randint(0, 2, (16,))
    params = [p.detach().numpy().copy() for p in model.state_dict().values()]
    cpu_result = ClientReport.for_model(model, x, y, partition_id=0, num_classes=2).reward(params)
    report = ClientReport.for_model(model.cuda(), x, y, partition_id=0, num_classes=2)

    # Execute: evaluated on the GPU, then again after the model moved back to the CPU
    on_gpu = report.reward(params)
    model.cpu()
    back = report.evaluate(params)

    # Assert: same predictions wherever it ran
    for result in (on_gpu, back):
        np.testing.assert_array_equal(result.confusion, cpu_result.confusion)
        assert result.loss == pytest.approx(cpu_result.loss, rel=1e-5)
