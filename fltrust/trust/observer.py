"""The FederatedTrust observer: fills the FactSheet during a run and scores it at the end.

:class:`TrustObserver` is the paper's Algorithm 1 on the engine-neutral observer protocol
(:mod:`fltrust.core.observers`); it never imports an FL engine.

==========================  ==============================================================
Alg. 1 step                 observer hook
==========================  ==============================================================
3-5 config, IDs, model      ``on_run_start``: :func:`~fltrust.trust.factsheet.populate_pre_training`,
                            selection map of all C clients at 0
6-10 class distributions    ``on_run_start``: ``RunInfo.client_class_counts`` -> label entropy,
                            ``data/avg_entropy``, ``fairness/class_imbalance``
11-14 selection             ``on_round_end`` (rounds >= 1): who was sampled
15-21 local evaluation      ``on_round_end``: mean client accuracy / loss, server aux metrics
24-27 aggregate and score   ``on_run_end``: performance, CLEVER, SHAP, fairness CVs, system
                            figures; ``factsheet.json``; score and report
                            (:mod:`fltrust.trust.scoring`). Every round also
                            scores the FactSheet so far (``trust_score``, see below)
==========================  ==============================================================

Settings: :class:`~fltrust.settings.TrustSettings` (built directly, or by
:func:`fltrust.config.trust_settings` from ``metrics.trust``). Mode defaults
(:data:`fltrust.names.TRUST_MODE_DEFAULTS`; every switch can be set in the settings):

=========================  ===================  =========================  =========================
switch                     ``"prototype"``      ``"paper"``                ``"fixed"`` / ``"extended"``
=========================  ===================  =========================  =========================
entropy_method             ``minmax_label``     ``client_identification``  ``client_identification``
class_imbalance_method     ``present_classes``  ``present_classes``        ``all_classes``
feature_importance_method  ``class_sums``       ``class_sums``             ``feature_mean_abs``
cap_cvs                    yes (HEAD)           no (5796d0b)               yes (B11)
cap_fi                     no (HEAD)            no (5796d0b)               yes (B10)
nan_is_missing (report)    no (B2)              yes                        yes
=========================  ===================  =========================  =========================

The bugs behind the switches: docs/references.md#trust-b2, #trust-b10, #trust-b11.

``"extended"`` uses the fixed statistics and, in addition, measures the 16 taxonomy metrics the
prototype left out and nebula's sustainability pillar (:mod:`fltrust.trust.extended`: membership
inference, ART FGSM/PGD, discrimination index, client reputation and data quality, system
reliability, hash-chain audit, co-versioning, registry and visualisation coverage, CodeCarbon
offline energy; each a registered measure, :mod:`fltrust.trust.measures.registry`), records a
measured / declared / n/a provenance entry for every metric and scores ``extended.yaml`` (or the
settings' own definitions). What the run states beyond its records comes in its
:class:`~fltrust.trust.inputs.TrustInputs` (an experiment: :func:`fltrust.experiment.trust_inputs`;
a Flower app: :func:`fltrust.flower.instrument`).

"prototype" is the authors' HEAD code. "paper" is what best reproduces the paper's Figures 4-5
(trust spec 7.3, docs/references.md#trust-7-3): the 5796d0b-era statistics with uncapped CVs, which the paper-mode
definitions bin (the paper's selection 0.08 and feature importance 0.92 need CVs above 1), and the paper's
Eq. 1 entropy (client identification, p proportional to data size; the paper-mode definitions
score ln N instead, so it only counts for completeness). "fixed" applies the spec's bug fixes
(B4, B10, B11; docs/references.md#trust-b4, #trust-b10, #trust-b11) and matches the scoring engine's ``"fixed"`` mode.

**What the FactSheet describes.** For anyone's app, ``RunInfo.app``
(:class:`~fltrust.core.records.AppFacts`: the app's model class, strategy and its parameters,
dataset name and description; :func:`~fltrust.trust.describe.describe_app`); for an fltrust experiment, its
configuration (the observer's ``describe``: dataset, loader, strategy, privacy, training). The
model's parameter counts come from the model itself, the client count from
``RunInfo.num_clients``, the rounds from ``RunInfo.num_rounds``, the clients per round from
``RunInfo.clients_per_round`` or, when the run does not fix it, from the rounds; the clients'
label counts (``data/avg_entropy``,
``fairness/class_imbalance``) may arrive during the run (``RunInfo.record_client``), and are
then computed from the clients that reported.

**The score per round.** FederatedTrust scores a finished run; after every round k >= 1 the
observer also scores the FactSheet *so far* -- the same fields filled from rounds 1..k (the
performance of the global model the round's participants received, the selection and
accuracy CVs, the traffic and time so far) -- and returns it as ``trust_score`` (with
``pillars``) in the round's observation. Nothing is copied but the small FactSheet dict and no
model is evaluated: CLEVER and the SHAP feature importance are measured at run end only (their
fields are missing, score 0, in the per-round score) unless
``TrustSettings.model_metrics_every_round``. Extended mode scores at run end only.

Choices where the papers leave freedom (documented, not invented):

- ``performance/test_acc_avg``, ``test_loss_avg`` and ``fairness/test_acc_cv`` need the final
  global model's accuracy on *each client's* test data. With ``test_groups`` (the natural client
  of every test sample: FEMNIST writer, N-BaIoT device) the final model is evaluated on each
  group. Otherwise the last round's ``reward_accuracy`` / ``reward_loss`` are used: the global
  model that the last round's participants received, on their own validation sets (one
  aggregation step before the final model, and only that round's participants); engines that
  do not record them fall back to the post-training ``accuracy`` / ``loss``. The loss is the
  per-sample mean of the run's evaluation convention (B12, docs/references.md#trust-b12), not the prototype's summed
  loss.
- CLEVER and SHAP samples are a seeded random draw from the test split passed in (the
  prototype took the first batch of a shuffled test loader). No clip values are used for CLEVER
  (:class:`~fltrust.trust.model_fields.ModelFields`).
- System figures are numbers (the prototype wrote strings such as ``"6.24M"``):
  ``avg_time_minutes`` = run wall time / 60; ``avg_model_size`` = scalar parameter count;
  ``avg_upload_bytes`` / ``avg_download_bytes`` = total bytes over the run / C (mean per
  registered client; FederatedScope's average also counted the server).
- ``configuration/dp_epsilon`` is the configured target epsilon; the spent epsilon is reported
  in the run-end output when the engine records it.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fltrust.core.evaluation import evaluate, set_params
from fltrust.core.io import to_plain
from fltrust.core.observers import BaseObserver
from fltrust.core.records import RoundRecord, RunInfo, RunSummary
from fltrust.settings import TrustSettings
from fltrust.trust.describe import describe_app, model_family
from fltrust.trust.factsheet import (
    get_field,
    missing_fields,
    new_factsheet,
    save_factsheet,
    set_field,
)
from fltrust.trust.measures.statistics import (
    accuracy_cv,
    avg_entropy,
    class_imbalance,
    selection_cv,
    selection_rates,
)
from fltrust.trust.model_fields import MODEL_FIELDS, ModelFields
from fltrust.trust.report import write_report
from fltrust.trust.scoring import load_definitions, score_factsheet

__all__ = [
    "FACTSHEET_FILE",
    "MODEL_FIELDS",
    "TrustObserver",
    "TrustObserverError",
    "describe_app",
    "model_family",
]

log = logging.getLogger("fltrust")

FACTSHEET_FILE = "factsheet.json"


class TrustObserverError(ValueError):
    """Inconsistent input to the trust observer; the message names it and the fix."""


def _mean(values: Any) -> float:
    arr = np.asarray(values, dtype=float).ravel()
    arr = arr[np.isfinite(arr)]
    return float(arr.mean()) if arr.size else float("nan")


def _scores(report: Any) -> dict[str, Any]:
    """Return the trust score and the pillar scores of a report (NaN as ``None``)."""
    pillars = {p.name: float(p.score) for p in report.pillars}
    return to_plain({"trust_score": float(report.trust_score), "pillars": pillars})


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """Silence one logger while the block runs (the per-round score's missing-field notes)."""
    logger = logging.getLogger(name)
    before = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = before


class TrustObserver(BaseObserver):
    """Builds the FederatedTrust FactSheet of a run and scores it (paper Algorithm 1).

    Parameters
    ----------
    settings : TrustSettings
        Mode, statistic switches, CLEVER/SHAP settings, per-round scoring.
    model : torch.nn.Module
        A model of the run's architecture (the engine passes its own); the observer evaluates a
        copy loaded with the final parameters and never modifies it.
    x_test, y_test : torch.Tensor
        Test split (on the evaluation device) for performance, CLEVER and SHAP.
    run_folder : Path or None
        Where ``factsheet.json`` and the trust report are written (the engine sets it);
        ``None`` = write nothing.
    seed : int
        Seed of the CLEVER / SHAP sample draw (an experiment passes its run seed).
    batch_size : int
        Evaluation batch size (per-group evaluation with ``test_groups``).
    loss_scaling : str
        ``"mean"`` or ``"per_batch_sum"``, the run's evaluation convention.
    test_groups : array-like or None
        Natural client of each test sample; enables per-client evaluation of the final model.
    extended : ExtendedMetrics or None
        Extended mode's measurements (:class:`fltrust.trust.extended.ExtendedMetrics`, built from
        the run's :class:`~fltrust.trust.inputs.TrustInputs` by :func:`fltrust.experiment.trust_observer`
        or :func:`fltrust.flower.instrument`); required in extended mode, refused in the others.
    describe : callable or None
        ``describe(factsheet, info, model)`` fills the pre-training fields (what was run);
        ``None`` = :func:`describe_app` from ``RunInfo.app``. An experiment passes
        :func:`~fltrust.trust.factsheet.populate_pre_training` bound to its config
        (:func:`fltrust.experiment.trust_observer`).

    Examples
    --------
    >>> import torch
    >>> observer = TrustObserver(TrustSettings(mode="fixed"), torch.nn.Linear(3, 2), torch.zeros(4, 3),
    ...                          torch.zeros(4, dtype=torch.long))
    >>> observer.switches["entropy_method"]
    'client_identification'
    """

    name = "trust"

    def __init__(
        self,
        settings: TrustSettings,
        model: torch.nn.Module,
        x_test: torch.Tensor,
        y_test: torch.Tensor,
        run_folder: Path | str | None = None,
        *,
        seed: int = 0,
        batch_size: int = 256,
        loss_scaling: str = "mean",
        test_groups: Any = None,
        extended: Any = None,
        describe: Callable[[dict[str, Any], RunInfo, torch.nn.Module], Any] | None = None,
    ) -> None:
        if not isinstance(settings, TrustSettings):
            raise TrustObserverError(
                f"TrustObserver takes TrustSettings, got {type(settings).__name__}; from an experiment config use "
                "fltrust.experiment.trust_observer(cfg, model, x_test, y_test)"
            )
        if len(x_test) != len(y_test):
            raise TrustObserverError(f"x_test has {len(x_test)} rows but y_test has {len(y_test)}")
        if test_groups is not None and len(test_groups) != len(y_test):
            raise TrustObserverError(f"test_groups has {len(test_groups)} rows but y_test has {len(y_test)}")
        if (settings.mode == "extended") != (extended is not None):
            raise TrustObserverError(
                "extended mode needs its measurements: extended=ExtendedMetrics(settings, TrustInputs(...), model, "
                "x_test, y_test) (fltrust.experiment.trust_observer and fltrust.flower.instrument build it)"
                if extended is None
                else f"extended= is only used in extended mode, not mode={settings.mode!r}"
            )
        self.settings = settings
        self.mode = settings.mode
        self.switches = settings.switches
        self.model = model
        self.x_test = x_test
        self.y_test = y_test
        self.seed = int(seed)
        self.batch_size = int(batch_size)
        self.loss_scaling = loss_scaling
        self.test_groups = None if test_groups is None else np.asarray(test_groups)
        self.run_folder = None if run_folder is None else Path(run_folder)
        self.extended = extended
        self.describe = describe
        self.factsheet: dict[str, Any] = new_factsheet()
        self.num_clients = 0
        self._reset()
        self._eval_model: torch.nn.Module | None = None
        self._definitions: Any = None
        self._counts_at_start = False
        self._clients_per_round: float | None = None
        self._model_fields = ModelFields(settings, x_test, seed=self.seed)

    # -- helpers ----------------------------------------------------------------------------------
    def _reset(self) -> None:
        """Forget the rounds: no selections, series or traffic yet; the wall clock starts now."""
        self._selected: dict[int, list[int]] = {}
        self._series: dict[int, dict[str, Any]] = {}
        self._traffic = {"bytes_sent": 0.0, "bytes_received": 0.0}
        self._started = time.perf_counter()

    def _require_started(self) -> None:
        if self.num_clients == 0:
            raise TrustObserverError("on_run_start(info) must be called before rounds are reported")

    def selection_counts(self) -> np.ndarray:
        """Count the times each registered client was sampled so far (rounds >= 1).

        Returns
        -------
        numpy.ndarray
            float array of length C, indexed by client id.
        """
        counts = np.zeros(self.num_clients)
        for ids in self._selected.values():
            counts[np.asarray(ids, dtype=np.int64)] += 1
        return counts

    def _selection_cv(self, *, cap: bool) -> float:
        if not self._selected or self.num_clients == 0:
            return float("nan")
        rates = selection_rates(self.selection_counts(), len(self._selected))
        return selection_cv(rates, cap=cap)

    @property
    def history(self) -> dict[str, list[Any]]:
        """Per-round series (rounds >= 1): mean client accuracy and loss, server aux metrics."""
        rounds = sorted(self._series)
        keys = ("mean_accuracy", "mean_loss", "aux_accuracy", "aux_loss")
        return {"round": rounds, **{k: [self._series[r].get(k) for r in rounds] for k in keys}}

    def _model_with(self, params: list[np.ndarray]) -> torch.nn.Module:
        """Load ``params`` into the observer's one evaluation copy of the model and return it."""
        if self._eval_model is None:
            self._eval_model = copy.deepcopy(self.model)
        set_params(self._eval_model, params)
        return self._eval_model.eval()

    def _fill_class_fields(self, fs: dict[str, Any], counts: np.ndarray) -> None:
        """``data/avg_entropy`` and ``fairness/class_imbalance`` from ``(clients, K)`` label counts."""
        set_field(fs, "data/avg_entropy", avg_entropy(counts, method=self.switches["entropy_method"]))
        method = self.switches["class_imbalance_method"]
        set_field(fs, "fairness/class_imbalance", class_imbalance(counts, method=method, cap=self.switches["cap_cvs"]))
        set_field(fs, "fairness/class_imbalance_raw", class_imbalance(counts, method=method, cap=False))

    def _fill_run_facts(self, fs: dict[str, Any]) -> None:
        """Return the fields an app's run reveals as it goes: reported label counts, clients per round."""
        if not self._counts_at_start:
            counts = np.asarray(self.info.client_class_counts, dtype=float)
            reported = counts[counts.sum(axis=1) > 0] if counts.ndim == 2 and counts.shape[1] else counts[:0]
            if len(reported):
                self._fill_class_fields(fs, reported)
        if self._clients_per_round is None and self._selected:
            per_round = np.mean([len(ids) for ids in self._selected.values()])
            set_field(fs, "participants/sample_client_rate", float(per_round) / self.num_clients)

    # -- hooks --------------------------------------------------------------------------------------
    def on_run_start(self, info: RunInfo) -> None:
        """Fill the pre-training fields, class distributions and entropies; selection map at 0 (Alg. 1 3-10).

        ``info.client_class_counts`` may have no columns yet (shape ``(C, 0)``) when the clients
        report their label counts during the run (:meth:`RunInfo.record_client`).

        Parameters
        ----------
        info : RunInfo
            The run: configuration, client count C, per-client class counts (C x K), model metadata.

        Raises
        ------
        TrustObserverError
            ``info.client_class_counts`` is not a C x K array.
        """
        self.info = info
        counts = np.asarray(info.client_class_counts, dtype=float)
        if counts.ndim != 2 or counts.shape[0] != info.num_clients:
            raise TrustObserverError(
                f"RunInfo.client_class_counts has shape {counts.shape}; expected ({info.num_clients}, K)"
            )
        self.num_clients = int(info.num_clients)
        self._reset()
        fs = new_factsheet(extended=self.extended is not None)
        if self.describe is not None:
            self.describe(fs, info, self.model)
        else:
            describe_app(fs, info, self.model, self.settings)
        set_field(fs, "participants/client_num", self.num_clients)
        per_round = info.clients_per_round
        self._clients_per_round = None if per_round is None else float(per_round)
        if per_round is not None:
            set_field(fs, "participants/sample_client_rate", per_round / self.num_clients)
        self._counts_at_start = counts.shape[1] > 0
        if self._counts_at_start:
            self._fill_class_fields(fs, counts)
        self.factsheet = fs
        if self.extended is not None:
            self.extended.start(info, fs)
        # the metric definitions, loaded now so that a bad file fails before training; kept for scoring
        self._definitions = load_definitions(self.settings.metrics_file, mode=self.mode)

    def on_round_end(self, record: RoundRecord) -> Mapping[str, Any] | None:
        """Record who was sampled and the round's mean client accuracy / loss (Alg. 1 11-21).

        Also scores the FactSheet so far (``trust_score``, ``pillars``; see the module docstring).

        Parameters
        ----------
        record : RoundRecord
            The round: ``client_ids``, the clients' metrics (accuracy, loss, traffic), the server's.

        Returns
        -------
        Mapping or None
            ``selection_cv``, ``mean_accuracy`` and ``mean_loss`` so far, with ``trust_score`` and
            ``pillars`` (``score_every_round``) or, in extended mode, ``extended`` (the round's
            reputation and data-quality inputs); ``None`` for round 0.

        Raises
        ------
        TrustObserverError
            A client id outside 0..C-1, or the run was not started.
        """
        extended = self.extended.round_end(record) if self.extended is not None else None
        if record.round < 1:
            return None
        self._require_started()
        ids = np.asarray(record.client_ids, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_clients):
            raise TrustObserverError(
                f"round {record.round}: client ids {ids.tolist()} outside 0..{self.num_clients - 1}; "
                "was on_run_start called with the right RunInfo?"
            )
        self._selected[int(record.round)] = sorted(int(i) for i in ids)
        metrics, server = record.client_metrics, record.server_metrics
        for key in self._traffic:
            if key in metrics:
                self._traffic[key] += float(np.sum(metrics[key]))
        entry = {
            "mean_accuracy": _mean(metrics.get("accuracy", [])),
            "mean_loss": _mean(metrics.get("loss", [])),
            "aux_accuracy": float(server.get("aux_accuracy", float("nan"))),
            "aux_loss": float(server.get("aux_loss", float("nan"))),
        }
        series = self._series[int(record.round)] = to_plain(entry)
        out = {"selection_cv": to_plain(self._selection_cv(cap=self.switches["cap_cvs"])),
               **{k: series[k] for k in ("mean_accuracy", "mean_loss")}}
        if extended is not None:
            out["extended"] = extended
        elif self.settings.score_every_round:
            out.update(self.score_so_far(record))
        return out

    def score_so_far(self, record: RoundRecord) -> dict[str, Any]:
        """Score the FactSheet after ``record``'s round, as if the run ended now.

        A copy of the FactSheet dict is filled from the rounds seen so far (performance of the
        global model this round's participants received, CVs, traffic and time so far) and
        scored; the observer's state is not touched. The model measurements
        (:data:`MODEL_FIELDS`) are left missing unless ``model_metrics_every_round``.

        Parameters
        ----------
        record : RoundRecord
            The round just ended (its participants' received-model performance).

        Returns
        -------
        dict
            ``{"trust_score": float or None, "pillars": {name: float or None}}``.
        """
        fs = copy.deepcopy(self.factsheet)
        self._fill_run_facts(fs)
        accs, losses, _ = self._round_performance(record)
        self._fill_performance(fs, accs, losses)
        if self.settings.model_metrics_every_round and record.global_params_after is not None:
            self._model_fields.fill(fs, self._model_with(record.global_params_after), int(self.info.num_classes))
        system = {"bytes_up_total": self._traffic["bytes_sent"], "bytes_down_total": self._traffic["bytes_received"]}
        self._fill_system(fs, time.perf_counter() - self._started, system)
        with _quiet("fltrust.trust.scoring"):  # the final report lists what is missing; rounds stay quiet
            report = score_factsheet(fs, mode=self.mode, definitions=self._definitions)
        return _scores(report)

    def _round_performance(self, record: RoundRecord) -> tuple[np.ndarray, np.ndarray, str]:
        """Per-client accuracy and loss of the global model a round's participants received."""
        if "reward_accuracy" in record.client_metrics:
            keys = ("reward_accuracy", "reward_loss")
            source = "global model received in the last round, participants' validation sets"
        else:
            keys, source = ("accuracy", "loss"), "last round's post-training validation accuracy"
        accs = np.asarray(record.client_metrics.get(keys[0], []), dtype=float)
        losses = np.asarray(record.client_metrics.get(keys[1], np.full(len(accs), np.nan)), dtype=float)
        return accs, losses, source

    def _client_performance(self, summary: RunSummary, model: torch.nn.Module) -> tuple[np.ndarray, np.ndarray, str]:
        """Per-client accuracy and loss of the global model (see the module docstring)."""
        if self.test_groups is not None:
            results = []
            for group in np.unique(self.test_groups):
                index = torch.as_tensor(np.flatnonzero(self.test_groups == group), device=self.y_test.device)
                results.append(evaluate(model, self.x_test[index], self.y_test[index],
                                        num_classes=summary.info.num_classes, batch_size=self.batch_size,
                                        loss_scaling=self.loss_scaling))
            return (np.asarray([r.accuracy for r in results]), np.asarray([r.loss for r in results]),
                    "final global model on each natural client's test samples")
        trained = [r for r in summary.rounds if r.round >= 1 and len(r.client_ids)]
        if not trained:
            return np.zeros(0), np.zeros(0), "no training round"
        return self._round_performance(trained[-1])

    def _fill_performance(self, fs: dict[str, Any], accs: np.ndarray, losses: np.ndarray) -> None:
        accs = accs[np.isfinite(accs)]
        set_field(fs, "performance/test_acc_avg", _mean(accs))
        set_field(fs, "performance/test_loss_avg", _mean(losses))
        for suffix, cap in (("", self.switches["cap_cvs"]), ("_raw", False)):  # the capped CVs and the raw ones
            set_field(fs, f"fairness/test_acc_cv{suffix}", accuracy_cv(accs, cap=cap) if accs.size else float("nan"))
            set_field(fs, f"fairness/selection_cv{suffix}", self._selection_cv(cap=cap))

    def on_run_end(self, summary: RunSummary) -> Mapping[str, Any] | None:
        """Fill the post-training fields, write ``factsheet.json``, score it and write the report (Alg. 1 24-27).

        Parameters
        ----------
        summary : RunSummary
            The finished run: its rounds, final parameters and system figures.

        Returns
        -------
        Mapping or None
            ``trust_score``, ``pillars``, ``factsheet`` (its path, or ``None`` without a run folder),
            ``missing_fields``, ``performance_source``, ``epsilon_spent`` (with DP), ``extended``
            (extended mode), and ``provenance`` and ``metric_status`` when the definitions track provenance.

        Raises
        ------
        TrustObserverError
            The run was not started.
        """
        self._require_started()
        if self.extended is not None:
            self.extended.stop_energy()  # the energy of the rounds, not of the post-training metrics
        fs, sw = self.factsheet, self.switches
        model = self._model_with(summary.final_params)

        self._fill_run_facts(fs)
        accs, losses, performance_source = self._client_performance(summary, model)
        self._fill_performance(fs, accs, losses)
        self._model_fields.fill(fs, model, int(summary.info.num_classes))
        system = dict(summary.system or {})
        for key, metric in (("bytes_up_total", "bytes_sent"), ("bytes_down_total", "bytes_received")):
            if system.get(key) is None:
                system[key] = float(sum(np.sum(r.client_metrics[metric]) for r in summary.rounds
                                        if metric in r.client_metrics))
        self._fill_system(fs, float(summary.wall_time_s), system)
        extended_out = None
        if self.extended is not None:
            extended_out = self.extended.run_end(summary, model, fs, self.run_folder, definitions=self._definitions,
                                                 client_accuracy=accs[np.isfinite(accs)])
        missing = missing_fields(fs, nan_is_missing=sw["nan_is_missing"])
        if missing:
            log.info("trust: FactSheet fields missing: %s", ", ".join(missing))
        factsheet_path = None
        if self.run_folder is not None:
            factsheet_path = save_factsheet(fs, self.run_folder / FACTSHEET_FILE, nan_as_null=self.mode != "prototype")

        out: dict[str, Any] = {
            "trust_score": None,
            "pillars": {},
            "factsheet": None if factsheet_path is None else str(factsheet_path),
            "missing_fields": missing,
            "performance_source": performance_source,
        }
        eps = [r.server_metrics["epsilon"] for r in summary.rounds if "epsilon" in r.server_metrics]
        if eps:
            out["epsilon_spent"] = to_plain(float(eps[-1]))
        if extended_out is not None:
            out["extended"] = extended_out
        out.update(self._score())
        return out

    def _fill_system(self, fs: dict[str, Any], wall_time_s: float, system: Mapping[str, Any]) -> None:
        params = system.get("model_num_params", get_field(fs, "configuration/trainable_param_count"))
        set_field(fs, "system/avg_time_minutes", float(wall_time_s) / 60.0)
        set_field(fs, "system/avg_model_size", params)
        set_field(fs, "system/avg_upload_bytes", float(system["bytes_up_total"]) / self.num_clients)
        set_field(fs, "system/avg_download_bytes", float(system["bytes_down_total"]) / self.num_clients)

    def _score(self) -> dict[str, Any]:
        """Score the FactSheet and write the report (into the run folder, if any)."""
        report = score_factsheet(self.factsheet, mode=self.mode, definitions=self._definitions)
        if self.run_folder is not None:
            write_report(report, self.run_folder)
        out = _scores(report)
        if report.has_provenance:
            out["provenance"] = report.provenance_summary()
            out["metric_status"] = {m.path: m.status for m in report.metrics()}
        self.report = report
        return out

    # -- resume -------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Return the selections, per-round series and traffic so far (JSON-serialisable).

        Returns
        -------
        dict
            ``selected`` (round -> client ids), ``series`` (round -> mean accuracy / loss, aux
            accuracy / loss), ``traffic`` (bytes sent and received) and, in extended mode, ``extended``.
        """
        state = {
            "selected": {str(r): list(ids) for r, ids in self._selected.items()},
            "series": {str(r): dict(v) for r, v in self._series.items()},
            "traffic": dict(self._traffic),
        }
        if self.extended is not None:
            state["extended"] = self.extended.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (call after ``on_run_start``, as the engine does).

        Parameters
        ----------
        state : dict
            What :meth:`state_dict` returned; missing keys keep their current values.
        """
        self._selected = {int(r): [int(i) for i in ids] for r, ids in state.get("selected", {}).items()}
        self._series = {int(r): dict(v) for r, v in state.get("series", {}).items()}
        self._traffic = {k: float(v) for k, v in state.get("traffic", self._traffic).items()}
        if self.extended is not None and "extended" in state:
            self.extended.load_state_dict(state["extended"])
