"""``fltrust repro verify``: rerun one repeat of a committed result and compare it round by round.

:func:`verify` reruns one repeat of a Federated Fairness Analytics condition
(``papers_repro/fairness_analytics/configs/<condition>.yaml``, result in ``results/<condition>.json``)
or one FederatedTrust experiment (``exp1`` ... ``exp5``, result in
``papers_repro/federatedtrust/results/<exp>.json``) into a scratch folder, with the committed run's
configuration (same config hash and run id), and compares what the committed result stores:

==========================  =====================================================================
field                       what the committed result holds per round
==========================  =====================================================================
``model_hash``              the round's global-model hash (``round_trace``; the run's model hash
                            chain: the first round whose model differs in any bit)
``round_trace.aux_*``       the aux loss and accuracy of the round's model (full precision)
``per_round.<notion>``      fairness: f_j, f_g, f_r, f_o, F_T, accuracies (10 significant digits)
``per_client.<field>``      fairness: every participant's accuracy, reward, FedSV, gain, group
                            score, the count of non-positive s, the cumulative FedSV vector (6 digits)
``dp_trace.<key>``          trust, NbAFL runs: server accuracy and noise and model norms
==========================  =====================================================================

and, when every round is compared, the summary values (fairness: the repeat's Table 3 window F_T and
its data scale; trust: every mode's trust, pillar and metric scores, the final aux accuracy and the
privacy spent). Results written before ``round_trace`` existed have no model hashes: their
comparison is to the stored digits, and says so. The outcome (:class:`Verification`) names the first
differing round, the largest absolute difference per field, and the likely cause from the provenance
records (:func:`fltrust.runs.provenance.differences`: another commit and the training files it
changed, another BLAS kernel, other threads, another library version; ``not recorded`` for results
written before provenance, with the commits that changed the training code since the result file
was last committed).

``--rounds N`` reruns and compares the first N rounds only (the run keeps its full configuration, so
round k is the same computation as in the full run; training stops after round N).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from fltrust.core.io import atomic_write_json, to_plain
from fltrust.core.observers import BaseObserver
from fltrust.core.records import RoundRecord
from fltrust.names import Device
from fltrust.repro.results import round_trace, run_provenance
from fltrust.runs import RunRecord
from fltrust.repro.provenance_table import VERIFIED_FILE, read_verified
from fltrust.runs.provenance import (NOT_RECORDED, changed_since, commits_since, describe, differences, provenance,
                                     short_commit)

__all__ = ["FieldDifference", "VerifyError", "Verification", "compare_fields", "known_targets",
           "likely_causes", "record_verification", "verify"]


DURATION_FIELDS = ("metrics.sustainability/run_emissions.", "metrics.sustainability/carbon_intensity.",
                   "pillars.sustainability", "modes.extended.trust_score")
"""Summary values computed from the run's duration (CodeCarbon's energy and emissions, the carbon
intensity divided back out of them, which rounds differently for each measured energy, and the
extended-mode scores that aggregate them): no two runs agree on them, so they are shown but left out
of the verdict (a field name containing one of these parts)."""


HEADLINE_FIELDS = ("table3.F_T (this repeat)", "modes.paper.trust_score")
"""The summary values a recorded verdict quotes, committed -> rerun, when they differ: the repeat's
Table 3 window F_T, the experiment's paper-mode trust score."""


def _duration_dependent(name: str) -> bool:
    return any(part in name for part in DURATION_FIELDS)


class VerifyError(ValueError):
    """A usage error of ``fltrust repro verify`` (unknown condition, repeat or rounds): exit 2."""

    exit_code = 2


@dataclass
class FieldDifference:
    """How one field of the rerun compares with the committed result.

    Attributes
    ----------
    field : str
        E.g. ``per_round.F_T``, ``per_client.accuracy``, ``model_hash``.
    compared : int
        Values compared (a list per round counts each element).
    differing : int
        Values that differ.
    max_abs : float or None
        Largest absolute difference of the numeric values (None: only non-numeric values differ,
        such as hashes or client ids).
    first_round : int or None
        First round where the field differs (None: identical, or a summary value).
    values : tuple or None
        ``(committed, rerun)`` of a summary value (one value, no round) that differs.
    """

    field: str
    compared: int = 0
    differing: int = 0
    max_abs: float | None = None
    first_round: int | None = None
    values: tuple[Any, Any] | None = None

    @property
    def identical(self) -> bool:
        return self.differing == 0


@dataclass
class Verification:
    """The outcome of :func:`verify`.

    Attributes
    ----------
    target : str
        The condition or experiment.
    paper : str
        ``"fairness"`` or ``"trust"``.
    repeat : int
        The rerun repeat.
    rounds : int
        Rounds compared (1..rounds).
    result_path : Path
        The committed result.
    rerun_path : Path
        The rerun's run folder.
    committed_run_id, rerun_run_id : str
        The runs compared.
    fields : list of FieldDifference
        Every compared field of the verdict.
    measured : list of FieldDifference
        The compared values that depend on the run's duration (:data:`DURATION_FIELDS`): shown,
        not part of the verdict.
    not_compared : list of str
        What the committed result does not hold (e.g. model hashes of an old result).
    causes : list of str
        Likely causes of a difference (:func:`likely_causes`); empty when identical.
    committed_provenance, rerun_provenance : dict or None
        The two runs' provenance records.
    wall_s : float
        Seconds of the rerun and comparison.
    """

    target: str
    paper: str
    repeat: int
    rounds: int
    result_path: Path
    rerun_path: Path
    committed_run_id: str
    rerun_run_id: str
    fields: list[FieldDifference] = field(default_factory=list)
    measured: list[FieldDifference] = field(default_factory=list)
    not_compared: list[str] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)
    committed_provenance: dict[str, Any] | None = None
    rerun_provenance: dict[str, Any] | None = None
    wall_s: float = 0.0

    @property
    def compared(self) -> int:
        return sum(f.compared for f in self.fields)

    @property
    def identical(self) -> bool:
        """True when something was compared and nothing differs."""
        return self.compared > 0 and all(f.identical for f in self.fields)

    @property
    def bit_identical(self) -> bool:
        """Identical, and the model hash of every compared round among the values."""
        return self.identical and any(f.field == "model_hash" and f.compared for f in self.fields)

    @property
    def first_round(self) -> int | None:
        rounds = [f.first_round for f in self.fields if f.first_round is not None]
        return min(rounds) if rounds else None

    def verdict(self) -> str:
        """The outcome in a few words, as RESULTS.md lists it (:func:`record_verification`)."""
        if self.compared == 0:
            return "nothing compared"
        if self.bit_identical:
            return f"bit-identical (every model hash and {self.compared} values)"
        if self.identical:
            return f"identical to the stored digits ({self.compared} values; no model hashes stored)"
        moved = [f for f in self.fields if not f.identical and f.max_abs is not None]
        largest = next((f for f in moved if f.field == "per_round.F_T"), None) or max(
            moved, key=lambda f: f.max_abs or 0.0, default=None)
        where = f"from round {self.first_round}" if self.first_round is not None else "in a summary value"
        size = f", {largest.field} by up to {largest.max_abs:.3g}" if largest is not None else ""
        headline = [f"{f.field} {_show(f.values[0])} -> {_show(f.values[1])}" for f in self.fields
                    if f.field in HEADLINE_FIELDS and f.values is not None]
        return f"**different** {where}{size}" + "".join(f"; {h}" for h in headline)

    def record(self) -> dict[str, Any]:
        """What :func:`record_verification` keeps of this outcome."""
        rerun = self.rerun_provenance or {}
        blas, threads = rerun.get("blas") or {}, rerun.get("threads") or {}
        machine = (f"{(rerun.get('platform') or {}).get('cpu')}, numpy {blas.get('numpy')}, torch "
                   f"{blas.get('torch_cpu_capability')}, threads {threads.get('torch')}/{threads.get('blas')}")
        return {"repeat": self.repeat, "rounds": self.rounds, "run_id": self.committed_run_id,
                "commit": short_commit(self.rerun_provenance), "machine": machine, "verdict": self.verdict(),
                "identical": self.identical, "first_round": self.first_round,
                "causes": [] if self.identical else list(self.causes)}

    def lines(self) -> list[str]:
        """The report ``fltrust repro verify`` prints (after its progress lines)."""
        same = "same run id" if self.committed_run_id == self.rerun_run_id else f"committed run {self.committed_run_id}"
        out = [f"committed: {self.result_path}, run {self.committed_run_id}",
               f"  provenance: {describe(self.committed_provenance)}",
               f"rerun:     {self.rerun_path} ({same})",
               f"  provenance: {describe(self.rerun_provenance)}"]
        if self.compared == 0:
            out.append(f"NOTHING COMPARED: the committed result holds no value of rounds 1-{self.rounds} that the "
                       "rerun could be compared with")
        elif self.bit_identical:
            out.append(f"BIT-IDENTICAL: rounds 1-{self.rounds}, every model hash and {self.compared} values equal")
        elif self.identical:
            out.append(f"IDENTICAL to the stored digits: rounds 1-{self.rounds}, {self.compared} values equal "
                       "(the committed result holds no model hashes, so this is not a bit-level check)")
        numeric = [f for f in self.fields if f.field.split(".")[0] in ("model_hash", "round_trace", "per_round",
                                                                         "per_client", "dp_trace")]
        summary = [f for f in self.fields if f not in numeric]
        if not self.identical and self.compared:
            if self.first_round is not None:
                where = f"first differing round {self.first_round} (rounds 1-{self.rounds} compared)"
            elif numeric:
                where = f"rounds 1-{self.rounds} agree, a summary value differs"
            else:
                where = "a summary value differs (the committed result holds no per-round values)"
            out.append(f"DIFFERENT: {where}")
        if numeric:
            out.append("largest absolute difference per field (differing / compared values, first differing round):")
            width = max(len(f.field) for f in numeric)
            out += [f"  {f.field:<{width}}  {_line(f)}" for f in numeric]
        if summary:
            differing = [f for f in summary if not f.identical]
            out.append(f"summary values: {len(summary) - len(differing)} of {len(summary)} identical"
                       + (", differing:" if differing else ""))
            width = max((len(f.field) for f in differing), default=0)
            out += [f"  {f.field:<{width}}  {_line(f)}" for f in differing[:30]]
            if len(differing) > 30:
                out.append(f"  ... and {len(differing) - 30} more")
        if self.measured:
            moved = [f for f in self.measured if not f.identical]
            out.append(f"not in the verdict: {len(self.measured)} value(s) computed from the run's duration "
                       f"(energy, emissions), {len(moved)} of them different")
        out += [f"not compared: {line}" for line in self.not_compared]
        if self.causes:
            out.append("likely cause (from the provenance):")
            out += [f"  - {line}" for line in self.causes]
        out.append(f"verify: {self.wall_s:.1f} s")
        return out


def record_verification(outcome: Verification) -> Path:
    """Keep ``outcome`` as its target's entry of the paper folder's
    :data:`~fltrust.repro.provenance_table.VERIFIED_FILE` (atomic; the
    other targets' entries stay), which RESULTS.md lists under its provenance table.

    Parameters
    ----------
    outcome : Verification
        A verification of a committed result (``papers_repro/<paper>/results/<target>.json``).

    Returns
    -------
    Path
        The file written.
    """
    path = outcome.result_path.parent.parent / VERIFIED_FILE
    recorded = read_verified(path)
    recorded[outcome.target] = outcome.record()
    atomic_write_json(path, dict(sorted(recorded.items())))
    return path


def _line(f: FieldDifference) -> str:
    if f.identical:
        return f"0 (0 / {f.compared})"
    size = "non-numeric" if f.max_abs is None else f"{f.max_abs:.3g}"
    where = f", from round {f.first_round}" if f.first_round is not None else ""
    values = f": committed {_show(f.values[0])}, rerun {_show(f.values[1])}" if f.values is not None else ""
    return f"{size} ({f.differing} / {f.compared}{where}){values}"


def _show(value: Any) -> str:
    return f"{value:.6g}" if _number(value) else str(value)


# -- comparing ----------------------------------------------------------------------------------

def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _elements(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def compare_fields(committed: Mapping[str, Mapping[Any, Any]], rerun: Mapping[str, Mapping[Any, Any]]
                   ) -> list[FieldDifference]:
    """Compare every field of ``committed`` with the same field of ``rerun``, key by key.

    Parameters
    ----------
    committed, rerun : dict of str to dict
        Field name to ``{round: value}`` (a number, None, a string or a list of them); a round
        key of ``None`` is a summary value. Only the committed keys are compared; a key the rerun
        lacks differs.

    Returns
    -------
    list of FieldDifference
        One per committed field, in the committed order.

    Examples
    --------
    >>> [d] = compare_fields({"F_T": {1: 0.5, 2: 0.25}}, {"F_T": {1: 0.5, 2: 0.5}})
    >>> d.differing, d.max_abs, d.first_round
    (1, 0.25, 2)
    """
    out = []
    for name, values in committed.items():
        theirs = rerun.get(name, {})
        diff = FieldDifference(name)
        differing_keys = []
        for key, value in values.items():
            mine = _elements(value)
            other = _elements(theirs[key]) if key in theirs else None
            diff.compared += len(mine)
            if other is None or len(other) != len(mine):
                diff.differing += len(mine)
                differing_keys.append(key)
                continue
            for a, b in zip(mine, other):
                if a == b or (_number(a) and _number(b) and math.isnan(a) and math.isnan(b)):  # NaN is NaN
                    continue
                if key is None and len(values) == 1 and len(mine) == 1:
                    diff.values = (a, b)
                diff.differing += 1
                differing_keys.append(key)
                if _number(a) and _number(b) and math.isfinite(a) and math.isfinite(b):
                    diff.max_abs = max(diff.max_abs or 0.0, abs(float(a) - float(b)))
        diff.first_round = min((key for key in differing_keys if isinstance(key, int)), default=None)
        out.append(diff)
    return out


def _trace_fields(entry: Mapping[str, Any] | None, rounds: int) -> dict[str, dict[int, Any]]:
    """``model_hash`` and ``round_trace.aux_*`` of one :func:`round_trace` entry, rounds 0..rounds."""
    if not entry:
        return {}
    return {**_by_round(entry, rounds, ["model_hash"]),
            **_by_round(entry, rounds, ["aux_loss", "aux_accuracy"], prefix="round_trace.")}


def _by_round(entry: Mapping[str, Any], rounds: int, keys: Iterable[str], prefix: str = "") -> dict[str, dict[int, Any]]:
    """``{prefix + key: {round: value}}`` of the per-round lists ``keys`` of ``entry``, rounds up to ``rounds``."""
    keep = [i for i, k in enumerate(entry["round"]) if k <= rounds]
    return {prefix + key: {int(entry["round"][i]): entry[key][i] for i in keep} for key in keys}


def _trace_entry(result: Mapping[str, Any], repeat: int) -> dict[str, Any] | None:
    return next((t for t in result.get("round_trace") or [] if int(t.get("repeat", 0)) == repeat), None)


def _fairness_fields(result: Mapping[str, Any], repeat: int, rounds: int) -> dict[str, dict[Any, Any]]:
    """The per-round fields of one repeat of a condition result (see the module docstring)."""
    out: dict[str, dict[Any, Any]] = _trace_fields(_trace_entry(result, repeat), rounds)
    per_round = result.get("per_round") or {}
    rows = [i for i, (r, k) in enumerate(zip(per_round.get("repeat", []), per_round.get("round", [])))
            if int(r) == repeat and 1 <= int(k) <= rounds]
    for key, values in per_round.items():
        if key not in ("repeat", "round"):
            out[f"per_round.{key}"] = {int(per_round["round"][i]): values[i] for i in rows}
    entry = next((e for e in (result.get("per_client") or {}).get("repeats", []) if int(e["repeat"]) == repeat), None)
    if entry is not None:
        keys = [key for key in entry if key not in ("repeat", "run_id", "round")]
        out.update(_by_round(entry, rounds, keys, prefix="per_client."))
    return out


def _fairness_summary(result: Mapping[str, Any], repeat: int) -> dict[str, dict[Any, Any]]:
    """The repeat's Table 3 window F_T and its data scale (compared only when every round is)."""
    from fltrust.repro.fairness.report import result_scales

    out: dict[str, dict[Any, Any]] = {}
    index = _repeat_index(result, repeat)
    per_repeat = (result.get("table3") or {}).get("F_T_per_repeat") or []
    if index is not None and index < len(per_repeat):
        out["table3.F_T (this repeat)"] = {None: per_repeat[index]}
    scales, first_only = result_scales(result)
    scale = scales[0] if first_only and repeat == 0 and scales else (
        None if first_only or index is None or index >= len(scales) else scales[index])
    if scale:
        out.update(_flatten("scale", scale))
    return out


def _flatten(prefix: str, value: Any) -> dict[str, dict[Any, Any]]:
    if not isinstance(value, Mapping):
        return {prefix: {None: value}}
    return {name: leaf for key, item in value.items() for name, leaf in _flatten(f"{prefix}.{key}", item).items()}


def _repeat_index(result: Mapping[str, Any], repeat: int) -> int | None:
    """The position of ``repeat`` among a result's runs (run ids end in ``-r<repeat>``)."""
    return next((i for i, run_id in enumerate(result.get("run_ids") or []) if str(run_id).endswith(f"-r{repeat}")),
                None)


def _trust_fields(result: Mapping[str, Any], rounds: int) -> dict[str, dict[Any, Any]]:
    """The per-round fields of a trust experiment result: its round trace and NbAFL trace."""
    out: dict[str, dict[Any, Any]] = _trace_fields(_trace_entry(result, 0), rounds)
    for key, values in (result.get("dp_trace") or {}).items():
        out[f"dp_trace.{key}"] = {k: v for k, v in enumerate(values, start=1) if k <= rounds}
    return out


def _trust_summary(result: Mapping[str, Any]) -> dict[str, dict[Any, Any]]:
    """Every mode's scores and the final values of a trust experiment result."""
    out: dict[str, dict[Any, Any]] = {}
    for key in ("final_aux_accuracy", "epsilon_spent"):
        if key in result:
            out[key] = {None: result[key]}
    for mode, summary in (result.get("modes") or {}).items():
        out[f"modes.{mode}.trust_score"] = {None: summary.get("trust_score")}
        out.update(_flatten(f"modes.{mode}.pillars", summary.get("pillars") or {}))
        for metric, values in (summary.get("metrics") or {}).items():
            for part in ("raw", "score"):
                out[f"modes.{mode}.metrics.{metric}.{part}"] = {None: values.get(part)}
    return out


# -- causes -------------------------------------------------------------------------------------

def likely_causes(
    committed: Mapping[str, Any] | None,
    rerun: Mapping[str, Any] | None,
    *,
    committed_run_id: str,
    rerun_run_id: str,
    result_path: str | Path,
    fingerprints: tuple[str | None, str | None] = (None, None),
    root: str | Path | None = None,
) -> list[str]:
    """What may explain a difference between a committed run and its rerun, most likely first.

    Parameters
    ----------
    committed, rerun : dict or None
        The two runs' provenance records.
    committed_run_id, rerun_run_id : str
        Their run ids (they differ when the configuration changed).
    result_path : str or Path
        The committed result file (for a result without provenance, git tells when it was last
        committed and which training commits came after).
    fingerprints : tuple of (str or None, str or None)
        The runs' data fingerprints, when recorded.
    root : str or Path, optional
        The checkout (default: the package's).

    Returns
    -------
    list of str
    """
    out = []
    if committed_run_id != rerun_run_id:
        out.append(f"other configuration: the committed run is {committed_run_id}, the current configuration gives "
                   f"{rerun_run_id} (its config hash differs)")
    if None not in fingerprints and fingerprints[0] != fingerprints[1]:
        out.append(f"other data: data fingerprint {fingerprints[0]}, now {fingerprints[1]}")
    if not committed:
        out.append(f"{NOT_RECORDED}: the committed result has no provenance record (it was written before runs "
                   "recorded their code, BLAS, threads and libraries)")
        since = commits_since(result_path, root)
        if since is not None:
            commit, commits = since
            if commits:
                newest = "; ".join(line[:90] for line in commits[:5])
                out.append(f"its file was last committed in {commit[:10]}; {len(commits)} commit(s) since then changed "
                           f"training code, the newest: {newest}")
            else:
                out.append(f"its file was last committed in {commit[:10]}; no training code changed since then")
        return out
    found = differences(committed, rerun)
    for line in found:
        if line.startswith("other commit"):
            files = changed_since(((committed.get("code") or {}).get("commit")), root)
            if files is None:
                line += " (git cannot compare them here)"
            elif files:
                shown = ", ".join(files[:6]) + (f" +{len(files) - 6} more" if len(files) > 6 else "")
                line += f"; training code changed in {len(files)} file(s): {shown}"
            else:
                line += "; no training code changed between them"
        out.append(line)
    if not found and not out:
        out.append("no recorded difference (same commit, BLAS, threads, libraries and device): an unrecorded factor "
                   "(CPU microcode, an environment variable not recorded) or nondeterminism")
    return out


# -- rerunning ----------------------------------------------------------------------------------

class _Enough(Exception):
    """Raised by :class:`_Progress` after the last compared round (``--rounds``)."""


class _Progress(BaseObserver):
    """An observer that prints one line per round, keeps the rounds, and stops the run after ``stop_after``."""

    name = "verify_progress"

    def __init__(self, total: int, stop_after: int | None, stream: TextIO) -> None:
        self.total, self.stop_after, self.stream = total, stop_after, stream
        self.rounds: list[RoundRecord] = []
        self.start = time.perf_counter()

    def on_run_start(self, info: Any) -> None:
        self.rounds, self.start = [], time.perf_counter()

    def on_round_end(self, record: RoundRecord) -> None:
        # the round as rounds.jsonl stores it (the fairness observer's output included: it ran before)
        self.rounds.append(RoundRecord.from_json(json.loads(json.dumps(to_plain(record.to_json())))))
        if record.round >= 1:
            print(f"  round {record.round}/{self.total} ({time.perf_counter() - self.start:.0f} s)",
                  file=self.stream, flush=True)
        if self.stop_after is not None and record.round >= self.stop_after:
            raise _Enough(record.round)


def _rerun(cfg: Any, out_dir: Path, rounds: int, stream: TextIO, device: Device) -> RunRecord:
    """Run ``cfg`` afresh in ``out_dir``, stopping after ``rounds`` when that is fewer than its own.

    A stopped run has no ``summary.json``: its record is the rounds the progress observer kept, its
    summary the data fingerprint (``dataset.json``) and this process's provenance.
    """
    from fltrust.experiment import run_experiment
    from fltrust.federation import resolve_device

    total = cfg.training.rounds
    progress = _Progress(total, rounds if rounds < total else None, stream)
    try:
        return run_experiment(cfg, out_dir=out_dir, observers=[progress], force=True)
    except _Enough:
        pass
    stem, seed, rep = cfg.run_id().rsplit("-", 2)
    folder = next((out_dir / name for name in (cfg.run_id(), f"{stem}-synthetic-{seed}-{rep}")
                   if (out_dir / name / "dataset.json").is_file()), out_dir / cfg.run_id())
    dataset = json.loads((folder / "dataset.json").read_text()) if (folder / "dataset.json").is_file() else {}
    summary = {"status": "stopped", "data_fingerprint": dataset.get("fingerprint"),
               "provenance": provenance(resolve_device(device))}
    return RunRecord(folder, cfg.to_dict(), progress.rounds, summary, dataset)


# -- the command --------------------------------------------------------------------------------

def known_targets(config_dir: str | Path | None = None) -> tuple[list[str], list[str]]:
    """The names ``verify`` accepts: the fairness conditions (configs in ``config_dir``) and the trust experiments."""
    from fltrust.repro.fairness.run import CONFIG_DIR
    from fltrust.repro.trust.experiments import EXPERIMENTS

    folder = Path(config_dir) if config_dir is not None else CONFIG_DIR
    return sorted(p.stem for p in folder.glob("*.yaml")), list(EXPERIMENTS)


def verify(
    target: str,
    *,
    repeat: int = 0,
    rounds: int | None = None,
    out_dir: str | Path | None = None,
    device: Device | None = None,
    config_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    stream: TextIO | None = None,
) -> Verification:
    """Rerun one repeat of a committed result and compare it (see the module docstring).

    Parameters
    ----------
    target : str
        A fairness condition (``fedavg_nslkdd_100c_iid``; ``<condition>-corrected`` for a
        corrected-mode result) or a trust experiment (``exp1`` ... ``exp5``).
    repeat : int
        The repeat to rerun (trust experiments have repeat 0 only).
    rounds : int, optional
        Compare rounds 1..rounds only (default: all the committed result holds).
    out_dir : str or Path, optional
        Scratch folder of the rerun (default ``runs/verify/<target>-r<repeat>``); a run there is
        replaced.
    device : str, optional
        ``cpu``, ``cuda`` or ``auto`` (default: the committed run's device type when recorded,
        else ``cpu``).
    config_dir, results_dir : str or Path, optional
        The fairness configurations and the committed results (default: the checkout's
        ``papers_repro/<paper>/configs`` and ``results``).
    stream : text stream, optional
        Where the progress lines go (default: standard error).

    Returns
    -------
    Verification

    Raises
    ------
    VerifyError
        For an unknown target (the message lists the known ones), a missing committed result, a
        repeat the result does not hold, or ``rounds < 1``.
    """
    start = time.perf_counter()
    stream = stream if stream is not None else sys.stderr
    conditions, experiments = known_targets(config_dir)
    condition = target.removesuffix("-corrected")
    if rounds is not None and rounds < 1:
        raise VerifyError(f"--rounds {rounds}: compare at least one round (--rounds 1 or more)")
    if repeat < 0:
        raise VerifyError(f"--repeat {repeat}: repeats count from 0")
    scratch = Path(out_dir) if out_dir is not None else Path("runs") / "verify" / f"{target}-r{repeat}"
    if condition in conditions:
        outcome = _verify_condition(target, repeat, rounds, scratch, device, config_dir, results_dir, stream)
    elif target in experiments:
        outcome = _verify_experiment(target, repeat, rounds, scratch, device, results_dir, stream)
    else:
        raise VerifyError(f"verify {target}: not a condition or experiment; known conditions: {', '.join(conditions)}; "
                          f"known experiments: {', '.join(experiments)}")
    outcome.wall_s = time.perf_counter() - start
    return outcome


def _load(path: Path, what: str) -> dict[str, Any]:
    if not path.is_file():
        raise VerifyError(f"verify {what}: no committed result {path}; make it first (fltrust repro fairness|trust)")
    return json.loads(path.read_text())


def _device(requested: Device | None, recorded: Mapping[str, Any] | None) -> Device:
    if requested is not None:
        return requested
    name = str(((recorded or {}).get("device") or {}).get("name") or "cpu")
    return "cuda" if name.startswith("cuda") else "cpu"


def _verify_condition(target: str, repeat: int, rounds: int | None, scratch: Path, device: Device | None,
                      config_dir: str | Path | None, results_dir: str | Path | None, stream: TextIO) -> Verification:
    from fltrust.repro.fairness.run import CONFIG_DIR, RESULTS_DIR, condition_configs, condition_result, result_path

    condition = target.removesuffix("-corrected")
    mode = "corrected" if target.endswith("-corrected") else "faithful"
    path = result_path(condition, mode, results_dir if results_dir is not None else RESULTS_DIR)
    committed = _load(path, target)
    index = _repeat_index(committed, repeat)
    if index is None:
        raise VerifyError(f"verify {target}: the committed result has no repeat {repeat} (runs: "
                          f"{', '.join(committed.get('run_ids') or [])}); pass --repeat 0..{len(committed['run_ids']) - 1}")
    committed_run = committed["run_ids"][index]
    device = _device(device, run_provenance(committed, committed_run))
    total = int(committed["rounds"])
    compare = min(rounds or total, total)
    cfg = condition_configs(condition, repeats=repeat + 1, mode=mode, quick=bool(committed["quick"]), device=device,
                            config_dir=config_dir if config_dir is not None else CONFIG_DIR)[repeat]
    cfg = cfg.with_overrides({"run.progress": False})
    print(f"verify {target} repeat {repeat}, rounds 1-{compare}: rerunning into {scratch} (device {device})",
          file=stream, flush=True)
    record = _rerun(cfg, scratch, compare, stream, device)
    rerun = condition_result(condition, [record], quick=bool(committed["quick"]))
    return _outcome(target, "fairness", repeat, compare, total, path, record, committed, committed_run, rerun,
                    lambda result: _fairness_fields(result, repeat, compare),
                    lambda result: _fairness_summary(result, repeat), "Table 3 window and data scale")


def _verify_experiment(target: str, repeat: int, rounds: int | None, scratch: Path, device: Device | None,
                       results_dir: str | Path | None, stream: TextIO) -> Verification:
    from fltrust.repro.trust.experiments import PAPER_DIR, experiment_config
    from fltrust.repro.trust.run import dp_trace, experiment_result, run_trust_experiment

    if repeat != 0:
        raise VerifyError(f"verify {target}: a trust experiment has one run (repeat 0); drop --repeat {repeat}")
    path = Path(results_dir if results_dir is not None else PAPER_DIR / "results") / f"{target}.json"
    committed = _load(path, target)
    committed_run = committed["run_id"]
    device = _device(device, run_provenance(committed, committed_run))
    total = int(committed["settings"]["rounds"])
    compare = min(rounds or total, total)
    quick = bool(committed["quick"])
    print(f"verify {target}, rounds 1-{compare}: rerunning into {scratch} (device {device})", file=stream, flush=True)
    if compare == total:
        progress = _Progress(total, None, stream)
        run = run_trust_experiment(target, modes=list(committed["modes"]), quick=quick, device=device,
                                   out_dir=scratch, force=True, observers=[progress])
        record, rerun = run.record, experiment_result(run)
    else:
        cfg = experiment_config(target, quick=quick, device=device).with_overrides({"run.progress": False})
        record = _rerun(cfg, scratch, compare, stream, device)
        rerun = {"round_trace": [round_trace(record)],
                 **({"dp_trace": dp_trace(record)} if cfg.privacy.mode == "nbafl" else {})}
    return _outcome(target, "trust", 0, compare, total, path, record, committed, committed_run, rerun,
                    lambda result: _trust_fields(result, compare), _trust_summary, "trust scores")


Fields = Callable[[Mapping[str, Any]], dict[str, dict[Any, Any]]]


def _outcome(target: str, paper: str, repeat: int, compare: int, total: int, path: Path, record: RunRecord,
             committed: Mapping[str, Any], committed_run: str, rerun: Mapping[str, Any], fields: Fields,
             summary: Fields, summarised: str) -> Verification:
    """Compare ``fields`` of the committed result and its rerun, and their ``summary`` when every round was rerun
    (else ``summarised`` is named as not compared)."""
    recorded = run_provenance(committed, committed_run)
    mine, theirs = fields(committed), fields(rerun)
    not_compared = []
    if "model_hash" not in mine:
        not_compared.append("model hash chain: the committed result holds no round_trace (written before model "
                            "hashes were stored in results)")
    if compare == total:
        mine.update(summary(committed))
        theirs.update(summary(rerun))
    else:
        not_compared.append(f"{summarised}: only rounds 1-{compare} of {total} were rerun")
    compared = compare_fields(mine, theirs)
    current = record.summary.get("provenance")
    outcome = Verification(target=target, paper=paper, repeat=repeat, rounds=compare, result_path=path,
                           rerun_path=record.path, committed_run_id=committed_run, rerun_run_id=record.run_id,
                           fields=[f for f in compared if not _duration_dependent(f.field)],
                           measured=[f for f in compared if _duration_dependent(f.field)],
                           not_compared=not_compared, committed_provenance=recorded, rerun_provenance=current)
    if not outcome.identical:
        trace = _trace_entry(committed, repeat) or {}
        outcome.causes = likely_causes(recorded, current, committed_run_id=committed_run, rerun_run_id=record.run_id,
                                       result_path=path,
                                       fingerprints=(trace.get("data_fingerprint"), record.summary.get("data_fingerprint")))
    return outcome
