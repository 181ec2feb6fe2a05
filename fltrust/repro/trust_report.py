"""RESULTS.md of the FederatedTrust reproduction: paper vs ours per experiment and scoring mode.

The summary notebook (``notebooks/federatedtrust/summary.ipynb``) loads every experiment result
(:func:`load_results`; written by :func:`fltrust.repro.trust_experiments.experiment_result`), builds
the tables below and hands the results to :func:`write_results_md`. The paper's numbers come from
``papers_repro/federatedtrust/reported.yaml`` (:func:`load_reported`).

=========================  ==================================================================
table                      one row per
=========================  ==================================================================
:func:`comparison_frame`   experiment x mode x (trust score, 6 pillars): paper, ours, delta
:func:`metric_frame`       experiment x mode x metric: raw value, score, paper value, delta
:func:`timing_frame`       experiment: settings run, wall times
=========================  ==================================================================

RESULTS.md has, in order: a header naming the regenerating command (``fltrust repro trust``) with
a loud banner for quick runs and a SYNTHETIC banner for experiments on generated data; per
experiment the trust and pillar table (``paper | ours per mode | Δ``) and the metric table; the
time per experiment; the matches per mode; the paper's internal inconsistencies; every deviation
from the paper's setting; the experiments not run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from fltrust.repro.batch import ResultsError, load_result_files
from fltrust.repro.markdown import format_number, is_missing, markdown_table
from fltrust.repro.trust_experiments import EXPERIMENTS, PAPER_DIR, SCORING_MODES
from fltrust.core.io import atomic_write_text

__all__ = [
    "REGENERATE",
    "REPORTED_FILE",
    "RESULT_KEYS",
    "ResultsError",
    "comparison_frame",
    "load_reported",
    "load_results",
    "metric_frame",
    "missing_experiments",
    "results_markdown",
    "timing_frame",
    "write_results_md",
]

REGENERATE = "fltrust repro trust"
REPORTED_FILE = PAPER_DIR / "reported.yaml"

RESULT_KEYS = (
    "experiment", "title", "figure", "synthetic", "quick", "complete", "run_id", "elapsed_s",
    "run_wall_time_s", "settings", "modes", "deviations",
)
"""Keys every experiment result must have."""

MODE_LABELS = {"prototype": "prototype", "paper": "paper mode", "fixed": "fixed"}




def load_reported(path: str | Path = REPORTED_FILE) -> dict[str, Any]:
    """The paper's numbers (``papers_repro/federatedtrust/reported.yaml``), checked for the keys used here.

    Raises
    ------
    ResultsError
        If the file is missing or lacks ``tolerance``, ``pillars``, ``experiments`` or ``inconsistencies``.
    """
    path = Path(path)
    if not path.is_file():
        raise ResultsError(f"{path} does not exist; it ships with the repository (papers_repro/federatedtrust/)")
    data = yaml.safe_load(path.read_text())
    missing = [k for k in ("tolerance", "pillars", "pillar_labels", "experiments", "inconsistencies")
               if not isinstance(data, dict) or k not in data]
    if missing:
        raise ResultsError(f"{path} lacks the key(s) {missing}")
    return data


def load_results(results_dir: str | Path) -> list[dict[str, Any]]:
    """Every ``exp*.json`` result of a folder, in experiment order.

    Parameters
    ----------
    results_dir : str or Path
        Folder written by the experiment notebooks. A missing folder gives an empty list.

    Returns
    -------
    list of dict

    Raises
    ------
    ResultsError
        If a file is not valid JSON or lacks one of :data:`RESULT_KEYS` (rerun its experiment).
    """
    results = load_result_files(results_dir, "exp*.json", RESULT_KEYS, "experiment_result")
    order = list(EXPERIMENTS)
    return sorted(results, key=lambda r: order.index(r["experiment"]) if r["experiment"] in order else len(order))


def missing_experiments(results: Sequence[dict[str, Any]]) -> list[str]:
    """Experiments of :data:`~fltrust.repro.trust_experiments.EXPERIMENTS` without a result."""
    done = {r["experiment"] for r in results}
    return [name for name in EXPERIMENTS if name not in done]


def _modes(results: Sequence[dict[str, Any]]) -> list[str]:
    present = {m for r in results for m in r["modes"]}
    return [m for m in SCORING_MODES if m in present]


def _paper_value(reported: dict[str, Any], experiment: str, item: str) -> float | None:
    """The paper's stated value of ``item`` ("trust_score", a pillar, or "pillar/metric")."""
    entry = reported["experiments"].get(experiment, {})
    if item == "trust_score":
        node = entry.get("trust_score")
    elif "/" in item:
        node = (entry.get("metrics") or {}).get(item)
    else:
        node = (entry.get("pillars") or {}).get(item)
    return None if node is None else float(node["value"])


def _delta(ours: Any, paper: float | None) -> float | None:
    if paper is None or ours is None or (isinstance(ours, float) and math.isnan(ours)):
        return None
    return float(ours) - paper


def comparison_frame(results: Sequence[dict[str, Any]], reported: dict[str, Any] | None = None) -> pd.DataFrame:
    """Trust score and pillar scores, paper vs ours, one row per experiment, mode and item.

    Parameters
    ----------
    results : sequence of dict
        Experiment results (:func:`load_results`).
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`load_reported`).

    Returns
    -------
    pandas.DataFrame
        Columns ``experiment, mode, item, label, paper, ours, delta, match, synthetic, quick``;
        ``item`` is ``"trust_score"`` or a pillar name; ``paper`` is NaN where the paper states no
        value; ``match`` is ``|delta| <= tolerance`` (None without a paper value).
    """
    reported = reported or load_reported()
    tol = float(reported["tolerance"]["absolute"])
    rows = []
    for res in results:
        for mode, summary in res["modes"].items():
            items = [("trust_score", "Trust score", summary["trust_score"])]
            items += [(p, reported["pillar_labels"].get(p, p), summary["pillars"].get(p)) for p in reported["pillars"]]
            for item, label, ours in items:
                paper = _paper_value(reported, res["experiment"], item)
                delta = _delta(ours, paper)
                rows.append({
                    "experiment": res["experiment"], "mode": mode, "item": item, "label": label,
                    "paper": float("nan") if paper is None else paper,
                    "ours": float("nan") if ours is None else float(ours),
                    "delta": float("nan") if delta is None else delta,
                    "match": None if delta is None else bool(abs(delta) <= tol + 1e-9),
                    "synthetic": bool(res["synthetic"]), "quick": bool(res["quick"]),
                })
    return pd.DataFrame(rows, columns=["experiment", "mode", "item", "label", "paper", "ours", "delta", "match",
                                       "synthetic", "quick"])


def metric_frame(results: Sequence[dict[str, Any]], reported: dict[str, Any] | None = None) -> pd.DataFrame:
    """Every metric of every experiment and mode: raw value, score and the paper's value where stated.

    Returns
    -------
    pandas.DataFrame
        Columns ``experiment, mode, metric, label, raw, score, paper, delta, match`` (``metric``
        is ``pillar/metric``).
    """
    reported = reported or load_reported()
    tol = float(reported["tolerance"]["absolute"])
    rows = []
    for res in results:
        for mode, summary in res["modes"].items():
            for path, values in summary["metrics"].items():
                paper = _paper_value(reported, res["experiment"], path)
                delta = _delta(values["score"], paper)
                rows.append({
                    "experiment": res["experiment"], "mode": mode, "metric": path, "label": values["label"],
                    "raw": values["raw"], "score": float("nan") if values["score"] is None else values["score"],
                    "paper": float("nan") if paper is None else paper,
                    "delta": float("nan") if delta is None else delta,
                    "match": None if delta is None else bool(abs(delta) <= tol + 1e-9),
                })
    return pd.DataFrame(rows, columns=["experiment", "mode", "metric", "label", "raw", "score", "paper", "delta",
                                       "match"])


def timing_frame(results: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Settings and wall times of each experiment (one row per result)."""
    rows = []
    for res in results:
        s = res["settings"]
        rows.append({
            "experiment": res["experiment"], "clients": s["num_clients"], "per_round": s["clients_per_round"],
            "rounds": s["rounds"], "paper_rounds": s.get("paper_rounds"), "privacy": s["privacy"],
            "epsilon": s.get("epsilon"), "epsilon_spent": res.get("epsilon_spent"),
            "run_wall_time_s": res["run_wall_time_s"], "elapsed_s": res["elapsed_s"],
            "final_aux_accuracy": res.get("final_aux_accuracy"),
            "synthetic": bool(res["synthetic"]), "quick": bool(res["quick"]),
        })
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------




def _fmt(value: Any, digits: int = 2, *, signed: bool = False) -> str:
    return format_number(value, digits, signed=signed)


def _raw(value: Any) -> str:
    if is_missing(value):
        return "–"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    return str(value)




def _mark(match: Any) -> str:
    return "" if match is None or (isinstance(match, float) and math.isnan(match)) else (" ✓" if match else " ✗")


def _experiment_heading(res: dict[str, Any]) -> str:
    tags = (["SYNTHETIC data"] if res["synthetic"] else []) + (["QUICK"] if res["quick"] else [])
    tag = f" [{', '.join(tags)}]" if tags else ""
    return f"### {res['experiment']}: {res['title']} ({res['figure']}){tag}"


def results_markdown(
    results: Sequence[dict[str, Any]], *, quick: bool, reported: dict[str, Any] | None = None
) -> str:
    """The text of RESULTS.md (see the module docstring for its sections).

    Parameters
    ----------
    results : sequence of dict
        Experiment results (:func:`load_results`).
    quick : bool
        The batch ran with ``--quick``; any quick result also triggers the quick banner.
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`load_reported`).

    Returns
    -------
    str
        Markdown.
    """
    reported = reported or load_reported()
    tol = float(reported["tolerance"]["absolute"])
    quick = quick or any(r["quick"] for r in results)
    synthetic = [r["experiment"] for r in results if r["synthetic"]]
    modes = _modes(results)
    command = REGENERATE + (" --quick" if quick else "")
    comparison = comparison_frame(results, reported)
    metrics = metric_frame(results, reported)

    out = [
        "# FederatedTrust: reproduction of Section 6 (experiments 1-5, Figures 4-5)",
        "",
        f"Generated by `{command}` (the summary notebook `notebooks/federatedtrust/summary.ipynb`); "
        "do not edit by hand. Paper numbers: `papers_repro/federatedtrust/reported.yaml` (quoted from the "
        "text of Section 6; Figures 4-5 are not in the text).",
        "",
    ]
    if quick:
        out += [
            "> **⚠ QUICK RUN: these numbers are smoke tests, NOT comparable with the paper.**",
            "> `--quick` trains 2 rounds on a fraction of the data with smaller CLEVER and SHAP samples.",
            f"> Run `{REGENERATE}` (without `--quick`) for a comparison.",
            "",
        ]
    if synthetic:
        out += [
            "> **⚠ SYNTHETIC DATA: " + ", ".join(synthetic) + " ran on the synthetic N-BaIoT stand-in "
            "(the real archive is not on this machine); their model-dependent metrics say nothing about real "
            "IoT traffic.**",
            "",
        ]
    out += [
        "Scoring modes (`fltrust.trust.scoring`): **prototype** = the authors' released code (HEAD b67a59c); "
        "**paper mode** = the normalisations that best reproduce the paper's numbers (5796d0b-era ranges, "
        "flattened pillar means, trust spec 7.3); **fixed** = every bug fix of trust spec 9 (no rounding). "
        "One training run per experiment; its FactSheet is rebuilt per mode from the saved run record.",
        "",
        f"Cells: `ours`, Δ = ours − paper; ✓ = |Δ| ≤ {tol:g} (the paper's 2-decimal rounding). A dash = the paper "
        "states no value. The paper's own numbers are not all consistent (see *Known inconsistencies*), so no mode "
        "can match every one.",
        "",
    ]
    if results:
        out += ["## Trust and pillar scores, paper vs ours", ""]
        for res in results:
            out += [_experiment_heading(res), ""]
            sub = comparison[comparison["experiment"] == res["experiment"]]
            header = ["score", "paper"] + [x for m in modes for x in (MODE_LABELS[m], "Δ")]
            rows = []
            for item in ["trust_score"] + list(reported["pillars"]):
                part = sub[sub["item"] == item]
                if part.empty:
                    continue
                cells = [part.iloc[0]["label"], _fmt(part.iloc[0]["paper"])]
                for mode in modes:
                    row = part[part["mode"] == mode]
                    if row.empty:
                        cells += ["not run", ""]
                        continue
                    row = row.iloc[0]
                    cells += [_fmt(row["ours"], 3), _fmt(row["delta"], 3, signed=True) + _mark(row["match"])]
                rows.append(cells)
            out += markdown_table(header, rows) + [""]
            note = reported["experiments"].get(res["experiment"], {}).get("implied") or {}
            if note:
                out += ["Not stated in the text but implied by it (trust spec 7.3; not compared): "
                        + "; ".join(f"{k} ≈ {v['value']:g} ({' '.join(str(v['note']).split())})" for k, v in note.items()),
                        ""]

        out += ["## Metrics, paper vs ours", "",
                "Per metric: the score in each mode with its raw FactSheet value in brackets.", ""]
        for res in results:
            out += [_experiment_heading(res), ""]
            sub = metrics[metrics["experiment"] == res["experiment"]]
            header = ["metric", "paper"] + [x for m in modes for x in (MODE_LABELS[m], "Δ")]
            rows = []
            for path in dict.fromkeys(sub["metric"]):
                part = sub[sub["metric"] == path]
                cells = [path, _fmt(part.iloc[0]["paper"])]
                for mode in modes:
                    row = part[part["mode"] == mode]
                    if row.empty:
                        cells += ["not run", ""]
                        continue
                    row = row.iloc[0]
                    cells += [f"{_fmt(row['score'])} ({_raw(row['raw'])})",
                              _fmt(row["delta"], signed=True) + _mark(row["match"])]
                rows.append(cells)
            out += markdown_table(header, rows) + [""]

        out += ["## Matches per mode", "",
                "Stated paper values (trust, pillars and metrics) within the tolerance, per scoring mode.", ""]
        rows = []
        for mode in modes:
            checked = pd.concat([comparison[comparison["mode"] == mode], metrics[metrics["mode"] == mode]])
            checked = checked[checked["match"].notna()]
            rows.append([MODE_LABELS[mode], f"{int(checked['match'].astype(bool).sum())} of {len(checked)}"])
        out += markdown_table(["mode", "matched"], rows) + [""]

        out += ["## Time per experiment", ""]
        rows = []
        for _, row in timing_frame(results).iterrows():
            flags = " ".join(f for f in ("synthetic", "quick") if row[f])
            rounds = str(int(row["rounds"])) + ("" if is_missing(row["paper_rounds"]) or row["paper_rounds"] == row["rounds"]
                                                else f" (paper {int(row['paper_rounds'])})")
            dp = "none" if row["privacy"] == "none" else f"{row['privacy']} ε={row['epsilon']:g}"
            if not is_missing(row["epsilon_spent"]):
                dp += f" (spent {row['epsilon_spent']:.2f})"
            rows.append([row["experiment"], str(int(row["clients"])), str(int(row["per_round"])), rounds, dp,
                         _fmt(row["final_aux_accuracy"], 3), _fmt(row["run_wall_time_s"], 0), _fmt(row["elapsed_s"], 0),
                         flags])
        out += markdown_table(
            ["experiment", "clients", "per round", "rounds", "DP", "server accuracy", "training s",
             "total s", "flags"], rows)
        out += ["", "training s = the run's wall time (all rounds); total s = the experiment notebook's library call "
                "(training, CLEVER and SHAP, replaying the FactSheet for the other modes, scoring); a run reloaded "
                "from its folder counts only the scoring. server accuracy = the final model on the server's "
                "evaluation sample of the test split.", ""]
    else:
        out += ["No experiment has run yet.", ""]

    out += ["## Known inconsistencies in the paper", "",
            "These reported numbers cannot all be reproduced by any implementation (trust spec 7.3, B16); "
            "nobody should chase them.", ""]
    for item in reported["inconsistencies"]:
        out += [f"- **{item['id']}** ({', '.join(item['experiments'])}): {' '.join(str(item['text']).split())}"]
    out += ["", "## Deviations from the paper's setting", ""]
    deviations: dict[str, list[str]] = {}
    for res in results:
        for text in res["deviations"]:
            deviations.setdefault(text, [])
            if res["experiment"] not in deviations[text]:
                deviations[text].append(res["experiment"])
    out += [f"- {text} ({', '.join(names)})" for text, names in deviations.items()] or ["None recorded in the results."]
    missing = missing_experiments(results)
    out += ["", "## Not run", "", ", ".join(missing) if missing else "None: all five experiments have results."]
    return "\n".join(out) + "\n"


def write_results_md(
    results: Sequence[dict[str, Any]],
    path: str | Path,
    *,
    quick: bool,
    reported: dict[str, Any] | None = None,
) -> Path:
    """Write RESULTS.md (:func:`results_markdown`) atomically: temporary file, then ``os.replace``.

    Parameters
    ----------
    results : sequence of dict
        Experiment results (:func:`load_results`).
    path : str or Path
        Output file (parent folders are created).
    quick : bool
        The batch ran with ``--quick`` (adds the loud smoke-test banner).
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`load_reported`).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    atomic_write_text(path, results_markdown(results, quick=quick, reported=reported))
    return path
