"""docs/extending.md, "A new aggregation strategy": the guide's code block, run as a newcomer would.

The block is written to a module of its own (``norm_bounded.py`` in a temporary folder on the
Python path), registered by importing it, and used from YAML (``strategy.name: normbounded``)
through the command line's ``--import``; one aggregation is checked against a hand computation
and one round of a real run against the formula, and the name is followed into the run record,
the FactSheet, the trust report and the summary.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from fltrust import registry
from fltrust.algorithms.strategies import ClientResult
from fltrust.cli import main
from fltrust.config import ConfigError, ExperimentConfig
from fltrust.core.observers import BaseObserver
from fltrust.experiment import run_experiment
from fltrust.runs import load_run

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
MARKER = "<!-- extending-strategy: tests/docs/test_extending_strategy.py extracts and runs the next code block -->"
CHECK_MARKER = ("<!-- extending-strategy: tests/docs/test_extending_strategy.py runs the next code block in the "
                "folder of norm_bounded.py -->")
SECTION = "## A new aggregation strategy"
TRUST = {"enabled": True, "clever_samples": 1, "clever_nb_batches": 2, "clever_batch_size": 2,
         "clever_pool_factor": 2, "shap_background": 8, "shap_samples": 2}


def guide_code(marker: str = MARKER) -> str:
    text = GUIDE.read_text()
    assert SECTION in text, f"{GUIDE} has no section {SECTION!r}"
    after = text.split(SECTION, 1)[1].split(marker, 1)[1]
    match = re.match(r"\s*```python\n(.*?)```", after, re.DOTALL)
    assert match, f"no python code block right after the marker {marker!r} in {GUIDE}"
    return match.group(1)


@pytest.fixture
def norm_bounded(tmp_path, monkeypatch):
    """The guide's module, imported from a folder on the path (and unregistered afterwards)."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "norm_bounded.py").write_text(guide_code())
    monkeypatch.syspath_prepend(str(folder))
    assert "normbounded" not in registry.STRATEGIES.names()
    with pytest.raises(ConfigError, match=r"strategy.name='normbounded' is not allowed"):
        ExperimentConfig.tiny(strategy={"name": "normbounded"})  # unknown until registered
    module = importlib.import_module("norm_bounded")
    yield module
    registry.STRATEGIES.unregister("normbounded")
    sys.modules.pop("norm_bounded", None)


def test_the_guides_check_runs(norm_bounded):
    exec(compile(guide_code(CHECK_MARKER), f"{GUIDE}: Checking it", "exec"), {})


def test_one_aggregation_by_hand(norm_bounded):
    """theta = (0, 0), M = 1; client a sends (3, 4) with 1 sample, client b (0.3, 0.4) with 3.

    a's update has norm 5 -> clipped to (0.6, 0.8); b's has norm 0.5 <= 1 -> kept.
    Weighted by samples 1/4, 3/4: (0.6/4 + 0.9/4, 0.8/4 + 1.2/4) = (0.375, 0.5).
    """
    strategy = norm_bounded.NormBoundedMean(norm_bound=1.0)
    results = [ClientResult(0, [np.array([3.0, 4.0], dtype=np.float32)], 1, 1),
               ClientResult(1, [np.array([0.3, 0.4], dtype=np.float32)], 3, 1)]
    new = strategy.aggregate([np.zeros(2, dtype=np.float32)], results, server_loss=0.0)
    assert new[0].dtype == np.float32
    np.testing.assert_allclose(new[0], [0.375, 0.5], rtol=1e-6)
    with pytest.raises(ValueError, match="norm_bound"):
        norm_bounded.NormBoundedMean(norm_bound=0.0)


class Rounds(BaseObserver):
    """Keeps each round's models (the record's transient fields)."""

    name = "rounds"

    def __init__(self):
        self.rounds = []

    def on_round_end(self, record):
        if record.round >= 1:
            self.rounds.append(record)
        return {}


def write_config(tmp_path: Path) -> Path:
    cfg = {
        "data": {"name": "synthetic_nsl_kdd", "synthetic_samples": 600},
        "partition": {"num_clients": 6, "scheme": "iid"},
        "model": {"name": "nsl_kdd_mlp"},
        "strategy": {"name": "normbounded", "clients_per_round": 3, "options": {"norm_bound": 0.5}},
        "training": {"rounds": 2},
        "metrics": {"trust": TRUST},
        "run": {"name": "normbounded", "progress": False, "torch_threads": 1, "device": "cpu"},
    }
    path = tmp_path / "my_experiment.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_the_strategy_runs_from_yaml_and_shows_in_the_record(norm_bounded, tmp_path, capsys):
    config = write_config(tmp_path)
    sys.modules.pop("norm_bounded")  # the command line imports it itself
    registry.STRATEGIES.unregister("normbounded")
    assert main(["run", str(config), "--import", "norm_bounded", "--out", str(tmp_path / "runs")]) == 0
    run_dir = Path(capsys.readouterr().out.split("record: ")[1].strip())
    record = load_run(run_dir)

    # the run record: the name and its option, in the config the run id hashes
    assert record.config["strategy"]["name"] == "normbounded"
    assert record.config["strategy"]["options"] == {"norm_bound": 0.5}
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["strategy"]["options"] == {"norm_bound": 0.5}
    cfg = ExperimentConfig.from_yaml(config)
    assert record.run_id.startswith(f"normbounded-{cfg.config_hash()}-")
    assert cfg.config_hash() != cfg.with_overrides({"strategy.options.norm_bound": 0.25}).config_hash()
    # the FactSheet: the aggregation algorithm under its own name
    factsheet = json.loads((run_dir / "factsheet.json").read_text())
    assert factsheet["configuration"]["optimization_algorithm"] == "normbounded"
    # the trust report: the aggregation-algorithm metric reads it, and ranks only the names it knows
    report = json.loads((run_dir / "trust_report.json").read_text())
    metric, = [m for m in _metrics(report) if m.get("path") == "architectural_soundness/optimization/algorithm"]
    assert metric["raw_value"] == "normbounded" and metric["score"] == 0.0
    # the summary: complete, no DP, the trust score among the observers' outputs
    assert record.summary["status"] == "complete" and record.summary["privacy"] == "no differential privacy"
    trust = record.summary["observers"]["trust"]
    assert 0.0 <= trust["trust_score"] <= 1.0 and "architectural_soundness" in trust["pillars"]


def _metrics(node):
    """Every metric entry of a trust report (nested pillars -> notions -> metrics)."""
    if isinstance(node, dict):
        if "operation" in node and "path" in node:
            yield node
        for value in node.values():
            yield from _metrics(value)
    elif isinstance(node, list):
        for value in node:
            yield from _metrics(value)


def test_a_round_of_a_run_is_the_norm_bounded_mean(norm_bounded, tmp_path):
    seen = Rounds()
    cfg = ExperimentConfig.tiny(strategy={"name": "normbounded", "options": {"norm_bound": 0.05}})
    run_experiment(cfg, observers=[seen], out_dir=tmp_path)
    r = seen.rounds[0]
    theta = [p.astype(np.float64) for p in r.global_params_before]
    weights = r.client_metrics["num_samples"] / r.client_metrics["num_samples"].sum()
    expected = [t.copy() for t in theta]
    for w, params in zip(weights, r.client_params):
        update = [p.astype(np.float64) - t for p, t in zip(params, theta)]
        norm = np.sqrt(sum(float(np.sum(u * u)) for u in update))
        assert norm > 0.05  # every update is clipped at this bound
        for e, u in zip(expected, update):
            e += w * u * min(1.0, 0.05 / norm)
    for got, want in zip(r.global_params_after, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    step = np.sqrt(sum(float(np.sum((a.astype(np.float64) - t) ** 2)) for a, t in zip(r.global_params_after, theta)))
    assert step <= 0.05 + 1e-6  # a mean of updates of norm <= M moves the model by at most M


def test_an_unknown_option_is_one_line(norm_bounded):
    from fltrust.experiment import check_experiment

    with pytest.raises(ConfigError, match=r"strategy.options \['norm_bond'\] are not parameters of "
                                          r"strategy.name='normbounded'; its parameters: \['norm_bound', 'weighting'\]"):
        check_experiment(ExperimentConfig.tiny(strategy={"name": "normbounded", "options": {"norm_bond": 1.0}}))
    with pytest.raises(ConfigError, match="has no Flower counterpart"):
        check_experiment(ExperimentConfig.tiny(strategy={"name": "normbounded"}, run={"engine": "flower"}))
