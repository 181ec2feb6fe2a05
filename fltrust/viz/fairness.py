"""Figures of the Federated Fairness Analytics reproduction (paper Figures 3-8 and Table 3).

Every function draws from plain tables (never reruns anything) and returns ``(fig, ax)`` (or
``(fig, axes)`` for a grid), so notebooks only call and save:

=============================  =====================================================  =======================
function                       input                                                  paper
=============================  =====================================================  =======================
:func:`plot_notion_timeseries`  :func:`fltrust.repro.fairness.notions_frame`          Figures 3, 5-8 (lines)
:func:`plot_notion_bars`        :func:`fltrust.repro.fairness.notions_frame`          Figures 3, 5-8 (bars)
:func:`plot_figure4`            :func:`fltrust.repro.fairness.figure4_frame`          Figure 4
:func:`plot_table3_comparison`  :func:`fltrust.repro.fairness_report.summary_table`   Table 3, paper vs ours
=============================  =====================================================  =======================

Titles say ``QUICK`` for quick (smoke-test) runs and ``SYNTHETIC`` for synthetic stand-in data,
so such a figure is never mistaken for a reproduction.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from fltrust.repro.fairness import NOTIONS, window_means
from fltrust.repro.fairness_conditions import DATASETS, SETTINGS, STRATEGIES
from fltrust.repro.fairness_report import STRATEGY_LABELS

__all__ = [
    "NOTION_LABELS",
    "PlotInputError",
    "figure_title",
    "pareto_front",
    "plot_figure4",
    "plot_notion_bars",
    "plot_notion_timeseries",
    "plot_table3_comparison",
]

NOTION_LABELS = {
    "f_j": "individual $f_j$",
    "f_g": "group $f_g$",
    "f_r": "incentive $f_r$",
    "f_o": "orchestrator $f_o$",
    "F_T": "general $F_T$",
}
"""Legend labels of the notions (paper Eqs. 7-13)."""

SETTING_MARKERS = {"iid": "o", "niid": "^"}
ACCEPTABLE_FAIRNESS = 0.8
"""The paper's proposed threshold of acceptable general fairness (Results and Discussion)."""


class PlotInputError(ValueError):
    """A plotting function got a table without the columns it needs."""


def _require(frame: pd.DataFrame, columns: tuple[str, ...] | list[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise PlotInputError(f"{what} lacks columns {missing}; build it with the function named in fltrust.viz.fairness")


def figure_title(base: str, *, quick: bool = False, synthetic: bool = False) -> str:
    """``base`` under a ``[SYNTHETIC data; QUICK run ...]`` line when those apply."""
    tags = (["SYNTHETIC data"] if synthetic else []) + (["QUICK run, not comparable with the paper"] if quick else [])
    return f"[{'; '.join(tags)}]\n{base}" if tags else base


def _axes(ax: Any, figsize: tuple[float, float]) -> tuple[Any, Any]:
    import matplotlib.pyplot as plt

    if ax is None:
        return plt.subplots(figsize=figsize)
    return ax.figure, ax


def _palette() -> dict[str, Any]:
    import seaborn as sns

    colours = sns.color_palette("colorblind", len(NOTIONS))
    return {"notions": dict(zip(NOTIONS, colours)), "strategies": dict(zip(STRATEGIES, colours))}


def plot_notion_timeseries(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    window: tuple[int, int] | None = None,
    quick: bool = False,
    synthetic: bool = False,
    ax: Any = None,
) -> tuple[Any, Any]:
    """The four notions and F_T per round: mean over repeats with a ±1 std band (paper Figs. 5-8).

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`fltrust.repro.fairness.notions_frame`: columns ``repeat``, ``round`` and the notions.
    title : str, optional
        Axes title (markers for quick / synthetic are added).
    window : (int, int), optional
        Rounds averaged for Table 3; shaded.
    quick, synthetic : bool
        Mark the title (see :func:`figure_title`).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (default: a new figure).

    Returns
    -------
    fig, ax
        The std band is drawn only where a round has two or more repeats.
    """
    from matplotlib.ticker import MaxNLocator

    _require(frame, ["repeat", "round", *NOTIONS], "the notions frame")
    fig, ax = _axes(ax, (9.5, 4.5))
    colours = _palette()["notions"]
    per_round = frame.groupby("round")[list(NOTIONS)]
    mean, std = per_round.mean(), per_round.std()  # std is NaN where a round has a single repeat
    for notion in NOTIONS:
        ax.plot(mean.index, mean[notion], marker="o", color=colours[notion], label=NOTION_LABELS[notion],
                linewidth=2.8 if notion == "F_T" else 1.5)
        band = std[notion].notna()
        if band.any():
            ax.fill_between(mean.index[band], (mean[notion] - std[notion])[band], (mean[notion] + std[notion])[band],
                            color=colours[notion], alpha=0.2, linewidth=0)
    if window is not None:
        ax.axvspan(window[0] - 0.5, window[1] + 0.5, color="grey", alpha=0.12, label=f"Table 3 window {window[0]}-{window[1]}")
    repeats = frame["repeat"].nunique() if len(frame) else 0
    ax.set_xlabel("server round")
    ax.set_ylabel("fairness index")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(figure_title(title or f"Fairness notions per round (mean ± std over {repeats} repeat(s))",
                              quick=quick, synthetic=synthetic), fontsize="medium")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fig.tight_layout()
    return fig, ax


def plot_notion_bars(
    frame: pd.DataFrame,
    window: tuple[int, int],
    *,
    title: str | None = None,
    quick: bool = False,
    synthetic: bool = False,
    ax: Any = None,
) -> tuple[Any, Any]:
    """Mean of each notion over the Table 3 window (paper Figures 3, 5-8, error-bar charts).

    Bar height = :func:`fltrust.repro.fairness.window_means` (per round mean over repeats, then
    mean over the window rounds: the Table 3 protocol, fairness spec 8). Error bar = standard
    deviation over the window rounds of that repeat-mean series (how much the notion still moves
    as training settles); absent when the window has a single round.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`fltrust.repro.fairness.notions_frame`.
    window : (int, int)
        First and last server round (inclusive), e.g. ``result["window"]``.
    title, quick, synthetic, ax
        As for :func:`plot_notion_timeseries`.

    Returns
    -------
    fig, ax
    """
    _require(frame, ["repeat", "round", *NOTIONS, "mean_local_accuracy", "aux_accuracy"], "the notions frame")
    first, last = int(window[0]), int(window[1])
    inside = frame[(frame["round"] >= first) & (frame["round"] <= last)]
    if inside.empty:
        raise PlotInputError(f"no rounds of the frame fall in the window {first}-{last}")
    means = window_means(frame, first, last)
    spread = inside.groupby("round")[list(NOTIONS)].mean().std()
    fig, ax = _axes(ax, (6.5, 4.5))
    colours = _palette()["notions"]
    heights = [means[k] for k in NOTIONS]
    errors = [0.0 if pd.isna(spread[k]) else float(spread[k]) for k in NOTIONS]
    bars = ax.bar([NOTION_LABELS[k] for k in NOTIONS], heights, yerr=errors, capsize=4,
                  color=[colours[k] for k in NOTIONS], edgecolor="black")
    for bar, value, error in zip(bars, heights, errors):
        ax.annotate(f"{value:.2f}", (bar.get_x() + bar.get_width() / 2, value + error),
                    ha="center", va="bottom", fontsize="small", xytext=(0, 3), textcoords="offset points")
    tops = np.array(heights) + np.array(errors)
    ax.set_ylim(min(0.0, float(np.nanmin(heights)) - 0.05), max(1.1, float(np.nanmax(tops)) + 0.1))
    ax.set_ylabel(f"mean over rounds {first}-{last}")
    ax.set_title(figure_title(title or f"Fairness notions, mean over rounds {first}-{last}", quick=quick,
                              synthetic=synthetic), fontsize="medium")
    ax.tick_params(axis="x", labelrotation=20)
    fig.tight_layout()
    return fig, ax


def pareto_front(points: pd.DataFrame, x: str = "mean_local_accuracy", y: str = "F_T") -> pd.DataFrame:
    """Points not dominated in both ``x`` and ``y`` (higher is better), sorted by ``x``.

    The paper's Figure 4 dashed lines join "the best conditions": those for which no other
    condition is at least as good in both fairness and performance and better in one.
    """
    _require(points, [x, y], "the points frame")
    values = points[[x, y]].dropna().to_numpy(dtype=float)
    keep = [
        i for i, (xi, yi) in enumerate(values)
        if not np.any((values[:, 0] >= xi) & (values[:, 1] >= yi) & ((values[:, 0] > xi) | (values[:, 1] > yi)))
    ]
    front = points[[x, y]].dropna().iloc[keep]
    return points.loc[front.index].sort_values(x)


def plot_figure4(points: pd.DataFrame, *, quick: bool = False, synthetic: bool | None = None) -> tuple[Any, Any]:
    """Paper Figure 4: general fairness F_T against performance, one panel per dataset.

    One marker per condition: colour = strategy, shape = setting (circle iid, triangle niid),
    hollow = corrected mode. The dashed line joins the Pareto-best conditions of a panel
    (:func:`pareto_front`), the dotted line is the paper's 0.8 threshold of acceptable fairness.

    Parameters
    ----------
    points : pandas.DataFrame
        :func:`fltrust.repro.fairness.figure4_frame` (columns ``dataset``, ``strategy``,
        ``setting``, ``mode``, ``F_T``, ``mean_local_accuracy``, ``quick``, ``synthetic``).
    quick : bool
        Mark the title as a quick run (also when any point is quick).
    synthetic : bool, optional
        Mark the title as synthetic data (default: when any point is synthetic).

    Returns
    -------
    fig, axes
        ``axes`` is a 2 x 2 array in Table 3 dataset order; a panel without points says "not run".
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    _require(points, ["dataset", "strategy", "setting", "mode", "F_T", "mean_local_accuracy"], "the Figure 4 frame")
    quick = quick or bool(points.get("quick", pd.Series(dtype=bool)).any())
    synthetic = bool(points.get("synthetic", pd.Series(dtype=bool)).any()) if synthetic is None else synthetic
    colours = _palette()["strategies"]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5), squeeze=False)
    for ax, setup in zip(axes.ravel(), DATASETS.values()):
        panel = points[points["dataset"] == setup.paper_label]
        ax.set_title(setup.paper_label)
        ax.set_xlabel("performance: mean local accuracy")
        ax.set_ylabel("general fairness $F_T$")
        ax.axhline(ACCEPTABLE_FAIRNESS, color="grey", linestyle=":", linewidth=1)
        if panel.empty:
            ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes, color="grey")
            continue
        for _, row in panel.iterrows():
            colour = colours.get(row["strategy"], "black")
            ax.scatter(row["mean_local_accuracy"], row["F_T"], s=70, marker=SETTING_MARKERS.get(row["setting"], "s"),
                       facecolors=colour if row["mode"] == "faithful" else "none", edgecolors=colour, linewidths=1.5)
        for mode, group in panel.groupby("mode"):
            front = pareto_front(group)
            ax.plot(front["mean_local_accuracy"], front["F_T"], color="black", linewidth=1,
                    linestyle="--" if mode == "faithful" else ":")
    handles = [Line2D([], [], color=colours[s], marker="o", linestyle="", label=STRATEGY_LABELS[s]) for s in STRATEGIES]
    handles += [Line2D([], [], color="black", marker=SETTING_MARKERS[t], linestyle="", markerfacecolor="none", label=t)
                for t in SETTINGS]
    handles += [Line2D([], [], color="black", linestyle="--", label="best conditions (Pareto)"),
                Line2D([], [], color="grey", linestyle=":", label=f"F_T = {ACCEPTABLE_FAIRNESS} (paper threshold)")]
    if (points["mode"] != "faithful").any():
        handles.append(Line2D([], [], color="black", marker="o", linestyle="", markerfacecolor="none",
                              label="hollow: corrected mode"))
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize="small")
    fig.suptitle(figure_title("Figure 4: general fairness vs performance", quick=quick, synthetic=synthetic))
    fig.tight_layout(rect=(0, 0.07, 1, 0.94))
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

    Grey bar = the paper's F_T (with ± ``tolerance`` as a thin error bar); coloured
    bars = ours per mode, ± the std over repeats; a bar outside the tolerance is hatched.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`fltrust.repro.fairness_report.summary_table` (or
        :func:`fltrust.repro.fairness.table3`, then all rows count as faithful).
    tolerance : float, optional
        Half-width of the thin error bar on the paper bars (default: the absolute tolerance of
        ``reported``).
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`fltrust.repro.fairness.load_reported`).
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

    from fltrust.repro.fairness import load_reported

    _require(table, ["condition", "ours_F_T", "ours_std", "within_tolerance"], "the Table 3 frame")
    table = table.copy()
    if "mode" not in table.columns:
        table["mode"] = "faithful"
    quick = quick or bool(table.get("quick", pd.Series(dtype=bool)).any())
    synthetic = bool(table.get("synthetic", pd.Series(dtype=bool)).any()) if synthetic is None else synthetic
    reported = reported or load_reported()
    paper_values = reported["values"]
    tolerance = float(reported["tolerance"]["absolute"]) if tolerance is None else tolerance
    modes = sorted(table["mode"].unique(), key=lambda m: (m != "faithful", m)) or ["faithful"]
    colours = {m: c for m, c in zip(modes, _palette()["notions"].values())}
    groups = [(s, t) for s in STRATEGIES for t in SETTINGS]
    width = 0.8 / (1 + len(modes))
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), squeeze=False, sharey=True)
    for ax, (key, setup) in zip(axes.ravel(), DATASETS.items()):
        positions = np.arange(len(groups))
        names = [f"{s}_{key}_{t}" for s, t in groups]
        paper = [paper_values.get(n, np.nan) for n in names]
        ax.bar(positions, paper, width, color="lightgrey", edgecolor="black", label="paper",
               yerr=[tolerance] * len(groups), error_kw={"elinewidth": 0.8, "capsize": 2})
        for j, mode in enumerate(modes):
            rows = table[table["mode"] == mode].set_index("condition")
            ours = [rows.at[n, "ours_F_T"] if n in rows.index else np.nan for n in names]
            std = [rows.at[n, "ours_std"] if n in rows.index else np.nan for n in names]
            inside = [rows.at[n, "within_tolerance"] if n in rows.index else None for n in names]
            ours = np.array([np.nan if v is None else v for v in ours], dtype=float)
            std = np.nan_to_num(np.array([np.nan if v is None else v for v in std], dtype=float))
            bars = ax.bar(positions + (j + 1) * width, ours, width, yerr=std, capsize=3, color=colours[mode],
                          edgecolor="black", label=f"ours ({mode})")
            for bar, ok, value in zip(bars, inside, ours):
                if ok is not None and not pd.isna(ok) and not bool(ok):
                    bar.set_hatch("//")
                if np.isnan(value):
                    ax.text(bar.get_x() + bar.get_width() / 2, 0.02, "not run", rotation=90, ha="center",
                            va="bottom", fontsize="x-small", color="grey")
        ax.set_xticks(positions + width * len(modes) / 2)
        ax.set_xticklabels([f"{STRATEGY_LABELS[s]}\n{t}" for s, t in groups], fontsize="small")
        ax.set_title(setup.paper_label)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("$F_T$, Table 3 window")
    axes[0, 0].legend(fontsize="small", loc="upper right")
    fig.suptitle(figure_title("Table 3: paper vs ours (hatched = outside tolerance)", quick=quick, synthetic=synthetic))
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig, axes
