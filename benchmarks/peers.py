"""Benchmark: one FedAvg workload in fltrust and in its peers, side by side, one thread each.

Usage::

    nice python benchmarks/peers.py [--rounds 5] [--repeats 1] [--systems pfl,flower,torch,fltrust,fltrust-seq]

The workload: NSL-KDD (KDDTrain+ from ``$FLTRUST_DATA/nsl_kdd``; without it fltrust's
synthetic stand-in of the same size, and the table says ``synthetic``), split by fltrust into 100
iid clients (each trains on its 90 % training split, about 1,134 rows), 5 clients per round, 5
local epochs, batch 32, Adam (learning rate 0.001, a new optimiser per client and round),
BCE-with-logits, the MLP 122-122-122-122-1 (fltrust's ``nsl_kdd_mlp``, the same initial weights
for every system), FedAvg weighted by samples, and after every round the global model's accuracy
on the auxiliary set (KDDTest+, 22,544 rows). Every system gets the same in-memory tensors.

Systems (each runs in its own child process; ``torch.set_num_threads(1)`` in every process):

``pfl``
    pfl-research 0.6.0 (Apple), PyTorch backend: ``PyTorchModel`` (local ``torch.optim.Adam``,
    central SGD with learning rate 1, which applies the averaged update), ``FederatedAveraging``
    on a ``SimulatedBackend`` in one process, ``WeightByDatapoints``, a
    ``CentralEvaluationCallback`` on the auxiliary set. pfl iterates a user's data in its stored
    order (no per-epoch shuffle). Optional: ``pip install pfl==0.6.0``. That pins ``attrs<24``
    (through ``dp-accounting``) and would downgrade the project venv's attrs, so install it into a
    folder of its own and name the folder in ``FLTRUST_PEERS_SITE``::

        pip install --target /tmp/pflsite --no-deps pfl==0.6.0 multiprocess==0.70.19 dill==0.4.1 \\
            dp-accounting==0.5.1 prv-accountant==0.2.0 absl-py==1.4.0 dm-tree==0.1.10 wrapt
        FLTRUST_PEERS_SITE=/tmp/pflsite python benchmarks/peers.py

    Without pfl the script prints one line and skips it.
``flower``
    Flower ``run_simulation`` (the Simulation Runtime, Ray): a ClientApp running the bare loop
    below and a ServerApp with Flower's message-API ``FedAvg`` (``fraction_train`` 0.05, server-side
    evaluation); one SuperNode per client; Ray started here with 2 CPUs, bound to 127.0.0.1, one
    CPU per ClientApp (two clients train at once), every reply awaited at most 300 s.
``torch``
    A bare PyTorch loop: ``load_state_dict``, ``torch.optim.Adam``, ``torch.randperm`` batches,
    a weighted average of the ``state_dict`` s.
``fltrust`` / ``fltrust-seq``
    fltrust's in-process engine (``Engine.run_round``: rewards on the clients' validation splits,
    local training, per-client and auxiliary evaluation, FedAvg; without run recording), with the
    round's clients trained side by side as one stacked model (``training.vectorize: auto``) or
    one after another (``off``).

Columns: ``s/round total`` = the system's wall time from its first call (Ray start-up, model and
strategy set-up, the initial evaluation) to the end of the last round, per round; ``s/round
steady`` = median wall seconds of rounds 2.. (round k: from the end of round k-1 to the end of
round k, evaluation included); ``CPU s/round steady`` = the same median in CPU seconds of the
child process and its live descendants (Ray's processes); ``CPU s run`` = CPU seconds over the
whole span of ``total``; ``x pfl`` = pfl's steady s/round over the system's, in wall and in CPU
seconds (how many times faster; against the bare PyTorch loop when pfl is absent); ``final acc``
= the final global model's accuracy on the auxiliary set (a check that every system trained).
With ``--repeats`` the systems run in turn, the order reversed every other repeat, and the table
holds medians. The footer names numpy's BLAS and ``OPENBLAS_CORETYPE``: fltrust's stacked MLP step
multiplies with numpy's OpenBLAS (:mod:`fltrust.blas`), so its kernels (AVX2 or AVX-512) set
fltrust's time; the other systems multiply with torch. The machine's load average is printed: on a
busy machine wall times follow the other processes (each system here uses one thread: its CPU
seconds are what it takes on an idle core), so compare systems of one run, not runs of different
days. Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import importlib.util
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[1]
CLIENTS, PER_ROUND, EPOCHS, BATCH, LR = 100, 5, 5, 32, 1e-3
EVAL_BLOCK = 4096
SYSTEMS = ("pfl", "flower", "torch", "fltrust", "fltrust-seq")
PFL_HINT = "pfl-research not installed: pip install pfl==0.6.0"


# --------------------------------------------------------------------------------------------
# The workload, shared by every system
# --------------------------------------------------------------------------------------------
def workload_config(rounds: int, seed: int = 0):
    """fltrust's config of the workload (real NSL-KDD when present, else its synthetic stand-in)."""
    from fltrust.config import ExperimentConfig

    root = Path(os.environ.get("FLTRUST_DATA", REPO.parent / "shared" / "datasets"))
    real = (root / "nsl_kdd" / "KDDTrain+.txt").is_file()
    data = {"name": "nsl_kdd"} if real else {"name": "synthetic_nsl_kdd", "synthetic_samples": 125_973}
    return ExperimentConfig.from_dict({
        "data": data,
        "partition": {"num_clients": CLIENTS, "scheme": "iid"},
        "model": {"name": "nsl_kdd_mlp"},
        "strategy": {"name": "fedavg", "clients_per_round": PER_ROUND},
        "training": {"rounds": rounds, "local_epochs": EPOCHS, "batch_size": BATCH, "optimizer": "adam",
                     "learning_rate": LR},
        "metrics": {"fairness": {"enabled": False}},
        "run": {"name": "peers", "progress": False, "device": "cpu", "torch_threads": 1, "checkpoint": False,
                "seed": seed},
    })


class Workload:
    """The prepared fltrust experiment and the plain tensors every peer trains on."""

    def __init__(self, rounds: int, seed: int = 0) -> None:
        from fltrust.experiment import prepare_experiment

        self.experiment = prepare_experiment(workload_config(rounds, seed))
        fed = self.experiment.federation
        self.synthetic = bool(fed.bundle.name.startswith("synthetic"))
        self.train = [fed.client_tensors(cid)[:2] for cid in range(CLIENTS)]
        self.x_aux, self.y_aux = fed.x_aux, fed.y_aux
        self.model = self.experiment.model  # the initial weights, the same for every system


def local_train(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, seed: int) -> None:
    """The bare loop's local training (also the Flower ClientApp's): Adam, shuffled batches."""
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    generator = torch.Generator().manual_seed(seed)
    target = y.to(torch.float32)
    for _ in range(EPOCHS):
        order = torch.randperm(len(y), generator=generator)
        for start in range(0, len(y), BATCH):
            index = order[start : start + BATCH]
            optimizer.zero_grad(set_to_none=True)
            loss = F.binary_cross_entropy_with_logits(model(x[index]).reshape(-1), target[index])
            loss.backward()
            optimizer.step()


@torch.no_grad()
def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Share of correct predictions (logit > 0 means class 1), in blocks of EVAL_BLOCK rows."""
    model.eval()
    correct = 0
    for start in range(0, len(y), EVAL_BLOCK):
        block = slice(start, start + EVAL_BLOCK)
        correct += int(((model(x[block]).reshape(-1) > 0).long() == y[block]).sum())
    return correct / max(1, len(y))


def weighted_average(states: list[dict], weights: list[int]) -> dict:
    total = float(sum(weights))
    return {k: sum(s[k] * (w / total) for s, w in zip(states, weights)) for k in states[0]}


def cpu_seconds() -> float:
    """CPU seconds of this process, its reaped children and its live descendants (Ray's processes)."""
    import psutil

    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


class Clock:
    """Wall-clock and CPU stamps: the start, then the end of the initial evaluation and of every round."""

    def __init__(self) -> None:
        self.start, self.cpu0 = time.perf_counter(), cpu_seconds()
        self.stamps: list[float] = []
        self.cpus: list[float] = []

    def stamp(self) -> None:
        self.stamps.append(time.perf_counter())
        self.cpus.append(cpu_seconds())

    def result(self, acc: float, rounds: int) -> dict:
        rounds_s = [float(t) for t in np.diff(self.stamps)]
        rounds_cpu = [float(t) for t in np.diff(self.cpus)]
        return {"total_s": (self.stamps[-1] - self.start) / rounds, "rounds_s": rounds_s,
                "steady_s": statistics.median(rounds_s[1:] or rounds_s),
                "steady_cpu_s": statistics.median(rounds_cpu[1:] or rounds_cpu),
                "cpu_s": self.cpus[-1] - self.cpu0, "accuracy": float(acc)}


# --------------------------------------------------------------------------------------------
# The systems
# --------------------------------------------------------------------------------------------
def run_torch(w: Workload, rounds: int, seed: int) -> dict:
    clock = Clock()
    model = copy.deepcopy(w.model)
    rng = np.random.default_rng(seed)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    accuracy(model, w.x_aux, w.y_aux)  # the initial evaluation, as the other systems make
    clock.stamp()
    for _ in range(rounds):
        states, sizes = [], []
        for cid in rng.choice(CLIENTS, PER_ROUND, replace=False):
            model.load_state_dict(state)
            x, y = w.train[cid]
            local_train(model, x, y, seed=int(rng.integers(2**31)))
            states.append({k: v.detach().clone() for k, v in model.state_dict().items()})
            sizes.append(len(y))
        state = weighted_average(states, sizes)
        model.load_state_dict(state)
        acc = accuracy(model, w.x_aux, w.y_aux)
        clock.stamp()
    return clock.result(acc, rounds)


def run_fltrust(w: Workload, rounds: int, seed: int, vectorize: str) -> dict:
    from fltrust.core.evaluation import get_params
    from fltrust.experiment import build_engine

    cfg = w.experiment.cfg.with_overrides({"training.vectorize": vectorize})
    clock = Clock()
    engine = build_engine(dataclasses.replace(w.experiment, cfg=cfg, model=copy.deepcopy(w.model),
                                              device=torch.device("cpu")))
    params = get_params(engine.model)
    aux = engine.evaluate_aux(params)
    clock.stamp()
    for round_ in range(1, rounds + 1):
        record = engine.run_round(round_, params, aux)
        params = record.global_params_after
        aux = (record.server_metrics["aux_loss"], record.server_metrics["aux_accuracy"])
        clock.stamp()
    return clock.result(aux[1], rounds)


def pfl_available() -> bool:
    site = os.environ.get("FLTRUST_PEERS_SITE")
    if site and site not in sys.path:
        sys.path.insert(0, site)
    try:
        return importlib.util.find_spec("pfl") is not None
    except (ImportError, ValueError):
        return False


def run_pfl(w: Workload, rounds: int, seed: int) -> dict:
    pfl_available()
    from pfl.aggregate.simulate import SimulatedBackend
    from pfl.aggregate.weighting import WeightByDatapoints
    from pfl.algorithm import FederatedAveraging, NNAlgorithmParams
    from pfl.callback.central_evaluation import CentralEvaluationCallback
    from pfl.callback.base import TrainingProcessCallback
    from pfl.data.dataset import Dataset
    from pfl.data.federated_dataset import FederatedDataset
    from pfl.data.sampling import get_user_sampler
    from pfl.hyperparam import NNEvalHyperParams, NNTrainHyperParams
    from pfl.metrics import Metrics, Weighted
    from pfl.model.pytorch import PyTorchModel

    class PflMLP(torch.nn.Module):
        """The workload's MLP with the ``loss`` and ``metrics`` methods pfl's PyTorchModel calls."""

        def __init__(self, net: torch.nn.Module) -> None:
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x)

        def loss(self, x, y, eval=False):  # `eval` is pfl's keyword
            self.eval() if eval else self.train()
            return F.binary_cross_entropy_with_logits(self(x).reshape(-1), y.to(torch.float32))

        @torch.no_grad()
        def metrics(self, x, y, eval=True):  # `eval` is pfl's keyword
            self.eval()
            return {"accuracy": Weighted(float(((self(x).reshape(-1) > 0).long() == y).sum()), len(y))}

    class Stamp(TrainingProcessCallback):
        def after_central_iteration(self, aggregate_metrics, model, *, central_iteration):
            clock.stamp()
            return False, Metrics()

    np.random.seed(seed)  # pfl samples users with numpy's global generator
    torch.manual_seed(seed)
    clock = Clock()
    net = PflMLP(copy.deepcopy(w.model))
    model = PyTorchModel(net, local_optimizer_create=torch.optim.Adam,
                         central_optimizer=torch.optim.SGD(net.parameters(), lr=1.0))
    users = FederatedDataset(lambda uid: Dataset(raw_data=list(w.train[uid]), user_id=uid),
                             get_user_sampler("random", list(range(CLIENTS))))
    backend = SimulatedBackend(training_data=users, val_data=users, postprocessors=[WeightByDatapoints()])
    eval_params = NNEvalHyperParams(local_batch_size=EVAL_BLOCK)
    central = CentralEvaluationCallback(Dataset(raw_data=[w.x_aux, w.y_aux]), model_eval_params=eval_params)

    class FirstStamp(TrainingProcessCallback):  # after the initial central evaluation
        def on_train_begin(self, *, model):
            clock.stamp()
            return Metrics()

    FederatedAveraging().run(
        algorithm_params=NNAlgorithmParams(central_num_iterations=rounds, evaluation_frequency=1,
                                           train_cohort_size=PER_ROUND, val_cohort_size=None),
        backend=backend, model=model,
        model_train_params=NNTrainHyperParams(local_learning_rate=LR, local_num_epochs=EPOCHS, local_batch_size=BATCH),
        model_eval_params=eval_params, callbacks=[central, FirstStamp(), Stamp()])
    return clock.result(accuracy(net, w.x_aux, w.y_aux), rounds)


def run_flower(w: Workload, rounds: int, seed: int) -> dict:
    import ray
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp
    from flwr.serverapp.strategy import FedAvg
    from flwr.simulation import run_simulation

    for name in ("flwr", "ray"):
        logging.getLogger(name).setLevel(logging.ERROR)
    clock = Clock()
    pythonpath = os.pathsep.join([p for p in sys.path if p] + [os.environ.get("PYTHONPATH", "")]).strip(os.pathsep)
    env = {"PYTHONPATH": pythonpath, "FLWR_TELEMETRY_ENABLED": "0", "OMP_NUM_THREADS": "1"}
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", logging_level=logging.ERROR,
             log_to_driver=False, runtime_env={"env_vars": env})
    data = ray.put({"train": [(x.numpy(), y.numpy()) for x, y in w.train], "model": w.model})
    client = ClientApp()

    @client.train()
    def train(msg, context):
        torch.set_num_threads(1)
        payload = ray.get(data)
        cid = int(context.node_config["partition-id"])
        model = copy.deepcopy(payload["model"])
        model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        x, y = (torch.from_numpy(a) for a in payload["train"][cid])
        local_train(model, x, y, seed=int(np.random.default_rng([seed, cid, int(msg.content["config"]["server-round"])])
                                          .integers(2**31)))
        reply = {"arrays": ArrayRecord(model.state_dict()), "metrics": MetricRecord({"num-examples": len(y)})}
        return Message(RecordDict(reply), reply_to=msg)

    server = ServerApp()
    model = copy.deepcopy(w.model)
    final = {}

    @server.main()
    def main(grid, context):
        def evaluate(server_round, arrays):
            model.load_state_dict(arrays.to_torch_state_dict())
            final["accuracy"] = accuracy(model, w.x_aux, w.y_aux)
            clock.stamp()  # before Flower shuts Ray down after the last round: its CPU is still counted
            return MetricRecord({"accuracy": final["accuracy"]})

        strategy = FedAvg(fraction_train=PER_ROUND / CLIENTS, fraction_evaluate=0.0, min_train_nodes=PER_ROUND,
                          min_available_nodes=CLIENTS)
        strategy.start(grid=grid, initial_arrays=ArrayRecord(model.state_dict()), num_rounds=rounds, timeout=300,
                       evaluate_fn=evaluate)

    run_simulation(server_app=server, client_app=client, num_supernodes=CLIENTS,
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}})
    if ray.is_initialized():
        ray.shutdown()
    if len(clock.stamps) != rounds + 1:
        raise RuntimeError(f"Flower finished {len(clock.stamps) - 1} of {rounds} rounds")
    return clock.result(final["accuracy"], rounds)


RUNNERS = {
    "pfl": run_pfl,
    "flower": run_flower,
    "torch": run_torch,
    "fltrust": lambda w, r, s: run_fltrust(w, r, s, "auto"),
    "fltrust-seq": lambda w, r, s: run_fltrust(w, r, s, "off"),
}
LABELS = {"pfl": "pfl-research 0.6", "flower": "Flower run_simulation", "torch": "bare PyTorch loop",
          "fltrust": "fltrust (stacked)", "fltrust-seq": "fltrust (sequential)"}


# --------------------------------------------------------------------------------------------
# Driver: one child process per system and repeat
# --------------------------------------------------------------------------------------------
def child(system: str, rounds: int, seed: int, out: str) -> None:
    torch.set_num_threads(1)
    import warnings

    warnings.filterwarnings("ignore")
    workload = Workload(rounds, seed)
    result = RUNNERS[system](workload, rounds, seed)
    result.update(system=system, synthetic=workload.synthetic)
    Path(out).write_text(json.dumps(result))


def run_child(system: str, rounds: int, seed: int, timeout: float) -> dict | None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", system, "--rounds", str(rounds),
               "--seed", str(seed), "--out", str(out)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               "OMP_NUM_THREADS": "1", "FLWR_TELEMETRY_ENABLED": "0"}
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"{system}: stopped after {timeout:.0f} s", file=sys.stderr)
            return None
        if proc.returncode != 0 or not out.is_file():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            print(f"{system}: failed (exit {proc.returncode}): {' | '.join(tail)}", file=sys.stderr)
            return None
        return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds per system (round 1 is warm-up)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per system, interleaved; the table holds medians")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated subset of {','.join(SYSTEMS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=600, help="seconds one system may take")
    parser.add_argument("--json", default=None, help="also write every run's numbers to this file")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.rounds, args.seed, args.out)
        return
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown:
        parser.error(f"--systems: unknown {', '.join(unknown)}; choose from {', '.join(SYSTEMS)}")
    if "pfl" in systems and not pfl_available():
        print(PFL_HINT)
        systems.remove("pfl")
    if "flower" in systems and importlib.util.find_spec("flwr") is None:
        print("Flower not installed: pip install flwr[simulation]")
        systems.remove("flower")
    load_before = os.getloadavg()
    runs: dict[str, list[dict]] = {s: [] for s in systems}
    for repeat in range(args.repeats):
        for system in systems if repeat % 2 == 0 else systems[::-1]:
            result = run_child(system, args.rounds, args.seed, args.timeout)
            if result is not None:
                runs[system].append(result)
                print(f"  {system}: steady {result['steady_s']:.3f} s/round ({result['steady_cpu_s']:.3f} CPU s), "
                      f"total {result['total_s']:.3f}, acc {result['accuracy']:.4f}", file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    sys.path.insert(0, str(REPO))
    from fltrust.blas import numpy_blas

    keys = ("total_s", "steady_s", "steady_cpu_s", "cpu_s", "accuracy")
    med = {s: {k: statistics.median(r[k] for r in rs) for k in keys} for s, rs in runs.items() if rs}
    base = "pfl" if "pfl" in med else "torch" if "torch" in med else None
    synthetic = any(r["synthetic"] for rs in runs.values() for r in rs)
    x = f"x {base or '-'}"
    header = (f"{'system':<24} {'s/round':>8} {'s/round':>8} {'CPU s/round':>11} {'CPU s':>6} {x:>7} {x:>7} "
              f"{'final':>7}\n{'':<24} {'total':>8} {'steady':>8} {'steady':>11} {'run':>6} {'wall':>7} {'CPU':>7} "
              f"{'acc':>7}")
    print(header)
    print("-" * len(header.splitlines()[0]))
    for s in systems:
        if s not in med:
            print(f"{LABELS[s]:<24} {'(no result)':>17}")
            continue
        m = med[s]
        wall = f"{med[base]['steady_s'] / m['steady_s']:.2f}" if base else "-"
        cpu = f"{med[base]['steady_cpu_s'] / m['steady_cpu_s']:.2f}" if base else "-"
        print(f"{LABELS[s]:<24} {m['total_s']:>8.3f} {m['steady_s']:>8.3f} {m['steady_cpu_s']:>11.3f} "
              f"{m['cpu_s']:>6.1f} {wall:>7} {cpu:>7} {m['accuracy']:>7.4f}")
    ratio_note = (f"x {base}: {base}'s steady s/round (wall, CPU) / the system's" if base
                  else "no pfl or bare PyTorch run: no ratio")
    print(f"\n{args.rounds} rounds, {args.repeats} repeat(s), {'SYNTHETIC stand-in' if synthetic else 'real'} NSL-KDD; "
          f"{ratio_note}; Flower's CPU includes its Ray processes (two ClientApps in parallel); load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after (1 min), {os.cpu_count()} CPUs; numpy's BLAS: "
          f"{numpy_blas()} (OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')})")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, "load": [load_before, load_after]}, indent=2))


if __name__ == "__main__":
    main()
