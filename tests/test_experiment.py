"""fltrust.experiment: one process per run folder, divergence, honest skipping, engine-neutral layering."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fltrust.config import ExperimentConfig
from fltrust.experiment import run_experiment, run_id_for
from fltrust.runs import RunFolder, RunFolderError, load_run

REPO = Path(__file__).resolve().parents[1]


def tiny(**sections) -> ExperimentConfig:
    data = {
        "data": {"name": "synthetic_nsl_kdd", "synthetic_samples": 300},
        "partition": {"num_clients": 4, "aux_max_samples": 60},
        "strategy": {"name": "fedavg", "clients_per_round": 2},
        "training": {"rounds": 2, "local_epochs": 1},
        "run": {"name": "t", "progress": False, "device": "cpu"},
    }
    for key, value in sections.items():
        data.setdefault(key, {}).update(value)
    return ExperimentConfig.from_dict(data)


def test_a_held_run_folder_gives_one_line_naming_the_holder(tmp_path):
    cfg = tiny()
    folder = tmp_path / cfg.run_id()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from fltrust.runs import RunFolder, locked\n"
         "with locked(RunFolder(Path(sys.argv[1]))):\n    print('held', flush=True); time.sleep(60)\n",
         str(folder)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunFolderError) as info:
            run_experiment(cfg, out_dir=tmp_path)
        message = str(info.value)
        assert f"pid {holder.pid}" in message and "\n" not in message
        assert not (folder / "summary.json").exists()
    finally:
        holder.kill()
        holder.wait(timeout=10)
    # the OS released the lock with the process: the run now goes through
    assert run_experiment(cfg, out_dir=tmp_path).status == "complete"
    assert not (folder / ".holder.json").exists()


def test_a_diverging_run_is_stopped_and_recorded_as_diverged(tmp_path, capsys):
    cfg = tiny(training={"optimizer": "sgd", "learning_rate": 1.0e6, "rounds": 3},
               metrics={"fairness": {"enabled": True}})
    record = run_experiment(cfg, out_dir=tmp_path)
    assert record.status == "diverged"
    k = record.summary["diverged_round"]
    assert 1 <= k <= 3
    assert "DIVERGED" in capsys.readouterr().out
    # no metric was computed from the broken model, and the finite rounds are kept
    assert [r.round for r in record.rounds] == list(range(k + 1))
    assert "fairness" not in record.rounds[-1].observations
    assert "observers" not in record.summary
    text = record.describe()  # printing a record with missing values never crashes
    assert "DIVERGED" in text and "n/a" in text
    # the record is not complete, so it is never skipped as if it were
    assert not RunFolder(record.path).is_complete(cfg.training.rounds)


def test_a_record_with_missing_rounds_is_not_complete(tmp_path, capsys):
    cfg = tiny()
    record = run_experiment(cfg, out_dir=tmp_path)
    folder = RunFolder(record.path)
    assert folder.is_complete(2)
    lines = folder.rounds.read_text().splitlines()
    folder.rounds.write_text("\n".join(lines[:-1]) + "\n")  # a round lost
    assert not folder.is_complete(2)
    again = run_experiment(cfg, out_dir=tmp_path)
    assert "rerunning" in capsys.readouterr().out
    assert [r.round for r in again.rounds] == [0, 1, 2]


def test_a_complete_run_is_skipped_with_a_visible_line(tmp_path, capsys):
    cfg = tiny()
    first = run_experiment(cfg, out_dir=tmp_path)
    capsys.readouterr()
    second = run_experiment(cfg, out_dir=tmp_path)
    out = capsys.readouterr().out
    assert out.startswith(f"skipped {first.run_id}: already complete in {first.path}")
    assert second.summary == first.summary


def test_a_record_made_from_other_data_is_rerun(tmp_path, capsys):
    cfg = tiny()
    record = run_experiment(cfg, out_dir=tmp_path)
    dataset = json.loads((record.path / "dataset.json").read_text())
    assert dataset["fingerprint"] == record.summary["data_fingerprint"]
    dataset["fingerprint"] = "0123456789ab"  # as if the files had changed since
    (record.path / "dataset.json").write_text(json.dumps(dataset))
    capsys.readouterr()
    run_experiment(cfg, out_dir=tmp_path)
    assert "made from other data" in capsys.readouterr().out


def test_synthetic_fallback_gets_its_own_run_id(tmp_path):
    cfg = ExperimentConfig.from_dict({
        "data": {"name": "nsl_kdd", "root": str(tmp_path / "empty"), "allow_synthetic_fallback": True,
                 "synthetic_samples": 300},
        "partition": {"num_clients": 4, "aux_max_samples": 60},
        "strategy": {"clients_per_round": 2}, "training": {"rounds": 1},
        "run": {"name": "fb", "progress": False, "device": "cpu"}})
    with pytest.warns(UserWarning, match="SYNTHETIC"):
        record = run_experiment(cfg, out_dir=tmp_path / "runs")
    assert record.summary["synthetic"] and "-synthetic-" in record.run_id
    assert record.run_id != cfg.run_id()


def test_interrupted_writes_leave_no_temporary_files_after_the_next_run(tmp_path):
    cfg = tiny()
    folder = tmp_path / cfg.run_id()
    folder.mkdir(parents=True)
    (folder / ".rounds.jsonl.x1.tmp").write_text("half")
    run_experiment(cfg, out_dir=tmp_path)
    assert not list(folder.glob(".*.tmp"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


@pytest.mark.parametrize("package", ["metrics", "trust"])
def test_metrics_never_import_an_engine(package):
    for path in (REPO / "fltrust" / package).rglob("*.py"):
        bad = {m for m in _imports(path) if m.startswith(("fltrust.fl", "fltrust.flower", "fltrust.experiment"))}
        assert not bad, f"{path} imports {bad}"


@pytest.mark.parametrize("package", ["fl", "flower"])
def test_engines_never_import_a_metric(package):
    for path in (REPO / "fltrust" / package).rglob("*.py"):
        bad = {m for m in _imports(path) if m.startswith(("fltrust.metrics", "fltrust.trust", "fltrust.experiment"))}
        assert not bad, f"{path} imports {bad}"


def test_core_imports_nothing_else_of_fltrust():
    for path in (REPO / "fltrust" / "core").rglob("*.py"):
        bad = {m for m in _imports(path) if m.startswith("fltrust.") and not m.startswith("fltrust.core")}
        assert not bad, f"{path} imports {bad}"


def test_run_id_for_real_data_is_the_config_run_id():
    cfg = tiny()

    class Bundle:
        synthetic = False

    assert run_id_for(cfg, Bundle()) == cfg.run_id()
