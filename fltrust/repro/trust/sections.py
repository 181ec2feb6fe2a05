"""The sections of the FederatedTrust RESULTS.md that go beyond paper vs ours, each with its template.

======================  ============================  =====================================================
section                 template                      table (one row per)
======================  ============================  =====================================================
NbAFL noise (exp 2-3)   ``trust/dp.md.j2``            :func:`dp_noise_frame`: NbAFL experiment
extended mode           ``trust/extended.md.j2``      :func:`extended_frame`: experiment with an extended score
attack ablation         ``trust/ablation.md.j2``      :func:`ablation_frame`: run of :func:`load_ablation`
======================  ============================  =====================================================

:func:`fltrust.repro.trust.report.results_markdown` includes the three templates with the
variables built here (:func:`dp_section`, :func:`extended_section`, :func:`ablation_sections`);
:func:`dp_markdown`, :func:`extended_markdown` and :func:`ablation_markdown` render one section
alone. Cells are display strings made with the formatters of :mod:`fltrust.repro.markdown`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fltrust.names import EXTENDED_TRUST_MODE
from fltrust.repro.markdown import DASH, fmt, is_missing, lines, render
from fltrust.repro.trust.ablation import ABLATION_FILE

__all__ = [
    "COLLAPSE_ACCURACY",
    "EXTENDED_METRICS",
    "EXTENDED_PILLARS",
    "FEMNIST_CHANCE",
    "ablation_frame",
    "ablation_markdown",
    "ablation_sections",
    "dp_markdown",
    "dp_noise_frame",
    "dp_section",
    "extended_frame",
    "extended_markdown",
    "extended_section",
    "load_ablation",
]

# ---------------------------------------------------------------------------------------------
# Differential privacy: our server-side calibration vs NbAFL (Wei et al. 2020)
# ---------------------------------------------------------------------------------------------

FEMNIST_CHANCE = 1 / 62
"""Accuracy of a model that guesses among FEMNIST's 62 classes."""
COLLAPSE_ACCURACY = 3 * FEMNIST_CHANCE
"""A DP run whose final server accuracy stays below this has collapsed to about chance."""


def _mean(values: Sequence[Any]) -> float:
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return float(sum(finite) / len(finite)) if finite else float("nan")


def dp_noise_frame(results: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Noise against model size per NbAFL experiment, from each result's ``dp_trace``.

    Columns: ``experiment``, ``m / N, T, epsilon`` parts, ``final_aux_accuracy``, ``collapsed``
    (final accuracy below :data:`COLLAPSE_ACCURACY`), and the per-round means of the expected
    noise norm on the aggregate (``noise``), of the model's own change (``update``) with the
    noise in it, their ratio, and the model's weight norm in the first and last round.
    """
    rows = []
    for res in results:
        trace = res.get("dp_trace")
        if not trace:
            continue
        s = res["settings"]
        acc = res.get("final_aux_accuracy")
        noise, update = _mean(trace["nbafl_aggregate_noise_norm"]), _mean(trace["update_norm"])
        rows.append({
            "experiment": res["experiment"], "m": s["clients_per_round"], "N": s["num_clients"],
            "T": s["rounds"], "epsilon": s["epsilon"], "final_aux_accuracy": acc,
            "collapsed": acc is not None and acc < COLLAPSE_ACCURACY,
            "noise": noise, "update": update, "noise_over_update": noise / update if update else float("nan"),
            "upload_noise": _mean(trace["nbafl_upload_noise_norm"]),
            "weight_norm_first": trace["weight_norm"][0], "weight_norm_last": trace["weight_norm"][-1],
        })
    return pd.DataFrame(rows)


def dp_section(results: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Variables of ``trust/dp.md.j2``: None without an NbAFL experiment.

    Parameters
    ----------
    results : sequence of dict
        Experiment results; those without a ``dp_trace`` are left out.

    Returns
    -------
    dict or None
        ``collapsed`` (the collapsed experiments, joined), ``threshold`` and ``table`` (display strings).
    """
    frame = dp_noise_frame(results)
    if frame.empty:
        return None
    collapsed = frame[frame["collapsed"]]["experiment"].tolist()
    rows = [[r.experiment, f"{r.m} / {r.N}, {r.T}, {r.epsilon:g}", fmt(r.final_aux_accuracy, 3),
             "yes" if r.collapsed else "no", f"{r.upload_noise:.2f}", f"{r.noise:.2f}", f"{r.update:.2f}",
             f"{r.noise_over_update:.2f}", f"{r.weight_norm_first:.1f} → {r.weight_norm_last:.1f}"]
            for r in frame.itertuples()]
    return {
        "collapsed": " and ".join(collapsed),
        "threshold": f"{COLLAPSE_ACCURACY:.3f}",
        "table": pd.DataFrame(rows, columns=[
            "exp", "m / N, T, ε", "server acc.", "collapsed", "‖noise‖ per upload", "‖noise‖ on the mean",
            "‖change‖ per round", "noise / change", "‖w‖ round 1 → T"]),
    }


def dp_markdown(results: Sequence[dict[str, Any]]) -> list[str]:
    """Lines of the RESULTS.md section on the NbAFL runs of experiments 2-3 (:func:`dp_noise_frame`).

    Parameters
    ----------
    results : sequence of dict
        Experiment results; those without a ``dp_trace`` are left out.

    Returns
    -------
    list of str
        The section's lines (template ``trust/dp.md.j2``), the last one empty; [] without an NbAFL run.
    """
    return lines(render("trust/dp.md.j2", dp=dp_section(results)))


# ---------------------------------------------------------------------------------------------
# Extended mode: the 36-metric taxonomy plus sustainability
# ---------------------------------------------------------------------------------------------

EXTENDED_PILLARS = ("robustness", "privacy", "fairness", "explainability", "accountability",
                    "architectural_soundness", "sustainability")
EXTENDED_METRICS = ("robustness/client_reputation", "robustness/data_quality", "robustness/poisoning_defence",
                    "robustness/empirical_robustness", "privacy/information_leakage", "fairness/discrimination_index")
"""The extended-mode metrics shown next to the pillars (:func:`extended_frame` has their scores)."""


def extended_frame(results: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Extended-mode trust and pillar scores, one row per experiment with an extended score."""
    rows = []
    for res in results:
        summary = res["modes"].get(EXTENDED_TRUST_MODE)
        if summary is None:
            continue
        row = {"experiment": res["experiment"], "synthetic": bool(res["synthetic"]), "quick": bool(res["quick"]),
               "trust_score": summary["trust_score"]}
        row.update({p: summary["pillars"].get(p) for p in EXTENDED_PILLARS})
        row.update({key: (summary["metrics"].get(key) or {}).get("score") for key in EXTENDED_METRICS})
        ext = res.get("extended_run") or {}
        rows.append({**row, "server_accuracy": ext.get("final_aux_accuracy"), "run_id": ext.get("run_id"),
                     "provenance": ext.get("provenance") or {},
                     "measured_in": ext.get("measured_in", "companion")})  # results before the observer rode along
    return pd.DataFrame(rows)


def extended_section(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Variables of ``trust/extended.md.j2``: the table (None without an extended score) and the collapsed runs.

    Parameters
    ----------
    results : sequence of dict
        Experiment results; those without an extended-mode score are left out of the table.

    Returns
    -------
    dict
        ``table`` (display strings, or None), ``collapsed`` (experiments at chance accuracy, joined),
        ``in_run`` and ``companion`` (the experiments whose extended FactSheet was measured in the run
        itself or by a companion run, joined).
    """
    frame = extended_frame(results)
    if frame.empty:
        return {"table": None, "collapsed": "", "in_run": "", "companion": ""}
    header = ["experiment", "server acc.", "trust"] \
        + [p.replace("architectural_soundness", "federation") for p in EXTENDED_PILLARS] \
        + ["client reputation", "data quality", "poisoning defence", "empirical robustness", "information leakage",
           "discrimination", "provenance (measured / declared / missing / n/a)"]
    rows = []
    for _, r in frame.iterrows():
        name = r["experiment"] + (" (SYNTHETIC)" if r["synthetic"] else "") + (" (QUICK)" if r["quick"] else "")
        prov = r["provenance"]
        rows.append([name, fmt(r["server_accuracy"], 3), fmt(r["trust_score"], 3)]
                    + [fmt(r[p], 3) for p in EXTENDED_PILLARS]
                    + [fmt(r[k], 3) for k in EXTENDED_METRICS]
                    + [" / ".join(str(prov.get(k, 0)) for k in ("measured", "declared", "missing", "n/a"))])
    collapsed = [r["experiment"] for _, r in frame.iterrows()
                 if not is_missing(r["server_accuracy"]) and r["server_accuracy"] < 0.05]
    where = {kind: ", ".join(frame.loc[frame["measured_in"] == kind, "experiment"]) for kind in ("run", "companion")}
    return {"table": pd.DataFrame(rows, columns=header), "collapsed": ", ".join(collapsed),
            "in_run": where["run"], "companion": where["companion"]}


def extended_markdown(results: Sequence[dict[str, Any]]) -> list[str]:
    """Lines of the RESULTS.md section on the extended-mode scores (:func:`extended_frame`).

    Parameters
    ----------
    results : sequence of dict
        Experiment results; those without an extended-mode score are left out of the table.

    Returns
    -------
    list of str
        The section's lines (template ``trust/extended.md.j2``), the last one empty.
    """
    return lines(render("trust/extended.md.j2", extended=extended_section(results)))


# ---------------------------------------------------------------------------------------------
# The attack ablation (fltrust.repro.trust.ablation)
# ---------------------------------------------------------------------------------------------


def load_ablation(results_dir: str | Path) -> dict[str, Any] | None:
    """``attack_ablation.json`` of a results folder (:func:`fltrust.repro.trust.ablation.attack_ablation`)."""
    import json

    path = Path(results_dir) / ABLATION_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def ablation_frame(ablation: dict[str, Any] | None) -> pd.DataFrame:
    """The attack ablation's runs, one row each: run, strategy, accuracy, recovery, retention, trust
    score and robustness pillar (empty without an ablation).

    Parameters
    ----------
    ablation : dict or None
        :func:`load_ablation`'s result.

    Returns
    -------
    pandas.DataFrame
        Columns ``run, strategy, test_accuracy, recovery, retention, trust_score, robustness``.
    """
    columns = ["run", "strategy", "test_accuracy", "recovery", "retention", "trust_score", "robustness"]
    rows = [{**{k: r[k] for k in columns[:-1]}, "robustness": r["pillars"].get("robustness")}
            for r in (ablation or {}).get("runs", [])]
    return pd.DataFrame(rows, columns=columns)


def ablation_sections(ablation: dict[str, Any] | None, *, variant: bool = False) -> list[dict[str, Any]]:
    """Variables of ``trust/ablation.md.j2``: the ablation, then each of its ``variants`` (depth first).

    Parameters
    ----------
    ablation : dict or None
        :func:`load_ablation`; None gives no section.
    variant : bool
        ``ablation`` is a variant sub-section.

    Returns
    -------
    list of dict
        One entry per (sub-)section: its heading facts and its ``table`` of display strings.
    """
    if not ablation:
        return []
    rows = []
    for r in ablation["runs"]:
        rm = r["robustness_metrics"]
        f = r.get("num_malicious_nodes")
        rows.append([r["run"], r["strategy"], str(f) if f else DASH,
                     fmt(r["test_accuracy"], 3), fmt(r["attack_success_rate"], 3), fmt(r["recovery"], 3),
                     fmt(r["retention"], 3), fmt(rm.get("poisoning_defence"), 3),
                     fmt(rm.get("empirical_robustness"), 3), fmt(r["pillars"].get("robustness"), 3),
                     fmt(r["pillars"].get("sustainability"), 3), fmt(r["trust_score"], 3)])
    clean = next((r for r in ablation["runs"] if r["run"] == "clean"), None)
    better = [r for r in ablation["runs"] if r["run"] not in ("clean", "fedavg") and clean is not None
              and not is_missing(r["trust_score"]) and not is_missing(clean["trust_score"])
              and r["trust_score"] > clean["trust_score"]]
    section = {
        "variant": variant,
        "ablation": ablation,
        "number": ablation["experiment"][3:],
        "overrides": str(ablation.get("overrides")),
        "malicious": ablation["attack"].get("num_malicious", "?"),
        "note": ablation.get("note"),
        "synthetic": bool(ablation.get("synthetic")),
        "tag": " [SYNTHETIC data]" if ablation.get("synthetic") else "",
        "table": pd.DataFrame(rows, columns=[
            "run", "aggregator", "f", "accuracy", "ASR", "recovery", "retention", "poisoning defence",
            "empirical robustness", "robustness pillar", "sustainability pillar", "trust score"]),
        "better": ", ".join(f"attacked {r['strategy']}" for r in better),
    }
    return [section] + [s for extra in ablation.get("variants") or [] for s in ablation_sections(extra, variant=True)]


def ablation_markdown(ablation: dict[str, Any] | None) -> list[str]:
    """Lines of the RESULTS.md section on the attack ablation, its ``variants`` as sub-sections.

    Parameters
    ----------
    ablation : dict or None
        :func:`load_ablation`; None gives no section.

    Returns
    -------
    list of str
        The section's lines (template ``trust/ablation.md.j2``), the last one empty.
    """
    return lines(render("trust/ablation.md.j2", ablation_sections=ablation_sections(ablation)))

