"""The app's task: configuration, data, model and a plain PyTorch training loop.

Everything fltrust-specific is in the two app files (``ClientReport`` on the clients,
``ObservedStrategy`` on the server); this file is what any Flower app has.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import torch
from torch import nn

from fltrust.config import ExperimentConfig
from fltrust.core.observers import BaseObserver
from fltrust.core.records import RoundRecord, RunSummary
from fltrust.federation import Federation, prepare_federation


def experiment_config(run_config: dict[str, Any], num_clients: int) -> ExperimentConfig:
    """The fltrust description of this app's run (data, partition, metrics), from Flower's run config.

    Server and clients build it from the same run config and number of partitions, so they
    partition the data identically.
    """
    per_round = max(1, int(num_clients * float(run_config["fraction-train"])))
    scheme = str(run_config["partition"])
    partition: dict[str, Any] = {"num_clients": num_clients, "scheme": scheme}
    if scheme == "dirichlet":
        partition["alpha"] = 0.5
    return ExperimentConfig.from_dict({
        "data": {"name": str(run_config["dataset"]), "synthetic_samples": int(run_config["synthetic-samples"])},
        "partition": partition,
        "model": {"name": "nsl_kdd_mlp"},
        "strategy": {"name": "fedavg", "clients_per_round": per_round, "weighting": "batches"},
        "training": {"rounds": int(run_config["num-server-rounds"]), "local_epochs": int(run_config["local-epochs"]),
                     "batch_size": int(run_config["batch-size"]), "learning_rate": float(run_config["learning-rate"])},
        "metrics": {"fairness": {"enabled": True, "mode": str(run_config["fairness-mode"])},
                    "trust": {"enabled": True, "mode": str(run_config["trust-mode"])}},
        "run": {"name": str(run_config["run-name"]), "seed": int(run_config["seed"]), "engine": "flower",
                "device": "cpu", "progress": False, "checkpoint": False},
    })


_FEDERATIONS: dict[str, Federation] = {}


def _federation(cfg: ExperimentConfig) -> Federation:
    """The prepared federation of ``cfg``, loaded once per process (ClientApps are called per message)."""
    key = f"{cfg.config_hash()}-{cfg.effective_seed()}"
    if key not in _FEDERATIONS:
        _FEDERATIONS.clear()
        _FEDERATIONS[key] = prepare_federation(cfg, torch.device("cpu"))
    return _FEDERATIONS[key]


def load_partition(cfg: ExperimentConfig, partition_id: int):
    """(x_train, y_train, x_val, y_val) of one client (loaded once per process)."""
    return _federation(cfg).client_tensors(partition_id)


def num_classes(cfg: ExperimentConfig) -> int:
    return _federation(cfg).bundle.num_classes


def build_model(cfg: ExperimentConfig) -> nn.Module:
    from fltrust.experiment import build_experiment_model

    return build_experiment_model(cfg, _federation(cfg), torch.device("cpu"))


def train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, epochs: int, batch_size: int, lr: float,
          seed: int) -> float:
    """Plain mini-batch Adam; returns the mean loss of the last epoch."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    binary = model(x[:1]).shape[-1] == 1
    model.train()
    last = float("nan")
    for _ in range(epochs):
        order = torch.randperm(len(y), generator=generator)
        total = 0.0
        for start in range(0, len(y), batch_size):
            index = order[start:start + batch_size]
            out = model(x[index])
            if binary:
                loss = nn.functional.binary_cross_entropy_with_logits(out.reshape(-1), y[index].float())
            else:
                loss = nn.functional.cross_entropy(out, y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss) * len(index)
        last = total / len(y)
    return last


def num_batches(n: int, batch_size: int) -> int:
    return math.ceil(n / batch_size)


class RoundPrinter(BaseObserver):
    """Prints F_T and the trust score of the model so far after every round.

    Put it after the paper observers: it reads the fairness observer's output of the same round
    and scores a copy of the TrustObserver as if the run ended now (FederatedTrust scores a
    finished run; its per-round value is this "score so far").
    """

    name = "round_printer"

    def __init__(self, trust_observer, log=print) -> None:
        self.trust = trust_observer
        self.log = log
        self.records: list[RoundRecord] = []
        self.wall_time_s = 0.0

    def on_round_end(self, record: RoundRecord):
        from fltrust.runs import strip

        self.records.append(strip(record))
        if record.round == 0:
            return None
        fairness = record.observations.get("fairness", {})
        interim = copy.deepcopy(self.trust)
        interim.run_folder = None  # no files: this is only the score so far
        result = interim.on_run_end(RunSummary(self.trust.info, list(self.records), record.global_params_after,
                                               self.wall_time_s))
        score = result.get("trust_score")
        line = (f"round {record.round}: F_T = {_fmt(fairness.get('F_T'))}  (f_j {_fmt(fairness.get('f_j'))}, "
                f"f_g {_fmt(fairness.get('f_g'))}, f_r {_fmt(fairness.get('f_r'))}, f_o {_fmt(fairness.get('f_o'))})"
                f"  trust score so far = {_fmt(score)}  aux accuracy {_fmt(record.server_metrics.get('aux_accuracy'))}")
        self.log(line)
        return {"F_T": fairness.get("F_T"), "trust_score_so_far": score}


def _fmt(value) -> str:
    return "n/a" if value is None or (isinstance(value, float) and not np.isfinite(value)) else f"{float(value):.4f}"
