"""FactSheet schema, completeness, population (golden vectors B / Bfix of trust spec 8.1) and I/O."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from fltrust.config import ExperimentConfig
from fltrust.models import build_model
from fltrust.trust.factsheet import (
    FIELDS,
    SECTIONS,
    FactsheetError,
    get_field,
    is_missing,
    load_factsheet,
    missing_fields,
    new_factsheet,
    populate_from_prototype_logs,
    populate_pre_training,
    save_factsheet,
    set_field,
)


@pytest.fixture(scope="module")
def example(golden_dir: Path) -> Path:
    """The FederatedTrust example inputs vendored in ``tests/trust/golden/``."""
    return golden_dir


def _populate(example: Path, *, fix_b1: bool) -> dict:
    fs = new_factsheet(include_extras=False)
    return populate_from_prototype_logs(
        fs,
        example / "config.yaml",
        example / "eval_results.log",
        example / "system_metrics.log",
        example / "statistics.json",
        trainable_param_names=12,
        fix_b1=fix_b1,
    )


# -- template and schema ------------------------------------------------------------------------

def test_template_matches_the_prototype_template(example: Path) -> None:
    # Prepare
    prototype = json.loads((example / "factsheet_template.json").read_text())
    # Execute
    ours = new_factsheet(include_extras=False)
    # Assert: same sections, fields and defaults, except the system sizes, which are numbers here
    assert list(ours) == list(SECTIONS)
    assert {s: list(f) for s, f in ours.items()} == {s: list(f) for s, f in prototype.items()}
    for section, fields in prototype.items():
        for name, value in fields.items():
            ours_value = ours[section][name]
            if section == "system" and name != "avg_time_minutes":
                assert value == "" and math.isnan(ours_value)
            elif isinstance(value, float) and math.isnan(value):
                assert math.isnan(ours_value), f"{section}/{name}"
            else:
                assert ours_value == value, f"{section}/{name}"


def test_extras_are_in_the_full_template() -> None:
    fs = new_factsheet()
    assert fs["project"]["organisations"] == []
    assert math.isnan(fs["configuration"]["trainable_param_count"])
    assert {f.path for f in FIELDS if f.extra} == {
        "project/organisations", "configuration/trainable_param_count", "fairness/test_acc_cv_raw",
        "fairness/selection_cv_raw", "fairness/class_imbalance_raw",
    }


def test_set_field_rejects_unknown_paths() -> None:
    with pytest.raises(FactsheetError, match="not a FactSheet field"):
        set_field(new_factsheet(), "performance/test_accuracy", 0.5)


# -- missing fields (B2) ----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "prototype_missing", "fixed_missing"),
    [
        (None, True, True),
        ("", True, True),
        ("   ", False, True),
        (float("nan"), False, True),
        ([], False, True),
        (False, False, False),
        (0, False, False),
        ("FedAvg", False, False),
    ],
)
def test_is_missing_in_both_modes(value, prototype_missing: bool, fixed_missing: bool) -> None:
    assert is_missing(value, nan_is_missing=False) is prototype_missing
    assert is_missing(value, nan_is_missing=True) is fixed_missing


def test_missing_fields_lists_paths_in_schema_order() -> None:
    # Prepare
    fs = new_factsheet()
    for spec in FIELDS:
        set_field(fs, spec.path, {"str": "x", "text": "x", "number": 1.0, "bool": True, "list": ["a"]}[spec.kind])
    set_field(fs, "project/purpose", " ")
    set_field(fs, "configuration/dp_epsilon", float("nan"))
    set_field(fs, "system/avg_model_size", None)
    del fs["data"]["avg_entropy"]
    # Execute
    fixed = missing_fields(fs)
    prototype = missing_fields(fs, nan_is_missing=False)
    # Assert
    assert fixed == ["project/purpose", "data/avg_entropy", "configuration/dp_epsilon", "system/avg_model_size"]
    assert prototype == ["data/avg_entropy", "system/avg_model_size"]


# -- golden vectors B and Bfix ------------------------------------------------------------------------

def test_vector_b_fields(example: Path) -> None:
    # Execute
    fs = _populate(example, fix_b1=False)
    # Assert (trust spec 8.1, vector B)
    assert get_field(fs, "project/overview") == "unweighted_exp_3"
    assert get_field(fs, "project/purpose") == "" and get_field(fs, "project/background") == ""
    assert get_field(fs, "data/provenance") == "femnist"
    assert get_field(fs, "data/preprocessing") == [["ToTensor", {}], ["Normalize", {"mean": [0.1307], "std": [0.3081]}]]
    assert get_field(fs, "participants/client_num") == 100
    assert get_field(fs, "participants/sample_client_rate") == 0.6
    assert get_field(fs, "participants/client_selector") == "uniform"
    assert get_field(fs, "configuration/optimization_algorithm") == "FedAvg"
    assert get_field(fs, "configuration/training_model") == "CNN"
    assert get_field(fs, "configuration/personalization") is False
    assert get_field(fs, "configuration/differential_privacy") is False
    assert math.isnan(get_field(fs, "configuration/dp_epsilon"))
    assert get_field(fs, "configuration/trainable_param_num") == 12
    assert get_field(fs, "configuration/trainable_param_count") == 6_603_902
    assert get_field(fs, "configuration/total_round_num") == 50
    assert get_field(fs, "configuration/learning_rate") == 0.01
    assert get_field(fs, "configuration/local_update_steps") == 1
    assert get_field(fs, "performance/test_loss_avg") == 67.98441176563502
    assert get_field(fs, "performance/test_acc_avg") == 0.5869965673573276
    assert get_field(fs, "fairness/test_acc_cv") == 0.23259304933987987
    assert get_field(fs, "data/avg_entropy") == 0.5847228374416231
    assert get_field(fs, "fairness/selection_cv") == 0.40824829046386296
    assert get_field(fs, "fairness/class_imbalance") == 1.0
    assert get_field(fs, "fairness/class_imbalance_raw") == pytest.approx(1.444546, abs=5e-7)
    assert get_field(fs, "system/avg_time_minutes") == 89.05665656930694
    assert get_field(fs, "system/avg_model_size") == "6.24M"
    assert get_field(fs, "system/avg_upload_bytes") == "366.9K"
    assert get_field(fs, "system/avg_download_bytes") == "366.88K"
    # bug B1: CLEVER and feature importance never reach the HEAD factsheet
    assert math.isnan(get_field(fs, "performance/test_clever"))
    assert math.isnan(get_field(fs, "performance/test_feature_importance_cv"))


def test_vector_bfix_takes_clever_and_feature_importance_from_the_final_summary(example: Path) -> None:
    fs = _populate(example, fix_b1=True)
    assert get_field(fs, "performance/test_clever") == 0.8754049303929509
    assert get_field(fs, "performance/test_feature_importance_cv") == 1.0
    assert get_field(fs, "fairness/selection_cv") == 0.40824829046386296


def test_vector_b_completeness_matches_the_prototype_rule(example: Path) -> None:
    fs = _populate(example, fix_b1=False)
    template_paths = [f.path for f in FIELDS if not f.extra]
    # prototype rule: NaN counts as present, so only the empty purpose and background are missing
    assert missing_fields(fs, nan_is_missing=False, paths=template_paths) == ["project/purpose", "project/background"]
    assert missing_fields(fs, paths=template_paths) == [
        "project/purpose", "project/background", "configuration/dp_epsilon",
        "performance/test_feature_importance_cv", "performance/test_clever",
    ]


def test_unknown_model_type_names_the_map(example: Path, tmp_path: Path) -> None:
    # Prepare
    config = (example / "config.yaml").read_text().replace("type: convnet2", "type: lr")
    (tmp_path / "config.yaml").write_text(config)
    # Execute / Assert
    with pytest.raises(FactsheetError, match="'lr' .* not in the model map"):
        populate_from_prototype_logs(
            new_factsheet(), tmp_path / "config.yaml", example / "eval_results.log",
            example / "system_metrics.log", example / "statistics.json",
        )


def test_bad_eval_log_line_is_reported_with_its_number(tmp_path: Path) -> None:
    from fltrust.trust.factsheet import read_eval_results_final

    (tmp_path / "eval.log").write_text("{'Role': 'Server #', 'Round': 1}\nnot a dict\n")
    with pytest.raises(FactsheetError, match="line 2"):
        read_eval_results_final(tmp_path / "eval.log")


# -- pre-training population ----------------------------------------------------------------------------

def _cfg(**overrides) -> ExperimentConfig:
    base = {
        "data": {"name": "synthetic_nsl_kdd"},
        "partition": {"num_clients": 10},
        "strategy": {"name": "ditto", "fraction_fit": 0.35},
        "training": {"rounds": 7, "learning_rate": 0.05, "local_epochs": 2},
        "privacy": {"mode": "local", "target_epsilon": 4.0},
        "run": {"name": "demo_run"},
    }
    return ExperimentConfig.from_dict(base).with_overrides(overrides)


def test_populate_pre_training_from_config_and_model() -> None:
    # Prepare
    cfg = _cfg()
    model = build_model("nsl_kdd_mlp", (122,), 2)
    summary = {"name": "synthetic_nsl_kdd", "synthetic": True, "source": {"generator": "synthetic_nsl_kdd", "seed": 4}}
    # Execute
    fs = populate_pre_training(new_factsheet(), cfg, model, summary)
    # Assert
    assert get_field(fs, "project/overview") == "demo_run"
    assert get_field(fs, "participants/client_num") == 10
    assert get_field(fs, "participants/sample_client_rate") == 0.3  # int(10 * 0.35) = 3 per round
    assert get_field(fs, "participants/client_selector") == "uniform"
    assert get_field(fs, "configuration/optimization_algorithm") == "Ditto"
    assert get_field(fs, "configuration/training_model") == "MLPClassifier"
    assert get_field(fs, "configuration/personalization") is True
    assert get_field(fs, "configuration/differential_privacy") is True
    assert get_field(fs, "configuration/dp_epsilon") == 4.0
    assert get_field(fs, "configuration/trainable_param_num") == 8  # 4 Linear layers x (weight, bias)
    assert get_field(fs, "configuration/trainable_param_count") == 45_141
    assert get_field(fs, "configuration/total_round_num") == 7
    assert get_field(fs, "configuration/learning_rate") == 0.05
    assert get_field(fs, "configuration/local_update_steps") == 2
    assert get_field(fs, "data/provenance") == "synthetic_nsl_kdd (SYNTHETIC stand-in, generated samples)"
    assert get_field(fs, "data/preprocessing") == (
        "none: samples generated by synthetic_nsl_kdd, seed 4 in the nsl_kdd feature layout"
    )
    # user-supplied fields are reported, never invented
    assert missing_fields(fs, paths=["project/purpose", "project/background", "project/organisations"]) == [
        "project/purpose", "project/background", "project/organisations",
    ]


def test_populate_pre_training_copies_project_fields_and_names_files() -> None:
    # Prepare
    cfg = _cfg(**{"project.overview": "IDS study", "project.purpose": "compare DP", "project.background": "NSL-KDD",
                  "project.organisations": ["Lab A", "Lab B"], "privacy.mode": "none", "strategy.name": "qfedavg"})
    summary = {"name": "nsl_kdd", "synthetic": False, "source": {
        "train_files": [{"path": "KDDTrain+.txt", "bytes": 1, "sha256": "x"}],
        "test_files": [{"path": "KDDTest+.txt", "bytes": 1, "sha256": "y"}], "scaling": "fit_train"}}
    # Execute
    fs = populate_pre_training(new_factsheet(), cfg, torch.nn.Linear(3, 1), summary)
    # Assert
    assert get_field(fs, "project/overview") == "IDS study"
    assert get_field(fs, "project/organisations") == ["Lab A", "Lab B"]
    assert get_field(fs, "data/provenance") == "nsl_kdd (real data; files: KDDTrain+.txt, KDDTest+.txt)"
    assert get_field(fs, "data/preprocessing").startswith("38 continuous features min-max scaled; one-hot")
    assert get_field(fs, "data/preprocessing").endswith("scaling=fit_train, onehot_order=global")
    assert get_field(fs, "configuration/optimization_algorithm") == "q-FedAvg"
    assert get_field(fs, "configuration/differential_privacy") is False
    assert math.isnan(get_field(fs, "configuration/dp_epsilon"))
    assert missing_fields(fs, paths=[f.path for f in FIELDS if f.path.startswith(("project", "configuration/d"))]) == [
        "configuration/dp_epsilon",
    ]


# -- I/O (B13) ---------------------------------------------------------------------------------------

def test_save_writes_null_and_load_restores_nan(tmp_path: Path) -> None:
    # Prepare
    fs = new_factsheet()
    set_field(fs, "participants/client_num", 5)
    # Execute
    path = save_factsheet(fs, tmp_path / "run" / "factsheet.json")
    text = path.read_text()
    loaded = load_factsheet(path)
    # Assert
    assert "NaN" not in text and '"avg_entropy": null' in text
    json.loads(text)  # standard JSON
    assert loaded["participants"]["client_num"] == 5
    assert math.isnan(loaded["data"]["avg_entropy"])
    assert list(loaded) == list(fs)


def test_prototype_mode_writes_nan_tokens(tmp_path: Path) -> None:
    path = save_factsheet(new_factsheet(), tmp_path / "fs.json", nan_as_null=False)
    assert '"avg_entropy": NaN' in path.read_text()
    assert math.isnan(load_factsheet(path)["performance"]["test_clever"])


def test_load_rejects_missing_and_non_object_files(tmp_path: Path) -> None:
    with pytest.raises(FactsheetError, match="does not exist"):
        load_factsheet(tmp_path / "nope.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(FactsheetError, match="JSON object"):
        load_factsheet(tmp_path / "list.json")
