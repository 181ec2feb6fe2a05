"""Federated Fairness Analytics reproduction (Dilley et al.; Table 3, Figures 4-8).

- :mod:`fltrust.repro.fairness.conditions` -- the 24 conditions (strategy x dataset x setting),
  their configurations (``papers_repro/fairness_analytics/configs/``) and quick overrides;
- :mod:`fltrust.repro.fairness.run` -- running a condition, its result JSON, the Table 3 window
  protocol (fairness spec 8, docs/references.md#fairness-8), Table 3 and Figure 4 frames, ``reported.yaml``;
- :mod:`fltrust.repro.fairness.authors` -- the authors' 72 raw result files: names, validation, their
  Table 3 window values, and Welch's test of our repeats against theirs;
- :mod:`fltrust.repro.fairness.report` -- RESULTS.md: paper vs ours (and the authors' runs), misses, data scale;
- :mod:`fltrust.repro.fairness.figures` -- Table 3 paper vs ours, Figure 4, Figures 3, 5-8 and the
  per-condition figures (drawn with the plain-table plots of :mod:`fltrust.viz.fairness`).
"""
