"""FactSheet schema: the template, the extra fields and the schema table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fltrust.trust.factsheet.schema import (
    FIELDS,
    SECTIONS,
    FactsheetError,
    declare_fields,
    extended_fields,
    extended_sections,
    field_spec,
    new_factsheet,
    schema_table,
    undeclare_fields,
)


@pytest.fixture(scope="module")
def example(golden_dir: Path) -> Path:
    """The FederatedTrust example inputs vendored in ``tests/trust/golden/``."""
    return golden_dir



def test_template_matches_the_prototype_template(example: Path) -> None:
    # Prepare
    prototype = json.loads((example / "factsheet_template.json").read_text())
    # Execute
    ours = new_factsheet(include_extras=False)
    # Assert: same sections, fields and defaults, except the system sizes, which are numbers here
    assert list(ours) == list(SECTIONS)
    assert {s: list(f) for s, f in ours.items()} == {s: list(f) for s, f in prototype.items()}
    for section, fields in prototype.items():
        for name, value in fields.items():
            ours_value = ours[section][name]
            if section == "system" and name != "avg_time_minutes":
                assert value == "" and math.isnan(ours_value)
            elif isinstance(value, float) and math.isnan(value):
                assert math.isnan(ours_value), f"{section}/{name}"
            else:
                assert ours_value == value, f"{section}/{name}"


def test_extras_are_in_the_full_template() -> None:
    fs = new_factsheet()
    assert fs["project"]["organisations"] == []
    assert math.isnan(fs["configuration"]["trainable_param_count"])
    assert {f.path for f in FIELDS if f.extra} == {
        "project/organisations", "configuration/trainable_param_count", "fairness/test_acc_cv_raw",
        "fairness/selection_cv_raw", "fairness/class_imbalance_raw",
    }



def test_paths_are_unique_and_kinds_phases_and_sections_known() -> None:
    # Prepare
    fields = FIELDS + extended_fields()
    paths = [f.path for f in fields]
    # Assert
    assert len(paths) == len(set(paths)), sorted({p for p in paths if paths.count(p) > 1})
    assert {f.kind for f in fields} <= {"str", "text", "number", "bool", "list"}
    assert {f.phase for f in fields} <= {"pre", "during", "post"}
    assert {p.split("/")[0] for p in paths} <= set(SECTIONS + extended_sections())
    assert all(f.extra for f in extended_fields())
    assert extended_sections() == ("privacy", "robustness", "explainability", "accountability", "federation",
                                   "sustainability")


def test_schema_table_has_one_row_per_field_with_both_sources() -> None:
    # Execute
    lines = schema_table().splitlines()
    rows = lines[3:-1]
    # Assert: rule, header, rule, one row per field in schema order, rule
    assert lines[0] == lines[2] == lines[-1] and set(lines[0]) == {"=", " "}
    assert [row.split()[0] for row in rows] == [f.path for f in FIELDS]
    selector = rows[[f.path for f in FIELDS].index("participants/client_selector")]
    assert selector.endswith("metrics.trust.client_selector; prototype: federate.sampler")
    assert [row.split()[0] for row in rows if "(extra)" in row] == [f.path for f in FIELDS if f.extra]
    assert len(schema_table(extended_fields()).splitlines()) == len(extended_fields()) + 4


def test_a_declared_field_extends_the_schema_and_clashes_are_refused() -> None:
    from fltrust.trust.factsheet import FactsheetField, set_field

    spec = FactsheetField("newsection/value", "number", "post", "server", "a test", extra=True)
    declare_fields([spec], by="a_test")
    try:
        assert field_spec("newsection/value") is spec and extended_fields()[-1] is spec
        assert extended_sections()[-1] == "newsection"
        fs = new_factsheet(extended=True)
        assert math.isnan(fs["newsection"]["value"]) and "newsection" not in new_factsheet()
        set_field(fs, "newsection/value", 0.5)
        with pytest.raises(FactsheetError, match="already declared by 'a_test'"):
            declare_fields([spec], by="someone_else")
        with pytest.raises(FactsheetError, match="in the FactSheet template already"):
            declare_fields([FactsheetField("performance/test_acc_avg", "number", "post", "server", "x")], by="x")
        with pytest.raises(FactsheetError, match="section/field"):
            declare_fields([FactsheetField("no_section", "number", "post", "server", "x")], by="x")
    finally:
        undeclare_fields(by="a_test")
    assert field_spec("newsection/value") is None
    with pytest.raises(FactsheetError, match="not a FactSheet field"):
        set_field(new_factsheet(extended=True), "newsection/value", 1.0)
