"""Figure of a partition: label counts per client as stacked bars."""

from __future__ import annotations

from typing import Any

import numpy as np

from fltrust.partition.base import PartitionError


def plot_class_distribution(
    counts: np.ndarray,
    ax: Any = None,
    *,
    normalize: bool = False,
    class_names: list[str] | None = None,
    title: str | None = None,
) -> tuple[Any, Any]:
    """Stacked bars of each client's label counts (as Flower Datasets' ``plot_label_distributions``).

    Parameters
    ----------
    counts : np.ndarray
        ``(C, K)`` label counts, e.g. :func:`~fltrust.partition.splits.class_counts` or
        ``ClientSplits.class_counts``.
    ax : matplotlib.axes.Axes or None
        Axes to draw on; a new figure is made when ``None``.
    normalize : bool, optional
        Plot each client's class shares (rows sum to 1) instead of counts (default: False).
    class_names : list of str or None, optional
        Legend labels (default: the class index). The legend is drawn only for K <= 20.
    title : str or None, optional
        Axes title.

    Returns
    -------
    fig, ax
        The matplotlib figure and axes.
    """
    import matplotlib.pyplot as plt

    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.size == 0:
        raise PartitionError(f"counts must be a non-empty (clients, classes) array, got shape {counts.shape}")
    num_clients, num_classes = counts.shape
    if class_names is not None and len(class_names) != num_classes:
        raise PartitionError(f"class_names has {len(class_names)} names but counts has {num_classes} classes")
    if normalize:
        totals = counts.sum(axis=1, keepdims=True)
        counts = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(6.0, 0.12 * num_clients + 2), 4))
    else:
        fig = ax.figure
    names = class_names if class_names is not None else [str(k) for k in range(num_classes)]
    if num_classes <= 10:
        colours = plt.get_cmap("tab10")(np.arange(num_classes))
    else:
        colours = plt.get_cmap("viridis")(np.linspace(0, 1, num_classes))
    clients = np.arange(num_clients)
    bottom = np.zeros(num_clients)
    for k in range(num_classes):
        ax.bar(clients, counts[:, k], bottom=bottom, color=colours[k], width=0.85, label=names[k])
        bottom += counts[:, k]
    ax.set_xlabel("client")
    ax.set_ylabel("share of samples" if normalize else "samples")
    if num_clients <= 30:
        ax.set_xticks(clients)
    if num_classes <= 20:
        ax.legend(title="class", bbox_to_anchor=(1.01, 1), loc="upper left", fontsize="small")
    if title:
        ax.set_title(title)
    return fig, ax
