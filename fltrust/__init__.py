"""fltrust: a reproduction kit for trustworthy and fair federated learning.

The library is thin on purpose, and laid out by role: datasets (:mod:`fltrust.data`), partitioners
(:mod:`fltrust.partition`), models (:mod:`fltrust.models`), the federated algorithms -- strategies,
aggregation rules, privacy mechanisms (:mod:`fltrust.algorithms`) -- and the engines that run them
(:mod:`fltrust.engines`: fltrust's in-process round loop and fltrust's experiments on Flower), paper
metrics that observe plain per-round records (:mod:`fltrust.metrics`, :mod:`fltrust.trust`), both
papers' metrics on anyone's Flower app (:mod:`fltrust.flower`), run records (:mod:`fltrust.runs`) and
paper-vs-ours tables (:mod:`fltrust.repro`). Importing the package is cheap; heavy modules load on use.
"""

__version__ = "0.1.0"
