"""The two paper reproductions: definitions, runs, results and the paper-vs-ours reports.

One package per paper, both built the same way (generated configurations, one result JSON per
condition or experiment, a RESULTS.md rendered from templates):

- :mod:`fltrust.repro.fairness` -- Federated Fairness Analytics: ``conditions`` (the 24 conditions
  and their configurations), ``run`` (running a condition, its result JSON, the Table 3 window
  protocol, Figure 4), ``report`` (RESULTS.md);
- :mod:`fltrust.repro.trust` -- FederatedTrust: ``experiments`` (experiments 1-5 and their
  configurations), ``run`` (running, replaying every scoring mode, result JSON, extended mode),
  ``ablation`` (the attack ablation on experiment 4), ``report`` (RESULTS.md).

The shared core, used by both:

- :mod:`fltrust.repro.batch` -- ``fltrust repro``: the papermill batch runner over the notebooks;
- :mod:`fltrust.repro.markdown` -- cell formatting and the Jinja2 templates (``templates/<paper>/``);
- :mod:`fltrust.repro.html_report` -- ``fltrust report``: one self-contained HTML page per paper;
- :mod:`fltrust.repro.results` -- reading the result files, and the parts both papers' results hold
  (the runs' provenance records, each run's per-round model hashes);
- :mod:`fltrust.repro.provenance_table` -- RESULTS.md's provenance section (commit, BLAS, threads,
  and whether the training code changed since);
- :mod:`fltrust.repro.verify` -- ``fltrust repro verify``: rerun one repeat of a committed result
  and compare it round by round;
- :mod:`fltrust.repro.caveats` -- the caveat lines printed under a result;
- :mod:`fltrust.repro.paths` -- the checkout whose ``papers_repro/`` is read and written.
"""
