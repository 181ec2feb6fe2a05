"""TrustObserver over synthetic round records (paper Algorithm 1 on the observer protocol)."""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from fltrust.config import ExperimentConfig
from fltrust.core.evaluation import get_params
from fltrust.core.records import AppFacts, RoundRecord, RunInfo, RunSummary
from fltrust.experiment import trust_observer
from fltrust.core.params import count_parameters
from fltrust.models import build_model
from fltrust.settings import SettingsError, TrustSettings
from fltrust.trust.factsheet import USER_SUPPLIED_FIELDS, get_field, load_factsheet, missing_fields
from fltrust.trust.observer import FACTSHEET_FILE, TrustObserver, TrustObserverError

CLASS_COUNTS = np.array([[5, 5], [8, 2], [10, 0], [6, 4]])
# (round, participants, reward accuracy, reward loss)
ROUNDS = [
    (1, [0, 1], [0.5, 0.6], [0.9, 0.8]),
    (2, [1, 2], [0.6, 0.7], [0.7, 0.6]),
    (3, [0, 1], [0.6, 0.8], [0.5, 0.3]),
]


def _cfg(mode: str = "prototype", **overrides) -> ExperimentConfig:
    data = {
        "data": {"name": "synthetic_n_baiot"},
        "model": {"name": "nbaiot_mlp_50_50"},
        "partition": {"num_clients": 4},
        "strategy": {"name": "fedavg", "clients_per_round": 2},
        "training": {"rounds": 3},
        "privacy": {"mode": "server", "target_epsilon": 8.0},
        "metrics": {"trust": {
            "enabled": True, "mode": mode, "clever_samples": 1, "clever_nb_batches": 2,
            "clever_batch_size": 2, "clever_pool_factor": 2, "shap_background": 8, "shap_samples": 2,
        }},
        "run": {"name": "trust_test", "seed": 3},
    }
    return ExperimentConfig.from_dict(data).with_overrides(overrides)


def _info(num_clients: int = 4, counts: np.ndarray = CLASS_COUNTS) -> RunInfo:
    return RunInfo(
        run_id="trust_test", num_clients=num_clients, num_rounds=len(ROUNDS), num_classes=2,
        client_num_samples=counts.sum(axis=1), client_class_counts=counts,
        dataset={"name": "synthetic_n_baiot", "synthetic": True, "source": {}},
    )


def _record(round_: int, ids: list[int], acc: list[float], loss: list[float]) -> RoundRecord:
    n = len(ids)
    return RoundRecord(
        round=round_, client_ids=np.asarray(ids, dtype=np.int64),
        client_metrics={
            "reward_accuracy": np.asarray(acc), "reward_loss": np.asarray(loss),
            "accuracy": np.asarray(acc) + 0.1, "loss": np.asarray(loss) - 0.1,
            "bytes_sent": np.full(n, 100.0), "bytes_received": np.full(n, 200.0),
        },
        server_metrics={"aux_accuracy": 0.5 + 0.1 * round_, "aux_loss": 1.0 / round_, "epsilon": 2.0 * round_},
    )


def _setup(tmp_path: Path | None, mode: str = "prototype", **overrides):
    torch.manual_seed(0)
    cfg = _cfg(mode, **overrides)
    model = build_model(cfg.model.name, (115,), 2)
    generator = torch.Generator().manual_seed(1)
    x_test = torch.randn(40, 115, generator=generator)
    y_test = torch.randint(0, 2, (40,), generator=generator)
    observer = trust_observer(cfg, model, x_test, y_test)
    observer.run_folder = tmp_path
    return cfg, model, observer


def _summary(model: torch.nn.Module, records: list[RoundRecord]) -> RunSummary:
    n_params, n_tensors = count_parameters(model)
    system = {"model_num_params": n_params, "model_num_tensors": n_tensors, "model_bytes": 4 * n_params,
              "bytes_up_total": 600.0, "bytes_down_total": 1200.0, "train_time_s_total": 3.0}
    return RunSummary(info=_info(), rounds=[RoundRecord(0, np.zeros(0, dtype=np.int64))] + records,
                      final_params=get_params(model), wall_time_s=120.0, system=system)


def _entropy_bits(p: list[float]) -> float:
    return -sum(q * math.log2(q) for q in p if q > 0)


def test_full_run_fills_every_field_but_the_user_supplied_ones(tmp_path: Path) -> None:
    # Prepare
    cfg, model, observer = _setup(tmp_path)
    records = [_record(*r) for r in ROUNDS]
    # Execute
    observer.on_run_start(_info())
    returned = [observer.on_round_end(r) for r in records]
    out = observer.on_run_end(_summary(model, records))
    fs = observer.factsheet
    # Assert: completeness
    assert missing_fields(fs) == list(USER_SUPPLIED_FIELDS)
    # prototype rule (B2, docs/references.md#trust-b2): "" is missing, [] is not
    assert out["missing_fields"] == ["project/purpose", "project/background"]
    # pre-training
    assert get_field(fs, "project/overview") == "trust_test"
    assert get_field(fs, "participants/client_num") == 4
    assert get_field(fs, "participants/sample_client_rate") == 0.5
    assert get_field(fs, "configuration/dp_epsilon") == 8.0
    # entropies [1, H(.8), 0, H(.6)] are already min-max normalised (min 0, max 1)
    expected_entropy = np.mean([1.0, _entropy_bits([0.8, 0.2]), 0.0, _entropy_bits([0.6, 0.4])])
    assert get_field(fs, "data/avg_entropy") == pytest.approx(expected_entropy)
    # global classes [29, 11]: mean 20, std 9 -> 0.45
    assert get_field(fs, "fairness/class_imbalance") == pytest.approx(0.45)
    # selection counts [2, 3, 1, 0] over 3 rounds: rates [2/3, 1, 1/3, 0], mean 1/2, std sqrt(5)/6
    assert get_field(fs, "fairness/selection_cv") == pytest.approx(math.sqrt(5) / 3)
    assert returned[0]["selection_cv"] == pytest.approx(1.0)  # rates [1, 1, 0, 0] after round 1
    assert returned[2]["mean_accuracy"] == pytest.approx(0.8)  # post-training accuracy + 0.1
    # performance from the last round's reward (global model) values: [0.6, 0.8] and [0.5, 0.3]
    assert get_field(fs, "performance/test_acc_avg") == pytest.approx(0.7)
    assert get_field(fs, "performance/test_loss_avg") == pytest.approx(0.4)
    assert get_field(fs, "fairness/test_acc_cv") == pytest.approx(1 / 7)
    # robustness and explainability
    clever = get_field(fs, "performance/test_clever")
    assert math.isfinite(clever) and 0.0 <= clever <= cfg.metrics.trust.clever_radius
    assert math.isfinite(get_field(fs, "performance/test_feature_importance_cv"))
    # system figures as numbers
    assert get_field(fs, "system/avg_time_minutes") == 2.0
    assert get_field(fs, "system/avg_model_size") == count_parameters(model)[0]
    assert get_field(fs, "system/avg_upload_bytes") == 150.0
    assert get_field(fs, "system/avg_download_bytes") == 300.0
    # output
    saved = load_factsheet(tmp_path / FACTSHEET_FILE)
    assert saved["fairness"]["selection_cv"] == pytest.approx(math.sqrt(5) / 3)
    assert out["factsheet"] == str(tmp_path / FACTSHEET_FILE)
    assert out["epsilon_spent"] == 6.0
    assert observer.history["round"] == [1, 2, 3]
    assert observer.history["aux_loss"] == pytest.approx([1.0, 0.5, 1 / 3])


def test_resume_from_state_dict_gives_the_same_factsheet() -> None:
    # Prepare
    _, model, uninterrupted = _setup(None, **{"metrics.trust.clever_samples": 0, "metrics.trust.shap_samples": 0})
    records = [_record(*r) for r in ROUNDS]
    uninterrupted.on_run_start(_info())
    for record in records:
        uninterrupted.on_round_end(record)
    _, _, first = _setup(None, **{"metrics.trust.clever_samples": 0, "metrics.trust.shap_samples": 0})
    first.on_run_start(_info())
    for record in records[:2]:
        first.on_round_end(record)
    state = json.loads(json.dumps(first.state_dict()))  # must survive JSON
    # Execute
    _, _, resumed = _setup(None, **{"metrics.trust.clever_samples": 0, "metrics.trust.shap_samples": 0})
    resumed.on_run_start(_info())
    resumed.load_state_dict(state)
    resumed.on_round_end(records[2])
    a = uninterrupted.on_run_end(_summary(model, records))
    b = resumed.on_run_end(_summary(model, records))
    # Assert
    assert np.array_equal(resumed.selection_counts(), [2, 3, 1, 0])
    assert resumed.history == uninterrupted.history
    assert json.dumps(resumed.factsheet, default=str) == json.dumps(uninterrupted.factsheet, default=str)
    assert a["missing_fields"] == b["missing_fields"]


def test_test_groups_evaluate_the_final_model_per_natural_client() -> None:
    # Prepare: logits = x, so the prediction is argmax(x); group 0 is all right, group 1 half right
    cfg = _cfg(**{"metrics.trust.clever_samples": 0, "metrics.trust.shap_samples": 0})
    model = torch.nn.Linear(2, 2)
    with torch.no_grad():
        model.weight.copy_(torch.eye(2))
        model.bias.zero_()
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    y = torch.tensor([0, 1, 0, 1])
    observer = trust_observer(cfg, model, x, y, test_groups=[0, 0, 1, 1])
    records = [_record(*r) for r in ROUNDS]
    observer.on_run_start(_info())
    for record in records:
        observer.on_round_end(record)
    # Execute
    out = observer.on_run_end(_summary(model, records))
    # Assert: accuracies [1, 0.5] -> mean 0.75, CV 0.25 / 0.75
    assert get_field(observer.factsheet, "performance/test_acc_avg") == pytest.approx(0.75)
    assert get_field(observer.factsheet, "fairness/test_acc_cv") == pytest.approx(1 / 3)
    assert "natural client" in out["performance_source"]


@pytest.mark.parametrize(("mode", "selection", "entropy"), [
    ("prototype", 1.0, float("nan")),  # capped; equal client entropies -> NaN (B4, docs/references.md#trust-b4)
    ("paper", math.sqrt(3), 1.0),  # uncapped (5796d0b); client-identification entropy of equal sizes
])
def test_mode_defaults(mode: str, selection: float, entropy: float) -> None:
    # Prepare: 4 identical clients; client 0 is selected in every round, the others never
    _, model, observer = _setup(None, mode, **{"metrics.trust.clever_samples": 0, "metrics.trust.shap_samples": 0})
    counts = np.array([[5, 5]] * 4)
    records = [_record(r, [0], [0.5], [0.5]) for r in (1, 2, 3)]
    # Execute
    observer.on_run_start(_info(counts=counts))
    for record in records:
        observer.on_round_end(record)
    observer.on_run_end(_summary(model, records))
    # Assert
    fs = observer.factsheet
    assert get_field(fs, "fairness/selection_cv") == pytest.approx(selection)
    assert get_field(fs, "fairness/selection_cv_raw") == pytest.approx(math.sqrt(3))
    value = get_field(fs, "data/avg_entropy")
    assert math.isnan(value) if math.isnan(entropy) else value == pytest.approx(entropy)


def test_fixed_mode_counts_absent_classes_and_uses_normalised_entropy() -> None:
    # Prepare: the third class is absent everywhere; global counts [20, 20, 0]
    cfg = _cfg(**{"metrics.trust.clever_samples": 0, "metrics.trust.shap_samples": 0})
    model = build_model(cfg.model.name, (115,), 2)
    counts = np.array([[5, 5, 0]] * 4)
    prototype = trust_observer(cfg, model, torch.zeros(4, 115), torch.zeros(4, dtype=torch.long))
    fixed = TrustObserver(TrustSettings(mode="fixed", clever_samples=0, shap_samples=0), model,
                          torch.zeros(4, 115), torch.zeros(4, dtype=torch.long))
    # Execute
    prototype.on_run_start(_info(counts=counts))
    fixed.on_run_start(_info(counts=counts))
    # Assert: present classes [20, 20] -> CV 0; all classes [20, 20, 0] -> mean 40/3, std 20 sqrt(2)/3
    assert get_field(prototype.factsheet, "fairness/class_imbalance") == 0.0
    assert get_field(fixed.factsheet, "fairness/class_imbalance") == pytest.approx(1 / math.sqrt(2))
    assert get_field(fixed.factsheet, "data/avg_entropy") == pytest.approx(1.0)  # equal client sizes
    assert fixed.switches["feature_importance_method"] == "feature_mean_abs"


def test_inconsistent_inputs_are_named() -> None:
    cfg, model, observer = _setup(None)
    x, y = torch.zeros(2, 115), torch.zeros(2, dtype=torch.long)
    with pytest.raises(TrustObserverError, match="y_test"):
        TrustObserver(TrustSettings(), model, torch.zeros(3, 115), y)
    with pytest.raises(SettingsError, match="choose one of"):
        TrustObserver(TrustSettings(mode="strict"), model, x, y)
    with pytest.raises(SettingsError, match="feature_importance_method='lime'"):
        TrustObserver(TrustSettings(feature_importance_method="lime"), model, x, y)
    with pytest.raises(TrustObserverError, match=r"takes TrustSettings, got ExperimentConfig.*trust_observer"):
        TrustObserver(cfg, model, x, y)
    with pytest.raises(TrustObserverError, match="extended mode needs"):
        TrustObserver(TrustSettings(mode="extended"), model, x, y)
    with pytest.raises(TrustObserverError, match="client_class_counts"):
        observer.on_run_start(_info(num_clients=5))
    with pytest.raises(TrustObserverError, match="on_run_start"):
        observer.on_round_end(_record(1, [0], [0.5], [0.5]))
    observer.on_run_start(_info())
    with pytest.raises(TrustObserverError, match="outside 0..3"):
        observer.on_round_end(_record(1, [0, 7], [0.5, 0.5], [0.5, 0.5]))


@pytest.mark.skipif(importlib.util.find_spec("fltrust.trust.scoring") is None,
                    reason="fltrust.trust.scoring is not available yet")
def test_run_end_scores_the_factsheet_and_writes_the_report(tmp_path: Path) -> None:
    # Prepare
    _, model, observer = _setup(tmp_path, **{"metrics.trust.clever_samples": 0, "metrics.trust.shap_samples": 0})
    records = [_record(*r) for r in ROUNDS]
    observer.on_run_start(_info())
    for record in records:
        observer.on_round_end(record)
    # Execute
    out = observer.on_run_end(_summary(model, records))
    # Assert
    assert 0.0 <= out["trust_score"] <= 1.0
    assert set(out["pillars"]) >= {"robustness", "privacy", "fairness", "explainability", "accountability"}
    assert (tmp_path / "trust_report.json").is_file()


@pytest.mark.skipif(importlib.util.find_spec("fltrust.trust.scoring") is None,
                    reason="fltrust.trust.scoring is not available yet")
def test_every_round_scores_the_factsheet_so_far_without_changing_it() -> None:
    """The per-round score is the FactSheet of rounds 1..k scored: at the last round it is the final
    score (same fields: reward values of the last round, traffic 600/1200, no CLEVER/SHAP)."""
    from fltrust.trust.scoring import score_factsheet

    overrides = {"metrics.trust.clever_samples": 0, "metrics.trust.shap_samples": 0}
    _, model, observer = _setup(None, **overrides)
    silent = TrustObserver(replace(observer.settings, score_every_round=False), model, observer.x_test,
                           observer.y_test, seed=observer.seed, describe=observer.describe)
    records = [_record(*r) for r in ROUNDS]
    observer.on_run_start(_info())
    silent.on_run_start(_info())
    returned = [observer.on_round_end(r) for r in records]
    quiet = [silent.on_round_end(r) for r in records]
    final = observer.on_run_end(_summary(model, records))
    silent.on_run_end(_summary(model, records))

    assert all("trust_score" not in q for q in quiet)
    assert returned[-1]["trust_score"] == pytest.approx(final["trust_score"])
    assert returned[-1]["pillars"] == pytest.approx(final["pillars"])
    # round 1 by hand: the pre-training FactSheet plus round 1's fields, scored
    first = _setup(None, **overrides)[2]
    first.on_run_start(_info())
    fs = first.factsheet
    from fltrust.trust.factsheet import set_field

    set_field(fs, "performance/test_acc_avg", 0.55)  # reward accuracies [0.5, 0.6]
    set_field(fs, "performance/test_loss_avg", 0.85)
    set_field(fs, "fairness/test_acc_cv", 0.05 / 0.55)
    set_field(fs, "fairness/test_acc_cv_raw", 0.05 / 0.55)
    set_field(fs, "fairness/selection_cv", 1.0)  # rates [1, 1, 0, 0]
    set_field(fs, "fairness/selection_cv_raw", 1.0)
    set_field(fs, "system/avg_time_minutes", 0.01)
    set_field(fs, "system/avg_model_size", count_parameters(model)[0])
    set_field(fs, "system/avg_upload_bytes", 200 / 4)  # 2 clients x 100 bytes over C = 4
    set_field(fs, "system/avg_download_bytes", 400 / 4)
    assert returned[0]["trust_score"] == pytest.approx(score_factsheet(fs, mode="prototype").trust_score)
    # scoring the rounds changed nothing the run writes
    assert json.dumps(observer.factsheet, default=str) == json.dumps(silent.factsheet, default=str)


def test_an_app_without_config_is_described_by_its_own_facts() -> None:
    """RunInfo.app instead of a config; the label counts arrive as the clients report."""
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(115, 8), torch.nn.Linear(8, 2)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    model = Net()
    settings = TrustSettings(clever_samples=0, shap_samples=0)
    observer = TrustObserver(settings, model, torch.zeros(10, 115), torch.zeros(10, dtype=torch.long))
    app = AppFacts(name="my-app", model="Net", strategy="FedAvg", strategy_params={"fraction_train": 0.5},
                   dataset_name="my_iot", dataset_description="router traffic, 2 classes", learning_rate=0.01)
    info = RunInfo("my-app-1", 4, 3, 0, np.zeros(4), np.zeros((4, 0)), app=app)
    records = [_record(*r) for r in ROUNDS]
    observer.on_run_start(info)
    for record, reported in zip(records, ([0, 1], [2], [])):
        for client in reported:  # clients 0, 1 and 2 report; client 3 never does
            info.record_client(client, CLASS_COUNTS[client])
        observer.on_round_end(record)
    observer.on_run_end(_summary(model, records))

    fs = observer.factsheet
    assert get_field(fs, "project/overview") == "my-app: Net (946 trainable parameters) trained with FedAvg on my_iot"
    assert get_field(fs, "data/provenance") == "my_iot: router traffic, 2 classes"
    assert get_field(fs, "configuration/training_model") == "MLPClassifier"
    assert get_field(fs, "configuration/optimization_algorithm") == "FedAvg"
    assert get_field(fs, "configuration/total_round_num") == 3
    assert get_field(fs, "configuration/learning_rate") == 0.01
    assert math.isnan(get_field(fs, "configuration/local_update_steps"))  # not stated: missing, not invented
    assert get_field(fs, "participants/client_num") == 4
    assert get_field(fs, "participants/sample_client_rate") == 0.5  # 2 of 4 clients in every round
    # the 3 clients that reported: present classes [23, 7] -> mean 15, std 8 -> 8/15
    assert get_field(fs, "fairness/class_imbalance") == pytest.approx(8 / 15)
