"""The result files that the paper notebooks write (one JSON per condition or experiment): reading
them, and the parts both papers' results hold (each run's provenance, each run's per-round model
hashes and server values)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


class ResultsError(ValueError):
    """A result file written by a paper notebook is unreadable or incomplete."""


def load_result_files(folder: str | Path, pattern: str, required_keys: tuple[str, ...], writer: str) -> list[dict[str, Any]]:
    """Read every ``folder/pattern`` result JSON, checking ``required_keys``.

    A missing folder gives an empty list (nothing has run yet). ``writer`` names the function
    that writes such files, for the error message.

    Raises
    ------
    ResultsError
        If a file is not valid JSON or lacks a required key (the message says to rerun it).
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    results = []
    for path in sorted(folder.glob(pattern)):
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ResultsError(f"{path} is not valid JSON ({exc}); delete it and rerun it") from exc
        missing = [k for k in required_keys if not isinstance(data, dict) or k not in data]
        if missing:
            raise ResultsError(f"{path} lacks {missing}; it was not written by {writer} -- delete it and rerun it")
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
