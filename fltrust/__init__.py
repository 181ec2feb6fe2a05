"""fltrust: a reproduction kit for trustworthy and fair federated learning.

The library is thin on purpose: datasets (:mod:`fltrust.data`), partitioners
(:mod:`fltrust.partition`), models (:mod:`fltrust.models`), an in-process FL engine
(:mod:`fltrust.fl`), paper metrics that observe plain per-round records
(:mod:`fltrust.metrics`, :mod:`fltrust.trust`), run records (:mod:`fltrust.runs`) and
paper-vs-ours tables (:mod:`fltrust.repro`). Importing the package is cheap; heavy modules load on use.
"""

__version__ = "0.1.0"
