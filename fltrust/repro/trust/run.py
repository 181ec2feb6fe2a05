"""Run the FederatedTrust experiments of :mod:`fltrust.repro.trust.experiments`, score them in every mode.

One run per experiment; its FactSheet is then scored in every requested scoring mode
(:func:`run_trust_experiment`). The FactSheet statistics differ by mode (capped or uncapped CVs,
entropy and feature-importance variants, :data:`fltrust.names.TRUST_MODE_DEFAULTS`), so the
FactSheet of a mode other than the run's is rebuilt by replaying the run's saved records through a
:class:`~fltrust.trust.observer.TrustObserver` of that mode (:func:`mode_factsheet`); nothing is
trained twice for the prototype, paper and fixed modes.

Extended mode (:data:`fltrust.names.EXTENDED_TRUST_MODE`, the 36-metric taxonomy plus sustainability) cannot be replayed:
client reputation, data quality and co-versioning need every round's client models, which the saved
round records do not keep, and membership inference and energy need the live run. So when
``"extended"`` is among the modes, :func:`run_trust_experiment` attaches a second, extended-mode trust
observer to the run itself (:class:`ModeObserver`); it writes ``trust_modes/extended/`` of the same
run folder, and the model is trained once. The observer does not touch the training (the run id,
the rounds and the final model are those of the run without it). A run already complete without that
FactSheet (or resumed from a checkpoint made without the observer) gets it from a companion run of the
same configuration made with ``metrics.trust.mode: extended``, which trains the same model again
(:func:`add_extended_mode` does this for a finished result).

The attack ablation (experiment 4, SYNTHETIC, 2 of 9 poisoned clients under FedAvg, FedMedian and
Krum, every run scored in extended mode) is :mod:`fltrust.repro.trust.ablation`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from fltrust.config import ExperimentConfig
from fltrust.core.io import to_plain
from fltrust.names import EXTENDED_TRUST_MODE, TRUST_MODES, TRUST_MODE_DEFAULTS, Device, TrustMode
from fltrust.repro.results import result_provenance, round_trace
from fltrust.repro.trust.experiments import (
    EXPERIMENTS,
    TrustExperimentError,
    experiment_config,
)
from fltrust.runs import RunRecord, load_final_model
from fltrust.trust.report import TrustReport

if TYPE_CHECKING:
    from fltrust.experiment import Experiment

MODE_FOLDER = "trust_modes"
"""Sub-folder of a run folder holding ``<mode>/factsheet.json`` and ``<mode>/trust_report.json``."""


def _check_modes(modes: Sequence[str]) -> list[TrustMode]:
    if isinstance(modes, str):
        raise TrustExperimentError(f"modes={modes!r} must be a list of mode names, e.g. [{modes!r}]")
    names = list(modes)
    unknown = [m for m in names if m not in TRUST_MODES]
    if not names or unknown:
        raise TrustExperimentError(f"modes {names} must be a non-empty list drawn from {list(TRUST_MODES)}")
    return cast(list[TrustMode], names)  # each checked above


def replay_experiment(record: RunRecord, *, device: Device = "auto") -> Experiment:
    """The federation and model of a finished run, rebuilt from its saved configuration (same seed,
    same data), with no observer: what :func:`mode_factsheet` replays the run's rounds against.
    One is enough for every mode of a record (the modes differ only in the observer)."""
    from fltrust.experiment import prepare_experiment

    cfg = ExperimentConfig.from_dict(record.config).with_overrides({
        "run.device": device, "run.progress": False,
        "metrics.trust.enabled": False, "metrics.fairness.enabled": False,
    })
    return prepare_experiment(cfg)


def mode_factsheet(record: RunRecord, mode: TrustMode, *, device: Device = "auto",
                   replay: Experiment | None = None) -> dict[str, Any]:
    """The FactSheet of a finished run as the trust observer of ``mode`` would have written it.

    The run's own FactSheet (``factsheet.json``, observer mode ``metrics.trust.mode``) is returned
    as it is when ``mode`` is the run's mode. Otherwise the run is replayed: the model and the
    federation are rebuilt from the saved configuration (:func:`replay_experiment`), and a
    :class:`~fltrust.trust.observer.TrustObserver` of ``mode`` receives the saved ``RunInfo``, every
    saved round record and a ``RunSummary`` with the saved final model, wall time and system
    figures. CLEVER does not depend on the mode and is copied from the run's FactSheet; so is the
    feature-importance CV when the two modes compute it the same way. The result is cached in
    ``<run>/trust_modes/<mode>/factsheet.json``.

    Parameters
    ----------
    record : RunRecord
        A complete run with the trust observer enabled.
    mode : str
        ``"prototype"``, ``"paper"`` or ``"fixed"``.
    device : str
        Device for the replay's evaluations.
    replay : Experiment or None
        :func:`replay_experiment` of ``record``, shared by the modes of one record; ``None``
        rebuilds it when a replay is needed.

    Returns
    -------
    dict
        The FactSheet.
    """
    from fltrust.core.records import RunSummary
    from fltrust.experiment import trust_observer
    from fltrust.trust.factsheet import get_field, load_factsheet, save_factsheet, set_field
    from fltrust.trust.observer import FACTSHEET_FILE

    _check_modes([mode])
    if record.summary.get("status") != "complete":
        raise TrustExperimentError(f"run {record.path} is not complete; run it to the end before scoring it")
    base_path = record.path / FACTSHEET_FILE
    if not base_path.is_file():
        raise TrustExperimentError(f"{base_path} is missing: the run was made without metrics.trust.enabled")
    cached = record.path / MODE_FOLDER / mode / FACTSHEET_FILE
    if cached.is_file():
        return load_factsheet(cached)
    base = load_factsheet(base_path)
    cfg = ExperimentConfig.from_dict(record.config)
    if mode == EXTENDED_TRUST_MODE and cfg.metrics.trust.mode != EXTENDED_TRUST_MODE:
        raise TrustExperimentError(
            f"run {record.path} was made in {cfg.metrics.trust.mode!r} mode; an extended FactSheet cannot be replayed "
            "(the saved rounds carry no client models). Run the experiment with metrics.trust.mode: extended "
            "(run_trust_experiment does so for modes=[..., 'extended'])")
    if mode == cfg.metrics.trust.mode:
        fs = base
    else:
        run_switches, switches = TRUST_MODE_DEFAULTS[cfg.metrics.trust.mode], TRUST_MODE_DEFAULTS[mode]
        fi_field = "performance/test_feature_importance_cv"
        reuse_fi = all(run_switches[k] == switches[k] for k in ("feature_importance_method", "cap_fi"))
        overrides: dict[str, Any] = {
            "metrics.trust.mode": mode,
            "metrics.trust.clever_samples": 0,
            "run.device": device,
            "run.progress": False,
        }
        if reuse_fi:
            overrides["metrics.trust.shap_samples"] = 0
        replay_cfg = cfg.with_overrides(overrides)
        replay = replay if replay is not None else replay_experiment(record, device=device)
        info = dataclasses.replace(replay, cfg=replay_cfg).run_info(record.run_id)
        observer = trust_observer(replay_cfg, replay.model, replay.federation.x_test, replay.federation.y_test)
        observer.on_run_start(info)
        for round_record in record.rounds:
            observer.on_round_end(round_record)
        state = load_final_model(record.path / "final_model.pt")
        summary = RunSummary(
            info=info,
            rounds=record.rounds,
            final_params=[value.numpy() for value in state.values()],
            wall_time_s=float(record.summary["wall_time_s"]),
            system=dict(record.summary.get("system") or {}),
        )
        # The observer scores its FactSheet before CLEVER (and FI) are copied in below; that
        # provisional score is discarded, so its "missing value" warnings are silenced.
        scoring_log = logging.getLogger("fltrust.trust.scoring")
        level = scoring_log.level
        scoring_log.setLevel(logging.ERROR)
        try:
            observer.on_run_end(summary)
        finally:
            scoring_log.setLevel(level)
        fs = observer.factsheet
        set_field(fs, "performance/test_clever", get_field(base, "performance/test_clever"))
        if reuse_fi:
            set_field(fs, fi_field, get_field(base, fi_field))
    save_factsheet(fs, cached, nan_as_null=True)
    return fs


class ModeObserver:
    """A trust observer of a second scoring mode riding along in a run (see the module docstring).

    It is named ``trust_<mode>`` (so it sits beside the run's own ``trust`` observer), writes into
    ``<run>/trust_modes/<mode>/`` and counts the rounds it saw: a run resumed from a checkpoint made
    without it has rounds it never observed, and then it writes nothing (the caller falls back to a
    companion run).

    Parameters
    ----------
    observer : TrustObserver
        The wrapped observer, built for ``mode``.
    mode : str
        Its scoring mode.

    Examples
    --------
    >>> class Inner:
    ...     run_folder = None
    ...     def state_dict(self):
    ...         return {}
    >>> ModeObserver(Inner(), "extended").name
    'trust_extended'
    """

    def __init__(self, observer: Any, mode: str) -> None:
        self.observer = observer
        self.mode = mode
        self.name = f"trust_{mode}"
        self.rounds_seen = 0

    @property
    def run_folder(self) -> Path | None:
        """Where the wrapped observer writes: ``<run>/trust_modes/<mode>`` (set from the run folder)."""
        return self.observer.run_folder

    @run_folder.setter
    def run_folder(self, folder: Path | str | None) -> None:
        self.observer.run_folder = None if folder is None else Path(folder) / MODE_FOLDER / self.mode

    def on_run_start(self, info: Any) -> None:
        """Start the wrapped observer (a resumed run then hands back the saved state)."""
        self.rounds_seen = 0
        self.observer.on_run_start(info)

    def on_round_end(self, record: Any) -> Any:
        """Observe one round with the wrapped observer."""
        self.rounds_seen += 1
        return self.observer.on_round_end(record)

    def on_run_end(self, summary: Any) -> Any:
        """Finish the wrapped observer's FactSheet, unless it missed rounds (then nothing is written)."""
        if self.rounds_seen != len(summary.rounds):
            logging.getLogger("fltrust").warning(
                "the %s observer saw %d of the run's %d rounds (the run was resumed from a checkpoint made "
                "without it); its FactSheet comes from a companion run instead", self.mode, self.rounds_seen,
                len(summary.rounds))
            return None
        if self.observer.run_folder is not None:
            Path(self.observer.run_folder).mkdir(parents=True, exist_ok=True)
        return self.observer.on_run_end(summary)

    def state_dict(self) -> dict[str, Any]:
        """The wrapped observer's state and the count of rounds seen."""
        return {"observer": self.observer.state_dict(), "rounds_seen": self.rounds_seen}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output."""
        self.observer.load_state_dict(state["observer"])
        self.rounds_seen = int(state["rounds_seen"])


def mode_observer(cfg: ExperimentConfig, mode: str) -> Any:
    """An :data:`~fltrust.experiment.ObserverFactory` of a :class:`ModeObserver` of ``mode`` for the
    run of ``cfg`` (built like the run's own trust observer, from ``cfg`` with
    ``metrics.trust.mode: <mode>``)."""
    from fltrust.experiment import federation_trust_observer

    mode_cfg = cfg.with_overrides({"metrics.trust.mode": mode})

    def build(template: Any, federation: Any) -> ModeObserver:
        return ModeObserver(federation_trust_observer(mode_cfg, template, federation), mode)

    return build


def _measured_in_run(record: RunRecord, mode: str) -> bool:
    """Whether a :class:`ModeObserver` of ``mode`` wrote its FactSheet into ``record``'s folder."""
    from fltrust.trust.observer import FACTSHEET_FILE

    return (record.path / MODE_FOLDER / mode / FACTSHEET_FILE).is_file()


@dataclass
class TrustRun:
    """One experiment run and its FactSheet scored in several modes.

    Attributes
    ----------
    name : str
        Experiment name.
    quick : bool
        Quick (smoke) configuration.
    record : RunRecord
        The run.
    factsheets : dict of str to dict
        FactSheet per scoring mode.
    reports : dict of str to TrustReport
        Score per mode.
    extended_record : RunRecord or None
        The run whose folder holds the extended FactSheet: ``record`` itself when the extended
        observer rode along, else the companion run made with ``metrics.trust.mode: extended``.
    elapsed_s : float
        Wall time of :func:`run_trust_experiment` (training, trust observer, replays, scoring).
    """

    name: str
    quick: bool
    record: RunRecord
    factsheets: dict[str, dict[str, Any]] = field(default_factory=dict)
    reports: dict[str, TrustReport] = field(default_factory=dict)
    extended_record: RunRecord | None = None
    elapsed_s: float = 0.0

    @property
    def synthetic(self) -> bool:
        """Whether the run used generated data."""
        return bool(self.record.summary.get("synthetic"))


def run_trust_experiment(
    name: str,
    *,
    modes: Sequence[TrustMode] = ("prototype", "paper"),
    quick: bool = False,
    device: Device = "auto",
    out_dir: str | Path | None = None,
    data_dir: str | Path | None = None,
    full_scale: bool = False,
    force: bool = False,
    observers: Sequence[Any] = (),
    overrides: Mapping[str, Any] | None = None,
) -> TrustRun:
    """Run one experiment once (or reload it when complete) and score its FactSheet in every mode.

    Parameters
    ----------
    name : str
        ``"exp1"`` ... ``"exp5"``.
    modes : sequence of str
        Scoring modes (:func:`fltrust.trust.scoring.score_factsheet`): ``"prototype"`` (the
        authors' code), ``"paper"`` (what best reproduces Figures 4-5), ``"fixed"`` (every bug fix).
    quick : bool
        Quick smoke configuration (:func:`quick_overrides`).
    device : str
        ``"cpu"``, ``"cuda"`` or ``"auto"``.
    out_dir : str, Path or None
        Folder of run folders; ``None`` = ``runs/``.
    data_dir : str, Path or None
        Data root.
    full_scale : bool
        The paper's settings without the CPU-budget scale.
    force : bool
        Train again even when a complete run is in ``out_dir`` (``fltrust repro verify``).
    observers : sequence of RoundObserver
        Further observers of the run (they read its rounds; e.g. a progress line per round).
    overrides : mapping, optional
        Dotted configuration overrides (``{"data.normalize": None}``), applied to the experiment's
        configuration before it runs; they change its config hash and run id.

    Returns
    -------
    TrustRun
        The record, the FactSheet and the :class:`~fltrust.trust.report.TrustReport` per mode
        (each report is also written to ``<run>/trust_modes/<mode>/trust_report.json``).
    """
    from fltrust.experiment import run_experiment

    modes = _check_modes(modes)
    start = time.perf_counter()
    cfg = experiment_config(name, quick=quick, device=device, data_dir=data_dir, full_scale=full_scale)
    settings = {**(overrides or {}), "run.progress": False}  # the run's and its extended-mode companion's
    cfg = cfg.with_overrides(settings)
    out = out_dir if out_dir is not None else "runs"
    ride_along = EXTENDED_TRUST_MODE in modes and cfg.metrics.trust.mode != EXTENDED_TRUST_MODE
    riders = [mode_observer(cfg, EXTENDED_TRUST_MODE)] if ride_along else []
    record = run_experiment(cfg, out_dir=out, observer_factories=riders, observers=observers, force=force)
    run = TrustRun(name=name, quick=quick, record=record)
    replay = None  # one rebuilt federation and model for every replayed mode
    for mode in modes:
        scored = record
        if mode == EXTENDED_TRUST_MODE:
            if not _measured_in_run(record, mode):  # a run completed (or resumed) without the extended observer
                ext_cfg = experiment_config(name, mode=EXTENDED_TRUST_MODE, quick=quick, device=device, data_dir=data_dir,
                                            full_scale=full_scale).with_overrides(settings)
                scored = run_experiment(ext_cfg, out_dir=out, force=force)  # train it again
            run.extended_record = scored
        elif replay is None and mode != cfg.metrics.trust.mode and not _measured_in_run(record, mode):
            replay = replay_experiment(record, device=device)
        run.factsheets[mode], run.reports[mode] = _score(scored, mode, device=device, replay=replay)
    run.elapsed_s = time.perf_counter() - start
    return run


def _score(record: RunRecord, mode: TrustMode, *, device: Device,
           replay: Experiment | None = None) -> tuple[dict[str, Any], TrustReport]:
    """The FactSheet of ``mode`` (:func:`mode_factsheet`) and its score, written to ``<run>/trust_modes/<mode>/``."""
    from fltrust.trust.report import write_report
    from fltrust.trust.scoring import score_factsheet

    fs = mode_factsheet(record, mode, device=device, replay=replay)
    report = score_factsheet(fs, mode=mode)
    write_report(report, record.path / MODE_FOLDER / mode, plot=False)
    return fs, report


def report_summary(report: TrustReport) -> dict[str, Any]:
    """Trust score, pillar scores and every metric's raw value and score of one report (JSON-ready)."""
    metrics = {f"{pillar.name}/{metric.name}": {
        "label": metric.label, "raw": to_plain(metric.raw_value), "normalized": to_plain(metric.normalized),
        "score": to_plain(metric.score)} for pillar in report.pillars for metric in pillar.metrics()}
    return {
        "trust_score": to_plain(report.trust_score),
        "pillars": {p.name: to_plain(p.score) for p in report.pillars},
        "pillar_labels": {p.name: p.label for p in report.pillars},
        "metrics": metrics,
        "fixes": list(report.fixes),
        "rounding": report.rounding,
        "pillar_aggregation": report.pillar_aggregation,
        "warnings": list(report.warnings),
    }


def experiment_result(run: TrustRun) -> dict[str, Any]:
    """The JSON result an experiment notebook writes (read by the summary notebook and RESULTS.md).

    Parameters
    ----------
    run : TrustRun
        Output of :func:`run_trust_experiment`.

    Returns
    -------
    dict
        ``experiment``, ``title``, ``figure``, ``dataset``, ``synthetic``, ``quick``,
        ``complete``, ``run_id``, ``elapsed_s`` (this call), ``run_wall_time_s`` (training),
        ``settings`` (N, clients per round, rounds, DP, strategy, model), ``epsilon_spent``,
        ``final_aux_accuracy``, ``modes`` (per mode: :func:`report_summary`), ``deviations``,
        ``round_trace`` (the run's per-round model hashes and aux values,
        :func:`fltrust.repro.results.round_trace`), ``provenance`` (the run's and the writer's,
        :func:`fltrust.repro.results.result_provenance`), and for NbAFL runs ``dp_trace`` (:func:`dp_trace`).
    """
    e = EXPERIMENTS[run.name]  # run_trust_experiment checked the name
    cfg = run.record.config
    summary = run.record.summary
    trust_out = (summary.get("observers") or {}).get("trust", {})
    return to_plain({
        "experiment": run.name,
        "title": e.title,
        "figure": e.figure,
        "dataset": cfg["data"]["name"],
        "paper_dataset": e.paper_dataset,
        "synthetic": run.synthetic,
        "quick": run.quick,
        "complete": summary.get("status") == "complete" and bool(run.reports),
        "run_id": run.record.run_id,
        "elapsed_s": run.elapsed_s,
        "run_wall_time_s": summary.get("wall_time_s"),
        "seconds_per_round": summary.get("seconds_per_round"),
        "settings": {
            "num_clients": cfg["partition"]["num_clients"],
            "clients_per_round": ExperimentConfig.from_dict(cfg).clients_per_round(),
            "rounds": cfg["training"]["rounds"],
            "paper_rounds": e.rounds if e.rounds_stated else None,
            "privacy": cfg["privacy"]["mode"],
            "epsilon": cfg["privacy"]["target_epsilon"] if cfg["privacy"]["mode"] != "none" else None,
            "strategy": cfg["strategy"]["name"],
            "model": cfg["model"]["name"],
            "balance": cfg["data"]["balance"],
            "max_train_samples": cfg["data"]["max_train_samples"],
        },
        "epsilon_spent": summary.get("epsilon"),
        "final_aux_accuracy": summary.get("final_aux_accuracy"),
        "performance_source": trust_out.get("performance_source"),
        "missing_fields": trust_out.get("missing_fields"),
        "modes": {mode: report_summary(report) for mode, report in run.reports.items()},
        **({"extended_run": extended_run_summary(run.extended_record)} if run.extended_record is not None else {}),
        **({"dp_trace": dp_trace(run.record)} if cfg["privacy"]["mode"] == "nbafl" else {}),
        "deviations": list(cfg["run"]["deviations"]),
        "round_trace": [round_trace(run.record)],
        "provenance": result_provenance(_records_of(run)),
    })


def _records_of(run: TrustRun) -> list[tuple[str, dict[str, Any]]]:
    """``(run_id, summary)`` of the run and, when it is another run, of its extended companion."""
    out = [(run.record.run_id, run.record.summary)]
    if run.extended_record is not None and run.extended_record.run_id != run.record.run_id:
        out.append((run.extended_record.run_id, run.extended_record.summary))
    return out


DP_TRACE_KEYS = ("aux_accuracy", "nbafl_aggregate_noise_norm", "nbafl_upload_noise_norm", "update_norm", "weight_norm")
"""Per-round server metrics of an NbAFL run kept in its result (:func:`dp_trace`)."""


def dp_trace(record: RunRecord) -> dict[str, list[float | None]]:
    """Per round (1..T) of an NbAFL run: server accuracy, the noise NbAFL added (expected norm
    per upload and on the round's weighted mean), the norm of the round's change to the model
    and of the model itself (:meth:`fltrust.algorithms.privacy.NbAFLMechanism.round_metrics`)."""
    rounds = [r for r in record.rounds if r.round > 0]
    return {key: [r.server_metrics.get(key) for r in rounds] for key in DP_TRACE_KEYS}


def extended_run_summary(record: RunRecord) -> dict[str, Any]:
    """Run id, wall time, final accuracy and FactSheet provenance counts of the run that measured
    the extended FactSheet; ``measured_in`` says whether that was the run itself (``"run"``, a
    :class:`ModeObserver`) or a companion run (``"companion"``)."""
    from fltrust.trust.factsheet import load_factsheet
    from fltrust.trust.observer import FACTSHEET_FILE

    companion = ExperimentConfig.from_dict(record.config).metrics.trust.mode == EXTENDED_TRUST_MODE
    fs = load_factsheet(record.path / FACTSHEET_FILE if companion
                        else record.path / MODE_FOLDER / EXTENDED_TRUST_MODE / FACTSHEET_FILE)
    statuses = Counter(entry.get("status", "unknown") if isinstance(entry, dict) else "unknown"
                       for entry in (fs.get("provenance") or {}).values())
    return to_plain({
        "run_id": record.run_id,
        "run_wall_time_s": record.summary.get("wall_time_s"),
        "final_aux_accuracy": record.summary.get("final_aux_accuracy"),
        "provenance": dict(statuses),
        "measured_in": "companion" if companion else "run",
    })


def add_extended_mode(
    result_path: str | Path,
    *,
    device: Device = "auto",
    out_dir: str | Path | None = None,
    data_dir: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Add the extended-mode score to a finished experiment result (``results/<exp>.json``) in place.

    Runs (or reloads) the experiment's extended companion run (:data:`fltrust.names.EXTENDED_TRUST_MODE`) with the
    result's own scale (quick or not) and writes ``modes.extended`` and ``extended_run`` into the
    file; the other modes and their run are left as they are (nothing is retrained for them).
    ``overrides`` (dotted keys) are applied to the companion run's configuration (execution
    settings such as ``training.vectorize``).
    """
    import json

    from fltrust.core.io import atomic_write_json
    from fltrust.experiment import run_experiment

    path = Path(result_path)
    result = json.loads(path.read_text())
    name, quick = result["experiment"], bool(result["quick"])
    start = time.perf_counter()
    cfg = experiment_config(name, mode=EXTENDED_TRUST_MODE, quick=quick, device=device, data_dir=data_dir)
    cfg = cfg.with_overrides({"run.progress": False, **(overrides or {})})
    record = run_experiment(cfg, out_dir=out_dir if out_dir is not None else "runs")
    _, report = _score(record, EXTENDED_TRUST_MODE, device=device)
    result["modes"][EXTENDED_TRUST_MODE] = to_plain(report_summary(report))
    result["extended_run"] = dict(extended_run_summary(record), elapsed_s=time.perf_counter() - start)
    atomic_write_json(path, result)
    return result


__all__ = [
    "DP_TRACE_KEYS",
    "MODE_FOLDER",
    "ModeObserver",
    "TrustRun",
    "add_extended_mode",
    "dp_trace",
    "experiment_result",
    "extended_run_summary",
    "mode_factsheet",
    "mode_observer",
    "replay_experiment",
    "report_summary",
    "run_trust_experiment",
]
