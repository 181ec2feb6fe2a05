"""docs/extending.md, "A new trust metric": its code and YAML blocks, run as a newcomer would.

The guide's marked blocks are, in order: the user's module (written to ``my_trust_metrics.py`` in
``tmp_path``), the user's definitions file (``my_trust.yaml``), the script that runs a tiny
experiment in extended mode with them, and the hand check with ``score_factsheet``. The new
metric's FactSheet field, provenance, score and report lines are then checked against values
computed by hand from the run's own records.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import guide_testing
import pytest

REPO = Path(__file__).resolve().parents[2]
SECTION = "## A new trust metric"
MARKER = "<!-- extending-trust-metric:"
PATH = "fairness/performance_fairness/worst_client_accuracy"


def guide_blocks() -> list[tuple[str, str]]:
    """``(language, code)`` of the block after each marker of the guide's section, in order."""
    return guide_testing.guide_blocks(SECTION, MARKER)


@pytest.fixture
def user_files(tmp_path, monkeypatch):
    """The guide's module and definitions file where a user keeps them (the working folder);
    afterwards the measure is unregistered and the module forgotten."""
    from fltrust.trust.measures.registry import unregister_measure

    (module, code), (kind, definitions) = guide_blocks()[:2]
    assert (module, kind) == ("python", "yaml")
    (tmp_path / "my_trust_metrics.py").write_text(code)
    (tmp_path / "my_trust.yaml").write_text(definitions)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    unregister_measure("worst_client_accuracy")
    sys.modules.pop("my_trust_metrics", None)


def test_the_guide_has_the_function_the_yaml_entry_the_run_and_the_check():
    blocks = guide_blocks()
    assert [kind for kind, _ in blocks] == ["python", "yaml", "python", "python"]
    assert '@measure("fairness/worst_client_accuracy"' in blocks[0][1]
    assert "inputs: [fairness/worst_client_accuracy]" in blocks[1][1]
    assert "import my_trust_metrics" in blocks[2][1] and '"metrics_file": "my_trust.yaml"' in blocks[2][1]
    assert "score_factsheet" in blocks[3][1]


def test_the_guides_metric_is_measured_scored_and_reported(user_files):
    from fltrust.trust.factsheet import load_factsheet
    from fltrust.trust.report import TrustReport
    from fltrust.trust.scoring import load_definitions

    _, _, (_, run_code), (_, check_code) = guide_blocks()
    namespace: dict = {"__name__": "guide_run"}
    exec(compile(run_code, "docs/extending.md (run block)", "exec"), namespace)
    exec(compile(check_code, "docs/extending.md (check block)", "exec"), namespace)
    record = namespace["record"]
    folder = Path(record.path).resolve()
    assert record.status == "complete" and folder.parent == (user_files / "runs").resolve()

    # by hand: the per-client accuracies the FactSheet's performance fields use are the last round's
    # rewards (the global model each participant received, on its own validation set)
    trust = record.summary["observers"]["trust"]
    assert trust["performance_source"].startswith("global model received in the last round")
    rewards = [float(a) for a in record.rounds[-1].client_metrics["reward_accuracy"]]
    expected = min(rewards)
    assert 0 < expected < 1

    # the FactSheet: the declared field, in the section the declaration names, and its provenance
    fs = load_factsheet(folder / "factsheet.json")
    assert fs["fairness"]["worst_client_accuracy"] == pytest.approx(expected, abs=1e-12)
    entry = fs["provenance"][PATH]
    assert entry["status"] == "measured" and entry["method"].startswith("lowest per-client accuracy")

    # the score: true_score asc is the raw value; the notion is the plain mean of its two metrics,
    # the pillar the mean of its four notions, the trust score the mean of the seven pillars
    report = TrustReport.from_json((folder / "trust_report.json").read_text())
    assert report.definitions == "extended_worst_client" and report.mode == "extended"
    metric = report.metric("worst_client_accuracy")
    assert metric.path == PATH and metric.status == "measured"
    assert metric.score == pytest.approx(expected, abs=1e-12)
    notion = report.notion("performance_fairness")
    assert [m.name for m in notion.metrics] == ["accuracy_variation", "worst_client_accuracy"]
    assert notion.score == pytest.approx((notion.metrics[0].score + expected) / 2, abs=1e-12)
    fairness = report.pillar("fairness")
    applicable = [n.score for n in fairness.notions if n.applicable]
    assert fairness.score == pytest.approx(sum(applicable) / len(applicable), abs=1e-12)
    assert report.trust_score == pytest.approx(sum(p.score for p in report.pillars) / len(report.pillars), abs=1e-12)
    assert trust["trust_score"] == pytest.approx(report.trust_score)
    assert trust["metric_status"][PATH] == "measured"

    # the report's text names the metric with its score, raw value and provenance status
    text = str(report)
    [line] = [row for row in text.splitlines() if row.strip().startswith("worst_client_accuracy")]
    assert f"{expected:.2f}" in line and f"raw {expected:.4g}" in line and "[measured]" in line
    assert any(row["path"] == PATH and row["method"] == entry["method"] for row in report.provenance_rows())

    # nothing of fltrust was edited: the packaged tree does not have the metric
    assert PATH not in load_definitions(mode="extended").metric_paths()
    assert math.isfinite(report.trust_score)
