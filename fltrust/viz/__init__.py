"""Figures: every function takes plain tables (run records, result frames) and returns ``(fig, ax)``.

- Fairness reproduction (:mod:`fltrust.viz.fairness`): notion time series and window bars
  (paper Figures 3, 5-8), fairness vs performance (Figure 4), Table 3 paper vs ours.
- Partitions: :func:`fltrust.partition.plots.plot_class_distribution`.

Titles carry ``QUICK`` / ``SYNTHETIC`` markers so that a smoke-test figure is never mistaken for
a reproduction.
"""

from fltrust.viz.fairness import (
    NOTION_LABELS,
    figure_title,
    pareto_front,
    plot_figure4,
    plot_notion_bars,
    plot_notion_timeseries,
    plot_table3_comparison,
)

__all__ = [
    "NOTION_LABELS",
    "figure_title",
    "pareto_front",
    "plot_figure4",
    "plot_notion_bars",
    "plot_notion_timeseries",
    "plot_table3_comparison",
]
