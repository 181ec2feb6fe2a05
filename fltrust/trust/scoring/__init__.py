"""FederatedTrust scoring: a FactSheet -> metric, notion, pillar and trust scores (trust spec 2-3, 7-9).

The engine, the catalogue, the paper's numbers, the golden vectors and the bugs: docs/references.md#trust-2, #trust-3,
#trust-7, #trust-8, #trust-9.

Six modules, each importable on its own and cheap to import (no torch, no scipy):

- :mod:`fltrust.trust.scoring.registry` -- the operation and score-type registries and their
  decorators (:func:`operation`, :func:`score_type`): a new operation or type is one decorated
  function;
- :mod:`fltrust.trust.scoring.operations` -- a metric's first step: its raw value from its
  factsheet fields (:func:`~fltrust.trust.scoring.operations.resolve_field`,
  ``check_properties``, the global privacy risk, ...);
- :mod:`fltrust.trust.scoring.normalization` -- its second step: the score types that map the raw
  value onto [0, 1] (``true_score``, ``ranges``, ``score_mapping``, ...);
- :mod:`fltrust.trust.scoring.definitions` -- the metric tree (pillar -> notion -> metric) and
  its YAML/JSON files: :func:`load_definitions`, :class:`Definitions`, :class:`MetricDefinition`,
  the modes and :class:`DefinitionsError`;
- :mod:`fltrust.trust.scoring.fixes` -- the named corrections of the prototype's bugs
  (:data:`FIXES`, :class:`Fix`, :func:`apply_fixes`);
- :mod:`fltrust.trust.scoring.engine` -- :func:`score_factsheet`: scores and their aggregation,
  rounding, provenance (extended mode).

The packaged definitions files stay in ``fltrust/trust/definitions/`` (``prototype.yaml``,
``paper.yaml``, ``extended.yaml``). Every name of ``definitions``, ``fixes`` and ``engine`` is
importable from here; ``operations`` and ``normalization`` are used as modules
(``from fltrust.trust.scoring import operations as ops``):

>>> from fltrust.trust.scoring import score_factsheet
>>> score_factsheet({"participants": {"client_num": 10}}, mode="fixed").metric("scale").score
0.0
"""

from fltrust.trust.scoring.definitions import (
    PILLAR_AGGREGATIONS,
    PROTOTYPE_PILLAR_WEIGHTS,
    Definitions,
    DefinitionsError,
    MetricDefinition,
    NotionDefinition,
    PillarDefinition,
    TrustScoringError,
    definitions_from_dict,
    load_definitions,
)
from fltrust.trust.scoring.engine import PROVENANCE_SECTION, PROVENANCE_STATUSES, ROUNDINGS, score_factsheet
from fltrust.trust.scoring.fixes import (
    CLEVER_RADIUS,
    FIXES,
    PARAM_COUNT_FIELD,
    Fix,
    apply_fixes,
    engine_switches,
    resolve_fixes,
)
from fltrust.trust.scoring.registry import OPERATIONS, SCORE_TYPES, operation, score_type

__all__ = [
    "CLEVER_RADIUS",
    "FIXES",
    "OPERATIONS",
    "PARAM_COUNT_FIELD",
    "PILLAR_AGGREGATIONS",
    "PROTOTYPE_PILLAR_WEIGHTS",
    "PROVENANCE_SECTION",
    "PROVENANCE_STATUSES",
    "ROUNDINGS",
    "SCORE_TYPES",
    "Definitions",
    "DefinitionsError",
    "Fix",
    "MetricDefinition",
    "NotionDefinition",
    "PillarDefinition",
    "TrustScoringError",
    "apply_fixes",
    "definitions_from_dict",
    "engine_switches",
    "load_definitions",
    "operation",
    "resolve_fixes",
    "score_factsheet",
    "score_type",
]
