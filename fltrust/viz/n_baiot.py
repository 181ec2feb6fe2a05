"""Figure of the N-BaIoT stand-in against the real rows (FederatedTrust experiments 4-5).

:func:`plot_standin_vs_real` draws the table of
:func:`fltrust.repro.trust.n_baiot_compare.standin_vs_real`; the reproduction writes the committed
figure and table with it (``python -m fltrust.repro.trust.n_baiot_compare``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from fltrust.viz.fairness import PlotInputError, figure_title, require_columns

__all__ = ["plot_standin_vs_real"]


def plot_standin_vs_real(
    stats: pd.DataFrame, *, features: Sequence[str] | None = None, ncols: int = 3
) -> tuple[Any, Any]:
    """Per feature, benign and attack: the 5-95 % range, median and mean of each source.

    One panel per feature; per class one vertical bar per source (real first) from the 5 % to the
    95 % quantile, a dot at the median and a cross at the mean (standardised units: 0 = the pooled
    mean, 1 = one pooled standard deviation).

    Parameters
    ----------
    stats : pandas.DataFrame
        :func:`fltrust.repro.trust.n_baiot_compare.standin_vs_real` output (columns ``source``, ``feature``,
        ``class``, ``mean``, ``q05``, ``q50``, ``q95``); sources and classes are drawn in their order
        of appearance.
    features : sequence of str, optional
        Panels, in order (default: every feature of ``stats``).
    ncols : int
        Panels per row.

    Returns
    -------
    fig : matplotlib.figure.Figure
    axes : numpy.ndarray of Axes
        One per panel slot (unused slots are hidden).
    """
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.lines import Line2D

    require_columns(stats, ("source", "feature", "class", "mean", "q05", "q50", "q95"), "stats",
                    "with fltrust.repro.trust.n_baiot_compare.standin_vs_real")
    features = list(dict.fromkeys(stats["feature"])) if features is None else list(features)
    unknown = [f for f in features if f not in set(stats["feature"])]
    if not features or unknown:
        raise PlotInputError(f"no rows for features {unknown or features} in stats")
    sources = list(dict.fromkeys(stats["source"]))
    classes = list(dict.fromkeys(stats["class"]))
    colours = dict(zip(sources, sns.color_palette("colorblind", len(sources))))
    nrows = math.ceil(len(features) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
    width = 0.7 / len(sources)
    for ax, feature in zip(axes.flat, features):
        for c, name in enumerate(classes):
            for s, source in enumerate(sources):
                row = stats[(stats["feature"] == feature) & (stats["class"] == name) & (stats["source"] == source)]
                if row.empty:
                    continue
                r = row.iloc[0]
                x = c + (s - (len(sources) - 1) / 2) * width
                ax.vlines(x, r["q05"], r["q95"], colors=[colours[source]], linewidth=5, alpha=0.55)
                ax.plot([x], [r["q50"]], "o", color=colours[source], markeredgecolor="black", markersize=5)
                ax.plot([x], [r["mean"]], "x", color="black", markersize=6)
        ax.set_xticks(range(len(classes)), list(classes))
        ax.set_xlim(-0.6, len(classes) - 0.4)
        ax.set_title(feature, fontsize=10)
        ax.axhline(0.0, color="grey", linewidth=0.5)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes.flat[len(features):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("standardised value")
    handles = [Line2D([], [], color=colours[s], linewidth=5, alpha=0.55, label=f"{s}: 5-95 %") for s in sources]
    handles += [Line2D([], [], marker="o", linestyle="", color="white", markeredgecolor="black", label="median"),
                Line2D([], [], marker="x", linestyle="", color="black", label="mean")]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=9, frameon=False)
    fig.suptitle(figure_title("N-BaIoT: stand-in vs real rows (devices 1, 3, 5), per class, standardised units",
                              synthetic=True), fontsize=11)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig, axes
