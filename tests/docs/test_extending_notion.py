"""docs/extending.md, "A new fairness notion": the guide's code run as a user runs it, and the notion everywhere.

The guide's marked blocks are, in order: the user's module (written to ``my_notions.py`` in
``tmp_path``), the script that runs a tiny experiment with it, the YAML that weighs it into F_T,
and the hand check of ``round_fairness``. The notion (accuracy parity, the population variance of
the participants' accuracies) is then looked for in the run record, the notions frame, the Table
3-style summary, a plot, RESULTS.md and the HTML report, and the Flower per-round metrics of the
README's instrumented app on a :class:`~fltrust.flower.local.LocalGrid`, each time against the
variance computed by hand from the record's accuracies.
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from pathlib import Path

import guide_testing
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SECTION = "## A new fairness notion"
MARKER = "<!-- extending-notion:"
NAME = "accuracy_parity"


def guide_blocks() -> list[tuple[str, str]]:
    """``(language, code)`` of the block after each marker of the guide's section, in order."""
    return guide_testing.guide_blocks(SECTION, MARKER)


def variance(values) -> float:
    """The population variance, by hand: mean squared deviation from the mean."""
    values = [float(v) for v in values]
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / len(values)


@pytest.fixture
def user_folder(tmp_path, monkeypatch):
    """``tmp_path`` holding the guide's ``my_notions.py``, importable and the working directory;
    afterwards the notion is unregistered and the module forgotten."""
    from fltrust.metrics.fairness import NOTIONS, unregister_notion

    (tmp_path / "my_notions.py").write_text(guide_blocks()[0][1])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    if NAME in NOTIONS:
        unregister_notion(NAME)
    sys.modules.pop("my_notions", None)


def run_guide_script(capsys):
    """Run the guide's script (second block); returns its namespace."""
    namespace: dict = {}
    exec(compile(guide_blocks()[1][1], "docs/extending.md (run)", "exec"), namespace)
    capsys.readouterr()
    return namespace


def test_the_guide_has_the_users_code_and_it_registers_one_notion(user_folder):
    from fltrust.metrics.fairness import NOTIONS

    assert [language for language, _ in guide_blocks()] == ["python", "python", "yaml", "python"]
    module_code = guide_blocks()[0][1]
    assert re.findall(r"^(?:from|import) (\S+)", module_code, re.M) == ["numpy", "fltrust.metrics.fairness"]
    before = list(NOTIONS)
    import my_notions  # noqa: F401

    assert list(NOTIONS) == [*before, NAME] and before[:4] == ["f_j", "f_g", "f_r", "f_o"]
    notion = NOTIONS[NAME]
    assert notion.default_weight == 0.0 and "FederatedTrust" in notion.equation and "Var" in notion.label


def test_the_notion_is_in_the_record_the_summary_the_plots_and_the_report(user_folder, capsys):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fltrust.metrics.fairness import NOTIONS
    from fltrust.repro.fairness.figures import plot_notion_bars, save_condition_figures
    from fltrust.repro.fairness.report import results_markdown, summary_table
    from fltrust.repro.fairness.run import condition_result, notions_frame, result_frame, write_result
    from fltrust.repro.html_report import report_html
    from fltrust.repro.markdown import fmt
    from fltrust.viz.fairness import plot_notion_timeseries

    record = run_guide_script(capsys)["record"]
    label = NOTIONS[NAME].label

    # the run record: every round, the hand-computed variance; F_T stays the paper's (weight 0)
    by_round = {}
    for r in record.rounds[1:]:
        fairness = r.observations["fairness"]
        by_round[r.round] = variance(r.client_metrics["accuracy"])
        assert fairness[NAME] == pytest.approx(by_round[r.round], abs=1e-15)
        assert fairness["F_T"] == pytest.approx(sum(fairness[k] for k in ("f_j", "f_g", "f_r", "f_o")) / 4, abs=1e-12)
    assert len(by_round) == 3 and any(v > 0 for v in by_round.values())
    from fltrust.runs import load_run

    stored = load_run(record.path)  # what rounds.jsonl holds
    assert [r.observations["fairness"][NAME] for r in stored.rounds[1:]] == pytest.approx(list(by_round.values()))

    # the notions frame and the Table 3-style summary (window mean over rounds 1-3 of one repeat)
    frame = notions_frame([record])
    assert frame[NAME].tolist() == pytest.approx(list(by_round.values()))
    name = "fedavg_nslkdd_100c_iid"
    result = condition_result(name, [record], quick=True)
    first, last = result["window"]
    window = [by_round[k] for k in range(first, last + 1)]
    assert result["table3"][NAME] == pytest.approx(sum(window) / len(window))
    assert NAME in result["per_round"] and result_frame(result)[NAME].tolist() == pytest.approx(frame[NAME].tolist())
    table = summary_table([result])
    assert table.at[0, NAME] == pytest.approx(result["table3"][NAME])
    markdown = results_markdown(table, [result], quick=True)
    header = next(line for line in markdown.splitlines() if line.startswith("| condition | mode | f_j"))
    assert f"| f_o | {NAME} | F_T |" in header
    assert f"| {fmt(result['table3'][NAME], 3)} | {fmt(result['table3']['F_T'], 3)} |" in markdown

    # the plots: a line per round and a bar of the window mean, with the notion's label
    _, ax = plot_notion_timeseries(frame)
    line = next(line for line in ax.get_lines() if line.get_label() == label)
    assert list(line.get_ydata()) == pytest.approx(list(by_round.values()))
    _, ax = plot_notion_bars(frame, (first, last))
    bars = {tick.get_text(): bar.get_height() for tick, bar in zip(ax.get_xticklabels(), ax.patches)}
    assert bars[label] == pytest.approx(result["table3"][NAME])
    plt.close("all")

    # the HTML report of a results folder and a figures folder
    results_dir, figures_dir = user_folder / "results", user_folder / "figures"
    write_result(results_dir / f"{name}.json", result)
    save_condition_figures(result, figures_dir)
    plt.close("all")
    page = report_html("fairness", results_dir=results_dir, figures_dir=figures_dir, quick=True)
    assert f"<th>{NAME}</th>" in page and f"<td>{fmt(result['table3'][NAME], 3)}</td>" in page
    assert f"{name}_timeseries.png" in page and f"{name}_notions.png" in page


def test_the_notion_is_in_the_flower_per_round_metrics(user_folder, monkeypatch, capsys):
    from flwr.app import Context, RecordDict

    import fltrust.flower.app as flower_app
    from fltrust.flower.local import LocalGrid
    from fltrust.runs import load_run

    import my_notions  # noqa: F401  (the user's module, imported by their ServerApp's module)

    readme = (REPO / "README.md").read_text()
    source = re.search(r"```python\n(.*?)```", readme[readme.index("<!-- flower-app:"):], re.S).group(1)
    path = user_folder / "app.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("extending_notion_flower_app", path)
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    results = []
    start = flower_app.InstrumentedStrategy.start

    def keep(self, *args, **kwargs):
        results.append((self, start(self, *args, **kwargs)))
        return results[-1][1]

    monkeypatch.setattr(flower_app.InstrumentedStrategy, "start", keep)
    grid = LocalGrid(app.client, 4)
    app.server(grid=grid, context=Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={}))
    capsys.readouterr()

    [(strategy, result)] = results
    record = load_run(strategy.run_folder)
    assert [r.round for r in record.rounds] == [0, 1, 2, 3]
    for r in record.rounds[1:]:
        metrics = result.evaluate_metrics_serverapp[r.round]
        expected = variance(r.client_metrics["accuracy"])
        assert metrics[f"fltrust.{NAME}"] == pytest.approx(expected, abs=1e-15)
        assert r.observations["fairness"][NAME] == pytest.approx(expected, abs=1e-15)
        stored = r.observations["fairness"]["F_T"]  # None when undefined (a NaN in Flower's metrics)
        assert (math.isnan(metrics["fltrust.F_T"]) and stored is None) or metrics["fltrust.F_T"] == stored


def test_weighting_it_into_f_t_as_the_guide_says(user_folder, capsys):
    from fltrust.config import ExperimentConfig
    from fltrust.experiment import run_experiment

    run_guide_script(capsys)  # imports my_notions
    metrics = yaml.safe_load(guide_blocks()[2][1])["metrics"]
    assert metrics["fairness"]["notion_weights"] == {NAME: 0.2}
    cfg = ExperimentConfig.tiny(metrics=metrics, run={"name": "weighted"})
    assert cfg.metrics.fairness.notion_weights == {"f_j": 0.25, "f_g": 0.25, "f_r": 0.25, "f_o": 0.25, NAME: 0.2}
    record = run_experiment(cfg, out_dir=user_folder / "weighted")
    for r in record.rounds[1:]:
        fairness = r.observations["fairness"]
        paper = sum(fairness[k] for k in ("f_j", "f_g", "f_r", "f_o"))
        assert fairness["F_T"] == pytest.approx((0.25 * paper + 0.2 * fairness[NAME]) / 1.2, abs=1e-12)
    weights = record.summary["observers"]["fairness"]["settings"]["notion_weights"]
    assert weights == {"f_j": 0.25, "f_g": 0.25, "f_r": 0.25, "f_o": 0.25, NAME: 0.2}  # what F_T used


def test_the_guides_hand_check_runs(user_folder):
    import my_notions  # noqa: F401

    namespace: dict = {}
    exec(compile(guide_blocks()[3][1], "docs/extending.md (check)", "exec"), namespace)
    assert math.isclose(namespace["result"][NAME], variance([0.8, 0.6, 1.0]), abs_tol=1e-15)
