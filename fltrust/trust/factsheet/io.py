"""Reading and writing a FactSheet: its fields in memory, its JSON file on disk.

Fields are addressed by path ``"section/field"`` (:func:`get_field`, :func:`set_field`; the schema
is :mod:`fltrust.trust.factsheet.schema`). Extended mode records, per metric, how its raw value was
obtained (:func:`set_provenance`).

Missing values (:func:`missing_fields`): the prototype counts a field as present unless it is
``None`` or ``""`` (NaN, ``False``, ``0`` and ``[]`` are present, bug B2; docs/references.md#trust-b2). Outside
prototype mode ``None``, NaN, empty or whitespace-only strings and empty lists are missing.

>>> from fltrust.trust.factsheet import new_factsheet
>>> fs = new_factsheet()
>>> set_field(fs, "participants/client_num", 10)
>>> get_field(fs, "participants/client_num"), missing_fields(fs, paths=["configuration/dp_epsilon"])
(10, ['configuration/dp_epsilon'])
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from fltrust.trust.factsheet.schema import (
    FIELDS,
    PROVENANCE_SECTION,
    PROVENANCE_STATUSES,
    FactsheetError,
    extended_fields,
    field_spec,
)


def set_provenance(
    fs: dict[str, Any], metric_path: str, status: str, method: str, reason: str | None = None, **details: Any
) -> None:
    """Record how a metric's raw value was obtained (extended mode).

    Parameters
    ----------
    fs : dict
        The FactSheet (its ``provenance`` section is created if needed).
    metric_path : str
        ``pillar/notion/metric`` of the extended definitions.
    status : {"measured", "declared", "missing", "n/a"}
        ``measured`` = computed by the kit from the model, data or run record; ``declared`` =
        configuration or a person's statement; ``missing`` = a measured value that was not
        computed (scores 0); ``n/a`` = not applicable (left out of the means; give ``reason``).
    method : str
        How (formula, source, library).
    reason : str or None
        Why it is n/a, missing or declared rather than measured.
    **details
        Extra JSON-ready facts (e.g. ``estimate=True``).
    """
    if status not in PROVENANCE_STATUSES:
        raise FactsheetError(f"provenance status {status!r} is not one of {list(PROVENANCE_STATUSES)}")
    if status == "n/a" and not reason:
        raise FactsheetError(f"{metric_path}: an n/a metric needs a reason")
    entry: dict[str, Any] = {"status": status, "method": method}
    if reason:
        entry["reason"] = reason
    entry.update(details)
    fs.setdefault(PROVENANCE_SECTION, {})[metric_path] = entry


def _split_path(path: str) -> tuple[str, str]:
    parts = path.split("/")
    if len(parts) != 2 or not all(parts):
        raise FactsheetError(f"field path {path!r} must look like 'section/field'")
    return parts[0], parts[1]


def get_field(fs: dict[str, Any], path: str) -> Any:
    """Value at ``"section/field"``, or ``None`` when the section or the field is absent.

    Parameters
    ----------
    fs : dict
        A FactSheet.
    path : str
        ``"section/field"``.

    Returns
    -------
    object or None
    """
    section, name = _split_path(path)
    node = fs.get(section)
    return node.get(name) if isinstance(node, dict) else None


def set_field(fs: dict[str, Any], path: str, value: Any) -> None:
    """Set a schema field (unknown paths raise, so that typos cannot create new fields).

    Parameters
    ----------
    fs : dict
        A FactSheet (modified in place; the section is created if needed).
    path : str
        A template field (:data:`~fltrust.trust.factsheet.schema.FIELDS`) or one a registered
        measure declares (:func:`~fltrust.trust.factsheet.schema.extended_fields`).
    value : object

    Raises
    ------
    FactsheetError
        ``path`` is not a schema field.
    """
    if field_spec(path) is None:
        known = sorted([f.path for f in FIELDS] + [f.path for f in extended_fields()])
        raise FactsheetError(f"{path!r} is not a FactSheet field (a measure declares a new one); known fields: {known}")
    section, name = _split_path(path)
    fs.setdefault(section, {})[name] = value


def is_missing(value: Any, *, nan_is_missing: bool = True) -> bool:
    """Whether a FactSheet value counts as missing (``check_properties``; docs/references.md#trust-2-3, #trust-b2).

    Parameters
    ----------
    value : Any
        The value (``None`` for an absent field).
    nan_is_missing : bool
        ``False`` reproduces the prototype: only ``None`` and ``""`` are missing. ``True``: also
        NaN, whitespace-only strings and empty lists.

    Returns
    -------
    bool
    """
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() == "" if nan_is_missing else value == ""
    if not nan_is_missing:
        return False
    if isinstance(value, (float, np.floating)):
        return math.isnan(float(value))
    if isinstance(value, (list, tuple)):
        return len(value) == 0
    return False


def missing_fields(
    fs: dict[str, Any], *, nan_is_missing: bool = True, paths: Iterable[str] | None = None
) -> list[str]:
    """Field paths whose value is missing (see :func:`is_missing`).

    Parameters
    ----------
    fs : dict
        A FactSheet.
    nan_is_missing : bool
        ``False`` = the prototype's rule (NaN present, B2); ``True`` = NaN, None, blank missing.
    paths : iterable of str or None
        Fields to check; ``None`` = every schema field (:data:`FIELDS`), in schema order.

    Returns
    -------
    list of str
        The missing paths, in the order checked.
    """
    check = [f.path for f in FIELDS] if paths is None else list(paths)
    return [p for p in check if is_missing(get_field(fs, p), nan_is_missing=nan_is_missing)]


# -- JSON I/O -------------------------------------------------------------------------------------

def _read_json(path: str | Path, what: str) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FactsheetError(f"{what} {str(path)!r} does not exist")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise FactsheetError(f"{what} {path} is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise FactsheetError(f"{what} {path} must hold a JSON object")
    return data



def _json_ready(value: Any, *, nan_as_null: bool) -> Any:
    """Plain JSON types; NaN/inf become ``None`` when ``nan_as_null``."""
    if isinstance(value, dict):
        return {str(k): _json_ready(v, nan_as_null=nan_as_null) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_json_ready(v, nan_as_null=nan_as_null) for v in list(value)]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return None if nan_as_null and not math.isfinite(f) else f
    return value


def save_factsheet(fs: dict[str, Any], path: str | Path, *, nan_as_null: bool = True) -> Path:
    """Write a FactSheet as JSON atomically (temporary file + rename).

    Parameters
    ----------
    fs : dict
        The FactSheet.
    path : str or Path
        Target file (folders are created).
    nan_as_null : bool
        Write NaN as ``null`` (valid JSON, B13; default; docs/references.md#trust-b13). ``False`` writes the prototype's
        non-standard ``NaN`` token (prototype mode).

    Returns
    -------
    Path
        The written file.
    """
    from fltrust.core.io import atomic_write_text

    path = Path(path)
    text = json.dumps(_json_ready(fs, nan_as_null=nan_as_null), indent=2, allow_nan=not nan_as_null)
    atomic_write_text(path, text + "\n")
    return path


def load_factsheet(path: str | Path) -> dict[str, Any]:
    """Read a FactSheet JSON file (``NaN`` tokens or ``null``).

    ``null`` in a numeric schema field becomes NaN again, so that ``save_factsheet`` followed by
    ``load_factsheet`` returns the same FactSheet in either NaN convention.

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    dict
        The FactSheet.
    """
    fs = _read_json(path, "FactSheet")
    for spec in (*FIELDS, *extended_fields()):
        section, name = spec.path.split("/")
        node = fs.get(section)
        if spec.kind == "number" and isinstance(node, dict) and name in node and node[name] is None:
            node[name] = float("nan")
    return fs
