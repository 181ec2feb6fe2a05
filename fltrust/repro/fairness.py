"""Federated Fairness Analytics reproduction: run conditions, collect per-round notions, Table 3.

The condition notebook (``notebooks/fairness/condition.ipynb``) calls :func:`run_condition` and
:func:`notions_frame`; the summary notebook calls :func:`table3` and :func:`figure4_frame`.
Everything reads plain run records, so figures can be redrawn without rerunning.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from fltrust.config import ExperimentConfig, load_config
from fltrust.repro.fairness_conditions import DATASETS, QUICK_OVERRIDES, quick_overrides
from fltrust.runs import RunRecord

NOTIONS = ("f_j", "f_g", "f_r", "f_o", "F_T")
REPO = Path(__file__).resolve().parents[2]
PAPER_DIR = REPO / "papers_repro" / "fairness_analytics"
CONFIG_DIR = PAPER_DIR / "configs"


def condition_configs(
    name: str,
    *,
    repeats: int = 3,
    mode: str = "faithful",
    quick: bool = False,
    device: str = "cpu",
    data_dir: str | None = None,
    rounds: int | None = None,
    num_clients: int | None = None,
    extra: dict[str, Any] | None = None,
) -> list[ExperimentConfig]:
    """The configs of one condition's repeats (repeat r uses seed 0 + r)."""
    path = CONFIG_DIR / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))
        raise FileNotFoundError(f"no condition config {path.name}; known conditions: {known}")
    dataset_key = "_".join(name.split("_")[1:-1])
    overrides: dict[str, Any] = {"metrics.fairness.mode": mode, "run.device": device}
    if quick:
        overrides.update(quick_overrides(dataset_key))
    if data_dir:
        overrides["data.root"] = str(data_dir)
    if rounds is not None:
        overrides["training.rounds"] = rounds
    if num_clients is not None:
        overrides["partition.num_clients"] = num_clients
    overrides.update(extra or {})
    base = load_config(path, overrides)
    return [base.with_overrides({"run.repeat": r}) for r in range(repeats)]


def run_condition(name: str, *, out_dir: str | Path, **kwargs: Any) -> list[RunRecord]:
    """Run (or reload, when complete) every repeat of a condition; see :func:`condition_configs`."""
    from fltrust.experiment import run_experiment

    return [run_experiment(cfg, out_dir=out_dir) for cfg in condition_configs(name, **kwargs)]


def notions_frame(records: Sequence[RunRecord]) -> pd.DataFrame:
    """Long table: one row per (repeat, round >= 1) with f_j, f_g, f_r, f_o, F_T and accuracies."""
    rows = []
    for record in records:
        repeat = record.config["run"]["repeat"]
        for r in record.rounds:
            if r.round < 1:
                continue
            obs = r.observations.get("fairness", {})
            row = {"repeat": repeat, "round": r.round}
            row.update({k: _num(obs.get(k)) for k in NOTIONS})
            row["mean_local_accuracy"] = float(np.mean(r.client_metrics["accuracy"]))
            row["aux_accuracy"] = r.server_metrics.get("aux_accuracy")
            rows.append(row)
    return pd.DataFrame(rows)


def _num(value: Any) -> float:
    return float("nan") if value is None else float(value)


def window_means(frame: pd.DataFrame, first_round: int = 15, last_round: int = 30) -> dict[str, Any]:
    """Table 3 protocol (fairness spec 8): per-round mean over repeats, then mean over the window.

    Also returns the per-repeat F_T window means (their spread is the repeat-to-repeat spread).
    """
    window = frame[(frame["round"] >= first_round) & (frame["round"] <= last_round)]
    per_round = window.groupby("round")[list(NOTIONS)].mean()
    per_repeat = window.groupby("repeat")["F_T"].mean()
    out: dict[str, Any] = {k: float(per_round[k].mean()) for k in NOTIONS}
    out["F_T_per_repeat"] = [float(v) for v in per_repeat]
    out["F_T_std"] = float(per_repeat.std(ddof=1)) if len(per_repeat) > 1 else float("nan")
    out["repeats"] = int(window["repeat"].nunique())
    out["rounds_in_window"] = int(per_round.shape[0])
    out["mean_local_accuracy"] = float(window["mean_local_accuracy"].mean())
    out["aux_accuracy"] = float(window["aux_accuracy"].mean())
    return out


def condition_result(name: str, records: Sequence[RunRecord], *, quick: bool) -> dict[str, Any]:
    """The JSON result a condition notebook writes (read by the summary notebook)."""
    frame = notions_frame(records)
    last = int(frame["round"].max())
    first = 15 if last >= 30 else max(1, last // 2)  # quick runs: second half of their rounds
    cfg = records[0].config
    return {
        "condition": name,
        "quick": quick,
        "complete": all(r.summary.get("status") == "complete" for r in records),
        "mode": cfg["metrics"]["fairness"]["mode"],
        "rounds": last,
        "window": [first, last],
        "num_clients": cfg["partition"]["num_clients"],
        "synthetic": any(r.summary.get("synthetic") for r in records),
        "deviations": cfg["run"]["deviations"],
        "seconds_per_run": [r.summary.get("wall_time_s") for r in records],
        "run_ids": [r.run_id for r in records],
        "table3": window_means(frame, first, last),
        "per_round": frame.to_dict(orient="list"),
    }


def load_reported() -> dict[str, Any]:
    """``papers_repro/fairness_analytics/reported.yaml``."""
    return yaml.safe_load((PAPER_DIR / "reported.yaml").read_text())


def table3(results: Sequence[dict[str, Any]], reported: dict[str, Any] | None = None) -> pd.DataFrame:
    """Paper vs ours per condition: mean ± std of F_T, delta, within tolerance."""
    reported = reported or load_reported()
    tol = float(reported["tolerance"]["absolute"])
    rows = []
    for res in results:
        name = res["condition"]
        strategy, *dataset, setting = name.split("_")
        dataset_key = "_".join(dataset)
        ours = _num(res["table3"]["F_T"])  # None (every round NaN) -> NaN
        paper = reported["values"].get(name)
        delta = None if paper is None or not np.isfinite(ours) else ours - paper
        rows.append({
            "condition": name,
            "dataset": DATASETS[dataset_key].paper_label if dataset_key in DATASETS else dataset_key,
            "strategy": strategy,
            "setting": setting,
            "paper_F_T": paper,
            "ours_F_T": ours,
            "ours_std": res["table3"]["F_T_std"],
            "repeats": res["table3"]["repeats"],
            "delta": delta,
            "within_tolerance": None if delta is None else bool(abs(delta) <= tol),
            **{k: res["table3"][k] for k in ("f_j", "f_g", "f_r", "f_o")},
            "mean_local_accuracy": res["table3"]["mean_local_accuracy"],
            "rounds": res["rounds"],
            "clients": res["num_clients"],
            "quick": res["quick"],
            "synthetic": res["synthetic"],
        })
    return pd.DataFrame(rows)


def figure4_frame(
    results: Sequence[dict[str, Any]], first_round: int = 21, last_round: int = 30
) -> pd.DataFrame:
    """Paper Figure 4 points: per condition F_T against performance (mean local accuracy).

    The authors' plotter uses list positions 20..29 (server rounds 21-30) for Figure 4 (fairness
    spec 8), not Table 3's 15-30. A result with at least ``last_round`` rounds is re-averaged
    over that window from its ``per_round`` data (:func:`window_means`); a shorter (quick) run
    falls back to its own Table 3 window. The ``window`` column says which was used.

    Parameters
    ----------
    results : sequence of dict
        Condition results (:func:`condition_result`).
    first_round, last_round : int
        Server rounds of the Figure 4 window (inclusive).

    Returns
    -------
    pandas.DataFrame
        One row per result: ``condition``, ``dataset`` (Table 3 label), ``strategy``, ``setting``,
        ``mode``, ``F_T``, ``mean_local_accuracy``, ``window``, ``quick``, ``synthetic``.
    """
    rows = []
    for res in results:
        strategy, *dataset, setting = res["condition"].split("_")
        dataset_key = "_".join(dataset)
        if res["rounds"] >= last_round:
            frame = pd.DataFrame(res["per_round"]).apply(pd.to_numeric)
            means, window = window_means(frame, first_round, last_round), (first_round, last_round)
        else:
            means, window = res["table3"], tuple(res["window"])
        rows.append({
            "condition": res["condition"],
            "dataset": DATASETS[dataset_key].paper_label if dataset_key in DATASETS else dataset_key,
            "strategy": strategy,
            "setting": setting,
            "mode": res["mode"],
            "F_T": _num(means["F_T"]),
            "mean_local_accuracy": _num(means["mean_local_accuracy"]),
            "window": window,
            "quick": res["quick"],
            "synthetic": res["synthetic"],
        })
    return pd.DataFrame(rows)


__all__ = [
    "NOTIONS",
    "QUICK_OVERRIDES",
    "condition_configs",
    "run_condition",
    "notions_frame",
    "window_means",
    "condition_result",
    "load_reported",
    "table3",
    "figure4_frame",
]
