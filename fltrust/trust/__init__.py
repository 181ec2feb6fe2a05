"""FederatedTrust: trustworthiness scores of a federated run (Sanchez Sanchez et al., FederatedTrust).

A run's FactSheet (a nested dict, trust spec 4; docs/references.md#trust-4) is scored against a tree of pillars, notions
and metrics (paper Table 2) with the normalisations of paper Table 3 / the authors' prototype:

>>> from fltrust.trust import score_factsheet
>>> report = score_factsheet(factsheet, mode="prototype")      # doctest: +SKIP
>>> report.trust_score, report.pillar("privacy").score           # doctest: +SKIP
>>> print(report.format_table())                                 # doctest: +SKIP

Scoring modules (cheap to import):

- :mod:`fltrust.trust.scoring` -- definitions files, bug-fix switches, :func:`score_factsheet`
  (modules ``definitions``, ``fixes`` and ``engine``), and the metrics' two steps:
  ``operations`` (raw values from factsheet fields: check_properties, global privacy risk, ...)
  and ``normalization`` (score types: true_score, ranges, score_mapping, ...); both are also
  reachable as ``from fltrust.trust import operations, normalization`` (the derivations notebook);
- :mod:`fltrust.trust.report` -- :class:`TrustReport`, plot and writer.

The metric definitions ship as YAML in ``fltrust/trust/definitions/`` (``prototype.yaml``,
``paper.yaml``, ``extended.yaml``). The rest is imported on use:

- :mod:`fltrust.trust.factsheet` -- the FactSheet schema, its reading and writing, its
  pre-training population and the prototype-log importer;
- :mod:`fltrust.trust.measures` -- the measurements behind the FactSheet values: ``statistics``
  (entropy, CVs), ``robustness`` (CLEVER, ART FGSM/PGD), ``explainability`` (SHAP), and for the
  metrics the prototype left out (extended mode: all 36 metrics of the paper's taxonomy plus
  nebula's sustainability pillar) ``leakage`` (membership inference), ``poisoning`` (defence
  recovery from attack runs), ``reputation`` (client reputation, data quality), ``reliability``
  (drop-out / error / time-out rates), ``discrimination`` (discrimination index, fairlearn gaps),
  ``governance`` (hash-chain audit, co-versioning, registry, visualisation, declared values),
  ``sustainability`` (CodeCarbon offline), with ``memo`` (CLEVER and SHAP computed once per model);
- :mod:`fltrust.trust.observer` -- :class:`~fltrust.trust.observer.TrustObserver`, which fills
  the FactSheet from any engine's round records, with :mod:`fltrust.trust.describe` (an app's
  description), :mod:`fltrust.trust.model_fields` (CLEVER and SHAP on the model) and
  :mod:`fltrust.trust.extended` (its extended-mode hooks).
"""

from fltrust.trust.report import (
    MetricResult,
    NotionResult,
    PillarResult,
    TrustReport,
    plot_trust_report,
    write_report,
)
from fltrust.trust.scoring import (
    ALL_MODES,
    FIXES,
    MODES,
    Definitions,
    DefinitionsError,
    Fix,
    TrustScoringError,
    load_definitions,
    score_factsheet,
)
# the two modules lived here before they joined the scoring package (notebooks import them from here)
from fltrust.trust.scoring import normalization as normalization
from fltrust.trust.scoring import operations as operations
from fltrust.trust.scoring.normalization import NormalizationError, TrustScoreWarning
from fltrust.trust.scoring.operations import check_properties, get_global_privacy_risk, resolve_field

__all__ = [
    "ALL_MODES",
    "FIXES",
    "MODES",
    "Definitions",
    "DefinitionsError",
    "Fix",
    "MetricResult",
    "NormalizationError",
    "NotionResult",
    "PillarResult",
    "TrustReport",
    "TrustScoreWarning",
    "TrustScoringError",
    "check_properties",
    "get_global_privacy_risk",
    "load_definitions",
    "plot_trust_report",
    "resolve_field",
    "score_factsheet",
    "write_report",
]
