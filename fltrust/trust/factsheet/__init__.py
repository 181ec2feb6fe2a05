"""The FederatedTrust FactSheet: schema, reading and writing, population (trust spec 4, docs/references.md#trust-4).

- :mod:`fltrust.trust.factsheet.schema` -- the one table of the fields (:data:`FIELDS`, the
  template's, and :func:`extended_fields`, those the extended mode's measures declare), sections
  and template (:func:`new_factsheet`);
- :mod:`fltrust.trust.factsheet.io` -- field access (:func:`get_field`, :func:`set_field`,
  :func:`set_provenance`), completeness (:func:`missing_fields`, bug B2; docs/references.md#trust-b2) and JSON files
  (:func:`save_factsheet`, :func:`load_factsheet`);
- :mod:`fltrust.trust.factsheet.populate` -- the fields known before training, from a run's
  configuration and model (:func:`populate_pre_training`);
- :mod:`fltrust.trust.factsheet.prototype_logs` -- the prototype's own files, FederatedScope logs
  and ``statistics.json`` (:func:`populate_from_prototype_logs`).

Every name is importable from here:

>>> from fltrust.trust.factsheet import get_field, new_factsheet
>>> get_field(new_factsheet(), "participants/client_selector")
''
"""

from fltrust.trust.factsheet.io import (
    get_field,
    is_missing,
    load_factsheet,
    missing_fields,
    save_factsheet,
    set_field,
    set_provenance,
)
from fltrust.trust.factsheet.populate import (
    STRATEGY_NAMES,
    TRAINING_MODEL_MAP,
    describe_preprocessing,
    describe_provenance,
    populate_pre_training,
)
from fltrust.trust.factsheet.prototype_logs import (
    PROTOTYPE_MODEL_MAP,
    populate_from_prototype_logs,
    read_eval_results_final,
    read_system_metrics,
)
from fltrust.trust.factsheet.schema import (
    FIELD_BY_PATH,
    FIELDS,
    PROVENANCE_SECTION,
    PROVENANCE_STATUSES,
    SECTIONS,
    USER_SUPPLIED_FIELDS,
    FactsheetError,
    FactsheetField,
    declare_fields,
    extended_fields,
    extended_sections,
    field_spec,
    new_factsheet,
    schema_table,
)

# the packaged measures declare the extended fields (a plain import: this package may be importing
# while fltrust.trust.measures, which needs its schema, is half-way through its own import)
import fltrust.trust.measures  # noqa: F401

__all__ = [
    "FIELDS",
    "FIELD_BY_PATH",
    "PROTOTYPE_MODEL_MAP",
    "PROVENANCE_SECTION",
    "PROVENANCE_STATUSES",
    "SECTIONS",
    "STRATEGY_NAMES",
    "TRAINING_MODEL_MAP",
    "USER_SUPPLIED_FIELDS",
    "FactsheetError",
    "FactsheetField",
    "declare_fields",
    "describe_preprocessing",
    "describe_provenance",
    "extended_fields",
    "extended_sections",
    "field_spec",
    "get_field",
    "is_missing",
    "load_factsheet",
    "missing_fields",
    "new_factsheet",
    "populate_from_prototype_logs",
    "populate_pre_training",
    "read_eval_results_final",
    "read_system_metrics",
    "save_factsheet",
    "schema_table",
    "set_field",
    "set_provenance",
]
