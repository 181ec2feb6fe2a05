"""RESULTS.md of the Federated Fairness Analytics reproduction: paper vs ours, in the paper's layout.

The summary notebook (``notebooks/fairness/summary.ipynb``) loads every condition result with
:func:`load_results`, builds :func:`summary_table` (:func:`fltrust.repro.fairness.run.table3` plus
mode, window and timing) and hands both to :func:`write_results_md`. The file has, in order:

1. a header naming the command that regenerates it (``fltrust repro fairness``) and, for quick
   or synthetic-data results, a loud note that they are smoke tests, not comparable with the paper;
2. per fairness mode, Table 3 in the paper's layout (rows = dataset, columns = strategy x
   setting), every cell ``paper / ours ± std (n) / Δ / ✓✓|✓|✗`` or ``paper / not run``, then
   the same comparison as a long table with explicit ``within ±0.05`` and ``within ±0.10``
   columns;
3. the tolerance and its reason (``papers_repro/fairness_analytics/reported.yaml``);
4. the stale results (run ids that the current configuration would not produce), then every
   miss (faithful mode, |Δ| > 0.05), worst first: our notions, the shift a single notion
   would need to close the gap, and from ``papers_repro/fairness_analytics/misses.yaml`` the
   notion that drives it, the cause, and the cheap experiment that tested the cause with its
   result; a miss without an entry is reported as an unexplained finding; then the studies that
   measure a miss (:mod:`fltrust.repro.fairness.studies`: partition draws, more repeats, aux set
   size) from ``experiments/<study>.json``, or for one not run yet its estimate and command;
5. a long table, one row per condition: the notions (f_j, f_g, f_r, f_o and every other registered
   notion the results hold), F_T, accuracy, rounds, window, clients, repeats, NaN entries skipped
   by the window mean (corrected mode), seconds per run;
6. every distinct deviation from the paper's setting, naming the conditions it applies to, with
   the number of repeats and the seeding;
7. the conditions not run yet.

Given the authors' runs (``authors``: :func:`fltrust.repro.fairness.authors.load_authors_runs`), every
faithful Table 3 cell also ends with the authors' per-repeat F_T and Welch's p, and a section
after the Table 3 tables sets their runs beside ours (:func:`authors_markdown`); when none of their
files is under the data root, that section is one line saying so and how to fetch them.

The text is the Jinja2 template ``templates/fairness/results.md.j2`` (with its sections ``misses``
and ``data_scale``) over tables built here as DataFrames of display strings with the formatters of
:mod:`fltrust.repro.markdown`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from fltrust.metrics.fairness.notions import PAPER_NOTIONS
from fltrust.metrics.fairness.registry import GENERAL_FAIRNESS, NOTIONS, NotionKeys, resolve_weights
from fltrust.repro.results import ResultsError, load_result_files
from fltrust.repro.markdown import fmt, grouped, is_missing, lines, mark, render
from fltrust.repro.provenance_table import load_verified, provenance_frame, provenance_section
from fltrust.repro.provenance_table import provenance_markdown as _provenance_lines
from fltrust.repro.fairness.run import (
    PAPER_DIR,
    PAPER_INPUTS,
    REPEAT_QUANTITIES,
    REPO,
    RESULT_KEYS,
    RESULT_SCHEMA,
    STRICT_TOLERANCE,
    load_reported,
    repeat_window_values,
    table3,
)
from fltrust.repro.fairness.studies import (
    RUN_SCRIPT,
    STUDIES,
    Study,
    distribution,
    estimate,
    group_values,
    load_studies,
    run_values,
    study_runs,
)
from fltrust.repro.fairness.authors import AuthorsRuns, compare_with_authors, welch_test
from fltrust.repro.fairness.conditions import CONDITIONS, DATASETS, SETTINGS, STRATEGIES, condition_name
from fltrust.repro.fairness.conditions import split_condition
from fltrust.core.io import atomic_write_text

__all__ = [
    "MISSES_PATH",
    "authors_markdown",
    "RESULT_KEYS",
    "RESULT_SCHEMA",
    "load_misses",
    "misses_number_problems",
    "provenance_markdown",
    "result_scales",
    "STRATEGY_LABELS",
    "ResultsError",
    "load_results",
    "missing_conditions",
    "results_markdown",
    "stale_results",
    "studies_markdown",
    "summary_table",
    "TABLE_COLUMNS",
    "write_results_md",
]

TABLE_COLUMNS = NotionKeys(
    before=("condition", "dataset", "strategy", "setting", "paper_F_T", "ours_F_T", "ours_std", "repeats", "delta",
            "within_tolerance", "within_strict"),
    after=("mean_local_accuracy", "skipped", "rounds", "clients", "quick", "synthetic", "mode", "window",
           "seconds_per_run"),
    general=False,
)
"""Columns of :func:`summary_table` (those of :func:`fltrust.repro.fairness.run.table3`, one per registered
notion, plus mode, window, timing); a live view of the notion table."""

STRATEGY_LABELS = {"fedavg": "FedAvg", "qfedavg": "q-FedAvg", "ditto": "Ditto"}
"""Column labels of Table 3."""

REGENERATE = "fltrust repro fairness"

MISSES_PATH = PAPER_INPUTS / "misses.yaml"
"""Why each miss misses: driving notion, cause, the cheap experiment and its result (hand-written)."""

CAUSES = ("data scale", "data source", "paper bug", "our bug", "seed spread", "unexplained")
"""Allowed ``cause`` values of ``misses.yaml``."""

SEEDING = ("our runs are seeded (model initialisation, client sampling, splits and data order: seed 0 + repeat); "
           "the authors' were not (fairness spec 4), so our repeats differ only by seed, theirs by everything")




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
        The results as written by :func:`fltrust.repro.fairness.run.condition_result`.

    Raises
    ------
    ResultsError
        If a file is not valid JSON or lacks one of :data:`RESULT_KEYS` (rerun its condition).
    """
    return load_result_files(results_dir, "*.json", RESULT_KEYS, "condition_result", RESULT_SCHEMA)


def load_misses(path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The hand-written miss explanations (``misses.yaml``), by condition; {} when the file is absent.

    Raises
    ------
    ResultsError
        If an entry lacks ``notion``, ``cause`` or ``experiment`` or names an unknown cause.
    """
    path = Path(path) if path is not None else MISSES_PATH
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    entries = data.get("misses", {}) or {}
    for name, entry in entries.items():
        missing = [k for k in ("notion", "cause", "explanation", "experiment") if k not in (entry or {})]
        if missing:
            raise ResultsError(f"{path}: entry {name} lacks {missing}")
        if entry["cause"] not in CAUSES:
            raise ResultsError(f"{path}: entry {name} has cause {entry['cause']!r}; choose one of {list(CAUSES)}")
        for key, text in (entry.get("per_repeat") or {}).items():
            quantity = key.rsplit("/", 1)[-1]
            if quantity not in REPEAT_QUANTITIES:
                raise ResultsError(f"{path}: entry {name} per_repeat key {key!r} names no quantity; use one of "
                                   f"{list(REPEAT_QUANTITIES)} (or <condition>/<quantity>)")
            if not isinstance(text, str) or not all(_QUOTED.fullmatch(v.strip()) for v in text.split("/")):
                raise ResultsError(f"{path}: entry {name} per_repeat {key}: {text!r} is not 'a / b / c' "
                                   "(one number, or '-' when not quoted, per repeat; quote the YAML value)")
        if not isinstance(entry.get("history") or [], list):
            raise ResultsError(f"{path}: entry {name} history must be a list of 'a / b / c: what it was' lines")
    return entries


_QUOTED = re.compile(r"-|-?\d+(?:\.\d+)?")
_TRIPLE = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?(?: / -?\d+(?:\.\d+)?){2,}(?!\d|\.\d)")


def misses_number_problems(
    misses: dict[str, dict[str, Any]] | None = None, results: Sequence[dict[str, Any]] | None = None,
    studies: dict[str, Any] | None = None,
) -> list[str]:
    """Every per-repeat number of ``misses.yaml`` that the data do not give, one line each.

    An entry quotes per-repeat numbers in ``per_repeat`` (``quantity: "a / b / c"``, one value per
    repeat, ``-`` where the text quotes none; ``<condition>/<quantity>`` for another condition): each
    is compared with :func:`fltrust.repro.fairness.run.repeat_window_values` of the faithful result,
    at the decimals typed. ``<study>:<group>/<quantity>`` quotes the runs of a study's group, one
    value per run (:func:`fltrust.repro.fairness.studies.group_values`). Every ``a / b / c`` in the
    entry's text must be one of them (for a study under way, one without its trailing ``-`` runs not
    yet done), or the start of a ``history`` line (a number of an earlier result, in git history,
    that no committed file holds).

    Parameters
    ----------
    misses : dict, optional
        :func:`load_misses` (default: the committed file).
    results : sequence of dict, optional
        Condition results (default: the committed ones).
    studies : dict, optional
        Study files by label (default: :func:`fltrust.repro.fairness.studies.load_studies`).

    Returns
    -------
    list of str
        ``misses.yaml <entry>: <key> repeat <r>: typed <a>, the data give <b>``, and the unlisted
        quotes; empty when every number matches.
    """
    from fltrust.repro.fairness.run import RESULTS_DIR

    misses = load_misses() if misses is None else misses
    results = load_results(RESULTS_DIR) if results is None else results
    faithful = {r["condition"]: r for r in results if r["mode"] == "faithful"}
    values: dict[str, dict[str, list[Any]]] = {}
    problems = []
    for name, entry in misses.items():
        quotes = {key: str(text) for key, text in (entry.get("per_repeat") or {}).items()}
        for key, text in quotes.items():
            condition, quantity = key.rsplit("/", 1) if "/" in key else (name, key)
            if ":" in condition:  # <study>:<group>
                label, group = condition.split(":", 1)
                studies = load_studies() if studies is None else studies
                study = next((s for s in STUDIES if s.label == label), None)
                if study is None or group not in study.groups:
                    problems.append(f"misses.yaml {name}: {key}: no study {label} with a group {group}; studies: "
                                    f"{[s.label + ':' + g for s in STUDIES for g in s.groups]}")
                    continue
                if condition not in values:
                    values[condition] = group_values(study, studies.get(label), group)
            elif condition not in faithful:
                problems.append(f"misses.yaml {name}: {key}: no faithful result of {condition}")
                continue
            if condition not in values:
                values[condition] = repeat_window_values(faithful[condition])
            data = values[condition][quantity]
            typed = [v.strip() for v in text.split("/")]
            if len(typed) != len(data):
                problems.append(f"misses.yaml {name}: {key}: {len(typed)} values typed, the result has {len(data)} "
                                "repeats (runs)")
                continue
            for repeat, (t, v) in enumerate(zip(typed, data)):
                decimals = len(t.split(".")[1]) if "." in t else 0
                # a number typed with d decimals must be the value rounded to d decimals (either way at a tie)
                if t != "-" and (v is None or not abs(float(t) - float(v)) <= 0.5 * 10 ** -decimals + 1e-9):
                    shown = "none" if v is None else f"{float(v):.{decimals}f} ({float(v):.6g})"
                    problems.append(f"misses.yaml {name}: {key} repeat {repeat}: typed {t}, the data give {shown}")
        history = [str(line).split(":", 1)[0].strip() for line in entry.get("history") or []]
        experiment = entry.get("experiment") or {}
        text = " ".join(str(part) for part in (entry.get("explanation"), entry.get("evidence"),
                                               experiment.get("name"), experiment.get("result")) if part)
        listed = set(quotes.values()) | {re.sub(r"(?: / -)+$", "", q) for q in quotes.values()}
        for quote in _TRIPLE.findall(" ".join(text.split())):
            if quote not in listed and quote not in history:
                problems.append(f"misses.yaml {name}: its text quotes {quote}, which is neither under per_repeat "
                                "(checked against the data) nor under history (an earlier result)")
    return problems


def stale_results(results: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """(condition, reason) of every non-quick result whose runs are not those the current config asks for.

    The batch would redo such a result (its run ids hold another config hash, e.g. a result made
    before a faithful-mode fix, whose rerun failed); it is still shown, with this flag.
    """
    from fltrust.repro.fairness.run import condition_configs

    stale = []
    for res in results:
        if res["quick"]:
            continue
        name = res["condition"]
        try:
            configs = condition_configs(name, repeats=len(res["run_ids"]), mode=res["mode"])
        except (FileNotFoundError, ValueError) as exc:
            stale.append((name, f"no current config ({exc})"))
            continue
        expected = [cfg.run_id() for cfg in configs]
        if sorted(r.replace("-synthetic", "") for r in res["run_ids"]) != sorted(expected):
            stale.append((name, f"holds runs {', '.join(res['run_ids'])}; the current {res['mode']} config gives "
                                f"{', '.join(expected)}"))
    return stale


def missing_conditions(results: Sequence[dict[str, Any]], mode: str = "faithful") -> list[str]:
    """Names of the 24 Table 3 conditions that have no result in ``mode`` (Table 3 order)."""
    done = {r["condition"] for r in results if r["mode"] == mode}
    return [name for name in CONDITIONS if name not in done]


# ---------------------------------------------------------------------------------------------
# Markdown: tables of display strings for the templates in fltrust/repro/templates/fairness/
# ---------------------------------------------------------------------------------------------

TEMPLATE = "fairness/results.md.j2"
"""RESULTS.md's template (with its sections ``fairness/misses.md.j2`` and ``fairness/data_scale.md.j2``)."""

DIGITS = 3
"""Decimals of our F_T, notions and accuracies (the paper's Table 3 has 2)."""


def _ours(row: pd.Series) -> str:
    """``ours ± std`` of one result (no std with a single repeat)."""
    text = fmt(row["ours_F_T"], DIGITS)
    return text if is_missing(row["ours_std"]) else f"{text} ± {fmt(row['ours_std'], DIGITS)}"


def _cell(row: pd.Series | None, paper: float | None) -> str:
    """``paper / ours ± std (n) / Δ / ✓✓|✓|✗`` of one Table 3 cell."""
    paper_text = fmt(paper, 2)
    if row is None:
        return f"{paper_text} / not run"
    ours = f"{_ours(row)} (n={int(row['repeats'])})"
    if is_missing(row["within_tolerance"]) or is_missing(row["delta"]):
        return f"{paper_text} / {ours}"
    return (f"{paper_text} / {ours} / Δ {fmt(row['delta'], DIGITS, signed=True)} / "
            f"{mark(row['within_tolerance'], row['within_strict'])}")


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
    """:func:`fltrust.repro.fairness.run.table3` of ``results`` plus their ``mode``, ``window`` and ``seconds_per_run``.

    One row per result (a condition run in two modes gives two rows). An empty ``results`` gives
    an empty frame with :data:`TABLE_COLUMNS`.
    """
    return _add_result_columns(table3(results, reported), results)


def _single_notion_shifts(row: pd.Series, notions: Sequence[str]) -> str:
    """What one notion alone would have to be for F_T to equal the paper's value.

    F_T is the weighted mean of the notions with the registered default weights (what the
    conditions ran): a change d of notion k moves F_T by ``w_k d / sum w``.
    """
    weights = resolve_weights()
    total = sum(weights.values())
    gap = float(row["paper_F_T"]) - float(row["ours_F_T"])
    parts = []
    for key in notions:
        if is_missing(row[key]) or weights[key] <= 0:
            continue
        needed = float(row[key]) + gap * total / weights[key]
        verdict = "" if 0.0 <= needed <= 1.0 else " (impossible)"
        parts.append(f"{key} {float(row[key]):.3f} → {needed:.3f}{verdict}")
    return "; ".join(parts)


def _misses_section(
    table: pd.DataFrame, misses: dict[str, dict[str, Any]], threshold: float, notions: Sequence[str],
) -> dict[str, Any]:
    """Variables of ``fairness/misses.md.j2``: one entry per miss, worst first, and the unexplained ones."""
    sub = table[(table["mode"] == "faithful") & (pd.to_numeric(table["delta"]).abs() > threshold + 1e-12)]
    entries, unexplained = [], []
    for i in sorted(sub.index, key=lambda i: -abs(float(sub.at[i, "delta"]))):
        row = sub.loc[i]
        name = row["condition"]
        entry = misses.get(name)
        if entry is None or entry["cause"] == "unexplained":
            unexplained.append(name)
        item = {
            "name": name,
            "paper": fmt(row["paper_F_T"], 2),
            "ours": _ours(row),
            "repeats": int(row["repeats"]),
            "delta": fmt(row["delta"], DIGITS, signed=True),
            "band": "within ±0.10" if bool(row["within_tolerance"]) else "outside ±0.10",
            "window": f"{row['window'][0]}-{row['window'][1]}",
            "notions": ", ".join(f"{k} {fmt(row[k], DIGITS)}" for k in notions),
            "accuracy": fmt(row["mean_local_accuracy"], DIGITS),
            "clients": int(row["clients"]),
            "alone": _single_notion_shifts(row, notions),
            "entry": None,
        }
        if entry is not None:
            experiment = entry["experiment"] or {}
            item["entry"] = {
                "notion": entry["notion"],
                "cause": entry["cause"],
                "explanation": _one_line(entry["explanation"]),
                "evidence": _one_line(entry["evidence"]) if entry.get("evidence") else "",
                "status": experiment.get("status", "not yet run"),
                "experiment": _one_line(experiment.get("name", "")),
                "result": _one_line(experiment["result"]) if experiment.get("result") else "",
            }
        entries.append(item)
    return {
        "threshold": f"{threshold:.2f}",
        "entries": entries,
        "unexplained": ", ".join(unexplained),
        "resolved": ", ".join(sorted(set(misses) - set(sub["condition"]))),
    }


def _one_line(text: Any) -> str:
    """Hand-written YAML text on one line: its line breaks and runs of spaces become single spaces."""
    return " ".join(str(text).split())


STUDY_TITLES = {"draws": "Partition draws", "repeats": "More repeats", "aux_size": "Aux set size"}
"""Heading of each study kind's subsection in RESULTS.md."""

STUDY_COLUMNS = ("F_T", "f_j", "f_g", "f_r", "f_o")
"""The notions a study's run rows show (with the non-positive s and dominated rounds)."""


def _triple(values: Sequence[Any], digits: int = DIGITS) -> str:
    """``a / b / c`` (a dash for a value not run)."""
    return " / ".join(fmt(v, digits) for v in values)


def _mean_std(values: Sequence[Any]) -> str:
    """``mean ± std`` of the known values (mean alone for one, a dash for none)."""
    known = [float(v) for v in values if not is_missing(v)]
    if not known:
        return "–"
    if len(known) == 1:
        return fmt(known[0], DIGITS)
    return f"{fmt(sum(known) / len(known), DIGITS)} ± {fmt(pd.Series(known).std(), DIGITS)}"


def _run_row(values: dict[str, Any]) -> list[str]:
    return [*(fmt(values.get(k), DIGITS) for k in STUDY_COLUMNS),
            *(fmt(values.get(k), 0) for k in ("nonpositive_s", "dominant_gain_rounds"))]


_RUN_HEADER = [*STUDY_COLUMNS, "non-positive s", "rounds dominated by one gain"]


def _run_rows(runs: Sequence[tuple[Any, dict[str, Any] | None]],
              first: Callable[[Any], list[str]]) -> tuple[list[list[str]], list[Any]]:
    """The rows (the ``first`` cells of the variant, then :func:`_run_row`) and the F_T of the runs done."""
    done = [(variant, run_values(entry)) for variant, entry in runs if entry is not None]
    return [[*first(variant), *_run_row(values)] for variant, values in done], [values["F_T"] for _, values in done]


def _distribution_frame(dist: Any) -> pd.DataFrame:
    columns = ["runs", "min", "Q1", "median", "Q3", "max", "mean", "std", "paper", "below the paper", "paper's percentile"]
    return pd.DataFrame([[
        str(dist.n), *(fmt(getattr(dist, k), DIGITS) for k in ("min", "q1", "median", "q3", "max", "mean", "std")),
        fmt(dist.reference, 2), "–" if dist.below is None else f"{dist.below} of {dist.n}", fmt(dist.percentile, 0),
    ]], columns=columns)


def _authors_repeats(authors: AuthorsRuns | None, condition: str) -> list[float] | None:
    if authors is None or condition not in authors.conditions:
        return None
    return list(authors.conditions[condition].table3()["F_T_per_repeat"])


def _draws_part(study: Study, data: Any, committed: dict[str, Any] | None, paper: float | None,
                authors: AuthorsRuns | None) -> dict[str, Any]:
    condition = study.conditions[0]
    draws = study_runs(study, data, "draws")
    rows, f_t = _run_rows(draws, lambda variant: [str(variant.overrides["partition.seed"])])
    shared = study_runs(study, data, "shared")
    shared_f_t = [run_values(e)["F_T"] if e is not None else None for _, e in shared]
    theirs = _authors_repeats(authors, condition)
    ours = repeat_window_values(committed)["F_T"] if committed else None
    (first, first_entry), same_as_committed = draws[0], None
    if ours and first_entry is not None and first.overrides.get("partition.seed") == first.repeat == 0:
        same_as_committed = (f"partition.seed 0 with seed 0 holds the committed repeat 0's data and seed: F_T "
                             f"{fmt(run_values(first_entry)['F_T'], DIGITS)} (committed repeat 0: {fmt(ours[0], DIGITS)})")
    return {
        "draws": pd.DataFrame(rows, columns=["partition.seed", *_RUN_HEADER]),
        "distribution": _distribution_frame(distribution(f_t, paper)) if f_t else None,
        "shared_seed": study.params.get("shared_seed"),
        "shared_repeats": ", ".join(str(v.repeat) for v, _ in shared),
        "shared": _triple(shared_f_t) if any(v is not None for v in shared_f_t) else None,
        "shared_mean": _mean_std(shared_f_t),
        "authors": None if theirs is None else f"{_triple(theirs)} (mean {_mean_std(theirs)})",
        "committed": None if ours is None else f"{_triple(ours)} (mean {_mean_std(ours)})",
        "same_as_committed": same_as_committed,
    }


def _repeats_part(study: Study, data: Any, committed: dict[str, Any] | None, paper: float | None,
                  authors: AuthorsRuns | None) -> dict[str, Any]:
    rows, f_t = [], []
    if committed:
        values = repeat_window_values(committed)
        for i, repeat in enumerate(sorted(set(committed["per_round"]["repeat"]))):
            one = {k: v[i] for k, v in values.items()}
            f_t.append(one["F_T"])
            rows.append([str(int(repeat)), f"results/{committed['condition']}.json", *_run_row(one)])
    more, more_f_t = _run_rows(study_runs(study, data, "repeats"),
                               lambda variant: [str(variant.repeat), f"experiments/{study.label}.json"])
    rows, f_t = rows + more, f_t + more_f_t
    dist = distribution(f_t, paper) if f_t else None
    inside = None if dist is None or paper is None else ("inside" if dist.min <= paper <= dist.max else "outside")
    theirs = _authors_repeats(authors, study.conditions[0])
    welch = welch_test(f_t, theirs) if theirs and len(f_t) >= 2 else None
    return {
        "repeats": pd.DataFrame(rows, columns=["repeat (seed)", "file", *_RUN_HEADER]),
        "distribution": None if dist is None else _distribution_frame(dist),
        "inside": inside,
        "n": 0 if dist is None else dist.n,
        "authors": None if theirs is None else _triple(theirs),
        "welch": None if welch is None else f"Welch t {fmt(welch.t, 2, signed=True)}, p {fmt(welch.p, DIGITS)}",
    }


def _aux_part(study: Study, data: Any, results: dict[str, dict[str, Any]], reported: dict[str, Any]) -> dict[str, Any]:
    rows: list[list[Any]] = []
    sizes: set[int] = set()
    for condition in study.conditions:
        committed = results.get(condition)
        if committed:
            sizes.update(sc["aux_samples"] for sc in result_scales(committed)[0] if sc.get("aux_samples"))
        before = repeat_window_values(committed) if committed else {"F_T": [], "nonpositive_s": []}
        runs = study_runs(study, data, condition)
        after_values = [run_values(e) if e is not None else {} for _, e in runs]
        new = [v.get("F_T") for v in after_values]
        old, old_s = ([values[v.repeat] if v.repeat < len(values) else None for v, _ in runs]
                      for values in (before["F_T"], before["nonpositive_s"]))
        delta = [None if a is None or b is None or is_missing(a) or is_missing(b) else a - b for a, b in zip(new, old)]
        rows.append([
            condition, fmt(reported["values"].get(condition), 2), f"{_triple(old)} ({_mean_std(old)})",
            f"{_triple(new)} ({_mean_std(new)})",
            " / ".join(fmt(d, DIGITS, signed=True) for d in delta),
            f"{_triple(old_s, 0)} -> {_triple([v.get('nonpositive_s') for v in after_values], 0)}",
        ])
    committed_d = "/".join(f"{d:,}" for d in sorted(sizes)) or "?"
    return {"table": pd.DataFrame(rows, columns=[
        "condition", "paper", f"F_T per repeat, D {committed_d} (committed; mean ± std)",
        f"F_T per repeat, D {study.params['aux_samples']:,} (mean ± std)", "Δ per repeat (paired by seed)",
        "non-positive s per repeat"])}


def _studies_section(results: Sequence[dict[str, Any]], studies: dict[str, Any], reported: dict[str, Any],
                     authors: AuthorsRuns | None) -> list[dict[str, Any]]:
    """Variables of ``fairness/studies.md.j2``: one entry per study of
    :data:`fltrust.repro.fairness.studies.STUDIES`, measured parts only where its runs exist."""
    faithful = {r["condition"]: r for r in results if r["mode"] == "faithful" and not r["quick"]}
    sections = []
    for study in STUDIES:
        data = studies.get(study.label)
        done = sum(entry is not None for _, entry in study_runs(study, data))
        cost = estimate(study, results, data)
        hours = "" if cost.minutes_left is None else f", {cost.minutes_left / 60:.1f} h"
        pending = None
        if cost.runs_left:
            pending = (f"{'not run yet' if not done else f'{cost.runs_left} of {cost.runs} runs not yet run'} "
                       f"(estimate: {cost.text()} on this CPU{hours}; command: `{study.command}`)")
        section = {"label": study.label, "kind": study.kind, "title": STUDY_TITLES[study.kind],
                   "conditions": ", ".join(study.conditions), "purpose": study.purpose, "done": done,
                   "runs": cost.runs, "pending": pending}
        if done and study.kind == "aux_size":
            section.update(_aux_part(study, data, faithful, reported))
        elif done:
            paper = reported["values"].get(study.conditions[0])
            part = _draws_part if study.kind == "draws" else _repeats_part
            section.update(part(study, data, faithful.get(study.conditions[0]), paper, authors), paper=fmt(paper, 2))
        sections.append(section)
    return sections


def studies_markdown(
    results: Sequence[dict[str, Any]],
    studies: dict[str, Any] | None = None,
    *,
    reported: dict[str, Any] | None = None,
    authors: AuthorsRuns | None = None,
) -> list[str]:
    """Lines of the section "Misses measured: studies" (template ``fairness/studies.md.j2``).

    Parameters
    ----------
    results : sequence of dict
        Condition results (:func:`load_results`): the committed repeats a study is set beside, and
        the seconds per run its estimate is priced with.
    studies : dict, optional
        Study files by label (default: :func:`fltrust.repro.fairness.studies.load_studies`).
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`fltrust.repro.fairness.run.load_reported`).
    authors : AuthorsRuns, optional
        The authors' runs: their per-repeat F_T beside the draws and repeats studies.

    Returns
    -------
    list of str
        Per study of :data:`fltrust.repro.fairness.studies.STUDIES`: its question, runs done, and
        for the runs not done their estimate and command; the measured tables where runs exist
        (draws: one row per draw, the distribution of F_T and the paper's percentile, the shared
        draw's repeats; repeats: every repeat, their spread against the paper; aux size: F_T per
        repeat before and after, paired by seed).
    """
    section = _studies_section(results, load_studies() if studies is None else studies, reported or load_reported(),
                               authors)
    return lines(render("fairness/studies.md.j2", studies=section, run_script=RUN_SCRIPT))


REPEAT_0_ONLY = "repeat 0 only"
"""The data-scale table's repeats cell of a result that recorded only its first repeat's scale."""


def result_scales(result: Mapping[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """A condition result's data scale per repeat, and whether only repeat 0's was recorded.

    Results hold ``scale_per_repeat`` (:func:`fltrust.repro.fairness.run.data_scale` of every
    repeat); results written before it hold repeat 0's alone as ``scale``, and results older still
    none (an empty list).

    Parameters
    ----------
    result : mapping
        A condition result.

    Returns
    -------
    tuple of (list of dict, bool)
        The non-empty scales, and True when they are repeat 0's only.
    """
    if "scale_per_repeat" in result:
        return [sc for sc in result["scale_per_repeat"] if sc], False
    return ([result["scale"]] if result.get("scale") else []), True


def _span(values: Sequence[int | None], thousands: bool = True) -> str:
    """``a`` when every value is ``a``, else ``lo-hi``; "n/a" when none is known."""
    known = sorted(int(v) for v in values if v is not None)
    if not known:
        return "n/a"
    form = "{:,}" if thousands else "{}"
    lo, hi = form.format(known[0]), form.format(known[-1])
    return lo if lo == hi else f"{lo}-{hi}"


def _spread_over(spreads: Sequence[dict[str, int] | None]) -> str:
    """Per-client sizes over repeats: the median (its range over repeats) and the smallest min to the largest max."""
    known = [v for v in spreads if v]
    if not known:
        return "n/a"
    low, high = min(v["min"] for v in known), max(v["max"] for v in known)
    return f"{_span([v['median'] for v in known], False)} ({low}-{high})"


def _scale_table(results: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per condition result: the data its repeats used, as ranges over repeats; "n/a" for
    results older than the record, "repeat 0 only" for results that recorded only the first repeat's."""
    rows = []
    for res in sorted(results, key=lambda r: (r["mode"], r["condition"])):
        scales, first_only = result_scales(res)
        if not scales:
            rows.append([res["condition"], res["mode"], "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"])
            continue
        source = (f"{_span([sc.get('source_train_samples') for sc in scales])} / "
                  f"{_span([sc.get('source_test_samples') for sc in scales])}")
        rows.append([res["condition"], res["mode"], REPEAT_0_ONLY if first_only else str(len(scales)), source,
                     _span([sc.get("num_clients") for sc in scales], False),
                     _spread_over([sc.get("train_per_client") for sc in scales]),
                     _spread_over([sc.get("val_per_client") for sc in scales]),
                     _span([sc.get("aux_samples") for sc in scales])])
    return pd.DataFrame(rows, columns=["condition", "mode", "repeats", "source train / test", "clients",
                                       "train / client: median (min-max)", "validation / client", "aux set"])


VERIFY_EXAMPLE = "fltrust repro verify <condition> --repeat 0"
"""The rerun-and-compare command RESULTS.md's provenance section names."""


def _provenance_frame(results: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The provenance table: one row per dataset, mode and distinct provenance of its conditions."""
    modes = sorted({r["mode"] for r in results}, key=lambda m: (m != "faithful", m))
    keys = [split_condition(r["condition"])[1] for r in results]
    groups = [([setup.paper_label, mode], members) for mode in modes for key, setup in DATASETS.items()
              if (members := [r for r, k in zip(results, keys) if r["mode"] == mode and k == key])]
    groups += [([k, r["mode"]], [r]) for r, k in sorted(zip(results, keys), key=lambda rk: rk[0]["condition"])
               if k not in DATASETS]
    return provenance_frame(groups, ["dataset", "mode", "conditions"], root=REPO)


def provenance_markdown(results: Sequence[dict[str, Any]]) -> list[str]:
    """Lines of the "Provenance" section: per dataset, which commit, BLAS, threads and libraries made
    its conditions' runs, and whether the training code changed since (:mod:`fltrust.repro.provenance_table`).

    Parameters
    ----------
    results : sequence of dict
        Condition results.

    Returns
    -------
    list of str
        The section's lines (template ``provenance.md.j2``).
    """
    return _provenance_lines(_provenance_frame(results), command=VERIFY_EXAMPLE, results=results)


STILL_GLOBAL_MODEL = 0.01
"""A repeat's global model counts as not training when its accuracy on the server's auxiliary set
moves by at most this much (one percentage point) over all rounds (:func:`untrained_global_models`)."""


def untrained_global_models(results: Sequence[dict[str, Any]],
                            threshold: float = STILL_GLOBAL_MODEL) -> pd.DataFrame:
    """The conditions whose global model never trains: aux accuracy still over every round of every repeat.

    A condition is listed when, in every repeat, the largest minus the smallest ``aux_accuracy``
    of its rounds is at most ``threshold``. Its F_T then describes clients that train locally from
    a global model that stays where it started (chance on CIFAR-10, the initial model's accuracy on
    NSL-KDD): the q-FedAvg conditions run Flower 1.7's legacy ``QFedAvg`` (fairness spec 5.2,
    docs/references.md#fairness-5-2), whose step ``sum_n L^q g_n / sum_n h_n`` with one central loss L moves the model
    very little.

    Parameters
    ----------
    results : sequence of dict
        Condition results (:func:`load_results`).
    threshold : float
        Largest range of the aux accuracy over the rounds of a repeat that counts as still.

    Returns
    -------
    pandas.DataFrame
        One row per such condition: ``condition``, ``mode``, ``rounds``, ``repeats`` and
        ``aux_accuracy`` (per repeat, its range over the rounds), sorted by condition.

    Examples
    --------
    >>> still = {"condition": "a", "mode": "faithful", "quick": False,
    ...          "per_round": {"repeat": [0, 0, 1, 1], "aux_accuracy": [0.1, 0.1, 0.2, 0.2001]}}
    >>> moving = dict(still, condition="b", per_round={"repeat": [0, 0], "aux_accuracy": [0.1, 0.5]})
    >>> untrained_global_models([still, moving])[["condition", "aux_accuracy"]].values.tolist()
    [['a', '0.100 / 0.200']]
    """
    rows = []
    for res in results:
        rounds = res.get("per_round") or {}
        if res.get("quick") or "aux_accuracy" not in rounds:
            continue
        frame = pd.DataFrame({"repeat": rounds["repeat"], "aux": rounds["aux_accuracy"]}).dropna()
        if frame.empty:
            continue
        spans = frame.groupby("repeat")["aux"].agg(["min", "max"])
        if ((spans["max"] - spans["min"]) <= threshold).all():
            cells = [f"{lo:.3f}" if f"{lo:.3f}" == f"{hi:.3f}" else f"{lo:.3f}-{hi:.3f}"
                     for lo, hi in zip(spans["min"], spans["max"])]
            rows.append({"condition": res["condition"], "mode": res["mode"],
                         "rounds": int(frame.groupby("repeat").size().max()), "repeats": len(spans),
                         "aux_accuracy": " / ".join(cells)})
    columns = ["condition", "mode", "rounds", "repeats", "aux_accuracy"]
    return pd.DataFrame(rows, columns=columns).sort_values(["condition", "mode"]).reset_index(drop=True)


def _table3_wide(sub: pd.DataFrame, reported: dict[str, Any], clients: dict[str, int],
                 authors_cells: dict[str, str] | None = None) -> pd.DataFrame:
    """Table 3 in the paper's layout: one row per dataset, one :func:`_cell` per strategy x setting
    (followed by the cell's entry of ``authors_cells``, when it has one)."""
    columns = [(s, t) for s in STRATEGIES for t in SETTINGS]
    rows = []
    for key, setup in DATASETS.items():
        label = setup.paper_label
        if key in clients and clients[key] != setup.num_clients:
            label += f"; ours: {clients[key]} {'writers' if setup.data == 'femnist' else 'clients'}"
        cells = [label]
        for strategy, setting in columns:
            name = condition_name(strategy, key, setting)
            match = sub[sub["condition"] == name]
            cells.append(_cell(None if match.empty else match.iloc[0], reported["values"].get(name))
                         + (authors_cells or {}).get(name, ""))
        rows.append(cells)
    return pd.DataFrame(rows, columns=["Dataset"] + [f"{STRATEGY_LABELS[s]} {t}" for s, t in columns])


def _table3_long(sub: pd.DataFrame, reported: dict[str, Any], tol: float) -> pd.DataFrame:
    """Table 3 as a long table, one row per condition, with explicit strict-band and tolerance verdicts."""
    rows = []
    for name in CONDITIONS:
        match = sub[sub["condition"] == name]
        paper_text = fmt(reported["values"].get(name), 2)
        if match.empty:
            rows.append([name, paper_text, "not run", "", "", "", ""])
            continue
        row = match.iloc[0]
        rows.append([name, paper_text, _ours(row), str(int(row["repeats"])), fmt(row["delta"], DIGITS, signed=True),
                     mark(row["within_strict"]), mark(row["within_tolerance"])])
    return pd.DataFrame(rows, columns=["condition", "paper F_T", "ours F_T ± std", "n", "Δ",
                                       f"within ±{STRICT_TOLERANCE:.2f}", f"within ±{tol:.2f}"])


def _condition_table(table: pd.DataFrame, notions: Sequence[str]) -> pd.DataFrame:
    """The "Per condition" table: notions, F_T, accuracy, rounds, window, sizes, NaN skipped, seconds, flags."""
    rows = [[
        row["condition"], row["mode"],
        *(fmt(row[k], DIGITS) for k in notions),
        fmt(row["ours_F_T"], DIGITS), fmt(row["mean_local_accuracy"], DIGITS),
        str(int(row["rounds"])), f"{row['window'][0]}-{row['window'][1]}", str(int(row["clients"])),
        str(int(row["repeats"])), str(int(row["skipped"])), fmt(row["seconds_per_run"], 1),
        " ".join(flag for flag in ("quick", "synthetic") if row[flag]),
    ] for _, row in table.sort_values(["mode", "condition"]).iterrows()]
    return pd.DataFrame(rows, columns=["condition", "mode", *notions, GENERAL_FAIRNESS, "accuracy", "rounds",
                                       "window", "clients", "repeats", "NaN skipped", "s / run", "flags"])


def _authors_section(
    results: Sequence[dict[str, Any]], authors: AuthorsRuns | None, reported: dict[str, Any], *, quick: bool,
) -> dict[str, Any] | None:
    """Variables of ``fairness/authors.md.j2`` and the Table 3 cell suffixes; None without ``authors``."""
    if authors is None:
        return None
    section: dict[str, Any] = {"note": None, "notes": [], "cells": {}, "table": pd.DataFrame(), "consistent": 0,
                               "compared": 0}
    if quick:
        section["note"] = ("Quick run: the authors' 30-round runs are compared with full runs only "
                           "(`fltrust repro fairness` without `--quick`).")
        return section
    if not authors.found:
        section["note"] = f"The authors' runs were not found: {authors.fetch_hint(portable=True)}."
        return section
    if authors.missing:
        section["notes"].append(f"Only the conditions with all three files are compared: {authors.fetch_hint(portable=True)}.")
    if authors.checksum_mismatch:
        section["notes"].append("⚠ Not the published files: " + "; ".join(
            f"{m['path']} has sha256 {m['sha256']}, the published file {m['expected']}" for m in authors.checksum_mismatch))
    comparison = compare_with_authors(results, authors).set_index("condition")
    compared = (*PAPER_NOTIONS, GENERAL_FAIRNESS)  # what the authors' files hold
    rows = []
    for name in [n for n in CONDITIONS if n in comparison.index]:
        row = comparison.loc[name]
        paper = reported["values"].get(name)
        theirs = ", ".join(fmt(v, DIGITS) for v in row["authors_F_T_per_repeat"])
        p_value = fmt(row["welch_p"], DIGITS)
        verdict = "–" if is_missing(row["consistent"]) else ("consistent" if bool(row["consistent"]) else "differs")
        section["cells"][name] = f" / authors {theirs} (Welch p {p_value}: {verdict})"
        same = None if paper is None else abs(round(float(row["authors_F_T"]), 2) - float(paper)) < 1e-9
        rows.append([
            name, fmt(paper, 2), theirs, f"{fmt(row['authors_F_T'], DIGITS)} {mark(same)}",
            ", ".join(fmt(v, DIGITS) for v in row["ours_F_T_per_repeat"]), fmt(row["ours_F_T"], DIGITS),
            fmt(row["welch_t"], 2, signed=True), p_value, verdict,
            *(fmt(row[f"delta_{k}"], DIGITS, signed=True) for k in compared),
        ])
    section["table"] = pd.DataFrame(rows, columns=[
        "condition", "paper F_T", "authors F_T v1, v2, v3", "authors mean (= paper)", "ours F_T per repeat",
        "ours mean", "Welch t", "p", "at 95 %", *(f"Δ {k}" for k in compared)])
    section["compared"] = int(comparison["consistent"].notna().sum())
    section["consistent"] = int(sum(bool(v) for v in comparison["consistent"] if not is_missing(v)))
    return section


def authors_markdown(
    results: Sequence[dict[str, Any]],
    authors: AuthorsRuns,
    *,
    quick: bool = False,
    reported: dict[str, Any] | None = None,
) -> list[str]:
    """Lines of the section "The authors' runs beside ours" (template ``fairness/authors.md.j2``).

    Parameters
    ----------
    results : sequence of dict
        Condition results (:func:`load_results`); faithful, full-length ones are compared.
    authors : AuthorsRuns
        :func:`fltrust.repro.fairness.authors.load_authors_runs`.
    quick : bool
        A quick batch: one line saying that only full runs are compared.
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`fltrust.repro.fairness.run.load_reported`).

    Returns
    -------
    list of str
        Without any authors' file, one line saying they were not found and how to fetch them;
        else the count of conditions whose repeats are consistent with the authors' (Welch, 95 %)
        and one row per compared condition: the authors' per-repeat and mean F_T (and whether the
        mean rounds to the paper's value), ours, Welch's t and p, and ours minus theirs per notion.
    """
    section = _authors_section(results, authors, reported or load_reported(), quick=quick)
    return lines(render("fairness/authors.md.j2", authors=section))


def results_markdown(
    table: pd.DataFrame,
    results: Sequence[dict[str, Any]],
    *,
    quick: bool,
    reported: dict[str, Any] | None = None,
    misses: dict[str, dict[str, Any]] | None = None,
    authors: AuthorsRuns | None = None,
    studies: dict[str, Any] | None = None,
) -> str:
    """The text of RESULTS.md (see the module docstring for its sections; template :data:`TEMPLATE`).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`fltrust.repro.fairness.run.table3` or :func:`summary_table` of ``results`` (one row per
        result, same order).
    results : sequence of dict
        Condition results (:func:`load_results`).
    quick : bool
        The batch ran with ``--quick``; any quick result also triggers the quick note.
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`fltrust.repro.fairness.run.load_reported`).
    misses : dict, optional
        Miss explanations (default: :func:`load_misses`); not used for quick results.
    authors : AuthorsRuns, optional
        The authors' runs (:func:`fltrust.repro.fairness.authors.load_authors_runs`): adds their
        per-repeat values and Welch's p to every faithful Table 3 cell and the section of
        :func:`authors_markdown`. None (default): neither.
    studies : dict, optional
        The study files by label (default: :func:`fltrust.repro.fairness.studies.load_studies`); not
        used for quick results. A study without runs shows its estimate and command.

    Raises
    ------
    ResultsError
        If ``table`` was not built from ``results`` (row count or order differ).

    Returns
    -------
    str
        Markdown.
    """
    reported = reported or load_reported()
    tolerance = reported["tolerance"]
    tol = float(tolerance["absolute"])
    table = _add_result_columns(table, results)
    # the registered notions that some result's Table 3 window holds (one registered after the results adds no column)
    notions = [k for k in NOTIONS if any(k in res["table3"] for res in results)]
    quick = quick or any(r["quick"] for r in results)
    # our client count per dataset (the largest: the last one of the sorted results wins), where a full-size result
    # differs from the paper's; smoke tests shrink the clients on purpose (and say so loudly)
    full = sorted((res for res in results if not res["quick"]), key=lambda res: int(res["num_clients"]))
    clients = {split_condition(res["condition"])[1]: int(res["num_clients"]) for res in full}

    modes = sorted({r["mode"] for r in results} | {"faithful"}, key=lambda m: (m != "faithful", m))
    beside = _authors_section(results, authors, reported, quick=quick)
    tables = []
    for mode in modes:
        sub = table[table["mode"] == mode]
        checked = sub[sub["within_tolerance"].notna()]
        tables.append({
            "mode": mode,
            "wide": _table3_wide(sub, reported, clients, beside["cells"] if beside and mode == "faithful" else None),
            "strict": int(checked["within_strict"].astype(bool).sum()),
            "within": int(checked["within_tolerance"].astype(bool).sum()),
            "checked": len(checked),
            "missing": missing_conditions(results, mode),
            "long": _table3_long(sub, reported, tol),
        })

    deviations = grouped((text, res["condition"]) for res in results for text in res["deviations"])
    by_repeats = grouped((int(res["table3"]["repeats"]), res["condition"]) for res in results)

    return render(
        TEMPLATE,
        command=REGENERATE + (" --quick" if quick else ""),
        regenerate=REGENERATE,
        protocol=reported["source"]["protocol"],
        quick=quick,
        synthetic=", ".join(sorted(r["condition"] for r in results if r["synthetic"])),
        count=len(results),
        strict=f"{STRICT_TOLERANCE:.2f}",
        tolerance=f"{tol:.2f}",
        tolerance_reason=_one_line(tolerance["reason"]),
        conditions=len(CONDITIONS),
        tables=tables,
        stale=[f"{name}: {reason}" for name, reason in stale_results(results)],
        misses=None if quick else _misses_section(table, load_misses() if misses is None else misses,
                                                  STRICT_TOLERANCE, notions),
        studies=None if quick else _studies_section(results, load_studies() if studies is None else studies,
                                                    reported, authors),
        run_script=RUN_SCRIPT,
        per_condition=_condition_table(table, notions),
        repeats="; ".join(f"{n} repeat(s): {', '.join(sorted(names))}" for n, names in sorted(by_repeats.items())),
        seeding=SEEDING,
        deviations=[f"{text} ({', '.join(sorted(names))})" for text, names in deviations.items()],
        scale=_scale_table(results),
        untrained=untrained_global_models(results),
        still=STILL_GLOBAL_MODEL,
        authors=beside,
        provenance=provenance_section(_provenance_frame(results), command=VERIFY_EXAMPLE,
                                      verified=None if quick else load_verified(PAPER_DIR, results), results=results,
                                      root=REPO),
    )


def write_results_md(
    table: pd.DataFrame,
    results: list[dict[str, Any]],
    path: str | Path,
    *,
    quick: bool,
    reported: dict[str, Any] | None = None,
    misses: dict[str, dict[str, Any]] | None = None,
    authors: AuthorsRuns | None = None,
    studies: dict[str, Any] | None = None,
) -> Path:
    """Write RESULTS.md (:func:`results_markdown`) atomically: temporary file, then ``os.replace``.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`fltrust.repro.fairness.run.table3` or :func:`summary_table` of ``results``.
    results : list of dict
        Condition results (:func:`load_results`).
    path : str or Path
        Output file (parent folders are created).
    quick : bool
        The batch ran with ``--quick`` (adds the loud smoke-test note).
    reported : dict, optional
        ``reported.yaml`` content (default: :func:`fltrust.repro.fairness.run.load_reported`).
    misses : dict, optional
        Miss explanations (default: :func:`load_misses`).
    authors : AuthorsRuns, optional
        The authors' runs, see :func:`results_markdown`.
    studies : dict, optional
        The study files, see :func:`results_markdown`.

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    atomic_write_text(path, results_markdown(table, results, quick=quick, reported=reported, misses=misses,
                                             authors=authors, studies=studies))
    return path
