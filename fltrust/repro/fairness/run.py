"""Federated Fairness Analytics reproduction: run conditions, collect per-round notions, Table 3.

The condition notebook (``notebooks/fairness/condition.ipynb``) calls :func:`run_condition`,
:func:`notions_frame`, :func:`condition_result` and :func:`write_result`; the summary notebook
calls :func:`table3` and :func:`figure4_frame`. Everything reads plain run records, so figures can
be redrawn without rerunning, and :func:`rewrite_result` rewrites a committed condition result
from its reloaded run folders (no training). The Table 3 window protocol (fairness spec 8,
docs/references.md#fairness-8) is :func:`table3_window_mean` on per-round arrays and :func:`window_means` on a notions
frame.

A condition result holds, besides the Table 3 window means and the per-round notions, the
per-client data of every round (:func:`per_client_data`: the cumulative FedSV vector of all C
clients, the participants' ids, s, gains, rewards, accuracies, group scores and the count of
non-positive s), so that the fairness spec's section 7 (docs/references.md#fairness-7) identities can be checked on the
committed files without the run folders (``tests/repro/fairness/test_fairness_identities.py``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from fltrust.config import ExperimentConfig, load_config
from fltrust.core.io import atomic_write_text, to_plain
from fltrust.metrics.fairness.registry import FAIRNESS_KEYS, GENERAL_FAIRNESS, NOTIONS
from fltrust.metrics.jain import MetricInputError
from fltrust.names import FAIRNESS_MODES, Device
from fltrust.repro.fairness.conditions import DATASETS, QUICK_OVERRIDES, quick_overrides, split_condition
from fltrust.repro.paths import REPO_ENV, repo_root, resource_root
from fltrust.repro.results import (
    NUMBER,
    NUMBER_LIST,
    TEXT_LIST,
    Each,
    Lazy,
    Maybe,
    result_provenance,
    round_trace,
    schema_problem,
    with_integrity,
)
from fltrust.runs import RunRecord, load_run

REPO = repo_root()  # where outputs go: the checkout, or the cwd of a wheel outside one (fltrust.repro.paths)
PAPER_DIR = REPO / "papers_repro" / "fairness_analytics"
"""The paper folder of the outputs: results, run folders, experiments, RESULTS.md."""
PAPER_INPUTS = resource_root() / "papers_repro" / "fairness_analytics"
"""The paper folder of the inputs (configs, reported.yaml, misses.yaml): the checkout's, or the wheel's copy."""
CONFIG_DIR = PAPER_INPUTS / "configs"
RESULTS_DIR = PAPER_DIR / "results"
RUNS_DIR = PAPER_DIR / "runs"
EXPERIMENTS_DIR = PAPER_DIR / "experiments"
"""Cheap experiments that test the cause of a miss (one JSON each; run folders under ``runs/``)."""

STRICT_TOLERANCE = 0.05
"""The tight comparison band on F_T, reported next to ``reported.yaml``'s tolerance (0.10)."""

SIGNIFICANT_DIGITS = 6
"""Significant digits of the per-client floats stored in a condition result."""

PER_ROUND_DIGITS = 10
"""Significant digits of the per-round notions stored in a condition result (rounding error < 1e-9)."""

PER_CLIENT_FIELDS = {
    "round": "server round k (1..T)",
    "client_ids": "participants S_k (client ids, in the order of every other participant list)",
    "accuracy": "x_{n,k}: validation accuracy after local training (Ditto: personal model)",
    "rewards": "r_{n,k}: reward used by f_r (accuracy of the received global model; summed when reward=cumulative)",
    "s": "participants' cumulative FedSV, this round included",
    "gains": "x_{n,k} / s_n (signed; null where s_n = 0)",
    "group_scores": "the per-client score whose median defines f_g (authors: signed mean m_n)",
    "num_nonpositive_s": "participants with s_n <= 0",
    "cumulative_shapley": "cumulative FedSV of all C clients after this round (0 = never selected)",
}
"""Per round lists of one repeat in ``result["per_client"]["repeats"][i]`` (fairness spec 7 layout)."""


def condition_configs(
    name: str,
    *,
    repeats: int = 3,
    mode: str = "faithful",
    quick: bool = False,
    device: Device = "auto",
    data_dir: str | None = None,
    rounds: int | None = None,
    num_clients: int | None = None,
    extra: dict[str, Any] | None = None,
    config_dir: str | Path = CONFIG_DIR,
) -> list[ExperimentConfig]:
    """The configs of one condition's repeats (repeat r uses seed 0 + r), from ``config_dir/<name>.yaml``."""
    path = Path(config_dir) / f"{name}.yaml"
    if not Path(config_dir).is_dir():
        raise FileNotFoundError(f"{config_dir} does not exist; the condition configs ship with the fltrust checkout "
                                f"and the wheel built from it: work inside the checkout, set {REPO_ENV} to it, or "
                                "install the wheel")
    if not path.is_file():
        known = sorted(p.stem for p in Path(config_dir).glob("*.yaml"))
        raise FileNotFoundError(f"no condition config {path.name}; known conditions: {known}")
    dataset_key = split_condition(name)[1]
    overrides: dict[str, Any] = {"metrics.fairness.mode": mode, "run.device": device}
    if mode == "corrected" and dataset_key.startswith("nslkdd"):
        overrides["data.onehot_order"] = "global"  # the faithful per-split encoding is the authors' bug
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
    """Long table: one row per (repeat, round >= 1) with every notion of :data:`FAIRNESS_KEYS` and accuracies.

    A notion a record does not hold (registered after the run) is NaN.
    """
    rows = []
    for record in records:
        repeat = record.config["run"]["repeat"]
        for r in record.rounds:
            if r.round < 1:
                continue
            obs = r.observations.get("fairness", {})
            rows.append({"repeat": repeat, "round": r.round, **{k: _num(obs.get(k)) for k in FAIRNESS_KEYS},
                         "mean_local_accuracy": float(np.mean(r.client_metrics["accuracy"])),
                         "aux_accuracy": r.server_metrics.get("aux_accuracy")})
    return pd.DataFrame(rows)


def _num(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _round_matrix(frame: pd.DataFrame, column: str, repeats: Sequence[Any], last_round: int) -> np.ndarray:
    """``column`` as a (repeats, last_round) array, position p = server round p + 1 (NaN where absent)."""
    values = pd.to_numeric(frame[column], errors="coerce").groupby([frame["repeat"], frame["round"]]).last()
    return values.unstack().reindex(index=repeats, columns=range(1, last_round + 1)).to_numpy(dtype=float)


@dataclass(frozen=True)
class WindowMean:
    """Mean of a round window (``float(result)`` gives ``value``).

    Attributes
    ----------
    value : float
        The mean.
    num_values : int
        Entries (repeats x rounds) in the window.
    num_skipped : int
        NaN entries left out (only with ``skip_nan=True``).
    """

    value: float
    num_values: int
    num_skipped: int

    def __float__(self) -> float:
        return self.value


def table3_window_mean(
    per_round_values: Sequence[float] | Sequence[Sequence[float]] | np.ndarray,
    first_round: int = 15,
    last_round: int = 30,
    *,
    skip_nan: bool = False,
) -> WindowMean:
    """The paper's Table 3 averaging protocol (spec 8).

    Values are indexed by list *position*: position ``p`` holds server round ``p + 1`` (the
    observer reports rounds 1..T). The window is server rounds ``first_round..last_round``
    inclusive, i.e. positions 14..29 by default (16 entries). Each position is averaged across
    repeats, then the positions are averaged (the authors' plotter; the published values
    reproduce only with this window).

    Parameters
    ----------
    per_round_values : array-like, shape (rounds,) or (repeats, rounds)
        One notion (or F_T) per round, one row per repeat.
    first_round, last_round : int
        Server rounds (1-based, inclusive).
    skip_nan : bool, default False
        ``False``: a NaN anywhere in the window makes the mean NaN (the authors had none).
        ``True``: NaN entries (e.g. f_j with fewer than 2 positive contributions under
        ``nonpositive_policy="exclude"``) are left out and counted in ``num_skipped``.

    Returns
    -------
    WindowMean
    """
    values = np.asarray(per_round_values, dtype=float)
    if values.ndim == 1:
        values = values[None]
    if values.ndim != 2:
        raise MetricInputError(f"per_round_values must be (rounds,) or (repeats, rounds), got shape {values.shape}")
    if not 1 <= first_round <= last_round:
        raise MetricInputError(f"need 1 <= first_round <= last_round, got {first_round}..{last_round}")
    if values.shape[1] < last_round:
        raise MetricInputError(
            f"per_round_values has {values.shape[1]} rounds; the window needs rounds up to {last_round}"
        )
    window = values[:, first_round - 1 : last_round]
    if not skip_nan:
        return WindowMean(value=float(np.mean(window.mean(axis=0))), num_values=int(window.size), num_skipped=0)
    present = ~np.isnan(window)
    per_repeat_count = present.sum(axis=0)
    positions = per_repeat_count > 0  # positions with at least one defined repeat
    per_position = np.nansum(window, axis=0)[positions] / per_repeat_count[positions]
    value = float(np.mean(per_position)) if per_position.size else math.nan
    return WindowMean(value=value, num_values=int(window.size), num_skipped=int((~present).sum()))


def window_means(
    frame: pd.DataFrame, first_round: int = 15, last_round: int = 30, *, skip_nan: bool = False
) -> dict[str, Any]:
    """Table 3 protocol (fairness spec 8): per-round mean over repeats, then mean over the window.

    Every mean is :func:`table3_window_mean`. With ``skip_nan=False``
    (faithful mode: the authors had no undefined round) a NaN in the window makes the mean NaN;
    with ``skip_nan=True`` (corrected mode, where f_j / f_r are NaN in a round with fewer than 2
    positive contributions) NaN entries are left out and counted in ``num_skipped``.

    Also returns the per-repeat F_T window means (their spread is the repeat-to-repeat spread).
    Every notion of :data:`FAIRNESS_KEYS` the frame has a column for is averaged (a frame of results
    written before a notion was registered has none for it).
    """
    repeats = sorted(frame["repeat"].unique().tolist())
    window = frame[(frame["round"] >= first_round) & (frame["round"] <= last_round)]

    def mean(rows: np.ndarray):
        return table3_window_mean(rows, first_round, last_round, skip_nan=skip_nan)

    notions = [k for k in FAIRNESS_KEYS if k in frame.columns or k == GENERAL_FAIRNESS]
    matrices = {key: _round_matrix(frame, key, repeats, last_round)
                for key in (*notions, "mean_local_accuracy", "aux_accuracy")}
    means = {key: mean(values) for key, values in matrices.items()}
    per_repeat = [mean(row).value for row in matrices[GENERAL_FAIRNESS]]
    finite = [v for v in per_repeat if np.isfinite(v)]
    return {
        **{k: means[k].value for k in notions},
        "F_T_per_repeat": per_repeat,
        "F_T_std": float(np.std(finite, ddof=1)) if len(finite) > 1 else float("nan"),
        "repeats": int(window["repeat"].nunique()),
        "rounds_in_window": int(window["round"].nunique()),
        "mean_local_accuracy": means["mean_local_accuracy"].value,
        "aux_accuracy": means["aux_accuracy"].value,
        "skip_nan": bool(skip_nan),
        "num_values": int(len(repeats) * (last_round - first_round + 1)),
        "num_skipped": {k: means[k].num_skipped for k in notions},
    }


DOMINANCE_FACTOR = 3.0
"""A round is *dominated by one gain* when one participant's |gain| exceeds this many times the
median |gain| of the round's participants (:func:`repeat_window_values`)."""

REPEAT_QUANTITIES = {
    "F_T": "general fairness F_T, mean over the window rounds",
    "f_j": "individual fairness f_j, mean over the window rounds",
    "f_g": "protected-group fairness f_g, mean over the window rounds",
    "f_r": "incentive fairness f_r, mean over the window rounds",
    "f_o": "orchestrator fairness f_o, mean over the window rounds",
    "accuracy": "participants' mean local accuracy, mean over the window rounds",
    "nonpositive_s": "participant entries of the window rounds whose cumulative FedSV s is <= 0",
    "dominant_gain_rounds": "window rounds in which one participant's |gain| exceeds 3x the round's median |gain|",
}
"""The per-repeat quantities of a condition result (:func:`repeat_window_values`), by name."""


def repeat_window_values(result: dict[str, Any]) -> dict[str, list[float | int | None]]:
    """Per repeat, the :data:`REPEAT_QUANTITIES` of a condition result over its Table 3 window.

    Read from the result's ``per_round`` notions and ``per_client`` data (a result without
    per-client data has None for the counts), in the order of its repeats.

    Parameters
    ----------
    result : dict
        A condition result (:func:`condition_result`).

    Returns
    -------
    dict of str to list
        Quantity name to one value per repeat.

    Examples
    --------
    >>> result = {"window": [1, 2], "per_round": {"repeat": [0, 0], "round": [1, 2], "F_T": [0.5, 0.7],
    ...           "f_j": [0.1, 0.3], "f_g": [0.5, 0.5], "f_r": [0.4, 0.6], "f_o": [1.0, 1.4],
    ...           "mean_local_accuracy": [1.0, 1.4]},
    ...           "per_client": {"repeats": [{"repeat": 0, "round": [1, 2], "gains": [[1, 1, 4], [1, 2, 1]],
    ...                                        "num_nonpositive_s": [0, 2]}]}}
    >>> values = repeat_window_values(result)
    >>> round(values["F_T"][0], 6), values["nonpositive_s"], values["dominant_gain_rounds"]
    (0.6, [2], [1])
    """
    first, last = (int(k) for k in result["window"])
    frame = result_frame(result)
    frame = frame[(frame["round"] >= first) & (frame["round"] <= last)] if not frame.empty else frame
    repeats = sorted(frame["repeat"].unique().tolist()) if not frame.empty else []
    out: dict[str, list[Any]] = {key: [] for key in REPEAT_QUANTITIES}
    columns = {**{k: k for k in FAIRNESS_KEYS}, "accuracy": "mean_local_accuracy"}
    per_client = {int(r["repeat"]): r for r in (result.get("per_client") or {}).get("repeats", [])}
    for repeat in repeats:
        rows = frame[frame["repeat"] == repeat]
        for key, column in columns.items():
            out[key].append(float(rows[column].mean()) if column in rows else None)
        data = per_client.get(int(repeat))
        window = [] if data is None else [i for i, k in enumerate(data["round"]) if first <= k <= last]
        out["nonpositive_s"].append(None if data is None else int(sum(data["num_nonpositive_s"][i] for i in window)))
        out["dominant_gain_rounds"].append(None if data is None else sum(_dominated(data["gains"][i]) for i in window))
    return out


def _dominated(gains: Sequence[float | None]) -> bool:
    """Whether one participant's |gain| exceeds :data:`DOMINANCE_FACTOR` times the round's median |gain|."""
    values = np.abs(np.array([np.nan if g is None else g for g in gains], dtype=float))
    return bool(np.isfinite(values).any() and np.nanmax(values) > DOMINANCE_FACTOR * np.nanmedian(values))


def _sig(value: Any, digits: int) -> float | None:
    """``value`` rounded to ``digits`` significant digits; None for None / NaN / inf."""
    if value is None or not math.isfinite(float(value)):
        return None
    return float(f"{float(value):.{digits}g}")


def _sig_list(values: Any, digits: int) -> list[float | None]:
    return [_sig(v, digits) for v in np.asarray(values, dtype=float).ravel().tolist()]


def per_client_data(records: Sequence[RunRecord], *, digits: int = SIGNIFICANT_DIGITS) -> dict[str, Any]:
    """The per-client data of every round of every repeat, compactly (fairness spec 7 layout).

    From each round's ``observations["fairness"]`` (:class:`fltrust.metrics.fairness.FairnessObserver`):
    the participants' ids, accuracies, rewards, cumulative FedSV ``s``, gains and group scores,
    the count of non-positive ``s`` and the cumulative FedSV vector of all C clients. Floats are
    rounded to ``digits`` significant digits; every field is a list over rounds
    (:data:`PER_CLIENT_FIELDS`), one entry per repeat in ``repeats``.

    A round without fairness observations (an engine without the observer) is left out.
    """
    repeats = []
    for record in records:
        rows: dict[str, list[Any]] = {key: [] for key in PER_CLIENT_FIELDS}
        for r in record.rounds:
            obs = r.observations.get("fairness") if r.round >= 1 else None
            if not obs:
                continue
            rows["round"].append(int(r.round))
            rows["client_ids"].append([int(i) for i in obs["client_ids"]])
            for key in ("accuracy", "rewards", "s", "gains", "group_scores", "cumulative_shapley"):
                rows[key].append(_sig_list(obs["performance" if key == "accuracy" else key], digits))
            rows["num_nonpositive_s"].append(int(np.sum(np.asarray(obs["s"], dtype=float) <= 0)))
        repeats.append({"repeat": int(record.config["run"]["repeat"]), "run_id": record.run_id, **rows})
    return {"digits": digits, "fields": dict(PER_CLIENT_FIELDS), "repeats": repeats}


def data_scale(record: RunRecord) -> dict[str, Any]:
    """The data a run actually used, from its ``dataset.json``: source sizes, clients, and the
    median / min / max training and validation samples per client and the aux set size.
    Empty for a run folder written before ``dataset.json`` existed."""
    dataset, partition = record.dataset.get("dataset", {}), record.dataset.get("partition", {})
    if not partition:
        return {}

    def spread(values: list[int]) -> dict[str, int]:
        v = sorted(int(x) for x in values)
        return {"median": v[len(v) // 2], "min": v[0], "max": v[-1]} if v else {}

    return {
        "source_train_samples": dataset.get("train_samples"),
        "source_test_samples": dataset.get("test_samples"),
        "num_clients": partition.get("num_clients"),
        "train_per_client": spread(partition.get("train_samples", [])),
        "val_per_client": spread(partition.get("val_samples", [])),
        "aux_samples": partition.get("aux_samples"),
    }


def condition_result(name: str, records: Sequence[RunRecord], *, quick: bool) -> dict[str, Any]:
    """The JSON result a condition notebook writes (read by the summary notebook).

    ``table3`` is :func:`window_means` (NaN-aware, with skip counts, in corrected mode);
    ``per_round`` the notions per repeat and round (rounded to :data:`PER_ROUND_DIGITS`
    significant digits); ``per_client`` :func:`per_client_data`; ``scale_per_repeat`` the
    :func:`data_scale` of every repeat (results written before it hold repeat 0's as ``scale``);
    ``round_trace`` every repeat's per-round model hashes and aux values
    (:func:`fltrust.repro.results.round_trace`); ``provenance`` which code, libraries, BLAS and
    threads made the runs and wrote the result (:func:`fltrust.repro.results.result_provenance`).
    Write it with :func:`write_result` (compact lists).
    """
    frame = notions_frame(records)
    last = int(frame["round"].max())
    first = 15 if last >= 30 else max(1, last // 2)  # quick runs: second half of their rounds
    cfg = records[0].config
    mode = cfg["metrics"]["fairness"]["mode"]
    per_round = {
        key: [_sig(v, PER_ROUND_DIGITS) if isinstance(v, float) else v for v in values]
        for key, values in frame.to_dict(orient="list").items()
    }
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
        "scale_per_repeat": [data_scale(r) for r in records],
        "seconds_per_run": [r.summary.get("wall_time_s") for r in records],
        "run_ids": [r.run_id for r in records],
        "table3": window_means(frame, first, last, skip_nan=mode == "corrected"),
        "per_round": per_round,
        "per_client": per_client_data(records),
        "round_trace": [round_trace(r) for r in records],
        "provenance": result_provenance((r.run_id, r.summary) for r in records),
    }


RESULT_KEYS = (
    "condition", "quick", "complete", "mode", "rounds", "window", "num_clients", "synthetic",
    "deviations", "seconds_per_run", "run_ids", "table3", "per_round",
)
"""Keys every condition result must have (written by :func:`condition_result`)."""


def _condition(value: Any) -> str | None:
    ok = isinstance(value, str) and value.count("_") >= 2
    return None if ok else "must be a condition name <strategy>_<dataset>_<setting> (e.g. fedavg_nslkdd_100c_iid)"


def _window(value: Any) -> str | None:
    ok = isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    return None if ok else "must be [first round, last round]"


def _per_round(value: Any) -> str | None:
    if not isinstance(value, dict) or not all(isinstance(v, list) for v in value.values()):
        return "must map each column (repeat, round, f_j, ...) to a list"
    lengths = {len(v) for v in value.values()}
    return None if len(lengths) <= 1 else f"must hold lists of one length, found lengths {sorted(lengths)}"


_SPREAD = {"median": int, "min": int, "max": int}
_SCALE = {"source_train_samples": int, "source_test_samples": int, "num_clients": Maybe(int),
          "train_per_client": Maybe(_SPREAD), "val_per_client": Maybe(_SPREAD), "aux_samples": Maybe(int)}


def _scales(value: Any) -> str | None:
    """``scale_per_repeat``: one :data:`_SCALE` (or an empty mapping) per repeat."""
    if not isinstance(value, list):
        return "must be a list of one data scale per repeat"
    for repeat, scale in enumerate(value):
        why = schema_problem(scale, Maybe(_SCALE))
        if why is not None:
            return f"repeat {repeat}: {why}"
    return None


RESULT_SCHEMA = {
    "condition": _condition, "quick": bool, "complete": bool,
    "mode": lambda v: None if v in FAIRNESS_MODES else f"must be one of {list(FAIRNESS_MODES)}",
    "rounds": int, "window": _window, "num_clients": int, "synthetic": bool, "deviations": TEXT_LIST,
    "scale": Maybe(_SCALE), "scale_per_repeat": Maybe(_scales), "seconds_per_run": NUMBER_LIST, "run_ids": TEXT_LIST,
    "table3": Lazy(lambda: {GENERAL_FAIRNESS: NUMBER, "F_T_std": NUMBER, "repeats": int, "mean_local_accuracy": NUMBER,
                            "num_skipped": Maybe(Each(int)), **{name: Maybe(NUMBER) for name in NOTIONS}}),
    "per_round": _per_round, "per_client": Maybe(dict),
}
"""What a reader checks in every condition result (:func:`fltrust.repro.results.check_fields`;
``fltrust.repro.fairness.report.load_results``): the fields the tables and figures read, with their types."""


_FLAT_ITEM = r'(?:-?\d[\d.eE+-]*|null|true|false|"[0-9a-f]{64}")'
_FLAT_LIST = re.compile(rf"\[\s*({_FLAT_ITEM}(?:\s*,\s*{_FLAT_ITEM})*)\s*\]")


def result_json(result: dict[str, Any]) -> str:
    """A condition result as JSON text: indented, but every list of numbers (or of model hashes) on one line."""
    text = json.dumps(to_plain(result), indent=1, allow_nan=False)
    return _FLAT_LIST.sub(lambda m: "[" + ", ".join(p.strip() for p in m.group(1).split(",")) + "]", text) + "\n"


def write_result(path: str | Path, result: dict[str, Any]) -> Path:
    """Write a condition result atomically (:func:`result_json`) with its record hash
    (:func:`fltrust.repro.results.with_integrity`, checked when it is read); returns ``path``."""
    path = Path(path)
    atomic_write_text(path, result_json(with_integrity(result)))
    return path


def result_path(name: str, mode: str = "faithful", results_dir: str | Path = RESULTS_DIR) -> Path:
    """Where the batch writes the result of ``name`` in ``mode`` (``<name>[-<mode>].json``)."""
    return Path(results_dir) / (f"{name}.json" if mode == "faithful" else f"{name}-{mode}.json")


def rewrite_result(
    name: str,
    *,
    mode: str = "faithful",
    results_dir: str | Path = RESULTS_DIR,
    runs_dir: str | Path = RUNS_DIR,
) -> Path:
    """Rewrite a condition result from its reloaded run folders (no training).

    Reads the existing result's ``run_ids`` and ``quick`` flag, reloads those run folders from
    ``runs_dir`` and writes :func:`condition_result` over it (e.g. to add the per-client data
    to a result written by an older version).

    Raises
    ------
    FileNotFoundError
        If the result or one of its run folders is missing (then only a rerun can rewrite it).
    ValueError
        If a run folder is not complete or holds another condition.
    """
    path = result_path(name, mode, results_dir)
    if not path.is_file():
        raise FileNotFoundError(f"no result {path}; run the condition first (fltrust repro fairness)")
    old = json.loads(path.read_text())
    folders = [Path(runs_dir) / run_id for run_id in old["run_ids"]]
    missing = [f.name for f in folders if not (f / "rounds.jsonl").is_file()]
    if missing:
        raise FileNotFoundError(f"{name}: run folders {missing} are not under {runs_dir}; the result can only be rerun")
    records = [load_run(f) for f in folders]
    for record in records:
        if record.summary.get("status") != "complete":
            raise ValueError(f"{record.run_id} is not complete (status {record.summary.get('status')!r})")
        if record.config["run"]["name"] != name:
            raise ValueError(f"{record.run_id} belongs to {record.config['run']['name']!r}, not {name!r}")
    return write_result(path, condition_result(name, records, quick=bool(old["quick"])))


@dataclass(frozen=True)
class Variant:
    """One run of a Table 3 condition with switches flipped: the unit of every experiment and study.

    Attributes
    ----------
    condition : str
        The Table 3 condition (``configs/<condition>.yaml``).
    overrides : mapping
        Dotted config paths and their values (``{"partition.seed": 3}``); empty = the Table 3 run.
    rounds : int or None
        Server rounds (``None``: the condition's 30).
    repeat : int
        The repeat, i.e. seed 0 + ``repeat`` (model initialisation, client sampling, batch order, and
        the partition unless ``partition.seed`` is overridden).

    Examples
    --------
    >>> v = Variant("fedavg_cifar10_10c_niid", {"partition.seed": 3})
    >>> cfg = v.config()
    >>> cfg.partition.seed, cfg.effective_seed(), cfg.training.rounds
    (3, 0, 30)
    >>> v.describe()
    {'condition': 'fedavg_cifar10_10c_niid', 'overrides': {'partition.seed': 3}, 'rounds': None, 'repeat': 0}
    """

    condition: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    rounds: int | None = None
    repeat: int = 0

    def config(self, *, device: Device = "auto") -> ExperimentConfig:
        """The run's config: the condition's repeat ``repeat`` with ``overrides`` and ``rounds``."""
        return condition_configs(self.condition, repeats=self.repeat + 1, rounds=self.rounds, device=device,
                                 extra=dict(self.overrides))[self.repeat]

    def run(self, out_dir: str | Path, *, device: Device = "auto") -> RunRecord:
        """Run (or reload, when complete) the variant into ``out_dir/<run id>``; returns the record."""
        from fltrust.experiment import run_experiment

        return run_experiment(self.config(device=device), out_dir=out_dir)

    def describe(self) -> dict[str, Any]:
        """The variant as plain data (stored with its result)."""
        return {**asdict(self), "overrides": dict(self.overrides)}


def run_variant(
    name: str,
    label: str,
    overrides: dict[str, Any],
    *,
    rounds: int | None = None,
    purpose: str = "",
    out_dir: str | Path = EXPERIMENTS_DIR,
    device: Device = "auto",
) -> dict[str, Any]:
    """A cheap experiment: one repeat (seed 0) of condition ``name`` with one or more switches flipped.

    Runs (or reloads) the :class:`Variant` ``(name, overrides, rounds)``, writes its
    :func:`condition_result` plus ``variant_of``, ``label``, ``overrides`` and ``purpose`` to
    ``out_dir/<label>.json`` (run folder under ``out_dir/runs``) and returns it. The committed
    result of ``name`` is the baseline it is compared with (``misses.yaml``). Studies of many runs:
    :mod:`fltrust.repro.fairness.studies`.
    """
    out_dir = Path(out_dir)
    record = Variant(name, overrides, rounds).run(out_dir / "runs", device=device)
    result = condition_result(name, [record], quick=False)
    result.update(variant_of=name, label=label, overrides=dict(overrides), purpose=purpose)
    write_result(out_dir / f"{label}.json", result)
    return result


def result_frame(result: dict[str, Any]) -> pd.DataFrame:
    """The per-round notions of a condition result as a :func:`notions_frame` table."""
    frame = pd.DataFrame(result["per_round"])
    return frame.apply(pd.to_numeric) if not frame.empty else frame


def load_reported() -> dict[str, Any]:
    """``papers_repro/fairness_analytics/reported.yaml``."""
    return yaml.safe_load((PAPER_INPUTS / "reported.yaml").read_text())


def table3(results: Sequence[dict[str, Any]], reported: dict[str, Any] | None = None) -> pd.DataFrame:
    """Paper vs ours per condition: mean ± std of F_T, delta, within ±0.05 and within the tolerance.

    ``within_strict``: |Δ| <= :data:`STRICT_TOLERANCE` (0.05); ``within_tolerance``: |Δ| <= the
    absolute tolerance of ``reported.yaml`` (0.10). ``skipped`` is the number of NaN
    notion-round entries left out of the window means (corrected mode only).
    """
    reported = reported or load_reported()
    tol = float(reported["tolerance"]["absolute"])
    rows = []
    for res in results:
        name = res["condition"]
        strategy, dataset_key, setting = split_condition(name)
        ours = _num(res["table3"][GENERAL_FAIRNESS])  # None (every round NaN) -> NaN
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
            "within_tolerance": None if delta is None else bool(abs(delta) <= tol + 1e-12),
            "within_strict": None if delta is None else bool(abs(delta) <= STRICT_TOLERANCE + 1e-12),
            **{k: res["table3"].get(k) for k in NOTIONS},  # None: a result from before the notion
            "mean_local_accuracy": res["table3"]["mean_local_accuracy"],
            "skipped": sum((res["table3"].get("num_skipped") or {}).values()),
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
        One row per result: ``condition``, ``dataset`` (Table 3 label), ``dataset_key``,
        ``clients`` (our client count), ``strategy``, ``setting``, ``mode``, ``F_T``,
        ``mean_local_accuracy``, ``window``, ``quick``, ``synthetic``.
    """
    rows = []
    for res in results:
        if res["rounds"] >= last_round:
            frame = result_frame(res)
            means = window_means(frame, first_round, last_round, skip_nan=res["mode"] == "corrected")
            window = (first_round, last_round)
        else:
            means, window = res["table3"], tuple(res["window"])
        rows.append(figure4_row(res["condition"], res["num_clients"], res["mode"], means, window,
                                quick=res["quick"], synthetic=res["synthetic"]))
    return pd.DataFrame(rows)


def figure4_row(condition: str, clients: int, mode: str, means: Mapping[str, Any], window: tuple[int, int], *,
                quick: bool = False, synthetic: bool = False) -> dict[str, Any]:
    """One row of :func:`figure4_frame` (ours, or the authors':
    :func:`fltrust.repro.fairness.authors.authors_figure4_frame`) from a condition's window means."""
    strategy, key, setting = split_condition(condition)
    return {"condition": condition, "dataset": DATASETS[key].paper_label if key in DATASETS else key, "dataset_key": key,
            "clients": clients, "strategy": strategy, "setting": setting, "mode": mode,
            GENERAL_FAIRNESS: _num(means[GENERAL_FAIRNESS]), "mean_local_accuracy": _num(means["mean_local_accuracy"]),
            "window": window, "quick": quick, "synthetic": synthetic}


__all__ = [
    "DOMINANCE_FACTOR",
    "RESULT_KEYS",
    "RESULT_SCHEMA",
    "Variant",
    "PER_CLIENT_FIELDS",
    "REPEAT_QUANTITIES",
    "QUICK_OVERRIDES",
    "STRICT_TOLERANCE",
    "condition_configs",
    "run_condition",
    "notions_frame",
    "WindowMean",
    "table3_window_mean",
    "window_means",
    "per_client_data",
    "condition_result",
    "result_json",
    "write_result",
    "result_path",
    "rewrite_result",
    "run_variant",
    "result_frame",
    "repeat_window_values",
    "load_reported",
    "table3",
    "figure4_frame",
    "figure4_row",
]
