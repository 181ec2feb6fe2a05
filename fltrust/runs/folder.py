"""The run folder and its record: paths, the one-process lock, the divergence check, reloading.

:class:`RunFolder` names the files of ``<out_dir>/<run_id>/`` (layout in :mod:`fltrust.runs`);
:func:`locked` holds its lock while a run writes it; :func:`check_finite` raises
:class:`RunDiverged` when a round blew up; :func:`load_run` reads a folder back as a
:class:`RunRecord` (YAML with ``yaml.safe_load``, JSON: data only).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from fltrust.core.io import atomic_write_json, remove_stale_temporaries
from fltrust.core.records import Params, RoundRecord
from fltrust.runs.chain import summary_edits

__all__ = ["KEEP_THE_FOLDER", "RecordIntegrityWarning", "RunDiverged", "RunFolder", "RunFolderError", "RunRecord",
           "check_finite", "cut_line_message", "load_run", "locked", "read_round_lines"]

log = logging.getLogger("fltrust")


class RunFolderError(RuntimeError):
    """A run folder cannot be used (locked by another process, or a file in it is corrupt)."""


class RecordIntegrityWarning(UserWarning):
    """A run folder's file does not match the record hashes the run wrote (it was edited after the
    run), or ``rounds.jsonl`` ends in a cut line; the message names the file."""


KEEP_THE_FOLDER = ("keep the folder as it is (it is the record of what the run did; `fltrust audit` names what "
                   "changed) and rerun into a new folder (--out elsewhere)")
"""The advice of every corrupt-run-folder message: a run folder is evidence, never to be deleted."""


class RunDiverged(RuntimeError):
    """Training produced a non-finite loss or parameter; ``round`` is where it was detected."""

    def __init__(self, round_: int, what: str) -> None:
        super().__init__(f"training diverged at round {round_}: {what}")
        self.round = round_
        self.what = what


class _File:
    """A file of every run folder: ``RunFolder(path).<attribute>`` is ``path / name``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, folder: RunFolder, owner: type | None = None) -> Path:
        return folder.path / self.name


@dataclass
class RunFolder:
    """Paths of one run folder."""

    path: Path
    config = _File("config.yaml")
    dataset = _File("dataset.json")
    rounds = _File("rounds.jsonl")
    checkpoint = _File("checkpoint.pt")
    final_model = _File("final_model.pt")
    summary = _File("summary.json")
    log = _File("log.txt")
    lock = _File(".lock")
    holder = _File(".holder.json")

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
    """Raise :class:`RunDiverged` when a round's models or losses are not finite.

    The message says what is not finite and, where the round shows it, why: the clients whose
    models (``client_params``) are not finite or whose training loss is not, and the expected norm
    of the noise NbAFL added to every client model (``server_metrics["nbafl_upload_noise_norm"]``),
    which extreme ``privacy.*`` settings make enormous.
    """
    losses = record.client_metrics.get("train_loss")
    bad_loss = [] if losses is None else [int(c) for c, v in zip(record.client_ids, losses) if not np.isfinite(v)]
    bad_model = [int(c) for c, p in zip(record.client_ids, record.client_params or []) if not _finite(p)]
    causes = []
    if bad_model:
        causes.append(f"client(s) {bad_model[:10]} sent a model with NaN/inf parameters in round {record.round}")
    if bad_loss:
        causes.append(f"client(s) {bad_loss[:10]} reached a non-finite training loss in round {record.round}")
    noise = record.server_metrics.get("nbafl_upload_noise_norm")
    if noise is not None:
        causes.append(f"NbAFL added noise of expected norm {noise:.3g} to each client model (std "
                      "w_clip*T*c/(n_k*epsilon)): if that is large against the weights, each clipped to "
                      "privacy.nbafl_w_clip, raise privacy.target_epsilon or lower privacy.nbafl_constant")
    why = "".join(f"; {c}" for c in causes)
    if not _finite(record.global_params_after):
        raise RunDiverged(record.round, f"the aggregated model has NaN/inf parameters{why}")
    aux_loss = record.server_metrics.get("aux_loss")
    if aux_loss is not None and not np.isfinite(aux_loss):
        raise RunDiverged(record.round, f"the aggregated model's aux_loss is {aux_loss}{why}")
    if bad_loss:
        raise RunDiverged(record.round, "; ".join(causes))


def read_round_lines(path: Path) -> tuple[list[str], int | None]:
    """The lines of ``rounds.jsonl`` and the number of a cut last line.

    A last line without its newline that is not valid JSON is *cut*: a write that did not finish
    (the disk filled up, the process was killed). It is left out of the lines, and its 1-based
    number is returned (None when the file ends cleanly).

    Parameters
    ----------
    path : Path
        The ``rounds.jsonl`` file.

    Returns
    -------
    lines, cut : list of str, int or None
        Every complete line (``lines[k]`` is line ``k + 1``), and the number of the cut line.

    Raises
    ------
    RunFolderError
        A complete line is not UTF-8 text (the message names the file, line and byte).
    """
    raw = path.read_bytes().split(b"\n")
    tail = raw.pop()  # what follows the last newline: b"" when the file ends cleanly
    cut = None
    if tail.strip():
        try:
            json.loads(tail)
            raw.append(tail)  # a complete last line that only lacks its newline
        except ValueError:  # includes a UTF-8 sequence cut in half
            cut = len(raw) + 1
    lines = []
    for number, line in enumerate(raw, start=1):
        try:
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise RunFolderError(f"{path}:{number} is not UTF-8 text (byte 0x{line[exc.start]:02x} at column "
                                 f"{exc.start + 1}): it was damaged or edited after the run; {KEEP_THE_FOLDER}") from None
    return lines, cut


def cut_line_message(path: Path, number: int, complete: int, *, finished: bool = False,
                     resuming_after: int | None = None) -> str:
    """The one line that says ``rounds.jsonl`` ends in a cut line and how it is handled.

    Parameters
    ----------
    path : Path
        The ``rounds.jsonl`` file.
    number : int
        The cut line's number (1-based).
    complete : int
        How many complete lines precede it.
    finished : bool
        Whether the run has a ``summary.json`` (then the line was cut after the run: damage).
    resuming_after : int, optional
        The round a resume continues after (the message then says so).

    Returns
    -------
    str
    """
    where = (f"{path}: line {number}, the last, is cut (a write that did not finish: a full disk or a killed "
             f"process); the {complete} complete line(s) before it are read")
    if resuming_after is not None:
        return f"{where}; resuming after round {resuming_after}, the checkpoint's, and dropping the cut line"
    if finished:
        return f"{where}; the run has a summary.json, so the file was damaged after the run: {KEEP_THE_FOLDER}"
    return f"{where}, and rerunning the same command resumes after the last round its checkpoint holds, dropping the cut line"


def load_run(path: str | Path) -> RunRecord:
    """Reload a run folder written by the engine.

    A cut last line of ``rounds.jsonl`` (:func:`read_round_lines`) is left out with a
    :class:`RecordIntegrityWarning`; so is a ``summary.json`` that does not match the record hash
    the run wrote into it (edited after the run; checked when its chain is unkeyed or the audit
    key is set, see :func:`fltrust.runs.chain.summary_edits`).

    Raises
    ------
    FileNotFoundError
        If the folder has no ``config.yaml`` or ``rounds.jsonl``.
    RunFolderError
        A file is not parseable (the message names the file, and the line of ``rounds.jsonl``).
    """
    folder = RunFolder(Path(path))
    for needed in (folder.config, folder.rounds):
        if not needed.is_file():
            raise FileNotFoundError(f"{needed} is missing: {folder.path} is not a (finished) fltrust run folder")
    lines, cut = read_round_lines(folder.rounds)
    if cut is not None:
        warnings.warn(cut_line_message(folder.rounds, cut, len(lines), finished=folder.summary.is_file()),
                      RecordIntegrityWarning, stacklevel=2)
    rounds = []
    for number, line in enumerate(lines, start=1):
        if line.strip():
            try:
                rounds.append(RoundRecord.from_json(json.loads(line)))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
                raise RunFolderError(f"{folder.rounds}:{number} is corrupt ({_why(exc)}); {KEEP_THE_FOLDER}") from exc
    summary = _read_json(folder.summary) if folder.summary.is_file() else {}
    dataset = _read_json(folder.dataset) if folder.dataset.is_file() else {}
    try:
        config = yaml.safe_load(folder.config.read_bytes().decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise RunFolderError(f"{folder.config} is corrupt ({_why(exc)}); {KEEP_THE_FOLDER}") from exc
    if summary:
        edited = summary_edits(summary)
        if edited is not None:
            what = f"field(s) {', '.join(edited[:6])}{' ...' if len(edited) > 6 else ''}" if edited else "its integrity entry"
            warnings.warn(f"{folder.summary}: edited after the run ({what} do not match the record hash the run wrote); "
                          f"the values shown are not the run's: `fltrust audit {folder.path}` checks every file",
                          RecordIntegrityWarning, stacklevel=2)
    return RunRecord(folder.path, config, rounds, summary, dataset)


def _why(exc: BaseException) -> str:
    """A short reason for a parse error: the type and the first line of its message."""
    text = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunFolderError(f"{path} is corrupt ({_why(exc)}); {KEEP_THE_FOLDER}") from exc
    if not isinstance(data, dict):
        raise RunFolderError(f"{path} is corrupt (a JSON {type(data).__name__}, not an object); {KEEP_THE_FOLDER}")
    return data
