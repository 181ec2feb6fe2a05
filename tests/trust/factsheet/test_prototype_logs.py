"""The prototype's populate_factsheet on its example files: golden vectors B / Bfix (docs/references.md#trust-8-1)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fltrust.trust.factsheet.io import get_field, missing_fields
from fltrust.trust.factsheet.prototype_logs import populate_from_prototype_logs, read_eval_results_final
from fltrust.trust.factsheet.schema import FIELDS, FactsheetError, new_factsheet


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
    # bug B1 (docs/references.md#trust-b1): CLEVER and feature importance never reach the HEAD factsheet
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
    (tmp_path / "eval.log").write_text("{'Role': 'Server #', 'Round': 1}\nnot a dict\n")
    with pytest.raises(FactsheetError, match="line 2"):
        read_eval_results_final(tmp_path / "eval.log")


