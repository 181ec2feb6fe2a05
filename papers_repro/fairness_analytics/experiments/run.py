"""The experiments and studies behind the misses of RESULTS.md (``misses.yaml``).

Experiments (:data:`EXPERIMENTS`): one repeat (seed 0) of a Table 3 condition with one switch
flipped, often for fewer rounds, compared with the same rounds of the committed condition result;
results go to ``experiments/<label>.json`` (:func:`fltrust.repro.fairness.run.run_variant`).

Studies (:data:`fltrust.repro.fairness.studies.STUDIES`, in priority order): many full runs that
measure a miss (more repeats, partition draws, aux set size); each writes
``experiments/<label>.json`` after every run, and skips the runs it already holds
(:func:`fltrust.repro.fairness.studies.run_study`). RESULTS.md shows them once regenerated
(``fltrust repro fairness``, or the summary notebook).

Run folders go to ``experiments/runs/`` (git-ignored; a complete run is reloaded, not redone).

Usage::

    python papers_repro/fairness_analytics/experiments/run.py --list        # experiments and studies
    python papers_repro/fairness_analytics/experiments/run.py --estimate    # what the studies cost on this CPU
    python papers_repro/fairness_analytics/experiments/run.py --queue       # every study, in order, resumable
    python papers_repro/fairness_analytics/experiments/run.py --only fedavg_cifar10_10c_niid-draws
    python papers_repro/fairness_analytics/experiments/run.py               # every experiment (not the studies)
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from fltrust.repro.fairness.report import load_results
from fltrust.repro.fairness.run import RESULTS_DIR, run_variant
from fltrust.repro.fairness.studies import STUDIES, estimate, load_studies, run_study

# label: (condition, overrides, rounds, purpose)
EXPERIMENTS: dict[str, tuple[str, dict, int, str]] = {
    "fedavg_cifar10_10c_niid-epochs25": (
        "fedavg_cifar10_10c_niid", {"training.local_epochs": 25}, 3,
        "the authors' local steps per round (~1,400: 4,500 images / 32 x 10 epochs; ours 1,800 / 32 x 25): "
        "do the participants' cumulative FedSV mix signs, as in the authors' non-iid 10C runs?",
    ),
    "qfedavg_cifar10_10c_iid-epochs25": (
        "qfedavg_cifar10_10c_iid", {"training.local_epochs": 25}, 3,
        "the authors' local steps per round (~1,400): do q-FedAvg's cumulative FedSV become one-signed "
        "(all negative in the authors' files)?",
    ),
    "fedavg_cifar10_100c_niid-aux6685": (
        "fedavg_cifar10_100c_niid", {"partition.aux_max_samples": None}, 8,
        "aux set 2,000 -> 6,685 images (all held-out images of the subset): less noisy FedSV, fewer mixed signs?",
    ),
    "fedavg_cifar10_100c_iid-40c": (
        "fedavg_cifar10_100c_iid", {"partition.num_clients": 40}, 30,
        "the authors' data per client (~450 training images: 40 clients of the subset instead of 100, still 5 "
        "per round): does local accuracy, and with it f_o, f_g and F_T, rise to the paper's level?",
    ),
    "fedavg_femnist_205c_niid-auxpool": (
        "fedavg_femnist_205c_niid", {"partition.aux_source": "client_pool"}, 8,
        "aux set of 500 samples drawn from the clients' own rows (the authors' FEMNIST overlap, spec 6.6) "
        "instead of the disjoint LEAF test split: does every client model then lower the aux loss?",
    ),
    "ditto_cifar10_10c_niid-draw0-cpu": (
        "ditto_cifar10_10c_niid", {"partition.seed": 0}, 30,
        "Ditto's draw 0 of its partition-draw study (partition.seed 0, seed 0: the committed repeat 0's data "
        "and seed; F_T 0.578 on an AMD EPYC) rerun on whatever CPU runs it (its provenance names it): how far "
        "does the CPU alone move one draw's F_T?",
    ),
    "ditto_cifar10_10c_niid-draw1-cpu": (
        "ditto_cifar10_10c_niid", {"partition.seed": 1}, 30,
        "Ditto's draw 1 of its partition-draw study (partition.seed 1, seed 0; f_j 0.35 on an AMD EPYC) rerun "
        "on whatever CPU runs it (its provenance names it): do the 31 model hashes follow the CPU, equal to "
        "FedAvg's draw 1 (f_j 0.52) where both ran on an Intel Xeon?",
    ),
}


def describe(result: dict) -> str:
    """One line: the window notions and the share of non-positive participant FedSV."""
    t = result["table3"]
    reps = result["per_client"]["repeats"]
    nonpos = sum(sum(r["num_nonpositive_s"]) for r in reps)
    entries = sum(len(ids) for r in reps for ids in r["client_ids"])
    notions = ", ".join(f"{k} {t[k]:.3f}" for k in ("f_j", "f_g", "f_r", "f_o", "F_T"))
    per_round = {k: np.round(result["per_round"][k], 2).tolist() for k in ("f_j", "f_r")}
    return f"{notions}; per round f_j {per_round['f_j']}, f_r {per_round['f_r']}; non-positive s {nonpos}/{entries}"


def print_estimates() -> None:
    """Per study: runs done and left, minutes per run and hours left on this CPU (committed seconds_per_run)."""
    results, files = load_results(RESULTS_DIR), load_studies()
    total, unknown = 0.0, False
    for study in STUDIES:
        cost = estimate(study, results, files.get(study.label))
        hours = "unknown" if cost.minutes_left is None else f"{cost.minutes_left / 60:.1f} h"
        print(f"{study.label}: {cost.runs - cost.runs_left} of {cost.runs} runs done; left {cost.text()} = {hours}")
        total += cost.minutes_left or 0.0
        unknown = unknown or cost.minutes_left is None
    print(f"queue left: {total / 60:.1f} h{' (+ unpriced runs)' if unknown else ''}; "
          "measured at the committed runs' load, another process on the 2 cores slows every run")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", help="experiment or study label(s) to run (default: every experiment)")
    parser.add_argument("--queue", action="store_true", help="run every study in priority order, skipping done runs")
    parser.add_argument("--list", action="store_true", help="print the experiments and studies and exit")
    parser.add_argument("--estimate", action="store_true", help="print what the studies left cost on this CPU and exit")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args(argv)
    studies = {s.label: s for s in STUDIES}
    if args.list:
        for label, (name, overrides, rounds, purpose) in EXPERIMENTS.items():
            print(f"{label}: {name} {overrides}, {rounds} rounds -- {purpose}")
        for study in STUDIES:
            print(f"{study.label} (study, {len(study.variants)} runs): {study.purpose}")
        return 0
    if args.estimate:
        print_estimates()
        return 0
    unknown = set(args.only or []) - set(EXPERIMENTS) - set(studies)
    if unknown:
        print(f"unknown label(s) {sorted(unknown)}; known: {sorted(EXPERIMENTS) + list(studies)}", file=sys.stderr)
        return 2
    labels = list(studies) if args.queue else (args.only or list(EXPERIMENTS))
    for label in labels:
        start = time.perf_counter()
        if label in studies:
            data = run_study(studies[label], device=args.device, log=lambda line: print(line, flush=True))
            print(f"{label} ({time.perf_counter() - start:.0f} s): {len(data['runs'])} runs in its file", flush=True)
            continue
        name, overrides, rounds, purpose = EXPERIMENTS[label]
        result = run_variant(name, label, overrides, rounds=rounds, purpose=purpose, device=args.device)
        print(f"{label} ({time.perf_counter() - start:.0f} s): {describe(result)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
