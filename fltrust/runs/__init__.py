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
                  run-end output, ``provenance`` (:func:`fltrust.runs.provenance.provenance`), and its ``integrity``
                  entry (the SHA-256 of every other file)
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
(:func:`fltrust.engines.inprocess.checkpoint_identity`) resumes after its last finished round.
:class:`RunRecorder` is the one writer of a run folder, used by every engine, so the in-process
and the Flower engine produce the same files. :func:`audit_run` (``fltrust audit``) recomputes the
hash chains over them.

No file of a run folder can run code when it is read: JSON and YAML (``yaml.safe_load``) are
data, and the ``.pt`` files are loaded with torch's restricted unpickler
(:func:`read_plain_torch`).

Modules
-------
- :mod:`~fltrust.runs.folder` -- :class:`RunFolder` (the paths), :class:`RunRecord` and
  :func:`load_run` (reloading; a cut last line of ``rounds.jsonl`` or an edited ``summary.json`` is a
  :class:`RecordIntegrityWarning`), :func:`locked`, :func:`check_finite`, :class:`RunFolderError`,
  :class:`RunDiverged`.
- :mod:`~fltrust.runs.recorder` -- :class:`RunRecorder`, the one writer, and :func:`strip`.
- :mod:`~fltrust.runs.chain` -- the record chain's primitives (:func:`record_link`,
  :func:`field_digests`, :func:`audit_key`, :func:`summary_edits`), which read no run folder.
- :mod:`~fltrust.runs.audit` -- :func:`audit_run`, which recomputes both chains over a run folder.
- :mod:`~fltrust.runs.checkpoint` -- plain-data ``.pt`` files: :func:`read_plain_torch`,
  :func:`write_checkpoint`, :func:`read_checkpoint`, :func:`load_final_model`.
- :mod:`~fltrust.runs.provenance` -- :func:`~fltrust.runs.provenance.provenance`, the record of the code (commit, dirty
  tree), libraries, BLAS kernels, threads and device that ``summary.json`` holds (never part of the
  run id), and :data:`TRAINING_PATHS` with :func:`changed_since` (has the training code changed since
  a recorded commit).

Every name is importable from :mod:`fltrust.runs` itself.
"""

from fltrust.core.params import chain_hash, params_hash  # re-exported: the run record's hash chain
from fltrust.runs.audit import UNHASHED_FILES, AuditResult, audit_run
from fltrust.runs.chain import (
    AUDIT_KEY_ENV,
    AUDIT_KEY_FILE_ENV,
    INTEGRITY,
    audit_key,
    canonical_json,
    field_digests,
    record_link,
    summary_edits,
)
from fltrust.runs.checkpoint import load_final_model, read_checkpoint, read_plain_torch, write_checkpoint
from fltrust.runs.folder import (
    KEEP_THE_FOLDER,
    RecordIntegrityWarning,
    RunDiverged,
    RunFolder,
    RunFolderError,
    RunRecord,
    check_finite,
    cut_line_message,
    load_run,
    locked,
    read_round_lines,
)
from fltrust.runs.recorder import RunRecorder, strip

__all__ = [
    "AUDIT_KEY_ENV",
    "AUDIT_KEY_FILE_ENV",
    "INTEGRITY",
    "KEEP_THE_FOLDER",
    "UNHASHED_FILES",
    "AuditResult",
    "RecordIntegrityWarning",
    "RunDiverged",
    "RunFolder",
    "RunFolderError",
    "RunRecord",
    "RunRecorder",
    "audit_key",
    "audit_run",
    "canonical_json",
    "chain_hash",
    "check_finite",
    "cut_line_message",
    "field_digests",
    "load_final_model",
    "load_run",
    "locked",
    "params_hash",
    "read_checkpoint",
    "read_plain_torch",
    "read_round_lines",
    "record_link",
    "strip",
    "summary_edits",
    "write_checkpoint",
]
