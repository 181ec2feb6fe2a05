"""Extended mode: the 36-metric taxonomy + sustainability, provenance, n/a handling, a complete tiny run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from fltrust.trust import scoring
from fltrust.trust.factsheet import load_factsheet, new_factsheet, set_field, set_provenance
from fltrust.trust.report import TrustReport
from fltrust.trust.scoring import load_definitions, score_factsheet

TAXONOMY = {  # paper Sec. 3 / trust spec 6 (docs/references.md#trust-6): 36 metrics (pillar -> metric names in extended.yaml)
    "privacy": ["differential_privacy", "encryption", "anonymisation", "information_leakage", "entropy",
                "global_privacy_risk"],
    "robustness": ["poisoning_defence", "empirical_robustness", "certified_robustness", "testing_coverage",
                   "system_reliability", "performance", "personalization", "scale", "client_reputation", "data_quality"],
    "fairness": ["selection_variation", "accuracy_variation", "discrimination_index", "class_imbalance"],
    "explainability": ["algorithmic_transparency", "model_size", "simplification", "feature_importance", "visualisation"],
    "accountability": ["project_specs", "participants", "data", "configuration", "system", "algorithmic_auditing"],
    "architectural_soundness": ["client_registry", "client_selector", "model_co_versioning", "model_replacement",
                                "algorithm"],
}
CODE_EXTRAS = {"accountability": ["performance", "fairness"]}  # the prototype's two extra completeness checks
NEBULA = ["carbon_intensity", "run_emissions", "number_of_training_rounds", "avg_model_size", "client_selection_rate",
          "number_of_clients", "local_training_rounds", "avg_dataset_size"]


def test_extended_definitions_cover_the_taxonomy_and_sustainability():
    tree = load_definitions(mode="extended")
    assert tree.use_provenance and tree.name == "extended"
    by_pillar = {p.name: [m.name for n in p.notions for m in n.metrics] for p in tree.pillars}
    assert list(by_pillar) == [*scoring.PROTOTYPE_PILLAR_WEIGHTS, "sustainability"]
    assert sum(len(v) for v in TAXONOMY.values()) == 36
    for pillar, names in TAXONOMY.items():
        assert sorted(by_pillar[pillar]) == sorted(names + CODE_EXTRAS.get(pillar, [])), pillar
    assert sorted(by_pillar["sustainability"]) == sorted(NEBULA)
    for path in tree.metric_paths():  # every metric says what it is
        assert tree.get_metric(path).description, path
    # use_weights: every group of weights sums to 1
    assert score_factsheet({}, mode="extended", use_weights=True).pillars


def test_the_paper_modes_are_unchanged():
    assert scoring.MODES == ("prototype", "paper", "fixed")
    assert scoring.ALL_MODES == ("prototype", "paper", "fixed", "extended")
    for mode in scoring.MODES:
        tree = load_definitions(mode=mode)
        assert not tree.use_provenance
        report = score_factsheet({"participants": {"client_num": 10}}, mode=mode)
        assert all(m.provenance is None and m.applicable for m in report.metrics())
        metric_dicts = [m for p in report.to_dict()["pillars"] for n in p["notions"] for m in n["metrics"]]
        assert all("provenance" not in m and "applicable" not in m for m in metric_dicts)


def test_robust_aggregators_have_nebula_values():
    algorithm = load_definitions(mode="extended").get_metric("architectural_soundness/optimization/algorithm")
    values = algorithm.score_map
    assert values["FedAvg"] == 0.9509 and values["Krum"] == 0.9535 and values["TrimmedMean"] == 0.9595
    assert values["Median"] == values["FedMedian"] == 0.9461
    assert {"MultiKrum", "Bulyan"} <= set(values)
    fs = new_factsheet(extended=True)
    set_field(fs, "configuration/optimization_algorithm", "FedMedian")
    assert score_factsheet(fs, mode="extended").metric("algorithm").score == pytest.approx(0.9461)
    # the prototype still scores FedMedian 0 (unchanged)
    assert score_factsheet({"configuration": {"optimization_algorithm": "FedMedian"}}).metric("algorithm").score == 0.0


def _group_fs(**values):
    fs = new_factsheet(extended=True)
    for key, value in values.items():
        set_field(fs, key, value)
    return fs


def test_not_applicable_metrics_leave_the_means_by_hand():
    # Prepare: fairness pillar with selection CV 0.2, accuracy CV 0.4, class CV 0.6, discrimination 0.1
    fs = _group_fs(**{"fairness/selection_cv": 0.2, "fairness/test_acc_cv": 0.4, "fairness/class_imbalance": 0.6,
                      "fairness/discrimination_index": 0.1})
    full = score_factsheet(fs, mode="extended")
    # Execute: the discrimination index is n/a (no sensitive attribute)
    set_provenance(fs, "fairness/group_fairness/discrimination_index", "n/a", "discrimination index",
                   "CIFAR-10 has no attribute besides the label")
    partial = score_factsheet(fs, mode="extended")
    # Assert: 4 notions -> mean of 0.8, 0.6, 0.9, 0.4; then 3 notions -> mean of 0.8, 0.6, 0.4
    assert full.pillar("fairness").score == pytest.approx((0.8 + 0.6 + 0.9 + 0.4) / 4)
    assert partial.pillar("fairness").score == pytest.approx((0.8 + 0.6 + 0.4) / 3)
    metric = partial.metric("discrimination_index")
    assert not metric.applicable and math.isnan(metric.score) and metric.status == "n/a"
    assert not partial.notion("group_fairness").applicable
    # a whole n/a pillar leaves the trust score
    for path in [m.path for m in partial.pillar("sustainability").metrics()]:
        set_provenance(fs, path, "n/a", "test", "switched off for the test")
    no_sustainability = score_factsheet(fs, mode="extended")
    assert not no_sustainability.pillar("sustainability").applicable
    others = [p.score for p in no_sustainability.pillars if p.name != "sustainability"]
    assert no_sustainability.trust_score == pytest.approx(sum(others) / 6)
    # the report round-trips and says n/a
    restored = TrustReport.from_json(no_sustainability.to_json())
    assert restored.to_dict() == no_sustainability.to_dict()
    assert "[n/a]" in no_sustainability.format_table()


def test_missing_provenance_is_unknown_not_dropped():
    report = score_factsheet({}, mode="extended")
    assert {m.status for m in report.metrics()} == {"unknown"}
    assert all(m.applicable for m in report.metrics())
    assert report.provenance_summary() == {"unknown": len(list(report.metrics()))}


# -------------------------------------------------------------------------------------------
# A complete tiny run in extended mode
# -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def extended_run(tmp_path_factory):
    from fltrust.config import ExperimentConfig
    from fltrust.experiment import run_experiment

    cfg = ExperimentConfig.from_dict({
        "data": {"name": "synthetic_nsl_kdd", "synthetic_samples": 400},
        "partition": {"num_clients": 4, "aux_max_samples": 60},
        "strategy": {"name": "fedavg", "clients_per_round": 3},
        "training": {"rounds": 3, "local_epochs": 1},
        "metrics": {
            "fairness": {"enabled": True},
            "trust": {"enabled": True, "mode": "extended", "clever_samples": 1, "clever_nb_batches": 2,
                      "clever_batch_size": 2, "clever_pool_factor": 2, "shap_background": 8, "shap_samples": 2,
                      "evasion_samples": 30, "mia_samples": 60, "declared": {"testing_coverage": 0.8}},
        },
        "run": {"name": "extended", "progress": False, "device": "cpu", "torch_threads": 1},
    })
    return run_experiment(cfg, out_dir=tmp_path_factory.mktemp("runs"))


@pytest.mark.slow
def test_a_tiny_run_is_scored_end_to_end_in_extended_mode(extended_run):
    record = extended_run
    assert record.status == "complete"
    trust = record.summary["observers"]["trust"]
    report = TrustReport.from_json((Path(record.path) / "trust_report.json").read_text())
    # every pillar, sustainability included, has a finite score
    assert [p.name for p in report.pillars] == [*scoring.PROTOTYPE_PILLAR_WEIGHTS, "sustainability"]
    assert all(np.isfinite(p.score) and 0 <= p.score <= 1 for p in report.pillars)
    assert 0 < report.trust_score <= 1 and trust["trust_score"] == pytest.approx(report.trust_score)
    # every metric says measured / declared / missing / n/a
    statuses = {m.path: m.status for m in report.metrics()}
    assert set(statuses.values()) <= {"measured", "declared", "missing", "n/a"}
    assert trust["metric_status"] == statuses
    measured = {path.split("/")[-1] for path, s in statuses.items() if s == "measured"}
    assert {"information_leakage", "empirical_robustness", "client_reputation", "data_quality", "discrimination_index",
            "algorithmic_auditing", "model_co_versioning", "client_registry", "visualisation", "run_emissions",
            "certified_robustness", "feature_importance"} <= measured
    assert statuses["robustness/system_robustness/testing_coverage"] == "declared"
    assert report.metric("testing_coverage").score == pytest.approx(0.8)
    assert statuses["robustness/system_robustness/system_reliability"] == "declared"  # no counters: none injected
    # the hash chain verifies, the model versions map, the dashboard is drawn
    assert report.metric("algorithmic_auditing").score == 1.0
    assert report.metric("model_co_versioning").score == 1.0
    assert (Path(record.path) / "trust_dashboard.png").is_file()
    # sustainability says how the energy was obtained
    fs = load_factsheet(Path(record.path) / "factsheet.json")
    assert fs["sustainability"]["energy_kwh"] > 0 and fs["sustainability"]["country_iso_code"] == "CHE"
    entry = fs["provenance"]["sustainability/energy_consumption/run_emissions"]
    assert "CodeCarbon" in entry["method"] and "estimate" in entry
    if entry["estimate"]:
        assert "ESTIMATED" in fs["sustainability"]["method"]
    # FedSV consistency (fairness observer on) is reported beside the reputation
    assert trust["extended"]["robustness"]["reputation"]["fedsv_mean"] is not None
    # scoring the saved FactSheet again gives the same report
    again = score_factsheet(fs, mode="extended")
    assert again.trust_score == pytest.approx(report.trust_score)


@pytest.mark.slow
def test_the_run_record_keeps_the_version_map_and_the_factsheet_the_sensitive_attribute(extended_run):
    rounds = extended_run.rounds
    versions = [r.observations["trust"]["extended"]["versions"] for r in rounds if r.round >= 1]
    assert all(len(v["local"]) == v["num_participants"] == 3 for v in versions)
    assert [v["global_after"] for v in versions] == [r.server_metrics["model_hash"] for r in rounds[1:]]
    fs = load_factsheet(Path(extended_run.path) / "factsheet.json")
    assert fs["fairness"]["sensitive_attribute"] == "protocol_type"
    assert 0.0 <= fs["privacy"]["mia_auc"] <= 1.0


# -------------------------------------------------------------------------------------------
# The observer on bare records (no engine): what it cannot measure, it says
# -------------------------------------------------------------------------------------------

def test_observer_without_models_or_samplers_marks_missing_and_na(tmp_path):
    import torch

    from fltrust.config import ExperimentConfig
    from fltrust.core.evaluation import get_params
    from fltrust.core.records import RoundRecord, RunInfo, RunSummary
    from fltrust.models import build_model
    from fltrust.experiment import trust_observer

    cfg = ExperimentConfig.from_dict({
        "data": {"name": "synthetic_n_baiot"}, "model": {"name": "nbaiot_mlp_50_50"},
        "partition": {"num_clients": 3}, "strategy": {"name": "qfedavg", "clients_per_round": 2},
        "training": {"rounds": 2},
        "metrics": {"trust": {"enabled": True, "mode": "extended", "clever_samples": 0, "shap_samples": 0,
                              "evasion_samples": 10}},
        "run": {"name": "bare", "seed": 1},
    })
    torch.manual_seed(0)
    model = build_model("nbaiot_mlp_50_50", (115,), 2)
    x, y = torch.randn(30, 115), torch.randint(0, 2, (30,))
    observer = trust_observer(cfg, model, x, y)
    observer.run_folder = tmp_path
    counts = np.array([[5, 5], [6, 4], [3, 7]])
    info = RunInfo("bare", 3, 2, 2, counts.sum(axis=1), counts, dataset={"name": "synthetic_n_baiot"})
    observer.on_run_start(info)
    records = [RoundRecord(0, np.zeros(0, dtype=np.int64), server_metrics={"aux_accuracy": 0.5})]
    for k in (1, 2):  # no client models, no hashes: an engine that reports only metrics
        records.append(RoundRecord(k, np.array([0, k]), client_metrics={
            "reward_accuracy": np.array([0.6, 0.7]), "accuracy": np.array([0.7, 0.8]),
            "train_loss": np.array([0.5, 0.4])}, server_metrics={"aux_accuracy": 0.6}))
    for record in records:
        observer.on_round_end(record)
    out = observer.on_run_end(RunSummary(info, records, get_params(model), 1.0, {}))
    status = out["metric_status"]
    assert status["robustness/client_reliability/client_reputation"] == "missing"
    assert status["architectural_soundness/model_management/model_co_versioning"] == "missing"
    assert status["privacy/information_loss/information_leakage"] == "missing"  # no member rows given
    assert status["fairness/group_fairness/discrimination_index"] == "missing"  # no sensitive attribute given
    assert status["architectural_soundness/optimization/algorithm"] == "n/a"  # q-FedAvg has no benchmark value
    assert status["robustness/client_reliability/data_quality"] == "measured"
    assert status["robustness/resilience_to_attacks/empirical_robustness"] == "measured"
    assert status["accountability/monitoring/algorithmic_auditing"] == "measured"
    assert observer.report.metric("algorithmic_auditing").score == 0.0  # no chain recorded -> not verified
    assert np.isfinite(out["trust_score"])
    assert observer.report.notion("optimization").applicable is False
    # resume: the per-round state survives a state_dict round trip
    state = json.loads(json.dumps(observer.state_dict()))
    again = trust_observer(cfg, model, x, y)
    again.on_run_start(info)
    again.load_state_dict(state)
    assert again.extended.rounds == observer.extended.rounds and again.extended.resumed_after == 2
    again.extended.stop_energy()


def test_extended_factsheet_sections_and_provenance_rules(tmp_path):
    from fltrust.trust.factsheet import FactsheetError, missing_fields, save_factsheet

    fs = new_factsheet(extended=True)
    assert {"privacy", "robustness", "sustainability", "provenance"} <= set(fs)
    assert "privacy" not in new_factsheet()  # the paper modes' FactSheet is unchanged
    assert missing_fields(fs) == missing_fields(new_factsheet())  # completeness still counts the template
    with pytest.raises(FactsheetError, match="reason"):
        set_provenance(fs, "fairness/group_fairness/discrimination_index", "n/a", "x")
    with pytest.raises(FactsheetError, match="status"):
        set_provenance(fs, "fairness/group_fairness/discrimination_index", "guessed", "x")
    set_field(fs, "privacy/mia_risk", 0.25)
    set_provenance(fs, "privacy/information_loss/information_leakage", "measured", "MIA")
    restored = load_factsheet(save_factsheet(fs, tmp_path / "fs.json"))
    assert restored["privacy"]["mia_risk"] == 0.25 and math.isnan(restored["privacy"]["mia_auc"])
    assert score_factsheet(restored, mode="extended").metric("information_leakage").score == pytest.approx(0.75)
