"""Figures: every function takes plain tables (run records, result frames) and returns ``(fig, ax)``.

- Fairness (:mod:`fltrust.viz.fairness`): notion time series, the Pareto front, title markers; the
  reproduction's Table 3, Figure 4 and Figures 3, 5-8 are drawn with them by
  :mod:`fltrust.repro.fairness.figures` (viz never imports the reproduction layer).
- FederatedTrust reproduction (:mod:`fltrust.viz.trust`): one experiment's pillar and metric
  scores (paper Figures 4-5) and pillar scores paper vs ours across experiments; a single report is
  drawn by :func:`fltrust.trust.report.plot_trust_report`.
- N-BaIoT stand-in vs real rows: :func:`fltrust.viz.n_baiot.plot_standin_vs_real` (written with its
  table by :mod:`fltrust.repro.trust.n_baiot_compare`).
- Partitions: :func:`fltrust.partition.plots.plot_class_distribution`.
- Files: :func:`fltrust.viz.files.save_png` writes a figure as a 256-colour palette PNG, about a third
  of matplotlib's size for line plots (the committed figures and the summary notebooks that show them).

Titles carry ``QUICK`` / ``SYNTHETIC`` markers so that a smoke-test figure is never mistaken for
a reproduction.
"""

from fltrust.viz.fairness import NOTION_LABELS, figure_title, pareto_front, plot_notion_timeseries
from fltrust.viz.trust import plot_experiment_report, plot_pillar_comparison

__all__ = [
    "NOTION_LABELS",
    "figure_title",
    "pareto_front",
    "plot_notion_timeseries",
    "plot_experiment_report",
    "plot_pillar_comparison",
]
