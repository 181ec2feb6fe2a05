"""The recorder: :class:`RunRecorder`, the one writer of a run folder, used by every engine.

It writes the config and dataset description, appends one chained line per round to
``rounds.jsonl`` (after :func:`~fltrust.runs.folder.check_finite` and the observers), resumes from
a checkpoint's state, and closes a run with the final model and ``summary.json`` (its integrity
entry from :mod:`fltrust.runs.audit`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable
from typing import Any

import numpy as np

from fltrust.core.io import atomic_torch_save, atomic_write_json, atomic_write_text, to_plain
from fltrust.core.observers import ObserverSet, RoundObserver
from fltrust.core.params import chain_hash, params_hash
from fltrust.core.records import Params, RoundRecord, RunInfo, RunSummary
from fltrust.runs.audit import _covered_files
from fltrust.runs.chain import INTEGRITY, _algorithm, _summary_link, audit_key, field_digests, record_link
from fltrust.runs.folder import RunDiverged, RunFolder, RunFolderError, check_finite, cut_line_message, read_round_lines
from fltrust.runs.provenance import provenance

__all__ = ["RunRecorder", "strip"]

log = logging.getLogger("fltrust")


def strip(record: RoundRecord) -> RoundRecord:
    """Copy of a record without model parameters (what is kept in memory and on disk)."""
    return dataclasses.replace(record, client_params=[], global_params_before=None, global_params_after=None)


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
        lines, written after the checkpoint, are dropped; so is a cut last line, a write that did not
        finish, with a warning naming its file and line) and their chain is recomputed; it must
        end in the checkpoint's ``record_chain``. When it does not (the records were edited, the
        audit key changed, a line before the checkpoint's round is cut), nothing is touched, a
        warning names the reason and False is returned: the caller starts from round 0.
        """
        last, head = state.get("round"), state.get("record_chain")
        last = last if isinstance(last, int) else -1
        kept: list[str] = []
        problem = None
        cut = None
        try:
            lines, cut = read_round_lines(self.folder.rounds)
        except OSError as exc:
            lines, problem = [], f"cannot read it ({exc.strerror or exc})"
        except RunFolderError:
            lines, problem = [], "a line is not UTF-8 text (damaged or edited after the run)"
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
            previous = str(integrity["link"])
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
        if cut is not None:
            log.warning("%s", cut_line_message(self.folder.rounds, cut, len(lines), resuming_after=last))
        if len(lines) != len(kept) or cut is not None:  # rounds written after the checkpoint, or a cut line
            atomic_write_text(self.folder.rounds, "".join(line + "\n" for line in kept))
        self.info = info
        self.observers.run_start(info)
        self.records = [RoundRecord.from_json(json.loads(line)) for line in kept]
        self.record_head = previous  # the checkpoint's record_chain (checked above)
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
        self._close({"status": "complete", "run_id": self.info.run_id, "wall_time_s": wall_time_s, **fields,
                     "system": system, "model_hash_chain": self.records[-1].server_metrics.get("chain_hash"),
                     "observers": observed})

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
        self._close({"status": "diverged", "run_id": self.info.run_id, "diverged_round": error.round,
                     "reason": error.what, "wall_time_s": wall_time_s, **fields})

    def _close(self, summary: dict[str, Any]) -> None:
        """Close the run: write ``summary.json`` with its provenance (:func:`fltrust.runs.provenance.provenance`,
        unless the caller's fields hold one) and its integrity entry -- the head of the record chain, the
        SHA-256 of every other file the run wrote (config, dataset, final model, FactSheet, trust report,
        ...), and a link chaining all of it onto the records --, then remove the checkpoint."""
        body = to_plain(summary)
        if "provenance" not in body:  # which code, libraries, BLAS and threads ran it (never in the run id)
            body["provenance"] = provenance(body.get("device"))
        files = _covered_files(self.folder.path)
        algorithm = _algorithm(self.key)
        body[INTEGRITY] = {"algorithm": algorithm, "record_chain": self.record_head, "files": files,
                           "link": _summary_link(self.record_head, body, files, algorithm, self.key),
                           "fields": field_digests(body)}
        atomic_write_json(self.folder.summary, body)
        self.folder.checkpoint.unlink(missing_ok=True)
