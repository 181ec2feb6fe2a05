"""Experiments 1-3 without FEMNIST's Normalize transform (fltrust.repro.trust.normalize).

The runs read the synthetic FEMNIST stand-in (an empty data root), so this file needs no data files.
"""

from __future__ import annotations

import json

import pytest

from fltrust.repro.trust import experiments as te
from fltrust.repro.trust import normalize as tn
from fltrust.repro.trust import run as trun


@pytest.mark.slow
def test_a_run_without_the_transform_has_its_own_run_id_and_becomes_a_record(tmp_path):
    # Prepare: the configuration the committed experiment 1 runs with
    normalized = te.experiment_config("exp1", quick=True, device="cpu", data_dir=tmp_path)
    assert normalized.data.normalize is not None

    # Execute
    run = trun.run_trust_experiment("exp1", modes=["prototype"], quick=True, device="cpu", out_dir=tmp_path / "runs",
                                    data_dir=tmp_path, overrides={"data.normalize": None})
    path = tn.write_without_normalize([run.record.path], tmp_path)

    # Assert: another configuration (so another run id), recorded per round and per mode
    assert run.record.config["data"]["normalize"] is None
    assert run.record.path.name != normalized.run_id()
    saved = json.loads(path.read_text())
    (entry,) = saved["runs"]
    assert entry["experiment"] == "exp1" and entry["run_id"] == run.record.path.name
    assert len(entry["aux_accuracy"]) == len(run.record.rounds)
    assert entry["modes"]["prototype"]["trust_score"] == pytest.approx(run.reports["prototype"].trust_score)
    assert tn.load_without_normalize(tmp_path) == saved
    # the committed experiment's own folder is not a run without the transform
    with pytest.raises(ValueError, match="data.normalize is set"):
        tn.without_normalize_record(trun.run_trust_experiment("exp1", modes=["prototype"], quick=True, device="cpu",
                                                              out_dir=tmp_path / "runs", data_dir=tmp_path).record.path)
