"""The one atomic-write helper and the JSON conversion (fltrust.core.io)."""

import json

import numpy as np
import pytest

from fltrust.core.io import atomic_write, atomic_write_json, remove_stale_temporaries, stale_temporaries, to_plain


def test_failed_write_keeps_the_old_file(tmp_path):
    atomic_write_json(tmp_path / "r.json", {"ok": 1})

    def broken(handle):
        handle.write(b"{half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        atomic_write(tmp_path / "r.json", broken)
    assert json.loads((tmp_path / "r.json").read_text()) == {"ok": 1}
    assert len(list(tmp_path.iterdir())) == 1


def test_json_nan_becomes_null(tmp_path):
    atomic_write_json(tmp_path / "n.json", {"x": float("nan"), "y": np.float32(2.5), "z": np.arange(2)})
    assert json.loads((tmp_path / "n.json").read_text()) == {"x": None, "y": 2.5, "z": [0, 1]}


def test_to_plain_converts_numpy_and_objects():
    assert to_plain({1: np.int64(3), "b": (np.bool_(True), np.inf)}) == {"1": 3, "b": [True, None]}
    assert to_plain(tmp := object()) == str(tmp)


def test_stale_temporaries_are_found_and_removed(tmp_path):
    (tmp_path / ".rounds.jsonl.abc.tmp").write_text("x")
    (tmp_path / "rounds.jsonl").write_text("{}")
    assert [p.name for p in stale_temporaries(tmp_path)] == [".rounds.jsonl.abc.tmp"]
    assert remove_stale_temporaries(tmp_path) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["rounds.jsonl"]


def test_written_files_get_the_usual_permissions(tmp_path):
    import os
    import stat

    umask = os.umask(0)
    os.umask(umask)
    atomic_write_json(tmp_path / "p.json", {})
    assert stat.S_IMODE((tmp_path / "p.json").stat().st_mode) == 0o666 & ~umask
