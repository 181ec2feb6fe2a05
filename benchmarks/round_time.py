"""Benchmark: wall time per FL round of the in-process engine, sequential vs vectorised clients.

Usage::

    python benchmarks/round_time.py [--rounds 4] [--device cpu] [--only nsl] [--no-e2e] [--threads N]

Columns: the same workload with ``training.vectorize: off`` (the sampled clients train one after
another, per-client evaluations) and ``auto`` (they train side by side as one stacked model,
evaluations batched; :mod:`fltrust.engines.vectorized`). Settings:

- ``nsl_kdd 100C/5PC/5E``: NSL-KDD (KDDTrain+), 100 iid clients, 5 per round, 5 local epochs,
  batch 32, Adam -- 1 thread (target: vectorised <= 0.18 s/round and 5x faster than pfl-research;
  ``benchmarks/peers.py`` runs the peers side by side);
- ``cifar10 10C/5PC/10E``: 20,000 CIFAR-10 training images (``data.max_train_samples``: the subset
  the target is set on, whatever the data mirror holds; ~1,800 training + 200 validation
  images per client), 10 iid clients, 5 per round, 10 local epochs, batch 32, Adam, cifar_cnn --
  2 threads (target: <= 6 s/round);
- ``nsl_kdd condition e2e``: the Table 3 condition ``fedavg_nslkdd_100c_iid`` end to end (30
  rounds, exact FedSV of the 5 clients every round, ``metrics.fairness.enabled: true``,
  checkpoints) -- 1 thread (target: <= 15 s), wall time of the whole run including data loading.

Per-round times are the median over rounds 2.. (round 1 includes one-time warm-up); the machine's
other load shows in the spread, so compare the two columns of one run. Speed targets live here,
never in tests.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from fltrust.config import ExperimentConfig
from fltrust.core.observers import BaseObserver
from fltrust.experiment import run_experiment

REPO = Path(__file__).resolve().parents[1]
SETTINGS = {
    "nsl_kdd 100C/5PC/5E": {
        "spec": {
            "data": {"name": "nsl_kdd"},
            "partition": {"num_clients": 100, "scheme": "iid"},
            "model": {"name": "nsl_kdd_mlp"},
            "strategy": {"name": "fedavg", "clients_per_round": 5},
            "training": {"local_epochs": 5, "batch_size": 32},
        },
        "threads": 1,
        "target": 0.18,
    },
    "cifar10 10C/5PC/10E": {
        "spec": {
            "data": {"name": "cifar10", "max_train_samples": 20_000},  # the target's workload, whatever the mirror holds
            "partition": {"num_clients": 10, "scheme": "iid"},
            "model": {"name": "cifar_cnn"},
            "strategy": {"name": "fedavg", "clients_per_round": 5},
            "training": {"local_epochs": 10, "batch_size": 32},
        },
        "threads": 2,
        "target": 6.0,
    },
}
E2E = {"config": "papers_repro/fairness_analytics/configs/fedavg_nslkdd_100c_iid.yaml", "threads": 1, "target": 15.0}


class RoundClock(BaseObserver):
    """Wall-clock time between consecutive round ends (round 1 measured from round 0's end)."""

    name = "round_clock"

    def __init__(self) -> None:
        self.stamps: list[float] = []

    def on_round_end(self, record):
        self.stamps.append(time.perf_counter())
        return None

    def per_round(self) -> list[float]:
        return [b - a for a, b in zip(self.stamps, self.stamps[1:])]


def measure_rounds(spec: dict, mode: str, rounds: int, device: str, threads: int) -> dict:
    data = json.loads(json.dumps(spec))
    data["training"]["rounds"] = rounds
    data["training"]["vectorize"] = mode
    data["run"] = {"name": "bench", "progress": False, "device": device, "torch_threads": threads, "checkpoint": False}
    cfg = ExperimentConfig.from_dict(data)
    clock = RoundClock()
    with tempfile.TemporaryDirectory() as tmp:
        record = run_experiment(cfg, observers=[clock], out_dir=tmp)
    times = clock.per_round()
    later = times[1:] or times
    return {"mode": mode, "round1_s": times[0], "median_s": statistics.median(later), "min_s": min(later),
            "final_aux_accuracy": record.summary["final_aux_accuracy"]}


def measure_e2e(mode: str, device: str, threads: int) -> dict:
    data = yaml.safe_load((REPO / E2E["config"]).read_text())
    data["training"]["vectorize"] = mode
    data["run"].update({"progress": False, "device": device, "torch_threads": threads, "checkpoint": True})
    cfg = ExperimentConfig.from_dict(data)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        record = run_experiment(cfg, out_dir=tmp)
    return {"mode": mode, "wall_s": time.perf_counter() - start, "rounds": cfg.training.rounds,
            "final_aux_accuracy": record.summary["final_aux_accuracy"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds per measurement (the first is warm-up)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="override every setting's thread count")
    parser.add_argument("--only", default=None, help="substring of the settings to run ('e2e' for the condition)")
    parser.add_argument("--no-e2e", action="store_true", help="skip the 30-round end-to-end condition")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args()
    rows = []
    header = (f"{'setting':<34} {'thr':>3} {'sequential':>11} {'vectorised':>11} {'speedup':>7} {'target':>7}  "
              f"{'acc seq/vec':>11}")
    lines = [header, "-" * len(header)]
    for name, setting in SETTINGS.items():
        if args.only and args.only not in name:
            continue
        threads = args.threads or setting["threads"]
        seq = measure_rounds(setting["spec"], "off", args.rounds, args.device, threads)
        vec = measure_rounds(setting["spec"], "auto", args.rounds, args.device, threads)
        rows.append({"setting": name, "threads": threads, "sequential": seq, "vectorised": vec})
        lines.append(f"{name + ' s/round':<34} {threads:>3} {seq['median_s']:>11.3f} {vec['median_s']:>11.3f} "
                     f"{seq['median_s'] / vec['median_s']:>6.1f}x {setting['target']:>7.2f}  "
                     f"{seq['final_aux_accuracy']:.3f}/{vec['final_aux_accuracy']:.3f}")
        print(lines[-1], file=sys.stderr, flush=True)
    if not args.no_e2e and (not args.only or args.only in "nsl_kdd condition e2e"):
        threads = args.threads or E2E["threads"]
        seq = measure_e2e("off", args.device, threads)
        vec = measure_e2e("auto", args.device, threads)
        rows.append({"setting": "nsl_kdd condition e2e", "threads": threads, "sequential": seq, "vectorised": vec})
        lines.append(f"{'nsl_kdd condition e2e s (30R+FedSV)':<34} {threads:>3} {seq['wall_s']:>11.2f} "
                     f"{vec['wall_s']:>11.2f} {seq['wall_s'] / vec['wall_s']:>6.1f}x {E2E['target']:>7.2f}  "
                     f"{seq['final_aux_accuracy']:.3f}/{vec['final_aux_accuracy']:.3f}")
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
