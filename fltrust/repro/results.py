"""The result files that the paper notebooks write (one JSON per condition or experiment): reading
them, and the parts both papers' results hold (each run's provenance, each run's per-round model
hashes and server values).

Every file is checked against its writer's schema when it is read (:func:`check_fields`), so a
hand-edited or truncated value is one :class:`ResultsError` naming the file and the field, not an
exception deep in a table or figure. A result written with an ``integrity`` entry
(:func:`with_integrity`: the record hash of :mod:`fltrust.runs.audit`, keyed when an audit key is
set) is checked against it, and a mismatch is a :class:`~fltrust.runs.RecordIntegrityWarning`
naming the file and the edited fields.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from fltrust.core.io import to_plain
from fltrust.runs.chain import INTEGRITY, _algorithm, audit_key, entry_edits, field_digests, record_link
from fltrust.runs.folder import RecordIntegrityWarning


class ResultsError(ValueError):
    """A result file written by a paper notebook is unreadable or incomplete."""


RERUN = "the file was edited or damaged after it was written: move it aside and rerun what wrote it"
"""The fix every result-file error names (a result file is evidence too: it is never to be deleted)."""

NUMBER = "a number"
"""Schema entry of a number: int or float, or null (how a result stores NaN), never a boolean."""

TEXT_LIST = "a list of strings"
NUMBER_LIST = "a list of numbers"


class Maybe:
    """Schema entry of a field that may be absent or null (or, when ``spec`` is a mapping, an empty
    mapping); ``spec`` checks it otherwise."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec


class Each:
    """Schema entry of a mapping whose values (any keys) all match ``spec``."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec


class Lazy:
    """Schema entry built when a file is checked: ``make()`` returns the entry (for what can change at
    run time, such as the registered fairness notions)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


_MISSING = object()


def _problem(value: Any, spec: Any, where: str) -> tuple[str, Any, str] | None:
    """``(field, value, why)`` of the first part of ``value`` that ``spec`` refuses, or None."""
    if isinstance(spec, Lazy):
        return _problem(value, spec.make(), where)
    if isinstance(spec, Maybe):
        empty = value == {} and isinstance(spec.spec, (dict, Each))
        return None if value is None or value is _MISSING or empty else _problem(value, spec.spec, where)
    if value is _MISSING:
        return where, value, "is missing"
    if isinstance(spec, (dict, Each)):
        if not isinstance(value, dict):
            return where, value, "must be a mapping"
        items = spec.items() if isinstance(spec, dict) else ((key, spec.spec) for key in value)
        for key, sub in items:
            found = _problem(value.get(key, _MISSING), sub, f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
        return None
    if spec in (TEXT_LIST, NUMBER_LIST):
        if not isinstance(value, list):
            return where, value, f"must be {spec}"
        for i, item in enumerate(value):
            if _problem(item, str if spec == TEXT_LIST else NUMBER, where) is not None:
                return f"{where}[{i}]", item, f"must be {spec}"
        return None
    if spec == NUMBER:
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and not (
            isinstance(value, float) and math.isinf(value))
        return None if value is None or number else (where, value, "must be a number")
    if spec is int:
        return None if isinstance(value, int) and not isinstance(value, bool) else (where, value, "must be an integer")
    if isinstance(spec, type):
        names = {str: "a string", bool: "true or false", list: "a list"}
        return None if isinstance(value, spec) else (where, value, f"must be {names.get(spec, spec.__name__)}")
    why = spec(value)  # a function: why the value is refused, or None
    return None if why is None else (where, value, why)


def schema_problem(value: Any, schema: Any) -> str | None:
    """Why ``value`` does not match ``schema`` (a :func:`check_fields` entry), naming the field; None if it does.

    >>> schema_problem({"min": 1, "max": "2"}, {"min": int, "max": int})
    "field max = '2' must be an integer"
    """
    found = _problem(value, schema, "")
    if found is None:
        return None
    field, value, why = found
    shown = "" if value is _MISSING else f" = {_show(value)}"
    return f"field {field}{shown} {why}" if field else why


def _show(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_fields(path: Path, data: Any, schema: dict[str, Any]) -> None:
    """Raise :class:`ResultsError` naming ``path`` and the first field of ``data`` that ``schema`` refuses.

    Parameters
    ----------
    path : Path
        The file ``data`` was read from (for the message).
    data : object
        The parsed JSON.
    schema : dict
        Field name -> entry: a type (``str``, ``int``, ``bool``, ``list``, ``dict``), :data:`NUMBER`,
        :data:`TEXT_LIST`, :data:`NUMBER_LIST`, a nested dict, :class:`Maybe`, :class:`Each`,
        :class:`Lazy`, or a function returning why a value is refused (None when it is fine).

    Examples
    --------
    >>> check_fields(Path("r.json"), {"table3": {"F_T": "high"}}, {"table3": {"F_T": NUMBER}})
    Traceback (most recent call last):
    ...
    fltrust.repro.results.ResultsError: r.json: field table3.F_T = 'high' must be a number; the file was edited ...
    """
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: a JSON {type(data).__name__}, not an object; {RERUN}")
    why = schema_problem(data, schema)
    if why is not None:
        raise ResultsError(f"{path}: {why}; {RERUN}")


def with_integrity(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with an ``integrity`` entry: the record hash of :mod:`fltrust.runs.audit` over the
    rest (an HMAC with the audit key when one is set) and per-field digests naming what an edit changed.

    Parameters
    ----------
    result : dict
        A condition or experiment result (plain JSON data).

    Returns
    -------
    dict
        A copy with the entry (any previous one replaced).

    Examples
    --------
    >>> signed = with_integrity({"F_T": 0.5})
    >>> sorted(signed["integrity"])
    ['algorithm', 'fields', 'link']
    """
    plain = json.loads(json.dumps(to_plain({k: v for k, v in result.items() if k != INTEGRITY}), allow_nan=False))
    key = audit_key()  # as the result will be read back: plain JSON (NaN as null, tuples as lists)
    return {**plain, INTEGRITY: {"algorithm": _algorithm(key), "link": record_link("", plain, key),
                                 "fields": field_digests(plain)}}


def edited_fields(data: dict[str, Any]) -> list[str] | None:
    """The fields of a read result that differ from its ``integrity`` entry; None when it verifies or
    cannot be checked (no entry, a keyed entry without the key, a bad key setting)."""
    return entry_edits(data, lambda body, closing, key: record_link("", body, key))


def load_result_files(folder: str | Path, pattern: str, required_keys: tuple[str, ...], writer: str,
                      schema: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Read every ``folder/pattern`` result JSON, checking ``required_keys`` and ``schema``.

    A missing folder gives an empty list (nothing has run yet). ``writer`` names the function
    that writes such files, for the error message. A file whose ``integrity`` entry does not match
    is read with a :class:`~fltrust.runs.RecordIntegrityWarning` naming it and the edited fields.

    Raises
    ------
    ResultsError
        If a file is not valid JSON or UTF-8, lacks a required key or has a field ``schema``
        refuses (the message names the file and the field).
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    results = []
    for path in sorted(folder.glob(pattern)):
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ResultsError(f"{path} is not valid JSON ({exc}); {RERUN}") from exc
        missing = [k for k in required_keys if not isinstance(data, dict) or k not in data]
        if missing:
            raise ResultsError(f"{path} lacks {missing}; it was not written by {writer}, or {RERUN}")
        if schema is not None:
            check_fields(path, data, schema)
        edited = edited_fields(data)
        if edited is not None:
            shown = ", ".join(edited[:6]) + (" ..." if len(edited) > 6 else "") if edited else "its integrity entry"
            warnings.warn(f"{path}: edited after it was written ({shown} do not match the record hash written "
                          "with it); the numbers shown from it are not the ones computed", RecordIntegrityWarning,
                          stacklevel=2)
        results.append(data)
    return results


def result_provenance(runs: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """A result's ``provenance``: the writer's record and each run's, from its ``summary.json``.

    Parameters
    ----------
    runs : iterable of (str, dict)
        ``(run_id, summary)`` of every run the result was computed from.

    Returns
    -------
    dict
        ``{"writer": provenance(), "runs": {run_id: record or None}}``: the process that wrote the
        result (:func:`fltrust.runs.provenance.provenance`) and, per run, the record the run wrote
        (None for a run made before provenance was recorded). The runs' records say which code
        computed the numbers; the writer's which code summarised them.
    """
    from fltrust.runs.provenance import provenance

    return {"writer": provenance(), "runs": {run_id: (summary or {}).get("provenance") for run_id, summary in runs}}


def run_provenance(result: Mapping[str, Any], run_id: str) -> dict[str, Any] | None:
    """The provenance record of run ``run_id`` in a result (:func:`result_provenance`); None when the
    result, or that run, has none (written before provenance was recorded)."""
    return ((result.get("provenance") or {}).get("runs") or {}).get(run_id)


def round_trace(record: Any) -> dict[str, Any]:
    """Per round (0 = the initial model) of a run: its model hash, aux loss and aux accuracy.

    What ``fltrust repro verify`` compares round by round besides a paper's own per-round values:
    the model hash (``server_metrics["model_hash"]``, :func:`fltrust.runs.params_hash`) changes in the
    first round whose model differs in any bit.

    Parameters
    ----------
    record : fltrust.runs.RunRecord
        A reloaded run.

    Returns
    -------
    dict
        ``run_id``, ``repeat``, ``data_fingerprint`` (``summary.json``), and the lists ``round``,
        ``model_hash`` (None where the engine recorded none), ``aux_loss`` and ``aux_accuracy``.
    """
    rounds = list(record.rounds)
    return {
        "run_id": record.run_id,
        "repeat": int(record.config["run"]["repeat"]),
        "data_fingerprint": record.summary.get("data_fingerprint"),
        "round": [int(r.round) for r in rounds],
        "model_hash": [r.server_metrics.get("model_hash") for r in rounds],
        "aux_loss": [r.server_metrics.get("aux_loss") for r in rounds],
        "aux_accuracy": [r.server_metrics.get("aux_accuracy") for r in rounds],
    }
