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
    def strip(rec):
        return [(r.round, r.client_ids.tolist(), r.server_metrics) for r in rec.rounds]

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


class Models(BaseObserver):
    """Keeps every round's transient models: what was sent, what came back, what was aggregated."""

    name = "models"

    def __init__(self):
        self.records = []

    def on_round_end(self, record):
        self.records.append(record)
        return None


@pytest.mark.parametrize(
    "data, model, partition, classes",
    [
        ({"name": "synthetic_cifar10", "synthetic_samples": 300}, "cifar_cnn",
         {"scheme": "dirichlet", "alpha": 0.5, "min_partition_size": 5}, 10),
        # iid: the natural FEMNIST writers of 400 samples hold 1 to 20 each, too few to learn from in 3
        # rounds (a natural-partition FEMNIST run is in test_vectorized.py)
        ({"name": "synthetic_femnist", "synthetic_samples": 400}, "femnist_cnn", {"scheme": "iid"}, 62),
        ({"name": "synthetic_femnist", "synthetic_samples": 400}, "convnet2", {"scheme": "iid"}, 62),
        ({"name": "synthetic_n_baiot", "synthetic_samples": 600}, "nbaiot_mlp_50_50", {"scheme": "natural"}, 2),
    ],
)
def test_each_synthetic_family_trains_aggregates_and_learns(tmp_path, data, model, partition, classes):
    # Prepare
    cfg = tiny(data=data, model={"name": model}, partition=partition)
    models = Models()

    # Execute: 3 rounds of FedAvg (sample-weighted)
    record = run_experiment(cfg, observers=[models], out_dir=tmp_path)

    # Assert
    assert len(record.rounds) == 4 and record.summary["synthetic"] is True
    rounds = models.records
    for previous, r in zip(rounds, rounds[1:]):
        # the model sent in round k is the one aggregated in round k - 1 (round 0: the initial model)
        assert all(np.array_equal(a, b) for a, b in zip(r.global_params_before, previous.global_params_after))
        # local training changed every client's model
        for upload in r.client_params:
            assert any(not np.array_equal(u, g) for u, g in zip(upload, r.global_params_before))
        # the new global model is the sample-weighted mean of the uploads, sum_n n_k w_k / sum_n n_k
        weights = r.client_metrics["num_samples"] / r.client_metrics["num_samples"].sum()
        for i, aggregated in enumerate(r.global_params_after):
            mean = sum(w * upload[i].astype(np.float64) for w, upload in zip(weights, r.client_params))
            np.testing.assert_allclose(aggregated, mean, rtol=1e-6, atol=1e-7, err_msg=f"round {r.round} array {i}")
        # one K x K validation confusion matrix per client, consistent with its accuracy
        assert r.client_confusion.shape == (len(r.client_ids), classes, classes)
        np.testing.assert_array_equal(r.client_confusion.sum(axis=(1, 2)), r.client_metrics["val_samples"])
        traces = np.trace(r.client_confusion, axis1=1, axis2=2)
        np.testing.assert_allclose(traces / r.client_metrics["val_samples"], r.client_metrics["accuracy"])
    # an easy synthetic task: the global model's loss on the server's aux set falls over the 3 rounds
    aux = [r.server_metrics["aux_loss"] for r in record.rounds]
    assert aux[-1] < aux[0], aux


# -- checkpoints: plain data, this run's only, the records not rewritten ------------------------------

class PlantedPayload:
    """What an attacker pickles into checkpoint.pt: unpickling it creates ``marker`` (any code could run)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch '{self.marker}'",))


class Crash(BaseObserver):
    """Interrupts a run at the end of round ``at`` (before that round is written)."""

    name = "crash"

    def __init__(self, at=2):
        self.at = at

    def on_round_end(self, record):
        if record.round == self.at:
            raise KeyboardInterrupt


def _same_run(a, b):
    """Bit-identical records (timing aside) and final models."""
    import torch

    assert _without_timing(a) == _without_timing(b)
    final_a, final_b = torch.load(a.path / "final_model.pt"), torch.load(b.path / "final_model.pt")
    assert list(final_a) == list(final_b) and all(torch.equal(final_a[k], final_b[k]) for k in final_a)


def test_a_planted_checkpoint_is_never_unpickled(tmp_path, caplog):
    import torch

    cfg = tiny()
    clean = run_experiment(cfg, out_dir=tmp_path / "clean")
    record = run_experiment(cfg, out_dir=tmp_path / "runs")
    marker = tmp_path / "payload-ran"
    (record.path / "summary.json").unlink()
    torch.save({"config_hash": cfg.config_hash(), "payload": PlantedPayload(marker)}, record.path / "checkpoint.pt")

    with caplog.at_level("WARNING", logger="fltrust"):
        again = run_experiment(cfg, out_dir=tmp_path / "runs")
    assert not marker.exists()
    warning = " ".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert f"{record.path / 'checkpoint.pt'}: not a plain-data checkpoint: it references posix.system" in warning
    assert "nothing in it ran; starting the run from round 0" in warning
    _same_run(again, clean)


def test_a_checkpoint_of_another_seed_is_not_resumed(tmp_path, caplog):
    import shutil

    cfg0, cfg1 = tiny(training={"rounds": 4}), tiny(training={"rounds": 4}, run={"seed": 1})
    full = run_experiment(cfg0, out_dir=tmp_path / "full")
    for cfg in (cfg0, cfg1):
        with pytest.raises(KeyboardInterrupt):
            run_experiment(cfg, observers=[Crash()], out_dir=tmp_path / "runs")
    seed0, seed1 = tmp_path / "runs" / cfg0.run_id(), tmp_path / "runs" / cfg1.run_id()
    shutil.copy(seed1 / "checkpoint.pt", seed0 / "checkpoint.pt")

    with caplog.at_level("WARNING", logger="fltrust"):
        resumed = run_experiment(cfg0, out_dir=tmp_path / "runs")
    assert "belongs to another run (run_id" in caplog.text and "seed 1 instead of 0" in caplog.text
    _same_run(resumed, full)


@pytest.mark.parametrize("sections", [
    {"strategy": {"name": "ditto", "ditto_epochs": 1}, "metrics": {"fairness": {"enabled": True}}},
    {"privacy": {"mode": "local", "target_epsilon": 5.0}},
    {"metrics": {"trust": {"enabled": True, "mode": "extended", "clever_samples": 0, "shap_samples": 0}}},
], ids=["ditto-fairness", "local-dp", "trust-extended"])
def test_resume_is_bit_identical_with_strategy_observer_and_dp_state(tmp_path, sections):
    cfg = tiny(training={"rounds": 4}, **sections)
    full = run_experiment(cfg, out_dir=tmp_path / "full")
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, observers=[Crash(3)], out_dir=tmp_path / "resumed")
    resumed = run_experiment(cfg, out_dir=tmp_path / "resumed")
    _same_run(resumed, full)


def test_resume_drops_a_cut_line_and_restarts_when_the_records_were_edited(tmp_path, caplog):
    from fltrust.runs import audit_run

    cfg = tiny(training={"rounds": 4})
    full = run_experiment(cfg, out_dir=tmp_path / "full")
    folder = tmp_path / "runs" / cfg.run_id()
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, observers=[Crash()], out_dir=tmp_path / "runs")
    rounds = folder / "rounds.jsonl"
    with open(rounds, "a") as handle:  # what a kill during the write of round 2 leaves
        handle.write('{"round": 2, "client_ids": [0, 3')
    resumed = run_experiment(cfg, out_dir=tmp_path / "runs")
    _same_run(resumed, full)
    assert audit_run(folder).ok

    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, observers=[Crash()], out_dir=tmp_path / "again", force=True)
    folder = tmp_path / "again" / cfg.run_id()
    lines = (folder / "rounds.jsonl").read_text().splitlines()
    edited = json.loads(lines[1])
    edited["server_metrics"]["aux_accuracy"] = 0.999
    (folder / "rounds.jsonl").write_text("\n".join([lines[0], json.dumps(edited)]) + "\n")
    with caplog.at_level("WARNING", logger="fltrust"):
        again = run_experiment(cfg, out_dir=tmp_path / "again")
    assert "rounds.jsonl does not continue checkpoint.pt: round 1 does not verify" in caplog.text
    _same_run(again, full)


def test_rounds_are_appended_and_the_checkpoint_holds_no_history(tmp_path, monkeypatch):
    import fltrust.runs.recorder
    from fltrust.runs import read_checkpoint

    rewrites = []
    original = fltrust.runs.recorder.atomic_write_text
    monkeypatch.setattr(fltrust.runs.recorder, "atomic_write_text",
                        lambda path, text: (rewrites.append(path.name), original(path, text))[1])
    cfg = tiny(training={"rounds": 6})
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, observers=[Crash(6)], out_dir=tmp_path)
    assert rewrites.count("rounds.jsonl") == 1  # emptied at the start, then one appended line per round
    state = read_checkpoint(tmp_path / cfg.run_id() / "checkpoint.pt")
    assert "records" not in state and state["round"] == 5
    assert len((tmp_path / cfg.run_id() / "rounds.jsonl").read_text().splitlines()) == 6


@pytest.mark.slow
def test_resume_after_kill_9_is_bit_identical(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    import yaml

    data = tiny(training={"rounds": 40}).to_dict()
    data["run"]["torch_threads"] = 1
    config = tmp_path / "cfg.yaml"
    config.write_text(yaml.safe_dump(data))
    cfg = ExperimentConfig.from_dict(data)
    full = run_experiment(cfg, out_dir=tmp_path / "full")
    out = tmp_path / "killed"
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    proc = subprocess.Popen([sys.executable, "-m", "fltrust", "run", str(config), "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=repo)
    rounds = out / cfg.run_id() / "rounds.jsonl"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if rounds.is_file() and len(rounds.read_text().splitlines()) >= 6:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not (out / cfg.run_id() / "summary.json").exists()
    _same_run(run_experiment(cfg, out_dir=out), full)
