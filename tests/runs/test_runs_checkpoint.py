"""Plain-data torch files (fltrust.runs.checkpoint): checkpoints round-trip bit for bit, and
anything but plain data is refused in one line."""

import numpy as np
import pytest


def test_plain_data_checkpoints_round_trip_bit_for_bit(tmp_path):
    from fltrust.runs import read_checkpoint, write_checkpoint

    state = {"global_params": [np.array([1.5, -0.0, np.nan], np.float32), np.arange(6, dtype=np.int64).reshape(2, 3)],
             "strategy": {"personal": {"3": [np.array([0.1], np.float64)]}}, "dp_history": {"0": [[1.1, 0.2, 3]]},
             "wall_time_s": np.float64(2.5), "round": 4, "identity": {"run_id": "x", "data_fingerprint": None}}
    write_checkpoint(tmp_path / "c.pt", state)
    back = read_checkpoint(tmp_path / "c.pt")
    for a, b in zip(state["global_params"], back["global_params"]):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    assert back["strategy"]["personal"]["3"][0].tobytes() == state["strategy"]["personal"]["3"][0].tobytes()
    assert back["dp_history"] == {"0": [[1.1, 0.2, 3]]} and back["wall_time_s"] == 2.5 and back["round"] == 4
    assert back["identity"] == state["identity"]


def test_what_is_not_plain_data_or_not_the_expected_shape_is_refused(tmp_path):
    import torch

    from fltrust.runs import RunFolderError, load_final_model, read_checkpoint

    path = tmp_path / "c.pt"
    torch.save({"global_params": [np.zeros(2)]}, path)  # a raw numpy array: a global fltrust never writes
    with pytest.raises(RunFolderError, match=r"c\.pt: not a plain-data checkpoint: it references numpy"):
        read_checkpoint(path)
    torch.save([torch.zeros(2)], path)
    with pytest.raises(RunFolderError, match=r"not an fltrust checkpoint \(a list, not a dict\)"):
        read_checkpoint(path)
    path.write_bytes(b"garbage")
    with pytest.raises(RunFolderError, match=r"c\.pt: unreadable checkpoint \("):
        read_checkpoint(path)

    torch.save({"layer.weight": torch.ones(2), "step": 3}, tmp_path / "final_model.pt")
    with pytest.raises(RunFolderError, match="not a model state_dict"):
        load_final_model(tmp_path / "final_model.pt")
    torch.save({"layer.weight": torch.ones(2)}, tmp_path / "final_model.pt")
    assert load_final_model(tmp_path / "final_model.pt")["layer.weight"].tolist() == [1.0, 1.0]
