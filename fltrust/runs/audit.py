"""The tamper audit: the record chain over a run folder's files, and :func:`audit_run` (``fltrust audit``).

Every ``rounds.jsonl`` line and ``summary.json`` carry an ``integrity`` entry: a link of the record
chain (:func:`record_link`, an HMAC with the optional :func:`audit_key`) and short per-field
digests (:func:`field_digests`) that name what an edit changed. :class:`~fltrust.runs.RunRecorder`
writes them; :func:`audit_run` recomputes them and the model hash chain (what that proves is in
its docstring). The chain's primitives live in :mod:`fltrust.runs.chain`.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fltrust.core.params import chain_hash, params_hash
from fltrust.runs.chain import (
    AUDIT_KEY_ENV,
    AUDIT_KEY_FILE_ENV,
    INTEGRITY,
    _algorithm,
    audit_key,
    edited_fields,
    record_link,
    summary_edits,
)
from fltrust.runs.checkpoint import load_final_model
from fltrust.runs.folder import (
    RecordIntegrityWarning,
    RunFolder,
    RunFolderError,
    cut_line_message,
    load_run,
    read_round_lines,
)

__all__ = ["UNHASHED_FILES", "AuditResult", "audit_run"]


UNHASHED_FILES = ("summary.json", "rounds.jsonl", "checkpoint.pt", "log.txt")
"""Files of a run folder that ``summary.json``'s file hashes leave out (rounds.jsonl is chained
round by round, the log grows on every rerun); dot files (lock, holder, temporaries) too."""


def _file_sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _covered_files(folder: Path) -> dict[str, str]:
    """SHA-256 of every file the run wrote besides the chained and growing ones (:data:`UNHASHED_FILES`)."""
    return {p.name: _file_sha256(p) for p in sorted(folder.iterdir())
            if p.is_file() and not p.name.startswith(".") and p.name not in UNHASHED_FILES}


@dataclass
class AuditResult:
    """Outcome of :func:`audit_run`: ``ok`` and one line per check."""

    ok: bool
    lines: list[str]


def audit_run(path: str | Path) -> AuditResult:
    """Recompute a run's two hash chains and check them against its files.

    **Model chain.** Every round carries ``model_hash`` (SHA-256 of the global model) and
    ``chain_hash = sha256(previous chain_hash + model_hash)`` (round 0 starts from the empty
    string); the summary's ``model_hash_chain`` is the last link, and ``final_model.pt``'s
    parameters hash to the last round's ``model_hash``.

    **Record chain.** Every ``rounds.jsonl`` line -- all the run wrote for the round: metrics,
    client values, confusion matrices, observer outputs and the model hashes -- is linked as
    ``link_k = sha256(link_{k-1} + sha256(canonical JSON of the line without its integrity
    entry))``; ``summary.json`` (every field) and the SHA-256 of every other file the run wrote
    (``config.yaml``, ``dataset.json``, ``final_model.pt``, the FactSheet, the trust report, ...)
    are linked onto the last round. An edited value fails and is named (file, round, field: each
    link is stored with short per-field digests); a removed, reordered or inserted round breaks
    the chain.

    What this proves: unkeyed, the files are those the run wrote, against accidents and casual
    edits -- NOT against someone who edits a file and recomputes the chains (the recipe is
    public). With an audit key (``$FLTRUST_AUDIT_KEY``, or a file named by
    ``$FLTRUST_AUDIT_KEY_FILE``, set both when the run is written and when it is audited) every
    link is an HMAC-SHA256, which only a holder of the key can recompute. Neither proves that the
    run computed the right thing. Runs written before record hashing carry the model chain only;
    the audit says so and checks that.

    Returns
    -------
    AuditResult
        ``ok`` and one line per check (each failure names the file, and the round and fields).

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a run folder. :class:`RunFolderError` when a file is not parseable.
    ValueError
        A bad audit key setting (:func:`audit_key`).
    """
    with warnings.catch_warnings():  # what load_run warns about, the audit reports as failed checks
        warnings.simplefilter("ignore", RecordIntegrityWarning)
        record = load_run(path)
    folder = RunFolder(record.path)
    key = audit_key()
    diverged = record.status == "diverged"
    rounds = record.rounds[:-1] if diverged and record.rounds else record.rounds
    lines, ok = [], True
    previous = ""
    for r in rounds:
        model_hash, chained = r.server_metrics.get("model_hash"), r.server_metrics.get("chain_hash")
        if model_hash is None or chained is None:
            lines.append(f"round {r.round}: no model hash recorded (run made before hash chains)")
            ok = False
            break
        expected = chain_hash(previous, model_hash)
        if expected != chained:
            lines.append(f"round {r.round}: chain broken (recorded {chained[:12]}, recomputed {expected[:12]})")
            ok = False
            break
        previous = chained
    else:
        lines.append(f"model chain of {len(rounds)} rounds verified, head {previous[:16]}")
    head = record.summary.get("model_hash_chain")
    if ok and not diverged and head != previous:
        lines.append(f"summary.json model_hash_chain {str(head)[:16]} does not match the chain head")
        ok = False
    records_ok, record_lines = _audit_records(folder, record.summary, key)
    lines += record_lines
    ok = ok and records_ok
    if diverged:
        lines.append(f"the run diverged at round {record.summary.get('diverged_round')}: there is no final model")
    elif record.rounds and record.rounds[-1].server_metrics.get("model_hash"):
        final = folder.final_model
        if not final.is_file():
            lines.append(f"{final} is missing")
            ok = False
        else:
            try:
                state = load_final_model(final)
            except RunFolderError as exc:
                lines.append(str(exc))
                return AuditResult(False, lines)
            final_hash = params_hash([v.numpy() for v in state.values()])
            if final_hash != record.rounds[-1].server_metrics["model_hash"]:
                lines.append(f"{final.name} (sha256 {final_hash[:16]}) is not the last round's model")
                ok = False
            else:
                lines.append(f"{final.name} is the last round's model (sha256 {final_hash[:16]})")
    return AuditResult(ok, lines)


def _audit_records(folder: RunFolder, summary: dict[str, Any], key: bytes | None) -> tuple[bool, list[str]]:
    """The record-chain half of :func:`audit_run`: ``(ok, lines)``."""
    lines, cut = read_round_lines(folder.rounds)
    raw = [json.loads(line) for line in lines if line.strip()]  # load_run parsed them
    cut_problem = [cut_line_message(folder.rounds, cut, len(lines), finished=folder.summary.is_file())] if cut else []
    closing = summary.get(INTEGRITY)
    if closing is None and not any(INTEGRITY in d for d in raw):
        return True, ["rounds.jsonl and summary.json carry no record hashes (written before record hashing): the "
                      "chains cover the model weights only, not the metrics"]
    algorithm = closing.get("algorithm") if isinstance(closing, dict) else _algorithm(key)
    if algorithm not in ("sha256", "hmac-sha256"):
        return False, [f"{folder.summary.name}: unknown record-chain algorithm {str(algorithm)[:40]!r}"]
    if algorithm == "hmac-sha256" and key is None:
        return False, [f"the record chain is keyed (hmac-sha256): set {AUDIT_KEY_ENV} or {AUDIT_KEY_FILE_ENV} to "
                       "the run's audit key to verify it"]
    if algorithm != _algorithm(key):
        return False, [f"the record chain is {algorithm}, but an audit key is set: the run was written without the "
                       "key, or rewritten by someone who does not have it"]
    kind = "keyed, hmac-sha256" if key else "unkeyed sha256: integrity against accidents and casual edits, not " \
                                            "against someone who recomputes it"
    problems, previous = list(cut_problem), ""
    for data in raw:
        integrity = data.pop(INTEGRITY, None)
        where = f"rounds.jsonl round {data.get('round')}"
        if not isinstance(integrity, dict):
            problems.append(f"{where}: no record hash (the line was replaced)")
            continue
        if record_link(previous, data, key) != integrity.get("link"):
            edited = edited_fields(data, integrity.get("fields"))
            problems.append(f"{where}: edited after the run: {_names(edited)}" if edited else
                            f"{where}: record chain broken (a round removed, reordered or inserted, or another key)")
        previous = str(integrity.get("link"))
    if not isinstance(closing, dict):
        problems.append(f"{folder.summary.name}: missing or without record hashes: the run is not finished, or its "
                        "summary was replaced")
    else:
        listed = closing.get("files")
        files: dict[str, Any] = listed if isinstance(listed, dict) else {}
        if closing.get("record_chain") != previous:
            problems.append(f"{folder.summary.name}: does not close the record chain (rounds removed or added after "
                            "the run)")
        summary_edited = summary_edits(summary, key)
        if summary_edited is not None:
            problems.append(f"{folder.summary.name}: edited after the run: {_names(summary_edited)}" if summary_edited else
                            f"{folder.summary.name}: its integrity entry was edited")
        for name, digest in files.items():
            file = folder.path / name
            if Path(name).name != name or name.startswith("."):
                problems.append(f"{folder.summary.name}: lists {name!r}, which is not a file of the run folder")
            elif not file.is_file():
                problems.append(f"{name}: missing (summary.json recorded its sha256)")
            elif _file_sha256(file) != digest:
                problems.append(f"{name}: edited after the run (sha256 {_file_sha256(file)[:16]}, recorded "
                                f"{str(digest)[:16]})")
        if not problems:
            return True, [f"record chain of {len(raw)} rounds verified ({kind})",
                          f"summary.json and {len(files)} files verified: {', '.join(files) or 'none'}"]
    shown = problems[:10] + ([f"... and {len(problems) - 10} more"] if len(problems) > 10 else [])
    return False, shown


def _names(fields: list[str], limit: int = 8) -> str:
    return ", ".join(fields[:limit]) + (f" and {len(fields) - limit} more" if len(fields) > limit else "")
