r"""Extended-mode measurements of the trust observer: the 16 taxonomy metrics the prototype left out.

:class:`~fltrust.trust.observer.TrustObserver` delegates here when ``metrics.trust.mode`` is
``"extended"`` (definitions ``fltrust/trust/definitions/extended.yaml``). Nothing here imports an
FL engine: everything comes from the observer protocol's records, plus two optional inputs the
experiment assembler passes (:func:`extended_inputs`): a sampler of client training rows (the
members of the membership-inference attack) and the test split's sensitive attribute.

=====================  =======================================================  =================
hook                   what                                                     metric(s)
=====================  =======================================================  =================
``start``              CodeCarbon offline tracker starts                         sustainability
``round_end``          every returned client model's loss on the server's        client reputation,
                       reference sample (a seeded sample of the test split);     co-versioning
                       hashes of the model sent out, each returned model and
                       the aggregated model
``run_end``            tracker stops (energy of rounds 0..T); membership         everything else
                       inference; ART FGSM/PGD; discrimination index; data
                       quality; reputation; reliability; hash-chain audit;
                       registry, visualisation and co-versioning coverage;
                       declared values; a provenance entry for every metric
=====================  =======================================================  =================

Each FactSheet provenance entry says ``measured``, ``declared``, ``missing`` (a measurement that
was switched off or impossible; scores 0) or ``n/a`` with the reason (left out of the means).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from fltrust.core.evaluation import evaluate_many, predict
from fltrust.core.records import Params, RoundRecord, RunInfo, RunSummary
from fltrust.trust.measures import governance, poisoning, reliability, reputation
from fltrust.trust.factsheet import get_field, set_field, set_provenance

if TYPE_CHECKING:
    from fltrust.config import ExperimentConfig
    from fltrust.trust.measures.discrimination import SensitiveAttribute

log = logging.getLogger("fltrust")

DASHBOARD_PNG = "trust_dashboard.png"


def sample_client_rows(federation: Any, client_ids: list[int], num_samples: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Up to ``num_samples`` training rows of the given clients, in the layout each client trained on.

    Rows are drawn uniformly (seeded) from the union of the clients' training rows
    (``federation.train_index``); each chosen row is taken through
    ``federation.client_tensors(cid)``, so NSL-KDD's per-client column layouts are respected.
    """
    ids = sorted(int(c) for c in client_ids)
    sizes = np.array([len(federation.train_index[c]) for c in ids], dtype=np.int64)
    total = int(sizes.sum())
    if total == 0 or num_samples < 1:
        empty = federation.x_train[:0]
        return empty, federation.y_train[:0]
    rng = np.random.default_rng([int(seed), 47])
    picks = np.sort(rng.choice(total, size=min(int(num_samples), total), replace=False))
    owner = np.searchsorted(np.cumsum(sizes), picks, side="right")
    offsets = picks - np.concatenate([[0], np.cumsum(sizes)[:-1]])[owner]
    xs, ys = [], []
    for position in np.unique(owner):
        x, y, _, _ = federation.client_tensors(ids[int(position)])
        rows = torch.as_tensor(offsets[owner == position], device=y.device)
        xs.append(x[rows])
        ys.append(y[rows])
    return torch.cat(xs), torch.cat(ys)


def extended_inputs(cfg: ExperimentConfig, federation: Any) -> dict[str, Any]:
    """Keyword arguments of :class:`TrustObserver` for extended mode (``{}`` in the other modes).

    ``member_sampler`` draws clients' training rows (membership inference); ``sensitive`` is the
    test split's sensitive attribute (:func:`fltrust.trust.measures.discrimination.sensitive_attribute`).
    """
    if cfg.metrics.trust.mode != "extended":
        return {}
    from fltrust.trust.measures.discrimination import sensitive_attribute

    return {
        "member_sampler": functools.partial(sample_client_rows, federation),
        "sensitive": sensitive_attribute(federation.bundle),
    }


def _hash(params: Params | None) -> str | None:
    if params is None:
        return None
    from fltrust.core.params import params_hash

    return params_hash(params)


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


class ExtendedMetrics:
    """State and computations of the extended mode (one per :class:`TrustObserver`).

    Parameters
    ----------
    cfg : ExperimentConfig
    model : torch.nn.Module
        Architecture template (never modified).
    x_test, y_test : torch.Tensor
        The test split (server reference sample, evasion, discrimination, non-members).
    member_sampler : callable or None
        ``(client_ids, n, seed) -> (x, y)`` training rows of those clients.
    sensitive : SensitiveAttribute or None
        Group of every test row.
    """

    def __init__(self, cfg: ExperimentConfig, model: torch.nn.Module, x_test: torch.Tensor, y_test: torch.Tensor, *,
                 member_sampler: Any = None, sensitive: SensitiveAttribute | None = None) -> None:
        from fltrust.trust.measures.governance import validate_declarations

        self.cfg = cfg
        self.trust = cfg.metrics.trust
        self.model = model
        self.x_test, self.y_test = x_test, y_test
        self.member_sampler = member_sampler
        self.sensitive = sensitive
        if sensitive is not None and len(sensitive.values) != len(y_test):
            raise ValueError(f"sensitive attribute has {len(sensitive.values)} values for {len(y_test)} test rows")
        self.declared = validate_declarations(self.trust.declared)
        self.seed = int(cfg.effective_seed())
        rng = np.random.default_rng([self.seed, 53])
        ref = rng.permutation(len(y_test))[: min(len(y_test), int(self.trust.reference_samples))]
        index = torch.as_tensor(np.sort(ref), device=y_test.device)
        self.x_ref, self.y_ref = x_test[index], y_test[index]
        self.rounds: dict[int, dict[str, Any]] = {}
        self.initial_global: str | None = None
        self.resumed_after: int | None = None
        self.tracker: Any = None
        self.energy: Any = None
        self._paths: dict[str, str] = {}

    # -- helpers ------------------------------------------------------------------------------
    def path(self, key: str) -> str:
        """Full ``pillar/notion/metric`` path of ``pillar/metric`` in the extended definitions."""
        if not self._paths:
            from fltrust.trust.scoring import load_definitions

            for full in load_definitions(mode="extended").metric_paths():
                pillar, _, metric = full.split("/")
                self._paths[f"{pillar}/{metric}"] = full
        return self._paths[key]

    def prov(self, fs: dict[str, Any], key: str, status: str, method: str, reason: str | None = None, **details: Any) -> None:
        set_provenance(fs, self.path(key), status, method, reason, **details)

    # -- hooks --------------------------------------------------------------------------------
    def start(self, info: RunInfo, fs: dict[str, Any]) -> None:
        """Start the energy tracker; record the federation facts nebula's complexity needs."""
        from fltrust.trust.measures.sustainability import EnergyTracker

        self.info = info
        sizes = np.asarray(info.client_num_samples, dtype=float)
        set_field(fs, "participants/avg_dataset_size", float(sizes.mean()) if sizes.size else float("nan"))
        set_field(fs, "sustainability/country_iso_code", self.trust.country_iso_code)
        if self.tracker is None or not self.tracker.running:
            self.tracker = EnergyTracker(self.trust.country_iso_code)
            self.tracker.start()

    def round_end(self, record: RoundRecord) -> dict[str, Any] | None:
        """Reference losses of the returned models and the round's model versions."""
        if record.round == 0:
            self.initial_global = record.server_metrics.get("model_hash") or _hash(record.global_params_after)
            return None
        entry: dict[str, Any] = {}
        if record.client_params and len(record.client_params) == len(record.client_ids):
            losses, _ = evaluate_many(self.model, record.client_params, self.x_ref, self.y_ref,
                                      batch_size=max(256, self.cfg.training.batch_size))
            entry["reference_loss"] = [float(v) for v in losses]
            if record.global_params_before is not None:
                before, _ = evaluate_many(self.model, [record.global_params_before], self.x_ref, self.y_ref,
                                          batch_size=max(256, self.cfg.training.batch_size))
                entry["global_reference_loss"] = float(before[0])
            entry["versions"] = {
                "global_before": _hash(record.global_params_before),
                "global_after": record.server_metrics.get("model_hash") or _hash(record.global_params_after),
                "local": [_hash(p) for p in record.client_params],
                "num_participants": int(len(record.client_ids)),
            }
        entry["client_ids"] = [int(c) for c in record.client_ids]
        self.rounds[int(record.round)] = entry
        return entry

    def state_dict(self) -> dict[str, Any]:
        return {"rounds": {str(k): v for k, v in self.rounds.items()}, "initial_global": self.initial_global}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.rounds = {int(k): dict(v) for k, v in state.get("rounds", {}).items()}
        self.initial_global = state.get("initial_global")
        self.resumed_after = max(self.rounds) if self.rounds else 0

    # -- run end ------------------------------------------------------------------------------
    def stop_energy(self) -> None:
        """Stop the energy tracker (called first thing at the end of the run)."""
        if self.tracker is not None and self.tracker.running:
            self.energy = self.tracker.stop()

    def run_end(self, summary: RunSummary, model: torch.nn.Module, fs: dict[str, Any], run_folder: Path | None) -> dict[str, Any]:
        """Fill the extended FactSheet fields and every provenance entry; return a short summary."""
        self.stop_energy()
        energy = self.energy
        out: dict[str, Any] = {}
        trained = [r for r in summary.rounds if r.round >= 1 and len(r.client_ids)]
        participated = sorted({int(c) for r in trained for c in r.client_ids})
        out["privacy"] = self._privacy(summary, model, fs, participated)
        out["robustness"] = self._robustness(summary, model, fs, trained)
        out["fairness"] = self._fairness(summary, model, fs)
        self._explainability(summary, fs, trained, run_folder)
        out["accountability"] = self._accountability(summary, fs)
        self._federation(summary, fs, trained)
        out["sustainability"] = self._sustainability(fs, energy)
        self._implemented(fs)
        return out

    def _privacy(self, summary: RunSummary, model: torch.nn.Module, fs: dict[str, Any],
                 participated: list[int]) -> dict[str, Any]:
        from fltrust.trust.measures.leakage import membership_inference

        engine_secagg = any(_finite(r.server_metrics.get("secure_aggregation")) for r in summary.rounds)
        configured = getattr(self.cfg.privacy, "secure_aggregation", None)
        if engine_secagg:
            set_field(fs, "privacy/secure_aggregation", "secagg+")
            self.prov(fs, "privacy/encryption", "measured",
                      "the engine reported secure aggregation (server_metrics['secure_aggregation'] = 1) in the rounds")
        else:
            value = configured if configured not in (None, "") else self.declared.get("encryption", "none")
            value = "secagg+" if str(value).lower() in ("secagg+", "secaggplus", "secagg") else str(value).lower()
            set_field(fs, "privacy/secure_aggregation", value)
            source = "privacy.secure_aggregation" if configured not in (None, "") else "metrics.trust.declared.encryption"
            self.prov(fs, "privacy/encryption", "declared", f"{source} = {value!r}",
                      "the engine did not report running secure aggregation in any round")
        anonymisation = self.declared.get("anonymisation")
        set_field(fs, "privacy/anonymisation", anonymisation)
        self.prov(fs, "privacy/anonymisation", "declared", "metrics.trust.declared.anonymisation",
                  None if anonymisation else "not declared: scores 0")

        result: dict[str, Any] = {}
        if self.trust.mia_samples <= 0 or self.member_sampler is None or not participated:
            why = ("metrics.trust.mia_samples = 0" if self.trust.mia_samples <= 0 else
                   "no client training rows were given to the observer" if self.member_sampler is None else
                   "no client took part")
            self.prov(fs, "privacy/information_leakage", "missing", "loss-threshold membership inference", why)
            return result
        x_m, y_m = self.member_sampler(participated, int(self.trust.mia_samples), self.seed)
        mia = membership_inference(model, x_m, y_m, self.x_test, self.y_test, num_samples=int(self.trust.mia_samples),
                                   seed=self.seed, nb_classes=summary.info.num_classes, use_art=True)
        set_field(fs, "privacy/mia_auc", mia.auc)
        set_field(fs, "privacy/mia_risk", mia.risk)
        set_field(fs, "privacy/mia_rule_based_advantage",
                  float("nan") if mia.rule_based_advantage is None else mia.rule_based_advantage)
        set_field(fs, "privacy/mia_samples", mia.num_members)
        self.prov(fs, "privacy/information_leakage", "measured",
                  f"loss-threshold membership inference (Yeom et al. 2018) on {mia.num_members} training rows of "
                  f"the clients that took part vs {mia.num_nonmembers} test rows; risk = 2|AUC - 0.5| "
                  f"(sklearn roc_auc_score); ART rule-based attack as a cross-check")
        return mia.to_dict()

    def _robustness(self, summary: RunSummary, model: torch.nn.Module, fs: dict[str, Any],
                    trained: list[RoundRecord]) -> dict[str, Any]:
        from fltrust.trust.measures.robustness import evasion_accuracy

        out: dict[str, Any] = {}
        name = self.cfg.strategy.name
        robust = poisoning.is_byzantine_robust(name)
        set_field(fs, "robustness/byzantine_robust", robust)
        recovery = _finite(get_field(fs, "robustness/poisoning_recovery"))
        if recovery is not None:
            self.prov(fs, "robustness/poisoning_defence", "measured",
                      "recovery = clip((acc_defended - acc_undefended) / (acc_clean - acc_undefended), 0, 1) from attack runs")
        else:
            self.prov(fs, "robustness/poisoning_defence", "declared",
                      f"Byzantine-robust aggregator in use: strategy.name = {name!r} -> {int(robust)}",
                      "no poisoning-attack runs were supplied (poisoning.record_attack_outcome)")

        if self.trust.evasion_samples > 0:
            order = np.random.default_rng([self.seed, 59]).permutation(len(self.y_test))[: int(self.trust.evasion_samples)]
            index = torch.as_tensor(np.sort(order), device=self.y_test.device)
            clip = (float(self.x_test.min()), float(self.x_test.max()))
            evasion = evasion_accuracy(model, self.x_test[index], self.y_test[index], nb_classes=summary.info.num_classes,
                                       eps=self.trust.evasion_eps, pgd_steps=self.trust.evasion_pgd_steps, clip_values=clip)
            for key in ("clean_accuracy", "fgsm_accuracy", "pgd_accuracy"):
                set_field(fs, f"robustness/evasion_{key}", getattr(evasion, key))
            set_field(fs, "robustness/evasion_eps", evasion.eps)
            set_field(fs, "robustness/evasion_retention", evasion.retention)
            out["evasion"] = evasion.to_dict()
        retention = _finite(get_field(fs, "robustness/poisoning_retention"))
        parts = (["PGD evasion retention acc_PGD / acc_clean (ART, L-inf eps "
                  f"{self.trust.evasion_eps}, {self.trust.evasion_pgd_steps} steps)"] if "evasion" in out else [])
        parts += ["poisoning retention acc_attacked / acc_clean"] if retention is not None else []
        if parts:
            self.prov(fs, "robustness/empirical_robustness", "measured", "mean of: " + "; ".join(parts))
        else:
            self.prov(fs, "robustness/empirical_robustness", "missing", "accuracy retention under attack",
                      "metrics.trust.evasion_samples = 0 and no poisoning-attack runs were supplied")

        coverage = self.declared.get("testing_coverage")
        set_field(fs, "robustness/testing_coverage", float("nan") if coverage is None else coverage)
        self.prov(fs, "robustness/testing_coverage", "declared", "metrics.trust.declared.testing_coverage",
                  None if coverage is not None else "not declared: scores 0")

        rel = reliability.system_reliability((len(r.client_ids), r.server_metrics) for r in trained)
        set_field(fs, "robustness/system_reliability", rel.reliability)
        set_field(fs, "robustness/dropout_rate", rel.dropout_rate)
        set_field(fs, "robustness/error_rate", rel.error_rate)
        set_field(fs, "robustness/timeout_rate", rel.timeout_rate)
        if rel.counters_reported:
            self.prov(fs, "robustness/system_reliability", "measured",
                      "1 - (dropped + failed + timed out) / sampled, from the engine's per-round counters")
        else:
            self.prov(fs, "robustness/system_reliability", "declared",
                      "1 - (dropped + failed + timed out) / sampled with every counter 0",
                      "declared / none injected: the engine reported no num_sampled / num_dropped / num_failed / "
                      "num_timed_out counters, so no failure was observed or injected")
        out["reliability"] = rel.to_dict()

        contributions = self._contribution_rounds(summary)
        num_clients = summary.info.num_clients
        dq = reputation.data_quality(contributions, num_clients)
        set_field(fs, "robustness/data_quality", dq.score)
        set_field(fs, "robustness/client_data_quality", dq.to_dict()["per_client"])
        set_field(fs, "robustness/low_quality_clients", dq.flagged)
        if dq.components:
            self.prov(fs, "robustness/data_quality", "measured",
                      "mean over clients of the label-agreement quality ("
                      + " + ".join({"agreement": "received global model's accuracy on the client's rows / peers' median",
                                    "fit": "peers' median training loss / client's training loss"}[c] for c in dq.components)
                      + "), each capped at 1", flagged=dq.flagged)
        else:
            self.prov(fs, "robustness/data_quality", "missing", "label-agreement data quality",
                      "the engine recorded neither reward_accuracy nor train_loss")
        rep = reputation.client_reputation(contributions, num_clients, tolerance=self.trust.reputation_tolerance)
        set_field(fs, "robustness/client_reputation", rep.score)
        set_field(fs, "robustness/client_reputations", rep.to_dict()["per_client"])
        if np.isfinite(rep.score):
            self.prov(fs, "robustness/client_reputation", "measured",
                      "mean beta reputation (alpha 1, beta 2, W 2, a 0.5) of the clients; an interaction is positive when "
                      f"the returned model's loss on the server's {len(self.y_ref)}-row reference sample is <= "
                      f"(1 + {self.trust.reputation_tolerance}) x the peers' median",
                      fedsv="reported" if rep.fedsv_mean is not None else "not recorded (fairness observer off)")
        else:
            self.prov(fs, "robustness/client_reputation", "missing", "beta reputation",
                      "the engine passed no client models to the observers (RoundRecord.client_params)")
        out["data_quality"] = dq.to_dict()
        out["reputation"] = rep.to_dict()
        return out

    def _contribution_rounds(self, summary: RunSummary) -> list[reputation.ContributionRound]:
        rounds = []
        for r in summary.rounds:
            if r.round < 1 or not len(r.client_ids):
                continue
            extra = self.rounds.get(int(r.round), {})
            metrics = r.client_metrics
            fedsv = None
            fairness = r.observations.get("fairness") if isinstance(r.observations, Mapping) else None
            if isinstance(fairness, Mapping) and "phi" in fairness:
                order = {int(c): i for i, c in enumerate(fairness.get("client_ids", r.client_ids))}
                phi = np.asarray(fairness["phi"], dtype=float)
                fedsv = np.array([phi[order[int(c)]] if int(c) in order else np.nan for c in r.client_ids])
            rounds.append(reputation.ContributionRound(
                round=int(r.round), client_ids=r.client_ids,
                reward_accuracy=metrics.get("reward_accuracy", metrics.get("accuracy")),
                train_loss=metrics.get("train_loss"),
                reference_loss=extra.get("reference_loss"),
                global_reference_loss=float(extra.get("global_reference_loss", float("nan"))),
                fedsv=fedsv,
            ))
        return rounds

    def _fairness(self, summary: RunSummary, model: torch.nn.Module, fs: dict[str, Any]) -> dict[str, Any]:
        from fltrust.trust.measures.discrimination import group_fairness_report

        if self.sensitive is None:
            name = str(summary.info.dataset.get("name", self.cfg.data.name)).removeprefix("synthetic_")
            if name == "cifar10":
                self.prov(fs, "fairness/discrimination_index", "n/a", "discrimination index (paper Eq. 7)",
                          "CIFAR-10 has no attribute besides the label to define groups")
            else:
                self.prov(fs, "fairness/discrimination_index", "missing", "discrimination index (paper Eq. 7)",
                          "no sensitive attribute was given to the observer")
            return {}
        if np.unique(self.sensitive.values).size < 2:
            self.prov(fs, "fairness/discrimination_index", "n/a", "discrimination index (paper Eq. 7)",
                      f"the test split has a single {self.sensitive.name} group")
            return {}
        with torch.no_grad():
            model.eval()
            preds = torch.cat([predict(model(self.x_test[i : i + 1024])) for i in range(0, len(self.y_test), 1024)])
        result = group_fairness_report(self.y_test.cpu().numpy(), preds.cpu().numpy(), self.sensitive.values,
                                       attribute=self.sensitive.name, binary=summary.info.num_classes == 2)
        set_field(fs, "fairness/sensitive_attribute", self.sensitive.name)
        set_field(fs, "fairness/discrimination_index", result.index)
        set_field(fs, "fairness/demographic_parity_difference",
                  float("nan") if result.demographic_parity_difference is None else result.demographic_parity_difference)
        set_field(fs, "fairness/equalized_odds_difference",
                  float("nan") if result.equalized_odds_difference is None else result.equalized_odds_difference)
        self.prov(fs, "fairness/discrimination_index", "measured",
                  f"max over {self.sensitive.name} groups of |F1(group) - F1(rest)| of the final model's test predictions; "
                  "fairlearn demographic-parity and equalised-odds differences reported beside it",
                  attribute=self.sensitive.description)
        return result.to_dict()

    def _explainability(self, summary: RunSummary, fs: dict[str, Any], trained: list[RoundRecord],
                        run_folder: Path | None) -> None:
        simplification = self.declared.get("simplification")
        set_field(fs, "explainability/simplification", simplification)
        self.prov(fs, "explainability/simplification", "declared", "metrics.trust.declared.simplification",
                  None if simplification else "not declared: scores 0")
        figure = False
        if run_folder is not None and trained:
            try:
                figure = governance.write_dashboard(summary, Path(run_folder) / DASHBOARD_PNG)
            except Exception as exc:  # noqa: BLE001 - a figure must never break scoring
                log.warning("trust: dashboard figure failed (%s)", exc)
        items = {
            "participation_per_round": bool(trained),
            "model_status_per_round": any("aux_accuracy" in r.server_metrics for r in trained),
            "client_registry": len(np.asarray(summary.info.client_num_samples)) == summary.info.num_clients,
            "dashboard_figure": figure,
        }
        set_field(fs, "explainability/visualisation", governance.coverage(items, governance.VISUALISATION_ITEMS))
        self.prov(fs, "explainability/visualisation", "measured",
                  "share of the lifecycle-dashboard items available: " + ", ".join(
                      f"{k} {'yes' if items[k] else 'no'}" for k in governance.VISUALISATION_ITEMS))

    def _accountability(self, summary: RunSummary, fs: dict[str, Any]) -> dict[str, Any]:
        from fltrust.core.params import params_hash

        audit = governance.verify_model_chain(
            [r.server_metrics.get("model_hash") for r in summary.rounds],
            [r.server_metrics.get("chain_hash") for r in summary.rounds],
            final_model_hash=params_hash(summary.final_params) if summary.final_params else None,
        )
        set_field(fs, "accountability/audit_chain_verified", audit.verified)
        set_field(fs, "accountability/audit_rounds", audit.rounds)
        set_field(fs, "accountability/audit_head", audit.head or "")
        self.prov(fs, "accountability/algorithmic_auditing", "measured",
                  "the per-round model hash chain recomputed (sha256(previous + model hash)) and the final model "
                  f"checked as its last link: {audit.detail}")
        return audit.to_dict()

    def _federation(self, summary: RunSummary, fs: dict[str, Any], trained: list[RoundRecord]) -> None:
        counters = any(any(k in r.server_metrics for k in (*reliability.FAILURE_KEYS, "num_sampled")) for r in trained)
        info = summary.info
        items = {
            "client_id": True,
            "data_size": len(np.asarray(info.client_num_samples)) == info.num_clients,
            "label_distribution": np.asarray(info.client_class_counts).shape[:1] == (info.num_clients,),
            "participation_per_round": bool(trained),
            "computation_time": any("train_time_s" in r.client_metrics for r in trained),
            "traffic_bytes": any("bytes_sent" in r.client_metrics and "bytes_received" in r.client_metrics for r in trained),
            "connection_status": counters,
        }
        set_field(fs, "federation/client_registry", governance.coverage(items, governance.REGISTRY_ITEMS))
        self.prov(fs, "architectural_soundness/client_registry", "measured",
                  "share of the client-registry items the run record keeps: " + ", ".join(
                      f"{k} {'yes' if items[k] else 'no'}" for k in governance.REGISTRY_ITEMS))

        entries = [self.rounds[int(r.round)]["versions"] for r in trained
                   if "versions" in self.rounds.get(int(r.round), {})]
        if entries:
            cov = governance.co_versioning_coverage(entries, self.initial_global)
            if len(entries) < len(trained):
                cov *= len(entries) / len(trained)
            set_field(fs, "federation/co_versioning", cov)
            self.prov(fs, "architectural_soundness/model_co_versioning", "measured",
                      f"share of the {len(trained)} training rounds whose registry maps every returned client model "
                      "(sha256) to the global model it was trained from and the one it was aggregated into")
        else:
            self.prov(fs, "architectural_soundness/model_co_versioning", "missing", "local -> global version map",
                      "the engine passed no client models to the observers")
        replacement = self.declared.get("model_replacement")
        set_field(fs, "federation/model_replacement", replacement)
        self.prov(fs, "architectural_soundness/model_replacement", "declared", "metrics.trust.declared.model_replacement",
                  None if replacement else "not declared: scores 0 (the kit keeps every round's model hash, but "
                                           "replaces nothing)")

    def _sustainability(self, fs: dict[str, Any], energy: Any) -> dict[str, Any]:
        if energy is None:
            self.prov(fs, "sustainability/run_emissions", "missing", "CodeCarbon offline", "the tracker was not started")
            self.prov(fs, "sustainability/carbon_intensity", "missing", "CodeCarbon offline", "the tracker was not started")
            return {}
        set_field(fs, "sustainability/energy_kwh", energy.energy_kwh)
        set_field(fs, "sustainability/emissions_kg", energy.emissions_kg)
        set_field(fs, "sustainability/carbon_intensity", energy.carbon_intensity_g_per_kwh)
        set_field(fs, "sustainability/power_source", energy.power_source)
        span = "rounds 0..T (training and the per-round observers; not the post-training trust metrics)"
        if self.resumed_after is not None:
            span += f"; ONLY the part after the resume at round {self.resumed_after}"
        set_field(fs, "sustainability/method", f"{energy.method}; span: {span}")
        if energy.power_source == "n/a":
            for key in ("sustainability/run_emissions", "sustainability/carbon_intensity"):
                self.prov(fs, key, "missing", energy.method, energy.error or "CodeCarbon unavailable")
        else:
            self.prov(fs, "sustainability/run_emissions", "measured", f"{energy.method}; span: {span}",
                      "power ESTIMATED, not metered" if energy.is_estimate else None,
                      estimate=energy.is_estimate, power_source=energy.power_source)
            self.prov(fs, "sustainability/carbon_intensity", "declared",
                      f"grid intensity of the declared country {energy.country_iso_code} (CodeCarbon offline table)")
        return energy.to_dict()

    def _implemented(self, fs: dict[str, Any]) -> None:
        """Provenance of the prototype's 20 metrics (+2 code extras) and nebula's complexity metrics."""
        from fltrust.trust.scoring import load_definitions

        def measured_or_missing(key: str, field: str, method: str, why: str) -> None:
            if _finite(get_field(fs, field)) is None:
                self.prov(fs, key, "missing", method, why)
            else:
                self.prov(fs, key, "measured", method)

        config = "configuration"
        measured_or_missing("robustness/certified_robustness", "performance/test_clever",
                            "CLEVER-u (ART clever_u) over the CLEVER radius", "metrics.trust.clever_samples = 0")
        measured_or_missing("robustness/performance", "performance/test_acc_avg",
                            "mean client accuracy of the global model", "no training round")
        self.prov(fs, "robustness/personalization", "declared", f"{config}: strategy.name == 'ditto'")
        self.prov(fs, "robustness/scale", "declared", f"{config}: partition.num_clients")
        self.prov(fs, "privacy/differential_privacy", "declared", f"{config}: privacy.mode (the engine applies it)")
        measured_or_missing("privacy/entropy", "data/avg_entropy",
                            "normalised client-identification entropy from the clients' data sizes", "no clients")
        self.prov(fs, "privacy/global_privacy_risk", "declared",
                  f"{config}: privacy.target_epsilon and the number of clients, 1 / (1 + (N - 1) e^-eps)")
        measured_or_missing("fairness/selection_variation", "fairness/selection_cv",
                            "CV of the clients' selection rates", "no training round")
        measured_or_missing("fairness/accuracy_variation", "fairness/test_acc_cv",
                            "CV of the clients' accuracies", "no training round")
        measured_or_missing("fairness/class_imbalance", "fairness/class_imbalance",
                            "CV of the class counts (all classes)", "no class counts")
        model_type = get_field(fs, "configuration/training_model")
        self.prov(fs, "explainability/algorithmic_transparency", "declared",
                  f"literature rating of the model family {model_type!r} (prototype map)")
        self.prov(fs, "explainability/model_size", "measured", "trainable scalar parameters counted on the model")
        measured_or_missing("explainability/feature_importance", "performance/test_feature_importance_cv",
                            "SHAP: CV across features of mean |SHAP|", "metrics.trust.shap_samples = 0")
        for key in ("project_specs", "participants", "data", "configuration", "performance", "fairness", "system"):
            self.prov(fs, f"accountability/{key}", "measured", "share of the FactSheet fields filled in")
        self.prov(fs, "architectural_soundness/client_selector", "declared",
                  "metrics.trust.client_selector (random/uniform sampling scores 0)")
        algorithm = get_field(fs, "configuration/optimization_algorithm")
        score_map = load_definitions(mode="extended").get_metric(self.path("architectural_soundness/algorithm")).score_map
        if algorithm in score_map:
            self.prov(fs, "architectural_soundness/algorithm", "declared",
                      f"{config}: strategy {algorithm!r}, benchmark value {score_map[algorithm]} (nebula's scale)")
        else:
            self.prov(fs, "architectural_soundness/algorithm", "n/a", f"{config}: strategy {algorithm!r}",
                      f"{algorithm!r} has no benchmark value in nebula's or the prototype's map")
        for key in ("number_of_training_rounds", "client_selection_rate", "number_of_clients", "local_training_rounds"):
            self.prov(fs, f"sustainability/{key}", "declared", f"{config} (nebula's federation complexity)")
        self.prov(fs, "sustainability/avg_model_size", "measured", "trainable scalar parameters (nebula)")
        self.prov(fs, "sustainability/avg_dataset_size", "measured", "mean training samples per client (nebula)")
