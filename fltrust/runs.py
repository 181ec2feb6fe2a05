"""Run records: one folder per run, written atomically, reloadable without rerunning.

Layout of ``<out_dir>/<run_id>/`` (schema in ``docs/run_record.md``):

================  ==================================================================
file              content
================  ==================================================================
config.yaml       the resolved :class:`~fltrust.config.ExperimentConfig`, verbatim
dataset.json      dataset summary, partition summary (class counts per client), deviations
rounds.jsonl      one :meth:`RoundRecord.to_json` per line, round 0 first
checkpoint.pt     state after the last finished round (removed when the run completes)
final_model.pt    ``state_dict`` of the final global model
summary.json      ``status`` ("complete" or "diverged"), wall time, system figures, observers'
                  run-end output
log.txt           the run's log
.lock             held (``filelock``) by the one process running this folder; ``.holder.json``
                  names that process
================  ==================================================================

Every file is written through a temporary file and ``os.replace``, so a crash never leaves a
half-written file. A run is *complete* when ``summary.json`` says so **and** ``rounds.jsonl``
holds every round its config asks for; a complete run is skipped when started again, a run with
a ``checkpoint.pt`` resumes after its last finished round. :class:`RunRecorder` is the one writer
of a run folder, used by every engine, so the in-process and the Flower engine produce the same
files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from fltrust.core.io import atomic_torch_save, atomic_write_json, atomic_write_text, remove_stale_temporaries, to_plain
from fltrust.core.observers import ObserverSet
from fltrust.core.records import Params, RoundRecord, RunInfo, RunSummary

log = logging.getLogger("fltrust")


class RunFolderError(RuntimeError):
    """A run folder cannot be used (locked by another process, or a file in it is corrupt)."""


class RunDiverged(RuntimeError):
    """Training produced a non-finite loss or parameter; ``round`` is where it was detected."""

    def __init__(self, round_: int, what: str) -> None:
        super().__init__(f"training diverged at round {round_}: {what}")
        self.round = round_
        self.what = what


@dataclass
class RunFolder:
    """Paths of one run folder."""

    path: Path

    @property
    def config(self) -> Path:
        return self.path / "config.yaml"

    @property
    def dataset(self) -> Path:
        return self.path / "dataset.json"

    @property
    def rounds(self) -> Path:
        return self.path / "rounds.jsonl"

    @property
    def checkpoint(self) -> Path:
        return self.path / "checkpoint.pt"

    @property
    def final_model(self) -> Path:
        return self.path / "final_model.pt"

    @property
    def summary(self) -> Path:
        return self.path / "summary.json"

    @property
    def log(self) -> Path:
        return self.path / "log.txt"

    @property
    def lock(self) -> Path:
        return self.path / ".lock"

    @property
    def holder(self) -> Path:
        return self.path / ".holder.json"

    def status(self) -> str | None:
        """``summary.json``'s status (``complete``, ``diverged``), or None when there is none."""
        if not self.summary.is_file():
            return None
        try:
            return json.loads(self.summary.read_text()).get("status")
        except (json.JSONDecodeError, OSError):
            return None

    def count_rounds(self) -> int:
        """Training rounds stored in ``rounds.jsonl`` (round 0 not counted); -1 when unreadable."""
        try:
            lines = [line for line in self.rounds.read_text().splitlines() if line.strip()]
            return max(int(json.loads(line)["round"]) for line in lines) if lines else -1
        except (OSError, ValueError, KeyError, json.JSONDecodeError):
            return -1

    def is_complete(self, expected_rounds: int | None = None) -> bool:
        """True when ``summary.json`` says ``complete`` and, if ``expected_rounds`` is given,
        ``rounds.jsonl`` holds exactly that many training rounds."""
        if self.status() != "complete":
            return False
        return expected_rounds is None or self.count_rounds() == expected_rounds

    def write_rounds(self, records: list[RoundRecord]) -> None:
        """Rewrite ``rounds.jsonl`` atomically with all records so far."""
        lines = [json.dumps(to_plain(r.to_json()), allow_nan=False) for r in records]
        atomic_write_text(self.rounds, "\n".join(lines) + "\n")


@dataclass
class RunRecord:
    """A reloaded run: configuration, per-round records and summary."""

    path: Path
    config: dict[str, Any]
    rounds: list[RoundRecord]
    summary: dict[str, Any] = field(default_factory=dict)
    dataset: dict[str, Any] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def status(self) -> str | None:
        """``complete``, ``diverged``, or None for an unfinished run."""
        return self.summary.get("status")

    def describe(self) -> str:
        """A few human-readable lines about the run; missing values print as ``n/a``."""
        s = self.summary

        def num(key: str, fmt: str) -> str:
            value = s.get(key)
            return format(value, fmt) if isinstance(value, (int, float)) else "n/a"

        tag = " [SYNTHETIC DATA]" if s.get("synthetic") else ""
        lines = [f"run {self.run_id}{tag}"]
        if self.status == "diverged":
            lines.append(f"  DIVERGED at round {s.get('diverged_round')}: {s.get('reason')}; no metrics were "
                         "computed from the broken model")
        lines.append(f"  rounds: {max(0, len(self.rounds) - 1)}   wall time: {num('wall_time_s', '.1f')} s "
                     f"({num('seconds_per_round', '.2f')} s/round on {s.get('device', 'n/a')}, "
                     f"engine {s.get('engine', 'inprocess')})")
        lines.append(f"  final aux accuracy: {num('final_aux_accuracy', '.4f')}   aux loss: {num('final_aux_loss', '.4f')}")
        if s.get("epsilon") is not None:
            lines.append(f"  epsilon spent: {num('epsilon', '.3f')}")
        for name, values in (s.get("observers") or {}).items():
            short = {k: v for k, v in (values or {}).items() if isinstance(v, (int, float)) or v is None}
            if short:
                lines.append(f"  {name}: " + ", ".join(
                    f"{k}={v:.4f}" if isinstance(v, (int, float)) else f"{k}=n/a" for k, v in short.items()))
        lines.append(f"  record: {self.path}")
        return "\n".join(lines)

    def observation_series(self, observer: str, key: str) -> list[Any]:
        """``[round_record.observations[observer][key] for rounds ≥ 1]`` (None where absent)."""
        return [r.observations.get(observer, {}).get(key) for r in self.rounds if r.round >= 1]


@contextlib.contextmanager
def locked(folder: RunFolder, *, wait_s: float = 0.0) -> Iterator[None]:
    """Hold ``folder``'s lock while the block runs: one process per run folder.

    A second process waits up to ``wait_s`` seconds, then raises :class:`RunFolderError` naming
    the holder (pid, host, start time). The lock is an OS file lock, so it is released even when
    the holder is killed.
    """
    from filelock import FileLock, Timeout

    folder.path.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder.lock))
    try:
        lock.acquire(timeout=wait_s)
    except Timeout:
        holder = "another process"
        with contextlib.suppress(OSError, ValueError, json.JSONDecodeError):
            h = json.loads(folder.holder.read_text())
            holder = f"pid {h['pid']} on {h['host']} (since {h['since']})"
        raise RunFolderError(f"run folder {folder.path} is in use by {holder}; wait for it to finish "
                             "or stop it, then rerun") from None
    try:
        atomic_write_json(folder.holder, {"pid": os.getpid(), "host": socket.gethostname(),
                                          "since": time.strftime("%Y-%m-%d %H:%M:%S")})
        removed = remove_stale_temporaries(folder.path)
        if removed:
            log.info("removed %d temporary file(s) an interrupted write left in %s", removed, folder.path)
        yield
    finally:
        folder.holder.unlink(missing_ok=True)
        lock.release()


def _finite(params: Params | None) -> bool:
    return params is None or all(np.all(np.isfinite(p)) for p in params if np.issubdtype(p.dtype, np.floating))


def check_finite(record: RoundRecord) -> None:
    """Raise :class:`RunDiverged` when a round's models or losses are not finite."""
    if not _finite(record.global_params_after):
        raise RunDiverged(record.round, "the aggregated model has NaN/inf parameters")
    for key in ("aux_loss",):
        value = record.server_metrics.get(key)
        if value is not None and not np.isfinite(value):
            raise RunDiverged(record.round, f"the aggregated model's {key} is {value}")
    losses = record.client_metrics.get("train_loss")
    if losses is not None and not np.all(np.isfinite(losses)):
        bad = [int(c) for c, v in zip(record.client_ids, losses) if not np.isfinite(v)]
        raise RunDiverged(record.round, f"client(s) {bad} reached a non-finite training loss")


def params_hash(params: Params) -> str:
    """SHA-256 of a model's parameters (dtype, shape and bytes of every array, in order)."""
    digest = hashlib.sha256()
    for array in params:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def chain_hash(previous: str, model_hash: str) -> str:
    """One link of the run's hash chain: ``sha256(previous chain hash + model hash)``."""
    return hashlib.sha256((previous + model_hash).encode()).hexdigest()


def strip(record: RoundRecord) -> RoundRecord:
    """Copy of a record without model parameters (what is kept in memory and on disk)."""
    return RoundRecord(record.round, record.client_ids, record.client_metrics, record.client_confusion,
                       record.server_metrics, observations=record.observations)


class RunRecorder:
    """The one writer of a run folder; every engine hands it its rounds.

    ``start`` writes the config and dataset description, ``record_round`` checks the round is
    finite, lets the observers compute their metrics, and rewrites ``rounds.jsonl``;
    ``finish`` writes the final model and ``summary.json``; ``diverged`` closes a run whose
    training blew up (its metrics are not computed from a NaN model).
    """

    def __init__(self, folder: RunFolder, observers: ObserverSet) -> None:
        self.folder = folder
        self.observers = observers
        self.records: list[RoundRecord] = []

    def start(self, info: RunInfo, config_text: str, dataset: dict[str, Any],
              resumed: list[RoundRecord] | None = None, observer_state: dict | None = None) -> None:
        self.info = info
        self.observers.run_start(info)
        if resumed:
            self.records = list(resumed)
            if observer_state:
                self.observers.load_state_dict(observer_state)
            return
        self.folder.summary.unlink(missing_ok=True)  # a rerun (force, changed data) starts clean
        atomic_write_text(self.folder.config, config_text)
        atomic_write_json(self.folder.dataset, dataset)

    def record_round(self, record: RoundRecord) -> RoundRecord:
        """Check, observe and persist one round; returns the stored (parameter-free) record.

        Every round's global model is hashed into a chain (``server_metrics["model_hash"]`` and
        ``["chain_hash"]``): :func:`audit_run` later checks that the chain is unbroken and that
        ``final_model.pt`` is the model of the last round.
        """
        if record.round > 0:
            check_finite(record)
        if record.global_params_after is not None:
            previous = self.records[-1].server_metrics.get("chain_hash", "") if self.records else ""
            model_hash = params_hash(record.global_params_after)
            record.server_metrics["model_hash"] = model_hash
            record.server_metrics["chain_hash"] = chain_hash(previous, model_hash)
        self.observers.round_end(record)
        stored = strip(record)
        self.records.append(stored)
        self.folder.write_rounds(self.records)
        return stored

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint needs to resume the recorder."""
        return {"records": [r.to_json() for r in self.records], "observers": self.observers.state_dict()}

    def finish(self, final_params: Params, final_state: dict, wall_time_s: float,
               system: dict[str, Any], fields: dict[str, Any]) -> None:
        summary = RunSummary(info=self.info, rounds=self.records, final_params=final_params,
                             wall_time_s=wall_time_s, system=system)
        atomic_torch_save(self.folder.final_model, final_state)
        observed = self.observers.run_end(summary)
        atomic_write_json(self.folder.summary, {"status": "complete", "run_id": self.info.run_id,
                                                "wall_time_s": wall_time_s, **fields, "system": system,
                                                "model_hash_chain": self.records[-1].server_metrics.get("chain_hash"),
                                                "observers": observed})
        self.folder.checkpoint.unlink(missing_ok=True)

    def diverged(self, error: RunDiverged, wall_time_s: float, fields: dict[str, Any]) -> None:
        """Close a diverged run: keep the finite rounds, write ``status: diverged``."""
        bad = RoundRecord(round=error.round, client_ids=np.zeros(0, dtype=np.int64),
                          observations={"diverged": {"reason": error.what}})
        self.folder.write_rounds(self.records + [bad])
        atomic_write_json(self.folder.summary, {"status": "diverged", "run_id": self.info.run_id,
                                                "diverged_round": error.round, "reason": error.what,
                                                "wall_time_s": wall_time_s, **fields})
        self.folder.checkpoint.unlink(missing_ok=True)


def load_run(path: str | Path) -> RunRecord:
    """Reload a run folder written by the engine.

    Raises
    ------
    FileNotFoundError
        If the folder has no ``config.yaml`` or ``rounds.jsonl``.
    """
    folder = RunFolder(Path(path))
    for needed in (folder.config, folder.rounds):
        if not needed.is_file():
            raise FileNotFoundError(f"{needed} is missing: {folder.path} is not a (finished) fltrust run folder")
    rounds = []
    for number, line in enumerate(folder.rounds.read_text().splitlines(), start=1):
        if line.strip():
            try:
                rounds.append(RoundRecord.from_json(json.loads(line)))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise RunFolderError(f"{folder.rounds}:{number} is corrupt ({type(exc).__name__}); delete "
                                     f"{folder.path} and rerun the same command") from exc
    summary = _read_json(folder.summary) if folder.summary.is_file() else {}
    dataset = _read_json(folder.dataset) if folder.dataset.is_file() else {}
    try:
        config = yaml.safe_load(folder.config.read_text())
    except yaml.YAMLError as exc:
        raise RunFolderError(f"{folder.config} is corrupt; delete {folder.path} and rerun") from exc
    return RunRecord(folder.path, config, rounds, summary, dataset)


@dataclass
class AuditResult:
    """Outcome of :func:`audit_run`: ``ok`` and one line per check."""

    ok: bool
    lines: list[str]


def audit_run(path: str | Path) -> AuditResult:
    """Recompute a run's model hash chain and check it against the record and the final model.

    Checks: every round carries ``model_hash`` and ``chain_hash``; each ``chain_hash`` equals
    ``sha256(previous chain_hash + model_hash)`` (round 0 starts from the empty string); the
    summary's ``model_hash_chain`` is the last link; and the SHA-256 of ``final_model.pt``'s
    parameters equals the last round's ``model_hash``. A record edited after the run (a round
    removed, reordered or altered, another final model) fails.
    """
    record = load_run(path)
    lines, ok = [], True
    previous = ""
    for r in record.rounds:
        model_hash, chained = r.server_metrics.get("model_hash"), r.server_metrics.get("chain_hash")
        if model_hash is None or chained is None:
            lines.append(f"round {r.round}: no model hash recorded (run made before hash chains, or diverged)")
            ok = False
            break
        expected = chain_hash(previous, model_hash)
        if expected != chained:
            lines.append(f"round {r.round}: chain broken (recorded {chained[:12]}, recomputed {expected[:12]})")
            ok = False
            break
        previous = chained
    else:
        lines.append(f"chain of {len(record.rounds)} rounds verified, head {previous[:16]}")
    head = record.summary.get("model_hash_chain")
    if ok and head != previous:
        lines.append(f"summary.json model_hash_chain {str(head)[:16]} does not match the chain head")
        ok = False
    final = RunFolder(record.path).final_model
    if ok:
        if not final.is_file():
            lines.append(f"{final} is missing")
            ok = False
        else:
            import torch

            state = torch.load(final, map_location="cpu", weights_only=True)
            final_hash = params_hash([v.numpy() for v in state.values()])
            if final_hash != record.rounds[-1].server_metrics["model_hash"]:
                lines.append(f"{final.name} (sha256 {final_hash[:16]}) is not the last round's model")
                ok = False
            else:
                lines.append(f"{final.name} is the last round's model (sha256 {final_hash[:16]})")
    return AuditResult(ok, lines)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise RunFolderError(f"{path} is corrupt ({exc.msg}); delete {path.parent} and rerun") from exc
