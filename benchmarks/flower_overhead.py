"""A 10-client Flower app's round time with and without both papers' metrics, on CPU.

The app is the quickstart shape (Message API, Flower's FedAvg, its own CIFAR-sized ``Net`` and
DataLoaders of synthetic 3x32x32 images); "with metrics" adds the documented calls of
``fltrust.flower`` (``instrument`` on the server, ``client_report`` / ``attach`` on the
clients). Per round that adds: on each client two evaluations of its validation set (the received
and the trained model); on the server the aux-set evaluation, FedSV (exact: 2^m - 1 coalition
models; ``auto``: the guided permutation sampler above 6 participants), the four notions and the
trust score of the FactSheet so far. CLEVER and SHAP run once, at run end.

A round's time is the interval between two calls of the app's own ``evaluate_fn`` (rounds 2..R:
one round's training plus the previous round's metrics); the table gives the fastest of those
intervals over ``--repeats`` runs (plain and with metrics alternate), the least disturbed by other
load on the machine, and their median. "start + end" is the rest of the fastest run (run folder,
round 0, the last round's metrics, CLEVER, SHAP, files).

    python benchmarks/flower_overhead.py                       # in-process (fltrust.flower.run_local), 4 rounds
    python benchmarks/flower_overhead.py --runtime simulation  # Flower's Simulation Runtime (Ray)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

import fltrust.flower as ft

NUM_CLIENTS = 10


class Net(nn.Module):
    """Flower's quickstart-pytorch CNN (62,006 parameters, 3x32x32 inputs, 10 classes)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.pool, self.conv2 = nn.Conv2d(3, 6, 5), nn.MaxPool2d(2, 2), nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(16 * 5 * 5, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x.flatten(1))))))


def load_data(seed: int, n: int) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 10, (n,), generator=g)
    x = torch.randn(n, 3, 32, 32, generator=g) * 0.5 + (y.view(-1, 1, 1, 1) - 4.5) / 5
    return DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, generator=g)


def train_fn(model: nn.Module, loader: DataLoader, lr: float) -> float:
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    return loss.item()


def build_apps(*, metrics: bool, per_round: int, shapley: str, rounds: int, samples: int, out_dir: str,
               times: list[float]) -> tuple[ServerApp, ClientApp]:
    client = ClientApp()

    @client.train()
    def train(msg: Message, context: Context) -> Message:
        model = Net()
        model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        pid = int(context.node_config["partition-id"])
        trainloader, valloader = load_data(pid, samples), load_data(1_000 + pid, samples // 4)
        report = ft.client_report(model, trainloader, valloader, context=context) if metrics else None
        loss = train_fn(model, trainloader, float(msg.content["config"]["lr"]))
        content = RecordDict({"arrays": ArrayRecord(model.state_dict()),
                              "metrics": MetricRecord({"train_loss": loss, "num-examples": samples})})
        return Message(report.attach(content) if metrics else content, reply_to=msg)

    server = ServerApp()

    @server.main()
    def main(grid: Grid, context: Context) -> None:
        strategy = FedAvg(fraction_train=per_round / NUM_CLIENTS, fraction_evaluate=0.0,
                          min_available_nodes=NUM_CLIENTS, min_train_nodes=per_round)
        if metrics:
            strategy = ft.instrument(strategy, model=Net(), aux=load_data(50_000, 300), test=load_data(60_000, 100),
                                     out_dir=out_dir, name="overhead", dataset_name="synthetic CIFAR-shaped images",
                                     fairness=ft.FairnessSettings(shapley=shapley), num_clients=NUM_CLIENTS)

        def evaluate(server_round: int, arrays: ArrayRecord) -> None:
            times.append(time.perf_counter())

        strategy.start(grid=grid, initial_arrays=ArrayRecord(Net().state_dict()),
                       train_config=ConfigRecord({"lr": 0.01}), num_rounds=rounds, evaluate_fn=evaluate)

    return server, client


def run_once(args: argparse.Namespace, *, metrics: bool, per_round: int, shapley: str) -> tuple[list[float], float]:
    """``(s of each round 2..R, s of start + end)`` of one run."""
    times: list[float] = []
    with tempfile.TemporaryDirectory() as out:
        server, client = build_apps(metrics=metrics, per_round=per_round, shapley=shapley, rounds=args.rounds,
                                    samples=args.samples, out_dir=out, times=times)
        start = time.perf_counter()
        if args.runtime == "local":
            ft.run_local(server, client, NUM_CLIENTS)
        else:
            from flwr.simulation import run_simulation

            run_simulation(server_app=server, client_app=client, num_supernodes=NUM_CLIENTS,
                           backend_config={"client_resources": {"num_cpus": 1}})
        total = time.perf_counter() - start
    steady = [b - a for a, b in zip(times[1:], times[2:])]
    if not steady:
        raise SystemExit("run at least 2 rounds (--rounds)")
    return steady, total - sum(steady)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds per run (>= 2; default 4)")
    parser.add_argument("--samples", type=int, default=200, help="training images per client (default 200)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each setting (default 2)")
    parser.add_argument("--runtime", choices=("local", "simulation"), default="local",
                        help="local: ClientApps called in this process; simulation: Flower's Ray runtime")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rows = []
    for per_round, shapley in ((5, "exact"), (10, "auto")):
        rounds: dict[bool, list[float]] = {False: [], True: []}
        edges: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.repeats):
            for metrics in (False, True):
                steady, rest = run_once(args, metrics=metrics, per_round=per_round, shapley=shapley)
                rounds[metrics] += steady
                edges[metrics].append(rest)
        fedsv = "exact (31 coalitions)" if shapley == "exact" else "auto: sampler at 10 (<= 91 coalitions)"
        rows.append((f"{per_round} of {NUM_CLIENTS}", fedsv, rounds, edges))
    print(f"\n{NUM_CLIENTS}-client Flower app (quickstart CNN, {args.samples} images per client, 1 epoch), "
          f"{args.runtime} runtime, {args.threads} torch threads; rounds 2..{args.rounds} of {args.repeats} runs "
          f"each: fastest (median) s/round; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    header = ("clients/round", "FedSV", "plain s/round", "with metrics s/round", "overhead s/round",
              "plain start+end s", "with metrics start+end s")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for clients, fedsv, rounds, edges in rows:
        plain, observed = min(rounds[False]), min(rounds[True])
        extra = observed - plain
        print(f"| {clients} | {fedsv} | {plain:.2f} ({statistics.median(rounds[False]):.2f}) | "
              f"{observed:.2f} ({statistics.median(rounds[True]):.2f}) | {extra:+.2f} ({100 * extra / plain:+.0f} %) | "
              f"{min(edges[False]):.2f} | {min(edges[True]):.2f} |")

if __name__ == "__main__":
    main()
