"""Figures of the FederatedTrust reproduction (paper Figures 4-5, paper vs ours).

Every function draws from reports or plain tables (never reruns anything) and returns
``(fig, ax)`` (or ``(fig, axes)`` for a grid), so notebooks only call and save:

==============================  ==========================================================  ===========
function                        input                                                       paper
==============================  ==========================================================  ===========
:func:`plot_experiment_report`  one :class:`~fltrust.trust.report.TrustReport`              Figs. 4-5
:func:`plot_pillar_comparison`  :func:`fltrust.repro.trust.report.comparison_frame`         Figs. 4-5
==============================  ==========================================================  ===========

Titles say ``QUICK`` for quick (smoke-test) runs and ``SYNTHETIC`` for synthetic stand-in data
(:func:`fltrust.viz.fairness.figure_title`), so such a figure is never mistaken for a reproduction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fltrust.names import PAPER_TREE_TRUST_MODES
from fltrust.trust.report import TrustReport, plot_trust_report
from fltrust.viz.fairness import figure_title

__all__ = ["COMPARISON_COLUMNS", "TrustPlotError", "plot_experiment_report", "plot_pillar_comparison"]

COMPARISON_COLUMNS = ("experiment", "mode", "item", "label", "paper", "ours", "synthetic", "quick")
"""Columns :func:`plot_pillar_comparison` needs (those of ``comparison_frame``)."""

MODE_ORDER = PAPER_TREE_TRUST_MODES


class TrustPlotError(ValueError):
    """A plotting function got a table without the columns or rows it needs."""


def plot_experiment_report(
    report: TrustReport, *, title: str, quick: bool = False, synthetic: bool = False, ax: Sequence[Any] | None = None
) -> tuple[Any, Any]:
    """Pillar and metric scores of one experiment in one mode (the layout of paper Figs. 4-5).

    :func:`fltrust.trust.report.plot_trust_report` with a figure title naming the experiment and
    the mode, tagged QUICK / SYNTHETIC when they apply.

    Parameters
    ----------
    report : TrustReport
        One scored FactSheet.
    title : str
        Experiment description (the mode is appended).
    quick, synthetic : bool
        Tag the title.
    ax : pair of Axes, optional
        Where to draw (pillars, metrics).

    Returns
    -------
    fig : matplotlib.figure.Figure
    axes : tuple of Axes
    """
    fig, axes = plot_trust_report(report, ax=ax)
    fig.suptitle(figure_title(f"{title} -- {report.mode} mode", quick=quick, synthetic=synthetic), fontsize=11)
    fig.tight_layout()
    return fig, axes


def plot_pillar_comparison(
    comparison: pd.DataFrame, *, modes: Sequence[str] | None = None, quick: bool | None = None
) -> tuple[Any, Any]:
    """Trust and pillar scores per experiment: the paper's values next to ours in each mode.

    One panel per experiment; per score (trust, then the six pillars) a grey bar for the paper's
    stated value (an "n/s" mark where the text states none) and one bar per scoring mode.

    Parameters
    ----------
    comparison : pandas.DataFrame
        :func:`fltrust.repro.trust.report.comparison_frame` (columns :data:`COMPARISON_COLUMNS`).
    modes : sequence of str, optional
        Modes to draw (default: those in the table, in prototype, paper, fixed order).
    quick : bool, optional
        Tag the title QUICK (default: any row is quick). Experiments on synthetic data are tagged
        SYNTHETIC in their panel titles.

    Returns
    -------
    fig : matplotlib.figure.Figure
    axes : np.ndarray of Axes
        One per experiment (unused grid cells are hidden).

    Raises
    ------
    TrustPlotError
        If the table lacks columns or rows.
    """
    import matplotlib.pyplot as plt

    missing = [c for c in COMPARISON_COLUMNS if c not in comparison.columns]
    if missing:
        raise TrustPlotError(f"comparison table lacks columns {missing}; build it with "
                             "fltrust.repro.trust.report.comparison_frame")
    if comparison.empty:
        raise TrustPlotError("comparison table is empty: no experiment result to plot")
    present = list(dict.fromkeys(comparison["mode"]))
    modes = [m for m in MODE_ORDER if m in present] if modes is None else list(modes)
    unknown = [m for m in modes if m not in present]
    if unknown:
        raise TrustPlotError(f"modes {unknown} are not in the table; it has {present}")
    quick = bool(comparison["quick"].any()) if quick is None else quick
    experiments = list(dict.fromkeys(comparison["experiment"]))
    items = list(dict.fromkeys(comparison["item"]))
    labels = list(dict.fromkeys(comparison["label"]))

    # prototype scores can exceed 1 (raw CLEVER up to 2, bug B6; docs/references.md#trust-b6): keep them on the axis
    top = max(1.15, float(np.nanmax(comparison["ours"].to_numpy(dtype=float), initial=0.0)) + 0.1)
    ncols = min(3, len(experiments))
    nrows = math.ceil(len(experiments) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.8 * nrows), squeeze=False, sharey=True)
    colors = plt.get_cmap("tab10").colors
    width = 0.8 / (len(modes) + 1)
    x = np.arange(len(items))
    for index, experiment in enumerate(experiments):
        ax = axes.flat[index]
        sub = comparison[comparison["experiment"] == experiment]
        paper = sub.drop_duplicates("item").set_index("item").reindex(items)["paper"].to_numpy(dtype=float)
        ax.bar(x - 0.4 + width / 2, np.nan_to_num(paper), width, color="0.6", label="paper (stated in the text)")
        for position in np.flatnonzero(np.isnan(paper)):
            ax.annotate("n/s", (x[position] - 0.4 + width / 2, 0.01), ha="center", va="bottom", fontsize=6,
                        rotation=90, color="0.4")
        for k, mode in enumerate(modes):
            ours = sub[sub["mode"] == mode].set_index("item").reindex(items)["ours"].to_numpy(dtype=float)
            ax.bar(x - 0.4 + width * (k + 1.5), np.nan_to_num(ours), width, color=colors[k % 10],
                   label=f"ours, {mode} mode")
        synthetic = bool(sub["synthetic"].any())
        ax.set_title(experiment + (" [SYNTHETIC data]" if synthetic else ""), fontsize=10)
        ax.set_xticks(x, labels, rotation=40, ha="right", fontsize=8)
        ax.set_ylim(0, top)
        ax.axhline(1.0, color="0.85", linewidth=0.8)
    for ax in axes.flat[len(experiments):]:
        ax.set_visible(False)
    axes.flat[0].set_ylabel("score")
    handles, names = axes.flat[0].get_legend_handles_labels()
    fig.suptitle(figure_title("FederatedTrust trust and pillar scores: paper vs ours", quick=quick), fontsize=11)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.legend(handles, names, loc="lower center", ncol=len(modes) + 1, fontsize=8, frameon=False)
    return fig, axes


def plot_attack_ablation(ablation: dict[str, Any]) -> tuple[Any, Any]:
    """Bar chart of the FederatedTrust attack ablation: test accuracy, robustness pillar and trust
    score per run (:func:`fltrust.repro.trust.ablation.attack_ablation`; SYNTHETIC-labelled)."""
    import matplotlib.pyplot as plt

    runs = ablation["runs"]
    names = {"fedavg": "FedAvg", "fedmedian": "FedMedian", "krum": "Krum", "multikrum": "Multi-Krum",
             "trimmedmean": "trimmed mean", "bulyan": "Bulyan"}

    def label(r: dict[str, Any]) -> str:
        name = names.get(r["strategy"], r["strategy"])
        if r.get("num_malicious_nodes"):
            name += f" (f = {r['num_malicious_nodes']})"
        return f"clean\n{name}" if r["run"] == "clean" else f"attacked\n{name}"

    labels = [label(r) for r in runs]
    series = {
        "test accuracy": [r["test_accuracy"] for r in runs],
        "robustness pillar (extended)": [r["pillars"].get("robustness") for r in runs],
        "trust score (extended)": [r["trust_score"] for r in runs],
    }
    x = np.arange(len(runs))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.27
    for i, (name, values) in enumerate(series.items()):
        vals = [np.nan if v is None else v for v in values]
        bars = ax.bar(x + (i - 1) * width, vals, width, label=name)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.set_xticks(x, labels)
    ax.set_ylim(0, 1.1)
    tag = "SYNTHETIC N-BaIoT: " if ablation.get("synthetic") else ""
    ax.set_title(f"{tag}{ablation['experiment']}, {ablation['attack']['description']}", fontsize=9)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3, frameon=False)
    fig.tight_layout()
    return fig, ax
