"""TrustReport serialisation, table, frame, figure and writer."""

from __future__ import annotations

import json
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from fltrust.trust.report import REPORT_JSON, REPORT_PNG, TrustReport, plot_trust_report, write_report
from fltrust.trust.scoring import score_factsheet


def _factsheet(model: str = "CNN") -> dict:
    """A small complete factsheet (values chosen by hand, NaN dp_epsilon as in the template)."""
    return {
        "project": {"overview": "unit test", "purpose": "", "background": ""},
        "data": {"provenance": "nsl_kdd", "preprocessing": ["onehot"], "avg_entropy": 0.5},
        "participants": {"client_num": 10, "sample_client_rate": 0.5, "client_selector": "uniform"},
        "configuration": {
            "optimization_algorithm": "FedAvg", "training_model": model, "personalization": False,
            "differential_privacy": False, "dp_epsilon": math.nan, "trainable_param_num": 6,
            "total_round_num": 5, "learning_rate": 0.01, "local_update_steps": 1,
        },
        "performance": {"test_loss_avg": 0.3, "test_acc_avg": 0.9, "test_feature_importance_cv": 0.4, "test_clever": 0.5},
        "fairness": {"test_acc_cv": 0.1, "selection_cv": 0.2, "class_imbalance": 0.3},
        "system": {"avg_time_minutes": 1.0, "avg_model_size": "8K", "avg_upload_bytes": "1K", "avg_download_bytes": "1K"},
    }


def _no_nan_token(text: str) -> dict:
    def reject(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=reject)


def test_json_round_trip_with_nan_scores():
    # Prepare: an unknown model makes the prototype's explainability and trust NaN (B7, docs/references.md#trust-b7)
    report = score_factsheet(_factsheet(model="ResNet18"), mode="prototype")

    # Execute
    text = report.to_json()
    restored = TrustReport.from_json(text)

    # Assert
    data = _no_nan_token(text)
    assert data["trust_score"] is None
    assert data["pillars"][1]["score"] == report.pillar("privacy").score
    assert math.isnan(restored.trust_score)
    assert math.isnan(restored.pillar("explainability").score)
    assert restored.to_dict() == data
    assert restored.metric("robustness/performance").inputs == {"performance/test_acc_avg": 0.9}
    assert restored.metric("configuration").inputs["configuration/dp_epsilon"] is None  # NaN -> null


def test_report_records_inputs_raw_values_and_settings():
    report = score_factsheet(_factsheet(), mode="fixed")
    gpr = report.metric("global_privacy_risk")
    assert gpr.inputs == {
        "configuration/differential_privacy": False,
        "configuration/dp_epsilon": pytest.approx(math.nan, nan_ok=True),
        "participants/client_num": 10,
    }
    assert gpr.raw_value == 1.0 and gpr.normalized == 0.0 and gpr.weight == 1.0
    assert report.mode == "fixed" and report.rounding == "final" and "cap_cvs" in report.fixes
    assert report.pillar("privacy").weight == 0.2 and report.notion("uncertainty").weight == 0.6


def test_prototype_dict_layout():
    report = score_factsheet(_factsheet())
    out = report.to_prototype_dict()
    assert list(out) == ["trust_score", "pillars"]
    assert list(out["pillars"][0]) == ["robustness"]
    first_notion = out["pillars"][0]["robustness"]["notions"][0]
    assert first_notion == {"resilience_to_attacks": {"score": 0.5, "metrics": [{"certified_robustness": {"score": 0.5}}]}}


def test_metric_lookup_rejects_ambiguous_names():
    report = score_factsheet(_factsheet())
    with pytest.raises(KeyError, match="2 metrics match 'performance'"):
        report.metric("performance")
    assert report.metric("accountability/performance").score == 1.0


def test_frame_and_table():
    # Prepare
    report = score_factsheet(_factsheet())

    # Execute
    frame = report.to_frame()
    table = report.format_table()

    # Assert
    assert len(frame) == 22
    assert frame.attrs["trust_score"] == report.trust_score
    row = frame[(frame.pillar == "fairness") & (frame.metric == "class_imbalance")].iloc[0]
    assert row.raw_value == 0.3 and row.score == 0.7 and row.pillar_score == report.pillar("fairness").score
    assert table.splitlines()[0].split() == ["trust_score", f"{report.trust_score:.2f}"]
    for pillar in report.pillars:
        assert pillar.name in table


def test_plot_smoke():
    # Prepare
    report = score_factsheet(_factsheet(model="ResNet18"))  # NaN scores must not break the plot

    # Execute
    fig, (pillar_ax, metric_ax) = plot_trust_report(report)

    # Assert
    assert len(pillar_ax.patches) == 6
    assert len(metric_ax.patches) == 22
    assert [t.get_text() for t in pillar_ax.get_xticklabels()][-1] == "Federation"
    plt.close(fig)


def test_plot_into_given_axes():
    fig, axes = plt.subplots(1, 2)
    out_fig, out_axes = plot_trust_report(score_factsheet(_factsheet()), ax=axes)
    assert out_fig is fig and out_axes[0] is axes[0]
    plt.close(fig)
    with pytest.raises(ValueError, match="pair of Axes"):
        plot_trust_report(score_factsheet(_factsheet()), ax=[axes[0]])


def test_write_report_overwrites_atomically(tmp_path):
    # Prepare
    first = score_factsheet(_factsheet(), mode="prototype")
    second = score_factsheet(_factsheet(), mode="fixed")

    # Execute
    paths = write_report(first, tmp_path / "run")
    write_report(second, tmp_path / "run", plot=False)

    # Assert: one JSON document (not appended), the latest report; no temporary files left
    assert paths == {"json": tmp_path / "run" / REPORT_JSON, "png": tmp_path / "run" / REPORT_PNG}
    assert _no_nan_token(paths["json"].read_text()) == second.to_dict()
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [REPORT_JSON, REPORT_PNG]
