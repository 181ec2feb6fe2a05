"""End-to-end runs of the in-process engine: every strategy, each dataset family, resume, records."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fltrust.config import ExperimentConfig
from fltrust.experiment import run_experiment
from fltrust.core.observers import BaseObserver
from fltrust.runs import load_run


def tiny(**sections) -> ExperimentConfig:
    base = {"run": {"name": "t", "torch_threads": None, "device": "auto"}}
    for key, value in sections.items():
        base.setdefault(key, {}).update(value)
    return ExperimentConfig.tiny(**base)


class Recorder(BaseObserver):
    name = "recorder"

    def __init__(self):
        self.rounds, self.params_seen = [], []

    def on_round_end(self, record):
        self.rounds.append(record.round)
        self.params_seen.append(len(record.client_params))
        return {"n_clients": len(record.client_ids)}


@pytest.mark.parametrize("strategy", ["fedavg", "fedprox", "qfedavg", "ditto", "fedmedian"])
def test_every_strategy_runs_and_records(tmp_path, strategy):
    cfg = tiny(strategy={"name": strategy, "ditto_epochs": 1})
    recorder = Recorder()
    record = run_experiment(cfg, observers=[recorder], out_dir=tmp_path)
    assert recorder.rounds == [0, 1, 2, 3]
    assert recorder.params_seen == [0, 3, 3, 3]
    assert [r.round for r in record.rounds] == [0, 1, 2, 3]
    last = record.rounds[-1]
    assert len(last.client_ids) == 3 and last.client_confusion.shape == (3, 2, 2)
    for key in ("reward_accuracy", "accuracy", "loss", "num_samples", "num_batches", "bytes_sent", "train_time_s"):
        assert np.all(np.isfinite(last.client_metrics[key])), key
    assert last.observations["recorder"] == {"n_clients": 3}
    assert record.summary["status"] == "complete"
    assert 0.0 <= record.summary["final_aux_accuracy"] <= 1.0
    # the confusion matrix agrees with the recorded accuracy
    conf = last.client_confusion[0]
    assert np.trace(conf) / conf.sum() == pytest.approx(last.client_metrics["accuracy"][0])


def test_training_learns_on_separable_data(tmp_path):
    record = run_experiment(tiny(training={"rounds": 4, "local_epochs": 3}), out_dir=tmp_path)
    acc = [r.server_metrics["aux_accuracy"] for r in record.rounds]
    assert acc[-1] > 0.8 and acc[-1] >= acc[0]


def _without_timing(record):
    out = []
    for r in record.rounds:
        data = r.to_json()
        data["client_metrics"].pop("train_time_s", None)
        out.append(data)
    return out


def test_deterministic_on_cpu(tmp_path):
    a = run_experiment(tiny(), out_dir=tmp_path / "a")
    b = run_experiment(tiny(), out_dir=tmp_path / "b")
    assert _without_timing(a) == _without_timing(b)
    c = run_experiment(tiny(run={"seed": 1}), out_dir=tmp_path / "c")
    assert _without_timing(a) != _without_timing(c)


def test_complete_run_is_skipped_and_interrupted_run_resumes(tmp_path):
    cfg = tiny(training={"rounds": 4})
    full = run_experiment(cfg, out_dir=tmp_path / "full")

    class Crash(BaseObserver):
        name = "crash"

        def on_round_end(self, record):
            if record.round == 2:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, observers=[Crash()], out_dir=tmp_path / "resumed")
    folder = tmp_path / "resumed" / cfg.run_id()
    assert (folder / "checkpoint.pt").exists() and not (folder / "summary.json").exists()
    resumed = run_experiment(cfg, out_dir=tmp_path / "resumed")
    strip = lambda rec: [(r.round, r.client_ids.tolist(), r.server_metrics) for r in rec.rounds]
    assert strip(resumed) == strip(full)
    assert not (folder / "checkpoint.pt").exists()
    # a complete run is not recomputed
    mtime = (folder / "summary.json").stat().st_mtime_ns
    run_experiment(cfg, out_dir=tmp_path / "resumed")
    assert (folder / "summary.json").stat().st_mtime_ns == mtime


def test_run_folder_contents(tmp_path):
    cfg = tiny()
    record = run_experiment(cfg, out_dir=tmp_path)
    folder = tmp_path / cfg.run_id()
    assert record.path == folder
    assert "round 3" in (folder / "log.txt").read_text()
    for name in ("config.yaml", "dataset.json", "rounds.jsonl", "final_model.pt", "summary.json", "log.txt"):
        assert (folder / name).is_file(), name
    reloaded = load_run(folder)
    assert reloaded.config == cfg.to_dict()
    assert len((folder / "rounds.jsonl").read_text().splitlines()) == 4
    dataset = json.loads((folder / "dataset.json").read_text())
    assert dataset["dataset"]["synthetic"] is True
    assert np.asarray(dataset["partition"]["class_counts"]).shape == (6, 2)


def test_local_dp_records_epsilon(tmp_path):
    cfg = tiny(privacy={"mode": "local", "target_epsilon": 5.0}, training={"rounds": 2})
    record = run_experiment(cfg, out_dir=tmp_path)
    eps = [r.server_metrics["epsilon"] for r in record.rounds[1:]]
    assert 0 < eps[0] <= eps[1] <= 5.0 + 1e-6


def test_server_dp_records_epsilon(tmp_path):
    cfg = tiny(privacy={"mode": "server", "target_epsilon": 8.0, "clipping_norm": 0.5}, training={"rounds": 2})
    record = run_experiment(cfg, out_dir=tmp_path)
    assert record.rounds[-1].server_metrics["epsilon"] == pytest.approx(8.0, rel=0.05)


@pytest.mark.parametrize(
    "data, model, partition",
    [
        ({"name": "synthetic_cifar10", "synthetic_samples": 300}, "cifar_cnn", {"scheme": "dirichlet", "alpha": 0.5, "min_partition_size": 5}),
        ({"name": "synthetic_femnist", "synthetic_samples": 400}, "femnist_cnn", {"scheme": "natural"}),
        ({"name": "synthetic_femnist", "synthetic_samples": 400}, "convnet2", {"scheme": "natural"}),
        ({"name": "synthetic_n_baiot", "synthetic_samples": 600}, "nbaiot_mlp_50_50", {"scheme": "natural"}),
    ],
)
def test_three_rounds_per_synthetic_family(tmp_path, data, model, partition):
    cfg = tiny(data=data, model={"name": model}, partition=partition)
    record = run_experiment(cfg, out_dir=tmp_path)
    assert len(record.rounds) == 4 and record.summary["synthetic"] is True
