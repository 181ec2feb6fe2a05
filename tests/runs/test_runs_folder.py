"""Run folders (fltrust.runs.folder): atomic writes, completeness and reloading."""

import json
import math

import numpy as np
import pytest

from fltrust.core.io import atomic_write_json, atomic_write_text
from fltrust.core.records import RoundRecord
from fltrust.runs import RunFolder, load_run


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    atomic_write_text(tmp_path / "a.txt", "one")
    atomic_write_text(tmp_path / "a.txt", "two")
    assert (tmp_path / "a.txt").read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_round_record_json_round_trip():
    record = RoundRecord(
        round=2,
        client_ids=np.array([1, 4]),
        client_metrics={"accuracy": np.array([0.5, 0.75])},
        client_confusion=np.array([[[1, 0], [1, 2]], [[2, 0], [0, 2]]]),
        server_metrics={"aux_loss": 0.3},
        observations={"fairness": {"f_j": math.nan, "phi": [0.1, -0.2]}},
    )
    back = RoundRecord.from_json(json.loads(json.dumps(record.to_json())))
    assert back.client_ids.tolist() == [1, 4]
    assert back.client_metrics["accuracy"].tolist() == [0.5, 0.75]
    assert back.client_confusion.shape == (2, 2, 2)
    assert back.observations["fairness"] == {"f_j": None, "phi": [0.1, -0.2]}
    assert back.client_value("accuracy", 4) == 0.75


def test_load_run_names_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.yaml"):
        load_run(tmp_path)


def test_incomplete_summary_is_not_complete(tmp_path):
    folder = RunFolder(tmp_path)
    assert not folder.is_complete()
    folder.summary.write_text("{not json")
    assert not folder.is_complete()
    atomic_write_json(folder.summary, {"status": "complete"})
    assert folder.is_complete()
