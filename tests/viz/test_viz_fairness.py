"""Smoke and value tests of the plain-table fairness plots (fltrust.viz.fairness)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from fltrust.metrics.fairness.registry import FAIRNESS_KEYS
from fltrust.viz.fairness import (
    NOTION_LABELS,
    PlotInputError,
    figure_title,
    palette,
    pareto_front,
    plot_notion_timeseries,
    require_columns,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def frame(fairness_rounds) -> pd.DataFrame:
    return fairness_rounds


def _line(ax, label):
    return next(line for line in ax.get_lines() if line.get_label() == label)


def test_figure_title_marks_quick_and_synthetic():
    # Prepare / Execute
    plain = figure_title("T")
    marked = figure_title("T", quick=True, synthetic=True)

    # Assert
    assert plain == "T"
    assert "QUICK" in marked and "SYNTHETIC" in marked and marked.endswith("T")


def test_timeseries_plots_repeat_mean_with_band(frame, tmp_path):
    # Execute
    fig, ax = plot_notion_timeseries(frame, window=(3, 6), quick=True)

    # Assert: one line per notion, the F_T line is the per-round mean over repeats (0.45 + 0.01 k)
    labels = [line.get_label() for line in ax.get_lines()]
    assert [NOTION_LABELS[k] for k in FAIRNESS_KEYS] == labels
    np.testing.assert_allclose(_line(ax, NOTION_LABELS["F_T"]).get_ydata(), 0.45 + 0.01 * np.arange(1, 7))
    assert len(ax.collections) >= 1  # std band of the varying notions (two repeats)
    assert "QUICK" in ax.get_title() and "SYNTHETIC" not in ax.get_title()
    fig.savefig(tmp_path / "ts.png")
    assert (tmp_path / "ts.png").stat().st_size > 0


def test_timeseries_single_repeat_has_no_band(frame):
    # Execute
    fig, ax = plot_notion_timeseries(frame[frame["repeat"] == 0], synthetic=True)

    # Assert
    assert len(ax.collections) == 0
    assert "SYNTHETIC" in ax.get_title()


def test_timeseries_rejects_a_frame_without_notions():
    with pytest.raises(PlotInputError, match="F_T"):
        plot_notion_timeseries(pd.DataFrame({"repeat": [0], "round": [1], "f_j": [0.1]}))


def test_pareto_front_by_hand():
    # Prepare: (0.7, 0.55) is dominated by (0.8, 0.6); (0.85, 0.45) by (0.9, 0.5)
    points = pd.DataFrame({"mean_local_accuracy": [0.9, 0.8, 0.7, 0.85], "F_T": [0.5, 0.6, 0.55, 0.45]})

    # Execute
    front = pareto_front(points)

    # Assert
    assert front["mean_local_accuracy"].tolist() == [0.8, 0.9]
    assert front["F_T"].tolist() == [0.6, 0.5]


def test_timeseries_says_what_band_and_shading_show(frame):
    # Execute
    _, ts = plot_notion_timeseries(frame, window=(3, 6))

    # Assert
    ts_labels = [t.get_text() for t in ts.get_legend().get_texts()]
    assert "band: ±1 std over the 2 repeats" in ts_labels and "Table 3 window, rounds 3-6" in ts_labels


def test_require_columns_names_what_is_missing():
    require_columns(pd.DataFrame({"a": [1], "b": [2]}), ["a", "b"], "the frame")  # nothing missing: no error
    with pytest.raises(PlotInputError, match=r"^the frame lacks columns \['c', 'd'\]; build it as"):
        require_columns(pd.DataFrame({"a": [1]}), ["a", "c", "d"], "the frame")


def test_palette_gives_every_key_set_the_same_colours_in_order():
    notions = palette(FAIRNESS_KEYS)
    strategies = palette(["fedavg", "qfedavg", "ditto"])
    assert list(notions) == list(FAIRNESS_KEYS) and len(set(notions.values())) == 5
    assert list(strategies.values()) == list(notions.values())[:3]


def test_timeseries_overlays_a_reference_frame_dashed(frame):
    # Prepare: a reference whose F_T is 0.1 below ours in every round
    reference = frame.assign(F_T=frame["F_T"] - 0.1)

    # Execute
    _, ax = plot_notion_timeseries(frame, reference=reference, reference_label="authors")

    # Assert: 5 solid lines, then 5 dashed ones labelled by the reference; the legend names it once
    lines = ax.get_lines()
    assert [line.get_linestyle() for line in lines] == ["-"] * 5 + ["--"] * 5
    assert [line.get_label() for line in lines[5:]] == [f"authors: {NOTION_LABELS[k]}" for k in FAIRNESS_KEYS]
    np.testing.assert_allclose(lines[-1].get_ydata(), 0.35 + 0.01 * np.arange(1, 7))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:5] == [NOTION_LABELS[k] for k in FAIRNESS_KEYS] and "dashed: authors (mean over 2 repeats)" in labels
