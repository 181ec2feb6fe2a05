"""The run recorder (fltrust.runs.recorder): one chained line per round, and divergence."""

import json

import numpy as np
import pytest

from fltrust.core.params import chain_hash, params_hash
from fltrust.core.records import RoundRecord
from fltrust.runs import RunDiverged, RunFolder, RunRecorder, record_link


def test_each_round_is_one_line_chained_to_the_previous_one(tmp_path, monkeypatch):
    monkeypatch.delenv("FLTRUST_AUDIT_KEY", raising=False)
    monkeypatch.delenv("FLTRUST_AUDIT_KEY_FILE", raising=False)
    folder = RunFolder(tmp_path / "run")
    folder.path.mkdir()
    recorder = RunRecorder(folder, [])
    start, trained = [np.ones(3, np.float32)], [np.zeros(3, np.float32)]
    recorder.record_round(RoundRecord(round=0, client_ids=np.zeros(0, np.int64), global_params_after=start))
    stored = recorder.record_round(RoundRecord(round=1, client_ids=np.array([2]),
                                               client_metrics={"train_loss": np.array([0.5])},
                                               server_metrics={"aux_loss": 0.4}, global_params_after=trained))
    assert stored.global_params_after is None  # the stored record holds no parameters

    first, second = (json.loads(line) for line in folder.rounds.read_text().splitlines())
    first_link, second_link = first.pop("integrity")["link"], second.pop("integrity")["link"]
    assert first["server_metrics"]["chain_hash"] == chain_hash("", params_hash(start))
    assert second["server_metrics"]["chain_hash"] == chain_hash(first["server_metrics"]["chain_hash"],
                                                                params_hash(trained))
    assert first_link == record_link("", first)
    assert second_link == record_link(first_link, second) == recorder.record_head

    with pytest.raises(RunDiverged, match="training diverged at round 2: client"):
        recorder.record_round(RoundRecord(round=2, client_ids=np.array([2]),
                                          client_metrics={"train_loss": np.array([np.inf])},
                                          global_params_after=trained))
    assert len(folder.rounds.read_text().splitlines()) == 2  # nothing written for the broken round


def test_a_recorder_takes_a_plain_list_of_observers(tmp_path):
    """RunRecorder(folder, [observer]) wraps the list in an ObserverSet (it used to fail later with
    AttributeError: 'list' object has no attribute 'run_start')."""
    from fltrust.core.observers import BaseObserver, ObserverSet

    class Named(BaseObserver):
        name = "named"

    recorder = RunRecorder(RunFolder(tmp_path / "run"), [Named()])
    assert isinstance(recorder.observers, ObserverSet)
    assert [o.name for o in recorder.observers.observers] == ["named"]
