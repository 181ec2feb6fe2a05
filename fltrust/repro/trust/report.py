"""RESULTS.md of the FederatedTrust reproduction: paper vs ours per experiment and scoring mode.

The summary notebook (``notebooks/federatedtrust/summary.ipynb``) loads every experiment result
(:func:`load_results`; written by :func:`fltrust.repro.trust.run.experiment_result`), builds
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
matches per mode, split into configuration-driven and coincidental (model-dependent) ones; the
noise against model norm of the NbAFL experiments 2-3 (:func:`~fltrust.repro.trust.sections.dp_noise_frame`);
the extended-mode scores (:func:`~fltrust.repro.trust.sections.extended_frame`); the attack
ablation (:func:`~fltrust.repro.trust.sections.load_ablation`); the time per experiment; the
paper's internal inconsistencies; every deviation from the paper's setting; the experiments not
run. The text is the Jinja2 template ``templates/trust/results.md.j2`` over tables built here as
DataFrames of display strings with the formatters of :mod:`fltrust.repro.markdown`; its sections
``dp``, ``extended`` and ``ablation`` (their own templates) are built in
:mod:`fltrust.repro.trust.sections`, whose names are re-exported here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from fltrust.names import PAPER_TREE_TRUST_MODES
from fltrust.repro.results import NUMBER, NUMBER_LIST, TEXT_LIST, Each, Maybe, ResultsError, load_result_files, schema_problem
from fltrust.repro.markdown import fmt, fmt_raw, grouped, is_missing, mark, render
from fltrust.repro.paths import REPO_ENV
from fltrust.repro.provenance_table import load_verified, provenance_frame, provenance_section
from fltrust.repro.trust.experiments import EXPERIMENTS, PAPER_DIR, PAPER_INPUTS
from fltrust.repro.trust.normalize import normalize_section
from fltrust.repro.trust.sections import (
    ablation_frame,
    ablation_markdown,
    ablation_sections,
    dp_markdown,
    dp_noise_frame,
    dp_section,
    extended_frame,
    extended_markdown,
    extended_section,
    load_ablation,
)
from fltrust.core.io import atomic_write_text

__all__ = [
    "REGENERATE",
    "REPORTED_FILE",
    "RESULT_KEYS",
    "RESULT_SCHEMA",
    "ResultsError",
    "ablation_frame",
    "ablation_markdown",
    "comparison_frame",
    "dp_markdown",
    "dp_noise_frame",
    "extended_frame",
    "extended_markdown",
    "load_ablation",
    "load_reported",
    "load_results",
    "metric_frame",
    "match_source",
    "missing_experiments",
    "mode_tables",
    "results_markdown",
    "timing_frame",
    "write_results_md",
]

REGENERATE = "fltrust repro trust"
REPORTED_FILE = PAPER_INPUTS / "reported.yaml"
STANDIN_COMPARISON_FILE = PAPER_INPUTS / "n_baiot_standin_vs_real.md"
"""The N-BaIoT stand-in against the real rows (``python -m fltrust.repro.trust.n_baiot_compare`` writes it)."""


def standin_summary(path: str | Path = STANDIN_COMPARISON_FILE) -> str | None:
    """The ``## Summary`` paragraph of the stand-in comparison, or None when the file is absent."""
    path = Path(path)
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    if "## Summary" not in lines:
        return None
    body = itertools.takewhile(lambda line: not line.startswith("## "), lines[lines.index("## Summary") + 1:])
    return "\n".join(body).strip() or None

RESULT_KEYS = (
    "experiment", "title", "figure", "synthetic", "quick", "complete", "run_id", "elapsed_s",
    "run_wall_time_s", "settings", "modes", "deviations",
)
"""Keys every experiment result must have."""

_MODE = {"trust_score": NUMBER, "pillars": Each(NUMBER), "pillar_labels": Maybe(Each(str)),
         "metrics": Each({"label": Maybe(str), "normalized": Maybe(NUMBER), "score": NUMBER}),
         "fixes": Maybe(TEXT_LIST), "warnings": Maybe(TEXT_LIST)}

_EXTENDED_RUN = {"run_id": Maybe(str), "final_aux_accuracy": Maybe(NUMBER), "provenance": Maybe(Each(int)),
                 "measured_in": Maybe(str)}


def _dp_trace(value: Any) -> str | None:
    needed = ("nbafl_aggregate_noise_norm", "nbafl_upload_noise_norm", "update_norm", "weight_norm")
    bad = [k for k in needed if not isinstance((value or {}).get(k) if isinstance(value, dict) else None, list)
           or not value[k] or schema_problem(value[k], NUMBER_LIST)]
    return None if not bad else f"must hold non-empty lists of numbers {list(needed)}; {bad[0]} is not one"


RESULT_SCHEMA = {
    "experiment": str, "title": str, "figure": Maybe(str), "synthetic": bool, "quick": bool, "complete": bool,
    "run_id": str, "elapsed_s": NUMBER, "run_wall_time_s": NUMBER, "seconds_per_round": Maybe(NUMBER),
    "settings": {"num_clients": int, "clients_per_round": int, "rounds": int, "paper_rounds": Maybe(int),
                 "privacy": str, "epsilon": Maybe(NUMBER)},
    "epsilon_spent": Maybe(NUMBER), "final_aux_accuracy": Maybe(NUMBER), "missing_fields": Maybe(TEXT_LIST),
    "modes": Each(_MODE), "extended_run": Maybe(_EXTENDED_RUN), "dp_trace": Maybe(_dp_trace), "deviations": TEXT_LIST,
}
"""What :func:`load_results` checks in every experiment result (:func:`fltrust.repro.results.check_fields`):
the fields the tables and figures read, with their types."""

MODE_LABELS = {"prototype": "prototype", "paper": "paper mode", "fixed": "fixed", "extended": "extended"}

CONFIGURATION_ITEMS = (
    "privacy", "accountability", "architectural_soundness",
    "privacy/", "accountability/", "architectural_soundness/", "robustness/scale", "robustness/personalization",
    "fairness/selection_variation", "fairness/class_imbalance", "explainability/model_size",
    "explainability/algorithmic_transparency",
)
"""Scores fixed by the configuration and the data partition alone (no training): a pillar name or a
``pillar/`` prefix or a ``pillar/metric``. Everything else (the trust score; the robustness, fairness
and explainability pillars; performance, CLEVER, accuracy variation, feature importance) depends on
the trained model, so a match there is a coincidence of this run, not a reproduction."""


def match_source(item: str) -> str:
    """``"configuration"`` when ``item`` (trust_score, a pillar or ``pillar/metric``) is fixed by the
    configuration and partition (:data:`CONFIGURATION_ITEMS`), else ``"model-dependent"``."""
    for entry in CONFIGURATION_ITEMS:
        if item == entry or (entry.endswith("/") and item.startswith(entry)):
            return "configuration"
    return "model-dependent"




def load_reported(path: str | Path = REPORTED_FILE) -> dict[str, Any]:
    """The paper's numbers (``papers_repro/federatedtrust/reported.yaml``), checked for the keys used here.

    Raises
    ------
    ResultsError
        If the file is missing or lacks ``tolerance``, ``pillars``, ``experiments`` or ``inconsistencies``.
    """
    path = Path(path)
    if not path.is_file():
        raise ResultsError(f"{path} does not exist; it ships with the fltrust checkout (papers_repro/federatedtrust/) "
                           f"and the wheel built from it: work inside the checkout, set {REPO_ENV} to it, or install "
                           "the wheel")
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
    results = load_result_files(results_dir, "exp*.json", RESULT_KEYS, "experiment_result", RESULT_SCHEMA)
    order = list(EXPERIMENTS)
    return sorted(results, key=lambda r: order.index(r["experiment"]) if r["experiment"] in order else len(order))


def missing_experiments(results: Sequence[dict[str, Any]]) -> list[str]:
    """Experiments of :data:`~fltrust.repro.trust.experiments.EXPERIMENTS` without a result."""
    done = {r["experiment"] for r in results}
    return [name for name in EXPERIMENTS if name not in done]


def _paper_value(reported: dict[str, Any], experiment: str, item: str) -> float | None:
    """The paper's stated value of ``item`` ("trust_score", a pillar, or "pillar/metric")."""
    entry = reported["experiments"].get(experiment, {})
    # the trust score is a key of the experiment's entry, a metric of its "metrics", a pillar of its "pillars"
    group = entry if item == "trust_score" else entry.get("metrics" if "/" in item else "pillars") or {}
    node = group.get(item)
    return None if node is None else float(node["value"])


def _versus(reported: dict[str, Any], res: dict[str, Any], item: str, ours: Any) -> dict[str, Any]:
    """``paper``, ``delta`` and ``match`` (|delta| within the tolerance) of one of our values; NaN and None
    where the paper states no value."""
    paper = _paper_value(reported, res["experiment"], item)
    delta = None if paper is None or is_missing(ours) else float(ours) - paper
    return {"paper": float("nan") if paper is None else paper, "delta": float("nan") if delta is None else delta,
            "match": None if delta is None else bool(abs(delta) <= float(reported["tolerance"]["absolute"]) + 1e-9)}


def _paper_modes(results: Sequence[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], str, dict[str, Any]]]:
    """(result, mode, its summary) of every mode compared with the paper."""
    for res in results:
        for mode, summary in res["modes"].items():
            if mode in PAPER_TREE_TRUST_MODES:
                yield res, mode, summary


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
    rows = []
    for res, mode, summary in _paper_modes(results):
        items = [("trust_score", "Trust score", summary["trust_score"])]
        items += [(p, reported["pillar_labels"].get(p, p), summary["pillars"].get(p)) for p in reported["pillars"]]
        for item, label, ours in items:
            rows.append({
                "experiment": res["experiment"], "mode": mode, "item": item, "label": label,
                "ours": float("nan") if ours is None else float(ours), **_versus(reported, res, item, ours),
                "synthetic": bool(res["synthetic"]), "quick": bool(res["quick"]),
            })
    return pd.DataFrame(rows, columns=["experiment", "mode", "item", "label", "paper", "ours", "delta", "match",
                                       "synthetic", "quick"])


def mode_tables(comparison: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """:func:`comparison_frame` pivoted per mode: one table per mode, a row per score, and per
    experiment the columns ``paper``, ``ours`` and ``delta``.

    Parameters
    ----------
    comparison : pandas.DataFrame
        :func:`comparison_frame`'s output.

    Returns
    -------
    dict of str to pandas.DataFrame
        Mode (in the frame's order) to its table; rows are the score labels, columns a
        ``(experiment, paper|ours|delta)`` MultiIndex sorted by experiment.

    Examples
    --------
    >>> frame = pd.DataFrame({"experiment": ["exp1", "exp1"], "mode": ["prototype", "prototype"],
    ...                       "label": ["Trust score", "Privacy"], "paper": [0.56, 0.31],
    ...                       "ours": [0.56, 0.25], "delta": [0.0, -0.06]})
    >>> mode_tables(frame)["prototype"].loc["Privacy", ("exp1", "delta")]
    np.float64(-0.06)
    """
    return {mode: comparison[comparison["mode"] == mode].pivot(index="label", columns="experiment",
                                                              values=["paper", "ours", "delta"])
            .swaplevel(axis=1).sort_index(axis=1) for mode in dict.fromkeys(comparison["mode"])}


def metric_frame(results: Sequence[dict[str, Any]], reported: dict[str, Any] | None = None) -> pd.DataFrame:
    """Every metric of every experiment and mode: raw value, score and the paper's value where stated.

    Returns
    -------
    pandas.DataFrame
        Columns ``experiment, mode, metric, label, raw, score, paper, delta, match`` (``metric``
        is ``pillar/metric``).
    """
    reported = reported or load_reported()
    rows = []
    for res, mode, summary in _paper_modes(results):
        for path, values in summary["metrics"].items():
            rows.append({
                "experiment": res["experiment"], "mode": mode, "metric": path, "label": values["label"],
                "raw": values["raw"], "score": float("nan") if values["score"] is None else values["score"],
                **_versus(reported, res, path, values["score"]),
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
# Markdown: tables of display strings for the templates in fltrust/repro/templates/trust/
# ---------------------------------------------------------------------------------------------

TEMPLATE = "trust/results.md.j2"
"""RESULTS.md's template; its sections ``trust/dp.md.j2``, ``trust/extended.md.j2`` and
``trust/ablation.md.j2`` are also rendered alone by :func:`~fltrust.repro.trust.sections.dp_markdown`,
:func:`~fltrust.repro.trust.sections.extended_markdown` and
:func:`~fltrust.repro.trust.sections.ablation_markdown`."""


def _delta_cell(delta: Any, match: Any, digits: int) -> str:
    """``Δ`` with its verdict (``+0.040 ✗``); the dash alone where the paper states no value."""
    sign = mark(match, missing="")
    text = fmt(delta, digits, signed=True)
    return f"{text} {sign}" if sign else text


def _title_as_run(res: dict[str, Any]) -> str:
    """The experiment title with the rounds actually run (the title states the paper's)."""
    run, paper = res["settings"]["rounds"], res["settings"].get("paper_rounds")  # integers (RESULT_SCHEMA)
    if paper is None or run == paper:
        return res["title"]
    return res["title"].replace(f"{paper} rounds", f"{run} rounds run (paper: {paper})")


def _experiment_heading(res: dict[str, Any]) -> str:
    """``exp3: <title as run> (Fig. 4) [SYNTHETIC data, QUICK]``: the experiment's sub-heading."""
    tags = (["SYNTHETIC data"] if res["synthetic"] else []) + (["QUICK"] if res["quick"] else [])
    tag = f" [{', '.join(tags)}]" if tags else ""
    return f"{res['experiment']}: {_title_as_run(res)} ({res['figure']}){tag}"


def _mode_table(parts: Iterable[tuple[str, pd.DataFrame]], header: str, modes: Sequence[str],
                cells: Callable[[pd.Series], list[str]]) -> pd.DataFrame:
    """One row per ``(label, rows)`` of ``parts``: the label, the paper's value, then per mode the two
    ``cells`` of its row in that mode (``not run`` and an empty Δ where it has none)."""
    rows = []
    for label, part in parts:
        row = [label, fmt(part.iloc[0]["paper"], 2)]
        for mode in modes:
            match = part[part["mode"] == mode]
            row += ["not run", ""] if match.empty else cells(match.iloc[0])
        rows.append(row)
    return pd.DataFrame(rows, columns=[header, "paper", *(x for m in modes for x in (MODE_LABELS[m], "Δ"))])


def _score_table(sub: pd.DataFrame, items: Sequence[str], modes: Sequence[str]) -> pd.DataFrame:
    """Trust and pillar scores of one experiment (:func:`comparison_frame` rows): paper, then ours and Δ per mode."""
    parts = [sub[sub["item"] == item] for item in items]
    return _mode_table([(part.iloc[0]["label"], part) for part in parts if not part.empty], "score", modes,
                       lambda row: [fmt(row["ours"], 3), _delta_cell(row["delta"], row["match"], 3)])


def _metric_table(sub: pd.DataFrame, modes: Sequence[str]) -> pd.DataFrame:
    """Metrics of one experiment (rows of :func:`metric_frame`): paper, then ``score (raw)`` and Δ per mode."""
    parts = [(path, sub[sub["metric"] == path]) for path in dict.fromkeys(sub["metric"])]
    return _mode_table(parts, "metric", modes, lambda row: [f"{fmt(row['score'], 2)} ({fmt_raw(row['raw'])})",
                                                            _delta_cell(row["delta"], row["match"], 2)])


def _match_tables(
    comparison: pd.DataFrame, metrics: pd.DataFrame, modes: Sequence[str],
) -> tuple[pd.DataFrame, list[str]]:
    """Matches per mode split by :func:`match_source`, and one line per mode listing its coincidental matches."""
    rows, listed = [], []
    for mode in modes:
        checked = pd.concat([
            comparison[comparison["mode"] == mode].assign(key=lambda f: f["item"]),
            metrics[metrics["mode"] == mode].assign(key=lambda f: f["metric"]),
        ])
        checked = checked[checked["match"].notna()]
        hits = checked[checked["match"].astype(bool)]
        sources = hits["key"].map(match_source)
        config = hits[sources == "configuration"]
        chance = hits[sources != "configuration"]
        rows.append([MODE_LABELS[mode], f"{len(hits)} of {len(checked)}", str(len(config)), str(len(chance))])
        if len(chance):
            listed.append(f"{MODE_LABELS[mode]}: " + ", ".join(
                f"{r.experiment} {r.key} ({fmt(r.score if is_missing(r.ours) else r.ours, 3)})"
                for r in chance.itertuples()))
    frame = pd.DataFrame(rows, columns=["mode", "matched", "configuration-driven", "coincidental (model-dependent)"])
    return frame, listed


def _timing_table(results: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """:func:`timing_frame` as displayed: settings, DP budget, server accuracy, seconds, flags."""
    rows = []
    for _, row in timing_frame(results).iterrows():
        flags = " ".join(f for f in ("synthetic", "quick") if row[f])
        same = is_missing(row["paper_rounds"]) or row["paper_rounds"] == row["rounds"]
        rounds = str(int(row["rounds"])) + ("" if same else f" (paper {int(row['paper_rounds'])})")
        dp = "none" if row["privacy"] == "none" else f"{row['privacy']} ε={row['epsilon']:g}"
        if not is_missing(row["epsilon_spent"]):
            dp += f" (spent {row['epsilon_spent']:.2f})"
        rows.append([row["experiment"], str(int(row["clients"])), str(int(row["per_round"])), rounds, dp,
                     fmt(row["final_aux_accuracy"], 3), fmt(row["run_wall_time_s"], 0), fmt(row["elapsed_s"], 0),
                     flags])
    return pd.DataFrame(rows, columns=["experiment", "clients", "per round", "rounds", "DP", "server accuracy",
                                       "training s", "total s", "flags"])


VERIFY_EXAMPLE = "fltrust repro verify <experiment>"
"""The rerun-and-compare command RESULTS.md's provenance section names."""


def _ablation_as_result(ablation: dict[str, Any]) -> dict[str, Any]:
    """The attack ablation (and its variants) as one provenance-table entry: every run's id and record."""
    parts = [ablation, *(ablation.get("variants") or [])]
    run_ids = list(dict.fromkeys(run["run_id"] for part in parts for run in part.get("runs", []) if run.get("run_id")))
    runs = {run_id: record for part in parts
            for run_id, record in ((part.get("provenance") or {}).get("runs") or {}).items()}
    return {"experiment": f"attack ablation ({ablation.get('experiment')})", "run_ids": run_ids,
            "provenance": {"runs": runs}}


def _provenance_frame(results: Sequence[dict[str, Any]], ablation: dict[str, Any] | None) -> pd.DataFrame:
    """The provenance table: one row per experiment result (its run and extended companion), then the ablation."""
    groups: list[tuple[list[Any], list[dict[str, Any]]]] = []
    for res in results:
        run_ids = [res["run_id"]] + ([res["extended_run"]["run_id"]] if res.get("extended_run") else [])
        groups.append(([], [dict(res, run_ids=list(dict.fromkeys(run_ids)))]))
    if ablation:
        groups.append(([], [_ablation_as_result(ablation)]))
    return provenance_frame(groups, ["experiment"], root=PAPER_DIR.parents[1])


def results_markdown(
    results: Sequence[dict[str, Any]], *, quick: bool, reported: dict[str, Any] | None = None,
    ablation: dict[str, Any] | None = None,
    without_normalize: dict[str, Any] | None = None,
) -> str:
    """The text of RESULTS.md (see the module docstring for its sections; template :data:`TEMPLATE`).

    Parameters
    ----------
    results : sequence of dict
        Experiment results (:func:`load_results`).
    quick : bool
        The batch ran with ``--quick``; any quick result also triggers the quick banner.
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`load_reported`).
    ablation : dict, optional
        The attack ablation (:func:`~fltrust.repro.trust.sections.load_ablation`), printed as its own section.
    without_normalize : dict, optional
        Experiments 1-3 without FEMNIST's Normalize transform
        (:func:`~fltrust.repro.trust.normalize.load_without_normalize`), compared in their own section.

    Returns
    -------
    str
        Markdown.
    """
    reported = reported or load_reported()
    tol = float(reported["tolerance"]["absolute"])
    quick = quick or any(r["quick"] for r in results)
    synthetic = [r["experiment"] for r in results if r["synthetic"]]
    stand_ins = sorted({str(r.get("dataset", "")).removeprefix("synthetic_") for r in results if r["synthetic"]})
    modes = [m for m in PAPER_TREE_TRUST_MODES if any(m in r["modes"] for r in results)]  # extended: its own table
    comparison = comparison_frame(results, reported)
    metrics = metric_frame(results, reported)
    items = ["trust_score"] + list(reported["pillars"])

    experiments = []
    for res in results:
        implied = reported["experiments"].get(res["experiment"], {}).get("implied") or {}
        experiments.append({
            "heading": _experiment_heading(res),
            "scores": _score_table(comparison[comparison["experiment"] == res["experiment"]], items, modes),
            "implied": "; ".join(f"{k} ≈ {v['value']:g} ({' '.join(str(v['note']).split())})"
                                 for k, v in implied.items()),
            "metrics": _metric_table(metrics[metrics["experiment"] == res["experiment"]], modes),
        })
    matches, coincidental = _match_tables(comparison, metrics, modes)
    deviations = grouped((text, res["experiment"]) for res in results for text in res["deviations"])

    return render(
        TEMPLATE,
        command=REGENERATE + (" --quick" if quick else ""),
        regenerate=REGENERATE,
        quick=quick,
        synthetic=", ".join(synthetic),
        stand_ins=" and ".join(d for d in stand_ins if d),
        standin_summary=standin_summary() if synthetic and "n_baiot" in stand_ins else None,
        tolerance=f"{tol:g}",
        experiments=experiments,
        matches=matches,
        coincidental=coincidental,
        dp=dp_section(results),
        normalize=normalize_section(without_normalize, results),
        extended=extended_section(results),
        ablation_sections=ablation_sections(ablation),
        timing=_timing_table(results),
        inconsistencies=[f"**{item['id']}** ({', '.join(item['experiments'])}): {' '.join(str(item['text']).split())}"
                         for item in reported["inconsistencies"]],
        deviations=[f"{text} ({', '.join(names)})" for text, names in deviations.items()],
        missing=", ".join(missing_experiments(results)),
        provenance=provenance_section(_provenance_frame(results, ablation), command=VERIFY_EXAMPLE,
                                      verified=None if quick else load_verified(PAPER_DIR, results), results=results,
                                      root=PAPER_DIR.parents[1]),
    )


def write_results_md(
    results: Sequence[dict[str, Any]],
    path: str | Path,
    *,
    quick: bool,
    reported: dict[str, Any] | None = None,
    ablation: dict[str, Any] | None = None,
    without_normalize: dict[str, Any] | None = None,
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
    ablation : dict, optional
        The attack ablation (:func:`~fltrust.repro.trust.sections.load_ablation`).
    without_normalize : dict, optional
        Experiments 1-3 without FEMNIST's Normalize transform
        (:func:`~fltrust.repro.trust.normalize.load_without_normalize`).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    atomic_write_text(path, results_markdown(results, quick=quick, reported=reported, ablation=ablation,
                                                  without_normalize=without_normalize))
    return path
