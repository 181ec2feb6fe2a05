"""Figures of the Federated Fairness Analytics reproduction: paper Table 3, Figure 4 and Figures 3, 5-8.

Every function draws the reproduction's own tables (never reruns anything) and returns
``(fig, ax)`` (or ``(fig, axes)`` for a grid), so notebooks only call and save:

==============================  ===================================================  =============================
function                        input                                                paper
==============================  ===================================================  =============================
:func:`plot_notion_bars`        :func:`fltrust.repro.fairness.run.notions_frame`     Figures 3, 5-8 (bars)
:func:`plot_dataset_figure`     :func:`fltrust.repro.fairness.run.condition_result`  Figures 5-8 (one per dataset)
:func:`plot_figure4`            :func:`fltrust.repro.fairness.run.figure4_frame`     Figure 4
:func:`plot_table3_comparison`  :func:`fltrust.repro.fairness.report.summary_table`  Table 3, paper vs ours
:func:`save_condition_figures`  one condition result                                 per-condition PNGs
==============================  ===================================================  =============================

They are drawn with the plain-table plots of :mod:`fltrust.viz.fairness` (the notions per round,
:func:`~fltrust.viz.fairness.plot_notion_timeseries`; the Pareto front; the title markers), which
know nothing of the reproduction. Titles say ``QUICK`` for quick (smoke-test) runs and
``SYNTHETIC`` for synthetic stand-in data, so such a figure is never mistaken for a reproduction.
Panels name the client count actually run (:func:`dataset_title`), and every band or error bar
says in a legend or caption what it shows. Given the authors' runs
(:mod:`fltrust.repro.fairness.authors`), Figures 5-8 overlay their per-round curves (dashed,
labelled "authors") and Figure 4 their points (hollow, dashed edges).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fltrust.metrics.fairness.registry import FAIRNESS_KEYS, GENERAL_FAIRNESS
from fltrust.repro.fairness.authors import AuthorsRuns
from fltrust.repro.fairness.conditions import DATASETS, SETTINGS, STRATEGIES, condition_name, split_condition
from fltrust.repro.fairness.report import STRATEGY_LABELS
from fltrust.repro.fairness.run import STRICT_TOLERANCE, load_reported, result_frame, window_means
from fltrust.viz.fairness import (
    NOTION_LABELS,
    NOTION_SYMBOLS,
    PlotInputError,
    figure_axes,
    figure_title,
    frame_notions,
    palette,
    pareto_front,
    plot_notion_timeseries,
    reference_legend,
    require_columns,
)

__all__ = [
    "ACCEPTABLE_FAIRNESS",
    "AUTHORS_LABEL",
    "DATASET_FIGURES",
    "dataset_title",
    "plot_dataset_figure",
    "plot_figure4",
    "plot_notion_bars",
    "plot_table3_comparison",
    "save_condition_figures",
]

SETTING_MARKERS = {"iid": "o", "niid": "^"}
STRATEGY_SIZES = {"fedavg": 190, "qfedavg": 110, "ditto": 45}
"""Figure 4 marker areas: nested sizes keep coinciding points (e.g. FedAvg and Ditto) visible."""
ACCEPTABLE_FAIRNESS = 0.8
"""The paper's proposed threshold of acceptable general fairness (Results and Discussion)."""

DATASET_FIGURES = {"cifar10_100c": 5, "cifar10_10c": 6, "femnist_205c": 7, "nslkdd_100c": 8}
"""Paper figure number of each dataset's per-condition results (Figures 5-8)."""

DATASET_NAMES = {
    "cifar10_100c": ("CIFAR-10 cross-device", "clients"),
    "cifar10_10c": ("CIFAR-10 cross-silo", "clients"),
    "femnist_205c": ("FEMNIST cross-device", "writers"),
    "nslkdd_100c": ("NSL-KDD cross-device", "clients"),
}


def dataset_title(dataset_key: str, clients: Any = None) -> str:
    """``"FEMNIST cross-device, 110 writers (paper: 205)"``: the client count actually run.

    ``clients`` is our client count (None or NaN: the paper's, unstated as ours).
    """
    setup = DATASETS.get(dataset_key)
    name, unit = DATASET_NAMES.get(dataset_key, (dataset_key, "clients"))
    if setup is None:
        return name
    if clients is None or pd.isna(clients):
        return f"{name}, {setup.num_clients} {unit} (paper)"
    clients = int(clients)
    if clients == setup.num_clients:
        return f"{name}, {clients} {unit}"
    return f"{name}, {clients} {unit} (paper: {setup.num_clients})"


def plot_notion_bars(
    frame: pd.DataFrame,
    window: tuple[int, int],
    *,
    title: str | None = None,
    quick: bool = False,
    synthetic: bool = False,
    ax: Any = None,
    legend: bool = True,
    paper_F_T: float | None = None,
    tolerance: float = 0.10,
    skip_nan: bool = False,
) -> tuple[Any, Any]:
    """Mean of each notion over the Table 3 window (paper Figures 3, 5-8, error-bar charts).

    Bar height = :func:`fltrust.repro.fairness.run.window_means` (per round mean over repeats, then
    mean over the window rounds: the Table 3 protocol, fairness spec 8; docs/references.md#fairness-8). Error bar =
    standard deviation over the window rounds of that repeat-mean series (how much the notion still moves
    as training settles); absent when the window has a single round.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`fltrust.repro.fairness.run.notions_frame`.
    window : (int, int)
        First and last server round (inclusive), e.g. ``result["window"]``.
    title, quick, synthetic, ax, legend
        As for :func:`~fltrust.viz.fairness.plot_notion_timeseries` (the legend says what the error bars show).
    paper_F_T : float, optional
        The paper's Table 3 value: a black line across the F_T bar with ±0.05 (dark) and
        ± ``tolerance`` (light) bands.
    tolerance : float, default 0.10
        Half-width of the light band.
    skip_nan : bool, default False
        NaN-aware window means (corrected mode), see :func:`fltrust.repro.fairness.run.window_means`.

    Returns
    -------
    fig, ax
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    require_columns(frame, ["repeat", "round", "mean_local_accuracy", "aux_accuracy"], "the notions frame")
    notions = frame_notions(frame)  # F_T last: the paper's value is drawn across the last bar
    first, last = int(window[0]), int(window[1])
    inside = frame[(frame["round"] >= first) & (frame["round"] <= last)]
    if inside.empty:
        raise PlotInputError(f"no rounds of the frame fall in the window {first}-{last}")
    means = window_means(frame, first, last, skip_nan=skip_nan)
    spread = inside.groupby("round")[notions].mean().std()
    fig, ax = figure_axes(ax, (6.5, 4.5))
    colours = palette(FAIRNESS_KEYS)
    heights = [means[k] for k in notions]
    errors = [0.0 if pd.isna(spread[k]) else float(spread[k]) for k in notions]
    bars = ax.bar([NOTION_LABELS[k] for k in notions], heights, yerr=errors, capsize=4,
                  color=[colours[k] for k in notions], edgecolor="black")
    for bar, value, error in zip(bars, heights, errors):
        ax.annotate(f"{value:.2f}", (bar.get_x() + bar.get_width() / 2, value + error),
                    ha="center", va="bottom", fontsize="small", xytext=(0, 3), textcoords="offset points")
    handles = [Line2D([], [], color="black", marker="|", markersize=10, linestyle="",
                      label=f"error bar: std over rounds {first}-{last} of the repeat mean")]
    if paper_F_T is not None and not pd.isna(paper_F_T):
        centre = bars[-1].get_x() + bars[-1].get_width() / 2
        span = [centre - 0.55 * bars[-1].get_width(), centre + 0.55 * bars[-1].get_width()]
        ax.fill_between(span, paper_F_T - tolerance, paper_F_T + tolerance, color="black", alpha=0.12, linewidth=0)
        ax.fill_between(span, paper_F_T - STRICT_TOLERANCE, paper_F_T + STRICT_TOLERANCE, color="black", alpha=0.25,
                        linewidth=0)
        ax.plot(span, [paper_F_T, paper_F_T], color="black", linewidth=2, label="_paper")
        handles += [Line2D([], [], color="black", linewidth=2, label=f"paper F_T (Table 3) = {paper_F_T:.2f}"),
                    Patch(color="black", alpha=0.25, label=f"paper ± {STRICT_TOLERANCE:.2f}"),
                    Patch(color="black", alpha=0.12, label=f"paper ± {tolerance:.2f} (tolerance)")]
    tops = np.array(heights) + np.array(errors)
    ax.set_ylim(min(0.0, float(np.nanmin(heights)) - 0.05), max(1.1, float(np.nanmax(tops)) + 0.1))
    ax.set_ylabel(f"mean over rounds {first}-{last}")
    ax.set_title(figure_title(title or f"Fairness notions, mean over rounds {first}-{last}", quick=quick,
                              synthetic=synthetic), fontsize="medium")
    ax.tick_params(axis="x", labelrotation=20)
    if legend:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small")
        fig.tight_layout()
    return fig, ax


def _panel_clients(frame: pd.DataFrame) -> Any:
    """Our client count of a dataset panel (None when the frame does not say)."""
    if "clients" not in frame.columns or frame.empty:
        return None
    values = pd.to_numeric(frame["clients"], errors="coerce").dropna()
    return None if values.empty else int(values.max())


def _panel(frame: pd.DataFrame, key: str, setup: Any) -> pd.DataFrame:
    if "dataset_key" in frame.columns:
        return frame[frame["dataset_key"] == key]
    return frame[frame["dataset"] == setup.paper_label]


AUTHORS_LABEL = "authors"
"""Label of the authors' runs in the figures' legends."""


def plot_figure4(points: pd.DataFrame, *, quick: bool = False, synthetic: bool | None = None,
                 authors: pd.DataFrame | None = None) -> tuple[Any, Any]:
    """Paper Figure 4: general fairness F_T against performance, one panel per dataset.

    One marker per condition: colour = strategy, shape = setting (circle iid, triangle niid),
    hollow = corrected mode; marker sizes are nested (FedAvg largest, Ditto smallest, see
    :data:`STRATEGY_SIZES`) so that coinciding conditions stay distinguishable. The dashed line
    joins the Pareto-best conditions of a panel (:func:`~fltrust.viz.fairness.pareto_front`), the dotted line is the
    paper's 0.8 threshold of acceptable fairness. The title states the round window (the authors'
    Figure 4 averages server rounds 21-30, not Table 3's 15-30), the panel titles the client
    count actually run.

    Parameters
    ----------
    points : pandas.DataFrame
        :func:`fltrust.repro.fairness.run.figure4_frame` (columns ``dataset``, ``strategy``,
        ``setting``, ``mode``, ``F_T``, ``mean_local_accuracy``, ``quick``, ``synthetic``;
        optionally ``dataset_key``, ``clients`` and ``window``).
    quick : bool
        Mark the title as a quick run (also when any point is quick).
    synthetic : bool, optional
        Mark the title as synthetic data (default: when any point is synthetic).
    authors : pandas.DataFrame, optional
        The authors' points (:func:`fltrust.repro.fairness.authors.authors_figure4_frame`, same
        window): drawn hollow with dashed edges in the strategy's colour and shape of the setting,
        outside the Pareto lines.

    Returns
    -------
    fig, axes
        ``axes`` is a 2 x 2 array in Table 3 dataset order; a panel without points says "not run".
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    require_columns(points, ["dataset", "strategy", "setting", "mode", GENERAL_FAIRNESS, "mean_local_accuracy"],
                    "the Figure 4 frame")
    quick = quick or bool(points.get("quick", pd.Series(dtype=bool)).any())
    synthetic = bool(points.get("synthetic", pd.Series(dtype=bool)).any()) if synthetic is None else synthetic
    colours = palette(STRATEGIES)
    fig, axes = plt.subplots(2, 2, figsize=(11, 9), squeeze=False)
    for ax, (key, setup) in zip(axes.ravel(), DATASETS.items()):
        panel = _panel(points, key, setup)
        ax.set_title(dataset_title(key, _panel_clients(panel)), fontsize="medium")
        ax.set(xlabel="performance: mean local accuracy", ylabel="general fairness $F_T$")
        ax.axhline(ACCEPTABLE_FAIRNESS, color="grey", linestyle=":", linewidth=1)
        if panel.empty:
            ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes, color="grey")
            continue
        for _, row in panel.sort_values("strategy", key=lambda c: c.map(lambda v: -STRATEGY_SIZES.get(v, 80))).iterrows():
            colour = colours.get(row["strategy"], "black")
            ax.scatter(row["mean_local_accuracy"], row[GENERAL_FAIRNESS], s=STRATEGY_SIZES.get(row["strategy"], 80),
                       marker=SETTING_MARKERS.get(row["setting"], "s"), alpha=0.85, zorder=3,
                       facecolors=colour if row["mode"] == "faithful" else "none", edgecolors="black"
                       if row["mode"] == "faithful" else colour, linewidths=0.8 if row["mode"] == "faithful" else 1.8)
        for mode, group in panel.groupby("mode"):
            front = pareto_front(group)
            ax.plot(front["mean_local_accuracy"], front[GENERAL_FAIRNESS], color="black", linewidth=1,
                    linestyle="--" if mode == "faithful" else ":")
        theirs = _panel(authors, key, setup) if authors is not None else pd.DataFrame()
        for _, row in theirs.iterrows():
            ax.scatter(row["mean_local_accuracy"], row[GENERAL_FAIRNESS], s=STRATEGY_SIZES.get(row["strategy"], 80),
                       marker=SETTING_MARKERS.get(row["setting"], "s"), facecolors="none", zorder=4,
                       edgecolors=colours.get(row["strategy"], "black"), linewidths=1.6, linestyles="--")
    handles = [Line2D([], [], color=colours[s], marker="o", linestyle="", markersize=np.sqrt(STRATEGY_SIZES[s]),
                      markeredgecolor="black", label=f"{STRATEGY_LABELS[s]} (marker size nested)")
               for s in STRATEGIES]
    handles += [Line2D([], [], color="black", marker=SETTING_MARKERS[t], linestyle="", markerfacecolor="none", label=t)
                for t in SETTINGS]
    handles += [Line2D([], [], color="black", linestyle="--", label="best conditions (Pareto)"),
                Line2D([], [], color="grey", linestyle=":", label=f"F_T = {ACCEPTABLE_FAIRNESS} (paper threshold)")]
    if (points["mode"] != "faithful").any():
        handles.append(Line2D([], [], color="black", marker="o", linestyle="", markerfacecolor="none",
                              label="hollow: corrected mode"))
    if authors is not None and len(authors):
        handles.append(Line2D([], [], color="grey", marker="o", linestyle="", markerfacecolor="none", markersize=9,
                              markeredgewidth=1.6, label=f"hollow, dashed edge: {AUTHORS_LABEL} (their 3 repeats)"))
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize="small")
    windows = sorted({tuple(w) for w in points["window"]}) if "window" in points.columns and len(points) else []
    if len(windows) == 1:
        window_text = f"mean over server rounds {windows[0][0]}-{windows[0][1]}"
    elif windows:
        window_text = "mean over server rounds " + ", ".join(f"{a}-{b}" for a, b in windows) + " (per run length)"
    else:
        window_text = "mean over server rounds 21-30"
    fig.suptitle(figure_title(f"Figure 4: general fairness vs performance, {window_text}", quick=quick,
                              synthetic=synthetic))
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    return fig, axes


def plot_table3_comparison(
    table: pd.DataFrame,
    *,
    tolerance: float | None = None,
    reported: dict[str, Any] | None = None,
    quick: bool = False,
    synthetic: bool | None = None,
) -> tuple[Any, Any]:
    """Table 3, paper vs ours: grouped bars per dataset panel (strategy x setting groups).

    Grey bar = the paper's F_T, with two labelled error bars: ±0.05 (thick, short caps) and
    ± ``tolerance`` (thin, wide caps); coloured bars = ours per mode, ± the std over repeats
    (none for a single repeat); a bar outside the tolerance is hatched. Panel titles give the
    client count actually run (``clients`` column, when present).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`fltrust.repro.fairness.report.summary_table` (or
        :func:`fltrust.repro.fairness.run.table3`, then all rows count as faithful).
    tolerance : float, optional
        Half-width of the thin error bar on the paper bars (default: the absolute tolerance of
        ``reported``).
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`fltrust.repro.fairness.run.load_reported`).
    quick : bool
        Mark the title as a quick run (also when any row is quick).
    synthetic : bool, optional
        Mark the title as synthetic (default: when any row is synthetic).

    Returns
    -------
    fig, axes
        A 2 x 2 array of axes in Table 3 dataset order.
    """
    import matplotlib.pyplot as plt

    require_columns(table, ["condition", "ours_F_T", "ours_std", "within_tolerance"], "the Table 3 frame")
    if "mode" not in table.columns:
        table = table.assign(mode="faithful")
    quick = quick or bool(table.get("quick", pd.Series(dtype=bool)).any())
    synthetic = bool(table.get("synthetic", pd.Series(dtype=bool)).any()) if synthetic is None else synthetic
    reported = reported or load_reported()
    paper_values = reported["values"]
    tolerance = float(reported["tolerance"]["absolute"]) if tolerance is None else tolerance
    modes = sorted(table["mode"].unique(), key=lambda m: (m != "faithful", m)) or ["faithful"]
    colours = palette(modes)
    groups = [(s, t) for s in STRATEGIES for t in SETTINGS]
    width = 0.8 / (1 + len(modes))
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), squeeze=False, sharey=True)
    for ax, key in zip(axes.ravel(), DATASETS):
        positions = np.arange(len(groups))
        names = [f"{s}_{key}_{t}" for s, t in groups]
        paper = [paper_values.get(n, np.nan) for n in names]
        ax.bar(positions, paper, width, color="lightgrey", edgecolor="black", label="paper (Table 3)")
        ax.errorbar(positions, paper, yerr=tolerance, fmt="none", ecolor="dimgrey", elinewidth=0.8, capsize=5,
                    label=f"paper ± {tolerance:.2f} (tolerance)")
        ax.errorbar(positions, paper, yerr=STRICT_TOLERANCE, fmt="none", ecolor="black", elinewidth=2.2, capsize=2,
                    label=f"paper ± {STRICT_TOLERANCE:.2f}")
        for j, mode in enumerate(modes):
            rows = table[table["mode"] == mode].set_index("condition").reindex(names)
            ours = pd.to_numeric(rows["ours_F_T"]).to_numpy(dtype=float)
            std = np.nan_to_num(pd.to_numeric(rows["ours_std"]).to_numpy(dtype=float))
            inside = rows["within_tolerance"].tolist()
            bars = ax.bar(positions + (j + 1) * width, ours, width, yerr=std, capsize=3, color=colours[mode],
                          edgecolor="black", label=f"ours ({mode}) ± std over repeats")
            for bar, ok, value in zip(bars, inside, ours):
                if ok is not None and not pd.isna(ok) and not bool(ok):
                    bar.set_hatch("//")
                if np.isnan(value):
                    ax.text(bar.get_x() + bar.get_width() / 2, 0.02, "not run", rotation=90, ha="center",
                            va="bottom", fontsize="x-small", color="grey")
        ax.set_xticks(positions + width * len(modes) / 2)
        ax.set_xticklabels([f"{STRATEGY_LABELS[s]}\n{t}" for s, t in groups], fontsize="small")
        panel = table[table["condition"].isin(names)]
        ax.set_title(dataset_title(key, _panel_clients(panel)), fontsize="medium")
        ax.set(ylim=(0, 1.05), ylabel="$F_T$, Table 3 window")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    from matplotlib.patches import Patch

    handles.append(Patch(facecolor="white", edgecolor="black", hatch="//", label=f"hatched: |Δ| > {tolerance:.2f}"))
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize="small")
    fig.suptitle(figure_title(f"Table 3: paper vs ours, F_T over rounds 15-30 (hatched = outside ± {tolerance:.2f})",
                              quick=quick, synthetic=synthetic))
    fig.tight_layout(rect=(0, 0.08, 1, 0.93))
    return fig, axes


def plot_dataset_figure(
    results: list[dict[str, Any]],
    dataset_key: str,
    *,
    mode: str = "faithful",
    reported: dict[str, Any] | None = None,
    authors: AuthorsRuns | None = None,
) -> tuple[Any, Any]:
    """Paper Figures 5-8: the six conditions of one dataset, as in the paper's per-dataset figures.

    A 4 x 3 grid, columns = FedAvg, q-FedAvg, Ditto: rows 1-2 the window means of the notions
    (:func:`plot_notion_bars`) for iid and non-iid, with the paper's Table 3 F_T and its ±0.05 /
    ±0.10 bands on the F_T bar; rows 3-4 the notions per round (:func:`~fltrust.viz.fairness.plot_notion_timeseries`).
    One legend and a caption say what bars, error bars, lines, bands and shading show; the title
    gives the client count actually run (:func:`dataset_title`). A condition without a result in
    ``mode`` says "not run".

    Parameters
    ----------
    results : list of dict
        Condition results (:func:`fltrust.repro.fairness.run.condition_result`); other datasets and
        modes are ignored.
    dataset_key : str
        ``cifar10_100c``, ``cifar10_10c``, ``femnist_205c`` or ``nslkdd_100c``.
    mode : str, default "faithful"
        Which results to draw.
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`fltrust.repro.fairness.run.load_reported`).
    authors : AuthorsRuns, optional
        The authors' runs (:func:`fltrust.repro.fairness.authors.load_authors_runs`): in faithful
        mode, rows 3-4 overlay their per-round curves of each condition (dashed, labelled "authors").

    Returns
    -------
    fig, axes
        ``axes`` is the 4 x 3 array.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if dataset_key not in DATASETS:
        raise PlotInputError(f"unknown dataset {dataset_key!r}; choose one of {list(DATASETS)}")
    reported = reported or load_reported()
    tolerance = float(reported["tolerance"]["absolute"])
    chosen = {r["condition"]: r for r in results if r["mode"] == mode}
    mine = [chosen[n] for n in (condition_name(s, dataset_key, t) for s in STRATEGIES for t in SETTINGS) if n in chosen]
    clients = max((r["num_clients"] for r in mine), default=None)
    quick = any(r["quick"] for r in mine)
    synthetic = any(r["synthetic"] for r in mine)
    fig, axes = plt.subplots(4, 3, figsize=(15, 15.5), squeeze=False)
    windows, repeats, drawn = set(), set(), set()
    overlaid = None  # an authors' frame that was drawn (for the legend)
    for col, strategy in enumerate(STRATEGIES):
        for row, setting in enumerate(SETTINGS):
            name = condition_name(strategy, dataset_key, setting)
            bar_ax, line_ax = axes[row, col], axes[2 + row, col]
            label = f"{STRATEGY_LABELS[strategy]} {setting}"
            res = chosen.get(name)
            if res is None:
                for ax in (bar_ax, line_ax):
                    ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes, color="grey")
                    ax.set_title(label, fontsize="medium")
                    ax.set(xticks=[], yticks=[])
                continue
            frame = result_frame(res)
            notions = frame_notions(frame)
            drawn.update(notions)
            window = (int(res["window"][0]), int(res["window"][1]))
            n = int(frame["repeat"].nunique())
            windows.add(window)
            repeats.add(n)
            ours = res["table3"][GENERAL_FAIRNESS]
            paper = reported["values"].get(name)
            head = f"{label}: F_T {ours:.3f}" if ours is not None else f"{label}: F_T –"
            if res["table3"].get("F_T_std") is not None and n > 1:
                head += f" ± {res['table3']['F_T_std']:.3f}"
            head += f" (n={n})" + (f", paper {paper:.2f}" if paper is not None else "")
            plot_notion_bars(frame, window, ax=bar_ax, title=head, legend=False, paper_F_T=paper,
                             tolerance=tolerance, skip_nan=mode == "corrected")
            bar_ax.set_xticks(range(len(notions)), [NOTION_SYMBOLS[k] for k in notions])
            bar_ax.tick_params(axis="x", labelrotation=0, labelsize="medium")
            theirs = authors.conditions.get(name) if authors is not None and mode == "faithful" else None
            reference = theirs.frame() if theirs is not None else None
            overlaid = reference if reference is not None else overlaid
            plot_notion_timeseries(frame, ax=line_ax, window=window, title=f"{label}, per round", legend=False,
                                   reference=reference, reference_label=AUTHORS_LABEL)
            line_ax.set_ylim(-0.03, 1.05)
    colours = palette(FAIRNESS_KEYS)
    first, last = (sorted(windows)[0] if len(windows) == 1 else (15, 30))
    handles = [Patch(color=colours[k], label=NOTION_LABELS[k]) for k in FAIRNESS_KEYS if k in drawn or not drawn]
    handles += [Line2D([], [], color="black", marker="|", markersize=10, linestyle="",
                       label=f"error bar: std over rounds {first}-{last} of the repeat mean"),
                Line2D([], [], color="black", linewidth=2, label="paper F_T (Table 3)"),
                Patch(color="black", alpha=0.25, label=f"paper ± {STRICT_TOLERANCE:.2f}"),
                Patch(color="black", alpha=0.12, label=f"paper ± {tolerance:.2f} (tolerance)"),
                Patch(color="grey", alpha=0.35, label="band: ±1 std over repeats (n ≥ 2)"),
                Patch(color="grey", alpha=0.12, label=f"Table 3 window, rounds {first}-{last}")]
    if overlaid is not None:
        handles.append(Line2D([], [], color="grey", linestyle="--", label=reference_legend(overlaid, AUTHORS_LABEL)))
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize="small")
    number = DATASET_FIGURES.get(dataset_key)
    runs = "/".join(str(r) for r in sorted(repeats)) or "0"
    fig.suptitle(figure_title(f"Figure {number}: {dataset_title(dataset_key, clients)}, 5 clients per round; "
                              f"{mode} mode, {runs} repeat(s) per condition", quick=quick, synthetic=synthetic))
    fig.text(0.5, 0.085, "Rows 1-2: notions averaged over the Table 3 window (per-round mean over repeats, then mean "
             "over the rounds). Rows 3-4: per-round mean over repeats"
             + ("; dashed: the authors' published runs of the same condition." if overlaid is not None else "."),
             ha="center", fontsize="small")
    fig.tight_layout(rect=(0, 0.1, 1, 0.96))
    return fig, axes


def save_condition_figures(
    result: dict[str, Any],
    figures_dir: Any,
    *,
    reported: dict[str, Any] | None = None,
    dpi: int = 120,
) -> list[Any]:
    """The two per-condition figures of a condition result, saved as ``<stem>_timeseries.png`` and
    ``<stem>_notions.png`` (``stem`` = condition, plus ``-<mode>`` outside faithful mode).

    Drawn from the result alone (no run folders), with the client count actually run in the
    titles and, for a faithful non-quick result, the paper's F_T with its ±0.05 / ±0.10 bands.

    Returns
    -------
    list of matplotlib.figure.Figure
        The time series and the bar figure (still open, e.g. for ``plt.show()``).
    """
    folder = Path(figures_dir)
    folder.mkdir(parents=True, exist_ok=True)
    name, mode = result["condition"], result["mode"]
    stem = name if mode == "faithful" else f"{name}-{mode}"
    where = dataset_title(split_condition(name)[1], result.get("num_clients"))
    frame = result_frame(result)
    window = (int(result["window"][0]), int(result["window"][1]))
    quick, synthetic = bool(result["quick"]), bool(result["synthetic"])
    paper = None
    tolerance = 0.10
    if mode == "faithful" and not result["quick"]:
        reported = reported or load_reported()
        paper = reported["values"].get(name)
        tolerance = float(reported["tolerance"]["absolute"])
    fig_ts, _ = plot_notion_timeseries(frame, title=f"{stem} ({where}): fairness notions per round", window=window,
                                       quick=quick, synthetic=synthetic)
    fig_ts.savefig(folder / f"{stem}_timeseries.png", dpi=dpi, bbox_inches="tight")
    fig_bars, _ = plot_notion_bars(frame, window, title=f"{stem} ({where}): mean over rounds {window[0]}-{window[1]}",
                                   paper_F_T=paper, tolerance=tolerance, skip_nan=mode == "corrected", quick=quick,
                                   synthetic=synthetic)
    fig_bars.savefig(folder / f"{stem}_notions.png", dpi=dpi, bbox_inches="tight")
    return [fig_ts, fig_bars]
