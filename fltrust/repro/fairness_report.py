"""RESULTS.md of the Federated Fairness Analytics reproduction: paper vs ours, in the paper's layout.

The summary notebook (``notebooks/fairness/summary.ipynb``) loads every condition result with
:func:`load_results`, builds :func:`summary_table` (:func:`fltrust.repro.fairness.table3` plus
mode, window and timing) and hands both to :func:`write_results_md`. The file has, in order:

1. a header naming the command that regenerates it (``fltrust repro fairness``) and, for quick
   or synthetic-data results, a loud note that they are smoke tests, not comparable with the paper;
2. per fairness mode, Table 3 in the paper's layout (rows = dataset, columns = strategy x
   setting), every cell ``paper / ours ± std (n) / Δ / ✓✗`` or ``paper / not run``;
3. the tolerance and its reason (``papers_repro/fairness_analytics/reported.yaml``);
4. a long table, one row per condition: f_j, f_g, f_r, f_o, F_T, accuracy, rounds, window,
   clients, repeats, seconds per run;
5. every distinct deviation from the paper's setting, naming the conditions it applies to;
6. the conditions not run yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fltrust.repro.batch import ResultsError, load_result_files
from fltrust.repro.markdown import format_number, is_missing, markdown_table
from fltrust.repro.fairness import load_reported, table3
from fltrust.repro.fairness_conditions import DATASETS, SETTINGS, STRATEGIES, all_conditions, condition_name
from fltrust.core.io import atomic_write_text

__all__ = [
    "RESULT_KEYS",
    "STRATEGY_LABELS",
    "ResultsError",
    "load_results",
    "missing_conditions",
    "results_markdown",
    "summary_table",
    "TABLE_COLUMNS",
    "write_results_md",
]

RESULT_KEYS = (
    "condition", "quick", "complete", "mode", "rounds", "window", "num_clients", "synthetic",
    "deviations", "seconds_per_run", "run_ids", "table3", "per_round",
)
"""Keys every condition result must have (written by :func:`fltrust.repro.fairness.condition_result`)."""

TABLE_COLUMNS = (
    "condition", "dataset", "strategy", "setting", "paper_F_T", "ours_F_T", "ours_std", "repeats", "delta",
    "within_tolerance", "f_j", "f_g", "f_r", "f_o", "mean_local_accuracy", "rounds", "clients", "quick",
    "synthetic", "mode", "window", "seconds_per_run",
)
"""Columns of :func:`summary_table` (those of :func:`fltrust.repro.fairness.table3` plus mode, window, timing)."""

STRATEGY_LABELS = {"fedavg": "FedAvg", "qfedavg": "q-FedAvg", "ditto": "Ditto"}
"""Column labels of Table 3."""

REGENERATE = "fltrust repro fairness"




def load_results(results_dir: str | Path) -> list[dict[str, Any]]:
    """Every ``*.json`` condition result of a folder, sorted by file name.

    Parameters
    ----------
    results_dir : str or Path
        Folder written by the condition notebooks (``.../results``). A missing folder gives an
        empty list (no condition has run yet).

    Returns
    -------
    list of dict
        The results as written by :func:`fltrust.repro.fairness.condition_result`.

    Raises
    ------
    ResultsError
        If a file is not valid JSON or lacks one of :data:`RESULT_KEYS` (rerun its condition).
    """
    results = load_result_files(results_dir, "*.json", RESULT_KEYS, "condition_result")
    return results


def missing_conditions(results: Sequence[dict[str, Any]], mode: str = "faithful") -> list[str]:
    """Names of the 24 Table 3 conditions that have no result in ``mode`` (Table 3 order)."""
    done = {r["condition"] for r in results if r["mode"] == mode}
    return [condition_name(*c) for c in all_conditions() if condition_name(*c) not in done]




def _fmt(value: Any, digits: int = 3, *, signed: bool = False) -> str:
    return format_number(value, digits, signed=signed)


def _cell(row: pd.Series | None, paper: float | None) -> str:
    """``paper / ours ± std (n) / Δ / ✓✗`` of one Table 3 cell."""
    paper_text = "–" if paper is None else f"{paper:.2f}"
    if row is None:
        return f"{paper_text} / not run"
    ours = _fmt(row["ours_F_T"])
    if not is_missing(row["ours_std"]):
        ours += f" ± {_fmt(row['ours_std'])}"
    ours += f" (n={int(row['repeats'])})"
    if is_missing(row["within_tolerance"]) or is_missing(row["delta"]):
        return f"{paper_text} / {ours}"
    mark = "✓" if bool(row["within_tolerance"]) else "✗"
    return f"{paper_text} / {ours} / Δ {_fmt(row['delta'], signed=True)} / {mark}"




def _add_result_columns(table: pd.DataFrame, results: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """``table`` (one row per result, same order) with each result's mode, window and seconds per run."""
    if len(table) != len(results):
        raise ResultsError(
            f"table has {len(table)} rows but there are {len(results)} results; build it with table3(results)"
        )
    if table.empty:
        return pd.DataFrame(columns=list(TABLE_COLUMNS))
    table = table.reset_index(drop=True).copy()
    for i, res in enumerate(results):
        if table.at[i, "condition"] != res["condition"]:
            raise ResultsError(
                f"table row {i} is {table.at[i, 'condition']!r} but result {i} is {res['condition']!r}; "
                "build the table with table3(results) from the same list"
            )
    table["mode"] = [r["mode"] for r in results]
    table["window"] = [tuple(r["window"]) for r in results]
    seconds = [[s for s in r["seconds_per_run"] if s is not None] for r in results]
    table["seconds_per_run"] = [sum(s) / len(s) if s else float("nan") for s in seconds]
    return table


def summary_table(results: Sequence[dict[str, Any]], reported: dict[str, Any] | None = None) -> pd.DataFrame:
    """:func:`fltrust.repro.fairness.table3` of ``results`` plus their ``mode``, ``window`` and ``seconds_per_run``.

    One row per result (a condition run in two modes gives two rows). An empty ``results`` gives
    an empty frame with :data:`TABLE_COLUMNS`.
    """
    return _add_result_columns(table3(results, reported), results)


def results_markdown(
    table: pd.DataFrame,
    results: Sequence[dict[str, Any]],
    *,
    quick: bool,
    reported: dict[str, Any] | None = None,
) -> str:
    """The text of RESULTS.md (see the module docstring for its sections).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`fltrust.repro.fairness.table3` or :func:`summary_table` of ``results`` (one row per
        result, same order).
    results : sequence of dict
        Condition results (:func:`load_results`).
    quick : bool
        The batch ran with ``--quick``; any quick result also triggers the quick note.

    Raises
    ------
    ResultsError
        If ``table`` was not built from ``results`` (row count or order differ).
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`fltrust.repro.fairness.load_reported`).

    Returns
    -------
    str
        Markdown.
    """
    reported = reported or load_reported()
    tolerance = reported["tolerance"]
    table = _add_result_columns(table, results)
    quick = quick or any(r["quick"] for r in results)
    synthetic = sorted(r["condition"] for r in results if r["synthetic"])
    command = REGENERATE + (" --quick" if quick else "")

    out = [
        "# Federated Fairness Analytics: reproduction of Table 3",
        "",
        f"Generated by `{command}` (the summary notebook `notebooks/fairness/summary.ipynb`); do not edit by hand.",
        f"Metric: general fairness F_T (paper Eq. 13), {reported['source']['protocol']}.",
        "",
    ]
    if quick:
        out += [
            "> **⚠ QUICK RUN: these numbers are smoke tests, NOT comparable with the paper.**",
            "> `--quick` shrinks rounds, clients, local epochs and data so that a condition runs in CPU",
            "> minutes; the Table 3 window becomes the second half of the run's rounds. Run",
            f"> `{REGENERATE}` (without `--quick`) for a comparison.",
            "",
        ]
    if synthetic:
        out += [
            "> **⚠ SYNTHETIC DATA: the real dataset was missing for "
            + ", ".join(synthetic)
            + "; these cells are not comparable with the paper.**",
            "",
        ]
    out += [f"Results: {len(results)} condition result(s). Cell: `paper / ours ± std (n) / Δ / ✓✗` "
            "(std over repeats of the per-repeat window mean; ✓ = |Δ| within the tolerance).", ""]

    modes = sorted({r["mode"] for r in results} | {"faithful"}, key=lambda m: (m != "faithful", m))
    columns = [(s, t) for s in STRATEGIES for t in SETTINGS]
    for mode in modes:
        sub = table[table["mode"] == mode]
        out += [f"## Table 3, {mode} mode", ""]
        if mode != "faithful":
            out += [f"The {mode} metrics change the definitions (fairness spec 9): Δ is shown for orientation, "
                    "not as a reproduction check.", ""]
        rows = []
        for key, setup in DATASETS.items():
            cells = [setup.paper_label]
            for strategy, setting in columns:
                name = condition_name(strategy, key, setting)
                match = sub[sub["condition"] == name]
                cells.append(_cell(None if match.empty else match.iloc[0], reported["values"].get(name)))
            rows.append(cells)
        out += markdown_table(["Dataset"] + [f"{STRATEGY_LABELS[s]} {t}" for s, t in columns], rows)
        checked = sub[sub["within_tolerance"].notna()] if not sub.empty else sub
        within = int(checked["within_tolerance"].astype(bool).sum()) if not checked.empty else 0
        out += ["", f"{within} of {len(checked)} run condition(s) within tolerance; "
                f"{len(missing_conditions(results, mode))} of {len(all_conditions())} not run.", ""]

    out += [
        "## Tolerance",
        "",
        f"|Δ| ≤ {float(tolerance['absolute']):.2f} (absolute, on F_T). {' '.join(str(tolerance['reason']).split())}",
        "",
        "## Per condition",
        "",
    ]
    long_rows = []
    for _, row in table.sort_values(["mode", "condition"]).iterrows():
        long_rows.append([
            row["condition"], row["mode"],
            *(_fmt(row[k]) for k in ("f_j", "f_g", "f_r", "f_o")),
            _fmt(row["ours_F_T"]), _fmt(row["mean_local_accuracy"]),
            str(int(row["rounds"])), f"{row['window'][0]}-{row['window'][1]}", str(int(row["clients"])),
            str(int(row["repeats"])), _fmt(row["seconds_per_run"], 1),
            " ".join(flag for flag in ("quick", "synthetic") if row[flag]),
        ])
    if long_rows:
        out += markdown_table(
            ["condition", "mode", "f_j", "f_g", "f_r", "f_o", "F_T", "accuracy", "rounds", "window",
             "clients", "repeats", "s / run", "flags"],
            long_rows,
        )
    else:
        out += ["No condition has run yet."]
    out += ["", "accuracy = mean local validation accuracy of the participants after local training "
            "(= f_o), averaged over the window.", ""]

    out += ["## Deviations from the paper's setting", ""]
    deviations: dict[str, list[str]] = {}
    for res in results:
        for text in res["deviations"]:
            deviations.setdefault(text, [])
            if res["condition"] not in deviations[text]:
                deviations[text].append(res["condition"])
    if deviations:
        out += [f"- {text} ({', '.join(sorted(names))})" for text, names in deviations.items()]
    else:
        out += ["None recorded in the results."]
    out += ["", "## Not run", ""]
    for mode in modes:
        missing = missing_conditions(results, mode)
        out += [f"- {mode}: " + (", ".join(missing) if missing else "none (all 24 conditions have results)")]
    return "\n".join(out) + "\n"


def write_results_md(
    table: pd.DataFrame,
    results: list[dict[str, Any]],
    path: str | Path,
    *,
    quick: bool,
    reported: dict[str, Any] | None = None,
) -> Path:
    """Write RESULTS.md (:func:`results_markdown`) atomically: temporary file, then ``os.replace``.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`fltrust.repro.fairness.table3` or :func:`summary_table` of ``results``.
    results : list of dict
        Condition results (:func:`load_results`).
    path : str or Path
        Output file (parent folders are created).
    quick : bool
        The batch ran with ``--quick`` (adds the loud smoke-test note).
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`fltrust.repro.fairness.load_reported`).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    atomic_write_text(path, results_markdown(table, results, quick=quick, reported=reported))
    return path
