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
summary.json      ``status`` ("complete"), wall time, system figures, observers' run-end output
log.txt           the run's log
================  ==================================================================

Every file is written through a temporary file and ``os.replace``, so a crash never leaves a
half-written file. A run whose ``summary.json`` says ``complete`` is skipped when started again;
a run with a ``checkpoint.pt`` resumes after its last finished round.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fltrust.fl.records import RoundRecord, _plain


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Atomic text write (UTF-8)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, data: Any) -> None:
    """Atomic JSON write; numpy values become plain types and NaN becomes ``null``."""
    atomic_write_text(path, json.dumps(_plain(data), indent=2, allow_nan=False) + "\n")


def atomic_torch_save(path: Path, obj: Any) -> None:
    """Atomic ``torch.save``."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write_bytes(path, buffer.getvalue())


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

    def is_complete(self) -> bool:
        """True when ``summary.json`` exists and says ``complete``."""
        if not self.summary.is_file():
            return False
        try:
            return json.loads(self.summary.read_text()).get("status") == "complete"
        except json.JSONDecodeError:
            return False

    def write_rounds(self, records: list[RoundRecord]) -> None:
        """Rewrite ``rounds.jsonl`` atomically with all records so far."""
        lines = [json.dumps(_plain(r.to_json()), allow_nan=False) for r in records]
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

    def observation_series(self, observer: str, key: str) -> list[Any]:
        """``[round_record.observations[observer][key] for rounds ≥ 1]`` (None where absent)."""
        return [r.observations.get(observer, {}).get(key) for r in self.rounds if r.round >= 1]


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
    rounds = [RoundRecord.from_json(json.loads(line)) for line in folder.rounds.read_text().splitlines() if line]
    summary = json.loads(folder.summary.read_text()) if folder.summary.is_file() else {}
    dataset = json.loads(folder.dataset.read_text()) if folder.dataset.is_file() else {}
    return RunRecord(folder.path, yaml.safe_load(folder.config.read_text()), rounds, summary, dataset)
