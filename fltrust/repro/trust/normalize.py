"""FederatedTrust experiments 1-3 with and without the prototype's FEMNIST ``Normalize`` transform.

The prototype's FederatedScope configuration applies ``Normalize(0.1307, 0.3081)`` to FEMNIST's
[0, 1] pixels; the committed experiments 1-3 do too (``data.normalize``,
:data:`fltrust.repro.trust.experiments.FEMNIST_NORMALIZE`). Before, they ran on the raw pixels.
This module records the runs without the transform (the same configurations with
``data.normalize: null``; the earlier results' run ids differ from theirs only by a ``run.deviations``
line that said the transform was not applied) in one file,
``results/without_normalize.json`` (:func:`without_normalize_record`, :func:`write_without_normalize`),
and compares them with the committed results: the server's accuracy per round, and per scoring
mode the trust score and every pillar (:func:`normalize_section`, template ``trust/normalize.md.j2``).

Regenerate the file at the current code with ``python -m fltrust.repro.trust.normalize --run DIR``
(trains experiments 1-3 with ``data.normalize`` unset into ``DIR``, about as long as the committed
runs, then writes the file), or from run folders made otherwise (one per experiment, e.g. ``fltrust
repro verify exp1 --out DIR`` on a checkout of the earlier configurations) with ``--from DIR``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fltrust.core.io import atomic_write_text
from fltrust.names import DEVICES, Device, TrustMode
from fltrust.repro.markdown import DASH, fmt

__all__ = ["EXPERIMENTS", "WITHOUT_NORMALIZE_FILE", "load_without_normalize", "normalize_section",
           "run_without_normalize", "without_normalize_record", "write_without_normalize"]

WITHOUT_NORMALIZE_FILE = "without_normalize.json"
"""The runs without the transform, beside the committed results."""
MODES: tuple[TrustMode, ...] = ("prototype", "paper", "fixed", "extended")
EXPERIMENTS = ("exp1", "exp2", "exp3")
"""The experiments that read FEMNIST, so the ones the transform changes."""


def without_normalize_record(run_folder: str | Path) -> dict[str, Any]:
    """One run without the transform, as the comparison reads it.

    Parameters
    ----------
    run_folder : str or Path
        A complete run folder of experiment 1, 2 or 3 with ``data.normalize`` unset, scored in the
        trust modes (``trust_modes/<mode>/trust_report.json``, as ``fltrust repro`` writes them).

    Returns
    -------
    dict
        ``run_id``, ``experiment``, ``aux_accuracy`` (one value per round, round 0 first),
        ``modes`` (mode -> ``trust_score`` and ``pillars``) and the run's ``provenance``.
    """
    from fltrust.runs import load_run

    record = load_run(run_folder)
    if (record.config.get("data") or {}).get("normalize") is not None:
        raise ValueError(f"{record.path}: data.normalize is set; this record is for the runs without the transform")
    modes = {}
    for mode in MODES:
        report = record.path / "trust_modes" / mode / "trust_report.json"
        if report.is_file():
            data = json.loads(report.read_text())
            modes[mode] = {"trust_score": data["trust_score"],
                           "pillars": {p["name"]: p["score"] for p in data["pillars"]}}
    name = str((record.config.get("run") or {}).get("name", record.run_id)).removeprefix("federatedtrust_")
    return {"run_id": record.run_id, "experiment": name,
            "aux_accuracy": [r.server_metrics.get("aux_accuracy") for r in record.rounds],
            "modes": modes, "provenance": record.summary.get("provenance")}


def write_without_normalize(run_folders: Sequence[str | Path], results_dir: str | Path) -> Path:
    """Write :data:`WITHOUT_NORMALIZE_FILE` into ``results_dir`` from run folders (atomically).

    Parameters
    ----------
    run_folders : sequence of str or Path
        One run folder per experiment (:func:`without_normalize_record`).
    results_dir : str or Path
        The FederatedTrust results folder.

    Returns
    -------
    Path
        The file written.
    """
    records = sorted((without_normalize_record(f) for f in run_folders), key=lambda r: r["experiment"])
    path = Path(results_dir) / WITHOUT_NORMALIZE_FILE
    atomic_write_text(path, json.dumps({"transform": "none (raw [0, 1] pixels)", "runs": records}, indent=1) + "\n")
    return path


def load_without_normalize(results_dir: str | Path) -> dict[str, Any] | None:
    """The file :func:`write_without_normalize` wrote, or None when there is none.

    Parameters
    ----------
    results_dir : str or Path
        The FederatedTrust results folder.

    Returns
    -------
    dict or None
        ``{"transform": ..., "runs": [record, ...]}``.
    """
    path = Path(results_dir) / WITHOUT_NORMALIZE_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _pair(before: Any, after: Any) -> str:
    if before is None or after is None:
        return DASH
    return f"{fmt(before, 2)} → {fmt(after, 2)}" if round(before, 2) != round(after, 2) else f"{fmt(after, 2)} (=)"


def normalize_section(before: Mapping[str, Any] | None, results: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Variables of ``trust/normalize.md.j2``: the experiments present in both, before and after.

    Parameters
    ----------
    before : dict or None
        :func:`load_without_normalize`'s content (None: no section).
    results : sequence of dict
        The committed experiment results (with the transform).

    Returns
    -------
    dict or None
        ``scores`` (experiment x mode: trust score and each pillar, before -> after), ``accuracy``
        (round x experiment: the server's accuracy before and after), ``final`` (per experiment:
        final and best accuracy before and after), or None when no experiment is in both.

    Examples
    --------
    >>> before = {"runs": [{"experiment": "exp1", "aux_accuracy": [0.0, 0.5], "run_id": "a",
    ...                     "modes": {"paper": {"trust_score": 0.4, "pillars": {"privacy": 0.3}}}}]}
    >>> after = [{"experiment": "exp1", "run_id": "b", "round_trace": [{"aux_accuracy": [0.0, 0.6]}],
    ...           "modes": {"paper": {"trust_score": 0.4, "pillars": {"privacy": 0.31}}}}]
    >>> section = normalize_section(before, after)
    >>> section["scores"].values.tolist()
    [['exp1', 'paper', '0.40 (=)', '0.30 → 0.31']]
    >>> section["final"].values.tolist()
    [['exp1', 'a', 'b', '0.500', '0.600', '0.500', '0.600']]
    """
    if not before:
        return None
    after = {r["experiment"]: r for r in results}
    runs = [r for r in before.get("runs", []) if r["experiment"] in after]
    if not runs:
        return None
    pillars = list(dict.fromkeys(p for r in runs for m in r["modes"].values() for p in m["pillars"]))
    score_rows, final_rows, curves = [], [], {}
    for run in runs:
        res = after[run["experiment"]]
        for mode in MODES:
            b, a = run["modes"].get(mode), (res.get("modes") or {}).get(mode)
            if b is None or a is None:
                continue
            score_rows.append({"experiment": run["experiment"], "mode": mode,
                               "trust score": _pair(b["trust_score"], a["trust_score"]),
                               **{p: _pair(b["pillars"].get(p), (a.get("pillars") or {}).get(p)) for p in pillars}})
        trace = res.get("round_trace") or [{}]  # the committed run's server accuracy per round
        acc_b, acc_a = run["aux_accuracy"], list(trace[0].get("aux_accuracy") or [])
        curves[run["experiment"]] = (acc_b, acc_a)
        final_rows.append({"experiment": run["experiment"], "run without": run["run_id"], "run with": res.get("run_id"),
                           "final, without": fmt(acc_b[-1], 3) if acc_b else DASH,
                           "final, with": fmt(acc_a[-1], 3) if acc_a else DASH,
                           "best, without": fmt(max(acc_b[1:] or acc_b), 3) if acc_b else DASH,
                           "best, with": fmt(max(acc_a[1:] or acc_a), 3) if acc_a else DASH})
    rounds = max(len(b) for b, _ in curves.values())
    accuracy = pd.DataFrame({"round": list(range(1, rounds))})
    for name, (acc_b, acc_a) in curves.items():
        accuracy[f"{name} without"] = [fmt(acc_b[k], 3) if k < len(acc_b) else "" for k in range(1, rounds)]
        accuracy[f"{name} with"] = [fmt(acc_a[k], 3) if k < len(acc_a) else "" for k in range(1, rounds)]
    return {"scores": pd.DataFrame(score_rows), "final": pd.DataFrame(final_rows), "accuracy": accuracy}


def run_without_normalize(out_dir: str | Path, experiments: Sequence[str] = EXPERIMENTS, *,
                          device: Device = "cpu") -> list[Path]:
    """Train and score experiments with ``data.normalize`` unset, as ``fltrust repro trust`` would.

    Parameters
    ----------
    out_dir : str or Path
        Folder of run folders (a complete run there is reloaded, an interrupted one resumed).
    experiments : sequence of str
        Which of ``"exp1"``, ``"exp2"``, ``"exp3"``.
    device : str
        ``"cpu"``, ``"cuda"`` or ``"auto"``.

    Returns
    -------
    list of Path
        The run folders, one per experiment.
    """
    from fltrust.repro.trust.run import run_trust_experiment

    folders = []
    for name in experiments:
        print(f"{name} without data.normalize -> {out_dir}", flush=True)
        run = run_trust_experiment(name, modes=MODES, device=device, out_dir=out_dir,
                                   overrides={"data.normalize": None})
        print(f"{name}: {run.record.path.name} ({run.elapsed_s:.0f} s)", flush=True)
        folders.append(run.record.path)
    return folders


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fltrust.repro.trust.normalize (--run DIR | --from DIR) [--results DIR]``: write the file.

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments.

    Returns
    -------
    int
        0.
    """
    import argparse

    from fltrust.repro.trust.experiments import PAPER_DIR

    parser = argparse.ArgumentParser(prog="python -m fltrust.repro.trust.normalize", description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", metavar="DIR", help="train experiments 1-3 without the transform into DIR, then write")
    source.add_argument("--from", dest="source", metavar="DIR", help="folder holding one run folder per experiment")
    parser.add_argument("--results", default=str(PAPER_DIR / "results"), help="FederatedTrust results folder")
    parser.add_argument("--device", default="cpu", choices=DEVICES)
    args = parser.parse_args(argv)
    if args.run:
        folders = run_without_normalize(args.run, device=args.device)
    else:
        folders = sorted(p.parent for p in Path(args.source).glob("**/summary.json"))
    print(f"wrote {write_without_normalize(folders, args.results)} ({len(folders)} run(s))")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
