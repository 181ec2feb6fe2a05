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
                            figures; ``factsheet.json``; score and report (if
                            :mod:`fltrust.trust.scoring` is available)
==========================  ==============================================================

Mode defaults (``metrics.trust.mode``, or the constructor's ``mode``; every switch can be
overridden in the constructor):

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

``"extended"`` uses the fixed statistics and, in addition, measures the 16 taxonomy metrics the
prototype left out and nebula's sustainability pillar (:mod:`fltrust.trust.extended`: membership
inference, ART FGSM/PGD, discrimination index, client reputation and data quality, system
reliability, hash-chain audit, co-versioning, registry and visualisation coverage, CodeCarbon
offline energy), records a measured / declared / n/a provenance entry for every metric and
scores ``extended.yaml``. Its extra inputs come from
:func:`fltrust.trust.extended.extended_inputs` (``member_sampler``, ``sensitive``).

"prototype" is the authors' HEAD code. "paper" is what best reproduces the paper's Figures 4-5
(trust spec 7.3): the 5796d0b-era statistics with uncapped CVs, which the paper-mode definitions
bin (the paper's selection 0.08 and feature importance 0.92 need CVs above 1), and the paper's
Eq. 1 entropy (client identification, p proportional to data size; the paper-mode definitions
score ln N instead, so it only counts for completeness). "fixed" applies the spec's bug fixes
(B4, B10, B11) and matches the scoring engine's ``"fixed"`` mode (pass ``mode="fixed"`` to the
constructor when the configuration does not offer it).

Choices where the papers leave freedom (documented, not invented):

- ``performance/test_acc_avg``, ``test_loss_avg`` and ``fairness/test_acc_cv`` need the final
  global model's accuracy on *each client's* test data. With ``test_groups`` (the natural client
  of every test sample: FEMNIST writer, N-BaIoT device) the final model is evaluated on each
  group. Otherwise the last round's ``reward_accuracy`` / ``reward_loss`` are used: the global
  model that the last round's participants received, on their own validation sets (one
  aggregation step before the final model, and only that round's participants); engines that
  do not record them fall back to the post-training ``accuracy`` / ``loss``. The loss is the
  per-sample mean of the run's evaluation convention (B12), not the prototype's summed loss.
- CLEVER and SHAP samples are a seeded random draw from the test split passed in (the
  prototype took the first batch of a shuffled test loader). No clip values are used for CLEVER.
- System figures are numbers (the prototype wrote strings such as ``"6.24M"``):
  ``avg_time_minutes`` = run wall time / 60; ``avg_model_size`` = scalar parameter count;
  ``avg_upload_bytes`` / ``avg_download_bytes`` = total bytes over the run / C (mean per
  registered client; FederatedScope's average also counted the server).
- ``configuration/dp_epsilon`` is the configured target epsilon; the spent epsilon is reported
  in the run-end output when the engine records it.

Spec and bug references ("fairness spec §N", "trust spec §N", "Bn") are defined in ``docs/references.md``.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from fltrust.core.evaluation import evaluate, set_params
from fltrust.core.observers import BaseObserver
from fltrust.core.records import RoundRecord, RunInfo, RunSummary
from fltrust.trust.explainability import FEATURE_IMPORTANCE_METHODS, feature_importance_cv
from fltrust.trust.factsheet import (
    get_field,
    missing_fields,
    new_factsheet,
    populate_pre_training,
    save_factsheet,
    set_field,
)
from fltrust.trust.robustness import clever_score
from fltrust.trust.statistics import (
    CLASS_IMBALANCE_METHODS,
    ENTROPY_METHODS,
    accuracy_cv,
    avg_entropy,
    class_imbalance,
    label_entropies,
    selection_cv,
    selection_rates,
)

if TYPE_CHECKING:
    from fltrust.config import ExperimentConfig

log = logging.getLogger("fltrust")

FACTSHEET_FILE = "factsheet.json"

MODE_DEFAULTS: dict[str, dict[str, Any]] = {
    "prototype": {
        "entropy_method": "minmax_label",
        "class_imbalance_method": "present_classes",
        "feature_importance_method": "class_sums",
        "cap_cvs": True,
        "cap_fi": False,
        "nan_is_missing": False,
    },
    "paper": {
        "entropy_method": "client_identification",
        "class_imbalance_method": "present_classes",
        "feature_importance_method": "class_sums",
        "cap_cvs": False,
        "cap_fi": False,
        "nan_is_missing": True,
    },
    "fixed": {
        "entropy_method": "client_identification",
        "class_imbalance_method": "all_classes",
        "feature_importance_method": "feature_mean_abs",
        "cap_cvs": True,
        "cap_fi": True,
        "nan_is_missing": True,
    },
}
MODE_DEFAULTS["extended"] = dict(MODE_DEFAULTS["fixed"])
"""Statistic switches per ``metrics.trust.mode`` (see the module docstring)."""


class TrustObserverError(ValueError):
    """Inconsistent input to the trust observer; the message names it and the fix."""


def _mean(values: Any) -> float:
    arr = np.asarray(values, dtype=float).ravel()
    arr = arr[np.isfinite(arr)]
    return float(arr.mean()) if arr.size else float("nan")


def _none_if_nan(value: Any) -> Any:
    if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
        return None
    return float(value) if isinstance(value, (float, np.floating)) else value


class TrustObserver(BaseObserver):
    """Builds the FederatedTrust FactSheet of a run and scores it (paper Algorithm 1).

    Parameters
    ----------
    cfg : ExperimentConfig
        The run's configuration (``metrics.trust`` holds the mode and the CLEVER/SHAP settings,
        ``project`` the user-supplied FactSheet fields).
    model : torch.nn.Module
        A model of the run's architecture (the engine passes its own); the observer evaluates a
        copy loaded with the final parameters and never modifies it.
    x_test, y_test : torch.Tensor
        Test split (on the evaluation device) for performance, CLEVER and SHAP.
    run_folder : Path or None
        Where ``factsheet.json`` and the trust report are written (the engine sets it);
        ``None`` = write nothing.
    test_groups : array-like or None
        Natural client of each test sample; enables per-client evaluation of the final model.
    entropy_method, class_imbalance_method, feature_importance_method : str or None
        Statistic variants (:mod:`fltrust.trust.statistics`, :mod:`fltrust.trust.explainability`);
        ``None`` = the mode default (:data:`MODE_DEFAULTS`).
    cap_cvs, cap_fi : bool or None
        Cap the fairness CVs / the feature-importance CV at 1; ``None`` = mode default.
    mode : str or None
        ``"prototype"``, ``"paper"``, ``"fixed"`` or ``"extended"``; ``None`` =
        ``metrics.trust.mode``. Also passed to the scoring engine.
    member_sampler : callable or None
        Extended mode: ``(client_ids, n, seed) -> (x, y)`` training rows of those clients
        (membership inference); see :func:`fltrust.trust.extended.extended_inputs`.
    sensitive : SensitiveAttribute or None
        Extended mode: the test split's sensitive attribute (discrimination index).
    """

    name = "trust"

    def __init__(
        self,
        cfg: ExperimentConfig,
        model: torch.nn.Module,
        x_test: torch.Tensor,
        y_test: torch.Tensor,
        run_folder: Path | str | None = None,
        *,
        test_groups: Any = None,
        entropy_method: str | None = None,
        class_imbalance_method: str | None = None,
        feature_importance_method: str | None = None,
        cap_cvs: bool | None = None,
        cap_fi: bool | None = None,
        mode: str | None = None,
        member_sampler: Any = None,
        sensitive: Any = None,
    ) -> None:
        if len(x_test) != len(y_test):
            raise TrustObserverError(f"x_test has {len(x_test)} rows but y_test has {len(y_test)}")
        if test_groups is not None and len(test_groups) != len(y_test):
            raise TrustObserverError(f"test_groups has {len(test_groups)} rows but y_test has {len(y_test)}")
        self.cfg = cfg
        self.trust = cfg.metrics.trust
        self.mode = self.trust.mode if mode is None else mode
        if self.mode not in MODE_DEFAULTS:
            raise TrustObserverError(f"trust mode={self.mode!r} is not known; choose one of {list(MODE_DEFAULTS)}")
        given = {
            "entropy_method": entropy_method,
            "class_imbalance_method": class_imbalance_method,
            "feature_importance_method": feature_importance_method,
            "cap_cvs": cap_cvs,
            "cap_fi": cap_fi,
        }
        self.switches = {k: (given[k] if given.get(k) is not None else v) for k, v in MODE_DEFAULTS[self.mode].items()}
        for key, allowed in (
            ("entropy_method", ENTROPY_METHODS),
            ("class_imbalance_method", CLASS_IMBALANCE_METHODS),
            ("feature_importance_method", FEATURE_IMPORTANCE_METHODS),
        ):
            if self.switches[key] not in allowed:
                raise TrustObserverError(f"{key}={self.switches[key]!r} is not known; choose one of {list(allowed)}")
        self.model = model
        self.x_test = x_test
        self.y_test = y_test
        self.test_groups = None if test_groups is None else np.asarray(test_groups)
        self.run_folder = None if run_folder is None else Path(run_folder)
        self.factsheet: dict[str, Any] = new_factsheet()
        self.num_clients = 0
        self.client_entropies = np.zeros(0)
        self._selected: dict[int, list[int]] = {}
        self._series: dict[int, dict[str, Any]] = {}
        self.extended = None
        if self.mode == "extended":
            from fltrust.trust.extended import ExtendedMetrics

            self.extended = ExtendedMetrics(cfg, model, x_test, y_test, member_sampler=member_sampler, sensitive=sensitive)

    # -- helpers ----------------------------------------------------------------------------------
    def _require_started(self) -> None:
        if self.num_clients == 0:
            raise TrustObserverError("on_run_start(info) must be called before rounds are reported")

    def selection_counts(self) -> np.ndarray:
        """Times each registered client was sampled so far (rounds >= 1)."""
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
        out: dict[str, list[Any]] = {"round": rounds}
        out.update({k: [self._series[r].get(k) for r in rounds] for k in keys})
        return out

    def _final_model(self, params: list[np.ndarray]) -> torch.nn.Module:
        model = copy.deepcopy(self.model)
        set_params(model, params)
        return model.eval()

    def _sample_index(self) -> np.ndarray:
        rng = np.random.default_rng([int(self.cfg.effective_seed()), 7])
        return rng.permutation(len(self.y_test))

    # -- hooks --------------------------------------------------------------------------------------
    def on_run_start(self, info: RunInfo) -> None:
        """Pre-training fields, class distributions, entropies; selection map at 0 (Alg. 1 3-10)."""
        self.info = info
        counts = np.asarray(info.client_class_counts, dtype=float)
        if counts.ndim != 2 or counts.shape[0] != info.num_clients:
            raise TrustObserverError(
                f"RunInfo.client_class_counts has shape {counts.shape}; expected ({info.num_clients}, K)"
            )
        self.num_clients = int(info.num_clients)
        self._selected, self._series = {}, {}
        fs = new_factsheet(extended=self.extended is not None)
        populate_pre_training(fs, self.cfg, self.model, info.dataset or None)
        set_field(fs, "participants/client_num", self.num_clients)
        set_field(fs, "participants/sample_client_rate", self.cfg.clients_per_round() / self.num_clients)
        self.client_entropies = label_entropies(counts)
        set_field(fs, "data/avg_entropy", avg_entropy(counts, method=self.switches["entropy_method"]))
        method = self.switches["class_imbalance_method"]
        set_field(fs, "fairness/class_imbalance", class_imbalance(counts, method=method, cap=self.switches["cap_cvs"]))
        set_field(fs, "fairness/class_imbalance_raw", class_imbalance(counts, method=method, cap=False))
        self.factsheet = fs
        if self.extended is not None:
            self.extended.start(info, fs)
        self._check_definitions()

    def _check_definitions(self) -> None:
        """Load a user's metric definitions now, so that a bad file fails before training."""
        if self.trust.metrics_file is None:
            return
        try:
            from fltrust.trust.scoring import load_definitions
        except ImportError:
            return
        load_definitions(self.trust.metrics_file, mode=self.mode)

    def on_round_end(self, record: RoundRecord) -> Mapping[str, Any] | None:
        """Record who was sampled and the round's mean client accuracy / loss (Alg. 1 11-21)."""
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
        entry = {
            "mean_accuracy": _mean(metrics.get("accuracy", [])),
            "mean_loss": _mean(metrics.get("loss", [])),
            "aux_accuracy": float(server.get("aux_accuracy", float("nan"))),
            "aux_loss": float(server.get("aux_loss", float("nan"))),
        }
        self._series[int(record.round)] = {k: _none_if_nan(v) for k, v in entry.items()}
        out = {
            "selection_cv": _none_if_nan(self._selection_cv(cap=self.switches["cap_cvs"])),
            "mean_accuracy": _none_if_nan(entry["mean_accuracy"]),
            "mean_loss": _none_if_nan(entry["mean_loss"]),
        }
        if extended is not None:
            out["extended"] = extended
        return out

    def _client_performance(self, summary: RunSummary, model: torch.nn.Module) -> tuple[np.ndarray, np.ndarray, str]:
        """Per-client accuracy and loss of the global model (see the module docstring)."""
        if self.test_groups is not None:
            accs, losses = [], []
            for group in np.unique(self.test_groups):
                index = torch.as_tensor(np.flatnonzero(self.test_groups == group), device=self.y_test.device)
                result = evaluate(
                    model, self.x_test[index], self.y_test[index], num_classes=summary.info.num_classes,
                    batch_size=self.cfg.training.batch_size, loss_scaling=self.cfg.training.loss_scaling,
                )
                accs.append(result.accuracy)
                losses.append(result.loss)
            return np.asarray(accs), np.asarray(losses), "final global model on each natural client's test samples"
        trained = [r for r in summary.rounds if r.round >= 1 and len(r.client_ids)]
        if not trained:
            return np.zeros(0), np.zeros(0), "no training round"
        last = trained[-1]
        if "reward_accuracy" in last.client_metrics:
            keys = ("reward_accuracy", "reward_loss")
            source = "global model received in the last round, participants' validation sets"
        else:
            keys, source = ("accuracy", "loss"), "last round's post-training validation accuracy"
        accs = np.asarray(last.client_metrics[keys[0]], dtype=float)
        losses = np.asarray(last.client_metrics.get(keys[1], np.full(len(accs), np.nan)), dtype=float)
        return accs, losses, source

    def on_run_end(self, summary: RunSummary) -> Mapping[str, Any] | None:
        """Post-training fields, ``factsheet.json``, score and report (Alg. 1 24-27)."""
        self._require_started()
        if self.extended is not None:
            self.extended.stop_energy()  # the energy of the rounds, not of the post-training metrics
        fs, trust, sw = self.factsheet, self.trust, self.switches
        model = self._final_model(summary.final_params)
        seed = int(self.cfg.effective_seed())

        accs, losses, performance_source = self._client_performance(summary, model)
        accs = accs[np.isfinite(accs)]
        set_field(fs, "performance/test_acc_avg", _mean(accs))
        set_field(fs, "performance/test_loss_avg", _mean(losses))
        set_field(fs, "fairness/test_acc_cv", accuracy_cv(accs, cap=sw["cap_cvs"]) if accs.size else float("nan"))
        set_field(fs, "fairness/test_acc_cv_raw", accuracy_cv(accs, cap=False) if accs.size else float("nan"))
        set_field(fs, "fairness/selection_cv", self._selection_cv(cap=sw["cap_cvs"]))
        set_field(fs, "fairness/selection_cv_raw", self._selection_cv(cap=False))

        order = self._sample_index()
        if trust.clever_samples > 0:
            index = torch.as_tensor(order[: trust.clever_samples], device=self.x_test.device)
            set_field(fs, "performance/test_clever", clever_score(
                model, self.x_test[index], nb_classes=summary.info.num_classes,
                nb_batches=trust.clever_nb_batches, batch_size=trust.clever_batch_size,
                radius=trust.clever_radius, norm=trust.clever_norm, pool_factor=trust.clever_pool_factor, seed=seed,
            ))
        if trust.shap_samples > 0:
            n = min(len(order), trust.shap_background + trust.shap_samples)
            if n - trust.shap_background < 1:
                log.warning("trust: the test split has %d samples, too few for %d SHAP background samples plus one",
                            len(order), trust.shap_background)
            else:
                index = torch.as_tensor(order[:n], device=self.x_test.device)
                set_field(fs, "performance/test_feature_importance_cv", feature_importance_cv(
                    model, self.x_test[index], method=sw["feature_importance_method"],
                    n_background=trust.shap_background, seed=seed, cap=sw["cap_fi"], nsamples=trust.shap_nsamples,
                ))

        self._fill_system(summary)
        extended_out = None
        if self.extended is not None:
            extended_out = self.extended.run_end(summary, model, fs, self.run_folder)
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
        eps = [r.server_metrics.get("epsilon") for r in summary.rounds if "epsilon" in r.server_metrics]
        if eps:
            out["epsilon_spent"] = _none_if_nan(float(eps[-1]))
        if extended_out is not None:
            out["extended"] = extended_out
        out.update(self._score())
        return out

    def _fill_system(self, summary: RunSummary) -> None:
        fs, system = self.factsheet, summary.system or {}

        def total(key: str, metric: str) -> float:
            if system.get(key) is not None:
                return float(system[key])
            return float(sum(np.sum(r.client_metrics[metric]) for r in summary.rounds if metric in r.client_metrics))

        params = system.get("model_num_params", get_field(fs, "configuration/trainable_param_count"))
        set_field(fs, "system/avg_time_minutes", float(summary.wall_time_s) / 60.0)
        set_field(fs, "system/avg_model_size", params)
        set_field(fs, "system/avg_upload_bytes", total("bytes_up_total", "bytes_sent") / self.num_clients)
        set_field(fs, "system/avg_download_bytes", total("bytes_down_total", "bytes_received") / self.num_clients)

    def _score(self) -> dict[str, Any]:
        """Score the FactSheet and write the report, if the scoring engine is available."""
        try:
            from fltrust.trust.scoring import score_factsheet
        except ImportError as exc:
            log.warning("trust: scoring unavailable (%s); FactSheet written without a score", exc)
            return {}
        report = score_factsheet(self.factsheet, mode=self.mode, definitions=self.trust.metrics_file)
        if self.run_folder is not None:
            from fltrust.trust.report import write_report

            write_report(report, self.run_folder)
        out = {
            "trust_score": _none_if_nan(float(report.trust_score)),
            "pillars": {p.name: _none_if_nan(float(p.score)) for p in report.pillars},
        }
        if report.has_provenance:
            out["provenance"] = report.provenance_summary()
            out["metric_status"] = {m.path: m.status for m in report.metrics()}
        self.report = report
        return out

    # -- resume -------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Selections and per-round series (JSON-serialisable)."""
        state = {
            "selected": {str(r): list(ids) for r, ids in self._selected.items()},
            "series": {str(r): dict(v) for r, v in self._series.items()},
        }
        if self.extended is not None:
            state["extended"] = self.extended.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (call after ``on_run_start``, as the engine does)."""
        self._selected = {int(r): [int(i) for i in ids] for r, ids in state.get("selected", {}).items()}
        self._series = {int(r): dict(v) for r, v in state.get("series", {}).items()}
        if self.extended is not None and "extended" in state:
            self.extended.load_state_dict(state["extended"])
