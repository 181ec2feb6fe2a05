"""Benchmark: per-round time of the four fairness datasets at the paper's scale, and an estimate
for the whole 72-run Federated Fairness Analytics suite (24 conditions x 3 repeats x 30 rounds).

Usage::

    python benchmarks/gpu.py [--device cuda|cpu] [--rounds 3] [--vectorize auto|off]
                             [--cuda-graph] [--only nsl] [--all-strategies] [--json out.json]

Datasets (the FedAvg iid condition of each, from ``papers_repro/fairness_analytics/configs``,
with the CPU-budget caps removed -- ``data.max_train_samples`` and ``partition.aux_max_samples``
-- so the data is as large as the local copy allows; the local copy is smaller than the paper's
in places, see the configs' ``deviations``): CIFAR-10 100 clients, CIFAR-10 10 clients, FEMNIST
(110 writers), NSL-KDD 100 clients; exact FedSV every round (``metrics.fairness.enabled``).

Each dataset runs ``--rounds`` rounds; the per-round time is the median of rounds 2.. (round 1
includes warm-up and, on a GPU, kernel selection). The suite estimate multiplies it by the
conditions' rounds and repeats; Ditto adds its personal epochs (``ditto_epochs`` of plain SGD)
in proportion to the local epochs unless ``--all-strategies`` measures every strategy. Data
loading and partitioning are excluded (printed separately).

Without CUDA it runs on the CPU (``--device cpu``) and prints ``unmeasured on GPU``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

from fltrust.config import ExperimentConfig
from fltrust.core.observers import BaseObserver
from fltrust.experiment import run_experiment

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "papers_repro" / "fairness_analytics" / "configs"
DATASETS = {
    "cifar10_100c": "cifar10_100c",
    "cifar10_10c": "cifar10_10c",
    "femnist": "femnist_205c",
    "nsl_kdd": "nslkdd_100c",
}
STRATEGIES = ("fedavg", "qfedavg", "ditto")
REPEATS = 3


class RoundClock(BaseObserver):
    name = "round_clock"

    def __init__(self) -> None:
        self.stamps: list[float] = []

    def on_round_end(self, record):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.stamps.append(time.perf_counter())
        return None


def paper_scale(path: Path, *, device: str, rounds: int, vectorize: str) -> ExperimentConfig:
    data = yaml.safe_load(path.read_text())
    data["data"].pop("max_train_samples", None)
    data["partition"].pop("aux_max_samples", None)
    data["training"]["rounds"] = rounds
    data["training"]["vectorize"] = vectorize
    data["run"].update({"progress": False, "device": device, "checkpoint": False})
    data["run"].pop("deviations", None)
    return ExperimentConfig.from_dict(data)


def measure(path: Path, args) -> dict:
    cfg = paper_scale(path, device=args.device, rounds=args.rounds, vectorize=args.vectorize)
    clock = RoundClock()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        record = run_experiment(cfg, observers=[clock], out_dir=tmp)
    total = time.perf_counter() - start
    per = [b - a for a, b in zip(clock.stamps, clock.stamps[1:])]
    later = per[1:] or per
    return {"config": path.stem, "per_round_s": statistics.median(later), "round1_s": per[0],
            "setup_s": total - sum(per), "synthetic": bool(record.summary.get("synthetic")),
            "local_epochs": cfg.training.local_epochs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vectorize", default="auto", choices=("auto", "on", "off"))
    parser.add_argument("--cuda-graph", action="store_true", help="capture the stacked steps in CUDA graphs")
    parser.add_argument("--only", default=None, help="substring of the dataset names")
    parser.add_argument("--all-strategies", action="store_true", help="measure q-FedAvg and Ditto too")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (CPU)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: use --device cpu", file=sys.stderr)
        raise SystemExit(2)
    if args.cuda_graph:
        os.environ["FLTRUST_CUDA_GRAPH"] = "1"
    if args.threads:
        torch.set_num_threads(args.threads)
    on_gpu = args.device == "cuda"
    where = torch.cuda.get_device_name() if on_gpu else f"CPU, {torch.get_num_threads()} threads"
    print(f"device: {where}; vectorize={args.vectorize}; cuda_graph={args.cuda_graph and on_gpu}")
    if not on_gpu:
        print("unmeasured on GPU: these are CPU times")
    measured: dict[tuple[str, str], dict] = {}
    for dataset, stem in DATASETS.items():
        if args.only and args.only not in dataset:
            continue
        for strategy in (STRATEGIES if args.all_strategies else ("fedavg",)):
            row = measure(CONFIGS / f"{strategy}_{stem}_iid.yaml", args)
            measured[(dataset, strategy)] = row
            print(f"{dataset:<13} {strategy:<8} {row['per_round_s']:>8.3f} s/round  (round 1 {row['round1_s']:.2f} s, "
                  f"setup {row['setup_s']:.1f} s{', SYNTHETIC data' if row['synthetic'] else ''})", flush=True)
    # the suite: every condition config x repeats
    total, missing = 0.0, []
    for path in sorted(CONFIGS.glob("*.yaml")):
        cfg = yaml.safe_load(path.read_text())
        strategy = cfg["strategy"]["name"]
        dataset = next((d for d, stem in DATASETS.items() if f"_{stem}_" in path.name), None)
        if dataset is None:
            continue
        row = measured.get((dataset, strategy)) or measured.get((dataset, "fedavg"))
        if row is None:
            missing.append(path.stem)
            continue
        per_round = row["per_round_s"]
        if (dataset, strategy) not in measured and strategy == "ditto":
            s = cfg["strategy"]
            per_round *= 1 + s.get("ditto_epochs", 10) / max(1, cfg["training"]["local_epochs"])
        total += per_round * cfg["training"]["rounds"] * REPEATS
    label = "GPU" if on_gpu else "CPU (unmeasured on GPU)"
    if missing:
        print(f"suite estimate incomplete: {len(missing)} conditions of datasets not measured (--only)")
    print(f"72-run fairness suite estimate on {label}: {total / 3600:.2f} h ({total:.0f} s) of rounds, "
          f"excluding data loading")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": where, "rows": [
            {"dataset": d, "strategy": s, **r} for (d, s), r in measured.items()], "suite_s": total}, indent=2))


if __name__ == "__main__":
    main()
