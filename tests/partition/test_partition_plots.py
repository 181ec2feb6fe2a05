"""Smoke tests of fltrust.partition.plots."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from fltrust.partition import PartitionError, plot_class_distribution


def test_stacked_bars_have_one_bar_per_client_and_class() -> None:
    # Prepare
    counts = np.array([[3, 1, 0], [0, 2, 2]])
    # Execute
    fig, ax = plot_class_distribution(counts, title="toy")
    # Assert: 2 clients x 3 classes; the top of each stack is the client's total
    assert len(ax.patches) == 6
    tops = {}
    for patch in ax.patches:
        x = round(patch.get_x() + patch.get_width() / 2)
        tops[x] = max(tops.get(x, 0), patch.get_y() + patch.get_height())
    assert tops == {0: 4, 1: 4}
    assert ax.get_title() == "toy"
    plt.close(fig)


def test_normalised_bars_reach_one_and_existing_axes_are_used() -> None:
    # Prepare
    fig, ax = plt.subplots()
    counts = np.array([[1, 3], [5, 5], [0, 0]])
    # Execute
    out_fig, out_ax = plot_class_distribution(counts, ax=ax, normalize=True, class_names=["benign", "attack"])
    # Assert
    assert out_ax is ax and out_fig is fig
    heights = np.array([p.get_height() for p in ax.patches]).reshape(2, 3)
    np.testing.assert_allclose(heights.sum(axis=0), [1.0, 1.0, 0.0])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["benign", "attack"]
    plt.close(fig)


def test_many_classes_and_clients_plot_without_legend() -> None:
    counts = np.random.default_rng(0).integers(0, 5, (40, 62))
    fig, ax = plot_class_distribution(counts)
    assert ax.get_legend() is None and len(ax.patches) == 40 * 62
    plt.close(fig)


def test_bad_counts_rejected() -> None:
    with pytest.raises(PartitionError, match="counts must be"):
        plot_class_distribution(np.array([1, 2, 3]))
