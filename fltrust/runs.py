"""Run records: one folder per run, written atomically, reloadable without rerunning.

Layout of ``<out_dir>/<run_id>/`` (schema in ``docs/run_record.md``):

================  ==================================================================
file              content
================  ==================================================================
config.yaml       the resolved :class:`~fltrust.config.ExperimentConfig`, verbatim
dataset.json      dataset summary, partition summary (class counts per client), deviations
rounds.jsonl      one :meth:`RoundRecord.to_json` per line, round 0 first, each with its
                  ``integrity`` entry (record chain link and per-field digests)
checkpoint.pt     state after the last finished round (removed when the run completes): plain
                  data only (tensors, dicts, lists, numbers, strings), read with
                  ``torch.load(weights_only=True)``
final_model.pt    ``state_dict`` of the final global model
summary.json      ``status`` ("complete" or "diverged"), wall time, system figures, observers'
                  run-end output, and its ``integrity`` entry (the SHA-256 of every other file)
log.txt           the run's log
.lock             held (``filelock``) by the one process running this folder; ``.holder.json``
                  names that process
================  ==================================================================

Every file but ``rounds.jsonl`` is written through a temporary file and ``os.replace``, so a
crash never leaves a half-written file; ``rounds.jsonl`` gets one appended (and flushed) line per
round (the checkpoint holds the state, not the rounds), so writing round 3,000 costs what round 3
did, and a resume drops whatever was written after the checkpoint (a line cut by a kill included). A run is *complete* when
``summary.json`` says so **and** ``rounds.jsonl`` holds every round its config asks for; a
complete run is skipped when started again, a run with a ``checkpoint.pt`` of the same run
(:func:`fltrust.fl.engine.checkpoint_identity`) resumes after its last finished round.
:class:`RunRecorder` is the one writer of a run folder, used by every engine, so the in-process
and the Flower engine produce the same files. :func:`audit_run` (``fltrust audit``) recomputes the
hash chains over them.

No file of a run folder can run code when it is read: JSON and YAML (``yaml.safe_load``) are
data, and the ``.pt`` files are loaded with torch's restricted unpickler
(:func:`read_plain_torch`).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from fltrust.core.io import atomic_torch_save, atomic_write_json, atomic_write_text, remove_stale_temporaries, to_plain
from fltrust.core.params import chain_hash, params_hash  # re-exported: the run record's hash chain
from fltrust.core.observers import ObserverSet, RoundObserver
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

    def append_round(self, line: str) -> None:
        """Append one JSON line to ``rounds.jsonl`` and flush it to disk (one write per round, so
        a long run costs the same per round; a line cut by a kill is dropped on resume)."""
        with open(self.rounds, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())


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


# -- the record chain: every round's record and the summary (module docstring of audit_run) ------

AUDIT_KEY_ENV = "FLTRUST_AUDIT_KEY"
"""Environment variable holding an optional audit key (its text): the record chain becomes an HMAC."""

AUDIT_KEY_FILE_ENV = "FLTRUST_AUDIT_KEY_FILE"
"""Environment variable naming a file whose content (surrounding whitespace stripped) is the audit key."""

INTEGRITY = "integrity"
"""Key of the record-chain entry in every ``rounds.jsonl`` line and in ``summary.json``."""

UNHASHED_FILES = ("summary.json", "rounds.jsonl", "checkpoint.pt", "log.txt")
"""Files of a run folder that ``summary.json``'s file hashes leave out (rounds.jsonl is chained
round by round, the log grows on every rerun); dot files (lock, holder, temporaries) too."""


def audit_key() -> bytes | None:
    """The optional audit key: ``$FLTRUST_AUDIT_KEY``, else the content of ``$FLTRUST_AUDIT_KEY_FILE``.

    Returns
    -------
    bytes or None
        None when neither is set (the record chain is then a plain SHA-256 chain).

    Raises
    ------
    ValueError
        Both are set, or the key file is unreadable or empty.
    """
    text, file = os.environ.get(AUDIT_KEY_ENV), os.environ.get(AUDIT_KEY_FILE_ENV)
    if text and file:
        raise ValueError(f"set {AUDIT_KEY_ENV} or {AUDIT_KEY_FILE_ENV}, not both")
    if file:
        try:
            key = Path(file).expanduser().read_bytes().strip()
        except OSError as exc:
            raise ValueError(f"{AUDIT_KEY_FILE_ENV}={file}: cannot read the audit key file "
                             f"({exc.strerror or exc})") from None
        if not key:
            raise ValueError(f"{AUDIT_KEY_FILE_ENV}={file}: the audit key file is empty")
        return key
    return text.encode() if text else None


def canonical_json(value: Any) -> bytes:
    """The bytes a record is hashed as: JSON with sorted keys and no spaces.

    >>> canonical_json({"b": [1, 0.5], "a": None})
    b'{"a":null,"b":[1,0.5]}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def record_link(previous: str, content: Any, key: bytes | None = None) -> str:
    """One link of the record chain: ``sha256(previous link + sha256(canonical JSON of content))``,
    an HMAC-SHA256 with ``key`` when one is given. Round 0 starts from the empty string.

    >>> record_link("", {"round": 0}) == record_link("", {"round": 0}) != record_link("", {"round": 1})
    True
    """
    message = (previous + hashlib.sha256(canonical_json(content)).hexdigest()).encode()
    if key is None:
        return hashlib.sha256(message).hexdigest()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def field_digests(content: dict[str, Any], depth: int = 3) -> dict[str, str]:
    """Short SHA-256 (8 hex digits) of every field, nested mappings down to ``depth`` levels
    (``server_metrics.aux_accuracy``).

    Stored beside each link only to NAME what an edit changed; the link covers the full content.

    >>> sorted(field_digests({"round": 1, "server_metrics": {"aux_loss": 0.5}}))
    ['round', 'server_metrics.aux_loss']
    """
    out: dict[str, str] = {}
    for name, value in content.items():
        if isinstance(value, dict) and value and depth > 1:
            out.update({f"{name}.{k}": v for k, v in field_digests(value, depth - 1).items()})
        else:
            out[name] = hashlib.sha256(canonical_json(value)).hexdigest()[:8]
    return out


def _edited_fields(content: dict[str, Any], recorded: Any) -> list[str]:
    """Names of the fields whose digest differs from the recorded ones (added and removed fields too)."""
    now = field_digests(content)
    recorded = recorded if isinstance(recorded, dict) else {}
    return sorted(name for name in set(now) | set(recorded) if now.get(name) != recorded.get(name))


def _algorithm(key: bytes | None) -> str:
    return "sha256" if key is None else "hmac-sha256"


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _covered_files(folder: Path) -> dict[str, str]:
    """SHA-256 of every file the run wrote besides the chained and growing ones (:data:`UNHASHED_FILES`)."""
    return {p.name: _file_sha256(p) for p in sorted(folder.iterdir())
            if p.is_file() and not p.name.startswith(".") and p.name not in UNHASHED_FILES}


def _summary_link(head: str, body: dict[str, Any], files: dict[str, str], algorithm: str,
                  key: bytes | None) -> str:
    """The summary's link: chains the summary (without its integrity entry) and the file hashes
    onto the head of the record chain."""
    return record_link(head, {"summary": body, "files": files, "algorithm": algorithm}, key)


def strip(record: RoundRecord) -> RoundRecord:
    """Copy of a record without model parameters (what is kept in memory and on disk)."""
    return RoundRecord(record.round, record.client_ids, record.client_metrics, record.client_confusion,
                       record.server_metrics, observations=record.observations)


class RunRecorder:
    """The one writer of a run folder; every engine hands it its rounds.

    ``start`` writes the config and dataset description and empties ``rounds.jsonl``;
    ``resume`` continues a run after the round its checkpoint holds; ``record_round`` checks
    the round is finite, lets the observers compute their metrics, and appends one line to
    ``rounds.jsonl``, chained to the previous one (:func:`audit_run`); ``finish`` writes the
    final model and ``summary.json``; ``diverged`` closes a run whose training blew up (its
    metrics are not computed from a NaN model).
    """

    def __init__(self, folder: RunFolder, observers: ObserverSet | Iterable[RoundObserver]) -> None:
        """A recorder of ``folder`` whose rounds go through ``observers``.

        Parameters
        ----------
        folder : RunFolder
            The run folder to write (:func:`open_run_folder` or :class:`RunFolder`).
        observers : ObserverSet or iterable of observers
            What computes each round's metrics; a plain list is wrapped in an :class:`ObserverSet`.
        """
        self.folder = folder
        self.observers = observers if isinstance(observers, ObserverSet) else ObserverSet(list(observers))
        self.records: list[RoundRecord] = []
        self.key = audit_key()
        self.record_head = ""  # the last link of the record chain

    def start(self, info: RunInfo, config_text: str, dataset: dict[str, Any]) -> None:
        """Start a run from round 0 (a rerun, forced or with changed data, starts clean)."""
        self.info = info
        self.observers.run_start(info)
        self.records, self.record_head = [], ""
        self.folder.summary.unlink(missing_ok=True)
        atomic_write_text(self.folder.config, config_text)
        atomic_write_json(self.folder.dataset, dataset)
        atomic_write_text(self.folder.rounds, "")

    def resume(self, info: RunInfo, state: dict[str, Any]) -> bool:
        """Continue after the round of a checkpoint's ``state`` (:meth:`state_dict`).

        The records of rounds 0..``state["round"]`` are read back from ``rounds.jsonl`` (later
        lines, written after the checkpoint, are dropped) and their chain is recomputed; it must
        end in the checkpoint's ``record_chain``. When it does not (the records were edited, the
        audit key changed, a line is cut), nothing is touched, a warning names the reason and
        False is returned: the caller starts from round 0.
        """
        last, head = state.get("round"), state.get("record_chain")
        last = last if isinstance(last, int) else -1
        kept: list[str] = []
        problem = None
        try:
            lines = self.folder.rounds.read_text().splitlines()
        except OSError as exc:
            lines, problem = [], f"cannot read it ({exc.strerror or exc})"
        previous = ""
        for line in lines[:last + 1]:
            try:
                data = json.loads(line)
                integrity = data.pop(INTEGRITY)
            except (json.JSONDecodeError, TypeError, KeyError, AttributeError):
                problem = f"line {len(kept) + 1} is cut or has no record hash"
                break
            if data.get("round") != len(kept):
                problem = f"line {len(kept) + 1} holds round {data.get('round')}, not {len(kept)}"
                break
            if not isinstance(integrity, dict) or record_link(previous, data, self.key) != integrity.get("link"):
                problem = f"round {len(kept)} does not verify (edited, or the audit key changed)"
                break
            previous = integrity["link"]
            kept.append(line)
        if problem is None and (last < 0 or len(kept) != last + 1 or previous != head):
            problem = f"it holds {len(kept)} verified rounds, the checkpoint is after round {last}"
        if problem is None and "global_params" in state:
            recorded = json.loads(kept[-1]).get("server_metrics", {}).get("model_hash")
            if recorded is not None and params_hash(state["global_params"]) != recorded:
                problem = f"the checkpoint's model is not the model of round {last}"
        if problem is not None:
            log.warning("%s does not continue %s: %s; starting the run from round 0", self.folder.rounds,
                        self.folder.checkpoint.name, problem)
            return False
        if len(lines) != len(kept):  # rounds written after the checkpoint, or a line cut by a kill
            atomic_write_text(self.folder.rounds, "".join(line + "\n" for line in kept))
        self.info = info
        self.observers.run_start(info)
        self.records = [RoundRecord.from_json(json.loads(line)) for line in kept]
        self.record_head = head
        self.observers.load_state_dict(state.get("observers") or {})
        return True

    def record_round(self, record: RoundRecord) -> RoundRecord:
        """Check, observe and persist one round; returns the stored (parameter-free) record.

        Every round's global model is hashed into a chain (``server_metrics["model_hash"]`` and
        ``["chain_hash"]``), and the whole line written for the round -- metrics, client values,
        observations and those hashes -- into the record chain (its ``integrity`` entry):
        :func:`audit_run` later recomputes both.
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
        self._append(stored)
        return stored

    def _append(self, record: RoundRecord) -> None:
        """Append the record's line, chained to the previous one, to ``rounds.jsonl`` (flushed to disk)."""
        data = to_plain(record.to_json())
        link = record_link(self.record_head, data, self.key)
        data[INTEGRITY] = {"link": link, "fields": field_digests(data)}
        self.folder.append_round(json.dumps(data, allow_nan=False))
        self.record_head = link

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint needs to resume the recorder: the last round, the head of the record
        chain and the observers' state (the records themselves are in ``rounds.jsonl``)."""
        return {"round": self.records[-1].round, "record_chain": self.record_head,
                "observers": self.observers.state_dict()}

    def finish(self, final_params: Params, final_state: dict, wall_time_s: float,
               system: dict[str, Any], fields: dict[str, Any]) -> None:
        """Close a complete run: save the final model, let the observers finish (``on_run_end``:
        e.g. the FactSheet and trust score; what they return goes in the summary's ``observers``)
        and write ``summary.json``; the checkpoint is removed.

        Parameters
        ----------
        final_params : Params
            The final global model (``state_dict`` order), handed to the observers.
        final_state : dict
            The final model's ``state_dict`` (tensors), saved as ``final_model.pt``.
        wall_time_s : float
            The run's duration in seconds (resumed runs: all sessions together).
        system : dict of str to Any
            System figures (model size, traffic, training time), in the summary's ``system``.
        fields : dict of str to Any
            The engine's summary fields (``seconds_per_round``, ``device``, final aux values,
            ...), merged into the summary's top level.
        """
        summary = RunSummary(info=self.info, rounds=self.records, final_params=final_params,
                             wall_time_s=wall_time_s, system=system)
        atomic_torch_save(self.folder.final_model, final_state)
        observed = self.observers.run_end(summary)
        self._write_summary({"status": "complete", "run_id": self.info.run_id, "wall_time_s": wall_time_s,
                             **fields, "system": system,
                             "model_hash_chain": self.records[-1].server_metrics.get("chain_hash"),
                             "observers": observed})
        self.folder.checkpoint.unlink(missing_ok=True)

    def diverged(self, error: RunDiverged, wall_time_s: float, fields: dict[str, Any]) -> None:
        """Close a diverged run: keep the finite rounds, write ``status: diverged``.

        Parameters
        ----------
        error : RunDiverged
            What :meth:`record_round` raised (the round and what was not finite).
        wall_time_s : float
            The run's duration in seconds until then.
        fields : dict of str to Any
            Further summary fields from the engine.
        """
        bad = RoundRecord(round=error.round, client_ids=np.zeros(0, dtype=np.int64),
                          observations={"diverged": {"reason": error.what}})
        self._append(bad)
        self._write_summary({"status": "diverged", "run_id": self.info.run_id, "diverged_round": error.round,
                             "reason": error.what, "wall_time_s": wall_time_s, **fields})
        self.folder.checkpoint.unlink(missing_ok=True)

    def _write_summary(self, summary: dict[str, Any]) -> None:
        """Write ``summary.json`` with its integrity entry: the head of the record chain, the SHA-256
        of every other file the run wrote (config, dataset, final model, FactSheet, trust report,
        ...), and a link chaining all of it onto the records."""
        body = to_plain(summary)
        files = _covered_files(self.folder.path)
        algorithm = _algorithm(self.key)
        body[INTEGRITY] = {"algorithm": algorithm, "record_chain": self.record_head, "files": files,
                           "link": _summary_link(self.record_head, body, files, algorithm, self.key),
                           "fields": field_digests(body)}
        atomic_write_json(self.folder.summary, body)


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
    raw = [json.loads(line) for line in folder.rounds.read_text().splitlines() if line.strip()]  # load_run parsed them
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
    problems, previous = [], ""
    for data in raw:
        integrity = data.pop(INTEGRITY, None)
        where = f"rounds.jsonl round {data.get('round')}"
        if not isinstance(integrity, dict):
            problems.append(f"{where}: no record hash (the line was replaced)")
            continue
        if record_link(previous, data, key) != integrity.get("link"):
            edited = _edited_fields(data, integrity.get("fields"))
            problems.append(f"{where}: edited after the run: {_names(edited)}" if edited else
                            f"{where}: record chain broken (a round removed, reordered or inserted, or another key)")
        previous = str(integrity.get("link"))
    if not isinstance(closing, dict):
        problems.append(f"{folder.summary.name}: missing or without record hashes: the run is not finished, or its "
                        "summary was replaced")
    else:
        body = {k: v for k, v in summary.items() if k != INTEGRITY}
        files = closing.get("files") if isinstance(closing.get("files"), dict) else {}
        if closing.get("record_chain") != previous:
            problems.append(f"{folder.summary.name}: does not close the record chain (rounds removed or added after "
                            "the run)")
        if _summary_link(str(closing.get("record_chain")), body, files, algorithm, key) != closing.get("link"):
            edited = _edited_fields(body, closing.get("fields"))
            problems.append(f"{folder.summary.name}: edited after the run: {_names(edited)}" if edited else
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


# -- plain-data torch files (checkpoint.pt, final_model.pt) ------------------------------------

def read_plain_torch(path: str | Path, what: str, *, map_location: Any = "cpu") -> Any:
    """``torch.load(path, weights_only=True)``, with one line naming the file when it fails.

    Only tensors, dicts, lists, tuples, numbers, strings, booleans and None are rebuilt: torch's
    restricted unpickler refuses every other global (a class, ``os.system``, a numpy array)
    before anything is constructed, so nothing in the file runs.

    Parameters
    ----------
    path : str or Path
        A ``.pt`` file fltrust wrote (``checkpoint.pt``, ``final_model.pt``).
    what : str
        What the file is, for the message (``"checkpoint"``, ``"final model"``).
    map_location : optional
        Passed to ``torch.load``.

    Raises
    ------
    RunFolderError
        The file is unreadable, or it references anything but plain data.
    """
    import pickle
    import re
    import warnings

    import torch

    path = Path(path)
    try:
        with warnings.catch_warnings():  # torch warns about the pickle protocol of a file it then refuses
            warnings.simplefilter("ignore", UserWarning)
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if found is None:
            reason = "not a torch file fltrust wrote: its pickle has instructions that plain data never uses"
            raise RunFolderError(f"{path}: unreadable {what} ({reason}); it was not unpickled, so nothing in it "
                                 "ran") from None
        raise RunFolderError(f"{path}: not a plain-data {what}: it references {found.group(1)}, which fltrust "
                             "never writes (a file from an older fltrust, or a planted one); it was not "
                             "unpickled, so nothing in it ran") from None
    except Exception as exc:  # noqa: BLE001 - a truncated zip, garbage bytes, ...: the file is unreadable
        reason = (str(exc).splitlines() or [""])[0].split(". ")[0][:200]  # torch's first sentence
        raise RunFolderError(f"{path}: unreadable {what} ({type(exc).__name__}: {reason})") from None


def _to_tensors(value: Any) -> Any:
    """numpy arrays -> tensors (same dtype and bytes), numpy scalars -> Python numbers, recursively."""
    import torch

    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value, copy=True, order="C"))
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _to_tensors(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_tensors(v) for v in value)
    return value


def _to_arrays(value: Any) -> Any:
    """Inverse of :func:`_to_tensors`: tensors -> numpy arrays, recursively."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, dict):
        return {k: _to_arrays(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_arrays(v) for v in value)
    return value


def write_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Save an engine's state as plain data (numpy arrays become tensors), atomically."""
    atomic_torch_save(path, _to_tensors(state))


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load :func:`write_checkpoint`'s state (tensors become numpy arrays again, bit for bit).

    Raises
    ------
    RunFolderError
        The file is unreadable, not plain data (:func:`read_plain_torch`), or not a dict.
    """
    state = read_plain_torch(path, "checkpoint")
    if not isinstance(state, dict):
        raise RunFolderError(f"{path}: not an fltrust checkpoint (a {type(state).__name__}, not a dict)")
    return _to_arrays(state)


def load_final_model(path: str | Path, *, map_location: Any = "cpu") -> dict[str, Any]:
    """``final_model.pt``: the ``state_dict`` (name -> tensor) of a run's final global model.

    Raises
    ------
    RunFolderError
        The file is unreadable, not plain data, or not a mapping of names to tensors.
    """
    import torch

    state = read_plain_torch(path, "final model", map_location=map_location)
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise RunFolderError(f"{path}: not a model state_dict (expected a mapping of parameter names to tensors)")
    return state


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise RunFolderError(f"{path} is corrupt ({exc.msg}); delete {path.parent} and rerun") from exc
