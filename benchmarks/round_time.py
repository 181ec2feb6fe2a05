"""Benchmark: wall time per FL round of the in-process engine (FedAvg), printed as a table.

Usage::

    python benchmarks/round_time.py [--rounds 3] [--device cpu] [--threads 1 2] [--fairness]

Settings measured (issue "foundation", closing note):

- NSL-KDD (full KDDTrain+), 100 iid clients, 5 per round, 5 local epochs, batch 32, Adam;
- CIFAR-10 subset (19,981 images), 10 iid clients, 5 per round, 10 local epochs, batch 32, Adam.

Round 1 includes one-time warm-up; the table reports the mean of the following rounds as well.
Speed targets live here, never in tests.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import numpy as np

from fltrust.config import ExperimentConfig
from fltrust.experiment import prepare_experiment, run_experiment

SETTINGS = {
    "nsl_kdd 100C/5PC/5E": {
        "data": {"name": "nsl_kdd"},
        "partition": {"num_clients": 100, "scheme": "iid"},
        "model": {"name": "nsl_kdd_mlp"},
        "strategy": {"name": "fedavg", "clients_per_round": 5},
        "training": {"local_epochs": 5, "batch_size": 32},
    },
    "cifar10 10C/5PC/10E": {
        "data": {"name": "cifar10"},
        "partition": {"num_clients": 10, "scheme": "iid"},
        "model": {"name": "cifar_cnn"},
        "strategy": {"name": "fedavg", "clients_per_round": 5},
        "training": {"local_epochs": 10, "batch_size": 32},
    },
}


def measure(name: str, spec: dict, rounds: int, device: str, threads: int, fairness: bool) -> dict:
    data = json.loads(json.dumps(spec))
    data["training"]["rounds"] = rounds
    data["run"] = {"name": "bench", "progress": False, "device": device, "torch_threads": threads, "checkpoint": False}
    data["metrics"] = {"fairness": {"enabled": fairness}}
    cfg = ExperimentConfig.from_dict(data)
    start = time.perf_counter()
    prepare_experiment(cfg)  # data loading and partitioning, measured on its own
    prepare = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        record = run_experiment(cfg, out_dir=tmp)
    train = [float(np.sum(r.client_metrics["train_time_s"])) for r in record.rounds[1:]]
    per_round = record.summary["wall_time_s"] / rounds
    return {
        "setting": name,
        "device": device,
        "threads": threads,
        "fairness": fairness,
        "prepare_s": prepare,
        "s_per_round": per_round,
        "client_s_round1": train[0],
        "client_s_later": float(np.mean(train[1:])) if len(train) > 1 else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--fairness", action="store_true", help="also attach the fairness observer (FedSV)")
    parser.add_argument("--only", default=None, help="substring of the settings to run")
    args = parser.parse_args()
    rows = []
    for name, spec in SETTINGS.items():
        if args.only and args.only not in name:
            continue
        for threads in args.threads:
            rows.append(measure(name, spec, args.rounds, args.device, threads, args.fairness))
    header = f"{'setting':<22} {'device':<6} {'thr':>3} {'FedSV':>5} {'prepare s':>9} {'s/round':>8} {'clients s r1':>12} {'clients s r2+':>13}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['setting']:<22} {r['device']:<6} {r['threads']:>3} {str(r['fairness']):>5} {r['prepare_s']:>9.2f} "
              f"{r['s_per_round']:>8.2f} {r['client_s_round1']:>12.2f} {r['client_s_later']:>13.2f}")


if __name__ == "__main__":
    main()
