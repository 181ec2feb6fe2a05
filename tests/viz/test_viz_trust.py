"""FederatedTrust figures (fltrust.viz.trust) drawn from small hand-made reports: axes, labels and bar values."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from fltrust.trust.report import MetricResult, NotionResult, PillarResult, TrustReport
from fltrust.viz.trust import (
    COMPARISON_COLUMNS,
    TrustPlotError,
    plot_attack_ablation,
    plot_experiment_report,
    plot_pillar_comparison,
)

QUICK_TAG = "[QUICK run, not comparable with the paper]"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def metric(pillar: str, name: str, label: str, score: float) -> MetricResult:
    return MetricResult(name=name, label=label, path=f"{pillar}/n/{name}", operation="", type="", direction="",
                        weight=None, inputs={}, raw_value=None, normalized=score, score=score)


def report(trust_score: float = 0.45) -> TrustReport:
    """Two pillars: Privacy 0.6 (one metric 0.6) and Robustness NaN (metrics CLEVER NaN, Performance 0.9)."""
    privacy = PillarResult("privacy", "Privacy", None, 0.6,
                           [NotionResult("n", "N", None, 0.6, [metric("privacy", "dp", "Differential privacy", 0.6)])])
    robustness = PillarResult("robustness", "Robustness", None, math.nan,
                              [NotionResult("n", "N", None, math.nan,
                                            [metric("robustness", "clever", "CLEVER", math.nan),
                                             metric("robustness", "performance", "Performance", 0.9)])])
    return TrustReport(trust_score=trust_score, pillars=[privacy, robustness], mode="fixed", definitions="paper",
                       definitions_source="test", pillar_aggregation="notion_mean", use_weights=False,
                       rounding="final", fixes=[])


def heights(ax) -> list[float]:
    return [round(float(p.get_height()), 6) for p in ax.patches]


# -- one experiment's report ---------------------------------------------------------------------------
def test_experiment_report_draws_pillars_metrics_and_the_trust_line():
    # Execute
    fig, (pillar_ax, metric_ax) = plot_experiment_report(report(), title="exp1: NSL-KDD", quick=True)

    # Assert: the title names the experiment and the mode under the QUICK tag
    assert fig.get_suptitle() == f"{QUICK_TAG}\nexp1: NSL-KDD -- fixed mode"
    # pillars: one bar each, a NaN pillar drawn as an empty bar labelled "nan"; the trust score as a line
    assert [t.get_text() for t in pillar_ax.get_xticklabels()] == ["Privacy", "Robustness"]
    assert heights(pillar_ax) == [0.6, 0.0]
    assert [t.get_text() for t in pillar_ax.texts] == ["0.60", "nan"]
    (line,) = pillar_ax.get_lines()
    assert list(line.get_ydata()) == [0.45, 0.45] and line.get_linestyle() == "--"
    assert pillar_ax.get_title() == "Trust score 0.45 (fixed mode)"
    assert pillar_ax.get_ylabel() == "score" and pillar_ax.get_ylim() == (0.0, 1.1)
    # metrics: one horizontal bar per metric, top to bottom in definition order, "pillar: metric"
    labels = [t.get_text() for t in metric_ax.get_yticklabels()]
    positions = list(metric_ax.get_yticks())
    top_down = [label for _, label in sorted(zip(positions, labels), reverse=True)]
    assert top_down == ["Privacy: Differential privacy", "Robustness: CLEVER", "Robustness: Performance"]
    assert [round(p.get_width(), 6) for p in metric_ax.patches] == [0.6, 0.0, 0.9]
    assert metric_ax.get_xlabel() == "metric score"


def test_experiment_report_with_an_undefined_trust_score_has_no_line():
    fig, (pillar_ax, _) = plot_experiment_report(report(math.nan), title="exp2", synthetic=True)
    assert pillar_ax.get_lines() == [] and pillar_ax.get_title() == "Trust score nan (fixed mode)"
    assert fig.get_suptitle() == "[SYNTHETIC data]\nexp2 -- fixed mode"


def test_experiment_report_draws_into_given_axes():
    fig, axes = plt.subplots(1, 2)
    out_fig, out_axes = plot_experiment_report(report(), title="t", ax=axes)
    assert out_fig is fig and out_axes[0] is axes[0] and out_axes[1] is axes[1]
    assert fig.get_suptitle() == "t -- fixed mode"


# -- paper vs ours -----------------------------------------------------------------------------------------
def comparison() -> pd.DataFrame:
    """exp1 (real data) and exp2 (synthetic), items trust and privacy, fixed rows before prototype rows.

    exp1 states no privacy score in the paper (NaN, drawn as "n/s"); exp2's prototype trust 1.6
    (raw CLEVER above 1) lifts the y axis to 1.6 + 0.1 = 1.7.
    """
    rows = []
    values = {  # (experiment, item): (paper, fixed, prototype)
        ("exp1", "trust_score"): (0.7, 0.65, 0.6), ("exp1", "privacy"): (math.nan, 0.3, 0.2),
        ("exp2", "trust_score"): (0.5, 0.55, 1.6), ("exp2", "privacy"): (0.4, 0.45, 0.35),
    }
    for mode, position in (("fixed", 1), ("prototype", 2)):
        for (experiment, item), triple in values.items():
            rows.append({"experiment": experiment, "mode": mode, "item": item,
                         "label": {"trust_score": "Trust", "privacy": "Privacy"}[item],
                         "paper": triple[0], "ours": triple[position], "synthetic": experiment == "exp2",
                         "quick": False})
    return pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))


def test_pillar_comparison_draws_paper_and_each_mode_per_experiment():
    # Execute
    fig, axes = plot_pillar_comparison(comparison())

    # Assert: one panel per experiment, SYNTHETIC in the synthetic one's title
    exp1, exp2 = axes.flat[0], axes.flat[1]
    assert axes.shape == (1, 2) and [exp1.get_title(), exp2.get_title()] == ["exp1", "exp2 [SYNTHETIC data]"]
    # bars: paper (2 items), then the modes in prototype, fixed order (not the table's order)
    assert heights(exp1) == [0.7, 0.0, 0.6, 0.2, 0.65, 0.3]
    assert heights(exp2) == [0.5, 0.4, 1.6, 0.35, 0.55, 0.45]
    # exp1's missing paper value is marked "n/s" over the privacy position, exp2 has none
    assert [t.get_text() for t in exp1.texts] == ["n/s"] and len(exp2.texts) == 0
    assert exp1.texts[0].xy[0] == pytest.approx(1 - 0.4 + 0.8 / 3 / 2)  # x = 1 - 0.4 + width / 2, width = 0.8 / 3
    assert [t.get_text() for t in exp1.get_xticklabels()] == ["Trust", "Privacy"]
    assert exp1.get_ylim() == pytest.approx((0.0, 1.7)) and exp1.get_ylabel() == "score"
    assert [t.get_text() for t in fig.legends[0].texts] == ["paper (stated in the text)", "ours, prototype mode",
                                                            "ours, fixed mode"]
    assert QUICK_TAG not in fig.get_suptitle() and "paper vs ours" in fig.get_suptitle()


def test_pillar_comparison_of_chosen_modes_and_quick_tag():
    fig, axes = plot_pillar_comparison(comparison(), modes=["fixed"], quick=True)
    assert heights(axes.flat[0]) == [0.7, 0.0, 0.65, 0.3]
    assert fig.get_suptitle().startswith(QUICK_TAG)


def test_pillar_comparison_hides_unused_grid_cells():
    # 4 experiments: 3 columns, 2 rows, the last 2 cells hidden
    frame = pd.concat([comparison().assign(experiment=lambda f, e=e: f["experiment"] + e) for e in ("a", "b")])
    fig, axes = plot_pillar_comparison(frame)
    assert axes.shape == (2, 3) and [ax.get_visible() for ax in axes.flat] == [True] * 4 + [False] * 2
    assert [ax.get_title() for ax in axes.flat[:4]] == ["exp1a", "exp2a [SYNTHETIC data]", "exp1b",
                                                        "exp2b [SYNTHETIC data]"]


@pytest.mark.parametrize("change, message", [
    (lambda f: f.drop(columns="ours"), r"lacks columns \['ours'\]"),
    (lambda f: f.iloc[0:0], "comparison table is empty"),
])
def test_pillar_comparison_rejects_bad_tables(change, message):
    with pytest.raises(TrustPlotError, match=message):
        plot_pillar_comparison(change(comparison()))


def test_pillar_comparison_rejects_a_mode_not_in_the_table():
    message = r"modes \['paper'\] are not in the table; it has \['fixed', 'prototype'\]"
    with pytest.raises(TrustPlotError, match=message):
        plot_pillar_comparison(comparison(), modes=["fixed", "paper"])


# -- attack ablation ------------------------------------------------------------------------------------------
def test_attack_ablation_bars_labels_and_title():
    # Prepare: clean FedAvg, attacked FedAvg, attacked Krum (f = 1) whose trust score is missing
    runs = [
        {"run": "clean", "strategy": "fedavg", "num_malicious_nodes": 0, "test_accuracy": 0.99,
         "pillars": {"robustness": 0.5}, "trust_score": 0.7},
        {"run": "fedavg", "strategy": "fedavg", "num_malicious_nodes": 0, "test_accuracy": 0.6,
         "pillars": {"robustness": 0.4}, "trust_score": 0.6},
        {"run": "krum", "strategy": "krum", "num_malicious_nodes": 1, "test_accuracy": 0.95,
         "pillars": {}, "trust_score": None},
    ]
    ablation = {"experiment": "exp4", "synthetic": True, "attack": {"description": "scale (s = -10)"}, "runs": runs}

    # Execute
    fig, ax = plot_attack_ablation(ablation)

    # Assert: three series of three bars, None drawn as NaN (no bar)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["clean\nFedAvg", "attacked\nFedAvg", "attacked\nKrum (f = 1)"]
    drawn = [float(p.get_height()) for p in ax.patches]
    np.testing.assert_allclose(drawn, [0.99, 0.6, 0.95, 0.5, 0.4, np.nan, 0.7, 0.6, np.nan])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "test accuracy", "robustness pillar (extended)", "trust score (extended)"]
    assert [t.get_text() for t in ax.texts][:3] == ["0.99", "0.60", "0.95"]  # bar labels, 2 decimals
    assert ax.get_title() == "SYNTHETIC N-BaIoT: exp4, scale (s = -10)" and ax.get_ylim() == (0.0, 1.1)


def test_attack_ablation_on_real_data_has_no_synthetic_tag():
    run = {"run": "clean", "strategy": "fedmedian", "test_accuracy": 0.9, "pillars": {"robustness": 0.5},
           "trust_score": 0.6}
    _, ax = plot_attack_ablation({"experiment": "exp4", "attack": {"description": "d"}, "runs": [run]})
    assert ax.get_title() == "exp4, d" and ax.get_xticklabels()[0].get_text() == "clean\nFedMedian"
