"""The measurements behind a FederatedTrust FactSheet: pure functions of a model, data or run record.

Each module is imported on use (several need torch, scipy, ART, SHAP, fairlearn or CodeCarbon);
the trust observer (:mod:`fltrust.trust.observer`, :mod:`fltrust.trust.extended`) calls them and
writes their results into the FactSheet. Extended mode's measures are declarations
(:mod:`~fltrust.trust.measures.registry`: :func:`measure`, :class:`RunView`, :class:`Measured`,
importable from here); the packaged ones are :mod:`~fltrust.trust.measures.taxonomy`.

- :mod:`~fltrust.trust.measures.statistics` -- label entropy, class imbalance, selection and
  accuracy CVs (trust spec 3.8, 5, docs/references.md#trust-3-8, #trust-5);
- :mod:`~fltrust.trust.measures.robustness` -- CLEVER (trust spec 3.10, docs/references.md#trust-3-10), ART FGSM/PGD
  evasion accuracy;
- :mod:`~fltrust.trust.measures.explainability` -- SHAP values, feature-importance CV (trust spec 3.11, B10;
  docs/references.md#trust-3-11, #trust-b10);
- :mod:`~fltrust.trust.measures.leakage` -- membership inference;
- :mod:`~fltrust.trust.measures.poisoning` -- defence recovery and retention of attack runs;
- :mod:`~fltrust.trust.measures.reputation` -- client reputation, data quality;
- :mod:`~fltrust.trust.measures.reliability` -- drop-out, error and time-out rates;
- :mod:`~fltrust.trust.measures.discrimination` -- discrimination index, fairlearn gaps;
- :mod:`~fltrust.trust.measures.governance` -- hash-chain audit, co-versioning, registry,
  visualisation, declared values;
- :mod:`~fltrust.trust.measures.sustainability` -- energy and emissions (CodeCarbon offline);
- :mod:`~fltrust.trust.measures.memo` -- CLEVER and SHAP computed once per model and samples;
- :mod:`~fltrust.trust.measures.registry` -- the measure registry (a measure declares its
  FactSheet fields and provenance); :mod:`~fltrust.trust.measures.taxonomy` -- the packaged measures.
"""

from fltrust.trust.measures.registry import Measured, RunView, declared_field, measure

# the packaged measures: registered whenever this package is imported
from fltrust.trust.measures import taxonomy as taxonomy

__all__ = ["Measured", "RunView", "declared_field", "measure"]
