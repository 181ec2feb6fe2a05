"""Plain records (fltrust.core.records): JSON round trip, lookups and the label-count bookkeeping."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fltrust.core.io import to_plain
from fltrust.core.records import AppFacts, RoundRecord, RunInfo


def a_record() -> RoundRecord:
    """Round 2 of a 3-client federation with every field set (numpy types, as an engine builds it)."""
    return RoundRecord(
        round=2,
        client_ids=np.array([1, 4, 7], dtype=np.int64),
        client_metrics={"accuracy": np.array([0.5, 0.75, 1.0]), "num_samples": np.array([10.0, 20.0, 30.0])},
        client_confusion=np.array([[[1, 1], [0, 0]], [[2, 0], [1, 1]], [[0, 0], [0, 3]]]),
        server_metrics={"aux_loss": np.float32(0.25), "aux_accuracy": 0.875},
        client_params=[[np.ones(2)] for _ in range(3)],
        global_params_before=[np.zeros(2)],
        global_params_after=[np.ones(2)],
        observations={"fairness": {"F_T": np.float64(0.5), "gains": np.array([1.0, 2.0])}},
    )


# -- RoundRecord ----------------------------------------------------------------------------
def test_to_json_is_plain_json_without_the_model_parameters():
    # Execute
    data = a_record().to_json()
    text = json.dumps(data, allow_nan=False)  # plain types only: json would raise on numpy values

    # Assert: the persisted fields, in plain types; the transient parameters are dropped
    assert set(data) == {"round", "client_ids", "client_metrics", "client_confusion", "server_metrics", "observations"}
    assert json.loads(text) == {
        "round": 2,
        "client_ids": [1, 4, 7],
        "client_metrics": {"accuracy": [0.5, 0.75, 1.0], "num_samples": [10.0, 20.0, 30.0]},
        "client_confusion": [[[1, 1], [0, 0]], [[2, 0], [1, 1]], [[0, 0], [0, 3]]],
        "server_metrics": {"aux_loss": 0.25, "aux_accuracy": 0.875},  # float32(0.25) is exact
        "observations": {"fairness": {"F_T": 0.5, "gains": [1.0, 2.0]}},
    }


def test_json_round_trip_restores_values_and_dtypes():
    # Prepare: through JSON text, as rounds.jsonl stores it
    original = a_record()

    # Execute
    back = RoundRecord.from_json(json.loads(json.dumps(original.to_json())))

    # Assert
    assert back.round == 2
    assert back.client_ids.dtype == np.int64 and back.client_ids.tolist() == [1, 4, 7]
    assert back.client_metrics["accuracy"].dtype == np.float64
    np.testing.assert_array_equal(back.client_metrics["num_samples"], [10.0, 20.0, 30.0])
    assert back.client_confusion.dtype == np.int64
    np.testing.assert_array_equal(back.client_confusion, original.client_confusion)
    assert back.server_metrics == {"aux_loss": 0.25, "aux_accuracy": 0.875}
    assert back.observations == {"fairness": {"F_T": 0.5, "gains": [1.0, 2.0]}}
    # the parameters are not persisted: they come back empty
    assert back.client_params == [] and back.global_params_before is None and back.global_params_after is None
    assert back.to_json() == original.to_json()


def test_nan_is_stored_as_null_and_read_back_as_nan():
    # Prepare: an undefined accuracy (a client without validation samples) and an undefined notion
    record = RoundRecord(round=1, client_ids=np.array([0, 1]),
                         client_metrics={"accuracy": np.array([np.nan, 0.5])},
                         server_metrics={"epsilon": float("nan")})

    # Execute: what fltrust.runs writes (to_plain, allow_nan=False) and reads
    line = json.dumps(to_plain(record.to_json()), allow_nan=False)
    back = RoundRecord.from_json(json.loads(line))

    # Assert
    assert json.loads(line)["client_metrics"]["accuracy"] == [None, 0.5]
    assert np.isnan(back.client_metrics["accuracy"][0]) and back.client_metrics["accuracy"][1] == 0.5
    assert back.server_metrics == {"epsilon": None}


def test_from_json_defaults_for_round_zero_without_clients():
    # Round 0 (the initial model): no clients, no confusion, no observations key at all
    back = RoundRecord.from_json({"round": 0, "client_ids": [], "client_metrics": {}, "client_confusion": None})

    assert back.client_ids.shape == (0,) and back.client_ids.dtype == np.int64
    assert back.client_confusion is None and back.server_metrics == {} and back.observations == {}


def test_from_json_names_a_missing_field():
    with pytest.raises(KeyError, match="client_ids"):
        RoundRecord.from_json({"round": 1, "client_metrics": {}})


def test_confusion_is_stored_as_integers():
    # an engine that sums float confusion matrices: 3.0 is written as 3
    record = RoundRecord(round=1, client_ids=np.array([0]), client_confusion=np.array([[[3.0, 0.0], [1.0, 2.0]]]))
    assert record.to_json()["client_confusion"] == [[[3, 0], [1, 2]]]


def test_client_value_looks_up_by_client_id_not_position():
    record = a_record()

    # client 4 is at position 1: accuracy 0.75; client 7 at position 2: 30 samples
    assert record.client_value("accuracy", 4) == 0.75
    assert record.client_value("num_samples", 7) == 30.0
    assert isinstance(record.client_value("accuracy", 1), float)


def test_client_value_of_a_non_participant_names_the_client():
    with pytest.raises((KeyError, ValueError), match=r"client.*\b5\b"):
        a_record().client_value("accuracy", 5)


# -- AppFacts ---------------------------------------------------------------------------------
def test_app_facts_to_dict_is_plain():
    facts = AppFacts(name="app", model="Net", strategy="FedAvg",
                     strategy_params={"fraction_train": np.float32(0.5), "min_nodes": np.int64(2)},
                     learning_rate=0.01, local_epochs=1)

    data = facts.to_dict()

    assert data == {"name": "app", "model": "Net", "strategy": "FedAvg",
                    "strategy_params": {"fraction_train": 0.5, "min_nodes": 2}, "dataset_name": "",
                    "dataset_description": "", "preprocessing": "", "learning_rate": 0.01, "local_epochs": 1}
    assert type(data["strategy_params"]["min_nodes"]) is int
    json.dumps(data, allow_nan=False)


# -- RunInfo.record_client ------------------------------------------------------------------
def empty_info(num_clients: int = 3, num_classes: int = 0) -> RunInfo:
    return RunInfo("app", num_clients, 5, num_classes, np.zeros(num_clients), np.zeros((num_clients, num_classes)))


def test_record_client_fills_its_row_and_widens_the_table():
    # Prepare
    info = empty_info()

    # Execute: client 2 reports 2 labels, then client 0 reports 3 (K grows from 2 to 3)
    info.record_client(2, [4, 1])
    info.record_client(0, np.array([1, 0, 6]))

    # Assert: the earlier row is padded with 0; samples = row sums 7, 0, 5
    np.testing.assert_array_equal(info.client_class_counts, [[1, 0, 6], [0, 0, 0], [4, 1, 0]])
    np.testing.assert_array_equal(info.client_num_samples, [7, 0, 5])
    assert info.num_classes == 3


def test_record_client_keeps_a_wider_known_k_and_replaces_a_row():
    # Prepare: K = 4 known from the start
    info = empty_info(num_clients=2, num_classes=4)

    # Execute: a narrower report is padded; a second report of client 1 replaces the first
    info.record_client(1, [2, 2])
    info.record_client(1, [0, 3, 0, 1])

    # Assert
    np.testing.assert_array_equal(info.client_class_counts, [[0, 0, 0, 0], [0, 3, 0, 1]])
    np.testing.assert_array_equal(info.client_num_samples, [0, 4])
    assert info.num_classes == 4


def test_record_client_sizes_the_sample_counts_to_the_clients():
    # client_num_samples of the wrong length (an app that did not know C) is rebuilt with C entries
    info = RunInfo("app", 3, 1, 0, np.zeros(0), np.zeros((3, 0)))
    info.record_client(1, [2, 3])
    np.testing.assert_array_equal(info.client_num_samples, [0, 5, 0])


@pytest.mark.parametrize("client_id, counts, message", [
    (3, [1, 2], r"client id 3 is outside 0\.\.2 \(the run has 3 clients\)"),
    (-1, [1, 2], r"client id -1 is outside 0\.\.2"),
    (0, [1, -2], r"client 0's label counts \[1\.0, -2\.0\] must be non-negative numbers"),
    (1, [1, float("nan")], r"client 1's label counts .* must be non-negative numbers"),
    (2, [], r"client 2's label counts \[\] must be non-negative numbers"),
])
def test_record_client_rejects_bad_reports_in_one_line(client_id, counts, message):
    info = empty_info()
    with pytest.raises(ValueError, match=message) as caught:
        info.record_client(client_id, counts)
    assert "\n" not in str(caught.value)
    # nothing was recorded
    assert info.client_class_counts.shape == (3, 0) and info.client_num_samples.tolist() == [0, 0, 0]
