"""Benchmark: seconds per round of the in-process engine vs the Flower engine, and where Flower's time goes.

Usage::

    python benchmarks/engines.py [--rounds 3] [--only nsl] [--threads 1]

Settings (as in ``benchmarks/round_time.py``), FedAvg, CPU, no metrics observers:

- NSL-KDD, 100 iid clients, 5 per round, 5 local epochs, batch 32, Adam;
- CIFAR-10, 10 iid clients, 5 per round, 10 local epochs, batch 32, Adam.

Engines: ``inprocess`` (default settings: a round's clients train side by side as one stacked
model, ``training.vectorize: auto``), ``inproc-seq`` (the same with ``vectorize: off``: one client
after another, which is what each Flower ClientApp does) and ``flower`` (``run.engine: flower``,
Ray actors with 1 CPU each).

Real data is read from ``$FLTRUST_DATA`` (else ``../shared/datasets`` when it exists); a missing
dataset is replaced by its synthetic stand-in and the table says ``synthetic``.

Both engines are timed the same way: an observer notes the time at which each round's record is
handed over, so "round k" is the wall time between the records of rounds k-1 and k (sampling,
client work, aggregation, server evaluation). Flower's one-time costs are reported apart: Ray
start-up (``ray.init``), simulation start, and the partition-discovery round (one ``query``
message per SuperNode, which is also when the Ray actors start and load the federation).
"Clients" is the summed client time of a round (reward evaluation, training, evaluation) measured
inside the clients; "serialise" is the measured cost of moving the round's models through Flower
records (``ArrayRecord`` + pickling, down and up); "rest" is what remains of a Flower round after
the client work (divided by the number of Ray actors working in parallel) and serialisation:
Flower's message routing (the Simulation Runtime polls every 0.1 s), Ray task dispatch and the
server side. Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import tempfile
import time
from pathlib import Path

import numpy as np

from fltrust.config import ExperimentConfig, TrainingConfig
from fltrust.core.observers import BaseObserver
from fltrust.experiment import prepare_experiment, run_experiment

SETTINGS = {
    "nsl_kdd 100C/5PC/5E": {
        "data": {"name": "nsl_kdd", "allow_synthetic_fallback": True},
        "partition": {"num_clients": 100, "scheme": "iid"},
        "model": {"name": "nsl_kdd_mlp"},
        "strategy": {"name": "fedavg", "clients_per_round": 5},
        "training": {"local_epochs": 5, "batch_size": 32},
    },
    "cifar10 10C/5PC/10E": {
        "data": {"name": "cifar10", "allow_synthetic_fallback": True},
        "partition": {"num_clients": 10, "scheme": "iid"},
        "model": {"name": "cifar_cnn"},
        "strategy": {"name": "fedavg", "clients_per_round": 5},
        "training": {"local_epochs": 10, "batch_size": 32},
    },
}


class RoundClock(BaseObserver):
    """Notes when each round's record arrives (the same point in both engines)."""

    name = "round_clock"

    def __init__(self) -> None:
        self.times: list[float] = []

    def on_round_end(self, record):
        self.times.append(time.perf_counter())
        return None

    def round_seconds(self) -> list[float]:
        return list(np.diff(self.times))


def serialisation_seconds(params: list[np.ndarray], messages: int, repeats: int = 5) -> float:
    """Seconds to move ``messages`` models through Flower records (ArrayRecord, pickle, back)."""
    from fltrust.flower.records import arrays_to_params, params_to_arrays

    start = time.perf_counter()
    for _ in range(repeats):
        record = params_to_arrays(params)
        arrays_to_params(pickle.loads(pickle.dumps(record, protocol=5)))
    return (time.perf_counter() - start) / repeats * messages


ENGINES = {
    "inprocess": ("inprocess", {}),  # the default: a round's clients train as one stacked model where possible
    "inproc-seq": ("inprocess", {"vectorize": "off"}),  # one client after another: what a ClientApp does
    "flower": ("flower", {}),
}


def configure(spec: dict, engine: str, rounds: int, threads: int | None) -> ExperimentConfig:
    engine, training = ENGINES[engine]
    data = json.loads(json.dumps(spec))
    data["training"]["rounds"] = rounds
    if "vectorize" in training and "vectorize" not in TrainingConfig.__dataclass_fields__:
        training = {}
    data["training"].update(training)
    data["run"] = {"name": "bench", "progress": False, "device": "cpu", "torch_threads": threads, "checkpoint": False,
                   "engine": engine}
    data["metrics"] = {"fairness": {"enabled": False}}
    data["flower"] = {"num_cpus": 1}
    return ExperimentConfig.from_dict(data)


def measure(name: str, spec: dict, engine: str, rounds: int, threads: int | None) -> dict:
    cfg = configure(spec, engine, rounds, threads)
    clock = RoundClock()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        record = run_experiment(cfg, observers=[clock], out_dir=tmp)
        total = time.perf_counter() - start
    per_round = clock.round_seconds()
    clients = [float(np.sum(r.client_metrics["train_time_s"])) for r in record.rounds[1:]]
    flower = record.summary.get("flower", {})
    return {"setting": name, "engine": engine, "synthetic": bool(record.summary.get("synthetic")), "total_s": total,
            "round1_s": per_round[0], "later_s": float(np.mean(per_round[1:])) if len(per_round) > 1 else float("nan"),
            "clients_s": float(np.mean(clients[1:] or clients)), "flower": flower, "cfg": cfg}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads of the in-process engine (Flower clients: 1 each, flower.num_cpus=1); "
                             "on a shared machine more threads than free cores slow torch down a lot")
    parser.add_argument("--only", default=None, help="substring of the settings to run")
    args = parser.parse_args()
    rows, notes = [], []
    for name, spec in SETTINGS.items():
        if args.only and args.only not in name:
            continue
        pair = {engine: measure(name, spec, engine, args.rounds, args.threads) for engine in ENGINES}
        rows.extend(pair.values())
        inproc, seq, fl = pair["inprocess"], pair["inproc-seq"], pair["flower"]
        timings = fl["flower"]
        experiment = prepare_experiment(fl["cfg"])
        params = [v.detach().cpu().numpy() for v in experiment.model.state_dict().values()]
        m = fl["cfg"].clients_per_round()
        actors = max(1, min(m, int((os.cpu_count() or 1) / fl["cfg"].flower.num_cpus)))
        serial = serialisation_seconds(params, 2 * m)
        rest = fl["later_s"] - fl["clients_s"] / actors - serial
        notes.append(
            f"{name} ({'synthetic' if fl['synthetic'] else 'real'} data), Flower: one-time Ray start-up "
            f"{timings.get('ray_init_s', float('nan')):.1f} s + simulation start {timings.get('simulation_start_s', 0):.1f} s "
            f"+ discovery of {fl['cfg'].partition.num_clients} SuperNodes (Ray actors starting, loading the federation) "
            f"{timings.get('discovery_s', float('nan')):.1f} s; per round after the first: clients "
            f"{fl['clients_s']:.2f} s of work on {actors} actor(s) in parallel (in-process: {inproc['clients_s']:.2f} s "
            f"vectorised, {seq['clients_s']:.2f} s one client after another), serialisation {serial * 1e3:.1f} ms "
            f"({2 * m} models of {sum(p.nbytes for p in params) / 1e6:.2f} MB), rest {rest:.2f} s "
            f"(message routing: the runtime polls every 0.1 s, Ray dispatch, server evaluation)")
    header = (f"{'setting':<22} {'data':<9} {'engine':<9} {'total s':>8} {'start-up s':>10} {'round 1 s':>9} "
              f"{'s/round 2+':>10} {'clients s':>9} {'ratio':>6}")
    print(header)
    print("-" * len(header))
    base = {}
    for r in rows:
        startup = sum(r["flower"].get(k, 0.0) for k in ("ray_init_s", "simulation_start_s", "discovery_s"))
        if r["engine"] == "inprocess":
            base[r["setting"]] = r["later_s"]
        ratio = r["later_s"] / base[r["setting"]] if r["setting"] in base else float("nan")
        print(f"{r['setting']:<22} {'synthetic' if r['synthetic'] else 'real':<9} {r['engine']:<9} {r['total_s']:>8.1f} "
              f"{startup:>10.1f} {r['round1_s']:>9.2f} {r['later_s']:>10.2f} {r['clients_s']:>9.2f} {ratio:>6.2f}")
    print()
    for note in notes:
        print(note)
    print(f"\n{os.cpu_count()} CPU cores; ratio = s/round (rounds 2+) / in-process (default) s/round (rounds 2+); "
          "inproc-seq = in-process with training.vectorize=off; "
          f"data root {os.environ.get('FLTRUST_DATA', Path('../shared/datasets').resolve())}")


if __name__ == "__main__":
    if "FLTRUST_DATA" not in os.environ and Path("../shared/datasets").is_dir():
        os.environ["FLTRUST_DATA"] = str(Path("../shared/datasets").resolve())
    main()
