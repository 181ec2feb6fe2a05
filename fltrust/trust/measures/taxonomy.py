r"""The packaged measures of extended mode: the taxonomy metrics the prototype left out, and nebula's sustainability.

Each function is registered with :func:`~fltrust.trust.measures.registry.measure`: it declares the
FactSheet fields it fills (the schema's extended fields are these declarations) and how they are
obtained, and returns their values from the finished run (:class:`~fltrust.trust.measures.registry.RunView`).
The extended observer (:class:`fltrust.trust.extended.ExtendedMetrics`) calls them in this order
and writes each one's provenance to the metrics that read its fields first (``extended.yaml``).

=============================  ==================================================  ============================
measure                        FactSheet fields                                     computed by
=============================  ==================================================  ============================
``encryption``                 ``privacy/secure_aggregation``                       engine report, else declared
``anonymisation``              ``privacy/anonymisation``                            declared
``information_leakage``        ``privacy/mia_*``                                    :mod:`.leakage`
``poisoning_defence``          ``robustness/poisoning_*``, ``byzantine_robust``     :mod:`.poisoning`
``empirical_robustness``       ``robustness/evasion_*``                             :mod:`.robustness` (ART)
``testing_coverage``           ``robustness/testing_coverage``                      declared
``system_reliability``         ``robustness/system_reliability``, rates             :mod:`.reliability`
``client_reputation``          ``robustness/client_reputation(s)``                  :mod:`.reputation`
``data_quality``               ``robustness/data_quality``, per client, flagged     :mod:`.reputation`
``discrimination_index``       ``fairness/sensitive_attribute``, index, gaps        :mod:`.discrimination`
``simplification``             ``explainability/simplification``                    declared
``visualisation``              ``explainability/visualisation``                     :mod:`.governance`
``algorithmic_auditing``       ``accountability/audit_*``                           :mod:`.governance`
``client_registry``            ``federation/client_registry``                       :mod:`.governance`
``model_co_versioning``        ``federation/co_versioning``                         :mod:`.governance`
``model_replacement``          ``federation/model_replacement``                     declared
``avg_dataset_size``           ``participants/avg_dataset_size``                    the run's client sizes
``run_emissions``              ``sustainability/energy_kwh``, emissions, method     :mod:`.sustainability`
``carbon_intensity``           ``sustainability/carbon_intensity``, country         :mod:`.sustainability`
=============================  ==================================================  ============================

``robustness/poisoning_*`` are filled by :func:`~fltrust.trust.measures.poisoning.record_attack_outcome`
from separate attack runs; the poisoning-defence measure reads them.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fltrust.trust.measures import governance, reliability, reputation
from fltrust.trust.measures.registry import Measured, RunView, declared_field, declared_measure, measure

log = logging.getLogger("fltrust")

DASHBOARD_PNG = "trust_dashboard.png"
"""The lifecycle dashboard figure written into the run folder (explainability's visualisation)."""

_F = declared_field


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _coverage(path: str, items: Mapping[str, bool], wanted: tuple[str, ...], what: str) -> Measured:
    """Score the share of the ``wanted`` items available, each named with yes / no in the method."""
    return Measured({path: governance.coverage(items, wanted)}, "measured",
                    f"{what}: " + ", ".join(f"{k} {'yes' if items[k] else 'no'}" for k in wanted))


def _nan_if_none(value: Any) -> Any:
    return float("nan") if value is None else value


# -- privacy (paper Sec. 3.1) ------------------------------------------------------------------


@measure("privacy/secure_aggregation", "str", who="server", phase="pre", status="declared",
         source="privacy.secure_aggregation or declared.encryption",
         provenance="secure aggregation: the engine's report, else the configuration or metrics.trust.declared")
def encryption(run: RunView) -> Measured:
    """Secure aggregation: ``secagg+`` when the engine reports running it, else what is configured or declared.

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
    """
    if any(_finite(r.server_metrics.get("secure_aggregation")) for r in run.summary.rounds):
        return Measured({"privacy/secure_aggregation": "secagg+"}, "measured",
                        "the engine reported secure aggregation (server_metrics['secure_aggregation'] = 1) in the rounds")
    configured = run.inputs.secure_aggregation
    value = configured if configured not in (None, "") else run.declared.get("encryption", "none")
    value = "secagg+" if str(value).lower() in ("secagg+", "secaggplus", "secagg") else str(value).lower()
    source = "privacy.secure_aggregation" if configured not in (None, "") else "metrics.trust.declared.encryption"
    return Measured({"privacy/secure_aggregation": value}, "declared", f"{source} = {value!r}",
                    "the engine did not report running secure aggregation in any round")


anonymisation = declared_measure("privacy/anonymisation", what="anonymisation technique")


@measure("privacy/mia_auc", source="leakage.membership_inference: attack AUC",
         provenance="loss-threshold membership inference", output="privacy",
         also=(_F("privacy/mia_risk", "number", "2 |AUC - 0.5|"),
               _F("privacy/mia_rule_based_advantage", "number", "ART rule-based attack TPR - FPR"),
               _F("privacy/mia_samples", "number", "members (= non-members) in the attack sample")))
def information_leakage(run: RunView) -> Measured:
    """Membership inference on the final model: the clients' training rows against test rows.

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
        ``missing`` when switched off, without client rows, or without a training round.
    """
    from fltrust.trust.measures.leakage import membership_inference

    settings, participated = run.settings, run.participated
    if settings.mia_samples <= 0 or run.inputs.member_sampler is None or not participated:
        why = ("metrics.trust.mia_samples = 0" if settings.mia_samples <= 0 else
               "no client training rows were given to the observer" if run.inputs.member_sampler is None else
               "no client took part")
        return Measured(status="missing", reason=why, output={})
    x_m, y_m = run.inputs.member_sampler(participated, int(settings.mia_samples), run.seed)
    mia = membership_inference(run.model, x_m, y_m, run.x_test, run.y_test, num_samples=int(settings.mia_samples),
                               seed=run.seed, nb_classes=run.summary.info.num_classes, use_art=True)
    values = {"privacy/mia_auc": mia.auc, "privacy/mia_risk": mia.risk,
              "privacy/mia_rule_based_advantage": _nan_if_none(mia.rule_based_advantage),
              "privacy/mia_samples": mia.num_members}
    return Measured(values, "measured",
                    f"loss-threshold membership inference (Yeom et al. 2018) on {mia.num_members} training rows of "
                    f"the clients that took part vs {mia.num_nonmembers} test rows; risk = 2|AUC - 0.5| "
                    f"(sklearn roc_auc_score); ART rule-based attack as a cross-check", output=mia.to_dict())


# -- robustness (paper Sec. 3.2) ---------------------------------------------------------------


@measure("robustness/poisoning_recovery", source="poisoning.poisoning_recovery (attack runs)",
         provenance="recovery = clip((acc_defended - acc_undefended) / (acc_clean - acc_undefended), 0, 1) "
                    "from attack runs",
         also=(_F("robustness/poisoning_retention", "number", "acc under attack / clean acc (attack runs)"),
               _F("robustness/poisoning_accuracy_drop", "number", "clean acc - acc under attack"),
               _F("robustness/attack_success_rate", "number", "attack runs"),
               _F("robustness/attack", "str", "description of the attack runs"),
               _F("robustness/byzantine_robust", "bool", "aggregator in poisoning.BYZANTINE_ROBUST_AGGREGATORS",
                  phase="pre")))
def poisoning_defence(run: RunView) -> Measured:
    """Poisoning defence: the recovery that attack runs recorded, else whether the aggregator is robust.

    The attack fields are written by :func:`~fltrust.trust.measures.poisoning.record_attack_outcome`;
    this measure writes ``robustness/byzantine_robust``.

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
    """
    name, robust = run.inputs.strategy, bool(run.inputs.byzantine_robust)
    values = {"robustness/byzantine_robust": robust}
    if _finite(run.field("robustness/poisoning_recovery")) is not None:
        return Measured(values, "measured")
    return Measured(values, "declared", f"Byzantine-robust aggregator in use: strategy.name = {name!r} -> {int(robust)}",
                    "no poisoning-attack runs were supplied (poisoning.record_attack_outcome)")


@measure("robustness/evasion_clean_accuracy", source="robustness.evasion_accuracy",
         provenance="accuracy retention under attack", output="robustness/evasion",
         also=(_F("robustness/evasion_fgsm_accuracy", "number", "ART FastGradientMethod"),
               _F("robustness/evasion_pgd_accuracy", "number", "ART ProjectedGradientDescent"),
               _F("robustness/evasion_eps", "number", "metrics.trust.evasion_eps (L-inf)"),
               _F("robustness/evasion_retention", "number", "PGD acc / clean acc")))
def empirical_robustness(run: RunView) -> Measured:
    """ART FGSM / PGD evasion of the final model on a seeded test sample (and the poisoning retention).

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
        ``missing`` when evasion is switched off and no attack run was recorded.
    """
    import torch

    from fltrust.trust.measures.robustness import evasion_accuracy

    settings, values, output = run.settings, {}, None
    if settings.evasion_samples > 0:
        order = np.random.default_rng([run.seed, 59]).permutation(len(run.y_test))[: int(settings.evasion_samples)]
        index = torch.as_tensor(np.sort(order), device=run.y_test.device)
        clip = (float(run.x_test.min()), float(run.x_test.max()))
        evasion = evasion_accuracy(run.model, run.x_test[index], run.y_test[index], nb_classes=run.summary.info.num_classes,
                                   eps=settings.evasion_eps, pgd_steps=settings.evasion_pgd_steps, clip_values=clip)
        for key in ("clean_accuracy", "fgsm_accuracy", "pgd_accuracy", "eps", "retention"):
            values[f"robustness/evasion_{key}"] = getattr(evasion, key)
        output = evasion.to_dict()
    retention = _finite(run.field("robustness/poisoning_retention"))
    parts = (["PGD evasion retention acc_PGD / acc_clean (ART, L-inf eps "
              f"{settings.evasion_eps}, {settings.evasion_pgd_steps} steps)"] if output is not None else [])
    parts += ["poisoning retention acc_attacked / acc_clean"] if retention is not None else []
    if parts:
        return Measured(values, "measured", "mean of: " + "; ".join(parts), output=output)
    return Measured(values, "missing", reason="metrics.trust.evasion_samples = 0 and no poisoning-attack runs were supplied")


testing_coverage = declared_measure("robustness/testing_coverage", "number",
                                    what="testing coverage of the FL system (a fraction)")


@measure("robustness/system_reliability", source="reliability.system_reliability",
         provenance="1 - (dropped + failed + timed out) / sampled, from the engine's per-round counters",
         output="robustness/reliability",
         also=(_F("robustness/dropout_rate", "number", "num_dropped / num_sampled"),
               _F("robustness/error_rate", "number", "num_failed / num_sampled"),
               _F("robustness/timeout_rate", "number", "num_timed_out / num_sampled")))
def system_reliability(run: RunView) -> Measured:
    """Share of sampled clients that neither dropped out, failed nor timed out.

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
        ``declared`` (every counter 0) when the engine reports no counters.
    """
    rel = reliability.system_reliability((len(r.client_ids), r.server_metrics) for r in run.trained)
    values = {"robustness/system_reliability": rel.reliability, "robustness/dropout_rate": rel.dropout_rate,
              "robustness/error_rate": rel.error_rate, "robustness/timeout_rate": rel.timeout_rate}
    if rel.counters_reported:
        return Measured(values, "measured", output=rel.to_dict())
    return Measured(values, "declared", "1 - (dropped + failed + timed out) / sampled with every counter 0",
                    "declared / none injected: the engine reported no num_sampled / num_dropped / num_failed / "
                    "num_timed_out counters, so no failure was observed or injected", output=rel.to_dict())


def contribution_rounds(run: RunView) -> list[reputation.ContributionRound]:
    """Each training round's contributions: rewards, training and reference losses, FedSV when recorded.

    Parameters
    ----------
    run : RunView

    Returns
    -------
    list of ContributionRound
    """
    rounds = []
    for r in run.trained:
        extra = run.rounds.get(int(r.round), {})
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


@measure("robustness/client_reputation", source="reputation.client_reputation (mean)",
         provenance="beta reputation", output="robustness/reputation",
         also=(_F("robustness/client_reputations", "list", "per-client reputation (null = never took part)"),))
def client_reputation(run: RunView) -> Measured:
    """Mean beta reputation of the clients, from their returned models' losses on the reference sample.

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
        ``missing`` when the engine passed no client models.
    """
    tolerance = run.settings.reputation_tolerance
    rep = reputation.client_reputation(contribution_rounds(run), run.summary.info.num_clients, tolerance=tolerance)
    values = {"robustness/client_reputation": rep.score, "robustness/client_reputations": rep.to_dict()["per_client"]}
    if not np.isfinite(rep.score):
        return Measured(values, "missing", reason="the engine passed no client models to the observers "
                                                  "(RoundRecord.client_params)", output=rep.to_dict())
    return Measured(values, "measured",
                    "mean beta reputation (alpha 1, beta 2, W 2, a 0.5) of the clients; an interaction is positive when "
                    f"the returned model's loss on the server's {len(run.y_ref)}-row reference sample is <= "
                    f"(1 + {tolerance}) x the peers' median",
                    details={"fedsv": "reported" if rep.fedsv_mean is not None else "not recorded (fairness observer off)"},
                    output=rep.to_dict())


@measure("robustness/data_quality", source="reputation.data_quality (mean)",
         provenance="label-agreement data quality", output="robustness/data_quality",
         also=(_F("robustness/client_data_quality", "list", "per-client data quality"),
               _F("robustness/low_quality_clients", "list", "clients with data quality < 0.8")))
def data_quality(run: RunView) -> Measured:
    """Mean label-agreement quality of the clients' data, each component capped at 1.

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
        ``missing`` when the engine recorded neither ``reward_accuracy`` nor ``train_loss``.
    """
    dq = reputation.data_quality(contribution_rounds(run), run.summary.info.num_clients)
    values = {"robustness/data_quality": dq.score, "robustness/client_data_quality": dq.to_dict()["per_client"],
              "robustness/low_quality_clients": dq.flagged}
    if not dq.components:
        return Measured(values, "missing", reason="the engine recorded neither reward_accuracy nor train_loss",
                        output=dq.to_dict())
    parts = {"agreement": "received global model's accuracy on the client's rows / peers' median",
             "fit": "peers' median training loss / client's training loss"}
    return Measured(values, "measured", "mean over clients of the label-agreement quality ("
                    + " + ".join(parts[c] for c in dq.components) + "), each capped at 1",
                    details={"flagged": dq.flagged}, output=dq.to_dict())


# -- fairness (paper Sec. 3.3) -----------------------------------------------------------------


@measure("fairness/sensitive_attribute", "str", phase="pre", source="discrimination.sensitive_attribute",
         provenance="discrimination index (paper Eq. 7)", output="fairness",
         also=(_F("fairness/discrimination_index", "number", "max |F1(group) - F1(rest)|"),
               _F("fairness/demographic_parity_difference", "number", "fairlearn"),
               _F("fairness/equalized_odds_difference", "number", "fairlearn")))
def discrimination_index(run: RunView) -> Measured:
    """Worst F1 gap between a sensitive group and the rest, on the final model's test predictions.

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
        ``n/a`` for CIFAR-10 or a single group, ``missing`` without a sensitive attribute.
    """
    import torch

    from fltrust.core.evaluation import predict
    from fltrust.trust.measures.discrimination import group_fairness_report

    sensitive = run.inputs.sensitive
    if sensitive is None:
        name = str(run.summary.info.dataset.get("name", run.inputs.data_name)).removeprefix("synthetic_")
        if name == "cifar10":
            return Measured(status="n/a", reason="CIFAR-10 has no attribute besides the label to define groups", output={})
        return Measured(status="missing", reason="no sensitive attribute was given to the observer", output={})
    if np.unique(sensitive.values).size < 2:
        return Measured(status="n/a", reason=f"the test split has a single {sensitive.name} group", output={})
    with torch.no_grad():
        run.model.eval()
        preds = torch.cat([predict(run.model(run.x_test[i : i + 1024])) for i in range(0, len(run.y_test), 1024)])
    result = group_fairness_report(run.y_test.cpu().numpy(), preds.cpu().numpy(), sensitive.values,
                                   attribute=sensitive.name, binary=run.summary.info.num_classes == 2)
    values = {"fairness/sensitive_attribute": sensitive.name, "fairness/discrimination_index": result.index,
              "fairness/demographic_parity_difference": _nan_if_none(result.demographic_parity_difference),
              "fairness/equalized_odds_difference": _nan_if_none(result.equalized_odds_difference)}
    return Measured(values, "measured",
                    f"max over {sensitive.name} groups of |F1(group) - F1(rest)| of the final model's test predictions; "
                    "fairlearn demographic-parity and equalised-odds differences reported beside it",
                    details={"attribute": sensitive.description}, output=result.to_dict())


# -- explainability (paper Sec. 3.4) -----------------------------------------------------------


simplification = declared_measure("explainability/simplification",
                                  what="model simplification (pruning, quantisation, distillation)")


@measure("explainability/visualisation", source="governance.coverage(VISUALISATION_ITEMS)",
         provenance="share of the lifecycle-dashboard items available")
def visualisation(run: RunView) -> Measured:
    """Share of the paper's lifecycle-dashboard items the run provides (the figure is drawn into the run folder).

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
    """
    trained, figure = run.trained, False
    if run.run_folder is not None and trained:
        try:
            figure = governance.write_dashboard(run.summary, Path(run.run_folder) / DASHBOARD_PNG)
        except Exception as exc:  # noqa: BLE001 - a figure must never break scoring
            log.warning("trust: dashboard figure failed (%s)", exc)
    info = run.summary.info
    items = {
        "participation_per_round": bool(trained),
        "model_status_per_round": any("aux_accuracy" in r.server_metrics for r in trained),
        "client_registry": len(np.asarray(info.client_num_samples)) == info.num_clients,
        "dashboard_figure": figure,
    }
    return _coverage("explainability/visualisation", items, governance.VISUALISATION_ITEMS,
                     "share of the lifecycle-dashboard items available")


# -- accountability (paper Sec. 3.5) -----------------------------------------------------------


@measure("accountability/audit_chain_verified", "bool", source="governance.verify_model_chain",
         provenance="the per-round model hash chain recomputed", output="accountability",
         also=(_F("accountability/audit_rounds", "number", "links of the model hash chain"),
               _F("accountability/audit_head", "str", "last chain hash")))
def algorithmic_auditing(run: RunView) -> Measured:
    """Recompute the run's model hash chain and check that the final model is its last link.

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
    """
    from fltrust.core.params import params_hash

    summary = run.summary
    audit = governance.verify_model_chain(
        [r.server_metrics.get("model_hash") for r in summary.rounds],
        [r.server_metrics.get("chain_hash") for r in summary.rounds],
        final_model_hash=params_hash(summary.final_params) if summary.final_params else None,
    )
    values = {"accountability/audit_chain_verified": audit.verified, "accountability/audit_rounds": audit.rounds,
              "accountability/audit_head": audit.head or ""}
    return Measured(values, "measured", "the per-round model hash chain recomputed (sha256(previous + model hash)) "
                    f"and the final model checked as its last link: {audit.detail}", output=audit.to_dict())


# -- federation (paper Sec. 3.6) ---------------------------------------------------------------


@measure("federation/client_registry", source="governance.coverage(REGISTRY_ITEMS)",
         provenance="share of the client-registry items the run record keeps")
def client_registry(run: RunView) -> Measured:
    """Share of the paper's client-registry items (id, data size, labels, participation, ...) the record keeps.

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
    """
    trained, info = run.trained, run.summary.info
    counters = any(any(k in r.server_metrics for k in (*reliability.FAILURE_KEYS, "num_sampled")) for r in trained)
    items = {
        "client_id": True,
        "data_size": len(np.asarray(info.client_num_samples)) == info.num_clients,
        "label_distribution": np.asarray(info.client_class_counts).shape[:1] == (info.num_clients,),
        "participation_per_round": bool(trained),
        "computation_time": any("train_time_s" in r.client_metrics for r in trained),
        "traffic_bytes": any("bytes_sent" in r.client_metrics and "bytes_received" in r.client_metrics for r in trained),
        "connection_status": counters,
    }
    return _coverage("federation/client_registry", items, governance.REGISTRY_ITEMS,
                     "share of the client-registry items the run record keeps")


@measure("federation/co_versioning", source="governance.co_versioning_coverage",
         provenance="local -> global version map")
def model_co_versioning(run: RunView) -> Measured:
    """Share of training rounds whose registry maps every returned model to its global models.

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
        ``missing`` when the engine passed no client models.
    """
    trained = run.trained
    entries = [run.rounds[int(r.round)]["versions"] for r in trained if "versions" in run.rounds.get(int(r.round), {})]
    if not entries:
        return Measured(status="missing", reason="the engine passed no client models to the observers")
    cov = governance.co_versioning_coverage(entries, run.initial_global)
    if len(entries) < len(trained):
        cov *= len(entries) / len(trained)
    return Measured({"federation/co_versioning": cov}, "measured",
                    f"share of the {len(trained)} training rounds whose registry maps every returned client model "
                    "(sha256) to the global model it was trained from and the one it was aggregated into")


model_replacement = declared_measure(
    "federation/model_replacement", what="mechanism that replaces a degrading global model",
    missing="not declared: scores 0 (the kit keeps every round's model hash, but replaces nothing)")


# -- sustainability (nebula, trust spec 10, docs/references.md#trust-10) -----------------------


@measure("participants/avg_dataset_size", who="clients -> server", phase="pre",
         source="mean training samples per client", provenance="mean training samples per client (nebula)")
def avg_dataset_size(run: RunView) -> float:
    """Mean training samples per registered client (nebula's federation complexity).

    Parameters
    ----------
    run : RunView

    Returns
    -------
    float
        NaN without clients.
    """
    sizes = np.asarray(run.summary.info.client_num_samples, dtype=float)
    return float(sizes.mean()) if sizes.size else float("nan")


@measure("sustainability/energy_kwh", source="CodeCarbon offline", provenance="CodeCarbon offline",
         output="sustainability",
         also=(_F("sustainability/emissions_kg", "number", "CodeCarbon offline"),
               _F("sustainability/power_source", "str", "meter / partial / estimate"),
               _F("sustainability/method", "text", "how energy and emissions were obtained")))
def run_emissions(run: RunView) -> Measured:
    """Energy and CO2-equivalent emissions of rounds 0..T (CodeCarbon offline).

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
        ``missing`` when the tracker did not run or CodeCarbon is unavailable.
    """
    energy = run.energy
    if energy is None:
        return Measured(status="missing", reason="the tracker was not started", output={})
    span = "rounds 0..T (training and the per-round observers; not the post-training trust metrics)"
    if run.resumed_after is not None:
        span += f"; ONLY the part after the resume at round {run.resumed_after}"
    values = {"sustainability/energy_kwh": energy.energy_kwh, "sustainability/emissions_kg": energy.emissions_kg,
              "sustainability/power_source": energy.power_source,
              "sustainability/method": f"{energy.method}; span: {span}"}
    if energy.power_source == "n/a":
        return Measured(values, "missing", energy.method, energy.error or "CodeCarbon unavailable", output=energy.to_dict())
    return Measured(values, "measured", f"{energy.method}; span: {span}",
                    "power ESTIMATED, not metered" if energy.is_estimate else None,
                    details={"estimate": energy.is_estimate, "power_source": energy.power_source},
                    output=energy.to_dict())


@measure("sustainability/carbon_intensity", source="g CO2eq / kWh = emissions / energy", status="declared",
         provenance="CodeCarbon offline",
         also=(_F("sustainability/country_iso_code", "str", "metrics.trust.country_iso_code", phase="pre"),))
def carbon_intensity(run: RunView) -> Measured:
    """Carbon intensity of the grid of the declared country (CodeCarbon's offline table).

    Parameters
    ----------
    run : RunView

    Returns
    -------
    Measured
    """
    energy = run.energy
    values: dict[str, Any] = {"sustainability/country_iso_code": run.settings.country_iso_code}
    if energy is None:
        return Measured(values, "missing", reason="the tracker was not started")
    values["sustainability/carbon_intensity"] = energy.carbon_intensity_g_per_kwh
    if energy.power_source == "n/a":
        return Measured(values, "missing", energy.method, energy.error or "CodeCarbon unavailable")
    return Measured(values, "declared",
                    f"grid intensity of the declared country {energy.country_iso_code} (CodeCarbon offline table)")


# -- the provenance of the template's metrics (the prototype's 20 and nebula's complexity) -------


def template_provenance(run: RunView, score_maps: Mapping[str, Mapping[str, float] | None]) -> dict[str, tuple]:
    """Provenance of the packaged metrics that read the FactSheet template's fields (not a measure's).

    Their values come from the base observer (configuration, statistics, CLEVER, SHAP); this says,
    per ``pillar/metric`` of ``extended.yaml``, whether each was measured, declared or missing.

    Parameters
    ----------
    run : RunView
        The finished run (its FactSheet is read).
    score_maps : mapping
        ``pillar/metric`` -> the metric's score map in the definitions in use (the aggregation
        algorithm's benchmark values); absent = not in the definitions.

    Returns
    -------
    dict
        ``pillar/metric`` -> ``(status, method, reason)``.
    """
    out: dict[str, tuple] = {}

    def measured_or_missing(key: str, path: str, method: str, why: str) -> None:
        out[key] = ("missing", method, why) if _finite(run.field(path)) is None else ("measured", method, None)

    config = "configuration"
    measured_or_missing("robustness/certified_robustness", "performance/test_clever",
                        "CLEVER-u (ART clever_u) over the CLEVER radius", "metrics.trust.clever_samples = 0")
    measured_or_missing("robustness/performance", "performance/test_acc_avg",
                        "mean client accuracy of the global model", "no training round")
    out["robustness/personalization"] = ("declared", f"{config}: strategy.name == 'ditto'", None)
    out["robustness/scale"] = ("declared", f"{config}: partition.num_clients", None)
    out["privacy/differential_privacy"] = ("declared", f"{config}: privacy.mode (the engine applies it)", None)
    measured_or_missing("privacy/entropy", "data/avg_entropy",
                        "normalised client-identification entropy from the clients' data sizes", "no clients")
    out["privacy/global_privacy_risk"] = (
        "declared", f"{config}: privacy.target_epsilon and the number of clients, 1 / (1 + (N - 1) e^-eps)", None)
    measured_or_missing("fairness/selection_variation", "fairness/selection_cv",
                        "CV of the clients' selection rates", "no training round")
    measured_or_missing("fairness/accuracy_variation", "fairness/test_acc_cv",
                        "CV of the clients' accuracies", "no training round")
    measured_or_missing("fairness/class_imbalance", "fairness/class_imbalance",
                        "CV of the class counts (all classes)", "no class counts")
    out["explainability/algorithmic_transparency"] = (
        "declared", f"literature rating of the model family {run.field('configuration/training_model')!r} "
                    "(prototype map)", None)
    out["explainability/model_size"] = ("measured", "trainable scalar parameters counted on the model", None)
    measured_or_missing("explainability/feature_importance", "performance/test_feature_importance_cv",
                        "SHAP: CV across features of mean |SHAP|", "metrics.trust.shap_samples = 0")
    for key in ("project_specs", "participants", "data", "configuration", "performance", "fairness", "system"):
        out[f"accountability/{key}"] = ("measured", "share of the FactSheet fields filled in", None)
    out["architectural_soundness/client_selector"] = (
        "declared", "metrics.trust.client_selector (random/uniform sampling scores 0)", None)
    algorithm = run.field("configuration/optimization_algorithm")
    score_map = score_maps.get("architectural_soundness/algorithm") or {}
    if algorithm in score_map:
        out["architectural_soundness/algorithm"] = (
            "declared", f"{config}: strategy {algorithm!r}, benchmark value {score_map[algorithm]} (nebula's scale)", None)
    else:
        out["architectural_soundness/algorithm"] = (
            "n/a", f"{config}: strategy {algorithm!r}", f"{algorithm!r} has no benchmark value in nebula's or the "
                                                         "prototype's map")
    for key in ("number_of_training_rounds", "client_selection_rate", "number_of_clients", "local_training_rounds"):
        out[f"sustainability/{key}"] = ("declared", f"{config} (nebula's federation complexity)", None)
    out["sustainability/avg_model_size"] = ("measured", "trainable scalar parameters (nebula)", None)
    return out
