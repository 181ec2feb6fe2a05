"""RESULTS.md's provenance section: which code, BLAS, threads and libraries produced each result,
and whether the training code has changed since.

Both papers' writers (:mod:`fltrust.repro.fairness.report`, :mod:`fltrust.repro.trust.report`)
hand :func:`provenance_frame` groups of results (the fairness paper: one per dataset; the trust paper:
one per experiment) and render the table with the shared template ``templates/provenance.md.j2``.
Each cell reads the provenance records the runs wrote (:func:`fltrust.runs.provenance.provenance`,
kept in a result's ``provenance.runs``); a result written before provenance existed shows
:data:`~fltrust.runs.provenance.NOT_RECORDED`. The last column lists the files of
:data:`~fltrust.runs.provenance.TRAINING_PATHS` that differ between the recorded commit and this
checkout's HEAD (:func:`~fltrust.runs.provenance.changed_since`), or says ``unknown`` when git cannot
tell. The text depends only on the result files and the git state, never on the time or the
machine that renders it (HEAD itself is not printed, so a commit that leaves the training code alone
leaves the file unchanged).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fltrust.repro.markdown import DASH, lines, render
from fltrust.repro.results import run_provenance
from fltrust.runs.provenance import NOT_RECORDED, TRAINING_PATHS, changed_since, git_head, short_commit

__all__ = ["COLUMNS", "MAX_FILES", "VERIFIED_FILE", "load_verified", "provenance_cells", "provenance_frame",
           "provenance_markdown", "provenance_section", "read_verified", "result_records", "training_code_cell",
           "unrecorded", "verified_lines", "verified_since"]

COLUMNS = ("commit", "BLAS (numpy; torch)", "threads (torch, BLAS)", "torch / numpy", "device",
           "training code since")
"""The provenance columns of the table (after the group's own label columns)."""

MAX_FILES = 3
"""Changed files named in a cell; the rest are counted."""

UNKNOWN = "unknown"
CHANGED = "**changed**"
"""How a training-code cell whose files differ from HEAD's begins (:func:`training_code_cell`)."""

VERIFIED_FILE = "verified.json"
"""A paper folder's record of ``fltrust repro verify --record``: per target, the last verification's
repeat, rounds, commit and verdict (:meth:`fltrust.repro.verify.Verification.record`)."""


def load_verified(paper_dir: str | Path, results: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The verifications recorded in ``paper_dir`` (:data:`VERIFIED_FILE`) of runs that ``results`` hold.

    A record names the committed run it was compared with (``run_id``); records of other runs (a
    result since redone, or results elsewhere than the paper folder) are left out.

    Parameters
    ----------
    paper_dir : path-like
        E.g. ``papers_repro/fairness_analytics``.
    results : sequence of dict
        The results being rendered.

    Returns
    -------
    dict
        Target name -> record (empty when there is no file).
    """
    runs = {run_id for result in results for run_id in (result.get("run_ids") or [result.get("run_id")])}
    data = read_verified(Path(paper_dir) / VERIFIED_FILE)
    return {target: record for target, record in data.items() if record.get("run_id") in runs}


def read_verified(path: str | Path) -> dict[str, dict[str, Any]]:
    """Every record of a :data:`VERIFIED_FILE` (empty when there is none).

    Parameters
    ----------
    path : path-like
        The file.

    Returns
    -------
    dict
        Target name -> record.

    Raises
    ------
    ValueError
        The file is not a JSON object (the message names it and the fix).
    """
    path = Path(path)
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected an object of target -> verification record; delete it and rerun "
                         "fltrust repro verify --record")
    return data


def verified_lines(verified: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One Markdown list item per recorded verification, in target order.

    Parameters
    ----------
    verified : mapping
        :func:`load_verified`'s records.

    Returns
    -------
    list of str

    Examples
    --------
    >>> verified_lines({"exp4": {"repeat": 0, "rounds": 20, "commit": "4e92980", "machine": "AMD EPYC",
    ...                          "verdict": "bit-identical", "causes": []}})
    ['- `exp4`, repeat 0, rounds 1-20, at 4e92980 on AMD EPYC: bit-identical']
    """
    out = []
    for target, r in sorted(verified.items()):
        causes = "; ".join(r.get("causes") or [])
        out.append(f"- `{target}`, repeat {r.get('repeat')}, rounds 1-{r.get('rounds')}, at {r.get('commit')} on "
                   f"{r.get('machine')}: {r.get('verdict')}" + (f" (likely cause: {causes})" if causes else ""))
    return out


def result_records(result: Mapping[str, Any]) -> list[dict[str, Any] | None]:
    """The provenance record of each run of a result (its ``run_ids``, else its ``run_id``; None where
    the run has none).

    Parameters
    ----------
    result : dict
        A condition or experiment result.

    Returns
    -------
    list of dict or None
    """
    run_ids = result.get("run_ids") or ([result["run_id"]] if result.get("run_id") else [])
    return [run_provenance(result, run_id) for run_id in run_ids]


@functools.cache
def _changed(commit: str, root: str | None, head: str | None) -> tuple[str, ...] | None:
    """:func:`changed_since` once per commit, checkout and HEAD (a render asks once per result)."""
    files = changed_since(commit, root)
    return None if files is None else tuple(files)


def training_code_cell(records: Sequence[Mapping[str, Any] | None], root: str | Path | None = None) -> str:
    """Compare the training code of the records' commits with HEAD: unchanged, changed or unknown.

    The cell reads ``unchanged``, ``changed: N file(s) (a, b, ... +k more)`` or ``unknown``
    (:func:`fltrust.runs.provenance.changed_since`).

    Parameters
    ----------
    records : sequence of dict or None
        Provenance records of a group's runs.
    root : path-like, optional
        The checkout whose HEAD is compared (default: the package's).

    Returns
    -------
    str
        ``unknown`` when a record is missing, names no commit, or git cannot compare.
    """
    if not records:
        return UNKNOWN
    files: set[str] = set()
    head = git_head(root)
    for record in records:
        commit = ((record or {}).get("code") or {}).get("commit")
        if not commit:
            return UNKNOWN
        changed = _changed(commit, None if root is None else str(root), head)
        if changed is None:
            return UNKNOWN
        files.update(changed)
    if not files:
        return "unchanged"
    names = sorted(files)
    shown = ", ".join(f"`{n}`" for n in names[:MAX_FILES])
    if len(names) > MAX_FILES:
        shown += f" +{len(names) - MAX_FILES} more"
    return f"{CHANGED}: {len(names)} file(s) ({shown})"


def provenance_cells(records: Sequence[Mapping[str, Any] | None], root: str | Path | None = None) -> list[str]:
    """The :data:`COLUMNS` cells of a group of runs: each column's distinct values, sorted.

    A run without a record contributes :data:`~fltrust.runs.provenance.NOT_RECORDED` to the commit
    column and a dash to the others, and makes the training-code cell ``unknown``.

    Parameters
    ----------
    records : sequence of dict or None
        Provenance records of the group's runs.
    root : path-like, optional
        The checkout whose HEAD the training code is compared with.

    Returns
    -------
    list of str
        One cell per column of :data:`COLUMNS`.

    Examples
    --------
    >>> provenance_cells([None])
    ['not recorded', '–', '–', '–', '–', 'unknown']
    """
    def cells(record: Mapping[str, Any] | None) -> list[str]:
        if not record:
            return [NOT_RECORDED] + [DASH] * (len(COLUMNS) - 2)
        blas, threads = record.get("blas") or {}, record.get("threads") or {}
        libraries, device = record.get("libraries") or {}, record.get("device") or {}
        return [short_commit(record), f"{blas.get('numpy')}; {blas.get('torch')} {blas.get('torch_cpu_capability')}",
                f"{threads.get('torch')}, {threads.get('blas')}", f"{libraries.get('torch')} / {libraries.get('numpy')}",
                str(device.get("name"))]

    records = list(records) or [None]
    distinct = [", ".join(dict.fromkeys(sorted(column))) for column in zip(*map(cells, records))]  # sorted, once each
    return distinct + [training_code_cell(records, root)]


def provenance_frame(
    groups: Sequence[tuple[Sequence[str], Sequence[Mapping[str, Any]]]],
    labels: Sequence[str],
    *,
    root: str | Path | None = None,
) -> pd.DataFrame:
    """One row per group and distinct provenance: the group's label cells, its results, then :data:`COLUMNS`.

    Within a group, results whose runs give the same cells share one row, which names them.

    Parameters
    ----------
    groups : sequence of (label cells, results)
        E.g. ``(["NSL-KDD (100C)"], [result, ...])``; the label cells fill ``labels[:-1]``.
    labels : sequence of str
        Column labels: the group's label columns, then the column naming the results.
    root : path-like, optional
        The checkout whose HEAD the training code is compared with.

    Returns
    -------
    pandas.DataFrame
        Display strings.
    """
    rows = []
    for label_cells, results in groups:
        by_cells: dict[tuple[str, ...], list[str]] = {}
        for result in results:
            cells = tuple(provenance_cells(result_records(result), root))
            by_cells.setdefault(cells, []).append(str(result.get("condition") or result.get("experiment")))
        for cells, names in sorted(by_cells.items(), key=lambda item: sorted(item[1])):
            rows.append([*label_cells, ", ".join(sorted(names)), *cells])
    return pd.DataFrame(rows, columns=[*labels, *COLUMNS])


def provenance_markdown(frame: pd.DataFrame, *, command: str, results: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """Lines of the provenance section (template ``provenance.md.j2``) for ``frame``
    (:func:`provenance_frame`) of ``results``; ``command`` is the paper's ``fltrust repro verify`` example."""
    return lines(render("provenance.md.j2", provenance=provenance_section(frame, command=command, results=results)))


def unrecorded(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The results that a rerun would give a provenance: those with a run that recorded none, and
    their run time as committed (the sum of their ``seconds_per_run``, on the CPUs that made them).

    Parameters
    ----------
    results : sequence of dict
        Condition or experiment results.

    Returns
    -------
    dict
        ``names`` (sorted) and ``hours``.

    Examples
    --------
    >>> unrecorded([{"condition": "a", "run_ids": ["a-r0"], "seconds_per_run": [3600.0, 1800.0]}])
    {'names': ['a'], 'hours': 1.5}
    """
    stale = [r for r in results if any(record is None for record in result_records(r))]
    seconds = sum(float(s) for r in stale for s in r.get("seconds_per_run") or [])
    return {"names": sorted(str(r.get("condition") or r.get("experiment")) for r in stale), "hours": seconds / 3600}


def verified_since(frame: pd.DataFrame, verified: Mapping[str, Mapping[str, Any]],
                   root: str | Path | None = None) -> pd.DataFrame:
    """``frame`` with each **changed** training-code cell followed by the bit-identical verifications of
    its results made at a commit whose training code is HEAD's.

    A result made before a change of the training code is still what the current code computes when
    ``fltrust repro verify`` reran it bit-identical at a commit that already had the change: the cell
    then names that verification (its target, repeat, rounds and commit), and says nothing of the
    row's other results.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`provenance_frame`'s table; the column before :data:`COLUMNS` names each row's results.
    verified : mapping
        :func:`load_verified`'s records.
    root : path-like, optional
        The checkout whose HEAD is compared (default: the package's).

    Returns
    -------
    pandas.DataFrame
        A copy of ``frame``.
    """
    out = frame.copy()
    if out.empty or not verified:
        return out
    names_column, cell = out.columns[len(out.columns) - len(COLUMNS) - 1], COLUMNS[-1]
    head, checkout = git_head(root), None if root is None else str(root)
    for i, row in out.iterrows():
        if not str(row[cell]).startswith(CHANGED):
            continue
        current = [f"`{target}` (repeat {r.get('repeat')}, rounds 1-{r.get('rounds')}) at {r.get('commit')}"
                   for target in str(row[names_column]).split(", ") if (r := verified.get(target))
                   and r.get("identical") and r.get("commit")
                   and _changed(str(r["commit"]), checkout, head) == ()]
        if current:
            out.at[i, cell] = (f"{row[cell]}; rerun bit-identical by {', '.join(current)}, which has HEAD's "
                               "training code")
    return out


def provenance_section(frame: pd.DataFrame, *, command: str, verified: Mapping[str, Mapping[str, Any]] | None = None,
                       results: Sequence[Mapping[str, Any]] = (), root: str | Path | None = None) -> dict[str, Any]:
    """Variables of ``provenance.md.j2``: the table (:func:`verified_since`), the verify command, the
    training paths in words, the recorded verifications (:func:`verified_lines`) and the results still
    to rerun (:func:`unrecorded`)."""
    frame = verified_since(frame, verified or {}, root)
    included = [p for p in TRAINING_PATHS if not p.startswith(":")]
    excluded = [p.removeprefix(":(exclude)") for p in TRAINING_PATHS if p.startswith(":(exclude)")]
    paths = ", ".join(f"`{p}/`" if "." not in Path(p).name else f"`{p}`" for p in included)
    if excluded:
        paths += " except " + ", ".join(f"`{p}`" for p in excluded)
    return {"table": frame, "command": command, "paths": paths, "verified": verified_lines(verified or {}),
            "unrecorded": unrecorded(results)}
