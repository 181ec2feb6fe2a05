"""Fairness plots from plain tables: the notions per round, the Pareto front, figure titles.

Every function takes a table the caller builds and returns ``(fig, ax)``; nothing here knows the
reproduction's conditions, datasets or tolerances (the paper's Table 3, Figure 4 and Figures 3,
5-8 are drawn by :mod:`fltrust.repro.fairness.figures` with these functions):

==============================  ==============================================================
function                        input
==============================  ==============================================================
:func:`plot_notion_timeseries`  a notions frame: columns ``repeat``, ``round`` and :data:`FAIRNESS_KEYS`
:func:`pareto_front`            points with two higher-is-better columns
:func:`figure_title`            a title, marked ``QUICK`` / ``SYNTHETIC``
==============================  ==============================================================

Titles say ``QUICK`` for quick (smoke-test) runs and ``SYNTHETIC`` for synthetic stand-in data,
so such a figure is never mistaken for a reproduction, and every band says in a legend what it
shows. :func:`require_columns`, :func:`figure_axes` and :func:`palette` are the shared plumbing
of the fairness figures.

The notions, their legend labels and tick labels come from the notion table
(:mod:`fltrust.metrics.fairness.registry`): a registered notion is drawn wherever a frame has its
column.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from fltrust.metrics.fairness.registry import FAIRNESS_KEYS, GENERAL_FAIRNESS, NOTION_LABELS, NOTION_SYMBOLS

__all__ = [
    "NOTION_LABELS",
    "NOTION_SYMBOLS",
    "PlotInputError",
    "figure_axes",
    "figure_title",
    "frame_notions",
    "palette",
    "pareto_front",
    "plot_notion_timeseries",
    "reference_legend",
    "require_columns",
]



class PlotInputError(ValueError):
    """A plotting function got a table without the columns it needs."""


def require_columns(frame: pd.DataFrame, columns: Iterable[str], what: str,
                    how: str = "as the plot's docstring says") -> None:
    """Raise :class:`PlotInputError` naming the columns of ``columns`` that ``frame`` lacks.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table handed to a plot.
    columns : iterable of str
        The columns the plot needs.
    what : str
        The table's name in the message (e.g. ``"the notions frame"``).
    how : str
        How to build the table, in the message (``"with <the function that builds it>"``).

    Examples
    --------
    >>> require_columns(pd.DataFrame({"round": [1]}), ["round", "F_T"], "the notions frame")
    Traceback (most recent call last):
    ...
    fltrust.viz.fairness.PlotInputError: the notions frame lacks columns ['F_T']; build it as the plot's docstring says
    """
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise PlotInputError(f"{what} lacks columns {missing}; build it {how}")


def frame_notions(frame: pd.DataFrame, what: str = "the notions frame") -> list[str]:
    """The notions that ``frame`` has a column for, in legend order (:data:`FAIRNESS_KEYS`); F_T is required.

    Parameters
    ----------
    frame : pandas.DataFrame
        A notions frame (or any table with notion columns).
    what : str
        The table's name in the error message.

    Returns
    -------
    list of str
        The notion columns to draw (a notion registered after the frame was made is left out).

    Examples
    --------
    >>> frame_notions(pd.DataFrame({"round": [1], "f_o": [0.9], "F_T": [0.5]}))
    ['f_o', 'F_T']
    """
    require_columns(frame, [GENERAL_FAIRNESS], what)
    return [k for k in FAIRNESS_KEYS if k in frame.columns]


def figure_title(base: str, *, quick: bool = False, synthetic: bool = False) -> str:
    """``base`` under a ``[SYNTHETIC data; QUICK run ...]`` line when those apply.

    >>> figure_title("Figure 4", synthetic=True)
    '[SYNTHETIC data]\\nFigure 4'
    """
    tags = (["SYNTHETIC data"] if synthetic else []) + (["QUICK run, not comparable with the paper"] if quick else [])
    return f"[{'; '.join(tags)}]\n{base}" if tags else base


def figure_axes(ax: Any, figsize: tuple[float, float]) -> tuple[Any, Any]:
    """``(fig, ax)``: the figure of ``ax``, or a new figure of ``figsize`` inches when ``ax`` is None."""
    import matplotlib.pyplot as plt

    if ax is None:
        return plt.subplots(figsize=figsize)
    return ax.figure, ax


def palette(keys: Iterable[Any]) -> dict[Any, Any]:
    """The fairness figures' colour-blind colours, one per key in order.

    ``palette(FAIRNESS_KEYS)`` colours the notions; the strategies and the modes take the same colours in
    their own order (the seaborn ``colorblind`` palette, cycled past its 10 colours).

    Parameters
    ----------
    keys : iterable
        What to colour, in order.

    Returns
    -------
    dict
        Key -> RGB tuple.
    """
    import seaborn as sns

    keys = list(keys)
    return dict(zip(keys, sns.color_palette("colorblind", max(len(FAIRNESS_KEYS), len(keys)))))


def plot_notion_timeseries(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    window: tuple[int, int] | None = None,
    quick: bool = False,
    synthetic: bool = False,
    ax: Any = None,
    legend: bool = True,
    reference: pd.DataFrame | None = None,
    reference_label: str = "reference",
) -> tuple[Any, Any]:
    """The notions and F_T per round: mean over repeats with a ±1 std band (paper Figs. 5-8).

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`fltrust.repro.fairness.run.notions_frame`: columns ``repeat``, ``round``, ``F_T`` and
        the notions (every one of :data:`FAIRNESS_KEYS` it has is drawn, :func:`frame_notions`).
    title : str, optional
        Axes title (markers for quick / synthetic are added).
    window : (int, int), optional
        Rounds averaged for Table 3; shaded.
    quick, synthetic : bool
        Mark the title (see :func:`figure_title`).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (default: a new figure).
    legend : bool, default True
        Draw the legend (notions, what the band and the shading show); a grid draws one for all.
    reference : pandas.DataFrame, optional
        Another notions frame of the same layout (e.g. someone else's runs of the same setting):
        its mean over repeats per round, dashed, in the same colours, each line labelled
        ``"<reference_label>: <notion>"``; no band.
    reference_label : str
        The name of ``reference`` in its lines' labels and the legend.

    Returns
    -------
    fig, ax
        The std band is drawn only where a round has two or more repeats.
    """
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    require_columns(frame, ["repeat", "round"], "the notions frame")
    notions = frame_notions(frame)
    fig, ax = figure_axes(ax, (9.5, 4.5))
    colours = palette(FAIRNESS_KEYS)
    per_round = frame.groupby("round")[notions]
    mean, std = per_round.mean(), per_round.std()  # std is NaN where a round has a single repeat
    banded = False
    for notion in notions:
        ax.plot(mean.index, mean[notion], marker="o", markersize=3.5, color=colours[notion],
                label=NOTION_LABELS[notion], linewidth=2.8 if notion == GENERAL_FAIRNESS else 1.5)
        band = std[notion].notna()
        if band.any():
            banded = True
            ax.fill_between(mean.index[band], (mean[notion] - std[notion])[band], (mean[notion] + std[notion])[band],
                            color=colours[notion], alpha=0.2, linewidth=0)
    if reference is not None:
        require_columns(reference, ["repeat", "round"], f"the {reference_label} notions frame")
        shared = [k for k in frame_notions(reference, f"the {reference_label} notions frame") if k in notions]
        theirs = reference.groupby("round")[shared].mean()
        for notion in shared:
            ax.plot(theirs.index, theirs[notion], linestyle="--", color=colours[notion], alpha=0.9,
                    linewidth=2.0 if notion == GENERAL_FAIRNESS else 1.1,
                    label=f"{reference_label}: {NOTION_LABELS[notion]}")
    if window is not None:
        ax.axvspan(window[0] - 0.5, window[1] + 0.5, color="grey", alpha=0.12, label=f"Table 3 window {window[0]}-{window[1]}")
    repeats = frame["repeat"].nunique() if len(frame) else 0
    ax.set_xlabel("server round")
    ax.set_ylabel("fairness index")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(figure_title(title or f"Fairness notions per round (line: mean over {repeats} repeat(s))",
                              quick=quick, synthetic=synthetic), fontsize="medium")
    if legend:
        handles = list(ax.get_lines())[:len(notions)]
        if reference is not None:
            from matplotlib.lines import Line2D

            handles.append(Line2D([], [], color="grey", linestyle="--", label=reference_legend(reference, reference_label)))
        if banded:
            handles.append(Patch(color="grey", alpha=0.35, label=f"band: ±1 std over the {repeats} repeats"))
        else:
            handles.append(Patch(color="none", label=f"{repeats} repeat(s): no spread band"))
        if window is not None:
            handles.append(Patch(color="grey", alpha=0.12, label=f"Table 3 window, rounds {window[0]}-{window[1]}"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
        fig.tight_layout()
    return fig, ax


def reference_legend(reference: pd.DataFrame, label: str) -> str:
    """The legend entry of a dashed reference overlay: ``"dashed: authors (mean over 3 repeats)"``.

    >>> reference_legend(pd.DataFrame({"repeat": [0, 1, 2]}), "authors")
    'dashed: authors (mean over 3 repeats)'
    """
    return f"dashed: {label} (mean over {reference['repeat'].nunique()} repeats)"


def pareto_front(points: pd.DataFrame, x: str = "mean_local_accuracy", y: str = GENERAL_FAIRNESS) -> pd.DataFrame:
    """Points not dominated in both ``x`` and ``y`` (higher is better), sorted by ``x``.

    The paper's Figure 4 dashed lines join "the best conditions": those for which no other
    condition is at least as good in both fairness and performance and better in one.
    """
    require_columns(points, [x, y], "the points frame")
    values = points[[x, y]].dropna().to_numpy(dtype=float)
    keep = [
        i for i, (xi, yi) in enumerate(values)
        if not np.any((values[:, 0] >= xi) & (values[:, 1] >= yi) & ((values[:, 0] > xi) | (values[:, 1] > yi)))
    ]
    front = points[[x, y]].dropna().iloc[keep]
    return points.loc[front.index].sort_values(x)
