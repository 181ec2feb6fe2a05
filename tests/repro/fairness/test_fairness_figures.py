"""Smoke and value tests of the reproduction's fairness figures (fltrust.repro.fairness.figures)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from fltrust.metrics.fairness.registry import FAIRNESS_KEYS
from fltrust.repro.fairness.figures import (
    dataset_title,
    plot_dataset_figure,
    plot_figure4,
    plot_notion_bars,
    plot_table3_comparison,
    save_condition_figures,
)
from fltrust.viz.fairness import NOTION_LABELS, PlotInputError

REPORTED = {
    "tolerance": {"absolute": 0.10, "reason": "test"},
    "values": {"fedavg_nslkdd_100c_iid": 0.50, "ditto_nslkdd_100c_iid": 0.48},
}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def frame(fairness_rounds) -> pd.DataFrame:
    return fairness_rounds


def test_bars_are_table3_window_means(frame):
    # Execute
    fig, ax = plot_notion_bars(frame, (3, 6))

    # Assert: F_T window mean = 0.45 + 0.01 * mean(3..6) = 0.495; f_r = 0.3 + 0.02 * 4.5 = 0.39
    heights = {NOTION_LABELS[k]: bar.get_height() for k, bar in zip(FAIRNESS_KEYS, ax.patches)}
    assert len(ax.patches) == 5
    assert heights[NOTION_LABELS["F_T"]] == pytest.approx(0.495)
    assert heights[NOTION_LABELS["f_r"]] == pytest.approx(0.39)
    assert heights[NOTION_LABELS["f_g"]] == pytest.approx(0.6)


def test_bars_reject_an_empty_window(frame):
    with pytest.raises(PlotInputError, match="window 20-30"):
        plot_notion_bars(frame, (20, 30))


def _points() -> pd.DataFrame:
    return pd.DataFrame([
        {"condition": "fedavg_nslkdd_100c_iid", "dataset": "NSL-KDD (100C)", "strategy": "fedavg", "setting": "iid",
         "mode": "faithful", "F_T": 0.5, "mean_local_accuracy": 0.95, "quick": False, "synthetic": False},
        {"condition": "ditto_nslkdd_100c_niid", "dataset": "NSL-KDD (100C)", "strategy": "ditto", "setting": "niid",
         "mode": "faithful", "F_T": 0.55, "mean_local_accuracy": 0.9, "quick": False, "synthetic": True},
    ])


def test_figure4_one_panel_per_dataset():
    # Execute
    fig, axes = plot_figure4(_points())

    # Assert: NSL-KDD panel (last) has both markers; the other three say "not run"
    assert axes.shape == (2, 2)
    assert len(axes[1, 1].collections) == 2
    for ax in axes.ravel()[:3]:
        assert [t.get_text() for t in ax.texts] == ["not run"]
    assert "SYNTHETIC" in fig._suptitle.get_text()  # one synthetic point marks the figure
    assert "QUICK" not in fig._suptitle.get_text()


def test_table3_comparison_hatches_outside_tolerance():
    # Prepare: fedavg within tolerance, ditto outside
    table = pd.DataFrame([
        {"condition": "fedavg_nslkdd_100c_iid", "ours_F_T": 0.55, "ours_std": 0.02, "within_tolerance": True,
         "mode": "faithful", "quick": True, "synthetic": False},
        {"condition": "ditto_nslkdd_100c_iid", "ours_F_T": 0.70, "ours_std": None, "within_tolerance": False,
         "mode": "faithful", "quick": True, "synthetic": False},
    ])

    # Execute
    fig, axes = plot_table3_comparison(table, reported=REPORTED)

    # Assert: NSL-KDD panel: 6 paper bars + 6 ours bars, ours fedavg iid (group 0) and ditto iid (group 4)
    ax = axes[1, 1]
    ours = ax.patches[6:]
    assert ours[0].get_height() == pytest.approx(0.55) and ours[0].get_hatch() is None
    assert ours[4].get_height() == pytest.approx(0.70) and ours[4].get_hatch() == "//"
    assert sum(t.get_text() == "not run" for t in ax.texts) == 4
    assert "QUICK" in fig._suptitle.get_text()


def _result(condition, frame, *, clients=100, mode="faithful"):
    """A condition result as condition_result writes it, from a notions frame."""
    return {"condition": condition, "mode": mode, "quick": False, "synthetic": False, "num_clients": clients,
            "window": [3, 6], "rounds": 6, "per_round": frame.to_dict(orient="list"),
            "table3": {"F_T": 0.5, "F_T_std": 0.05}}


def test_dataset_title_names_the_client_count_actually_run():
    assert dataset_title("femnist_205c", 110) == "FEMNIST cross-device, 110 writers (paper: 205)"
    assert dataset_title("nslkdd_100c", 100) == "NSL-KDD cross-device, 100 clients"
    assert dataset_title("cifar10_10c") == "CIFAR-10 cross-silo, 10 clients (paper)"


def test_dataset_figure_has_bars_and_lines_per_condition(frame):
    # Prepare: two FEMNIST conditions (110 writers), the other four not run
    results = [_result("fedavg_femnist_205c_iid", frame, clients=110),
               _result("ditto_femnist_205c_niid", frame, clients=110),
               _result("fedavg_nslkdd_100c_iid", frame)]  # another dataset: ignored
    reported = {"tolerance": {"absolute": 0.10}, "values": {"fedavg_femnist_205c_iid": 0.75}}

    # Execute
    fig, axes = plot_dataset_figure(results, "femnist_205c", reported=reported)

    # Assert: 4 x 3 grid; FedAvg iid: 5 bars, the paper F_T line, 5 notion lines; q-FedAvg says not run
    assert axes.shape == (4, 3)
    assert len(axes[0, 0].patches) == 5
    assert any(list(line.get_ydata()) == [0.75, 0.75] for line in axes[0, 0].get_lines())
    assert [line.get_label() for line in axes[2, 0].get_lines()] == [NOTION_LABELS[k] for k in FAIRNESS_KEYS]
    assert len(axes[3, 2].get_lines()) == 5  # Ditto niid time series
    assert [t.get_text() for t in axes[0, 1].texts] == ["not run"]
    title = fig._suptitle.get_text()
    assert title.startswith("Figure 7: FEMNIST cross-device, 110 writers (paper: 205)")
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(label.startswith("error bar: std over rounds 3-6") for label in labels)
    assert "band: ±1 std over repeats (n ≥ 2)" in labels and "paper ± 0.10 (tolerance)" in labels


def test_bars_say_what_error_bars_and_bands_show(frame):
    # Execute
    _, bars = plot_notion_bars(frame, (3, 6), paper_F_T=0.5)

    # Assert
    bar_labels = [t.get_text() for t in bars.get_legend().get_texts()]
    assert bar_labels == ["error bar: std over rounds 3-6 of the repeat mean", "paper F_T (Table 3) = 0.50",
                          "paper ± 0.05", "paper ± 0.10 (tolerance)"]


def test_figure4_title_states_its_window_and_markers_are_nested():
    # Prepare
    points = _points()
    points["window"] = [(21, 30), (21, 30)]
    points["clients"] = [100, 100]
    points["dataset_key"] = ["nslkdd_100c", "nslkdd_100c"]

    # Execute
    fig, axes = plot_figure4(points)

    # Assert
    assert "mean over server rounds 21-30" in fig._suptitle.get_text()
    sizes = sorted(float(c.get_sizes()[0]) for c in axes[1, 1].collections)
    assert sizes[0] < sizes[1]  # Ditto drawn smaller than FedAvg, so a coinciding pair stays visible
    assert axes[1, 1].get_title() == "NSL-KDD cross-device, 100 clients"


def test_table3_comparison_labels_the_tolerance_bars():
    # Prepare
    table = pd.DataFrame([{"condition": "fedavg_nslkdd_100c_iid", "ours_F_T": 0.55, "ours_std": 0.02,
                           "within_tolerance": True, "mode": "faithful", "clients": 100}])

    # Execute
    fig, axes = plot_table3_comparison(table, reported=REPORTED)

    # Assert
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "paper ± 0.10 (tolerance)" in labels and "paper ± 0.05" in labels
    assert "ours (faithful) ± std over repeats" in labels
    assert axes[1, 1].get_title() == "NSL-KDD cross-device, 100 clients"


def test_save_condition_figures_from_a_result(frame, tmp_path):
    # Prepare
    result = _result("fedavg_femnist_205c_niid", frame, clients=110)
    reported = {"tolerance": {"absolute": 0.10}, "values": {"fedavg_femnist_205c_niid": 0.68}}

    # Execute
    fig_ts, fig_bars = save_condition_figures(result, tmp_path, reported=reported)

    # Assert: both PNGs, the client count in the titles, the paper value on the bars
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fedavg_femnist_205c_niid_notions.png",
                                                          "fedavg_femnist_205c_niid_timeseries.png"]
    assert "110 writers (paper: 205)" in fig_ts.axes[0].get_title()
    labels = [t.get_text() for t in fig_bars.axes[0].get_legend().get_texts()]
    assert "paper F_T (Table 3) = 0.68" in labels


def test_dataset_figure_overlays_the_authors_curves_dashed(frame, authors_root):
    # Prepare: our fedavg_nslkdd_100c_iid; the made-up authors' files of it (conftest.py)
    from fltrust.repro.fairness.authors import load_authors_runs

    authors = load_authors_runs(authors_root)
    results = [_result("fedavg_nslkdd_100c_iid", frame), _result("ditto_nslkdd_100c_niid", frame)]

    # Execute
    fig, axes = plot_dataset_figure(results, "nslkdd_100c", reported=REPORTED, authors=authors)
    corrected, corrected_axes = plot_dataset_figure([_result("fedavg_nslkdd_100c_iid", frame, mode="corrected")],
                                                    "nslkdd_100c", mode="corrected", reported=REPORTED, authors=authors)

    # Assert: FedAvg iid's per-round panel has our 5 lines and the authors' 5, dashed, labelled "authors";
    # their F_T in round 20 is the mean of their repeats (0.19 + 0.5 + 0.3 + 0.8) / 4
    lines = axes[2, 0].get_lines()
    theirs = [line for line in lines if line.get_label().startswith("authors: ")]
    assert len(lines) == 10 and len(theirs) == 5 and all(line.get_linestyle() == "--" for line in theirs)
    f_t = next(line for line in theirs if line.get_label() == f"authors: {NOTION_LABELS['F_T']}")
    assert list(f_t.get_xdata()) == list(range(1, 31))
    assert f_t.get_ydata()[19] == pytest.approx((0.19 + 0.5 + 0.3 + 0.8) / 4)
    assert len(axes[3, 2].get_lines()) == 5  # Ditto niid: no authors' files, no overlay
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "dashed: authors (mean over 3 repeats)" in labels
    assert len(corrected_axes[2, 0].get_lines()) == 5  # the authors ran the faithful definitions only


def test_figure4_draws_the_authors_points_hollow(authors_root):
    # Prepare
    from fltrust.repro.fairness.authors import authors_figure4_frame, load_authors_runs

    theirs = authors_figure4_frame(load_authors_runs(authors_root))

    # Execute
    fig, axes = plot_figure4(_points(), authors=theirs)

    # Assert: the NSL-KDD panel has our two points and the authors' one, at their window means
    collections = axes[1, 1].collections
    assert len(collections) == 3
    offsets = collections[-1].get_offsets()[0]
    assert (offsets[0], offsets[1]) == pytest.approx((0.8, (0.245 + 0.5 + 0.3 + 0.8) / 4))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "hollow, dashed edge: authors (their 3 repeats)" in labels
