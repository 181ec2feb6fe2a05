"""FactSheet field access, completeness (B2) and JSON I/O (B13): docs/references.md#trust-b2, #trust-b13."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fltrust.trust.factsheet.io import get_field, is_missing, load_factsheet, missing_fields, save_factsheet, set_field
from fltrust.trust.factsheet.schema import FIELDS, FactsheetError, new_factsheet


def test_set_field_rejects_unknown_paths() -> None:
    with pytest.raises(FactsheetError, match="not a FactSheet field"):
        set_field(new_factsheet(), "performance/test_accuracy", 0.5)


def test_get_field_is_none_when_absent_and_rejects_bad_paths() -> None:
    # Prepare
    fs = {"participants": {"client_num": 4}, "system": "not a section"}
    # Execute / Assert
    assert get_field(fs, "participants/client_num") == 4
    assert get_field(fs, "participants/client_selector") is None
    assert get_field(fs, "project/overview") is None and get_field(fs, "system/avg_time_minutes") is None
    with pytest.raises(FactsheetError, match="'section/field'"):
        get_field(fs, "participants")


# -- missing fields (B2) ----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "prototype_missing", "fixed_missing"),
    [
        (None, True, True),
        ("", True, True),
        ("   ", False, True),
        (float("nan"), False, True),
        ([], False, True),
        (False, False, False),
        (0, False, False),
        ("FedAvg", False, False),
    ],
)
def test_is_missing_in_both_modes(value, prototype_missing: bool, fixed_missing: bool) -> None:
    assert is_missing(value, nan_is_missing=False) is prototype_missing
    assert is_missing(value, nan_is_missing=True) is fixed_missing


def test_missing_fields_lists_paths_in_schema_order() -> None:
    # Prepare
    fs = new_factsheet()
    for spec in FIELDS:
        set_field(fs, spec.path, {"str": "x", "text": "x", "number": 1.0, "bool": True, "list": ["a"]}[spec.kind])
    set_field(fs, "project/purpose", " ")
    set_field(fs, "configuration/dp_epsilon", float("nan"))
    set_field(fs, "system/avg_model_size", None)
    del fs["data"]["avg_entropy"]
    # Execute
    fixed = missing_fields(fs)
    prototype = missing_fields(fs, nan_is_missing=False)
    # Assert
    assert fixed == ["project/purpose", "data/avg_entropy", "configuration/dp_epsilon", "system/avg_model_size"]
    assert prototype == ["data/avg_entropy", "system/avg_model_size"]


# -- I/O (B13) ---------------------------------------------------------------------------------------

def test_save_writes_null_and_load_restores_nan(tmp_path: Path) -> None:
    # Prepare
    fs = new_factsheet()
    set_field(fs, "participants/client_num", 5)
    # Execute
    path = save_factsheet(fs, tmp_path / "run" / "factsheet.json")
    text = path.read_text()
    loaded = load_factsheet(path)
    # Assert
    assert "NaN" not in text and '"avg_entropy": null' in text
    json.loads(text)  # standard JSON
    assert loaded["participants"]["client_num"] == 5
    assert math.isnan(loaded["data"]["avg_entropy"])
    assert list(loaded) == list(fs)


def test_prototype_mode_writes_nan_tokens(tmp_path: Path) -> None:
    path = save_factsheet(new_factsheet(), tmp_path / "fs.json", nan_as_null=False)
    assert '"avg_entropy": NaN' in path.read_text()
    assert math.isnan(load_factsheet(path)["performance"]["test_clever"])


def test_load_rejects_missing_and_non_object_files(tmp_path: Path) -> None:
    with pytest.raises(FactsheetError, match="does not exist"):
        load_factsheet(tmp_path / "nope.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(FactsheetError, match="JSON object"):
        load_factsheet(tmp_path / "list.json")
